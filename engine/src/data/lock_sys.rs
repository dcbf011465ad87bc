//! Row locks, sharded like MySQL 8.0.21's lock-sys.
//!
//! Every lock is an exclusive record lock on a [`RowKey`] `(table, id)`.
//! Lock queues live in `shards` hash maps, each behind its own mutex and
//! chosen by hashing the key, so uncontended lock and release operations on
//! different rows rarely touch the same mutex (MySQL 8.0.21 split the global
//! `lock_sys->mutex` the same way).
//!
//! A queue has one holder and a FIFO of waiters. Releasing a lock grants it
//! to the first waiter and wakes that waiter alone: each waiter parks on its
//! own condition variable, paired with its shard's mutex, so whether it was
//! granted is decided under the shard mutex and a grant racing with the
//! waiter's timeout is resolved in favour of the grant (the waiter keeps the
//! lock).
//!
//! # Deadlock detection
//!
//! A global wait-for map (waiting trx → trx holding the lock it waits for)
//! sits behind a separate mutex taken only on the wait path — when a request
//! must wait, when a lock with waiters is handed over, and when a waiter
//! gives up — much as lock-sys takes its global latch exclusively for
//! deadlock detection. Before a request blocks, the chain of edges starting
//! at the lock's holder is followed; if it leads back to the requester, the
//! request fails with [`LockError::Deadlock`] without being enqueued (the
//! requester is the victim).
//!
//! Edges are kept exact: when a lock is handed over, the remaining waiters'
//! edges are repointed at the new holder before the shard mutex is released,
//! so the new holder — which cannot run before it re-acquires that mutex —
//! never requests another lock while stale edges exist. A newly granted
//! transaction waits for nothing, so a hand-over never closes a cycle; every
//! cycle is therefore closed by a request, which detects it.
//!
//! Latch order: a shard mutex, then the wait-for mutex. No thread holds two
//! shard mutexes at once.
//!
//! # Names (see [`crate::named_locks`])
//!
//! The shard mutexes are `std` mutexes registered as `lock_sys.shard<N>`,
//! the wait-for mutex as `lock_sys.wait_for`. A waiter parks on its
//! thread's own condition variable, `lock_sys.row_wait` (one per thread,
//! reused by every wait of that thread), so a futex wait of a row-lock
//! waiter is attributed to the row-lock wait rather than to a per-wait
//! allocation.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::data::table::TableId;
use crate::named_locks::{self, NamedCondvar, NamedMutex, Registration};

/// The key of a row lock: `(table, primary key)`.
pub type RowKey = (TableId, i64);

/// Default number of lock-sys shards (as in MySQL 8.0.21).
pub const DEFAULT_SHARDS: usize = 512;

/// Default lock wait timeout (`innodb_lock_wait_timeout` = 50 s).
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(50);

/// How a lock request was satisfied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    /// The lock is held; `waited` is true if the request had to wait.
    Granted { waited: bool },
}

/// Why a lock request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Waiting would close a cycle in the wait-for graph; the requester is
    /// the victim.
    #[error("Deadlock found when trying to get lock; try restarting transaction")]
    Deadlock,
    /// The lock was not granted within the lock wait timeout.
    #[error("Lock wait timeout exceeded; try restarting transaction")]
    LockWaitTimeout,
}

/// Lock-sys counters (like `Innodb_row_lock_waits`, `Innodb_deadlocks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Requests that had to wait.
    pub waits: u64,
    /// Requests refused because they would deadlock.
    pub deadlocks: u64,
    /// Waits that ended in a lock wait timeout.
    pub timeouts: u64,
}

/// A cheap, well-mixed hasher for lock keys and transaction ids (not
/// DoS-resistant: keys are chosen by the engine, not by clients).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        // splitmix64 finaliser: every output bit depends on every input bit.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Hash builder for maps keyed by [`RowKey`] or transaction id.
pub(crate) type BuildKeyHasher = BuildHasherDefault<KeyHasher>;

