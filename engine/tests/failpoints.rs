//! Fault injection on real files: every failpoint of `redoctor_engine::failpoints`
//! fires on an engine whose data directory is a temporary directory, and
//! the engine fails stop with an error naming the file, the operation and
//! the errno; recovery afterwards (failpoints off) keeps every
//! acknowledged commit and reports what a torn write left behind.
//!
//! Needs the feature: `cargo test --release -p redoctor-engine --features
//! failpoints --test failpoints`. Each test holds a `fail::FailScenario`
//! until it ends, which serializes the tests (failpoints are global to the
//! process); it switches its point off with `fail::remove`.

use std::path::Path;
use std::sync::Arc;

use fail::FailScenario;
use redoctor_engine::failpoints::FAILPOINTS;
use redoctor_engine::{BinlogError, Row, StopReason};
use redoctor_engine::{Engine, EngineError, EngineOptions, RedoMode, RedoOptions};

/// Redo bytes per 512-byte block: a 16-byte header and a 4-byte trailer
/// around the payload (the on-disk layout in `engine/DESIGN.md`).
const PAYLOAD: usize = 512 - 16 - 4;

fn block_of(lsn: u64) -> u64 {
    lsn / PAYLOAD as u64
}

const EIO: &str = "Input/output error (os error 5)";
const ENOSPC: &str = "No space left on device (os error 28)";
/// Rows per test transaction: its redo record and binlog event span about
/// ten 512-byte sectors, so a torn write of it always keeps part of it.
const ROWS: i64 = 20;

fn opts(dir: &Path, mode: RedoMode, log_bin: bool) -> EngineOptions {
    let mut o = EngineOptions::new(dir);
    o.redo = RedoOptions {
        mode,
        log_buffer_size: 64 << 10,
        log_file_size: 1 << 20,
        link_slots: 1 << 15,
        wait_slots: 64,
        ..RedoOptions::default()
    };
    o.log_bin = log_bin;
    o.sync_binlog = 1;
    o
}

/// Inserts ids `first..first + ROWS` into sbtest1 in one transaction.
fn insert(engine: &Engine, first: i64) -> Result<u64, EngineError> {
    let table = engine.table_id("sbtest1").unwrap();
    let mut t = engine.begin();
    for id in first..first + ROWS {
        t.insert(
            table,
            id,
            Row {
                k: id as i32,
                c: format!("{id:0>119}"),
                pad: "p".repeat(59),
            },
        )?;
    }
    engine.commit(t)
}

/// Opens `dir` and commits 5 transactions (ids 1000..1100); returns the
/// engine and the acknowledged first ids.
fn open_with_acks(dir: &Path, mode: RedoMode, log_bin: bool) -> (Arc<Engine>, Vec<i64>) {
    let engine = Engine::open(opts(dir, mode, log_bin)).unwrap();
    engine.prepare_sbtest(1, 10).unwrap();
    let acked: Vec<i64> = (0..5).map(|i| 1000 + i * ROWS).collect();
    for &first in &acked {
        insert(&engine, first).unwrap();
    }
    (engine, acked)
}

/// Every row of every acknowledged transaction is in the recovered tables;
/// `what` (the failpoint and redo mode) names the case in a failure.
fn assert_acked_present(engine: &Engine, acked: &[i64], what: &str) {
    let rows = &engine.dump()["sbtest1"];
    assert!(!acked.is_empty());
    for &first in acked {
        for id in first..first + ROWS {
            assert!(rows.contains_key(&id), "{what}: acknowledged row {id} lost");
        }
    }
}

fn assert_one_fail_stop(msg: &str) {
    assert!(
        msg.contains("the engine stopped accepting commits"),
        "{msg}"
    );
    assert_eq!(msg.matches("fail-stop").count(), 1, "{msg}");
}

/// What a failpoint does to what: the file its error names, the operation
/// and the errno.
struct Expect {
    path: String,
    op: &'static str,
    errno: &'static str,
}

fn expect(dir: &Path, point: &str) -> Expect {
    let file = match point.split("::").next().unwrap() {
        "redo" => "redo.log",
        "binlog" => "binlog.000001",
        "checkpoint" => "checkpoint.tmp",
        other => panic!("unknown target {other}"),
    };
    Expect {
        path: format!("{}/{file}", dir.display()),
        op: if point.contains("::fsync::") {
            "fdatasync of"
        } else {
            "write to"
        },
        errno: if point.ends_with("::enospc") {
            ENOSPC
        } else {
            EIO
        },
    }
}

