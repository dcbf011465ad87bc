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
use std::sync::Arc;
use std::time::Instant;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};
use redoctor_probes::maps::HIST_BUCKETS;
use redoctor_probes::{FileKind, FsyncCounters, FsyncTotals, ProbeError, Profile};

use redoctor_probes::Signals;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::metrics::Metrics;
use super::phase;
use super::worker::Worker;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TFile {
    pub target: String,
    pub file: String,
}

/// The exported histogram's smallest bound: 2^10 ns (about 1 µs); faster
/// calls count in its bucket.
const FIRST_BOUND_LOG2: usize = 10;
/// Its largest finite bound: 2^33 ns (about 8.6 s); slower calls count in +Inf.
const LAST_BOUND_LOG2: usize = 33;

/// A latency histogram fed with the kernel's log2 buckets (bucket i =
/// [2^i, 2^(i+1)) ns), exported in seconds with bounds 2^10 ns .. 2^33 ns.
#[derive(Debug, Clone, Default)]
pub struct Log2Histogram {
    inner: Arc<std::sync::Mutex<(f64, u64, Vec<u64>)>>,
}

impl Log2Histogram {
    /// Adds `counts` (log2 buckets of ns) whose values sum to `sum_ns`.
    pub fn add(&self, sum_ns: u64, counts: &[u64; HIST_BUCKETS]) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.2.is_empty() {
            g.2 = vec![0; HIST_BUCKETS];
        }
        g.0 += sum_ns as f64 / 1e9;
        g.1 += counts.iter().sum::<u64>();
        for (slot, c) in g.2.iter_mut().zip(counts) {
            *slot += c;
        }
    }

    /// `(upper bound in seconds, count in that bucket)`, the last +Inf.
    fn buckets(counts: &[u64]) -> Vec<(f64, u64)> {
        let at = |i: usize| counts.get(i).copied().unwrap_or(0);
        let mut out = Vec::new();
        // Bound 2^j ns holds bucket j - 1, i.e. [2^(j-1), 2^j); the first
        // also holds everything below.
        out.push((
            (1u64 << FIRST_BOUND_LOG2) as f64 / 1e9,
            (0..FIRST_BOUND_LOG2).map(at).sum(),
        ));
        for j in FIRST_BOUND_LOG2 + 1..=LAST_BOUND_LOG2 {
            out.push(((1u64 << j) as f64 / 1e9, at(j - 1)));
        }
        out.push((f64::MAX, (LAST_BOUND_LOG2..HIST_BUCKETS).map(at).sum()));
        out
    }
}

impl TypedMetric for Log2Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Log2Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, counts) = self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &Self::buckets(&counts), None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

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

/// The worker's side: attach with the target, read every second, pause
/// and resume.
impl Worker {
    /// Attaches the fsync counters to `pid` (a new target process) when
    /// the config asks; a failure is reported and observation goes on
    /// without them.
    pub(super) fn attach_fsyncs(&mut self, pid: u32) {
        self.detach_fsyncs();
        self.fsync_paused = false;
        if !self.t.sampling.fsync_counters {
            return;
        }
        match FsyncWatch::attach(pid, &self.profile) {
            Ok(w) => {
                let ids = w.program_ids();
                self.fsync = Some(w);
                let m = Metrics::t(&self.t.name);
                self.shared
                    .metrics
                    .fsync_counters_attached
                    .get_or_create(&m)
                    .set(1.0);
                self.status(|s| s.fsync_program_ids = ids);
            }
            Err(e) => {
                let why = e.to_string();
                say!(
                    "redoctor agent: {}: warning: fsync counters not attached: {why}",
                    self.t.name
                );
                self.audit(
                    "fsync_counters_unavailable",
                    json!({"pid": pid, "why": why}),
                );
            }
        }
    }

    /// Resumes paused fsync counters when a sampled window counted a rate
    /// well under their limit.
    pub(super) fn maybe_resume_fsyncs(&mut self, pid: u32, windows: &[Signals]) {
        if !self.fsync_paused {
            return;
        }
        let (calls, ns) = windows.iter().fold((0u64, 0u64), |(c, n), w| {
            let calls: u64 = w.io.values().map(|f| f.fsync_calls).sum();
            (c + calls, n + w.window_ns)
        });
        if ns == 0 {
            return;
        }
        let rate = calls as f64 / (ns as f64 / 1e9);
        let cpus = redoctor_probes::procfs::affinity_cpus(pid).unwrap_or(1);
        if may_resume(rate, cpus, self.fsync_limit()) {
            self.audit("fsync_counters_resumed", json!({"fsyncs_per_s": rate}));
            self.attach_fsyncs(pid);
        }
    }

