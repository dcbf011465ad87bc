//! The receiver thread (`rpl_receiver`, MySQL's I/O thread): fetches the
//! source's binlog events after the last position it queued and appends
//! each transaction to the relay log as one record, preceded by a table
//! map the first time a table appears. Each record is queued through the
//! arbitration design ([`super::arbitration`]): appended, fdatasynced every
//! `sync_relay_log` transactions, its end published. At
//! `relay_log_space_limit` it waits for the applier to purge files (after
//! rotating, so the applier can finish the file it reads).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::binlog::file::BinlogPos;
use crate::counters::Counters;
use crate::data::record::{self, RedoRecord, RowOp};
use crate::named_locks::{NamedCondvar, NamedMutex};
use crate::probe_points;

use super::arbitration::HotLog;
use super::relay_log::{RelayRecord, RelayWriter};
use super::status::Status;
use super::{ReplicaError, Source};
use crate::replica_settings::ReplicaSettings;

/// Relay-log bytes not yet purged, and the receiver's wait for them to drop.
pub struct Space {
    used: AtomicU64,
    lock: NamedMutex<()>,
    freed: NamedCondvar,
}

impl Default for Space {
    fn default() -> Self {
        Space {
            used: AtomicU64::new(0),
            lock: NamedMutex::new("relay_log.space", ()),
            freed: NamedCondvar::new("relay_log.space_freed"),
        }
    }
}

impl Space {
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }
    pub fn add(&self, n: u64) {
        self.used.fetch_add(n, Ordering::SeqCst);
    }
    /// The applier purged a file of `n` bytes.
    pub fn free(&self, n: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                Some(u.saturating_sub(n))
            });
        let _g = self.lock.lock();
        self.freed.notify_all();
    }
    fn wait_below(&self, limit: u64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut g = self.lock.lock();
        while self.used() >= limit {
            let (g2, timed_out) = self.freed.wait_until(g, deadline);
            g = g2;
            if timed_out {
                break;
            }
        }
    }
}

/// What the receiver thread owns.
pub struct Receiver {
    pub source: Box<dyn Source>,
    pub writer: RelayWriter,
    pub hot: Arc<HotLog>,
    pub settings: Arc<ReplicaSettings>,
    pub counters: Arc<Counters>,
    pub space: Arc<Space>,
    pub status: Arc<Status>,
    pub stop: Arc<AtomicBool>,
    /// The source position after the last event queued.
    pub pos: BinlogPos,
}

/// Events fetched per request.
const BATCH: usize = 512;

impl Receiver {
    pub fn run(mut self) -> Result<(), ReplicaError> {
        let mut mapped: HashSet<u32> = HashSet::new();
        let mut rec = Vec::with_capacity(4096);
        while !self.stop.load(Ordering::Relaxed) {
            let limit = self.settings.relay_log_space_limit();
            if limit > 0 && self.space.used() >= limit {
                self.wait_for_space(limit)?;
                continue;
            }
            let events = self
                .source
                .read_after(self.pos, BATCH, Duration::from_millis(100))?;
            if events.is_empty() {
                continue;
            }
            self.status.received(events.last().expect("non-empty").end);
            for ev in events {
                rec.clear();
                for table in tables_of(&ev.payload, ev.end)? {
                    if mapped.insert(table) {
                        let (name, shape) = self.source.table(table)?;
                        RelayRecord::TableMap {
                            source_table: table,
                            shape,
                            name,
                        }
                        .encode(&mut rec);
                    }
                }
                RelayRecord::Trx {
                    source_end: ev.end,
                    xid: ev.xid,
                    clock: ev.clock,
                    payload: ev.payload,
                }
                .encode(&mut rec);
                self.queue(&rec)?;
                self.pos = ev.end;
            }
        }
        Ok(())
    }

    /// Appends one transaction's records through the arbitration design.
    fn queue(&mut self, rec: &[u8]) -> Result<(), ReplicaError> {
        let (c, writer, settings) = (&self.counters, &mut self.writer, &self.settings);
        self.hot.queue(c, || {
            let n = writer.append(rec)?;
            c.relay_log_writes.fetch_add(1, Ordering::Relaxed);
            c.relay_log_bytes.fetch_add(n, Ordering::Relaxed);
            let t = Instant::now();
            if writer.maybe_sync(1, settings.sync_relay_log())? {
                let ns = t.elapsed().as_nanos() as u64;
                c.relay_log_fsyncs.fetch_add(1, Ordering::Relaxed);
                c.relay_log_fsync_ns.fetch_add(ns, Ordering::Relaxed);
                probe_points::redoctor_relay_sync(ns);
            }
            if writer.needs_rotation() {
                writer.rotate()?;
            }
            Ok::<_, ReplicaError>(writer.position())
        })?;
        self.space.add(rec.len() as u64);
        Ok(())
    }

    fn wait_for_space(&mut self, limit: u64) -> Result<(), ReplicaError> {
        // The applier purges only files it has read to the end: hand it
        // a complete file first, as MySQL rotates at the space limit.
        if !self.writer.is_empty() {
            let writer = &mut self.writer;
            self.hot.queue(&self.counters, || {
                writer.rotate()?;
                Ok::<_, ReplicaError>(writer.position())
            })?;
        }
        self.counters
            .receiver_space_waits
            .fetch_add(1, Ordering::Relaxed);
        self.space.wait_below(limit, Duration::from_millis(100));
        Ok(())
    }
}

/// The source tables a transaction's payload touches, in first-seen order
/// (the rows are skipped, not decoded: the applier decodes them).
pub fn tables_of(payload: &[u8], at: BinlogPos) -> Result<Vec<u32>, ReplicaError> {
    record::table_ids(payload).map_err(|e| ReplicaError::BadEvent {
        at,
        why: e.to_string(),
    })
}

/// A binlog event's row operations.
pub fn decode_ops(payload: &[u8], at: BinlogPos) -> Result<Vec<RowOp>, ReplicaError> {
    match record::decode(payload) {
        Ok(RedoRecord::Commit { ops, .. }) => Ok(ops),
        Ok(_) => Err(ReplicaError::BadEvent {
            at,
            why: "not a transaction's row changes".into(),
        }),
        Err(e) => Err(ReplicaError::BadEvent {
            at,
            why: e.to_string(),
        }),
    }
}
