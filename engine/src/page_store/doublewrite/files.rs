//! The doublewrite buffer as MySQL 8.0.20 made it: files of its own,
//! `innodb_doublewrite_files` of them (half for flush-list batches, half
//! for LRU batches and single-page flushes), each cut into segments. A
//! flush takes a free segment from its queue, writes its copies there and
//! syncs that file, writes the data pages and syncs their tablespaces, and
//! returns the segment. The queue's lock is held only to take or return a
//! segment number, never across I/O; flushes on different segments run
//! side by side.
//!
//! File `i` is `dblwr-<i>.bin`. A batch file has 2 segments of
//! `innodb_doublewrite_pages` pages (one being written while the other's
//! flush completes); an LRU file has the same plus [`SINGLE_SEGMENTS`]
//! one-page segments for single-page flushes.

use std::sync::Arc;
use std::time::Instant;

use crate::named_locks::{NamedCondvar, NamedMutex};

use crate::vfs::{Vfs, VfsFile};

use super::{open_area, write_data, write_slots, DoublewriteCounters, PageWrite};
use crate::page_store::{Spaces, StoreError};

/// One-page segments per LRU file for single-page flushes.
pub const SINGLE_SEGMENTS: u32 = 64;
/// Batch segments per file.
pub const BATCH_SEGMENTS: u32 = 2;

/// The name of doublewrite file `i`.
pub fn file_name(i: u32) -> String {
    format!("dblwr-{i}.bin")
}

/// Whether `name` is a doublewrite file's.
pub fn is_file_name(name: &str) -> bool {
    name.strip_prefix("dblwr-")
        .and_then(|r| r.strip_suffix(".bin"))
        .is_some_and(|n| n.parse::<u32>().is_ok())
}

/// A queue of free segments (their first page numbers) of one file; its
/// lock and wait are named (`dblwr.segments`, `dblwr.segment_free`) so
/// the probes tell a flush waiting for a segment from other waits.
struct Segments {
    free: NamedMutex<Vec<u32>>,
    returned: NamedCondvar,
}

impl Segments {
    fn new(firsts: impl Iterator<Item = u32>) -> Segments {
        Segments {
            free: NamedMutex::new("dblwr.segments", firsts.collect()),
            returned: NamedCondvar::new("dblwr.segment_free"),
        }
    }

    fn take(&self) -> u32 {
        let mut f = self.free.lock();
        loop {
            if let Some(s) = f.pop() {
                return s;
            }
            f = self.returned.wait(f);
        }
    }

    fn give_back(&self, s: u32) {
        self.free.lock().push(s);
        self.returned.notify_one();
    }
}

struct DwFile {
    file: Arc<dyn VfsFile>,
    name: String,
    batches: Segments,
    singles: Option<Segments>,
}

/// The 8.0.20 doublewrite files.
pub struct Files {
    flush_list: Vec<DwFile>,
    lru: Vec<DwFile>,
    page_size: usize,
    pages: u32,
    detect_only: bool,
    counters: Arc<DoublewriteCounters>,
}

/// The pages file `i` of a design with `pages` per batch segment holds.
pub fn file_pages(lru: bool, pages: u32) -> u32 {
    BATCH_SEGMENTS * pages + if lru { SINGLE_SEGMENTS } else { 0 }
}

impl Files {
    pub fn open(
        dir: Arc<dyn Vfs>,
        page_size: usize,
        files: u32,
        pages: u32,
        detect_only: bool,
        counters: Arc<DoublewriteCounters>,
    ) -> Result<Files, StoreError> {
        let files = files.max(2);
        let pages = pages.clamp(1, 512);
        let (mut flush_list, mut lru) = (vec![], vec![]);
        for i in 0..files {
            let is_lru = i % 2 == 1;
            let name = file_name(i);
            let file = open_area(dir.as_ref(), &name, file_pages(is_lru, pages), page_size)?;
            let batches = Segments::new((0..BATCH_SEGMENTS).map(|s| s * pages));
            let singles = is_lru
                .then(|| Segments::new((0..SINGLE_SEGMENTS).map(|s| BATCH_SEGMENTS * pages + s)));
            let f = DwFile {
                file,
                name,
                batches,
                singles,
            };
            if is_lru {
                lru.push(f);
            } else {
                flush_list.push(f);
            }
        }
        dir.sync_dir()
            .map_err(|e| StoreError::io("doublewrite files", "creating", e))?;
        Ok(Files {
            flush_list,
            lru,
            page_size,
            pages,
            detect_only,
            counters,
        })
    }

    /// The file a flush goes to: spread by the first page's number, as
    /// MySQL spreads by buffer-pool instance.
    fn pick<'a>(&self, files: &'a [DwFile], key: u32) -> &'a DwFile {
        &files[key as usize % files.len()]
    }

    fn copy(&self, f: &DwFile, pages: &[PageWrite<'_>], at: u32) -> Result<(), StoreError> {
        write_slots(
            f.file.as_ref(),
            &f.name,
            pages,
            at,
            self.page_size,
            self.detect_only,
        )
    }

    /// A flush-list batch (an LRU batch goes through
    /// [`Files::write_lru_batch`]).
    pub fn write_batch(&self, pages: &[PageWrite<'_>], spaces: &Spaces) -> Result<(), StoreError> {
        self.batch(&self.flush_list, pages, spaces)
    }

    /// An LRU batch.
    pub fn write_lru_batch(
        &self,
        pages: &[PageWrite<'_>],
        spaces: &Spaces,
    ) -> Result<(), StoreError> {
        self.batch(&self.lru, pages, spaces)
    }

    fn batch(
        &self,
        files: &[DwFile],
        pages: &[PageWrite<'_>],
        spaces: &Spaces,
    ) -> Result<(), StoreError> {
        for chunk in pages.chunks(self.pages as usize) {
            let f = self.pick(files, chunk[0].id.page_no);
            let t0 = Instant::now();
            let seg = f.batches.take();
            self.counters.waited(t0);
            let done = self
                .copy(f, chunk, seg)
                .and_then(|_| write_data(chunk, spaces));
            f.batches.give_back(seg);
            done?;
            self.counters.count(chunk.len());
        }
        Ok(())
    }

    pub fn write_single(&self, page: PageWrite<'_>, spaces: &Spaces) -> Result<(), StoreError> {
        let f = self.pick(&self.lru, page.id.page_no);
        let singles = f.singles.as_ref().expect("an LRU file has single segments");
        let t0 = Instant::now();
        let seg = singles.take();
        self.counters.waited(t0);
        let done = self
            .copy(f, &[page], seg)
            .and_then(|_| write_data(&[page], spaces));
        singles.give_back(seg);
        done?;
        self.counters.count(1);
        self.counters
            .single_page_flushes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}
