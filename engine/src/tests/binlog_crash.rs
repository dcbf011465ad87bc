//! Crash tests for two-phase commit with the binary log (log_bin=ON).
//!
//! Several users run random, conflicting transactions; the simulated disk
//! loses power at a random moment (every unsynced sector independently kept
//! or lost); the engine recovers. Then:
//! - the binlog and the tables agree: replaying the binlog's events (their
//!   row changes) in binlog order from empty tables gives exactly the
//!   recovered tables, so every prepared transaction was committed iff its
//!   binlog event survived, and binlog order is a valid commit order;
//! - with sync_binlog=1, every acknowledged commit is in the binlog;
//! - each transaction is in the binlog at most once.
//!
//! Both redo modes × sync_binlog 1 and 3, two crashes per run (the second
//! recovers a log and a binlog that were recovered once already), a small
//! redo file recycled by checkpoints, and binlog files that rotate.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::binlog::file;
use crate::binlog::xa::XaReport;
use crate::data::record::{self, RedoRecord, RowOp};
use crate::data::table::Row;
use crate::redo::RedoMode;
use crate::vfs::SimVfs;
use crate::{Engine, EngineOptions};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type State = BTreeMap<String, BTreeMap<i64, Row>>;

const TABLES: [&str; 2] = ["sbtest1", "sbtest2"];

/// One run's shape.
#[derive(Clone, Copy)]
struct Shape {
    mode: RedoMode,
    sync_binlog: u32,
    users: usize,
    sync_delay_us: u64,
}

fn opts(vfs: Arc<SimVfs>, shape: Shape) -> EngineOptions {
    let Shape {
        mode, sync_binlog, ..
    } = shape;
    let mut o = super::common::sim_opts(vfs, mode, 1, 256 << 10);
    o.checkpoint_fill_pct = 40;
    o.lock_wait_timeout = Duration::from_secs(5);
    o.log_bin = true;
    o.sync_binlog = sync_binlog;
    o.max_binlog_size = 16 << 10;
    o.binlog_group_commit_sync_delay_us = shape.sync_delay_us;
    o
}

/// One random transaction; returns its id if it changed rows and was
/// acknowledged (a read-only commit writes no binlog event).
fn random_trx(engine: &Engine, rng: &mut StdRng) -> Option<u64> {
    let mut trx = engine.begin();
    let id = trx.id();
    for _ in 0..rng.gen_range(1..5) {
        let table = engine.table_id(TABLES[rng.gen_range(0..2)]).unwrap();
        let row = rng.gen_range(1..40i64);
        let r = match rng.gen_range(0..4) {
            0 => {
                let row_v = Row {
                    k: rng.gen_range(0..1000),
                    c: format!("c{}", rng.gen::<u32>()),
                    pad: "p".into(),
                };
                match trx.insert(table, row, row_v) {
                    Err(crate::data::trx::TrxError::DuplicateKey { .. }) => Ok(()),
                    r => r,
                }
            }
            1 => trx.update_k(table, row, 1).map(|_| ()),
            2 => trx
                .update_c(table, row, format!("u{}", rng.gen::<u32>()))
                .map(|_| ()),
            _ => trx.delete(table, row).map(|_| ()),
        };
        if r.is_err() {
            // Deadlock or lock wait timeout: the transaction is rolled back.
            engine.rollback(trx);
            return None;
        }
    }
    if rng.gen_bool(0.1) {
        engine.rollback(trx);
        return None;
    }
    let wrote = trx.write_count() > 0;
    match engine.commit(trx) {
        Ok(_) => wrote.then_some(id),
        Err(e) => panic!("commit failed: {e}"),
    }
}

/// Runs users until a crash; returns the crashed disk and the acknowledged ids.
fn run_until_crash(
    engine: Arc<Engine>,
    users: usize,
    vfs: &SimVfs,
    rng: &mut StdRng,
    seed: u64,
) -> (SimVfs, HashSet<u64>) {
    let acked = Arc::new(Mutex::new(HashSet::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..users)
        .map(|u| {
            let (engine, acked, count, stop) =
                (engine.clone(), acked.clone(), count.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed * 100 + u as u64);
                while !stop.load(Ordering::Acquire) {
                    if let Some(id) = random_trx(&engine, &mut rng) {
                        acked.lock().insert(id);
                        count.fetch_add(1, Ordering::Release);
                    }
                }
            })
        })
        .collect();
    let target = rng.gen_range(20..1500);
    let t0 = std::time::Instant::now();
    while count.load(Ordering::Acquire) < target {
        assert!(t0.elapsed() < Duration::from_secs(60), "commits stalled");
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(Duration::from_micros(rng.gen_range(0..2000)));
    // Acknowledged before the power cut: these must survive (sync_binlog=1).
    let before = acked.lock().clone();
    let crashed = vfs.crash(rng);
    stop.store(true, Ordering::Release);
    for h in handles {
        h.join().unwrap();
    }
    drop(engine);
    (crashed, before)
}

