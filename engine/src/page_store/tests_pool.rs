//! The buffer pool under load with less memory than data: every change
//! reaches disk, user threads flush single pages when the cleaners lag,
//! and a power cut in the middle leaves no torn page in use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::buffer_pool::{BufferPool, PoolOptions};
use super::doublewrite::{
    recover, Design, Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions,
};
use super::page::{PageId, PageState, HEADER};
use super::tablespace::Tablespace;
use super::Spaces;
use crate::vfs::{SimVfs, Vfs};

const PS: usize = 4096;
const PAGES: u32 = 400;

fn pool(
    vfs: &Arc<dyn Vfs>,
    design: Design,
    frames: usize,
) -> (Arc<BufferPool>, Arc<DoublewriteCounters>) {
    let opts = PoolOptions {
        frames,
        page_cleaners: 1,
        io_capacity: 100,
        lru_scan_depth: 16,
        ..PoolOptions::default()
    };
    pool_with(vfs, design, opts)
}

fn pool_with(
    vfs: &Arc<dyn Vfs>,
    design: Design,
    opts: PoolOptions,
) -> (Arc<BufferPool>, Arc<DoublewriteCounters>) {
    let spaces = Spaces::new();
    spaces.insert(Tablespace::open(vfs.as_ref(), 1, PS, true).unwrap());
    let c = Arc::new(DoublewriteCounters::default());
    let o = DoublewriteOptions {
        mode: DoublewriteMode::On,
        design,
        files: 2,
        pages: 16,
    };
    let dw = Doublewrite::open(vfs.clone(), o, PS, c.clone()).unwrap();
    (BufferPool::new(PS, Arc::new(spaces), Arc::new(dw), opts), c)
}

fn counter(body: &[u8]) -> u64 {
    u64::from_le_bytes(body[..8].try_into().unwrap())
}

/// Adds one to page `id`'s counter at the next LSN, and to what the test
/// expects of it.
fn count_change(bp: &BufferPool, lsn: &AtomicU64, want: &[AtomicU64], id: PageId) {
    let l = lsn.fetch_add(1, Ordering::SeqCst);
    bp.modify(id, l, |b| {
        let n = counter(b) + 1;
        b[..8].copy_from_slice(&n.to_le_bytes());
    })
    .unwrap();
    want[id.page_no as usize].fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_pool_smaller_than_the_data_keeps_every_change() {
    for design in [Design::Legacy, Design::Files] {
        let sim = Arc::new(SimVfs::new());
        let vfs: Arc<dyn Vfs> = sim.clone();
        let (bp, dwc) = pool(&vfs, design, 48);
        let cleaners = bp.start_cleaners();
        let lsn = Arc::new(AtomicU64::new(1));
        let want: Arc<Vec<AtomicU64>> = Arc::new((0..PAGES).map(|_| AtomicU64::new(0)).collect());
        let users: Vec<_> = (0..4u64)
            .map(|t| {
                let (bp, lsn, want) = (bp.clone(), lsn.clone(), want.clone());
                std::thread::spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t);
                    for _ in 0..3000 {
                        let no = rng.gen_range(0..PAGES);
                        let id = PageId {
                            space: 1,
                            page_no: no,
                        };
                        if rng.gen_bool(0.5) {
                            count_change(&bp, &lsn, &want, id);
                        } else {
                            bp.read(id, |p| counter(&p[HEADER..])).unwrap();
                        }
                    }
                })
            })
            .collect();
        for u in users {
            u.join().unwrap();
        }
        bp.flush_all().unwrap();
        assert_eq!(bp.oldest_dirty_lsn(), None);
        bp.stop();
        for c in cleaners {
            c.join().unwrap().unwrap();
        }
        // On disk, every page holds every change made to it.
        let ts = Tablespace::open(vfs.as_ref(), 1, PS, false).unwrap();
        let mut buf = vec![0u8; PS];
        for no in 0..PAGES {
            let st = ts.read_verified(no, &mut buf).unwrap();
            let expect = want[no as usize].load(Ordering::SeqCst);
            if expect > 0 {
                assert!(
                    matches!(st, PageState::Written { .. }),
                    "{design:?} page {no}"
                );
            }
            assert_eq!(counter(&buf[HEADER..]), expect, "{design:?} page {no}");
        }
        let c = &bp.counters;
        let reads = c.reads.load(Ordering::Relaxed);
        assert!(
            reads > 1000,
            "{design:?}: {reads} reads: the pool held the data"
        );
        assert!(c.read_requests.load(Ordering::Relaxed) >= 12_000);
        assert_eq!(c.pages_dirty.load(Ordering::Relaxed), 0);
        // Users outran a cleaner held to 100 pages/s: they flushed pages
        // themselves, each through the doublewrite buffer.
        let single = c.single_page_flushes.load(Ordering::Relaxed);
        assert!(single > 0 && c.wait_free.load(Ordering::Relaxed) >= single);
        let d = dwc.snapshot();
        assert_eq!(d.single_page_flushes, single, "{design:?}");
        assert_eq!(
            d.pages_written,
            single + c.cleaner_pages.load(Ordering::Relaxed),
            "{design:?}: every page written went through the doublewrite buffer"
        );
    }
}

