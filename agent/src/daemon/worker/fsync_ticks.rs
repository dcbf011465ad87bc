//! The worker's side of the fsync counters (`daemon::fsyncs`): attached
//! with each target process, read every second, paused over their share
//! of the budget and resumed when a sampled window counts a rate under it.

use redoctor_probes::Signals;
use serde_json::json;

use super::super::fsyncs::{cost_percent, limit_percent, may_resume, FsyncWatch};
use super::super::metrics::Metrics;
use super::super::phase;
use super::Worker;

impl Worker {
    /// Attaches the fsync counters to `pid` (a new target process) when
    /// the config asks; a failure is reported and observation goes on
    /// without them.
    pub(in crate::daemon) fn attach_fsyncs(&mut self, pid: u32) {
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
                tracing::warn!("{}: fsync counters not attached: {why}", self.t.name);
                self.audit(
                    "fsync_counters_unavailable",
                    json!({"pid": pid, "why": why}),
                );
            }
        }
    }

    /// Resumes paused fsync counters when a sampled window counted a rate
    /// well under their limit.
    pub(in crate::daemon) fn maybe_resume_fsyncs(&mut self, pid: u32, windows: &[Signals]) {
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

    pub(in crate::daemon) fn detach_fsyncs(&mut self) {
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
    pub(in crate::daemon) fn tick_fsyncs(&mut self) {
        let limit = self.fsync_limit();
        let Some(w) = self.fsync.as_mut() else {
            return;
        };
        let rates = match w.tick(&self.shared.metrics, &self.t.name) {
            Ok(r) => r,
            Err(e) => {
                let why = e.to_string();
                tracing::warn!("{}: fsync counters detached: {why}", self.t.name);
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
            tracing::warn!(
                "{}: fsync counters paused: {total:.0} fsyncs/s cost ~{cost:.2}% \
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
