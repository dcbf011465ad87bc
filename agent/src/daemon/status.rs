//! The agent's status file (`status.json` in the state dir, rewritten
//! atomically every second) and `redoctor agent status [--json]`, which
//! reads it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use redoctor_advisor::experiment::{show, Settings};
use serde::{Deserialize, Serialize};

use super::config::{Mode, Target};

pub const SCHEMA: &str = "redoctor.agent.status";
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdviceLine {
    pub setting: String,
    pub current: String,
    pub proposed: String,
    pub rule: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialLine {
    pub at_unix_ms: u64,
    pub candidate: String,
    pub outcome: String,
    pub estimate: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetStatus {
    pub name: String,
    pub mode: Mode,
    pub pid: Option<u32>,
    /// waiting for the target process, observing, sampling, trial: ..., stopped.
    pub state: String,
    pub commits_per_s: Option<f64>,
    pub users: Option<f64>,
    pub last_sample_unix_ms: Option<u64>,
    pub verdict: Option<String>,
    pub advice: Vec<AdviceLine>,
    /// The knobs' values at the last sample.
    pub settings: Settings,
    /// The last trials, oldest first (at most 10).
    pub trials: Vec<TrialLine>,
    /// BPF program ids while the probes are attached (empty otherwise).
    pub probe_program_ids: Vec<u32>,
    /// The fsync counters' BPF program ids while attached.
    #[serde(default)]
    pub fsync_program_ids: Vec<u32>,
    /// Fsyncs/s over the last second and their mean µs, by file kind.
    #[serde(default)]
    pub fsyncs: BTreeMap<String, super::fsyncs::Rate>,
    pub last_error: Option<String>,
    /// While the target is gone: the pid it last had, and since when.
    #[serde(default)]
    pub last_pid: Option<u32>,
    #[serde(default)]
    pub gone_unix_ms: Option<u64>,
}

impl TargetStatus {
    pub fn new(t: &Target) -> TargetStatus {
        TargetStatus {
            name: t.name.clone(),
            mode: t.mode,
            pid: None,
            state: "starting".into(),
            commits_per_s: None,
            users: None,
            last_sample_unix_ms: None,
            verdict: None,
            advice: vec![],
            settings: Settings::new(),
            trials: vec![],
            probe_program_ids: vec![],
            fsync_program_ids: vec![],
            fsyncs: BTreeMap::new(),
            last_error: None,
            last_pid: None,
            gone_unix_ms: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub schema: String,
    pub version: u32,
    pub agent_pid: u32,
    pub updated_unix_ms: u64,
    pub config: String,
    pub metrics: String,
    pub targets: Vec<TargetStatus>,
}

pub fn write(dir: &Path, s: &Status) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(s)?;
    redoctor_files::write_atomic(&dir.join("status.json"), &bytes)
        .context("writing the status file")
}

pub fn read(dir: &Path) -> Result<Status> {
    let p = dir.join("status.json");
    let text = std::fs::read_to_string(&p).with_context(|| {
        format!(
            "no agent status at {} (is `redoctor agent` running with this state_dir?)",
            p.display()
        )
    })?;
    let s: Status = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an agent status file", p.display()))?;
    if s.schema != SCHEMA || s.version != VERSION {
        bail!(
            "{} is {} v{}, not {SCHEMA} v{VERSION}",
            p.display(),
            s.schema,
            s.version
        );
    }
    Ok(s)
}

/// Prints the status for humans.
pub fn print(out: &mut impl Write, s: &Status, running: bool) -> std::io::Result<()> {
    let age = super::journal::now_ms().saturating_sub(s.updated_unix_ms) / 1000;
    writeln!(
        out,
        "agent pid {} {} (status {age} s old), config {}, metrics {}",
        s.agent_pid,
        if running { "running" } else { "NOT RUNNING" },
        s.config,
        s.metrics
    )?;
    for t in &s.targets {
        writeln!(out)?;
        let rate = t
            .commits_per_s
            .map(|r| format!("{r:.0} commits/s"))
            .unwrap_or_else(|| "commits/s unknown".into());
        let users = t
            .users
            .map(|u| format!(", {u:.0} users"))
            .unwrap_or_default();
        let pid = match (t.pid, t.last_pid, t.gone_unix_ms) {
            (Some(p), _, _) => p.to_string(),
            (None, Some(last), Some(at)) => {
                let ago = super::journal::now_ms().saturating_sub(at) / 1000;
                format!("- (pid {last} gone {ago} s ago)")
            }
            _ => "-".into(),
        };
        writeln!(
            out,
            "{} [{:?}] pid {pid}: {}; {rate}{users}",
            t.name, t.mode, t.state
        )?;
        if !t.fsyncs.is_empty() {
            let kinds: Vec<String> = t
                .fsyncs
                .iter()
                .map(|(k, f)| {
                    let mean = f
                        .mean_us
                        .map(|m| format!(", mean {m:.0} µs"))
                        .unwrap_or_default();
                    format!("{k} {:.0}/s{mean}", f.per_s)
                })
                .collect();
            writeln!(out, "  fsyncs: {}", kinds.join("; "))?;
        }
        if let Some(v) = &t.verdict {
            writeln!(out, "  advice: {v}")?;
        } else if t.mode == Mode::Observe {
            writeln!(
                out,
                "  advice: none in observe mode (signals and metrics only)"
            )?;
        }
        for a in &t.advice {
            writeln!(
                out,
                "    {}: {} -> {} ({})",
                a.setting, a.current, a.proposed, a.rule
            )?;
        }
        if !t.settings.is_empty() {
            writeln!(out, "  settings: {}", show(&t.settings))?;
        }
        for tr in t.trials.iter().rev().take(3) {
            writeln!(
                out,
                "  trial: {} -> {} {} ({})",
                tr.candidate,
                tr.outcome,
                tr.estimate.as_deref().unwrap_or(""),
                tr.reason
            )?;
        }
        if let Some(e) = &t.last_error {
            writeln!(out, "  last error: {e}")?;
        }
    }
    Ok(())
}
