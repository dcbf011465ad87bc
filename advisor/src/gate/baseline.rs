//! The baseline file: a versioned JSON document a project commits to its
//! repository, holding every run's metric values and where they came from.
//!
//! ```json
//! { "schema": "redoctor.gate.baseline", "version": 1,
//!   "scenario": "update_index-rt1", "created_unix_s": 1764000000,
//!   "host": { "hostname": "...", "kernel": "...", "cpu_model": "...", "cpus_online": 2 },
//!   "commands": ["redoctor-engine run --workload update_index ..."],
//!   "runs": [ { "commits_per_s": 51234.0, "voluntary_switches_per_commit": 2.1, ... } ] }
//! ```
//!
//! Written atomically (a temporary file beside it, fsync'd, renamed over
//! it), so an interrupted update leaves the old baseline as it was.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::GateError;

pub const SCHEMA: &str = "redoctor.gate.baseline";
pub const VERSION: u32 = 1;

/// Where the runs were measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpus_online: u32,
}

impl Host {
    /// This machine.
    pub fn this() -> Host {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Host {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            cpu_model: read("/proc/cpuinfo")
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
                .unwrap_or_default(),
            cpus_online: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
        }
    }
}

/// A baseline: every run of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema: String,
    pub version: u32,
    pub scenario: String,
    pub created_unix_s: u64,
    pub host: Host,
    pub commands: Vec<String>,
    /// The commit the measured build came from, when the recorder said
    /// (`redoctor gate run --update-baseline --source-commit C`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<String>,
    pub runs: Vec<BTreeMap<String, f64>>,
}

impl Baseline {
    pub fn new(scenario: &str, commands: Vec<String>, runs: Vec<BTreeMap<String, f64>>) -> Self {
        Baseline {
            schema: SCHEMA.into(),
            version: VERSION,
            scenario: scenario.into(),
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            host: Host::this(),
            commands,
            source_commit: None,
            runs,
        }
    }

    /// Reads and checks a baseline file (schema, version, at least one run).
    pub fn load(path: &Path) -> Result<Baseline, GateError> {
        let bad = |why: String| GateError::Baseline {
            path: path.display().to_string(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            bad(format!(
                "cannot read it ({e}); pass an existing file or make one with --update-baseline"
            ))
        })?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
        if schema != SCHEMA {
            return Err(bad(format!(
                "schema is {schema:?}, not {SCHEMA:?}: this is not a gate baseline"
            )));
        }
        let version = v.get("version").and_then(|s| s.as_u64()).unwrap_or(0);
        if version != u64::from(VERSION) {
            return Err(bad(format!(
                "version {version} is not supported (this build reads version {VERSION}); re-record it with --update-baseline"
            )));
        }
        let b: Baseline = serde_json::from_value(v).map_err(|e| bad(format!("malformed: {e}")))?;
        if b.runs.is_empty() {
            return Err(bad(
                "it holds no runs; re-record it with --update-baseline".into()
            ));
        }
        Ok(b)
    }

    /// Writes atomically.
    pub fn save(&self, path: &Path) -> Result<(), GateError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| GateError::Io {
            doing: "serialising the baseline".into(),
            source: std::io::Error::other(e),
        })?;
        write_atomic(path, format!("{text}\n").as_bytes())
    }
}

/// Writes `bytes` to `path` atomically (`redoctor_files::write_atomic`);
/// an error leaves `path` as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), GateError> {
    redoctor_files::write_atomic(path, bytes).map_err(|e| GateError::Io {
        doing: format!("writing {}", path.display()),
        source: e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_schemas_and_versions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.json");
        let b = Baseline::new(
            "s",
            vec!["cmd".into()],
            vec![BTreeMap::from([("commits_per_s".to_string(), 5.0)])],
        );
        b.save(&p).unwrap();
        assert_eq!(Baseline::load(&p).unwrap(), b);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replace("\"version\": 1", "\"version\": 9")).unwrap();
        let e = Baseline::load(&p).unwrap_err().to_string();
        assert!(e.contains("version 9 is not supported"), "{e}");
        std::fs::write(&p, "{\"schema\": \"other\"}").unwrap();
        assert!(Baseline::load(&p)
            .unwrap_err()
            .to_string()
            .contains("not a gate baseline"));
        std::fs::write(&p, "{oops").unwrap();
        assert!(Baseline::load(&p)
            .unwrap_err()
            .to_string()
            .contains("not JSON"));
    }
}
