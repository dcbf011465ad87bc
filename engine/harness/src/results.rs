//! The results file: one JSON document per sweep, rewritten atomically after
//! every cell so that an interrupted sweep can resume.
//!
//! Schema `redoctor.sweep.results`, version [`VERSION`]:
//!
//! ```text
//! {
//!   "schema": "redoctor.sweep.results",
//!   "version": 1,
//!   "engine_version": "0.1.0",       // crate version of the binary that ran the cells
//!   "host": { "cpus": 2, "kernel": "6.18..." },
//!   "created_unix": 1763700000, "updated_unix": 1763700600,
//!   "commands": ["redoctor-sweep sweep --grid ... --out ..."],  // every invocation that wrote it
//!   "grid": { "run": {...}, "axes": {...}, "configurations": {...} },   // the grid file, parsed
//!   "cells": [ {
//!     "workload": "read_write", "users": 4, "cores": 2, "binlog": false, "flush": 1,
//!     "config": "RT1", "repeat": 0,                  // the cell (repeat is 0-based)
//!     "seq": 17,                                     // position in the run order
//!     "started_unix": 1763700123, "wall_secs": 3.1,  // when and how long (process included)
//!     "status": "ok" | "failed",
//!     "error": null | "what went wrong",
//!     "metrics": null | { "tps": ..., "p50_us": ..., "p95_us": ..., "p99_us": ...,
//!                         "commits": ..., "errors": ..., "retries": ..., "planned_rollbacks": ...,
//!                         "commits_per_fsync": null | x, "ctx_switches_per_commit": null | x,
//!                         "cpu_us_per_commit": null | x, "cpus": 2 },
//!     "report": null | { the full `redoctor-engine run --json` report }
//!   } ]
//! }
//! ```
//!
//! Compatible additions keep the version; a change of meaning bumps it, and
//! [`SweepResults::load`] refuses other versions.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::grid::{CellKey, Grid};
use super::SweepError;

pub const SCHEMA: &str = "redoctor.sweep.results";
pub const VERSION: u32 = 1;

/// The machine the sweep ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// CPUs the sweep process could use.
    pub cpus: usize,
    /// `uname -r`.
    pub kernel: String,
}

impl HostInfo {
    pub fn current() -> HostInfo {
        HostInfo {
            cpus: redoctor_workload::procstat::allowed_cpus()
                .map(|c| c.len())
                .unwrap_or(0),
            kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    Ok,
    Failed,
}

/// The numbers the oracle and the plots use, taken from the run report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellMetrics {
    pub tps: f64,
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub commits: u64,
    pub errors: u64,
    pub retries: u64,
    pub planned_rollbacks: u64,
    pub commits_per_fsync: Option<f64>,
    pub ctx_switches_per_commit: Option<f64>,
    pub cpu_us_per_commit: Option<f64>,
    pub cpus: usize,
}

impl CellMetrics {
    /// Extracts the metrics from a `run --json` report.
    pub fn from_report(r: &serde_json::Value) -> Result<CellMetrics, String> {
        let f = |path: &[&str]| -> Option<&serde_json::Value> {
            path.iter().try_fold(r, |v, k| v.get(k))
        };
        let u = |path: &[&str]| -> Result<u64, String> {
            f(path)
                .and_then(|v| v.as_u64())
                .ok_or_else(|| format!("the run report has no number at {}", path.join(".")))
        };
        let o = |path: &[&str]| f(path).and_then(|v| v.as_f64());
        let ctx = match (
            o(&["ctx_switches", "voluntary_per_commit"]),
            o(&["ctx_switches", "involuntary_per_commit"]),
        ) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        Ok(CellMetrics {
            tps: o(&["tps"]).ok_or("the run report has no tps")?,
            p50_us: u(&["latency_us", "p50_us"])?,
            p95_us: u(&["latency_us", "p95_us"])?,
            p99_us: u(&["latency_us", "p99_us"])?,
            commits: u(&["commits"])?,
            errors: u(&["errors"])?,
            retries: u(&["retries"])?,
            planned_rollbacks: u(&["planned_rollbacks"]).unwrap_or(0),
            commits_per_fsync: o(&["commits_per_fsync"]),
            ctx_switches_per_commit: ctx,
            cpu_us_per_commit: o(&["cpu_us_per_commit"]),
            cpus: u(&["cpus"])? as usize,
        })
    }
}

/// One cell's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    #[serde(flatten)]
    pub key: CellKey,
    pub seq: u64,
    pub started_unix: u64,
    pub wall_secs: f64,
    pub status: CellStatus,
    pub error: Option<String>,
    pub metrics: Option<CellMetrics>,
    pub report: Option<serde_json::Value>,
}

