//! Human-readable rendering of one `Signals` window.

use std::io::{self, Write};

use redoctor_probes::Signals;

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

pub fn print(out: &mut impl Write, s: &Signals) -> io::Result<()> {
    let secs = s.window_ns as f64 / 1e9;
    writeln!(
        out,
        "== pid {} · {:.2}s window · profile {}{}",
        s.pid,
        secs,
        s.profile,
        if s.target_exited {
            " · TARGET EXITED"
        } else {
            ""
        }
    )?;
    if s.events_lost > 0 {
        writeln!(out, "LOST: {}", lost_events_line(s.events_lost))?;
    }
    let c = &s.cpu;
    writeln!(
        out,
        "cpu: busy {:.2} CPUs · runnable {:.2} of {} CPUs (saturation {:.2}) · switches vol {} invol {} · runq p50 ≤{}µs p99 ≤{}µs",
        c.cpus_busy,
        c.avg_runnable_threads,
        c.affinity_cpus,
        c.saturation,
        c.voluntary_switches,
        c.involuntary_switches,
        c.runq_latency.p50_ns_le / 1000,
        c.runq_latency.p99_ns_le / 1000
    )?;
    let e = &s.engine;
    writeln!(
        out,
        "engine: commits/s {} · commits/fsync {} · redo lsn {} KiB/s · woken {}",
        e.commits_per_s.map_or("-".into(), |v| format!("{v:.0}")),
        e.commits_per_fsync
            .map_or("-".into(), |v| format!("{v:.2}")),
        e.redo_bytes_per_s
            .map_or("-".into(), |v| format!("{:.1}", v / 1024.0)),
        e.flush_waiters_woken.map_or("-".into(), |v| v.to_string())
    )?;
    writeln!(
        out,
        "wakeups: internal {} · commit path {} ({} per commit) · from outside {}",
        s.wakeups.internal,
        s.wakeups.commit_path,
        s.wakeups
            .commit_path_per_commit
            .map_or("-".into(), |v| format!("{v:.2}")),
        s.wakeups.from_outside
    )?;
    for w in s.wakeups.by_role.iter().take(8) {
        writeln!(out, "  {:>12} -> {:<12} {:>10}", w.waker, w.wakee, w.count)?;
    }
    writeln!(
        out,
        "  {:<12} {:>4} {:>10} {:>9} {:>9} {:>10} {:>10}",
        "role", "thr", "cpu ms", "vol", "invol", "runq ms", "futex ms"
    )?;
    for (role, r) in &s.roles {
        writeln!(
            out,
            "  {:<12} {:>4} {:>10.1} {:>9} {:>9} {:>10.1} {:>10.1}",
            role.to_string(),
            r.threads,
            ms(r.oncpu_ns),
            r.voluntary_switches,
            r.involuntary_switches,
            ms(r.runq_wait_ns),
            ms(r.futex_wait_ns)
        )?;
    }
    for (kind, f) in &s.io {
        write!(
            out,
            "io {:<6}: writes {} ({:.1} KiB/s) · fsyncs {} p99 ≤{}µs",
            kind.to_string(),
            f.write_calls,
            f.write_bytes_per_s / 1024.0,
            f.fsync_calls,
            f.fsync_latency.p99_ns_le / 1000
        )?;
        if f.read_calls > 0 {
            write!(
                out,
                " · reads {} ({:.0}/s) p99 ≤{}µs",
                f.read_calls,
                f.reads_per_s,
                f.read_latency.p99_ns_le / 1000
            )?;
        }
        writeln!(out)?;
    }
    for l in s.futex_waits.iter().take(3) {
        writeln!(
            out,
            "futex {}{}: {} waits, {:.1} ms",
            l.uaddr,
            l.lock
                .as_deref()
                .map_or(String::new(), |n| format!(" ({n})")),
            l.waits,
            ms(l.wait_ns)
        )?;
    }
    for w in s.named_lock_waits.iter().take(5) {
        writeln!(
            out,
            "lock {}: {} waits on {} word(s), {:.1} ms",
            w.lock,
            w.waits,
            w.addresses,
            ms(w.wait_ns)
        )?;
    }
    writeln!(out)
}

/// What `n` lost events mean and what to do, in one line.
pub fn lost_events_line(n: u64) -> String {
    format!(
        "{n} events were not recorded because a probe map was full; this window's \
         wakeup and per-thread counts are short by that many (raise --wake-pairs, \
         or shorten the window)"
    )
}
