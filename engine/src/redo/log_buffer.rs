//! The log buffer: a ring addressed by lsn modulo its size, into which
//! committing threads copy their records concurrently, without locks.
//!
//! Safety rests on two rules kept by `RedoLog`: a thread writes only the
//! range it reserved with one `fetch_add`, and only once that range lies
//! within `write_lsn + size` (the writer has already copied out what was
//! there before); the writer reads only below the `recent_written` tail
//! (every byte there was published with a Release store in the link buffer).
//! Model-checked with loom (`tests/loom_log_buffer.rs`: that protocol, on
//! this ring and the link buffer).

use super::Lsn;
use crate::sync::{copy_from_cells, copy_to_cells, UnsafeCell};

pub struct LogBuffer {
    data: Box<[UnsafeCell<u8>]>,
    mask: u64,
}

// SAFETY: concurrent access is to disjoint byte ranges only (see module doc).
unsafe impl Sync for LogBuffer {}
unsafe impl Send for LogBuffer {}

impl LogBuffer {
    /// `size` must be a power of two, at least 4096 (a model, built with
    /// `--cfg loom`, uses a few bytes so that its records wrap).
    pub fn new(size: usize) -> Self {
        assert!(size.is_power_of_two() && (cfg!(loom) || size >= 4096));
        LogBuffer {
            data: (0..size).map(|_| UnsafeCell::new(0)).collect(),
            mask: size as u64 - 1,
        }
    }

    pub fn size(&self) -> u64 {
        self.mask + 1
    }

    /// Copies `bytes` to `[lsn, lsn + len)`, wrapping around the ring.
    ///
    /// # Safety
    /// The caller owns that lsn range and nobody reads it concurrently.
    pub unsafe fn copy_in(&self, lsn: Lsn, bytes: &[u8]) {
        let off = (lsn & self.mask) as usize;
        let first = bytes.len().min(self.data.len() - off);
        copy_to_cells(&self.data[off..off + first], &bytes[..first]);
        if first < bytes.len() {
            copy_to_cells(&self.data[..bytes.len() - first], &bytes[first..]);
        }
    }

    /// Copies `[lsn, lsn + out.len())` out of the ring.
    ///
    /// # Safety
    /// The range is complete (below the link-buffer tail) and not yet reusable.
    pub unsafe fn copy_out(&self, lsn: Lsn, out: &mut [u8]) {
        let off = (lsn & self.mask) as usize;
        let first = out.len().min(self.data.len() - off);
        let (head, rest) = out.split_at_mut(first);
        copy_from_cells(&self.data[off..off + first], head);
        if !rest.is_empty() {
            copy_from_cells(&self.data[..rest.len()], rest);
        }
    }
}
