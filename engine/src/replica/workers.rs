//! Applying one source transaction, and the worker threads
//! (`replica_parallel_workers`) the coordinator hands transactions to.
//!
//! Each worker has its own queue (`replica.worker_queue`); the coordinator
//! assigns a transaction to the worker with the shortest queue and wakes it
//! if it sleeps. A worker applies the row images in a transaction of its
//! own, records the applied position in the same transaction (see
//! [`super::applied`]), waits for its turn when commit order is kept, and
//! commits. Lock waits and deadlocks are retried, as MySQL's
//! `replica_transaction_retries` (10).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::data::record::RowOp;
use crate::data::table::TableId;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::named_locks::NamedMutex;
use crate::probe_points;

use super::applied;
use super::schedule::{Progress, Ticket};
use super::worker_queue::{WorkerQueue, POLL};
use super::ReplicaError;

/// Retries of a transaction that met a lock wait timeout or a deadlock.
pub const RETRIES: u32 = 10;

/// One source transaction, its tables mapped to the replica's.
#[derive(Debug)]
pub struct Job {
    pub ticket: Ticket,
    pub ops: Vec<RowOp>,
}

/// What every applying thread needs.
pub struct ApplyCtx {
    pub engine: Arc<Engine>,
    pub applied_table: TableId,
    pub log_updates: bool,
    pub progress: Arc<Progress>,
    pub stop: Arc<AtomicBool>,
}

impl ApplyCtx {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Applies `job` as worker `worker` (0: the applier itself) and marks
    /// it done. Errors when it cannot be applied (after the retries) or
    /// the replica stops while it waits for its turn.
    pub fn apply(&self, job: &Job, worker: u32) -> Result<(), ReplicaError> {
        let mut attempt = 0;
        loop {
            match self.try_apply(job, worker) {
                Ok(true) => break,
                Ok(false) => return Err(ReplicaError::Stopped),
                Err(e) if e.is_retryable() && attempt < RETRIES => attempt += 1,
                Err(e) => {
                    return Err(ReplicaError::Apply {
                        at: job.ticket.pos,
                        source: e,
                    })
                }
            }
        }
        self.progress.done(job.ticket);
        let c = self.engine.counters();
        c.replica_trx_applied.fetch_add(1, Ordering::Relaxed);
        probe_points::redoctor_replica_applied(job.ticket.pos.file, job.ticket.pos.offset);
        Ok(())
    }

    /// Ok(false): stopped while waiting for its commit turn (rolled back).
    fn try_apply(&self, job: &Job, worker: u32) -> Result<bool, EngineError> {
        let e = &self.engine;
        let mut trx = e.try_begin()?;
        let r = (|| {
            for op in &job.ops {
                match op {
                    RowOp::Put { table, id, row } => trx.put(*table, *id, row.clone())?,
                    RowOp::Delete { table, id } => {
                        trx.delete(*table, *id)?;
                    }
                }
            }
            applied::record(&mut trx, self.applied_table, job.ticket.pos, worker)
        })();
        if let Err(err) = r {
            e.rollback(trx);
            return Err(err);
        }
        let ordered = e.replica_settings().preserve_commit_order();
        if ordered {
            let t = Instant::now();
            let waited = self.progress.wait_turn(job.ticket.n, &|| self.stopping());
            if !waited {
                e.rollback(trx);
                return Ok(false);
            }
            if t.elapsed() > Duration::from_micros(5) {
                e.counters()
                    .worker_commit_order_waits
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        let entered = || {
            if ordered {
                self.progress.entered(job.ticket.n);
            }
        };
        e.commit_ordered(trx, self.log_updates, &entered)?;
        Ok(true)
    }
}

/// The worker threads.
pub struct Workers {
    queues: Vec<Arc<WorkerQueue<Job>>>,
    threads: Vec<JoinHandle<()>>,
    /// The first error a worker met (it stops then).
    pub failed: Arc<NamedMutex<Option<ReplicaError>>>,
}

/// Most jobs queued per worker before the coordinator waits.
const QUEUE_DEPTH: usize = 64;

impl Workers {
    pub fn start(n: u32, ctx: Arc<ApplyCtx>) -> Result<Workers, ReplicaError> {
        let failed = Arc::new(NamedMutex::new("replica.worker_failed", None));
        let mut queues = Vec::new();
        let mut threads = Vec::new();
        for w in 1..=n {
            let q = Arc::new(WorkerQueue::new());
            let (q2, ctx2, failed2) = (q.clone(), ctx.clone(), failed.clone());
            let t = std::thread::Builder::new()
                .name(format!("rpl_worker_{w}"))
                .spawn(move || worker_loop(w, &q2, &ctx2, &failed2))
                .map_err(|e| ReplicaError::Thread {
                    name: "rpl_worker",
                    source: e,
                })?;
            queues.push(q);
            threads.push(t);
        }
        Ok(Workers {
            queues,
            threads,
            failed,
        })
    }

    /// Queues `job` on the least busy worker; false when every queue is
    /// full (the caller waits for progress and tries again).
    pub fn assign(&self, job: Job, engine: &Engine) -> Result<(), Job> {
        let (i, len) = self
            .queues
            .iter()
            .enumerate()
            .map(|(i, q)| (i, q.queued()))
            .min_by_key(|&(_, l)| l)
            .expect("at least one worker");
        if len >= QUEUE_DEPTH {
            return Err(job);
        }
        if self.queues[i].push(job) {
            engine
                .counters()
                .applier_worker_wakeups
                .fetch_add(1, Ordering::Relaxed);
            probe_points::redoctor_replica_wakeup(1);
        }
        Ok(())
    }

    /// Stops the workers once their queues are empty (or at once when the
    /// replica stops) and joins them.
    pub fn join(self) {
        for q in &self.queues {
            q.retire();
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn worker_loop(
    w: u32,
    q: &WorkerQueue<Job>,
    ctx: &ApplyCtx,
    failed: &NamedMutex<Option<ReplicaError>>,
) {
    loop {
        let Some(job) = q.next(&|| ctx.stopping(), POLL) else {
            return;
        };
        if let Err(e) = ctx.apply(&job, w) {
            if !matches!(e, ReplicaError::Stopped) {
                failed.lock().get_or_insert(e);
            }
            ctx.stop.store(true, Ordering::Relaxed);
            return;
        }
    }
}
