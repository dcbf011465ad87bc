//! `redoctor-engine`: drive the bundled engine from the command line.
//!
//! - `run`: open (recovering if needed) a data directory, prepare the sbtest
//!   tables if they are missing, run a sysbench-style workload, print the
//!   report, shut down cleanly;
//! - `recover`: open a data directory (which recovers it) and print what
//!   recovery did and how many rows each table holds;
//! - `verify-acks`: recover, then check that every insert a crash test saw
//!   acknowledged (see `workload::acks`) is in the recovered tables.
//!
//! Reports go to stdout, progress and errors to stderr.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;

use redoctor_engine::engine::TableId;
use redoctor_engine::recovery::RecoveryReport;
use redoctor_engine::workload::{self, acks, procstat, RunConfig, WorkloadKind};
use redoctor_engine::{Engine, EngineOptions, RedoMode, RedoOptions};

#[derive(Parser, Debug)]
#[command(
    name = "redoctor-engine",
    version,
    about = "Run workloads against the bundled InnoDB-style engine, recover it, check crash-test acknowledgements"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a sysbench-style workload and print its report.
    Run(RunArgs),
    /// Open (and so recover) a data directory; print the recovery report and row counts.
    Recover(RecoverArgs),
    /// Recover a data directory and check that every acknowledged insert survived.
    VerifyAcks(VerifyArgs),
    /// Serve the MySQL protocol on a Unix socket (and optionally 127.0.0.1) until SIGTERM/SIGINT.
    Serve(redoctor_engine::server::cli::ServeArgs),
}

/// Options for opening the engine, shared by every subcommand.
#[derive(Args, Debug)]
struct EngineArgs {
    /// Data directory (created by `run` if missing).
    #[arg(long)]
    datadir: PathBuf,
    /// Redo log buffer size in MiB, fractions allowed (a power of two in bytes; engine default if absent).
    #[arg(long = "log-buffer-mb", value_name = "MB", value_parser = parse_mib)]
    log_buffer_bytes: Option<u64>,
    /// Redo log file size in MiB, fractions allowed (engine default if absent).
    #[arg(long = "log-file-mb", value_name = "MB", value_parser = parse_mib)]
    log_file_bytes: Option<u64>,
    /// Take a checkpoint when the redo log is this full (percent; engine default if absent).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    checkpoint_fill_pct: Option<u32>,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Workload: point_select, update_index, update_non_index, insert or read_write.
    #[arg(long, short = 'w')]
    workload: WorkloadKind,
    /// Concurrent user threads.
    #[arg(long, default_value_t = 1)]
    users: usize,
    /// Measured time in seconds (fractions allowed).
    #[arg(long, default_value = "10", value_parser = parse_secs)]
    duration: Duration,
    /// Unmeasured warm-up time in seconds before the measured window.
    #[arg(long, default_value = "1", value_parser = parse_secs)]
    warmup: Duration,
    /// Dedicated redo log threads: on (RT1) or off (RT0, user threads write). Engine default if absent.
    #[arg(long, value_enum)]
    redo_threads: Option<OnOff>,
    /// innodb_flush_log_at_trx_commit: 1 write+fsync per commit, 2 write only, 0 neither. Engine default if absent.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=2))]
    flush_at_commit: Option<u8>,
    /// Number of sbtest tables.
    #[arg(long, default_value_t = 4)]
    tables: u32,
    /// Rows per table (ids 1..=N).
    #[arg(long, default_value_t = 10_000)]
    table_size: u64,
    /// Pin the whole process to the first K CPUs it may run on.
    #[arg(long)]
    cpus: Option<usize>,
    /// Print the report as one line of JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Append `<table_id> <id>` to this file after every acknowledged insert (insert workload only).
    #[arg(long)]
    ack_file: Option<PathBuf>,
    /// Toggle the redo log threads on/off every M milliseconds during the run.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    switch_every_ms: Option<u64>,
    /// innodb_lock_wait_timeout in seconds (engine default if absent).
    #[arg(long, value_parser = parse_secs)]
    lock_wait_timeout: Option<Duration>,
    /// Seed for the workload's random numbers (random if absent).
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Args, Debug)]
struct RecoverArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// Acknowledgement file written by `run --ack-file`; repeat for several runs on the same datadir.
    #[arg(long, required = true)]
    acks: Vec<PathBuf>,
    /// Exit without the clean shutdown (no final checkpoint), so the next open recovers again.
    #[arg(long)]
    no_shutdown: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum OnOff {
    On,
    Off,
}

impl From<OnOff> for RedoMode {
    fn from(v: OnOff) -> RedoMode {
        match v {
            OnOff::On => RedoMode::On,
            OnOff::Off => RedoMode::Off,
        }
    }
}

