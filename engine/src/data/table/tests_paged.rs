//! A table whose committed rows are on pages: the same visibility and
//! index behaviour as in memory, with a pool smaller than the table, and
//! the directory rebuilt from the pages alone.

use std::sync::atomic::Ordering;

use proptest::prelude::*;

use super::*;
use crate::page_store::buffer_pool::{BufferPool, PoolOptions};
use crate::page_store::doublewrite::{
    Design, Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions,
};
use crate::page_store::tablespace::{scratch_file_name, Tablespace, SCRATCH_SPACE};
use crate::page_store::Spaces;
use crate::vfs::{SimVfs, Vfs};

const PS: usize = 4096;

fn row(k: i32) -> Row {
    Row {
        k,
        c: format!("c{k}"),
        pad: "pad".into(),
    }
}

fn pool(vfs: &Arc<dyn Vfs>, frames: usize) -> (Arc<BufferPool>, u32) {
    let spaces = Spaces::new();
    let ts = Tablespace::open(vfs.as_ref(), 1, PS, true).unwrap();
    let pages = ts.pages().unwrap();
    spaces.insert(ts);
    let k_space = 1 | SCRATCH_SPACE;
    let name = scratch_file_name(k_space, "k_1");
    spaces.insert(Tablespace::open_as(vfs.as_ref(), k_space, name, PS, true).unwrap());
    let o = DoublewriteOptions {
        mode: DoublewriteMode::On,
        design: Design::Legacy,
        files: 2,
        pages: 16,
    };
    let dw =
        Doublewrite::open(vfs.clone(), o, PS, Arc::new(DoublewriteCounters::default())).unwrap();
    let opts = PoolOptions {
        frames,
        lru_scan_depth: 8,
        ..PoolOptions::default()
    };
    (
        BufferPool::new(PS, Arc::new(spaces), Arc::new(dw), opts),
        pages,
    )
}

fn paged(vfs: &Arc<dyn Vfs>, frames: usize) -> (Arc<BufferPool>, Table) {
    let (pool, pages) = pool(vfs, frames);
    let rows = Arc::new(PagedRows::new(pool.clone(), 1, Shape::Sbtest, PS, pages));
    let k_1 = PagedIndex::new(pool.clone(), 1 | SCRATCH_SPACE, PS);
    (
        pool,
        Table::paged(1, "t", Shape::Sbtest, rows, k_1).unwrap(),
    )
}

const A: u64 = 1;
const B: u64 = 2;

#[test]
fn pending_versions_stay_in_memory_and_commits_reach_the_pages() {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (pool, t) = paged(&vfs, 16);
    assert!(t.is_paged());
    t.upsert_committed_at((1..=500).map(|id| (id, row(id as i32))), 1);
    assert_eq!(t.len_committed(), 500);

    assert!(matches!(
        t.update_k(A, 7, 1000),
        WriteResult::Applied {
            first_touch: true,
            ..
        }
    ));
    assert!(matches!(t.delete(A, 8), WriteResult::Applied { .. }));
    assert!(matches!(
        t.insert(A, 600, row(6)),
        WriteResult::Applied { .. }
    ));
    assert_eq!(t.insert(B, 9, row(1)), WriteResult::Duplicate);
    // The owner sees its pending versions; others the committed ones,
    // read from the pages.
    assert_eq!(t.get(A, 7).unwrap().k, 1007);
    assert_eq!(t.get(B, 7).unwrap().k, 7);
    assert_eq!(t.get(A, 8), None);
    assert_eq!(t.get(B, 8), Some(row(8)));
    assert_eq!(t.get_by_k(B, 1007), vec![]);
    assert_eq!(t.get_by_k(A, 1007), vec![(7, t.get(A, 7).unwrap())]);
    assert_eq!(t.get_by_k(B, 7), vec![(7, row(7))]);
    let ids = |trx| t.range(trx, 5, 10).iter().map(|r| r.0).collect::<Vec<_>>();
    assert_eq!(ids(A), vec![5, 6, 7, 9, 10]);
    assert_eq!(ids(B), vec![5, 6, 7, 8, 9, 10]);

    t.commit_rows(A, [7, 8, 600], 42);
    assert_eq!(t.get(B, 7).unwrap().k, 1007);
    assert_eq!(t.get(B, 8), None);
    assert_eq!(t.get(B, 600), Some(row(6)));
    let mut k_rows = vec![];
    t.scan_k_range(B, 1000, 1010, |id, r| k_rows.push((id, r.k)));
    assert_eq!(k_rows, vec![(7, 1007)]);
    t.check_invariants().unwrap();
    // The commit changed the pages as of its lsn.
    assert_eq!(pool.oldest_dirty_lsn(), Some(1));
    pool.flush_all().unwrap();
    assert_eq!(pool.oldest_dirty_lsn(), None);

    // Rolled back: nothing reaches the pages.
    assert!(matches!(
        t.update_c(B, 9, "new".into()),
        WriteResult::Applied { .. }
    ));
    t.rollback_rows(B, [9]);
    assert_eq!(pool.oldest_dirty_lsn(), None);
    assert_eq!(t.get(A, 9), Some(row(9)));
}

