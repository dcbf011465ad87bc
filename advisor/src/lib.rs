//! redoctor advisor: rules as data (TOML files with CEL expressions) over
//! the probes' [`Signals`](redoctor_probes_common::Signals) say which settings are
//! worth considering; a calibrated what-if [`model`] predicts each
//! candidate's commits/s and advice is given only beyond its error; the
//! [`experiment`] module verifies a change live and the verdict follows it
//! ([`follow_trial`]). Rendered as text, JSON, Markdown or HTML (with SVG charts).
//!
//! ```no_run
//! use redoctor_advisor::{diagnose, Facts, RuleSet, summarize};
//! use redoctor_advisor::model::Model;
//! # let windows: Vec<redoctor_probes_common::Signals> = vec![];
//! let rules = RuleSet::load(&["rules".into()])?;
//! let facts = Facts::infer("redoctor-engine", &summarize(&windows), &[]);
//! let d = diagnose(1234, windows, facts, &rules, &Model::uncalibrated())?;
//! println!("{}", redoctor_advisor::report::text(&d));
//! # Ok::<(), redoctor_advisor::AdvisorError>(())
//! ```

// The advisor's jobs, each a module with its own API: the advice it
// gives, the decision rule and its priors, the what-if model, the live
// trial's statistics, the reports, and the CI gate's judgement.
pub mod advice;
pub mod decision;
pub mod experiment;
pub mod gate;
pub mod model;
pub mod report;

// The rules and how a diagnosis is put together: used through the
// re-exports below.
mod error;
mod evaluate;
mod facts;
mod follow_trial;
mod num;
mod reads;
mod rule;
mod ruleset;
mod summary;

pub use advice::{Diagnosis, Recommendation, VerdictKind};
pub use error::AdvisorError;
pub use evaluate::{diagnose, diagnose_summary, what_if, WORTH_TRYING};
pub use facts::{default_settings, Facts};
pub use follow_trial::follow_trial;
pub use rule::Rule;
pub use ruleset::{RuleSet, SHIPPED};
pub use summary::{summarize, SignalDef, Summary, SIGNALS};
