//! After a failed redo write nothing writes or syncs the redo log again.
//!
//! A torn write leaves the first half of its blocks in the file, the first
//! of them being the partially filled block that also holds the tail of the
//! last acknowledged records. A second write after it (by a log thread, or a
//! user thread that passed its fail-stop check just before the failure)
//! would rebuild that block and write it over them; recovery would then cut
//! the log before acknowledged commits. Nor is the fdatasync retried.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::common::sim_opts;
use crate::data::table::Row;
use crate::recovery::REDO_FILE;
use crate::redo::{RedoError, RedoMode};
use crate::vfs::{SimVfs, Vfs};
use crate::{Engine, EngineError};

/// Rows per transaction: its redo record spans several blocks, so a torn
/// write of it reaches the file in part.
const ROWS: i64 = 20;

fn insert(engine: &Engine, first: i64) -> Result<u64, EngineError> {
    let table = engine.table_id("sbtest1").unwrap();
    let mut t = engine.begin();
    for id in first..first + ROWS {
        let row = Row {
            k: id as i32,
            c: format!("{id:0>119}"),
            pad: "p".repeat(59),
        };
        t.insert(table, id, row)?;
    }
    engine.commit(t)
}

fn opts(vfs: Arc<SimVfs>, mode: RedoMode) -> crate::EngineOptions {
    let mut o = sim_opts(vfs, mode, 1, 1 << 20);
    o.redo.log_buffer_size = 64 << 10;
    o.redo.link_slots = 1 << 15;
    o
}

fn redo_image(vfs: &SimVfs) -> Vec<u8> {
    let f = vfs.open(REDO_FILE, false).unwrap();
    let mut buf = vec![0; f.len().unwrap() as usize];
    f.read_at(&mut buf, 0).unwrap();
    buf
}

#[test]
fn after_a_torn_redo_write_nothing_writes_or_syncs_the_log() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let vfs = Arc::new(SimVfs::new());
        let engine = Engine::open(opts(vfs.clone(), mode)).unwrap();
        engine.prepare_sbtest(1, 10).unwrap();
        let acked: Vec<i64> = (0..5).map(|i| 1000 + i * ROWS).collect();
        for &first in &acked {
            insert(&engine, first).unwrap();
        }
        vfs.tear_writes(REDO_FILE, true).unwrap();
        let e = insert(&engine, 5000).unwrap_err().to_string();
        assert!(
            e.contains("write to") && e.contains("fail-stop"),
            "{mode}: {e}"
        );
        // The fault passes; the log stays stopped all the same.
        vfs.tear_writes(REDO_FILE, false).unwrap();
        let image = redo_image(&vfs);
        let fsyncs = engine.status().counters.redo_fsyncs;

        let log = engine.redo();
        let w = log.write_ready(&mut log.writer.lock(), false);
        assert!(
            matches!(w, Err(RedoError::FailStop { .. })),
            "{mode}: {w:?}"
        );
        let f = log.flush_once(false);
        assert!(
            matches!(f, Err(RedoError::FailStop { .. })),
            "{mode}: {f:?}"
        );
        assert!(
            redo_image(&vfs) == image,
            "{mode}: the redo log was written after its fail-stop"
        );
        assert_eq!(engine.status().counters.redo_fsyncs, fsyncs, "{mode}");
        drop(engine);

        let crashed = Arc::new(vfs.crash(&mut StdRng::seed_from_u64(1)));
        let engine = Engine::open(opts(crashed, mode)).unwrap();
        let rows = &engine.dump()["sbtest1"];
        for &first in &acked {
            for id in first..first + ROWS {
                assert!(rows.contains_key(&id), "{mode}: acknowledged row {id} lost");
            }
        }
        assert!(!rows.contains_key(&5000), "{mode}");
    }
}
