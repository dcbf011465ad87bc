//! A private PostgreSQL cluster for live tests: `initdb` in a temporary
//! directory owned by the `postgres` OS user (the server refuses to run as
//! root), started with its own socket directory and no TCP listener, and
//! stopped when dropped (also when a test fails). Shared by the probe and
//! agent tests (`#[path]`-included).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Debian's PostgreSQL 15 binaries.
pub const BIN_DIR: &str = "/usr/lib/postgresql/15/bin";

/// Why live PostgreSQL tests cannot run here, or `None` when they can.
pub fn missing() -> Option<String> {
    for b in ["initdb", "pg_ctl", "postgres", "psql", "pg_basebackup"] {
        if !Path::new(BIN_DIR).join(b).exists() {
            return Some(format!(
                "{BIN_DIR}/{b} is missing (apt-get install postgresql-15)"
            ));
        }
    }
    let sb = Command::new("sysbench").arg("--help").output();
    match sb {
        Ok(o) if String::from_utf8_lossy(&o.stdout).contains("pgsql") => {}
        Ok(_) => return Some("sysbench has no pgsql driver".into()),
        Err(_) => return Some("sysbench is missing (apt-get install sysbench)".into()),
    }
    if uid_of("postgres").is_none() {
        return Some("no `postgres` OS user to run the server as".into());
    }
    None
}

/// Whether a live test must stop here (`redoctor_testkit::skip_if_missing`:
/// a failure naming the cause under `REDOCTOR_REQUIRE_ALL=1`).
pub fn skip(test: &str) -> bool {
    redoctor_testkit::skip_if_missing(test, missing())
}

fn uid_of(user: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&user)).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

fn as_postgres(prog: &Path) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", "postgres", "--"]).arg(prog);
    c
}

