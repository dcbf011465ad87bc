//! Every summary signal, one row each: name, unit, meaning, computation.

use super::totals::Totals;
use super::{quantile_le, ratio};

/// One summary signal.
pub struct SignalDef {
    /// The name rules read as `signals.<name>`.
    pub name: &'static str,
    /// Its unit ("" for a count or a pure number).
    pub unit: &'static str,
    /// What it means and how it is computed, in words.
    pub meaning: &'static str,
    /// How it is computed from the windows' sums.
    pub compute: fn(&Totals) -> f64,
}

const fn def(
    name: &'static str,
    unit: &'static str,
    meaning: &'static str,
    compute: fn(&Totals) -> f64,
) -> SignalDef {
    SignalDef {
        name,
        unit,
        meaning,
        compute,
    }
}

/// `last / first` of two halves; 1 (steady) without two halves or a zero start.
fn trend(halves: Option<(f64, f64)>) -> f64 {
    match halves {
        Some((a, b)) if a > 0.0 => b / a,
        _ => 1.0,
    }
}

/// Every signal `summarize` computes, in the order reports list them.
pub const SIGNALS: &[SignalDef] = &[
    def("window_s", "s", "observed time, all windows", |t| {
        t.window_ns as f64 / 1e9
    }),
    def("windows", "", "number of windows", |t| t.windows as f64),
    def(
        "commits",
        "",
        "commits acknowledged (engine probe points; 0 when unavailable)",
        |t| t.commits as f64,
    ),
    def("commits_per_s", "1/s", "commits / window_s", |t| {
        t.commits_per_s()
    }),
    def(
        "commits_known",
        "0/1",
        "1 when the engine's commit counter was seen",
        |t| f64::from(u8::from(t.commits_known)),
    ),
    def("cores", "", "CPUs in the target's affinity mask", |t| {
        t.cores
    }),
    def(
        "cpus_busy",
        "CPUs",
        "on-CPU time / window (1.0 = one full CPU)",
        |t| t.oncpu_ns as f64 / t.window_ns.max(1) as f64,
    ),
    def("cpu_share", "0..1", "cpus_busy / cores", |t| {
        t.oncpu_ns as f64 / t.window_ns.max(1) as f64 / t.cores
    }),
    def(
        "avg_runnable_threads",
        "",
        "threads running or waiting for a CPU, on average: (on-CPU + run-queue wait) / window",
        |t| t.avg_runnable(),
    ),
    def(
        "saturation",
        "",
        "avg_runnable_threads / cores (> 1: threads queue for CPUs)",
        |t| t.avg_runnable() / t.cores,
    ),
    def(
        "runq_wait_share",
        "0..1",
        "run-queue wait / (on-CPU + run-queue wait)",
        |t| ratio(t.runq_ns as f64, (t.oncpu_ns + t.runq_ns) as f64),
    ),
    def(
        "runq_p99_us",
        "us",
        "run-queue latency, upper bound of the p99 bucket",
        |t| quantile_le(&t.runq_hist, 0.99) / 1e3,
    ),
    def(
        "user_threads",
        "",
        "user (connection) threads seen alive, largest over the windows",
        |t| t.user_threads,
    ),
    def(
        "log_threads",
        "",
        "dedicated redo log threads (writer, flusher, notifiers) alive that ran (on CPU or waking others; paused ones do neither)",
        |t| t.log_threads,
    ),
    def(
        "wal_buffer_full_per_s",
        "1/s",
        "WAL writes a backend made because the WAL buffers were full (PostgreSQL USDT), per second; 0 unavailable",
        |t| ratio(t.wal_buffer_full as f64, t.window_ns as f64 / 1e9),
    ),
    def(
        "active_transactions",
        "",
        "transactions in flight, on average (PostgreSQL USDT transaction__start to __commit/__abort, summed / window; idle-in-transaction sessions count): what commit_siblings compares with; 0 unavailable",
        |t| ratio(t.txn_ns.unwrap_or(0) as f64, t.window_ns as f64),
    ),
    def(
        "user_runnable_threads",
        "",
        "user threads running or waiting for a CPU, on average: (user on-CPU + run-queue ns) / window",
        |t| ratio(
            (t.user.oncpu_ns + t.user.runq_wait_ns) as f64,
            t.window_ns as f64
        ),
    ),
    def("user_threads_per_core", "", "user_threads / cores", |t| {
        t.user_threads / t.cores
    }),
    def("tps_per_user", "1/s", "commits_per_s / user_threads", |t| {
        ratio(t.commits_per_s(), t.user_threads)
    }),
    def(
        "ctx_switches_per_commit",
        "",
        "voluntary + involuntary switches / commits",
        |t| t.per_commit((t.voluntary + t.involuntary) as f64),
    ),
    def(
        "involuntary_share",
        "0..1",
        "involuntary / all context switches",
        |t| ratio(t.involuntary as f64, (t.voluntary + t.involuntary) as f64),
    ),
    def(
        "commit_path_wakeups_per_commit",
        "",
        "wakeups between commit-path roles / commits",
        |t| t.per_commit(t.commit_path_wakeups as f64),
    ),
    def(
        "commits_per_fsync",
        "",
        "commits / redo fsyncs (group commit size)",
        |t| ratio(t.commits as f64, t.redo.fsync_calls as f64),
    ),
    def(
        "commits_per_redo_write",
        "",
        "commits / write calls on redo files (commits per log-writer round)",
        |t| ratio(t.commits as f64, t.redo.write_calls as f64),
    ),
    def(
        "redo_fsyncs_per_s",
        "1/s",
        "fsync/fdatasync calls on redo files per second",
        |t| t.redo.fsync_calls as f64 / t.secs(),
    ),
    def(
        "redo_fsync_p50_us",
        "us",
        "redo fsync latency, upper bound of the median bucket",
        |t| quantile_le(&t.redo_fsync_hist, 0.5) / 1e3,
    ),
    def(
        "redo_fsync_p99_us",
        "us",
        "redo fsync latency, upper bound of the p99 bucket",
        |t| quantile_le(&t.redo_fsync_hist, 0.99) / 1e3,
    ),
    def(
        "redo_write_bytes_per_s",
        "B/s",
        "bytes written to redo files per second",
        |t| t.redo.write_bytes as f64 / t.secs(),
    ),
    def(
        "binlog_write_bytes_per_s",
        "B/s",
        "bytes written to binlog files per second",
        |t| t.binlog.write_bytes as f64 / t.secs(),
    ),
    def(
        "user_futex_wait_share",
        "0..1",
        "user threads' futex wait time / (user_threads x window)",
        |t| {
            ratio(
                t.user.futex_wait_ns as f64,
                t.user_threads * t.window_ns as f64,
            )
        },
    ),
    def(
        "futex_waits_per_commit",
        "",
        "futex waits of all threads / commits",
        |t| t.per_commit(t.futex_waits as f64),
    ),
    def(
        "tps_trend",
        "",
        "commits/s of the last half of the windows / first half (1 = steady)",
        |t| trend(t.tps_halves),
    ),
    def(
        "futex_wait_trend",
        "",
        "user futex wait of the last half / first half (1 = steady)",
        |t| trend(t.user_futex_halves),
    ),
    def(
        "cpu_us_per_commit",
        "us",
        "on-CPU time of all the target's threads / commits",
        |t| t.us_per_commit(t.oncpu_ns as f64),
    ),
    def(
        "user_cpu_us_per_commit",
        "us",
        "on-CPU time of user threads / commits",
        |t| t.us_per_commit(t.user.oncpu_ns as f64),
    ),
    def(
        "log_cpu_us_per_commit",
        "us",
        "on-CPU time of the dedicated log threads / commits (0 in RT0)",
        |t| t.us_per_commit(t.log.oncpu_ns as f64),
    ),
    def(
        "user_switches_per_commit",
        "",
        "user threads' voluntary + involuntary switches / commits",
        |t| t.per_commit(t.user.switches as f64),
    ),
    def(
        "redo_fsync_mean_us",
        "us",
        "time in redo fsync/fdatasync / such calls (0 without calls)",
        |t| ratio(t.redo.fsync_ns as f64, t.redo.fsync_calls as f64) / 1e3,
    ),
    def(
        "binlog_fsync_mean_us",
        "us",
        "time in binlog fsync/fdatasync / such calls (0 without calls)",
        |t| ratio(t.binlog.fsync_ns as f64, t.binlog.fsync_calls as f64) / 1e3,
    ),
    def(
        "binlog_fsyncs_per_s",
        "1/s",
        "fsync/fdatasync calls on binlog files per second",
        |t| t.binlog.fsync_calls as f64 / t.secs(),
    ),
    def(
        "commits_per_binlog_fsync",
        "",
        "commits / fsyncs of binlog files (binary log group commit size: with sync_binlog=1, MariaDB's Binlog_commits / Binlog_group_commits; 0 without binlog fsyncs)",
        |t| ratio(t.commits as f64, t.binlog.fsync_calls as f64),
    ),
    def(
        "dblwr_fsyncs_per_s",
        "1/s",
        "fsync/fdatasync calls on the doublewrite buffer's own files per second (0 where it lives in the system tablespace or is off)",
        |t| t.doublewrite.fsync_calls as f64 / t.secs(),
    ),
    def(
        "dblwr_fsync_mean_us",
        "us",
        "time in doublewrite-file fsync/fdatasync / such calls (0 without calls)",
        |t| ratio(t.doublewrite.fsync_ns as f64, t.doublewrite.fsync_calls as f64) / 1e3,
    ),
    def(
        "dblwr_sync_mean_us",
        "us",
        "time of a doublewrite sync as the bundled engine timed it around the fdatasync (a modelled device's wait included); elsewhere the syscall-timed dblwr_fsync_mean_us (0 without syncs)",
        |t| match t.page_syncs.and_then(|p| p.doublewrite_mean_ns()) {
            Some(ns) => ns / 1e3,
            None => ratio(t.doublewrite.fsync_ns as f64, t.doublewrite.fsync_calls as f64) / 1e3,
        },
    ),
    def(
        "page_sync_overlap_ratio",
        "",
        "mean time of the page syncs (doublewrite and tablespace, engine-timed) that began while another was in flight / of those that began alone: ~1 where the device serves syncs side by side, ~2 and up where it queues them one at a time (0 unless both sorts were seen: then the device cannot be told)",
        |t| t.page_syncs.and_then(|p| p.overlap_ratio()).unwrap_or(0.0),
    ),
    def(
        "dblwr_write_bytes_per_s",
        "B/s",
        "bytes written to the doublewrite buffer's own files per second",
        |t| t.doublewrite.write_bytes as f64 / t.secs(),
    ),
    def(
        "data_reads_per_s",
        "1/s",
        "positional reads (pread64/preadv/preadv2) on data files per second: the pages read from disk on buffer-pool misses (the engine's Innodb_buffer_pool_reads)",
        |t| t.data.read_calls as f64 / t.secs(),
    ),
    def(
        "data_reads_per_commit",
        "",
        "positional reads on data files / commits: pages read from disk per transaction",
        |t| t.per_commit(t.data.read_calls as f64),
    ),
    def(
        "data_read_mean_us",
        "us",
        "time in positional reads on data files / such reads (0 without reads): what a user thread waits for a page it misses",
        |t| ratio(t.data.read_ns as f64, t.data.read_calls as f64) / 1e3,
    ),
    def(
        "data_read_p99_us",
        "us",
        "data-file read latency, upper bound of the p99 bucket (0 without reads)",
        |t| t.data_read_hist.p99_ns_le as f64 / 1e3,
    ),
    def(
        "data_writes_per_s",
        "1/s",
        "write calls on data files per second, by any thread (pages written back; Innodb_buffer_pool_pages_flushed where each page is its own write)",
        |t| t.data.write_calls as f64 / t.secs(),
    ),
    def(
        "data_writes_by_others_share",
        "",
        "share of data-file write calls made in the foreground, by the threads that run transactions (the profile's foreground_roles; not page cleaners, checkpointers, PostgreSQL's background writer or MariaDB's task pool): on InnoDB-style engines user threads flushing a page themselves for want of a free one (single-page flushes), on PostgreSQL the backends' writes (buffers_backend); 0 without data writes",
        |t| {
            ratio(
                t.data.write_calls.saturating_sub(t.data.background_write_calls) as f64,
                t.data.write_calls as f64,
            )
        },
    ),
    def(
        "page_cleaner_cpus",
        "CPUs",
        "on-CPU time of the page-writing threads (page cleaners; PostgreSQL's background writer) / observed time: the CPUs' worth they keep busy",
        |t| t.page_writer.oncpu_ns as f64 / t.window_ns.max(1) as f64,
    ),
    def(
        "page_cleaner_cpu_us_per_commit",
        "us",
        "on-CPU time of the page-writing threads / commits",
        |t| t.us_per_commit(t.page_writer.oncpu_ns as f64),
    ),
    def(
        "dblwr_wait_share",
        "",
        "user threads' futex wait on the doublewrite buffer's named locks (dblwr.*: the legacy design's mutex and single-page slots, the files design's segments) / (user threads x observed time): the share of the users' time spent queued to flush a page",
        |t| ratio(t.user_dblwr_lock_ns, t.user_threads * t.window_ns as f64),
    ),
    def(
        "replica_applier_threads",
        "",
        "a replica's applier threads seen (0 on a server that is not a replica)",
        |t| t.applier_threads,
    ),
    def(
        "receiver_applier_wakeups_per_commit",
        "",
        "wakeups between a replica's receiver and applier, either way / commits (each applied transaction commits once): the hand-off ping-pong on the relay log",
        |t| t.per_commit(t.receiver_applier_wakeups as f64),
    ),
    def(
        "applier_worker_wakeups_per_commit",
        "",
        "wakeups between a replica's applier and its workers, either way / commits",
        |t| t.per_commit(t.applier_worker_wakeups as f64),
    ),
    def(
        "relay_lock_wait_share",
        "",
        "receiver and applier futex wait on the relay log's lock (relay_log.lock: the `lock` arbitration design) / (2 x observed time): the share of the two threads' time spent blocking each other",
        |t| ratio(t.relay_lock_ns, 2.0 * t.window_ns as f64),
    ),
    def(
        "applier_busy_share",
        "",
        "a replica's applier on CPU or runnable / observed time (1 = the single applier is the bottleneck)",
        |t| ratio(
            (t.applier.oncpu_ns + t.applier.runq_wait_ns) as f64,
            t.applier_threads.max(1.0) * t.window_ns as f64,
        ),
    ),
    def(
        "worker_busy_share",
        "",
        "a replica's workers on CPU or runnable / (workers x observed time)",
        |t| ratio(
            (t.workers.oncpu_ns + t.workers.runq_wait_ns) as f64,
            t.worker_threads * t.window_ns as f64,
        ),
    ),
    def(
        "relay_fsyncs_per_commit",
        "",
        "fsync/fdatasync calls on the relay log / commits (sync_relay_log=1 makes it ~1)",
        |t| t.per_commit(t.relay.fsync_calls as f64),
    ),
    def(
        "relay_fsync_mean_us",
        "us",
        "time in relay-log fsync/fdatasync / such calls (0 without calls)",
        |t| ratio(t.relay.fsync_ns as f64, t.relay.fsync_calls as f64) / 1e3,
    ),
    def(
        "commit_wait_us_per_commit",
        "us",
        "user threads' futex wait on the redo log's named locks (redo.*) / commits",
        |t| t.us_per_commit(t.user_redo_lock_ns),
    ),
    def(
        "lock_wait_us_per_commit",
        "us",
        "user threads' futex wait on anything but the redo log's locks (row locks, latches, gates) / commits",
        |t| t.us_per_commit((t.user.futex_wait_ns as f64 - t.user_redo_lock_ns).max(0.0)),
    ),
    def(
        "lock_waits_per_commit",
        "",
        "user threads' futex waits outside the redo log's locks / commits",
        |t| t.per_commit((t.user.futex_waits as f64 - t.user_redo_lock_waits).max(0.0)),
    ),
    def(
        "runq_wait_us_per_commit",
        "us",
        "user threads' run-queue wait / commits",
        |t| t.us_per_commit(t.user.runq_wait_ns as f64),
    ),
];

#[cfg(test)]
mod tests {
    use super::SIGNALS;

    #[test]
    fn names_are_unique_and_documented() {
        let mut names: Vec<&str> = SIGNALS.iter().map(|d| d.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a signal name appears twice");
        assert!(SIGNALS.iter().all(|d| !d.meaning.is_empty()));
    }
}
