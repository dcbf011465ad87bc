//! `innodb_thread_concurrency`: the FIFO policy never exceeds the cap, the
//! seed-001 policy overshoots by no more than its forced entries, tickets
//! keep the slot, row-lock waiters give their slot up, and live changes of
//! cap and policy strand nobody.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::admission::{ConcurrencyGate, Entry, Policy};
use crate::data::trx::TrxError;

use super::common::{sbtest_engine as engine, wait_until};

fn busy(us: u64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

/// Threads inside, counted by the test itself: low 32 bits all entries,
/// high 32 bits forced (seed-001) entries; one atomic so both are read at once.
struct Inside(AtomicU64);

impl Inside {
    fn enter(&self, forced: bool) -> (u64, u64) {
        let d = 1 + ((forced as u64) << 32);
        let now = self.0.fetch_add(d, Ordering::SeqCst) + d;
        (now & 0xffff_ffff, now >> 32)
    }
    fn exit(&self, forced: bool) {
        self.0
            .fetch_sub(1 + ((forced as u64) << 32), Ordering::SeqCst);
    }
}

/// Runs `threads` threads through `gate` `iters` times each, holding the
/// slot for `hold_us`; returns the largest overshoot over the cap seen and
/// checks that non-forced entries never exceeded it.
fn hammer(gate: &Arc<ConcurrencyGate>, threads: usize, iters: usize, hold_us: u64) -> u64 {
    let inside = Arc::new(Inside(AtomicU64::new(0)));
    let max_over = Arc::new(AtomicU64::new(0));
    let cap = gate.cap() as u64;
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let (gate, inside, max_over) = (gate.clone(), inside.clone(), max_over.clone());
            std::thread::spawn(move || {
                for _ in 0..iters {
                    let forced = gate.enter() == Entry::Forced;
                    let (n, f) = inside.enter(forced);
                    assert!(n <= cap + f, "{n} inside with cap {cap} and {f} forced");
                    max_over.fetch_max(n.saturating_sub(cap), Ordering::Relaxed);
                    busy(hold_us);
                    inside.exit(forced);
                    gate.exit();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(gate.stats().inside, 0);
    max_over.load(Ordering::Relaxed)
}

#[test]
fn fifo_never_exceeds_the_cap_under_stress() {
    for cap in [1, 3, 8] {
        let gate = Arc::new(ConcurrencyGate::new(cap, 1, 10_000, Policy::Fifo));
        let over = hammer(&gate, 48, 400, 20);
        let st = gate.stats();
        assert_eq!(over, 0, "FIFO exceeded cap {cap}");
        assert!(st.inside_high_water <= cap as u64, "{st:?}");
        assert_eq!((st.forced, st.sleeps, st.queued), (0, 0, 0));
        assert!(st.waits > 0, "the gate was never full: {st:?}");
        eprintln!("fifo cap {cap}: {st:?}");
    }
}

#[test]
fn seed001_overshoot_is_bounded_by_forced_entries_and_reported() {
    let gate = Arc::new(ConcurrencyGate::new(2, 1, 200, Policy::Soft));
    // Held far longer than yield + 2 sleeps: waiters give up and force in.
    let over = hammer(&gate, 24, 40, 2_000);
    let st = gate.stats();
    eprintln!(
        "soft cap 2, 24 threads: max overshoot {over}, high water {}, {st:?}",
        st.inside_high_water
    );
    assert!(
        st.forced > 0 && over > 0,
        "no overshoot with long holds: {st:?}"
    );
    assert!(
        st.sleeps <= 2 * st.waits,
        "at most two sleeps per wait: {st:?}"
    );
    assert!(st.inside_high_water <= 24);

    // Held briefly: the retries nearly always find a slot.
    let gate = Arc::new(ConcurrencyGate::new(4, 1, 10_000, Policy::Soft));
    let over = hammer(&gate, 16, 300, 5);
    let st = gate.stats();
    eprintln!("soft cap 4, 16 threads, short holds: max overshoot {over}, {st:?}");
    assert!(
        st.forced * 4 <= st.enters,
        "forced entries should be rare: {st:?}"
    );
}

#[test]
fn live_cap_and_policy_changes_strand_no_waiter() {
    let gate = Arc::new(ConcurrencyGate::new(1, 1, 500, Policy::Fifo));
    let done = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..32)
        .map(|_| {
            let (gate, done) = (gate.clone(), done.clone());
            std::thread::spawn(move || {
                for _ in 0..300 {
                    gate.enter();
                    busy(30);
                    gate.exit();
                }
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    let mut i = 0usize;
    while done.load(Ordering::SeqCst) < 32 {
        gate.set_cap([1, 4, 0, 2, 16][i % 5]);
        gate.set_policy(if i.is_multiple_of(3) {
            Policy::Soft
        } else {
            Policy::Fifo
        });
        i += 1;
        std::thread::sleep(Duration::from_millis(2));
        assert!(i < 20_000, "waiters stranded: {:?}", gate.stats());
    }
    for h in hs {
        h.join().unwrap();
    }
    let st = gate.stats();
    assert_eq!((st.inside, st.queued), (0, 0), "{st:?}");
}

#[test]
fn fifo_cap_holds_inside_the_engine_with_lock_waits() {
    const USERS: usize = 48;
    let (e, table) = engine(100);
    e.set_global("innodb_admission_policy", "fifo").unwrap();
    e.set_global("innodb_thread_concurrency", "4").unwrap();
    e.set_global("innodb_concurrency_tickets", "2").unwrap();
    e.concurrency_gate().reset_high_water();
    let acked = Arc::new(AtomicU64::new(0));
    // All users start together: on a loaded machine, threads started one
    // by one can each finish before the next starts, and never fill the gate.
    let start = Arc::new(Barrier::new(USERS));
    let hs: Vec<_> = (0..USERS)
        .map(|u| {
            let (e, acked, start) = (e.clone(), acked.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for i in 0..60u64 {
                    let mut t = e.begin();
                    // Hot rows 1..=4 make lock waits; ordered ids avoid deadlocks.
                    let hot = (u as i64 + i as i64) % 4 + 1;
                    // Between its first two statements a transaction keeps
                    // its slot (a ticket left) while it sleeps, so the gate
                    // fills and others queue however the threads are
                    // scheduled (a busy machine may otherwise run them one
                    // after another, and nobody ever waits).
                    let r = t.get(table, 50).and_then(|_| {
                        std::thread::sleep(std::time::Duration::from_micros(500));
                        t.update_k(table, hot, 1)
                    });
                    let r = r.and_then(|_| t.update_k(table, 10 + u as i64, 1));
                    r.unwrap();
                    e.commit(t).unwrap();
                    acked.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let st = e.concurrency_gate().stats();
    eprintln!("engine, fifo cap 4, {USERS} users: {st:?}");
    assert!(st.inside_high_water <= 4, "{st:?}");
    assert!(st.lock_wait_exits > 0 && st.waits > 0, "{st:?}");
    assert_eq!(st.inside, 0);
    let hot_sum: i64 = (1..=4)
        .map(|id| e.dump()["sbtest1"][&id].k as i64)
        .sum::<i64>();
    let base: i64 = {
        let (e2, _) = engine(100);
        let s = (1..=4).map(|id| e2.dump()["sbtest1"][&id].k as i64).sum();
        e2.shutdown().unwrap();
        s
    };
    assert_eq!(hot_sum - base, acked.load(Ordering::Relaxed) as i64);
    e.shutdown().unwrap();
}

#[test]
fn tickets_keep_the_slot_between_statements() {
    let (e, table) = engine(10);
    e.set_global("innodb_admission_policy", "fifo").unwrap();
    e.set_global("innodb_thread_concurrency", "1").unwrap();
    e.set_global("innodb_concurrency_tickets", "3").unwrap();
    let gate = e.concurrency_gate().clone();
    let mut a = e.begin();
    a.get(table, 1).unwrap();
    a.get(table, 2).unwrap();
    // Between statements with a ticket left, `a` still holds the only slot.
    assert_eq!(gate.stats().inside, 1);
    let e2 = e.clone();
    let b = std::thread::spawn(move || {
        let mut t = e2.begin();
        t.get(table, 3).unwrap();
        e2.commit(t).unwrap();
    });
    wait_until("b queued", || gate.stats().queued == 1);
    std::thread::sleep(Duration::from_millis(20));
    assert!(!b.is_finished(), "b passed a full gate");
    a.get(table, 4).unwrap(); // the last ticket: `a` leaves after it
    b.join().unwrap();
    let st = gate.stats();
    // a: 1 gate entry + 2 tickets; b: 1 gate entry, its commit on a ticket.
    assert_eq!((st.enters, st.ticket_enters), (2, 3), "{st:?}");
    // The commit re-enters through the gate and leaves.
    e.commit(a).unwrap();
    assert_eq!(gate.stats().inside, 0);

    // With one ticket, a transaction leaves after every statement.
    e.set_global("innodb_concurrency_tickets", "1").unwrap();
    let mut c = e.begin();
    c.get(table, 1).unwrap();
    assert_eq!(gate.stats().inside, 0);
    e.commit(c).unwrap();
    e.shutdown().unwrap();
}

/// cap = 1 and one ticket: `a` holds a row lock outside the gate; `b` enters
/// and waits for that lock. If `b` kept its slot, `a` could not enter to
/// commit and both would sit until the lock wait timeout.
#[test]
fn a_row_lock_waiter_gives_its_slot_up() {
    for policy in ["fifo", "soft"] {
        let (e, table) = engine(10);
        e.set_global("innodb_admission_policy", policy).unwrap();
        e.set_global("innodb_thread_concurrency", "1").unwrap();
        e.set_global("innodb_concurrency_tickets", "1").unwrap();
        e.set_global("innodb_thread_sleep_delay", "1000000")
            .unwrap();
        e.set_global("innodb_lock_wait_timeout", "20").unwrap();
        let gate = e.concurrency_gate().clone();
        let mut a = e.begin();
        a.update_k(table, 1, 5).unwrap();
        assert_eq!(gate.stats().inside, 0);
        let start = Instant::now();
        let e2 = e.clone();
        let b = std::thread::spawn(move || {
            let mut t = e2.begin();
            let r = t.update_k(table, 1, 7);
            let waited = start.elapsed();
            r.map(|_| {
                e2.commit(t).unwrap();
                waited
            })
        });
        wait_until("b waits for the row lock", || {
            e.status().counters.lock_waits == 1
        });
        assert_eq!(gate.stats().inside, 0, "b gave its slot up");
        e.commit(a).unwrap();
        let waited = b.join().unwrap().expect("b got the lock, not a timeout");
        assert!(waited < Duration::from_secs(5), "{policy}: {waited:?}");
        let st = gate.stats();
        assert_eq!(
            (st.lock_wait_exits, st.forced, st.inside),
            (1, 0, 0),
            "{policy}: {st:?}"
        );
        let k0 = {
            let (e0, _) = engine(10);
            let k = e0.dump()["sbtest1"][&1].k;
            e0.shutdown().unwrap();
            k
        };
        assert_eq!(e.dump()["sbtest1"][&1].k, k0 + 12);
        e.shutdown().unwrap();
    }
}

#[test]
fn lock_errors_and_drops_leave_the_gate() {
    let (e, table) = engine(10);
    e.set_global("innodb_admission_policy", "fifo").unwrap();
    e.set_global("innodb_thread_concurrency", "2").unwrap();
    e.set_lock_wait_timeout(Duration::from_millis(50));
    let gate = e.concurrency_gate().clone();
    let mut a = e.begin();
    a.update_k(table, 1, 1).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let (e2, b2) = (e.clone(), barrier.clone());
    let h = std::thread::spawn(move || {
        let mut t = e2.begin();
        let r = t.update_k(table, 1, 1);
        b2.wait();
        assert_eq!(r, Err(TrxError::LockWaitTimeout));
        // Rolled back by the timeout: it left the gate and trx-sys.
        assert_eq!(e2.trx_sys().active_count(), 1);
        e2.rollback(t);
    });
    barrier.wait();
    h.join().unwrap();
    assert_eq!(gate.stats().inside, 1, "only `a` (tickets) is inside");
    drop(a);
    assert_eq!(gate.stats().inside, 0);
    assert_eq!(e.trx_sys().active_count(), 0);
    e.shutdown().unwrap();
}