/// One parked lock request.
struct Waiter {
    trx_id: u64,
    /// Set (under the shard mutex) when the lock is handed to this waiter.
    granted: AtomicBool,
    /// The waiting thread's condvar, paired with the shard mutex.
    wake: Arc<NamedCondvar>,
}

thread_local! {
    /// Registered on a thread's first row-lock wait.
    static ROW_WAIT: Arc<NamedCondvar> = Arc::new(NamedCondvar::new("lock_sys.row_wait"));
}

/// The lock on one row: its holder and the FIFO of waiting requests.
struct LockQueue {
    holder: u64,
    waiters: VecDeque<Arc<Waiter>>,
}

type Shard = HashMap<RowKey, LockQueue, BuildKeyHasher>;

#[derive(Default)]
struct Counters {
    waits: AtomicU64,
    deadlocks: AtomicU64,
    timeouts: AtomicU64,
}

/// The lock system: exclusive row locks with FIFO waits, deadlock detection
/// and lock wait timeouts.
pub struct LockSys {
    // Unregistered before the shards are freed (fields drop in order).
    _names: Box<[Registration<'static>]>,
    shards: Box<[CachePadded<Mutex<Shard>>]>,
    /// Waiting trx → trx holding the lock it waits for.
    wait_for: NamedMutex<HashMap<u64, u64, BuildKeyHasher>>,
    wait_timeout_nanos: AtomicU64,
    counters: CachePadded<Counters>,
}

impl Default for LockSys {
    /// [`DEFAULT_SHARDS`] shards and [`DEFAULT_WAIT_TIMEOUT`].
    fn default() -> LockSys {
        LockSys::new(DEFAULT_SHARDS, DEFAULT_WAIT_TIMEOUT)
    }
}

impl std::fmt::Debug for LockSys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockSys")
            .field("shards", &self.shards.len())
            .field("wait_timeout", &self.wait_timeout())
            .field("stats", &self.stats())
            .finish()
    }
}

impl LockSys {
    /// A lock system with `shards` shards (at least 1) and the given lock
    /// wait timeout.
    pub fn new(shards: usize, wait_timeout: Duration) -> LockSys {
        let shards: Box<[CachePadded<Mutex<Shard>>]> = (0..shards.max(1))
            .map(|_| CachePadded::new(Mutex::new(Shard::default())))
            .collect();
        let names = shards
            .iter()
            .enumerate()
            .map(|(i, s)| named_locks::register(&format!("lock_sys.shard{i}"), &**s))
            .collect();
        let lock_sys = LockSys {
            _names: names,
            shards,
            wait_for: NamedMutex::new("lock_sys.wait_for", HashMap::default()),
            wait_timeout_nanos: AtomicU64::new(0),
            counters: CachePadded::new(Counters::default()),
        };
        lock_sys.set_wait_timeout(wait_timeout);
        lock_sys
    }

    /// Changes the lock wait timeout; applies to waits that start afterwards.
    pub fn set_wait_timeout(&self, timeout: Duration) {
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        self.wait_timeout_nanos.store(nanos, Relaxed);
    }

    /// The current lock wait timeout.
    pub fn wait_timeout(&self) -> Duration {
        Duration::from_nanos(self.wait_timeout_nanos.load(Relaxed))
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> LockStats {
        LockStats {
            waits: self.counters.waits.load(Relaxed),
            deadlocks: self.counters.deadlocks.load(Relaxed),
            timeouts: self.counters.timeouts.load(Relaxed),
        }
    }

    /// The transaction holding the lock on `key`, if any.
    pub fn holder(&self, key: RowKey) -> Option<u64> {
        self.shard(key).get(&key).map(|q| q.holder)
    }

    /// Locks the shard of `key`.
    fn shard(&self, key: RowKey) -> MutexGuard<'_, Shard> {
        named_locks::lock(&self.shards[self.shard_index(key)])
    }

    fn shard_index(&self, key: RowKey) -> usize {
        // The high half of the hash picks the shard; the shard's map uses the
        // low bits, so keys sharing a shard still spread over its buckets.
        let hash = BuildKeyHasher::default().hash_one(key) >> 32;
        ((hash * self.shards.len() as u64) >> 32) as usize
    }

