//! The index on pages against an ordered set: bulk builds, inserts and
//! removes that split nodes at every level, range reads, and a pool too
//! small to hold the tree (nodes evicted and read back).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use proptest::prelude::*;

use super::*;
use crate::page_store::buffer_pool::PoolOptions;
use crate::page_store::doublewrite::{
    Design, Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions,
};
use crate::page_store::tablespace::{scratch_file_name, Tablespace, SCRATCH_SPACE};
use crate::page_store::Spaces;
use crate::vfs::{SimVfs, Vfs};

const PS: usize = 4096;
const SPACE: u32 = 3 | SCRATCH_SPACE;

/// A pool of `frames` frames with the scratch space open (no cleaners:
/// a user thread with no free frame writes one itself).
fn pool(frames: usize) -> Arc<BufferPool> {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let spaces = Spaces::new();
    let name = scratch_file_name(SPACE, "k_1");
    spaces.insert(Tablespace::open_as(vfs.as_ref(), SPACE, name, PS, true).unwrap());
    let o = DoublewriteOptions {
        mode: DoublewriteMode::On,
        design: Design::Files,
        files: 2,
        pages: 16,
    };
    let dw =
        Doublewrite::open(vfs.clone(), o, PS, Arc::new(DoublewriteCounters::default())).unwrap();
    let opts = PoolOptions {
        frames,
        lru_scan_depth: 4,
        ..PoolOptions::default()
    };
    BufferPool::new(PS, Arc::new(spaces), Arc::new(dw), opts)
}

/// Nodes of at most 4 entries (leaves) and 3 (internal): a few hundred
/// keys make a tree four or five levels deep.
fn small_tree(pool: &Arc<BufferPool>) -> PagedIndex {
    PagedIndex::new(pool.clone(), SPACE, PS).with_caps(4, 3)
}

fn check(tree: &PagedIndex, model: &BTreeSet<Key>) -> Result<(), TestCaseError> {
    let all: Vec<Key> = model.iter().copied().collect();
    prop_assert_eq!(tree.entries().unwrap(), all);
    Ok(())
}

#[derive(Clone, Debug)]
enum Op {
    Insert(i32, i64),
    Remove(i32, i64),
    Range(i32, i32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (-20..20i32, 0..30i64).prop_map(|(k, id)| Op::Insert(k, id)),
        2 => (-20..20i32, 0..30i64).prop_map(|(k, id)| Op::Remove(k, id)),
        1 => (-25..25i32, 0..15i32).prop_map(|(lo, w)| Op::Range(lo, lo + w)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// From a bulk build of `seed`, any mix of inserts, removes and range
    /// reads answers as an ordered set does, with deep trees and a pool
    /// of 6 frames.
    #[test]
    fn the_tree_answers_as_an_ordered_set(
        seed in prop::collection::btree_set((-20..20i32, 0..30i64), 0..120),
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let pool = pool(6);
        let mut tree = small_tree(&pool);
        let keys: Vec<Key> = seed.iter().copied().collect();
        tree.build(&keys).unwrap();
        let mut model = seed;
        check(&tree, &model)?;
        for o in ops {
            match o {
                Op::Insert(k, id) => {
                    tree.insert((k, id)).unwrap();
                    model.insert((k, id));
                }
                Op::Remove(k, id) => {
                    tree.remove((k, id)).unwrap();
                    model.remove(&(k, id));
                }
                Op::Range(lo, hi) => {
                    let want: Vec<Key> =
                        model.range((lo, i64::MIN)..=(hi, i64::MAX)).copied().collect();
                    prop_assert_eq!(tree.range((lo, i64::MIN), (hi, i64::MAX)).unwrap(), want);
                }
            }
        }
        check(&tree, &model)?;
    }
}

#[test]
fn builds_of_every_height_read_back_in_order() {
    let pool = pool(64);
    for n in [0usize, 1, 4, 5, 15, 16, 17, 60, 61, 400, 2000] {
        let mut tree = small_tree(&pool);
        let keys: Vec<Key> = (0..n as i64).map(|i| ((i / 3) as i32, i)).collect();
        tree.build(&keys).unwrap();
        assert_eq!(tree.entries().unwrap(), keys, "{n} keys");
        // A lookup of one k finds its entries only.
        let seven: Vec<Key> = keys.iter().filter(|k| k.0 == 7).copied().collect();
        assert_eq!(tree.range((7, i64::MIN), (7, i64::MAX)).unwrap(), seven);
        // The build's nodes are filled to 15/16 at most: a full tree's
        // inserts split, and still read back in order.
        let mut model: BTreeSet<Key> = keys.iter().copied().collect();
        for i in 0..50i64 {
            let k = ((i * 37) % 700) as i32;
            tree.insert((k, -i)).unwrap();
            model.insert((k, -i));
        }
        let all: Vec<Key> = model.into_iter().collect();
        assert_eq!(tree.entries().unwrap(), all, "{n} keys, then 50 inserts");
    }
}

#[test]
fn full_size_nodes_hold_what_the_layout_says() {
    let pool = pool(256);
    let tree = PagedIndex::new(pool.clone(), SPACE, 16 * 1024);
    // (16384 - 24 - 8 - 8) / 12 and / 16 (the module's layout comment).
    assert_eq!((tree.leaf_cap, tree.internal_cap), (1362, 1021));
    let mut tree = PagedIndex::new(pool, SPACE, PS);
    let keys: Vec<Key> = (0..100_000i64).map(|i| ((i % 5000) as i32, i)).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    tree.build(&sorted).unwrap();
    for i in 0..3000i64 {
        tree.remove(keys[(i * 31 % 100_000) as usize]).unwrap();
        tree.insert((i as i32, 200_000 + i)).unwrap();
    }
    let got = tree.range((100, i64::MIN), (100, i64::MAX)).unwrap();
    let mut want: Vec<Key> = sorted
        .iter()
        .filter(|k| k.0 == 100)
        .filter(|k| !(0..3000i64).any(|i| keys[(i * 31 % 100_000) as usize] == **k))
        .copied()
        .collect();
    want.push((100, 200_100));
    want.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn index_pages_are_unlogged_and_never_hold_back_the_checkpoint() {
    let pool = pool(8);
    let mut tree = small_tree(&pool);
    tree.build(&[]).unwrap();
    for i in 0..200i64 {
        tree.insert(((i * 7 % 50) as i32, i)).unwrap();
    }
    assert!(pool.counters.pages_dirty.load(Ordering::Relaxed) > 0);
    assert_eq!(
        pool.oldest_dirty_lsn(),
        None,
        "scratch pages carry no redo: the fuzzy checkpoint ignores them"
    );
    assert!(
        pool.counters.reads.load(Ordering::Relaxed) > 0,
        "8 frames for ~100 nodes: nodes were written out and read back"
    );
    pool.flush_all().unwrap();
    assert_eq!(pool.counters.pages_dirty.load(Ordering::Relaxed), 0);
    assert_eq!(tree.entries().unwrap().len(), 200);
}
