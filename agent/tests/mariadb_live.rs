//! A real MariaDB server (Debian's `mariadb-server`, 10.11) under sysbench,
//! on a private datadir and socket with networking off, killed at the end
//! (also on failure). One test runs every check in sequence on one server,
//! so the server and its data are made once:
//! 1. commits and redo I/O counted by the probes equal the server's own
//!    counters over the same load, within 1%;
//! 2. `diagnose --profile mariadb` names its profile, roles and only
//!    settings the server has, within 10 s;
//! 3. wrong pid or socket: an error naming the cause and the fix, nothing applied;
//! 4. `apply`/`revert` of a dynamic setting, `apply` of a static one refused;
//! 5. `diagnose --trial` on the thread pool (server restarted with it).
//!
//! Skipped, saying why, only when mariadbd or sysbench is not installed
//! (`apt-get install mariadb-server sysbench`) or the kernel lacks BPF.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::text;
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use serde_json::Value;

/// The first of `names` found on PATH or in /usr/sbin, /usr/bin.
fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into()])
        .collect();
    names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

struct Tools {
    mariadbd: PathBuf,
    install_db: PathBuf,
    sysbench: PathBuf,
}

fn tools() -> Result<Tools, String> {
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
struct Maria {
    child: Option<Child>,
    dir: tempfile::TempDir,
    mariadbd: PathBuf,
}

impl Maria {
    fn install(t: &Tools) -> Maria {
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

    fn socket(&self) -> PathBuf {
        self.dir.path().join("m.sock")
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    fn start(&mut self, extra: &[&str]) {
        let d = self.dir.path();
        let child = Command::new(&self.mariadbd)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", d.join("data").display()))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--pid-file={}", d.join("m.pid").display()))
            .arg(format!("--log-error={}", d.join("error.log").display()))
            .args(["--skip-networking", "--user=root"])
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

    fn stop(&mut self) {
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

    fn try_conn(&self) -> Option<Conn> {
        let opts = OptsBuilder::new()
            .socket(Some(self.socket().to_str().unwrap().to_string()))
            .user(Some("root"));
        Conn::new(opts).ok()
    }

    fn conn(&self) -> Conn {
        self.try_conn().expect("connecting to mariadbd")
    }

    fn var(&self, name: &str) -> String {
        let rows: Vec<(String, String)> = self
            .conn()
            .query(format!("SHOW GLOBAL VARIABLES LIKE '{name}'"))
            .unwrap();
        rows.into_iter().next().map(|r| r.1).unwrap_or_default()
    }

    fn status(&self, names: &[&str]) -> Vec<f64> {
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

    fn sysbench(&self, t: &Tools, test: &str, threads: u32, secs: u32, cmd: &str) -> Child {
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

/// Kills a child process on drop (a load or a probe left running by a failed check).
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn finish(c: Child) {
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success(), "sysbench failed: {:?}", text(&o));
}

fn redoctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(args)
        .output()
        .unwrap()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn within(what: &str, probe: f64, server: f64, tol: f64) {
    let err = (probe - server).abs() / server.max(1.0);
    eprintln!(
        "{what}: probes {probe}, server {server} ({:.3}% apart)",
        err * 100.0
    );
    assert!(
        server > 0.0 && err <= tol,
        "{what}: probes counted {probe}, the server {server}: {:.2}% apart (> {:.0}%)",
        err * 100.0,
        tol * 100.0
    );
}

#[test]
fn mariadb_live() {
    if common::skip() {
        return;
    }
    let t = match tools() {
        Ok(t) => t,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let mut m = Maria::install(&t);
    m.start(&[]);
    m.conn().query_drop("CREATE DATABASE sbtest").unwrap();
    finish(m.sysbench(&t, "oltp_read_write", 4, 10, "prepare"));

    counts_match_the_server(&m, &t);
    let state = m.dir.path().join("state.json");
    diagnose_names_only_mariadb_settings(&m, &t);
    wrong_pid_or_socket_is_refused(&m, &state);
    apply_and_revert(&m, &state);

    // The thread pool is static: restart with it to try its dynamic knobs.
    m.stop();
    m.start(&["--thread-handling=pool-of-threads", "--thread-pool-size=8"]);
    trial_on_the_thread_pool(&m, &t, &state);
    m.stop();
}

/// Check 1: probe windows cover the whole load: commits (calls of the commit
/// point) equal the transactions that committed (oltp_read_write: one
/// COMMIT each, so `Com_commit`; oltp_update_index: autocommit UPDATEs,
/// so `Com_update`), fsyncs equal `Innodb_data_fsyncs` (10.11 has no
/// redo-only fsync counter: it counts redo and data-file fsyncs), writes
/// to ib_logfile0 equal `Innodb_log_writes`.
fn counts_match_the_server(m: &Maria, t: &Tools) {
    let pid = m.pid().to_string();
    let mut probe = Reap(
        Command::new(env!("CARGO_BIN_EXE_redoctor"))
            .args([
                "probe",
                "--pid",
                &pid,
                "--profile",
                "mariadb",
                "--json",
                "--interval",
                "500ms",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let (tx, rx) = mpsc::channel::<Value>();
    let out = probe.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let mut windows = vec![rx
        .recv_timeout(Duration::from_secs(30))
        .expect("no window from redoctor probe")];
    let names = [
        "Com_commit",
        "Com_update",
        "Innodb_data_fsyncs",
        "Innodb_log_writes",
    ];
    let s0 = m.status(&names);
    finish(m.sysbench(t, "oltp_read_write", 16, 2, "run"));
    let s1 = m.status(&names);
    finish(m.sysbench(t, "oltp_update_index", 16, 2, "run"));
    let s2 = m.status(&names);
    let end = now_ms();
    // Every window up to one that closed after the load ended.
    loop {
        let w = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("redoctor probe stopped printing windows");
        let done = w["end_unix_ms"].as_u64().unwrap() > end + 600;
        windows.push(w);
        if done {
            break;
        }
    }
    drop(probe);
    let sum = |f: &dyn Fn(&Value) -> f64| windows.iter().map(f).sum::<f64>();
    let io = |w: &Value, kind: &str, field: &str| w["io"][kind][field].as_f64().unwrap_or(0.0);
    assert_eq!(windows[0]["profile"], "mariadb");
    assert!(
        windows[0]["engine"]["attached"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str().unwrap().contains("commit_pos")),
        "{}",
        windows[0]["engine"]
    );
    let commits = sum(&|w| w["engine"]["commits"].as_f64().unwrap());
    let server_commits = (s1[0] - s0[0]) + (s2[1] - s1[1]);
    assert_eq!(s2[0] - s1[0], 0.0, "oltp_update_index runs in autocommit");
    within("commits", commits, server_commits, 0.01);
    let redo_fsyncs = sum(&|w| io(w, "redo", "fsync_calls"));
    let data_fsyncs = sum(&|w| io(w, "data", "fsync_calls"));
    within(
        "InnoDB fsyncs (redo + data files)",
        redo_fsyncs + data_fsyncs,
        s2[2] - s0[2],
        0.01,
    );
    assert!(
        redo_fsyncs >= 0.95 * (redo_fsyncs + data_fsyncs),
        "under a commit load the fsyncs are the redo log's: redo {redo_fsyncs}, data {data_fsyncs}"
    );
    within(
        "redo writes",
        sum(&|w| io(w, "redo", "write_calls")),
        s2[3] - s0[3],
        0.01,
    );
}

/// Check 2: a loaded server diagnosed: the report is MariaDB's.
fn diagnose_names_only_mariadb_settings(m: &Maria, t: &Tools) {
    let load = Reap(m.sysbench(t, "oltp_read_write", 16, 20, "run"));
    std::thread::sleep(Duration::from_secs(1));
    let report = m.dir.path().join("report.json");
    let began = Instant::now();
    let pid = m.pid().to_string();
    let o = redoctor(&[
        "diagnose",
        "--pid",
        &pid,
        "--socket",
        m.socket().to_str().unwrap(),
        "--profile",
        "mariadb",
        "--duration",
        "5s",
        "--format",
        "json",
        "--out",
        report.to_str().unwrap(),
    ]);
    let took = began.elapsed();
    drop(load);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    eprintln!("diagnose took {took:?}: {err}");
    assert!(took <= Duration::from_secs(10), "diagnose took {took:?}");
    let raw = std::fs::read_to_string(&report).unwrap();
    for absent in [
        "innodb_log_writer_threads",
        "innodb_thread_concurrency",
        "innodb_admission_policy",
        "innodb_max_active_transactions",
    ] {
        assert!(!raw.contains(absent), "the report names {absent}: {raw}");
    }
    let d: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(d["facts"]["engine"], "mariadb");
    assert!(d["summary"]["commits"].as_f64().unwrap() > 0.0);
    let w = &d["windows"][0];
    assert_eq!(w["profile"], "mariadb");
    assert!(w["roles"]["user"]["threads"].as_u64().unwrap() >= 16);
    // Every setting it speaks of exists on the server, with the server's value.
    for (k, v) in d["facts"]["settings"].as_object().unwrap() {
        assert_eq!(&m.var(k), v.as_str().unwrap(), "setting {k}");
    }
    for n in d["not_applied"].as_array().unwrap() {
        let s = n["setting"].as_str().unwrap();
        assert!(!m.var(s).is_empty(), "{s} is not a MariaDB setting");
        if s == "thread_handling" {
            assert_eq!(n["status"], "needs_restart", "{n}");
        }
    }
    assert!(d["recommendations"].as_array().unwrap().is_empty());
    assert!(d["model"]["predictions"].as_array().unwrap().is_empty());
}

/// Check 3: the wrong process or the wrong socket: an error naming the cause
/// and the fix, exit 1, nothing applied.
fn wrong_pid_or_socket_is_refused(m: &Maria, state: &Path) {
    let engine = common::Served::start();
    let maria_pid = m.pid().to_string();
    let engine_pid = engine.child.id().to_string();
    let sleep = Reap(Command::new("sleep").arg("60").spawn().unwrap());
    let sleep_pid = sleep.0.id().to_string();
    let ms = m.socket();
    let es = engine.socket();
    let state_s = state.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        (
            vec!["--pid", &sleep_pid, "--profile", "mariadb"],
            &["none of the profile's commit points", "pidof mariadbd"],
        ),
        (
            vec!["--pid", &engine_pid, "--profile", "mariadb"],
            &[
                "none of the profile's commit points",
                "--profile redoctor-engine",
            ],
        ),
        (
            vec![
                "--pid",
                &maria_pid,
                "--profile",
                "mariadb",
                "--socket",
                es.to_str().unwrap(),
                "--trial",
            ],
            &["is served by pid", "SELECT @@socket"],
        ),
        (
            vec![
                "--pid",
                &engine_pid,
                "--socket",
                ms.to_str().unwrap(),
                "--trial",
            ],
            &["is served by pid", "mariadbd"],
        ),
        (
            vec!["--pid", &maria_pid, "--socket", ms.to_str().unwrap()],
            &["is MariaDB", "--profile mariadb"],
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["diagnose", "--duration", "2s", "--state", state_s];
        all.extend(&args);
        let o = redoctor(&all);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        for s in says {
            assert!(err.contains(s), "{args:?}: expected {s:?} in: {err}");
        }
    }
    assert!(!state.exists(), "nothing is recorded as applied");
    assert_eq!(engine.var("innodb_log_writer_threads"), "ON");
}

/// Check 4: a dynamic setting applied and reverted through MariaDB's socket; a
/// static one refused before anything changes.
fn apply_and_revert(m: &Maria, state: &Path) {
    let sock = m.socket();
    let base = [
        "--socket",
        sock.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ];
    let run = |cmd: &str, extra: &[&str]| {
        let mut a = vec![cmd];
        a.extend(base);
        a.extend(extra);
        redoctor(&a)
    };
    let o = run("apply", &["--set", "thread_pool_max_threads=64"]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(m.var("thread_pool_max_threads"), "64");
    let o = run("revert", &[]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(m.var("thread_pool_max_threads"), "65536");
    for set in [
        vec!["--set", "thread_handling=pool-of-threads"],
        vec![
            "--set",
            "thread_pool_max_threads=64",
            "--set",
            "thread_handling=pool-of-threads",
        ],
    ] {
        let o = run("apply", &set);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("needs a restart"), "{err}");
        assert_eq!(m.var("thread_handling"), "one-thread-per-connection");
        assert_eq!(m.var("thread_pool_max_threads"), "65536");
    }
    let st: Value = serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    assert!(st["entries"].as_array().unwrap().is_empty(), "{st}");
}

/// Check 5: with the thread pool on and 8 thread groups for 2 CPUs, the pool
/// size rule proposes the CPU count and the trial tries it live.
fn trial_on_the_thread_pool(m: &Maria, t: &Tools, state: &Path) {
    let cores = std::thread::available_parallelism().unwrap().get();
    if cores >= 8 {
        eprintln!("trial check skipped: {cores} CPUs, the pool size rule needs fewer than 8");
        return;
    }
    let load = Reap(m.sysbench(t, "oltp_read_write", 32, 40, "run"));
    std::thread::sleep(Duration::from_secs(1));
    let pid = m.pid().to_string();
    let report = m.dir.path().join("trial.json");
    let o = redoctor(&[
        "diagnose",
        "--pid",
        &pid,
        "--socket",
        m.socket().to_str().unwrap(),
        "--profile",
        "mariadb",
        "--duration",
        "3s",
        "--trial",
        "--trial-window",
        "500ms",
        "--trial-rounds",
        "4",
        "--trial-max",
        "12s",
        "--state",
        state.to_str().unwrap(),
        "--format",
        "json",
        "--out",
        report.to_str().unwrap(),
    ]);
    drop(load);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("redoctor: trial:"), "{err}");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let trial = d["trial"].to_string();
    assert!(trial.contains("thread_pool_size"), "{trial}");
    // Kept (recorded, revert restores 8) or rolled back (still 8).
    let now = m.var("thread_pool_size");
    let o = redoctor(&[
        "revert",
        "--socket",
        m.socket().to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    eprintln!(
        "trial left thread_pool_size = {now}; after revert {}",
        m.var("thread_pool_size")
    );
    assert_eq!(m.var("thread_pool_size"), "8");
}