/// Each failpoint, switched on with `return`, stops the engine with an
/// error naming its file, operation and errno (and, for ENOSPC, the fix);
/// every later commit is refused; after the failpoint is off the directory
/// recovers with every acknowledged commit, and a torn write is reported
/// as dropped bytes.
#[test]
fn every_failpoint_fails_stop_and_recovery_keeps_the_acks() {
    // page::write::short needs tables on pages and kills or panics the
    // engine: engine/cli/tests/failpoints.rs and the soak test it.
    for point in FAILPOINTS
        .iter()
        .map(|p| p.name)
        .filter(|n| !n.starts_with("page::") && !n.starts_with("relay::"))
    {
        for mode in [RedoMode::Off, RedoMode::On] {
            let scenario = FailScenario::setup();
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            let log_bin = point.starts_with("binlog");
            let (engine, acked) = open_with_acks(dir, mode, log_bin);
            let want = expect(dir, point);
            fail::cfg(point, "return").unwrap();

            let err = if point.starts_with("checkpoint") {
                let e = engine.checkpoint().unwrap_err();
                assert!(matches!(e, EngineError::Checkpoint(_)), "{point}: {e}");
                e
            } else {
                insert(&engine, 5000).unwrap_err()
            };
            let msg = err.to_string();
            let cause = format!("{} {} failed: {}", want.op, want.path, want.errno);
            assert!(
                msg.contains(&cause),
                "{point} ({mode}): want `{cause}` in\n{msg}"
            );
            assert_one_fail_stop(&msg);
            if want.errno == ENOSPC {
                let fix = format!("Free space on the file system that holds {}", dir.display());
                assert!(msg.contains(&fix), "{point}: no fix in\n{msg}");
            }
            match (point.split("::").next().unwrap(), &err) {
                ("redo", EngineError::Redo(_)) => {}
                ("binlog", EngineError::Binlog(BinlogError::FailStop { .. })) => {}
                ("checkpoint", EngineError::Checkpoint(_)) => {}
                (_, e) => panic!("{point}: unexpected error kind {e:?}"),
            }
            // Every later commit is refused, with the same cause.
            let later = insert(&engine, 6000).unwrap_err().to_string();
            assert!(later.contains(&cause), "{point}: later commit: {later}");
            let st = engine.status();
            assert!(
                st.fail_stop
                    .as_deref()
                    .is_some_and(|f| f.contains(&want.path)),
                "{point}: status fail_stop {:?}",
                st.fail_stop
            );
            assert!(engine.shutdown().is_err(), "{point}: shutdown hid the stop");
            drop(engine);
            fail::remove(point);

            let engine = Engine::open(opts(dir, mode, log_bin)).unwrap();
            assert_acked_present(&engine, &acked, &format!("{point} ({mode})"));
            let report = engine.recovery_report();
            match point {
                "redo::write::short" => {
                    assert!(report.truncated_bytes > 0, "{point}: {report:?}")
                }
                "binlog::write::short" => {
                    let b = report.binlog.as_ref().unwrap();
                    assert!(b.truncated_bytes > 0 && b.torn_tail.is_some(), "{b:?}");
                }
                _ => assert_eq!(report.dropped_bytes(), 0, "{point}: {report:?}"),
            }
            // The recovered engine works.
            insert(&engine, 7000).unwrap();
            engine.shutdown().unwrap();
            scenario.teardown();
        }
    }
}

/// An fdatasync error of the redo log is never retried: with the point
/// set to fail once, a retry would succeed and acknowledge; instead the
/// engine stays stopped and no fdatasync succeeds after it.
#[test]
fn redo_fsync_error_is_not_retried() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let scenario = FailScenario::setup();
        let tmp = tempfile::tempdir().unwrap();
        let (engine, acked) = open_with_acks(tmp.path(), mode, false);
        let before = engine.status().counters;
        fail::cfg("redo::fsync::eio", "1*return").unwrap();
        let e = insert(&engine, 5000).unwrap_err().to_string();
        assert!(e.contains("fdatasync of") && e.contains(EIO), "{e}");
        for id in [6000, 7000] {
            let e = insert(&engine, id).unwrap_err().to_string();
            assert!(e.contains("redo.log"), "{e}");
        }
        assert!(engine.checkpoint().is_err());
        assert!(engine.shutdown().is_err());
        let after = engine.status().counters;
        assert_eq!(
            after.redo_fsyncs, before.redo_fsyncs,
            "an fdatasync was retried"
        );
        assert_eq!(after.commits, before.commits, "a commit was acknowledged");
        assert_eq!(after.checkpoints, before.checkpoints);
        drop(engine);
        fail::remove("redo::fsync::eio");
        let engine = Engine::open(opts(tmp.path(), mode, false)).unwrap();
        assert_acked_present(&engine, &acked, &format!("redo::fsync::eio once ({mode})"));
        engine.shutdown().unwrap();
        scenario.teardown();
    }
}