    /// Acquires the exclusive lock on `key` for `trx_id`, waiting (FIFO) while
    /// another transaction holds it. Re-acquiring a held lock is free.
    ///
    /// Fails with [`LockError::Deadlock`] if waiting would close a cycle of
    /// waiting transactions (nothing was enqueued), or with
    /// [`LockError::LockWaitTimeout`] if the lock is not granted within the
    /// wait timeout. Either way the transaction keeps the locks it holds.
    pub fn lock(&self, trx_id: u64, key: RowKey) -> Result<LockOutcome, LockError> {
        self.lock_with(trx_id, key, &mut || {})
    }

    /// Like [`lock`](Self::lock), but calls `before_wait` once, after the
    /// request is queued and before the thread sleeps, if it must wait (the
    /// engine gives the concurrency-gate slot up there). It runs under the
    /// shard mutex: it must not take lock-sys latches.
    pub fn lock_with(
        &self,
        trx_id: u64,
        key: RowKey,
        before_wait: &mut dyn FnMut(),
    ) -> Result<LockOutcome, LockError> {
        let mut queues = self.shard(key);
        let holder = match queues.entry(key) {
            Entry::Vacant(vacant) => {
                vacant.insert(LockQueue {
                    holder: trx_id,
                    waiters: VecDeque::new(),
                });
                return Ok(LockOutcome::Granted { waited: false });
            }
            Entry::Occupied(queue) if queue.get().holder == trx_id => {
                return Ok(LockOutcome::Granted { waited: false });
            }
            Entry::Occupied(queue) => queue.get().holder,
        };

        {
            let mut wait_for = self.wait_for.lock();
            if chain_reaches(&wait_for, holder, trx_id) {
                self.counters.deadlocks.fetch_add(1, Relaxed);
                return Err(LockError::Deadlock);
            }
            wait_for.insert(trx_id, holder);
        }
        let waiter = Arc::new(Waiter {
            trx_id,
            granted: AtomicBool::new(false),
            wake: ROW_WAIT.with(Arc::clone),
        });
        queues
            .get_mut(&key)
            .expect("queue exists: its shard mutex is held")
            .waiters
            .push_back(Arc::clone(&waiter));
        self.counters.waits.fetch_add(1, Relaxed);
        before_wait();

        let deadline = Instant::now().checked_add(self.wait_timeout());
        loop {
            if waiter.granted.load(Relaxed) {
                return Ok(LockOutcome::Granted { waited: true });
            }
            let timed_out;
            (queues, timed_out) = match deadline {
                Some(deadline) => waiter.wake.wait_until(queues, deadline),
                None => (waiter.wake.wait(queues), false),
            };
            // Granted and timed out at once: the grant wins.
            if timed_out && !waiter.granted.load(Relaxed) {
                if let Some(queue) = queues.get_mut(&key) {
                    queue.waiters.retain(|w| !Arc::ptr_eq(w, &waiter));
                }
                self.wait_for.lock().remove(&trx_id);
                self.counters.timeouts.fetch_add(1, Relaxed);
                return Err(LockError::LockWaitTimeout);
            }
        }
    }

    /// Releases `trx_id`'s locks on `keys`, handing each to its first waiter.
    /// Keys `trx_id` does not hold are ignored.
    pub fn release_all(&self, trx_id: u64, keys: &[RowKey]) {
        for &key in keys {
            let mut queues = self.shard(key);
            let Entry::Occupied(mut entry) = queues.entry(key) else {
                continue;
            };
            if entry.get().holder != trx_id {
                continue;
            }
            let queue = entry.get_mut();
            let Some(next) = queue.waiters.pop_front() else {
                entry.remove();
                continue;
            };
            queue.holder = next.trx_id;
            next.granted.store(true, Relaxed);
            {
                let mut wait_for = self.wait_for.lock();
                wait_for.remove(&next.trx_id);
                for waiter in &queue.waiters {
                    wait_for.insert(waiter.trx_id, next.trx_id);
                }
            }
            // Woken after the shard mutex is released, so the waiter does
            // not wake into a held mutex; it reads `granted` under it.
            drop(queues);
            next.wake.notify_one();
        }
    }

