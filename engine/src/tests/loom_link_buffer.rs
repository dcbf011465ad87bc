//! Model checking of the link buffer (`recent_written` / `recent_closed`)
//! with loom: every interleaving of threads marking ranges done and moving
//! the tail, on the real link-buffer code (its slots and tail are loom's
//! atomics in this build). Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_link_buffer`;
//! a normal build leaves it out.

use std::sync::Arc;

use crate::redo::link_buffer::LinkBuffer;
use loom::sync::atomic::{AtomicBool, Ordering::Relaxed};
use loom::thread;

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

/// The ranges of one model, in lsn order, and a flag per range set just
/// before the range is linked.
struct Ranges {
    lb: LinkBuffer,
    ranges: Vec<(u64, u64)>,
    linked: Vec<AtomicBool>,
}

impl Ranges {
    fn new(capacity: usize, ranges: &[(u64, u64)]) -> Arc<Ranges> {
        assert!(ranges.windows(2).all(|w| w[0].1 == w[1].0));
        Arc::new(Ranges {
            lb: LinkBuffer::new(capacity, ranges[0].0),
            ranges: ranges.to_vec(),
            linked: ranges.iter().map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// Checks a tail some thread got: it is a range boundary, and every
    /// range below it was linked (the tail never passes a hole). The flag is
    /// relaxed: only the link's Release store and the tail's Acquire loads
    /// make it visible here.
    fn check_tail(&self, t: u64) {
        assert!(
            t == self.ranges[0].0 || self.ranges.iter().any(|r| r.1 == t),
            "tail {t} is inside a range"
        );
        for (i, r) in self.ranges.iter().enumerate() {
            if r.1 <= t {
                assert!(
                    self.linked[i].load(Relaxed),
                    "tail {t} passed {r:?}, not linked (or its link not visible)"
                );
            }
        }
    }

    /// Links range `i` as `RedoLog::mark_closed` does (waiting for its slot
    /// by moving the tail), then moves the tail; checks every tail seen and
    /// that the tail never goes back. Returns the last tail seen.
    fn link(&self, i: usize, mut seen: u64) -> u64 {
        let (start, end) = self.ranges[i];
        let mut observe = |t: u64| {
            assert!(t >= seen, "tail went back from {seen} to {t}");
            self.check_tail(t);
            seen = t;
        };
        while !self.lb.has_space(start) {
            observe(self.lb.advance_tail());
            thread::yield_now();
        }
        self.linked[i].store(true, Relaxed);
        self.lb.add_link(start, end);
        observe(self.lb.advance_tail());
        seen
    }

    /// After every thread is done: the tail is the last end (no mark lost).
    fn check_end(&self) {
        let last = self.ranges.last().unwrap().1;
        assert_eq!(self.lb.advance_tail(), last, "a mark was lost");
        assert_eq!(self.lb.tail(), last);
    }
}

/// Three threads link three ranges in every order; each moves the tail
/// after its link. No laps: the buffer holds every range.
#[test]
fn three_threads_link_in_any_order_tail_reaches_the_end() {
    model(3, || {
        let r = Ranges::new(8, &[(0, 2), (2, 3), (3, 6)]);
        let hs: Vec<_> = [2, 1]
            .into_iter()
            .map(|i| {
                let r = r.clone();
                thread::spawn(move || {
                    r.link(i, 0);
                })
            })
            .collect();
        r.link(0, 0);
        for h in hs {
            h.join().unwrap();
        }
        r.check_end();
    });
}

/// A lap of a 4-slot buffer: one thread waits for room to link `[4,6)`,
/// whose slot holds `[0,1)`'s end (1) once that is linked, while the
/// others link `[0,1)` then `[3,4)`, and `[1,3)`, and every thread moves the
/// tail. The stale end must stop the tail at 4 until `[4,6)` is linked, and
/// a tail moved from an old value must never jump over a hole.
#[test]
fn a_lap_over_a_stale_slot_never_passes_a_hole() {
    model(3, || {
        let r = Ranges::new(4, &[(0, 1), (1, 3), (3, 4), (4, 6)]);
        let spawn = |order: &'static [usize]| {
            let r = r.clone();
            thread::spawn(move || {
                let mut seen = 0;
                for &i in order {
                    seen = r.link(i, seen);
                }
            })
        };
        let hs = [spawn(&[0, 2]), spawn(&[3])];
        r.link(1, 0);
        for h in hs {
            h.join().unwrap();
        }
        r.check_end();
    });
}
