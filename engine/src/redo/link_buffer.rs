//! The link buffer (MySQL's `recent_written` / `recent_closed`).
//!
//! A thread that finished copying its record `[start, end)` stores `end` in
//! the slot for `start`; the tail walks over contiguous slots, so it is the
//! lsn below which nothing is missing. Lock-free: any thread may advance it.
//! Model-checked with loom (`tests/loom_link_buffer.rs`).

use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

use super::Lsn;
use crate::sync::AtomicU64;

pub struct LinkBuffer {
    slots: Box<[AtomicU64]>,
    mask: u64,
    tail: CachePadded<AtomicU64>,
}

impl LinkBuffer {
    /// `capacity` (slots) must be a power of two and larger than any record.
    pub fn new(capacity: usize, start: Lsn) -> Self {
        assert!(capacity.is_power_of_two());
        let slots = (0..capacity).map(|_| AtomicU64::new(0)).collect();
        LinkBuffer {
            slots,
            mask: capacity as u64 - 1,
            tail: CachePadded::new(AtomicU64::new(start)),
        }
    }

    pub fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Whether a record starting at `start` may be linked now.
    pub fn has_space(&self, start: Lsn) -> bool {
        start < self.tail.load(Ordering::Acquire) + self.capacity()
    }

    /// Records that `[start, end)` is complete. Requires `has_space(start)`.
    pub fn add_link(&self, start: Lsn, end: Lsn) {
        debug_assert!(end > start && end - start < self.capacity());
        debug_assert!(self.has_space(start));
        self.slots[(start & self.mask) as usize].store(end, Ordering::Release);
    }

    /// The end of the record that starts at `lsn`, if it has been linked.
    /// Only meaningful for `lsn` at or above the tail.
    pub fn peek(&self, lsn: Lsn) -> Option<Lsn> {
        let e = self.slots[(lsn & self.mask) as usize].load(Ordering::Acquire);
        (e > lsn).then_some(e)
    }

    /// The tail without advancing it.
    #[cfg(all(test, loom))]
    pub fn tail(&self) -> Lsn {
        self.tail.load(Ordering::Acquire)
    }

    /// Moves the tail over every contiguous complete record; returns it.
    ///
    /// Each step is a CAS from the tail value the slot was read under: while
    /// the tail equals `t` no record from the next lap (start `t + capacity`)
    /// can be linked, so the slot's value belongs to the record at `t`.
    /// A stale value from the previous lap is `<= t` (records are shorter
    /// than the capacity) and stops the walk.
    pub fn advance_tail(&self) -> Lsn {
        let mut t = self.tail.load(Ordering::Acquire);
        loop {
            let e = self.slots[(t & self.mask) as usize].load(Ordering::Acquire);
            if e <= t {
                return t;
            }
            match self
                .tail
                .compare_exchange(t, e, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => t = e,
                Err(cur) => t = cur,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn tail_stops_at_holes() {
        let lb = LinkBuffer::new(64, 100);
        lb.add_link(110, 120);
        assert_eq!(lb.advance_tail(), 100);
        lb.add_link(100, 110);
        assert_eq!(lb.advance_tail(), 120);
    }

    #[test]
    fn concurrent_links_and_advancers_reach_the_end() {
        // 4 threads link interleaved records of varying size over many laps of
        // a small buffer while 2 more advance the tail.
        let lb = Arc::new(LinkBuffer::new(256, 0));
        let next = Arc::new(AtomicU64::new(0));
        let total: u64 = 400_000;
        let mut hs = vec![];
        for i in 0..4u64 {
            let (lb, next) = (lb.clone(), next.clone());
            hs.push(std::thread::spawn(move || loop {
                let len = 1 + (i * 7 + 3) % 50;
                let start = next.fetch_add(len, Ordering::SeqCst);
                if start >= total {
                    return;
                }
                while !lb.has_space(start) {
                    lb.advance_tail();
                    std::thread::yield_now();
                }
                lb.add_link(start, start + len);
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        let end = next.load(Ordering::SeqCst);
        // Everything below the first reservation past `total` was linked.
        let t = lb.advance_tail();
        assert!(t >= total && t <= end, "tail {t} total {total} end {end}");
    }
}