/// Seconds as an integer or a fraction (`5`, `0.5`, `2.5s`).
fn parse_secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .strip_suffix('s')
        .unwrap_or(s)
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds (e.g. 5 or 0.5)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}`: seconds must be a finite number >= 0"));
    }
    Duration::try_from_secs_f64(v).map_err(|e| format!("`{s}`: {e}"))
}

/// MiB, fractions allowed (`16`, `0.5`), as bytes.
fn parse_mib(s: &str) -> Result<u64, String> {
    let mb: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of MiB (e.g. 16 or 0.5)"))?;
    let bytes = (mb * 1048576.0).round();
    if !bytes.is_finite() || bytes < 1.0 || bytes > (1u64 << 50) as f64 {
        return Err(format!("`{s}` MiB is out of range"));
    }
    Ok(bytes as u64)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Recover(a) => cmd_recover(a),
        Command::VerifyAcks(a) => cmd_verify_acks(a),
        Command::Serve(a) => redoctor_engine::server::cli::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Opens the engine at `args.datadir` (recovering it if needed).
fn open_engine(
    args: &EngineArgs,
    mut redo: RedoOptions,
    lock_wait_timeout: Option<Duration>,
) -> Result<Arc<Engine>> {
    if let Some(bytes) = args.log_buffer_bytes {
        redo.log_buffer_size =
            usize::try_from(bytes).context("--log-buffer-mb is too large for this machine")?;
    }
    if let Some(bytes) = args.log_file_bytes {
        redo.log_file_size = bytes;
    }
    let mut opts = EngineOptions::new(args.datadir.clone());
    opts.redo = redo;
    if let Some(t) = lock_wait_timeout {
        opts.lock_wait_timeout = t;
    }
    if let Some(pct) = args.checkpoint_fill_pct {
        opts.checkpoint_fill_pct = pct;
    }
    Engine::open(opts).with_context(|| {
        format!(
            "cannot open the engine at {} (recovery failed or the directory holds something else); \
             pass the --datadir of an earlier run or an empty directory",
            args.datadir.display()
        )
    })
}

/// Creates `dir` if needed and checks that files can be created in it.
fn ensure_writable_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "--datadir {} exists but is not a directory; pass a directory path",
            dir.display()
        );
    }
    fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create --datadir {}; pass a directory you can write to",
            dir.display()
        )
    })?;
    let probe = dir.join(".redoctor-write-probe");
    fs::write(&probe, b"").with_context(|| {
        format!(
            "--datadir {} is not writable; pass a directory you can write to",
            dir.display()
        )
    })?;
    fs::remove_file(&probe).with_context(|| format!("cannot remove {}", probe.display()))?;
    Ok(())
}

/// Checks that `dir` is an existing directory (recover and verify never create one).
fn ensure_existing_datadir(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        bail!(
            "--datadir {} does not exist or is not a directory: there is nothing to recover; \
             pass the --datadir of an earlier `run`",
            dir.display()
        );
    }
    Ok(())
}

fn cmd_run(a: RunArgs) -> Result<ExitCode> {
    // Before the engine starts any thread, so that every thread inherits the mask.
    if let Some(k) = a.cpus {
        let chosen = procstat::pin_to_first_cpus(k).with_context(|| {
            format!("--cpus {k} is not possible; pass a count from 1 to the number of CPUs this process may use")
        })?;
        eprintln!("pinned to CPUs {}", procstat::cpu_list(&chosen));
    }
    let cfg = RunConfig {
        workload: a.workload,
        users: a.users,
        duration: a.duration,
        warmup: a.warmup,
        tables: a.tables,
        table_size: a.table_size,
        ack_file: a.ack_file.clone(),
        switch_every: a.switch_every_ms.map(Duration::from_millis),
        seed: a.seed,
    };
    cfg.validate().context(
        "check --users, --duration, --tables, --table-size, --ack-file and --switch-every-ms",
    )?;
    ensure_writable_dir(&a.engine.datadir)?;

    let mut redo = RedoOptions::default();
    if let Some(mode) = a.redo_threads {
        redo.mode = mode.into();
    }
    if let Some(f) = a.flush_at_commit {
        redo.flush_at_commit = f;
    }
    let opened = Instant::now();
    let engine = open_engine(&a.engine, redo, a.lock_wait_timeout)?;
    eprintln!(
        "opened {} in {:.2} s; recovery: {}",
        a.engine.datadir.display(),
        opened.elapsed().as_secs_f64(),
        serde_json::to_string(engine.recovery_report())
            .context("serialising the recovery report")?
    );

    let outcome = prepare_and_run(&engine, &a, cfg);
    if let Ok(report) = &outcome {
        if a.json {
            println!(
                "{}",
                serde_json::to_string(report).context("serialising the report")?
            );
        } else {
            print!("{report}");
        }
    }
    let shutdown = engine
        .shutdown()
        .context("the clean shutdown failed (the next open will recover)");
    let report = outcome?;
    shutdown?;
    if let Some(e) = &report.first_error {
        bail!("the run stopped early: {e}");
    }
    Ok(ExitCode::SUCCESS)
}

fn prepare_and_run(
    engine: &Arc<Engine>,
    a: &RunArgs,
    cfg: RunConfig,
) -> Result<workload::RunReport> {
    let missing = (1..=a.tables)
        .filter(|i| engine.table_id(&format!("sbtest{i}")).is_none())
        .count();
    if missing > 0 {
        eprintln!(
            "preparing {missing} of {} sbtest tables with {} rows each",
            a.tables, a.table_size
        );
        let started = Instant::now();
        engine
            .prepare_sbtest(a.tables, a.table_size)
            .context("preparing the sbtest tables")?;
        eprintln!("prepared in {:.2} s", started.elapsed().as_secs_f64());
    }
    let status = engine.status();
    eprintln!(
        "running {} with {} users: {:.1} s warm-up + {:.1} s measured, redo log threads {}, flush_at_commit {}{}",
        cfg.workload,
        cfg.users,
        cfg.warmup.as_secs_f64(),
        cfg.duration.as_secs_f64(),
        status.redo_mode,
        status.flush_at_commit,
        cfg.switch_every
            .map(|d| format!(", switching every {} ms", d.as_millis()))
            .unwrap_or_default()
    );
    workload::run(engine, cfg).context("running the workload")
}

/// Row count per table.
fn row_counts(engine: &Engine) -> BTreeMap<String, usize> {
    engine
        .dump()
        .into_iter()
        .map(|(name, rows)| (name, rows.len()))
        .collect()
}

fn cmd_recover(a: RecoverArgs) -> Result<ExitCode> {
    #[derive(Serialize)]
    struct Output<'a> {
        datadir: &'a Path,
        recovery: &'a RecoveryReport,
        tables: BTreeMap<String, usize>,
    }
    ensure_existing_datadir(&a.engine.datadir)?;
    let started = Instant::now();
    let engine = open_engine(&a.engine, RedoOptions::default(), None)?;
    let elapsed = started.elapsed();
    let out = Output {
        datadir: &a.engine.datadir,
        recovery: engine.recovery_report(),
        tables: row_counts(&engine),
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).context("serialising the recovery report")?
        );
    } else {
        println!(
            "recovered {} in {:.2} s",
            a.engine.datadir.display(),
            elapsed.as_secs_f64()
        );
        match serde_json::to_value(out.recovery).context("serialising the recovery report")? {
            serde_json::Value::Object(fields) => {
                for (k, v) in fields {
                    println!("  {k:<28} {v}");
                }
            }
            other => println!("  {other}"),
        }
        println!("tables:");
        for (name, rows) in &out.tables {
            println!("  {name:<28} {rows} rows");
        }
    }
    engine
        .shutdown()
        .context("the clean shutdown after recovery failed")?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_verify_acks(a: VerifyArgs) -> Result<ExitCode> {
    let mut all = Vec::new();
    let mut partial = 0;
    for path in &a.acks {
        let bytes = fs::read(path).with_context(|| {
            format!(
                "cannot read the acknowledgement file {}; pass the --ack-file of the run",
                path.display()
            )
        })?;
        let parsed = acks::parse_acks(&bytes)
            .with_context(|| format!("{} is not an acknowledgement file", path.display()))?;
        partial += usize::from(parsed.partial_tail);
        all.extend(parsed.acks);
    }
    ensure_existing_datadir(&a.engine.datadir)?;
    let started = Instant::now();
    let engine = open_engine(&a.engine, RedoOptions::default(), None)?;
    let recovered_in = started.elapsed();

    let names: HashMap<TableId, String> = engine
        .table_names()
        .into_iter()
        .filter_map(|name| Some((engine.table_id(&name)?, name)))
        .collect();
    let ids: BTreeMap<String, BTreeSet<i64>> = engine
        .dump()
        .into_iter()
        .map(|(name, rows)| (name, rows.into_keys().collect()))
        .collect();
    let check = acks::check_acks(&all, &names, &ids);

    println!(
        "recovered {} in {:.2} s; {} ack lines ({} distinct) from {} file(s), {} partial trailing line(s) ignored",
        a.engine.datadir.display(),
        recovered_in.as_secs_f64(),
        check.lines,
        check.distinct,
        a.acks.len(),
        partial
    );
    println!("present {}  missing {}", check.present, check.missing.len());
    for (name, rows) in &ids {
        println!("  {name:<12} {} rows", rows.len());
    }
    if check.lines == 0 {
        eprintln!("warning: no acknowledgement lines: nothing was checked");
    }
    if !check.ok() {
        const SHOWN: usize = 20;
        eprintln!(
            "{} acknowledged inserts are missing after recovery; the first ones:",
            check.missing.len()
        );
        for (table, id) in check.missing.iter().take(SHOWN) {
            let name = names.get(table).map_or("(unknown table)", String::as_str);
            eprintln!("  table {table} {name} id {id}");
        }
    }
    if a.no_shutdown {
        // Leave the log as recovery left it: no final checkpoint, no clean stop.
        std::io::stdout().flush().context("flushing stdout")?;
        std::mem::forget(engine);
    } else {
        engine
            .shutdown()
            .context("the clean shutdown after verification failed")?;
    }
    Ok(if check.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
