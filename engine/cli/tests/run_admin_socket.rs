//! `redoctor-engine run --admin-socket`: the MySQL protocol on the engine the
//! workload runs against, for live settings changes during the run. Its
//! connection threads are `admin/N` (never `conn/N`, which the probes'
//! profile counts as user threads), and the socket file is gone after the run.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

const BIN: &str = env!("CARGO_BIN_EXE_redoctor-engine");

/// The comm of every thread of `pid`.
fn thread_names(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return vec![];
    };
    tasks
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|s| s.trim().to_string())
        .collect()
}

/// Context switches so far of the process's dedicated log writer and
/// flusher threads, by name.
fn log_thread_switches(pid: u32) -> Vec<(String, u64)> {
    let mut v = vec![];
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let dir = e.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        let comm = comm.trim().to_string();
        if comm != "log_writer" && comm != "log_flusher" {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(dir.join("status")) else {
            continue;
        };
        let n = status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
            .sum();
        v.push((comm, n));
    }
    v.sort();
    v
}

/// Kills the child if the test fails before it exits.
struct Running(Option<Child>);

impl Running {
    fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    fn has_exited(&mut self) -> bool {
        self.0.as_mut().unwrap().try_wait().unwrap().is_some()
    }

    fn wait(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn status(c: &mut mysql::Conn, name: &str) -> u64 {
    let rows: Vec<(String, String)> = c
        .query(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .unwrap();
    assert_eq!(rows.len(), 1, "SHOW GLOBAL STATUS LIKE '{name}': {rows:?}");
    rows[0].1.parse().unwrap()
}

#[test]
fn settings_change_live_through_the_admin_socket_during_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("admin.sock");
    let child = Command::new(BIN)
        .args(["run", "--workload", "update_index", "--users", "4"])
        .args(["--duration", "3", "--warmup", "0", "--json"])
        .arg("--datadir")
        .arg(dir.path().join("data"))
        .arg("--admin-socket")
        .arg(&socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = Running(Some(child));
    let pid = run.pid();

    // The socket appears once the tables are loaded, just before the users start.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(socket.exists()
        && thread_names(pid)
            .iter()
            .filter(|n| n.starts_with("user/"))
            .count()
            == 4)
    {
        assert!(
            !run.has_exited(),
            "the run exited before its admin socket and users were up"
        );
        assert!(
            Instant::now() < deadline,
            "no admin socket / user threads within 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut c = common::connect(&socket);
    let before: String = c
        .query_first("SELECT @@global.innodb_log_writer_threads")
        .unwrap()
        .unwrap();
    assert_eq!(
        before, "ON",
        "the engine's default is the dedicated log threads"
    );
    let switches = status(&mut c, "Innodb_redo_mode_switches");

    // Connected: one admin/N thread, an admin_acceptor, no conn/ thread and
    // still exactly the run's 4 user threads.
    let names = thread_names(pid);
    assert!(
        names.iter().any(|n| n.starts_with("admin/")),
        "no admin/N thread while connected: {names:?}"
    );
    assert!(
        names.iter().any(|n| n == "admin_acceptor"),
        "no admin_acceptor: {names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("conn")),
        "a conn thread would count as a user thread: {names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| n.starts_with("user/")).count(),
        4,
        "{names:?}"
    );

    c.query_drop("SET GLOBAL innodb_log_writer_threads=OFF")
        .unwrap();
    let after: String = c
        .query_first("SELECT @@innodb_log_writer_threads")
        .unwrap()
        .unwrap();
    assert_eq!(after, "OFF");
    let vars: Vec<(String, String)> = c
        .query("SHOW GLOBAL VARIABLES LIKE 'innodb_log_writer_threads'")
        .unwrap();
    assert_eq!(
        vars,
        [("innodb_log_writer_threads".to_string(), "OFF".to_string())]
    );
    // The switch happened in the engine the workload runs against: the
    // counter moved and the dedicated log threads are parked (alive, not
    // woken while the workload commits).
    assert!(
        status(&mut c, "Innodb_redo_mode_switches") > switches,
        "Innodb_redo_mode_switches did not move"
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    let before = log_thread_switches(pid);
    assert_eq!(before.len(), 2, "log threads parked, not ended: {before:?}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        log_thread_switches(pid),
        before,
        "dedicated log threads still running after the switch to OFF: {:?}",
        thread_names(pid)
    );
    let commits = status(&mut c, "Com_commit");
    assert!(commits > 0, "the workload committed nothing yet");
    drop(c);

    let out = run.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "run failed: {}\n{stderr}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().expect("no JSON report on stdout");
    let report: serde_json::Value = serde_json::from_str(line).unwrap();
    assert!(
        report["commits"].as_u64().is_some_and(|n| n > 0),
        "the run reports no commits: {line}"
    );
    assert!(!socket.exists(), "the admin socket file was left behind");
}

#[test]
fn an_admin_socket_in_a_missing_directory_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("no-such-dir").join("admin.sock");
    let datadir = dir.path().join("data");
    let out = Command::new(BIN)
        .args(["run", "--workload", "update_index", "--duration", "1"])
        .arg("--datadir")
        .arg(&datadir)
        .arg("--admin-socket")
        .arg(&socket)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "accepted a bad --admin-socket: {stderr}"
    );
    assert!(
        stderr.contains(&socket.display().to_string()),
        "the error does not name the path: {stderr}"
    );
    assert!(
        stderr.contains("does not exist") && stderr.contains("create it"),
        "the error does not name the cause and the fix: {stderr}"
    );
    assert!(!datadir.exists(), "the engine was started: {stderr}");
}

#[test]
fn an_admin_socket_path_that_is_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-a-socket");
    std::fs::write(&path, b"keep me").unwrap();
    let out = Command::new(BIN)
        .args(["run", "--workload", "update_index", "--duration", "1"])
        .arg("--datadir")
        .arg(dir.path().join("data"))
        .arg("--admin-socket")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted a regular file: {stderr}");
    assert!(
        stderr.contains(&path.display().to_string()) && stderr.contains("not a socket"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
    assert!(!Path::new(&dir.path().join("data")).exists());
}
