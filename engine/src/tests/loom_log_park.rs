//! Model checking of pausing and resuming the log threads
//! ([`crate::redo::park`]) with loom: every interleaving of a log thread's
//! life against OFF, ON and shutdown, on the real park code. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_log_park`;
//! a normal build leaves it out.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::redo::park::Park;
use loom::sync::atomic::AtomicUsize;
use loom::sync::{Condvar, Mutex};
use loom::thread;

/// What a log thread's body sleeps on (its event), and the `wake` that
/// OFF and shutdown pass to the park (as `wake_everyone`).
#[derive(Default)]
struct Event {
    m: Mutex<()>,
    cv: Condvar,
}

impl Event {
    fn wake(&self) {
        let _g = self.m.lock().unwrap();
        self.cv.notify_all();
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// A log thread's body: counts itself in `inside` while it runs, sleeps on
/// its event until `stop` is set.
fn body(inside: &AtomicUsize, ev: &Event, stop: &crate::sync::AtomicBool) {
    inside.fetch_add(1, Ordering::SeqCst);
    let mut g = ev.m.lock().unwrap();
    while !stop.load(Ordering::Acquire) {
        g = ev.cv.wait(g).unwrap();
    }
    drop(g);
    inside.fetch_sub(1, Ordering::SeqCst);
}

/// A log thread living in `park`, its body counted in `inside`, sleeping
/// on `ev`.
fn spawn_log_thread(
    park: &Arc<Park>,
    inside: &Arc<AtomicUsize>,
    ev: &Arc<Event>,
) -> thread::JoinHandle<()> {
    let (park, inside, ev) = (park.clone(), inside.clone(), ev.clone());
    thread::spawn(move || park.live(|stop| body(&inside, &ev, stop)))
}

/// OFF returns only once no body runs; ON lets it run again; shutdown ends
/// the thread, wherever it was.
#[test]
fn pause_waits_for_the_body_and_exit_ends_the_thread() {
    model(|| {
        let park = Arc::new(Park::new(true));
        let inside = Arc::new(AtomicUsize::new(0));
        let ev = Arc::new(Event::default());
        let h = spawn_log_thread(&park, &inside, &ev);
        park.pause(|| ev.wake());
        assert_eq!(inside.load(Ordering::SeqCst), 0, "a body runs after OFF");
        park.resume();
        park.exit(|| ev.wake());
        h.join().unwrap();
        assert_eq!(inside.load(Ordering::SeqCst), 0);
    });
}

/// Two threads, paused twice: no body ever starts with a stale stop flag
/// left by the first pause, and none runs after either pause returns.
#[test]
fn two_threads_paused_twice_never_run_while_off() {
    model(|| {
        let park = Arc::new(Park::new(false));
        let inside = Arc::new(AtomicUsize::new(0));
        let ev = Arc::new(Event::default());
        let hs: Vec<_> = (0..2)
            .map(|_| spawn_log_thread(&park, &inside, &ev))
            .collect();
        for _ in 0..2 {
            park.resume();
            park.pause(|| ev.wake());
            assert_eq!(inside.load(Ordering::SeqCst), 0, "a body runs after OFF");
        }
        park.exit(|| ev.wake());
        for h in hs {
            h.join().unwrap();
        }
    });
}
