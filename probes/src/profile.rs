//! Target profiles: which thread plays which role, which file is which kind.
//!
//! A profile is a TOML file (format in `probes/PROFILES.md`):
//!
//! ```toml
//! name = "redoctor-engine"
//! description = "..."
//! [[threads]]            # first matching rule wins; no match = role "other"
//! pattern = "log_writer" # wildcard (*, ?, [a-z]) on the thread's comm
//! role = "log_writer"    # log_writer | log_flusher | log_notifier | user | binlog |
//!                        # receiver | applier | worker | ... | other
//! [files]                # wildcards on the absolute path behind each fd
//! redo = ["*/redo.log"]
//! binlog = []
//! data = ["*.ibd"]
//! doublewrite = []       # the doublewrite buffer's own files
//! relay = []             # a replica's relay log; anything else is "other"
//! [[commit_points]]      # optional: a function called once per commit;
//! symbol = "..."         # the first symbol found in the target is probed
//! ```
//!
//! A server made of processes (PostgreSQL) adds `[target]` (follow the
//! root's descendants, check the pid is the root), `[[processes]]` (roles
//! by process title, before the thread rules) and `[[usdt]]` (the server's
//! statically defined probes and what they count).
//!
//! Four profiles ship inside the binary: `redoctor-engine`, `mysql8`,
//! `mariadb`, `postgresql` (see [`Profile::builtin`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::glob;

pub use redoctor_probes_common::{FileKind, Role};

/// One thread-name rule.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadRule {
    pub pattern: String,
    pub role: Role,
}

/// Path patterns per file kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRules {
    #[serde(default)]
    pub redo: Vec<String>,
    #[serde(default)]
    pub binlog: Vec<String>,
    #[serde(default)]
    pub data: Vec<String>,
    #[serde(default)]
    pub doublewrite: Vec<String>,
    /// A replica's relay log.
    #[serde(default)]
    pub relay: Vec<String>,
}

/// One process-title rule: every thread of a process whose title
/// (`/proc/PID/cmdline`, arguments joined by spaces) matches `title` has
/// `role`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessRule {
    pub title: Patterns,
    pub role: Role,
}

/// One wildcard pattern, or a list of them (any may match), as a profile
/// writes it: `title = "a*"` or `title = ["a", "*: a"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Patterns {
    One(String),
    Any(Vec<String>),
}

impl Patterns {
    /// Whether `text` matches one of the patterns as a whole.
    pub fn matches(&self, text: &str) -> bool {
        match self {
            Patterns::One(p) => glob::matches(p, text),
            Patterns::Any(ps) => ps.iter().any(|p| glob::matches(p, text)),
        }
    }
}

/// What the target process must be, and whether its descendants are part of it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetRules {
    /// Watch the target and every process it forks (before or after attach).
    #[serde(default)]
    pub follow_children: bool,
    /// Names the target's executable may have (`/proc/PID/exe` basename);
    /// empty = any.
    #[serde(default)]
    pub exe: Vec<String>,
    /// Title of a child process of the server (not the root): a pid whose
    /// title matches is refused.
    #[serde(default)]
    pub child_title: Option<String>,
    /// How to find the right pid, printed when a pid is refused.
    #[serde(default)]
    pub root_hint: String,
}

/// What a USDT probe counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsdtEvent {
    /// A transaction began (with `Commit`/`Abort`: the time transactions
    /// are in flight, `engine.txn_ns`).
    TxnStart,
    /// A transaction committed (`engine.commits`).
    Commit,
    /// A transaction aborted.
    Abort,
    /// A WAL (redo) record was inserted.
    WalInsert,
    /// The WAL switched to a new segment file.
    WalSwitch,
    /// A backend had to write WAL buffers itself because they were full.
    WalBufferFull,
    /// A wait for a named lock begins (argument 1: the name).
    LockWaitStart,
    /// That wait ends (argument 1: the lock's name, a C string).
    LockWaitDone,
}

/// One USDT probe of the server and what it counts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsdtRule {
    /// `provider:name`, as `readelf -n` lists it.
    pub probe: String,
    pub event: UsdtEvent,
}

/// A function of the target called once per committed transaction: a
/// uprobe on it counts commits (for targets without the bundled engine's
/// probe points).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CommitPoint {
    /// The symbol (mangled, as `nm -D` prints it) in the target's binary.
    pub symbol: String,
}

