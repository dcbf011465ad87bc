//! The server's admin interface through its Unix socket, in the protocol
//! the socket speaks:
//! - MySQL (a socket file, e.g. `/run/mysqld/mysqld.sock`): read and set
//!   global variables (`SHOW GLOBAL VARIABLES`, `SET GLOBAL`), as any
//!   MySQL 8 client would;
//! - PostgreSQL (a socket directory holding `.s.PGSQL.PORT`, or that
//!   socket file itself): `SHOW name`, and `ALTER SYSTEM SET` followed by
//!   `SELECT pg_reload_conf()`; restoring a value first tries
//!   `ALTER SYSTEM RESET` (back to the configuration files' value) and sets
//!   it explicitly only when that is not the value to restore.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use redoctor_advisor::experiment::{ExperimentError, Settings};

/// Settings that trade durability for speed: never changed without an explicit flag.
pub const DURABILITY_SETTINGS: &[&str] = &[
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    // PostgreSQL
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_sync_method",
];

/// The protocol behind a socket path: PostgreSQL for a directory holding a
/// `.s.PGSQL.PORT` socket, or such a socket file (the directory and port),
/// else MySQL.
pub fn postgres_socket(path: &Path) -> Result<Option<(PathBuf, u16)>> {
    let port_of = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(".s.PGSQL."))
            .and_then(|n| n.parse::<u16>().ok())
    };
    if let Some(port) = port_of(path) {
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        return Ok(Some((dir, port)));
    }
    if path.is_dir() {
        let mut found: Vec<u16> = std::fs::read_dir(path)
            .with_context(|| format!("reading the socket directory {}", path.display()))?
            .flatten()
            .filter_map(|e| port_of(&e.path()))
            .collect();
        found.sort_unstable();
        found.dedup();
        return match found.as_slice() {
            [port] => Ok(Some((path.to_path_buf(), *port))),
            [] => bail!(
                "{} holds no PostgreSQL socket (.s.PGSQL.PORT): pass the server's unix_socket_directories entry, or a MySQL socket file",
                path.display()
            ),
            many => bail!(
                "{} holds several PostgreSQL sockets (ports {many:?}): pass the one to use, e.g. {}/.s.PGSQL.{}",
                path.display(),
                path.display(),
                many[0]
            ),
        };
    }
    Ok(None)
}

/// Refuses, naming the first one, any of [`DURABILITY_SETTINGS`] among
/// `names` unless `allowed`; `action` is what would be done to it ("change", "trial").
pub fn guard_durability<'a>(
    names: impl IntoIterator<Item = &'a str>,
    allowed: bool,
    action: &str,
) -> Result<()> {
    if allowed {
        return Ok(());
    }
    if let Some(k) = names.into_iter().find(|k| DURABILITY_SETTINGS.contains(k)) {
        bail!("refusing to {action} {k}: it trades durability for speed; pass --allow-durability-changes if that is intended");
    }
    Ok(())
}

enum Client {
    Mysql(Conn),
    Postgres(Box<postgres::Client>),
}

/// A connection to a server's admin interface.
pub struct Admin {
    conn: Client,
    socket: String,
}

/// Why a server's thread names could not be read without an admin
/// connection ([`Admin::thread_names`]).
pub const NO_ADMIN_FOR_THREAD_NAMES: &str =
    "no admin connection to read them over: pass the server's --socket";

