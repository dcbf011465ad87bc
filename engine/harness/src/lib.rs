//! The sweep harness: the ground truth the advisor is judged against.
//!
//! A grid ([`grid`], a TOML file) names workloads × users × cores × binlog ×
//! flush setting × configurations (each a set of `--set` settings). Every cell
//! runs in a fresh `redoctor-engine run` process on a fresh data directory
//! ([`cell`]), pinned to the first k CPUs, in a shuffled order, repeated; the
//! results go to one versioned JSON file rewritten after every cell
//! ([`results`]), so an interrupted sweep resumes ([`driver`]). The [`oracle`]
//! names the best configuration of each scenario and whether it wins beyond
//! run-to-run noise (Welch's t-test, from `redoctor-stats`); [`plot`]
//! draws it. The `redoctor-sweep` binary drives all three, and charts the
//! replica bench ([`replica_plot`]).

pub mod cell;
pub mod driver;
pub mod grid;
pub mod oracle;
pub mod plot;
pub mod replica_plot;
pub mod results;

pub use cell::CellRunner;
pub use driver::{preflight, run_sweep, SweepOptions, SweepSummary};
pub use grid::{CellKey, Grid, Scenario};
pub use oracle::{oracle, OracleReport};
pub use plot::plot;
pub use results::{CellMetrics, CellResult, CellStatus, SweepResults};

/// Why a sweep, an oracle or a plot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("invalid sweep grid: {0}")]
    Grid(String),
    #[error("the engine refuses settings of the grid (nothing was run; fix or remove these configurations):\n  {0}")]
    Settings(String),
    #[error("results file: {0}")]
    Results(String),
    #[error("{doing}: {source}")]
    Io {
        doing: String,
        #[source]
        source: std::io::Error,
    },
    #[error("drawing a chart failed: {0}")]
    Plot(String),
}
