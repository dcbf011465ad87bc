//! `redoctor probe --pid P [--interval 1s] [--duration D] [--json] [--profile NAME|FILE]`.

use redoctor_args::say;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use redoctor_probes::{AttachOptions, Probes, Profile, Sampler, Signals, SyscallHooks};

/// Exit code when the target exits during the run (the last window is printed).
pub const EXIT_TARGET_EXITED: u8 = 3;

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Process id of the database server to observe.
    #[arg(long)]
    pid: u32,
    /// Window length (e.g. 500ms, 1s, 5s).
    #[arg(long, default_value = "1s", value_parser = redoctor_args::positive_duration)]
    interval: Duration,
    /// Stop after this long (default: until interrupted or the target exits).
    #[arg(long, value_parser = redoctor_args::positive_duration)]
    duration: Option<Duration>,
    /// Print one JSON object (a `Signals` window) per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Target profile: a shipped name (redoctor-engine, mysql8, mariadb, postgresql) or a TOML file.
    #[arg(long, default_value = "redoctor-engine")]
    profile: String,
    /// Do not attach uprobes to the engine's probe points (no engine events).
    #[arg(long)]
    no_uprobes: bool,
    /// Also attach the per-batch probe points (redo write/flush/notify: lsn bytes,
    /// engine-timed fsyncs, waiters woken); ~1.4 µs per batch in the target.
    #[arg(long)]
    batch_probes: bool,
    /// Do not trace syscalls (no write/fsync signals; cheaper on syscall-heavy targets).
    #[arg(long)]
    no_syscalls: bool,
    /// How to hook writes and fsyncs: per-syscall tracepoints (no BPF runs
    /// on any other syscall; needs tracefs), raw sys_enter/sys_exit (a
    /// program on every syscall; no tracefs), or auto (per-syscall when
    /// tracefs shows them, else raw, with a warning).
    #[arg(long, default_value = "auto")]
    syscall_hooks: SyscallHooks,
    /// Measure the probes' own cost (`probe_cost`) in one window of every N
    /// (1 = every window, 0 = never); the kernel's timing of each BPF run
    /// costs ~20-30 ns per event while on.
    #[arg(long, default_value_t = redoctor_probes::bpf_stats::DEFAULT_COST_EVERY)]
    cost_every: u32,
    /// Record futex waits by address for one wait in N, at random (a power
    /// of two; 1 = all, exact but ~200 ns per wait); per-role totals are exact.
    #[arg(long, default_value_t = redoctor_probes::loader::DEFAULT_FUTEX_SAMPLE)]
    futex_sample: u32,
    /// Capacity of the wakeups-by-thread-pair map; a wakeup that finds it
    /// full is counted as a lost event (printed, never silent).
    #[arg(long, default_value_t = redoctor_probes::loader::DEFAULT_WAKE_PAIRS)]
    pub wake_pairs: u32,
    /// Time run-queue waits from the probes' own clock stamps, as BCC's
    /// runqlat does, not from the kernel's schedstat (which reads about a
    /// quarter of short waits as 0 here); two more hooks and a map update
    /// per switch-in. Totals and waits from 16 µs up agree either way.
    #[arg(long)]
    runq_stamps: bool,
    /// Bench control: attach every hook, but the scheduler and syscall
    /// programs return at once (their dispatch alone; signals stay empty).
    #[arg(long, hide = true)]
    empty_programs: bool,
}

/// Attaches the probes as `opts` asks (warning about any that are
/// unavailable) and starts sampling them.
pub fn attach(opts: &AttachOptions, profile: Profile) -> Result<Sampler> {
    attach_to(opts, profile, false)
}

/// [`attach`]; with `strict`, a target that should be the bundled engine
/// but has none of its probe points is refused (the probes detached).
/// Without it, that is one warning rather than one per point.
pub fn attach_to(opts: &AttachOptions, profile: Profile, strict: bool) -> Result<Sampler> {
    let probes = Probes::attach(opts)
        .with_context(|| format!("attaching the probes to pid {}", opts.pid))?;
    let not_engine = not_the_engine(opts, &probes);
    if let Some(why) = &not_engine {
        if strict {
            drop(probes);
            bail!("{why}");
        }
        say!("redoctor: warning: {why}; observing the scheduler and syscalls only");
    }
    // Said once above rather than point by point.
    let said = |what: &str| not_engine.is_some() && what.starts_with("probe point ");
    for u in probes.unavailable().iter().filter(|u| !said(&u.what)) {
        say!("redoctor: warning: {} unavailable: {}", u.what, u.why);
    }
    Sampler::new(probes, profile).context("reading the probes' maps")
}

