//! The log buffer under many concurrent appenders: no byte lost or
//! duplicated, each thread's records in its own order, in both redo modes
//! and with a tiny buffer so the ring wraps thousands of times.

use std::sync::Arc;
use std::time::Duration;

use crate::counters::{CounterValues, Counters};
use crate::recovery;
use crate::redo::log_file::{self, StopReason};
use crate::redo::{RedoLog, RedoMode, RedoOptions};
use crate::vfs::{SimVfs, Vfs};

fn opts(mode: RedoMode) -> RedoOptions {
    RedoOptions {
        mode,
        log_buffer_size: 16 << 10,
        log_file_size: 32 << 20,
        link_slots: 4096,
        wait_slots: 64,
        ..RedoOptions::default()
    }
}

fn run(mode: RedoMode, threads: u32, per_thread: u32) {
    run_with(mode, threads, per_thread, 7, Duration::ZERO, Duration::ZERO);
}

/// `threads` append `per_thread` records each and wait for every
/// `wait_every`-th to be durable, on a device whose fdatasync takes
/// `sync_delay`, each thread pausing up to `think` (varying) after each
/// durable wait; checks the log and returns the counters.
fn run_with(
    mode: RedoMode,
    threads: u32,
    per_thread: u32,
    wait_every: u32,
    sync_delay: Duration,
    think: Duration,
) -> CounterValues {
    let vfs = Arc::new(SimVfs::new());
    vfs.set_sync_delay(sync_delay);
    let o = opts(mode);
    let rec = recovery::recover(vfs.as_ref(), &o).unwrap();
    let layout = rec.resume.layout;
    let counters = Arc::new(Counters::default());
    let log = RedoLog::start(&o, rec.resume, counters.clone()).unwrap();
    let mut hs = vec![];
    for t in 0..threads {
        let log = log.clone();
        hs.push(std::thread::spawn(move || {
            for seq in 0..per_thread {
                // Varying sizes, some larger than a block.
                let len = 12 + ((t * 31 + seq * 17) % 700) as usize;
                let mut body = vec![(seq % 251) as u8; len];
                body[0..4].copy_from_slice(&t.to_le_bytes());
                body[4..8].copy_from_slice(&seq.to_le_bytes());
                let (s, e) = log.append(&body).unwrap();
                log.mark_closed(s, e);
                if seq % wait_every == 0 {
                    log.wait_for_commit(e).unwrap();
                    // Spread the arrivals over the next fdatasync.
                    let k = (t * 7 + seq * 13) % 10;
                    std::thread::sleep(think * k / 10);
                }
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    let end = log.flush_all().unwrap();
    log.shutdown().unwrap();

    let file = vfs.open(recovery::REDO_FILE, false).unwrap();
    let mut next = vec![0u32; threads as usize];
    let mut last_end = 0;
    let report = log_file::scan(file.as_ref(), layout, 0, 1 << 20, |lsn, body| {
        assert!(lsn >= last_end, "records out of lsn order");
        last_end = lsn + 8 + body.len() as u64;
        let t = u32::from_le_bytes(body[0..4].try_into().unwrap()) as usize;
        let seq = u32::from_le_bytes(body[4..8].try_into().unwrap());
        // Each thread's records appear exactly once and in its own order.
        if seq != next[t] {
            return Err(format!("thread {t}: expected seq {} got {seq}", next[t]));
        }
        let len = 12 + ((t as u32 * 31 + seq * 17) % 700) as usize;
        if body.len() != len || body[8..].iter().any(|&b| b != (seq % 251) as u8) {
            return Err(format!("thread {t} seq {seq}: body damaged"));
        }
        next[t] += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(report.stop, StopReason::CleanEnd, "{report:?}");
    assert_eq!(report.end_lsn, end);
    assert_eq!(report.records, (threads * per_thread) as u64);
    assert!(next.iter().all(|&n| n == per_thread));
    counters.values()
}

#[test]
fn concurrent_appends_rt0() {
    run(RedoMode::Off, 16, 2000);
}

#[test]
fn concurrent_appends_rt1() {
    run(RedoMode::On, 16, 2000);
}

/// RT0 on a slow device: a committer that finds an fdatasync in flight
/// leaves its record to the next flush leader, who writes everything ready
/// in one write. So the log is written about once per fdatasync, not once
/// per commit, and no record is lost or reordered (checked by `run_with`).
#[test]
fn rt0_writes_once_per_flush_not_per_commit() {
    let (threads, per_thread) = (8, 150);
    let c = run_with(
        RedoMode::Off,
        threads,
        per_thread,
        1,
        Duration::from_millis(1),
        Duration::ZERO,
    );
    let commits = (threads * per_thread) as u64;
    assert!(
        c.redo_writes_deferred >= commits / 2,
        "only {} of {commits} commits left their write to a flush leader: {c:?}",
        c.redo_writes_deferred
    );
    assert!(
        c.redo_writes <= 2 * c.redo_fsyncs,
        "{} writes for {} fdatasyncs ({commits} commits): committers wrote \
         their own records while a flush was in flight: {c:?}",
        c.redo_writes,
        c.redo_fsyncs
    );
}

/// RT1 on a slow device: while an fdatasync is in flight `log_writer`
/// leaves the writing to `log_flusher`, which writes everything ready
/// just before its next fdatasync. So the log is written about once per
/// fdatasync, not once per wakeup of the writer, and no record is lost or
/// reordered (checked by `run_with`).
#[test]
fn rt1_writes_once_per_flush_not_per_wakeup() {
    let (threads, per_thread) = (8, 150);
    // Committers that arrive while an fdatasync is in flight, spread over it.
    let c = run_with(
        RedoMode::On,
        threads,
        per_thread,
        1,
        Duration::from_millis(2),
        Duration::from_millis(2),
    );
    assert!(
        c.redo_writes <= 2 * c.redo_fsyncs,
        "{} writes for {} fdatasyncs ({} commits): the writer wrote while a \
         flush was in flight: {c:?}",
        c.redo_writes,
        c.redo_fsyncs,
        threads * per_thread
    );
}
