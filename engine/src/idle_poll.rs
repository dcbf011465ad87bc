//! CPU time this process spends polling for its next piece of work instead
//! of sleeping (the server's connection threads, `serve --net-spin`).
//!
//! That time is on a CPU but is not work: a profiler counts it as the
//! threads' CPU, and a diagnosis that did the same would read a lightly
//! loaded, polling server as CPU-bound. So pollers add their time here, and
//! the `counters_tick` thread publishes the total with the engine's other
//! cumulative counters through `redoctor_counters_tick` (`engine/PROBES.md`),
//! for the probes to take out of the on-CPU time.
//!
//! One counter for the whole process: the probes account CPU per process,
//! and a poller serves whichever engine the process runs.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static POLL_NS: AtomicU64 = AtomicU64::new(0);

/// A thread polled for `ns` nanoseconds.
pub fn add(ns: u64) {
    POLL_NS.fetch_add(ns, Relaxed);
}

/// Nanoseconds polled by every thread of the process since it started.
pub fn total_ns() -> u64 {
    POLL_NS.load(Relaxed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn polling_time_adds_up() {
        let before = super::total_ns();
        super::add(1_500);
        super::add(2_500);
        // Other tests of this process may poll too: at least ours.
        assert!(super::total_ns() >= before + 4_000);
    }
}
