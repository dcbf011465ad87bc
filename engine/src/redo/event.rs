//! A cheap "something changed" event: `notify` costs one fence and one load
//! when nobody sleeps, which is what a committer pays to poke a log thread.
//!
//! Sleepers block on a futex word inside the event, so the futex address
//! of a wait lies inside it: the owner names an event (or an array of them)
//! with [`crate::named_locks`].
//!
//! The word is a generation (bits 1..) and an ARMED bit (bit 0): a sleeper
//! sets ARMED before its last check of the condition and sleeps on the
//! armed value; a notifier that finds ARMED set clears it and bumps the
//! generation in one compare-and-swap, and only that notifier makes the
//! wake syscall. So a burst of notifies (every committer poking the log
//! writer) costs one wake, and the woken sleepers do not re-take any lock
//! (a mutex and condvar would make every one of them contend for the mutex
//! on its way out, a futex wait or wake each).

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use crate::sync::{fence, AtomicU32, Futex};

/// Bit 0 of the futex word: someone is asleep, or about to be.
const ARMED: u32 = 1;

pub struct Event {
    /// Generation << 1 | ARMED. The generation wraps after 2^31 wakes: a
    /// sleeper stalled between arming and sleeping for that long would
    /// sleep on a recycled value, until its timeout (every wait has one).
    futex: Futex,
    /// Threads inside `wait` past their first check (for reporting).
    sleepers: AtomicU32,
}

impl Default for Event {
    fn default() -> Self {
        Self::new()
    }
}

impl Event {
    pub fn new() -> Self {
        Event {
            futex: Futex::new(0),
            sleepers: AtomicU32::new(0),
        }
    }

    /// Wakes every sleeper; returns whether this call made the wake. The
    /// caller must have published the state change that `ready` observes
    /// before calling this.
    ///
    /// No wakeup is lost: a sleeper sets ARMED and fences (SeqCst) before
    /// its last check of `ready`, and this reads the word after a SeqCst
    /// fence that follows the caller's change. Either this sees ARMED, and
    /// the word the sleeper sleeps on changes before the wake; or the
    /// sleeper armed later, and its check sees the change. When another
    /// notifier clears ARMED first, its wake covers everyone asleep on the
    /// old value.
    pub fn notify(&self) -> bool {
        fence(SeqCst);
        let word = self.futex.word();
        let mut v = word.load(SeqCst);
        loop {
            if v & ARMED == 0 {
                return false;
            }
            match word.compare_exchange_weak(v, v.wrapping_add(2) & !ARMED, SeqCst, SeqCst) {
                Ok(_) => {
                    self.futex.wake_all();
                    return true;
                }
                Err(now) => v = now,
            }
        }
    }

    /// Number of threads asleep (or about to sleep) on this event.
    pub fn sleepers(&self) -> u32 {
        self.sleepers.load(SeqCst)
    }

    /// Sleeps until `ready()` holds or `timeout` passes; returns `ready()`.
    /// May return early (false) on a notify meant for another condition, or
    /// a signal: callers loop, as with a condvar.
    pub fn wait(&self, timeout: Duration, ready: impl Fn() -> bool) -> bool {
        if ready() {
            return true;
        }
        self.sleepers.fetch_add(1, SeqCst);
        let armed = self.futex.word().fetch_or(ARMED, SeqCst) | ARMED;
        // Pairs with the fence in `notify` (a store-buffering pattern: each
        // side writes one location and then reads the other's).
        fence(SeqCst);
        if !ready() {
            self.futex.wait(armed, timeout);
        }
        self.sleepers.fetch_sub(1, SeqCst);
        ready()
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

    #[test]
    fn a_burst_of_notifies_makes_one_wake() {
        let ev = Arc::new(Event::new());
        let e2 = ev.clone();
        // One wait call, whose condition never holds: it arms once.
        let t = std::thread::spawn(move || e2.wait(Duration::from_secs(10), || false));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !ev.notify() {
            assert!(
                std::time::Instant::now() < deadline,
                "the sleeper never armed"
            );
            std::thread::yield_now();
        }
        // ARMED is clear until someone sleeps again: no more wake syscalls.
        for _ in 0..100 {
            assert!(!ev.notify());
        }
        assert!(!t.join().unwrap());
        assert_eq!(ev.sleepers(), 0);
    }

    #[test]
    fn many_sleepers_many_notifiers_none_left_behind() {
        // 4 sleepers wait for a counter to pass their own targets while 4
        // notifiers bump it and notify; most notifies find ARMED cleared
        // by another and make no wake, so a lost wakeup would show as a
        // 10 s stall.
        const ROUNDS: u64 = 5_000;
        let s = Arc::new((Event::new(), std::sync::atomic::AtomicU64::new(0)));
        let sleepers: Vec<_> = (0..4u64)
            .map(|i| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut target = i;
                    while target < 4 * ROUNDS {
                        let t0 = std::time::Instant::now();
                        while !s
                            .0
                            .wait(Duration::from_secs(10), || s.1.load(SeqCst) > target)
                        {
                            assert!(t0.elapsed() < Duration::from_secs(10), "lost wakeup");
                        }
                        target += 97;
                    }
                })
            })
            .collect();
        let notifiers: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        s.1.fetch_add(1, SeqCst);
                        s.0.notify();
                    }
                })
            })
            .collect();
        for h in notifiers.into_iter().chain(sleepers) {
            h.join().unwrap();
        }
        assert_eq!(s.0.sleepers(), 0);
    }
}
