//! What the applier's coordinator and its workers share: which dispatched
//! transactions are done, the low-water mark, the logical clock's
//! watermark and the commit-order turnstile.
//!
//! The coordinator gives each transaction a ticket in relay-log (= source
//! commit) order. A worker that finishes ticket `t` marks it done; the
//! low-water mark advances over every done ticket with no undone ticket
//! before it, and with it the source position (for the applied record)
//! and the sequence number (for `LOGICAL_CLOCK`: a transaction whose
//! `last_committed` is at most the watermark's sequence waits for nothing).
//! With `replica_preserve_commit_order`, a worker commits ticket `t` only
//! once every ticket before it is done or has entered its commit (MySQL's
//! commit-order manager: the next one may join the same binlog group).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::binlog::file::BinlogPos;
use crate::named_locks::{NamedCondvar, NamedMutex};

/// A dispatched transaction's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub n: u64,
    pub pos: BinlogPos,
    pub sequence: u64,
}

struct State {
    /// The next ticket the low-water mark waits for.
    next: u64,
    /// Done tickets at or after `next`.
    done: BTreeMap<u64, Ticket>,
    /// Every ticket before `next` is done; the last one's position and
    /// sequence (its file's sequence; 0 after a file change).
    low_water: BinlogPos,
    low_water_seq: u64,
    /// Tickets at or after `next` whose commit has entered its place
    /// (the binlog's FLUSH queue, or visible): see [`Progress::entered`].
    entered: BTreeSet<u64>,
}

pub struct Progress {
    state: NamedMutex<State>,
    /// A ticket is done (the coordinator and the turnstile wait on it).
    changed: NamedCondvar,
}

impl Progress {
    /// Starts after ticket 0 at `low_water`.
    pub fn new(low_water: BinlogPos) -> Progress {
        Progress {
            state: NamedMutex::new(
                "replica.progress",
                State {
                    next: 1,
                    done: BTreeMap::new(),
                    low_water,
                    low_water_seq: 0,
                    entered: BTreeSet::new(),
                },
            ),
            changed: NamedCondvar::new("replica.progress_changed"),
        }
    }

    /// Marks `t` done and advances the low-water mark.
    pub fn done(&self, t: Ticket) {
        let mut s = self.state.lock();
        s.done.insert(t.n, t);
        loop {
            let next = s.next;
            let Some(d) = s.done.remove(&next) else { break };
            s.low_water = d.pos;
            s.low_water_seq = d.sequence;
            s.entered.remove(&next);
            s.next += 1;
        }
        drop(s);
        self.changed.notify_all();
    }

    /// The low-water mark: every transaction up to it is applied.
    pub fn low_water(&self) -> BinlogPos {
        self.state.lock().low_water
    }

    /// Tickets dispatched but not yet below the low-water mark, given the
    /// last dispatched ticket.
    pub fn outstanding(&self, last: u64) -> u64 {
        last + 1 - self.state.lock().next
    }

    /// Waits until every ticket up to `last` is done or `timeout` passes;
    /// true when they are.
    pub fn wait_all(&self, last: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock();
        while s.next <= last {
            let (g, timed_out) = self.changed.wait_until(s, deadline);
            s = g;
            if timed_out {
                return s.next > last;
            }
        }
        true
    }

    /// Waits until the watermark's sequence reaches `last_committed` (its
    /// commit group's predecessors are applied) or `timeout` passes; true
    /// when it did. The caller makes sure the watermark is in the same file
    /// (it drains the workers at a file change).
    pub fn wait_clock(&self, last_committed: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock();
        while s.low_water_seq < last_committed {
            let (g, timed_out) = self.changed.wait_until(s, deadline);
            s = g;
            if timed_out {
                return s.low_water_seq >= last_committed;
            }
        }
        true
    }

    /// True when the watermark's sequence reached `last_committed`.
    pub fn clock_ready(&self, last_committed: u64) -> bool {
        self.state.lock().low_water_seq >= last_committed
    }

    /// The coordinator moved to another source file (every ticket before
    /// is done): its sequences start again, and the ones up to `applied`
    /// are applied already (the transactions before the first one read).
    pub fn new_file(&self, applied: u64) {
        self.state.lock().low_water_seq = applied;
    }

    /// Ticket `n`'s commit has its place in the commit order (it is in the
    /// binlog's FLUSH queue, or visible): the next ticket may commit.
    pub fn entered(&self, n: u64) {
        let mut s = self.state.lock();
        if n >= s.next {
            s.entered.insert(n);
        }
        drop(s);
        self.changed.notify_all();
    }

    /// Commit-order turnstile: waits until every ticket before `n` is done
    /// or has entered its commit (or `stop` says to give up); true when it
    /// is `n`'s turn. Waiting for the predecessors to *enter* rather than
    /// finish lets consecutive tickets share a commit group.
    pub fn wait_turn(&self, n: u64, stop: &dyn Fn() -> bool) -> bool {
        let mut s = self.state.lock();
        loop {
            let ready = (s.next..n).all(|k| s.entered.contains(&k) || s.done.contains_key(&k));
            if ready {
                return true;
            }
            if stop() {
                return false;
            }
            let (g, _) = self
                .changed
                .wait_until(s, Instant::now() + Duration::from_millis(50));
            s = g;
        }
    }
}
