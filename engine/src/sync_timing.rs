//! The engine's syncs as it times them: how long each `fdatasync` of a
//! doublewrite file or a tablespace took, and whether the device served it
//! beside other syncs or queued it behind them.
//!
//! The doublewrite designs differ in how many page syncs they keep in
//! flight (the legacy design: one batch and at most 8 single-page flushes;
//! the 8.0.20 design: no limit), so which design wins depends on the
//! device: on one that completes many syncs at once, a slow sync is where
//! `files` gains; on one that serves them one at a time the queue only
//! moves into the device (`engine/bench/RESULTS.md`, seed 002 on a modelled
//! device). The syscall tracepoints see a real device's syncs but not the
//! modelled device's wait ([`crate::device_model`]), so the engine times
//! the page syncs itself, around the call, and the `counters_tick` thread
//! publishes the totals through `redoctor_page_syncs` (`engine/PROBES.md`).
//!
//! Each page sync is also sorted by what was in flight when it began:
//! alone, or beside other syncs of the process (any kind: the redo log's,
//! the binlog's, a checkpoint's count as in flight, [`SyncKind::Other`]).
//! On a device that overlaps syncs the two sorts take about as long; on one
//! that serves them one at a time a sync that began behind another waits
//! for it too, so it takes longer.
//!
//! One set of counters for the whole process, as [`crate::idle_poll`]: the
//! probes account per process, and one device serves all its engines.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use redoctor_probes_common::abi::PageSyncs;

/// What a timed sync made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    /// A doublewrite area or file (the copies of pages before their write).
    Doublewrite,
    /// A tablespace (pages at their place).
    Data,
    /// Any other file (redo, binlog, relay log, checkpoint): counted as
    /// in flight while it syncs, not timed.
    Other,
}

/// The counters ([`PROCESS`]'s; a test keeps its own).
struct SyncTimes {
    in_flight: AtomicU64,
    doublewrite_syncs: AtomicU64,
    doublewrite_ns: AtomicU64,
    data_syncs: AtomicU64,
    data_ns: AtomicU64,
    overlapped_syncs: AtomicU64,
    overlapped_ns: AtomicU64,
}

static PROCESS: SyncTimes = SyncTimes::new();

impl SyncTimes {
    const fn new() -> SyncTimes {
        SyncTimes {
            in_flight: AtomicU64::new(0),
            doublewrite_syncs: AtomicU64::new(0),
            doublewrite_ns: AtomicU64::new(0),
            data_syncs: AtomicU64::new(0),
            data_ns: AtomicU64::new(0),
            overlapped_syncs: AtomicU64::new(0),
            overlapped_ns: AtomicU64::new(0),
        }
    }

    fn timed<T>(&self, kind: SyncKind, sync: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let (calls, time) = match kind {
            SyncKind::Doublewrite => (&self.doublewrite_syncs, &self.doublewrite_ns),
            SyncKind::Data => (&self.data_syncs, &self.data_ns),
            SyncKind::Other => {
                self.in_flight.fetch_add(1, Relaxed);
                let done = sync();
                self.in_flight.fetch_sub(1, Relaxed);
                return done;
            }
        };
        let beside = self.in_flight.fetch_add(1, Relaxed) > 0;
        let start = Instant::now();
        let done = sync();
        let ns = start.elapsed().as_nanos() as u64;
        self.in_flight.fetch_sub(1, Relaxed);
        calls.fetch_add(1, Relaxed);
        time.fetch_add(ns, Relaxed);
        if beside {
            self.overlapped_syncs.fetch_add(1, Relaxed);
            self.overlapped_ns.fetch_add(ns, Relaxed);
        }
        done
    }

    fn totals(&self) -> PageSyncs {
        PageSyncs {
            doublewrite_syncs: self.doublewrite_syncs.load(Relaxed),
            doublewrite_ns: self.doublewrite_ns.load(Relaxed),
            data_syncs: self.data_syncs.load(Relaxed),
            data_ns: self.data_ns.load(Relaxed),
            overlapped_syncs: self.overlapped_syncs.load(Relaxed),
            overlapped_ns: self.overlapped_ns.load(Relaxed),
        }
    }
}

/// Runs `sync` (an `fdatasync` of a `kind` file): in flight meanwhile, and
/// a page sync's time counted. A failed sync is counted too: it took the
/// device's time all the same.
pub fn timed<T>(kind: SyncKind, sync: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    PROCESS.timed(kind, sync)
}

/// The process's page-sync totals so far, cumulative (each counter read on
/// its own: a sync that ends during the read may be in one and not yet in
/// another). The type is the probe interface's: `redoctor_page_syncs`
/// carries these six values.
pub fn totals() -> PageSyncs {
    PROCESS.totals()
}

#[cfg(test)]
mod tests {
    use std::sync::Barrier;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_timed_sync_counts_its_kind_and_its_time() {
        let t = SyncTimes::new();
        t.timed(SyncKind::Doublewrite, || {
            std::thread::sleep(Duration::from_millis(3));
            Ok(())
        })
        .unwrap();
        let err = t.timed(SyncKind::Data, || -> io::Result<()> {
            Err(io::Error::other("EIO"))
        });
        assert!(err.is_err(), "the sync's result is handed back");
        let d = t.totals();
        assert_eq!((d.doublewrite_syncs, d.data_syncs), (1, 1), "{d:?}");
        assert!(d.doublewrite_ns >= 3_000_000, "{d:?}");
        assert_eq!(d.overlapped_syncs, 0, "one at a time: {d:?}");
        assert_eq!(t.in_flight.load(Relaxed), 0);
    }

    /// The second sync to begin saw the first in flight (the barrier is
    /// inside both syncs); another file's sync counts as in flight but is
    /// not a page sync.
    #[test]
    fn a_sync_that_begins_beside_another_counts_as_overlapped() {
        for first in [SyncKind::Data, SyncKind::Other] {
            let t = SyncTimes::new();
            let both_in = Barrier::new(2);
            let (t, both_in) = (&t, &both_in);
            std::thread::scope(|s| {
                s.spawn(move || {
                    t.timed(first, || {
                        both_in.wait();
                        both_in.wait();
                        Ok(())
                    })
                    .unwrap()
                });
                both_in.wait();
                t.timed(SyncKind::Data, || {
                    std::thread::sleep(Duration::from_millis(2));
                    Ok(())
                })
                .unwrap();
                both_in.wait();
            });
            let d = t.totals();
            let page_syncs = if first == SyncKind::Other { 1 } else { 2 };
            assert_eq!(d.data_syncs, page_syncs, "{first:?}: {d:?}");
            assert_eq!(d.overlapped_syncs, 1, "{first:?}: {d:?}");
            assert!(d.overlapped_ns >= 2_000_000, "{first:?}: {d:?}");
        }
    }

    #[test]
    fn the_process_totals_grow() {
        let before = totals();
        timed(SyncKind::Doublewrite, || Ok(())).unwrap();
        let d = totals().since(&before);
        assert!(d.doublewrite_syncs >= 1, "{d:?}");
    }
}
