//! The BPF maps as Rust types: the structs mirror `src/bpf/redoctor.bpf.c`
//! field for field (`repr(C)`), and [`MapsReading`] holds one cumulative
//! reading of all of them. Every value in the maps only grows; a window is
//! the difference of two readings ([`MapsReading::delta`]). Reading them
//! from loaded probes is `map_reads`, so the loader can use these layouts
//! without depending on what reads through it.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use aya::Pod;

pub const HIST_BUCKETS: usize = 64;
/// `READ_BUCKETS` of the BPF source: the read-latency histogram's log2
/// buckets (1 ns to 2 s, the last open).
pub const READ_BUCKETS: usize = 32;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadSched {
    /// ns on CPU (the kernel's `sum_exec_runtime`), completed slices.
    pub oncpu_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    pub runq_wait_ns: u64,
    /// Address of the thread's `task_struct` (set at its first switch-out;
    /// 0 before): names the wakee of [`WakePair`] keys.
    pub task: u64,
    /// Thread name at its first and every 64th switch-out (NUL-padded).
    pub comm: [u8; 16],
    /// The kernel's cumulative run-queue wait of the thread at its last
    /// switch-out, ns.
    pub run_delay_ns: u64,
    /// Futex word it is blocked on (0 = none).
    pub futex_uaddr: u64,
    /// When it blocked there, kernel ns.
    pub futex_since_ns: u64,
    /// [`comm_family`] of `comm`, as the kernel computed it.
    pub family: u32,
    /// Owner of a `thread_sched_slots` entry (0 = free); unused in the
    /// overflow hash.
    pub tid: u32,
    /// Time blocked in futex waits, ns (every wait).
    pub futex_wait_ns: u64,
    /// Futex waits (every wait).
    pub futex_waits: u64,
    /// The kernel's cumulative on-CPU ns of the thread at its last switch-out.
    pub exec_ns: u64,
    /// When the traced syscall the thread is in began (fsyncs only), kernel ns.
    pub call_start_ns: u64,
    /// That call's descriptor.
    pub call_fd: u32,
    /// What call it is in (1 write, 2 fsync; 0 none).
    pub call_kind: u32,
    /// Set by user space: [`WRITER_BACKGROUND`] when the thread runs no
    /// transactions (page cleaner, checkpointer, PostgreSQL's background
    /// writer, a task pool), and its writes are counted apart
    /// ([`FdIo::background_write_calls`]); [`WRITER_FOREGROUND`] when it
    /// does; 0 until marked (its writes then count where the profile's
    /// `new_threads` says).
    pub background_writer: u32,
    pub pad: u32,
}

/// Byte offset of [`ThreadSched::tid`], the owner word of an entry.
pub const THREAD_OWNER_OFFSET: usize = std::mem::offset_of!(ThreadSched, tid);
/// Byte offset of [`ThreadSched::background_writer`], the word user space sets.
pub const THREAD_BACKGROUND_WRITER_OFFSET: usize =
    std::mem::offset_of!(ThreadSched, background_writer);

/// [`ThreadSched::background_writer`] of a thread that runs transactions.
pub const WRITER_FOREGROUND: u32 = 1;
/// [`ThreadSched::background_writer`] of a thread that runs none.
pub const WRITER_BACKGROUND: u32 = 2;

/// `FD_SLOTS` of the BPF source: descriptors below it are entries of
/// `io_by_fd_slots`, higher ones keys of `io_by_fd`.
pub const FD_SLOTS: usize = 1024;

/// The family of a thread name: FNV-1a of the name without its ASCII
/// digits, so `user/1` and `user/17` are one family. Futex waits are keyed
/// by family in the kernel (see `futex_key` in the BPF source, which
/// computes the same hash).
pub fn comm_family(comm: &str) -> u32 {
    comm.bytes()
        .take(16)
        .take_while(|&b| b != 0)
        .filter(|b| !b.is_ascii_digit())
        .fold(2166136261u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(16777619)
        })
}

