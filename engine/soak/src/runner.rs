//! The processes of a trial: prepare, run and kill, recover, check.
//!
//! Per pair of trials on one data directory (`<dir>/trial-<seed>/`):
//!
//! 1. fresh trial only: `redoctor-soak recover-state --prepare W ...`
//!    creates the directory, loads the workload's tables, shuts down
//!    cleanly and writes `base.json`: the state the run starts from;
//! 2. `redoctor-engine run --journal journal-N ...` (a long `--duration`);
//!    once the journal holds an acknowledgement, wait the trial's kill
//!    delay, then `SIGKILL` it (it must still be running);
//! 3. `redoctor-soak recover-state` recovers the directory and writes
//!    `state-N.json` (shutting down cleanly, or not, per the trial);
//! 4. [`check`](crate::check::check) the recovered state against the base
//!    and the journal. A passing trial's recovered state is the next
//!    trial's base.
//!
//! A failing trial keeps the directory (with every log, journal and state
//! file) and names its seed and commands; a pair whose first trial failed
//! skips the second.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use redoctor_workload::journal;

use crate::check::{self, CheckInput, CheckReport};
use crate::state::StateFile;
use crate::trial::{Limits, TrialConfig};
use crate::SoakError;

/// How the soak runs its trials.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// The `redoctor-engine` binary.
    pub engine: PathBuf,
    /// The program that runs `recover-state` (this soak's own binary).
    pub soak_exe: PathBuf,
    /// Where the trial directories are made.
    pub dir: PathBuf,
    /// Keep the directories of passing trials too.
    pub keep: bool,
    pub limits: Limits,
    /// How long a run may take to acknowledge its first commit.
    pub first_ack_timeout: Duration,
    /// How long preparing or recovering a directory may take.
    pub step_timeout: Duration,
}

impl SoakOptions {
    pub fn new(engine: PathBuf, soak_exe: PathBuf, dir: PathBuf) -> SoakOptions {
        SoakOptions {
            engine,
            soak_exe,
            dir,
            keep: false,
            limits: Limits::default(),
            first_ack_timeout: Duration::from_secs(60),
            step_timeout: Duration::from_secs(300),
        }
    }
}

/// Why a trial failed.
#[derive(Debug, thiserror::Error)]
pub enum TrialFailure {
    #[error("preparing the data directory failed: {0}")]
    Prepare(String),
    #[error("the engine run failed: {0}")]
    Run(String),
    #[error("recovery failed: {0}")]
    Recovery(String),
    #[error("the recovered state is wrong ({count} violation(s)); the first: {first}")]
    Violations { count: usize, first: String },
    #[error("the soak itself failed: {0}")]
    Harness(#[from] SoakError),
}

/// What a trial's torn page write came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub enum TearOutcome {
    /// The trial tears no page write.
    #[default]
    NotArmed,
    /// Armed, but the soak's SIGKILL came before the chosen write.
    NotReached,
    /// The engine killed itself in the middle of a page write; recovery
    /// restored `pages` torn page(s) from the doublewrite buffer and the
    /// check found every acknowledged commit.
    Restored { pages: usize },
    /// The same with `innodb_doublewrite=OFF`: recovery refused the
    /// directory, naming the torn page (never using it).
    Refused,
}

/// What recovery reported, summed over a soak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecoveryStats {
    /// Redo records replayed after the checkpoint.
    pub records_replayed: u64,
    /// Prepared (two-phase) transactions found in the redo log.
    pub xa_prepared: u64,
    /// ... committed because their binlog event was there, without a commit mark.
    pub xa_committed_without_mark: u64,
    /// ... rolled back because their binlog event was not.
    pub xa_rolled_back: u64,
    /// Bytes of torn redo discarded / of torn binlog zeroed.
    pub redo_truncated_bytes: u64,
    pub binlog_truncated_bytes: u64,
    /// Recoveries of a circular redo log that had wrapped around (its end
    /// lsn is past the file's size) at least once.
    pub log_wrapped: u64,
}

