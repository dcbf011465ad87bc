//! A replica of a source engine (seed 003): after catch-up the replica's
//! tables equal the source's, with every arbitration design, worker count
//! and commit-order setting; the replica's own binlog (log_replica_updates)
//! holds each source transaction exactly once, in the source's order when
//! commit order is kept; a simulated power cut during apply loses nothing
//! and applies nothing twice; the settings switch live; the counters show
//! the designs' difference.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redoctor_engine::replica::applied::TABLE as APPLIED;
use redoctor_engine::replica::{LocalSource, Replica};
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::{decode_record, Engine, RedoMode, RedoRecord, Row, RowOp};

const TABLES: u32 = 2;
const ROWS: u64 = 200;

fn engine(vfs: Arc<SimVfs>, settings: &[(&str, &str)]) -> Arc<Engine> {
    let mut o = common::sim_opts(vfs, RedoMode::Off, 1, 4 << 20);
    o.lock_wait_timeout = Duration::from_secs(5);
    // Small files: the binlog and the relay log rotate often.
    o.max_binlog_size = 16 << 10;
    o.settings = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let e = Engine::open(o).unwrap();
    e.prepare_sbtest(TABLES, ROWS).unwrap();
    e
}

fn source() -> Arc<Engine> {
    engine(Arc::new(SimVfs::new()), &[("log_bin", "ON")])
}

