//! One run of a scenario: start the target, find its pid, load it, watch
//! it through the probes, stop it, and return its metrics.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use redoctor_advisor::gate::metrics;
use redoctor_probes::{AttachOptions, Profile};

use super::scenario::{CommandTarget, EngineTarget, PidFrom, Scenario};

/// What one run measured and the command that ran it.
pub struct RunResult {
    pub metrics: BTreeMap<String, f64>,
    pub command: String,
}

/// A child process killed (and reaped) on drop.
struct Guard(Option<Child>);

impl Guard {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("a started child")
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            if matches!(c.try_wait(), Ok(None)) {
                // SIGTERM first: servers shut down cleanly and remove sockets.
                unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
                let t = Instant::now();
                while t.elapsed() < Duration::from_secs(10) {
                    if !matches!(c.try_wait(), Ok(None)) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// Runs the scenario once with `bin` as the binary under test.
pub fn run_once(s: &Scenario, bin: &Path) -> Result<RunResult> {
    match (&s.engine, &s.command) {
        (Some(e), _) => run_engine(s, e, bin),
        (None, Some(c)) => run_command(s, c, bin),
        (None, None) => bail!("the scenario names nothing to run"),
    }
}

fn shell_words(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The bundled engine: `BIN run --json` for warm-up + duration + 1 s (so
/// its measured window covers the observation), watched from the moment
/// its user threads exist.
fn run_engine(s: &Scenario, e: &EngineTarget, bin: &Path) -> Result<RunResult> {
    let mut b = tempfile::Builder::new();
    b.prefix("redoctor-gate-");
    let dir = match &e.workdir {
        Some(d) => b.tempdir_in(d),
        None => b.tempdir(),
    }
    .context("creating the run's data directory; set [engine] workdir to a writable directory")?;
    let mut cmd = Command::new(bin);
    cmd.arg("run")
        .arg("--json")
        .args(["--workload", &e.workload, "--users", &e.users.to_string()])
        .arg("--warmup")
        .arg(format!("{}ms", s.warmup.as_millis()))
        .arg("--duration")
        .arg(format!(
            "{}ms",
            (s.duration + Duration::from_secs(1)).as_millis()
        ));
    if let Some(c) = e.cpus {
        cmd.args(["--cpus", &c.to_string()]);
    }
    if let Some(t) = e.tables {
        cmd.args(["--tables", &t.to_string()]);
    }
    if let Some(t) = e.table_size {
        cmd.args(["--table-size", &t.to_string()]);
    }
    for (k, v) in &e.settings {
        cmd.arg("--set").arg(format!("{k}={v}"));
    }
    let shown = shell_words(&cmd);
    cmd.arg("--datadir")
        .arg(dir.path().join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut g = Guard(Some(child));
    let pid = g.child().id();
    wait_until(g.child(), Duration::from_secs(120), || {
        redoctor_probes::procfs::threads(pid)
            .is_ok_and(|t| t.values().any(|c| c.starts_with("user/")))
    })
    .context("the engine's user threads did not start")?;
    let started = std::time::Instant::now();
    let profile = Profile::builtin("redoctor-engine").context("the engine's profile")?;
    let windows = watch(pid, profile, s, started)?;
    // The engine ends by itself after its measured window; read its report.
    let child = g.0.take().expect("started");
    let out = child
        .wait_with_output()
        .context("waiting for the engine's report")?;
    if !out.status.success() {
        bail!(
            "the engine failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("the engine's --json report is not JSON")?;
    let p95 = report["latency_us"]["p95_us"].as_f64();
    let metrics = metrics::of_run(&windows, p95)
        .context("the probes saw no commit from the engine (are its probe points attached?)")?;
    Ok(RunResult {
        metrics,
        command: shown,
    })
}

/// Any command: start it (if asked), find the pid, start the load, watch.
fn run_command(s: &Scenario, c: &CommandTarget, bin: &Path) -> Result<RunResult> {
    let bin_s = bin.display().to_string();
    let mut target = Guard(None);
    let mut shown = Vec::new();
    if let Some(run) = &c.run {
        let line = run.replace("{bin}", &bin_s);
        shown.push(line.clone());
        let child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {line}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting `{line}`"))?;
        target.0 = Some(child);
    }
    let pid = find_pid(c, &mut target)?;
    let profile = Profile::resolve(&c.profile)
        .with_context(|| format!("the probes' profile `{}`", c.profile))?;
    let mut load = Guard(None);
    if let Some(l) = &c.load {
        let line = l.replace("{bin}", &bin_s);
        shown.push(line.clone());
        load.0 = Some(
            Command::new("sh")
                .arg("-c")
                .arg(format!("exec {line}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("starting the load `{line}`"))?,
        );
    }
    let watched = watch(pid, profile, s, std::time::Instant::now());
    drop(load);
    if let Err(e) = watched {
        // A command that died: say why in its own words.
        if let Some(child) = target.0.as_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut out) = child.stderr.take() {
                    let _ = out.read_to_string(&mut err);
                }
                bail!(
                    "the command exited while watched ({status}): {}",
                    err.trim()
                );
            }
        }
        return Err(e);
    }
    let windows = watched.expect("checked");
    drop(target);
    let metrics = metrics::of_run(&windows, None).with_context(|| {
        format!(
            "the probes saw no commit of pid {pid}: per-commit metrics need the target's commit count (profile `{}` has no commit probe point it could attach)",
            c.profile
        )
    })?;
    Ok(RunResult {
        metrics,
        command: shown.join(" & "),
    })
}

fn find_pid(c: &CommandTarget, target: &mut Guard) -> Result<u32> {
    let deadline = Instant::now() + c.ready_timeout;
    loop {
        if let Some(child) = target.0.as_mut() {
            if let Some(status) = child.try_wait()? {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                bail!(
                    "the command exited before it was watched ({status}): {}",
                    err.trim()
                );
            }
        }
        let found = match &c.pid {
            PidFrom::Command => target.0.as_ref().map(|c| c.id()),
            PidFrom::Pidfile(p) => crate::find::read_pidfile(p),
            PidFrom::Process(name) => crate::find::newest_process(name),
        };
        if let Some(pid) = found {
            return Ok(pid);
        }
        if Instant::now() > deadline {
            let what = match &c.pid {
                PidFrom::Command => "the command".to_string(),
                PidFrom::Pidfile(p) => format!("a live pid in {}", p.display()),
                PidFrom::Process(n) => format!("a process named {n}"),
            };
            bail!(
                "{what} did not appear within {:?}; check the scenario's [command] (or raise ready_timeout)",
                c.ready_timeout
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// When `child` has exited: its status and what it wrote to stderr.
fn exited(child: &mut Child) -> Option<String> {
    let status = child.try_wait().ok()??;
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    Some(format!("({status}): {}", err.trim()))
}

/// Polls `ready` until true; fails when `child` exits first or on timeout.
fn wait_until(child: &mut Child, timeout: Duration, ready: impl Fn() -> bool) -> Result<()> {
    let t = Instant::now();
    loop {
        if let Some(why) = exited(child) {
            bail!("it exited first {why}");
        }
        if ready() {
            return Ok(());
        }
        if t.elapsed() > timeout {
            bail!("not within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Attaches the probes, discards what is left of the warm-up counted from
/// `started` (attaching takes part of it: on a busy host more than a
/// second, which the engine's one-second margin after the observation
/// could not absorb), observes the duration.
fn watch(
    pid: u32,
    profile: Profile,
    s: &Scenario,
    started: std::time::Instant,
) -> Result<Vec<redoctor_probes::Signals>> {
    let opts = AttachOptions::for_profile(pid, &profile);
    let mut sampler = crate::probe::attach(&opts, profile)?;
    if !s.warmup.is_zero() {
        let left = s.warmup.saturating_sub(started.elapsed());
        let w = sampler
            .wait_window(left.max(Duration::from_millis(100)))
            .context("reading the probes' maps")?;
        if w.target_exited {
            bail!("pid {pid} exited during the warm-up");
        }
    }
    let windows = crate::probe::observe(&mut sampler, pid, s.duration, Duration::from_secs(1))?;
    if windows.iter().any(|w| w.target_exited) {
        bail!("pid {pid} exited during the observation");
    }
    Ok(windows)
}
