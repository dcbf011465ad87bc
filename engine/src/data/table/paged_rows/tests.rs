//! Paged rows: the slot format, a table larger than its pool, and power
//! cuts under load (torn page writes, unsynced data dropped) recovered by
//! the doublewrite buffer and a replay of the durable redo.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::page_store::buffer_pool::PoolOptions;
use crate::page_store::doublewrite::{
    recover, Design, Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions,
};
use crate::page_store::page::PageCorrupt;
use crate::page_store::tablespace::Tablespace;
use crate::page_store::Spaces;
use crate::vfs::{SimVfs, Vfs};

const PS: usize = 4096;

fn row(k: i32, c: &str) -> Row {
    Row {
        k,
        c: c.to_string(),
        pad: format!("pad-{k}"),
    }
}

/// Table 1 over `vfs` with a pool of `frames` frames (cleaners not
/// started).
fn rows(vfs: &Arc<dyn Vfs>, mode: DoublewriteMode, frames: usize) -> (Arc<BufferPool>, PagedRows) {
    let spaces = Spaces::new();
    let ts = Tablespace::open(vfs.as_ref(), 1, PS, true).unwrap();
    let pages = ts.pages().unwrap();
    spaces.insert(ts);
    let o = DoublewriteOptions {
        mode,
        design: Design::Files,
        files: 2,
        pages: 16,
    };
    let c = Arc::new(DoublewriteCounters::default());
    let dw = Doublewrite::open(vfs.clone(), o, PS, c).unwrap();
    let opts = PoolOptions {
        frames,
        page_cleaners: 1,
        io_capacity: 200,
        lru_scan_depth: 8,
        ..PoolOptions::default()
    };
    let pool = BufferPool::new(PS, Arc::new(spaces), Arc::new(dw), opts);
    let r = PagedRows::new(pool.clone(), 1, Shape::Sbtest, PS, pages);
    (pool, r)
}

fn all(r: &PagedRows) -> BTreeMap<i64, Row> {
    let mut m = BTreeMap::new();
    r.for_each(|id, row| {
        m.insert(id, row);
    })
    .unwrap();
    m
}

proptest! {
    #[test]
    fn a_slot_holds_what_was_put(
        k in any::<i32>(),
        c in "[a-z0-9-]{0,120}",
        pad in "[ -~]{0,60}",
        idk in any::<bool>(),
    ) {
        let shape = if idk { Shape::IdK } else { Shape::Sbtest };
        let r = Row { k, c: if idk { String::new() } else { c }, pad: if idk { String::new() } else { pad } };
        let mut slot = vec![0xAAu8; slot_size(shape)];
        encode(shape, Some(&r), &mut slot);
        prop_assert_eq!(decode(shape, &slot), Some(r));
        encode(shape, None, &mut slot);
        prop_assert_eq!(decode(shape, &slot), None);
    }
}

