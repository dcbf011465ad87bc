//! Synchronisation primitives for the concurrency gate, swapped for loom's
//! in model-checking builds (`RUSTFLAGS="--cfg loom"`), so
//! `tests/loom_gate.rs` can explore every interleaving of the real code.

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
}

pub use imp::*;
