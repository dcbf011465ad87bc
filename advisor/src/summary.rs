//! The rules' vocabulary: one flat map of named numbers (`signals.*`)
//! computed from one or more [`Signals`] windows of the same process.
//!
//! Counts are summed over all windows and ratios computed on the sums, so a
//! diagnosis over ten 1 s windows reads the same as one 10 s window. Every
//! value is a double (CEL `double`); every name, unit and definition is in
//! [`SIGNAL_DOCS`] (and `rules/README.md`).

use std::collections::BTreeMap;

use redoctor_probes::signals::{Histogram, Signals};
use redoctor_probes::{FileKind, Role};

/// Name, unit and definition of every summary signal.
pub const SIGNAL_DOCS: &[(&str, &str, &str)] = &[
    ("window_s", "s", "observed time, all windows"),
    ("windows", "", "number of windows"),
    (
        "commits",
        "",
        "commits acknowledged (engine probe points; 0 when unavailable)",
    ),
    ("commits_per_s", "1/s", "commits / window_s"),
    (
        "commits_known",
        "0/1",
        "1 when the engine's commit counter was seen",
    ),
    ("cores", "", "CPUs in the target's affinity mask"),
    (
        "cpus_busy",
        "CPUs",
        "on-CPU time / window (1.0 = one full CPU)",
    ),
    ("cpu_share", "0..1", "cpus_busy / cores"),
    (
        "avg_runnable_threads",
        "",
        "threads running or waiting for a CPU, on average",
    ),
    (
        "saturation",
        "",
        "avg_runnable_threads / cores (> 1: threads queue for CPUs)",
    ),
    (
        "runq_wait_share",
        "0..1",
        "run-queue wait / (on-CPU + run-queue wait)",
    ),
    (
        "runq_p99_us",
        "us",
        "run-queue latency, upper bound of the p99 bucket",
    ),
    (
        "user_threads",
        "",
        "user (connection) threads seen alive, largest over the windows",
    ),
    (
        "log_threads",
        "",
        "dedicated redo log threads (writer, flusher, notifiers) alive",
    ),
    ("user_threads_per_core", "", "user_threads / cores"),
    ("tps_per_user", "1/s", "commits_per_s / user_threads"),
    (
        "ctx_switches_per_commit",
        "",
        "voluntary + involuntary switches / commits",
    ),
    (
        "involuntary_share",
        "0..1",
        "involuntary / all context switches",
    ),
    (
        "commit_path_wakeups_per_commit",
        "",
        "wakeups between commit-path roles / commits",
    ),
    (
        "commits_per_fsync",
        "",
        "commits / redo fsyncs (group commit size)",
    ),
    (
        "commits_per_redo_write",
        "",
        "commits / write calls on redo files (commits per log-writer round)",
    ),
    (
        "redo_fsyncs_per_s",
        "1/s",
        "fsync/fdatasync calls on redo files per second",
    ),
    (
        "redo_fsync_p50_us",
        "us",
        "redo fsync latency, upper bound of the median bucket",
    ),
    (
        "redo_fsync_p99_us",
        "us",
        "redo fsync latency, upper bound of the p99 bucket",
    ),
    (
        "redo_write_bytes_per_s",
        "B/s",
        "bytes written to redo files per second",
    ),
    (
        "binlog_write_bytes_per_s",
        "B/s",
        "bytes written to binlog files per second",
    ),
    (
        "user_futex_wait_share",
        "0..1",
        "user threads' futex wait time / (user_threads x window)",
    ),
    (
        "futex_waits_per_commit",
        "",
        "futex waits of all threads / commits",
    ),
    (
        "tps_trend",
        "",
        "commits/s of the last half of the windows / first half (1 = steady)",
    ),
    (
        "futex_wait_trend",
        "",
        "user futex wait of the last half / first half (1 = steady)",
    ),
    (
        "cpu_us_per_commit",
        "us",
        "on-CPU time of all the target's threads / commits",
    ),
    (
        "user_cpu_us_per_commit",
        "us",
        "on-CPU time of user threads / commits",
    ),
    (
        "log_cpu_us_per_commit",
        "us",
        "on-CPU time of the dedicated log threads / commits (0 in RT0)",
    ),
    (
        "user_switches_per_commit",
        "",
        "user threads' voluntary + involuntary switches / commits",
    ),
    (
        "redo_fsync_mean_us",
        "us",
        "time in redo fsync/fdatasync / such calls (0 without calls)",
    ),
    (
        "binlog_fsync_mean_us",
        "us",
        "time in binlog fsync/fdatasync / such calls (0 without calls)",
    ),
    (
        "binlog_fsyncs_per_s",
        "1/s",
        "fsync/fdatasync calls on binlog files per second",
    ),
    (
        "commit_wait_us_per_commit",
        "us",
        "user threads' futex wait on the redo log's named locks (redo.*) / commits",
    ),
    (
        "lock_wait_us_per_commit",
        "us",
        "user threads' futex wait on anything but the redo log's locks (row locks, latches, gates) / commits",
    ),
    (
        "lock_waits_per_commit",
        "",
        "user threads' futex waits outside the redo log's locks / commits",
    ),
    (
        "runq_wait_us_per_commit",
        "us",
        "user threads' run-queue wait / commits",
    ),
];

