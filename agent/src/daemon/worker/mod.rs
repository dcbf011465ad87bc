//! One target's loop (a thread): find the process, poll its cheap status
//! counters once a second, attach the probes for a sampled observation on
//! a duty cycle (or sooner after a phase change), diagnose, and in apply
//! mode try the admitted candidates live, one kept change per evaluation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use redoctor_advisor::default_settings;
use redoctor_advisor::experiment::{Candidate, Settings};
use redoctor_advisor::model::Model;
use redoctor_advisor::{diagnose_summary, summarize, Diagnosis, Facts};
use redoctor_probes::{AttachOptions, Probes, Profile, Sampler, Signals};
use serde_json::json;

use super::config::{Mode, Target, ATTACHED_TPS_COST};
use super::external::ExternalWatch;
use super::fsyncs::FsyncWatch;
use super::journal::{self, Journal};
use super::lost_trials::LostTrials;
use super::metrics::{Metrics, TAdvice, TMode, TSetting, TSignal};
use super::phase::PhaseDetector;
use super::sample_budget::SampleBudget;
use super::status::{AdviceLine, TargetStatus};
use super::Shared;

mod fsync_ticks;
mod trials;
use crate::admin::Admin;

pub struct Worker {
    pub(super) t: Target,
    pub(super) shared: Arc<Shared>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) profile: Profile,
    pub(super) journal_path: std::path::PathBuf,
    pub(super) journal: Journal,
    pub(super) pid: Option<u32>,
    /// The pid last seen, kept after it went away (a restart is then reported as one).
    last_pid: Option<u32>,
    pub(super) admin: Option<Admin>,
    pub(super) phase: PhaseDetector,
    /// (commits, users, when) at the last poll.
    last_poll: Option<(u64, Instant)>,
    /// Commits/s between the last two polls.
    pub(super) rate: Option<f64>,
    pub(super) users: f64,
    next_sample: Instant,
    last_sample: Option<Instant>,
    /// Why the next evaluation was brought forward.
    pending: Option<String>,
    model: Option<(u32, Model)>,
    started: Instant,
    attached: Duration,
    /// Candidates that lost a trial in this phase, and when each may be
    /// tried again.
    pub(super) lost: LostTrials,
    /// The advice last logged; `None` until the first, which is always logged.
    last_advice: Option<Vec<(String, String)>>,
    shown_settings: Vec<TSetting>,
    shown_advice: Vec<TAdvice>,
    /// The signal series exported at the last sample.
    shown_signals: Vec<TSignal>,
    warned_unavailable: bool,
    /// The fsync counters kept attached (`sampling.fsync_counters`).
    pub(super) fsync: Option<FsyncWatch>,
    /// The counters were paused for their cost; a sampled window with a
    /// rate well under the limit resumes them.
    pub(super) fsync_paused: bool,
    /// The fsync counters' estimated cost, % of the target's CPUs (0 while
    /// they are not attached).
    pub(super) fsync_cost: f64,
    /// Bounds the extra samples phase changes ask for.
    budget: SampleBudget,
    /// Kept settings changed by someone else, reported once each.
    external: ExternalWatch,
}

/// How long a just-started server runs before its first sample.
const SETTLE: Duration = Duration::from_secs(2);

