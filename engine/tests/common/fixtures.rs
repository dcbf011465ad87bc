//! Engine fixtures shared by the engine's unit tests (`src/tests/`) and its
//! integration tests (`tests/`): both include this file (`#[path]`), each
//! naming the engine crate `engine` in the including module (`crate` in
//! one, `redoctor_engine` in the other). Engine options on a simulated disk
//! with a redo log small enough to wrap many times in a short test.

use std::sync::Arc;

use super::engine;
use engine::vfs::{SimVfs, Vfs};
use engine::{EngineOptions, RedoMode, RedoOptions};

pub fn sim_opts(vfs: Arc<SimVfs>, mode: RedoMode, fac: u8, log_file_size: u64) -> EngineOptions {
    let mut o = EngineOptions::new("unused");
    o.vfs = Some(vfs as Arc<dyn Vfs>);
    o.redo = RedoOptions {
        mode,
        flush_at_commit: fac,
        log_buffer_size: 16 << 10,
        log_file_size,
        link_slots: 4096,
        wait_slots: 64,
        ..RedoOptions::default()
    };
    o
}

/// A SHOW GLOBAL STATUS row's value; panics when the row is missing.
#[allow(dead_code)]
pub fn status(e: &engine::Engine, name: &str) -> u64 {
    e.global_status()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no status row {name}"))
        .1
}

/// An engine on a simulated disk (RT1, flush at commit) with `sbtest1` of
/// `rows` rows.
#[allow(dead_code)]
pub fn sbtest_engine(rows: u64) -> (Arc<engine::Engine>, engine::TableId) {
    let vfs = Arc::new(SimVfs::new());
    let e = engine::Engine::open(sim_opts(vfs, RedoMode::On, 1, 1 << 20)).unwrap();
    e.prepare_sbtest(1, rows).unwrap();
    let t = e.table_id("sbtest1").unwrap();
    (e, t)
}

/// Polls `cond` every millisecond; panics after 10 s.
#[allow(dead_code)]
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let t = std::time::Instant::now();
    while !cond() {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "timed out: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
