//! The applier thread (`rpl_applier`, MySQL's SQL thread / MTS
//! coordinator): reads the relay log up to the last fully queued record
//! (through the arbitration design), maps the source's tables to the
//! replica's, skips transactions already applied (after a restart), and
//! applies each transaction itself (`replica_parallel_workers=0`) or hands
//! it to a worker once its commit group's predecessors are applied
//! (`LOGICAL_CLOCK`). It drains the workers at each source file change
//! (sequence numbers start again there), removes each relay file it has
//! read, and every [`COMPACT_EVERY`] transactions writes the low-water mark
//! (see [`super::applied`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::binlog::file::BinlogPos;
use crate::data::record::RowOp;
use crate::data::table::TableId;
use crate::vfs::Vfs;

use super::applied;
use super::arbitration::HotLog;
use super::receiver::{decode_ops, Space};
use super::relay_log::{RelayReader, RelayRecord};
use super::schedule::Ticket;
use super::status::Status;
use super::workers::{ApplyCtx, Job, Workers};
use super::ReplicaError;

/// Transactions between two low-water records.
pub const COMPACT_EVERY: u64 = 1000;

pub struct Applier {
    pub ctx: Arc<ApplyCtx>,
    pub hot: Arc<HotLog>,
    pub vfs: Arc<dyn Vfs>,
    pub first_relay_file: u64,
    /// Applied after the low-water mark (from the applied table).
    pub skip: BTreeSet<BinlogPos>,
    /// The low-water mark at start: everything up to it is applied.
    pub start: BinlogPos,
    pub workers: u32,
    pub space: Arc<Space>,
    pub status: Arc<Status>,
}

impl Applier {
    pub fn run(mut self) -> Result<(), ReplicaError> {
        let mut workers = self.start_workers(self.workers)?;
        let r = self.coordinate(&mut workers);
        let worker_error = workers.and_then(|w| {
            let e = w.failed.lock().take();
            w.join();
            e
        });
        // Whatever stopped it, record how far it got (when it can).
        let compacted = applied::compact(
            &self.ctx.engine,
            self.ctx.applied_table,
            self.ctx.progress.low_water(),
        );
        match (r, worker_error) {
            (Err(e), _) | (Ok(()), Some(e)) => Err(e),
            (Ok(()), None) => compacted.map_err(|e| ReplicaError::Apply {
                at: self.ctx.progress.low_water(),
                source: e,
            }),
        }
    }

    fn start_workers(&mut self, n: u32) -> Result<Option<Workers>, ReplicaError> {
        self.workers = n;
        match n {
            0 => Ok(None),
            n => Workers::start(n, self.ctx.clone()).map(Some),
        }
    }

    /// `SET GLOBAL replica_parallel_workers` while running: drain the
    /// workers (every dispatched transaction applied), then start the new
    /// count (MySQL needs STOP/START REPLICA SQL_THREAD for this).
    fn follow_worker_setting(
        &mut self,
        workers: &mut Option<Workers>,
        last: u64,
    ) -> Result<(), ReplicaError> {
        let want = self.ctx.engine.replica_settings().parallel_workers();
        if want == self.workers {
            return Ok(());
        }
        self.drain(last, workers.as_ref())?;
        if let Some(w) = workers.take() {
            let failed = w.failed.lock().take();
            w.join();
            if let Some(e) = failed {
                return Err(e);
            }
        }
        *workers = self.start_workers(want)?;
        Ok(())
    }

