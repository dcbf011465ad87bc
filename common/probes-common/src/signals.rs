//! [`Signals`]: what the probes measured about one process in one window —
//! the one contract between the probes and the rules that read them.
//!
//! Every count is over the window only (differences of cumulative kernel
//! counters). Units are in the field names (`_ns`, `_bytes`, `_per_s`) and
//! docs. Bump [`SCHEMA_VERSION`] on any incompatible change; fields added
//! with a default (`#[serde(default)]`) keep the version, since readers of
//! the old layout ignore them and readers of the new one accept old JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::kinds::{FileKind, Role};

/// Version of the [`Signals`] layout.
pub const SCHEMA_VERSION: u32 = 1;

/// A measurement that is not available in this run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unavailable {
    /// What is missing (a tracepoint group or a probe-point symbol).
    pub what: String,
    /// Why, and how to fix it.
    pub why: String,
}

/// One window of measurements of one process.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Signals {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Target process id (tgid).
    pub pid: u32,
    /// Name of the target profile that assigned roles and file kinds.
    pub profile: String,
    /// Window end, milliseconds since the Unix epoch.
    pub end_unix_ms: u64,
    /// Window length, ns (monotonic clock, between two readings of the maps).
    pub window_ns: u64,
    /// The target exited during this window: the window ends at the exit
    /// and is the last one.
    pub target_exited: bool,
    /// Scheduler view: on-CPU time, switches, run-queue latency, saturation.
    pub cpu: Cpu,
    /// Per role (only roles with at least one known thread or event).
    pub roles: BTreeMap<Role, RoleSignals>,
    /// Per thread of the target that ran, switched or waited in the window.
    pub threads: Vec<ThreadSignals>,
    /// Who woke whom.
    pub wakeups: Wakeups,
    /// Writes and fsyncs per file kind (redo, binlog, data, other).
    pub io: BTreeMap<FileKind, FileIo>,
    /// Futex (mutex/condvar) waits by lock address, largest total first (top 20).
    pub futex_waits: Vec<LockWait>,
    /// Futex waits summed per named lock of the engine (every address, not
    /// only the top 20), largest total first (top 30); empty when the
    /// target tells no names (no `redoctor_named_locks` probe point).
    /// With a server that names its own lock waits through USDT probes
    /// (PostgreSQL's LWLock tranches), those waits by name instead, timed
    /// from the server's wait-start to wait-done probes (`addresses` 0).
    #[serde(default)]
    pub named_lock_waits: Vec<NamedLockWait>,
    /// The target's processes at the window's end, when it is a tree of
    /// processes (profile `[target] follow_children`); empty otherwise.
    #[serde(default)]
    pub processes: Vec<ProcessSignals>,
    /// Engine events from the uprobes on its probe points.
    pub engine: EngineEvents,
    /// Per BPF program: events handled and time spent in the window (the
    /// probes' own cost). Measured in one window of every N (`--cost-every`,
    /// default 10, the first included), because the kernel's run-time
    /// statistics add to every event while on; empty in the other windows.
    pub probe_cost: Vec<ProgramCost>,
    /// Measurements that were not available, with why (e.g. stripped probe symbols).
    pub unavailable: Vec<Unavailable>,
    /// Events the programs could not record in the window because a hash
    /// map was full (map `events_lost_total`); 0 in a healthy run.
    #[serde(default)]
    pub events_lost: u64,
}

/// Scheduler signals for the whole target.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cpu {
    /// Sum over target threads of the time they ran on a CPU, ns.
    pub oncpu_ns: u64,
    /// `oncpu_ns / window_ns`: CPUs' worth of work done (1.0 = one full CPU).
    pub cpus_busy: f64,
    /// Context switches where the thread blocked (futex, I/O, sleep).
    pub voluntary_switches: u64,
    /// Context switches where the thread was still runnable (preempted or yielded).
    pub involuntary_switches: u64,
    /// Sum over target threads of the time they were runnable but not running, ns.
    pub runq_wait_ns: u64,
    /// Average number of target threads runnable (running or waiting for a CPU):
    /// `(oncpu_ns + runq_wait_ns) / window_ns`.
    pub avg_runnable_threads: f64,
    /// CPUs in the target's affinity mask (what it may use).
    pub affinity_cpus: u32,
    /// `avg_runnable_threads / affinity_cpus`: above 1.0 threads queue for CPUs (saturated).
    pub saturation: f64,
    /// Run-queue latency (became runnable → switched in) histogram, log2 ns buckets.
    pub runq_latency: Histogram,
    /// On-CPU time of the user role's threads that was polling for work
    /// (`engine.idle_poll_ns`, at most the role's on-CPU time), ns. It is
    /// left out of `oncpu_ns`, `cpus_busy`, `avg_runnable_threads`,
    /// `saturation` and `roles.user.oncpu_ns`: a polling thread is on a CPU,
    /// but the CPUs are idle for the work. `threads[]` keeps it.
    #[serde(default)]
    pub idle_poll_ns: u64,
}