#[test]
fn a_power_cut_under_load_leaves_no_torn_page_in_use() {
    let mut restored = 0;
    for design in [Design::Legacy, Design::Files] {
        for seed in 0..12u64 {
            let sim = Arc::new(SimVfs::new());
            let vfs: Arc<dyn Vfs> = sim.clone();
            let (bp, _) = pool(&vfs, design, 32);
            let cleaners = bp.start_cleaners();
            let mut rng = StdRng::seed_from_u64(seed);
            sim.fail_syncs_after(rng.gen_range(20..200));
            let lsn = AtomicU64::new(1);
            'load: for _ in 0..4000 {
                let id = PageId {
                    space: 1,
                    page_no: rng.gen_range(0..PAGES),
                };
                let l = lsn.fetch_add(1, Ordering::SeqCst);
                if bp
                    .modify(id, l, |b| b[..8].copy_from_slice(&l.to_le_bytes()))
                    .is_err()
                {
                    break 'load;
                }
            }
            bp.stop();
            for c in cleaners {
                let _ = c.join().unwrap();
            }
            let after: Arc<dyn Vfs> = Arc::new(sim.crash(&mut rng));
            let spaces = Spaces::new();
            spaces.insert(Tablespace::open(after.as_ref(), 1, PS, false).unwrap());
            let r = recover(&after, &spaces, PS).unwrap();
            assert!(r.unrepaired.is_empty(), "{r:?}");
            restored += r.restored.len();
            let bad = spaces.get(1).unwrap().scan().unwrap();
            assert!(bad.is_empty(), "{design:?} seed {seed}: {bad:?}");
        }
    }
    assert!(
        restored > 0,
        "no torn page in 24 cuts: the cut came between flushes"
    );
}

/// The write-ahead rule: a page reaches its tablespace only after the redo
/// hook was asked for an LSN at least its newest change's, and before that
/// the tablespace still holds the old page. A hook that fails stops the
/// write and leaves the page dirty.
#[test]
fn pages_are_written_only_after_their_redo_is_durable() {
    let sim = Arc::new(SimVfs::new());
    let vfs: Arc<dyn Vfs> = sim.clone();
    let (bp, _) = pool(&vfs, Design::Files, 64);
    let durable = Arc::new(AtomicU64::new(0));
    let seen_old = Arc::new(AtomicU64::new(0));
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    {
        let (durable, seen_old, fail, vfs) =
            (durable.clone(), seen_old.clone(), fail.clone(), vfs.clone());
        assert!(bp.set_redo_hook(Box::new(move |lsn| {
            if fail.load(Ordering::SeqCst) {
                return Err(std::io::Error::other("redo flush failed"));
            }
            // Asked before the write: page 7 on disk is still the old one.
            let ts = Tablespace::open(vfs.as_ref(), 1, PS, false).unwrap();
            let mut buf = vec![0u8; PS];
            if let PageState::Empty = ts.read_verified(7, &mut buf).unwrap() {
                seen_old.fetch_add(1, Ordering::SeqCst);
            }
            durable.fetch_max(lsn, Ordering::SeqCst);
            Ok(())
        })));
    }
    assert!(!bp.set_redo_hook(Box::new(|_| Ok(()))), "set twice");
    let id = PageId {
        space: 1,
        page_no: 7,
    };
    for lsn in [10, 25, 40] {
        bp.modify(id, lsn, |b| b[..8].copy_from_slice(&lsn.to_le_bytes()))
            .unwrap();
    }
    // The redo cannot be made durable: the page is not written.
    assert!(bp.flush_all().is_err());
    assert_eq!(bp.oldest_dirty_lsn(), Some(10));
    fail.store(false, Ordering::SeqCst);
    bp.flush_all().unwrap();
    assert_eq!(durable.load(Ordering::SeqCst), 40, "newest change's lsn");
    assert!(seen_old.load(Ordering::SeqCst) >= 1);
    let ts = Tablespace::open(vfs.as_ref(), 1, PS, false).unwrap();
    let mut buf = vec![0u8; PS];
    assert!(matches!(
        ts.read_verified(7, &mut buf).unwrap(),
        PageState::Written { .. }
    ));
    assert_eq!(counter(&buf[HEADER..]), 40);
}

