//! Sums over the windows that every summary signal is computed from.

use redoctor_probes_common::signals::{FileIo, Histogram, PageSyncs, RoleSignals, Signals};
use redoctor_probes_common::{FileKind, Role};

use super::{merge_hists, ratio};

const LOG_ROLES: [Role; 3] = [Role::LogWriter, Role::LogFlusher, Role::LogNotifier];

/// Counts and times summed over all windows (threads: the largest count
/// seen in any window).
#[derive(Debug, Default)]
pub struct Totals {
    pub windows: usize,
    pub window_ns: u64,
    pub commits: u64,
    pub commits_known: bool,
    pub cores: f64,
    pub oncpu_ns: u64,
    pub runq_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    pub runq_hist: Histogram,
    pub user_threads: f64,
    /// WAL-buffer-full writes by backends (PostgreSQL USDT), summed.
    pub wal_buffer_full: u64,
    /// Time transactions were in flight (PostgreSQL USDT), ns, summed;
    /// `None` without the transaction start probe.
    pub txn_ns: Option<u64>,
    pub log_threads: f64,
    pub commit_path_wakeups: u64,
    pub futex_waits: u64,
    pub redo: FileTotals,
    pub binlog: FileTotals,
    /// The doublewrite buffer's own files (zero where it lives in a
    /// system tablespace, or is off).
    pub doublewrite: FileTotals,
    /// The data files (tablespaces; MariaDB's system tablespace with its
    /// doublewrite area): their positional reads are the pages read on
    /// buffer-pool misses.
    pub data: FileTotals,
    pub redo_fsync_hist: Histogram,
    pub data_read_hist: Histogram,
    pub user: RoleTotals,
    pub log: RoleTotals,
    /// User threads' futex wait on the redo log's named locks (`redo.*`):
    /// the commit wait; and the number of such waits.
    pub user_redo_lock_ns: f64,
    pub user_redo_lock_waits: f64,
    /// User threads' futex wait on the doublewrite buffer's named locks
    /// (`dblwr.*`: the legacy design's mutex and slots, the files design's
    /// segments): a user thread flushing a page itself, queued there.
    pub user_dblwr_lock_ns: f64,
    /// Page syncs as the engine timed them (the bundled engine's
    /// `redoctor_page_syncs`), summed; `None` where no window had them.
    pub page_syncs: Option<PageSyncs>,
    /// A replica's threads (zero elsewhere): receiver, applier, workers.
    pub receiver: RoleTotals,
    pub applier: RoleTotals,
    pub workers: RoleTotals,
    /// The page-writing threads (the engine's `page_cleaner/N`, MariaDB's
    /// page cleaner, PostgreSQL's background writer).
    pub page_writer: RoleTotals,
    pub applier_threads: f64,
    pub worker_threads: f64,
    /// The relay log's file I/O.
    pub relay: FileTotals,
    /// Receiver and applier futex wait on the relay log's lock
    /// (`relay_log.lock`, the `lock` arbitration design).
    pub relay_lock_ns: f64,
    /// Wakeups between receiver and applier, and between applier and
    /// workers (either direction).
    pub receiver_applier_wakeups: u64,
    pub applier_worker_wakeups: u64,
    /// Commits/s and user futex wait of the first and last half of the windows.
    pub tps_halves: Option<(f64, f64)>,
    pub user_futex_halves: Option<(f64, f64)>,
}

/// One file kind's I/O, summed.
#[derive(Debug, Default, Clone, Copy)]
pub struct FileTotals {
    pub write_calls: u64,
    pub write_bytes: u64,
    pub fsync_calls: u64,
    pub fsync_ns: u64,
    pub read_calls: u64,
    pub read_ns: u64,
    /// Of `write_calls`, the background writers' (page cleaners, checkpointers).
    pub background_write_calls: u64,
}

/// A set of roles' scheduler figures, summed.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoleTotals {
    pub oncpu_ns: u64,
    pub switches: u64,
    pub runq_wait_ns: u64,
    pub futex_wait_ns: u64,
    pub futex_waits: u64,
}