impl Cpu {
    /// Sets `cpus_busy`, `avg_runnable_threads` and `saturation` from the
    /// times over a window of `window_ns`.
    pub fn derive(&mut self, window_ns: u64) {
        let w = window_ns.max(1) as f64;
        self.cpus_busy = self.oncpu_ns as f64 / w;
        self.avg_runnable_threads = (self.oncpu_ns + self.runq_wait_ns) as f64 / w;
        if self.affinity_cpus > 0 {
            self.saturation = self.avg_runnable_threads / self.affinity_cpus as f64;
        }
    }
}

/// A log2 histogram: bucket `[lo_ns, hi_ns)` holds `count` samples.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Histogram {
    /// Samples in the window.
    pub count: u64,
    /// Non-empty buckets, ascending.
    pub buckets: Vec<Bucket>,
    /// Upper bound (ns) of the bucket holding the median; 0 when empty.
    pub p50_ns_le: u64,
    /// Upper bound (ns) of the bucket holding the 99th percentile; 0 when empty.
    pub p99_ns_le: u64,
}

/// One histogram bucket.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Bucket {
    /// Inclusive lower bound, ns.
    pub lo_ns: u64,
    /// Exclusive upper bound, ns.
    pub hi_ns: u64,
    /// Samples in the bucket.
    pub count: u64,
}

/// Signals of one role (sum over its threads).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RoleSignals {
    /// Threads of this role seen alive at the window's end.
    pub threads: u32,
    /// On-CPU time, ns.
    pub oncpu_ns: u64,
    /// Voluntary context switches.
    pub voluntary_switches: u64,
    /// Involuntary context switches.
    pub involuntary_switches: u64,
    /// Time runnable but waiting for a CPU, ns.
    pub runq_wait_ns: u64,
    /// Wakeups this role's threads issued (to any thread of the target).
    pub wakeups_sent: u64,
    /// Wakeups this role's threads received (from anyone).
    pub wakeups_received: u64,
    /// Time blocked in futex waits, ns.
    pub futex_wait_ns: u64,
    /// Futex waits.
    pub futex_waits: u64,
}

/// Signals of one thread.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ThreadSignals {
    /// Thread id.
    pub tid: u32,
    /// Thread name (`comm`, at most 15 bytes); empty if it exited before it could be read.
    pub comm: String,
    pub role: Role,
    /// On-CPU time, ns.
    pub oncpu_ns: u64,
    /// Voluntary context switches.
    pub voluntary_switches: u64,
    /// Involuntary context switches.
    pub involuntary_switches: u64,
    /// Time runnable but waiting for a CPU, ns.
    pub runq_wait_ns: u64,
}

/// Who woke whom (`sched_waking`, counted in the waker's context).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Wakeups {
    /// Wakeups where both waker and wakee are target threads.
    pub internal: u64,
    /// Wakeups of target threads by threads outside it (or interrupts).
    pub from_outside: u64,
    /// Wakeups by target threads of threads outside it.
    pub to_outside: u64,
    /// Internal wakeups between commit-path roles (user, log_*, binlog):
    /// the ping-pong a commit pays for.
    pub commit_path: u64,
    /// `commit_path / engine.commits`; absent without commits.
    pub commit_path_per_commit: Option<f64>,
    /// By (waker role, wakee role), largest first; `external` is outside the target.
    pub by_role: Vec<WakeEdge>,
    /// By (waker thread, wakee thread) inside the target, largest first (top 50).
    pub by_thread: Vec<ThreadWakeEdge>,
}