impl ThreadSched {
    /// The recorded thread name.
    pub fn comm(&self) -> String {
        let end = self.comm.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.comm[..end]).into_owned()
    }
}

/// A `wakeups_by_pair` key. When the waker is in the target, `wakee` is
/// the wakee's `task_struct` address (the kernel has it without a memory
/// read at `sched_waking`), named through [`ThreadSched::task`]; otherwise
/// it is `tgid << 32 | tid`. Kernel addresses have their top bit set, ids
/// never.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct WakePair {
    pub waker_tid: u32,
    pub waker_pid: u32,
    pub wakee: u64,
}

impl WakePair {
    /// Whether `wakee` is a task address (else it is `tgid << 32 | tid`).
    pub fn wakee_is_task(&self) -> bool {
        self.wakee >> 63 == 1
    }

    /// The wakee's `(tgid, tid)`: a task address is a thread of the
    /// waker's process (the target) when `tasks` (task address -> tid of
    /// the target's threads) has it, else a thread outside the target whose
    /// ids were not read, `(0, 0)`.
    pub fn wakee_ids(&self, tasks: &HashMap<u64, u32>) -> (u32, u32) {
        if self.wakee_is_task() {
            match tasks.get(&self.wakee) {
                Some(&tid) => (self.waker_pid, tid),
                None => (0, 0),
            }
        } else {
            ((self.wakee >> 32) as u32, self.wakee as u32)
        }
    }
}

/// A slot of `wakeups_by_pair_recent` (per CPU, direct-mapped).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairSlot {
    pub pair: WakePair,
    pub count: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdIo {
    /// write/pwrite64/writev/pwritev(2) calls that succeeded, by threads
    /// not marked background writers. Each write counts in this pair or
    /// in the background pair, never both: a read that races a write
    /// (the slots are read field by field) moves it to the next window,
    /// not to the other caller.
    pub foreground_write_calls: u64,
    /// The bytes they wrote.
    pub foreground_write_bytes: u64,
    pub fsync_calls: u64,
    pub fsync_ns: u64,
    pub fsync_ns_log2: [u64; HIST_BUCKETS],
    /// Of `fsync_calls`, the fdatasync(2) ones.
    pub fdatasync_calls: u64,
    /// pread64/preadv/preadv2(2) calls that succeeded.
    pub read_calls: u64,
    /// Bytes they read.
    pub read_bytes: u64,
    /// Time inside them, ns.
    pub read_ns: u64,
    /// Their latency, log2 buckets of ns (the last one open).
    pub read_ns_log2: [u64; READ_BUCKETS],
    /// The writes by threads marked background writers.
    pub background_write_calls: u64,
    /// The bytes they wrote.
    pub background_write_bytes: u64,
}

impl FdIo {
    /// Every write that succeeded, whoever made it.
    pub fn write_calls(&self) -> u64 {
        self.foreground_write_calls + self.background_write_calls
    }

    /// The bytes they wrote.
    pub fn write_bytes(&self) -> u64 {
        self.foreground_write_bytes + self.background_write_bytes
    }
}

impl Default for FdIo {
    fn default() -> Self {
        FdIo {
            foreground_write_calls: 0,
            foreground_write_bytes: 0,
            fsync_calls: 0,
            fsync_ns: 0,
            fsync_ns_log2: [0; HIST_BUCKETS],
            fdatasync_calls: 0,
            read_calls: 0,
            read_bytes: 0,
            read_ns: 0,
            read_ns_log2: [0; READ_BUCKETS],
            background_write_calls: 0,
            background_write_bytes: 0,
        }
    }
}

/// A `io_by_proc_fd` key: a descriptor of one process of the target and
/// the file it named at the call (with `follow_children`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ProcFd {
    pub tgid: u32,
    pub fd: u32,
    pub ino: u64,
    /// The kernel's encoding of the file's device (`major << 20 | minor`).
    pub dev: u32,
    pub pad: u32,
}

