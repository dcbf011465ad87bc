//! A cheap "something changed" event: `notify` costs one fence and one load
//! when nobody sleeps, which is what a committer pays to poke a log thread.
//!
//! Sleepers block on the `std` mutex and condvar inside the event, so the
//! futex address of a wait lies inside it: the owner names an event (or an
//! array of them) with [`crate::named_locks`].

use std::sync::atomic::{fence, AtomicU32, Ordering::SeqCst};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::named_locks::{lock, wait_timeout};

#[derive(Default)]
pub struct Event {
    sleepers: AtomicU32,
    lock: Mutex<()>,
    cond: Condvar,
}

impl Event {
    pub fn new() -> Self {
        Self::default()
    }

    /// Wakes every sleeper. The caller must have published the state change
    /// that `ready` observes before calling this.
    ///
    /// Taking and releasing the lock orders this call after any sleeper's
    /// check of `ready` (a sleeper that checked before the change is already
    /// inside `wait`, whose futex sees the notify's bump); the notify itself
    /// comes after the unlock, so the woken do not wake into a held mutex
    /// (a `std` condvar wakes all of them rather than queueing them on the
    /// mutex as parking_lot's does).
    pub fn notify(&self) -> bool {
        fence(SeqCst);
        if self.sleepers.load(SeqCst) == 0 {
            return false;
        }
        drop(lock(&self.lock));
        self.cond.notify_all();
        true
    }

    /// Number of threads asleep (or about to sleep) on this event.
    pub fn sleepers(&self) -> u32 {
        self.sleepers.load(SeqCst)
    }

    /// Sleeps until `ready()` holds or `timeout` passes; returns `ready()`.
    /// No wakeup is lost: `ready` is re-checked under the lock after the
    /// sleeper count is raised, and `notify` takes the lock when it sees a sleeper.
    pub fn wait(&self, timeout: Duration, ready: impl Fn() -> bool) -> bool {
        if ready() {
            return true;
        }
        self.sleepers.fetch_add(1, SeqCst);
        let g = lock(&self.lock);
        let ok = if ready() {
            drop(g);
            true
        } else {
            // Re-checked outside the lock: only the check before sleeping
            // must be under it.
            drop(wait_timeout(&self.cond, g, timeout).0);
            ready()
        };
        self.sleepers.fetch_sub(1, SeqCst);
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn no_lost_wakeups_under_stress() {
        // A ping-pong of 20k hand-offs with a 10 s timeout: a lost wakeup shows
        // up as a timeout (the test would take far longer and fail).
        let ev = Arc::new((Event::new(), Event::new(), AtomicBool::new(false)));
        let e2 = ev.clone();
        // `wait` may return early (false) on a stale notify from the previous
        // round; only reaching the 10 s deadline means a wakeup was lost.
        fn wait_until(ev: &Event, ready: impl Fn() -> bool) -> bool {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !ev.wait(Duration::from_secs(10), &ready) {
                if std::time::Instant::now() >= deadline {
                    return false;
                }
            }
            true
        }
        let t = std::thread::spawn(move || {
            for _ in 0..20_000 {
                assert!(wait_until(&e2.0, || e2.2.load(SeqCst)));
                e2.2.store(false, SeqCst);
                e2.1.notify();
            }
        });
        for _ in 0..20_000 {
            ev.2.store(true, SeqCst);
            ev.0.notify();
            assert!(wait_until(&ev.1, || !ev.2.load(SeqCst)));
        }
        t.join().unwrap();
    }
}