impl RecoveryStats {
    fn of(state: &StateFile, log_file_bytes: u64) -> RecoveryStats {
        RecoveryStats {
            log_wrapped: u64::from(state.recovery_count(&["redo_end_lsn"]) > log_file_bytes),
            records_replayed: state.recovery_count(&["records_replayed"]),
            xa_prepared: state.recovery_count(&["xa", "prepared"]),
            xa_committed_without_mark: state.recovery_count(&["xa", "committed_without_mark"]),
            xa_rolled_back: state.recovery_count(&["xa", "rolled_back"]),
            redo_truncated_bytes: state.recovery_count(&["truncated_bytes"]),
            binlog_truncated_bytes: state.recovery_count(&["binlog", "truncated_bytes"]),
        }
    }

    pub fn add(&mut self, o: &RecoveryStats) {
        self.records_replayed += o.records_replayed;
        self.xa_prepared += o.xa_prepared;
        self.xa_committed_without_mark += o.xa_committed_without_mark;
        self.xa_rolled_back += o.xa_rolled_back;
        self.redo_truncated_bytes += o.redo_truncated_bytes;
        self.binlog_truncated_bytes += o.binlog_truncated_bytes;
        self.log_wrapped += o.log_wrapped;
    }
}

/// One trial's outcome.
#[derive(Debug)]
pub struct TrialResult {
    pub config: TrialConfig,
    /// The pair's directory (kept when a trial failed).
    pub dir: PathBuf,
    /// The commands the trial ran, as a shell would take them.
    pub commands: Vec<String>,
    pub report: Option<CheckReport>,
    pub recovery: RecoveryStats,
    /// Acknowledged commits in the journal when the engine was killed.
    pub acks_at_kill: usize,
    pub tear: TearOutcome,
    pub failure: Option<TrialFailure>,
    /// Not run: the trial before it on the same directory failed.
    pub skipped: bool,
    pub wall: Duration,
}

impl TrialResult {
    fn new(config: TrialConfig, dir: &Path) -> TrialResult {
        TrialResult {
            config,
            dir: dir.to_path_buf(),
            commands: Vec::new(),
            report: None,
            recovery: RecoveryStats::default(),
            acks_at_kill: 0,
            tear: TearOutcome::NotArmed,
            failure: None,
            skipped: false,
            wall: Duration::ZERO,
        }
    }

    pub fn passed(&self) -> bool {
        !self.skipped && self.failure.is_none()
    }
}

/// The seeds to run for `--replay SEED`: a reusing trial needs its
/// predecessor's directory, so its predecessor runs first.
pub fn replay_seeds(seed: u64) -> Vec<u64> {
    if seed & 1 == 1 {
        vec![seed & !1, seed]
    } else {
        vec![seed]
    }
}

/// Runs the trials of one data directory (`seeds`: a fresh seed, then
/// optionally its reusing trial), calling `on_trial` after each.
pub fn run_pair(
    opts: &SoakOptions,
    seeds: &[u64],
    on_trial: &mut dyn FnMut(&TrialResult),
) -> Vec<TrialResult> {
    let mut results = Vec::with_capacity(seeds.len());
    let Some(&first) = seeds.first() else {
        return results;
    };
    let pair_dir = unused_dir(&opts.dir, &format!("trial-{:016x}", first & !1));
    let mut base: Option<StateFile> = None;
    let mut failed = false;
    for (n, &seed) in seeds.iter().enumerate() {
        let cfg = TrialConfig::from_seed(seed, &opts.limits);
        let mut res = TrialResult::new(cfg, &pair_dir);
        if failed {
            res.skipped = true;
        } else {
            let started = Instant::now();
            match trial(opts, n, &pair_dir, base.take(), &mut res) {
                Ok(next) => base = Some(next),
                Err(f) => {
                    res.failure = Some(f);
                    failed = true;
                }
            }
            res.wall = started.elapsed();
        }
        on_trial(&res);
        results.push(res);
    }
    if !failed && !opts.keep {
        // Best effort: a leftover directory is only disk space.
        let _ = fs::remove_dir_all(&pair_dir);
    }
    results
}

/// `parent/name`, or `parent/name-2`, `-3`, ... if taken (a replay in
/// the directory of the soak it replays keeps the failing trial's files).
pub(crate) fn unused_dir(parent: &Path, name: &str) -> PathBuf {
    let mut p = parent.join(name);
    let mut n = 2;
    while p.exists() {
        p = parent.join(format!("{name}-{n}"));
        n += 1;
    }
    p
}