fn ok(what: &str, o: std::io::Result<Output>) -> Output {
    let o = o.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        o.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A copy of the server binary without its USDT notes, laid out as the
/// installed one (`lib/postgresql/15/bin`) so it finds its share and lib
/// directories relative to itself.
pub fn binary_without_usdt(root: &Path) -> std::path::PathBuf {
    let bin = root.join("lib/postgresql/15/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(
        "/usr/lib/postgresql/15/lib",
        root.join("lib/postgresql/15/lib"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("share/postgresql")).unwrap();
    std::os::unix::fs::symlink("/usr/share/postgresql/15", root.join("share/postgresql/15"))
        .unwrap();
    let out = bin.join("postgres");
    let o = Command::new("objcopy")
        .args(["--remove-section", ".note.stapsdt"])
        .arg(Path::new(BIN_DIR).join("postgres"))
        .arg(&out)
        .output()
        .expect("objcopy (binutils)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// A running cluster.
pub struct Cluster {
    dir: tempfile::TempDir,
    pub data: PathBuf,
    pub sock: PathBuf,
    /// The postmaster's pid.
    pub pid: u32,
}

impl Cluster {
    /// initdb + start with `settings` (`name=value`, as `-c` options);
    /// `postgres` is the server binary to run (default: the installed one).
    pub fn start(settings: &[&str], postgres: Option<&Path>) -> Cluster {
        let (dir, data, sock) = Self::dirs();
        ok(
            "initdb",
            as_postgres(&Path::new(BIN_DIR).join("initdb"))
                .arg("-D")
                .arg(&data)
                .args(["-U", "postgres", "-A", "trust", "--no-sync"])
                .output(),
        );
        Self::launch(dir, data, sock, settings, postgres)
    }

    /// A streaming-replication standby of this cluster: `pg_basebackup -R`
    /// over its socket (initdb's `-A trust` allows local replication), then
    /// started with `settings`, hot standby on. Waits until its walreceiver
    /// streams.
    pub fn standby(&self, settings: &[&str]) -> Cluster {
        let (dir, data, sock) = Self::dirs();
        ok(
            "pg_basebackup",
            as_postgres(&Path::new(BIN_DIR).join("pg_basebackup"))
                .arg("-h")
                .arg(&self.sock)
                .args([
                    "-U",
                    "postgres",
                    "-R",
                    "-X",
                    "stream",
                    "--checkpoint=fast",
                    "--no-sync",
                    "-D",
                ])
                .arg(&data)
                .output(),
        );
        let c = Self::launch(dir, data, sock, settings, None);
        let t = Instant::now();
        while c.sql(
            "postgres",
            "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'",
        ) != "1"
        {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the standby does not stream: {}",
                std::fs::read_to_string(c.dir().join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        c
    }

    /// A temporary directory owned by the postgres user, its `data` path
    /// and a socket directory.
    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::Builder::new()
            .prefix("redoctor-pg.")
            .tempdir()
            .unwrap();
        let (uid, gid) = uid_of("postgres").expect("postgres user");
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        let data = dir.path().join("data");
        let sock = dir.path().join("sock");
        std::fs::create_dir(&sock).unwrap();
        std::os::unix::fs::chown(&sock, Some(uid), Some(gid)).unwrap();
        (dir, data, sock)
    }

    fn launch(
        dir: tempfile::TempDir,
        data: PathBuf,
        sock: PathBuf,
        settings: &[&str],
        postgres: Option<&Path>,
    ) -> Cluster {
        let mut opts = format!("-k {} -c listen_addresses=''", sock.display());
        for s in settings {
            opts.push_str(&format!(" -c {s}"));
        }
        let mut c = as_postgres(&Path::new(BIN_DIR).join("pg_ctl"));
        c.arg("-D")
            .arg(&data)
            .arg("-o")
            .arg(&opts)
            .arg("-l")
            .arg(dir.path().join("server.log"))
            .args(["-w", "-t", "30"]);
        if let Some(p) = postgres {
            c.arg("-p").arg(p);
        }
        c.arg("start").stdin(Stdio::null());
        ok("pg_ctl start", c.output());
        let pidfile = std::fs::read_to_string(data.join("postmaster.pid")).unwrap();
        let pid = pidfile.lines().next().unwrap().trim().parse().unwrap();
        Cluster {
            dir,
            data,
            sock,
            pid,
        }
    }

    /// A directory owned by the postgres user inside the cluster's own.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// One SQL statement through psql; its output, unaligned.
    pub fn sql(&self, db: &str, sql: &str) -> String {
        let o = ok(
            &format!("psql -c {sql:?}"),
            Command::new(Path::new(BIN_DIR).join("psql"))
                .arg("-h")
                .arg(&self.sock)
                .args(["-U", "postgres", "-d", db, "-XAtq", "-c", sql])
                .output(),
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// A number `sql` returns.
    pub fn number(&self, db: &str, sql: &str) -> u64 {
        let v = self.sql(db, sql);
        v.parse()
            .unwrap_or_else(|e| panic!("{sql} returned {v:?}: {e}"))
    }

    /// Database `db` with sysbench's table (`rows` rows).
    pub fn prepare_sysbench(&self, db: &str, rows: u32) {
        self.sql("postgres", &format!("CREATE DATABASE {db}"));
        ok(
            "sysbench prepare",
            self.sysbench(db, 1, 1, rows, "prepare").output(),
        );
    }

    /// `sysbench oltp_update_index ... <cmd>` against `db`.
    pub fn sysbench(&self, db: &str, threads: u32, secs: u32, rows: u32, cmd: &str) -> Command {
        self.sysbench_test("oltp_update_index", db, threads, secs, rows, cmd)
    }

    /// `sysbench <test> ... <cmd>` against `db` (one table of `rows` rows).
    pub fn sysbench_test(
        &self,
        test: &str,
        db: &str,
        threads: u32,
        secs: u32,
        rows: u32,
        cmd: &str,
    ) -> Command {
        let mut c = Command::new("sysbench");
        c.arg(test)
            .arg("--db-driver=pgsql")
            .arg(format!("--pgsql-host={}", self.sock.display()))
            .arg("--pgsql-user=postgres")
            .arg(format!("--pgsql-db={db}"))
            .arg("--tables=1")
            .arg(format!("--table-size={rows}"))
            .arg(format!("--threads={threads}"))
            .arg(format!("--time={secs}"))
            .arg(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// The pid of a client backend (a live psql session's), waiting for it
    /// to appear; the session lasts `secs` (sessions of different `secs`
    /// are told apart).
    // The caller owns the session and waits for it; a panic here ends the test.
    #[allow(clippy::zombie_processes)]
    pub fn backend(&self, secs: u32) -> (std::process::Child, u32) {
        let mut child = Command::new(Path::new(BIN_DIR).join("psql"))
            .arg("-h")
            .arg(&self.sock)
            .args(["-U", "postgres", "-d", "postgres", "-XAtq", "-c"])
            .arg(format!("SELECT pg_sleep({secs})"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        loop {
            let pids = self.sql(
                "postgres",
                &format!(
                    "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep({secs})' AND pid <> pg_backend_pid()"
                ),
            );
            if let Some(p) = pids.lines().next().and_then(|l| l.trim().parse().ok()) {
                return (child, p);
            }
            if t.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no backend appeared");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = as_postgres(&Path::new(BIN_DIR).join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
