//! The buffer pool: `innodb_buffer_pool_size` bytes of page frames caching
//! the tablespaces' pages.
//!
//! - **Lookup and read.** A page hash maps a page to its frame. A miss
//!   takes a frame from the free list (or evicts a clean page from the LRU
//!   tail), reads the page with `pread` and verifies it (a page that fails
//!   is never cached) (`Innodb_buffer_pool_reads`; every lookup is a
//!   `read_request`).
//! - **Replacement.** [`Lru`]: young/old sublists, a page read in enters
//!   old, a second touch makes it young, eviction from the old tail.
//! - **Dirty pages.** A change marks the frame dirty with the LSN of its
//!   first change since its last write (`oldest`) and its newest; the flush
//!   list orders dirty frames by `oldest`, so its head is the fuzzy
//!   checkpoint's LSN ([`BufferPool::oldest_dirty_lsn`]).
//! - **Page cleaners** (`innodb_page_cleaners` threads): each tick (100
//!   ms, or at once when a user thread finds no free frame) an LRU batch
//!   (the tail's clean pages freed, its dirty ones written as one batch
//!   and freed, up to `innodb_lru_scan_depth`) while the free list is
//!   short, and a flush-list batch of the oldest dirty pages
//!   (`innodb_io_capacity` pages a second, more when dirty pages pass
//!   `innodb_max_dirty_pages_pct`; with a flush target
//!   ([`BufferPool::request_flush_up_to`], the checkpoint waiting for it),
//!   the flush list's head at once until no dirty page is older). Batches
//!   go through the doublewrite buffer's batch path.
//! - **Write-ahead rule.** A page is written only once the redo of its
//!   changes is durable: before a flush writes pages, the pool's redo hook
//!   ([`BufferPool::set_redo_hook`]) is asked to make the log durable up
//!   to their newest change (InnoDB's `log_write_up_to` before a page
//!   write). Without a hook (the page store alone) nothing is asked.
//! - **Single-page flush.** A user thread that finds no free frame and no
//!   clean page in the tail writes one dirty tail page itself through the
//!   doublewrite buffer's single-page path and takes its frame
//!   (`Innodb_buffer_pool_wait_free` counts each such wait).
//!
//! Latches: each frame's bytes are behind a reader-writer latch; the
//! pool's lists behind one mutex, the page hash ([`PageHash`]) behind
//! latches of its own. A thread takes the mutex, then at most `try_*` on
//! frame latches (never blocking on one while holding the mutex); a
//! thread holding a frame latch may take the mutex. A flush holds the
//! frames' read latches across its writes (reads go on, changes wait), so
//! a page is never marked clean with a change the write missed. A frame
//! found in the hash is re-checked after its latch is taken (it may have
//! been evicted in between).
//!
//! The hit path takes no mutex (InnoDB's split of the buffer pool mutex):
//! a lookup reads the page hash under its shard's read latch, and a page
//! already young is not moved ([`Lru::young_flags`]). A change to a page
//! already dirty, at an LSN not older than its oldest, only raises the
//! frame's newest LSN: a frame's dirty state and LSNs change only with
//! its latch held (write, or a flush's read latch), so under the write
//! latch they are stable and the flush list needs no update.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool as StdAtomicBool, AtomicU64 as StdAtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sync::{
    self, AtomicBool, AtomicU64, Mutex, NamedCondvar, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

type FrameGuard<'a> = RwLockWriteGuard<'a, Box<[u8]>>;

use super::doublewrite::{Doublewrite, PageWrite};
use super::lru::Lru;
use super::page::{self, PageId, PageState};
use super::page_hash::PageHash;
use super::{Spaces, StoreError};

