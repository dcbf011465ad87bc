//! The doublewrite buffer as InnoDB had it before 8.0.20: one area of
//! [`AREA_PAGES`] pages (in the system tablespace there; a file of its own,
//! [`FILE`], here), [`BATCH_PAGES`] for batch flushes and
//! [`SINGLE_SLOTS`] slots for single-page flushes, all behind one mutex
//! (`dblwr.mutex`, a named lock the probes see).
//!
//! - A batch runs alone: it takes the mutex, waits while another batch
//!   runs, marks itself running, writes its copies (at most
//!   [`BATCH_PAGES`]; a larger batch goes in rounds) and syncs the area,
//!   writes the data pages and syncs their tablespaces, and only then lets
//!   the next batch in.
//! - A single-page flush takes the mutex to reserve one of the 8 slots,
//!   waiting on `dblwr.slot_free` while all are taken, writes its copy to
//!   the slot and syncs the area, writes the page and syncs its
//!   tablespace, then frees the slot. With many user threads flushing
//!   single pages, all of them queue here: the collapse the seed shows.

use std::sync::Arc;
use std::time::Instant;

use crate::named_locks::{NamedCondvar, NamedMutex};
use crate::vfs::{Vfs, VfsFile};

use super::{open_area, write_data, write_slots, DoublewriteCounters, PageWrite};
use crate::page_store::{Spaces, StoreError};

/// The area's file.
pub const FILE: &str = "ibdata-dblwr.legacy";
/// Pages in the area.
pub const AREA_PAGES: u32 = 128;
/// Pages for batch flushes (two blocks of 64 in InnoDB, less 8).
pub const BATCH_PAGES: u32 = 120;
/// Single-page flush slots.
pub const SINGLE_SLOTS: u32 = AREA_PAGES - BATCH_PAGES;

struct State {
    batch_running: bool,
    /// Which single-page slots are taken.
    slots: [bool; SINGLE_SLOTS as usize],
}

/// The legacy doublewrite area.
pub struct Legacy {
    file: Arc<dyn VfsFile>,
    page_size: usize,
    detect_only: bool,
    state: NamedMutex<State>,
    batch_done: NamedCondvar,
    slot_free: NamedCondvar,
    counters: Arc<DoublewriteCounters>,
}

impl Legacy {
    pub fn open(
        dir: Arc<dyn Vfs>,
        page_size: usize,
        detect_only: bool,
        counters: Arc<DoublewriteCounters>,
    ) -> Result<Legacy, StoreError> {
        let file = open_area(dir.as_ref(), FILE, AREA_PAGES, page_size)?;
        dir.sync_dir()
            .map_err(|e| StoreError::io(FILE, "creating", e))?;
        Ok(Legacy {
            file,
            page_size,
            detect_only,
            state: NamedMutex::new(
                "dblwr.mutex",
                State {
                    batch_running: false,
                    slots: [false; SINGLE_SLOTS as usize],
                },
            ),
            batch_done: NamedCondvar::new("dblwr.batch_done"),
            slot_free: NamedCondvar::new("dblwr.slot_free"),
            counters,
        })
    }

    fn write_copies(&self, pages: &[PageWrite<'_>], first_slot: u32) -> Result<(), StoreError> {
        write_slots(
            self.file.as_ref(),
            FILE,
            pages,
            first_slot,
            self.page_size,
            self.detect_only,
        )
    }

    pub fn write_batch(&self, pages: &[PageWrite<'_>], spaces: &Spaces) -> Result<(), StoreError> {
        for chunk in pages.chunks(BATCH_PAGES as usize) {
            let t0 = Instant::now();
            {
                let mut s = self.state.lock();
                while s.batch_running {
                    s = self.batch_done.wait(s);
                }
                s.batch_running = true;
            }
            self.counters.waited(t0);
            let done = self
                .write_copies(chunk, 0)
                .and_then(|_| write_data(chunk, spaces));
            self.state.lock().batch_running = false;
            self.batch_done.notify_all();
            done?;
            self.counters.count(chunk.len());
        }
        Ok(())
    }

    pub fn write_single(&self, page: PageWrite<'_>, spaces: &Spaces) -> Result<(), StoreError> {
        let t0 = Instant::now();
        let slot = {
            let mut s = self.state.lock();
            loop {
                if let Some(i) = s.slots.iter().position(|taken| !taken) {
                    s.slots[i] = true;
                    break i;
                }
                s = self.slot_free.wait(s);
            }
        };
        self.counters.waited(t0);
        let done = self
            .write_copies(&[page], BATCH_PAGES + slot as u32)
            .and_then(|_| write_data(&[page], spaces));
        self.state.lock().slots[slot] = false;
        self.slot_free.notify_one();
        done?;
        self.counters.count(1);
        self.counters
            .single_page_flushes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}
