//! Model checking of the redo log's wakeup event with loom: every
//! interleaving of its notifiers and sleepers, on the real event code (its
//! atomics and futex word are loom's in this build; the futex is modelled
//! as the kernel implements it, and has no timeouts, so a lost wakeup is a
//! deadlock loom reports). Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_event`;
//! a normal build leaves it out.

use std::sync::Arc;
use std::time::Duration;

use crate::redo::event::Event;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use loom::thread;

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

/// Sleeps on `ev` until `ready()`, as the engine's callers do: `wait` may
/// return early, so they loop.
fn wait_until(ev: &Event, ready: impl Fn() -> bool) {
    while !ev.wait(Duration::from_secs(1), &ready) {}
}

#[test]
fn a_notify_after_the_change_always_wakes_the_sleeper() {
    model(3, || {
        let s = Arc::new((Event::new(), AtomicBool::new(false)));
        let n = s.clone();
        let notifier = thread::spawn(move || {
            n.1.store(true, SeqCst);
            n.0.notify();
        });
        wait_until(&s.0, || s.1.load(SeqCst));
        notifier.join().unwrap();
    });
}

#[test]
fn two_notifiers_one_wake_no_sleeper_left_behind() {
    // Each sleeper waits for its own notifier's change; when one notifier
    // finds ARMED already cleared by the other, it makes no wake, and the
    // other's wake must cover both sleepers.
    model(2, || {
        let s = Arc::new((Event::new(), AtomicBool::new(false), AtomicBool::new(false)));
        let mut hs = Vec::new();
        for i in 0..2 {
            let n = s.clone();
            hs.push(thread::spawn(move || {
                if i == 0 { &n.1 } else { &n.2 }.store(true, SeqCst);
                n.0.notify();
            }));
        }
        let w = s.clone();
        hs.push(thread::spawn(move || wait_until(&w.0, || w.2.load(SeqCst))));
        wait_until(&s.0, || s.1.load(SeqCst));
        for h in hs {
            h.join().unwrap();
        }
    });
}

#[test]
fn ping_pong_over_two_events_never_stalls() {
    // The shape of the commit path: one side hands a counter to the other
    // and sleeps until it comes back, twice.
    model(2, || {
        let s = Arc::new((Event::new(), Event::new(), AtomicU32::new(0)));
        let o = s.clone();
        let other = thread::spawn(move || {
            for round in 0..2u32 {
                wait_until(&o.0, || o.2.load(SeqCst) == 2 * round + 1);
                o.2.store(2 * round + 2, SeqCst);
                o.1.notify();
            }
        });
        for round in 0..2u32 {
            s.2.store(2 * round + 1, SeqCst);
            s.0.notify();
            wait_until(&s.1, || s.2.load(SeqCst) == 2 * round + 2);
        }
        other.join().unwrap();
    });
}

#[test]
fn sleepers_are_counted_while_inside_and_released_after() {
    model(3, || {
        let s = Arc::new((Event::new(), AtomicBool::new(false)));
        let w = s.clone();
        let sleeper = thread::spawn(move || wait_until(&w.0, || w.1.load(SeqCst)));
        assert!(s.0.sleepers() <= 1);
        s.1.store(true, SeqCst);
        s.0.notify();
        sleeper.join().unwrap();
        assert_eq!(s.0.sleepers(), 0);
    });
}
