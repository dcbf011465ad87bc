//! How the receiver and the applier share the hot relay log (seed 003).
//!
//! - [`Arbitration::Lock`] (MySQL before 8.0.1): the receiver holds the
//!   relay log's lock (`relay_log.lock`, MySQL's `LOCK_log`) while it
//!   appends, and fdatasyncs, a record; the applier holds the same lock
//!   while it reads a record of the hot file. Each blocks the other.
//! - [`Arbitration::Position`] (8.0.1): the receiver publishes the end of
//!   the last fully queued record in an atomic; the applier reads up to it
//!   without any lock and sleeps only when nothing is left. The receiver
//!   takes the lock only to wake a sleeping applier.
//!
//! Both designs publish `queued`, so a live switch between them is safe at
//! any moment. The applier's sleep is the seed's two-step check: it says it
//! is waiting (`applier_waiting`), then re-reads `queued` under the lock
//! before it sleeps; the receiver stores `queued` before it reads
//! `applier_waiting` (each store and load separated by a sequentially
//! consistent fence), so one of them sees the other and no notification is
//! lost (`tests/loom_relay_log.rs`
//! checks every interleaving of both designs with loom).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::counters::Counters;
use crate::probe_points;
use crate::sync::{fence, AtomicBool, AtomicU64, Mutex, MutexGuard, NamedCondvar};

use std::sync::Arc;

pub use crate::replica_settings::Arbitration;
use crate::replica_settings::ReplicaSettings;

use super::relay_log::RelayPos;

/// Packs a relay position into one word (file < 2^24, offset < 2^40).
fn pack(p: RelayPos) -> u64 {
    (p.file << 40) | (p.offset & ((1 << 40) - 1))
}

fn unpack(v: u64) -> RelayPos {
    RelayPos {
        file: v >> 40,
        offset: v & ((1 << 40) - 1),
    }
}

/// The hot relay log's shared state.
pub struct HotLog {
    settings: Arc<ReplicaSettings>,
    /// MySQL's `LOCK_log`; guards nothing but the exclusion itself.
    lock: Mutex<()>,
    /// Signalled when a record is queued and the applier sleeps.
    update: NamedCondvar,
    queued: AtomicU64,
    applier_waiting: AtomicBool,
    /// The receiver stopped: nothing more will be queued.
    closed: AtomicBool,
}

impl HotLog {
    pub fn new(settings: Arc<ReplicaSettings>, start: RelayPos) -> HotLog {
        HotLog {
            settings,
            lock: Mutex::named("relay_log.lock", ()),
            update: NamedCondvar::new("relay_log.update_cond"),
            queued: AtomicU64::new(pack(start)),
            applier_waiting: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        }
    }

    /// The design in force (`replica_relay_log_arbitration`, read at
    /// every record either thread handles).
    pub fn mode(&self) -> Arbitration {
        self.settings.arbitration()
    }

    /// The end of the last fully queued record.
    pub fn queued(&self) -> RelayPos {
        unpack(self.queued.load(Ordering::SeqCst))
    }

    fn lock_counted(&self, counters: &Counters) -> MutexGuard<'_, ()> {
        if let Some(g) = self.lock.try_lock() {
            return g;
        }
        let t = Instant::now();
        let g = self.lock.lock();
        counters
            .relay_log_lock_waits
            .fetch_add(1, Ordering::Relaxed);
        counters
            .relay_log_lock_wait_ns
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        g
    }

    /// Receiver: runs `write` (append and maybe fdatasync records; returns
    /// the new end) as the design says, then publishes the end and wakes a
    /// sleeping applier.
    pub fn queue<E>(
        &self,
        counters: &Counters,
        write: impl FnOnce() -> Result<RelayPos, E>,
    ) -> Result<(), E> {
        let guard = match self.mode() {
            Arbitration::Lock => Some(self.lock_counted(counters)),
            Arbitration::Position => None,
        };
        let end = write()?;
        self.queued.store(pack(end), Ordering::Release);
        // Store `queued`, then read `applier_waiting`; the applier stores
        // `applier_waiting`, then reads `queued`. The fences put the two
        // stores in one order both threads agree on (the store-buffering
        // pattern), so at least one side sees the other's store; they are
        // the only full barrier on this per-record path.
        fence(Ordering::SeqCst);
        if self.applier_waiting.load(Ordering::Relaxed) {
            let g = match guard {
                Some(g) => g,
                None => self.lock.lock(),
            };
            self.update.notify_all();
            drop(g);
            counters
                .receiver_applier_wakeups
                .fetch_add(1, Ordering::Relaxed);
            probe_points::redoctor_replica_wakeup(0);
        }
        Ok(())
    }

    /// Receiver: nothing more will be queued; wakes the applier.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _g = self.lock.lock();
        self.update.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Applier: waits up to `timeout` until something after `at` is queued;
    /// returns the queued end (equal to `at` on timeout or close).
    pub fn wait_beyond(&self, counters: &Counters, at: RelayPos, timeout: Duration) -> RelayPos {
        let q = self.queued();
        if q > at || self.is_closed() {
            return q;
        }
        let deadline = Instant::now() + timeout;
        self.applier_waiting.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut g = self.lock.lock();
        counters.applier_waits.fetch_add(1, Ordering::Relaxed);
        loop {
            let q = self.queued();
            if q > at || self.is_closed() {
                break;
            }
            let (g2, timed_out) = self.update.wait_until(g, deadline);
            g = g2;
            if timed_out {
                break;
            }
        }
        self.applier_waiting.store(false, Ordering::SeqCst);
        drop(g);
        self.queued()
    }

    /// Applier: reads with `read` as the design says: under the lock in
    /// `Lock` mode when `hot` (the file the receiver appends to), freely
    /// otherwise.
    pub fn read<T>(&self, counters: &Counters, hot: bool, read: impl FnOnce() -> T) -> T {
        match (self.mode(), hot) {
            (Arbitration::Lock, true) => {
                let _g = self.lock_counted(counters);
                read()
            }
            _ => read(),
        }
    }
}