impl Admin {
    /// Connects through `socket` in the protocol it speaks (see the module
    /// docs) as `user`; an empty user is the protocol's usual admin
    /// (`root` for MySQL, `postgres` for PostgreSQL).
    pub fn connect(socket: &Path, user: &str) -> Result<Admin> {
        let s = socket
            .to_str()
            .context("the socket path is not valid UTF-8")?
            .to_string();
        if !socket.exists() {
            bail!("no server socket at {s}: pass the socket the server listens on (MariaDB: its --socket option; the bundled engine: `redoctor-engine serve --socket {s} ...`)");
        }
        if let Some((dir, port)) = postgres_socket(socket)? {
            let user = if user.is_empty() { "postgres" } else { user };
            let client = postgres::Config::new()
                .host_path(&dir)
                .port(port)
                .user(user)
                .dbname("postgres")
                .application_name("redoctor")
                .connect(postgres::NoTls)
                .with_context(|| {
                    format!(
                        "connecting to PostgreSQL at {}/.s.PGSQL.{port} as {user}",
                        dir.display()
                    )
                })?;
            return Ok(Admin {
                conn: Client::Postgres(Box::new(client)),
                socket: dir.display().to_string(),
            });
        }
        let user = if user.is_empty() { "root" } else { user };
        let opts = OptsBuilder::new().socket(Some(s.clone())).user(Some(user));
        let conn = Conn::new(opts).with_context(|| format!("connecting to the server at {s}"))?;
        Ok(Admin {
            conn: Client::Mysql(conn),
            socket: s,
        })
    }

    pub fn socket(&self) -> &str {
        &self.socket
    }

