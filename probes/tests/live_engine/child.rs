//! The engine child process (see the file docs of `live_engine.rs`).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use redoctor_engine::counters::CounterValues;
use redoctor_engine::workload::{self, RunConfig, WorkloadKind};
use redoctor_engine::{Engine, EngineOptions, RedoMode};

pub const CHILD_ENV: &str = "REDOCTOR_PROBES_CHILD";
const DIR_ENV: &str = "REDOCTOR_PROBES_DIR";
const USERS_ENV: &str = "REDOCTOR_PROBES_USERS";
const SECS_ENV: &str = "REDOCTOR_PROBES_SECS";

/// Child side: `mode` is `rt1` or `rt0`.
pub fn run(mode: &str) {
    let dir = PathBuf::from(std::env::var(DIR_ENV).expect("REDOCTOR_PROBES_DIR"));
    let users: usize = std::env::var(USERS_ENV).map_or(4, |v| v.parse().unwrap());
    let secs: f64 = std::env::var(SECS_ENV).map_or(2.0, |v| v.parse().unwrap());
    let mut opts = EngineOptions::new(&dir);
    opts.redo.mode = if mode == "rt1" {
        RedoMode::On
    } else {
        RedoMode::Off
    };
    let engine = Engine::open(opts).expect("opening the engine");
    engine.prepare_sbtest(2, 1000).expect("preparing tables");
    std::thread::sleep(Duration::from_millis(300));
    report("READY", &engine);
    wait_line();
    let mut cfg = RunConfig::new(WorkloadKind::UpdateIndex);
    cfg.users = users;
    cfg.duration = Duration::from_secs_f64(secs);
    cfg.warmup = Duration::ZERO;
    cfg.tables = 2;
    cfg.table_size = 1000;
    cfg.seed = Some(7);
    workload::run(&engine, cfg).expect("running the workload");
    std::thread::sleep(Duration::from_millis(300));
    report("DONE", &engine);
    wait_line();
    engine.shutdown().expect("shutting down");
}

fn report(tag: &str, engine: &Engine) {
    let c = engine.status().counters;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{tag} {}", serde_json::to_string(&c).unwrap()).unwrap();
    out.flush().unwrap();
}

fn wait_line() {
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
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(exe)
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

    fn expect_line(&mut self, tag: &str) -> CounterValues {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let rest = line
            .strip_prefix(tag)
            .unwrap_or_else(|| panic!("child said `{line}`, expected {tag}"));
        serde_json::from_str(rest.trim()).unwrap()
    }

    /// Runs the workload; returns the counters once it is done and quiet.
    pub fn run_workload(&mut self) -> CounterValues {
        writeln!(self.stdin).unwrap();
        self.expect_line("DONE")
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
