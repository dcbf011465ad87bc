//! Ordered group commit under load: many users, conflicting transactions,
//! both redo modes. Binlog order must be a valid commit order (replaying the
//! binlog gives the tables, including which transaction wrote each row
//! last), groups must form, `sync_binlog` and
//! `binlog_group_commit_sync_delay` must act as documented and change live
//! without stalling anyone, and a binlog fdatasync failure must stop the
//! engine cleanly.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::binlog::file;
use crate::binlog::BinlogError;
use crate::data::record::{self, RedoRecord, RowOp};
use crate::data::table::Row;
use crate::redo::RedoMode;
use crate::vfs::SimVfs;
use crate::{Engine, EngineError, EngineOptions};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type State = BTreeMap<i64, Row>;
const ROWS: i64 = 16;

fn opts(vfs: Arc<SimVfs>, mode: RedoMode) -> EngineOptions {
    let mut o = super::common::sim_opts(vfs, mode, 1, 4 << 20);
    o.log_bin = true;
    o.max_binlog_size = 64 << 10;
    o.lock_wait_timeout = Duration::from_secs(10);
    o
}

/// Creates `sbtest1` with `ROWS` rows, inserted by logged transactions so
/// the binlog holds them too.
fn setup(engine: &Engine) -> u32 {
    let t = engine.create_table("sbtest1").unwrap();
    let mut trx = engine.begin();
    for id in 1..=ROWS {
        let row = Row {
            k: 0,
            c: String::new(),
            pad: String::new(),
        };
        trx.insert(t, id, row).unwrap();
    }
    engine.commit(trx).unwrap();
    t
}

/// The table replaying the binlog gives, and the xids in binlog order.
fn replay(vfs: &SimVfs) -> (State, Vec<u64>) {
    let mut state = State::new();
    let mut xids = Vec::new();
    for ev in file::read_all(vfs).unwrap() {
        let RedoRecord::Commit { ops, .. } = record::decode(&ev.payload).unwrap() else {
            panic!("not a commit body");
        };
        xids.push(ev.xid);
        for op in ops {
            match op {
                RowOp::Put { id, row, .. } => {
                    state.insert(id, row);
                }
                RowOp::Delete { id, .. } => {
                    state.remove(&id);
                }
            }
        }
    }
    (state, xids)
}

/// One transaction: for two random hot rows, k += 1 and c = its own id.
/// Returns its id if acknowledged; lock errors roll back.
fn hot_trx(engine: &Engine, t: u32, rng: &mut StdRng) -> Result<Option<u64>, EngineError> {
    let mut trx = engine.begin();
    let id = trx.id();
    for _ in 0..2 {
        let row = rng.gen_range(1..=ROWS);
        let r = trx
            .update_k(t, row, 1)
            .and_then(|_| trx.update_c(t, row, format!("x{id}")));
        if r.is_err() {
            engine.rollback(trx);
            return Ok(None);
        }
    }
    engine.commit(trx).map(|_| Some(id))
}

