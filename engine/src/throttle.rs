//! Transaction throttle (`innodb_max_active_transactions`, seed 004).
//!
//! Before a transaction starts, the number of transactions in the system
//! (admitted and not yet finished) is compared with the limit. Below it, the
//! transaction starts at once; at or over it, the transaction joins a FIFO
//! queue. Each finishing transaction admits the first waiter (one admission
//! per finish while the system is at the limit), so waiters start in arrival
//! order. A waiter that is not admitted within
//! `innodb_max_active_transactions_wait_timeout` leaves the queue and gets
//! [`ThrottleTimeout`] instead of hanging. Raising the limit (or setting 0 =
//! unlimited) admits as many waiters as the new limit allows at once;
//! lowering it lets the running transactions finish and admits nobody until
//! the count is below the new limit.
//!
//! `active` is one atomic; every admission is a compare-and-swap below the
//! limit (so the limit is never exceeded); finishes decrement it without a
//! lock and take the queue mutex only if someone is queued. An
//! enqueuing waiter bumps `queued` and re-checks `active` under the mutex,
//! and a finisher decrements `active` before reading `queued` (all
//! sequentially consistent, each store-then-load pair separated by a SeqCst
//! fence), so one of them always sees the other. The concurrency gate uses
//! the same protocol; both are model-checked with loom (`src/tests/loom_gate.rs`,
//! `tests/loom_throttle.rs`).
//!
//! Names (see [`crate::named_locks`]): the queue mutex is `throttle`; a
//! waiter parks on its thread's own condition variable, `throttle.wait`.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sync::{fence, thread_local, AtomicBool, AtomicU64, Mutex, NamedCondvar};

/// A transaction waited longer than the throttle's timeout to start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "transaction not started: {active} transactions active (innodb_max_active_transactions={limit}) \
     and none finished within {waited_ms} ms; retry later, raise innodb_max_active_transactions \
     or innodb_max_active_transactions_wait_timeout"
)]
pub struct ThrottleTimeout {
    pub limit: u64,
    pub active: u64,
    pub waited_ms: u64,
}

/// Throttle counters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ThrottleStats {
    /// Transactions admitted (started).
    pub admitted: u64,
    /// Transactions that had to queue before starting.
    pub waits: u64,
    /// Waiters that gave up with [`ThrottleTimeout`].
    pub timeouts: u64,
    /// Transactions admitted and not finished.
    pub active: u64,
    /// Waiters queued now.
    pub queued: u64,
}

struct Waiter {
    ticket: u64,
    granted: AtomicBool,
    /// The waiting thread's condvar, paired with the queue mutex.
    wake: Arc<NamedCondvar>,
}

thread_local! {
    /// Registered on a thread's first throttle wait.
    static THROTTLE_WAIT: Arc<NamedCondvar> = Arc::new(NamedCondvar::new("throttle.wait"));
}

#[derive(Default)]
struct Queue {
    waiters: VecDeque<Arc<Waiter>>,
    next_ticket: u64,
}

pub struct Throttle {
    limit: AtomicU64,
    timeout_ms: AtomicU64,
    active: AtomicU64,
    queued: AtomicU64,
    queue: Mutex<Queue>,
    admitted: AtomicU64,
    waits: AtomicU64,
    timeouts: AtomicU64,
}

