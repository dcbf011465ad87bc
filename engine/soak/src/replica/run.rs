//! The processes and threads of one replica trial.
//!
//! The source lives in the soak's own process (an engine with `log_bin=ON`,
//! `sync_binlog=1`, served on a Unix socket, written by the workload
//! runner's threads); it is never killed, so its binlog is the truth. The
//! replica is a `redoctor-engine serve --source-socket` child, provisioned
//! with the same bulk load, that the soak `SIGKILL`s while it applies,
//! restarts (relay-log recovery: it resumes from its applied position) and
//! finally lets catch up, shuts down cleanly and checks.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use redoctor_engine::{Engine, EngineOptions};
use redoctor_server::{Server, ServerConfig};
use redoctor_workload::RunConfig;
use serde::Serialize;

use super::check::{self, ReplicaViolation};
use super::client::ReplicaClient;
use super::config::{LiveSwitch, ReplicaConfig};
use crate::runner::{self, describe_exit, spawn, tail, Running};

/// How the replica soak runs its trials.
#[derive(Debug, Clone)]
pub struct ReplicaSoakOptions {
    /// The `redoctor-engine` binary (its `serve` is the replica).
    pub engine: PathBuf,
    /// Where the trial directories are made.
    pub dir: PathBuf,
    /// Keep the directories of passing trials too.
    pub keep: bool,
    /// The latest kill, in ms after the replica applied its first transaction.
    pub max_kill_ms: u64,
    /// How long the final catch-up may take.
    pub catch_up_timeout: Duration,
}

/// What one replica trial did and found.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaTrialResult {
    pub config: ReplicaConfig,
    pub dir: PathBuf,
    /// SIGKILLs delivered to a replica that was applying.
    pub kills: usize,
    /// `Replica_trx_applied` of each killed replica process at its kill.
    pub applied_at_kills: Vec<u64>,
    /// Transactions in the source's binlog at the end.
    pub source_transactions: usize,
    /// Transactions in the replica's own binlog (with `log_replica_updates`).
    pub replica_binlog_transactions: Option<usize>,
    /// The trial's machinery or the replica failed (no verdict on data).
    pub failure: Option<String>,
    pub violations: Vec<ReplicaViolation>,
    pub commands: Vec<String>,
    pub wall_s: f64,
}

impl ReplicaTrialResult {
    pub fn passed(&self) -> bool {
        self.failure.is_none() && self.violations.is_empty()
    }
}

/// The source's writers: the workload runner in short runs until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<u64, String>>,
}

impl Load {
    fn start(src: &Arc<Engine>, c: &ReplicaConfig) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let mut cfg = RunConfig::new(c.workload);
        cfg.users = c.users;
        cfg.tables = c.tables;
        cfg.table_size = c.table_size;
        cfg.warmup = Duration::ZERO;
        cfg.duration = Duration::from_millis(100);
        let (e, flag, seed) = (src.clone(), stop.clone(), c.run_seed);
        let thread = thread::spawn(move || {
            let mut runs = 0u64;
            while !flag.load(Ordering::Relaxed) {
                cfg.seed = Some(seed.wrapping_add(runs));
                runs += 1;
                redoctor_workload::run(&e, cfg.clone())
                    .map_err(|err| format!("the source's load failed: {err}"))?;
            }
            Ok(runs)
        });
        Load { stop, thread }
    }

    fn finish(self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(r) => r.map(|_| ()),
            Err(_) => Err("the source's load thread panicked".into()),
        }
    }
}

fn replica_command(o: &ReplicaSoakOptions, c: &ReplicaConfig, dir: &Path) -> Command {
    let mut cmd = Command::new(&o.engine);
    cmd.arg("serve")
        .arg("--socket")
        .arg(dir.join("replica.sock"))
        .arg("--datadir")
        .arg(dir.join("replica"))
        .arg("--source-socket")
        .arg(dir.join("source.sock"))
        .args(["--flush-at-commit", &c.flush_at_commit.to_string()])
        .args(["--redo-threads", "off", "--shutdown-grace", "1"]);
    for (k, v) in c.replica_settings() {
        cmd.arg("--set").arg(format!("{k}={v}"));
    }
    cmd
}

fn open_engine(path: &Path, settings: Vec<(String, String)>) -> Result<Arc<Engine>, String> {
    let mut o = EngineOptions::new(path.to_path_buf());
    o.settings = settings;
    Engine::open(o).map_err(|e| format!("opening {}: {e}", path.display()))
}

/// Fails with the replica's stderr when it is no longer running.
fn alive(run: &mut Running, logs: &Path, when: &str) -> Result<(), String> {
    match run.child.try_wait() {
        Ok(None) => Ok(()),
        Ok(Some(st)) => Err(format!(
            "the replica {} {when}; stderr:{}",
            describe_exit(st),
            tail(&logs.with_extension("err"), 20)
        )),
        Err(e) => Err(format!("waiting for the replica: {e}")),
    }
}