/// A target profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The server's status counter (`SHOW GLOBAL STATUS`) that counts its
    /// transactions, read over the admin socket by trials that run with the
    /// probes detached. `None`: the server has no counter a trial can read
    /// window by window, and trials count commits with the probes.
    #[serde(default)]
    pub commit_counter: Option<String>,
    #[serde(default)]
    pub target: TargetRules,
    #[serde(default)]
    pub processes: Vec<ProcessRule>,
    #[serde(default)]
    pub threads: Vec<ThreadRule>,
    #[serde(default)]
    pub files: FileRules,
    #[serde(default)]
    pub usdt: Vec<UsdtRule>,
    /// Commit points, tried in order: the first symbol the target's binary
    /// has is probed (builds differ in which they export). Empty: commits
    /// come from the bundled engine's probe points.
    #[serde(default)]
    pub commit_points: Vec<CommitPoint>,
    /// Roles from the threads' stacks, for servers whose threads all keep
    /// the process name ([`crate::stack_roles`]).
    #[serde(default)]
    pub stack_roles: Option<StackRoleRule>,
    /// Roles from the names the server gives its own threads
    /// (`performance_schema.threads`, read over the admin connection):
    /// background threads no name or stack tells apart, such as InnoDB's
    /// page cleaner. They win over every other rule.
    #[serde(default)]
    pub server_threads: Vec<ServerThreadRule>,
    /// Roles whose threads run the transactions: their data-file writes are
    /// the foreground's (a user thread's single-page flush, PostgreSQL's
    /// backend writes); every other thread's, named or not, count as
    /// background writes (a page cleaner, a checkpointer, a task pool that
    /// submits a cleaner's batch). Default: user, applier and worker.
    #[serde(default = "default_foreground_roles")]
    pub foreground_roles: Vec<Role>,
    /// Where the data-file writes of a thread count before the sampler has
    /// given it a role (until the window it was born in ends): the
    /// foreground's (the default: a new connection's thread or backend) or
    /// the background's (a server that starts background threads on
    /// demand, as MariaDB's task pool does, and whose connection threads
    /// write no pages).
    #[serde(default)]
    pub new_threads: WriterSide,
}

/// Which side of the foreground/background split a write counts on.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WriterSide {
    #[default]
    Foreground,
    Background,
}

fn default_foreground_roles() -> Vec<Role> {
    vec![Role::User, Role::Applier, Role::Worker]
}

/// Threads the server names `pattern` (a glob over
/// `performance_schema.threads.NAME`) have `role`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServerThreadRule {
    pub pattern: String,
    pub role: Role,
}

/// Threads whose stack holds a return address into one of `symbols` have
/// `role`; threads scanned without one, `otherwise`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StackRoleRule {
    /// Functions (mangled, as `nm -D` prints them) a thread of `role` runs
    /// inside for as long as it has that role.
    pub symbols: Vec<String>,
    pub role: Role,
    pub otherwise: Role,
    /// Threads inside one of these functions take its role instead,
    /// the first match in order winning (a replica's receiver, applier and
    /// workers run their own thread functions, not the command loop). A
    /// binary that exports none of a match's functions just has no such
    /// threads.
    #[serde(default)]
    pub before: Vec<StackRoleMatch>,
}

/// One ordered match of [`StackRoleRule::before`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StackRoleMatch {
    pub symbols: Vec<String>,
    pub role: Role,
}

/// Why a profile could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("unknown profile `{name}`: use one of {known} or the path of a profile TOML file")]
    Unknown { name: String, known: String },
    #[error("cannot read profile file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("profile {origin} is not valid (format: probes/PROFILES.md): {source}")]
    Parse {
        origin: String,
        #[source]
        source: toml::de::Error,
    },
    #[error("profile {origin}: a commit point has an empty symbol")]
    EmptyCommitPoint { origin: String },
    #[error(
        "profile {origin}: role `external` is reserved for threads outside the target; use `other`"
    )]
    ExternalRole { origin: String },
}

const BUILTIN: &[(&str, &str)] = &[
    (
        "redoctor-engine",
        include_str!("../profiles/redoctor-engine.toml"),
    ),
    ("mysql8", include_str!("../profiles/mysql8.toml")),
    ("mariadb", include_str!("../profiles/mariadb.toml")),
    ("postgresql", include_str!("../profiles/postgresql.toml")),
];