impl std::fmt::Debug for Throttle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttle")
            .field("limit", &self.limit())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Throttle {
    pub fn new(limit: u64, timeout: Duration) -> Self {
        Throttle {
            limit: AtomicU64::new(limit),
            timeout_ms: AtomicU64::new(timeout.as_millis() as u64),
            active: AtomicU64::new(0),
            queued: AtomicU64::new(0),
            queue: Mutex::named("throttle", Queue::default()),
            admitted: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.load(Ordering::Relaxed))
    }

    /// `SET GLOBAL innodb_max_active_transactions` (0 = unlimited); live.
    pub fn set_limit(&self, limit: u64) {
        self.limit.store(limit, Ordering::SeqCst);
        let mut q = self.queue.lock();
        self.admit_locked(&mut q);
    }

    /// `SET GLOBAL innodb_max_active_transactions_wait_timeout`; applies to
    /// waits that start afterwards.
    pub fn set_timeout(&self, timeout: Duration) {
        self.timeout_ms
            .store(timeout.as_millis() as u64, Ordering::Relaxed);
    }

    pub fn stats(&self) -> ThrottleStats {
        ThrottleStats {
            admitted: self.admitted.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            active: self.active.load(Ordering::Relaxed),
            queued: self.queued.load(Ordering::Relaxed),
        }
    }

    /// Takes a place if the limit allows it (under the queue mutex when limited).
    fn try_admit(&self) -> bool {
        let limit = self.limit.load(Ordering::SeqCst);
        let mut n = self.active.load(Ordering::SeqCst);
        loop {
            if limit != 0 && n >= limit {
                return false;
            }
            match self
                .active
                .compare_exchange_weak(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    self.admitted.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                Err(now) => n = now,
            }
        }
    }

    /// Waits until the transaction may start. Each `Ok` must be matched by
    /// one [`finish`](Self::finish).
    pub fn admit(&self) -> Result<(), ThrottleTimeout> {
        if self.queued.load(Ordering::SeqCst) == 0 && self.try_admit() {
            return Ok(());
        }
        let started = Instant::now();
        let deadline = started + self.timeout();
        let mut q = self.queue.lock();
        let me = Arc::new(Waiter {
            ticket: q.next_ticket,
            granted: AtomicBool::new(false),
            wake: THROTTLE_WAIT.with(Arc::clone),
        });
        q.next_ticket += 1;
        q.waiters.push_back(me.clone());
        self.queued.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst); // pairs with the fence in `finish`
        self.admit_locked(&mut q);
        if me.granted.load(Ordering::Acquire) {
            return Ok(());
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        loop {
            if me.granted.load(Ordering::Acquire) {
                return Ok(());
            }
            let timed_out;
            (q, timed_out) = me.wake.wait_until(q, deadline);
            if timed_out && !me.granted.load(Ordering::Acquire) {
                // Granted and timed out at once: the grant wins (checked above).
                q.waiters.retain(|w| w.ticket != me.ticket);
                self.queued.fetch_sub(1, Ordering::SeqCst);
                self.timeouts.fetch_add(1, Ordering::Relaxed);
                return Err(ThrottleTimeout {
                    limit: self.limit(),
                    active: self.active.load(Ordering::Relaxed),
                    waited_ms: started.elapsed().as_millis() as u64,
                });
            }
        }
    }

    /// A transaction admitted by [`admit`](Self::admit) finished.
    pub fn finish(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
        fence(Ordering::SeqCst); // pairs with the fence in `admit`
        if self.queued.load(Ordering::SeqCst) > 0 {
            let mut q = self.queue.lock();
            self.admit_locked(&mut q);
        }
    }

    /// Admits queued waiters, in order, while the limit allows.
    fn admit_locked(&self, q: &mut Queue) {
        while !q.waiters.is_empty() && self.try_admit() {
            let w = q.waiters.pop_front().expect("queue is not empty");
            self.queued.fetch_sub(1, Ordering::SeqCst);
            w.granted.store(true, Ordering::Release);
            w.wake.notify_one();
        }
    }
}

/// A transaction's place in the throttle; dropping it finishes it.
pub struct Admitted {
    throttle: Arc<Throttle>,
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admitted")
    }
}

impl Admitted {
    /// Waits for admission; the place is given back when the result drops.
    pub fn wait(throttle: &Arc<Throttle>) -> Result<Admitted, ThrottleTimeout> {
        throttle.admit()?;
        Ok(Admitted {
            throttle: throttle.clone(),
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.throttle.finish();
    }
}
