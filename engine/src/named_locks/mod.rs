//! Locks and wait points whose futex word *is* the lock, registered by name.
//!
//! On Linux `std::sync::Mutex` and `std::sync::Condvar` keep their futex
//! word inside the object, so a thread blocking on one sleeps in
//! `futex(FUTEX_WAIT, address inside the object)`. (parking_lot parks every
//! thread on a word of its own, so there the address names the thread.)
//! Each object here lives at a stable heap address, registered in
//! [`REGISTRY`] as `[start, start + size)` under a short dotted name
//! (`redo.flush_waits`, `trx_sys.shard3`, ...) for as long as it lives. The
//! engine hands the registry's table to the probes through the
//! `redoctor_named_locks` probe point ([`publish`]), and the probes map each
//! futex address to the range that contains it: ranges, not field offsets,
//! so nothing depends on std's private layout.
//!
//! Poisoning is ignored everywhere (`PoisonError::into_inner`), as with
//! parking_lot: a panic while holding a lock does not cascade into panics
//! of unrelated threads.

pub mod registry;

use std::ops::Deref;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

pub use registry::{NamedLockEntry, Registration, Registry};

/// The engine's registry (every engine in the process shares it).
pub static REGISTRY: Registry = Registry::new();

/// The named ranges alive now, sorted by start (what the next table holds).
pub fn named_locks() -> Vec<NamedLockEntry> {
    REGISTRY.snapshot()
}

/// Hands the current table to the probes (`redoctor_named_locks`). Called
/// from the `counters_tick` thread, every 100 ms.
pub fn publish() {
    let t = REGISTRY.publish();
    crate::probe_points::redoctor_named_locks(t.table.cast(), t.count, t.generation);
}

/// Registers the memory of `obj` as `name` for the life of the result.
pub fn register<T: ?Sized>(name: &str, obj: &T) -> Registration<'static> {
    REGISTRY.register_object(name, obj)
}

/// Locks `m`, ignoring poisoning.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Tries to lock `m` without blocking, ignoring poisoning.
pub fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Waits on `cv` for at most `timeout`; returns the guard and whether it timed out.
pub fn wait_timeout<'a, T>(
    cv: &Condvar,
    g: MutexGuard<'a, T>,
    timeout: Duration,
) -> (MutexGuard<'a, T>, bool) {
    let (g, r) = cv
        .wait_timeout(g, timeout)
        .unwrap_or_else(PoisonError::into_inner);
    (g, r.timed_out())
}

/// A `T` at a stable heap address, registered as `name` while it lives.
pub struct Named<T> {
    // Unregistered before the memory is freed (fields drop in order).
    _reg: Registration<'static>,
    obj: Box<T>,
}

impl<T> Named<T> {
    pub fn new(name: &str, obj: T) -> Named<T> {
        let obj = Box::new(obj);
        Named {
            _reg: register(name, &*obj),
            obj,
        }
    }
}

impl<T> Deref for Named<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.obj
    }
}

/// A named `std::sync::Mutex`.
pub struct NamedMutex<T>(Named<Mutex<T>>);

impl<T> NamedMutex<T> {
    pub fn new(name: &str, t: T) -> NamedMutex<T> {
        NamedMutex(Named::new(name, Mutex::new(t)))
    }
    pub fn lock(&self) -> MutexGuard<'_, T> {
        lock(&self.0)
    }
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        try_lock(&self.0)
    }
}

/// A named `std::sync::Condvar`.
pub struct NamedCondvar(Named<Condvar>);

