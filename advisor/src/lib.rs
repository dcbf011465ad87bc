//! redoctor advisor: rules as data (TOML files with CEL expressions) over
//! the probes' [`Signals`](redoctor_probes::Signals), evaluated into a
//! [`Diagnosis`] with evidence-backed recommendations, rendered as text,
//! JSON, Markdown or HTML (with SVG charts).
//!
//! ```no_run
//! use redoctor_advisor::{diagnose, Facts, RuleSet, summarize};
//! # let windows: Vec<redoctor_probes::Signals> = vec![];
//! let rules = RuleSet::load(&["rules".into()])?;
//! let facts = Facts::infer("redoctor-engine", &summarize(&windows), &[]);
//! let d = diagnose(1234, windows, facts, &rules)?;
//! println!("{}", redoctor_advisor::report::text(&d));
//! # Ok::<(), redoctor_advisor::AdvisorError>(())
//! ```

pub mod advice;
pub mod error;
pub mod evaluate;
pub mod facts;
pub mod report;
pub mod rule;
pub mod ruleset;
pub mod summary;
pub mod trial;

pub use advice::{Diagnosis, Recommendation, VerdictKind};
pub use error::AdvisorError;
pub use evaluate::diagnose;
pub use facts::Facts;
pub use ruleset::RuleSet;
pub use summary::{summarize, Summary};
