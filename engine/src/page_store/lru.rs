//! The buffer pool's replacement order: an LRU list split into a young and
//! an old sublist, as InnoDB's (`innodb_old_blocks_pct`, 37% old by
//! default). A page read in enters at the head of the old sublist; only a
//! page touched again while old moves to the young head. A scan that reads
//! each page once therefore pushes out only old pages and leaves the
//! working set in the young sublist. Eviction takes from the old tail.
//!
//! Both sublists are deques of `(frame, stamp)`; moving a frame pushes a
//! new entry with a new stamp and leaves the old entry stale (skipped when
//! it comes out, and swept when stale entries outnumber live ones), so
//! every operation is O(1) amortised.
//!
//! Whether a frame is young is also kept in flags readable without the
//! pool's mutex ([`Lru::young_flags`]): a page already young is not moved
//! when it is accessed, so a hit on it needs no list change and the pool
//! skips the mutex (InnoDB leaves a page near the young head in place for
//! the same reason).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::sync::AtomicBool;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Out,
    Young,
    Old,
}

/// The young/old LRU over frames `0..n`.
#[derive(Debug)]
pub struct Lru {
    young: VecDeque<(u32, u32)>,
    old: VecDeque<(u32, u32)>,
    place: Vec<(Place, u32)>,
    young_flags: Arc<[AtomicBool]>,
    young_live: usize,
    old_live: usize,
    old_pct: usize,
}

impl Lru {
    pub fn new(frames: usize, old_pct: u32) -> Lru {
        Lru {
            young: VecDeque::new(),
            old: VecDeque::new(),
            place: vec![(Place::Out, 0); frames],
            young_flags: (0..frames).map(|_| AtomicBool::new(false)).collect(),
            young_live: 0,
            old_live: 0,
            old_pct: old_pct.clamp(5, 95) as usize,
        }
    }

    /// Per frame, whether it is in the young sublist now; a hint to a
    /// reader without the list's lock (it may have turned old since).
    pub fn young_flags(&self) -> Arc<[AtomicBool]> {
        self.young_flags.clone()
    }

    /// Frames in the list.
    pub fn live(&self) -> usize {
        self.young_live + self.old_live
    }

    #[cfg(test)]
    fn old_len(&self) -> usize {
        self.old_live
    }

    fn restamp(&mut self, f: u32, to: Place) -> u32 {
        let (p, stamp) = &mut self.place[f as usize];
        match *p {
            Place::Young => self.young_live -= 1,
            Place::Old => self.old_live -= 1,
            Place::Out => {}
        }
        *p = to;
        *stamp = stamp.wrapping_add(1);
        self.young_flags[f as usize].store(to == Place::Young, Ordering::Relaxed);
        match to {
            Place::Young => self.young_live += 1,
            Place::Old => self.old_live += 1,
            Place::Out => {}
        }
        *stamp
    }

    /// A page just read into frame `f`: the head of the old sublist.
    pub fn insert(&mut self, f: u32) {
        let s = self.restamp(f, Place::Old);
        self.old.push_front((f, s));
        self.balance();
    }

    /// Frame `f` was accessed: an old page becomes young.
    pub fn touch(&mut self, f: u32) {
        if self.place[f as usize].0 == Place::Old {
            let s = self.restamp(f, Place::Young);
            self.young.push_front((f, s));
            self.balance();
        }
    }

    /// Frame `f` leaves the list (evicted).
    pub fn remove(&mut self, f: u32) {
        self.restamp(f, Place::Out);
        self.sweep();
    }

    /// Frames from the old tail towards the head, then the young tail
    /// (at most `depth`), live entries only: eviction candidates.
    pub fn tail(&self, depth: usize) -> Vec<u32> {
        let live = |q: &VecDeque<(u32, u32)>, want: Place| -> Vec<u32> {
            q.iter()
                .rev()
                .filter(|(f, s)| self.place[*f as usize] == (want, *s))
                .map(|(f, _)| *f)
                .take(depth)
                .collect()
        };
        let mut out = live(&self.old, Place::Old);
        if out.len() < depth {
            let more = live(&self.young, Place::Young);
            out.extend(more.into_iter().take(depth - out.len()));
        }
        out
    }

    /// Keeps the old sublist near its share: young tails move to old.
    fn balance(&mut self) {
        let total = self.live();
        while total > 8 && self.old_live * 100 < total * self.old_pct {
            let Some((f, s)) = self.young.pop_back() else {
                break;
            };
            if self.place[f as usize] == (Place::Young, s) {
                let s = self.restamp(f, Place::Old);
                // The young tail is older than every old page's last
                // touch only approximately; it joins the old head.
                self.old.push_front((f, s));
            }
        }
        self.sweep();
    }

    /// Drops stale entries once they outnumber the live ones.
    fn sweep(&mut self) {
        let place = &self.place;
        if self.young.len() > 2 * self.young_live + 64 {
            self.young
                .retain(|(f, s)| place[*f as usize] == (Place::Young, *s));
        }
        if self.old.len() > 2 * self.old_live + 64 {
            self.old
                .retain(|(f, s)| place[*f as usize] == (Place::Old, *s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_evicts_old_pages_and_spares_the_hot_set() {
        let mut l = Lru::new(100, 37);
        // A hot set, read and touched again: young.
        for f in 0..50 {
            l.insert(f);
            l.touch(f);
        }
        // A scan, each page read once, while the hot set stays in use.
        for f in 50..100 {
            l.insert(f);
            for h in 0..50 {
                l.touch(h);
            }
        }
        assert_eq!(l.live(), 100);
        let victims = l.tail(30);
        assert_eq!(victims.len(), 30);
        assert!(victims.iter().all(|&f| f >= 50), "{victims:?}");
        // The first scanned page is the oldest.
        assert_eq!(victims[0], 50);
        for f in victims {
            l.remove(f);
        }
        assert_eq!(l.live(), 70);
    }

    #[test]
    fn young_flags_follow_the_sublists() {
        let mut l = Lru::new(40, 37);
        let flags = l.young_flags();
        let young = |f: u32| flags[f as usize].load(Ordering::Relaxed);
        l.insert(0);
        assert!(!young(0), "a page read in enters old");
        l.touch(0);
        assert!(young(0), "a second access makes it young");
        for f in 1..40 {
            l.insert(f);
            l.touch(f);
        }
        // Frame 0, the young tail, was moved to old to keep the share.
        assert!(!young(0));
        assert_eq!(
            (0..40).filter(|&f| young(f)).count(),
            l.live() - l.old_len()
        );
        l.remove(39);
        assert!(!young(39), "an evicted frame is not young");
    }

    #[test]
    fn the_old_share_is_kept_and_stale_entries_swept() {
        let mut l = Lru::new(1000, 37);
        for f in 0..1000 {
            l.insert(f);
            l.touch(f);
        }
        assert!(l.old_len() * 100 >= 37 * 1000 - 100, "{}", l.old_len());
        for _ in 0..50 {
            for f in 0..1000 {
                l.touch(f);
            }
        }
        assert!(l.young.len() + l.old.len() <= 3 * 1000 + 200);
        assert_eq!(l.live(), 1000);
    }
}