/// The buffer pool's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// Frames (`innodb_buffer_pool_size` / page size).
    pub frames: usize,
    /// `innodb_page_cleaners`.
    pub page_cleaners: usize,
    /// `innodb_io_capacity`: pages a second the flush-list batches aim at.
    pub io_capacity: u32,
    /// `innodb_lru_scan_depth`: pages an LRU batch looks at.
    pub lru_scan_depth: usize,
    /// `innodb_max_dirty_pages_pct`.
    pub max_dirty_pct: u32,
    /// `innodb_old_blocks_pct`.
    pub old_blocks_pct: u32,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            frames: 8192,
            page_cleaners: 1,
            io_capacity: 200,
            lru_scan_depth: 1024,
            max_dirty_pct: 90,
            old_blocks_pct: 37,
        }
    }
}

/// The pool's counters (MySQL's status names in brackets).
#[derive(Debug, Default)]
pub struct PoolCounters {
    /// Lookups (`Innodb_buffer_pool_read_requests`).
    pub read_requests: StdAtomicU64,
    /// Misses read from disk (`Innodb_buffer_pool_reads`).
    pub reads: StdAtomicU64,
    /// Dirty frames now (`Innodb_buffer_pool_pages_dirty`).
    pub pages_dirty: StdAtomicU64,
    /// A user thread found no free frame (`Innodb_buffer_pool_wait_free`).
    pub wait_free: StdAtomicU64,
    /// Pages written by user threads' single-page flushes.
    pub single_page_flushes: StdAtomicU64,
    /// Pages written by the page cleaners (LRU and flush-list batches).
    pub cleaner_pages: StdAtomicU64,
    /// Nanoseconds the page cleaners spent in their batches.
    pub cleaner_ns: StdAtomicU64,
}

struct Meta {
    id: Option<PageId>,
    /// Being written by a flush: not picked again.
    flushing: bool,
}

struct Inner {
    meta: Vec<Meta>,
    free: Vec<u32>,
    lru: Lru,
    /// Dirty frames by (oldest lsn, frame).
    flush_list: BTreeSet<(u64, u32)>,
}

struct Frame {
    /// The page id the frame holds, as `space << 32 | page_no`, or
    /// `u64::MAX`: changed only with the mutex and the write latch held.
    id: AtomicU64,
    bytes: RwLock<Box<[u8]>>,
    /// Changed since its last write. Set and cleared with the mutex and
    /// the frame's latch held (the write latch, or a flush's read latch).
    dirty: AtomicBool,
    /// While dirty, the LSN of its oldest unwritten change (its place in
    /// the flush list); changed as `dirty` is.
    oldest: AtomicU64,
    /// The end LSN of its newest change (the write-ahead rule's bound);
    /// raised under the write latch, reset when the frame takes a page.
    newest: AtomicU64,
}

fn code(id: PageId) -> u64 {
    (u64::from(id.space) << 32) | u64::from(id.page_no)
}

/// Where a change's redo record lies: the pool orders dirty pages by the
/// `start` of their first change (the fuzzy checkpoint may not pass it)
/// and makes the log durable up to the `end` of their newest before it
/// writes them (the write-ahead rule: the whole record, not its first
/// byte). A bare LSN is a record of no length at it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangeLsn {
    pub start: u64,
    pub end: u64,
}

impl ChangeLsn {
    /// A change no redo record covers: a page of a scratch tablespace
    /// (rebuilt at every start, `PageStore::open_scratch_space`), written
    /// with no write-ahead wait and never holding back the fuzzy
    /// checkpoint.
    pub const UNLOGGED: ChangeLsn = ChangeLsn {
        start: u64::MAX,
        end: 0,
    };
}

impl From<u64> for ChangeLsn {
    fn from(lsn: u64) -> ChangeLsn {
        ChangeLsn {
            start: lsn,
            end: lsn,
        }
    }
}

/// Makes the redo log durable up to an LSN (the write-ahead rule).
pub type RedoHook = Box<dyn Fn(u64) -> std::io::Result<()> + Send + Sync>;

/// The buffer pool over `spaces`, writing through `dw`.
pub struct BufferPool {
    page_size: usize,
    frames: Vec<Frame>,
    inner: Mutex<Inner>,
    hash: PageHash,
    /// [`Lru::young_flags`].
    young: Arc<[AtomicBool]>,
    wake_cleaners: NamedCondvar,
    spaces: Arc<Spaces>,
    dw: Arc<Doublewrite>,
    opts: PoolOptions,
    pub counters: PoolCounters,
    stop: StdAtomicBool,
    redo: OnceLock<RedoHook>,
    /// [`BufferPool::request_flush_up_to`]: the cleaners write the flush
    /// list's head until the oldest dirty page's LSN reaches it.
    flush_target: StdAtomicU64,
}