impl Totals {
    pub fn of(windows: &[Signals]) -> Totals {
        let role_threads = |r: Role| {
            windows
                .iter()
                .filter_map(|w| w.roles.get(&r).map(|x| x.threads))
                .max()
                .unwrap_or(0) as f64
        };
        let half = windows.len() / 2;
        let (first, last) = windows.split_at(half);
        let tps = |ws: &[Signals]| {
            let ns: u64 = ws.iter().map(|w| w.window_ns).sum();
            ws.iter().filter_map(|w| w.engine.commits).sum::<u64>() as f64 / ns.max(1) as f64
        };
        let user_futex = |ws: &[Signals]| roles(ws, &[Role::User]).futex_wait_ns as f64;
        let (mut redo_ns, mut redo_waits, mut dblwr_ns) = (0.0, 0.0, 0.0);
        let mut relay_lock_ns = 0.0;
        for l in windows.iter().flat_map(|w| &w.named_lock_waits) {
            if l.lock == "relay_log.lock" {
                relay_lock_ns += [Role::Receiver, Role::Applier]
                    .iter()
                    .filter_map(|r| l.wait_ns_by_role.get(r))
                    .sum::<u64>() as f64;
            }
            if l.lock.starts_with("dblwr.") {
                dblwr_ns += l.wait_ns_by_role.get(&Role::User).copied().unwrap_or(0) as f64;
            }
            if l.lock.starts_with("redo.") {
                let user_ns = l.wait_ns_by_role.get(&Role::User).copied().unwrap_or(0) as f64;
                redo_ns += user_ns;
                redo_waits += l.waits as f64 * ratio(user_ns, l.wait_ns as f64);
            }
        }
        Totals {
            windows: windows.len(),
            window_ns: windows.iter().map(|w| w.window_ns).sum(),
            commits: windows.iter().filter_map(|w| w.engine.commits).sum(),
            commits_known: windows.iter().any(|w| w.engine.commits.is_some()),
            cores: windows
                .iter()
                .map(|w| w.cpu.affinity_cpus)
                .max()
                .unwrap_or(0)
                .max(1) as f64,
            oncpu_ns: windows.iter().map(|w| w.cpu.oncpu_ns).sum(),
            runq_ns: windows.iter().map(|w| w.cpu.runq_wait_ns).sum(),
            voluntary: windows.iter().map(|w| w.cpu.voluntary_switches).sum(),
            involuntary: windows.iter().map(|w| w.cpu.involuntary_switches).sum(),
            runq_hist: merge_hists(windows.iter().map(|w| &w.cpu.runq_latency)),
            user_threads: role_threads(Role::User),
            wal_buffer_full: windows
                .iter()
                .filter_map(|w| w.engine.wal_buffer_full_writes)
                .sum(),
            txn_ns: windows
                .iter()
                .filter_map(|w| w.engine.txn_ns)
                .reduce(|a, b| a + b),
            // Log threads that ran: MySQL's and the bundled engine's stay
            // alive, paused, while `innodb_log_writer_threads` is OFF.
            log_threads: LOG_ROLES
                .iter()
                .map(|r| {
                    windows
                        .iter()
                        .filter_map(|w| w.roles.get(r))
                        .filter(|x| x.oncpu_ns > 0 || x.wakeups_sent > 0)
                        .map(|x| x.threads)
                        .max()
                        .unwrap_or(0) as f64
                })
                .sum(),
            commit_path_wakeups: windows.iter().map(|w| w.wakeups.commit_path).sum(),
            futex_waits: windows
                .iter()
                .flat_map(|w| w.roles.values().map(|r| r.futex_waits))
                .sum(),
            redo: files(windows, FileKind::Redo),
            binlog: files(windows, FileKind::Binlog),
            doublewrite: files(windows, FileKind::Doublewrite),
            data: files(windows, FileKind::Data),
            redo_fsync_hist: merge_hists(
                windows
                    .iter()
                    .filter_map(|w| w.io.get(&FileKind::Redo).map(|io| &io.fsync_latency)),
            ),
            data_read_hist: merge_hists(
                windows
                    .iter()
                    .filter_map(|w| w.io.get(&FileKind::Data).map(|io| &io.read_latency)),
            ),
            user: roles(windows, &[Role::User]),
            log: roles(windows, &LOG_ROLES),
            user_redo_lock_ns: redo_ns,
            user_redo_lock_waits: redo_waits,
            user_dblwr_lock_ns: dblwr_ns,
            page_syncs: windows
                .iter()
                .filter_map(|w| w.engine.page_syncs)
                .reduce(|a, b| a + b),
            receiver: roles(windows, &[Role::Receiver]),
            applier: roles(windows, &[Role::Applier]),
            workers: roles(windows, &[Role::Worker]),
            page_writer: roles(windows, &[Role::PageWriter]),
            applier_threads: role_threads(Role::Applier),
            worker_threads: role_threads(Role::Worker),
            relay: files(windows, FileKind::Relay),
            relay_lock_ns,
            receiver_applier_wakeups: wake_edges(windows, Role::Receiver, Role::Applier),
            applier_worker_wakeups: wake_edges(windows, Role::Applier, Role::Worker),
            tps_halves: (half > 0).then(|| (tps(first), tps(last))),
            user_futex_halves: (half > 0).then(|| (user_futex(first), user_futex(last))),
        }
    }

