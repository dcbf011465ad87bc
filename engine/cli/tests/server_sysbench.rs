//! Stock clients nobody here wrote drive `redoctor-engine serve`: sysbench's
//! bundled OLTP scripts (prepare, run, cleanup) and the `mariadb` command-line
//! client. Each test skips only if the tool is not installed, and says so
//! (CI installs both).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use redoctor_testkit::KillOnDrop;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

fn installed(tool: &str) -> bool {
    !redoctor_testkit::skip_if_missing(
        tool,
        redoctor_testkit::tool_missing(
            tool,
            "apt-get install sysbench mariadb-client; .ci/run does this",
        ),
    )
}

struct Served {
    child: KillOnDrop,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start() -> Served {
        Served::start_with(&[], Stdio::inherit())
    }

    /// `serve` with `extra` options; its stderr goes to `stderr`.
    fn start_with(extra: &[&str], stderr: Stdio) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("mysql.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_redoctor-engine"))
            .arg("serve")
            .arg("--datadir")
            .arg(dir.path().join("data"))
            .arg("--socket")
            .arg(&socket)
            .arg("--lock-wait-timeout")
            .arg("10")
            .args(extra)
            .stderr(stderr)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !socket.exists() {
            assert!(
                Instant::now() < deadline,
                "server did not create its socket"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Served {
            child: KillOnDrop(child),
            socket,
            _dir: dir,
        }
    }

    fn status(&self, name: &str) -> u64 {
        let mut c = common::connect(&self.socket);
        let rows: Vec<(String, String)> = c
            .query(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
            .unwrap();
        assert_eq!(rows.len(), 1, "status {name}");
        rows[0].1.parse().unwrap()
    }

    /// SIGTERM, then the exit status and whether the socket file is gone.
    fn stop(mut self) {
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let st = self.child.wait().unwrap();
        assert!(st.success(), "serve exited with {st}");
        assert!(!self.socket.exists(), "socket file left behind");
    }
}

/// Runs a stock sysbench script's `cmd` on `tables` tables of 10,000 rows
/// for 2 s; fails on any error sysbench does not ignore.
fn sysbench(socket: &Path, script: &str, cmd: &str, threads: u32, tables: u32) -> String {
    let out = Command::new("sysbench")
        .args([
            "--db-driver=mysql",
            &format!("--mysql-socket={}", socket.display()),
            "--mysql-user=root",
            "--mysql-db=sbtest",
            &format!("--tables={tables}"),
            "--table-size=10000",
            &format!("--threads={threads}"),
            "--time=2",
            "--report-interval=0",
            script,
            cmd,
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && !text.contains("FATAL"),
        "sysbench {script} {cmd} failed:\n{text}"
    );
    text
}

/// The first number after `label` in sysbench's report.
fn number(report: &str, label: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no '{label}' in:\n{report}"));
    line[line.find(label).unwrap() + label.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_start_matches('(')
        .parse()
        .unwrap()
}

#[test]
fn sysbench_oltp_scripts_prepare_run_cleanup() {
    if !installed("sysbench") {
        return;
    }
    let s = Served::start();
    // Every stock script on sbtest tables; select_random_* take one table.
    for (script, threads, tables) in [
        ("oltp_read_write", 2, 2),
        ("oltp_read_only", 2, 2),
        ("oltp_write_only", 4, 2),
        ("oltp_update_index", 4, 2),
        ("oltp_update_non_index", 4, 2),
        ("oltp_delete", 4, 2),
        ("oltp_insert", 4, 2),
        ("oltp_point_select", 4, 2),
        ("select_random_points", 4, 1),
        ("select_random_ranges", 4, 1),
    ] {
        sysbench(&s.socket, script, "prepare", 1, tables);
        // The bulk load (multi-row INSERTs of ~512 KiB) arrived whole.
        let mut c = common::connect(&s.socket);
        let rows: i64 = c
            .query_first(format!("SELECT COUNT(*) FROM sbtest{tables}"))
            .unwrap()
            .unwrap();
        assert_eq!(rows, 10_000, "{script}: prepare loaded {rows} rows");
        drop(c);
        let commits = s.status("Com_commit");
        let lock_errors = s.status("Innodb_deadlocks") + s.status("Innodb_row_lock_timeouts");
        let report = sysbench(&s.socket, script, "run", threads, tables);
        let trx = number(&report, "transactions:");
        let ignored = number(&report, "ignored errors:");
        let tps = report
            .lines()
            .find(|l| l.trim_start().starts_with("transactions:"))
            .and_then(|l| l.split('(').nth(1))
            .and_then(|l| l.split_whitespace().next())
            .unwrap()
            .parse::<f64>()
            .unwrap();
        let commit_delta = s.status("Com_commit") - commits;
        let lock_delta =
            s.status("Innodb_deadlocks") + s.status("Innodb_row_lock_timeouts") - lock_errors;
        eprintln!(
            "{script}: {trx} transactions, {tps} tps, {ignored} ignored errors, \
             {commit_delta} engine commits, {lock_delta} lock errors"
        );
        assert!(trx > 0.0 && tps > 0.0, "{script}: no throughput\n{report}");
        assert_eq!(
            commit_delta as f64, trx,
            "{script}: engine commits must equal sysbench transactions"
        );
        // The only errors are the retryable ones sysbench retries on MySQL
        // too (deadlock 1213, lock wait timeout 1205), each one counted by the engine.
        assert_eq!(ignored, lock_delta as f64, "{script}: unexplained errors");
        sysbench(&s.socket, script, "cleanup", 1, tables);
        let mut c = common::connect(&s.socket);
        let left: Vec<String> = c.query("SHOW TABLES").unwrap();
        assert!(left.is_empty(), "{script}: cleanup left {left:?}");
    }
    s.stop();
}

/// bulk_insert: one `(id, k)` table per thread, filled by multi-row INSERTs
/// without a column list; each event is one row.
#[test]
fn sysbench_bulk_insert_prepare_run_cleanup() {
    if !installed("sysbench") {
        return;
    }
    let s = Served::start();
    let threads = 2;
    sysbench(&s.socket, "bulk_insert", "prepare", threads, 1);
    let report = sysbench(&s.socket, "bulk_insert", "run", threads, 1);
    let events = number(&report, "transactions:");
    assert_eq!(number(&report, "ignored errors:"), 0.0, "{report}");
    let mut c = common::connect(&s.socket);
    let mut rows = 0;
    for t in 1..=threads {
        let n: i64 = c
            .query_first(format!("SELECT COUNT(*) FROM sbtest{t}"))
            .unwrap()
            .unwrap();
        let sum: i64 = c
            .query_first(format!("SELECT SUM(id) FROM sbtest{t}"))
            .unwrap()
            .unwrap();
        // Each thread's ids are 1..=n.
        assert_eq!(sum, n * (n + 1) / 2, "sbtest{t}: ids are not 1..={n}");
        let cols: Vec<(i64, i64)> = c
            .query(format!("SELECT * FROM sbtest{t} WHERE id = 1"))
            .unwrap();
        assert_eq!(cols, [(1, 1)], "sbtest{t}: rows are (id, k)");
        rows += n;
    }
    eprintln!("bulk_insert: {events} events, {rows} rows");
    assert!(rows > 0);
    assert_eq!(rows as f64, events, "one row per event");
    drop(c);
    sysbench(&s.socket, "bulk_insert", "cleanup", threads, 1);
    let mut c = common::connect(&s.socket);
    let left: Vec<String> = c.query("SHOW TABLES").unwrap();
    assert!(left.is_empty(), "cleanup left {left:?}");
    s.stop();
}

fn mariadb(socket: &Path, sql: &str) -> std::process::Output {
    Command::new("mariadb")
        .arg(format!("--socket={}", socket.display()))
        .args(["--user=root", "--batch", "--skip-column-names", "-e", sql])
        .output()
        .unwrap()
}

#[test]
fn mariadb_client_sets_and_shows_globals() {
    if !installed("mariadb") {
        return;
    }
    let s = Served::start_with(&["--redo-threads", "on"], Stdio::inherit());
    let out = mariadb(
        &s.socket,
        "SET GLOBAL innodb_log_writer_threads = OFF; \
         SET GLOBAL innodb_flush_log_at_trx_commit = 2; \
         SHOW GLOBAL VARIABLES LIKE 'innodb_log_writer_threads'; \
         SELECT @@global.innodb_flush_log_at_trx_commit; \
         SHOW GLOBAL STATUS LIKE 'Com_commit';",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "innodb_log_writer_threads\tOFF");
    assert_eq!(lines[1], "2");
    assert!(lines[2].starts_with("Com_commit\t"));
    // A refused value: error 1231 printed, nothing changed.
    let out = mariadb(&s.socket, "SET GLOBAL innodb_flush_log_at_trx_commit = 5");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("1231"));
    let out = mariadb(&s.socket, "SELECT @@innodb_flush_log_at_trx_commit");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    // Unsupported SQL: a named error, the server keeps serving.
    let out = mariadb(&s.socket, "CREATE VIEW v AS SELECT 1");
    assert!(String::from_utf8_lossy(&out.stderr).contains("1235"));
    let out = mariadb(&s.socket, "SELECT 1");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
    s.stop();
}

#[test]
fn only_the_servers_user_may_connect() {
    if !installed("mariadb") {
        return;
    }
    if redoctor_testkit::skip_if_missing(
        "only_the_servers_user_may_connect",
        redoctor_testkit::root_missing("running a client as another user"),
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let s = Served::start();
    let as_nobody = || {
        Command::new("mariadb")
            .arg(format!("--socket={}", s.socket.display()))
            .args(["--user=root", "-e", "SELECT 1"])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap()
    };
    // The socket's mode keeps other users out ...
    let out = as_nobody();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("2002"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ... and if the mode is loosened, the peer-credential check still does.
    let dir = s.socket.parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&s.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = as_nobody();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("1045"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The owner still connects.
    let out = mariadb(&s.socket, "SELECT 1");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
    s.stop();
}

/// Without `--redo-threads`, `serve` starts with `run`'s default (the
/// engine's: dedicated log threads on, as MySQL 8.0) and, where MySQL 8.4
/// would choose otherwise for this host, says so.
#[test]
fn serve_defaults_to_runs_log_threads_and_names_mysql84s_choice() {
    if !installed("mariadb") {
        return;
    }
    let cpus = std::thread::available_parallelism().unwrap().get();
    let log = tempfile::NamedTempFile::new().unwrap();
    let s = Served::start_with(&[], Stdio::from(log.reopen().unwrap()));
    let out = mariadb(
        &s.socket,
        "SHOW GLOBAL VARIABLES LIKE 'innodb_log_writer_threads'",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), "innodb_log_writer_threads\tON");
    let said = std::fs::read_to_string(log.path()).unwrap();
    if cpus < 32 {
        assert!(
            said.contains("innodb_log_writer_threads=ON")
                && said.contains("MySQL 8.4 would choose OFF")
                && said.contains(&format!("the {cpus} logical CPUs")),
            "serve's stderr does not name MySQL 8.4's choice: {said}"
        );
    } else {
        assert!(!said.contains("MySQL 8.4 would choose"), "{said}");
    }
    // An explicit choice wins, in both directions.
    s.stop();
    for (flag, shown) in [("on", "ON"), ("off", "OFF")] {
        let s = Served::start_with(&["--redo-threads", flag], Stdio::null());
        let out = mariadb(
            &s.socket,
            "SHOW GLOBAL VARIABLES LIKE 'innodb_log_writer_threads'",
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("innodb_log_writer_threads\t{shown}")
        );
        s.stop();
    }
}

/// stderr a pipe whose reader has gone (`| tee` stopped, a log shipper
/// restarted): `serve` starts, serves, refuses a stranger (a line its
/// accept loop logs), serves again and stops cleanly; its log lines are
/// dropped. (`eprintln!` panicked there: at startup, or in the accept loop
/// at its first logged refusal.)
#[test]
fn a_closed_stderr_pipe_does_not_stop_serve() {
    use std::os::unix::process::CommandExt;
    // A pipe whose reader has gone.
    let (read, write) = std::io::pipe().unwrap();
    drop(read);
    let s = Served::start_with(&[], Stdio::from(write));
    let select_one = || -> u64 {
        let mut c = common::connect(&s.socket);
        c.query_first("SELECT 1").unwrap().unwrap()
    };
    assert_eq!(select_one(), 1);
    let refusal = "the refusal part of a_closed_stderr_does_not_stop_the_server";
    if !redoctor_testkit::skip_if_missing(
        refusal,
        redoctor_testkit::root_missing("running a client as another user"),
    ) && installed("mariadb")
    {
        use std::os::unix::fs::PermissionsExt;
        let dir = s.socket.parent().unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&s.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
        let out = Command::new("mariadb")
            .arg(format!("--socket={}", s.socket.display()))
            .args(["--user=root", "-e", "SELECT 1"])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("1045"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(select_one(), 1);
    s.stop();
}

/// `serve` takes the same engine options as `run`: `--set` applies a live
/// setting before the first client and a startup-only one when the engine
/// opens; a refused value stops the server at once, naming the setting and
/// what it allows, and nothing listens.
#[test]
fn serve_takes_the_shared_engine_options_and_set() {
    let s = Served::start_with(
        &[
            "--set",
            "innodb_thread_concurrency=4",
            "--set",
            "innodb_log_writer_threads=OFF",
            "--log-buffer-mb",
            "4",
        ],
        Stdio::inherit(),
    );
    let mut c = common::connect(&s.socket);
    let cap: u64 = c
        .query_first("SELECT @@innodb_thread_concurrency")
        .unwrap()
        .unwrap();
    let mode: String = c
        .query_first("SELECT @@innodb_log_writer_threads")
        .unwrap()
        .unwrap();
    assert_eq!((cap, mode.as_str()), (4, "OFF"));
    drop(c);
    s.stop();

    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("mysql.sock");
    let out = Command::new(env!("CARGO_BIN_EXE_redoctor-engine"))
        .arg("serve")
        .arg("--datadir")
        .arg(dir.path().join("data"))
        .arg("--socket")
        .arg(&socket)
        .args(["--set", "innodb_thread_concurrency=5000"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("innodb_thread_concurrency") && err.contains("0..=1000"),
        "{err}"
    );
    assert!(!socket.exists());
}
