//! The BPF maps as Rust types, and one cumulative reading of all of them.
//!
//! The structs mirror `src/bpf/redoctor.bpf.c` field for field (`repr(C)`).
//! Every value in the maps only grows; a window is the difference of two
//! readings ([`MapsReading::delta`]).

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use aya::maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray};
use aya::Pod;

use crate::batch;
use crate::error::ProbeError;
use crate::loader::Probes;

pub const HIST_BUCKETS: usize = 64;

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
}

/// Byte offset of [`ThreadSched::tid`], the owner word of an entry.
pub const THREAD_OWNER_OFFSET: usize = std::mem::offset_of!(ThreadSched, tid);

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
    pub write_calls: u64,
    pub write_bytes: u64,
    pub fsync_calls: u64,
    pub fsync_ns: u64,
    pub fsync_ns_log2: [u64; HIST_BUCKETS],
    /// Of `fsync_calls`, the fdatasync(2) ones.
    pub fdatasync_calls: u64,
}

impl Default for FdIo {
    fn default() -> Self {
        FdIo {
            write_calls: 0,
            write_bytes: 0,
            fsync_calls: 0,
            fsync_ns: 0,
            fsync_ns_log2: [0; HIST_BUCKETS],
            fdatasync_calls: 0,
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
    pub const COUNT: usize = 15;
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

fn map<'a>(p: &'a Probes, name: &'static str) -> Result<&'a aya::maps::Map, ProbeError> {
    p.bpf.map(name).ok_or(ProbeError::Missing {
        what: "map",
        name: name.into(),
    })
}

fn map_err(map: &'static str) -> impl Fn(aya::maps::MapError) -> ProbeError {
    move |e| ProbeError::Map {
        map,
        source: Box::new(e),
    }
}

fn read_hash<K: Pod + Eq + std::hash::Hash, V: Pod>(
    p: &Probes,
    name: &'static str,
    how: Lookup,
) -> Result<HashMap<K, V>, ProbeError> {
    let raw = map(p, name)?;
    if how == Lookup::Batch {
        if let Some(all) = batch::lookup_all::<K, V>(name, raw)? {
            return Ok(all.iter().map(|(k, v)| (k, v[0])).collect());
        }
    }
    let m: BpfHashMap<&MapData, K, V> = BpfHashMap::try_from(raw).map_err(map_err(name))?;
    let mut out = HashMap::new();
    for kv in m.iter() {
        match kv {
            Ok((k, v)) => {
                out.insert(k, v);
            }
            // An entry deleted while iterating: skip it.
            Err(aya::maps::MapError::KeyNotFound) => continue,
            Err(e) => return Err(map_err(name)(e)),
        }
    }
    Ok(out)
}

/// Every index's values of array `name`, in index order: one per CPU for
/// a per-CPU array, else one. A batch lookup, or one lookup per index
/// where the kernel has no batch lookups.
fn read_array<V: Pod>(
    p: &Probes,
    name: &'static str,
    how: Lookup,
) -> Result<Vec<Vec<V>>, ProbeError> {
    let raw = map(p, name)?;
    if how == Lookup::Batch {
        if let Some(all) = batch::lookup_all::<u32, V>(name, raw)? {
            let mut out: Vec<(u32, Vec<V>)> = all.iter().map(|(i, v)| (i, v.to_vec())).collect();
            out.sort_by_key(|(i, _)| *i);
            return Ok(out.into_iter().map(|(_, v)| v).collect());
        }
    }
    if let aya::maps::Map::PerCpuArray(_) = raw {
        let arr: PerCpuArray<&MapData, V> = PerCpuArray::try_from(raw).map_err(map_err(name))?;
        return (0..arr.len())
            .map(|i| {
                arr.get(&i, 0)
                    .map(|v| v.iter().copied().collect())
                    .map_err(map_err(name))
            })
            .collect();
    }
    let arr: Array<&MapData, V> = Array::try_from(raw).map_err(map_err(name))?;
    (0..arr.len())
        .map(|i| arr.get(&i, 0).map(|v| vec![v]).map_err(map_err(name)))
        .collect()
}

/// Every thread's entry: the owned entries of `thread_sched_slots`, then
/// `thread_sched_stats` (threads whose array entry another thread owned).
/// A thread is in one or the other for its life.
/// Returns the entries by tid, and the tids found in the overflow hash.
pub(crate) fn read_threads(
    p: &Probes,
    how: Lookup,
) -> Result<(HashMap<u32, ThreadSched>, HashSet<u32>), ProbeError> {
    let mut threads: HashMap<u32, ThreadSched> = HashMap::new();
    for i in 0..p.thread_slots.len() {
        // Only owned entries are copied (most of the array is free).
        if p.thread_slots.word_at(i, THREAD_OWNER_OFFSET) == 0 {
            continue;
        }
        let t = p.thread_slots.get(i);
        if t.tid != 0 {
            threads.insert(t.tid, t);
        }
    }
    let mut overflow = HashSet::new();
    for (tid, t) in read_hash::<u32, ThreadSched>(p, "thread_sched_stats", how)? {
        if let std::collections::hash_map::Entry::Vacant(e) = threads.entry(tid) {
            e.insert(t);
            overflow.insert(tid);
        }
    }
    Ok((threads, overflow))
}

/// Forgets exited threads: frees their `thread_sched_slots` entries (when
/// they still own them) and deletes their `thread_sched_stats` entries.
pub(crate) fn forget_threads(p: &mut Probes, tids: &[u32]) -> Result<(), ProbeError> {
    let slots = p.thread_slots.len();
    let in_hash: Vec<u32> = tids
        .iter()
        .copied()
        .filter(|&tid| {
            !p.thread_slots
                .release(tid as usize & (slots - 1), THREAD_OWNER_OFFSET, tid)
        })
        .collect();
    prune::<u32, ThreadSched>(p, "thread_sched_stats", &in_hash)
}

impl MapsReading {
    /// Reads every map of `p`, each in as few syscalls as the kernel allows.
    pub fn read(p: &Probes) -> Result<MapsReading, ProbeError> {
        Self::read_as(p, Lookup::Batch)
    }

    /// Reads every map of `p` as `how` says.
    pub fn read_as(p: &Probes, how: Lookup) -> Result<MapsReading, ProbeError> {
        let at = Instant::now();
        let (threads, overflow_threads) = read_threads(p, how)?;
        let tasks = threads
            .iter()
            .filter(|(_, t)| t.task != 0)
            .map(|(tid, t)| (t.task, *tid))
            .collect();
        // The hash first, then the slots: a pair moved from a slot into the
        // hash in between is missed in this reading only (the next one has it).
        let mut wakeups: HashMap<WakePair, u64> = read_hash(p, "wakeups_by_pair", how)?;
        let mut wakeups_in_slots = HashSet::new();
        for slot in read_array::<PairSlot>(p, "wakeups_by_pair_recent", how)?
            .into_iter()
            .flatten()
        {
            if slot.count > 0 {
                *wakeups.entry(slot.pair).or_default() += slot.count;
                wakeups_in_slots.insert(slot.pair);
            }
        }
        let (io, processes) = read_io(p, how)?;
        let usdt_lock_waits = if p.has_usdt_lock_waits() {
            read_hash(p, "usdt_lock_wait_by_name", how)?
        } else {
            HashMap::new()
        };
        let futex = read_hash(p, "futex_wait_by_lock", how)?;

        let mut runq_hist = [0u64; HIST_BUCKETS];
        let per_bucket = read_array::<u64>(p, "runq_latency_ns_log2", how)?;
        for (slot, per_cpu) in runq_hist.iter_mut().zip(per_bucket) {
            *slot = per_cpu.iter().sum();
        }

        let events_lost = read_array::<u64>(p, "events_lost_total", how)?
            .into_iter()
            .flatten()
            .sum();

        let mut points = [PointStats::default(); point::COUNT];
        let read = read_array::<PointStats>(p, "engine_probe_point_hits", how)?;
        for (slot, v) in points.iter_mut().zip(read) {
            *slot = v[0];
        }
        Ok(MapsReading {
            at,
            threads,
            tasks,
            overflow_threads,
            runq_hist,
            events_lost,
            wakeups,
            wakeups_in_slots,
            io,
            futex,
            processes,
            usdt_lock_waits,
            points,
            named_locks: read_named_locks(p)?,
        })
    }
}

/// The I/O counts by descriptor (and file, with `follow_children`), and
/// the target's processes (`tgid -> parent tgid`).
pub(crate) type IoReading = (HashMap<IoKey, FdIo>, HashMap<u32, u32>);

/// Reads the write and fsync counts of every descriptor the target used,
/// and its processes.
pub(crate) fn read_io(p: &Probes, how: Lookup) -> Result<IoReading, ProbeError> {
    let pid = p.pid();
    if p.follows_children() {
        let io = read_hash::<ProcFd, FdIo>(p, "io_by_proc_fd", how)?
            .into_iter()
            .map(|(k, v)| (IoKey::from(k), v))
            .collect();
        return Ok((io, read_processes(p)?));
    }
    let key = |fd: u32| IoKey {
        pid,
        fd,
        file: FileId::default(),
    };
    let mut io: HashMap<IoKey, FdIo> = read_hash::<u32, FdIo>(p, "io_by_fd", how)?
        .into_iter()
        .map(|(fd, v)| (key(fd), v))
        .collect();
    for fd in 0..p.fd_slots.len() {
        let v = p.fd_slots.get(fd);
        if v.write_calls > 0 || v.fsync_calls > 0 {
            io.insert(key(fd as u32), v);
        }
    }
    Ok((io, HashMap::from([(pid, 0)])))
}

/// The target's processes, `tgid -> parent tgid`: `tracked_tgids` when
/// following children (the root always included), else the target alone.
pub fn read_processes(p: &Probes) -> Result<HashMap<u32, u32>, ProbeError> {
    let pid = p.pid();
    if !p.follows_children() {
        return Ok(HashMap::from([(pid, 0)]));
    }
    let mut procs: HashMap<u32, u32> = read_hash(p, "tracked_tgids", Lookup::Batch)?;
    procs.entry(pid).or_insert(0);
    Ok(procs)
}

/// The `engine_named_locks` map's one entry.
pub fn read_named_locks(p: &Probes) -> Result<NamedLocksTable, ProbeError> {
    let name = "engine_named_locks";
    let arr: Array<&MapData, NamedLocksTable> =
        Array::try_from(map(p, name)?).map_err(map_err(name))?;
    arr.get(&0, 0).map_err(map_err(name))
}

/// Deletes the given keys from a hash map (entries of threads that are gone
/// and did not change in the last window), so long runs with thread churn
/// do not fill the maps. Keys already gone are ignored.
pub(crate) fn prune<K: Pod, V: Pod>(
    p: &mut Probes,
    name: &'static str,
    keys: &[K],
) -> Result<(), ProbeError> {
    if keys.is_empty() {
        return Ok(());
    }
    let m = p.bpf.map_mut(name).ok_or(ProbeError::Missing {
        what: "map",
        name: name.into(),
    })?;
    let mut h: BpfHashMap<&mut MapData, K, V> = match BpfHashMap::try_from(m) {
        Ok(h) => h,
        Err(e) => return Err(map_err(name)(e)),
    };
    for k in keys {
        match h.remove(k) {
            Ok(()) | Err(aya::maps::MapError::KeyNotFound) => {}
            Err(aya::maps::MapError::SyscallError(e))
                if e.io_error.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(map_err(name)(e)),
        }
    }
    Ok(())
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
