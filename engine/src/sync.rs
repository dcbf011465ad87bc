//! Synchronisation primitives for the concurrency gate and the redo log's
//! events, swapped for loom's in model-checking builds
//! (`RUSTFLAGS="--cfg loom"`), so `tests/loom_gate.rs` and
//! `tests/loom_event.rs` can explore every interleaving of the real code.

#[cfg(not(loom))]
mod imp {
    pub use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
    use std::time::Duration;

    use crate::named_locks::NamedMutex;

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
    pub use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
    use std::time::Duration;

    pub struct Mutex<T>(loom::sync::Mutex<T>);
    pub type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        /// Names mean nothing in a model.
        pub fn named(_name: &str, t: T) -> Self {
            Mutex(loom::sync::Mutex::new(t))
        }
        pub fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("loom mutex poisoned")
        }
    }

    pub struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }
        pub fn wait<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(g).expect("loom mutex poisoned")
        }
        pub fn notify_one(&self) {
            self.0.notify_one();
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
