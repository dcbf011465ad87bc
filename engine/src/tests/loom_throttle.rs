//! Model checking of the transaction throttle with loom: every interleaving
//! of a few threads admitted and finishing, on the real throttle code (its
//! atomics, queue mutex and waiters' condition variables are loom's in this
//! build). A model has no clock: a wait with a long timeout never times out,
//! so a waiter nobody admits deadlocks and loom reports it; a zero timeout
//! times out at the first wait, after releasing the queue mutex, so a
//! finisher may grant the waiter its place in between. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_throttle`;
//! a normal build leaves it out.

use std::sync::Arc;
use std::time::Duration;

use crate::throttle::{Throttle, ThrottleStats};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

const NEVER: Duration = Duration::from_secs(3600);

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

/// Inside the throttle: checks the limit with our own counter.
fn inside(count: &AtomicUsize, limit: usize) {
    let n = count.fetch_add(1, SeqCst) + 1;
    assert!(n <= limit, "{n} inside with limit {limit}");
    count.fetch_sub(1, SeqCst);
}

/// Admit (which must succeed), check the limit, finish.
fn pass(t: &Throttle, count: &AtomicUsize, limit: usize) {
    t.admit().expect("no timeouts in this model");
    inside(count, limit);
    t.finish();
}

/// Admit with a timeout; on success check the limit and finish. Returns
/// whether it was admitted.
fn try_pass(t: &Throttle, count: &AtomicUsize, limit: usize) -> bool {
    match t.admit() {
        Ok(()) => {
            inside(count, limit);
            t.finish();
            true
        }
        Err(e) => {
            assert_eq!(e.limit, limit as u64);
            false
        }
    }
}

/// Nobody inside, nobody queued, and the place is free: a new transaction
/// starts at once.
fn check_idle(t: &Throttle) -> ThrottleStats {
    let st = t.stats();
    assert_eq!((st.active, st.queued), (0, 0), "{st:?}");
    t.set_timeout(Duration::ZERO);
    t.admit().expect("a free place after everyone finished");
    t.finish();
    st
}

#[test]
fn limit_one_three_threads_never_exceeded_never_stranded() {
    model(3, || {
        let t = Arc::new(Throttle::new(1, NEVER));
        let count = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (t, c) = (t.clone(), count.clone());
                thread::spawn(move || pass(&t, &c, 1))
            })
            .collect();
        pass(&t, &count, 1);
        for h in hs {
            h.join().unwrap();
        }
        let st = check_idle(&t);
        assert_eq!((st.admitted, st.timeouts), (3, 0), "{st:?}");
    });
}

/// Raising the limit to unlimited admits a queued waiter, whatever the
/// interleaving with the holder's finish.
#[test]
fn raising_the_limit_strands_no_waiter() {
    model(3, || {
        let t = Arc::new(Throttle::new(1, NEVER));
        t.admit().unwrap();
        let w = t.clone();
        let waiter = thread::spawn(move || {
            w.admit().unwrap();
            w.finish();
        });
        t.set_limit(0);
        t.finish();
        waiter.join().unwrap();
        check_idle(&t);
    });
}

/// A waiter times out while the holder finishes: either the grant wins (the
/// waiter is admitted and finishes) or the timeout is clean (the waiter left
/// the queue and holds no place), never both or neither.
#[test]
fn a_timeout_racing_a_grant_either_wins_cleanly() {
    model(3, || {
        let t = Arc::new(Throttle::new(1, Duration::ZERO));
        let count = Arc::new(AtomicUsize::new(0));
        t.admit().unwrap();
        let (w, c) = (t.clone(), count.clone());
        let waiter = thread::spawn(move || try_pass(&w, &c, 1));
        inside(&count, 1);
        t.finish();
        let admitted = waiter.join().unwrap();
        let st = check_idle(&t);
        let expect = if admitted { (2, 0) } else { (1, 1) };
        assert_eq!((st.admitted, st.timeouts), expect, "{st:?}");
    });
}

/// Two waiters time out while the holder finishes: at most one is inside at
/// a time, and each is admitted or timed out cleanly.
#[test]
fn two_timing_out_waiters_and_a_finish() {
    model(3, || {
        let t = Arc::new(Throttle::new(1, Duration::ZERO));
        let count = Arc::new(AtomicUsize::new(0));
        t.admit().unwrap();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (w, c) = (t.clone(), count.clone());
                thread::spawn(move || try_pass(&w, &c, 1))
            })
            .collect();
        inside(&count, 1);
        t.finish();
        let admitted = hs
            .into_iter()
            .map(|h| h.join().unwrap() as u64)
            .sum::<u64>();
        let st = check_idle(&t);
        assert_eq!(
            (st.admitted, st.timeouts),
            (1 + admitted, 2 - admitted),
            "{st:?}"
        );
    });
}