/// Quotes `s` for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=./:,+@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `cmd` as one shell line.
pub fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| shell_word(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Kills (SIGKILL) and reaps the child on drop.
pub(crate) struct Running {
    pub(crate) child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> SoakError + 'a {
    move |source| SoakError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// The last `lines` lines of a log file, indented.
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let from = all.len().saturating_sub(lines);
    let mut out = String::new();
    for l in &all[from..] {
        out.push_str("\n    ");
        out.push_str(l);
    }
    if out.is_empty() {
        out.push_str(" (empty)");
    }
    out
}

/// Starts `cmd` with stdout/stderr to `<logs>.out` / `<logs>.err`.
pub(crate) fn spawn(mut cmd: Command, logs: &Path) -> Result<Running, SoakError> {
    let out = logs.with_extension("out");
    let err = logs.with_extension("err");
    cmd.stdin(Stdio::null())
        .stdout(File::create(&out).map_err(io_err("creating the log", &out))?)
        .stderr(File::create(&err).map_err(io_err("creating the log", &err))?);
    let program = PathBuf::from(cmd.get_program());
    let child = cmd.spawn().map_err(io_err("starting", &program))?;
    Ok(Running { child })
}

/// Runs `cmd` to its end (at most `limit`); Err(why) unless it exits 0.
fn run_to_end(cmd: Command, logs: &Path, limit: Duration) -> Result<(), String> {
    let mut run = spawn(cmd, logs).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + limit;
    let status = loop {
        match run.child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                return Err(format!(
                    "still running after {:.0} s (killed); stderr:{}",
                    limit.as_secs_f64(),
                    tail(&logs.with_extension("err"), 20)
                ))
            }
            Ok(None) => thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for it: {e}")),
        }
    };
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}; stderr:{}",
            describe_exit(status),
            tail(&logs.with_extension("err"), 20)
        ))
    }
}

pub(crate) fn describe_exit(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}

/// Acknowledgement lines in the journal so far (complete lines only).
fn count_acks(path: &Path) -> usize {
    let Ok(bytes) = fs::read(path) else {
        return 0;
    };
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // After the last newline: nothing, or a torn line.
    lines.pop();
    lines.iter().filter(|l| l.starts_with(b"A ")).count()
}

fn has_ack(path: &Path) -> bool {
    fs::read(path).is_ok_and(|b| b.starts_with(b"A ") || b.windows(3).any(|w| w == b"\nA "))
}

/// `redoctor-soak recover-state` for `cfg`'s directory.
fn recover_command(
    opts: &SoakOptions,
    cfg: &TrialConfig,
    datadir: &Path,
    out: &Path,
    prepare: bool,
) -> Command {
    let mut cmd = Command::new(&opts.soak_exe);
    cmd.arg("recover-state")
        .arg("--datadir")
        .arg(datadir)
        .arg("--out")
        .arg(out)
        .args(["--log-file-kib", &cfg.shape.log_file_kib.to_string()])
        .args(["--log-buffer-kib", &cfg.shape.log_buffer_kib.to_string()])
        .args([
            "--checkpoint-fill-pct",
            &cfg.shape.checkpoint_fill_pct.to_string(),
        ]);
    if let Some(p) = cfg.shape.pages {
        cmd.args(["--pool-pages", &p.pool_pages.to_string()])
            .args(["--dblwr-design", p.design]);
        if !p.doublewrite_on {
            cmd.arg("--dblwr-off");
        }
    }
    if prepare {
        cmd.args(["--prepare", cfg.workload.name()])
            .args(["--tables", &cfg.shape.tables.to_string()])
            .args(["--table-size", &cfg.shape.table_size.to_string()])
            .args(["--warehouses", &cfg.shape.warehouses.to_string()]);
    } else {
        if cfg.log_bin {
            cmd.arg("--log-bin");
        }
        if !cfg.clean_shutdown_after_verify {
            cmd.arg("--no-shutdown");
        }
    }
    cmd
}