    /// The server's kind, as the probe profile names it: `postgresql`, or
    /// `mysql` for anything speaking the MySQL protocol.
    pub fn engine(&self) -> &'static str {
        match self.conn {
            Client::Postgres(_) => "postgresql",
            Client::Mysql(_) => "mysql",
        }
    }

    /// The current value of a global variable; an unknown name is an error.
    pub fn get(&mut self, name: &str) -> Result<String> {
        check_name(name)?;
        if let Client::Postgres(c) = &mut self.conn {
            let row = c.query_one(&format!("SHOW {name}"), &[]).with_context(|| {
                format!("reading setting {name} from the server at {}", self.socket)
            })?;
            return Ok(row.get::<_, String>(0));
        }
        self.show("VARIABLES", "variable", name)
    }

    /// A global variable's value, or `None` when the server has no such
    /// variable (or cannot show it).
    pub fn try_get(&mut self, name: &str) -> Option<String> {
        self.get(name).ok()
    }

    /// Whether the server says `name` is read-only at run time (static:
    /// only a restart changes it). `None` when the server cannot tell
    /// (MariaDB tells in `information_schema.SYSTEM_VARIABLES`; the bundled
    /// engine and MySQL do not have that table).
    pub fn read_only(&mut self, name: &str) -> Result<Option<bool>> {
        check_name(name)?;
        let q = format!(
            "SELECT READ_ONLY FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = '{}'",
            name.to_ascii_uppercase()
        );
        let Client::Mysql(conn) = &mut self.conn else {
            return Ok(None);
        };
        Ok(match conn.query_first::<String, _>(q) {
            Ok(Some(v)) => Some(v.eq_ignore_ascii_case("YES")),
            Ok(None) | Err(_) => None,
        })
    }

    /// Refuses a setting only a restart can change (the server says it is
    /// read-only), naming the fix.
    pub fn check_dynamic(&mut self, name: &str, value: &str) -> Result<()> {
        if self.read_only(name)? == Some(true) {
            bail!("{}", needs_restart(name, value, &self.socket));
        }
        Ok(())
    }

    /// The pid of the server process this connection reaches, as the
    /// server tells it: the bundled engine's `@@pid`; MariaDB's and MySQL's
    /// `@@pid_file` (relative to `@@datadir`), read; PostgreSQL's
    /// postmaster, the parent of `pg_backend_pid()`. `None` when it cannot
    /// tell (the pid file unreadable, say).
    pub fn server_pid(&mut self) -> Option<u32> {
        match &mut self.conn {
            Client::Postgres(c) => {
                let backend: i32 = c.query_one("SELECT pg_backend_pid()", &[]).ok()?.get(0);
                redoctor_probes::procfs::parent(u32::try_from(backend).ok()?)
            }
            Client::Mysql(conn) => {
                if let Ok(Some(p)) = conn.query_first::<String, _>("SELECT @@pid") {
                    return p.trim().parse().ok();
                }
                let file: String = conn.query_first("SELECT @@pid_file").ok()??;
                let mut path = PathBuf::from(&file);
                if path.is_relative() {
                    let dir: String = conn.query_first("SELECT @@datadir").ok()??;
                    path = PathBuf::from(dir).join(path);
                }
                std::fs::read_to_string(path).ok()?.trim().parse().ok()
            }
        }
    }

    /// A status counter (`SHOW GLOBAL STATUS LIKE 'name'`); unknown is an error.
    pub fn status(&mut self, name: &str) -> Result<u64> {
        let v = self.show("STATUS", "status counter", name)?;
        v.trim()
            .parse()
            .with_context(|| format!("status {name} = {v:?} is not a counter"))
    }

    /// `SHOW SLAVE STATUS` (MySQL, MariaDB and the bundled engine all
    /// accept this spelling) as column name -> value; None on a server
    /// that is not a replica (no row) or on PostgreSQL.
    pub fn replica_status(&mut self) -> Result<Option<BTreeMap<String, Option<String>>>> {
        let Client::Mysql(conn) = &mut self.conn else {
            return Ok(None);
        };
        let rows: Vec<mysql::Row> = conn
            .query("SHOW SLAVE STATUS")
            .with_context(|| format!("SHOW SLAVE STATUS on the server at {}", self.socket))?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let names: Vec<String> = row
            .columns_ref()
            .iter()
            .map(|c| c.name_str().to_string())
            .collect();
        let values = row.unwrap();
        Ok(Some(
            names
                .into_iter()
                .zip(values)
                .map(|(n, v)| {
                    let v = match v {
                        mysql::Value::NULL => None,
                        mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                        v => Some(v.as_sql(true)),
                    };
                    (n, v)
                })
                .collect(),
        ))
    }

    /// The server's names for its threads, by operating-system thread id
    /// (`performance_schema.threads`: `THREAD_OS_ID`, `NAME`). `Err` says
    /// why there are none: PostgreSQL, a server without performance_schema
    /// (the bundled engine), or one where it is OFF (MariaDB's default).
    pub fn thread_names(&mut self) -> Result<Vec<(u32, String)>, String> {
        let Client::Mysql(_) = &self.conn else {
            return Err("a PostgreSQL server has no performance_schema".into());
        };
        match self.try_get("performance_schema").as_deref() {
            Some("ON" | "1") => {}
            Some(_) => {
                return Err("performance_schema is OFF: start the server with                      --performance-schema=ON (a restart) to have its threads named"
                    .into())
            }
            None => return Err("the server has no performance_schema".into()),
        }
        let Client::Mysql(conn) = &mut self.conn else {
            unreachable!("checked above")
        };
        let rows: Vec<(Option<u64>, String)> = conn
            .query(
                "SELECT THREAD_OS_ID, NAME FROM performance_schema.threads \
                 WHERE THREAD_OS_ID IS NOT NULL",
            )
            .map_err(|e| format!("reading performance_schema.threads: {e}"))?;
        Ok(rows
            .into_iter()
            .filter_map(|(tid, name)| Some((u32::try_from(tid?).ok()?, name)))
            .collect())
    }

    /// PostgreSQL: the first row of `sql`, every column a `bigint`
    /// (`None`: SQL NULL); an error on a MySQL server.
    pub fn pg_row(&mut self, sql: &str) -> Result<Vec<Option<i64>>> {
        let Client::Postgres(c) = &mut self.conn else {
            bail!("the server at {} is not PostgreSQL", self.socket);
        };
        let row = c
            .query_one(sql, &[])
            .with_context(|| format!("`{sql}` on the server at {}", self.socket))?;
        (0..row.len())
            .map(|i| {
                row.try_get::<_, Option<i64>>(i)
                    .with_context(|| format!("column {i} of `{sql}` is not a bigint"))
            })
            .collect()
    }

    /// `SHOW GLOBAL {what} LIKE 'name'`: the value of the row named `name`.
    fn show(&mut self, what: &str, noun: &str, name: &str) -> Result<String> {
        check_name(name)?;
        let Client::Mysql(conn) = &mut self.conn else {
            bail!(
                "SHOW GLOBAL {what} is MySQL's; the server at {} is PostgreSQL",
                self.socket
            );
        };
        let rows: Vec<(String, String)> = conn
            .query(format!("SHOW GLOBAL {what} LIKE '{name}'"))
            .with_context(|| {
            format!("reading {noun} {name} from the server at {}", self.socket)
        })?;
        match rows.into_iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some((_, v)) => Ok(v),
            None => bail!("the server at {} has no {noun} {name}", self.socket),
        }
    }

    /// Each of `names`' current values, as a trial's testbed reads them.
    pub fn read_settings(&mut self, names: &[String]) -> Result<Settings, ExperimentError> {
        names
            .iter()
            .map(|n| {
                let v = self
                    .get(n)
                    .map_err(|e| ExperimentError::read(names, format!("{e:#}")))?;
                Ok((n.clone(), v))
            })
            .collect()
    }

    /// Sets each of `settings`, as a trial's testbed applies them.
    pub fn apply_settings(&mut self, settings: &Settings) -> Result<(), ExperimentError> {
        for (k, v) in settings {
            self.set(k, v)
                .map_err(|e| ExperimentError::apply(settings, format!("{e:#}")))?;
        }
        Ok(())
    }

    /// `SET GLOBAL name = value` (MySQL protocol) or `ALTER SYSTEM SET
    /// name = value` and a configuration reload (PostgreSQL); the server
    /// validates (a refused value changes nothing). A static setting is
    /// refused before it is tried, or when a MySQL-protocol server answers
    /// that it is read-only (error 1238). A setting a replica's applier
    /// reads only at its start (error 1198) is set with the SQL thread
    /// stopped and started again.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        check_name(name)?;
        let v = sql_value(value)?;
        if matches!(self.conn, Client::Mysql(_)) {
            self.check_dynamic(name, value)?;
        }
        let socket = self.socket.clone();
        match &mut self.conn {
            Client::Mysql(conn) => match conn.query_drop(format!("SET GLOBAL {name} = {v}")) {
                Err(mysql::Error::MySqlError(e)) if e.code == ER_SLAVE_MUST_STOP => {
                    set_with_applier_stopped(conn, name, &v, &socket)
                }
                Err(mysql::Error::MySqlError(e)) if e.code == ER_INCORRECT_GLOBAL_LOCAL_VAR => {
                    bail!(
                        "{} (the server said: {})",
                        needs_restart(name, value, &socket),
                        e.message
                    )
                }
                r => {
                    r.with_context(|| format!("SET GLOBAL {name} = {v} on the server at {socket}"))
                }
            },
            Client::Postgres(c) => {
                let context: Option<String> = c
                    .query_opt("SELECT context FROM pg_settings WHERE name = $1", &[&name])
                    .with_context(|| format!("reading pg_settings on the server at {socket}"))?
                    .map(|r| r.get(0));
                match context.as_deref() {
                    None => bail!("the server at {socket} has no setting {name}"),
                    Some("postmaster") | Some("internal") => bail!(
                        "{name} takes effect only when PostgreSQL restarts (pg_settings.context = {}): redoctor applies only settings a reload changes; set it with ALTER SYSTEM and restart the server yourself",
                        context.unwrap_or_default()
                    ),
                    Some(_) => {}
                }
                let quoted = format!("'{}'", value);
                c.batch_execute(&format!("ALTER SYSTEM SET {name} = {quoted}"))
                    .with_context(|| {
                        format!("ALTER SYSTEM SET {name} = {quoted} on the server at {socket}")
                    })?;
                self.reload()
            }
        }
    }

    /// Restores `name` to `value`: on PostgreSQL `ALTER SYSTEM RESET` first
    /// (no line left in postgresql.auto.conf when the value came from
    /// elsewhere), then `ALTER SYSTEM SET` if that did not give `value`.
    pub fn restore(&mut self, name: &str, value: &str) -> Result<()> {
        check_name(name)?;
        if let Client::Postgres(c) = &mut self.conn {
            c.batch_execute(&format!("ALTER SYSTEM RESET {name}"))
                .with_context(|| {
                    format!("ALTER SYSTEM RESET {name} on the server at {}", self.socket)
                })?;
            self.reload()?;
            if self.get(name)? == value {
                return Ok(());
            }
        }
        self.set(name, value)
    }

    /// `SELECT pg_reload_conf()`, then waits (up to 5 s) until this
    /// session has processed the reload, so what follows reads the new values.
    fn reload(&mut self) -> Result<()> {
        let Client::Postgres(c) = &mut self.conn else {
            return Ok(());
        };
        let before: Option<String> = c.query_one("SELECT pg_conf_load_time()::text", &[])?.get(0);
        c.batch_execute("SELECT pg_reload_conf()")
            .with_context(|| format!("SELECT pg_reload_conf() on the server at {}", self.socket))?;
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            let now: Option<String> = c.query_one("SELECT pg_conf_load_time()::text", &[])?.get(0);
            if now != before {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        bail!(
            "the server at {} did not reload its configuration within 5 s",
            self.socket
        )
    }
}

