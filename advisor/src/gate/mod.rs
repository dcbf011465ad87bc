//! The CI performance gate's judgement (`redoctor gate`): per-run metrics
//! from the probes ([`metrics`]), the baseline file ([`baseline`]), the
//! comparison with its thresholds and Mann–Whitney U tests ([`compare`]),
//! and the outputs ([`output`]). Running the scenarios is the agent's part.

pub mod baseline;
pub mod compare;
pub mod metrics;
pub mod output;

pub use baseline::Baseline;
pub use compare::{compare, Comparison, Judge, MetricResult, Verdict};
pub use metrics::{Direction, Scope, Threshold, METRICS};
pub use output::GateReport;

/// Why the gate could not judge.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("baseline {path}: {why}")]
    Baseline { path: String, why: String },
    #[error("{doing}: {source}")]
    Io {
        doing: String,
        #[source]
        source: std::io::Error,
    },
    #[error("drawing the chart failed: {0}")]
    Chart(String),
}