/// The wait before the first sample of a process: a just-started server
/// settles for [`SETTLE`] (its buffers, threads and connections are still
/// coming up), one that has run that long already is sampled at once
/// (an agent started beside a running server; each second of waiting
/// delays the first trial). Of unknown age: the whole wait.
fn settle_wait(age: Option<Duration>) -> Duration {
    SETTLE.saturating_sub(age.unwrap_or(Duration::ZERO))
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

impl Worker {
    pub fn new(t: Target, shared: Arc<Shared>, stop: Arc<AtomicBool>) -> Result<Worker> {
        let budget = SampleBudget::new(t.sampling.span(), Instant::now());
        let profile = Profile::resolve(&t.profile).context("loading the target profile")?;
        let journal_path = journal::path(&shared.state_dir, &t.name);
        let journal = Journal::load(&journal_path, &t.name)?;
        let m = Metrics::t(&t.name);
        shared.metrics.up.get_or_create(&m).set(0.0);
        shared
            .metrics
            .mode
            .get_or_create(&TMode {
                target: t.name.clone(),
                mode: format!("{:?}", t.mode).to_lowercase(),
            })
            .set(1);
        let lost = LostTrials::new(t.guardrails.retry_after);
        Ok(Worker {
            phase: PhaseDetector::new(t.phase.clone()),
            t,
            shared,
            stop,
            profile,
            journal_path,
            journal,
            pid: None,
            last_pid: None,
            admin: None,
            last_poll: None,
            rate: None,
            users: 0.0,
            next_sample: Instant::now(),
            last_sample: None,
            pending: None,
            model: None,
            started: Instant::now(),
            attached: Duration::ZERO,
            lost,
            last_advice: None,
            shown_settings: vec![],
            shown_advice: vec![],
            shown_signals: vec![],
            warned_unavailable: false,
            fsync: None,
            fsync_paused: false,
            fsync_cost: 0.0,
            budget,
            external: ExternalWatch::default(),
        })
    }

    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub(super) fn status(&self, f: impl FnOnce(&mut TargetStatus)) {
        let mut all = self.shared.status.lock().unwrap_or_else(|p| p.into_inner());
        let s = all
            .entry(self.t.name.clone())
            .or_insert_with(|| TargetStatus::new(&self.t));
        f(s);
    }

    pub(super) fn audit(&self, event: &str, fields: serde_json::Value) {
        self.shared.audit.log(&self.t.name, event, fields);
    }

    /// Runs until stopped; a trial in progress is rolled back first.
    pub fn run(mut self) {
        self.status(|_| {});
        while !self.stopping() {
            let tick = Instant::now();
            if let Err(e) = self.step() {
                let msg = format!("{e:#}");
                tracing::warn!("{}: {msg}", self.t.name);
                self.status(|s| s.last_error = Some(msg.clone()));
                self.admin = None;
                self.last_poll = None;
            }
            sleep_unless(
                &self.stop,
                Duration::from_secs(1).saturating_sub(tick.elapsed()),
            );
        }
        self.status(|s| s.state = "stopped".into());
    }

    /// The target's pid now. By name: the process watched while it lives
    /// under that name (another process of the name started meanwhile is
    /// not a restart), else the newest of the name.
    fn resolve(&self) -> Option<u32> {
        match (&self.t.pid, &self.t.process, &self.t.pidfile) {
            (Some(p), _, _) => crate::find::alive(*p).then_some(*p),
            (_, Some(n), _) => self
                .pid
                .filter(|p| crate::find::is_named(*p, n))
                .or_else(|| crate::find::newest_process(n)),
            (_, _, Some(f)) => crate::find::read_pidfile(f),
            _ => None,
        }
    }

    fn step(&mut self) -> Result<()> {
        let m = Metrics::t(&self.t.name);
        let Some(pid) = self.resolve() else {
            if let Some(old) = self.pid.take() {
                self.admin = None;
                self.detach_fsyncs();
                self.forget_process(old);
                self.shared.metrics.up.get_or_create(&m).set(0.0);
                self.audit("target_gone", json!({"pid": old}));
                tracing::info!(
                    "{}: target pid {old} is gone; waiting for it to come back",
                    self.t.name
                );
            }
            self.status(|s| {
                s.state = "waiting for the target process".into();
                s.pid = None;
            });
            return Ok(());
        };
        if self.pid != Some(pid) {
            self.attach_to(pid)?;
        }
        if self.t.socket.is_some() && self.admin.is_none() {
            self.connect()?;
        }
        // Before the reads that may report a phase change and ask the
        // bucket for an extra sample.
        self.budget.refill(self.budget_rate(), Instant::now());
        self.poll()?;
        self.tick_fsyncs();
        self.export_tps_cost();
        if Instant::now() >= self.next_sample && !self.stopping() {
            self.evaluate(pid)?;
        }
        Ok(())
    }

    /// The target is gone: what described its process (rate, users,
    /// signals, settings, advice) is dropped from the metrics and the
    /// status, so neither shows a dead process's values as current. The
    /// trials, the counters and the last sample's time stay: they are
    /// history. The next process is sampled afresh.
    fn forget_process(&mut self, pid: u32) {
        let name = self.t.name.clone();
        let m = Metrics::t(&name);
        self.unshow();
        let met = &self.shared.metrics;
        met.commits_per_second.remove(&m);
        met.users.remove(&m);
        met.pid.remove(&m);
        met.advice_changes.remove(&m);
        met.commits_per_fsync.remove(&m);
        met.forget_fsync_rates(&name);
        self.rate = None;
        self.users = 0.0;
        self.last_advice = None;
        self.status(|s| {
            s.last_pid = Some(pid);
            s.gone_unix_ms = Some(journal::now_ms());
            s.commits_per_s = None;
            s.users = None;
            s.verdict = None;
            s.advice.clear();
            s.settings.clear();
        });
    }

    /// Removes the signal, setting and advice series the last sample
    /// exported, so a stale value does not linger.
    fn unshow(&mut self) {
        let met = &self.shared.metrics;
        for s in self.shown_signals.drain(..) {
            met.signal.remove(&s);
        }
        met.clear_values(&self.shown_settings, &self.shown_advice);
        self.shown_settings.clear();
        self.shown_advice.clear();
    }

    /// Seconds of attached probes per second the TPS budget buys.
    fn budget_rate(&self) -> f64 {
        SampleBudget::rate(self.shared.config.agent.budget.tps_percent, self.fsync_cost)
    }

    /// Fraction of the time the probes were attached since the worker started.
    fn duty_cycle(&self) -> f64 {
        self.attached.as_secs_f64() / self.started.elapsed().as_secs_f64().max(1e-9)
    }

    /// What the observation costs: the duty cycle so far at a loaded
    /// window's cost, plus the fsync counters' current cost.
    fn export_tps_cost(&self) {
        let cost = self.duty_cycle().min(1.0) * ATTACHED_TPS_COST * 100.0 + self.fsync_cost;
        let m = Metrics::t(&self.t.name);
        self.shared.metrics.tps_cost.get_or_create(&m).set(cost);
    }

    fn attach_to(&mut self, pid: u32) -> Result<()> {
        let m = Metrics::t(&self.t.name);
        self.pid = Some(pid);
        match self.last_pid.replace(pid) {
            Some(old) => {
                self.audit("target_restarted", json!({"old_pid": old, "pid": pid}));
                tracing::info!(
                    "{}: target restarted (pid {old} -> {pid}); re-attaching",
                    self.t.name
                );
            }
            None => {
                self.audit("attached", json!({"pid": pid}));
                tracing::info!("{}: found pid {pid}", self.t.name);
            }
        }
        self.shared.metrics.attaches.get_or_create(&m).inc();
        self.shared.metrics.pid.get_or_create(&m).set(pid as f64);
        self.shared.metrics.up.get_or_create(&m).set(1.0);
        self.admin = None;
        self.last_poll = None;
        self.phase = PhaseDetector::new(self.t.phase.clone());
        self.lost.clear();
        self.warned_unavailable = false;
        self.attach_fsyncs(pid);
        self.next_sample = Instant::now() + settle_wait(crate::find::age(pid));
        self.status(|s| {
            s.pid = Some(pid);
            s.state = "observing".into();
            s.last_error = None;
            s.last_pid = None;
            s.gone_unix_ms = None;
        });
        Ok(())
    }

    fn connect(&mut self) -> Result<()> {
        let sock = self.t.socket.clone().expect("checked by the caller");
        let mut a = Admin::connect(&sock, &self.t.user)?;
        // Settings are changed only on the server observed: the socket is
        // its, or reaches it through a forwarder.
        if let Some(pid) = self.pid {
            crate::admin::check_served_by(&sock, pid, Some(&mut a))?;
        }
        // An interrupted trial is undone before anything else.
        if let Some(open) = self.journal.open_trial.clone() {
            super::reconcile::restore(&mut a, &open, &self.t.name, &self.shared)?;
            self.journal.open_trial = None;
            self.journal.save(&self.journal_path)?;
        }
        self.admin = Some(a);
        Ok(())
    }

    /// Reads the status counters: commits/s and users over the last second.
    fn poll(&mut self) -> Result<()> {
        self.rate = None;
        let Some(a) = self.admin.as_mut() else {
            return Ok(());
        };
        let commits = a.status(&self.t.commit_counter)?;
        let users = a.status(&self.t.users_counter)? as f64;
        let now = Instant::now();
        self.users = users;
        let m = Metrics::t(&self.t.name);
        self.shared.metrics.users.get_or_create(&m).set(users);
        if let Some((c0, t0)) = self.last_poll.replace((commits, now)) {
            let secs = now.duration_since(t0).as_secs_f64();
            if secs <= 0.0 {
                return Ok(());
            }
            let rate = commits.saturating_sub(c0) as f64 / secs;
            self.rate = Some(rate);
            self.shared
                .metrics
                .commits_per_second
                .get_or_create(&m)
                .set(rate);
            self.status(|s| {
                s.commits_per_s = Some(rate);
                s.users = Some(users);
            });
            self.phase.use_source(super::phase::COMMITS);
            if let Some(change) = self.phase.second(rate, users) {
                self.phase_changed(change.to_string());
            }
        }
        Ok(())
    }

    pub(super) fn phase_changed(&mut self, what: String) {
        let m = Metrics::t(&self.t.name);
        self.shared.metrics.phase_changes.get_or_create(&m).inc();
        self.audit("phase_change", json!({"change": what}));
        tracing::info!("{}: phase change: {what}", self.t.name);
        self.lost.clear();
        self.pending = Some(what);
        let now = Instant::now();
        let soonest = self
            .last_sample
            .map(|l| l + self.t.sampling.min_gap)
            .unwrap_or(now)
            .max(now);
        // An extra sample only as the TPS budget allows (the bucket was
        // refilled at the start of this step).
        let Some(wait) = self.budget.wait_for_extra(self.budget_rate()) else {
            self.audit(
                "sample_deferred",
                json!({"why": "the fsync counters take the whole TPS budget", "until": "the next regular sample"}),
            );
            return;
        };
        let at = soonest.max(now + wait);
        if at < self.next_sample && at > soonest {
            self.audit(
                "sample_deferred",
                json!({"why": "the TPS budget", "wait_s": (at - now).as_secs_f64()}),
            );
        }
        self.next_sample = self.next_sample.min(at);
    }

    /// A sampled observation, the diagnosis, and (apply mode) the trials.
    fn evaluate(&mut self, pid: u32) -> Result<()> {
        let s = self.t.sampling.clone();
        self.last_sample = Some(Instant::now());
        let backoff = self.shared.backoff.load(Ordering::Relaxed).max(1);
        self.next_sample = Instant::now() + s.every * backoff;
        let reason = self.pending.take();
        let windows = match self.sample(pid)? {
            Some(w) => w,
            None => return Ok(()),
        };
        self.maybe_resume_fsyncs(pid, &windows);
        let summary = summarize(&windows);
        if let Some(change) = self.phase.sample(&summary) {
            if reason.is_none() {
                // The load's character changed between samples: this
                // evaluation is the new phase's.
                let m = Metrics::t(&self.t.name);
                self.shared.metrics.phase_changes.get_or_create(&m).inc();
                self.audit("phase_change", json!({"change": change.to_string()}));
                self.lost.clear();
            }
        }
        let d = self.diagnose(pid, windows, &summary)?;
        self.export(&d, &summary);
        // Counted once its signals and advice are exported, so a scrape that
        // sees the count also sees what the observation measured.
        let m = Metrics::t(&self.t.name);
        self.shared.metrics.samples.get_or_create(&m).inc();
        if let Some(r) = &reason {
            let verdict = (self.t.mode != Mode::Observe).then_some(&d.verdict.text);
            self.audit("evaluated", json!({"why": r, "verdict": verdict}));
        }
        if self.t.mode == Mode::Apply {
            trials::evaluate(self, &d)?;
            self.phase.after_trials();
        } else {
            self.phase.settle();
        }
        Ok(())
    }

    /// Attaches the probes for the warm-up and the window, then detaches.
    fn sample(&mut self, pid: u32) -> Result<Option<Vec<Signals>>> {
        let s = self.t.sampling.clone();
        let m = Metrics::t(&self.t.name);
        let mut opts = AttachOptions::for_profile(pid, &self.profile);
        opts.syscall_hooks = redoctor_probes::SyscallHooks::Auto;
        let began = Instant::now();
        let probes =
            Probes::attach(&opts).with_context(|| format!("attaching the probes to pid {pid}"))?;
        if !self.warned_unavailable {
            for u in probes.unavailable() {
                tracing::warn!("{}: {} unavailable: {}", self.t.name, u.what, u.why);
            }
            self.warned_unavailable = true;
        }
        let ids = probes.program_ids();
        self.shared
            .metrics
            .probes_attached
            .get_or_create(&m)
            .set(1.0);
        self.status(|st| {
            st.state = "sampling".into();
            st.probe_program_ids = ids.clone();
        });
        let mut sampler = Sampler::new(probes, self.profile.clone())?;
        sampler.set_cost_every(1);
        sampler.set_server_threads(match self.admin.as_mut() {
            Some(a) => a.thread_names(),
            None => Err(crate::admin::NO_ADMIN_FOR_THREAD_NAMES.into()),
        });
        let mut windows = Vec::new();
        // Both waits give up when the agent is stopping, so SIGTERM is not
        // held up by a long window (the probes are detached on drop below).
        let stop = self.stop.clone();
        let stopping = move || stop.load(Ordering::Relaxed);
        let result = (|| -> Result<()> {
            if !s.warmup.is_zero() {
                match sampler.wait_window_unless(s.warmup, &stopping)? {
                    Some(w) if !w.target_exited => {}
                    _ => return Ok(()),
                }
            }
            if let Some(w) = sampler.wait_window_unless(s.window, &stopping)? {
                if w.window_ns > 0 {
                    windows.push(w);
                }
            }
            Ok(())
        })();
        drop(sampler);
        self.attached += began.elapsed();
        self.budget.spend(began.elapsed());
        self.shared
            .metrics
            .probes_attached
            .get_or_create(&m)
            .set(0.0);
        self.shared
            .metrics
            .duty_cycle
            .get_or_create(&m)
            .set(self.duty_cycle());
        self.status(|st| {
            st.state = "observing".into();
            st.probe_program_ids.clear();
        });
        result.context("reading the probes' maps")?;
        for w in &windows {
            let (runs, ns) = w
                .probe_cost
                .iter()
                .fold((0, 0), |(r, n), c| (r + c.runs, n + c.run_ns));
            let secs = (w.window_ns as f64 / 1e9).max(1e-9);
            self.shared
                .metrics
                .bpf_events
                .get_or_create(&m)
                .inc_by(runs as f64);
            self.shared
                .metrics
                .bpf_events_per_second
                .get_or_create(&m)
                .set(runs as f64 / secs);
            self.shared
                .metrics
                .bpf_run_seconds
                .get_or_create(&m)
                .inc_by(ns as f64 / 1e9);
            self.shared
                .metrics
                .lost_events
                .get_or_create(&m)
                .inc_by(w.events_lost as f64);
        }
        let lost: u64 = windows.iter().map(|w| w.events_lost).sum();
        if lost > 0 {
            self.audit(
                "events_lost",
                serde_json::json!({"events": lost, "why": crate::table::lost_events_line(lost)}),
            );
        }
        if windows.is_empty() || windows.iter().any(|w| w.target_exited) {
            return Ok(None);
        }
        Ok(Some(windows))
    }

    /// Logs, once each, kept settings the server no longer has.
    fn note_external_changes(&mut self, stated: &[(String, String)]) {
        for d in self.external.check(&self.journal, stated) {
            tracing::warn!(
                "{}: {} was changed outside the agent: kept {}, now {}",
                self.t.name,
                d.setting,
                d.kept,
                d.now
            );
            self.audit("setting_changed_externally", json!(d));
        }
    }

    /// The current settings the diagnosis states (from the server when connected).
    pub(super) fn stated_settings(&mut self) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        if let Some(a) = self.admin.as_mut() {
            for (k, _) in default_settings(&self.profile.name) {
                out.push((k.to_string(), a.get(k)?));
            }
        }
        Ok(out)
    }

    fn diagnose(
        &mut self,
        pid: u32,
        windows: Vec<Signals>,
        summary: &redoctor_advisor::Summary,
    ) -> Result<Diagnosis> {
        let stated = self.stated_settings()?;
        self.note_external_changes(&stated);
        let facts = Facts::infer(&self.profile.name, summary, &stated);
        let cores = summary.get("cores").copied().unwrap_or(1.0).max(1.0) as u32;
        if self.model.as_ref().map(|(c, _)| *c) != Some(cores) {
            let src = match &self.shared.calibration {
                Some(p) => crate::calibrate::ModelSource::File(p),
                None => crate::calibrate::ModelSource::Default { cores, auto: None },
            };
            self.model = Some((cores, crate::calibrate::model(src)?));
        }
        let model = &self.model.as_ref().expect("set above").1;
        // The summary is already made: diagnose from it rather than again from the windows.
        let rates = redoctor_advisor::model::inputs::window_rates(&windows);
        Ok(diagnose_summary(
            pid,
            summary.clone(),
            rates,
            windows,
            facts,
            &self.shared.rules,
            model,
        )?)
    }

    /// Metrics, status and (when it changed) an audit line for a diagnosis.
    /// In observe mode only the signals and settings: no advice is logged,
    /// exported or shown.
    fn export(&mut self, d: &Diagnosis, summary: &redoctor_advisor::Summary) {
        let name = self.t.name.clone();
        self.unshow();
        let met = &self.shared.metrics;
        let advising = self.t.mode != Mode::Observe;
        let recommendations: &[_] = if advising { &d.recommendations } else { &[] };
        for (k, v) in summary {
            let label = TSignal {
                target: name.clone(),
                signal: k.clone(),
            };
            met.signal.get_or_create(&label).set(*v);
            self.shown_signals.push(label);
        }
        self.shown_settings = d
            .facts
            .settings
            .iter()
            .filter(|(k, _)| self.t.allows(k))
            .map(|(k, v)| TSetting {
                target: name.clone(),
                setting: k.clone(),
                value: v.clone(),
            })
            .collect();
        self.shown_advice = recommendations
            .iter()
            .map(|r| TAdvice {
                target: name.clone(),
                setting: r.setting.clone(),
                current: r.current.clone(),
                proposed: r.proposed.clone(),
                rule: r.rule.clone(),
            })
            .collect();
        for s in &self.shown_settings {
            met.setting.get_or_create(s).set(1);
        }
        for a in &self.shown_advice {
            met.advice.get_or_create(a).set(1);
        }
        if advising {
            met.advice_changes
                .get_or_create(&Metrics::t(&name))
                .set(recommendations.len() as f64);
        } else {
            met.advice_changes.remove(&Metrics::t(&name));
        }
        let advice: Vec<(String, String)> = recommendations
            .iter()
            .map(|r| (r.setting.clone(), r.proposed.clone()))
            .collect();
        let lines: Vec<AdviceLine> = recommendations
            .iter()
            .map(|r| AdviceLine {
                setting: r.setting.clone(),
                current: r.current.clone(),
                proposed: r.proposed.clone(),
                rule: r.rule.clone(),
            })
            .collect();
        let settings: Settings = d
            .facts
            .settings
            .iter()
            .filter(|(k, _)| self.t.allows(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.status(|s| {
            s.verdict = advising.then(|| d.verdict.text.clone());
            s.advice = lines;
            s.settings = settings;
            s.last_sample_unix_ms = Some(journal::now_ms());
        });
        if advising && self.last_advice.as_ref() != Some(&advice) {
            self.audit(
                "advice",
                json!({
                    "verdict": d.verdict.text,
                    "changes": d.recommendations.iter().map(|r| json!({
                        "setting": r.setting, "current": r.current, "proposed": r.proposed,
                        "rule": r.rule, "confidence": r.confidence,
                    })).collect::<Vec<_>>(),
                }),
            );
            self.last_advice = Some(advice);
        }
    }

    /// The model the last diagnosis was made with.
    pub(super) fn model(&self) -> Option<&Model> {
        self.model.as_ref().map(|(_, m)| m)
    }

    pub(super) fn candidates(&self, d: &Diagnosis) -> Vec<Candidate> {
        let mut out = crate::trial_run::candidates(d);
        for c in &self.t.candidates {
            out.push(Candidate::new(
                format!(
                    "{} (from the config)",
                    redoctor_advisor::experiment::show(c)
                ),
                c.clone(),
                0.0,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_just_started_server_waits_before_its_first_sample() {
        assert_eq!(
            settle_wait(Some(Duration::from_millis(300))),
            Duration::from_millis(1700)
        );
        assert_eq!(settle_wait(Some(Duration::from_secs(3600))), Duration::ZERO);
        assert_eq!(settle_wait(Some(SETTLE)), Duration::ZERO);
        assert_eq!(settle_wait(None), SETTLE);
    }
}
