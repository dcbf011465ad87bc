//! Debug settings that make the commit path worse on purpose, so that a
//! performance gate (`redoctor gate`) can be shown to catch a regression of
//! the kind it exists for. Both are off by default and cost one relaxed
//! load per commit when off.
//!
//! - `redoctor_debug_commit_extra_hop` (ON/OFF): after its commit is
//!   durable, the user thread hands it to one more notifier thread
//!   (`log_rl_notify`, the probes' `log_notifier` role) and sleeps until
//!   that thread hands it back: one more wakeup hop each way per commit, as
//!   a badly placed hand-off in the commit path would add.
//! - `redoctor_debug_commit_sleep_us` (0..=100000): the user thread sleeps
//!   this long after its commit is durable (a blocking call on the commit
//!   path).
//! - `redoctor_debug_commit_spin_ns` (0..=10000000): the user thread spins
//!   on the CPU this long after its commit is durable: a known, fine-grained
//!   cost per commit (a sleep's floor, tens of µs, is too coarse) to
//!   calibrate a live trial's meter against slowdowns of 1-10%.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The largest `redoctor_debug_commit_sleep_us`.
pub const MAX_SLEEP_US: u64 = 100_000;
/// The largest `redoctor_debug_commit_spin_ns` (10 ms).
pub const MAX_SPIN_NS: u64 = 10_000_000;

/// The debug hooks' state (one per engine).
#[derive(Default)]
pub struct DebugHooks {
    extra_hop: AtomicBool,
    sleep_us: AtomicU64,
    spin_ns: AtomicU64,
    relay: OnceLock<Mutex<Sender<SyncSender<()>>>>,
}

thread_local! {
    /// This thread's reply channel to the relay (made on first use).
    static REPLY: (SyncSender<()>, Receiver<()>) = sync_channel(1);
}

impl DebugHooks {
    pub fn extra_hop(&self) -> bool {
        self.extra_hop.load(Ordering::Relaxed)
    }

    /// Turns the extra hop on or off; the relay thread starts on first use
    /// and ends when the engine is dropped.
    pub fn set_extra_hop(&self, on: bool) -> std::io::Result<()> {
        if on && self.relay.get().is_none() {
            let (tx, rx) = channel::<SyncSender<()>>();
            std::thread::Builder::new()
                .name("log_rl_notify".into())
                .spawn(move || {
                    // Ends when every sender (the engine's) is gone.
                    for reply in rx {
                        let _ = reply.send(());
                    }
                })?;
            let _ = self.relay.set(Mutex::new(tx));
        }
        self.extra_hop.store(on, Ordering::Relaxed);
        Ok(())
    }

    pub fn sleep_us(&self) -> u64 {
        self.sleep_us.load(Ordering::Relaxed)
    }

    pub fn set_sleep_us(&self, us: u64) {
        self.sleep_us.store(us.min(MAX_SLEEP_US), Ordering::Relaxed);
    }

    pub fn spin_ns(&self) -> u64 {
        self.spin_ns.load(Ordering::Relaxed)
    }

    pub fn set_spin_ns(&self, ns: u64) {
        self.spin_ns.store(ns.min(MAX_SPIN_NS), Ordering::Relaxed);
    }

    /// Runs the enabled hooks; called by a user thread once its commit is
    /// durable.
    pub fn after_commit(&self) {
        let ns = self.spin_ns.load(Ordering::Relaxed);
        if ns > 0 {
            let until = Duration::from_nanos(ns);
            let t = std::time::Instant::now();
            while t.elapsed() < until {
                std::hint::spin_loop();
            }
        }
        let us = self.sleep_us.load(Ordering::Relaxed);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us));
        }
        if self.extra_hop.load(Ordering::Relaxed) {
            self.hop();
        }
    }

    fn hop(&self) {
        let Some(relay) = self.relay.get() else {
            return;
        };
        REPLY.with(|(reply_tx, reply_rx)| {
            let sent = relay
                .lock()
                .map(|tx| tx.send(reply_tx.clone()).is_ok())
                .unwrap_or(false);
            if sent {
                let _ = reply_rx.recv();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_off_by_default_and_run_when_on() {
        let h = DebugHooks::default();
        assert!(!h.extra_hop() && h.sleep_us() == 0);
        h.after_commit();
        h.set_extra_hop(true).unwrap();
        for _ in 0..100 {
            h.after_commit();
        }
        h.set_sleep_us(2_000);
        let t = std::time::Instant::now();
        h.after_commit();
        assert!(t.elapsed() >= Duration::from_millis(2));
        h.set_sleep_us(10_000_000);
        assert_eq!(h.sleep_us(), MAX_SLEEP_US);
        h.set_sleep_us(0);
        // The spin holds the CPU for its length, no more than a little.
        h.set_spin_ns(300_000);
        let t = std::time::Instant::now();
        h.after_commit();
        let took = t.elapsed();
        assert!(took >= Duration::from_micros(300), "{took:?}");
        h.set_spin_ns(u64::MAX);
        assert_eq!(h.spin_ns(), MAX_SPIN_NS);
    }
}
