//! A table's committed rows in pages: the clustered index of a paged
//! table, read and changed through the buffer pool
//! ([`crate::page_store::buffer_pool`]), so a table can be larger than the
//! memory given to it.
//!
//! # Layout
//!
//! Rows sit in fixed-size slots addressed by primary key, as sysbench's
//! dense `id`s fill them: row `id` (≥ 0) is slot `id % per_page` of page
//! `id / per_page` of the table's tablespace. A slot is
//!
//! ```text
//! Sbtest: present u8 | k i32 | c_len u8 | c [120] | pad_len u8 | pad [60]   (187 bytes)
//! IdK:    present u8 | k i32                                             (5 bytes)
//! ```
//!
//! (`CHAR(120)` and `CHAR(60)` as sysbench declares them; a longer value
//! is refused before it is written, [`PagedRows::check`]). A 16 KiB page
//! holds 87 `sbtest` rows. A page never written reads as empty slots.
//!
//! # Durability
//!
//! A change is made to the page as of the redo LSN of the commit that
//! logged it ([`PagedRows::put`]); the page is written only after that
//! redo is durable (the pool's write-ahead rule), through the doublewrite
//! buffer. The redo records carry full after-images, so replaying every
//! record from a checkpoint LSN below the oldest unwritten change, in LSN
//! order, rebuilds the exact committed state whatever the pages hold
//! (`engine/DESIGN.md`, "Tables on pages").

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use thiserror::Error;

use crate::data::table::{Row, Shape};
use crate::page_store::buffer_pool::{BufferPool, ChangeLsn};
use crate::page_store::page::{PageId, HEADER, TRAILER};
use crate::page_store::StoreError;

/// Bytes of `c` a slot holds (`CHAR(120)`).
pub const C_MAX: usize = 120;
/// Bytes of `pad` a slot holds (`CHAR(60)`).
pub const PAD_MAX: usize = 60;

