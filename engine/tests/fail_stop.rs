//! An fdatasync error stops the engine from acknowledging commits: the
//! committer gets a clear error, so does every later one, nothing is
//! retried, and what was acknowledged before survives a crash.

use std::sync::Arc;

use rand::SeedableRng;
use redoctor_engine::vfs::{SimVfs, Vfs};
use redoctor_engine::Row;
use redoctor_engine::{Engine, EngineError, EngineOptions};
use redoctor_engine::{RedoMode, RedoOptions};

fn opts(vfs: Arc<SimVfs>, mode: RedoMode) -> EngineOptions {
    let mut o = EngineOptions::new("unused");
    o.vfs = Some(vfs as Arc<dyn Vfs>);
    o.redo = RedoOptions {
        mode,
        log_buffer_size: 64 << 10,
        log_file_size: 1 << 20,
        link_slots: 4096,
        wait_slots: 64,
        ..RedoOptions::default()
    };
    o
}

fn insert(engine: &Engine, id: i64) -> Result<u64, EngineError> {
    let table = engine.table_id("sbtest1").unwrap();
    let mut t = engine.begin();
    t.insert(
        table,
        id,
        Row {
            k: 1,
            c: "c".into(),
            pad: "p".into(),
        },
    )?;
    engine.commit(t)
}

fn scenario(mode: RedoMode) {
    let vfs = Arc::new(SimVfs::new());
    let engine = Engine::open(opts(vfs.clone(), mode)).unwrap();
    engine.prepare_sbtest(1, 10).unwrap();
    for id in 100..150 {
        insert(&engine, id).unwrap();
    }
    let syncs = vfs.sync_count();
    vfs.fail_syncs_after(0);
    let err = insert(&engine, 1000).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("fdatasync") && msg.contains("fail-stop"),
        "{msg}"
    );
    // No retry: no further fsync succeeded, and later commits fail at once.
    assert_eq!(vfs.sync_count(), syncs);
    let err2 = insert(&engine, 1001).unwrap_err();
    assert!(matches!(err2, EngineError::Redo(_)), "{err2}");
    let st = engine.status();
    assert!(st.fail_stop.is_some());
    // The 50 inserts and the 10 prepare-time counter updates: nothing after the failure.
    assert_eq!(st.counters.commits, 50);
    let crashed = Arc::new(vfs.crash(&mut rand::rngs::StdRng::seed_from_u64(1)));
    drop(engine);
    let engine = Engine::open(opts(crashed, mode)).unwrap();
    let rows = &engine.dump()["sbtest1"];
    for id in 100..150 {
        assert!(rows.contains_key(&id), "acknowledged row {id} lost");
    }
    engine.shutdown().unwrap();
}

#[test]
fn fdatasync_failure_stops_acknowledgements_rt0() {
    scenario(RedoMode::Off);
}

#[test]
fn fdatasync_failure_stops_acknowledgements_rt1() {
    scenario(RedoMode::On);
}
