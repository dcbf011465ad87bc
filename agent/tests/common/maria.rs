//! A real MariaDB server (Debian's `mariadb-server`, 10.11) on a private
//! datadir and socket, for the live tests: install, start (networking off
//! unless a `--port=` is given, then on 127.0.0.1 only), stop, query, and
//! sysbench against it.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

use super::text;

/// The first of `names` found on PATH or in /usr/sbin, /usr/bin.
pub fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into()])
        .collect();
    names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

pub struct Tools {
    pub mariadbd: PathBuf,
    pub install_db: PathBuf,
    pub sysbench: PathBuf,
}

pub fn tools() -> Result<Tools, String> {
    let need = |names: &[&str], pkg: &str| {
        find(names)
            .ok_or_else(|| format!("{} not found (install it: apt-get install {pkg})", names[0]))
    };
    Ok(Tools {
        mariadbd: need(&["mariadbd", "mysqld"], "mariadb-server")?,
        install_db: need(
            &["mariadb-install-db", "mysql_install_db"],
            "mariadb-server",
        )?,
        sysbench: need(&["sysbench"], "sysbench")?,
    })
}

/// A MariaDB server on a private datadir; killed on drop.
pub struct Maria {
    pub child: Option<Child>,
    pub dir: tempfile::TempDir,
    mariadbd: PathBuf,
}

impl Maria {
    pub fn install(t: &Tools) -> Maria {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(&t.install_db)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.path().join("data").display()))
            .args([
                "--auth-root-authentication-method=normal",
                "--user=root",
                "--skip-test-db",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "mariadb-install-db: {:?}", text(&out));
        Maria {
            child: None,
            dir,
            mariadbd: t.mariadbd.clone(),
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("m.sock")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn start(&mut self, extra: &[&str]) {
        let d = self.dir.path();
        let child = Command::new(&self.mariadbd)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", d.join("data").display()))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--pid-file={}", d.join("m.pid").display()))
            .arg(format!("--log-error={}", d.join("error.log").display()))
            .args(if extra.iter().any(|a| a.starts_with("--port=")) {
                ["--bind-address=127.0.0.1", "--user=root"]
            } else {
                ["--skip-networking", "--user=root"]
            })
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let t = Instant::now();
        loop {
            if self.socket().exists() && self.try_conn().is_some() {
                return;
            }
            let log = std::fs::read_to_string(d.join("error.log")).unwrap_or_default();
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "mariadbd did not start: {log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let t = Instant::now();
            while c.try_wait().unwrap().is_none() {
                if t.elapsed() > Duration::from_secs(30) {
                    let _ = c.kill();
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    pub fn try_conn(&self) -> Option<Conn> {
        let opts = OptsBuilder::new()
            .socket(Some(self.socket().to_str().unwrap().to_string()))
            .user(Some("root"));
        Conn::new(opts).ok()
    }

    pub fn conn(&self) -> Conn {
        self.try_conn().expect("connecting to mariadbd")
    }

    pub fn var(&self, name: &str) -> String {
        let rows: Vec<(String, String)> = self
            .conn()
            .query(format!("SHOW GLOBAL VARIABLES LIKE '{name}'"))
            .unwrap();
        rows.into_iter().next().map(|r| r.1).unwrap_or_default()
    }

    pub fn status(&self, names: &[&str]) -> Vec<f64> {
        let rows: Vec<(String, String)> = self.conn().query("SHOW GLOBAL STATUS").unwrap();
        names
            .iter()
            .map(|n| {
                rows.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(n))
                    .unwrap_or_else(|| panic!("no status counter {n}"))
                    .1
                    .parse()
                    .unwrap()
            })
            .collect()
    }

    /// An InnoDB monitor counter (information_schema.INNODB_METRICS).
    pub fn metric(&self, name: &str) -> f64 {
        let v: Option<i64> = self
            .conn()
            .query_first(format!(
                "SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = '{name}'"
            ))
            .unwrap();
        v.unwrap_or_else(|| panic!("no InnoDB metric {name}")) as f64
    }

    /// `redoctor diagnose --profile mariadb --format json` of this server
    /// for `duration`, with `extra` arguments, the report written to `name`
    /// in its directory; the report and the run's stderr. It must succeed.
    pub fn diagnose(
        &self,
        name: &str,
        duration: &str,
        extra: &[&str],
    ) -> (serde_json::Value, String) {
        let pid = self.pid().to_string();
        let sock = self.socket();
        let report = self.dir.path().join(name);
        let o = Command::new(env!("CARGO_BIN_EXE_redoctor"))
            .args([
                "diagnose",
                "--pid",
                &pid,
                "--socket",
                sock.to_str().unwrap(),
            ])
            .args([
                "--profile",
                "mariadb",
                "--duration",
                duration,
                "--format",
                "json",
            ])
            .arg("--out")
            .arg(&report)
            .args(extra)
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let d = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        (d, err)
    }

    pub fn sysbench(&self, t: &Tools, test: &str, threads: u32, secs: u32, cmd: &str) -> Child {
        self.sysbench_with(t, test, threads, secs, cmd, &[])
    }

    /// `sysbench` with `extra` options (`--rate=N`: N transactions/s at
    /// random, whatever the threads could do).
    pub fn sysbench_with(
        &self,
        t: &Tools,
        test: &str,
        threads: u32,
        secs: u32,
        cmd: &str,
        extra: &[&str],
    ) -> Child {
        Command::new(&t.sysbench)
            .arg(test)
            .arg(format!("--mysql-socket={}", self.socket().display()))
            .args([
                "--mysql-user=root",
                "--db-driver=mysql",
                "--tables=4",
                "--table-size=10000",
            ])
            .arg(format!("--threads={threads}"))
            .arg(format!("--time={secs}"))
            .args(extra)
            .arg(cmd)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

impl Drop for Maria {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