#[test]
fn values_a_slot_cannot_hold_are_refused_before_they_are_pending() {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (_pool, t) = paged(&vfs, 16);
    t.upsert_committed([(1, row(1))]);
    assert_eq!(
        t.update_c(A, 1, "x".repeat(121)),
        WriteResult::DataTooLong { column: "c" }
    );
    let mut wide = row(2);
    wide.pad = "p".repeat(61);
    assert_eq!(
        t.insert(A, 2, wide),
        WriteResult::DataTooLong { column: "pad" }
    );
    assert_eq!(t.insert(A, -5, row(3)), WriteResult::OutOfRange);
    // An update reads the page before it asks the directory: a key no page
    // can address is not found, not a failed page.
    assert_eq!(t.update_k(A, -5, 1), WriteResult::NotFound);
    assert_eq!(t.update_k(A, i64::MAX, 1), WriteResult::NotFound);
    assert_eq!(t.update_c(A, 1 << 40, "c".into()), WriteResult::NotFound);
    assert_eq!(t.get(A, 1), Some(row(1)));
    assert_eq!(t.get(A, 2), None);
    t.check_invariants().unwrap();
    // In memory, any length is kept.
    let m = Table::new(2, "m", Shape::Sbtest);
    m.upsert_committed([(1, row(1))]);
    assert!(matches!(
        m.update_c(A, 1, "x".repeat(121)),
        WriteResult::Applied { .. }
    ));
}

#[test]
fn the_directory_and_index_are_rebuilt_from_the_pages() {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (pool, t) = paged(&vfs, 8);
    t.upsert_committed_at((0..300).map(|id| (id, row(id as i32 % 17))), 1);
    for id in (0..300).step_by(3) {
        t.update_k(A, id, 100);
    }
    t.commit_rows(A, (0..300).step_by(3), 2);
    t.delete(B, 10);
    t.commit_rows(B, [10], 3);
    pool.flush_all().unwrap();
    let before: Vec<(i64, Row)> = t.committed_rows();
    let by_k: Vec<(i64, Row)> = t.get_by_k(B, 103);

    let (_pool2, again) = paged(&vfs, 8);
    assert_eq!(again.committed_rows(), before);
    assert_eq!(again.len_committed(), 299);
    assert_eq!(again.get_by_k(B, 103), by_k);
    assert_eq!(again.max_committed_id(), Some(299));
    again.check_invariants().unwrap();
    assert!(
        pool.counters.reads.load(Ordering::Relaxed) > 0,
        "8 frames for ~15 pages: rows were read back from disk"
    );
}

