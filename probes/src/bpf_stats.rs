//! The probes' own cost, from the kernel's BPF run-time statistics
//! (`BPF_ENABLE_STATS`, the same counters `kernel.bpf_stats_enabled=1` turns on):
//! per program, how often it ran and for how long.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;

use crate::loader::Probes;

/// Keeps run-time statistics enabled while alive (the kernel stops counting
/// when the last holder closes its descriptor, unless the sysctl is set).
pub struct StatsGuard {
    fd: Option<OwnedFd>,
}

impl StatsGuard {
    /// Enables run-time statistics; `None` inside when the kernel refuses
    /// (then costs read as zero unless `kernel.bpf_stats_enabled=1`).
    pub fn enable() -> StatsGuard {
        StatsGuard {
            fd: aya::sys::enable_stats(aya::sys::Stats::RunTime).ok(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.fd.is_some()
    }
}

/// Cumulative (run count, run time ns) of each loaded program.
pub fn read(p: &Probes) -> BTreeMap<String, (u64, u64)> {
    p.bpf
        .programs()
        .filter_map(|(name, prog)| {
            let info = prog.info().ok()?;
            Some((
                name.to_string(),
                (info.run_count(), info.run_time().as_nanos() as u64),
            ))
        })
        .collect()
}
