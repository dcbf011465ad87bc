//! The engine child process (see the file docs of `live_engine.rs`).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use redoctor_engine::page_store::doublewrite::Design;
use redoctor_engine::CounterValues;
use redoctor_engine::{Engine, EngineOptions, RedoMode};
use redoctor_workload::{self as workload, RunConfig, WorkloadKind};

pub const CHILD_ENV: &str = "REDOCTOR_PROBES_CHILD";
pub const DIR_ENV: &str = "REDOCTOR_PROBES_DIR";
const USERS_ENV: &str = "REDOCTOR_PROBES_USERS";
const SECS_ENV: &str = "REDOCTOR_PROBES_SECS";
/// Rows per table (1000 if unset): fewer rows, more row-lock waits.
pub const ROWS_ENV: &str = "REDOCTOR_PROBES_ROWS";
/// When set, the child prints `LOCKS <json>` (its named locks) after DONE.
pub const LOCKS_ENV: &str = "REDOCTOR_PROBES_LOCKS";
/// Pages of 16 KiB in the buffer pool of the `pages-*` modes: 2 tables of
/// 4,000 rows are 92 row pages, so the load reads and flushes pages.
const POOL_PAGES: u64 = 24;

/// Child side: `mode` is `rt1` or `rt0` (tables in memory), or
/// `pages-legacy` / `pages-files` (RT1, tables on pages in a pool smaller
/// than the data, doublewrite ON in that design), which also print
/// `STATUS <json>` (the engine's status rows) after READY and after DONE.
pub fn run(mode: &str) {
    let dir = PathBuf::from(std::env::var(DIR_ENV).expect("REDOCTOR_PROBES_DIR"));
    let users: usize = std::env::var(USERS_ENV).map_or(4, |v| v.parse().unwrap());
    let secs: f64 = std::env::var(SECS_ENV).map_or(2.0, |v| v.parse().unwrap());
    let rows: u64 = std::env::var(ROWS_ENV).map_or(1000, |v| v.parse().unwrap());
    let mut opts = EngineOptions::new(&dir);
    opts.redo.mode = if mode == "rt0" {
        RedoMode::Off
    } else {
        RedoMode::On
    };
    let design = mode.strip_prefix("pages-").map(|d| {
        Design::parse(d).unwrap_or_else(|| panic!("child mode {mode}: no such doublewrite design"))
    });
    if let Some(design) = design {
        opts.pages.pool_bytes = POOL_PAGES * opts.pages.page_size;
        opts.pages.doublewrite.design = design;
    }
    let engine = Engine::open(opts).expect("opening the engine");
    engine.prepare_sbtest(2, rows).expect("preparing tables");
    std::thread::sleep(Duration::from_millis(300));
    if design.is_some() {
        quiet_pages(&engine);
    }
    report("READY", &engine);
    if design.is_some() {
        status("STATUS", &engine);
    }
    wait_line();
    let mut cfg = RunConfig::new(WorkloadKind::UpdateIndex);
    cfg.users = users;
    cfg.duration = Duration::from_secs_f64(secs);
    cfg.warmup = Duration::ZERO;
    cfg.tables = 2;
    cfg.table_size = rows;
    cfg.seed = Some(7);
    workload::run(&engine, cfg).expect("running the workload");
    std::thread::sleep(Duration::from_millis(300));
    if design.is_some() {
        quiet_pages(&engine);
    }
    report("DONE", &engine);
    if design.is_some() {
        status("STATUS", &engine);
    }
    if std::env::var_os(LOCKS_ENV).is_some() {
        let locks: Vec<(u64, u64, String)> = engine
            .named_locks()
            .iter()
            .map(|e| (e.start, e.len, e.name().to_string()))
            .collect();
        println!("LOCKS {}", serde_json::to_string(&locks).unwrap());
    }
    wait_line();
    engine.shutdown().expect("shutting down");
}

fn report(tag: &str, engine: &Engine) {
    let c = engine.status().counters;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{tag} {}", serde_json::to_string(&c).unwrap()).unwrap();
    out.flush().unwrap();
}

/// Waits (up to 20 s) until the doublewrite buffer has written nothing
/// for 500 ms: the page cleaners have caught up, so the counts the parent
/// compares stand still while it reads them.
fn quiet_pages(engine: &Engine) {
    let writes = || {
        engine
            .global_status()
            .into_iter()
            .find(|(n, _)| n == "Innodb_dblwr_writes")
            .map(|(_, v)| v)
            .expect("a paged engine reports Innodb_dblwr_writes")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let (mut last, mut since) = (writes(), std::time::Instant::now());
    while since.elapsed() < Duration::from_millis(500) {
        assert!(
            std::time::Instant::now() < deadline,
            "the doublewrite buffer kept writing for 20 s after the load"
        );
        std::thread::sleep(Duration::from_millis(50));
        let now = writes();
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        }
    }
}

fn status(tag: &str, engine: &Engine) {
    let rows: std::collections::BTreeMap<String, u64> =
        engine.global_status().into_iter().collect();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{tag} {}", serde_json::to_string(&rows).unwrap()).unwrap();
    out.flush().unwrap();
}

