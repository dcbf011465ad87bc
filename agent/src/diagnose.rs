//! `redoctor diagnose --pid P | --demo [--duration 10s] [--format text|json|md|html]
//! [--out FILE] [--rules DIR] [--disable ID] [--setting NAME=VALUE]
//! [--socket S [--trial]]`. With `--socket` the current settings are read
//! from the server (SHOW GLOBAL VARIABLES, or SHOW on PostgreSQL) instead
//! of inferred. A PostgreSQL socket (directory) makes `postgresql` the
//! default profile: `--pid` is then the postmaster's.

use redoctor_args::say;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use redoctor_advisor::experiment::Switchback;
use redoctor_advisor::report::{render_with, Format};
use redoctor_advisor::{diagnose, summarize, Facts, RuleSet};
use redoctor_probes::{AttachOptions, Profile};

use crate::admin::Admin;
use crate::demo::{engine_binary, DemoEngine, DemoWorkload};
use redoctor_advisor::default_settings;

/// A bundled-engine replica's applied-transaction counter (SHOW GLOBAL STATUS).
const REPLICA_APPLIED: &str = "Replica_trx_applied";

#[derive(Args, Debug)]
pub struct DiagnoseArgs {
    /// Process id of the database server to diagnose.
    #[arg(long, required_unless_present = "demo", conflicts_with = "demo")]
    pid: Option<u32>,
    /// Start the bundled engine with a default workload in a temporary
    /// directory, diagnose it, and clean up.
    #[arg(long)]
    demo: bool,
    /// How long to observe (default 8s, so a report is out within 10 s; 5s with --demo).
    #[arg(long, value_parser = redoctor_args::positive_duration)]
    duration: Option<Duration>,
    /// Observed and discarded before the measured windows, while the load
    /// settles (default 2s with --demo, whose engine has just started; 0 with --pid).
    #[arg(long, value_parser = redoctor_args::duration)]
    warmup: Option<Duration>,
    /// Window length within the observation (windows feed the trends and charts).
    #[arg(long, default_value = "1s", value_parser = redoctor_args::positive_duration)]
    interval: Duration,
    /// Report format: text, json, md or html.
    #[arg(long, default_value = "text")]
    format: Format,
    /// Also predict every candidate on a host with this many CPUs (where
    /// the RT0/RT1 crossover moves on a bigger or smaller host), with the
    /// same model and load.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    what_if_cpus: Option<u32>,
    /// The whole text report: every rule, the evidence, the model's inputs
    /// and the signal tables (the default text report fits one screen).
    #[arg(long, short = 'v')]
    verbose: bool,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    out: Option<PathBuf>,
    /// An extra rule directory (repeatable; its rules replace shipped ones with the same id).
    #[arg(long = "rules", value_name = "DIR")]
    rules: Vec<PathBuf>,
    /// The decision rule's priors and loss (a TOML file as
    /// `rules/priors/redoctor-engine.toml`; default: the shipped ones).
    #[arg(long, value_name = "FILE")]
    priors: Option<PathBuf>,
    /// Disable a rule by id (repeatable).
    #[arg(long = "disable", value_name = "ID")]
    disable: Vec<String>,
    /// The server's current value of a setting, NAME=VALUE (repeatable); unstated
    /// settings are inferred from the signals (redo threads, binlog) or taken as defaults.
    #[arg(long = "setting", value_name = "NAME=VALUE", value_parser = redoctor_args::setting)]
    settings: Vec<(String, String)>,
    /// Target profile: a shipped name (redoctor-engine, mysql8, mariadb, postgresql) or a TOML file
    /// (default: postgresql with a PostgreSQL --socket, else redoctor-engine).
    #[arg(long)]
    profile: Option<String>,
    /// Try the candidates live (the model's best first, one trial each):
    /// ABBA-paired baseline/candidate windows, kept only if faster beyond
    /// noise (sequential paired t-test), else rolled back; the verdict then
    /// follows the trial. Needs --socket, or --demo (its admin socket).
    #[arg(long)]
    trial: bool,
    /// The server's admin socket, to read its current settings (and, with
    /// --trial, change them): a MySQL socket file, or a PostgreSQL socket
    /// directory (its unix_socket_directories entry) or `.s.PGSQL.PORT` file.
    #[arg(long)]
    socket: Option<PathBuf>,
    /// --trial: most baseline/candidate window pairs per trial (the test looks from pair 3 on).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=50))]
    trial_rounds: u32,
    /// --trial: length of each measured window (default: --interval).
    #[arg(long, value_parser = redoctor_args::positive_duration)]
    trial_window: Option<Duration>,
    /// --trial: how baseline and candidate alternate. `auto`: switchback
    /// periods for knobs whose carryover is known and short (the
    /// bundled engine's), paired windows with a warm-up for the others;
    /// `switchback` or `pairs` for every candidate.
    #[arg(long, value_enum, default_value_t = crate::trial_run::DesignChoice::Auto)]
    trial_design: crate::trial_run::DesignChoice,
    /// --trial: a switchback period (the guard after a switch included),
    /// at least two of the knob's known carryovers.
    #[arg(long, default_value = "50ms", value_parser = redoctor_args::positive_duration)]
    trial_period: Duration,
    /// --trial: the switchback guard discarded after each switch
    /// [default: 10ms, stretched to the knob's measured carryover]. Given,
    /// it is kept as it is, with the period, even below a knob's carryover
    /// (the candidate's label then warns that the estimate may be biased).
    #[arg(long, value_parser = redoctor_args::duration)]
    trial_guard: Option<Duration>,
    /// --trial (switchback): looks of the sequential test, evenly spaced
    /// over the blocks the budget allows. 1 is a fixed-horizon trial: it
    /// runs its whole budget and its estimate carries no early stop's bias
    /// (to measure an effect rather than to decide quickly).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    trial_looks: u32,
    /// --trial (switchback): decide on the blocks adjusted by the disks'
    /// write latency when it is balanced between the sides. Off by
    /// default: a candidate that changes the commit rate changes the disk's
    /// load, and the adjustment then counts part of its effect as noise;
    /// the adjusted test is recorded beside the raw one either way.
    #[arg(long)]
    trial_covariate: bool,
    /// --trial: try exactly this candidate, NAME=VALUE (repeatable: the
    /// settings together are one candidate), instead of the advice's. A
    /// candidate equal to the current settings is an A/A run (the meter
    /// against itself).
    #[arg(long = "candidate", value_name = "NAME=VALUE", value_parser = redoctor_args::setting)]
    candidate: Vec<(String, String)>,
    /// --trial: time bound of all trials together.
    #[arg(long, default_value = "60s", value_parser = redoctor_args::positive_duration)]
    trial_max: Duration,
    /// --trial: abort a trial at once, restoring the baseline, when a
    /// candidate window runs below this share of the baseline's lowest
    /// window (0 turns the guard off).
    #[arg(long, default_value_t = 0.7, value_parser = floor_share)]
    trial_floor: f64,
    /// --trial: judge each window's commits/s by this `SHOW GLOBAL STATUS`
    /// counter, read over --socket, with the probes detached for the trial
    /// (they cost the configurations compared unequally). Default: on a
    /// bundled-engine replica, its applier's Replica_trx_applied; else the
    /// profile's commit_counter (Com_commit for redoctor-engine,
    /// Handler_commit for mariadb and mysql8); postgresql has none, so its
    /// trials count commits with the probes.
    #[arg(long, value_name = "NAME", conflicts_with = "trial_probes")]
    trial_counter: Option<String>,
    /// --trial: judge the windows by the probes' commit count, the probes
    /// attached throughout (the default with the postgresql profile).
    #[arg(long)]
    trial_probes: bool,
    /// Allow durability settings: rules may propose them (PostgreSQL's
    /// synchronous_commit) and --trial may try them. Off, they are never proposed.
    #[arg(long)]
    allow_durability_changes: bool,
    /// --trial: state file recording a kept candidate's old values (as for `redoctor apply`).
    #[arg(long)]
    state: Option<PathBuf>,
    /// User for --socket (default: root for MySQL, postgres for PostgreSQL).
    #[arg(long, default_value = "")]
    user: String,
    /// --demo: the engine binary (default: $REDOCTOR_ENGINE, else redoctor-engine next to redoctor).
    #[arg(long)]
    engine_bin: Option<PathBuf>,
    /// --demo: the workload.
    #[arg(long, default_value = "update_index")]
    workload: String,
    /// --demo: concurrent users.
    #[arg(long, default_value_t = 64)]
    users: u32,
    /// --demo: sbtest tables (the engine's default: 4).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    tables: Option<u32>,
    /// --demo: rows per sbtest table (the engine's default: 10,000); with
    /// --engine-set innodb_buffer_pool_size smaller than the data, an IO-bound load.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    table_size: Option<u64>,
    /// --demo: TPCC-lite warehouses (with `--workload tpcc`; the engine's default: 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    warehouses: Option<u32>,
    /// --demo: key access, as sysbench's --rand-type: uniform (the engine's
    /// default), zipf[:EXPONENT] or pareto[:H] (e.g. pareto:0.2).
    #[arg(long)]
    access: Option<String>,
    /// --demo: bind the engine to this many CPUs.
    #[arg(long)]
    cpus: Option<u32>,
    /// The host's calibration file for the what-if model (default:
    /// calibration-<CPUS>cpu.json in redoctor's state directory, made by
    /// `redoctor calibrate`; `--demo` makes it when missing).
    #[arg(long, conflicts_with = "model_priors")]
    calibration: Option<PathBuf>,
    /// Predict with the model's uncalibrated priors: read and run no calibration.
    #[arg(long)]
    model_priors: bool,
    /// --demo: the directory the engine's data is made in (the storage measured;
    /// default: the system temp dir).
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// --demo: a setting the engine starts with, NAME=VALUE (repeatable), e.g. log_bin=ON.
    #[arg(long = "engine-set", value_name = "NAME=VALUE", value_parser = redoctor_args::setting)]
    engine_set: Vec<(String, String)>,
}