/// After a binlog fdatasync error nothing syncs the binlog again: not the
/// SYNC stage, not a checkpoint (which would publish an image of commits
/// whose binlog events may not be durable), not the shutdown.
#[test]
fn binlog_fsync_error_is_not_retried_by_a_checkpoint() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let scenario = FailScenario::setup();
        let tmp = tempfile::tempdir().unwrap();
        let (engine, acked) = open_with_acks(tmp.path(), mode, true);
        let before = engine.status().counters;
        fail::cfg("binlog::fsync::eio", "1*return").unwrap();
        let e = insert(&engine, 5000).unwrap_err();
        assert!(
            matches!(e, EngineError::Binlog(BinlogError::FailStop { .. })),
            "{e}"
        );
        assert!(insert(&engine, 6000).is_err());
        let cp = engine.checkpoint().unwrap_err().to_string();
        assert!(cp.contains("binlog.000001") && cp.contains(EIO), "{cp}");
        assert!(engine.shutdown().is_err());
        let after = engine.status().counters;
        assert_eq!(
            after.binlog_fsyncs, before.binlog_fsyncs,
            "binlog fsync retried"
        );
        assert_eq!(
            after.checkpoints, before.checkpoints,
            "checkpoint after the stop"
        );
        assert_eq!(after.commits, before.commits);
        drop(engine);
        fail::remove("binlog::fsync::eio");
        let engine = Engine::open(opts(tmp.path(), mode, true)).unwrap();
        assert_acked_present(
            &engine,
            &acked,
            &format!("binlog::fsync::eio once ({mode})"),
        );
        // The failed group's event reached the file (only its fdatasync
        // failed) and its prepare is durable: the binlog commits it, as
        // MySQL does for a commit whose outcome the client never learned.
        assert!(engine.dump()["sbtest1"].contains_key(&5000));
        engine.shutdown().unwrap();
        scenario.teardown();
    }
}

/// A torn redo write (the first half of its sectors) is cut at the last
/// valid record: recovery stops exactly where the torn transaction's record
/// starts, reports exactly the bytes of it that reached the file, and the
/// log goes on from there through another crash.
#[test]
fn torn_redo_write_is_truncated_at_the_last_valid_record() {
    for mode in [RedoMode::Off, RedoMode::On] {
        let scenario = FailScenario::setup();
        let tmp = tempfile::tempdir().unwrap();
        let (engine, mut acked) = open_with_acks(tmp.path(), mode, false);
        let start = engine.redo().current_lsn();
        assert_eq!(engine.redo().flushed_lsn(), start);
        fail::cfg("redo::write::short", "return").unwrap();
        let e = insert(&engine, 5000).unwrap_err().to_string();
        assert!(e.contains("write to") && e.contains(EIO), "{e}");
        let end = engine.redo().current_lsn();
        // The record's one write touched n blocks (a block is a sector);
        // the first ceil(n/2) reached the file.
        let (b0, n) = (block_of(start), block_of(end - 1) - block_of(start) + 1);
        assert!(n >= 4, "the test record spans only {n} blocks");
        let kept_end = (b0 + n.div_ceil(2)) * PAYLOAD as u64;
        drop(engine);
        fail::remove("redo::write::short");

        let engine = Engine::open(opts(tmp.path(), mode, false)).unwrap();
        let r = engine.recovery_report();
        assert_eq!(r.redo_end_lsn, start, "{r:?}");
        assert_eq!(r.stop, StopReason::TornRecord { lsn: start });
        assert_eq!(r.truncated_bytes, kept_end - start);
        let summary = r.tail_summary();
        assert!(
            summary.contains(&format!("dropped {} bytes", kept_end - start)),
            "{summary}"
        );
        assert_acked_present(&engine, &acked, &format!("redo::write::short ({mode})"));
        assert!(!engine.dump()["sbtest1"].contains_key(&5000));
        // The next life writes over the torn tail; crash it too.
        insert(&engine, 8000).unwrap();
        acked.push(8000);
        drop(engine);
        let engine = Engine::open(opts(tmp.path(), mode, false)).unwrap();
        assert_eq!(engine.recovery_report().stop, StopReason::CleanEnd);
        assert_acked_present(
            &engine,
            &acked,
            &format!("redo::write::short, second crash ({mode})"),
        );
        engine.shutdown().unwrap();
        scenario.teardown();
    }
}