/// MySQL/MariaDB error 1238: "Variable '%s' is a read only variable".
const ER_INCORRECT_GLOBAL_LOCAL_VAR: u16 = 1238;
/// "This operation cannot be performed as you have a running slave".
const ER_SLAVE_MUST_STOP: u16 = 1198;

/// A setting a replica's applier reads only when it starts (MariaDB's
/// `slave_parallel_threads` and `slave_parallel_mode`): stop the SQL
/// thread, set it, start the SQL thread again, as the server's error asks
/// and MariaDB's documentation describes. The receiver keeps running, so
/// nothing queued is lost; the SQL thread is restarted even when the
/// server refuses the value.
fn set_with_applier_stopped(
    conn: &mut mysql::Conn,
    name: &str,
    v: &str,
    socket: &str,
) -> Result<()> {
    conn.query_drop("STOP SLAVE SQL_THREAD").with_context(|| {
        format!("{name} needs the replica's SQL thread stopped; STOP SLAVE SQL_THREAD on the server at {socket}")
    })?;
    let set = conn.query_drop(format!("SET GLOBAL {name} = {v}"));
    let start = conn.query_drop("START SLAVE SQL_THREAD");
    set.with_context(|| {
        format!("SET GLOBAL {name} = {v} (replica SQL thread stopped) on the server at {socket}")
    })?;
    start.with_context(|| {
        format!(
            "restarting the replica's SQL thread after SET GLOBAL {name} = {v} on the server at \
             {socket}: run START SLAVE SQL_THREAD there"
        )
    })
}

