//! `redoctor-engine run`: prepare the sbtest tables, run a workload, print
//! its report; optionally serve the MySQL protocol on the same engine while
//! it runs (`--admin-socket`) for live `SET GLOBAL`.

use redoctor_args::say;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use redoctor_engine::Engine;
use redoctor_engine::{find_setting, SETTINGS};
use redoctor_server as server;
use redoctor_workload::{self as workload, procstat, KeyDist, Mix, RunConfig, WorkloadSpec};

use crate::open::{ensure_writable_dir, open_engine, EngineArgs, RedoArgs};

#[derive(Args, Debug)]
pub struct RunArgs {
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
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = redoctor_args::setting)]
    set: Vec<(String, String)>,
    /// Open a fresh engine, apply --set, and exit without running anything (checks the settings).
    #[arg(long)]
    check_settings: bool,
    /// Concurrent user threads.
    #[arg(long, default_value_t = 1)]
    users: usize,
    /// Measured time (`10`, `2.5s`, `500ms`).
    #[arg(long, default_value = "10", value_parser = redoctor_args::duration)]
    duration: Duration,
    /// Unmeasured warm-up before the measured window (`1`, `500ms`).
    #[arg(long, default_value = "1", value_parser = redoctor_args::duration)]
    warmup: Duration,
    /// The redo log's startup options (shared with `serve`).
    #[command(flatten)]
    redo: RedoArgs,
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
    /// Crash-soak journal (any workload): append each transaction's
    /// after-images before its commit and an acknowledgement after it.
    #[arg(long, value_name = "PATH")]
    journal: Option<PathBuf>,
    /// Toggle the redo log threads on/off every M milliseconds during the run.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    switch_every_ms: Option<u64>,
    /// innodb_lock_wait_timeout (`50`, `50s`; engine default if absent).
    #[arg(long, value_parser = redoctor_args::duration)]
    lock_wait_timeout: Option<Duration>,
    /// Seed for the workload's random numbers (random if absent).
    #[arg(long)]
    seed: Option<u64>,
    /// Print the throughput of every interval of this length (`1`, `500ms`) of the
    /// measured window to stderr (sysbench's --report-interval); one JSON
    /// object per line with --json.
    #[arg(long, value_parser = redoctor_args::duration)]
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
/// user threads, and no polling for the next request (an admin client
/// asks once a second; polling would only add CPU to the measured run).
fn start_admin_server(engine: &Arc<Engine>, path: &Path) -> Result<server::Server> {
    let mut cfg = server::ServerConfig::new(path);
    cfg.thread_prefix = "admin".into();
    cfg.log_prefix = "redoctor-engine run: admin socket".into();
    cfg.shutdown_grace = Duration::from_secs(1);
    cfg.net_spin = Duration::ZERO;
    let s = server::Server::start(engine.clone(), cfg)
        .with_context(|| format!("starting the --admin-socket server on {}", path.display()))?;
    say!("admin socket listening on {}", path.display());
    Ok(s)
}

/// The `--set` settings that can only be given at startup (read-only at
/// run time, e.g. `log_bin`): they go into the engine's options. Unknown
/// names are left for [`apply_settings`] to refuse.
pub fn startup_settings(settings: &[(String, String)]) -> Vec<(String, String)> {
    settings
        .iter()
        .filter(|(name, _)| find_setting(name).is_ok_and(|s| !s.dynamic()))
        .cloned()
        .collect()
}

/// `SET GLOBAL name = value` for each live setting, in order, through the
/// engine's settings registry (validated; a refused value changes nothing
/// and names the allowed range). A startup-only setting was applied when
/// the engine opened: here it is only checked.
pub fn apply_settings(engine: &Engine, settings: &[(String, String)]) -> Result<()> {
    for (name, value) in settings {
        let s = find_setting(name).map_err(|_| {
            let known: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
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
            let want = s.parse(value)?;
            let have = (s.get)(engine);
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

pub fn cmd_run(a: RunArgs) -> Result<ExitCode> {
    // Before the engine starts any thread, so that every thread inherits the mask.
    if let Some(k) = a.cpus {
        let chosen = procstat::pin_to_first_cpus(k).with_context(|| {
            format!("--cpus {k} is not possible; pass a count from 1 to the number of CPUs this process may use")
        })?;
        say!("pinned to CPUs {}", procstat::cpu_list(&chosen));
    }
    if let Some(p) = &a.admin_socket {
        check_admin_socket(p)?;
    }
    ensure_writable_dir(&a.engine.datadir)?;
    let redo = a.redo.options();
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
            say!("settings ok");
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
        journal: a.journal.clone(),
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
    say!(
        "opened {} in {:.2} s; recovery: {}",
        a.engine.datadir.display(),
        opened.elapsed().as_secs_f64(),
        serde_json::to_string(engine.recovery_report())
            .context("serialising the recovery report")?
    );
    if engine.recovery_report().dropped_bytes() > 0 {
        say!("{}", engine.recovery_report().tail_summary());
    }

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
    // The first error is the cause; after a fail-stop the shutdown fails
    // with the same cause.
    if let Some(e) = &report.first_error {
        bail!("the run stopped early: {e}");
    }
    shutdown?;
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
    say!("prepared in {:.2} s", started.elapsed().as_secs_f64());
    apply_settings(engine, settings).context("--set")?;
    let status = engine.status();
    say!(
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
        Ok(line) if json => say!("{line}"),
        _ => say!("{r}"),
    };
    let admin = admin_socket
        .map(|p| start_admin_server(engine, p))
        .transpose()?;
    let outcome =
        workload::run_with_reports(engine, cfg, &mut report).context("running the workload");
    if let Some(s) = admin {
        s.stop_serving();
        say!("admin socket closed");
    }
    outcome
}