/// Child side: waits for the parent's next line.
pub fn wait_line() {
    let mut s = String::new();
    std::io::stdin().lock().read_line(&mut s).unwrap();
}

/// Parent side: a running child engine.
pub struct EngineChild {
    pub child: Child,
    stdin: ChildStdin,
    stdout: std::io::BufReader<ChildStdout>,
    _dir: tempfile::TempDir,
}

impl EngineChild {
    /// Starts `exe` (this test binary or a copy) as an engine child and waits for READY.
    pub fn start(
        exe: &std::path::Path,
        mode: &str,
        users: usize,
        secs: f64,
    ) -> (Self, CounterValues) {
        Self::start_with(exe, mode, users, secs, &[])
    }

    /// Like [`start`](Self::start), with extra environment (`ROWS_ENV`, `LOCKS_ENV`).
    pub fn start_with(
        exe: &std::path::Path,
        mode: &str,
        users: usize,
        secs: f64,
        env: &[(&str, &str)],
    ) -> (Self, CounterValues) {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(exe)
            .envs(env.iter().copied())
            .env(CHILD_ENV, mode)
            .env(DIR_ENV, dir.path())
            .env(USERS_ENV, users.to_string())
            .env(SECS_ENV, secs.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawning the engine child");
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut c = EngineChild {
            child,
            stdin,
            stdout,
            _dir: dir,
        };
        let ready = c.expect_line("READY");
        (c, ready)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn expect_line<T: serde::de::DeserializeOwned>(&mut self, tag: &str) -> T {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let rest = line
            .strip_prefix(tag)
            .unwrap_or_else(|| panic!("child said `{line}`, expected {tag}"));
        serde_json::from_str(rest.trim()).unwrap()
    }

    /// Runs the workload; returns the counters once it is done and quiet.
    pub fn run_workload(&mut self) -> CounterValues {
        self.start_workload();
        self.wait_done()
    }

    /// Starts the workload without waiting for it.
    pub fn start_workload(&mut self) {
        writeln!(self.stdin).unwrap();
    }

    /// Waits until the workload is done and quiet; returns the counters.
    pub fn wait_done(&mut self) -> CounterValues {
        self.expect_line("DONE")
    }

    /// The engine's status rows by name, printed after READY and after
    /// DONE by a `pages-*` child.
    pub fn status(&mut self) -> std::collections::BTreeMap<String, u64> {
        self.expect_line("STATUS")
    }

    /// The child's named locks `(start, len, name)`, printed after DONE
    /// when started with `LOCKS_ENV`.
    pub fn named_locks(&mut self) -> Vec<(u64, u64, String)> {
        self.expect_line("LOCKS")
    }

    /// Lets the child shut down and waits for it.
    pub fn finish(mut self) {
        let _ = writeln!(self.stdin);
        // End of input lets the child pass every remaining wait.
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "engine child failed: {status}");
    }
}

/// Child side of the checks that write a tablespace file themselves (no
/// engine): the file `space-00001.ibd` in `REDOCTOR_PROBES_DIR`, created
/// empty.
pub fn tablespace_file() -> std::fs::File {
    let dir = PathBuf::from(std::env::var(DIR_ENV).expect("REDOCTOR_PROBES_DIR"));
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.join("space-00001.ibd"))
        .expect("creating the tablespace file")
}

/// Parent side of those checks: this binary run in `mode` in a fresh
/// directory, talked to in bare lines (READY, DONE), killed if dropped.
pub struct LineChild {
    child: redoctor_testkit::KillOnDrop,
    stdin: ChildStdin,
    stdout: std::io::BufReader<ChildStdout>,
    mode: &'static str,
    _dir: tempfile::TempDir,
}

impl LineChild {
    pub fn start(mode: &'static str) -> LineChild {
        let dir = tempfile::tempdir().unwrap();
        let mut child = redoctor_testkit::KillOnDrop(
            Command::new(std::env::current_exe().unwrap())
                .env(CHILD_ENV, mode)
                .env(DIR_ENV, dir.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("spawning the {mode} child: {e}")),
        );
        let stdin = child.0.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.0.stdout.take().unwrap());
        LineChild {
            child,
            stdin,
            stdout,
            mode,
            _dir: dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// Reads the child's next line, which must be `tag`.
    pub fn expect(&mut self, tag: &str) -> Result<(), String> {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        if line.trim() == tag {
            Ok(())
        } else {
            Err(format!(
                "the {} child said `{line}`, expected {tag}",
                self.mode
            ))
        }
    }

    /// Sends the child the line it waits for.
    pub fn go(&mut self) {
        writeln!(self.stdin).unwrap();
    }

    /// Waits for the child to exit, which must be a success.
    pub fn wait(mut self) -> Result<(), String> {
        let status = self.child.0.wait().unwrap();
        if status.success() {
            Ok(())
        } else {
            Err(format!("the {} child failed: {status}", self.mode))
        }
    }
}
