//! The fsync counters kept attached between the sampled windows
//! (`sampling.fsync_counters`): the target's fsync and fdatasync calls
//! per file kind, read once a second and exported as counters, rates and
//! a latency histogram. BPF runs only when the target calls fsync (two
//! per-syscall tracepoints per call), so this costs what the fsync rate
//! costs, not what the scheduler's event rate does: little on a disk,
//! where a device does a few thousand a second, but ~1% of a 2-CPU
//! host's TPS at the 18k fsyncs/s of a log on tmpfs. So the agent
//! estimates their cost from the rate they count, pauses them when it
//! takes more than [`BUDGET_SHARE`] of what the sampled windows leave of
//! `agent.budget.tps_percent`, and resumes them when a sampled window
//! counts a rate well under that.

use std::collections::BTreeMap;
use std::time::Instant;

use redoctor_probes::{FileKind, FsyncCounters, FsyncTotals, ProbeError, Profile};
use serde::{Deserialize, Serialize};

use super::metrics::{Metrics, TFile};

/// CPU time one fsync costs with the counters attached. The parts: the
/// two programs' run time (0.17 µs at entry, 0.12 µs at exit: kernel
/// run-time statistics at 18k fsyncs/s on tmpfs) and the record each
/// per-syscall tracepoint builds (~0.2 µs each), 0.7 µs. The on/off bench
/// at that rate read 0.6-2 µs a call (its spread, agent/bench/RESULTS.md);
/// the budget takes the cautious 1 µs.
pub const FSYNC_COST_NS: f64 = 1000.0;
/// The share the counters may take of what the sampled windows leave of
/// `agent.budget.tps_percent` (the rest covers the agent's own CPU).
pub const BUDGET_SHARE: f64 = 0.8;
/// Seconds in a row over that share that pause them.
pub const OVER_FOR: u32 = 5;

/// The counters' estimated cost in percent of the target's CPUs (on a
/// saturated host, of its TPS) at `fsyncs_per_s`.
pub fn cost_percent(fsyncs_per_s: f64, cpus: u32) -> f64 {
    fsyncs_per_s * FSYNC_COST_NS / 1e9 / f64::from(cpus.max(1)) * 100.0
}

/// The most the counters may cost, in percent: [`BUDGET_SHARE`] of what
/// the sampled windows (`windows_cost`, `Sampling::tps_cost_percent`)
/// leave of `tps_budget`.
pub fn limit_percent(tps_budget: f64, windows_cost: f64) -> f64 {
    BUDGET_SHARE * (tps_budget - windows_cost).max(0.0)
}

/// Whether paused counters may resume at `fsyncs_per_s` under `limit`
/// (half of it: a rate near the limit would pause them again).
pub fn may_resume(fsyncs_per_s: f64, cpus: u32, limit: f64) -> bool {
    cost_percent(fsyncs_per_s, cpus) <= 0.5 * limit
}

/// One second's fsyncs of a file kind (also the status file's line).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub per_s: f64,
    /// Mean time inside a call, µs (None without a call).
    pub mean_us: Option<f64>,
}

/// The counters of one target, with the last reading.
pub struct FsyncWatch {
    counters: FsyncCounters,
    last: BTreeMap<FileKind, FsyncTotals>,
    at: Instant,
    /// The target's CPUs (its affinity), over which the cost is spread.
    pub cpus: u32,
    /// Seconds in a row over the limit.
    over: u32,
}

impl FsyncWatch {
    pub fn attach(pid: u32, profile: &Profile) -> Result<FsyncWatch, ProbeError> {
        let mut counters = FsyncCounters::attach(pid, profile)?;
        let last = counters.read()?.clone();
        Ok(FsyncWatch {
            counters,
            last,
            at: Instant::now(),
            cpus: redoctor_probes::procfs::affinity_cpus(pid).unwrap_or(1),
            over: 0,
        })
    }

    /// Counts one second at `fsyncs_per_s`; true once the cost has been
    /// over `limit` for [`OVER_FOR`] seconds in a row.
    pub fn over_budget(&mut self, fsyncs_per_s: f64, limit: f64) -> bool {
        if cost_percent(fsyncs_per_s, self.cpus) > limit {
            self.over += 1;
        } else {
            self.over = 0;
        }
        self.over >= OVER_FOR
    }

    pub fn program_ids(&self) -> Vec<u32> {
        self.counters.program_ids()
    }

    /// Reads the counters and exports what they counted since the last
    /// reading; the rates per file kind over that interval.
    pub fn tick(
        &mut self,
        metrics: &Metrics,
        target: &str,
    ) -> Result<BTreeMap<FileKind, Rate>, ProbeError> {
        let now = self.counters.read()?.clone();
        let secs = self.at.elapsed().as_secs_f64().max(1e-3);
        self.at = Instant::now();
        let mut rates = BTreeMap::new();
        for (kind, t) in &now {
            let d = t.since(&self.last.get(kind).copied().unwrap_or_default());
            let (calls, ns) = (d.calls, d.ns);
            let label = TFile {
                target: target.to_string(),
                file: kind.to_string(),
            };
            metrics.fsyncs.get_or_create(&label).inc_by(calls);
            metrics
                .fsync_latency
                .get_or_create(&label)
                .add(ns, &d.log2_ns);
            let rate = Rate {
                per_s: calls as f64 / secs,
                mean_us: (calls > 0).then(|| ns as f64 / calls as f64 / 1e3),
            };
            metrics
                .fsyncs_per_second
                .get_or_create(&label)
                .set(rate.per_s);
            rates.insert(*kind, rate);
        }
        self.last = now;
        Ok(rates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_follows_the_rate_and_pauses_only_a_busy_log() {
        // The default sampling's windows cost 0.51% of the 1% budget;
        // the counters may take 80% of the rest, 0.39%.
        let limit = limit_percent(1.0, 0.513);
        assert!((limit - 0.3896).abs() < 1e-9, "{limit}");
        // 18k fsyncs/s on 2 CPUs (a log on tmpfs): 0.9%, over it.
        let busy = cost_percent(18_000.0, 2);
        assert!((busy - 0.9).abs() < 1e-9, "{busy}");
        assert!(busy > limit);
        // A disk's 7k a second (0.35%) stay attached.
        assert!(cost_percent(7_000.0, 2) < limit);
        // Resuming needs half the limit: 4k/s would pause again soon.
        assert!(!may_resume(4_000.0, 2, limit) && may_resume(3_000.0, 2, limit));
        // More CPUs spread it thinner.
        assert!(cost_percent(18_000.0, 8) < limit_percent(1.0, 0.513));
        // Windows that take the whole budget leave nothing.
        assert_eq!(limit_percent(1.0, 1.2), 0.0);
    }
}