/// Two writers move rows' `k` and commit (one as a transaction does,
/// with the images its writes handed back; one by ids) while two readers
/// scan by id and by `k`, through a pool too small for the rows: a scan by
/// id reports every row once (it may show a version committed after its
/// latch, never drop a row whose `k` moved), a scan of `k_1` reports rows
/// in `(k, id)` order, each at most once and at the `k` it reports.
#[test]
fn scans_see_each_row_once_while_commits_move_keys() {
    use std::sync::atomic::AtomicBool;
    const ROWS: i64 = 600;
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let (_pool, t) = paged(&vfs, 12);
    t.upsert_committed_at((0..ROWS).map(|id| (id, row(id as i32))), 1);
    let t = Arc::new(t);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (t, stop) = (t.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut trx: u64 = 1000 + w;
                let mut lsn = 10;
                while !stop.load(Ordering::Relaxed) {
                    // Each writer its own rows (the X locks a caller holds).
                    let ids: Vec<i64> = (0..4)
                        .map(|i| ((trx * 7 + i * 151) % ROWS as u64) as i64)
                        .filter(|id| id % 2 == w as i64)
                        .collect();
                    let mut images = vec![];
                    for &id in &ids {
                        if let WriteResult::Applied {
                            after, committed_k, ..
                        } = t.update_k(trx, id, 1 + (trx % 5) as i32)
                        {
                            images.push((id, after, committed_k));
                        }
                    }
                    lsn += 1;
                    if w == 0 {
                        t.commit_images(trx, images, lsn);
                    } else {
                        t.commit_rows(trx, ids, lsn);
                    }
                    trx += 2;
                }
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(1500);
    let (mut by_id, mut by_k) = (0, 0);
    while std::time::Instant::now() < deadline {
        let mut ids = vec![];
        t.scan_range(B, 0, ROWS, |id, _| ids.push(id));
        assert_eq!(
            ids,
            (0..ROWS).collect::<Vec<_>>(),
            "a scan by id lost or repeated a row"
        );
        let mut keys = vec![];
        t.scan_k_range(B, i32::MIN, i32::MAX, |id, r| keys.push((r.k, id)));
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "k_1 out of order or repeated"
        );
        by_id += 1;
        by_k += keys.len();
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    t.check_invariants().unwrap();
    assert!(by_id > 10 && by_k > 0, "the readers ran {by_id} scans");
}

#[derive(Clone, Debug)]
enum Op {
    UpdateK(i64, i32),
    UpdateC(i64, u8),
    Delete(i64),
    Insert(i64, i32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..120i64, -5..5i32).prop_map(|(id, d)| Op::UpdateK(id, d)),
        (0..120i64, any::<u8>()).prop_map(|(id, c)| Op::UpdateC(id, c)),
        (0..120i64).prop_map(Op::Delete),
        (0..140i64, -50..50i32).prop_map(|(id, k)| Op::Insert(id, k)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// The same transactions (each committed or rolled back) on an
    /// in-memory table and a paged one with 6 frames give the same
    /// answers to every read, and the same committed rows. The paged
    /// table commits as a transaction does (`commit_images`, with the
    /// images and committed keys its writes handed back), the in-memory
    /// one by ids.
    #[test]
    fn a_paged_table_answers_as_the_in_memory_one(
        trxs in prop::collection::vec((prop::collection::vec(op(), 1..8), any::<bool>()), 1..30),
    ) {
        let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
        let (_pool, p) = paged(&vfs, 6);
        let m = Table::new(1, "t", Shape::Sbtest);
        let seed: Vec<(i64, Row)> = (0..100).map(|id| (id, row(id as i32 % 7))).collect();
        p.upsert_committed(seed.clone());
        m.upsert_committed(seed);
        for (n, (ops, commit)) in trxs.into_iter().enumerate() {
            let trx = 10 + n as u64;
            let mut ids = vec![];
            // Per row, as `Trx` keeps them: the latest image, the first
            // touch's committed key.
            let mut images: Vec<Committing> = vec![];
            for o in ops {
                let (rp, rm) = match &o {
                    Op::UpdateK(id, d) => (p.update_k(trx, *id, *d), m.update_k(trx, *id, *d)),
                    Op::UpdateC(id, c) => {
                        let c = format!("c-{c}");
                        (p.update_c(trx, *id, c.clone()), m.update_c(trx, *id, c))
                    }
                    Op::Delete(id) => (p.delete(trx, *id), m.delete(trx, *id)),
                    Op::Insert(id, k) => (p.insert(trx, *id, row(*k)), m.insert(trx, *id, row(*k))),
                };
                prop_assert_eq!(&rp, &rm, "{:?}", o);
                if let WriteResult::Applied { first_touch, after, committed_k } = rp {
                    let id = match o { Op::UpdateK(i, _) | Op::UpdateC(i, _) | Op::Delete(i) | Op::Insert(i, _) => i };
                    ids.push(id);
                    match images.iter_mut().find(|c| c.0 == id) {
                        Some(c) => {
                            prop_assert!(!first_touch);
                            c.1 = after;
                        }
                        None => {
                            prop_assert!(first_touch);
                            images.push((id, after, committed_k));
                        }
                    }
                }
                for viewer in [trx, 1] {
                    prop_assert_eq!(p.range(viewer, 0, 140), m.range(viewer, 0, 140));
                    prop_assert_eq!(p.get_by_k(viewer, 3), m.get_by_k(viewer, 3));
                }
            }
            ids.sort_unstable();
            ids.dedup();
            if commit {
                p.commit_images(trx, images, 100 + n as u64);
                m.commit_rows(trx, ids, 0);
            } else {
                p.rollback_rows(trx, ids.clone());
                m.rollback_rows(trx, ids);
            }
            prop_assert_eq!(p.committed_rows(), m.committed_rows());
            let (mut pk, mut mk) = (vec![], vec![]);
            p.scan_k_range(1, -60, 60, |id, r| pk.push((id, r.clone())));
            m.scan_k_range(1, -60, 60, |id, r| mk.push((id, r.clone())));
            prop_assert_eq!(pk, mk);
            p.check_invariants().map_err(TestCaseError::fail)?;
        }
    }
}
