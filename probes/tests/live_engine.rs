//! Live tests: the probes against a real engine process (and against
//! bpftrace's and BCC's tools on the same windows).
//!
//! This binary is its own engine: run with `REDOCTOR_PROBES_CHILD=<mode>` it
//! opens an engine in the directory `REDOCTOR_PROBES_DIR`, prepares tables,
//! prints `READY <counters json>`, waits for a line on stdin, runs a
//! workload, waits 300 ms (so the 100 ms counters tick reports the final
//! count), prints `DONE <counters json>` and waits for a line before
//! shutting down. Without that variable it runs the checks below, each
//! against a fresh child. Needs root and a kernel with BPF; prints SKIP (and
//! passes) only when the kernel lacks a feature.

#[path = "live_engine/bcc.rs"]
mod bcc;
#[path = "live_engine/checks.rs"]
mod checks;
#[path = "live_engine/child.rs"]
mod child;
#[path = "live_engine/first_window.rs"]
mod first_window;
#[path = "live_engine/fsync_counters.rs"]
mod fsync_counters;
#[path = "live_engine/misses.rs"]
mod misses;
#[path = "live_engine/named.rs"]
mod named;
#[path = "live_engine/page_reads.rs"]
mod page_reads;
#[path = "live_engine/ring.rs"]
mod ring;

fn main() {
    if let Ok(mode) = std::env::var(child::CHILD_ENV) {
        if mode == ring::MODE {
            ring::run_child();
            return;
        }
        if mode == first_window::MODE {
            first_window::run_child();
            return;
        }
        if mode == first_window::MODE_LATE {
            first_window::run_late_child();
            return;
        }
        child::run(&mode);
        return;
    }
    checks::run_all();
}
