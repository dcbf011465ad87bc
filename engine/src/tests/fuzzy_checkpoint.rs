//! The background checkpointer on tables on pages
//! (`engine::fuzzy_checkpoint`): the fuzzy checkpoint can move only as far
//! as the oldest dirty page, so a checkpoint that would move it by a few
//! pages' worth is not written; the page cleaners are asked to flush (the
//! pool's side: `page_store::tests_pool`,
//! `a_flush_target_is_reached_beyond_the_io_capacity`). Before, the
//! checkpointer wrote one checkpoint per few pages flushed: ~700 a second
//! under an update load.

use std::sync::Arc;

use super::common::sim_opts;
use crate::engine::{fuzzy_checkpoint, FuzzyCheckpoint};
use crate::redo::RedoMode;
use crate::vfs::SimVfs;
use crate::Engine;

const FREE: u64 = 1600;

#[test]
fn a_checkpoint_that_moves_a_few_pages_asks_the_cleaners_instead() {
    // Log 55% full (880 of 1600), the checkpoint could move 99 (< 1/16).
    let (last, current) = (1000, 1880);
    assert_eq!(
        fuzzy_checkpoint(current, last, last + 99, FREE, 50),
        // Flush up to where the fill would be 25%: 1880 - 400.
        FuzzyCheckpoint::FlushUpTo(1480)
    );
    // Moving 1/16 of the log or more is worth a checkpoint.
    assert_eq!(
        fuzzy_checkpoint(current, last, last + 100, FREE, 50),
        FuzzyCheckpoint::Write
    );
    // 3/4 full: any move is worth one; none is not (nothing to record).
    assert_eq!(
        fuzzy_checkpoint(last + 1200, last, last + 1, FREE, 50),
        FuzzyCheckpoint::Write
    );
    assert_eq!(
        fuzzy_checkpoint(last + 1200, last, last, FREE, 50),
        FuzzyCheckpoint::FlushUpTo(last + 1200 - 400)
    );
    assert_eq!(
        fuzzy_checkpoint(last + 1199, last, last + 1, FREE, 50),
        FuzzyCheckpoint::FlushUpTo(last + 1199 - 400)
    );
}

/// In memory every checkpoint reaches the closed LSN: always due.
#[test]
fn tables_in_memory_always_checkpoint() {
    let mut o = sim_opts(Arc::new(SimVfs::new()), RedoMode::On, 1, 1 << 20);
    o.checkpoint_fill_pct = 100;
    let m = Engine::open(o).unwrap();
    m.prepare_sbtest(1, 200).unwrap();
    assert!(m.fuzzy_checkpoint_due(50));
    m.shutdown().unwrap();
}
