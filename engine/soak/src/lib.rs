//! The crash soak: randomised `kill -9` trials of the bundled engine, each
//! checked against an expected state kept outside the killed process (in
//! the style of RocksDB's `db_crashtest.py`).
//!
//! A trial ([`trial::TrialConfig`], derived from a printed seed) prepares or
//! reuses a data directory, runs `redoctor-engine run --journal J` under
//! load, waits for the first acknowledged commit, `SIGKILL`s the engine at a
//! random moment after it, recovers the directory in a child process
//! (`redoctor-soak recover-state`, which writes a [`state::StateFile`]),
//! and [`check::check`]s the recovered state against the state the run
//! started from and the run's journal.
//!
//! Module map:
//! - [`trial`]: the matrix, and one trial's configuration from its seed;
//! - [`state`]: the recovered state as a file (rows, binlog xids, recovery
//!   report, TPC-C conditions), captured from an open engine;
//! - [`check`]: the expected-state check;
//! - [`runner`]: the processes of a trial, the kill, the verdict;
//! - [`summary`]: totals over a soak, as text and JSON;
//! - [`replica`]: the replica soak (`redoctor-soak replica`): kill a
//!   replica while it applies, check it against its source after catch-up.

pub mod check;
pub mod replica;
pub mod runner;
pub mod state;
pub mod summary;
pub mod trial;

use std::path::PathBuf;

/// Errors of the soak's own machinery (not verdicts on the engine).
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a soak state file: {source}")]
    BadState {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} is not a journal: {source}")]
    BadJournal {
        path: PathBuf,
        #[source]
        source: redoctor_workload::journal::JournalParseError,
    },
    #[error(transparent)]
    Binlog(#[from] redoctor_engine::BinlogError),
    #[error("engine: {0}")]
    Engine(String),
}
