//! The cheap set kept attached for good: the target's fsync and fdatasync
//! calls, counted and timed per file kind (redo, binlog, data, other),
//! with nothing on the scheduler or on writes
//! ([`AttachOptions::fsync_counters`]). A daemon reads it once a second
//! between its sampled windows of the full probes.
//!
//! Reading is cheap: the per-descriptor counts (an mmapped array, plus a
//! hash for high descriptors or, for a process tree, one keyed by file),
//! and a `/proc` listing of descriptors only when an unnamed one shows up
//! or every [`TIDY_EVERY`]. Running for days, it forgets exited threads and
//! closed files so the maps do not fill (their last counts are kept in the
//! totals first).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::error::ProbeError;
use crate::file_index::FileIndex;
use crate::loader::{AttachOptions, Probes};
use crate::map_reads;
use crate::maps::{self, FdIo, FileId, IoKey, Lookup, HIST_BUCKETS};
use crate::procfs;
use crate::profile::{FileKind, Profile};

/// How often descriptors are named afresh and exited threads and closed
/// files are dropped from the maps.
pub const TIDY_EVERY: Duration = Duration::from_secs(10);

/// Fsyncs on one kind of file since the counters were attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsyncTotals {
    /// fsync(2) and fdatasync(2) calls (any result).
    pub calls: u64,
    /// Of `calls`, the fdatasync ones.
    pub fdatasync_calls: u64,
    /// Time inside them, ns.
    pub ns: u64,
    /// Their latencies, log2 buckets of ns (bucket i = [2^i, 2^(i+1))).
    pub log2_ns: [u64; HIST_BUCKETS],
}

impl Default for FsyncTotals {
    fn default() -> Self {
        FsyncTotals {
            calls: 0,
            fdatasync_calls: 0,
            ns: 0,
            log2_ns: [0; HIST_BUCKETS],
        }
    }
}

impl FsyncTotals {
    /// What was counted between reading `was` and this one.
    pub fn since(&self, was: &FsyncTotals) -> FsyncTotals {
        let mut d = FsyncTotals {
            calls: self.calls.saturating_sub(was.calls),
            fdatasync_calls: self.fdatasync_calls.saturating_sub(was.fdatasync_calls),
            ns: self.ns.saturating_sub(was.ns),
            ..FsyncTotals::default()
        };
        for (i, b) in d.log2_ns.iter_mut().enumerate() {
            *b = self.log2_ns[i].saturating_sub(was.log2_ns[i]);
        }
        d
    }

    /// Adds what `now` counted since `was` (one descriptor's two readings).
    fn add(&mut self, now: &FdIo, was: &FdIo) {
        self.calls += now.fsync_calls.saturating_sub(was.fsync_calls);
        self.fdatasync_calls += now.fdatasync_calls.saturating_sub(was.fdatasync_calls);
        self.ns += now.fsync_ns.saturating_sub(was.fsync_ns);
        for (i, b) in self.log2_ns.iter_mut().enumerate() {
            *b += now.fsync_ns_log2[i].saturating_sub(was.fsync_ns_log2[i]);
        }
    }
}

/// The attached fsync counters of one target.
pub struct FsyncCounters {
    probes: Probes,
    profile: Profile,
    /// Each descriptor's counts at the last reading.
    prev: HashMap<IoKey, FdIo>,
    /// What each counted descriptor names (from `/proc`).
    kinds: HashMap<IoKey, FileKind>,
    /// What each file listed names (with `follow_children`, where a file
    /// is known by device and inode): one process's listing names it for
    /// the others.
    file_kinds: HashMap<FileId, FileKind>,
    /// Files no listing named, found by inode in the directories listed
    /// files live in (a WAL segment a backend opened, synced and closed
    /// between two listings).
    index: FileIndex,
    totals: BTreeMap<FileKind, FsyncTotals>,
    last_tidy: Instant,
    tidy_every: Duration,
}