/// Why the target is not the bundled engine, when its profile's probe
/// points (`redoctor_*`, the engine's only source of commits) were tried
/// and none attached: another program, or an engine build stripped of
/// its symbols.
fn not_the_engine(opts: &AttachOptions, probes: &Probes) -> Option<String> {
    if !opts.uprobes
        || !opts.commit_points.is_empty()
        || !opts.usdt.is_empty()
        || !probes.attached_probe_points().is_empty()
    {
        return None;
    }
    let first = probes
        .unavailable()
        .iter()
        .find(|u| u.what.starts_with("probe point "))?;
    let pid = opts.pid;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.display().to_string())
        .or_else(|_| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|c| c.trim().to_string())
        })
        .unwrap_or_else(|_| "?".into());
    let base = exe.rsplit('/').next().unwrap_or(&exe);
    let hint = if base.starts_with("mariadbd") || base.starts_with("mysqld") {
        "--profile mariadb for MariaDB, --profile mysql8 for MySQL 8"
    } else if base.starts_with("postgres") {
        "--profile postgresql, with the postmaster's pid"
    } else {
        "--profile mariadb, postgresql or mysql8"
    };
    let cause = first.why.split(" (in ").next().unwrap_or(&first.why);
    Some(format!(
        "pid {pid} ({exe}) has none of the bundled engine's probe points (`redoctor_*` symbols; \
         the first, {}: {cause}), so it is not the bundled engine, or a build stripped of them: \
         pass the pid of `redoctor-engine`, or the profile of this server ({hint})",
        first.what.trim_start_matches("probe point ")
    ))
}

pub fn run(args: ProbeArgs) -> Result<ExitCode> {
    let profile = Profile::resolve(&args.profile).context("loading the target profile")?;
    let mut opts = AttachOptions::for_profile(args.pid, &profile);
    opts.uprobes &= !args.no_uprobes;
    opts.syscalls = !args.no_syscalls;
    opts.syscall_hooks = args.syscall_hooks;
    opts.batch_points = args.batch_probes;
    opts.futex_sample = args.futex_sample;
    opts.wake_pairs = args.wake_pairs;
    opts.empty_programs = args.empty_programs;
    opts.runq_stamps = args.runq_stamps;
    let mut sampler = attach(&opts, profile)?;
    sampler.set_cost_every(args.cost_every);
    let stdout = std::io::stdout();
    let mut observed = Duration::ZERO;
    loop {
        let interval = match args.duration {
            Some(d) => match next_window(observed, d, args.interval) {
                Some(len) => len,
                None => return Ok(ExitCode::SUCCESS),
            },
            None => args.interval,
        };
        let signals = sampler
            .wait_window(interval)
            .context("reading the probes' maps")?;
        observed += Duration::from_nanos(signals.window_ns);
        if !crate::reached_reader(print_window(&mut stdout.lock(), &signals, args.json))
            .context("writing a window to stdout")?
        {
            return Ok(ExitCode::SUCCESS); // the probes detach on drop
        }
        if args.json && signals.events_lost > 0 {
            say!(
                "redoctor: warning: {}",
                crate::table::lost_events_line(signals.events_lost)
            );
        }
        if signals.target_exited {
            say!(
                "redoctor: target pid {} exited during the last window; it was printed up to the exit",
                args.pid
            );
            return Ok(ExitCode::from(EXIT_TARGET_EXITED));
        }
    }
}

/// One window on `out`: a JSON line, or the table; flushed.
fn print_window(out: &mut impl Write, signals: &Signals, json: bool) -> std::io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, signals)?;
        writeln!(out)?;
    } else {
        crate::table::print(out, signals)?;
    }
    out.flush()
}

/// The next window's length after `observed` of `duration`, or `None`
/// when the duration is covered. Windows of `interval`; a remainder under
/// 100 ms joins the last window (a tiny window adds noise, not evidence).
fn next_window(observed: Duration, duration: Duration, interval: Duration) -> Option<Duration> {
    if observed + Duration::from_millis(1) >= duration {
        return None;
    }
    let left = duration - observed;
    Some(if left < interval + Duration::from_millis(100) {
        left
    } else {
        interval
    })
}

/// Collects windows for `duration` (the observation `diagnose`,
/// `calibrate` and `gate` make).
pub fn observe(
    sampler: &mut Sampler,
    pid: u32,
    duration: Duration,
    interval: Duration,
) -> Result<Vec<Signals>> {
    let mut windows: Vec<Signals> = Vec::new();
    let mut observed = Duration::ZERO;
    while let Some(len) = next_window(observed, duration, interval) {
        let w = sampler
            .wait_window(len)
            .context("reading the probes' maps")?;
        observed += Duration::from_nanos(w.window_ns);
        let exited = w.target_exited;
        windows.push(w);
        if exited {
            say!("redoctor: warning: pid {pid} exited during the observation; diagnosing what was seen");
            break;
        }
    }
    Ok(windows)
}

#[cfg(test)]
mod tests {
    use super::next_window;
    use std::time::Duration;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn windows_cover_the_duration_without_a_tiny_tail() {
        // Windows run a little longer than asked (reading the maps): the
        // sum of what was observed decides, so no sliver window follows.
        let mut observed = ms(0);
        let mut lens = Vec::new();
        while let Some(len) = next_window(observed, ms(6000), ms(400)) {
            lens.push(len);
            observed += len + ms(3);
        }
        assert_eq!(lens.len(), 15, "{lens:?}");
        assert!(lens.iter().all(|&l| l >= ms(100)), "{lens:?}");
        // A remainder under 100 ms joins the last window.
        assert_eq!(next_window(ms(5550), ms(6000), ms(400)), Some(ms(450)));
        assert_eq!(next_window(ms(6000), ms(6000), ms(400)), None);
    }
}