/// A file: its device (the kernel's encoding, `major << 20 | minor`) and
/// inode number; all zero when unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u32,
    pub ino: u64,
}

/// What I/O is counted per: a descriptor of a process and, with
/// `follow_children`, the file it named at the call (else no file: the
/// descriptor's counts go to the path it has at the window's end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct IoKey {
    pub pid: u32,
    pub fd: u32,
    pub file: FileId,
}

impl From<ProcFd> for IoKey {
    fn from(k: ProcFd) -> IoKey {
        IoKey {
            pid: k.tgid,
            fd: k.fd,
            file: FileId {
                dev: k.dev,
                ino: k.ino,
            },
        }
    }
}

impl From<IoKey> for ProcFd {
    fn from(k: IoKey) -> ProcFd {
        ProcFd {
            tgid: k.pid,
            fd: k.fd,
            ino: k.file.ino,
            dev: k.file.dev,
            pad: 0,
        }
    }
}

/// A `usdt_lock_wait_by_name` key: a lock name the server reports (NUL-padded).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LockName {
    pub name: [u8; 32],
}

impl LockName {
    /// Where the name lies (process, address) when the probe could not
    /// read it (its page was not resident in the waiting process): the
    /// program keys such waits `\0@`, tgid at byte 4, address at byte 8.
    pub fn unread(&self) -> Option<(u32, u64)> {
        (self.name[0] == 0 && self.name[1] == b'@').then(|| {
            let tgid = u32::from_ne_bytes(self.name[4..8].try_into().unwrap());
            let addr = u64::from_ne_bytes(self.name[8..16].try_into().unwrap());
            (tgid, addr)
        })
    }