impl FsyncCounters {
    /// Attaches the cheap set to `pid` (checked against `profile`'s
    /// target rules first).
    pub fn attach(pid: u32, profile: &Profile) -> Result<FsyncCounters, ProbeError> {
        let opts = AttachOptions::fsync_counters(pid, profile);
        let probes = Probes::attach(&opts).map_err(|e| match e {
            ProbeError::Tracefs { why } => ProbeError::FsyncCountersNeedTracefs { why },
            e => e,
        })?;
        Ok(FsyncCounters {
            probes,
            profile: profile.clone(),
            prev: HashMap::new(),
            kinds: HashMap::new(),
            file_kinds: HashMap::new(),
            index: FileIndex::default(),
            totals: BTreeMap::new(),
            last_tidy: Instant::now(),
            tidy_every: TIDY_EVERY,
        })
    }

    /// How often descriptors are named afresh and the maps tidied
    /// ([`TIDY_EVERY`] by default; zero: at every reading).
    pub fn set_tidy_every(&mut self, every: Duration) {
        self.tidy_every = every;
    }

    /// The attached probes (their maps, for a check).
    pub fn probes(&self) -> &Probes {
        &self.probes
    }

    pub fn pid(&self) -> u32 {
        self.probes.pid()
    }

    /// The kernel links held (each detached on drop).
    pub fn link_count(&self) -> usize {
        self.probes.link_count()
    }

    /// The BPF programs' ids, as the kernel lists them.
    pub fn program_ids(&self) -> Vec<u32> {
        self.probes.program_ids()
    }

    /// Reads the counts: the totals per file kind since attach (kinds
    /// with no fsync left out).
    pub fn read(&mut self) -> Result<&BTreeMap<FileKind, FsyncTotals>, ProbeError> {
        let (mut io, processes) = map_reads::read_io(&self.probes, Lookup::Batch)?;
        let tidy = self.last_tidy.elapsed() >= self.tidy_every;
        // Listed: every process at a tidy, else only those with a new
        // descriptor (a cluster forking backends need not list them all).
        let pids: Vec<u32> = if tidy {
            processes.keys().copied().collect()
        } else {
            let unnamed: BTreeSet<u32> = io
                .iter()
                .filter(|(k, v)| v.fsync_calls > 0 && !self.kinds.contains_key(k))
                .map(|(k, _)| k.pid)
                .collect();
            unnamed.into_iter().collect()
        };
        let listing = (!pids.is_empty()).then(|| self.name(&io, &pids));
        for (key, now) in &io {
            if now.fsync_calls == 0 {
                continue;
            }
            let was = self.prev.get(key).copied().unwrap_or_default();
            let kind = self.kinds.get(key).copied().unwrap_or(FileKind::Other);
            self.totals.entry(kind).or_default().add(now, &was);
        }
        if tidy {
            self.last_tidy = Instant::now();
            if let Some(open) = &listing {
                // Dropped from the maps: a descriptor that shows up again
                // counts from zero.
                for k in self.forget(&io, &processes, open)? {
                    io.remove(&k);
                }
            }
        }
        self.prev = io;
        Ok(&self.totals)
    }

    /// Names the counted descriptors of `pids` from `/proc` (a descriptor
    /// closed meanwhile keeps its last name, or takes its file's kind as
    /// another process listed it, or is `other` if it never had one).
    /// Returns the descriptors open now, and the processes listed.
    fn name(&mut self, io: &HashMap<IoKey, FdIo>, pids: &[u32]) -> (HashSet<IoKey>, HashSet<u32>) {
        let follow = self.probes.follows_children();
        let mut open = HashSet::new();
        let mut listed = HashSet::new();
        for &pid in pids {
            let Ok(found) = procfs::fd_listing(pid, follow) else {
                continue;
            };
            listed.insert(pid);
            for (fd, path, file) in found {
                let kind = self.profile.kind_of(&path);
                self.index.note(&path);
                let key = IoKey { pid, fd, file };
                if file != FileId::default() {
                    self.file_kinds.insert(file, kind);
                }
                open.insert(key);
                if io.contains_key(&key) {
                    self.kinds.insert(key, kind);
                }
            }
        }
        // A file fsync'd by one process and listed in another (PostgreSQL's
        // WAL, opened by backends and the WAL writer alike); else a file in
        // no listing, found by inode where the listed files live.
        // Else a descriptor its process no longer holds is `other` for
        // good (not listed again every second); a number reused for
        // another file is named afresh at the next tidy.
        let unknown: HashSet<FileId> = io
            .keys()
            .filter(|k| {
                k.file != FileId::default()
                    && !self.kinds.contains_key(*k)
                    && !self.file_kinds.contains_key(&k.file)
            })
            .map(|k| k.file)
            .collect();
        if !unknown.is_empty() {
            for (file, path) in self.index.resolve(&unknown) {
                self.file_kinds.insert(file, self.profile.kind_of(&path));
            }
        }
        for key in io.keys() {
            if !self.kinds.contains_key(key) {
                let kind = match self.file_kinds.get(&key.file) {
                    Some(kind) => *kind,
                    None if listed.contains(&key.pid) => FileKind::Other,
                    None => continue,
                };
                self.kinds.insert(*key, kind);
            }
        }
        (open, listed)
    }

