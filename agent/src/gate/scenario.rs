//! The gate's scenario file (TOML): what to run, how to find the pid to
//! watch, how to load it, and per-metric thresholds. See `agent/GATE.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use redoctor_advisor::gate::metrics::{def_of, ROLE_PAIR_PREFIX};
use redoctor_advisor::gate::Threshold;
use serde::Deserialize;

/// A scenario as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// Runs per side.
    #[serde(default = "default_repeats")]
    pub repeats: u32,
    /// Observed and discarded after the target starts (`1s`, `500ms`).
    #[serde(default = "default_warmup", with = "duration")]
    pub warmup: Duration,
    /// Observed per run.
    #[serde(default = "default_duration", with = "duration")]
    pub duration: Duration,
    pub engine: Option<EngineTarget>,
    pub command: Option<CommandTarget>,
    /// Per-metric thresholds replacing the defaults (`wakeups_per_commit:*`
    /// for every role pair).
    #[serde(default)]
    pub thresholds: BTreeMap<String, Threshold>,
}

fn default_repeats() -> u32 {
    5
}
fn default_warmup() -> Duration {
    Duration::from_secs(1)
}
fn default_duration() -> Duration {
    Duration::from_secs(3)
}

/// The bundled engine's workload (`redoctor-engine run`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineTarget {
    pub workload: String,
    pub users: u32,
    pub cpus: Option<u32>,
    pub tables: Option<u32>,
    pub table_size: Option<u64>,
    /// `--set NAME=VALUE` at start.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Where the data directory is made (the storage whose fsync is measured).
    pub workdir: Option<PathBuf>,
}

/// Any command under test.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandTarget {
    /// Started per run with `sh -c` (`{bin}`: the binary under test);
    /// absent when the target already runs (then `pid` must find it).
    pub run: Option<String>,
    /// How to find the pid to watch.
    #[serde(default)]
    pub pid: PidFrom,
    /// Started with `sh -c` once the pid is found; stopped when the run ends.
    pub load: Option<String>,
    /// The probes' profile for the target (thread roles, files).
    #[serde(default = "default_profile")]
    pub profile: String,
    /// How long the pid may take to appear.
    #[serde(default = "default_ready", with = "duration")]
    pub ready_timeout: Duration,
}

fn default_profile() -> String {
    "redoctor-engine".into()
}
fn default_ready() -> Duration {
    Duration::from_secs(60)
}

/// Where the pid comes from.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PidFrom {
    /// The `run` command's own process (started with `exec`).
    #[default]
    Command,
    /// A pid file the target writes.
    Pidfile(PathBuf),
    /// The newest process with this name (`/proc/PID/comm`).
    Process(String),
}

mod duration {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        redoctor_args::duration(&s).map_err(serde::de::Error::custom)
    }
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read the scenario {}; pass an existing file",
                path.display()
            )
        })?;
        let s: Scenario = toml::from_str(&text)
            .with_context(|| format!("scenario {} is malformed", path.display()))?;
        s.check()
            .with_context(|| format!("scenario {}", path.display()))?;
        Ok(s)
    }

    fn check(&self) -> Result<()> {
        if self.name.trim().is_empty() {
            bail!("`name` is empty: name the scenario");
        }
        match (&self.engine, &self.command) {
            (None, None) => bail!("give an [engine] or a [command] table: what to run"),
            (Some(_), Some(_)) => bail!("give [engine] or [command], not both"),
            _ => {}
        }
        if !(2..=100).contains(&self.repeats) {
            bail!(
                "repeats = {}: the comparison needs 2 to 100 runs per side",
                self.repeats
            );
        }
        if self.duration < Duration::from_millis(500) {
            bail!("duration must be at least 500ms");
        }
        if let Some(e) = &self.engine {
            if e.users == 0 {
                bail!("[engine] users must be at least 1");
            }
        }
        if let Some(c) = &self.command {
            if c.run.is_none() && c.pid == PidFrom::Command {
                bail!("[command]: without `run`, name the pid with pid = {{ pidfile = \"...\" }} or {{ process = \"...\" }}");
            }
        }
        for (k, t) in &self.thresholds {
            if def_of(k).is_none() && k.as_str() != format!("{ROLE_PAIR_PREFIX}*") {
                let known: Vec<&str> = redoctor_advisor::gate::METRICS
                    .iter()
                    .map(|m| m.name)
                    .collect();
                bail!(
                    "[thresholds.{k}]: no such metric; known: {}, {ROLE_PAIR_PREFIX}FROM->TO, {ROLE_PAIR_PREFIX}*",
                    known.join(", ")
                );
            }
            if !(t.pct >= 0.0 && t.min_abs >= 0.0 && t.alpha > 0.0 && t.alpha < 1.0) {
                bail!("[thresholds.{k}]: pct and min_abs must be >= 0 and alpha in (0, 1)");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario> {
        let s: Scenario = toml::from_str(text)?;
        s.check()?;
        Ok(s)
    }

    #[test]
    fn reads_an_engine_scenario_with_defaults_and_overrides() {
        let s = parse(
            r#"
name = "ui"
duration = "2s"
[engine]
workload = "update_index"
users = 16
settings = { innodb_log_writer_threads = "ON" }
[thresholds.commits_per_s]
pct = 10
"#,
        )
        .unwrap();
        assert_eq!((s.repeats, s.warmup), (5, Duration::from_secs(1)));
        assert_eq!(s.duration, Duration::from_secs(2));
        assert_eq!(s.thresholds["commits_per_s"].alpha, 0.05);
    }

    #[test]
    fn refuses_what_cannot_run() {
        let e = |t: &str| format!("{:#}", parse(t).unwrap_err());
        assert!(e("name = \"x\"").contains("[engine] or a [command]"));
        assert!(
            e("name = \"x\"\nrepeats = 1\n[engine]\nworkload = \"insert\"\nusers = 1")
                .contains("2 to 100")
        );
        assert!(e(
            "name = \"x\"\n[engine]\nworkload = \"insert\"\nusers = 1\n[thresholds.nope]\npct = 1"
        )
        .contains("no such metric"));
        assert!(e("name = \"x\"\n[command]\nload = \"true\"").contains("name the pid"));
        assert!(
            e("name = \"x\"\nwarmup = \"3x\"\n[engine]\nworkload = \"insert\"\nusers = 1")
                .contains("unknown unit")
        );
        assert!(e("name = \"x\"\nbogus = 1").contains("unknown field"));
    }
}