/// Named numbers summarising the windows.
pub type Summary = BTreeMap<String, f64>;

/// Summarises `windows` (at least one; an empty slice gives zeros).
pub fn summarize(windows: &[Signals]) -> Summary {
    let mut s = Summary::new();
    let window_ns: u64 = windows.iter().map(|w| w.window_ns).sum();
    let secs = (window_ns as f64 / 1e9).max(1e-9);
    let commits_known = windows.iter().any(|w| w.engine.commits.is_some());
    let commits: u64 = windows.iter().filter_map(|w| w.engine.commits).sum();
    let cores = windows
        .iter()
        .map(|w| w.cpu.affinity_cpus)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let oncpu: u64 = windows.iter().map(|w| w.cpu.oncpu_ns).sum();
    let runq: u64 = windows.iter().map(|w| w.cpu.runq_wait_ns).sum();
    let vol: u64 = windows.iter().map(|w| w.cpu.voluntary_switches).sum();
    let invol: u64 = windows.iter().map(|w| w.cpu.involuntary_switches).sum();
    let role_threads = |r: Role| {
        windows
            .iter()
            .filter_map(|w| w.roles.get(&r).map(|x| x.threads))
            .max()
            .unwrap_or(0) as f64
    };
    let users = role_threads(Role::User);
    let log_threads = role_threads(Role::LogWriter)
        + role_threads(Role::LogFlusher)
        + role_threads(Role::LogNotifier);
    let commit_path: u64 = windows.iter().map(|w| w.wakeups.commit_path).sum();
    let redo = |f: &dyn Fn(&redoctor_probes::signals::FileIo) -> u64| -> u64 {
        windows
            .iter()
            .filter_map(|w| w.io.get(&FileKind::Redo).map(f))
            .sum()
    };
    let redo_fsyncs = redo(&|io| io.fsync_calls);
    let redo_bytes = redo(&|io| io.write_bytes);
    let redo_writes = redo(&|io| io.write_calls);
    let binlog_bytes: u64 = windows
        .iter()
        .filter_map(|w| w.io.get(&FileKind::Binlog).map(|io| io.write_bytes))
        .sum();
    let fsync_hist = merge_hists(
        windows
            .iter()
            .filter_map(|w| w.io.get(&FileKind::Redo).map(|io| &io.fsync_latency)),
    );
    let runq_hist = merge_hists(windows.iter().map(|w| &w.cpu.runq_latency));
    let user_futex = |ws: &[Signals]| -> f64 {
        ws.iter()
            .filter_map(|w| w.roles.get(&Role::User).map(|r| r.futex_wait_ns))
            .sum::<u64>() as f64
    };
    let futex_waits: u64 = windows
        .iter()
        .flat_map(|w| w.roles.values().map(|r| r.futex_waits))
        .sum();
    let per_commit = |x: f64| if commits > 0 { x / commits as f64 } else { 0.0 };

    let avg_runnable = (oncpu + runq) as f64 / window_ns.max(1) as f64;
    let cps = commits as f64 / secs;
    s.insert("window_s".into(), window_ns as f64 / 1e9);
    s.insert("windows".into(), windows.len() as f64);
    s.insert("commits".into(), commits as f64);
    s.insert("commits_per_s".into(), cps);
    s.insert("commits_known".into(), f64::from(u8::from(commits_known)));
    s.insert("cores".into(), cores);
    s.insert("cpus_busy".into(), oncpu as f64 / window_ns.max(1) as f64);
    s.insert(
        "cpu_share".into(),
        oncpu as f64 / window_ns.max(1) as f64 / cores,
    );
    s.insert("avg_runnable_threads".into(), avg_runnable);
    s.insert("saturation".into(), avg_runnable / cores);
    s.insert(
        "runq_wait_share".into(),
        ratio(runq as f64, (oncpu + runq) as f64),
    );
    s.insert("runq_p99_us".into(), quantile_le(&runq_hist, 0.99) / 1e3);
    s.insert("user_threads".into(), users);
    s.insert("log_threads".into(), log_threads);
    s.insert("user_threads_per_core".into(), users / cores);
    s.insert("tps_per_user".into(), ratio(cps, users));
    s.insert(
        "ctx_switches_per_commit".into(),
        per_commit((vol + invol) as f64),
    );
    s.insert(
        "involuntary_share".into(),
        ratio(invol as f64, (vol + invol) as f64),
    );
    s.insert(
        "commit_path_wakeups_per_commit".into(),
        per_commit(commit_path as f64),
    );
    s.insert(
        "commits_per_fsync".into(),
        ratio(commits as f64, redo_fsyncs as f64),
    );
    s.insert(
        "commits_per_redo_write".into(),
        ratio(commits as f64, redo_writes as f64),
    );
    s.insert("redo_fsyncs_per_s".into(), redo_fsyncs as f64 / secs);
    s.insert(
        "redo_fsync_p50_us".into(),
        quantile_le(&fsync_hist, 0.5) / 1e3,
    );
    s.insert(
        "redo_fsync_p99_us".into(),
        quantile_le(&fsync_hist, 0.99) / 1e3,
    );
    s.insert("redo_write_bytes_per_s".into(), redo_bytes as f64 / secs);
    s.insert(
        "binlog_write_bytes_per_s".into(),
        binlog_bytes as f64 / secs,
    );
    s.insert(
        "user_futex_wait_share".into(),
        ratio(user_futex(windows), users * window_ns as f64),
    );
    s.insert(
        "futex_waits_per_commit".into(),
        per_commit(futex_waits as f64),
    );
    insert_per_commit(&mut s, windows, commits, secs);
    let half = windows.len() / 2;
    let (first, last) = windows.split_at(half);
    let tps = |ws: &[Signals]| {
        let ns: u64 = ws.iter().map(|w| w.window_ns).sum();
        ws.iter().filter_map(|w| w.engine.commits).sum::<u64>() as f64 / ns.max(1) as f64
    };
    let trend = |a: f64, b: f64| if half == 0 || a <= 0.0 { 1.0 } else { b / a };
    s.insert("tps_trend".into(), trend(tps(first), tps(last)));
    s.insert(
        "futex_wait_trend".into(),
        trend(user_futex(first), user_futex(last)),
    );
    s
}

