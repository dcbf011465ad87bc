//! Runs a workload: user threads, warm-up, measured window, report.
//!
//! Phases: the threads are spawned and wait at a gate (`Starting`); the gate
//! opens into `Warmup`; then the coordinator samples the engine counters and
//! `/proc`, and opens the measured window (`Measure`). When the window closes
//! (`Drain`) it samples again while the user threads are still alive (their
//! per-thread context switch counts vanish when they exit), and only then
//! stops them (`Stop`). A commit is measured when it returns inside the window.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use parking_lot::{Condvar, Mutex};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::access::KeySampler;
use super::acks::AckWriter;
use super::journal::JournalWriter;
use super::kinds::WorkloadKind;
use super::mix::{Mix, Statement};
use super::procstat::{self, CtxSwitches};
use super::report::{CtxSwitchReport, IntervalReport, LatencySummary, RunReport};
use super::tpcc::{self, TpccTables};
use super::txn::{InsertIds, OpCounts, Outcome, StatementError};
use super::txn_gen::{SbtestPlan, TxnGen};
use super::{RunConfig, WorkloadError};
use redoctor_engine::{CounterValues, StatusSnapshot};
use redoctor_engine::{Engine, TableId};
use redoctor_engine::{EngineError, RedoMode, RedoRecord, Trx};

/// The phases of a run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Phase {
    Starting = 0,
    Warmup = 1,
    Measure = 2,
    Drain = 3,
    Stop = 4,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Starting,
            1 => Phase::Warmup,
            2 => Phase::Measure,
            3 => Phase::Drain,
            _ => Phase::Stop,
        }
    }
}

/// State shared by the coordinator, the user threads and the mode switcher.
struct Shared {
    phase: AtomicU8,
    gate: Mutex<()>,
    opened: Condvar,
    failed: AtomicBool,
    first_error: Mutex<Option<String>>,
}

impl Shared {
    fn new() -> Self {
        Shared {
            phase: AtomicU8::new(Phase::Starting as u8),
            gate: Mutex::new(()),
            opened: Condvar::new(),
            failed: AtomicBool::new(false),
            first_error: Mutex::new(None),
        }
    }

    fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    fn set_phase(&self, p: Phase) {
        let _gate = self.gate.lock();
        self.phase.store(p as u8, Ordering::Release);
        self.opened.notify_all();
    }

    /// Blocks until the coordinator leaves `Starting`.
    fn wait_open(&self) {
        let mut gate = self.gate.lock();
        while self.phase() == Phase::Starting {
            self.opened.wait(&mut gate);
        }
    }

    /// Threads keep working until `Stop` or the first fatal error.
    fn running(&self) -> bool {
        self.phase() < Phase::Stop && !self.failed.load(Ordering::Relaxed)
    }

    /// Records a fatal error (the first one wins) and stops the run.
    fn fail(&self, msg: String) {
        let mut first = self.first_error.lock();
        if first.is_none() {
            *first = Some(msg);
        }
        self.failed.store(true, Ordering::Relaxed);
    }

    /// Sleeps until `deadline`, returning early once the run stops or fails.
    fn sleep_until(&self, deadline: Instant) {
        const SLICE: Duration = Duration::from_millis(10);
        while self.running() {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            thread::sleep((deadline - now).min(SLICE));
        }
    }
}

/// What one user thread measured.
struct ThreadStats {
    latency: Histogram<u64>,
    commits: u64,
    /// Transactions the workload rolled back on purpose (measured window).
    planned_rollbacks: u64,
    /// Statements of the transactions that ended in the window.
    ops: OpCounts,
    retries: u64,
    errors: u64,
    acks: u64,
}

impl ThreadStats {
    fn new() -> Self {
        ThreadStats {
            latency: Histogram::new(3)
                .expect("3 significant figures is a valid histogram precision"),
            commits: 0,
            planned_rollbacks: 0,
            ops: OpCounts::default(),
            retries: 0,
            errors: 0,
            acks: 0,
        }
    }
}

/// One sample of the engine counters and the process statistics.
struct Sample {
    status: StatusSnapshot,
    /// The page store's counters (tables on pages), by status name.
    pages: BTreeMap<String, u64>,
    ctx: CtxSwitches,
    cpu: Duration,
}

