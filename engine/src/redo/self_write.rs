//! Idle self-write (`redoctor_log_idle_self_write`, not a MySQL setting; off
//! unless asked for): with dedicated log threads (RT1), a committer that
//! finds the log idle writes and fdatasyncs its own record, as an RT0 leader
//! would, instead of handing it along user → writer → flusher → notifier →
//! user.
//!
//! Why: on a small host one committer at a time pays three or four thread
//! wakeups per commit in RT1 (engine/DESIGN.md, "Single-thread commits"),
//! while under load the dedicated threads keep fdatasyncs back to back. The
//! two modes are already built to overlap (a live switch runs both): every
//! write is made under the writer mutex by [`write_ready`], every fdatasync
//! under the flusher mutex by [`flush_once`], and waiters of either kind
//! are woken for the range that advanced. So a committer may take a turn
//! whenever both mutexes are free, and nothing else changes.
//!
//! "Idle" is decided at append: the record starts at the written lsn
//! (nothing of anyone else's is pending), the log flushes at every commit,
//! and the committer will wait for this record right after
//! ([`append_own`]). Then the writer is not woken; [`wait_own`] tries the
//! writer mutex, writes everything ready, tries the flusher mutex and
//! fdatasyncs. If either is busy (a log thread or another committer is at
//! it) it wakes the writer, which the append skipped, and waits as RT1 does.
//! Under load almost no append finds the log idle, so RT1 is what runs.
//!
//! [`write_ready`]: RedoLog::write_ready
//! [`flush_once`]: RedoLog::flush_once
//! [`append_own`]: RedoLog::append_own
//! [`wait_own`]: RedoLog::wait_own

use std::sync::atomic::Ordering;

use super::{Lsn, RedoError, RedoLog, RedoMode};
use crate::probe_points;

/// A record appended by [`RedoLog::append_own`].
#[derive(Clone, Copy, Debug)]
pub struct OwnRecord {
    pub start: Lsn,
    pub end: Lsn,
    /// The writer was left asleep: the committer writes this record itself.
    self_write: bool,
}

impl RedoLog {
    /// `redoctor_log_idle_self_write`.
    pub fn idle_self_write(&self) -> bool {
        self.idle_self_write.load(Ordering::Relaxed)
    }

    pub fn set_idle_self_write(&self, on: bool) {
        self.idle_self_write.store(on, Ordering::Relaxed);
    }

    /// Whether a record starting at `start` may be left to its committer:
    /// the setting is on, every commit is flushed, and nothing below
    /// `start` is waiting to be written.
    pub(crate) fn idle_for(&self, start: Lsn) -> bool {
        self.idle_self_write() && self.flush_at_commit() == 1 && self.write_lsn() == start
    }

    /// [`append`](Self::append) for a committer that calls
    /// [`wait_own`](Self::wait_own) on the record right after.
    pub fn append_own(&self, body: &[u8]) -> Result<OwnRecord, RedoError> {
        let (start, end, self_write) = self.append_inner(body, true, true)?;
        Ok(OwnRecord {
            start,
            end,
            self_write,
        })
    }

    /// [`wait_for_commit`](Self::wait_for_commit) for a record from
    /// [`append_own`](Self::append_own): writes and flushes it in this
    /// thread when the append found the log idle and the log's mutexes are
    /// still free, else wakes the writer (its append did not) and waits.
    pub fn wait_own(&self, rec: &OwnRecord) -> Result<(), RedoError> {
        if rec.self_write {
            if self.mode() == RedoMode::On && self.write_and_flush_own(rec.end)? {
                return Ok(());
            }
            self.writer_event.notify();
        }
        self.wait_for_commit(rec.end)
    }

    /// Writes and fdatasyncs up to `lsn` in the calling thread if the writer
    /// and flusher mutexes are free; true once `lsn` is durable.
    fn write_and_flush_own(&self, lsn: Lsn) -> Result<bool, RedoError> {
        if self.write_lsn() < lsn {
            let Some(mut st) = self.writer.try_lock() else {
                return Ok(false);
            };
            let wrote = self.write_ready(&mut st, true)?;
            drop(st);
            if let Some((from, to)) = wrote {
                self.counters
                    .redo_self_writes
                    .fetch_add(1, Ordering::Relaxed);
                self.write_waits.notify_range(from, to);
            }
            if self.write_lsn() < lsn {
                return Ok(false); // log full: the writer thread handles it
            }
        }
        if self.flushed_lsn() < lsn {
            let Some(g) = self.flusher.try_lock() else {
                self.request_flush(lsn);
                return Ok(false);
            };
            let done = if self.flushed_lsn() < lsn {
                self.flush_once(true)?
            } else {
                None
            };
            drop(g);
            // `log_writer` waits for the flusher mutex with every commit flushed.
            self.flusher_idle_event.notify();
            if let Some((old, new)) = done {
                self.counters
                    .redo_self_flushes
                    .fetch_add(1, Ordering::Relaxed);
                let woke = self.flush_waits.notify_range(old, new);
                probe_points::redoctor_flush_notified(old, new, woke as u64);
            }
        }
        Ok(self.flushed_lsn() >= lsn)
    }
}
