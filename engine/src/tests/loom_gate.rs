//! Model checking of the FIFO concurrency gate with loom: every interleaving
//! of a few threads, on the real gate code (its atomics, mutex and condition
//! variables are loom's in this build). Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_gate`;
//! a normal build leaves it out.

use std::sync::Arc;

use crate::admission::{ConcurrencyGate, Policy};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// Enter, check the cap with our own counter, exit.
fn pass(gate: &ConcurrencyGate, inside: &AtomicUsize, cap: usize) {
    gate.enter();
    let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
    assert!(n <= cap, "{n} inside with cap {cap}");
    inside.fetch_sub(1, Ordering::SeqCst);
    gate.exit();
}

#[test]
fn fifo_cap_one_three_threads_never_exceeded_never_stuck() {
    model(|| {
        let gate = Arc::new(ConcurrencyGate::new(1, 1, 0, Policy::Fifo));
        let inside = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (g, i) = (gate.clone(), inside.clone());
                thread::spawn(move || pass(&g, &i, 1))
            })
            .collect();
        pass(&gate, &inside, 1);
        for h in hs {
            h.join().unwrap();
        }
        let st = gate.stats();
        assert_eq!((st.inside, st.queued), (0, 0));
    });
}

#[test]
fn fifo_cap_two_each_thread_twice() {
    model(|| {
        let gate = Arc::new(ConcurrencyGate::new(2, 1, 0, Policy::Fifo));
        let inside = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (g, i) = (gate.clone(), inside.clone());
                thread::spawn(move || {
                    pass(&g, &i, 2);
                    pass(&g, &i, 2);
                })
            })
            .collect();
        pass(&gate, &inside, 2);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(gate.stats().inside, 0);
    });
}

/// A waiter is released by raising the cap to unlimited, whatever the
/// interleaving with the holder's exit.
#[test]
fn raising_the_cap_strands_no_waiter() {
    model(|| {
        let gate = Arc::new(ConcurrencyGate::new(1, 1, 0, Policy::Fifo));
        gate.enter();
        let g = gate.clone();
        let waiter = thread::spawn(move || {
            g.enter();
            g.exit();
        });
        gate.set_cap(0);
        gate.exit();
        waiter.join().unwrap();
        let st = gate.stats();
        assert_eq!((st.inside, st.queued), (0, 0));
    });
}

/// A switch to seed001 with a FIFO waiter queued: the waiter still gets in.
#[test]
fn switching_policy_strands_no_waiter() {
    model(|| {
        let gate = Arc::new(ConcurrencyGate::new(1, 1, 0, Policy::Fifo));
        gate.enter();
        let g = gate.clone();
        let waiter = thread::spawn(move || {
            g.enter();
            g.exit();
        });
        gate.set_policy(Policy::Soft);
        gate.exit();
        waiter.join().unwrap();
        assert_eq!(gate.stats().inside, 0);
    });
}
