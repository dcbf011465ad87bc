//! One worker's queue of transactions (`replica.worker_queue`): the
//! coordinator pushes, the worker pops, sleeping on `replica.worker_ready`
//! while the queue is empty; [`WorkerQueue::retire`] lets the worker exit
//! once the queue is drained (a change of `replica_parallel_workers`, or the
//! replica stopping).
//!
//! No wakeup is lost. A worker that finds the queue empty says it sleeps
//! (`sleeping`) and sleeps while still holding the queue's lock, so a push
//! (under the same lock) either comes before its check, and it finds the
//! job, or after it sleeps, and the pusher, reading `sleeping` after its
//! push, wakes it. `retire` is stored before the lock is taken to notify,
//! and the worker reads it under that lock before it sleeps, so it either
//! sees it or is asleep when the notification comes. The loom models in
//! `tests/loom_worker_queue.rs` check both under every interleaving, on this
//! code: a lost wakeup there is a deadlock (a model's wait has no timeout).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::sync::{AtomicBool, Mutex, NamedCondvar};

/// A worker sleeping on an empty queue looks again this often (whether
/// the replica stops), even if no one wakes it.
pub const POLL: Duration = Duration::from_millis(50);

/// One worker's queue.
pub struct WorkerQueue<T> {
    jobs: Mutex<VecDeque<T>>,
    ready: NamedCondvar,
    sleeping: AtomicBool,
    retire: AtomicBool,
}

impl<T> Default for WorkerQueue<T> {
    fn default() -> Self {
        WorkerQueue::new()
    }
}

impl<T> WorkerQueue<T> {
    pub fn new() -> WorkerQueue<T> {
        WorkerQueue {
            jobs: Mutex::named("replica.worker_queue", VecDeque::new()),
            ready: NamedCondvar::new("replica.worker_ready"),
            sleeping: AtomicBool::new(false),
            retire: AtomicBool::new(false),
        }
    }

    /// Jobs queued and not yet taken.
    pub fn queued(&self) -> usize {
        self.jobs.lock().len()
    }

    /// Queues `job`; true when the worker slept and was woken for it.
    pub fn push(&self, job: T) -> bool {
        self.jobs.lock().push_back(job);
        if self.sleeping.load(Ordering::SeqCst) {
            let _g = self.jobs.lock();
            self.ready.notify_one();
            return true;
        }
        false
    }

    /// The worker exits once its queue is empty ([`WorkerQueue::next`]
    /// returns `None`); wakes it if it sleeps.
    pub fn retire(&self) {
        self.retire.store(true, Ordering::SeqCst);
        let _g = self.jobs.lock();
        self.ready.notify_all();
    }

    /// The next job, sleeping while there is none (looking again every
    /// `poll`); `None` once the queue is empty and the worker is retired or
    /// `stopping()` says so. Jobs queued before then are all handed out.
    pub fn next(&self, stopping: &dyn Fn() -> bool, poll: Duration) -> Option<T> {
        let mut jobs = self.jobs.lock();
        loop {
            if let Some(j) = jobs.pop_front() {
                return Some(j);
            }
            if stopping() || self.retire.load(Ordering::SeqCst) {
                return None;
            }
            self.sleeping.store(true, Ordering::SeqCst);
            let (g, _) = self.ready.wait_until(jobs, Instant::now() + poll);
            jobs = g;
            self.sleeping.store(false, Ordering::SeqCst);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn jobs_come_out_in_order_and_retire_ends_the_queue_once_drained() {
        let q = Arc::new(WorkerQueue::new());
        assert!(!q.push(1));
        q.push(2);
        assert_eq!(q.queued(), 2);
        q.retire();
        assert_eq!(q.next(&|| false, POLL), Some(1));
        assert_eq!(q.next(&|| false, POLL), Some(2));
        assert_eq!(q.next(&|| false, POLL), None);
    }

    /// A sleeping worker is woken by a push (well before its poll), and a
    /// stop ends its wait within a poll.
    #[test]
    fn a_push_wakes_a_sleeping_worker_and_a_stop_ends_its_wait() {
        let q = Arc::new(WorkerQueue::new());
        let w = {
            let q = q.clone();
            std::thread::spawn(move || q.next(&|| false, Duration::from_secs(60)))
        };
        while !q.sleeping.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let t = Instant::now();
        assert!(q.push(7), "the worker slept: woken");
        assert_eq!(w.join().unwrap(), Some(7));
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
        let stop = AtomicBool::new(true);
        assert_eq!(q.next(&|| stop.load(Ordering::SeqCst), POLL), None);
    }
}