impl NamedCondvar {
    pub fn new(name: &str) -> NamedCondvar {
        NamedCondvar(Named::new(name, Condvar::new()))
    }
    pub fn notify_one(&self) {
        self.0.notify_one();
    }
    pub fn notify_all(&self) {
        self.0.notify_all();
    }
    pub fn wait<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.0.wait(g).unwrap_or_else(PoisonError::into_inner)
    }
    /// Waits until notified or `deadline`; returns the guard and whether
    /// the deadline passed.
    pub fn wait_until<'a, T>(
        &self,
        g: MutexGuard<'a, T>,
        deadline: Instant,
    ) -> (MutexGuard<'a, T>, bool) {
        match deadline.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => wait_timeout(&self.0, g, left),
            _ => (g, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn find(start: usize) -> Option<NamedLockEntry> {
        named_locks().into_iter().find(|e| e.start == start as u64)
    }

    #[test]
    fn named_objects_register_their_heap_range_until_dropped() {
        let m = NamedMutex::new("test.mutex", [0u64; 4]);
        let addr = &*m.0 as *const Mutex<[u64; 4]> as usize;
        let e = find(addr).expect("registered");
        assert_eq!(e.name(), "test.mutex");
        assert_eq!(e.len as usize, std::mem::size_of::<Mutex<[u64; 4]>>());
        // The object moves; its registered address does not.
        let moved = vec![m];
        assert_eq!(&*moved[0].0 as *const Mutex<[u64; 4]> as usize, addr);
        drop(moved);
        assert!(find(addr).is_none(), "unregistered on drop");
    }

    #[test]
    fn an_engine_names_its_locks_and_unregisters_them_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let engine = crate::Engine::open(crate::EngineOptions::new(dir.path())).unwrap();
        let event = &*engine.redo().writer_event as *const crate::redo::event::Event as usize;
        let all = named_locks();
        assert_eq!(
            find(event).map(|e| e.name().to_string()).as_deref(),
            Some("redo.writer_event")
        );
        for name in [
            "redo.flush_waits",
            "redo.write_waits",
            "trx_sys.shard255",
            "lock_sys.shard0",
            "lock_sys.wait_for",
            "throttle",
            "admission",
        ] {
            assert!(
                all.iter().any(|e| e.name() == name),
                "{name} not registered"
            );
        }
        // Ranges never overlap: each registration covers memory its object owns.
        for w in all.windows(2) {
            assert!(
                w[0].start + w[0].len <= w[1].start,
                "{:?} overlaps {:?}",
                w[0],
                w[1]
            );
        }
        engine.shutdown().unwrap();
        drop(engine);
        let deadline = Instant::now() + Duration::from_secs(5);
        while find(event).is_some_and(|e| e.name() == "redo.writer_event") {
            assert!(
                Instant::now() < deadline,
                "redo.writer_event still registered after drop"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_panic_while_locked_does_not_poison_later_users() {
        let m = Arc::new(NamedMutex::new("test.poison", 1));
        let cv = Arc::new(NamedCondvar::new("test.poison_cv"));
        let m2 = m.clone();
        let r = std::thread::spawn(move || {
            let _g = m2.lock();
            panic!("panic while holding the lock");
        })
        .join();
        assert!(r.is_err());
        let mut g = m.lock();
        *g += 1;
        let (g, timed_out) = cv.wait_until(g, Instant::now() + Duration::from_millis(5));
        assert!(timed_out);
        assert_eq!(*g, 2);
        drop(g);
        assert!(m.try_lock().is_some());
    }

    /// A waiter parked on the condvar wakes when the state is set and
    /// notified, and sees it: a lost wakeup fails after 10 s instead of
    /// hanging the run (the stuck waiter is left behind, not joined). The
    /// main thread finds the state "parked" while holding the mutex, which
    /// the waiter gives up only inside `wait`: the notify always meets a
    /// waiter.
    #[test]
    fn condvar_wakes_a_waiter() {
        const PARKED: u8 = 1;
        const GO: u8 = 2;
        let pair = Arc::new((
            NamedMutex::new("test.flag", 0u8),
            NamedCondvar::new("test.cv"),
        ));
        let p2 = pair.clone();
        let (woke, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut g = p2.0.lock();
            *g = PARKED;
            let mut waits = 0;
            while *g != GO {
                g = p2.1.wait(g);
                waits += 1;
            }
            woke.send(waits).unwrap();
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let mut g = pair.0.lock();
            if *g == PARKED {
                *g = GO;
                break;
            }
            drop(g);
            assert!(
                std::time::Instant::now() < deadline,
                "the waiter never started"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        pair.1.notify_all();
        let waits = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the waiter was not woken within 10 s (a lost wakeup)");
        assert!(waits >= 1);
    }
}