    /// Drops from the maps the descriptors closed (or of processes gone)
    /// and the threads exited, each unchanged since the last reading (their
    /// counts are in the totals already). Returns the descriptors dropped.
    fn forget(
        &mut self,
        io: &HashMap<IoKey, FdIo>,
        processes: &HashMap<u32, u32>,
        (open, listed): &(HashSet<IoKey>, HashSet<u32>),
    ) -> Result<Vec<IoKey>, ProbeError> {
        let follow = self.probes.follows_children();
        // Low descriptors of one process are array entries, reused in place
        // (they stay, and keep counting with their name); hash keys go.
        let slots = self.probes.fd_slots.len();
        let dropped: Vec<IoKey> = io
            .iter()
            .filter(|(k, v)| {
                let closed = listed.contains(&k.pid) && !open.contains(*k);
                let exited = !processes.contains_key(&k.pid);
                (follow || k.fd as usize >= slots)
                    && (closed || exited)
                    && self.prev.get(*k) == Some(*v)
            })
            .map(|(k, _)| *k)
            .collect();
        // Taken out with their counts as of the delete: a descriptor number
        // reopened on the same file after the listing (a PostgreSQL backend
        // back on a WAL segment) counted on between the reading and now.
        let last: Vec<Option<FdIo>> = if follow {
            let keys: Vec<maps::ProcFd> = dropped.iter().map(|&k| k.into()).collect();
            map_reads::take::<maps::ProcFd, FdIo>(&mut self.probes, "io_by_proc_fd", &keys)?
        } else {
            let keys: Vec<u32> = dropped.iter().map(|k| k.fd).collect();
            map_reads::take::<u32, FdIo>(&mut self.probes, "io_by_fd", &keys)?
        };
        for (k, now) in dropped.iter().zip(&last) {
            if let (Some(now), Some(was)) = (now, io.get(k)) {
                if now.fsync_calls > was.fsync_calls {
                    let kind = self.kinds.get(k).copied().unwrap_or(FileKind::Other);
                    self.totals.entry(kind).or_default().add(now, was);
                }
            }
        }
        for k in &dropped {
            self.kinds.remove(k);
        }
        let held: HashSet<FileId> = open.iter().map(|k| k.file).collect();
        self.file_kinds.retain(|f, _| held.contains(f));
        let counted: HashSet<FileId> = io.keys().map(|k| k.file).collect();
        self.index.forget(|f| counted.contains(f));
        // The threads that timed an fsync and have exited.
        let (threads, _) = map_reads::read_threads(&self.probes, Lookup::Batch)?;
        let mut live = HashSet::new();
        for &pid in processes.keys() {
            if let Ok(t) = procfs::threads(pid) {
                live.extend(t.into_keys());
            }
        }
        let dead: Vec<u32> = threads
            .iter()
            .filter(|(tid, t)| t.call_kind == 0 && !live.contains(*tid))
            .map(|(tid, _)| *tid)
            .collect();
        map_reads::forget_threads(&mut self.probes, &dead)?;
        Ok(dropped)
    }
}
