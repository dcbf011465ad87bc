//! An explicit durable wait (a checkpoint) with the dedicated log threads ON
//! and innodb_flush_log_at_trx_commit 0 or 2 asks the flusher for an
//! immediate fdatasync instead of waiting for its once-a-second flush.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use redoctor_engine::vfs::SimVfs;
use redoctor_engine::Engine;
use redoctor_engine::RedoMode;
use redoctor_engine::Row;

#[test]
fn checkpoints_do_not_wait_for_the_lazy_flush() {
    for fac in [0u8, 2] {
        let vfs = Arc::new(SimVfs::new());
        let e = Engine::open(common::sim_opts(vfs, RedoMode::On, fac, 1 << 20)).unwrap();
        let t = e.create_table("t").unwrap();
        let started = Instant::now();
        // Each round: one commit (not flushed: lazy setting), then a
        // checkpoint, which must make it durable. Waiting for the lazy
        // once-a-second flush would take about 5 s in all.
        for i in 0..5 {
            let mut trx = e.begin();
            let row = Row {
                k: 1,
                c: "c".into(),
                pad: "p".into(),
            };
            trx.insert(t, i, row).unwrap();
            e.commit(trx).unwrap();
            let lsn = e.checkpoint().unwrap();
            assert!(e.status().flushed_lsn >= lsn);
        }
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(2500),
            "flush_at_commit={fac}: 5 checkpoints took {took:?}, as if each waited for the lazy flush"
        );
        e.shutdown().unwrap();
    }
}