impl Profile {
    /// Names of the profiles shipped in the binary.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A shipped profile by name.
    pub fn builtin(name: &str) -> Result<Profile, ProfileError> {
        let (_, text) =
            BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| ProfileError::Unknown {
                    name: name.to_string(),
                    known: Self::builtin_names().join(", "),
                })?;
        Self::parse(text, &format!("`{name}`"))
    }

    /// A shipped profile by name, or a TOML file when `spec` names an existing
    /// file or contains `/` or ends in `.toml`.
    pub fn resolve(spec: &str) -> Result<Profile, ProfileError> {
        let path = Path::new(spec);
        // A shipped name is the shipped profile even where a file of that
        // name lies in the working directory (the engine's binary is named
        // like its profile: `cd target/release && ./redoctor diagnose`).
        let named = !(spec.contains('/') || spec.ends_with(".toml"));
        if named {
            if let Ok(p) = Self::builtin(spec) {
                return Ok(p);
            }
        }
        if !named || path.is_file() {
            let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            Self::parse(&text, &path.display().to_string())
        } else {
            Self::builtin(spec)
        }
    }

    /// Parses profile TOML; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let p: Profile = toml::from_str(text).map_err(|source| ProfileError::Parse {
            origin: origin.to_string(),
            source,
        })?;
        if p.threads.iter().any(|r| r.role == Role::External)
            || p.processes.iter().any(|r| r.role == Role::External)
            || p.server_threads.iter().any(|r| r.role == Role::External)
        {
            return Err(ProfileError::ExternalRole {
                origin: origin.to_string(),
            });
        }
        if p.commit_points.iter().any(|c| c.symbol.trim().is_empty()) {
            return Err(ProfileError::EmptyCommitPoint {
                origin: origin.to_string(),
            });
        }
        Ok(p)
    }

    /// The commit point symbols, in the order they are tried.
    pub fn commit_symbols(&self) -> Vec<String> {
        self.commit_points
            .iter()
            .map(|c| c.symbol.clone())
            .collect()
    }

    /// The role of a thread with this comm (first matching rule; else `other`).
    pub fn role_of(&self, comm: &str) -> Role {
        self.threads
            .iter()
            .find(|r| glob::matches(&r.pattern, comm))
            .map_or(Role::Other, |r| r.role)
    }

    /// The role the server's own name for a thread gives it (first
    /// matching `[[server_threads]]` rule), if one does.
    pub fn server_thread_role(&self, name: &str) -> Option<Role> {
        self.server_threads
            .iter()
            .find(|r| glob::matches(&r.pattern, name))
            .map(|r| r.role)
    }

    /// The role a process title gives all the process's threads (first
    /// matching `[[processes]]` rule), if one does.
    pub fn process_role(&self, title: &str) -> Option<Role> {
        self.processes
            .iter()
            .find(|r| r.title.matches(title))
            .map(|r| r.role)
    }

    /// The role of a thread named `comm` in a process titled `title`: the
    /// process rule first, then the thread rule.
    pub fn role_in(&self, title: Option<&str>, comm: &str) -> Role {
        title
            .and_then(|t| self.process_role(t))
            .unwrap_or_else(|| self.role_of(comm))
    }

    /// The kind of the file at `path`.
    pub fn kind_of(&self, path: &str) -> FileKind {
        let any = |pats: &[String]| pats.iter().any(|p| glob::matches(p, path));
        // The relay log before the binlog: MariaDB's `*-relay-bin.N` also
        // matches its binlog pattern `*-bin.N`.
        if any(&self.files.redo) {
            FileKind::Redo
        } else if any(&self.files.relay) {
            FileKind::Relay
        } else if any(&self.files.binlog) {
            FileKind::Binlog
        } else if any(&self.files.doublewrite) {
            FileKind::Doublewrite
        } else if any(&self.files.data) {
            FileKind::Data
        } else {
            FileKind::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file named like a shipped profile in the working directory (the
    /// engine's own binary beside `redoctor`) is not read as a profile.
    #[test]
    fn a_shipped_name_is_never_read_from_a_file() {
        let name = "mysql8";
        assert!(
            !Path::new(name).exists(),
            "a file {name} in the test's directory"
        );
        std::fs::write(name, [0xffu8, 0xfe, 0x00]).unwrap();
        let got = Profile::resolve(name);
        std::fs::remove_file(name).unwrap();
        assert_eq!(got.unwrap().name, "mysql8");
        // A file named like no shipped profile is still read.
        let e = Profile::resolve("no-such-profile").unwrap_err().to_string();
        assert!(e.contains("no-such-profile"), "{e}");
    }

    #[test]
    fn builtin_profiles_parse_and_classify() {
        for name in Profile::builtin_names() {
            Profile::builtin(name).unwrap();
        }
        let e = Profile::builtin("redoctor-engine").unwrap();
        assert_eq!(e.role_of("log_writer"), Role::LogWriter);
        assert_eq!(e.role_of("log_fl_notify"), Role::LogNotifier);
        assert_eq!(e.role_of("log_wr_notify"), Role::LogNotifier);
        assert_eq!(e.role_of("user/3"), Role::User);
        assert_eq!(e.role_of("log_checkpoint"), Role::Checkpointer);
        assert_eq!(e.role_of("log_ckpt_base"), Role::Checkpointer);
        assert_eq!(e.kind_of("/d/redo.log"), FileKind::Redo);
        assert_eq!(e.kind_of("/d/checkpoint.tmp"), FileKind::Data);
        assert_eq!(e.kind_of("socket:[123]"), FileKind::Other);
        assert_eq!(e.kind_of("/d/dblwr-1.bin"), FileKind::Doublewrite);
        assert_eq!(e.kind_of("/d/ibdata-dblwr.legacy"), FileKind::Doublewrite);
        assert_eq!(e.kind_of("/d/relay.000003"), FileKind::Relay);
        assert_eq!(e.role_of("rpl_receiver"), Role::Receiver);
        assert_eq!(e.role_of("rpl_applier"), Role::Applier);
        assert_eq!(e.role_of("rpl_worker_12"), Role::Worker);
        assert_eq!(e.kind_of("/d/space-00001.ibd"), FileKind::Data);
        let m = Profile::builtin("mysql8").unwrap();
        assert_eq!(m.role_of("ib_log_fl_notif"), Role::LogNotifier);
        assert_eq!(m.role_of("connection"), Role::User);
        assert_eq!(m.kind_of("/var/lib/mysql/binlog.000003"), FileKind::Binlog);
        assert_eq!(
            m.kind_of("/var/lib/mysql/#ib_16384_0.dblwr"),
            FileKind::Doublewrite
        );
        assert_eq!(
            m.kind_of("/var/lib/mysql/#innodb_redo/#ib_redo7"),
            FileKind::Redo
        );
        assert!(e.commit_points.is_empty());
        let md = Profile::builtin("mariadb").unwrap();
        assert_eq!(
            md.commit_symbols()[0],
            "_Z24mysql_bin_log_commit_posP3THDPyPPKc"
        );
        assert_eq!(md.kind_of("/var/lib/mysql/ib_logfile0"), FileKind::Redo);
        assert_eq!(
            md.kind_of("/var/lib/mysql/db-relay-bin.000002"),
            FileKind::Relay
        );
        assert_eq!(md.kind_of("/var/lib/mysql/db-bin.000002"), FileKind::Binlog);
        assert_eq!(
            md.server_thread_role("thread/innodb/page_cleaner_thread"),
            Some(Role::PageWriter)
        );
        assert_eq!(md.server_thread_role("thread/sql/one_connection"), None);
        assert_eq!(
            md.server_thread_role("thread/innodb/thread_pool_thread"),
            Some(Role::Maintenance)
        );
        assert!(e.server_threads.is_empty());
        // The threads that run transactions write in the foreground;
        // PostgreSQL counts autovacuum's and the startup process's writes
        // with the backends'.
        let runs_transactions = vec![Role::User, Role::Applier, Role::Worker];
        for p in [&e, &m, &md] {
            assert_eq!(p.foreground_roles, runs_transactions, "{}", p.name);
        }
        let pg = Profile::builtin("postgresql").unwrap();
        assert_eq!(
            pg.foreground_roles,
            vec![Role::User, Role::Maintenance, Role::Applier]
        );
    }

    /// PostgreSQL's roles come from the process title (`/proc/PID/cmdline`
    /// as `procfs::title` reads it), with or without a cluster name; every
    /// process has the comm `postgres`, so the thread rules cannot help.
    #[test]
    fn postgresql_roles_come_from_process_titles() {
        let pg = Profile::builtin("postgresql").unwrap();
        for (title, role) in [
            // A physical standby's stream: "walsender USER HOST STATE".
            (
                "postgres: walsender replicator 10.0.0.5(41234) streaming 0/3000148",
                Role::Replication,
            ),
            (
                "postgres: 15/main: walsender replicator [local] streaming 0/3000148",
                Role::Replication,
            ),
            // A standby: the walreceiver receives, the startup process replays.
            ("postgres: walreceiver streaming 0/3000148", Role::Receiver),
            (
                "postgres: 15/main: walreceiver streaming 0/3000148",
                Role::Receiver,
            ),
            // "autovacuum worker" then the database it vacuums.
            ("postgres: autovacuum worker sbtest", Role::Maintenance),
            (
                "postgres: 15/main: autovacuum worker postgres",
                Role::Maintenance,
            ),
            ("postgres: autovacuum launcher", Role::Maintenance),
            ("postgres: walwriter", Role::LogWriter),
            ("postgres: main: walwriter", Role::LogWriter),
            ("postgres: checkpointer", Role::Checkpointer),
            ("postgres: background writer", Role::PageWriter),
            ("postgres: logical replication launcher", Role::Other),
            // Client backends ("USER DATABASE HOST STATE") and parallel workers.
            ("postgres: sbtest sbtest [local] idle", Role::User),
            ("postgres: app shop 10.0.0.7(50312) UPDATE", Role::User),
            ("postgres: parallel worker for PID 4242", Role::User),
            // A user or database named after a process is still a client
            // backend: the process names match whole, not as substrings.
            ("postgres: app startup [local] idle", Role::User),
            (
                "postgres: bob checkpointer_db 10.0.0.7(50312) UPDATE",
                Role::User,
            ),
            (
                "postgres: 15/main: bob walwriter [local] COMMIT",
                Role::User,
            ),
            ("postgres: logger shop [local] idle", Role::User),
            (
                "postgres: archiver_app shop [local] idle in transaction",
                Role::User,
            ),
            (
                "postgres: startup recovering 000000010000000000000003",
                Role::Applier,
            ),
            (
                "postgres: 15/main: archiver last was 000000010000000000000002",
                Role::Other,
            ),
            ("postgres: logger", Role::Other),
        ] {
            assert_eq!(pg.process_role(title), Some(role), "{title}");
            assert_eq!(pg.role_in(Some(title), "postgres"), role, "{title}");
        }
        // The postmaster's title is its command line: no process rule, so
        // its threads fall back to the (empty) thread rules.
        let postmaster = "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main";
        assert_eq!(pg.process_role(postmaster), None);
        assert_eq!(pg.role_in(Some(postmaster), "postgres"), Role::Other);
    }

    #[test]
    fn a_profile_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.toml");
        std::fs::write(
            &path,
            "name = \"mine\"\n[[threads]]\npattern = \"w?\"\nrole = \"log_writer\"\n\
             [files]\nredo = [\"*.redo\"]\n",
        )
        .unwrap();
        let p = Profile::resolve(path.to_str().unwrap()).unwrap();
        assert_eq!(p.name, "mine");
        assert_eq!(p.role_of("w1"), Role::LogWriter);
        assert_eq!(p.role_of("w12"), Role::Other);
        assert_eq!(p.kind_of("/x/a.redo"), FileKind::Redo);
        assert_eq!(p.kind_of("/x/a.ibd"), FileKind::Other);
    }

    #[test]
    fn bad_profiles_are_refused_with_the_cause() {
        let e = Profile::resolve("nosuch").unwrap_err().to_string();
        assert!(
            e.contains("unknown profile `nosuch`") && e.contains("mysql8"),
            "{e}"
        );
        let e = Profile::resolve("/nonexistent/p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read profile file"), "{e}");
        let e = Profile::parse(
            "name = \"x\"\n[[threads]]\npattern = \"a\"\nrole = \"boss\"\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("profile t is not valid"), "{e}");
        let e = Profile::parse(
            "name=\"x\"\n[[threads]]\npattern=\"a\"\nrole=\"external\"\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("reserved"), "{e}");
        let e = Profile::parse(
            "name=\"x\"\n[[server_threads]]\npattern=\"a\"\nrole=\"external\"\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("reserved"), "{e}");
        let e = Profile::parse("name=\"x\"\n[[commit_points]]\nsymbol=\"\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty symbol"), "{e}");
    }
}
