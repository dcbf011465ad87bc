//! `redoctor calibrate`: measure this host's commit path and fit the
//! what-if model's constants to it (`redoctor_advisor::model`).
//!
//! Runs the bundled engine under a short plan of loads — update_index at
//! several concurrencies in both redo modes, read_write at a moderate and an
//! oversubscribed concurrency with and without a cap and a throttle — each
//! in a fresh data directory on the storage named by `--workdir`, observed
//! through the probes. The probes give each run's inputs only: their own
//! cost differs between the configurations (RT0 loses more to them than
//! RT1), so each run's outcome, its commits/s, is measured after they are
//! detached, from the engine's commit counter. Every run of one load is
//! paired with the others' probe-free commits/s; the constants are fitted
//! to those pairs and their held-out error measured. The result goes to the host's calibration file,
//! which `redoctor diagnose` reads.

use redoctor_args::{say, tell};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use redoctor_advisor::model::calibration::{default_path, Calibration, HostFacts};
use redoctor_advisor::model::{fit, CalibrationPoint, Config, Inputs, Outcome};
use redoctor_advisor::{summarize, Facts};
use redoctor_probes::{AttachOptions, Profile};

use crate::admin::Admin;
use crate::demo::{engine_binary, DemoEngine, DemoWorkload};
use crate::status_counter::StatusCounter;

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Bind the engine to this many CPUs: the number the database server may
    /// use on this host (default: every online CPU).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub cpus: Option<u32>,
    /// A directory on the storage the database uses: the engine's data is
    /// created (and removed) there, so its fsync is the one measured
    /// (default: the system temporary directory).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Observation per run, after a 1 s warm-up.
    #[arg(long, default_value = "2s", value_parser = redoctor_args::positive_duration)]
    pub duration: Duration,
    /// A shorter plan (update_index in both modes at 1, 16 and 256 users).
    #[arg(long)]
    pub quick: bool,
    /// Where to write the calibration (default: calibration-<CPUS>cpu.json
    /// in redoctor's state directory, $REDOCTOR_STATE_DIR or ~/.local/state/redoctor).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The engine binary (default: $REDOCTOR_ENGINE, else redoctor-engine next to redoctor).
    #[arg(long)]
    pub engine_bin: Option<PathBuf>,
}

/// One run of the plan.
struct Run {
    workload: &'static str,
    users: u32,
    config: Config,
    /// Settings of the load beside the configuration (the binlog, the
    /// flush at commit), the same for every run of the load.
    load: &'static [(&'static str, &'static str)],
}

/// The loads beside the plain ones: the binlog's ordered commit and a
/// commit that waits for no fsync, so that their observations lie inside
/// the calibrated range (`advisor/MODEL.md`, "Out of range").
const BINLOG: &[(&str, &str)] = &[("log_bin", "ON")];
const FLUSH2: &[(&str, &str)] = &[("innodb_flush_log_at_trx_commit", "2")];

fn rt(on: bool) -> Config {
    Config {
        redo_threads: on,
        cap: 0,
        throttle: 0,
    }
}

/// The plan for `cpus` CPUs.
fn plan(cpus: u32, quick: bool) -> Vec<Vec<Run>> {
    let mut loads = Vec::new();
    let levels: &[u32] = if quick {
        &[1, 16, 256]
    } else {
        &[1, 16, 128, 512]
    };
    for &u in levels {
        loads.push(
            [true, false]
                .map(|on| Run {
                    workload: "update_index",
                    users: u,
                    config: rt(on),
                    load: &[],
                })
                .into(),
        );
    }
    if !quick {
        for load in [BINLOG, FLUSH2] {
            for u in [16, 128] {
                loads.push(
                    [true, false]
                        .map(|on| Run {
                            workload: "update_index",
                            users: u,
                            config: rt(on),
                            load,
                        })
                        .into(),
                );
            }
        }
    }
    if !quick {
        for u in [16, 512] {
            let cap = Config {
                redo_threads: false,
                cap: (2 * cpus).max(4),
                throttle: 0,
            };
            let throttle = Config {
                redo_threads: false,
                cap: 0,
                throttle: (8 * cpus).max(16),
            };
            loads.push(
                [rt(true), rt(false), cap, throttle]
                    .map(|config| Run {
                        workload: "read_write",
                        users: u,
                        config,
                        load: &[],
                    })
                    .into(),
            );
        }
    }
    loads
}

