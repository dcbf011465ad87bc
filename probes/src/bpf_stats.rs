//! The probes' own cost, from the kernel's BPF run-time statistics
//! (`BPF_ENABLE_STATS`, the same counters `kernel.bpf_stats_enabled=1` turns on):
//! per program, how often it ran and for how long.
//!
//! While statistics are on, the kernel times every program run (two clock
//! reads and a per-CPU update, ~20–30 ns per event here), which is a real
//! share of the probes' cost at hundreds of thousands of events per second.
//! So [`CostMeter`] turns them on for one window out of every N only.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;

use crate::loader::Probes;
use crate::signals::ProgramCost;

/// Default for [`CostMeter::new`]: measure one window in ten.
pub const DEFAULT_COST_EVERY: u32 = 10;

/// Keeps run-time statistics enabled while alive (the kernel stops counting
/// when the last holder closes its descriptor, unless the sysctl is set).
struct StatsGuard {
    _fd: OwnedFd,
}

impl StatsGuard {
    /// Enables run-time statistics; `None` when the kernel refuses.
    fn enable() -> Option<StatsGuard> {
        aya::sys::enable_stats(aya::sys::Stats::RunTime)
            .ok()
            .map(|fd| StatsGuard { _fd: fd })
    }
}

/// Cumulative (run count, run time ns) of each loaded program.
fn read(p: &Probes) -> Counters {
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

/// Cumulative (run count, run time ns) per program name.
type Counters = BTreeMap<String, (u64, u64)>;

/// Measures the programs' cost in one window out of every `every`
/// (0 = never), starting with the first.
pub struct CostMeter {
    every: u32,
    /// Windows closed so far.
    closed: u64,
    /// Statistics on for the current window, and the counters at its start.
    measuring: Option<(StatsGuard, Counters)>,
    /// The kernel refused to enable statistics the last time we asked.
    refused: bool,
}

impl CostMeter {
    /// Starts metering with the window that starts now.
    pub fn new(every: u32, p: &Probes) -> CostMeter {
        let mut m = CostMeter {
            every,
            closed: 0,
            measuring: None,
            refused: false,
        };
        m.arm(p);
        m
    }

    /// Whether the kernel refused to enable run-time statistics.
    pub fn refused(&self) -> bool {
        self.refused
    }

    fn arm(&mut self, p: &Probes) {
        self.measuring = None;
        if self.every == 0 || !self.closed.is_multiple_of(u64::from(self.every)) {
            return;
        }
        match StatsGuard::enable() {
            Some(g) => {
                self.refused = false;
                self.measuring = Some((g, read(p)));
            }
            None => self.refused = true,
        }
    }

    /// Closes the window: each program's runs and run time in it when this
    /// window was measured (programs that did not run are left out), else
    /// `None`. Then arms the next window.
    pub fn close(&mut self, p: &Probes) -> Option<Vec<ProgramCost>> {
        let cost = self.measuring.take().map(|(_guard, start)| {
            read(p)
                .into_iter()
                .filter_map(|(program, (runs, ns))| {
                    let (r0, n0) = start.get(&program).copied().unwrap_or((0, 0));
                    let runs = runs.saturating_sub(r0);
                    let run_ns = ns.saturating_sub(n0);
                    (runs > 0).then(|| ProgramCost {
                        program,
                        runs,
                        run_ns,
                        ns_per_run: Some(run_ns as f64 / runs as f64),
                    })
                })
                .collect()
        });
        self.closed += 1;
        self.arm(p);
        cost
    }
}