    pub fn as_string(&self) -> String {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(32);
        String::from_utf8_lossy(&self.name[..end]).into_owned()
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FutexKey {
    pub uaddr: u64,
    /// [`comm_family`] of the waiting threads' name.
    pub family: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FutexWait {
    pub wait_ns: u64,
    pub waits: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PointStats {
    pub hits: u64,
    pub sum: u64,
    pub last: u64,
    pub last_b: u64,
}

/// `engine_named_locks`: the last table the engine handed to
/// `redoctor_named_locks` (all zero before the first call).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NamedLocksTable {
    /// Address of the first entry in the target.
    pub table: u64,
    pub count: u64,
    /// Registry generation the table describes.
    pub generation: u64,
    /// Hits of the probe point.
    pub calls: u64,
}

// SAFETY: plain `repr(C)` integer structs without padding holes that matter
// (explicit `pad` fields), valid for any bit pattern.
unsafe impl Pod for ThreadSched {}
unsafe impl Pod for WakePair {}
unsafe impl Pod for PairSlot {}
unsafe impl Pod for FdIo {}
unsafe impl Pod for FutexKey {}
unsafe impl Pod for FutexWait {}
unsafe impl Pod for PointStats {}
unsafe impl Pod for NamedLocksTable {}
// SAFETY: plain `repr(C)` integers, no implicit padding (explicit `pad`).
unsafe impl Pod for ProcFd {}
// SAFETY: a byte array.
unsafe impl Pod for LockName {}

/// Slots of `engine_probe_point_hits` (enum `engine_point` in the C source).
pub mod point {
    pub const LOG_WRITE: usize = 0;
    pub const LOG_FLUSH: usize = 1;
    pub const FLUSH_NOTIFIED: usize = 2;
    pub const MODE_SWITCH: usize = 3;
    pub const CHECKPOINT: usize = 4;
    pub const FAIL_STOP: usize = 5;
    pub const COUNTERS_TICK: usize = 6;
    pub const LOG_WRITE_USER: usize = 7;
    pub const LOG_FLUSH_USER: usize = 8;
    pub const TXN_COMMIT: usize = 9;
    pub const TXN_ABORT: usize = 10;
    pub const WAL_INSERT: usize = 11;
    pub const WAL_SWITCH: usize = 12;
    pub const WAL_BUFFER_FULL: usize = 13;
    pub const IDLE_POLL: usize = 14;
    /// `redoctor_page_syncs`' six cumulative values, one slot each.
    pub const DBLWR_SYNCS: usize = 15;
    pub const DBLWR_SYNC_NS: usize = 16;
    pub const DATA_SYNCS: usize = 17;
    pub const DATA_SYNC_NS: usize = 18;
    pub const OVERLAPPED_SYNCS: usize = 19;
    pub const OVERLAPPED_SYNC_NS: usize = 20;
    pub const COUNT: usize = 21;
}

/// How [`MapsReading::read_as`] reads the maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// `BPF_MAP_LOOKUP_BATCH`: a few syscalls per map (falls back to
    /// [`Lookup::KeyByKey`] for a map the kernel cannot batch).
    Batch,
    /// One or two syscalls per entry: what kernels before 5.6 allow.
    KeyByKey,
}

/// All maps, read at one moment.
#[derive(Debug, Clone)]
pub struct MapsReading {
    pub at: Instant,
    pub threads: HashMap<u32, ThreadSched>,
    /// Task address -> tid of every thread in `threads` that has switched
    /// out (names the wakees of [`WakePair`] keys).
    pub tasks: HashMap<u64, u32>,
    /// Threads in the overflow hash (their array entry was taken).
    pub overflow_threads: HashSet<u32>,
    pub runq_hist: [u64; HIST_BUCKETS],
    /// `events_lost_total`, summed over CPUs.
    pub events_lost: u64,
    /// Wakeups per pair: `wakeups_by_pair` plus the per-CPU recent slots.
    pub wakeups: HashMap<WakePair, u64>,
    /// Pairs that had a count in a recent slot (their total is not all in
    /// `wakeups_by_pair`, so they must not be pruned from it).
    pub wakeups_in_slots: HashSet<WakePair>,
    /// Per process, descriptor and (with `follow_children`) file; with a
    /// single process, its pid and no file.
    pub io: HashMap<IoKey, FdIo>,
    pub futex: HashMap<FutexKey, FutexWait>,
    /// The target's processes (`tgid -> parent tgid`): `tracked_tgids` when
    /// following children, else the one target process.
    pub processes: HashMap<u32, u32>,
    /// Waits on locks the server names through its USDT probes.
    pub usdt_lock_waits: HashMap<LockName, FutexWait>,
    pub points: [PointStats; point::COUNT],
    pub named_locks: NamedLocksTable,
}

impl Default for MapsReading {
    fn default() -> Self {
        MapsReading {
            at: Instant::now(),
            threads: HashMap::new(),
            tasks: HashMap::new(),
            overflow_threads: HashSet::new(),
            runq_hist: [0; HIST_BUCKETS],
            events_lost: 0,
            wakeups: HashMap::new(),
            wakeups_in_slots: HashSet::new(),
            io: HashMap::new(),
            futex: HashMap::new(),
            processes: HashMap::new(),
            usdt_lock_waits: HashMap::new(),
            points: [PointStats::default(); point::COUNT],
            named_locks: NamedLocksTable::default(),
        }
    }
}

#[cfg(test)]
mod family_tests {
    use super::comm_family;

    #[test]
    fn digits_do_not_change_the_family() {
        assert_eq!(comm_family("user/1"), comm_family("user/17"));
        assert_eq!(comm_family("conn/3"), comm_family("conn/"));
        assert_ne!(comm_family("log_writer"), comm_family("log_flusher"));
        // FNV-1a 32 of "" and "a".
        assert_eq!(comm_family(""), 0x811c9dc5);
        assert_eq!(comm_family("a"), 0xe40c292c);
    }
}