#[test]
fn long_values_and_negative_ids_are_refused_before_anything_is_written() {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (pool, r) = rows(&vfs, DoublewriteMode::On, 16);
    assert_eq!(r.per_page(), ((PS - HEADER - TRAILER) / 187) as u32);
    let long = row(1, &"x".repeat(121));
    let e = r.put(5, Some(&long), 1).unwrap_err();
    assert!(
        matches!(
            e,
            PagedError::TooLong {
                column: "c",
                len: 121,
                max: 120,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("CHAR(120)"), "{e}");
    let mut wide = row(1, "c");
    wide.pad = "p".repeat(61);
    assert!(matches!(
        r.put(5, Some(&wide), 1),
        Err(PagedError::TooLong { column: "pad", .. })
    ));
    assert!(matches!(
        r.put(-1, Some(&row(1, "c")), 1),
        Err(PagedError::NegativeId { id: -1 })
    ));
    assert!(matches!(r.get(-3), Err(PagedError::NegativeId { .. })));
    assert_eq!(pool.oldest_dirty_lsn(), None, "nothing was changed");
    assert_eq!(r.pages(), 0);
    assert_eq!(r.get(5).unwrap(), None);
}

/// 2,000 rows in ~96 pages through a pool of 16 frames: every read after
/// the pool filled is a real read of a page written before, and the
/// contents match a map of what was put.
#[test]
fn a_table_larger_than_its_pool_reads_back_every_row() {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (pool, r) = rows(&vfs, DoublewriteMode::On, 16);
    let cleaners = pool.start_cleaners();
    let mut model = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(7);
    let mut lsn = 0;
    for id in 0..2000 {
        lsn += 1;
        let v = row(rng.gen(), &format!("c-{id}"));
        r.put(id, Some(&v), lsn).unwrap();
        model.insert(id, v);
    }
    for _ in 0..3000 {
        lsn += 1;
        let id = rng.gen_range(0..2100);
        match rng.gen_range(0..4) {
            0 => {
                r.put(id, None, lsn).unwrap();
                model.remove(&id);
            }
            1 | 2 => {
                let v = row(rng.gen(), &format!("u-{lsn}"));
                r.put(id, Some(&v), lsn).unwrap();
                model.insert(id, v);
            }
            _ => assert_eq!(r.get(id).unwrap().as_ref(), model.get(&id), "row {id}"),
        }
    }
    assert_eq!(all(&r), model);
    let (lo, hi) = (333, 777);
    let mut got = vec![];
    r.scan(lo, hi, |id, row| got.push((id, row))).unwrap();
    let want: Vec<(i64, Row)> = model.range(lo..=hi).map(|(i, r)| (*i, r.clone())).collect();
    assert_eq!(got, want);
    let reads = pool.counters.reads.load(Ordering::Relaxed);
    assert!(reads > 1000, "{reads} page reads: the pool held the table");
    pool.stop();
    for c in cleaners {
        c.join().unwrap().unwrap();
    }
}

/// A redo log for the test: (lsn, id, after-image), and how far it is
/// durable (the pool's write-ahead hook moves it).
#[derive(Default)]
struct Redo {
    records: std::sync::Mutex<Vec<(u64, i64, Option<Row>)>>,
    durable: AtomicU64,
}

/// One power cut under load: what survives is the durable redo; a
/// checkpoint (the oldest unwritten change, taken now and then) bounds
/// the replay. Returns (pages restored from the doublewrite buffer, torn
/// pages found and refused with doublewrite off).
fn cut(mode: DoublewriteMode, seed: u64) -> (usize, usize) {
    let sim = Arc::new(SimVfs::new());
    let vfs: Arc<dyn Vfs> = sim.clone();
    let (pool, r) = rows(&vfs, mode, 24);
    let redo = Arc::new(Redo::default());
    {
        let redo = redo.clone();
        pool.set_redo_hook(Box::new(move |lsn| {
            redo.durable.fetch_max(lsn, Ordering::SeqCst);
            Ok(())
        }));
    }
    let cleaners = pool.start_cleaners();
    let mut rng = StdRng::seed_from_u64(seed);
    sim.fail_syncs_after(rng.gen_range(50..1500));
    let mut checkpoint = 0;
    for lsn in 1..3000u64 {
        let id = rng.gen_range(0..600);
        let after = (!rng.gen_bool(0.1)).then(|| row(rng.gen(), &format!("v{lsn}")));
        // Logged first, then applied to the page (as a commit does).
        redo.records.lock().unwrap().push((lsn, id, after.clone()));
        if r.put(id, after.as_ref(), lsn).is_err() {
            break;
        }
        if lsn % 50 == 0 {
            checkpoint = pool.oldest_dirty_lsn().unwrap_or(lsn + 1);
        }
    }
    pool.stop();
    for c in cleaners {
        let _ = c.join().unwrap();
    }
    let durable = redo.durable.load(Ordering::SeqCst);
    let after: Arc<dyn Vfs> = Arc::new(sim.crash(&mut rng));

    // Restart: torn pages restored (or found), then the durable redo
    // replayed from the checkpoint.
    let spaces = Spaces::new();
    spaces.insert(Tablespace::open(after.as_ref(), 1, PS, false).unwrap());
    let rec = recover(&after, &spaces, PS).unwrap();
    let bad = spaces.get(1).unwrap().scan().unwrap();
    if mode == DoublewriteMode::Off {
        // Every torn page is reported, and never read as rows.
        let (_, r2) = rows(&after, DoublewriteMode::Off, 64);
        for b in &bad {
            let (PageCorrupt::Checksum { at, .. } | PageCorrupt::Torn { at, .. }) = b else {
                panic!("seed {seed}: not a torn page: {b:?}");
            };
            let id = i64::from(at.page_no) * i64::from(r2.per_page());
            assert!(
                matches!(r2.get(id), Err(PagedError::Store(_))),
                "seed {seed}: torn {at} was read"
            );
        }
        return (0, bad.len());
    }
    assert!(rec.unrepaired.is_empty(), "seed {seed}: {rec:?}");
    assert!(bad.is_empty(), "seed {seed}: torn pages left: {bad:?}");
    let (_, r2) = rows(&after, DoublewriteMode::On, 64);
    let records = redo.records.lock().unwrap();
    let mut model = BTreeMap::new();
    for (lsn, id, row) in records.iter().filter(|(l, ..)| *l <= durable) {
        match row {
            Some(v) => model.insert(*id, v.clone()),
            None => model.remove(id),
        };
        if *lsn >= checkpoint {
            r2.put(*id, row.as_ref(), *lsn).unwrap();
        }
    }
    assert_eq!(
        all(&r2),
        model,
        "seed {seed}: checkpoint {checkpoint}, durable {durable}"
    );
    (rec.restored.len(), 0)
}

#[test]
fn a_power_cut_loses_no_durable_change_and_uses_no_torn_page() {
    let restored: usize = (0..16).map(|s| cut(DoublewriteMode::On, s).0).sum();
    assert!(
        restored > 0,
        "no torn page in 16 cuts: the cuts missed the writes"
    );
}

#[test]
fn with_doublewrite_off_every_torn_page_is_reported_not_used() {
    let torn: usize = (0..16).map(|s| cut(DoublewriteMode::Off, 100 + s).1).sum();
    assert!(torn > 0, "no torn page in 16 cuts: the test shows nothing");
}