/// Wakeups from one role to another.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WakeEdge {
    pub waker: Role,
    pub wakee: Role,
    /// Wakeups in the window.
    pub count: u64,
}

/// Wakeups from one thread to another.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadWakeEdge {
    pub waker_tid: u32,
    pub waker_comm: String,
    pub wakee_tid: u32,
    pub wakee_comm: String,
    /// Wakeups in the window.
    pub count: u64,
}

/// I/O on the files of one kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FileIo {
    /// write(2)/pwrite64(2) calls that succeeded.
    pub write_calls: u64,
    /// Bytes those calls wrote.
    pub write_bytes: u64,
    /// `write_bytes / window`, bytes per second.
    pub write_bytes_per_s: f64,
    /// fsync(2) + fdatasync(2) calls.
    pub fsync_calls: u64,
    /// Time inside them, ns.
    pub fsync_ns: u64,
    /// Their latency histogram.
    pub fsync_latency: Histogram,
    /// Of `fsync_calls`, the fdatasync(2) ones (PostgreSQL syncs WAL with
    /// fdatasync by default and new WAL segments with fsync).
    #[serde(default)]
    pub fdatasync_calls: u64,
    /// Positional reads (pread64/preadv/preadv2(2)) that succeeded: on data
    /// files, the pages read on buffer-pool misses.
    #[serde(default)]
    pub read_calls: u64,
    /// Bytes they read.
    #[serde(default)]
    pub read_bytes: u64,
    /// `read_calls / window`, reads per second.
    #[serde(default)]
    pub reads_per_s: f64,
    /// Time inside them, ns.
    #[serde(default)]
    pub read_ns: u64,
    /// Their latency histogram.
    #[serde(default)]
    pub read_latency: Histogram,
    /// Of `write_calls`, those made in the background: by any thread that
    /// runs no transactions (page cleaners, checkpointers, PostgreSQL's
    /// background writer, MariaDB's task pool; the profile's
    /// `foreground_roles` say which do); the rest were made in the
    /// foreground (on data files: user threads flushing a page themselves,
    /// PostgreSQL's backends).
    #[serde(default)]
    pub background_write_calls: u64,
    /// The bytes they wrote.
    #[serde(default)]
    pub background_write_bytes: u64,
}

/// Futex waits on one address.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LockWait {
    /// The futex word's address in the target, hex (`0x...`).
    pub uaddr: String,
    /// Time blocked in FUTEX_WAIT(_BITSET) on it, ns.
    pub wait_ns: u64,
    /// Such waits.
    pub waits: u64,
    /// Wait time by role of the waiting thread, ns.
    pub wait_ns_by_role: BTreeMap<Role, u64>,
    /// The engine's name for the lock whose memory holds this futex word
    /// (`redo.flush_waits`, `lock_sys.shard3`, ...; see `engine/PROBES.md`,
    /// `redoctor_named_locks`); absent when the address is in no named range
    /// or the target tells no names.
    #[serde(default)]
    pub lock: Option<String>,
}

/// Futex waits on the addresses inside one named lock of the engine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NamedLockWait {
    /// The engine's name for the lock (`redo.flush_waits`, `throttle`, ...).
    pub lock: String,
    /// Time blocked in FUTEX_WAIT(_BITSET) on it, ns.
    pub wait_ns: u64,
    /// Such waits.
    pub waits: u64,
    /// Distinct futex words waited on inside it (an array of wait slots has many).
    pub addresses: u32,
    /// Wait time by role of the waiting thread, ns.
    pub wait_ns_by_role: BTreeMap<Role, u64>,
}

/// One process of a multi-process target.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcessSignals {
    pub pid: u32,
    /// Its parent's pid (0 when not known).
    pub parent: u32,
    /// Its role, from its title (profile `[[processes]]`), else its main
    /// thread's name.
    pub role: Role,
    /// Its title (`/proc/PID/cmdline`, arguments joined by spaces).
    pub title: String,
}

