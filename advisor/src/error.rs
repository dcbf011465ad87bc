//! Errors of the advisor library.

use std::path::PathBuf;

/// Why rules could not be loaded or evaluated, or a report not rendered.
#[derive(Debug, thiserror::Error)]
pub enum AdvisorError {
    /// A rule file is malformed: the file, the line (1-based) and the reason.
    #[error("{}:{line}: {reason}", file.display())]
    RuleFile {
        file: PathBuf,
        line: usize,
        reason: String,
    },
    /// A rule directory or file could not be read.
    #[error("reading rules from {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `--disable ID` names no loaded rule.
    #[error("cannot disable rule '{0}': no loaded rule has this id (see `redoctor diagnose --list-rules`)")]
    UnknownRule(String),
    /// No windows of signals were given.
    #[error("no signals to diagnose: observe the process for at least one window")]
    NoSignals,
    /// A report could not be rendered.
    #[error("rendering the {format} report: {reason}")]
    Render {
        format: &'static str,
        reason: String,
    },
}
