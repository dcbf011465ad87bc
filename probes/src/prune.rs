//! Dropping map entries of exited threads, and idle futex words once that
//! map is half full, so long runs with thread churn do not fill the kernel
//! maps.

use std::collections::{HashMap, HashSet};

use crate::error::ProbeError;
use crate::loader::Probes;
use crate::map_reads;
use crate::maps::{self, FutexKey, FutexWait, IoKey, MapsReading, WakePair};

/// `MAX_FUTEX_KEYS` of the BPF source: capacity of `futex_wait_by_lock`.
const FUTEX_KEYS: usize = 16384;

/// Counts a pruned descriptor made after the window's reading: `now`
/// (taken with the delete) less `was` (the reading) belongs to the next
/// window.
#[derive(Debug, Clone, Copy)]
pub struct LateIo {
    pub key: IoKey,
    pub was: maps::FdIo,
    pub now: maps::FdIo,
}

/// The descriptors `/proc` listed after the reading (see
/// `Sampler::list_fds`).
#[derive(Clone, Copy)]
pub struct OpenFds<'a> {
    /// Open then, with the file each names.
    pub keys: &'a HashSet<IoKey>,
    /// The processes whose descriptors were listed.
    pub listed: &'a HashSet<u32>,
}

/// Removes map entries of threads that have exited (are not in `live`,
/// the target's threads as `/proc` listed them before `cur` was read) and
/// had no event in this window, so thread churn does not fill the maps over
/// long runs. (Only dead threads: an entry of a live one could change
/// between the reading and the delete.)
pub fn dead_threads(
    probes: &mut Probes,
    prev: &MapsReading,
    cur: &mut MapsReading,
    live: &HashMap<u32, String>,
    open: OpenFds,
) -> Result<Vec<LateIo>, ProbeError> {
    let dead = |tid: u32| !live.contains_key(&tid);
    // A process of the target: one in the reading (with follow_children,
    // processes leave `tracked_tgids` when they exit).
    let ours = |pid: u32| cur.processes.contains_key(&pid) || prev.processes.contains_key(&pid);
    let threads: Vec<u32> = cur
        .threads
        .iter()
        .filter(|(tid, v)| dead(**tid) && prev.threads.get(tid) == Some(*v))
        .map(|(tid, _)| *tid)
        .collect();
    let pairs: Vec<WakePair> = cur
        .wakeups
        .iter()
        .filter(|(k, n)| {
            // A task address no longer naming a live thread of the target
            // is a dead one, or a thread outside it: either way an
            // unchanged count can go (a new wakeup starts it again).
            let (_, wakee_tid) = k.wakee_ids(&cur.tasks);
            let wakee_ours = if k.wakee_is_task() {
                wakee_tid != 0
            } else {
                ours((k.wakee >> 32) as u32)
            };
            let gone = (ours(k.waker_pid) && dead(k.waker_tid))
                || (wakee_ours && dead(wakee_tid))
                || (k.wakee_is_task() && !wakee_ours);
            gone && prev.wakeups.get(*k) == Some(*n) && !cur.wakeups_in_slots.contains(*k)
        })
        .map(|(k, _)| *k)
        .collect();
    // Futex waits are keyed by address and thread family, not thread: once
    // the map is half full, words with no wait in this window go (a wait
    // landing between the reading and the delete is lost, on a word idle
    // for a whole window).
    let futexes: Vec<FutexKey> = if cur.futex.len() > FUTEX_KEYS / 2 {
        cur.futex
            .iter()
            .filter(|(k, v)| prev.futex.get(*k) == Some(*v))
            .map(|(k, _)| *k)
            .collect()
    } else {
        Vec::new()
    };
    // With follow_children, where I/O is keyed by process, descriptor and
    // file: entries of processes that exited, and of files a live process
    // no longer holds at that descriptor (closed: a segment switch leaves
    // one per WAL segment), that had no call in this window. (A file
    // reopened at the same descriptor between the listing and the delete
    // counts on meanwhile: taken out with its counts as of the delete, that
    // difference is returned for the next window.)
    let fds: Vec<IoKey> = if probes.follows_children() {
        cur.io
            .iter()
            .filter(|(k, v)| {
                let closed = open.listed.contains(&k.pid) && !open.keys.contains(*k);
                (!cur.processes.contains_key(&k.pid) || closed) && prev.io.get(*k) == Some(*v)
            })
            .map(|(k, _)| *k)
            .collect()
    } else {
        Vec::new()
    };
    let fd_keys: Vec<maps::ProcFd> = fds.iter().map(|&k| maps::ProcFd::from(k)).collect();
    let last = map_reads::take::<maps::ProcFd, maps::FdIo>(probes, "io_by_proc_fd", &fd_keys)?;
    let mut late = vec![];
    for (k, now) in fds.iter().zip(last) {
        let was = cur.io.remove(k).unwrap_or_default();
        if let Some(now) = now.filter(|n| *n != was) {
            late.push(LateIo { key: *k, was, now });
        }
    }
    map_reads::forget_threads(probes, &threads)?;
    map_reads::prune::<WakePair, u64>(probes, "wakeups_by_pair", &pairs)?;
    map_reads::prune::<FutexKey, FutexWait>(probes, "futex_wait_by_lock", &futexes)?;
    for t in &threads {
        cur.threads.remove(t);
        cur.overflow_threads.remove(t);
    }
    for k in &pairs {
        cur.wakeups.remove(k);
    }
    for k in &futexes {
        cur.futex.remove(k);
    }
    Ok(late)
}
