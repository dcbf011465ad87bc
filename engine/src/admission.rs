//! `innodb_thread_concurrency`: a cap on the threads working inside the engine.
//!
//! Every statement (each [`Trx`](crate::data::trx::Trx) operation, and the
//! commit) enters the [`ConcurrencyGate`] first. A transaction that passed the
//! gate holds `innodb_concurrency_tickets` tickets: it keeps its slot between
//! statements and re-enters for free until the tickets are spent, then leaves
//! at the end of that statement. Ending the transaction always leaves. A
//! transaction that must wait for a row lock gives its slot up for the wait
//! and re-enters afterwards (at the head of the FIFO queue: it holds row locks
//! others may need), so lock waiters never block the gate.
//!
//! Two admission policies, switchable live:
//!
//! * [`Policy::Soft`] (MySQL 5.4): no mutex and no queue. Try to take a
//!   slot (a compare-and-swap below the cap); failing that, yield once, then
//!   sleep `innodb_thread_sleep_delay` at most twice, trying after each; then
//!   enter regardless. The cap is soft: a thread that tried three times gets
//!   in anyway, so the number inside can exceed the cap, by at most the
//!   number of threads that gave up waiting at that moment.
//! * [`Policy::Fifo`]: the cap is hard. A thread that finds no free slot (or
//!   finds others already queued) joins a FIFO queue and sleeps on its own
//!   condition variable; each exit hands the freed slot to the first waiter
//!   and wakes exactly that one.
//!
//! The count of threads inside is one atomic shared by both policies; every
//! increment made by the FIFO policy is a compare-and-swap below the cap, so
//! under FIFO alone the count never exceeds the cap. Exits decrement the
//! count and, if anyone is queued, hand slots over under the queue mutex. A
//! waiter enqueues under that mutex, then tries the hand-over itself, so an
//! exit racing with an enqueue is seen by one side or the other (both use
//! sequentially consistent operations on `inside` and `queued`, each
//! store-then-load pair separated by a SeqCst fence). Changing the
//! cap or the policy hands over every slot the new setting frees (cap 0 =
//! unlimited releases every waiter), so no waiter is stranded.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::sync::{
    fence, yield_now, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Condvar, Mutex,
};

/// How threads wait at a full gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// MySQL 5.4's policy (seed 001): try, yield, sleep twice, enter
    /// regardless (a soft cap).
    Soft,
    /// A FIFO queue; one waiter woken per exit (hard cap).
    Fifo,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Soft => "soft",
            Policy::Fifo => "fifo",
        }
    }
}

/// How a thread got through the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A slot was free.
    Free,
    /// Got a slot after waiting (FIFO hand-over or a seed-001 retry).
    AfterWait,
    /// Seed 001: entered regardless of the cap after three tries.
    Forced,
}

/// Gate counters (see `engine/PROBES.md`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GateStats {
    /// Entries that took a slot at the gate (not ticket re-entries).
    pub enters: u64,
    /// Statements that re-entered on a ticket, without touching the gate.
    pub ticket_enters: u64,
    /// Entries that found the gate full and had to wait (queue or yield).
    pub waits: u64,
    /// Seed-001 sleeps (`innodb_thread_sleep_delay` each).
    pub sleeps: u64,
    /// Seed-001 entries made regardless of the cap after three tries.
    pub forced: u64,
    /// Slots given up for a row-lock wait.
    pub lock_wait_exits: u64,
    /// Threads inside now.
    pub inside: u64,
    /// Most threads inside at once since the last [`ConcurrencyGate::reset_high_water`].
    pub inside_high_water: u64,
    /// Threads queued now (FIFO).
    pub queued: u64,
}

struct Waiter {
    granted: AtomicBool,
    wake: Condvar,
}

/// The gate itself. Cheap to share (`Arc`).
pub struct ConcurrencyGate {
    /// `innodb_thread_concurrency` (0 = unlimited).
    cap: AtomicUsize,
    /// `innodb_concurrency_tickets` (>= 1).
    tickets: AtomicU32,
    /// `innodb_thread_sleep_delay` in µs.
    sleep_delay_us: AtomicU64,
    fifo: AtomicBool,
    inside: AtomicUsize,
    queued: AtomicUsize,
    queue: Mutex<VecDeque<Arc<Waiter>>>,
    enters: AtomicU64,
    ticket_enters: AtomicU64,
    waits: AtomicU64,
    sleeps: AtomicU64,
    forced: AtomicU64,
    lock_wait_exits: AtomicU64,
    high_water: AtomicUsize,
}

impl Default for ConcurrencyGate {
    fn default() -> Self {
        ConcurrencyGate::new(0, 5000, 10_000, Policy::Soft)
    }
}

impl std::fmt::Debug for ConcurrencyGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrencyGate")
            .field("cap", &self.cap())
            .field("policy", &self.policy())
            .field("stats", &self.stats())
            .finish()
    }
}

