//! `redoctor agent`: the daemon on DB hosts. `AGENT.md` is the user guide.
//!
//! - `redoctor agent --config FILE` runs it (tokio: the metrics endpoint,
//!   signals, the status file; one thread per target, see [`worker`]).
//! - `redoctor agent --check-config FILE` validates a file and exits.
//! - `redoctor agent status [--json]` prints each target's state.
//!
//! SIGHUP reloads the config (an invalid file is reported and the running
//! one kept); SIGTERM or SIGINT stops every target (a trial in progress is
//! rolled back), detaches every probe and exits 0.

use redoctor_args::tell;
mod audit;
mod config;
mod external;
mod fsyncs;
mod guardrails;
mod journal;
mod logging;
mod lost_trials;
mod metrics;
mod phase;
mod reconcile;
mod sample_budget;
mod status;
mod worker;

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use redoctor_advisor::RuleSet;
use serde_json::json;

use audit::Audit;
use config::{Config, Target};
use metrics::Metrics;
use status::{Status, TargetStatus};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AgentArgs {
    #[command(subcommand)]
    cmd: Option<AgentCmd>,
    /// Run the agent with this configuration file (TOML; see AGENT.md).
    #[arg(long, value_name = "FILE", required_unless_present_any = ["check_config"])]
    config: Option<PathBuf>,
    /// Validate a configuration file and exit (0 valid; 1 with the key and line at fault).
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    check_config: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum AgentCmd {
    /// Each target's state, current advice and last trials (from the running agent's status file).
    Status(StatusArgs),
}

#[derive(Args, Debug)]
struct StatusArgs {
    /// The agent's configuration file (its state_dir holds the status).
    #[arg(long, value_name = "FILE", conflicts_with = "state_dir")]
    config: Option<PathBuf>,
    /// The agent's state directory (default: the config's default, /var/lib/redoctor).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Print the status as JSON.
    #[arg(long)]
    json: bool,
}

/// What every target thread shares; rebuilt on reload (audit, metrics and
/// the status map carry over).
pub struct Shared {
    pub audit: Arc<Audit>,
    /// Factor on `sampling.every`, raised while the agent's CPU is over budget.
    pub backoff: Arc<AtomicU32>,
    pub metrics: Arc<Metrics>,
    pub status: Arc<Mutex<BTreeMap<String, TargetStatus>>>,
    pub rules: RuleSet,
    pub calibration: Option<PathBuf>,
    pub state_dir: PathBuf,
    pub config: Config,
}

impl Shared {
    pub fn trial_plan(&self, t: &Target) -> redoctor_advisor::experiment::Plan {
        self.config.trial_plan(t)
    }
}

pub fn run(args: AgentArgs) -> Result<ExitCode> {
    if let Some(AgentCmd::Status(s)) = args.cmd {
        return status_cmd(s);
    }
    if let Some(p) = args.check_config {
        let c = Config::load(&p)?;
        let rules = RuleSet::shipped_and(&c.agent.rules).context("loading the rules")?;
        drop(rules);
        tell!(
            "{}: valid; {} target(s): {}",
            p.display(),
            c.targets.len(),
            c.targets
                .iter()
                .map(|t| format!("{} ({:?})", t.get_ref().name, t.get_ref().mode).to_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }
    let path = args.config.expect("clap requires --config");
    run_agent(&path)
}

fn status_cmd(s: StatusArgs) -> Result<ExitCode> {
    let dir = match (&s.config, &s.state_dir) {
        (Some(c), _) => Config::load(c)?.agent.state_dir,
        (None, Some(d)) => d.clone(),
        (None, None) => config::AgentSection::default().state_dir,
    };
    let st = status::read(&dir)?;
    let running = crate::find::alive(st.agent_pid)
        && journal::now_ms().saturating_sub(st.updated_unix_ms) < 10_000;
    if s.json {
        let mut v = serde_json::to_value(&st)?;
        v["running"] = json!(running);
        tell!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        crate::reached_reader(status::print(&mut std::io::stdout().lock(), &st, running))
            .context("printing the status")?;
    }
    Ok(if running {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// Holds `state_dir/agent.lock` (flock) for the agent's life: one agent per state dir.
fn lock(dir: &Path) -> Result<std::fs::File> {
    let p = dir.join("agent.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .with_context(|| format!("opening {}", p.display()))?;
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        bail!(
            "another agent is running with state_dir {} (it holds {}): stop it, or give this one another state_dir",
            dir.display(),
            p.display()
        );
    }
    Ok(f)
}

fn shared_from(c: Config, keep: Option<&Shared>) -> Result<Shared> {
    let rules = RuleSet::shipped_and(&c.agent.rules).context("loading the rules")?;
    let (audit, metrics, status, backoff) = match keep {
        Some(s) => (
            s.audit.clone(),
            s.metrics.clone(),
            s.status.clone(),
            s.backoff.clone(),
        ),
        None => (
            Arc::new(Audit::open(
                &c.agent.state_dir,
                (c.agent.audit.rotate_mib * 1048576.0) as u64,
                c.agent.audit.keep,
            )?),
            Arc::new(Metrics::default()),
            Arc::new(Mutex::new(BTreeMap::new())),
            Arc::new(AtomicU32::new(1)),
        ),
    };
    Ok(Shared {
        audit,
        backoff,
        metrics,
        status,
        rules,
        calibration: c.agent.calibration.clone(),
        state_dir: c.agent.state_dir.clone(),
        config: c,
    })
}

fn run_agent(path: &Path) -> Result<ExitCode> {
    let c = Config::load(path)?;
    logging::init(&c.agent.log)?;
    redoctor_probes::preflight::check_privileges()
        .context("the agent attaches eBPF probes (run it as root, or with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE, plus CAP_SYS_RESOURCE on kernels before 5.11, as the systemd unit grants)")?;
    if let Some(p) = &c.agent.calibration {
        crate::calibrate::model(crate::calibrate::ModelSource::File(p))?;
    }
    std::fs::create_dir_all(&c.agent.state_dir).with_context(|| {
        format!(
            "creating the state directory {}",
            c.agent.state_dir.display()
        )
    })?;
    let _lock = lock(&c.agent.state_dir)?;
    let shared = Arc::new(shared_from(c, None)?);
    shared.audit.log(
        "-",
        "agent_started",
        json!({"pid": std::process::id(), "config": path.display().to_string(),
               "version": env!("CARGO_PKG_VERSION")}),
    );
    tracing::info!(
        "audit log {}, status in {}",
        shared.audit.path().display(),
        shared.state_dir.display()
    );
    reconcile::at_start(&shared.state_dir, &shared);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(4)
        .thread_name("redoctor-agent")
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let code = rt.block_on(supervise(path.to_path_buf(), shared));
    // Dropping the runtime would wait, without limit, for a target thread
    // that `halt` gave up on; the kernel detaches its probes at exit.
    rt.shutdown_timeout(Duration::from_millis(200));
    code
}

struct Running {
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

fn start(shared: &Arc<Shared>) -> Result<Running> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for t in &shared.config.targets {
        let t = t.get_ref().clone();
        let (shared, stop) = (shared.clone(), stop.clone());
        let name = t.name.clone();
        let h = std::thread::Builder::new()
            .name(format!("target {name}"))
            .spawn(move || match worker::Worker::new(t, shared.clone(), stop) {
                Ok(w) => w.run(),
                Err(e) => {
                    tracing::warn!("{name}: not started: {e:#}");
                    shared
                        .audit
                        .log(&name, "error", json!({"error": format!("{e:#}")}));
                }
            })
            .context("starting a target thread")?;
        handles.push(h);
    }
    Ok(Running { stop, handles })
}

/// Stops the target threads (each rolls back a trial in progress) within `limit`.
async fn halt(r: Running, limit: Duration) {
    r.stop.store(true, Ordering::Relaxed);
    let join = tokio::task::spawn_blocking(move || {
        for h in r.handles {
            let _ = h.join();
        }
    });
    if tokio::time::timeout(limit, join).await.is_err() {
        tracing::warn!("a target thread did not stop in time");
    }
}

fn write_status(shared: &Shared, config: &Path) {
    let targets = {
        let all = shared.status.lock().unwrap_or_else(|p| p.into_inner());
        shared
            .config
            .targets
            .iter()
            .filter_map(|t| all.get(&t.get_ref().name).cloned())
            .collect()
    };
    let s = Status {
        schema: status::SCHEMA.into(),
        version: status::VERSION,
        agent_pid: std::process::id(),
        updated_unix_ms: journal::now_ms(),
        config: config.display().to_string(),
        metrics: shared.config.agent.metrics.clone(),
        targets,
    };
    if let Err(e) = status::write(&shared.state_dir, &s) {
        tracing::warn!("{e:#}");
    }
}

/// Every `agent.budget.every` (a minute by default): the agent's own CPU
/// and RSS against `agent.budget`.
/// Over the CPU budget, sampling is stretched (doubled, up to 16 times)
/// and relaxed again once well under it; over the RSS budget, it says so.
#[derive(Default)]
struct BudgetWatch {
    last: Option<(std::time::Instant, f64)>,
    over: [bool; 2],
}

impl BudgetWatch {
    fn check(&mut self, shared: &Shared) {
        let m = &shared.metrics;
        let now = std::time::Instant::now();
        let cpu = m.cpu_seconds.get();
        let Some((t0, c0)) = self.last else {
            self.last = Some((now, cpu));
            return;
        };
        let b = &shared.config.agent.budget;
        if now.duration_since(t0) < b.every {
            return;
        }
        self.last = Some((now, cpu));
        let cpu_pct = 100.0 * (cpu - c0) / now.duration_since(t0).as_secs_f64();
        let rss_mib = m.rss_bytes.get() / 1048576.0;
        let next = next_backoff(
            cpu_pct,
            b.cpu_percent,
            shared.backoff.load(Ordering::Relaxed),
        );
        shared.backoff.store(next, Ordering::Relaxed);
        m.sampling_backoff.set(i64::from(next));
        for (i, (name, over, used, limit)) in [
            ("cpu", cpu_pct > b.cpu_percent, cpu_pct, b.cpu_percent),
            ("rss", rss_mib > b.rss_mib, rss_mib, b.rss_mib),
        ]
        .into_iter()
        .enumerate()
        {
            m.over_budget
                .get_or_create(&metrics::Resource {
                    resource: name.into(),
                })
                .set(i64::from(over));
            if over != self.over[i] {
                self.over[i] = over;
                let event = if over { "over_budget" } else { "within_budget" };
                shared.audit.log(
                    "-",
                    event,
                    json!({"resource": name, "used": used, "budget": limit, "sampling_backoff": next}),
                );
                if over {
                    tracing::warn!("{name} {used:.2} is over agent.budget ({limit}); sampling stretched {next}x");
                }
            }
        }
    }
}

/// The sampling backoff after a budget span at `cpu_pct` against `budget`.
fn next_backoff(cpu_pct: f64, budget: f64, backoff: u32) -> u32 {
    if cpu_pct > budget {
        (backoff * 2).min(16)
    } else if cpu_pct < budget / 2.0 {
        (backoff / 2).max(1)
    } else {
        backoff
    }
}

async fn supervise(path: PathBuf, mut shared: Arc<Shared>) -> Result<ExitCode> {
    use tokio::signal::unix::{signal, SignalKind};
    let registry = Arc::new(shared.metrics.registry());
    if shared.config.agent.metrics != "off" {
        let addr = shared
            .config
            .agent
            .metrics
            .parse()
            .expect("checked by the config");
        metrics::serve(addr, registry.clone()).await?;
        tracing::info!("metrics at http://{addr}/metrics");
    }
    let mut hup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut running = start(&shared)?;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut budget = BudgetWatch::default();
    loop {
        tokio::select! {
            _ = tick.tick() => {
                shared.metrics.update_self();
                budget.check(&shared);
                write_status(&shared, &path);
            }
            _ = hup.recv() => {
                match Config::load(&path).map_err(anyhow::Error::from).and_then(|c| {
                    if c.agent.state_dir != shared.config.agent.state_dir
                        || c.agent.metrics != shared.config.agent.metrics {
                        bail!("agent.state_dir and agent.metrics change only on a restart");
                    }
                    shared_from(c, Some(&shared))
                }) {
                    Ok(next) => {
                        halt(running, Duration::from_millis(4500)).await;
                        shared = Arc::new(next);
                        shared.status.lock().unwrap_or_else(|p| p.into_inner()).clear();
                        running = start(&shared)?;
                        shared.audit.log("-", "config_reloaded", json!({"config": path.display().to_string()}));
                        tracing::info!("configuration reloaded");
                    }
                    Err(e) => {
                        shared.audit.log("-", "config_rejected", json!({"error": format!("{e:#}")}));
                        tracing::error!("reload refused, the running configuration stays: {e:#}");
                    }
                }
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    halt(running, Duration::from_millis(4500)).await;
    write_status(&shared, &path);
    shared
        .audit
        .log("-", "agent_stopped", json!({"pid": std::process::id()}));
    tracing::info!("stopped; every probe detached");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::next_backoff;

    #[test]
    fn sampling_stretches_over_the_cpu_budget_and_relaxes_well_under_it() {
        assert_eq!(next_backoff(0.2, 1.0, 1), 1);
        assert_eq!(next_backoff(1.5, 1.0, 1), 2);
        assert_eq!(next_backoff(1.5, 1.0, 16), 16);
        assert_eq!(next_backoff(0.8, 1.0, 4), 4);
        assert_eq!(next_backoff(0.3, 1.0, 4), 2);
    }
}