fn users_run(engine: &Arc<Engine>, t: u32, users: usize, per_user: usize) -> Vec<Vec<u64>> {
    let handles: Vec<_> = (0..users)
        .map(|u| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(u as u64);
                let mut acked = Vec::new();
                while acked.len() < per_user {
                    if let Some(id) = hot_trx(&engine, t, &mut rng).unwrap() {
                        acked.push(id);
                    }
                }
                acked
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn check_agreement(engine: &Engine, vfs: &SimVfs, acked: &[Vec<u64>]) {
    let (want, xids) = replay(vfs);
    assert_eq!(
        engine.dump()["sbtest1"],
        want,
        "tables differ from binlog replay"
    );
    let pos: BTreeMap<u64, usize> = xids.iter().enumerate().map(|(i, x)| (*x, i)).collect();
    assert_eq!(pos.len(), xids.len(), "an xid is in the binlog twice");
    for user in acked {
        let at: Vec<usize> = user.iter().map(|x| pos[x]).collect();
        assert!(
            at.windows(2).all(|w| w[0] < w[1]),
            "a user's commits are out of order in the binlog"
        );
    }
    // No lost update: every acknowledged transaction added 2 to the k sum.
    let n: usize = acked.iter().map(Vec::len).sum();
    let k: i64 = want.values().map(|r| r.k as i64).sum();
    assert_eq!(k, 2 * n as i64);
}

#[test]
fn binlog_order_is_commit_order_under_many_users() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let vfs = Arc::new(SimVfs::new());
        let engine = Engine::open(opts(vfs.clone(), mode)).unwrap();
        let t = setup(&engine);
        let before = engine.status().counters;
        let acked = users_run(&engine, t, 64, 40);
        let c = engine.status().counters;
        let n = 64 * 40;
        assert_eq!(c.binlog_events - before.binlog_events, n as u64);
        let groups = c.binlog_groups - before.binlog_groups;
        assert_eq!(
            c.binlog_group_size_sum - before.binlog_group_size_sum,
            n as u64
        );
        assert!(groups <= n as u64 && groups > 0);
        println!(
            "mode {mode}: {n} commits in {groups} groups ({:.1} per group), {} binlog fsyncs, {} stage waits",
            n as f64 / groups as f64,
            c.binlog_fsyncs - before.binlog_fsyncs,
            c.binlog_stage_waits - before.binlog_stage_waits,
        );
        check_agreement(&engine, &vfs, &acked);
        let files = file::read_index(vfs.as_ref()).unwrap().unwrap();
        assert!(files.len() > 1, "the binlog should have rotated");
        engine.shutdown().unwrap();
    }
}

#[test]
fn sync_binlog_syncs_every_n_groups() {
    let vfs = Arc::new(SimVfs::new());
    let engine = Engine::open(opts(vfs.clone(), RedoMode::Off)).unwrap();
    let t = setup(&engine);
    let mut rng = StdRng::seed_from_u64(1);
    for (n, want) in [(0u32, 0u64), (1, 60), (10, 6), (7, 8)] {
        engine.set_sync_binlog(n).unwrap();
        let before = engine.status().counters;
        // One user: every group is one transaction.
        let mut done = 0;
        while done < 60 {
            done += hot_trx(&engine, t, &mut rng).unwrap().is_some() as u32;
        }
        let c = engine.status().counters;
        assert_eq!(c.binlog_groups - before.binlog_groups, 60);
        let fsyncs = c.binlog_fsyncs - before.binlog_fsyncs;
        // Each run starts with no group unsynced (0 leaves them unsynced,
        // but the first group at 1 syncs them all): 60/10 = 6, 60/7 = 8.
        assert_eq!(fsyncs, want, "sync_binlog={n}");
        assert!(c.binlog_fsync_ns >= before.binlog_fsync_ns);
    }
    engine.shutdown().unwrap();
}

#[test]
fn sync_delay_syncs_more_transactions_at_once() {
    let vfs = Arc::new(SimVfs::new());
    let engine = Engine::open(opts(vfs.clone(), RedoMode::Off)).unwrap();
    let t = setup(&engine);
    assert!(engine
        .set_binlog_group_commit_sync_delay(1_000_001)
        .is_err());
    engine.set_binlog_group_commit_sync_delay(3000).unwrap();
    let before = engine.status().counters;
    let acked = users_run(&engine, t, 16, 20);
    let c = engine.status().counters;
    // FLUSH groups queue up in the SYNC stage while its leader waits.
    let per_fsync = (c.binlog_events - before.binlog_events) as f64
        / (c.binlog_fsyncs - before.binlog_fsyncs) as f64;
    assert!(
        per_fsync > 2.0,
        "16 users with a 3 ms sync delay: {per_fsync:.2} transactions per binlog fsync"
    );
    check_agreement(&engine, &vfs, &acked);
    engine.shutdown().unwrap();
}

