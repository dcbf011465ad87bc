//! Crash tests of the page store: flushes cut by a failed sync, then a
//! power cut that keeps each unsynced sector or not (torn pages), then
//! recovery; and a stress test of both doublewrite designs.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::doublewrite::{
    recover, Design, Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions,
    PageWrite,
};
use super::page::{self, PageId, PageState, DEFAULT_PAGE_SIZE};
use super::tablespace::Tablespace;
use super::{Spaces, StoreError};
use crate::vfs::{SimVfs, Vfs};

const PS: usize = DEFAULT_PAGE_SIZE;
const PAGES: u32 = 24;
const SPACE: u32 = 1;

/// Page `no` at `lsn`: its body a pattern only this (page, lsn) has.
fn version(no: u32, lsn: u64) -> Vec<u8> {
    let mut p = vec![0u8; PS];
    let seed = (u64::from(no) << 32) ^ lsn;
    for (i, b) in p[page::HEADER..PS - page::TRAILER].iter_mut().enumerate() {
        *b = (seed
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(i as u64)
            >> 7) as u8;
    }
    page::seal(
        &mut p,
        PageId {
            space: SPACE,
            page_no: no,
        },
        1,
        lsn,
    );
    p
}

fn open(
    vfs: &Arc<dyn Vfs>,
    opts: DoublewriteOptions,
) -> (Spaces, Doublewrite, Arc<DoublewriteCounters>) {
    let spaces = Spaces::new();
    spaces.insert(Tablespace::open(vfs.as_ref(), SPACE, PS, true).unwrap());
    let c = Arc::new(DoublewriteCounters::default());
    let dw = Doublewrite::open(vfs.clone(), opts, PS, c.clone()).unwrap();
    (spaces, dw, c)
}

fn opts(mode: DoublewriteMode, design: Design) -> DoublewriteOptions {
    DoublewriteOptions {
        mode,
        design,
        files: 2,
        pages: 8,
    }
}

/// One crash trial: every page written at lsn 1, then flushes of new
/// versions (batches and single pages) until a sync fails, then a power
/// cut. Returns the directory after the cut, the versions each page was
/// written at, and the lsn last acknowledged for each.
fn cut_trial(
    seed: u64,
    o: DoublewriteOptions,
) -> (SimVfs, HashMap<u32, Vec<u64>>, HashMap<u32, u64>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = Arc::new(SimVfs::new());
    let vfs: Arc<dyn Vfs> = sim.clone();
    let (spaces, dw, _) = open(&vfs, o);
    let mut written: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut acked: HashMap<u32, u64> = HashMap::new();
    let first: Vec<Vec<u8>> = (0..PAGES).map(|n| version(n, 1)).collect();
    let batch: Vec<PageWrite> = (0..PAGES)
        .map(|n| PageWrite {
            id: PageId {
                space: SPACE,
                page_no: n,
            },
            bytes: &first[n as usize],
        })
        .collect();
    dw.write_batch(&batch, &spaces).unwrap();
    for n in 0..PAGES {
        written.insert(n, vec![1]);
        acked.insert(n, 1);
    }
    sim.fail_syncs_after(rng.gen_range(0..12));
    let mut lsn = 1;
    for _ in 0..50 {
        lsn += 1;
        let k = if rng.gen_bool(0.5) {
            1
        } else {
            rng.gen_range(2..10)
        };
        let mut nos: Vec<u32> = (0..k).map(|_| rng.gen_range(0..PAGES)).collect();
        nos.sort();
        nos.dedup();
        let imgs: Vec<Vec<u8>> = nos.iter().map(|&n| version(n, lsn)).collect();
        let ws: Vec<PageWrite> = nos
            .iter()
            .zip(&imgs)
            .map(|(&n, b)| PageWrite {
                id: PageId {
                    space: SPACE,
                    page_no: n,
                },
                bytes: b,
            })
            .collect();
        for &n in &nos {
            written.get_mut(&n).unwrap().push(lsn);
        }
        let r = if ws.len() == 1 {
            dw.write_single(ws[0], &spaces)
        } else {
            dw.write_batch(&ws, &spaces)
        };
        match r {
            Ok(()) => {
                for &n in &nos {
                    acked.insert(n, lsn);
                }
            }
            Err(_) => break,
        }
    }
    (sim.crash(&mut rng), written, acked)
}

#[test]
fn doublewrite_on_restores_every_torn_page_in_both_designs() {
    for design in [Design::Legacy, Design::Files] {
        let mut restored = 0;
        for seed in 0..60 {
            let o = opts(DoublewriteMode::On, design);
            let (after, written, acked) = cut_trial(seed, o);
            let vfs: Arc<dyn Vfs> = Arc::new(after);
            let (spaces, _, _) = open(&vfs, o);
            let r = recover(&vfs, &spaces, PS).unwrap();
            assert!(r.unrepaired.is_empty(), "{design:?} seed {seed}: {r:?}");
            restored += r.restored.len();
            let ts = spaces.get(SPACE).unwrap();
            let mut buf = vec![0u8; PS];
            for n in 0..PAGES {
                let st = ts.read_verified(n, &mut buf);
                let Ok(PageState::Written { lsn }) = st else {
                    panic!("{design:?} seed {seed}: page {n} after recovery: {st:?}");
                };
                // Never older than what was acknowledged, never a version
                // not written, and exactly that version's bytes.
                assert!(
                    lsn >= acked[&n],
                    "{design:?} seed {seed}: page {n} lost lsn {}",
                    acked[&n]
                );
                assert!(
                    written[&n].contains(&lsn),
                    "{design:?} seed {seed}: page {n} lsn {lsn}"
                );
                assert_eq!(buf, version(n, lsn), "{design:?} seed {seed}: page {n}");
            }
        }
        // The cut tore data pages, and recovery put them back.
        assert!(
            restored > 20,
            "{design:?}: only {restored} pages restored in 60 trials"
        );
    }
}