impl Sample {
    fn take(engine: &Engine) -> Result<Sample, WorkloadError> {
        Ok(Sample {
            status: engine.status(),
            pages: page_counters(engine),
            ctx: procstat::ctx_switches().map_err(WorkloadError::ProcStat)?,
            cpu: procstat::cpu_time().map_err(WorkloadError::ProcStat)?,
        })
    }
}

/// The measured window: samples at both ends and its exact length.
struct Window {
    begin: Sample,
    end: Sample,
    length: Duration,
}

/// Creates and loads what `cfg.workload` needs, unless it is already there:
/// the sbtest tables ([`Engine::prepare_sbtest`]) or the TPCC-lite tables
/// ([`tpcc::prepare`]).
pub fn prepare(engine: &Engine, cfg: &RunConfig) -> Result<(), WorkloadError> {
    cfg.validate()?;
    if cfg.workload == WorkloadKind::Tpcc {
        tpcc::prepare(engine, cfg.warehouses)?;
        return Ok(());
    }
    engine
        .prepare_sbtest(cfg.tables, cfg.table_size)
        .map_err(|source| WorkloadError::Engine {
            doing: "preparing the sbtest tables",
            source,
        })
}

/// What every user thread's generator is built from.
enum Setup {
    Sbtest {
        tables: Vec<TableId>,
        keys: KeySampler,
        first_free: Vec<i64>,
        mix: Mix,
    },
    Tpcc {
        tables: TpccTables,
        first_history_id: i64,
    },
}

impl Setup {
    fn new(engine: &Engine, cfg: &RunConfig) -> Result<Setup, WorkloadError> {
        let Some(mix) = cfg.statement_mix() else {
            let tables = TpccTables::resolve(engine)?;
            return Ok(Setup::Tpcc {
                tables,
                first_history_id: tpcc::first_free_history_id(engine, &tables)?,
            });
        };
        let tables = resolve_tables(engine, cfg.tables)?;
        let first_free = if mix.count(Statement::Insert) > 0 {
            first_free_ids(engine, &tables, cfg.table_size)?
        } else {
            vec![cfg.table_size as i64 + 1; tables.len()]
        };
        Ok(Setup::Sbtest {
            tables,
            keys: KeySampler::new(cfg.access, cfg.table_size),
            first_free,
            mix,
        })
    }

    /// The generator of user thread `i` of `users`.
    fn generator(&self, cfg: &RunConfig, rng: SmallRng, i: usize) -> TxnGen {
        match self {
            Setup::Sbtest {
                tables,
                keys,
                first_free,
                mix,
            } => TxnGen::sbtest(
                rng,
                SbtestPlan {
                    tables: tables.clone(),
                    keys: keys.clone(),
                    table_size: cfg.table_size,
                    insert_ids: InsertIds::new(first_free, i, cfg.users),
                    mix: mix.clone(),
                },
            ),
            Setup::Tpcc {
                tables,
                first_history_id,
            } => TxnGen::tpcc(
                rng,
                tpcc::TpccGen::new(*tables, cfg.warehouses, i, cfg.users, *first_history_id),
            ),
        }
    }
}

/// Runs `cfg.workload` against `engine` and reports on the measured window.
///
/// The workload's tables must exist (see [`prepare`]). A deadlock or lock
/// wait timeout rolls the transaction back and re-runs it (counted in
/// `retries`); any other engine error stops the run and is reported in
/// [`RunReport::first_error`].
pub fn run(engine: &Arc<Engine>, cfg: RunConfig) -> Result<RunReport, WorkloadError> {
    run_with_reports(engine, cfg, &mut |_| {})
}