/// sync_binlog and the sync delay change every few ms under 32 users in
/// both redo modes; nobody stalls, nothing is lost or reordered, and a
/// refused value changes nothing.
#[test]
fn live_settings_under_load() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let vfs = Arc::new(SimVfs::new());
        let engine = Engine::open(opts(vfs.clone(), mode)).unwrap();
        let t = setup(&engine);
        let stop = Arc::new(AtomicBool::new(false));
        let commits = Arc::new(AtomicU64::new(0));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let users: Vec<_> = (0..32)
            .map(|u| {
                let (engine, stop, commits, acked) =
                    (engine.clone(), stop.clone(), commits.clone(), acked.clone());
                std::thread::spawn(move || {
                    let mut rng = StdRng::seed_from_u64(u);
                    let mut mine = Vec::new();
                    while !stop.load(Ordering::Acquire) {
                        if let Some(id) = hot_trx(&engine, t, &mut rng).unwrap() {
                            mine.push(id);
                            commits.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    acked.lock().push(mine);
                })
            })
            .collect();
        let syncs = [1u32, 0, 7, 1000, 1, 3];
        let delays = [0u64, 50, 500, 0, 2000, 0];
        let t0 = Instant::now();
        for i in 0..60 {
            engine.set_sync_binlog(syncs[i % syncs.len()]).unwrap();
            engine
                .set_binlog_group_commit_sync_delay(delays[i % delays.len()])
                .unwrap();
            assert!(engine
                .set_binlog_group_commit_sync_delay(5_000_000)
                .is_err());
            assert_eq!(
                engine.binlog_settings().sync_delay_us(),
                delays[i % delays.len()],
                "a refused SET changed the value"
            );
            let c0 = commits.load(Ordering::Relaxed);
            let w = Instant::now();
            while commits.load(Ordering::Relaxed) == c0 {
                assert!(
                    w.elapsed() < Duration::from_secs(5),
                    "mode {mode}: commits stalled after change {i}"
                );
                std::thread::sleep(Duration::from_micros(200));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Release);
        for u in users {
            u.join().unwrap();
        }
        println!(
            "mode {mode}: {} commits in {:?} with 120 live changes",
            commits.load(Ordering::Relaxed),
            t0.elapsed()
        );
        let acked = acked.lock().clone();
        check_agreement(&engine, &vfs, &acked);
        engine.shutdown().unwrap();
    }
}

/// An fdatasync failure of the redo log (in the FLUSH stage) or of the
/// binlog (SYNC stage) stops the engine: the failing group and every later
/// commit get an error naming the cause, and recovery agrees with the binlog.
#[test]
fn fsync_failure_in_a_stage_stops_the_engine() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let (mut redo_failures, mut binlog_failures) = (0, 0);
        for n in 40..44 {
            let vfs = Arc::new(SimVfs::new());
            let engine = Engine::open(opts(vfs.clone(), mode)).unwrap();
            let t = setup(&engine);
            let mut rng = StdRng::seed_from_u64(3);
            vfs.fail_syncs_after(n);
            let mut err = None;
            for _ in 0..200 {
                if let Err(e) = hot_trx(&engine, t, &mut rng) {
                    err = Some(e);
                    break;
                }
            }
            let e = err.expect("an fdatasync failure must surface");
            let msg = e.to_string();
            assert!(
                msg.contains("fdatasync") && msg.contains("fail-stop"),
                "{msg}"
            );
            assert_eq!(msg.matches("fail-stop").count(), 1, "{msg}");
            match e {
                EngineError::Redo(_) => redo_failures += 1,
                EngineError::Binlog(BinlogError::FailStop { .. }) => binlog_failures += 1,
                other => panic!("unexpected error {other}"),
            }
            // Every later commit is refused too.
            let e2 = hot_trx(&engine, t, &mut rng).unwrap_err();
            assert!(e2.to_string().contains("fail-stop"), "{e2}");
            drop(engine);
            // Recovery on the durable state: tables and binlog agree.
            let crashed = Arc::new(vfs.crash(&mut StdRng::seed_from_u64(n)));
            let engine = Engine::open(opts(crashed.clone(), mode)).unwrap();
            let (want, _) = replay(&crashed);
            assert_eq!(engine.dump()["sbtest1"], want, "mode {mode}");
            engine.shutdown().unwrap();
        }
        println!("mode {mode}: {redo_failures} redo and {binlog_failures} binlog fsync failures");
        if mode == RedoMode::Off {
            // One user, RT0: redo and binlog fsyncs alternate, so both fail.
            assert!(redo_failures > 0 && binlog_failures > 0);
        }
    }
}