/// Engine events (uprobes on the `redoctor_*` probe points, or the
/// server's own USDT probes).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EngineEvents {
    /// Probe points with an attached uprobe (and the profile's commit point).
    pub attached: Vec<String>,
    /// Commits acknowledged in the window: difference of the cumulative
    /// `commits` carried by `redoctor_counters_tick` (at most 100 ms late);
    /// absent when no tick was seen yet. With USDT probes (PostgreSQL), the
    /// hits of the commit probe (`transaction__commit`); with a profile's
    /// commit point (`Profile::commit_points`, e.g. MariaDB), the calls of
    /// that function in the window; absent without either.
    pub commits: Option<u64>,
    /// Time transactions that ended in the window were in flight, ns
    /// (USDT `transaction__start` to `__commit`/`__abort`); over the window,
    /// the mean number of transactions in flight.
    #[serde(default)]
    pub txn_ns: Option<u64>,
    /// Aborted transactions (USDT `transaction__abort`).
    #[serde(default)]
    pub aborts: Option<u64>,
    /// WAL records inserted (USDT `wal__insert`).
    #[serde(default)]
    pub wal_records: Option<u64>,
    /// WAL segment switches (USDT `wal__switch`).
    #[serde(default)]
    pub wal_switches: Option<u64>,
    /// Times a backend found the WAL buffers full and wrote them itself
    /// (USDT `wal__buffer__write__dirty__start`): `wal_buffers` too small.
    #[serde(default)]
    pub wal_buffer_full_writes: Option<u64>,
    /// `commits / window`, per second.
    pub commits_per_s: Option<f64>,
    /// The per-batch fields below (`redo_writes` .. `flush_waiters_woken`)
    /// come from the per-batch probe points and are absent unless those are
    /// attached (`AttachOptions::batch_points`, `redoctor probe --batch-probes`).
    /// Redo writes (`redoctor_log_write` hits).
    pub redo_writes: Option<u64>,
    /// Of those, writes led by a user thread (RT0).
    pub redo_writes_by_user: Option<u64>,
    /// Redo bytes written (sum of `to - from` lsn ranges).
    pub redo_bytes: Option<u64>,
    /// `redo_bytes / window`, bytes per second (without batch points, see
    /// `io.redo.write_bytes_per_s`: bytes written to redo files, block padding included).
    pub redo_bytes_per_s: Option<f64>,
    /// Redo fdatasyncs (`redoctor_log_flush` hits).
    pub redo_fsyncs: Option<u64>,
    /// Of those, flushes led by a user thread (RT0).
    pub redo_fsyncs_by_user: Option<u64>,
    /// Time in redo fdatasync as the engine measured it, ns.
    pub redo_fsync_ns: Option<u64>,
    /// Waiters woken by flush notifications (`redoctor_flush_notified`).
    pub flush_waiters_woken: Option<u64>,
    /// `commits / redo fsyncs` (group commit size): fsyncs from `redo_fsyncs`
    /// when the batch points are attached, else the fsync/fdatasync calls on
    /// redo files (`io.redo.fsync_calls`); absent without commits or fsyncs.
    pub commits_per_fsync: Option<f64>,
    /// Redo mode switches.
    pub mode_switches: u64,
    /// Redo mode after the last switch in the window: `on` (RT1) / `off` (RT0).
    pub mode_after_switch: Option<String>,
    /// Checkpoints completed.
    pub checkpoints: u64,
    /// errno of an I/O failure that made the engine stop acknowledging commits.
    pub fail_stop_errno: Option<i32>,
    /// Time the target's threads polled for their next piece of work instead
    /// of sleeping (`serve --net-spin`), ns, from `redoctor_counters_tick`:
    /// taken out of `cpu.oncpu_ns` and of the user role's (see
    /// `Cpu::idle_poll_ns`); absent without the tick.
    #[serde(default)]
    pub idle_poll_ns: Option<u64>,
    /// Page syncs in the window as the engine timed them around the
    /// `fdatasync` (`redoctor_page_syncs`, the 100-ms tick): with a
    /// modelled device its wait is here and not in `io`'s syscall times.
    /// Absent without the tick (an engine without it, or another server).
    #[serde(default)]
    pub page_syncs: Option<PageSyncs>,
}

/// Page syncs in a window as the engine timed them (the probe interface's
/// type: `crate::abi::PageSyncs`).
pub use crate::abi::PageSyncs;

/// One BPF program's cost in the window (kernel BPF run-time statistics).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProgramCost {
    pub program: String,
    /// Times it ran (every event of its hook, in any process).
    pub runs: u64,
    /// Total time it ran, ns.
    pub run_ns: u64,
    /// `run_ns / runs`, ns per event.
    pub ns_per_run: Option<f64>,
}