pub fn run(args: DiagnoseArgs) -> Result<std::process::ExitCode> {
    if args.interval.is_zero() {
        bail!("--interval must be above zero (e.g. 1s)");
    }
    let mut rules = RuleSet::shipped_and(&args.rules).context("loading the rules")?;
    for id in &args.disable {
        rules.disable(id)?;
    }
    if let Some(p) = &args.priors {
        rules.priors = redoctor_advisor::decision::Priors::load(p)
            .context("loading the decision rule's priors (--priors)")?;
    }
    // A PostgreSQL socket names the server kind before anything starts.
    let pg_socket = match &args.socket {
        Some(s) => crate::admin::postgres_socket(s)?.is_some(),
        None => false,
    };
    let profile_name = args.profile.clone().unwrap_or_else(|| {
        if pg_socket {
            "postgresql"
        } else {
            "redoctor-engine"
        }
        .to_string()
    });
    let profile = Profile::resolve(&profile_name).context("loading the target profile")?;
    let engine = profile.name.clone();
    // The demo calibrates the host first when it has no calibration yet
    // (before its engine starts, so the two do not share the CPUs).
    // An explicit calibration (or the priors) is read before anything
    // starts, so a bad file fails fast.
    let early_model = if args.demo || args.calibration.is_some() || args.model_priors {
        let cores = args.cpus.unwrap_or_else(crate::calibrate::online_cpus);
        Some(crate::calibrate::model(model_source(
            &args, cores, args.demo,
        )?)?)
    } else {
        None
    };
    let (pid, demo, duration) = if args.demo {
        let duration = args.duration.unwrap_or(Duration::from_secs(5));
        let bin = engine_binary(args.engine_bin.as_deref())?;
        let w = DemoWorkload {
            workload: args.workload.clone(),
            users: args.users,
            warehouses: args.warehouses,
            tables: args.tables,
            table_size: args.table_size,
            access: args.access.clone(),
            cpus: args.cpus,
            settings: args.engine_set.clone(),
            workdir: args.workdir.clone(),
        };
        // Long enough for the observation, a trial and some slack.
        let trial = if args.trial {
            args.trial_max
        } else {
            Duration::ZERO
        };
        let e = DemoEngine::start(&bin, &w, duration + trial + Duration::from_secs(60))?;
        say!(
            "redoctor: demo: {} run --workload {} --users {}{}{} (pid {}) in {}",
            bin.display(),
            w.workload,
            w.users,
            w.warehouses
                .map(|n| format!(" --warehouses {n}"))
                .unwrap_or_default()
                + &w.access
                    .as_deref()
                    .map(|a| format!(" --access {a}"))
                    .unwrap_or_default(),
            w.cpus.map(|c| format!(" --cpus {c}")).unwrap_or_default(),
            e.pid(),
            e.dir().display()
        );
        (e.pid(), Some(e), duration)
    } else {
        let pid = args.pid.expect("clap requires --pid without --demo");
        (pid, None, args.duration.unwrap_or(Duration::from_secs(8)))
    };
    if args.trial && args.socket.is_none() && !args.demo {
        bail!("--trial changes settings live: pass the server's admin socket with --socket (or use --demo)");
    }
    // The demo's engine serves its admin socket: its settings and status
    // counters (buffer pool, doublewrite) are read there, as a server's.
    let socket = match (&args.socket, &demo) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(e)) => Some(e.admin_socket().to_path_buf()),
        _ => None,
    };
    let mut admin = match &socket {
        Some(sock) => Some(Admin::connect(sock, &args.user)?),
        None => None,
    };
    if let (Some(sock), None) = (&socket, &demo) {
        crate::admin::check_served_by(sock, pid, admin.as_mut())?;
    }
    if let Some(a) = &admin {
        if (a.engine() == "postgresql") != (engine == "postgresql") {
            bail!(
                "the server at {} speaks {}'s protocol but the profile is `{engine}`: pass --profile {}",
                a.socket(),
                a.engine(),
                if a.engine() == "postgresql" { "postgresql" } else { "mysql8 (or mariadb)" }
            );
        }
    }
    // How a trial reads commits/s; checked before anything is observed.
    // A replica is judged by its applier's rate: on the bundled engine
    // that is its own counter (its applied transactions are not client
    // statements); MariaDB's Handler_commit counts the applier's commits.
    let applying = admin
        .as_mut()
        .and_then(|a| a.replica_status().ok().flatten())
        .is_some_and(|st| {
            ["Replica_SQL_Running", "Slave_SQL_Running"]
                .iter()
                .any(|k| st.get(*k).cloned().flatten().as_deref() == Some("Yes"))
        });
    let trial_counter = match (&args.trial_counter, args.trial_probes) {
        (Some(name), _) => Some(name.clone()),
        (None, false) if applying && engine == "redoctor-engine" => {
            Some(REPLICA_APPLIED.to_string())
        }
        (None, false) => profile.commit_counter.clone(),
        (None, true) => None,
    };
    if args.trial && applying {
        say!(
            "redoctor: the target is a replica: a trial judges its applier's rate ({})",
            trial_counter.as_deref().unwrap_or("the probes' commits")
        );
    }
    if let (true, Some(name), Some(a)) = (args.trial, &trial_counter, admin.as_mut()) {
        a.status(name).with_context(|| {
            format!(
                "--trial judges commits/s by the status counter {name}: name one the server \
                 has with --trial-counter, or use --trial-probes"
            )
        })?;
    }
    let mut stated = args.settings.clone();
    if let Some(a) = admin.as_mut() {
        if a.engine() != "postgresql" {
            check_profile_matches(a, &engine)?;
        }
        for (k, _) in default_settings(&engine) {
            if !stated.iter().any(|(s, _)| s == k) {
                stated.push((k.to_string(), a.get(k)?));
            }
        }
    }
    let opts = AttachOptions::for_profile(pid, &profile);
    let mut sampler = crate::probe::attach_to(&opts, profile, true)
        .with_context(|| format!("probing pid {pid} with profile `{engine}`"))?;
    for u in sampler.probes().unavailable() {
        if u.what == "usdt" {
            say!("redoctor: DEGRADED MODE: {}", u.why);
        }
    }
    // Background threads only the server's own names tell apart (InnoDB's
    // page cleaner in MariaDB: performance_schema.threads).
    sampler.set_server_threads(match admin.as_mut() {
        Some(a) => a.thread_names(),
        None => Err(crate::admin::NO_ADMIN_FOR_THREAD_NAMES.into()),
    });
    let warmup = args.warmup.unwrap_or(if args.demo {
        DEMO_WARMUP
    } else {
        Duration::ZERO
    });
    if !warmup.is_zero() {
        let w = sampler
            .wait_window(warmup)
            .context("reading the probes' maps")?;
        if w.target_exited {
            bail!("pid {pid} exited during the warm-up");
        }
    }
    // The server's own counters over the same span (buffer pool and
    // doublewrite for MySQL/MariaDB, WAL full-page images for PostgreSQL):
    // the probes' first window starts now, not when they were attached.
    sampler.restart().context("reading the probes' maps")?;
    let counters_before = admin.as_mut().map(crate::server_counters::read);
    let windows = crate::probe::observe(&mut sampler, pid, duration, args.interval)?;
    let counters = match (counters_before, admin.as_mut()) {
        (Some(b), Some(a)) => crate::server_counters::facts(&b, &crate::server_counters::read(a)),
        _ => Default::default(),
    };
    if let Some(e) = &demo {
        for (k, v) in &e.settings {
            if !stated.iter().any(|(s, _)| s == k) {
                stated.push((k.clone(), v.clone()));
            }
        }
    }
    let mut facts = Facts::infer(&engine, &summarize(&windows), &stated);
    facts.allow_durability = args.allow_durability_changes;
    facts.counters = counters;
    let model = match early_model {
        Some(m) => m,
        None => {
            let cores = summarize(&windows).get("cores").copied().unwrap_or(1.0) as u32;
            crate::calibrate::model(model_source(&args, cores, false)?)?
        }
    };
    let mut d = diagnose(pid, windows, facts, &rules, &model)?;
    if let Some(n) = args.what_if_cpus {
        if redoctor_advisor::what_if(&mut d, &model, &rules.priors, n).is_none() {
            say!("redoctor: no what-if for {n} CPUs: the model has no prediction for this observation (see the report's model note)");
        }
    }
    let commits_seen = d.windows.iter().any(|w| w.engine.commits.is_some());
    if args.trial && trial_counter.is_none() && !commits_seen {
        // Judged on commits/s: without a commit counter a trial would
        // change settings it cannot judge.
        let why: Vec<&str> = d
            .windows
            .first()
            .map(|w| w.unavailable.iter().map(|u| u.why.as_str()).collect())
            .unwrap_or_default();
        say!(
            "redoctor: trial not run: the probes see no commit counter on pid {pid} ({}), \
             and a trial is judged on commits/s; nothing was changed",
            if why.is_empty() {
                "no commit probe point fired".to_string()
            } else {
                why.join("; ")
            }
        );
    } else if let (true, Some(a)) = (args.trial, admin.as_mut()) {
        let mut candidates = if args.candidate.is_empty() {
            crate::trial_run::candidates(&d)
        } else {
            let settings: redoctor_advisor::experiment::Settings =
                args.candidate.iter().cloned().collect();
            vec![redoctor_advisor::experiment::Candidate::new(
                format!(
                    "{} (named with --candidate)",
                    redoctor_advisor::experiment::show(&settings)
                ),
                settings,
                0.0,
            )]
        };
        crate::trial_run::assign_designs(
            &mut candidates,
            args.trial_design,
            Switchback {
                period: args.trial_period,
                guard: args.trial_guard.unwrap_or(Switchback::default().guard),
                looks: args.trial_looks as usize,
                covariate: args.trial_covariate,
                ..Default::default()
            },
            args.trial_guard.is_some(),
        );
        if candidates.is_empty() {
            say!("redoctor: no candidate worth a trial");
        } else {
            let state = crate::state::path_or_default(args.state.as_deref())?;
            let plan = crate::trial_run::plan(
                args.trial_rounds as usize,
                args.trial_window.unwrap_or(args.interval),
                args.trial_max,
                args.trial_floor,
            );
            let meter = match trial_counter {
                Some(name) => {
                    drop(sampler);
                    crate::trial_run::Meter::Counter {
                        counter: crate::status_counter::StatusCounter::new(name),
                        pid,
                    }
                }
                None => crate::trial_run::Meter::Probes(&mut sampler),
            };
            say!("redoctor: trial windows measured by {}", meter.describe());
            let t = crate::trial_run::run(
                meter,
                a,
                candidates,
                &plan,
                args.allow_durability_changes,
                &state,
            )?;
            say!("redoctor: trial: {}", t.reason());
            redoctor_advisor::follow_trial(&mut d, t, &rules);
        }
    }
    drop(admin);
    drop(demo);
    let out = render_with(&d, args.format, args.verbose)?;
    match &args.out {
        Some(p) => {
            // Whole or not at all: an interrupted write leaves the old file.
            redoctor_files::write_atomic(p, out.as_bytes())
                .with_context(|| format!("writing the report to {}", p.display()))?;
            say!(
                "redoctor: {}; report written to {}",
                d.verdict.text,
                p.display()
            );
        }
        None => print_report(&out)?,
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Writes the report to stdout. A reader that stops early (`| head`) is
/// not an error: what it asked for was written.
fn print_report(out: &str) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    crate::reached_reader(
        stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush()),
    )
    .context("writing the report to stdout")?;
    Ok(())
}

