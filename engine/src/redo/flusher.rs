//! The log flusher: fdatasyncs the redo file up to the written lsn. Run by
//! the `log_flusher` thread (RT1) or by an RT0 flush leader; always under
//! the flusher mutex, so a write may proceed while an fdatasync is in flight.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Lsn, RedoError, RedoLog};
use crate::failpoints::{self, Target};
use crate::probe_points;

impl RedoLog {
    /// One fdatasync covering everything written when it started.
    /// Returns `(old, new)` flushed lsns, or None when nothing was pending.
    pub(crate) fn flush_once(&self, by_user: bool) -> Result<Option<(Lsn, Lsn)>, RedoError> {
        // Never after a fail-stop: an fdatasync error is not retried.
        self.check_failed()?;
        let target = self.write_lsn();
        let old = self.flushed_lsn();
        if target <= old {
            return Ok(None);
        }
        let t = Instant::now();
        if let Err(e) = failpoints::sync_data(Target::Redo, &*self.file) {
            return Err(self.fail("fdatasync of", e));
        }
        let ns = t.elapsed().as_nanos() as u64;
        self.flushed_lsn.fetch_max(target, Ordering::AcqRel);
        self.counters.redo_fsyncs.fetch_add(1, Ordering::Relaxed);
        self.counters.redo_fsync_ns.fetch_add(ns, Ordering::Relaxed);
        self.spin.record_flush(ns);
        probe_points::redoctor_log_flush(target, ns, by_user as u32);
        Ok(Some((old, target)))
    }
}

/// Body of the `log_flusher` thread. With innodb_flush_log_at_trx_commit=1
/// it flushes whenever something is written; otherwise about once a second,
/// and at once when an explicit durable wait asks (`flush_request`).
///
/// With every commit flushed, it first writes what is ready (the writer
/// leaves that to it while an fdatasync is in flight), and after an
/// fdatasync it goes on to the next one while anything is ready: under
/// load the log makes one write per fdatasync, and only an idle log hands
/// the first write of a burst to `log_writer`.
pub(crate) fn flusher_loop(log: &RedoLog, stop: &crate::sync::AtomicBool) {
    let mut last = Instant::now();
    let second = Duration::from_secs(1);
    let mut chained = false;
    while !stop.load(Ordering::Acquire) {
        let every_commit = log.flush_at_commit() == 1;
        let due = every_commit || flush_requested(log) || last.elapsed() >= second;
        let catch_up = every_commit && chained && log.writable();
        if due && (log.write_lsn() > log.flushed_lsn() || catch_up) {
            let r = {
                let _g = log.flusher.lock();
                let wrote = if every_commit {
                    log.write_before_flush()
                } else {
                    Ok(())
                };
                wrote.and_then(|()| log.flush_once(false))
            };
            match r {
                Err(_) => {
                    log.flusher_idle_event.notify();
                    return;
                }
                Ok(Some(_)) => {
                    log.fl_notifier_event.notify();
                    chained = true;
                }
                Ok(None) => chained = false,
            }
            last = Instant::now();
            continue;
        }
        chained = false;
        if due {
            last = Instant::now();
        }
        // The writer waits for this while an fdatasync is in flight.
        log.flusher_idle_event.notify();
        let timeout = if every_commit {
            Duration::from_millis(10)
        } else {
            second
                .saturating_sub(last.elapsed())
                .max(Duration::from_millis(1))
        };
        log.flusher_event.wait(timeout, || {
            stop.load(Ordering::Acquire)
                || (log.flush_at_commit() == 1 && log.write_lsn() > log.flushed_lsn())
                || flush_requested(log)
        });
    }
}

impl RedoLog {
    /// The flusher's write of everything ready, under the flusher mutex,
    /// just before its fdatasync (skipped when `log_writer` is writing: the
    /// fdatasync then covers what is written).
    fn write_before_flush(&self) -> Result<(), RedoError> {
        if let Some(mut st) = self.writer.try_lock() {
            if self.write_ready(&mut st, false)?.is_some() {
                drop(st);
                self.wr_notifier_event.notify();
            }
        }
        Ok(())
    }
}

/// An explicit durable wait asked for more than is flushed, and the writer
/// has written something to flush (until it has, its notify wakes the
/// flusher).
fn flush_requested(log: &RedoLog) -> bool {
    let flushed = log.flushed_lsn();
    log.flush_request.load(Ordering::Acquire) > flushed && log.write_lsn() > flushed
}