/// Changes reach a page out of LSN order (a later commit applied first):
/// the page's place in the flush list, hence the fuzzy checkpoint, is its
/// oldest unwritten change, not its first.
#[test]
fn a_change_older_than_the_page_moves_the_checkpoint_back() {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (bp, _) = pool(&vfs, Design::Files, 16);
    let id = |page_no| PageId { space: 1, page_no };
    bp.modify(id(1), 110, |b| b[0] = 1).unwrap();
    bp.modify(id(2), 120, |b| b[0] = 1).unwrap();
    assert_eq!(bp.oldest_dirty_lsn(), Some(110));
    bp.modify(id(1), 100, |b| b[1] = 1).unwrap();
    assert_eq!(bp.oldest_dirty_lsn(), Some(100));
    bp.modify(id(2), 130, |b| b[1] = 1).unwrap();
    assert_eq!(bp.oldest_dirty_lsn(), Some(100));
    bp.flush_all().unwrap();
    assert_eq!(bp.oldest_dirty_lsn(), None);
}

/// A page's LSN on disk is its own newest change's, never that of another
/// page the same frame held before: recovery restores the copy with the
/// highest LSN, so a page's versions must carry growing LSNs. (A frame
/// reused without resetting its LSNs sealed a page with the previous
/// page's newer LSN; a later, lower-LSN version's torn write was then
/// "restored" from the stale copy.)
#[test]
fn a_reused_frame_seals_its_new_page_with_that_pages_lsn() {
    use super::page;
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (bp, _) = pool(&vfs, Design::Legacy, 16);
    let id = |no| PageId {
        space: 1,
        page_no: no,
    };
    // Page 0 changed at a high LSN, then 40 other pages at low ones, so
    // page 0's frame is reused.
    bp.modify(id(0), 1_000_000, |b| b[0] = 1).unwrap();
    for no in 1..=40 {
        bp.modify(id(no), 10 + u64::from(no), |b| b[0] = 2).unwrap();
    }
    bp.flush_all().unwrap();
    let ts = Tablespace::open(vfs.as_ref(), 1, PS, false).unwrap();
    let mut buf = vec![0u8; PS];
    for no in 1..=40 {
        ts.read_raw(no, &mut buf).unwrap();
        assert_eq!(page::lsn_of(&buf), 10 + u64::from(no), "page {no}");
    }
    // Read back and changed at a lower LSN than it has: its LSN stays.
    bp.modify(id(0), 5, |b| b[1] = 3).unwrap();
    bp.flush_all().unwrap();
    ts.read_raw(0, &mut buf).unwrap();
    assert_eq!(page::lsn_of(&buf), 1_000_000);
    bp.stop();
}

/// Runs `f` on another thread and says whether it finished within 5 s.
fn finishes<F: FnOnce() + Send + 'static>(f: F) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    rx.recv_timeout(std::time::Duration::from_secs(5)).is_ok()
}

/// The split of the pool's mutex: a hit on a young page and a change to a
/// page already dirty (at an LSN not older than its oldest) take no mutex;
/// a change older than the page's oldest reorders the flush list and waits
/// for it.
#[test]
fn hits_on_young_pages_and_changes_to_dirty_ones_take_no_mutex() {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (bp, _) = pool(&vfs, Design::Files, 64);
    let id = PageId {
        space: 1,
        page_no: 3,
    };
    bp.modify(id, 100, |b| b[..8].copy_from_slice(&1u64.to_le_bytes()))
        .unwrap();
    // A second access makes it young.
    bp.read(id, |_| ()).unwrap();
    let held = bp.hold_lists();
    let b = bp.clone();
    assert!(
        finishes(move || {
            assert_eq!(b.read(id, |p| counter(&p[HEADER..])).unwrap(), 1);
            b.modify(id, 150, |p| p[..8].copy_from_slice(&2u64.to_le_bytes()))
                .unwrap();
        }),
        "a hit waited for the pool's mutex"
    );
    let b = bp.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        b.modify(id, 90, |p| p[8] = 1).unwrap();
        tx.send(()).unwrap();
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(300))
            .is_err(),
        "an older change reordered the flush list without its mutex"
    );
    drop(held);
    rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(bp.oldest_dirty_lsn(), Some(90));
    bp.flush_all().unwrap();
    let ts = Tablespace::open(vfs.as_ref(), 1, PS, false).unwrap();
    let mut buf = vec![0u8; PS];
    ts.read_verified(3, &mut buf).unwrap();
    assert_eq!(counter(&buf[HEADER..]), 2);
    assert_eq!(super::page::lsn_of(&buf), 150);
}