/// The per-commit costs the what-if model reads (`crate::model`): CPU by
/// role, switches, fsync means, commit-path and other waits.
fn insert_per_commit(s: &mut Summary, windows: &[Signals], commits: u64, secs: f64) {
    let role_sum = |roles: &[Role], f: &dyn Fn(&redoctor_probes::signals::RoleSignals) -> u64| {
        windows
            .iter()
            .flat_map(|w| roles.iter().filter_map(|r| w.roles.get(r).map(f)))
            .sum::<u64>() as f64
    };
    let all_oncpu: u64 = windows.iter().map(|w| w.cpu.oncpu_ns).sum();
    let log = [Role::LogWriter, Role::LogFlusher, Role::LogNotifier];
    let user = [Role::User];
    let per_commit_us = |ns: f64| {
        if commits > 0 {
            ns / commits as f64 / 1e3
        } else {
            0.0
        }
    };
    let per_commit = |n: f64| if commits > 0 { n / commits as f64 } else { 0.0 };
    let fsync_mean = |kind: FileKind| {
        let (ns, calls) = windows
            .iter()
            .filter_map(|w| w.io.get(&kind))
            .fold((0u64, 0u64), |(a, b), io| {
                (a + io.fsync_ns, b + io.fsync_calls)
            });
        ratio(ns as f64, calls as f64) / 1e3
    };
    // User futex waits on the redo log's named locks are the commit wait;
    // the rest (row locks, latches, the gate) is contention.
    let (mut redo_ns, mut redo_waits) = (0.0, 0.0);
    for l in windows.iter().flat_map(|w| &w.named_lock_waits) {
        if l.lock.starts_with("redo.") {
            let user_ns = l.wait_ns_by_role.get(&Role::User).copied().unwrap_or(0) as f64;
            redo_ns += user_ns;
            redo_waits += l.waits as f64 * ratio(user_ns, l.wait_ns as f64);
        }
    }
    let user_futex_ns = role_sum(&user, &|r| r.futex_wait_ns);
    let user_futex_waits = role_sum(&user, &|r| r.futex_waits);
    let binlog_fsyncs: u64 = windows
        .iter()
        .filter_map(|w| w.io.get(&FileKind::Binlog).map(|io| io.fsync_calls))
        .sum();
    let mut put = |k: &str, v: f64| {
        s.insert(k.into(), v);
    };
    put("cpu_us_per_commit", per_commit_us(all_oncpu as f64));
    put(
        "user_cpu_us_per_commit",
        per_commit_us(role_sum(&user, &|r| r.oncpu_ns)),
    );
    put(
        "log_cpu_us_per_commit",
        per_commit_us(role_sum(&log, &|r| r.oncpu_ns)),
    );
    put(
        "user_switches_per_commit",
        per_commit(role_sum(&user, &|r| {
            r.voluntary_switches + r.involuntary_switches
        })),
    );
    put("redo_fsync_mean_us", fsync_mean(FileKind::Redo));
    put("binlog_fsync_mean_us", fsync_mean(FileKind::Binlog));
    put("binlog_fsyncs_per_s", binlog_fsyncs as f64 / secs);
    put("commit_wait_us_per_commit", per_commit_us(redo_ns));
    put(
        "lock_wait_us_per_commit",
        per_commit_us((user_futex_ns - redo_ns).max(0.0)),
    );
    put(
        "lock_waits_per_commit",
        per_commit((user_futex_waits - redo_waits).max(0.0)),
    );
    put(
        "runq_wait_us_per_commit",
        per_commit_us(role_sum(&user, &|r| r.runq_wait_ns)),
    );
}

