//! Wait slots and the notifier threads.
//!
//! Waiters sleep on one of N slots chosen by the log block of the lsn they
//! wait for (MySQL's `flush_events` / `write_events`), so advancing the log
//! wakes only the waiters in the blocks it passed, not everyone.
//! `log_wr_notify` and `log_fl_notify` (dedicated mode) do the waking so the
//! writer and flusher can start their next I/O at once.

use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

use super::event::Event;
use super::log_file::block_of;
use super::{Lsn, RedoLog};
use crate::named_locks::{self, Registration};
use crate::probe_points;

pub struct WaitSlots {
    // Unregistered before the slots are freed (fields drop in order).
    _name: Registration<'static>,
    slots: Box<[Event]>,
    mask: u64,
}

impl WaitSlots {
    /// `n` slots, registered together as one named range.
    pub fn new(name: &str, n: usize) -> Self {
        assert!(n.is_power_of_two());
        let slots: Box<[Event]> = (0..n).map(|_| Event::new()).collect();
        WaitSlots {
            _name: named_locks::register(name, &*slots),
            slots,
            mask: n as u64 - 1,
        }
    }

    fn slot(&self, lsn: Lsn) -> &Event {
        // The waiter for `lsn` needs the byte at lsn - 1.
        &self.slots[(block_of(lsn.saturating_sub(1)) & self.mask) as usize]
    }

    /// Sleeps on `lsn`'s slot until `ready()` or `timeout`.
    pub fn wait(&self, lsn: Lsn, timeout: Duration, ready: impl Fn() -> bool) -> bool {
        self.slot(lsn).wait(timeout, ready)
    }

    /// Wakes the waiters for lsns in `(old, new]`; returns how many slots had sleepers.
    pub fn notify_range(&self, old: Lsn, new: Lsn) -> u32 {
        if new <= old {
            return 0;
        }
        fence(Ordering::SeqCst);
        let (b0, b1) = (block_of(old), block_of(new - 1));
        let n = self.slots.len() as u64;
        let mut woke = 0;
        if b1 - b0 + 1 >= n {
            return self.notify_all();
        }
        for b in b0..=b1 {
            let s = &self.slots[(b & self.mask) as usize];
            let sleepers = s.sleepers();
            if sleepers > 0 && s.notify() {
                woke += sleepers;
            }
        }
        woke
    }

    /// Wakes the sleepers waiting for exactly `lsn` (the owner of a record).
    pub fn notify_lsn(&self, lsn: Lsn) {
        self.slot(lsn).notify();
    }

    pub fn notify_all(&self) -> u32 {
        let mut woke = 0;
        for s in self.slots.iter() {
            let n = s.sleepers();
            if n > 0 && s.notify() {
                woke += n;
            }
        }
        woke
    }
}

/// Body of `log_wr_notify`: wakes waiters as `write_lsn` advances.
pub(crate) fn write_notifier_loop(log: &RedoLog, stop: &crate::sync::AtomicBool) {
    let mut last = log.write_lsn();
    while !stop.load(Ordering::Acquire) {
        log.wr_notifier_event.wait(Duration::from_millis(10), || {
            log.write_lsn() > last || stop.load(Ordering::Acquire)
        });
        let now = log.write_lsn();
        if now > last {
            log.write_waits.notify_range(last, now);
            last = now;
        }
    }
}

/// Body of `log_fl_notify`: wakes waiters as `flushed_lsn` advances.
pub(crate) fn flush_notifier_loop(log: &RedoLog, stop: &crate::sync::AtomicBool) {
    let mut last = log.flushed_lsn();
    while !stop.load(Ordering::Acquire) {
        log.fl_notifier_event.wait(Duration::from_millis(10), || {
            log.flushed_lsn() > last || stop.load(Ordering::Acquire)
        });
        let now = log.flushed_lsn();
        if now > last {
            let woke = log.flush_waits.notify_range(last, now);
            probe_points::redoctor_flush_notified(last, now, woke as u64);
            last = now;
        }
    }
}
