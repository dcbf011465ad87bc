//! Synchronisation primitives for the engine's lock-free code (the
//! concurrency gate, the redo log's events, the link buffer, the log
//! buffer, the transaction throttle, the replica's hot relay log and the
//! buffer pool's latches),
//! swapped for loom's in
//! model-checking builds (`RUSTFLAGS="--cfg loom"`), so the `tests/loom_*.rs`
//! models explore every interleaving of the real code. In a normal build
//! each shim is the `std` type itself or a zero-cost wrapper of it.

#[cfg(not(loom))]
mod imp {
    pub use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
    pub use std::thread_local;
    use std::time::Duration;

    pub use crate::named_locks::NamedCondvar;
    use crate::named_locks::NamedMutex;

    /// Reader-writer latches: `parking_lot`'s (no poisoning; `try_*`
    /// return an `Option`).
    pub use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

    /// A named `std` mutex (see [`crate::named_locks`]).
    pub struct Mutex<T>(NamedMutex<T>);
    pub type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub fn named(name: &str, t: T) -> Self {
            Mutex(NamedMutex::new(name, t))
        }
        pub fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock()
        }
    }

    /// An unnamed `std` condvar (poisoning ignored).
    #[derive(Default)]
    pub struct Condvar(std::sync::Condvar);

    impl Condvar {
        pub fn new() -> Self {
            Condvar(std::sync::Condvar::new())
        }
        pub fn wait<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
        pub fn notify_one(&self) {
            self.0.notify_one();
        }
    }

    pub fn yield_now() {
        std::thread::yield_now();
    }

    pub fn sleep(d: Duration) {
        std::thread::sleep(d);
    }

    /// `std`'s `UnsafeCell`, without `get`: the bytes are reached only
    /// through [`copy_to_cells`] and [`copy_from_cells`], one `memcpy` each
    /// here, and byte by byte through loom's `with`/`with_mut` in a model,
    /// so no access escapes the model's checks.
    #[repr(transparent)]
    pub struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub const fn new(v: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(v))
        }
    }

    /// Copies `src` into `cells` (same length) with one `memcpy`: the cells
    /// are contiguous bytes.
    ///
    /// # Safety
    /// Nobody else accesses `cells` during the call.
    #[inline(always)]
    pub unsafe fn copy_to_cells(cells: &[UnsafeCell<u8>], src: &[u8]) {
        debug_assert_eq!(cells.len(), src.len());
        // `UnsafeCell<u8>` (both layers `repr(transparent)`) is a `u8` that
        // may be written through a shared reference, and the pointer
        // covers the whole slice.
        let dst =
            std::cell::UnsafeCell::raw_get(cells.as_ptr().cast::<std::cell::UnsafeCell<u8>>());
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
    }

    /// Copies `cells` out into `dst` (same length) with one `memcpy`.
    ///
    /// # Safety
    /// Nobody writes `cells` during the call.
    #[inline(always)]
    pub unsafe fn copy_from_cells(cells: &[UnsafeCell<u8>], dst: &mut [u8]) {
        debug_assert_eq!(cells.len(), dst.len());
        let src =
            std::cell::UnsafeCell::raw_get(cells.as_ptr().cast::<std::cell::UnsafeCell<u8>>());
        std::ptr::copy_nonoverlapping(src.cast_const(), dst.as_mut_ptr(), dst.len());
    }

    /// A 32-bit futex word (private to the process): `wait` sleeps while
    /// the word holds an expected value, `wake_all` wakes every sleeper.
    /// The kernel checks the value and queues the sleeper atomically with
    /// respect to a wake, which is what makes a change-then-wake never lost.
    pub struct Futex(AtomicU32);

    impl Futex {
        pub fn new(v: u32) -> Self {
            Futex(AtomicU32::new(v))
        }

        pub fn word(&self) -> &AtomicU32 {
            &self.0
        }

        /// Sleeps while the word is `expected`, for at most `timeout`.
        /// Returns when woken, when the word differs, at the timeout, or on
        /// a signal: callers re-check their condition, as with a condvar.
        pub fn wait(&self, expected: u32, timeout: Duration) {
            let ts = libc::timespec {
                tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: the word is a live, aligned u32 for the call's
            // duration; the timespec outlives it.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.0.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    expected,
                    &ts as *const libc::timespec,
                )
            };
        }

        /// Wakes every thread asleep on the word.
        pub fn wake_all(&self) {
            // SAFETY: as for `wait`; a wake only reads the address.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.0.as_ptr(),
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    i32::MAX,
                )
            };
        }
    }
}

#[cfg(loom)]
mod imp {
    pub use loom::cell::UnsafeCell;
    pub use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
    pub use loom::thread_local;
    use std::ops::{Deref, DerefMut};
    use std::time::{Duration, Instant};

    pub struct Mutex<T>(loom::sync::Mutex<T>);

