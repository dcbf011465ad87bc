//! Flush settings, log recycling under a full log, log thread names, and the
//! probe points' machine code.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::data::table::Row;
use crate::redo::RedoMode;
use crate::vfs::{SimVfs, Vfs};
use crate::{Engine, EngineOptions};

fn opts(vfs: Arc<SimVfs>, mode: RedoMode, fac: u8) -> EngineOptions {
    super::common::sim_opts(vfs, mode, fac, 128 << 10)
}

fn update(engine: &Engine, id: i64) -> u64 {
    let table = engine.table_id("sbtest1").unwrap();
    let mut t = engine.begin();
    assert!(t.update_k(table, id, 1).unwrap());
    engine.commit(t).unwrap()
}

/// With flush_at_commit 0 and 2 a commit does not wait for fdatasync, but
/// the log is made durable in the background about once a second.
#[test]
fn lazy_flush_settings_flush_about_once_a_second() {
    for mode in [RedoMode::Off, RedoMode::On] {
        for fac in [0u8, 2] {
            let vfs = Arc::new(SimVfs::new());
            let e = Engine::open(opts(vfs, mode, fac)).unwrap();
            e.prepare_sbtest(1, 10).unwrap();
            let fsyncs = e.status().counters.redo_fsyncs;
            let mut lsn = 0;
            for i in 0..50 {
                lsn = update(&e, 1 + i % 10);
            }
            assert_eq!(
                e.status().counters.redo_fsyncs,
                fsyncs,
                "mode {mode} fac {fac}: commits must not fdatasync"
            );
            let t = Instant::now();
            while e.status().flushed_lsn < lsn {
                assert!(
                    t.elapsed() < Duration::from_secs(3),
                    "mode {mode} fac {fac}: not flushed in the background"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            e.shutdown().unwrap();
        }
    }
}

/// A log far smaller than the work: committers wait for checkpoints
/// (never overwrite), and everything survives a restart.
#[test]
fn full_log_makes_committers_wait_then_recycles() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let vfs = Arc::new(SimVfs::new());
        let mut o = opts(vfs.clone(), mode, 1);
        o.checkpoint_fill_pct = 100; // checkpoint only when the log is full
        let e = Engine::open(o.clone()).unwrap();
        e.prepare_sbtest(1, 200).unwrap();
        let table = e.table_id("sbtest1").unwrap();
        let pad = "x".repeat(60);
        let start = e.status().lsn;
        let mut hs = vec![];
        for t in 0..4i64 {
            let (e, pad) = (e.clone(), pad.clone());
            hs.push(std::thread::spawn(move || {
                for i in 0..1500i64 {
                    let mut trx = e.begin();
                    let row = Row {
                        k: i as i32,
                        c: format!("{t}-{i}"),
                        pad: pad.clone(),
                    };
                    trx.insert(table, 1000 + t * 10_000 + i, row).unwrap();
                    e.commit(trx).unwrap();
                }
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        let st = e.status();
        let capacity = crate::redo::log_file::Layout::for_file_size(128 << 10).capacity();
        assert!(
            st.lsn - start > 3 * capacity,
            "the log must wrap several times"
        );
        assert!(st.counters.redo_log_full_waits > 0, "{:?}", st.counters);
        assert!(st.counters.checkpoints > 2);
        let before = e.dump();
        drop(e);
        // Reopen on the same files (as after a crash: no shutdown checkpoint).
        let crashed =
            Arc::new(vfs.crash(&mut <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3)));
        let mut o2 = o;
        o2.vfs = Some(crashed as Arc<dyn Vfs>);
        let e2 = Engine::open(o2).unwrap();
        assert_eq!(e2.dump(), before, "mode {mode}");
        e2.shutdown().unwrap();
    }
}

/// MySQL 8.4's host rule: dedicated log threads from 32 logical CPUs, user
/// threads below; the library's own default stays MySQL 8.0's ON.
#[test]
fn host_default_follows_mysql84() {
    for (cpus, want) in [
        (1, RedoMode::Off),
        (2, RedoMode::Off),
        (31, RedoMode::Off),
        (32, RedoMode::On),
        (128, RedoMode::On),
    ] {
        assert_eq!(RedoMode::host_default(cpus), want, "{cpus} CPUs");
    }
    assert_eq!(crate::RedoOptions::default().mode, RedoMode::On);
}