impl BufferPool {
    /// A pool of `opts.frames` frames; [`BufferPool::start_cleaners`]
    /// starts its page cleaners.
    pub fn new(
        page_size: usize,
        spaces: Arc<Spaces>,
        dw: Arc<Doublewrite>,
        opts: PoolOptions,
    ) -> Arc<BufferPool> {
        // A model checks a pool of a few frames; a real one has 16 at least.
        let n = opts.frames.max(if cfg!(loom) { 2 } else { 16 });
        let frames = (0..n)
            .map(|_| Frame {
                id: AtomicU64::new(u64::MAX),
                bytes: RwLock::new(vec![0u8; page_size].into_boxed_slice()),
                dirty: AtomicBool::new(false),
                oldest: AtomicU64::new(0),
                newest: AtomicU64::new(0),
            })
            .collect();
        let meta = (0..n)
            .map(|_| Meta {
                id: None,
                flushing: false,
            })
            .collect();
        let lru = Lru::new(n, opts.old_blocks_pct);
        let young = lru.young_flags();
        Arc::new(BufferPool {
            page_size,
            frames,
            inner: Mutex::named(
                "buf_pool",
                Inner {
                    meta,
                    free: (0..n as u32).rev().collect(),
                    lru,
                    flush_list: BTreeSet::new(),
                },
            ),
            hash: PageHash::new(),
            young,
            wake_cleaners: NamedCondvar::new("buf_pool.cleaners"),
            spaces,
            dw,
            opts,
            counters: PoolCounters::default(),
            stop: StdAtomicBool::new(false),
            redo: OnceLock::new(),
            flush_target: StdAtomicU64::new(0),
        })
    }

    /// Starts the page cleaner threads (named `page_cleaner/N`).
    pub fn start_cleaners(self: &Arc<Self>) -> Vec<JoinHandle<Result<(), StoreError>>> {
        (0..self.opts.page_cleaners.max(1))
            .map(|i| {
                let me = self.clone();
                std::thread::Builder::new()
                    .name(format!("page_cleaner/{i}"))
                    .spawn(move || me.cleaner_loop())
                    .expect("spawning a page cleaner")
            })
            .collect()
    }

    /// Sets the hook that makes the redo log durable up to an LSN; every
    /// flush calls it before it writes (once per pool: a second call is
    /// ignored and returns false).
    pub fn set_redo_hook(&self, hook: RedoHook) -> bool {
        self.redo.set(hook).is_ok()
    }

    /// The write-ahead rule: the redo of changes up to `newest` durable.
    fn redo_durable(&self, newest: u64) -> Result<(), StoreError> {
        match self.redo.get() {
            Some(hook) => hook(newest).map_err(|e| StoreError::io("redo log", "making durable", e)),
            None => Ok(()),
        }
    }

