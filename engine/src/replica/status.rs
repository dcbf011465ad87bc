//! What `SHOW REPLICA STATUS` reports, kept by the replica's threads.

use std::collections::VecDeque;
use std::time::Instant;

use crate::binlog::file::BinlogPos;
use crate::named_locks::NamedMutex;

#[derive(Default)]
struct Inner {
    io_running: bool,
    sql_running: bool,
    received: BinlogPos,
    last_io_error: Option<String>,
    last_sql_error: Option<String>,
    /// (position, when the receiver got it), oldest first, for the lag.
    arrivals: VecDeque<(BinlogPos, Instant)>,
}

/// Shared by the receiver, the applier and the statements.
pub struct Status {
    inner: NamedMutex<Inner>,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            inner: NamedMutex::new("replica.status", Inner::default()),
        }
    }
}

impl Status {
    pub fn set_running(&self, io: bool, sql: bool) {
        let mut s = self.inner.lock();
        s.io_running = io;
        s.sql_running = sql;
        if io {
            s.last_io_error = None;
        }
        if sql {
            s.last_sql_error = None;
        }
    }

    pub fn start_at(&self, at: BinlogPos) {
        let mut s = self.inner.lock();
        s.received = at;
        s.arrivals.clear();
    }

    /// The receiver got events up to `at`.
    pub fn received(&self, at: BinlogPos) {
        let mut s = self.inner.lock();
        s.received = at;
        s.arrivals.push_back((at, Instant::now()));
        if s.arrivals.len() > 100_000 {
            s.arrivals.pop_front();
        }
    }

    pub fn io_stopped(&self, error: Option<String>) {
        let mut s = self.inner.lock();
        s.io_running = false;
        s.last_io_error = error;
    }

    pub fn sql_stopped(&self, error: Option<String>) {
        let mut s = self.inner.lock();
        s.sql_running = false;
        s.last_sql_error = error;
    }

    /// A snapshot; `applied` is the low-water mark.
    pub fn snapshot(&self, applied: BinlogPos) -> Snapshot {
        let mut s = self.inner.lock();
        while s.arrivals.front().is_some_and(|(p, _)| *p <= applied) {
            s.arrivals.pop_front();
        }
        let lag = if !s.sql_running {
            None
        } else {
            Some(
                s.arrivals
                    .front()
                    .map_or(0.0, |(_, t)| t.elapsed().as_secs_f64()),
            )
        };
        Snapshot {
            io_running: s.io_running,
            sql_running: s.sql_running,
            received: s.received,
            applied,
            seconds_behind: lag,
            last_io_error: s.last_io_error.clone(),
            last_sql_error: s.last_sql_error.clone(),
        }
    }
}

/// One moment of the replica's state.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub io_running: bool,
    pub sql_running: bool,
    /// The source position after the last event received.
    pub received: BinlogPos,
    /// Every source transaction up to here is applied.
    pub applied: BinlogPos,
    /// How long the oldest received, unapplied transaction has waited on
    /// the replica (0 when caught up; None when the applier is stopped).
    /// The source's events carry no timestamps, so this is the replica's
    /// own measure of lag, not MySQL's source-clock difference.
    pub seconds_behind: Option<f64>,
    pub last_io_error: Option<String>,
    pub last_sql_error: Option<String>,
}
