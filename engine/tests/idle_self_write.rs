//! `redoctor_log_idle_self_write`: with dedicated log threads, a committer
//! that finds the log idle writes and fdatasyncs its own record
//! (`redo/self_write.rs`). A lone committer does so for (nearly) every
//! commit and wakes no log thread for it; under load, with the setting and
//! the mode changed live, every acknowledged commit survives a power cut.

mod common;

use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::{Engine, RedoMode};

use common::sim_opts;

fn engine(self_write: bool, vfs: Arc<SimVfs>) -> Arc<Engine> {
    let mut o = sim_opts(vfs, RedoMode::On, 1, 1 << 20);
    o.redo.idle_self_write = self_write;
    let e = Engine::open(o).unwrap();
    e.prepare_sbtest(1, 100).unwrap();
    e
}

/// Commits `n` single-row updates one after another; returns the counters'
/// (self writes, self flushes, redo writes, fsyncs) over them.
fn lone_commits(e: &Engine, n: i64) -> (u64, u64, u64, u64) {
    let table = e.table_id("sbtest1").unwrap();
    let c0 = e.status().counters;
    for i in 0..n {
        let mut t = e.begin();
        assert!(t.update_k(table, 1 + i % 100, 1).unwrap());
        e.commit(t).unwrap();
    }
    let c1 = e.status().counters;
    (
        c1.redo_self_writes - c0.redo_self_writes,
        c1.redo_self_flushes - c0.redo_self_flushes,
        c1.redo_writes - c0.redo_writes,
        c1.redo_fsyncs - c0.redo_fsyncs,
    )
}

#[test]
fn a_lone_committer_writes_and_flushes_its_own_records() {
    let vfs = Arc::new(SimVfs::new());
    let e = engine(true, vfs.clone());
    let (sw, sf, writes, fsyncs) = lone_commits(&e, 400);
    // The writer thread may wake on its 10 ms timer and take a turn now and
    // then; every other commit is written and flushed by its committer.
    assert!(
        sw >= 360 && sf >= 360,
        "self writes {sw}, self flushes {sf} of 400"
    );
    assert!(writes >= sw && fsyncs >= sf);
    // Durable when acknowledged: a power cut drops nothing acknowledged.
    let table = e.table_id("sbtest1").unwrap();
    let before = e.dump()["sbtest1"].clone();
    let crashed = Arc::new(vfs.crash(&mut rand::rngs::StdRng::seed_from_u64(3)));
    drop(e);
    let mut o = sim_opts(crashed, RedoMode::On, 1, 1 << 20);
    o.redo.idle_self_write = true;
    let e = Engine::open(o).unwrap();
    assert_eq!(e.dump()["sbtest1"], before);
    assert!(e.table_id("sbtest1") == Some(table));
    e.shutdown().unwrap();
}

#[test]
fn off_by_default_and_off_means_the_log_threads_do_it() {
    let e = engine(false, Arc::new(SimVfs::new()));
    assert_eq!(common::status(&e, "Innodb_redo_self_writes"), 0);
    let (sw, sf, writes, fsyncs) = lone_commits(&e, 100);
    assert_eq!((sw, sf), (0, 0));
    assert!(writes >= 100 && fsyncs >= 100);
    assert!(!redoctor_engine::RedoOptions::default().idle_self_write);
    // Switched on live through the settings registry.
    e.set_global("redoctor_log_idle_self_write", "ON").unwrap();
    let (sw, sf, _, _) = lone_commits(&e, 100);
    assert!(
        sw >= 90 && sf >= 90,
        "self writes {sw}, self flushes {sf} of 100"
    );
    e.shutdown().unwrap();
}

#[test]
fn self_write_toggled_and_modes_switched_under_32_users_then_crash() {
    let total = common::load_crash::commit_through_changes_then_crash(
        |vfs| {
            let mut o = sim_opts(vfs, RedoMode::On, 1, 1 << 20);
            o.redo.idle_self_write = true;
            o
        },
        32,
        60,
        Duration::from_millis(15),
        |engine, i| match i % 4 {
            0 => engine
                .set_global("redoctor_log_idle_self_write", "OFF")
                .unwrap(),
            1 => engine
                .set_global("redoctor_log_idle_self_write", "ON")
                .unwrap(),
            2 => engine.set_redo_mode(RedoMode::Off).unwrap(),
            _ => engine.set_redo_mode(RedoMode::On).unwrap(),
        },
    );
    println!("{total} commits acknowledged; all recovered");
}