impl ConcurrencyGate {
    pub fn new(cap: usize, tickets: u32, sleep_delay_us: u64, policy: Policy) -> Self {
        ConcurrencyGate {
            cap: AtomicUsize::new(cap),
            tickets: AtomicU32::new(tickets.max(1)),
            sleep_delay_us: AtomicU64::new(sleep_delay_us),
            fifo: AtomicBool::new(policy == Policy::Fifo),
            inside: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            queue: Mutex::named("admission", VecDeque::new()),
            enters: AtomicU64::new(0),
            ticket_enters: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
            forced: AtomicU64::new(0),
            lock_wait_exits: AtomicU64::new(0),
            high_water: AtomicUsize::new(0),
        }
    }

    pub fn cap(&self) -> usize {
        self.cap.load(Ordering::Relaxed)
    }

    pub fn tickets(&self) -> u32 {
        self.tickets.load(Ordering::Relaxed)
    }

    pub fn sleep_delay_us(&self) -> u64 {
        self.sleep_delay_us.load(Ordering::Relaxed)
    }

    pub fn policy(&self) -> Policy {
        if self.fifo.load(Ordering::Relaxed) {
            Policy::Fifo
        } else {
            Policy::Soft
        }
    }

    /// `SET GLOBAL innodb_thread_concurrency` (0 = unlimited); live.
    pub fn set_cap(&self, cap: usize) {
        self.cap.store(cap, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.hand_over();
    }

    /// `SET GLOBAL innodb_concurrency_tickets` (at least 1); applies to the
    /// next entry through the gate.
    pub fn set_tickets(&self, tickets: u32) {
        self.tickets.store(tickets.max(1), Ordering::Relaxed);
    }

    /// `SET GLOBAL innodb_thread_sleep_delay` (µs).
    pub fn set_sleep_delay_us(&self, us: u64) {
        self.sleep_delay_us.store(us, Ordering::Relaxed);
    }

    /// Switches the admission policy live; queued waiters are handed every
    /// free slot (and keep being handed slots as threads exit).
    pub fn set_policy(&self, policy: Policy) {
        self.fifo.store(policy == Policy::Fifo, Ordering::SeqCst);
        self.hand_over();
    }

    pub fn stats(&self) -> GateStats {
        GateStats {
            enters: self.enters.load(Ordering::Relaxed),
            ticket_enters: self.ticket_enters.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            sleeps: self.sleeps.load(Ordering::Relaxed),
            forced: self.forced.load(Ordering::Relaxed),
            lock_wait_exits: self.lock_wait_exits.load(Ordering::Relaxed),
            inside: self.inside.load(Ordering::Relaxed) as u64,
            inside_high_water: self.high_water.load(Ordering::Relaxed) as u64,
            queued: self.queued.load(Ordering::Relaxed) as u64,
        }
    }

    /// Restarts the high-water mark of threads inside from the current count.
    pub fn reset_high_water(&self) {
        self.high_water
            .store(self.inside.load(Ordering::SeqCst), Ordering::Relaxed);
    }

    fn note_inside(&self, now: usize) {
        self.high_water.fetch_max(now, Ordering::Relaxed);
    }

    /// Takes a slot if one is free under the current cap.
    fn try_take(&self) -> bool {
        let mut n = self.inside.load(Ordering::SeqCst);
        loop {
            let cap = self.cap.load(Ordering::SeqCst);
            if cap != 0 && n >= cap {
                return false;
            }
            match self
                .inside
                .compare_exchange_weak(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    self.note_inside(n + 1);
                    return true;
                }
                Err(now) => n = now,
            }
        }
    }