    /// Observed seconds (never 0).
    pub fn secs(&self) -> f64 {
        (self.window_ns as f64 / 1e9).max(1e-9)
    }

    /// `x / commits`, or 0 without commits.
    pub fn per_commit(&self, x: f64) -> f64 {
        ratio(x, self.commits as f64)
    }

    /// `ns / commits` in microseconds, or 0 without commits.
    pub fn us_per_commit(&self, ns: f64) -> f64 {
        self.per_commit(ns) / 1e3
    }

    /// On-CPU plus run-queue time over the window: threads running or waiting.
    pub fn avg_runnable(&self) -> f64 {
        (self.oncpu_ns + self.runq_ns) as f64 / self.window_ns.max(1) as f64
    }

    pub fn commits_per_s(&self) -> f64 {
        self.commits as f64 / self.secs()
    }
}

fn files(windows: &[Signals], kind: FileKind) -> FileTotals {
    windows
        .iter()
        .filter_map(|w| w.io.get(&kind))
        .fold(FileTotals::default(), |t, io: &FileIo| FileTotals {
            write_calls: t.write_calls + io.write_calls,
            write_bytes: t.write_bytes + io.write_bytes,
            fsync_calls: t.fsync_calls + io.fsync_calls,
            fsync_ns: t.fsync_ns + io.fsync_ns,
            read_calls: t.read_calls + io.read_calls,
            read_ns: t.read_ns + io.read_ns,
            background_write_calls: t.background_write_calls + io.background_write_calls,
        })
}

/// Wakeups between roles `a` and `b`, either way.
fn wake_edges(windows: &[Signals], a: Role, b: Role) -> u64 {
    windows
        .iter()
        .flat_map(|w| &w.wakeups.by_role)
        .filter(|e| (e.waker, e.wakee) == (a, b) || (e.waker, e.wakee) == (b, a))
        .map(|e| e.count)
        .sum()
}

fn roles(windows: &[Signals], which: &[Role]) -> RoleTotals {
    windows
        .iter()
        .flat_map(|w| which.iter().filter_map(|r| w.roles.get(r)))
        .fold(RoleTotals::default(), |t, r: &RoleSignals| RoleTotals {
            oncpu_ns: t.oncpu_ns + r.oncpu_ns,
            switches: t.switches + r.voluntary_switches + r.involuntary_switches,
            runq_wait_ns: t.runq_wait_ns + r.runq_wait_ns,
            futex_wait_ns: t.futex_wait_ns + r.futex_wait_ns,
            futex_waits: t.futex_waits + r.futex_waits,
        })
}