    /// Stops the page cleaners (join the handles after).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _g = self.inner.lock();
        self.wake_cleaners.notify_all();
    }

    pub fn frames(&self) -> usize {
        self.frames.len()
    }

    /// Holds the pool's mutex (lists and flush list) for a test of what
    /// works without it.
    #[cfg(test)]
    pub(super) fn hold_lists(&self) -> impl Sized + '_ {
        self.inner.lock()
    }

    /// The LSN below which every change is on disk: the oldest dirty
    /// page's first change, or `None` with no dirty page.
    /// Unlogged pages ([`ChangeLsn::UNLOGGED`]) do not count.
    /// Asks the cleaners to write the oldest dirty pages until none is
    /// older than `lsn` (InnoDB's flush up to an LSN when the checkpoint
    /// age is high): the fuzzy checkpoint can then move to `lsn`. They do it
    /// at once, beyond `innodb_io_capacity`, in batches of the flush list.
    pub fn request_flush_up_to(&self, lsn: u64) {
        if self.flush_target.fetch_max(lsn, Ordering::AcqRel) < lsn {
            // Through the mutex: a cleaner checks the target and sleeps
            // under it, so it either sees the new target or is asleep.
            drop(self.inner.lock());
            self.wake_cleaners.notify_all();
        }
    }

    /// Whether a dirty page older than the requested flush target is left.
    fn behind_flush_target(&self, inner: &Inner) -> bool {
        let target = self.flush_target.load(Ordering::Acquire);
        inner
            .flush_list
            .first()
            .is_some_and(|(o, _)| *o != ChangeLsn::UNLOGGED.start && *o < target)
    }

    pub fn oldest_dirty_lsn(&self) -> Option<u64> {
        let inner = self.inner.lock();
        let (lsn, _) = inner.flush_list.first()?;
        (*lsn != ChangeLsn::UNLOGGED.start).then_some(*lsn)
    }

    /// Reads page `id` through the pool.
    pub fn read<R>(&self, id: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R, StoreError> {
        loop {
            let fr = self.fix(id)?;
            let g = self.frames[fr as usize].bytes.read();
            if self.frames[fr as usize].id.load(Ordering::Acquire) == code(id) {
                return Ok(f(&g));
            }
        }
    }

    /// Changes page `id` (its body; the header is the store's) as of redo
    /// record `at`.
    pub fn modify(
        &self,
        id: PageId,
        at: impl Into<ChangeLsn>,
        f: impl FnOnce(&mut [u8]),
    ) -> Result<(), StoreError> {
        let ChangeLsn { start: lsn, end } = at.into();
        loop {
            let fr = self.fix(id)?;
            let mut g = self.frames[fr as usize].bytes.write();
            if self.frames[fr as usize].id.load(Ordering::Acquire) != code(id) {
                continue;
            }
            f(&mut g[page::HEADER..self.page_size - page::TRAILER]);
            let frame = &self.frames[fr as usize];
            frame.newest.fetch_max(end, Ordering::Relaxed);
            // Stable under the write latch (module docs): already dirty
            // with an older first change, the flush list has it in place.
            if frame.dirty.load(Ordering::Relaxed) && lsn >= frame.oldest.load(Ordering::Relaxed) {
                return Ok(());
            }
            let mut inner = self.inner.lock();
            if !frame.dirty.load(Ordering::Relaxed) {
                frame.dirty.store(true, Ordering::Relaxed);
                frame.oldest.store(lsn, Ordering::Relaxed);
                inner.flush_list.insert((lsn, fr));
                self.counters.pages_dirty.fetch_add(1, Ordering::Relaxed);
            } else {
                // Changes reach a page out of LSN order (two commits
                // applied in the other order): its oldest unwritten change
                // is the smaller, or the fuzzy checkpoint would pass it.
                let was = frame.oldest.swap(lsn, Ordering::Relaxed);
                inner.flush_list.remove(&(was, fr));
                inner.flush_list.insert((lsn, fr));
            }
            return Ok(());
        }
    }

    /// The frame holding `id`, read in on a miss.
    fn fix(&self, id: PageId) -> Result<u32, StoreError> {
        self.counters.read_requests.fetch_add(1, Ordering::Relaxed);
        // The hit path: the page hash alone, and a young page stays put.
        if let Some(fr) = self.hash.get(id) {
            if self.young[fr as usize].load(Ordering::Relaxed) {
                return Ok(fr);
            }
            let mut inner = self.inner.lock();
            if inner.meta[fr as usize].id == Some(id) {
                inner.lru.touch(fr);
                return Ok(fr);
            }
        }
        loop {
            let mut inner = self.inner.lock();
            if let Some(fr) = self.hash.get(id) {
                inner.lru.touch(fr);
                return Ok(fr);
            }
            let Some((fr, mut g)) = self.free_frame(&mut inner) else {
                drop(inner);
                self.single_page_flush()?;
                continue;
            };
            // Reserve the frame for `id` under its write latch: lookups of
            // `id` from now on find it and wait for the read below.
            self.frames[fr as usize]
                .id
                .store(code(id), Ordering::Release);
            // The frame's LSNs are this page's from now on: a frame
            // reused from another page must not seal this one with that
            // page's newer LSN (recovery restores the copy with the
            // highest LSN, so a page's LSNs must only grow).
            inner.meta[fr as usize].id = Some(id);
            let frame = &self.frames[fr as usize];
            frame.newest.store(0, Ordering::Relaxed);
            frame.oldest.store(0, Ordering::Relaxed);
            self.hash.insert(id, fr);
            inner.lru.insert(fr);
            drop(inner);
            self.counters.reads.fetch_add(1, Ordering::Relaxed);
            let ts = self.spaces.get(id.space);
            let got = ts.and_then(|ts| ts.read_verified(id.page_no, &mut g));
            match got {
                Ok(PageState::Written { lsn }) => {
                    // Its next write carries at least the LSN it has
                    // (set under the write latch still held).
                    self.frames[fr as usize]
                        .newest
                        .fetch_max(lsn, Ordering::Relaxed);
                    return Ok(fr);
                }
                Ok(PageState::Empty) => {
                    // A page not written yet: a new page of the space.
                    g.fill(0);
                    return Ok(fr);
                }
                Err(e) => {
                    let mut inner = self.inner.lock();
                    self.hash.remove(id);
                    inner.lru.remove(fr);
                    inner.meta[fr as usize].id = None;
                    self.frames[fr as usize]
                        .id
                        .store(u64::MAX, Ordering::Release);
                    inner.free.push(fr);
                    return Err(e);
                }
            }
        }
    }

    /// A free frame, write-latched: from the free list, else a clean page
    /// from the LRU tail evicted; none when the tail is all dirty (or
    /// latched).
    fn free_frame(&self, inner: &mut Inner) -> Option<(u32, FrameGuard<'_>)> {
        for _ in 0..inner.free.len() {
            let fr = inner.free.pop()?;
            if let Some(g) = self.frames[fr as usize].bytes.try_write() {
                return Some((fr, g));
            }
            // A reader that looked it up before it was freed still holds
            // it for a moment: keep it for later.
            inner.free.insert(0, fr);
        }
        if inner.free.len() < self.opts.lru_scan_depth / 4 {
            self.wake_cleaners.notify_one();
        }
        for fr in inner.lru.tail(64) {
            if self.busy(inner, fr) {
                continue;
            }
            if let Some(g) = self.evict(inner, fr) {
                return Some((fr, g));
            }
        }
        None
    }

    /// Drops every page of `space` from the pool without writing it (its
    /// tablespace is going away: a dropped table's), once no flush of one
    /// is in flight; a page being read or written by a user is waited for.
    /// The caller makes sure nothing fixes a page of `space` meanwhile.
    pub fn discard(&self, space: u32) {
        loop {
            let mut busy = false;
            {
                let mut inner = self.inner.lock();
                for fr in self.hash.frames_of_space(space) {
                    if inner.meta[fr as usize].flushing {
                        busy = true;
                        continue;
                    }
                    let Some(_latched) = self.evict(&mut inner, fr) else {
                        busy = true;
                        continue;
                    };
                    let frame = &self.frames[fr as usize];
                    if frame.dirty.swap(false, Ordering::Relaxed) {
                        let oldest = frame.oldest.load(Ordering::Relaxed);
                        inner.flush_list.remove(&(oldest, fr));
                        self.counters.pages_dirty.fetch_sub(1, Ordering::Relaxed);
                    }
                    frame.oldest.store(0, Ordering::Relaxed);
                    frame.newest.store(0, Ordering::Relaxed);
                    inner.free.push(fr);
                }
            }
            if !busy {
                return;
            }
            sync::sleep(Duration::from_micros(200));
        }
    }

    /// Dirty or being written: not evictable (with the mutex held).
    fn busy(&self, inner: &Inner, fr: u32) -> bool {
        self.frames[fr as usize].dirty.load(Ordering::Relaxed) || inner.meta[fr as usize].flushing
    }

    /// Whether a flush may pick `fr` (dirty, not being written).
    fn flushable(&self, inner: &Inner, fr: u32) -> bool {
        self.frames[fr as usize].dirty.load(Ordering::Relaxed) && !inner.meta[fr as usize].flushing
    }

    /// Evicts clean frame `fr` if nobody holds its latch; returns the
    /// latch, held.
    fn evict(&self, inner: &mut Inner, fr: u32) -> Option<FrameGuard<'_>> {
        let g = self.frames[fr as usize].bytes.try_write()?;
        if let Some(id) = inner.meta[fr as usize].id.take() {
            self.hash.remove(id);
        }
        inner.lru.remove(fr);
        self.frames[fr as usize]
            .id
            .store(u64::MAX, Ordering::Release);
        Some(g)
    }

    /// A user thread with no free frame writes the dirtiest tail page
    /// itself (through the doublewrite buffer's single-page path); the
    /// frame becomes clean and the caller's next try evicts it.
    fn single_page_flush(&self) -> Result<(), StoreError> {
        self.counters.wait_free.fetch_add(1, Ordering::Relaxed);
        let picked = {
            let mut inner = self.inner.lock();
            self.wake_cleaners.notify_one();
            let mut picked = None;
            for fr in inner.lru.tail(self.opts.lru_scan_depth.max(64)) {
                if !self.flushable(&inner, fr) {
                    continue;
                }
                if let Some(g) = self.frames[fr as usize].bytes.try_read() {
                    inner.meta[fr as usize].flushing = true;
                    picked = Some((fr, g));
                    break;
                }
            }
            picked.map(|(fr, g)| {
                let id = inner.meta[fr as usize].id;
                let newest = self.frames[fr as usize].newest.load(Ordering::Relaxed);
                (fr, id.expect("a dirty frame holds a page"), newest, g)
            })
        };
        let Some((fr, id, newest, g)) = picked else {
            // Every tail page is being written or latched: let them finish.
            sync::sleep(Duration::from_micros(200));
            return Ok(());
        };
        let copy = self.sealed(&g, id, newest);
        let done = self.redo_durable(newest).and_then(|()| {
            self.dw
                .write_single(PageWrite { id, bytes: &copy }, &self.spaces)
        });
        self.written(&[(fr, g)], done.is_ok());
        done?;
        self.counters
            .single_page_flushes
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn sealed(&self, bytes: &[u8], id: PageId, lsn: u64) -> Vec<u8> {
        let mut copy = bytes.to_vec();
        page::seal(&mut copy, id, 1, lsn);
        copy
    }

    /// After a flush of `frames` (read latches still held): clean them.
    fn written(&self, frames: &[(u32, RwLockReadGuard<'_, Box<[u8]>>)], ok: bool) {
        let mut inner = self.inner.lock();
        for (fr, _) in frames {
            inner.meta[*fr as usize].flushing = false;
            let frame = &self.frames[*fr as usize];
            if ok && frame.dirty.swap(false, Ordering::Relaxed) {
                let oldest = frame.oldest.load(Ordering::Relaxed);
                inner.flush_list.remove(&(oldest, *fr));
                self.counters.pages_dirty.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Writes up to `n` dirty frames as one batch: from the LRU tail
    /// (`lru`) or the flush list's oldest.
    fn flush_batch(&self, lru: bool, n: usize) -> Result<usize, StoreError> {
        let mut held = vec![];
        let mut ids = vec![];
        {
            let mut inner = self.inner.lock();
            let candidates: Vec<u32> = if lru {
                inner.lru.tail(self.opts.lru_scan_depth)
            } else {
                inner
                    .flush_list
                    .iter()
                    .map(|(_, f)| *f)
                    .take(n * 2)
                    .collect()
            };
            for fr in candidates {
                if held.len() >= n {
                    break;
                }
                if !self.flushable(&inner, fr) {
                    continue;
                }
                if let Some(g) = self.frames[fr as usize].bytes.try_read() {
                    let m = &mut inner.meta[fr as usize];
                    m.flushing = true;
                    let newest = self.frames[fr as usize].newest.load(Ordering::Relaxed);
                    ids.push((m.id.expect("a dirty frame holds a page"), newest));
                    held.push((fr, g));
                }
            }
        }
        if held.is_empty() {
            return Ok(0);
        }
        let copies: Vec<Vec<u8>> = held
            .iter()
            .zip(&ids)
            .map(|((_, g), (id, lsn))| self.sealed(g, *id, *lsn))
            .collect();
        let writes: Vec<PageWrite> = ids
            .iter()
            .zip(&copies)
            .map(|((id, _), b)| PageWrite { id: *id, bytes: b })
            .collect();
        let newest = ids.iter().map(|(_, lsn)| *lsn).max().unwrap_or(0);
        let done = self.redo_durable(newest).and_then(|()| {
            if lru {
                self.dw.write_lru_batch(&writes, &self.spaces)
            } else {
                self.dw.write_batch(&writes, &self.spaces)
            }
        });
        self.written(&held, done.is_ok());
        done?;
        self.counters
            .cleaner_pages
            .fetch_add(held.len() as u64, Ordering::Relaxed);
        Ok(held.len())
    }

    /// Frees the LRU tail's clean pages (up to the scan depth).
    fn free_tail(&self) {
        let mut inner = self.inner.lock();
        let want = self.opts.lru_scan_depth;
        if inner.free.len() >= want {
            return;
        }
        for fr in inner.lru.tail(want) {
            if self.busy(&inner, fr) {
                continue;
            }
            if self.evict(&mut inner, fr).is_some() {
                inner.free.push(fr);
            }
            if inner.free.len() >= want {
                break;
            }
        }
    }

    fn cleaner_loop(&self) -> Result<(), StoreError> {
        /// Pages per batch while a flush target is ahead.
        const FLUSH_TARGET_BATCH: usize = 64;
        /// The wait for a flush list head that another thread holds.
        const BUSY_HEAD: Duration = Duration::from_millis(1);
        const TICK: Duration = Duration::from_millis(100);
        while !self.stop.load(Ordering::SeqCst) {
            let t0 = Instant::now();
            let short = self.inner.lock().free.len() < self.opts.lru_scan_depth;
            if short {
                self.flush_batch(true, self.opts.lru_scan_depth.min(128))?;
                self.free_tail();
            }
            let dirty = self.counters.pages_dirty.load(Ordering::Relaxed) as usize;
            let per_tick = (self.opts.io_capacity as usize / 10).max(1);
            let n = if dirty * 100 > self.frames.len() * self.opts.max_dirty_pct as usize {
                per_tick * 4
            } else {
                per_tick
            };
            self.flush_batch(false, n)?;
            // A flush target (the checkpoint waits for it): the flush list's
            // head in batches until it is reached, without the tick's wait.
            loop {
                let behind = self.behind_flush_target(&self.inner.lock());
                if !behind || self.stop.load(Ordering::SeqCst) {
                    break;
                }
                if self.flush_batch(false, FLUSH_TARGET_BATCH)? == 0 {
                    // The head is latched or being written by another
                    // cleaner: let it finish (below).
                    break;
                }
            }
            self.counters
                .cleaner_ns
                .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            let inner = self.inner.lock();
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            if self.behind_flush_target(&inner) {
                drop(
                    self.wake_cleaners
                        .wait_until(inner, Instant::now() + BUSY_HEAD),
                );
                continue;
            }
            if inner.free.len() >= self.opts.lru_scan_depth / 4 {
                drop(self.wake_cleaners.wait_until(inner, Instant::now() + TICK));
            }
        }
        Ok(())
    }

    /// Writes every dirty page (a clean shutdown, or a sharp checkpoint).
    pub fn flush_all(&self) -> Result<(), StoreError> {
        loop {
            if self.flush_batch(false, 64)? == 0 && self.oldest_dirty_lsn().is_none() {
                return Ok(());
            }
            if self.oldest_dirty_lsn().is_some() {
                sync::yield_now();
            }
        }
    }
}