#[test]
fn without_doublewrite_a_torn_page_is_detected_and_never_used() {
    let mut torn = 0;
    for seed in 0..60 {
        let o = opts(DoublewriteMode::Off, Design::Files);
        let (after, written, acked) = cut_trial(seed, o);
        let vfs: Arc<dyn Vfs> = Arc::new(after);
        let (spaces, _, _) = open(&vfs, o);
        let r = recover(&vfs, &spaces, PS).unwrap();
        assert_eq!(r.checked, 0, "no doublewrite files to read");
        let ts = spaces.get(SPACE).unwrap();
        let bad: Vec<PageId> = ts.scan().unwrap().iter().map(corrupt_at).collect();
        torn += bad.len();
        let mut buf = vec![0u8; PS];
        for n in 0..PAGES {
            match ts.read_verified(n, &mut buf) {
                Ok(PageState::Written { lsn }) => {
                    assert!(
                        lsn >= acked[&n] && written[&n].contains(&lsn),
                        "seed {seed} page {n}"
                    );
                    assert_eq!(buf, version(n, lsn));
                }
                Ok(PageState::Empty) => panic!("seed {seed}: page {n} empty"),
                // Refused on read, and the scan named it.
                Err(StoreError::Corrupt(c)) => assert!(bad.contains(&corrupt_at(&c))),
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert!(
        torn > 20,
        "only {torn} torn pages in 60 trials: the cut did not tear"
    );
}

#[test]
fn detect_only_names_torn_pages_it_cannot_restore() {
    let mut named = 0;
    for design in [Design::Legacy, Design::Files] {
        for seed in 0..40 {
            let o = opts(DoublewriteMode::DetectOnly, design);
            let (after, _, _) = cut_trial(seed, o);
            let vfs: Arc<dyn Vfs> = Arc::new(after);
            let (spaces, _, _) = open(&vfs, o);
            let r = recover(&vfs, &spaces, PS).unwrap();
            assert!(r.restored.is_empty());
            let scan: Vec<PageId> = spaces
                .get(SPACE)
                .unwrap()
                .scan()
                .unwrap()
                .iter()
                .map(corrupt_at)
                .collect();
            let reported: Vec<PageId> = r.unrepaired.iter().map(corrupt_at).collect();
            // Every torn page is one recovery named.
            assert_eq!(scan, reported, "{design:?} seed {seed}");
            named += reported.len();
        }
    }
    assert!(named > 20, "only {named} torn pages named");
}

fn corrupt_at(c: &page::PageCorrupt) -> PageId {
    match c {
        page::PageCorrupt::Checksum { at, .. }
        | page::PageCorrupt::Torn { at, .. }
        | page::PageCorrupt::Misplaced { at, .. }
        | page::PageCorrupt::Size { at, .. } => *at,
    }
}

/// 32 threads flushing single pages with a 1 ms device sync: the legacy
/// design's 8 slots make them wait; every page ends up intact in both.
#[test]
fn single_page_flushes_queue_on_the_legacy_slots() {
    for design in [Design::Legacy, Design::Files] {
        let sim = Arc::new(SimVfs::new());
        let vfs: Arc<dyn Vfs> = sim.clone();
        let o = opts(DoublewriteMode::On, design);
        let (spaces, dw, c) = open(&vfs, o);
        sim.set_sync_delay(std::time::Duration::from_millis(1));
        let (spaces, dw) = (Arc::new(spaces), Arc::new(dw));
        let threads: Vec<_> = (0..32u32)
            .map(|t| {
                let (spaces, dw) = (spaces.clone(), dw.clone());
                std::thread::spawn(move || {
                    for i in 0..6u64 {
                        let n = t;
                        let img = version(n, 100 + u64::from(t) * 10 + i);
                        let w = PageWrite {
                            id: PageId {
                                space: SPACE,
                                page_no: n,
                            },
                            bytes: &img,
                        };
                        dw.write_single(w, &spaces).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = c.snapshot();
        assert_eq!(
            (s.writes, s.pages_written, s.single_page_flushes),
            (192, 192, 192)
        );
        if design == Design::Legacy {
            assert!(s.waits > 0, "{s:?}");
        }
        let ts = spaces.get(SPACE).unwrap();
        assert!(ts.scan().unwrap().is_empty());
        assert!(c.wait_ns.load(Ordering::Relaxed) >= s.wait_ns);
    }
}

#[test]
fn tablespace_file_names_give_back_their_space() {
    use super::tablespace::{file_name, scratch_file_name, space_of_file, SCRATCH_SPACE};
    for id in [1u32, 12, 99_999, 123_456] {
        assert_eq!(space_of_file(&file_name(id)), Some(id));
        let k = id | SCRATCH_SPACE;
        assert_eq!(space_of_file(&scratch_file_name(k, "k_1")), Some(k));
    }
    for other in [
        "space-1.ibd",
        "space-00001.ibd.tmp",
        "space-00001.ibt",
        "space-2147483649.ibd",
        "redo.log",
        "dblwr-0.bin",
    ] {
        assert_eq!(space_of_file(other), None, "{other}");
    }
}
