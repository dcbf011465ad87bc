//! The transaction system: id assignment and the set of active transactions.
//!
//! As in MySQL 8.0.27+, active transactions are kept in shards by trx id
//! (256 here), each behind its own mutex, so starting and ending
//! transactions on different shards never contend. Each shard is on its own
//! cache line.
//!
//! What is still global, and why:
//!
//! * **Id assignment** — one atomic counter ([`TrxSys::assign_id`]), not a
//!   mutex: ids must be unique and increasing (recovery resumes after the
//!   largest id in the log). It is one contended cache line per `begin`.
//! * **Read views** — none: reads see the latest committed version (READ
//!   COMMITTED without undo), so no operation copies the active list. MySQL's
//!   global `trx_sys` mutex protects exactly that copy; here, only
//!   monitoring ([`TrxSys::active_ids`]) walks every shard, one shard mutex
//!   at a time.
//!
//! Contention is measured: every shard access first tries the mutex and
//! counts a failed try as contended before blocking. The counters live in
//! each shard, on its cache line, and are summed only by [`TrxSys::stats`],
//! so counting adds no globally shared cache line to `begin` or commit.
//!
//! Each shard mutex is a `std` mutex registered as `trx_sys.shard<N>` (see
//! [`crate::named_locks`]), so futex waits on it are attributed to the shard.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use crate::named_locks::{self, Registration};

/// Shards of the active set (MySQL uses 256).
pub const TRX_SHARDS: usize = 256;

/// Trx-sys counters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TrxSysStats {
    /// Transactions registered as active (started).
    pub registered: u64,
    /// Transactions active now.
    pub active: u64,
    /// Shard mutex acquisitions that found the mutex held.
    pub shard_contended: u64,
    /// Shard mutex acquisitions in total.
    pub shard_acquisitions: u64,
}

#[derive(Default)]
struct Shard {
    /// Active trx id → start time.
    active: Mutex<HashMap<u64, Instant>>,
    count: AtomicU64,
    registered: AtomicU64,
    contended: AtomicU64,
    acquisitions: AtomicU64,
}

pub struct TrxSys {
    // Unregistered before the shards are freed (fields drop in order).
    _names: Box<[Registration<'static>]>,
    next_id: CachePadded<AtomicU64>,
    shards: Box<[CachePadded<Shard>]>,
}

impl std::fmt::Debug for TrxSys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrxSys")
            .field("next_id", &self.peek_next_id())
            .field("stats", &self.stats())
            .finish()
    }
}

impl TrxSys {
    /// A trx-sys whose next id is `next_id`.
    pub fn new(next_id: u64) -> TrxSys {
        let shards: Box<[CachePadded<Shard>]> =
            (0..TRX_SHARDS).map(|_| CachePadded::default()).collect();
        let names = shards
            .iter()
            .enumerate()
            .map(|(i, s)| named_locks::register(&format!("trx_sys.shard{i}"), &s.active))
            .collect();
        TrxSys {
            _names: names,
            next_id: CachePadded::new(AtomicU64::new(next_id)),
            shards,
        }
    }

    /// A new unique, increasing transaction id (the one global step).
    pub fn assign_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The id the next transaction will get (checkpoints record it).
    pub fn peek_next_id(&self) -> u64 {
        self.next_id.load(Ordering::Acquire)
    }

    fn shard(&self, id: u64) -> &Shard {
        &self.shards[(id as usize) % TRX_SHARDS]
    }

    fn sum(&self, counter: impl Fn(&Shard) -> &AtomicU64) -> u64 {
        self.shards
            .iter()
            .map(|s| counter(s).load(Ordering::Relaxed))
            .sum()
    }

    /// Adds `id` to the active set.
    pub fn register(&self, id: u64) {
        let shard = self.shard(id);
        let fresh = shard.lock().insert(id, Instant::now()).is_none();
        assert!(fresh, "trx id {id} registered twice");
        shard.count.fetch_add(1, Ordering::Relaxed);
        shard.registered.fetch_add(1, Ordering::Relaxed);
    }

    /// Removes `id` from the active set (no-op if absent).
    pub fn deregister(&self, id: u64) {
        let shard = self.shard(id);
        if shard.lock().remove(&id).is_some() {
            shard.count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether `id` is active.
    pub fn is_active(&self, id: u64) -> bool {
        self.shard(id).lock().contains_key(&id)
    }

    /// Number of active transactions (sum of per-shard counts; exact when quiet).
    pub fn active_count(&self) -> u64 {
        self.sum(|s| &s.count)
    }

    /// Active ids with their age, oldest first (monitoring: walks every shard).
    pub fn active_ids(&self) -> Vec<(u64, Instant)> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            all.extend(shard.lock().iter().map(|(&id, &t)| (id, t)));
        }
        all.sort_by_key(|&(id, t)| (t, id));
        all
    }

    pub fn stats(&self) -> TrxSysStats {
        TrxSysStats {
            registered: self.sum(|s| &s.registered),
            active: self.active_count(),
            shard_contended: self.sum(|s| &s.contended),
            shard_acquisitions: self.sum(|s| &s.acquisitions),
        }
    }
}

impl Shard {
    /// Locks the active set, counting the acquisition (and whether it found
    /// the mutex held).
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Instant>> {
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
        if let Some(g) = named_locks::try_lock(&self.active) {
            return g;
        }
        self.contended.fetch_add(1, Ordering::Relaxed);
        named_locks::lock(&self.active)
    }
}

/// A transaction's entry in the active set; dropping it removes the entry.
pub struct Registered {
    sys: std::sync::Arc<TrxSys>,
    id: u64,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Registered({})", self.id)
    }
}

impl Registered {
    pub fn new(sys: &std::sync::Arc<TrxSys>, id: u64) -> Registered {
        sys.register(id);
        Registered {
            sys: sys.clone(),
            id,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.sys.deregister(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn register_and_deregister_across_threads() {
        let sys = Arc::new(TrxSys::new(1));
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let sys = sys.clone();
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let id = sys.assign_id();
                        sys.register(id);
                        assert!(sys.is_active(id));
                        sys.deregister(id);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let st = sys.stats();
        assert_eq!((st.registered, st.active), (16_000, 0));
        assert_eq!(sys.peek_next_id(), 16_001);
        assert!(st.shard_acquisitions >= 48_000);
        assert!(sys.active_ids().is_empty());
    }
}