/// One replica process life: start, applying, live switches, SIGKILL.
struct Life<'a> {
    opts: &'a ReplicaSoakOptions,
    cfg: &'a ReplicaConfig,
    dir: &'a Path,
    n: usize,
}

impl Life<'_> {
    fn logs(&self) -> PathBuf {
        self.dir.join(format!("replica-{}", self.n))
    }

    fn start(&self, commands: &mut Vec<String>) -> Result<(Running, ReplicaClient), String> {
        let cmd = replica_command(self.opts, self.cfg, self.dir);
        commands.push(runner::command_line(&cmd));
        let logs = self.logs();
        let mut run = spawn(cmd, &logs).map_err(|e| e.to_string())?;
        let client =
            ReplicaClient::connect(&self.dir.join("replica.sock"), Duration::from_secs(60))
                .map_err(|e| match alive(&mut run, &logs, "while starting") {
                    Err(died) => died,
                    Ok(()) => e,
                })?;
        Ok((run, client))
    }

    /// Runs until the kill delay after the first applied transaction, then
    /// SIGKILLs. Returns `Replica_trx_applied` just before the kill.
    fn kill_after(&self, kill_ms: u64, commands: &mut Vec<String>) -> Result<u64, String> {
        let (mut run, mut client) = self.start(commands)?;
        let logs = self.logs();
        let t0 = Instant::now();
        while client.counter("Replica_trx_applied")? == 0 {
            alive(&mut run, &logs, "before applying anything")?;
            if t0.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "the replica applied nothing in 60 s: {:?}",
                    client.status()?
                ));
            }
            thread::sleep(Duration::from_millis(2));
        }
        let kill_at = Instant::now() + Duration::from_millis(kill_ms);
        let (mut design, mut workers) = (self.cfg.design, self.cfg.workers);
        while let Some(left) = kill_at.checked_duration_since(Instant::now()) {
            let Some((what, every)) = self.cfg.switch else {
                thread::sleep(left);
                break;
            };
            thread::sleep(left.min(Duration::from_millis(every)));
            if Instant::now() >= kill_at {
                break;
            }
            match what {
                LiveSwitch::Arbitration => {
                    design = design.other();
                    client.set_global("replica_relay_log_arbitration", design.name())?;
                }
                LiveSwitch::Workers => {
                    workers = match workers {
                        0 => 1,
                        1 => 2,
                        2 => 4,
                        _ => 0,
                    };
                    client.set_global("replica_parallel_workers", &workers.to_string())?;
                }
            }
        }
        let applied = client.counter("Replica_trx_applied")?;
        alive(&mut run, &logs, "before the kill")?;
        commands.push(format!("kill -9 (after {kill_ms} ms of applying)"));
        let _ = run.child.kill();
        let _ = run.child.wait();
        Ok(applied)
    }

    /// Lets the replica catch up with `end`, then shuts it down cleanly.
    fn catch_up(
        &self,
        src: &Arc<Engine>,
        load: Load,
        commands: &mut Vec<String>,
    ) -> Result<(), String> {
        // The source stops writing once the last replica life has started.
        let started = self.start(commands);
        load.finish()?;
        let (mut run, mut client) = started?;
        let end = src
            .binlog_end()
            .ok_or("the source has no binlog (log_bin=OFF)")?;
        let want_file = format!("binlog.{:06}", end.file);
        let logs = self.logs();
        let t0 = Instant::now();
        loop {
            alive(&mut run, &logs, "during the catch-up")?;
            let st = client
                .status()?
                .ok_or("the restarted replica is not a replica (SHOW REPLICA STATUS is empty)")?;
            if !st.last_sql_error.is_empty() || !st.last_io_error.is_empty() {
                return Err(format!(
                    "the replica stopped with an error: applier {:?}, receiver {:?}",
                    st.last_sql_error, st.last_io_error
                ));
            }
            if st.exec_file == want_file && st.exec_pos == end.offset {
                break;
            }
            if t0.elapsed() > self.opts.catch_up_timeout {
                return Err(format!(
                    "the replica did not catch up with {want_file}:{} in {:.0} s: {st:?}",
                    end.offset,
                    self.opts.catch_up_timeout.as_secs_f64()
                ));
            }
            thread::sleep(Duration::from_millis(10));
        }
        drop(client);
        // SIGTERM: a clean shutdown, then the data directory is ours.
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(run.child.id() as libc::pid_t, libc::SIGTERM) };
        let t0 = Instant::now();
        loop {
            match run.child.try_wait() {
                Ok(Some(st)) if st.success() => return Ok(()),
                Ok(Some(st)) => {
                    return Err(format!(
                        "the replica's clean shutdown failed: {}; stderr:{}",
                        describe_exit(st),
                        tail(&logs.with_extension("err"), 20)
                    ))
                }
                Ok(None) if t0.elapsed() > Duration::from_secs(60) => {
                    return Err("the replica did not shut down in 60 s after SIGTERM".into())
                }
                Ok(None) => thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(format!("waiting for the replica: {e}")),
            }
        }
    }
}