/// Refuses a server whose kind is not the profile's: MariaDB says so in
/// its `version` variable (`10.11.19-MariaDB-...`); the bundled engine
/// has no `version` variable.
fn check_profile_matches(a: &mut Admin, profile: &str) -> Result<()> {
    let version = a.try_get("version");
    let is_mariadb = version.as_deref().is_some_and(|v| v.contains("MariaDB"));
    let shown = version.as_deref().unwrap_or("none: not MariaDB or MySQL");
    if is_mariadb && profile != "mariadb" {
        bail!(
            "the server at {} is MariaDB (version {shown}) but the profile is `{profile}`: pass --profile mariadb",
            a.socket()
        );
    }
    if !is_mariadb && profile == "mariadb" {
        bail!(
            "the profile is `mariadb` but the server at {} is not MariaDB (version {shown}): pass the socket of the MariaDB server (`SELECT @@socket` on it), or the profile of this server (--profile redoctor-engine for the bundled engine)",
            a.socket()
        );
    }
    Ok(())
}

/// The demo's warm-up: its engine has just started (threads, caches, the
/// spin gate's first CPU reading).
const DEMO_WARMUP: Duration = Duration::from_secs(2);

/// Where the model's constants come from, per the flags.
fn model_source(
    args: &DiagnoseArgs,
    cores: u32,
    demo: bool,
) -> Result<crate::calibrate::ModelSource<'_>> {
    use crate::calibrate::{ModelSource, Options};
    Ok(if args.model_priors {
        ModelSource::Priors
    } else if let Some(p) = &args.calibration {
        ModelSource::File(p)
    } else {
        let auto = if demo {
            Some(Options {
                cpus: cores,
                workdir: args.workdir.clone(),
                duration: Duration::from_secs(2),
                quick: false,
                engine_bin: engine_binary(args.engine_bin.as_deref())?,
            })
        } else {
            None
        };
        ModelSource::Default { cores, auto }
    })
}

/// `--trial-floor`: a share in [0, 1).
fn floor_share(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number: give a share such as 0.7"))?;
    if (0.0..1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{v} is outside [0, 1): a share of the baseline such as 0.7 (0 turns the guard off)"
        ))
    }
}