/// The redo mode (who flushes the prepares in the FLUSH stage) switches
/// live under group commit; nothing stalls, is lost or reordered.
#[test]
fn redo_mode_switches_under_group_commit() {
    let vfs = Arc::new(SimVfs::new());
    let engine = Engine::open(opts(vfs.clone(), RedoMode::Off)).unwrap();
    let t = setup(&engine);
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let users: Vec<_> = (0..32)
        .map(|u| {
            let (engine, stop, acked) = (engine.clone(), stop.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(100 + u);
                let mut mine = Vec::new();
                while !stop.load(Ordering::Acquire) {
                    if let Some(id) = hot_trx(&engine, t, &mut rng).unwrap() {
                        mine.push(id);
                    }
                }
                acked.lock().push(mine);
            })
        })
        .collect();
    for i in 0..30 {
        let mode = if i % 2 == 0 {
            RedoMode::On
        } else {
            RedoMode::Off
        };
        engine.set_redo_mode(mode).unwrap();
        let before = engine.status().counters.commits;
        let w = Instant::now();
        while engine.status().counters.commits == before {
            assert!(
                w.elapsed() < Duration::from_secs(5),
                "stalled after switch {i}"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    stop.store(true, Ordering::Release);
    for u in users {
        u.join().unwrap();
    }
    let acked = acked.lock().clone();
    check_agreement(&engine, &vfs, &acked);
    engine.shutdown().unwrap();
}

/// A redo log only 4x the log buffer fills constantly: prepared
/// transactions pin the checkpoint until they commit, and their commit marks
/// must still get through (no deadlock), in both modes.
#[test]
fn tiny_redo_log_keeps_committing() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let vfs = Arc::new(SimVfs::new());
        let mut o = opts(vfs.clone(), mode);
        let cap = 4 * o.redo.log_buffer_size as u64;
        o.redo.log_file_size = 4096 + cap / 492 * 512 + 8 * 512;
        o.checkpoint_fill_pct = 30;
        let engine = Engine::open(o).unwrap();
        let t = setup(&engine);
        let acked = users_run(&engine, t, 64, 40);
        let st = engine.status();
        assert!(
            st.lsn > 3 * cap,
            "mode {mode}: the log wrapped less than 3 times (lsn {}, {} checkpoints)",
            st.lsn,
            st.counters.checkpoints
        );
        check_agreement(&engine, &vfs, &acked);
        engine.shutdown().unwrap();
    }
}