/// How long after the first acknowledgement a run with a tear armed may
/// go on before the soak kills it: the tear comes by the thousandth page
/// write, well within this on a loaded host.
const TEAR_WAIT_MS: u64 = 3000;

/// The failpoint that tears a data page's write.
pub const TEAR_POINT: &str = "page::write::short";

/// What recovery says when it refuses a torn page (innodb_doublewrite=OFF).
const TORN_REFUSED: &str = "fail their checksum";

/// `redoctor-engine run` for `cfg`, journaling to `journal`.
pub fn engine_command(
    opts: &SoakOptions,
    cfg: &TrialConfig,
    datadir: &Path,
    journal: &Path,
) -> Command {
    let mut cmd = Command::new(&opts.engine);
    let on_off = |b: bool| if b { "on" } else { "off" };
    cmd.arg("run")
        .args(["--workload", cfg.workload.name()])
        .args(["--users", &cfg.users.to_string()])
        .args(["--duration", "3600", "--warmup", "0"])
        .args(["--flush-at-commit", "1"])
        .args(["--redo-threads", on_off(cfg.redo_threads)]);
    if let Some(ms) = cfg.switch_every_ms {
        cmd.args(["--switch-every-ms", &ms.to_string()]);
    }
    cmd.args(["--access", &cfg.access])
        .args(["--tables", &cfg.shape.tables.to_string()])
        .args(["--table-size", &cfg.shape.table_size.to_string()])
        .args(["--warehouses", &cfg.shape.warehouses.to_string()])
        .args(["--log-file-mb", &cfg.log_file_mb()])
        .args(["--log-buffer-mb", &cfg.log_buffer_mb()])
        .args([
            "--checkpoint-fill-pct",
            &cfg.shape.checkpoint_fill_pct.to_string(),
        ])
        .args(["--lock-wait-timeout", "5"])
        .args(["--seed", &cfg.run_seed.to_string()]);
    if cfg.log_bin {
        cmd.args(["--set", "log_bin=ON", "--set", "sync_binlog=1"]);
        if cfg.binlog_sync_delay_us > 0 {
            cmd.arg("--set").arg(format!(
                "binlog_group_commit_sync_delay={}",
                cfg.binlog_sync_delay_us
            ));
        }
    }
    if let Some(p) = cfg.shape.pages {
        for (k, v) in p.settings() {
            cmd.arg("--set").arg(format!("{k}={v}"));
        }
    }
    if let Some(n) = cfg.tear_after_page_writes {
        cmd.arg("--failpoint")
            .arg(format!("{TEAR_POINT}={n}*off->return(kill)"));
    }
    cmd.arg("--journal")
        .arg(journal)
        .arg("--datadir")
        .arg(datadir);
    cmd
}