    /// Loom's guard and the mutex it locks, so a timed wait can release
    /// and re-take the lock.
    pub struct MutexGuard<'a, T> {
        lock: &'a loom::sync::Mutex<T>,
        guard: loom::sync::MutexGuard<'a, T>,
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.guard
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.guard
        }
    }

    fn lock<T>(m: &loom::sync::Mutex<T>) -> MutexGuard<'_, T> {
        MutexGuard {
            lock: m,
            guard: m.lock().expect("loom mutex poisoned"),
        }
    }

    impl<T> Mutex<T> {
        /// Names mean nothing in a model.
        pub fn named(_name: &str, t: T) -> Self {
            Mutex(loom::sync::Mutex::new(t))
        }
        pub fn lock(&self) -> MutexGuard<'_, T> {
            lock(&self.0)
        }
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            let guard = self.0.try_lock().ok()?;
            Some(MutexGuard {
                lock: &self.0,
                guard,
            })
        }
    }

    pub use loom::sync::{RwLockReadGuard, RwLockWriteGuard};

    /// Loom's reader-writer lock with `parking_lot`'s surface.
    pub struct RwLock<T>(loom::sync::RwLock<T>);

    impl<T> RwLock<T> {
        pub fn new(t: T) -> Self {
            RwLock(loom::sync::RwLock::new(t))
        }
        pub fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().expect("loom rwlock poisoned")
        }
        pub fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().expect("loom rwlock poisoned")
        }
        pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
            self.0.try_read().ok()
        }
        pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
            self.0.try_write().ok()
        }
    }

    pub struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }
        pub fn wait<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            MutexGuard {
                lock: g.lock,
                guard: self.0.wait(g.guard).expect("loom mutex poisoned"),
            }
        }
        pub fn notify_one(&self) {
            self.0.notify_one();
        }
    }

    /// [`crate::named_locks::NamedCondvar`] in a model (names mean
    /// nothing there).
    pub struct NamedCondvar(loom::sync::Condvar);

    impl NamedCondvar {
        pub fn new(_name: &str) -> Self {
            NamedCondvar(loom::sync::Condvar::new())
        }
        pub fn notify_one(&self) {
            self.0.notify_one();
        }
        pub fn notify_all(&self) {
            self.0.notify_all();
        }
        pub fn wait<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            MutexGuard {
                lock: g.lock,
                guard: self.0.wait(g.guard).expect("loom mutex poisoned"),
            }
        }
        /// Time does not exist in a model (and a model must not branch on
        /// the clock): a deadline still ahead at the call never passes, so
        /// this is a plain wait and a lost wakeup deadlocks; a deadline
        /// already due is a wait that timed out: the lock is released and
        /// re-taken, so other threads may run in between (and, say, grant
        /// what the waiter waited for), and the result says it timed out.
        /// Models use either a zero or a very long timeout.
        pub fn wait_until<'a, T>(
            &self,
            g: MutexGuard<'a, T>,
            deadline: Instant,
        ) -> (MutexGuard<'a, T>, bool) {
            if deadline > Instant::now() {
                let g = MutexGuard {
                    lock: g.lock,
                    guard: self.0.wait(g.guard).expect("loom mutex poisoned"),
                };
                (g, false)
            } else {
                let m = g.lock;
                drop(g);
                loom::thread::yield_now();
                (lock(m), true)
            }
        }
    }

    /// Copies `src` into `cells` byte by byte, so loom checks every byte's
    /// access against every other thread's.
    ///
    /// # Safety
    /// As in a normal build; loom reports a breach as a causality violation.
    pub unsafe fn copy_to_cells(cells: &[UnsafeCell<u8>], src: &[u8]) {
        assert_eq!(cells.len(), src.len());
        for (c, &b) in cells.iter().zip(src) {
            c.with_mut(|p| *p = b);
        }
    }

    /// Copies `cells` out into `dst` byte by byte (see [`copy_to_cells`]).
    ///
    /// # Safety
    /// As in a normal build; loom reports a breach as a causality violation.
    pub unsafe fn copy_from_cells(cells: &[UnsafeCell<u8>], dst: &mut [u8]) {
        assert_eq!(cells.len(), dst.len());
        for (c, d) in cells.iter().zip(dst) {
            *d = c.with(|p| *p);
        }
    }

    pub fn yield_now() {
        loom::thread::yield_now();
    }

    /// Time does not exist in a model: a sleep is a yield.
    pub fn sleep(_d: Duration) {
        loom::thread::yield_now();
    }

    /// The futex word, modelled as the kernel implements it: a lock (the
    /// hash bucket's) under which a sleeper compares the word and queues
    /// itself, and under which a waker wakes the queue. Timeouts do not
    /// exist in a model, so a lost wakeup shows as a deadlock.
    pub struct Futex {
        word: AtomicU32,
        bucket: loom::sync::Mutex<()>,
        queue: loom::sync::Condvar,
    }

    impl Futex {
        pub fn new(v: u32) -> Self {
            Futex {
                word: AtomicU32::new(v),
                bucket: loom::sync::Mutex::new(()),
                queue: loom::sync::Condvar::new(),
            }
        }

        pub fn word(&self) -> &AtomicU32 {
            &self.word
        }

        pub fn wait(&self, expected: u32, _timeout: Duration) {
            let g = self.bucket.lock().expect("loom mutex poisoned");
            if self.word.load(std::sync::atomic::Ordering::SeqCst) == expected {
                drop(self.queue.wait(g).expect("loom mutex poisoned"));
            }
        }

        pub fn wake_all(&self) {
            let _g = self.bucket.lock().expect("loom mutex poisoned");
            self.queue.notify_all();
        }
    }
}

pub use imp::*;
