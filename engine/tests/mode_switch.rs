//! Live mode switching under full load: 64 users commit while the redo mode
//! is switched 100 times; then a power cut and recovery, and every
//! acknowledged commit checked (`common::load_crash`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use redoctor_engine::vfs::{SimVfs, Vfs};
use redoctor_engine::EngineOptions;
use redoctor_engine::{RedoMode, RedoOptions};

const USERS: usize = 64;
const SWITCHES: usize = 100;

fn opts(vfs: Arc<SimVfs>) -> EngineOptions {
    let mut o = EngineOptions::new("unused");
    o.vfs = Some(vfs as Arc<dyn Vfs>);
    o.redo = RedoOptions {
        mode: RedoMode::On,
        flush_at_commit: 1,
        log_buffer_size: 64 << 10,
        log_file_size: 1 << 20,
        link_slots: 8192,
        wait_slots: 256,
        ..RedoOptions::default()
    };
    o
}

#[test]
fn switch_100_times_under_64_users_then_crash() {
    let total = common::load_crash::commit_through_changes_then_crash(
        opts,
        USERS,
        SWITCHES,
        Duration::from_millis(15),
        |engine, i| {
            let mode = if i % 2 == 0 {
                RedoMode::Off
            } else {
                RedoMode::On
            };
            engine.set_redo_mode(mode).unwrap();
            if i + 1 == SWITCHES {
                assert_eq!(engine.status().counters.redo_mode_switches, SWITCHES as u64);
            }
        },
    );
    println!("{total} commits acknowledged across {SWITCHES} switches; all recovered");
}
