//! Apply mode: the admitted candidates are tried live, one at a time, with
//! the shared experiment module (`redoctor_advisor::experiment`), on a
//! testbed that switches settings over the admin socket and measures
//! commits/s from the server's status counter (no probes needed). The
//! first kept candidate ends the evaluation (one change per stabilization
//! window). Each trial is in the journal while it runs.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use redoctor_advisor::experiment::{
    pct, run_trial, share, show, Candidate, ExperimentError, Outcome, Sample, Settings, Testbed,
    TrialRecord,
};
use redoctor_advisor::Diagnosis;
use serde_json::json;

use super::super::guardrails;
use super::super::journal::{now_ms, KeptChange, OpenTrial};
use super::super::metrics::{Metrics, TOutcome};
use super::super::status::TrialLine;
use super::Worker;
use crate::status_counter::StatusCounter;

/// The server as a testbed: settings over the admin socket, commits/s
/// from the status counter; stops (an error, so the baseline is restored)
/// when the agent is stopping or the target goes away.
struct CounterBed<'a> {
    w: &'a mut Worker,
    counter: StatusCounter,
}

impl<'a> CounterBed<'a> {
    fn new(w: &'a mut Worker) -> CounterBed<'a> {
        let counter = StatusCounter::new(w.t.commit_counter.clone());
        CounterBed { w, counter }
    }
}

impl CounterBed<'_> {
    fn admin(&mut self) -> Result<&mut crate::admin::Admin, &'static str> {
        self.w
            .admin
            .as_mut()
            .ok_or("not connected to the server's admin socket")
    }
}

impl Testbed for CounterBed<'_> {
    fn read(&mut self, names: &[String]) -> Result<Settings, ExperimentError> {
        self.admin()
            .map_err(|e| ExperimentError::read(names, e))?
            .read_settings(names)
    }

    fn apply(&mut self, settings: &Settings) -> Result<(), ExperimentError> {
        self.admin()
            .map_err(|e| ExperimentError::apply(settings, e))?
            .apply_settings(settings)
    }

    fn measure(&mut self, len: Duration) -> Result<Sample, ExperimentError> {
        let w = &mut *self.w;
        let admin = w
            .admin
            .as_mut()
            .ok_or_else(|| ExperimentError::measure("not connected"))?;
        let (stop, pid) = (&w.stop, w.pid);
        let sample = self.counter.window(admin, len, || {
            if stop.load(Ordering::Relaxed) {
                return Err(ExperimentError::measure("the agent is stopping"));
            }
            match pid {
                Some(pid) if !crate::find::alive(pid) => {
                    Err(ExperimentError::measure("the target process exited"))
                }
                _ => Ok(()),
            }
        })?;
        let rate = sample.commits_per_s;
        let m = Metrics::t(&self.w.t.name);
        self.w
            .shared
            .metrics
            .commits_per_second
            .get_or_create(&m)
            .set(rate);
        Ok(sample)
    }
}

fn outcome_name(o: Outcome) -> String {
    serde_json::to_value(o)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{o:?}"))
}

/// The closed loop's step after a diagnosis.
/// Why a candidate is tried: the diagnosis' verdict, the load it saw,
/// and each rule that proposed one of its settings with the values that
/// rule read.
fn evidence(d: &Diagnosis, settings: &Settings) -> serde_json::Value {
    let load: serde_json::Map<String, serde_json::Value> = LOAD_SIGNALS
        .iter()
        .filter_map(|k| Some((k.to_string(), json!(d.summary.get(*k)?))))
        .collect();
    let rules: Vec<serde_json::Value> = d
        .recommendations
        .iter()
        .filter(|r| settings.contains_key(&r.setting))
        .map(|r| {
            json!({"rule": r.rule, "setting": r.setting, "proposed": r.proposed,
                   "supporting_rules": r.supporting_rules,
                   "read": r.evidence.iter().map(|e| (e.name.clone(), e.value.clone()))
                       .collect::<BTreeMap<_, _>>()})
        })
        .collect();
    json!({"verdict": d.verdict.text, "load": load, "rules": rules})
}

/// The summary signals that describe the load a trial starts under.
const LOAD_SIGNALS: &[&str] = &[
    "commits_per_s",
    "user_threads",
    "saturation",
    "cpu_us_per_commit",
    "commits_per_fsync",
    "redo_fsync_mean_us",
];