/// [`run`], calling `on_interval` at the end of every
/// `cfg.report_interval` of the measured window (a last, shorter interval
/// ends with the window).
pub fn run_with_reports(
    engine: &Arc<Engine>,
    cfg: RunConfig,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<RunReport, WorkloadError> {
    cfg.validate()?;
    let setup = Setup::new(engine, &cfg)?;
    let acks = match &cfg.ack_file {
        Some(path) => Some(Arc::new(AckWriter::open(path).map_err(|source| {
            WorkloadError::AckFile {
                path: path.clone(),
                source,
            }
        })?)),
        None => None,
    };
    let journal = match &cfg.journal {
        Some(path) => Some(Arc::new(JournalWriter::open(path).map_err(|source| {
            WorkloadError::Journal {
                path: path.clone(),
                source,
            }
        })?)),
        None => None,
    };
    let cpus = match procstat::allowed_cpus() {
        Ok(cpus) => cpus.len(),
        Err(_) => thread::available_parallelism().map_or(0, |n| n.get()),
    };
    let initial = engine.status();
    let seed = cfg.seed.unwrap_or_else(rand::random);
    let shared = Arc::new(Shared::new());

    let mut users: Vec<JoinHandle<ThreadStats>> = Vec::with_capacity(cfg.users);
    let mut spawn_error = None;
    for i in 0..cfg.users {
        let rng =
            SmallRng::seed_from_u64(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let gen = setup.generator(&cfg, rng, i);
        let (engine, shared, acks, journal, kind) = (
            Arc::clone(engine),
            Arc::clone(&shared),
            acks.clone(),
            journal.clone(),
            cfg.workload,
        );
        let name = format!("user/{}", i + 1);
        match thread::Builder::new().name(name.clone()).spawn(move || {
            let logs = Logs {
                acks: acks.as_deref(),
                journal: journal.as_deref(),
            };
            user_loop(&engine, kind, gen, &shared, logs)
        }) {
            Ok(handle) => users.push(handle),
            Err(source) => {
                spawn_error = Some(WorkloadError::Spawn { name, source });
                break;
            }
        }
    }
    let switcher = match (cfg.switch_every, spawn_error.is_none()) {
        (Some(every), true) => {
            let (engine, shared) = (Arc::clone(engine), Arc::clone(&shared));
            let start_on = initial.redo_mode == RedoMode::On;
            match thread::Builder::new()
                .name("mode-switch".into())
                .spawn(move || switcher_loop(&engine, every, start_on, &shared))
            {
                Ok(handle) => Some(handle),
                Err(source) => {
                    spawn_error = Some(WorkloadError::Spawn {
                        name: "mode-switch".into(),
                        source,
                    });
                    None
                }
            }
        }
        _ => None,
    };

    let window = match spawn_error {
        Some(e) => Err(e),
        None => {
            shared.set_phase(Phase::Warmup);
            measure(engine, &shared, &cfg, on_interval)
        }
    };
    shared.set_phase(Phase::Stop);

    let mut stats = Vec::with_capacity(users.len());
    for handle in users {
        let name = handle.thread().name().unwrap_or("user").to_string();
        match handle.join() {
            Ok(s) => stats.push(s),
            Err(panic) => shared.fail(format!("{name} panicked: {}", panic_message(&panic))),
        }
    }
    let mode_switches = match switcher.map(JoinHandle::join) {
        Some(Ok(n)) => n,
        Some(Err(panic)) => {
            shared.fail(format!("mode-switch panicked: {}", panic_message(&panic)));
            0
        }
        None => 0,
    };
    let window = window?;
    let first_error = shared.first_error.lock().take();
    Ok(build_report(
        &cfg,
        &initial,
        cpus,
        &window,
        stats,
        mode_switches,
        first_error,
    ))
}

/// Warm-up, then the measured window; returns the samples at both ends.
fn measure(
    engine: &Engine,
    shared: &Shared,
    cfg: &RunConfig,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<Window, WorkloadError> {
    shared.sleep_until(Instant::now() + cfg.warmup);
    let begin = Sample::take(engine)?;
    shared.set_phase(Phase::Measure);
    let opened = Instant::now();
    let close = opened + cfg.duration;
    if let Some(every) = cfg.report_interval.filter(|d| !d.is_zero()) {
        let (mut start, mut commits) = (opened, begin.status.counters.commits);
        while start < close && shared.running() {
            let end = (start + every).min(close);
            shared.sleep_until(end);
            let now = Instant::now();
            let total = engine.status().counters.commits;
            let secs = now.duration_since(start).as_secs_f64();
            let done = total.saturating_sub(commits);
            on_interval(&IntervalReport {
                at_s: now.duration_since(opened).as_secs_f64(),
                unix_ms: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
                secs,
                commits: done,
                tps: done as f64 / secs.max(1e-9),
            });
            (start, commits) = (now, total);
        }
    }
    shared.sleep_until(close);
    shared.set_phase(Phase::Drain);
    let length = opened.elapsed();
    let end = Sample::take(engine)?;
    Ok(Window { begin, end, length })
}

/// The ids of `sbtest1..=n`.
fn resolve_tables(engine: &Engine, n: u32) -> Result<Vec<TableId>, WorkloadError> {
    (1..=n)
        .map(|i| {
            let name = format!("sbtest{i}");
            engine
                .table_id(&name)
                .ok_or(WorkloadError::MissingTable(name))
        })
        .collect()
}

/// For each table, the lowest id above `table_size` and above every row an
/// earlier run inserted, so `insert` never collides with existing rows.
///
/// Scans upwards from `table_size + 1` in chunks until a chunk is empty;
/// inserted ids are dense (gaps are at most a few times the user count).
fn first_free_ids(
    engine: &Engine,
    tables: &[TableId],
    table_size: u64,
) -> Result<Vec<i64>, WorkloadError> {
    const CHUNK: i64 = 65_536;
    tables
        .iter()
        .map(|&table| {
            let mut trx = engine.begin();
            let mut max = table_size as i64;
            let mut lo = max + 1;
            let scanned = loop {
                match trx.range(table, lo, lo + CHUNK - 1) {
                    Ok(rows) if rows.is_empty() => break Ok(max + 1),
                    Ok(rows) => {
                        max = rows.iter().map(|(id, _)| *id).fold(max, i64::max);
                        lo += CHUNK;
                    }
                    Err(e) => break Err(EngineError::from(e)),
                }
            };
            engine.rollback(trx);
            scanned.map_err(|source| WorkloadError::Engine {
                doing: "looking for free insert ids",
                source,
            })
        })
        .collect()
}

/// The crash tests' logs a user thread appends to.
#[derive(Clone, Copy)]
struct Logs<'a> {
    acks: Option<&'a AckWriter>,
    journal: Option<&'a JournalWriter>,
}

/// Why [`commit_journaled`] failed.
enum CommitFailure {
    Engine(EngineError),
    Journal(std::io::Error),
}

/// Commits `trx`. With a journal, a transaction with changes is logged
/// before the commit (its after-images, while it still holds its row
/// locks) and after it: acknowledged, or rolled back by a retryable error.
/// A commit that fails otherwise stops the run, and its outcome is left
/// undecided in the journal (recovery may keep it or not).
fn commit_journaled(
    engine: &Engine,
    trx: Trx,
    journal: Option<&JournalWriter>,
) -> Result<(), CommitFailure> {
    // Only a journal needs the after-images (a copy of every written row).
    let logged = match journal.map(|j| (j, trx.redo_record())) {
        Some((j, Some(RedoRecord::Commit { trx_id, ops }))) => {
            if let Err(e) = j.intent(trx_id, &ops) {
                engine.rollback(trx);
                return Err(CommitFailure::Journal(e));
            }
            Some((j, trx_id))
        }
        _ => None,
    };
    match engine.commit(trx) {
        Ok(_lsn) => match logged {
            Some((j, id)) => j.ack(id).map_err(CommitFailure::Journal),
            None => Ok(()),
        },
        Err(e) => {
            if let (Some((j, id)), true) = (logged, e.is_retryable()) {
                j.abort(id).map_err(CommitFailure::Journal)?;
            }
            Err(CommitFailure::Engine(e))
        }
    }
}

/// The body of a user thread: transactions until the run stops.
fn user_loop(
    engine: &Engine,
    kind: WorkloadKind,
    mut gen: TxnGen,
    shared: &Shared,
    logs: Logs<'_>,
) -> ThreadStats {
    let mut stats = ThreadStats::new();
    let me = thread::current();
    let me = me.name().unwrap_or("user");
    shared.wait_open();
    while shared.running() {
        let started = Instant::now();
        let mut retries = 0u64;
        let outcome = loop {
            let mut trx = engine.begin();
            let result = match gen.execute(&mut trx) {
                Ok(Outcome::Commit(ack)) => match commit_journaled(engine, trx, logs.journal) {
                    Ok(()) => Ok(Some(ack)),
                    Err(CommitFailure::Engine(e)) => Err(StatementError::from(e)),
                    Err(CommitFailure::Journal(e)) => {
                        stats.errors += 1;
                        shared.fail(format!("{me}: writing the journal: {e}"));
                        break Err(None);
                    }
                },
                Ok(Outcome::Rollback) => {
                    engine.rollback(trx);
                    Ok(None)
                }
                Err(e) => {
                    engine.rollback(trx);
                    Err(e)
                }
            };
            match result {
                Ok(ack) => break Ok(ack),
                Err(e) if e.is_retryable() => {
                    retries += 1;
                    if !shared.running() {
                        break Err(None);
                    }
                }
                Err(e) => break Err(Some(e)),
            }
        };
        let latency = started.elapsed();
        let ops = gen.take_counts();
        match outcome {
            Ok(None) => {
                if shared.phase() == Phase::Measure {
                    stats.planned_rollbacks += 1;
                    stats.ops.add(&ops);
                }
            }
            Ok(Some(ack)) => {
                if let (Some(writer), Some((table, id))) = (logs.acks, ack) {
                    if let Err(e) = writer.append(table, id) {
                        stats.errors += 1;
                        shared.fail(format!(
                            "{me}: writing the acknowledgement of {table} {id}: {e}"
                        ));
                        break;
                    }
                    stats.acks += 1;
                }
                if shared.phase() == Phase::Measure {
                    stats.commits += 1;
                    stats.ops.add(&ops);
                    stats.retries += retries;
                    record_latency(&mut stats.latency, latency);
                }
            }
            // Stopped while retrying.
            Err(None) => break,
            Err(Some(e)) => {
                stats.errors += 1;
                shared.fail(format!("{me}: {kind} transaction failed: {e}"));
                break;
            }
        }
    }
    stats
}

/// Toggles the redo mode every `every` until the run stops; returns the switch count.
fn switcher_loop(engine: &Engine, every: Duration, start_on: bool, shared: &Shared) -> u64 {
    shared.wait_open();
    let mut on = start_on;
    let mut switches = 0;
    let mut next = Instant::now() + every;
    loop {
        shared.sleep_until(next);
        if !shared.running() {
            return switches;
        }
        on = !on;
        let mode = if on { RedoMode::On } else { RedoMode::Off };
        if let Err(e) = engine.set_redo_mode(mode) {
            let name = if on { "on" } else { "off" };
            shared.fail(format!("switching the redo log threads {name}: {e}"));
            return switches;
        }
        switches += 1;
        next += every;
    }
}

/// Records `d` in microseconds. `record` grows an auto-resizing histogram;
/// `saturating_record` would clamp to its current range instead.
fn record_latency(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    if h.record(us).is_err() {
        h.saturating_record(us);
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// `end - begin` for every numeric engine counter, by name.
fn counters_delta(begin: &CounterValues, end: &CounterValues) -> BTreeMap<String, u64> {
    let (Ok(serde_json::Value::Object(b)), Ok(serde_json::Value::Object(e))) =
        (serde_json::to_value(begin), serde_json::to_value(end))
    else {
        return BTreeMap::new();
    };
    e.iter()
        .filter_map(|(name, v)| {
            let before = b.get(name).and_then(|v| v.as_u64()).unwrap_or(0);
            Some((name.clone(), v.as_u64()?.saturating_sub(before)))
        })
        .collect()
}

fn per(total: f64, commits: u64) -> Option<f64> {
    (commits > 0).then(|| total / commits as f64)
}

fn build_report(
    cfg: &RunConfig,
    initial: &StatusSnapshot,
    cpus: usize,
    window: &Window,
    stats: Vec<ThreadStats>,
    mode_switches: u64,
    first_error: Option<String>,
) -> RunReport {
    let mut latency =
        Histogram::<u64>::new(3).expect("3 significant figures is a valid histogram precision");
    let (mut commits, mut retries, mut errors, mut acks) = (0, 0, 0, 0);
    let (mut planned_rollbacks, mut ops) = (0, OpCounts::default());
    for s in &stats {
        planned_rollbacks += s.planned_rollbacks;
        ops.add(&s.ops);
        latency
            .add(&s.latency)
            .expect("auto-resizing histograms accept any other histogram");
        commits += s.commits;
        retries += s.retries;
        errors += s.errors;
        acks += s.acks;
    }
    let (b, e) = (&window.begin, &window.end);
    let engine_commits = e
        .status
        .counters
        .commits
        .saturating_sub(b.status.counters.commits);
    let redo_fsyncs = e
        .status
        .counters
        .redo_fsyncs
        .saturating_sub(b.status.counters.redo_fsyncs);
    let ctx = e.ctx.delta_since(&b.ctx);
    let cpu = e.cpu.saturating_sub(b.cpu);
    let secs = window.length.as_secs_f64();
    RunReport {
        workload: cfg.workload,
        workload_spec: cfg.spec().to_string(),
        access: cfg.access.to_string(),
        warehouses: (cfg.workload == WorkloadKind::Tpcc).then_some(cfg.warehouses),
        users: cfg.users,
        cpus,
        redo_mode: initial.redo_mode,
        redo_threads: match initial.redo_mode {
            RedoMode::On => "RT1",
            RedoMode::Off => "RT0",
        },
        flush_at_commit: initial.flush_at_commit,
        switch_every_ms: cfg.switch_every.map(|d| d.as_millis() as u64),
        mode_switches,
        tables: cfg.tables,
        table_size: cfg.table_size,
        warmup_secs: cfg.warmup.as_secs_f64(),
        measured_secs: secs,
        commits,
        tps: if secs > 0.0 {
            commits as f64 / secs
        } else {
            0.0
        },
        latency_us: LatencySummary::from_histogram(&latency),
        retries,
        planned_rollbacks,
        statements: ops.to_map(),
        errors,
        first_error,
        engine_commits,
        redo_fsyncs,
        commits_per_fsync: (redo_fsyncs > 0).then(|| engine_commits as f64 / redo_fsyncs as f64),
        ctx_switches: CtxSwitchReport {
            voluntary: ctx.voluntary,
            involuntary: ctx.involuntary,
            voluntary_per_commit: per(ctx.voluntary as f64, commits),
            involuntary_per_commit: per(ctx.involuntary as f64, commits),
            tasks_at_start: b.ctx.tasks,
            tasks_at_end: e.ctx.tasks,
        },
        cpu_secs: cpu.as_secs_f64(),
        cpu_us_per_commit: per(cpu.as_secs_f64() * 1e6, commits),
        acks_written: acks,
        engine_counters_delta: counters_delta(&b.status.counters, &e.status.counters),
        page_status_delta: e
            .pages
            .iter()
            .map(|(k, v)| (k.clone(), v.saturating_sub(*b.pages.get(k).unwrap_or(&0))))
            .collect(),
        settings: BTreeMap::new(),
    }
}

/// The buffer pool's and doublewrite buffer's counters (not the gauges
/// `_pages_dirty`, `_pages_total`); none with tables in memory.
fn page_counters(engine: &Engine) -> BTreeMap<String, u64> {
    if engine.page_store().is_none() {
        return BTreeMap::new();
    }
    engine
        .global_status()
        .into_iter()
        .filter(|(n, _)| {
            (n.starts_with("Innodb_buffer_pool_")
                || n.starts_with("Innodb_dblwr_")
                || n.starts_with("Innodb_page_cleaner_"))
                && !n.ends_with("_pages_dirty")
                && !n.ends_with("_pages_total")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_latencies_are_not_clamped() {
        let mut h = ThreadStats::new().latency;
        record_latency(&mut h, Duration::from_micros(3));
        record_latency(&mut h, Duration::from_secs(12));
        assert!(h.max() >= 11_990_000, "max {}", h.max());
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn counter_deltas_by_name() {
        let a = CounterValues {
            commits: 10,
            ..Default::default()
        };
        let b = CounterValues {
            commits: 25,
            redo_fsyncs: 5,
            ..Default::default()
        };
        let d = counters_delta(&a, &b);
        assert_eq!(d["commits"], 15);
        assert_eq!(d["redo_fsyncs"], 5);
        assert_eq!(d["rollbacks"], 0);
        assert_eq!(per(10.0, 0), None);
        assert_eq!(per(10.0, 4), Some(2.5));
    }
}
