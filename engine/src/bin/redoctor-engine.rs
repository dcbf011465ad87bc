//! `redoctor-engine`: drive the bundled engine from the command line.
//!
//! - `run`: open (recovering if needed) a data directory, prepare the sbtest
//!   tables if they are missing, run a sysbench-style workload, print the
//!   report, shut down cleanly; with `--admin-socket` the MySQL protocol is
//!   served on the same engine while the workload runs, so settings can be
//!   changed live (`SET GLOBAL`);
//! - `recover`: open a data directory (which recovers it) and print what
//!   recovery did and how many rows each table holds;
//! - `verify-acks`: recover, then check that every insert a crash test saw
//!   acknowledged (see `workload::acks`) is in the recovered tables;
//! - `sweep`: run a grid of cells, each a fresh `run` process, into one
//!   resumable JSON results file (see `sweep`);
//! - `oracle`: the best configuration per scenario of a results file;
//! - `plot`: SVG charts and an `index.html` from a results file.
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
use redoctor_engine::server;
use redoctor_engine::settings;
use redoctor_engine::sweep;
use redoctor_engine::workload::{self, acks, procstat, KeyDist, Mix, RunConfig, WorkloadSpec};
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
    Run(Box<RunArgs>),
    /// Open (and so recover) a data directory; print the recovery report and row counts.
    Recover(RecoverArgs),
    /// Recover a data directory and check that every acknowledged insert survived.
    VerifyAcks(VerifyArgs),
    /// Run a grid of cells (each a fresh `run` process) into one resumable JSON results file.
    Sweep(SweepArgs),
    /// The best configuration of every scenario of a results file, and whether it wins beyond noise.
    Oracle(OracleArgs),
    /// SVG charts and an index.html from a results file.
    Plot(PlotArgs),
    /// Serve the MySQL protocol on a Unix socket (and optionally 127.0.0.1) until SIGTERM/SIGINT.
    Serve(redoctor_engine::server::cli::ServeArgs),
}

