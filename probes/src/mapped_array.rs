//! A BPF array map created with `BPF_F_MMAPABLE`, mapped into this process.
//!
//! The hottest per-thread and per-descriptor state lives in such arrays
//! (an inlined array access in the programs instead of a hash lookup).
//! Reading one through the map syscalls would take one call per entry;
//! mapped, a window's scan is plain memory reads.

use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use aya::maps::{Map, MapData};
use aya::Pod;

use crate::error::ProbeError;

/// The values of an mmapable BPF array, shared with the kernel. Each value
/// is copied out field by field as the programs may be updating it: a
/// copy's fields are each current, not all of one instant (the same holds
/// for a map lookup).
pub struct MappedArray<T: Pod> {
    base: NonNull<T>,
    entries: usize,
    bytes: usize,
    _values: PhantomData<T>,
}

// SAFETY: the mapping is plain shared memory owned by this value; access
// goes through volatile reads and atomic stores only.
unsafe impl<T: Pod> Send for MappedArray<T> {}

impl<T: Pod> MappedArray<T> {
    /// Maps array map `name` of `map`, checking that its values are `T`.
    pub fn new(name: &'static str, map: &Map) -> Result<MappedArray<T>, ProbeError> {
        let bad = |why: String| ProbeError::MapLayout { map: name, why };
        let data: &MapData = match map {
            Map::Array(d) => d,
            _ => return Err(bad("not an array map".into())),
        };
        let info = data.info().map_err(|e| ProbeError::Map {
            map: name,
            source: Box::new(e),
        })?;
        if info.value_size() as usize != std::mem::size_of::<T>() {
            return Err(bad(format!(
                "values of {} bytes, user space expects {}",
                info.value_size(),
                std::mem::size_of::<T>()
            )));
        }
        if !std::mem::size_of::<T>().is_multiple_of(8) {
            return Err(bad("value size is not a multiple of 8".into()));
        }
        let entries = info.max_entries() as usize;
        let bytes = (entries * std::mem::size_of::<T>()).max(1);
        // SAFETY: a fresh shared mapping of the map's values (offset 0);
        // the kernel checks the length against the map and refuses maps
        // created without BPF_F_MMAPABLE.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                data.fd().as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(bad(format!(
                "mmap failed: {} (the map must be created with BPF_F_MMAPABLE)",
                std::io::Error::last_os_error()
            )));
        }
        Ok(MappedArray {
            base: NonNull::new(ptr.cast()).expect("mmap returned null"),
            entries,
            bytes,
            _values: PhantomData,
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether the array has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    fn slot(&self, i: usize) -> *mut T {
        assert!(i < self.entries, "entry {i} of {}", self.entries);
        // SAFETY: in bounds of the mapping.
        unsafe { self.base.as_ptr().add(i) }
    }

    /// A copy of entry `i`.
    pub fn get(&self, i: usize) -> T {
        // SAFETY: in bounds, aligned (page-aligned base, size a multiple
        // of 8), and any bit pattern is a valid `T` (Pod).
        unsafe { std::ptr::read_volatile(self.slot(i)) }
    }

    /// The `u32` at byte `offset` of entry `i`, as an atomic shared with
    /// the programs.
    fn word(&self, i: usize, offset: usize) -> &AtomicU32 {
        assert!(offset.is_multiple_of(4) && offset + 4 <= std::mem::size_of::<T>());
        // SAFETY: in bounds and 4-byte aligned; the kernel side updates it
        // with atomic instructions only.
        unsafe { &*(self.slot(i).cast::<u8>().add(offset).cast::<AtomicU32>()) }
    }

    /// The `u32` at byte `offset` of entry `i` (an owner word), without
    /// copying the entry.
    pub fn word_at(&self, i: usize, offset: usize) -> u32 {
        self.word(i, offset).load(Ordering::Acquire)
    }

    /// Stores `value` in the `u32` at byte `offset` of entry `i` if the
    /// owner field at byte `owner_offset` holds `owner`, claiming the entry
    /// for `owner` first when it is free (a compare-and-swap of the owner
    /// from 0, as the programs claim entries: a thread asleep since the
    /// probes attached has claimed none yet). Returns whether it stored.
    /// The programs never write that word after claiming the entry (it is
    /// zeroed when the entry is freed), so the store sticks for the
    /// owner's life.
    pub fn claim_and_set(
        &self,
        i: usize,
        owner_offset: usize,
        owner: u32,
        offset: usize,
        value: u32,
    ) -> bool {
        let tag = self.word(i, owner_offset);
        let owned = match tag.compare_exchange(0, owner, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(now) => now == owner,
        };
        if owned {
            self.word(i, offset).store(value, Ordering::Release);
        }
        owned
    }

    /// Frees entry `i` if the `u32` owner field at byte `offset` still
    /// holds `owner`: zeroes every other byte, then the owner, so a program
    /// that claims the entry (compare-and-swap of the owner from 0) finds
    /// it all zero. Returns whether it freed it.
    pub fn release(&self, i: usize, offset: usize, owner: u32) -> bool {
        let tag = self.word(i, offset);
        if tag.load(Ordering::Acquire) != owner {
            return false;
        }
        let base = self.slot(i).cast::<u8>();
        for at in (0..std::mem::size_of::<T>()).step_by(4) {
            if at != offset {
                // SAFETY: in bounds and 4-byte aligned.
                unsafe { std::ptr::write_volatile(base.add(at).cast::<u32>(), 0) };
            }
        }
        tag.store(0, Ordering::Release);
        true
    }
}

impl<T: Pod> Drop for MappedArray<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.bytes) };
    }
}