    /// The most the counters may cost, in percent of the target's CPUs
    /// ([`limit_percent`] of this target's budget and sampling).
    fn fsync_limit(&self) -> f64 {
        limit_percent(
            self.shared.config.agent.budget.tps_percent,
            self.t.sampling.tps_cost_percent(),
        )
    }

    pub(super) fn detach_fsyncs(&mut self) {
        self.fsync_cost = 0.0;
        if self.fsync.take().is_some() {
            let m = Metrics::t(&self.t.name);
            self.shared
                .metrics
                .fsync_counters_attached
                .get_or_create(&m)
                .set(0.0);
        }
        self.status(|s| {
            s.fsync_program_ids.clear();
            s.fsyncs.clear();
        });
    }

    /// Reads the fsync counters (once a second) and exports what they
    /// counted; with the status counter's commits/s, commits per redo fsync.
    pub(super) fn tick_fsyncs(&mut self) {
        let limit = self.fsync_limit();
        let Some(w) = self.fsync.as_mut() else {
            return;
        };
        let rates = match w.tick(&self.shared.metrics, &self.t.name) {
            Ok(r) => r,
            Err(e) => {
                let why = e.to_string();
                say!(
                    "redoctor agent: {}: fsync counters detached: {why}",
                    self.t.name
                );
                self.audit("fsync_counters_unavailable", json!({"why": why}));
                self.detach_fsyncs();
                return;
            }
        };
        let m = Metrics::t(&self.t.name);
        let total: f64 = rates.values().map(|r| r.per_s).sum();
        let cost = cost_percent(total, w.cpus);
        self.fsync_cost = cost;
        self.shared
            .metrics
            .fsync_counters_cost
            .get_or_create(&m)
            .set(cost);
        if w.over_budget(total, limit) {
            say!(
                "redoctor agent: {}: fsync counters paused: {total:.0} fsyncs/s cost ~{cost:.2}% \
                 of the target's CPUs, over their share of the budget ({limit:.2}%); \
                 a sampled window with fewer resumes them",
                self.t.name
            );
            self.audit(
                "fsync_counters_paused",
                json!({"fsyncs_per_s": total, "cost_percent": cost, "limit_percent": limit}),
            );
            self.detach_fsyncs();
            self.fsync_paused = true;
            return;
        }
        if self.admin.is_none() {
            // No status counters: the fsyncs/s mark the load's phases.
            self.phase.use_source(phase::FSYNCS);
            if let Some(change) = self.phase.second(total, 0.0) {
                self.phase_changed(change.to_string());
            }
        }
        let redo = rates.get(&redoctor_probes::FileKind::Redo).map(|r| r.per_s);
        if let (Some(c), Some(f)) = (self.rate, redo) {
            if f > 0.0 {
                self.shared
                    .metrics
                    .commits_per_fsync
                    .get_or_create(&m)
                    .set(c / f);
            }
        }
        self.status(|s| s.fsyncs = rates.iter().map(|(k, r)| (k.to_string(), *r)).collect());
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

    #[test]
    fn log2_buckets_map_to_bounds_in_seconds() {
        let mut c = [0u64; HIST_BUCKETS];
        c[3] = 2; // 8-15 ns: below the first bound
        c[10] = 5; // [1024, 2048) ns: bound 2^11 ns
        c[20] = 1; // about 1-2 ms: bound 2^21 ns
        c[40] = 1; // beyond the last bound
        let h = Log2Histogram::default();
        h.add(1_000_000, &c);
        let (sum, count, counts) = h.inner.lock().unwrap().clone();
        assert_eq!(count, 9);
        assert!((sum - 0.001).abs() < 1e-12);
        let b = Log2Histogram::buckets(&counts);
        assert_eq!(b.len(), LAST_BOUND_LOG2 - FIRST_BOUND_LOG2 + 2);
        assert_eq!(b[0], (1024e-9, 2));
        assert_eq!(b[1], (2048e-9, 5));
        let ms = b.iter().find(|(le, _)| *le == (1u64 << 21) as f64 / 1e9);
        assert_eq!(ms.map(|x| x.1), Some(1));
        assert_eq!(*b.last().unwrap(), (f64::MAX, 1));
        // Every call is in one bucket.
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), count);
    }
}
