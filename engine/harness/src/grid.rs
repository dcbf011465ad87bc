//! The sweep grid: a TOML file naming the axes and the configurations.
//!
//! ```toml
//! [run]                      # every cell's run options
//! duration_secs = 2.0        # measured window
//! warmup_secs = 0.5
//! repeats = 3                # runs per cell; the oracle uses their median
//! tables = 4                 # sbtest tables and rows (TPCC-lite ignores them)
//! table_size = 10000
//! access = "uniform"         # or "zipf:0.8", "pareto:0.2"
//! warehouses = 1             # TPCC-lite
//! order_seed = 1             # seeds the shuffled cell order
//!
//! [axes]
//! workloads = ["tpcc", "read_write", "mix:point_select=10,update_index=1"]
//! users = [1, 2, 4, 8]
//! cores = [1, 2]             # the engine is pinned to the first k CPUs
//! binlog = [false]           # passed as --set log_bin=OFF/ON
//! flush = [1]                # passed as --set innodb_flush_log_at_trx_commit=N
//!
//! [configurations]           # name = { setting = "value", ... }
//! RT0 = { innodb_log_writer_threads = "OFF" }
//! RT1 = { innodb_log_writer_threads = "ON" }
//! ```
//!
//! A configuration may not set `log_bin` or `innodb_flush_log_at_trx_commit`:
//! those are axes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use redoctor_workload::{KeyDist, WorkloadSpec};

use super::SweepError;

/// Settings the axes own; configurations must not set them.
pub const AXIS_SETTINGS: [&str; 2] = ["log_bin", "innodb_flush_log_at_trx_commit"];

/// Run options shared by every cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    pub duration_secs: f64,
    #[serde(default = "default_warmup")]
    pub warmup_secs: f64,
    #[serde(default = "default_repeats")]
    pub repeats: u32,
    #[serde(default = "default_tables")]
    pub tables: u32,
    #[serde(default = "default_table_size")]
    pub table_size: u64,
    #[serde(default = "default_access")]
    pub access: String,
    #[serde(default = "default_warehouses")]
    pub warehouses: u32,
    #[serde(default = "default_seed")]
    pub order_seed: u64,
}

fn default_warmup() -> f64 {
    1.0
}
fn default_repeats() -> u32 {
    3
}
fn default_tables() -> u32 {
    4
}
fn default_table_size() -> u64 {
    10_000
}
fn default_access() -> String {
    "uniform".into()
}
fn default_warehouses() -> u32 {
    1
}
fn default_seed() -> u64 {
    1
}

/// The axes of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axes {
    pub workloads: Vec<String>,
    pub users: Vec<u32>,
    pub cores: Vec<u32>,
    #[serde(default = "default_binlog")]
    pub binlog: Vec<bool>,
    #[serde(default = "default_flush")]
    pub flush: Vec<u8>,
}

fn default_binlog() -> Vec<bool> {
    vec![false]
}
fn default_flush() -> Vec<u8> {
    vec![1]
}

/// A sweep grid (the parsed TOML file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub run: RunOptions,
    pub axes: Axes,
    /// Configuration name → settings (`name = value`).
    pub configurations: BTreeMap<String, BTreeMap<String, String>>,
}

/// A point of the grid without the configuration: what the oracle compares configurations on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Scenario {
    pub workload: String,
    pub users: u32,
    pub cores: u32,
    pub binlog: bool,
    pub flush: u8,
}

/// One run of the sweep: a scenario, a configuration and a repeat number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CellKey {
    #[serde(flatten)]
    pub scenario: Scenario,
    pub config: String,
    /// 0-based.
    pub repeat: u32,
}

impl std::fmt::Display for CellKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.scenario;
        write!(
            f,
            "{} users={} cores={} binlog={} flush={} {} #{}",
            s.workload,
            s.users,
            s.cores,
            on_off(s.binlog),
            s.flush,
            self.config,
            self.repeat + 1
        )
    }
}

/// `ON` or `OFF`, as the engine spells a boolean setting.
pub(crate) fn on_off(b: bool) -> &'static str {
    if b {
        "ON"
    } else {
        "OFF"
    }
}

fn invalid(msg: impl Into<String>) -> SweepError {
    SweepError::Grid(msg.into())
}

fn check_list<T: Ord + Clone + std::fmt::Debug>(name: &str, v: &[T]) -> Result<(), SweepError> {
    if v.is_empty() {
        return Err(invalid(format!(
            "axes.{name} is empty: give at least one value"
        )));
    }
    let unique: BTreeSet<T> = v.iter().cloned().collect();
    if unique.len() != v.len() {
        return Err(invalid(format!("axes.{name} repeats a value: {v:?}")));
    }
    Ok(())
}

impl Grid {
    /// Parses and validates a grid file's text.
    pub fn parse(text: &str) -> Result<Grid, SweepError> {
        let grid: Grid = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        grid.validate()?;
        Ok(grid)
    }