/// One trial (`n`: its place on the directory). Returns the recovered
/// state, the next trial's base.
fn trial(
    opts: &SoakOptions,
    n: usize,
    dir: &Path,
    base: Option<StateFile>,
    res: &mut TrialResult,
) -> Result<StateFile, TrialFailure> {
    let cfg = res.config.clone();
    let datadir = dir.join("data");
    let base = match base {
        Some(b) => b,
        None => {
            if cfg.reuse_of.is_some() {
                return Err(TrialFailure::Prepare(
                    "a reusing trial has no predecessor state to start from".into(),
                ));
            }
            fs::create_dir_all(dir).map_err(io_err("creating the trial directory", dir))?;
            let out = dir.join("base.json");
            let cmd = recover_command(opts, &cfg, &datadir, &out, true);
            res.commands.push(command_line(&cmd));
            run_to_end(cmd, &dir.join("prepare"), opts.step_timeout)
                .map_err(TrialFailure::Prepare)?;
            StateFile::read(&out)?
        }
    };

    // Run, and kill after the first acknowledgement.
    let journal_path = dir.join(format!("journal-{n}"));
    let logs = dir.join(format!("run-{n}"));
    let cmd = engine_command(opts, &cfg, &datadir, &journal_path);
    res.commands.push(command_line(&cmd));
    let mut run = spawn(cmd, &logs)?;
    // Ok(true): the run ended by its own tear (SIGKILL with the tear armed).
    let armed = cfg.tear_after_page_writes.is_some();
    let ended = |run: &mut Running, when: &str| -> Result<bool, TrialFailure> {
        let Some(status) = run.child.try_wait().ok().flatten() else {
            return Ok(false);
        };
        use std::os::unix::process::ExitStatusExt;
        if armed && status.signal() == Some(libc::SIGKILL) {
            return Ok(true);
        }
        Err(TrialFailure::Run(format!(
            "redoctor-engine run {} {when}; stderr:{}",
            describe_exit(status),
            tail(&logs.with_extension("err"), 20)
        )))
    };
    let mut torn = false;
    let deadline = Instant::now() + opts.first_ack_timeout;
    while !has_ack(&journal_path) {
        if ended(&mut run, "before acknowledging a commit")? {
            torn = true;
            break;
        }
        if Instant::now() >= deadline {
            return Err(TrialFailure::Run(format!(
                "no commit acknowledged within {:.0} s; stderr:{}",
                opts.first_ack_timeout.as_secs_f64(),
                tail(&logs.with_extension("err"), 20)
            )));
        }
        thread::sleep(Duration::from_millis(2));
    }
    // An armed tear is the trial's crash: give the run time to reach its
    // page write before the kill (a loaded host writes pages slowly, and a
    // kill first leaves the tear untested).
    let wait_ms = if armed {
        cfg.kill_after_ms.max(TEAR_WAIT_MS)
    } else {
        cfg.kill_after_ms
    };
    let kill_at = Instant::now() + Duration::from_millis(wait_ms);
    while !torn && Instant::now() < kill_at {
        torn = ended(&mut run, "before it was killed")?;
        thread::sleep(
            Duration::from_millis(2).min(kill_at.saturating_duration_since(Instant::now())),
        );
    }
    if !torn {
        torn = ended(&mut run, "before it was killed")?;
    }
    if !torn {
        run.child
            .kill()
            .map_err(io_err("killing the engine run", &opts.engine))?;
    }
    run.child
        .wait()
        .map_err(io_err("reaping the engine run", &opts.engine))?;
    drop(run);
    // The tear and our kill can come at the same moment (both a SIGKILL):
    // the failpoint says on stderr that it tore.
    if armed && !torn {
        let said = fs::read_to_string(logs.with_extension("err")).unwrap_or_default();
        torn = said.contains(redoctor_engine::failpoints::TORN_KILL_MARK);
    }
    if armed {
        res.tear = TearOutcome::NotReached;
    }
    res.acks_at_kill = count_acks(&journal_path);

    // Recover in a child process and capture the state.
    let out = dir.join(format!("state-{n}.json"));
    let cmd = recover_command(opts, &cfg, &datadir, &out, false);
    res.commands.push(command_line(&cmd));
    let recovery = run_to_end(cmd, &dir.join(format!("recover-{n}")), opts.step_timeout);
    let dblwr_on = cfg.shape.pages.is_some_and(|p| p.doublewrite_on);
    if torn && !dblwr_on {
        // No copy to restore from: recovery must refuse, naming the page.
        return match recovery {
            Err(why) if why.contains(TORN_REFUSED) && why.contains("[space ") => {
                res.tear = TearOutcome::Refused;
                // The directory ends here (a tear with doublewrite OFF is
                // drawn only for the last trial on it).
                Ok(base)
            }
            Err(why) => Err(TrialFailure::Recovery(format!(
                "a page write was torn with innodb_doublewrite=OFF, and recovery failed \
                 without naming a torn page: {why}"
            ))),
            Ok(()) => Err(TrialFailure::Recovery(
                "a page write was torn with innodb_doublewrite=OFF, and recovery opened the \
                 directory without reporting it: a torn page may be in use"
                    .into(),
            )),
        };
    }
    recovery.map_err(TrialFailure::Recovery)?;
    let recovered = StateFile::read(&out)?;
    if torn {
        match recovered.pages_restored {
            Some((_, restored)) if restored > 0 => {
                res.tear = TearOutcome::Restored { pages: restored }
            }
            other => {
                return Err(TrialFailure::Recovery(format!(
                    "a page write was torn with innodb_doublewrite=ON, but recovery restored no \
                     page from the doublewrite buffer (checked, restored: {other:?})"
                )))
            }
        }
    }
    res.recovery = RecoveryStats::of(&recovered, cfg.shape.log_file_kib * 1024);

    let base_path = match n {
        0 => dir.join("base.json"),
        _ => dir.join(format!("state-{}.json", n - 1)),
    };
    let mut recheck = Command::new(&opts.soak_exe);
    recheck
        .arg("check")
        .args(["--workload", cfg.workload.name()])
        .arg("--base")
        .arg(&base_path)
        .arg("--journal")
        .arg(&journal_path)
        .arg("--state")
        .arg(&out);
    if cfg.log_bin {
        recheck.arg("--log-bin");
    }
    res.commands.push(command_line(&recheck));
    let bytes = match fs::read(&journal_path) {
        // A tear in the run's first page writes can come before the
        // journal is made: nothing was journaled, so nothing acknowledged.
        Err(e) if torn && e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        r => r.map_err(io_err("reading the journal", &journal_path))?,
    };
    let journal = journal::parse_journal(&bytes).map_err(|source| SoakError::BadJournal {
        path: journal_path.clone(),
        source,
    })?;
    let report = check::check(&CheckInput {
        workload: cfg.workload,
        log_bin: cfg.log_bin,
        base: &base,
        journal: &journal,
        recovered: &recovered,
    });
    let verdict = match report.violations.first() {
        Some(first) => Err(TrialFailure::Violations {
            count: report.violations.len(),
            first: first.to_string(),
        }),
        None => Ok(recovered),
    };
    res.report = Some(report);
    verdict
}

