//! On start (and on each new connection to a target) a trial that a crash
//! or `kill -9` interrupted is rolled back to the journal's baseline before
//! anything else, and the agent says so. A setting that no longer holds
//! the candidate value (the server restarted, or someone changed it since)
//! is left as it is.

use std::path::Path;

use anyhow::Result;
use redoctor_advisor::experiment::show;
use serde_json::json;

use super::journal::{Journal, OpenTrial};
use super::metrics::Metrics;
use super::Shared;
use crate::admin::Admin;

/// Restores `open`'s baseline on the server behind `a` where the candidate still holds.
pub fn restore(a: &mut Admin, open: &OpenTrial, target: &str, shared: &Shared) -> Result<()> {
    let mut restored = Vec::new();
    let mut left = Vec::new();
    for (k, cand) in &open.candidate {
        let now = a.get(k)?;
        let Some(base) = open.baseline.get(k) else {
            continue;
        };
        if &now == cand && cand != base {
            a.set(k, base)?;
            restored.push(json!({"setting": k, "from": cand, "to": base}));
        } else {
            left.push(json!({"setting": k, "value": now}));
        }
    }
    shared.audit.log(
        target,
        "reconciled",
        json!({"interrupted_trial": show(&open.candidate), "started_unix_ms": open.started_unix_ms,
               "restored": restored, "left_as_found": left}),
    );
    shared
        .metrics
        .restores
        .get_or_create(&Metrics::t(target))
        .inc_by(restored.len() as f64);
    tracing::info!(
        "{target}: a trial of {} was interrupted; restored {} setting(s) to the baseline{}",
        show(&open.candidate),
        restored.len(),
        if left.is_empty() {
            String::new()
        } else {
            format!(
                ", left {} as found (no longer the candidate value)",
                left.len()
            )
        }
    );
    Ok(())
}

/// Every journal in the state dir with an open trial: restored now when its
/// server is reachable; otherwise the target's worker restores it on connecting.
pub fn at_start(state_dir: &Path, shared: &Shared) {
    let dir = state_dir.join("targets");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let name = p
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        let mut j = match Journal::load(&p, &name) {
            Ok(j) => j,
            Err(err) => {
                tracing::warn!("{err:#}");
                continue;
            }
        };
        let Some(open) = j.open_trial.clone() else {
            continue;
        };
        let res = Admin::connect(Path::new(&open.socket), &open.user)
            .and_then(|mut a| restore(&mut a, &open, &name, shared));
        match res {
            Ok(()) => {
                j.open_trial = None;
                if let Err(err) = j.save(&p) {
                    tracing::warn!("{err:#}");
                }
            }
            Err(err) => {
                shared.audit.log(
                    &name,
                    "restore_pending",
                    json!({"interrupted_trial": show(&open.candidate), "why": format!("{err:#}")}),
                );
                tracing::warn!(
                    "{name}: a trial of {} was interrupted and its server is not reachable ({err:#}); it is restored when the agent next connects",
                    show(&open.candidate)
                );
            }
        }
    }
}