    /// Enters the engine through the gate (waiting per the policy).
    pub fn enter(&self) -> Entry {
        self.enters.fetch_add(1, Ordering::Relaxed);
        if self.queued.load(Ordering::SeqCst) == 0 && self.try_take() {
            return Entry::Free;
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        if self.fifo.load(Ordering::Relaxed) {
            self.wait_in_queue(false);
            Entry::AfterWait
        } else {
            self.enter_soft()
        }
    }

    /// Re-enters after a row-lock wait: like [`enter`](Self::enter), but a
    /// FIFO waiter goes to the head of the queue (it holds row locks).
    pub fn reenter_after_lock_wait(&self) -> Entry {
        if self.try_take() {
            return Entry::Free;
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        if self.fifo.load(Ordering::Relaxed) {
            self.wait_in_queue(true);
            Entry::AfterWait
        } else {
            self.enter_soft()
        }
    }

    /// Seed 001: yield once, sleep at most twice, then enter regardless.
    fn enter_soft(&self) -> Entry {
        yield_now();
        if self.try_take() {
            return Entry::AfterWait;
        }
        for _ in 0..2 {
            self.sleeps.fetch_add(1, Ordering::Relaxed);
            crate::sync::sleep(Duration::from_micros(self.sleep_delay_us()));
            if self.try_take() {
                return Entry::AfterWait;
            }
        }
        self.forced.fetch_add(1, Ordering::Relaxed);
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.note_inside(now);
        Entry::Forced
    }

    fn wait_in_queue(&self, front: bool) {
        let me = Arc::new(Waiter {
            granted: AtomicBool::new(false),
            wake: Condvar::new(),
        });
        let mut queue = self.queue.lock();
        if front {
            queue.push_front(me.clone());
        } else {
            queue.push_back(me.clone());
        }
        self.queued.fetch_add(1, Ordering::SeqCst);
        // Store `queued`, then load `inside` (in the hand-over): the fence
        // pairs with the one in `exit` (store `inside`, then load `queued`).
        fence(Ordering::SeqCst);
        // A slot may have been freed before we were visible in `queued`.
        self.hand_over_locked(&mut queue);
        while !me.granted.load(Ordering::Acquire) {
            queue = me.wake.wait(queue);
        }
    }

    /// Leaves the engine, handing the slot to the first queued waiter.
    pub fn exit(&self) {
        self.inside.fetch_sub(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.queued.load(Ordering::SeqCst) > 0 {
            self.hand_over();
        }
    }

    fn hand_over(&self) {
        let mut queue = self.queue.lock();
        self.hand_over_locked(&mut queue);
    }

    /// Grants slots to queued waiters, in order, while slots are free.
    fn hand_over_locked(&self, queue: &mut VecDeque<Arc<Waiter>>) {
        while !queue.is_empty() && self.try_take() {
            let w = queue.pop_front().expect("queue is not empty");
            self.queued.fetch_sub(1, Ordering::SeqCst);
            w.granted.store(true, Ordering::Release);
            w.wake.notify_one();
        }
    }
}

/// One transaction's standing at the gate: inside or not, and its tickets.
#[derive(Debug)]
pub struct GateSession {
    gate: Arc<ConcurrencyGate>,
    inside: bool,
    /// Free re-entries left while inside.
    tickets: u32,
    /// Gave the slot up for a row-lock wait and must re-enter afterwards.
    suspended: bool,
}

impl GateSession {
    pub fn new(gate: Arc<ConcurrencyGate>) -> Self {
        GateSession {
            gate,
            inside: false,
            tickets: 0,
            suspended: false,
        }
    }

    pub fn is_inside(&self) -> bool {
        self.inside
    }

    /// Start of a statement: re-enter on a ticket, or pass the gate.
    pub fn enter_statement(&mut self) {
        if self.inside {
            self.tickets = self.tickets.saturating_sub(1);
            self.gate.ticket_enters.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.gate.enter();
        self.inside = true;
        // This statement uses the first ticket.
        self.tickets = self.gate.tickets().saturating_sub(1);
    }

    /// End of a statement: leave once the tickets are spent.
    pub fn leave_statement(&mut self) {
        if self.inside && self.tickets == 0 {
            self.force_exit();
        }
    }

    /// Leaves now, whatever the tickets (transaction end).
    pub fn force_exit(&mut self) {
        if self.inside {
            self.inside = false;
            self.tickets = 0;
            self.gate.exit();
        }
    }

    /// Before a row-lock wait: give the slot up.
    pub fn suspend_for_lock_wait(&mut self) {
        if self.inside {
            self.inside = false;
            self.suspended = true;
            self.gate.lock_wait_exits.fetch_add(1, Ordering::Relaxed);
            self.gate.exit();
        }
    }

    /// After a row-lock wait (granted or not): take a slot again, keeping
    /// the tickets left.
    pub fn resume_after_lock_wait(&mut self) {
        if self.suspended {
            self.suspended = false;
            self.gate.reenter_after_lock_wait();
            self.inside = true;
        }
    }
}

impl Drop for GateSession {
    fn drop(&mut self) {
        self.force_exit();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tickets_keep_the_slot_between_statements() {
        let gate = Arc::new(ConcurrencyGate::new(1, 3, 10_000, Policy::Fifo));
        let mut s = GateSession::new(gate.clone());
        for _ in 0..3 {
            s.enter_statement();
            s.leave_statement();
        }
        let st = gate.stats();
        assert_eq!((st.enters, st.ticket_enters, st.inside), (1, 2, 0));
        s.enter_statement();
        assert!(s.is_inside());
        drop(s);
        assert_eq!(gate.stats().inside, 0);
    }

    #[test]
    fn raising_the_cap_releases_fifo_waiters() {
        let gate = Arc::new(ConcurrencyGate::new(1, 1, 10_000, Policy::Fifo));
        gate.enter();
        let g = gate.clone();
        let h = std::thread::spawn(move || {
            g.enter();
            g.exit();
        });
        while gate.stats().queued == 0 {
            std::thread::yield_now();
        }
        gate.set_cap(0);
        h.join().unwrap();
        gate.exit();
        assert_eq!(gate.stats().inside, 0);
    }
}