fn needs_restart(name: &str, value: &str, socket: &str) -> String {
    format!(
        "{name} cannot be changed live on the server at {socket}: it is static and needs a restart \
         (set {name}={value} in the server's option file, then restart the server); not applied"
    )
}

/// Of the processes holding a listening socket, the server: the one whose
/// parent does not hold it. A child forked a moment ago holds it too until
/// it closes it (a PostgreSQL backend, the postmaster's listening sockets),
/// and once pids wrap it can come first in `/proc`.
fn listening_server(holders: &[u32], parent: impl Fn(u32) -> Option<u32>) -> Option<u32> {
    holders
        .iter()
        .copied()
        .find(|&p| parent(p).is_none_or(|pp| !holders.contains(&pp)))
        .or_else(|| holders.first().copied())
}

/// Checks that the server listening on the Unix socket `socket` is the
/// process `pid` (the socket's inode among `pid`'s descriptors), so a
/// diagnosis does not read one server's settings and another's signals.
/// A PostgreSQL socket directory stands for the `.s.PGSQL.PORT` socket
/// in it. Sockets the kernel does not list (another network namespace)
/// pass. A socket another process holds (a forwarder, a proxy) passes when
/// `admin`, connected through it, reaches a server that says it is `pid`
/// ([`Admin::server_pid`]).
pub fn check_served_by(socket: &Path, pid: u32, admin: Option<&mut Admin>) -> Result<()> {
    let pg = postgres_socket(socket)?;
    let file = match &pg {
        Some((dir, port)) => dir.join(format!(".s.PGSQL.{port}")),
        None => socket.to_path_buf(),
    };
    let inodes = socket_inodes(&file)?;
    if inodes.is_empty() {
        return Ok(());
    }
    let holds = |p: u32| -> bool {
        std::fs::read_dir(format!("/proc/{p}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .any(|l| {
                let l = l.to_string_lossy();
                l.strip_prefix("socket:[")
                    .and_then(|r| r.strip_suffix(']'))
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| inodes.contains(&n))
            })
    };
    if holds(pid) {
        return Ok(());
    }
    let says = admin.and_then(|a| a.server_pid());
    if says == Some(pid) {
        return Ok(());
    }
    let comm = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/comm"))
            .map(|c| c.trim().to_string())
            .unwrap_or_else(|_| "?".into())
    };
    let holders: Vec<u32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| p != pid && holds(p))
        .collect();
    let owner = listening_server(&holders, redoctor_probes::procfs::parent);
    let mut served = match owner {
        Some(o) => format!("is served by pid {o} ({})", comm(o)),
        None => "is not served by it".to_string(),
    };
    if let Some(s) = says {
        served.push_str(&format!(" and reaches the server of pid {s} ({})", comm(s)));
    }
    let find = if pg.is_some() {
        "PostgreSQL: `SHOW unix_socket_directories` on it; the postmaster's pid is the first line of DATADIR/postmaster.pid"
    } else {
        "MariaDB/MySQL: `SELECT @@socket` on it"
    };
    bail!(
        "the socket {} {served}, not by pid {pid} ({}): the settings would be read from (and changed on) \
         another server than the one observed; pass the socket of pid {pid}'s server \
         ({find}) or the pid of the server behind this socket",
        file.display(),
        comm(pid)
    )
}