/// The tables that replaying every binlog event from empty tables gives.
fn replay_binlog(vfs: &SimVfs, engine: &Engine) -> (State, Vec<u64>) {
    let names: BTreeMap<u32, String> = TABLES
        .iter()
        .map(|n| (engine.table_id(n).unwrap(), n.to_string()))
        .collect();
    let mut state: State = TABLES
        .iter()
        .map(|n| (n.to_string(), BTreeMap::new()))
        .collect();
    let mut xids = Vec::new();
    for ev in file::read_all(vfs).unwrap() {
        let RedoRecord::Commit { trx_id, ops } = record::decode(&ev.payload).unwrap() else {
            panic!("binlog payload is not a commit body");
        };
        assert_eq!(trx_id, ev.xid);
        xids.push(ev.xid);
        for op in ops {
            match op {
                RowOp::Put { table, id, row } => {
                    state.get_mut(&names[&table]).unwrap().insert(id, row);
                }
                RowOp::Delete { table, id } => {
                    state.get_mut(&names[&table]).unwrap().remove(&id);
                }
            }
        }
    }
    (state, xids)
}

fn add(total: &mut XaReport, r: &XaReport) {
    total.prepared += r.prepared;
    total.committed += r.committed;
    total.committed_without_mark += r.committed_without_mark;
    total.rolled_back += r.rolled_back;
    total.rolled_back_with_mark += r.rolled_back_with_mark;
}

fn scenario(shape: Shape, seed: u64, total: &mut XaReport) {
    let Shape {
        mode, sync_binlog, ..
    } = shape;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut vfs = Arc::new(SimVfs::new());
    let mut engine = Engine::open(opts(vfs.clone(), shape)).unwrap();
    for t in TABLES {
        engine.create_table(t).unwrap();
    }
    let mut all_acked = HashSet::new();
    for round in 0..2 {
        let ctx = format!("mode {mode} sync_binlog {sync_binlog} seed {seed} round {round}");
        let (crashed, acked) =
            run_until_crash(engine, shape.users, &vfs, &mut rng, seed * 10 + round);
        all_acked.extend(acked);
        let crashed = Arc::new(crashed);
        engine = Engine::open(opts(crashed.clone(), shape)).unwrap();
        let rep = engine.recovery_report();
        add(total, &rep.xa);
        let (want, xids) = replay_binlog(&crashed, &engine);
        let got = engine.dump();
        if got != want {
            let mut diff = Vec::new();
            for (t, rows) in &want {
                for id in rows.keys().chain(got[t].keys()) {
                    if rows.get(id) != got[t].get(id) {
                        diff.push(format!(
                            "{t}/{id}: binlog {:?} tables {:?}",
                            rows.get(id),
                            got[t].get(id)
                        ));
                    }
                }
            }
            diff.dedup();
            panic!(
                "{ctx}: tables disagree with the binlog ({:?}; {:?}): {diff:#?}",
                rep.xa, rep.binlog
            );
        }
        let unique: HashSet<u64> = xids.iter().copied().collect();
        assert_eq!(
            unique.len(),
            xids.len(),
            "{ctx}: an xid is in the binlog twice"
        );
        if sync_binlog == 1 {
            let lost: Vec<_> = all_acked.difference(&unique).collect();
            assert!(
                lost.is_empty(),
                "{ctx}: acknowledged commits lost: {lost:?}"
            );
        }
        vfs = crashed;
    }
    engine.shutdown().unwrap();
}

fn run(mode: RedoMode, seeds: std::ops::Range<u64>) {
    let mut total = XaReport::default();
    for sync_binlog in [1, 3] {
        for seed in seeds.clone() {
            let shape = Shape {
                mode,
                sync_binlog,
                users: 4,
                sync_delay_us: 0,
            };
            scenario(shape, seed, &mut total);
        }
    }
    println!("mode {mode}: two-phase decisions over all recoveries: {total:?}");
    // Both decisions of a prepare without a commit mark were exercised.
    assert!(
        total.committed_without_mark > 0 && total.rolled_back > 0,
        "the crashes never hit a prepared, undecided transaction: {total:?}"
    );
}