#[derive(Args, Debug)]
struct SweepArgs {
    /// The grid (TOML; see engine/sweeps/default.toml).
    #[arg(long)]
    grid: PathBuf,
    /// The results file (JSON), rewritten after every cell.
    #[arg(long)]
    out: PathBuf,
    /// Continue an interrupted sweep of the same grid: cells already in --out are not run again.
    #[arg(long)]
    resume: bool,
    /// Where the cells' fresh data directories are made (and removed); the system temp dir if absent.
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// Stop after this many cells (resume later with --resume).
    #[arg(long)]
    max_cells: Option<usize>,
    /// Check the grid and the settings, print the cell count, and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct OracleArgs {
    /// A results file written by `sweep`.
    results: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// A results file written by `sweep`.
    results: PathBuf,
    /// Directory for the SVG files and index.html (created if needed).
    #[arg(long)]
    out: PathBuf,
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
    /// Workload: point_select, update_index, update_non_index, insert, read_write (oltp_rw),
    /// read_write_plus (oltp_rw+), read_write_plus_plus (oltp_rw++), tpcc, or
    /// mix:STATEMENT=COUNT,... (e.g. mix:point_select=10,update_index=1,insert=1).
    #[arg(long, short = 'w', required_unless_present_any = ["mix_file", "check_settings"])]
    workload: Option<WorkloadSpec>,
    /// A custom statement mix from a file (`statement=count` per line or comma-separated, `#` comments).
    #[arg(long, conflicts_with = "workload")]
    mix_file: Option<PathBuf>,
    /// Key access: uniform, zipf[:EXPONENT] (default 0.8) or pareto[:H] (default 0.2), as sysbench's --rand-type.
    #[arg(long, default_value = "uniform")]
    access: KeyDist,
    /// TPCC-lite warehouses.
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// Set a server variable before the run, `name=value` (repeatable), e.g.
    /// innodb_log_writer_threads=OFF or innodb_flush_log_at_trx_commit=2.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_setting)]
    set: Vec<(String, String)>,
    /// Open a fresh engine, apply --set, and exit without running anything (checks the settings).
    #[arg(long)]
    check_settings: bool,
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
    /// Print the throughput of every interval of this many seconds of the
    /// measured window to stderr (sysbench's --report-interval); one JSON
    /// object per line with --json.
    #[arg(long, value_parser = parse_secs)]
    report_interval: Option<Duration>,
    /// Serve the MySQL protocol on this Unix socket (mode 0600) while the
    /// workload runs (warm-up and measured window), on the same engine, for
    /// live changes: SET GLOBAL, SHOW GLOBAL VARIABLES / STATUS, SELECT
    /// @@name. Its connection threads are named admin/N, not user threads.
    /// The socket file is removed when the run ends.
    #[arg(long, value_name = "PATH", conflicts_with = "check_settings")]
    admin_socket: Option<PathBuf>,
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
        Command::Run(a) => cmd_run(*a),
        Command::Recover(a) => cmd_recover(a),
        Command::VerifyAcks(a) => cmd_verify_acks(a),
        Command::Sweep(a) => cmd_sweep(a),
        Command::Oracle(a) => cmd_oracle(a),
        Command::Plot(a) => cmd_plot(a),
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
    startup: Vec<(String, String)>,
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
    opts.settings = startup;
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

/// Checks that `--admin-socket` can be listened on, before anything starts.
fn check_admin_socket(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.exists() {
        bail!(
            "--admin-socket {}: the directory {} does not exist; create it or pass a socket path in an existing directory",
            path.display(),
            dir.display()
        );
    }
    if !dir.is_dir() {
        bail!(
            "--admin-socket {}: {} is not a directory; pass a socket path inside a directory",
            path.display(),
            dir.display()
        );
    }
    server::check_socket_path(path).with_context(|| {
        format!(
            "--admin-socket {} cannot be used; pass a path in a directory you can write to, where no server listens",
            path.display()
        )
    })
}

/// The `--admin-socket` server: the MySQL protocol on `engine`, with
/// connection threads named `admin/N` so the probes do not count them as
/// user threads.
fn start_admin_server(engine: &Arc<Engine>, path: &Path) -> Result<server::Server> {
    let mut cfg = server::ServerConfig::new(path);
    cfg.thread_prefix = "admin".into();
    cfg.log_prefix = "redoctor-engine run: admin socket".into();
    cfg.shutdown_grace = Duration::from_secs(1);
    let s = server::Server::start(engine.clone(), cfg)
        .with_context(|| format!("starting the --admin-socket server on {}", path.display()))?;
    eprintln!("admin socket listening on {}", path.display());
    Ok(s)
}

/// `name=value` for `--set`.
fn parse_setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() && !v.trim().is_empty() => {
            Ok((n.trim().to_string(), v.trim().to_string()))
        }
        _ => Err(format!(
            "`{s}` is not NAME=VALUE (e.g. innodb_log_writer_threads=OFF)"
        )),
    }
}

/// The `--set` settings that can only be given at startup (read-only at
/// run time, e.g. `log_bin`): they go into the engine's options. Unknown
/// names are left for [`apply_settings`] to refuse.
fn startup_settings(settings: &[(String, String)]) -> Vec<(String, String)> {
    settings
        .iter()
        .filter(|(name, _)| settings::find(name).is_ok_and(|s| !s.dynamic()))
        .cloned()
        .collect()
}

/// `SET GLOBAL name = value` for each live setting, in order, through the
/// engine's settings registry (validated; a refused value changes nothing
/// and names the allowed range). A startup-only setting was applied when
/// the engine opened: here it is only checked.
fn apply_settings(engine: &Engine, settings: &[(String, String)]) -> Result<()> {
    for (name, value) in settings {
        let s = settings::find(name).map_err(|_| {
            let known: Vec<&str> = settings::SETTINGS.iter().map(|s| s.name).collect();
            anyhow::anyhow!(
                "unknown setting `{name}`: this engine knows {}",
                known.join(", ")
            )
        })?;
        if s.dynamic() {
            engine
                .set_global(name, value)
                .with_context(|| format!("--set {name}={value}"))?;
        } else {
            let want = s.parse(value)?.to_string();
            let have = engine.variable(name)?.value;
            if want != have {
                bail!("--set {name}={value}: the engine opened with {name}={have}; it can only be set at startup");
            }
        }
    }
    Ok(())
}