pub fn evaluate(w: &mut Worker, d: &Diagnosis) -> Result<()> {
    if w.admin.is_none() {
        return Ok(());
    }
    let candidates = w.candidates(d);
    if candidates.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    if let Err(closed) = guardrails::window(&w.t, &w.journal, now) {
        w.audit(
            "change_deferred",
            json!({"why": closed.to_string(),
                   "candidates": candidates.iter().map(|c| show(&c.settings)).collect::<Vec<_>>()}),
        );
        return Ok(());
    }
    let current: Settings = w.stated_settings()?.into_iter().collect();
    let mut admitted = Vec::new();
    for c in candidates {
        // A candidate meant to follow a kept one within a search: the
        // daemon keeps at most one change per evaluation, and the next
        // evaluation predicts from what was kept.
        if !c.ready(&current) {
            continue;
        }
        let label = c.label.clone();
        let asked = guardrails::changes_only(&current, &c.settings);
        let admitted_c =
            guardrails::admit(&w.t, &w.journal, &current, w.users, c, now).and_then(|c| {
                match w.model() {
                    Some(m) => guardrails::repredict(m, d, &asked, c),
                    None => Ok(c),
                }
            });
        match admitted_c {
            Ok(c) => {
                if w.lost.may_try(&c.settings, Instant::now())
                    && !admitted
                        .iter()
                        .any(|a: &Candidate| a.settings == c.settings)
                {
                    admitted.push(c);
                }
            }
            Err(why) => w.audit("candidate_refused", json!({"candidate": label, "why": why})),
        }
    }
    let plan = w.shared.trial_plan(&w.t);
    crate::trial_run::assign_designs(
        &mut admitted,
        w.t.trial.design,
        w.t.trial.switchback(),
        false,
    );
    let budget_end = Instant::now() + plan.max_total;
    let n = admitted.len();
    for (i, c) in admitted.into_iter().enumerate() {
        let own = redoctor_advisor::experiment::Plan {
            design: c.design.unwrap_or(plan.design),
            ..plan.clone()
        };
        let left = budget_end.saturating_duration_since(Instant::now());
        if left < own.min_time() || w.stopping() {
            break;
        }
        let names: Vec<String> = c.settings.keys().cloned().collect();
        let baseline = CounterBed::new(w)
            .read(&names)
            .context("reading the baseline")?;
        w.journal.open_trial = Some(OpenTrial {
            socket: w
                .t
                .socket
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            user: w.t.user.clone(),
            baseline: baseline.clone(),
            candidate: c.settings.clone(),
            started_unix_ms: now_ms(),
        });
        w.journal
            .save(&w.journal_path)
            .context("recording the trial in the journal before applying it")?;
        w.audit(
            "trial_started",
            json!({"candidate": c.label, "settings": c.settings, "baseline": baseline,
                   "predicted_gain": c.predicted_gain,
                   "plan": own.describe(),
                   "evidence": evidence(d, &c.settings)}),
        );
        w.status(|s| s.state = format!("trial: {}", show(&c.settings)));
        w.phase.pause();
        let budget = share(left, n - i, &own);
        let rec = run_trial(
            &mut CounterBed::new(w),
            &baseline,
            &c.settings,
            &own,
            budget,
        );
        let kept = rec.outcome.kept();
        let retry = (!kept).then(|| w.lost.lost(&c.settings, Instant::now()));
        settle(w, &c.settings, &baseline, &rec, retry)?;
        let m = Metrics::t(&w.t.name);
        w.shared
            .metrics
            .trials
            .get_or_create(&TOutcome {
                target: w.t.name.clone(),
                outcome: outcome_name(rec.outcome),
            })
            .inc();
        if kept {
            w.shared.metrics.changes_kept.get_or_create(&m).inc();
            w.phase.forget_mix();
            break;
        }
        if rec.outcome == Outcome::Failed {
            // The server or the load went away: no further trial now.
            break;
        }
    }
    w.status(|s| s.state = "observing".into());
    Ok(())
}

/// Records the outcome: the journal's open trial is cleared once the
/// server is known to be at the kept or restored settings.
fn settle(
    w: &mut Worker,
    cand: &Settings,
    baseline: &Settings,
    rec: &TrialRecord,
    retry: Option<Duration>,
) -> Result<()> {
    let expect = if rec.outcome.kept() { cand } else { baseline };
    let names: Vec<String> = expect.keys().cloned().collect();
    let now_at = CounterBed::new(w).read(&names).ok();
    let settled = now_at.as_ref() == Some(expect);
    let windows: Vec<serde_json::Value> = rec
        .windows
        .iter()
        .map(|x| json!({"side": x.side, "commits_per_s": x.commits_per_s, "warmup": x.warmup, "secs": x.secs}))
        .collect();
    w.audit(
        "trial",
        json!({
            "candidate": cand, "baseline": baseline,
            "outcome": outcome_name(rec.outcome),
            "estimate": rec.estimate.as_ref().map(|e| pct(e.mean_ratio)),
            "reason": rec.reason, "error": rec.error,
            "elapsed_s": rec.elapsed_s, "windows": windows,
            "now": now_at,
            // A lost candidate is tried again after this (or at a phase change).
            "retry_in_s": retry.map(|d| d.as_secs_f64()),
        }),
    );
    let line = TrialLine {
        at_unix_ms: now_ms(),
        candidate: show(cand),
        outcome: outcome_name(rec.outcome),
        estimate: rec.estimate.as_ref().map(|e| pct(e.mean_ratio)),
        reason: rec.reason.clone(),
    };
    w.status(|s| {
        s.trials.push(line);
        let n = s.trials.len();
        if n > 10 {
            s.trials.drain(..n - 10);
        }
    });
    if !settled {
        // The journal keeps the open trial: the next connection restores it.
        w.audit(
            "restore_pending",
            json!({"expected": expect, "read": now_at,
                   "why": "the server could not be read back at the expected settings; the journal keeps the trial and the next connection restores the baseline"}),
        );
        w.admin = None;
        return Ok(());
    }
    if rec.outcome.kept() {
        w.journal.changes.push(KeptChange {
            at_unix_ms: now_ms(),
            before: baseline.clone(),
            after: cand.clone(),
        });
        tracing::info!("{}: kept {} ({})", w.t.name, show(cand), rec.reason);
    } else {
        tracing::info!("{}: rolled back {} ({})", w.t.name, show(cand), rec.reason);
    }
    w.journal.open_trial = None;
    w.journal.save(&w.journal_path)
}