#[test]
fn startup_options_are_validated() {
    let vfs = Arc::new(SimVfs::new());
    let mut o = opts(vfs.clone(), RedoMode::Off);
    o.max_binlog_size = 100;
    let e = Engine::open(o)
        .err()
        .expect("max_binlog_size=100 must be refused");
    assert!(e.to_string().contains("max_binlog_size=100"), "{e}");
    let mut o = opts(vfs.clone(), RedoMode::Off);
    o.binlog_group_commit_sync_delay_us = 2_000_000;
    let e = Engine::open(o)
        .err()
        .expect("a 2 s sync delay must be refused");
    assert!(e.to_string().contains("0..=1000000"), "{e}");
    // log_bin=OFF: the settings are kept (and do nothing), no binlog is made.
    let mut o = opts(vfs.clone(), RedoMode::Off);
    o.log_bin = false;
    let engine = Engine::open(o).unwrap();
    assert!(!engine.log_bin());
    engine.set_sync_binlog(5).unwrap();
    assert_eq!(engine.binlog_settings().sync_binlog(), 5);
    setup(&engine);
    assert!(file::read_index(vfs.as_ref()).unwrap().is_none());
    assert_eq!(engine.status().counters.binlog_events, 0);
    engine.shutdown().unwrap();
    assert!(engine.set_sync_binlog(1).is_err(), "shut down");
}

/// On a real directory: commit with log_bin=ON across rotations, drop the
/// engine without a shutdown (no final checkpoint), reopen: every
/// acknowledged commit is there and the tables equal the binlog replay.
#[test]
fn real_directory_reopen_without_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let mk = || {
        let mut o = EngineOptions::new(dir.path());
        o.log_bin = true;
        o.max_binlog_size = 8192;
        o.redo.log_file_size = 4 << 20;
        o.redo.log_buffer_size = 64 << 10;
        o
    };
    let engine = Engine::open(mk()).unwrap();
    let t = setup(&engine);
    let acked = users_run(&engine, t, 8, 25);
    let before = engine.dump();
    drop(engine);
    let engine = Engine::open(mk()).unwrap();
    assert_eq!(engine.dump(), before);
    let vfs = crate::vfs::OsVfs::new(dir.path()).unwrap();
    let (want, xids) = {
        let mut state = State::new();
        let mut xids = Vec::new();
        for ev in file::read_all(&vfs).unwrap() {
            let Ok(RedoRecord::Commit { ops, .. }) = record::decode(&ev.payload) else {
                panic!("not a commit body");
            };
            xids.push(ev.xid);
            for op in ops {
                if let RowOp::Put { id, row, .. } = op {
                    state.insert(id, row);
                }
            }
        }
        (state, xids)
    };
    assert_eq!(engine.dump()["sbtest1"], want);
    assert_eq!(xids.len(), 1 + 8 * 25);
    assert!(acked.iter().flatten().all(|x| xids.contains(x)));
    assert!(
        file::read_index(&vfs).unwrap().unwrap().len() > 1,
        "rotated"
    );
    engine.shutdown().unwrap();
}

/// Seed 000's mechanism: with dedicated log threads the FLUSH-stage leader
/// waits for `log_writer`/`log_flusher` to make the group's prepares
/// durable (no user thread ever fdatasyncs the redo); without them the
/// leader writes and fdatasyncs the redo itself (every redo fdatasync is
/// user-led, about one per group).
#[test]
fn flush_stage_leader_uses_the_redo_mode() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let vfs = Arc::new(SimVfs::new());
        let engine = Engine::open(opts(vfs.clone(), mode)).unwrap();
        let t = setup(&engine);
        let before = engine.status().counters;
        let acked = users_run(&engine, t, 8, 50);
        let c = engine.status().counters;
        let leads = c.redo_flush_leads - before.redo_flush_leads;
        let fsyncs = c.redo_fsyncs - before.redo_fsyncs;
        let groups = c.binlog_groups - before.binlog_groups;
        println!("mode {mode}: {groups} groups, {fsyncs} redo fsyncs, {leads} led by user threads");
        match mode {
            RedoMode::On => assert_eq!(leads, 0, "a user thread fsynced the redo under RT1"),
            RedoMode::Off => {
                assert_eq!(leads, fsyncs, "an RT0 redo fsync not led by a user thread");
                assert!(
                    leads > 0 && leads <= groups,
                    "{leads} leads for {groups} groups"
                );
            }
        }
        check_agreement(&engine, &vfs, &acked);
        engine.shutdown().unwrap();
    }
}