/// A whole results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResults {
    pub schema: String,
    pub version: u32,
    pub engine_version: String,
    pub host: HostInfo,
    pub created_unix: u64,
    pub updated_unix: u64,
    /// The command lines that wrote this file (the first run, then each resume).
    #[serde(default)]
    pub commands: Vec<String>,
    pub grid: Grid,
    pub cells: Vec<CellResult>,
}

pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl SweepResults {
    /// An empty results document for `grid`.
    pub fn new(grid: Grid) -> SweepResults {
        let now = now_unix();
        SweepResults {
            schema: SCHEMA.to_string(),
            version: VERSION,
            engine_version: env!("CARGO_PKG_VERSION").to_string(),
            host: HostInfo::current(),
            created_unix: now,
            updated_unix: now,
            commands: Vec::new(),
            grid,
            cells: Vec::new(),
        }
    }

    /// The successful result of `key`, if any.
    pub fn ok_cell(&self, key: &CellKey) -> Option<&CellResult> {
        self.cells
            .iter()
            .find(|c| &c.key == key && c.status == CellStatus::Ok)
    }

    /// Records `r`, replacing an earlier (failed) result of the same cell.
    pub fn record(&mut self, r: CellResult) {
        self.cells.retain(|c| c.key != r.key);
        self.cells.push(r);
        self.updated_unix = now_unix();
    }

    /// Parses a results document, checking its schema and version.
    pub fn from_json(text: &str) -> Result<SweepResults, SweepError> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| SweepError::Results(format!("not JSON: {e}")))?;
        let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
        if schema != SCHEMA {
            return Err(SweepError::Results(format!(
                "schema is `{schema}`, not `{SCHEMA}`: this is not a sweep results file"
            )));
        }
        let version = v.get("version").and_then(|s| s.as_u64()).unwrap_or(0);
        if version != u64::from(VERSION) {
            return Err(SweepError::Results(format!(
                "schema version {version} is not supported (this build reads version {VERSION}); use the redoctor-engine that wrote it"
            )));
        }
        serde_json::from_value(v).map_err(|e| SweepError::Results(e.to_string()))
    }

    /// Reads a results file.
    pub fn load(path: &Path) -> Result<SweepResults, SweepError> {
        let text = fs::read_to_string(path).map_err(|source| SweepError::Io {
            doing: format!("reading the results file {}", path.display()),
            source,
        })?;
        SweepResults::from_json(&text).map_err(|e| match e {
            SweepError::Results(m) => SweepError::Results(format!("{}: {m}", path.display())),
            e => e,
        })
    }

    /// Writes the document to `path` atomically: a temporary file in the same
    /// directory, fsync, rename, fsync of the directory.
    pub fn save(&self, path: &Path) -> Result<(), SweepError> {
        let io = |doing: String| move |source| SweepError::Io { doing, source };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let name = path
            .file_name()
            .ok_or_else(|| SweepError::Results(format!("{} is not a file path", path.display())))?;
        let tmp = dir.join(format!(".{}.tmp", name.to_string_lossy()));
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| SweepError::Results(format!("cannot serialise the results: {e}")))?;
        let mut f = fs::File::create(&tmp).map_err(io(format!("creating {}", tmp.display())))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.write_all(b"\n"))
            .and_then(|()| f.sync_all())
            .map_err(io(format!("writing {}", tmp.display())))?;
        drop(f);
        fs::rename(&tmp, path).map_err(io(format!(
            "renaming {} to {}",
            tmp.display(),
            path.display()
        )))?;
        if let Ok(d) = fs::File::open(&dir) {
            // Best effort: the rename is already visible; this makes it durable.
            let _ = d.sync_all();
        }
        Ok(())
    }
}
