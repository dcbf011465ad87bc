//! Reading the BPF maps of loaded [`Probes`] into the types of `maps`: one
//! cumulative [`MapsReading`], the per-thread and per-file tables, and the
//! pruning of entries a long run no longer needs.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use aya::maps::{Array, HashMap as BpfHashMap, IterableMap, MapData, PerCpuArray};
use aya::Pod;

use crate::batch;
use crate::error::ProbeError;
use crate::loader::Probes;
use crate::maps::*;

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

/// Marks each `(tid, background)` in the thread's own `thread_sched_slots`
/// entry (claimed for it when free): a background writer's writes are
/// counted apart, a foreground thread's are the foreground's; a thread
/// whose entry another thread owns (it lives in the overflow hash) stays
/// unmarked, and its writes count where the profile's `new_threads` says.
/// Returns how many are marked background writers.
pub(crate) fn mark_background_writers(
    p: &Probes,
    marks: impl Iterator<Item = (u32, bool)>,
) -> usize {
    let slots = p.thread_slots.len();
    marks
        .filter(|&(tid, background)| {
            p.thread_slots.claim_and_set(
                tid as usize & (slots - 1),
                THREAD_OWNER_OFFSET,
                tid,
                THREAD_BACKGROUND_WRITER_OFFSET,
                if background {
                    WRITER_BACKGROUND
                } else {
                    WRITER_FOREGROUND
                },
            ) && background
        })
        .count()
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
        if v.write_calls() > 0 || v.fsync_calls > 0 || v.read_calls > 0 {
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

/// Deletes the given keys from a hash map and returns each one's value as
/// it was when deleted (`None`: already gone), in the order of `keys`.
///
/// `BPF_MAP_LOOKUP_AND_DELETE_ELEM` (hash maps, Linux 5.14+) reads and
/// removes an entry in one step, so a count made after the caller's last
/// reading is returned, not lost; a count made after the delete starts a
/// new entry. On an older kernel each entry is read and then deleted (a
/// count landing between the two is lost).
pub(crate) fn take<K: Pod, V: Pod>(
    p: &mut Probes,
    name: &'static str,
    keys: &[K],
) -> Result<Vec<Option<V>>, ProbeError> {
    if keys.is_empty() {
        return Ok(vec![]);
    }
    let mut h = hash_mut::<K, V>(p, name)?;
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        match batch::lookup_and_delete::<K, V>(IterableMap::map(&h), k) {
            Ok(v) => out.push(v),
            Err(batch::Unsupported) => {
                let v = match h.get(k, 0) {
                    Ok(v) => Some(v),
                    Err(aya::maps::MapError::KeyNotFound) => None,
                    Err(e) => return Err(map_err(name)(e)),
                };
                remove(&mut h, name, k)?;
                out.push(v);
            }
        }
    }
    Ok(out)
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
    let mut h = hash_mut::<K, V>(p, name)?;
    for k in keys {
        remove(&mut h, name, k)?;
    }
    Ok(())
}

/// The BPF hash map `name`, writable.
fn hash_mut<'a, K: Pod, V: Pod>(
    p: &'a mut Probes,
    name: &'static str,
) -> Result<BpfHashMap<&'a mut MapData, K, V>, ProbeError> {
    let m = p.bpf.map_mut(name).ok_or(ProbeError::Missing {
        what: "map",
        name: name.into(),
    })?;
    BpfHashMap::try_from(m).map_err(map_err(name))
}

/// Deletes `k` from `h`; a key already gone is not an error.
fn remove<K: Pod, V: Pod>(
    h: &mut BpfHashMap<&mut MapData, K, V>,
    name: &'static str,
    k: &K,
) -> Result<(), ProbeError> {
    match h.remove(k) {
        Ok(()) | Err(aya::maps::MapError::KeyNotFound) => Ok(()),
        Err(aya::maps::MapError::SyscallError(e))
            if e.io_error.raw_os_error() == Some(libc::ENOENT) =>
        {
            Ok(())
        }
        Err(e) => Err(map_err(name)(e)),
    }
}