/// Random sysbench-like writes from `users` threads until `n` commits.
fn load(e: &Arc<Engine>, users: usize, n: usize, seed: u64) {
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let threads: Vec<_> = (0..users)
        .map(|u| {
            let (e, done) = (e.clone(), done.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed * 100 + u as u64);
                while done.load(Ordering::Relaxed) < n {
                    let t = e
                        .table_id(&format!("sbtest{}", rng.gen_range(1..=TABLES)))
                        .unwrap();
                    let mut trx = e.begin();
                    let r = (|| {
                        for _ in 0..rng.gen_range(1..4) {
                            let id = rng.gen_range(1..=ROWS as i64 + 20);
                            match rng.gen_range(0..4) {
                                0 => {
                                    trx.update_k(t, id, 1)?;
                                }
                                1 => {
                                    trx.update_c(t, id, format!("c{}", rng.gen::<u32>()))?;
                                }
                                2 => {
                                    trx.delete(t, id)?;
                                }
                                _ => {
                                    let row = Row {
                                        k: rng.gen(),
                                        c: "new".into(),
                                        pad: "p".into(),
                                    };
                                    if trx.get(t, id)?.is_none() {
                                        trx.insert(t, id, row)?;
                                    }
                                }
                            }
                        }
                        Ok::<_, redoctor_engine::TrxError>(())
                    })();
                    match r {
                        Ok(()) => {
                            if e.commit(trx).is_ok() {
                                done.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(_) => e.rollback(trx),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Every event of `e`'s binlog, in order.
fn binlog_events(e: &Engine) -> Vec<redoctor_engine::DumpEvent> {
    e.binlog_dump(
        redoctor_engine::BinlogPos::default(),
        1 << 20,
        Duration::ZERO,
    )
    .unwrap()
}

type Tables = BTreeMap<String, BTreeMap<i64, Row>>;

fn user_tables(e: &Engine) -> Tables {
    let mut d = e.dump();
    d.remove(APPLIED);
    d
}

fn catch_up(src: &Arc<Engine>, r: &Replica) {
    let end = src.binlog_end().unwrap();
    assert!(
        r.wait_applied(end, Duration::from_secs(60)),
        "replica did not catch up: {:?}",
        r.status()
    );
}

fn check(settings: &[(&str, &str)]) -> (Arc<Engine>, Arc<Engine>, Replica) {
    let src = source();
    let mut all = vec![("log_bin", "ON")];
    all.extend_from_slice(settings);
    let rep_engine = engine(Arc::new(SimVfs::new()), &all);
    assert_eq!(
        user_tables(&src),
        user_tables(&rep_engine),
        "provisioned alike"
    );
    // A backlog first, then the replica starts while the source writes.
    load(&src, 4, 150, 1);
    let r = Replica::new(rep_engine.clone());
    r.start(Box::new(LocalSource(src.clone()))).unwrap();
    load(&src, 4, 150, 2);
    catch_up(&src, &r);
    let s = r.status();
    assert!(s.state.io_running && s.state.sql_running, "{s:?}");
    assert_eq!(s.state.seconds_behind, Some(0.0), "{s:?}");
    assert_eq!(user_tables(&src), user_tables(&rep_engine), "{settings:?}");
    (src, rep_engine, r)
}

/// Each binlog event's row changes by table name (the applied-position
/// table left out), in binlog order.
fn binlog_changes(e: &Engine) -> Vec<Vec<(String, i64, Option<Row>)>> {
    let events = binlog_events(e);
    events
        .into_iter()
        .map(|ev| {
            let RedoRecord::Commit { ops, .. } = decode_record(&ev.payload).unwrap() else {
                panic!("not a transaction")
            };
            let name = |t| e.table_info(t).unwrap().0;
            ops.into_iter()
                .map(|op| match op {
                    RowOp::Put { table, id, row } => (name(table), id, Some(row)),
                    RowOp::Delete { table, id } => (name(table), id, None),
                })
                .filter(|(n, _, _)| n != APPLIED)
                .collect()
        })
        .collect()
}

#[test]
fn replica_equals_source_in_every_design_and_worker_count() {
    for arb in ["lock", "position"] {
        for workers in ["0", "1", "4"] {
            let (src, rep, r) = check(&[
                ("replica_relay_log_arbitration", arb),
                ("replica_parallel_workers", workers),
                ("sync_relay_log", "1"),
            ]);
            let applied = common::status(&rep, "Replica_trx_applied");
            let events = binlog_events(&src).len() as u64;
            assert_eq!(
                applied, events,
                "{arb} {workers}: each source trx applied once"
            );
            r.stop();
        }
    }
}

#[test]
fn replica_binlog_holds_each_source_transaction_once_in_order() {
    let (src, rep, r) = check(&[
        ("replica_parallel_workers", "4"),
        ("replica_preserve_commit_order", "ON"),
    ]);
    r.stop();
    let (s, p) = (binlog_changes(&src), binlog_changes(&rep));
    assert!(s.len() > 200, "{}", s.len());
    assert!(
        s == p,
        "the replica's binlog repeats the source's, event by event"
    );
}

#[test]
fn unordered_workers_converge_too() {
    let (_src, _rep, r) = check(&[
        ("replica_parallel_workers", "4"),
        ("replica_preserve_commit_order", "OFF"),
        ("replica_relay_log_arbitration", "lock"),
    ]);
    r.stop();
}

#[test]
fn arbitration_and_workers_switch_live_and_only_lock_waits_on_the_lock() {
    let src = source();
    let rep = engine(
        Arc::new(SimVfs::new()),
        &[
            ("replica_relay_log_arbitration", "lock"),
            ("replica_parallel_workers", "2"),
        ],
    );
    let r = Replica::new(rep.clone());
    r.start(Box::new(LocalSource(src.clone()))).unwrap();
    load(&src, 8, 600, 3);
    catch_up(&src, &r);
    let lock_waits = common::status(&rep, "Relay_log_lock_waits");
    rep.set_global("replica_relay_log_arbitration", "position")
        .unwrap();
    assert_eq!(r.status().arbitration.name(), "position");
    // The worker count changes under load too: the applier drains its
    // workers and goes on with the new count.
    let writer = {
        let src = src.clone();
        std::thread::spawn(move || load(&src, 8, 600, 4))
    };
    for n in ["0", "3", "1"] {
        std::thread::sleep(Duration::from_millis(30));
        rep.set_global("replica_parallel_workers", n).unwrap();
    }
    writer.join().unwrap();
    catch_up(&src, &r);
    assert_eq!(r.status().workers, 1);
    assert_eq!(
        common::status(&rep, "Relay_log_lock_waits"),
        lock_waits,
        "position mode never waits for the relay log's lock"
    );
    assert_eq!(user_tables(&src), user_tables(&rep));
    r.stop();
}

/// A worker count changed while the applier idles: it retires the old
/// workers (their queues are empty) and applies what comes next with the
/// new count. (The old workers used to wait for the replica to stop, so
/// the applier waited for them for ever: found when this file's tests ran
/// beside another test binary.)
#[test]
fn a_worker_count_change_on_an_idle_replica_goes_on_applying() {
    let src = source();
    let rep = engine(
        Arc::new(SimVfs::new()),
        &[("replica_parallel_workers", "2")],
    );
    let r = Replica::new(rep.clone());
    r.start(Box::new(LocalSource(src.clone()))).unwrap();
    load(&src, 4, 100, 5);
    catch_up(&src, &r);
    for n in ["1", "3", "0", "2"] {
        rep.set_global("replica_parallel_workers", n).unwrap();
        // The idle applier looks at the setting at least every 100 ms.
        std::thread::sleep(Duration::from_millis(300));
        load(&src, 4, 50, 6);
        let end = src.binlog_end().unwrap();
        assert!(
            r.wait_applied(end, Duration::from_secs(10)),
            "after replica_parallel_workers = {n} the replica stopped applying: {:?}",
            r.status()
        );
        assert_eq!(r.status().workers, n.parse::<u32>().unwrap());
    }
    assert_eq!(user_tables(&src), user_tables(&rep));
    r.stop();
}

#[test]
fn power_cut_during_apply_loses_nothing_and_applies_nothing_twice() {
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let src = source();
        load(&src, 4, 400, 10 + seed);
        let vfs = Arc::new(SimVfs::new());
        let settings = [
            ("log_bin", "ON"),
            (
                "replica_parallel_workers",
                if seed % 2 == 0 { "4" } else { "0" },
            ),
            (
                "replica_preserve_commit_order",
                if seed % 3 == 0 { "OFF" } else { "ON" },
            ),
        ];
        let rep = engine(vfs.clone(), &settings);
        let r = Replica::new(rep.clone());
        r.start(Box::new(LocalSource(src.clone()))).unwrap();
        // Cut power somewhere in the middle of applying.
        let events = binlog_events(&src).len() as u64;
        let target = rng.gen_range(10..events * 4 / 5);
        let t0 = std::time::Instant::now();
        while common::status(&rep, "Replica_trx_applied") < target {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "stuck: {:?}",
                r.status()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let crashed = vfs.crash(&mut rng);
        r.stop();
        drop(r);
        let _ = rep.shutdown();
        drop(rep);
        let mut o = common::sim_opts(Arc::new(crashed), RedoMode::Off, 1, 4 << 20);
        o.max_binlog_size = 16 << 10;
        o.settings = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let rep = Engine::open(o).unwrap();
        let before = binlog_events(&rep).len();
        let r = Replica::new(rep.clone());
        r.start(Box::new(LocalSource(src.clone()))).unwrap();
        catch_up(&src, &r);
        r.stop();
        assert_eq!(user_tables(&src), user_tables(&rep), "seed {seed}");
        let total = binlog_events(&src).len();
        let after = binlog_events(&rep).len();
        let applied_now = common::status(&rep, "Replica_trx_applied") as usize;
        assert_eq!(after, total, "seed {seed}: each source trx in the replica's binlog once ({before} survived the cut, {applied_now} applied after)");
        assert_eq!(before + applied_now, total, "seed {seed}");
    }
}
