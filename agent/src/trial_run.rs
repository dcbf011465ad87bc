//! `redoctor diagnose --trial --socket S`: applies the recommendations live
//! and measures interleaved windows — baseline, candidate, baseline, ... —
//! then keeps the candidate only if it is faster beyond noise (Welch's
//! t-test, `redoctor_advisor::trial`), otherwise restores the baseline.
//! A kept candidate is recorded in the state file, so `redoctor revert`
//! can still undo it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use redoctor_advisor::trial::{decide, TrialReport};
use redoctor_probes::Sampler;

use crate::admin::{guard_durability, Admin};
use crate::state::State;

/// Time given to a setting change before its window starts (dropped).
const SETTLE: Duration = Duration::from_millis(200);

fn set_all(admin: &mut Admin, s: &BTreeMap<String, String>) -> Result<()> {
    for (k, v) in s {
        admin.set(k, v)?;
    }
    Ok(())
}

fn commits_per_s(sampler: &mut Sampler, window: Duration) -> Result<f64> {
    sampler
        .wait_window(SETTLE)
        .context("reading the probes' maps")?;
    let w = sampler
        .wait_window(window)
        .context("reading the probes' maps")?;
    let c = w.engine.commits.with_context(|| {
        "the engine's commit counter is not visible (no probe points on the target): a trial needs commits/s"
    })?;
    Ok(c as f64 / (w.window_ns as f64 / 1e9))
}

/// Runs `rounds` baseline/candidate pairs of `window` each.
pub fn run(
    sampler: &mut Sampler,
    admin: &mut Admin,
    candidate: BTreeMap<String, String>,
    rounds: usize,
    window: Duration,
    allow_durability: bool,
    state_path: &Path,
) -> Result<TrialReport> {
    guard_durability(
        candidate.keys().map(String::as_str),
        allow_durability,
        "trial",
    )?;
    let mut baseline = BTreeMap::new();
    for k in candidate.keys() {
        baseline.insert(k.clone(), admin.get(k)?);
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let measured = (|| -> Result<()> {
        for _ in 0..rounds {
            a.push(commits_per_s(sampler, window)?);
            set_all(admin, &candidate)?;
            b.push(commits_per_s(sampler, window)?);
            set_all(admin, &baseline)?;
        }
        Ok(())
    })();
    if let Err(e) = measured {
        set_all(admin, &baseline).context("restoring the baseline after a failed trial")?;
        return Err(e.context("the trial failed; the baseline settings were restored"));
    }
    let report = decide(baseline.clone(), candidate.clone(), a, b);
    if report.kept {
        let mut state = State::load(state_path)?;
        for (k, v) in &candidate {
            state.record(admin.socket(), k, &baseline[k], v);
        }
        state.save(state_path)?;
        set_all(admin, &candidate)?;
    }
    Ok(report)
}
