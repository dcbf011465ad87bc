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

pub mod advice;
pub mod decision;
pub mod error;
pub mod evaluate;
pub mod experiment;
pub mod facts;
pub mod follow_trial;
pub mod gate;
pub mod model;
pub mod num;
pub mod reads;
pub mod report;
pub mod rule;
pub mod ruleset;
pub mod summary;

pub use advice::{Diagnosis, Recommendation, VerdictKind};
pub use error::AdvisorError;
pub use evaluate::{diagnose, diagnose_summary};
pub use facts::Facts;
pub use follow_trial::follow_trial;
pub use ruleset::RuleSet;
pub use summary::{summarize, Summary};