/// Why a row cannot be stored or read.
#[derive(Debug, Error)]
pub enum PagedError {
    #[error("row {id}: {column} is {len} bytes, more than the {max} a paged table's row holds (CHAR({max}))")]
    TooLong {
        id: i64,
        column: &'static str,
        len: usize,
        max: usize,
    },
    #[error("row {id}: a paged table's primary key must be 0 or more")]
    NegativeId { id: i64 },
    #[error("row {id} lies past the last page a tablespace can address (2^32 pages)")]
    TooFar { id: i64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One table's rows in the pages of tablespace `space`.
pub struct PagedRows {
    pool: Arc<BufferPool>,
    space: u32,
    shape: Shape,
    slot: usize,
    per_page: u32,
    /// One past the highest page a row was put in (the scans' end).
    pages: AtomicU32,
}

impl PagedRows {
    /// The rows of `shape` in `space` (open in `pool`), whose highest
    /// written page is `pages - 1` (0: an empty tablespace).
    pub fn new(
        pool: Arc<BufferPool>,
        space: u32,
        shape: Shape,
        page_size: usize,
        pages: u32,
    ) -> PagedRows {
        let slot = slot_size(shape);
        let per_page = ((page_size - HEADER - TRAILER) / slot) as u32;
        PagedRows {
            pool,
            space,
            shape,
            slot,
            per_page,
            pages: AtomicU32::new(pages),
        }
    }

    /// Rows a page holds.
    pub fn per_page(&self) -> u32 {
        self.per_page
    }

    /// One past the highest page holding a row.
    pub fn pages(&self) -> u32 {
        self.pages.load(Ordering::Acquire)
    }

    /// Whether `row` fits a slot as row `id` (`None`: a delete).
    pub fn check(&self, id: i64, row: Option<&Row>) -> Result<(), PagedError> {
        if id < 0 {
            return Err(PagedError::NegativeId { id });
        }
        let Some(row) = row else { return Ok(()) };
        if !self.shape.has_c_pad() {
            return Ok(());
        }
        for (column, len, max) in [("c", row.c.len(), C_MAX), ("pad", row.pad.len(), PAD_MAX)] {
            if len > max {
                return Err(PagedError::TooLong {
                    id,
                    column,
                    len,
                    max,
                });
            }
        }
        Ok(())
    }

    fn locate(&self, id: i64) -> Result<(PageId, usize), PagedError> {
        if id < 0 {
            return Err(PagedError::NegativeId { id });
        }
        let page_no =
            u32::try_from(id / i64::from(self.per_page)).map_err(|_| PagedError::TooFar { id })?;
        let at = (id % i64::from(self.per_page)) as usize * self.slot;
        Ok((
            PageId {
                space: self.space,
                page_no,
            },
            at,
        ))
    }

    /// Row `id`'s committed version.
    pub fn get(&self, id: i64) -> Result<Option<Row>, PagedError> {
        let (page, at) = self.locate(id)?;
        if page.page_no >= self.pages() {
            return Ok(None);
        }
        let slot = self.slot;
        let shape = self.shape;
        Ok(self
            .pool
            .read(page, |p| decode(shape, &p[HEADER + at..HEADER + at + slot]))?)
    }

    /// Sets row `id`'s committed version to `row` (`None`: deletes it) as
    /// of redo record `at`.
    pub fn put(
        &self,
        id: i64,
        row: Option<&Row>,
        at: impl Into<ChangeLsn>,
    ) -> Result<(), PagedError> {
        let lsn = at.into();
        self.check(id, row)?;
        let (page, at) = self.locate(id)?;
        let (slot, shape) = (self.slot, self.shape);
        self.pool.modify(page, lsn, |body| {
            encode(shape, row, &mut body[at..at + slot])
        })?;
        self.pages.fetch_max(page.page_no + 1, Ordering::AcqRel);
        Ok(())
    }

    /// The rows with `lo <= id <= hi`, in id order, page by page (each
    /// page's rows are copied out under its latch, then reported).
    pub fn scan(&self, lo: i64, hi: i64, mut f: impl FnMut(i64, Row)) -> Result<(), PagedError> {
        let lo = lo.max(0);
        let per = i64::from(self.per_page);
        let hi = hi.min(i64::from(self.pages()) * per - 1);
        if hi < lo {
            return Ok(());
        }
        let mut id = lo;
        while id <= hi {
            let (page, _) = self.locate(id)?;
            let last = ((id / per + 1) * per - 1).min(hi);
            let (first, slot, shape) = (id, self.slot, self.shape);
            let rows: Vec<(i64, Row)> = self.pool.read(page, |p| {
                (first..=last)
                    .filter_map(|i| {
                        let at = HEADER + (i % per) as usize * slot;
                        decode(shape, &p[at..at + slot]).map(|r| (i, r))
                    })
                    .collect()
            })?;
            for (i, r) in rows {
                f(i, r);
            }
            id = last + 1;
        }
        Ok(())
    }

    /// Every row, in id order.
    pub fn for_each(&self, f: impl FnMut(i64, Row)) -> Result<(), PagedError> {
        self.scan(0, i64::MAX, f)
    }
}

fn slot_size(shape: Shape) -> usize {
    if shape.has_c_pad() {
        1 + 4 + 1 + C_MAX + 1 + PAD_MAX
    } else {
        1 + 4
    }
}

fn encode(shape: Shape, row: Option<&Row>, slot: &mut [u8]) {
    slot.fill(0);
    let Some(row) = row else { return };
    slot[0] = 1;
    slot[1..5].copy_from_slice(&row.k.to_le_bytes());
    if shape.has_c_pad() {
        slot[5] = row.c.len() as u8;
        slot[6..6 + row.c.len()].copy_from_slice(row.c.as_bytes());
        let p = 6 + C_MAX;
        slot[p] = row.pad.len() as u8;
        slot[p + 1..p + 1 + row.pad.len()].copy_from_slice(row.pad.as_bytes());
    }
}

fn decode(shape: Shape, slot: &[u8]) -> Option<Row> {
    if slot[0] == 0 {
        return None;
    }
    let k = i32::from_le_bytes(slot[1..5].try_into().unwrap());
    if !shape.has_c_pad() {
        return Some(Row {
            k,
            c: String::new(),
            pad: String::new(),
        });
    }
    // What `encode` wrote is UTF-8 (a page that fails its checksum is
    // never read), so the validation's fast path is the one taken.
    let text = |at: usize, max: usize| {
        let n = usize::from(slot[at]).min(max);
        let bytes = &slot[at + 1..at + 1 + n];
        match std::str::from_utf8(bytes) {
            Ok(s) => s.to_owned(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        }
    };
    Some(Row {
        k,
        c: text(5, C_MAX),
        pad: text(6 + C_MAX, PAD_MAX),
    })
}

#[cfg(test)]
mod tests;