/// The workload from `--workload` or `--mix-file`.
fn workload_spec(a: &RunArgs) -> Result<WorkloadSpec> {
    if let Some(spec) = &a.workload {
        return Ok(spec.clone());
    }
    let path = a
        .mix_file
        .as_ref()
        .context("give --workload or --mix-file")?;
    let text = fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read the mix file {}; pass a readable file",
            path.display()
        )
    })?;
    let mix =
        Mix::parse(&text).with_context(|| format!("{} is not a statement mix", path.display()))?;
    Ok(WorkloadSpec::custom(mix))
}

fn cmd_run(a: RunArgs) -> Result<ExitCode> {
    // Before the engine starts any thread, so that every thread inherits the mask.
    if let Some(k) = a.cpus {
        let chosen = procstat::pin_to_first_cpus(k).with_context(|| {
            format!("--cpus {k} is not possible; pass a count from 1 to the number of CPUs this process may use")
        })?;
        eprintln!("pinned to CPUs {}", procstat::cpu_list(&chosen));
    }
    if let Some(p) = &a.admin_socket {
        check_admin_socket(p)?;
    }
    ensure_writable_dir(&a.engine.datadir)?;
    let mut redo = RedoOptions::default();
    if let Some(mode) = a.redo_threads {
        redo.mode = mode.into();
    }
    if let Some(f) = a.flush_at_commit {
        redo.flush_at_commit = f;
    }
    let startup = startup_settings(&a.set);
    if a.check_settings {
        let engine = open_engine(&a.engine, redo, a.lock_wait_timeout, startup)?;
        let applied = apply_settings(&engine, &a.set);
        engine.shutdown().context("the clean shutdown failed")?;
        applied?;
        if a.json {
            let settings: BTreeMap<&str, &str> = a
                .set
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            println!("{}", serde_json::json!({ "settings_ok": settings }));
        } else {
            eprintln!("settings ok");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let spec = workload_spec(&a)?;
    let cfg = RunConfig {
        access: a.access,
        warehouses: a.warehouses,
        users: a.users,
        duration: a.duration,
        warmup: a.warmup,
        tables: a.tables,
        table_size: a.table_size,
        ack_file: a.ack_file.clone(),
        switch_every: a.switch_every_ms.map(Duration::from_millis),
        seed: a.seed,
        report_interval: a.report_interval,
        ..RunConfig::for_spec(spec)
    };
    cfg.validate().context(
        "check --workload, --users, --duration, --tables, --table-size, --warehouses, --ack-file and --switch-every-ms",
    )?;

    let opened = Instant::now();
    let engine = open_engine(&a.engine, redo, a.lock_wait_timeout, startup)?;
    eprintln!(
        "opened {} in {:.2} s; recovery: {}",
        a.engine.datadir.display(),
        opened.elapsed().as_secs_f64(),
        serde_json::to_string(engine.recovery_report())
            .context("serialising the recovery report")?
    );

    let outcome = prepare_and_run(&engine, cfg, &a.set, a.json, a.admin_socket.as_deref()).map(
        |mut report| {
            report.settings = a.set.iter().cloned().collect();
            report
        },
    );
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

/// Loads the tables, applies `settings`, runs. The settings come after the
/// load so that the load (not measured) runs the same way for every
/// configuration. With `admin_socket`, the MySQL protocol is served on the
/// engine from just before the warm-up until the workload ends.
fn prepare_and_run(
    engine: &Arc<Engine>,
    cfg: RunConfig,
    settings: &[(String, String)],
    json: bool,
    admin_socket: Option<&Path>,
) -> Result<workload::RunReport> {
    let started = Instant::now();
    workload::prepare(engine, &cfg).context("preparing the workload's tables")?;
    eprintln!("prepared in {:.2} s", started.elapsed().as_secs_f64());
    apply_settings(engine, settings).context("--set")?;
    let status = engine.status();
    eprintln!(
        "running {} with {} users: {:.1} s warm-up + {:.1} s measured, redo log threads {}, flush_at_commit {}{}",
        cfg.spec(),
        cfg.users,
        cfg.warmup.as_secs_f64(),
        cfg.duration.as_secs_f64(),
        status.redo_mode,
        status.flush_at_commit,
        cfg.switch_every
            .map(|d| format!(", switching every {} ms", d.as_millis()))
            .unwrap_or_default()
    );
    let mut report = |r: &workload::IntervalReport| match serde_json::to_string(r) {
        Ok(line) if json => eprintln!("{line}"),
        _ => eprintln!("{r}"),
    };
    let admin = admin_socket
        .map(|p| start_admin_server(engine, p))
        .transpose()?;
    let outcome =
        workload::run_with_reports(engine, cfg, &mut report).context("running the workload");
    if let Some(s) = admin {
        s.stop_serving();
        eprintln!("admin socket closed");
    }
    outcome
}

fn cmd_sweep(a: SweepArgs) -> Result<ExitCode> {
    let grid = sweep::Grid::load(&a.grid)?;
    let bin = std::env::current_exe().context("cannot find this program's own path")?;
    let workdir = a.workdir.clone().unwrap_or_else(std::env::temp_dir);
    let runner = sweep::CellRunner::new(bin, workdir);
    let cells = grid.cells().len();
    let per_cell = grid.run.warmup_secs + grid.run.duration_secs;
    if a.dry_run {
        sweep::preflight(&grid, &runner)?;
        println!(
            "grid ok: {} scenarios x {} configurations x {} repeats = {cells} cells; \
             at least {:.0} s of warm-up + measurement ({:.1} s per cell) plus process start and load",
            grid.scenarios().len(),
            grid.configurations.len(),
            grid.run.repeats,
            cells as f64 * per_cell,
            per_cell
        );
        return Ok(ExitCode::SUCCESS);
    }
    let opts = sweep::SweepOptions {
        out: a.out.clone(),
        resume: a.resume,
        max_cells: a.max_cells,
        progress: !a.quiet,
        command: Some(
            std::env::args()
                .enumerate()
                .map(|(i, arg)| {
                    if i == 0 {
                        "redoctor-engine".to_string()
                    } else {
                        arg
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
    };
    eprintln!(
        "sweep of {cells} cells ({:.2} s of warm-up + measurement each, plus process start and load); \
         checking the settings first",
        per_cell
    );
    let started = Instant::now();
    let summary = sweep::run_sweep(&grid, &runner, &opts)?;
    eprintln!(
        "ran {} cells in {:.0} s ({} failed, {} done earlier, {} in the grid); results in {}",
        summary.executed.len(),
        started.elapsed().as_secs_f64(),
        summary.failed,
        summary.already_done,
        summary.total,
        a.out.display()
    );
    if !summary.complete() {
        eprintln!("the sweep is not complete: run the same command with --resume to finish it");
    }
    Ok(if summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn cmd_oracle(a: OracleArgs) -> Result<ExitCode> {
    let results = sweep::SweepResults::load(&a.results)?;
    let report = sweep::oracle(&results);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).context("serialising the oracle")?
        );
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_plot(a: PlotArgs) -> Result<ExitCode> {
    let results = sweep::SweepResults::load(&a.results)?;
    let files = sweep::plot(&results, &a.out)?;
    println!(
        "wrote {} charts, {} heatmaps and {}",
        files.charts.len(),
        files.heatmaps.len(),
        files.index.display()
    );
    Ok(ExitCode::SUCCESS)
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
    let engine = open_engine(&a.engine, RedoOptions::default(), None, vec![])?;
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
    let engine = open_engine(&a.engine, RedoOptions::default(), None, vec![])?;
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