    /// True if no lock is held or awaited (for tests and verification).
    pub fn is_idle(&self) -> bool {
        self.wait_for.lock().is_empty()
            && self.shards.iter().all(|s| named_locks::lock(s).is_empty())
    }
}

/// Whether following wait-for edges from `from` reaches `target`.
fn chain_reaches<S: BuildHasher>(wait_for: &HashMap<u64, u64, S>, from: u64, target: u64) -> bool {
    let mut current = from;
    // The map holds no cycle, but bound the walk anyway.
    for _ in 0..=wait_for.len() {
        if current == target {
            return true;
        }
        match wait_for.get(&current) {
            Some(&next) => current = next,
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::AtomicUsize;
    use std::thread;

    const K1: RowKey = (1, 1);
    const K2: RowKey = (1, 2);
    const K3: RowKey = (1, 3);

    fn wait_until(cond: impl Fn() -> bool) {
        let start = Instant::now();
        while !cond() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "condition never held"
            );
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn uncontended_lock_reacquire_and_release() {
        let ls = LockSys::new(4, Duration::from_secs(1));
        assert_eq!(ls.lock(1, K1), Ok(LockOutcome::Granted { waited: false }));
        assert_eq!(ls.lock(1, K1), Ok(LockOutcome::Granted { waited: false }));
        assert_eq!(ls.lock(2, K2), Ok(LockOutcome::Granted { waited: false }));
        assert_eq!(ls.holder(K1), Some(1));
        ls.release_all(2, &[K1]); // not the holder: ignored
        assert_eq!(ls.holder(K1), Some(1));
        ls.release_all(1, &[K1, K3]);
        ls.release_all(2, &[K2]);
        assert!(ls.is_idle());
        assert_eq!(ls.stats(), LockStats::default());
    }

    #[test]
    fn waiters_are_granted_in_fifo_order() {
        let ls = Arc::new(LockSys::new(8, Duration::from_secs(10)));
        ls.lock(1, K1).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for trx in 2..=4u64 {
            let (ls2, order2) = (Arc::clone(&ls), Arc::clone(&order));
            handles.push(thread::spawn(move || {
                assert_eq!(ls2.lock(trx, K1), Ok(LockOutcome::Granted { waited: true }));
                order2.lock().push(trx);
                ls2.release_all(trx, &[K1]);
            }));
            wait_until(|| ls.stats().waits == trx - 1);
        }
        ls.release_all(1, &[K1]);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*order.lock(), vec![2, 3, 4]);
        assert!(ls.is_idle());
    }

    #[test]
    fn two_way_deadlock_picks_the_requester() {
        let ls = Arc::new(LockSys::new(8, Duration::from_secs(10)));
        ls.lock(1, K1).unwrap();
        ls.lock(2, K2).unwrap();
        let ls2 = Arc::clone(&ls);
        let t1 = thread::spawn(move || ls2.lock(1, K2));
        wait_until(|| ls.stats().waits == 1);
        assert_eq!(ls.lock(2, K1), Err(LockError::Deadlock));
        assert_eq!(ls.stats().deadlocks, 1);
        ls.release_all(2, &[K2]);
        assert_eq!(
            t1.join().unwrap(),
            Ok(LockOutcome::Granted { waited: true })
        );
        ls.release_all(1, &[K1, K2]);
        assert!(ls.is_idle());
    }

    #[test]
    fn three_way_deadlock_through_a_handed_over_lock() {
        // 1 holds K1; 2 and 3 queue on K1. 1 releases: 2 gets K1, 3 now waits
        // for 2. 3 holds K3; 2 requests K3 → waits for 3 → cycle 2→3→2.
        let ls = Arc::new(LockSys::new(8, Duration::from_secs(10)));
        ls.lock(1, K1).unwrap();
        ls.lock(3, K3).unwrap();
        let ls2 = Arc::clone(&ls);
        let t2 = thread::spawn(move || {
            ls2.lock(2, K1).unwrap();
            ls2.lock(2, K3)
        });
        wait_until(|| ls.stats().waits == 1);
        let ls3 = Arc::clone(&ls);
        let t3 = thread::spawn(move || ls3.lock(3, K1));
        wait_until(|| ls.stats().waits == 2);
        ls.release_all(1, &[K1]);
        // 3's edge now points at 2, so 2's request for K3 closes the cycle.
        let r2 = t2.join().unwrap();
        assert_eq!(r2, Err(LockError::Deadlock));
        ls.release_all(2, &[K1]);
        assert_eq!(
            t3.join().unwrap(),
            Ok(LockOutcome::Granted { waited: true })
        );
        ls.release_all(3, &[K1, K3]);
        assert!(ls.is_idle());
    }

    #[test]
    fn wait_times_out_and_leaves_no_trace() {
        let ls = Arc::new(LockSys::new(8, Duration::from_millis(50)));
        ls.lock(1, K1).unwrap();
        let start = Instant::now();
        assert_eq!(ls.lock(2, K1), Err(LockError::LockWaitTimeout));
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert_eq!(ls.stats().timeouts, 1);
        ls.release_all(1, &[K1]);
        assert!(ls.is_idle());
        assert_eq!(ls.lock(2, K1), Ok(LockOutcome::Granted { waited: false }));
        ls.release_all(2, &[K1]);

        ls.set_wait_timeout(Duration::from_millis(5));
        assert_eq!(ls.wait_timeout(), Duration::from_millis(5));
        ls.lock(1, K1).unwrap();
        let start = Instant::now();
        assert_eq!(ls.lock(2, K1), Err(LockError::LockWaitTimeout));
        assert!(start.elapsed() < Duration::from_secs(5));
        ls.release_all(1, &[K1]);
        assert!(ls.is_idle());
    }

    #[test]
    fn huge_timeout_does_not_overflow() {
        let ls = Arc::new(LockSys::new(1, Duration::MAX));
        ls.lock(1, K1).unwrap();
        let ls2 = Arc::clone(&ls);
        let t = thread::spawn(move || ls2.lock(2, K1));
        wait_until(|| ls.stats().waits == 1);
        ls.release_all(1, &[K1]);
        assert_eq!(t.join().unwrap(), Ok(LockOutcome::Granted { waited: true }));
    }

    /// Threads lock random rows in random order with a tiny timeout, so grants
    /// race with timeouts and deadlocks; afterwards nothing may be left over.
    #[test]
    fn stress_random_order_with_short_timeouts() {
        let ls = Arc::new(LockSys::new(4, Duration::from_millis(2)));
        let done = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..16u64)
            .map(|t| {
                let (ls, done) = (Arc::clone(&ls), Arc::clone(&done));
                thread::spawn(move || {
                    let mut rng = rand::rngs::SmallRng::seed_from_u64(t);
                    for n in 0..300u64 {
                        let trx = t * 1_000_000 + n + 1;
                        let mut held = Vec::new();
                        for _ in 0..rng.gen_range(1..4) {
                            let key = (1, rng.gen_range(0..8));
                            match ls.lock(trx, key) {
                                Ok(_) => {
                                    assert_eq!(ls.holder(key), Some(trx));
                                    held.push(key);
                                }
                                Err(_) => break,
                            }
                        }
                        ls.release_all(trx, &held);
                        done.fetch_add(1, Relaxed);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(done.load(Relaxed), 16 * 300);
        assert!(ls.is_idle());
        let stats = ls.stats();
        assert!(stats.waits >= stats.timeouts);
    }

    #[test]
    fn shard_choice_spreads_keys() {
        let ls = LockSys::new(512, Duration::from_secs(1));
        let mut used = std::collections::HashSet::new();
        for id in 0..4096 {
            used.insert(ls.shard_index((1, id)));
        }
        assert!(used.len() > 450, "only {} shards used", used.len());
    }
}