/// Hot pages (young, mostly dirty: the paths without the mutex) read and
/// changed while a scan evicts around them and the cleaners write them:
/// a read never sees another page's bytes, and no change is lost.
#[test]
fn hot_pages_without_the_mutex_race_a_scan_and_the_cleaners() {
    const HOT: u32 = 6;
    const COLD: u32 = 30;
    for design in [Design::Legacy, Design::Files] {
        let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
        let (bp, _) = pool(&vfs, design, 24);
        let cleaners = bp.start_cleaners();
        let lsn = Arc::new(AtomicU64::new(1));
        let id = |no| PageId {
            space: 1,
            page_no: no,
        };
        // Every page carries its own number after the counter.
        for no in 0..HOT + COLD {
            let l = lsn.fetch_add(1, Ordering::SeqCst);
            bp.modify(id(no), l, |b| b[8..12].copy_from_slice(&no.to_le_bytes()))
                .unwrap();
        }
        let want: Arc<Vec<AtomicU64>> = Arc::new((0..HOT).map(|_| AtomicU64::new(0)).collect());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let (bp, lsn, want) = (bp.clone(), lsn.clone(), want.clone());
                std::thread::spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t);
                    for _ in 0..40_000 {
                        let check = |p: &[u8]| {
                            u32::from_le_bytes(p[HEADER + 8..HEADER + 12].try_into().unwrap())
                        };
                        if t < 2 {
                            let no = rng.gen_range(0..HOT);
                            if rng.gen_bool(0.5) {
                                count_change(&bp, &lsn, &want, id(no));
                            } else {
                                assert_eq!(bp.read(id(no), check).unwrap(), no);
                            }
                        } else {
                            // Cold pages, a few more than the frames: each
                            // often looked up as another thread evicts it.
                            let no = HOT + rng.gen_range(0..COLD);
                            assert_eq!(bp.read(id(no), check).unwrap(), no);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        bp.flush_all().unwrap();
        bp.stop();
        for c in cleaners {
            c.join().unwrap().unwrap();
        }
        let ts = Tablespace::open(vfs.as_ref(), 1, PS, false).unwrap();
        let mut buf = vec![0u8; PS];
        for no in 0..HOT {
            ts.read_verified(no, &mut buf).unwrap();
            let expect = want[no as usize].load(Ordering::SeqCst);
            assert_eq!(counter(&buf[HEADER..]), expect, "{design:?} page {no}");
        }
        let reads = bp.counters.reads.load(Ordering::Relaxed);
        assert!(reads > 3000, "{design:?}: {reads} reads: no eviction churn");
    }
}

/// Asked to flush up to an LSN (the checkpoint waits for it), the cleaners
/// write the flush list's head beyond `innodb_io_capacity` until no dirty
/// page is older: 150 pages here, which at the capacity's one page a tick
/// would take 15 s.
#[test]
fn a_flush_target_is_reached_beyond_the_io_capacity() {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let opts = PoolOptions {
        frames: 256,
        page_cleaners: 1,
        io_capacity: 10,
        lru_scan_depth: 16,
        ..PoolOptions::default()
    };
    let (bp, _) = pool_with(&vfs, Design::Files, opts);
    let lsn = AtomicU64::new(1);
    let want: Vec<AtomicU64> = (0..PAGES).map(|_| AtomicU64::new(0)).collect();
    for no in 0..200 {
        count_change(
            &bp,
            &lsn,
            &want,
            PageId {
                space: 1,
                page_no: no,
            },
        );
    }
    assert_eq!(bp.oldest_dirty_lsn(), Some(1));
    let cleaners = bp.start_cleaners();
    bp.request_flush_up_to(151);
    let t0 = std::time::Instant::now();
    while bp.oldest_dirty_lsn().is_some_and(|o| o < 151) {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "oldest dirty page still at {:?}",
            bp.oldest_dirty_lsn()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // The pages written are the oldest: none younger was skipped for them.
    let written = bp.counters.cleaner_pages.load(Ordering::Relaxed);
    assert!(written >= 150, "{written} pages written");
    bp.stop();
    for c in cleaners {
        c.join().unwrap().unwrap();
    }
}