    /// Reads, parses and validates a grid file.
    pub fn load(path: &Path) -> Result<Grid, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|source| SweepError::Io {
            doing: format!("reading the grid file {}", path.display()),
            source,
        })?;
        Grid::parse(&text).map_err(|e| match e {
            SweepError::Grid(m) => SweepError::Grid(format!("{}: {m}", path.display())),
            e => e,
        })
    }

    /// Checks everything that can be checked without running the engine.
    pub fn validate(&self) -> Result<(), SweepError> {
        let r = &self.run;
        if !(r.duration_secs.is_finite() && r.duration_secs > 0.0) {
            return Err(invalid(
                "run.duration_secs must be a number of seconds above 0",
            ));
        }
        if !(r.warmup_secs.is_finite() && r.warmup_secs >= 0.0) {
            return Err(invalid("run.warmup_secs must be a number of seconds >= 0"));
        }
        if r.repeats == 0 {
            return Err(invalid("run.repeats must be at least 1"));
        }
        if r.tables == 0 || r.table_size == 0 || r.table_size > i32::MAX as u64 {
            return Err(invalid(format!(
                "run.tables must be >= 1 and run.table_size 1..={}",
                i32::MAX
            )));
        }
        r.access
            .parse::<KeyDist>()
            .map_err(|e| invalid(format!("run.access: {e}")))?;
        if r.warehouses == 0 || r.warehouses > redoctor_workload::tpcc::MAX_WAREHOUSES {
            return Err(invalid(format!(
                "run.warehouses must be 1..={}",
                redoctor_workload::tpcc::MAX_WAREHOUSES
            )));
        }
        let a = &self.axes;
        check_list("workloads", &a.workloads)?;
        for w in &a.workloads {
            w.parse::<WorkloadSpec>()
                .map_err(|e| invalid(format!("axes.workloads: {e}")))?;
        }
        check_list("users", &a.users)?;
        if a.users.contains(&0) {
            return Err(invalid(
                "axes.users: every load level needs at least 1 user",
            ));
        }
        check_list("cores", &a.cores)?;
        if a.cores.contains(&0) {
            return Err(invalid("axes.cores: the engine needs at least 1 core"));
        }
        check_list("binlog", &a.binlog)?;
        check_list("flush", &a.flush)?;
        if let Some(f) = a.flush.iter().find(|&&f| f > 2) {
            return Err(invalid(format!(
                "axes.flush: {f} is not an innodb_flush_log_at_trx_commit value (0, 1 or 2)"
            )));
        }
        if self.configurations.is_empty() {
            return Err(invalid(
                "[configurations] is empty: name at least one, e.g. RT1 = { innodb_log_writer_threads = \"ON\" }",
            ));
        }
        for (name, settings) in &self.configurations {
            if name.trim().is_empty() || name.contains(['/', '\\']) {
                return Err(invalid(format!(
                    "configuration name `{name}` must be non-empty and contain no slash"
                )));
            }
            for key in settings.keys() {
                if AXIS_SETTINGS.contains(&key.as_str()) {
                    return Err(invalid(format!(
                        "configuration `{name}` sets `{key}`, which is an axis (axes.binlog / axes.flush); remove it from the configuration"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Every scenario, in axis order.
    pub fn scenarios(&self) -> Vec<Scenario> {
        let a = &self.axes;
        let mut out = Vec::new();
        for w in &a.workloads {
            for &users in &a.users {
                for &cores in &a.cores {
                    for &binlog in &a.binlog {
                        for &flush in &a.flush {
                            out.push(Scenario {
                                workload: w.clone(),
                                users,
                                cores,
                                binlog,
                                flush,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// Every cell: scenarios × configurations × repeats.
    pub fn cells(&self) -> Vec<CellKey> {
        let mut out = Vec::new();
        for repeat in 0..self.run.repeats {
            for s in self.scenarios() {
                for config in self.configurations.keys() {
                    out.push(CellKey {
                        scenario: s.clone(),
                        config: config.clone(),
                        repeat,
                    });
                }
            }
        }
        out
    }

    /// The order the cells run in: repeat round by repeat round (every cell's
    /// first run before any second run), each round shuffled with a seeded
    /// generator, so slow drift of the machine spreads over all
    /// configurations. The same grid always gives the same order.
    pub fn schedule(&self) -> Vec<CellKey> {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        let mut out = Vec::new();
        let all = self.cells();
        for round in 0..self.run.repeats {
            let mut cells: Vec<CellKey> =
                all.iter().filter(|c| c.repeat == round).cloned().collect();
            let mut rng = rand::rngs::SmallRng::seed_from_u64(
                self.run.order_seed ^ u64::from(round).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
            cells.shuffle(&mut rng);
            out.extend(cells);
        }
        out
    }

    /// The `--set` settings of a cell: the axes' `log_bin` and
    /// `innodb_flush_log_at_trx_commit`, then the configuration's.
    pub fn settings(&self, key: &CellKey) -> Vec<(String, String)> {
        let mut out = vec![
            (
                "log_bin".to_string(),
                on_off(key.scenario.binlog).to_string(),
            ),
            (
                "innodb_flush_log_at_trx_commit".to_string(),
                key.scenario.flush.to_string(),
            ),
        ];
        if let Some(c) = self.configurations.get(&key.config) {
            out.extend(c.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        out
    }
}