/// Online CPUs of this host.
pub fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// What the host is, for the calibration file.
pub fn host_facts(cores: u32, storage: &str, fsync_us: f64) -> HostFacts {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    HostFacts {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpu_model,
        cpus_online: online_cpus(),
        cores,
        storage: storage.to_string(),
        fsync_us,
    }
}

/// One run: what the probes observed, and the commits/s measured without them.
struct Observed {
    inputs: Inputs,
    /// Commits/s from the engine's counter (`Com_commit`) over the same
    /// length of run, after the probes were detached and the load settled.
    outcome_per_s: f64,
}

/// After the probes are detached, before the probe-free window.
const SETTLE: Duration = Duration::from_millis(500);

/// Runs the engine with `run`'s load and configuration, observes it
/// through the probes, then measures its commits/s without them.
fn observe(
    bin: &std::path::Path,
    run: &Run,
    cpus: u32,
    workdir: Option<&std::path::Path>,
    duration: Duration,
) -> Result<Observed> {
    let mut settings: Vec<(String, String)> = run.config.to_settings().into_iter().collect();
    settings.extend(run.load.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let w = DemoWorkload {
        workload: run.workload.into(),
        users: run.users,
        warehouses: None,
        tables: None,
        table_size: None,
        access: None,
        cpus: Some(cpus),
        settings: settings.clone(),
        workdir: workdir.map(PathBuf::from),
    };
    let e = DemoEngine::start(bin, &w, 2 * duration + Duration::from_secs(60))?;
    let profile = Profile::resolve("redoctor-engine").context("loading the engine's profile")?;
    let mut sampler = crate::probe::attach(&AttachOptions::new(e.pid()), profile)?;
    sampler
        .wait_window(Duration::from_secs(1))
        .context("reading the probes' maps")?;
    let windows =
        crate::probe::observe(&mut sampler, e.pid(), duration, Duration::from_millis(500))?;
    drop(sampler);
    std::thread::sleep(SETTLE);
    let mut admin = Admin::connect(e.admin_socket(), "")
        .context("connecting to the calibration engine's admin socket")?;
    let outcome = StatusCounter::new(COMMIT_COUNTER)
        .window(&mut admin, duration, || Ok(()))
        .map_err(|err| anyhow::anyhow!("{err}"))
        .with_context(|| format!("reading {COMMIT_COUNTER} of the calibration engine"))?;
    drop(e);
    let facts = Facts::infer("redoctor-engine", &summarize(&windows), &settings);
    let inputs = Inputs::from_windows(&windows, &facts).with_context(|| {
        format!(
            "{} with {} users ({}) counted no commits",
            run.workload, run.users, run.config
        )
    })?;
    if outcome.commits_per_s <= 0.0 {
        bail!(
            "{} with {} users ({}) committed nothing once the probes were detached",
            run.workload,
            run.users,
            run.config
        );
    }
    Ok(Observed {
        inputs,
        outcome_per_s: outcome.commits_per_s,
    })
}

/// The engine's commit counter (`SHOW GLOBAL STATUS`).
const COMMIT_COUNTER: &str = "Com_commit";

/// One configuration of a load: its merged inputs and its probe-free
/// commits/s over the repeats.
struct Merged {
    label: String,
    inputs: Inputs,
    outcomes: Vec<f64>,
}

impl Merged {
    /// Geometric mean of the probe-free rates.
    fn rate(&self) -> f64 {
        let n = self.outcomes.len().max(1) as f64;
        (self.outcomes.iter().map(|r| r.max(1e-9).ln()).sum::<f64>() / n).exp()
    }
    /// Standard error of the log of [`Merged::rate`] (the repeats' spread).
    fn noise(&self) -> f64 {
        redoctor_stats::log_standard_error(&self.outcomes).unwrap_or(0.0)
    }
}

/// Pairs every run of one load with the others' probe-free rates.
fn points(load_key: &str, load: &[Merged]) -> Vec<CalibrationPoint> {
    load.iter()
        .map(|a| CalibrationPoint {
            label: a.label.clone(),
            load: load_key.to_string(),
            inputs: a.inputs.clone(),
            outcomes: load
                .iter()
                .filter(|b| b.inputs.config != a.inputs.config)
                .map(|b| Outcome {
                    config: b.inputs.config,
                    ratio: b.rate() / a.rate(),
                    noise: Some((a.noise().powi(2) + b.noise().powi(2)).sqrt().max(0.02)),
                })
                .collect(),
        })
        .collect()
}

/// What a calibration runs.
pub struct Options {
    pub cpus: u32,
    pub workdir: Option<PathBuf>,
    pub duration: Duration,
    pub quick: bool,
    pub engine_bin: PathBuf,
}

/// Measures the plan and fits the model; prints progress to stderr.
pub fn calibrate(o: &Options) -> Result<Calibration> {
    if o.cpus > online_cpus() {
        bail!(
            "--cpus {} is more than this host's {} online CPUs",
            o.cpus,
            online_cpus()
        );
    }
    if let Some(d) = &o.workdir {
        if !d.is_dir() {
            bail!(
                "--workdir {} is not a directory: name a directory on the database's storage",
                d.display()
            );
        }
    }
    let loads = plan(o.cpus, o.quick);
    let total: usize = loads.iter().map(Vec::len).sum::<usize>() * REPEATS;
    say!(
        "redoctor: calibrating on {} CPUs: {total} runs of {:.1} s (+1 s warm-up each)",
        o.cpus,
        o.duration.as_secs_f64()
    );
    let mut all = Vec::new();
    let mut fsyncs = Vec::new();
    let mut done = 0;
    for load in &loads {
        // Repeats interleaved (A B A B): drift and disk hiccups hit every run.
        let mut runs: Vec<Vec<Observed>> = (0..load.len()).map(|_| Vec::new()).collect();
        for _ in 0..REPEATS {
            for (k, r) in load.iter().enumerate() {
                done += 1;
                let ob = observe(&o.engine_bin, r, o.cpus, o.workdir.as_deref(), o.duration)?;
                let i = &ob.inputs;
                say!(
                    "  [{done}/{total}] {:<12} {:>4} users {:<16} {:>9.0} commits/s ({:>9.0} probed)  cpu {:>6.1} us/commit  group {:>5.1}  fsync {:>6.0} us",
                    r.workload, r.users, r.config.to_string(), ob.outcome_per_s, i.commits_per_s, i.cpu_us, i.group, i.fsync_us
                );
                if i.fsync_us > 0.0 {
                    fsyncs.push(i.fsync_us);
                }
                runs[k].push(ob);
            }
        }
        let key = format!(
            "{}/{}u{}",
            load[0].workload,
            load[0].users,
            load[0]
                .load
                .iter()
                .map(|(k, v)| format!("/{k}={v}"))
                .collect::<String>()
        );
        let merged: Vec<Merged> = load
            .iter()
            .zip(runs)
            .map(|(r, obs)| {
                let outcomes = obs.iter().map(|o| o.outcome_per_s).collect();
                Merged {
                    label: format!("{key}/{}", r.config),
                    inputs: merge(obs.into_iter().map(|o| o.inputs).collect()),
                    outcomes,
                }
            })
            .collect();
        all.extend(points(&key, &merged));
    }
    say!(
        "redoctor: fitting the model's constants ({} points)",
        all.len()
    );
    let fitted = fit(&all).context("fitting the model to the calibration runs")?;
    fsyncs.sort_by(f64::total_cmp);
    let fsync = fsyncs.get(fsyncs.len() / 2).copied().unwrap_or(0.0);
    let storage = o
        .workdir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .display()
        .to_string();
    Ok(Calibration::new(
        host_facts(o.cpus, &storage, fsync),
        all,
        fitted,
    ))
}

/// Repeats of one run merged: rates and costs averaged (rates in log space),
/// the windows of all repeats kept for the noise.
fn merge(is: Vec<Inputs>) -> Inputs {
    let n = is.len() as f64;
    let mut m = is[0].clone();
    let avg = |f: &dyn Fn(&Inputs) -> f64| is.iter().map(f).sum::<f64>() / n;
    m.commits_per_s = (is
        .iter()
        .map(|i| i.commits_per_s.max(1e-9).ln())
        .sum::<f64>()
        / n)
        .exp();
    m.cpu_us = avg(&|i| i.cpu_us);
    m.log_cpu_us = avg(&|i| i.log_cpu_us);
    m.group = avg(&|i| i.group);
    m.fsync_us = avg(&|i| i.fsync_us);
    m.binlog_fsync_us = avg(&|i| i.binlog_fsync_us);
    m.lock_wait_us = avg(&|i| i.lock_wait_us);
    m.lock_waits = avg(&|i| i.lock_waits);
    m.futex_waits = avg(&|i| i.futex_waits);
    m.commit_wait_us = avg(&|i| i.commit_wait_us);
    m.cpu_share = avg(&|i| i.cpu_share);
    m.users = avg(&|i| i.users);
    // The spread between repeats is the run-to-run noise: keep each
    // repeat's rate as a window so `rate_noise` sees it.
    m.window_rates = is.iter().map(|i| i.commits_per_s).collect();
    m
}

/// Interleaved repeats of every run of the plan.
pub const REPEATS: usize = 2;

pub fn run(args: CalibrateArgs) -> Result<std::process::ExitCode> {
    let cpus = args.cpus.unwrap_or_else(online_cpus);
    let out = match &args.out {
        Some(p) => p.clone(),
        None => default_path(cpus)
            .context("no state directory: set $REDOCTOR_STATE_DIR or $HOME, or pass --out FILE")?,
    };
    let c = calibrate(&Options {
        cpus,
        workdir: args.workdir.clone(),
        duration: args.duration,
        quick: args.quick,
        engine_bin: engine_binary(args.engine_bin.as_deref())?,
    })?;
    c.save(&out)
        .with_context(|| format!("writing the calibration to {}", out.display()))?;
    print_summary(&c);
    say!("redoctor: calibration written to {}", out.display());
    Ok(std::process::ExitCode::SUCCESS)
}

fn print_summary(c: &Calibration) {
    let f = &c.fitted;
    tell!(
        "calibration: {} points, held-out error {:.1}% (in-sample {:.1}%)",
        f.points,
        (f.sigma.exp() - 1.0) * 100.0,
        (f.in_sample_rms.exp() - 1.0) * 100.0
    );
    let v = f.params.to_vec();
    for ((name, _, _, _, unit, meaning), x) in
        redoctor_advisor::model::mechanics::PARAMS.iter().zip(v)
    {
        tell!("  {name:<20} {x:>10.3} {unit:<10} {meaning}");
    }
    tell!("  measured vs predicted (held out):");
    for r in &f.residuals {
        tell!(
            "    {:<32} -> {:<16} measured {:>6.3}  fitted {:>6.3}  held-out {}",
            r.label,
            r.to.to_string(),
            r.measured,
            r.fitted,
            r.held_out.map_or("-".into(), |h| format!("{h:.3}"))
        );
    }
}

/// Where the model's constants come from for a diagnosis.
pub enum ModelSource<'a> {
    /// The uncalibrated priors (`--model-priors`).
    Priors,
    /// A named calibration file (`--calibration FILE`): it must exist.
    File(&'a std::path::Path),
    /// The host's default calibration for `cores` CPUs; when missing, run
    /// `auto` (the demo calibrates itself) or fall back to the priors with
    /// a warning.
    Default { cores: u32, auto: Option<Options> },
}

/// Reads the calibration at `path` (`what` names it in errors, `fix` says
/// what to do when it cannot be read) and refits it when its constants were fitted under another
/// revision of the mechanics (its measured points are kept for this); with
/// the revision they were fitted under when it did.
fn load_current(
    path: &std::path::Path,
    what: &str,
    fix: &str,
) -> Result<(Calibration, Option<u32>)> {
    let mut c = Calibration::load(path)
        .with_context(|| format!("reading {what} {} ({fix})", path.display()))?;
    let was = c.refit_if_stale().with_context(|| {
        format!(
            "refitting {what} {}, fitted under an older model, from its points ({fix})",
            path.display()
        )
    })?;
    Ok((c, was))
}

/// The model a diagnosis predicts with.
pub fn model(src: ModelSource) -> Result<redoctor_advisor::model::Model> {
    use redoctor_advisor::model::Model;
    match src {
        ModelSource::Priors => Ok(Model::uncalibrated()),
        ModelSource::File(p) => {
            let (c, refitted) = load_current(
                p,
                "the calibration",
                "make one with `redoctor calibrate --out FILE`",
            )?;
            if let Some(was) = refitted {
                say!(
                    "redoctor: the calibration {} was fitted under the model's mechanics revision {was}: refitted from its {} points under revision {} for this run (the file is left as it is; `redoctor calibrate --out FILE` measures again)",
                    p.display(),
                    c.points.len(),
                    c.fitted.mechanics
                );
            }
            Ok(Model::from_calibration(&c, p))
        }
        ModelSource::Default { cores, auto } => {
            let Some(p) = default_path(cores) else {
                say!("redoctor: warning: no state directory ($REDOCTOR_STATE_DIR, $HOME): predicting with the model's uncalibrated priors");
                return Ok(Model::uncalibrated());
            };
            if p.exists() {
                let (c, refitted) = load_current(
                    &p,
                    "the host's calibration",
                    &format!("run `redoctor calibrate --cpus {cores}` again to replace it"),
                )?;
                if let Some(was) = refitted {
                    c.save(&p).with_context(|| {
                        format!("writing the refitted calibration to {}", p.display())
                    })?;
                    say!(
                        "redoctor: the host's calibration {} was fitted under the model's mechanics revision {was}: refitted from its {} points under revision {} and saved",
                        p.display(),
                        c.points.len(),
                        c.fitted.mechanics
                    );
                }
                return Ok(Model::from_calibration(&c, &p));
            }
            match auto {
                Some(o) => {
                    say!(
                        "redoctor: no calibration for {cores} CPUs at {}: calibrating this host first",
                        p.display()
                    );
                    let c = calibrate(&o)?;
                    c.save(&p)
                        .with_context(|| format!("writing the calibration to {}", p.display()))?;
                    say!(
                        "redoctor: calibration written to {} (held-out error {:.1}%)",
                        p.display(),
                        (c.fitted.sigma.exp() - 1.0) * 100.0
                    );
                    Ok(Model::from_calibration(&c, &p))
                }
                None => {
                    say!(
                        "redoctor: warning: no calibration for {cores} CPUs at {}: run `redoctor calibrate --cpus {cores} --workdir DIR` (DIR on the database's storage); predicting with the model's uncalibrated priors (wide intervals)",
                        p.display()
                    );
                    Ok(Model::uncalibrated())
                }
            }
        }
    }
}