/// Inodes of the Unix sockets bound to `socket` (`/proc/net/unix`).
fn socket_inodes(socket: &Path) -> Result<Vec<u64>> {
    let table = std::fs::read_to_string("/proc/net/unix").context("reading /proc/net/unix")?;
    let want: Vec<std::path::PathBuf> = [Some(socket.to_path_buf()), socket.canonicalize().ok()]
        .into_iter()
        .flatten()
        .collect();
    Ok(table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let path = Path::new(f.get(7)?);
            let bound = [Some(path.to_path_buf()), path.canonicalize().ok()];
            bound
                .iter()
                .flatten()
                .any(|p| want.contains(p))
                .then(|| f.get(6)?.parse().ok())
                .flatten()
        })
        .collect())
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bail!("`{name}` is not a variable name (letters, digits and _ only)");
    }
    Ok(())
}

/// A value as SQL: numbers and ON/OFF bare, anything else quoted.
fn sql_value(v: &str) -> Result<String> {
    if v.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
        && !v.is_empty()
    {
        if v.chars().all(|c| c.is_ascii_digit())
            || ["ON", "OFF"].contains(&v.to_ascii_uppercase().as_str())
        {
            return Ok(v.to_string());
        }
        return Ok(format!("'{v}'"));
    }
    bail!("`{v}` is not a setting value (letters, digits, _, . and - only)")
}

#[cfg(test)]
mod tests {
    use super::listening_server;

    /// Pids wrapped: the postmaster (32760) and a backend it just forked
    /// (300), which still holds the listening socket, are both holders.
    #[test]
    fn the_server_is_the_holder_whose_parent_does_not_hold_the_socket() {
        let parent = |p: u32| match p {
            300 => Some(32760),
            32760 => Some(1),
            _ => None,
        };
        assert_eq!(listening_server(&[300, 32760], parent), Some(32760));
        assert_eq!(listening_server(&[32760], parent), Some(32760));
        assert_eq!(listening_server(&[], parent), None);
        // A parent we cannot read: the holder itself.
        assert_eq!(listening_server(&[7], |_| None), Some(7));
    }
}
