//! The doublewrite buffer: every page a flush writes goes first, whole, to
//! a doublewrite area (written and synced), and only then to its place in
//! its tablespace; a crash that tears the data write leaves an intact copy
//! that recovery puts back before redo applies ([`recover`]).
//!
//! Two designs, chosen at startup (`innodb_doublewrite_design`):
//!
//! - [`legacy`] as InnoDB before 8.0.20: one area of 128 pages (120 for
//!   batches, 8 single-page slots) behind one mutex; a batch runs alone
//!   and waits for its data writes before the next may start; a user
//!   thread's single-page flush takes one of the 8 slots (or waits for
//!   one) and syncs the area and its data page before giving it back.
//! - [`files`] as 8.0.20: files of their own (`innodb_doublewrite_files`,
//!   half for flush-list batches and half for LRU and single-page flushes),
//!   each cut into segments (`innodb_doublewrite_pages` pages for a batch,
//!   one page for a single-page flush); a flush takes a free segment from
//!   a queue and no lock is held while it writes and syncs.
//!
//! `innodb_doublewrite` = `ON` (copies, restored on recovery), `OFF` (no
//! copies: a torn page is detected by its checksum and reported, never
//! used), `DETECT_ONLY` (8.0.30: only the pages' headers are written, so
//! recovery names the torn pages but cannot restore them).

pub mod files;
pub mod legacy;
mod recover;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::sync_timing::{self, SyncKind};
use crate::vfs::Vfs;

use super::page::PageId;
use super::tablespace::Tablespace;
use super::{Spaces, StoreError};

pub use recover::{recover, Recovered};

/// `innodb_doublewrite`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DoublewriteMode {
    #[default]
    On,
    Off,
    DetectOnly,
}

impl DoublewriteMode {
    pub fn parse(s: &str) -> Option<DoublewriteMode> {
        match s.to_ascii_uppercase().as_str() {
            "ON" | "1" | "DETECT_AND_RECOVER" => Some(DoublewriteMode::On),
            "OFF" | "0" => Some(DoublewriteMode::Off),
            "DETECT_ONLY" => Some(DoublewriteMode::DetectOnly),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DoublewriteMode::On => "ON",
            DoublewriteMode::Off => "OFF",
            DoublewriteMode::DetectOnly => "DETECT_ONLY",
        }
    }
}

/// `innodb_doublewrite_design` (this engine's): which implementation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Design {
    /// Before MySQL 8.0.20.
    Legacy,
    /// MySQL 8.0.20's.
    #[default]
    Files,
}

impl Design {
    pub fn parse(s: &str) -> Option<Design> {
        match s.to_ascii_lowercase().as_str() {
            "legacy" => Some(Design::Legacy),
            "files" => Some(Design::Files),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Design::Legacy => "legacy",
            Design::Files => "files",
        }
    }
}

/// The doublewrite settings, fixed at startup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DoublewriteOptions {
    pub mode: DoublewriteMode,
    pub design: Design,
    /// `innodb_doublewrite_files` (files design; even, at least 2).
    pub files: u32,
    /// `innodb_doublewrite_pages`: pages per batch segment (files design).
    pub pages: u32,
}

impl Default for DoublewriteOptions {
    fn default() -> Self {
        DoublewriteOptions {
            mode: DoublewriteMode::On,
            design: Design::Files,
            files: 2,
            pages: 64,
        }
    }
}

/// What the doublewrite layer counts (MySQL's status names in brackets).
#[derive(Debug, Default)]
pub struct DoublewriteCounters {
    /// Doublewrite writes: one per batch or single-page flush
    /// (`Innodb_dblwr_writes`).
    pub writes: AtomicU64,
    /// Pages copied to the doublewrite area (`Innodb_dblwr_pages_written`).
    pub pages_written: AtomicU64,
    /// Single-page flushes (a user thread that found no free page).
    pub single_page_flushes: AtomicU64,
    /// Nanoseconds flushes waited for the legacy mutex or a free slot or
    /// segment.
    pub wait_ns: AtomicU64,
    /// Flushes that had to wait for it.
    pub waits: AtomicU64,
}

/// A snapshot of [`DoublewriteCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DoublewriteStats {
    pub writes: u64,
    pub pages_written: u64,
    pub single_page_flushes: u64,
    pub wait_ns: u64,
    pub waits: u64,
}

impl DoublewriteCounters {
    pub fn snapshot(&self) -> DoublewriteStats {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        DoublewriteStats {
            writes: r(&self.writes),
            pages_written: r(&self.pages_written),
            single_page_flushes: r(&self.single_page_flushes),
            wait_ns: r(&self.wait_ns),
            waits: r(&self.waits),
        }
    }

    fn count(&self, pages: usize) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.pages_written
            .fetch_add(pages as u64, Ordering::Relaxed);
    }

    fn waited(&self, since: std::time::Instant) {
        let ns = since.elapsed().as_nanos() as u64;
        if ns > 10_000 {
            self.waits.fetch_add(1, Ordering::Relaxed);
            self.wait_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }
}

/// A sealed page on its way to disk.
#[derive(Clone, Copy)]
pub struct PageWrite<'a> {
    pub id: PageId,
    pub bytes: &'a [u8],
}