/// Runs one replica trial in `opts.dir/rtrial-<seed>`.
pub fn run_trial(opts: &ReplicaSoakOptions, seed: u64) -> ReplicaTrialResult {
    let t0 = Instant::now();
    let cfg = ReplicaConfig::from_seed(seed, opts.max_kill_ms);
    let dir = runner::unused_dir(&opts.dir, &format!("rtrial-{seed}"));
    let mut res = ReplicaTrialResult {
        config: cfg.clone(),
        dir: dir.clone(),
        kills: 0,
        applied_at_kills: Vec::new(),
        source_transactions: 0,
        replica_binlog_transactions: None,
        failure: None,
        violations: Vec::new(),
        commands: Vec::new(),
        wall_s: 0.0,
    };
    if let Err(e) = trial(opts, &cfg, &dir, &mut res) {
        res.failure = Some(e);
    }
    res.wall_s = t0.elapsed().as_secs_f64();
    if res.passed() && !opts.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    res
}

fn trial(
    opts: &ReplicaSoakOptions,
    cfg: &ReplicaConfig,
    dir: &Path,
    res: &mut ReplicaTrialResult,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // The replica's data: the same bulk load, then shut down.
    let rep = open_engine(&dir.join("replica"), Vec::new())?;
    rep.prepare_sbtest(cfg.tables, cfg.table_size)
        .map_err(|e| format!("loading the replica: {e}"))?;
    rep.shutdown()
        .map_err(|e| format!("shutting the provisioned replica down: {e}"))?;
    drop(rep);

    let mut o = EngineOptions::new(dir.join("source"));
    o.log_bin = true;
    o.sync_binlog = 1;
    o.max_binlog_size = cfg.source_binlog_kib << 10;
    let src = Engine::open(o).map_err(|e| format!("opening the source: {e}"))?;
    src.prepare_sbtest(cfg.tables, cfg.table_size)
        .map_err(|e| format!("loading the source: {e}"))?;
    let mut scfg = ServerConfig::new(dir.join("source.sock"));
    scfg.shutdown_grace = Duration::from_millis(200);
    let server =
        Server::start(src.clone(), scfg).map_err(|e| format!("serving the source: {e}"))?;

    let outcome = lives(opts, cfg, dir, &src, res).and_then(|()| {
        let want = check::binlog_transactions(&src).map_err(|e| e.to_string())?;
        Ok((check::user_tables(&src), want))
    });
    // Shuts the source's engine down too.
    let stopped = server
        .shutdown()
        .map_err(|e| format!("shutting the source down: {e}"));
    let (src_tables, want) = outcome?;
    stopped?;
    res.source_transactions = want.len();

    // The replica's data directory, opened here after its clean shutdown.
    let settings = if cfg.log_replica_updates {
        vec![("log_bin".to_string(), "ON".to_string())]
    } else {
        Vec::new()
    };
    let rep = open_engine(&dir.join("replica"), settings)?;
    res.violations = check::compare_tables(&src_tables, &check::user_tables(&rep));
    if cfg.log_replica_updates {
        let got = check::binlog_transactions(&rep).map_err(|e| e.to_string())?;
        res.replica_binlog_transactions = Some(got.len());
        res.violations
            .extend(check::compare_binlogs(&want, &got, cfg.ordered()));
    }
    rep.shutdown()
        .map_err(|e| format!("closing the replica: {e}"))?;
    Ok(())
}

/// The replica's lives: a backlog, each killed life, the catch-up.
fn lives(
    opts: &ReplicaSoakOptions,
    cfg: &ReplicaConfig,
    dir: &Path,
    src: &Arc<Engine>,
    res: &mut ReplicaTrialResult,
) -> Result<(), String> {
    let load = Load::start(src, cfg);
    thread::sleep(Duration::from_millis(cfg.backlog_ms));
    for (n, &kill_ms) in cfg.kills_after_ms.iter().enumerate() {
        let life = Life { opts, cfg, dir, n };
        match life.kill_after(kill_ms, &mut res.commands) {
            Ok(applied) => {
                res.kills += 1;
                res.applied_at_kills.push(applied);
            }
            Err(e) => {
                let _ = load.finish();
                return Err(e);
            }
        }
    }
    let last = Life {
        opts,
        cfg,
        dir,
        n: cfg.kills_after_ms.len(),
    };
    last.catch_up(src, load, &mut res.commands)
}