/// Checks that `engine` is a `redoctor-engine` that can write a journal.
pub fn check_engine_binary(engine: &Path) -> Result<(), String> {
    let fix = "build it with `cargo build --release -p redoctor-engine-cli` or pass --engine PATH";
    if !engine.is_file() {
        return Err(format!(
            "the engine binary {} does not exist: {fix}",
            engine.display()
        ));
    }
    let out = Command::new(engine)
        .args(["run", "--help"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "cannot run the engine binary {}: {e}; {fix}",
                engine.display()
            )
        })?;
    let help = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !help.contains("--journal") {
        return Err(format!(
            "{} is not a redoctor-engine that writes a --journal (an older build?): {fix}",
            engine.display()
        ));
    }
    Ok(())
}

/// Creates `dir` if needed and checks that files can be made in it.
pub fn check_writable_dir(dir: &Path) -> Result<(), String> {
    let fix = "pass a directory you can write to with --dir";
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}; {fix}", dir.display()))?;
    let probe = dir.join(".redoctor-soak-probe");
    fs::write(&probe, b"").map_err(|e| format!("cannot write in {}: {e}; {fix}", dir.display()))?;
    fs::remove_file(&probe).map_err(|e| format!("cannot remove {}: {e}", probe.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_quote_for_a_shell() {
        assert_eq!(shell_word("a-b_c=1.5:x"), "a-b_c=1.5:x");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn the_engine_command_carries_the_matrix() {
        let opts = SoakOptions::new("eng".into(), "soak".into(), "d".into());
        let limits = Limits::default();
        let cfg = (0..200u64)
            .map(|s| TrialConfig::from_seed(s * 2, &limits))
            .find(|c| c.log_bin && c.switch_every_ms.is_some())
            .unwrap();
        let line = command_line(&engine_command(
            &opts,
            &cfg,
            Path::new("dd"),
            Path::new("j"),
        ));
        for want in [
            "--set log_bin=ON --set sync_binlog=1",
            "--flush-at-commit 1",
            "--switch-every-ms",
            "--journal j --datadir dd",
            &format!("--seed {}", cfg.run_seed),
        ] {
            assert!(line.contains(want), "{want} missing from {line}");
        }
        assert_eq!(replay_seeds(7), vec![6, 7]);
        assert_eq!(replay_seeds(8), vec![8]);
    }

    #[test]
    fn acks_are_counted_from_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        assert_eq!(count_acks(&p), 0);
        assert!(!has_ack(&p));
        fs::write(&p, "I 1 #0\nA 1 #0\nI 2 #0\nA 2 #0\nA 3").unwrap();
        assert_eq!(count_acks(&p), 2);
        assert!(has_ack(&p));
    }
}
