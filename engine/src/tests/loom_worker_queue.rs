//! Model checking of a replica worker's queue (seed 003) with loom: every
//! interleaving of the coordinator queueing transactions, retiring the
//! worker (a change of `replica_parallel_workers`), and the worker taking
//! them, on the real [`WorkerQueue`] code (its lock, condvar and atomics
//! are loom's in this build). A wait has no timeout in a model, so a lost
//! wakeup is a deadlock loom reports. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_worker_queue`.

use std::sync::Arc;
use std::time::Duration;

use loom::thread;

use crate::replica::worker_queue::WorkerQueue;

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

/// A poll that never passes in a model: the worker's wait is a plain wait.
const NEVER: Duration = Duration::from_secs(3600);

/// The worker as the replica runs it: take jobs until told to exit.
fn drain(q: &WorkerQueue<u32>) -> Vec<u32> {
    let mut got = vec![];
    while let Some(j) = q.next(&|| false, NEVER) {
        got.push(j);
    }
    got
}

/// The coordinator queues two jobs and then retires the worker (the
/// worker count changed): the worker takes both, in order, and exits,
/// whether it slept before, between or after them.
#[test]
fn jobs_queued_before_retire_are_all_taken_and_the_worker_exits() {
    model(3, || {
        let q = Arc::new(WorkerQueue::new());
        let w = {
            let q = q.clone();
            thread::spawn(move || drain(&q))
        };
        q.push(1);
        q.push(2);
        q.retire();
        assert_eq!(w.join().unwrap(), vec![1, 2]);
    });
}

/// Without a retire, the pushes alone must wake a worker that sleeps on
/// the empty queue: it waits for two jobs and returns.
#[test]
fn a_push_always_wakes_a_sleeping_worker() {
    model(3, || {
        let q = Arc::new(WorkerQueue::new());
        let w = {
            let q = q.clone();
            thread::spawn(move || {
                let a = q.next(&|| false, NEVER);
                let b = q.next(&|| false, NEVER);
                (a, b)
            })
        };
        q.push(1);
        q.push(2);
        assert_eq!(w.join().unwrap(), (Some(1), Some(2)));
    });
}

/// A retire alone wakes a worker asleep on the empty queue.
#[test]
fn retire_wakes_an_idle_worker() {
    model(3, || {
        let q = Arc::new(WorkerQueue::<u32>::new());
        let w = {
            let q = q.clone();
            thread::spawn(move || drain(&q))
        };
        q.retire();
        assert!(w.join().unwrap().is_empty());
    });
}
