//! The log buffer: a ring addressed by lsn modulo its size, into which
//! committing threads copy their records concurrently, without locks.
//!
//! Safety rests on two rules kept by `RedoLog`: a thread writes only the
//! range it reserved with one `fetch_add`, and only once that range lies
//! within `write_lsn + size` (the writer has already copied out what was
//! there before); the writer reads only below the `recent_written` tail
//! (every byte there was published with a Release store in the link buffer).

use std::cell::UnsafeCell;

use super::Lsn;

pub struct LogBuffer {
    data: Box<[UnsafeCell<u8>]>,
    mask: u64,
}

// SAFETY: concurrent access is to disjoint byte ranges only (see module doc).
unsafe impl Sync for LogBuffer {}
unsafe impl Send for LogBuffer {}

impl LogBuffer {
    pub fn new(size: usize) -> Self {
        assert!(size.is_power_of_two() && size >= 4096);
        LogBuffer {
            data: (0..size).map(|_| UnsafeCell::new(0)).collect(),
            mask: size as u64 - 1,
        }
    }

    pub fn size(&self) -> u64 {
        self.mask + 1
    }

    fn ptr(&self, lsn: Lsn) -> *mut u8 {
        self.data[(lsn & self.mask) as usize].get()
    }

    /// Copies `bytes` to `[lsn, lsn + len)`, wrapping around the ring.
    ///
    /// # Safety
    /// The caller owns that lsn range and nobody reads it concurrently.
    pub unsafe fn copy_in(&self, lsn: Lsn, bytes: &[u8]) {
        let off = (lsn & self.mask) as usize;
        let first = bytes.len().min(self.data.len() - off);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr(lsn), first);
        if first < bytes.len() {
            std::ptr::copy_nonoverlapping(
                bytes[first..].as_ptr(),
                self.ptr(0),
                bytes.len() - first,
            );
        }
    }

    /// Copies `[lsn, lsn + out.len())` out of the ring.
    ///
    /// # Safety
    /// The range is complete (below the link-buffer tail) and not yet reusable.
    pub unsafe fn copy_out(&self, lsn: Lsn, out: &mut [u8]) {
        let off = (lsn & self.mask) as usize;
        let first = out.len().min(self.data.len() - off);
        std::ptr::copy_nonoverlapping(self.ptr(lsn), out.as_mut_ptr(), first);
        if first < out.len() {
            std::ptr::copy_nonoverlapping(
                self.ptr(0),
                out[first..].as_mut_ptr(),
                out.len() - first,
            );
        }
    }
}