    fn coordinate(&mut self, workers: &mut Option<Workers>) -> Result<(), ReplicaError> {
        let counters = self.ctx.engine.counters().clone();
        let mut reader = RelayReader::open(self.vfs.clone(), self.first_relay_file)?;
        let mut tables: HashMap<u32, TableId> = HashMap::new();
        let mut ticket_n = 0u64;
        let mut source_file: Option<u64> = None;
        let mut since_compact = 0u64;
        loop {
            if self.ctx.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            self.follow_worker_setting(workers, ticket_n)?;
            let at = reader.position();
            let queued = self.hot.queued();
            let hot = queued.file == at.file;
            let upto = if hot {
                queued.offset
            } else {
                reader.file_len()?
            };
            let rec = self.hot.read(&counters, hot, || reader.next(upto))?;
            let Some(rec) = rec else {
                if queued.file > at.file {
                    let (next, size) = reader.next_file()?;
                    reader = next;
                    self.space.free(size);
                } else {
                    self.hot
                        .wait_beyond(&counters, at, Duration::from_millis(100));
                }
                continue;
            };
            let (source_end, clock, payload) = match rec {
                RelayRecord::TableMap {
                    source_table,
                    shape,
                    name,
                } => {
                    let id = self.resolve_table(&name, shape)?;
                    tables.insert(source_table, id);
                    continue;
                }
                RelayRecord::Trx {
                    source_end,
                    clock,
                    payload,
                    ..
                } => (source_end, clock, payload),
            };
            if source_file != Some(source_end.file) {
                // Sequence numbers start again in each source file: every
                // transaction of the previous one must be applied first.
                self.drain(ticket_n, workers.as_ref())?;
                // Every transaction of the file before this one is applied
                // (it is the first after the start position, or the file
                // is new and this is its first).
                self.ctx.progress.new_file(clock.sequence.saturating_sub(1));
                source_file = Some(source_end.file);
            }
            ticket_n += 1;
            let ticket = Ticket {
                n: ticket_n,
                pos: source_end,
                sequence: clock.sequence,
            };
            if source_end <= self.start || self.skip.remove(&source_end) {
                counters.replica_trx_skipped.fetch_add(1, Ordering::Relaxed);
                self.ctx.progress.done(ticket);
                continue;
            }
            let ops = map_ops(decode_ops(&payload, source_end)?, &tables, source_end)?;
            let job = Job { ticket, ops };
            match workers.as_ref() {
                None => self.ctx.apply(&job, 0)?,
                Some(w) => self.dispatch(w, job, clock.last_committed)?,
            }
            since_compact += 1;
            if since_compact >= COMPACT_EVERY {
                since_compact = 0;
                let lw = self.ctx.progress.low_water();
                applied::compact(&self.ctx.engine, self.ctx.applied_table, lw)
                    .map_err(|e| ReplicaError::Apply { at: lw, source: e })?;
            }
        }
    }

    /// Hands `job` to a worker once every transaction up to
    /// `last_committed` is applied and a queue has room.
    fn dispatch(&self, w: &Workers, mut job: Job, last_committed: u64) -> Result<(), ReplicaError> {
        let c = self.ctx.engine.counters();
        let progress = &self.ctx.progress;
        if !progress.clock_ready(last_committed) {
            c.applier_worker_waits.fetch_add(1, Ordering::Relaxed);
            while !progress.wait_clock(last_committed, Duration::from_millis(50)) {
                self.check_workers(w)?;
            }
        }
        loop {
            match w.assign(job, &self.ctx.engine) {
                Ok(()) => return Ok(()),
                Err(back) => {
                    job = back;
                    c.applier_worker_waits.fetch_add(1, Ordering::Relaxed);
                    progress.wait_all(job.ticket.n - 1, Duration::from_millis(1));
                    self.check_workers(w)?;
                }
            }
        }
    }

    fn check_workers(&self, w: &Workers) -> Result<(), ReplicaError> {
        if self.ctx.stop.load(Ordering::Relaxed) {
            return Err(w.failed.lock().take().unwrap_or(ReplicaError::Stopped));
        }
        Ok(())
    }

    fn drain(&self, last: u64, workers: Option<&Workers>) -> Result<(), ReplicaError> {
        let Some(w) = workers else { return Ok(()) };
        if self.ctx.progress.outstanding(last) > 0 {
            self.ctx
                .engine
                .counters()
                .applier_worker_waits
                .fetch_add(1, Ordering::Relaxed);
        }
        while !self.ctx.progress.wait_all(last, Duration::from_millis(50)) {
            self.check_workers(w)?;
        }
        Ok(())
    }

    fn resolve_table(
        &self,
        name: &str,
        shape: crate::data::table::Shape,
    ) -> Result<TableId, ReplicaError> {
        match self.ctx.engine.table_id_shape(name) {
            Some((id, s)) if s == shape => Ok(id),
            Some(_) => Err(ReplicaError::TableShape { name: name.into() }),
            None => Err(ReplicaError::MissingTable { name: name.into() }),
        }
    }
}

fn map_ops(
    ops: Vec<RowOp>,
    tables: &HashMap<u32, TableId>,
    at: BinlogPos,
) -> Result<Vec<RowOp>, ReplicaError> {
    let map = |t: u32| {
        tables
            .get(&t)
            .copied()
            .ok_or_else(|| ReplicaError::BadEvent {
                at,
                why: format!("source table {t} has no table map before it"),
            })
    };
    ops.into_iter()
        .map(|op| {
            Ok(match op {
                RowOp::Put { table, id, row } => RowOp::Put {
                    table: map(table)?,
                    id,
                    row,
                },
                RowOp::Delete { table, id } => RowOp::Delete {
                    table: map(table)?,
                    id,
                },
            })
        })
        .collect()
}