#[test]
fn binlog_crash_rt0() {
    run(RedoMode::Off, 0..4);
}

#[test]
fn binlog_crash_rt1() {
    run(RedoMode::On, 100..104);
}

/// Bigger groups at the crash: 12 users and a 300 µs sync delay, so SYNC
/// and COMMIT groups hold many transactions when the power goes.
#[test]
fn binlog_crash_big_groups() {
    let mut total = XaReport::default();
    for (i, mode) in [RedoMode::Off, RedoMode::On].into_iter().enumerate() {
        for seed in 0..2 {
            let shape = Shape {
                mode,
                sync_binlog: 1,
                users: 12,
                sync_delay_us: 300,
            };
            scenario(shape, 200 + 10 * i as u64 + seed, &mut total);
        }
    }
    println!("big groups: {total:?}");
    assert!(total.prepared > 0);
}

/// A checkpoint taken while a transaction is prepared (its binlog event
/// written, its COMMIT stage not reached: the SYNC stage holds it for a
/// 300 ms sync delay) must not start replay above its prepare record: the
/// image cannot hold it yet. After the commit is acknowledged and the power
/// goes, it must be there.
#[test]
fn checkpoint_never_hides_a_prepared_transaction() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let vfs = Arc::new(SimVfs::new());
        let shape = Shape {
            mode,
            sync_binlog: 1,
            users: 1,
            sync_delay_us: 0,
        };
        let engine = Engine::open(opts(vfs.clone(), shape)).unwrap();
        let t = engine.create_table("sbtest1").unwrap();
        engine.set_binlog_group_commit_sync_delay(300_000).unwrap();
        let e2 = engine.clone();
        let committer = std::thread::spawn(move || {
            let mut trx = e2.begin();
            let row = Row {
                k: 7,
                c: "prepared".into(),
                pad: String::new(),
            };
            trx.insert(t, 1, row).unwrap();
            e2.commit(trx).unwrap();
        });
        // Wait until it is in the binlog (FLUSH done), then checkpoint
        // while the SYNC stage still holds it.
        let t0 = std::time::Instant::now();
        while engine.status().counters.binlog_events == 0 {
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(engine.status().counters.commits, 0, "still prepared");
        let before = engine.status().counters.checkpoints;
        engine.checkpoint().unwrap();
        assert_eq!(
            engine.status().counters.commits,
            0,
            "checkpoint while prepared"
        );
        assert!(engine.status().counters.checkpoints > before);
        committer.join().unwrap();
        let crashed = Arc::new(vfs.crash(&mut StdRng::seed_from_u64(1)));
        drop(engine);
        let engine = Engine::open(opts(crashed, shape)).unwrap();
        assert_eq!(
            engine.dump()["sbtest1"].get(&1).map(|r| r.k),
            Some(7),
            "mode {mode}: an acknowledged commit prepared during a checkpoint was lost"
        );
        engine.shutdown().unwrap();
    }
}

/// With sync_binlog=0 the binlog is synced by checkpoints only: a checkpoint
/// image must never hold a transaction whose binlog event could still be
/// lost (recovery would have to roll back what the image contains).
#[test]
fn checkpoint_syncs_the_binlog_it_depends_on() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let vfs = Arc::new(SimVfs::new());
        let shape = Shape {
            mode,
            sync_binlog: 0,
            users: 1,
            sync_delay_us: 0,
        };
        let engine = Engine::open(opts(vfs.clone(), shape)).unwrap();
        for t in TABLES {
            engine.create_table(t).unwrap();
        }
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..30 {
            random_trx(&engine, &mut rng);
        }
        engine.checkpoint().unwrap();
        // Power cuts with different luck for the unsynced sectors.
        for seed in 0..8 {
            let crashed = Arc::new(vfs.crash(&mut StdRng::seed_from_u64(seed)));
            let e = Engine::open(opts(crashed.clone(), shape)).unwrap();
            let (want, _) = replay_binlog(&crashed, &e);
            assert_eq!(e.dump(), want, "mode {mode} seed {seed}");
            e.shutdown().unwrap();
        }
        engine.shutdown().unwrap();
    }
}
