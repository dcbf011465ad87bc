//! A table's shape (its columns) survives a power cut whether recovery
//! finds the table in the redo log, in a checkpoint base or in a delta.

mod common;

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::{Engine, RedoMode, Row, Shape};

#[test]
fn shapes_survive_power_cuts_from_log_base_and_delta() {
    for checkpoints in 0..3 {
        let mut rng = SmallRng::seed_from_u64(checkpoints);
        let vfs = Arc::new(SimVfs::new());
        let opts = |v: &Arc<SimVfs>| common::sim_opts(v.clone(), RedoMode::Off, 1, 256 << 10);
        let e = Engine::open(opts(&vfs)).unwrap();
        let wide = e.create_table("wide").unwrap();
        let narrow = e.create_shaped_table("narrow", Shape::IdK).unwrap();
        for n in 0..checkpoints {
            let mut trx = e.begin();
            for (t, c) in [(wide, "c"), (narrow, "")] {
                let row = Row {
                    k: n as i32,
                    c: c.into(),
                    pad: String::new(),
                };
                trx.insert(t, n as i64, row).unwrap();
            }
            e.commit(trx).unwrap();
            e.checkpoint().unwrap();
        }
        let before = e.dump();
        let crashed = Arc::new(vfs.crash(&mut rng));
        drop(e);
        let e = Engine::open(opts(&crashed)).unwrap();
        assert_eq!(e.dump(), before, "{checkpoints} checkpoints");
        assert_eq!(
            e.table_id_shape("narrow"),
            Some((narrow, Shape::IdK)),
            "{checkpoints} checkpoints"
        );
        assert_eq!(e.table_id_shape("wide"), Some((wide, Shape::Sbtest)));
        e.shutdown().unwrap();
    }
}