/// A failed checkpoint stops commits and leaves the previous image in
/// charge: recovery starts from it and replays the log.
#[test]
fn failed_checkpoint_keeps_the_previous_image() {
    for point in ["checkpoint::write::enospc", "checkpoint::fsync::eio"] {
        let scenario = FailScenario::setup();
        let tmp = tempfile::tempdir().unwrap();
        let (engine, acked) = open_with_acks(tmp.path(), RedoMode::On, false);
        let published = engine.redo().checkpoint_lsn();
        fail::cfg(point, "return").unwrap();
        assert!(engine.checkpoint().is_err());
        assert_eq!(engine.redo().checkpoint_lsn(), published);
        drop(engine);
        fail::remove(point);
        let engine = Engine::open(opts(tmp.path(), RedoMode::On, false)).unwrap();
        let r = engine.recovery_report();
        assert_eq!(r.checkpoint_lsn, published, "{point}: {r:?}");
        assert!(r.commits_replayed >= acked.len() as u64, "{point}: {r:?}");
        assert_acked_present(&engine, &acked, point);
        engine.shutdown().unwrap();
        scenario.teardown();
    }
}

/// A replica's relay-log failpoints: the receiver stops with an error
/// naming the relay file, the operation and the errno; the applier stays
/// up; once the failpoint is off, START REPLICA fetches again from the
/// applied position and the replica ends equal to the source, nothing
/// applied twice.
#[test]
fn relay_failpoints_stop_the_receiver_and_a_restart_catches_up() {
    use redoctor_engine::replica::applied::TABLE as APPLIED;
    use redoctor_engine::replica::{LocalSource, Replica};
    use std::time::{Duration, Instant};
    for point in FAILPOINTS
        .iter()
        .map(|p| p.name)
        .filter(|n| n.starts_with("relay::"))
    {
        let scenario = FailScenario::setup();
        let tmp = tempfile::tempdir().unwrap();
        let (src, _) = open_with_acks(&tmp.path().join("src"), RedoMode::Off, true);
        let rep = Engine::open(opts(&tmp.path().join("rep"), RedoMode::Off, true)).unwrap();
        rep.prepare_sbtest(1, 10).unwrap();
        rep.set_global("sync_relay_log", "1").unwrap();
        let r = Replica::new(rep.clone());
        fail::cfg(point, "return").unwrap();
        r.start(Box::new(LocalSource(src.clone()))).unwrap();
        let t = Instant::now();
        let s = loop {
            let s = r.status();
            if !s.state.io_running {
                break s;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "{point}: {s:?}");
            std::thread::sleep(Duration::from_millis(5));
        };
        let err = s.state.last_io_error.clone().unwrap_or_default();
        let op = if point.contains("::fsync::") {
            "fdatasync of"
        } else {
            "write to"
        };
        assert!(
            err.contains(op) && err.contains("relay.000001") && err.contains(EIO),
            "{point}: {err}"
        );
        assert!(err.contains("START REPLICA"), "{point}: no fix in {err}");
        assert!(s.state.sql_running, "{point}: the applier stays up");
        fail::remove(point);
        r.stop();
        r.start(Box::new(LocalSource(src.clone()))).unwrap();
        let end = src.binlog_end().unwrap();
        assert!(
            r.wait_applied(end, Duration::from_secs(20)),
            "{point}: {:?}",
            r.status()
        );
        let strip = |e: &Engine| {
            let mut d = e.dump();
            d.remove(APPLIED);
            d
        };
        assert_eq!(strip(&src), strip(&rep), "{point}");
        r.stop();
        drop(r);
        rep.shutdown().unwrap();
        src.shutdown().unwrap();
        scenario.teardown();
    }
}