/// The doublewrite layer in front of the tablespaces.
pub enum Doublewrite {
    Off,
    Legacy(legacy::Legacy),
    Files(files::Files),
}

impl Doublewrite {
    /// Opens (creating) the doublewrite area of `opts` in `dir`
    /// (`innodb_doublewrite_dir`; the data directory by default).
    pub fn open(
        dir: Arc<dyn Vfs>,
        opts: DoublewriteOptions,
        page_size: usize,
        counters: Arc<DoublewriteCounters>,
    ) -> Result<Doublewrite, StoreError> {
        if opts.mode == DoublewriteMode::Off {
            return Ok(Doublewrite::Off);
        }
        let detect_only = opts.mode == DoublewriteMode::DetectOnly;
        Ok(match opts.design {
            Design::Legacy => {
                Doublewrite::Legacy(legacy::Legacy::open(dir, page_size, detect_only, counters)?)
            }
            Design::Files => Doublewrite::Files(files::Files::open(
                dir,
                page_size,
                opts.files,
                opts.pages,
                detect_only,
                counters,
            )?),
        })
    }

    /// Writes a batch of sealed pages (a page cleaner's flush-list or LRU
    /// batch): copies first, then the data pages, synced; returns when
    /// every page is durable in its tablespace.
    pub fn write_batch(&self, pages: &[PageWrite<'_>], spaces: &Spaces) -> Result<(), StoreError> {
        match self {
            Doublewrite::Off => write_data(pages, spaces),
            Doublewrite::Legacy(l) => l.write_batch(pages, spaces),
            Doublewrite::Files(f) => f.write_batch(pages, spaces),
        }
    }

    /// Writes an LRU batch (the files design keeps them apart from
    /// flush-list batches; the legacy area has one batch path).
    pub fn write_lru_batch(
        &self,
        pages: &[PageWrite<'_>],
        spaces: &Spaces,
    ) -> Result<(), StoreError> {
        match self {
            Doublewrite::Files(f) => f.write_lru_batch(pages, spaces),
            _ => self.write_batch(pages, spaces),
        }
    }

    /// Writes one page for a user thread that needs its frame (a
    /// single-page flush).
    pub fn write_single(&self, page: PageWrite<'_>, spaces: &Spaces) -> Result<(), StoreError> {
        match self {
            Doublewrite::Off => write_data(&[page], spaces),
            Doublewrite::Legacy(l) => l.write_single(page, spaces),
            Doublewrite::Files(f) => f.write_single(page, spaces),
        }
    }
}

/// Writes `pages` to their tablespaces and syncs each tablespace touched.
pub(crate) fn write_data(pages: &[PageWrite<'_>], spaces: &Spaces) -> Result<(), StoreError> {
    let mut touched: Vec<std::sync::Arc<Tablespace>> = vec![];
    for p in pages {
        let ts = spaces.get(p.id.space)?;
        ts.write(p.id.page_no, p.bytes)?;
        if !touched.iter().any(|t| t.space == ts.space) {
            touched.push(ts);
        }
    }
    for ts in touched {
        ts.sync()?;
    }
    Ok(())
}

/// Opens doublewrite file `name`, allocated once to `pages` pages (as
/// InnoDB allocates its area at creation: later writes never extend it).
/// The caller syncs the directory.
pub(crate) fn open_area(
    dir: &dyn Vfs,
    name: &str,
    pages: u32,
    page_size: usize,
) -> Result<Arc<dyn crate::vfs::VfsFile>, StoreError> {
    let file = dir
        .open(name, true)
        .map_err(|e| StoreError::io(name, "opening", e))?;
    let want = u64::from(pages) * page_size as u64;
    if file.len().map_err(|e| StoreError::io(name, "sizing", e))? < want {
        file.write_at(&vec![0; page_size], want - page_size as u64)
            .and_then(|_| file.sync_data())
            .map_err(|e| StoreError::io(name, "creating", e))?;
    }
    Ok(file)
}

/// Writes the slot images of `pages` to `file` from slot `first` on, in
/// one write, and syncs it: the copies are durable before any data write.
pub(crate) fn write_slots(
    file: &dyn crate::vfs::VfsFile,
    name: &str,
    pages: &[PageWrite<'_>],
    first: u32,
    page_size: usize,
    detect_only: bool,
) -> Result<(), StoreError> {
    let mut buf = vec![0u8; pages.len() * page_size];
    for (p, slot) in pages.iter().zip(buf.chunks_exact_mut(page_size)) {
        slot_image(p.bytes, detect_only, slot);
    }
    file.write_at(&buf, u64::from(first) * page_size as u64)
        .and_then(|_| sync_timing::timed(SyncKind::Doublewrite, || file.sync_data()))
        .map_err(|e| StoreError::io(name, "writing", e))
}

/// What goes into a doublewrite slot for `page`: the whole page, or with
/// DETECT_ONLY its header alone (the rest zeros), enough to name it.
pub(crate) fn slot_image(page: &[u8], detect_only: bool, out: &mut [u8]) {
    if detect_only {
        out.fill(0);
        out[..super::page::HEADER].copy_from_slice(&page[..super::page::HEADER]);
    } else {
        out.copy_from_slice(page);
    }
}