/// `a / b`, or 0 when `b` is not positive.
pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Sums histograms bucket by bucket (buckets are log2, so bounds match).
pub fn merge_hists<'a>(hists: impl Iterator<Item = &'a Histogram>) -> Histogram {
    let mut by: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut count = 0;
    for h in hists {
        count += h.count;
        for b in &h.buckets {
            *by.entry((b.lo_ns, b.hi_ns)).or_default() += b.count;
        }
    }
    let buckets = by
        .into_iter()
        .map(|((lo_ns, hi_ns), count)| redoctor_probes::signals::Bucket {
            lo_ns,
            hi_ns,
            count,
        })
        .collect();
    let mut h = Histogram {
        count,
        buckets,
        p50_ns_le: 0,
        p99_ns_le: 0,
    };
    h.p50_ns_le = quantile_le(&h, 0.5) as u64;
    h.p99_ns_le = quantile_le(&h, 0.99) as u64;
    h
}

/// Upper bound (ns) of the bucket holding quantile `q`; 0 when empty.
pub fn quantile_le(h: &Histogram, q: f64) -> f64 {
    let total: u64 = h.buckets.iter().map(|b| b.count).sum();
    if total == 0 {
        return 0.0;
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for b in &h.buckets {
        seen += b.count;
        if seen >= rank {
            return b.hi_ns as f64;
        }
    }
    h.buckets.last().map_or(0.0, |b| b.hi_ns as f64)
}
