//! Load driver: sysbench-style workloads run by many user threads.
//!
//! The workloads ([`WorkloadKind`]) mirror sysbench's OLTP scripts on tables
//! `sbtest1..=N` (ids `1..=table_size`, uniform random keys, a random table
//! per statement). [`run`] starts `users` OS threads named `user/N`, lets them
//! warm up, then measures for a fixed window and returns a [`RunReport`]:
//! throughput, commit latency percentiles, lock retries, and the cost side
//! — commits per redo fsync, context switches and CPU time per commit — that
//! tells the two redo modes (RT0: user threads write the log; RT1: dedicated
//! log threads) apart.
//!
//! Module map:
//! - [`kinds`]: what one transaction of each workload does;
//! - [`runner`]: the threads, phases and measurement window;
//! - [`report`]: the result, as JSON (serde) and as text;
//! - [`procstat`]: context switches and CPU time from `/proc`, CPU affinity;
//! - [`acks`]: the acknowledgement log the crash test checks after recovery.

pub mod acks;
pub mod kinds;
pub mod procstat;
pub mod report;
pub mod runner;

use std::path::PathBuf;
use std::time::Duration;

pub use acks::{AckCheck, AckWriter, ParsedAcks};
pub use kinds::{UnknownWorkload, WorkloadKind};
pub use report::{CtxSwitchReport, LatencySummary, RunReport};
pub use runner::run;

use crate::error::EngineError;

/// Everything [`run`] needs to know besides the engine.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub workload: WorkloadKind,
    /// Concurrent user threads (sysbench `--threads`).
    pub users: usize,
    /// Length of the measured window.
    pub duration: Duration,
    /// Time the threads run before the window opens (not measured).
    pub warmup: Duration,
    /// Tables `sbtest1..=tables` are used; they must exist.
    pub tables: u32,
    /// Rows each table was prepared with: keys are drawn from `1..=table_size`.
    pub table_size: u64,
    /// Crash-test acknowledgement log: after every acknowledged commit of an
    /// `insert` transaction, `<table_id> <id>\n` is appended with one `write(2)`.
    pub ack_file: Option<PathBuf>,
    /// Toggle the redo mode (on ↔ off) this often while the run lasts.
    pub switch_every: Option<Duration>,
    /// Seed for the per-thread random generators (random when `None`).
    pub seed: Option<u64>,
}

impl RunConfig {
    /// A configuration with sysbench-like defaults: 1 user, 10 s after a 1 s
    /// warm-up, 4 tables of 10 000 rows.
    pub fn new(workload: WorkloadKind) -> Self {
        RunConfig {
            workload,
            users: 1,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(1),
            tables: 4,
            table_size: 10_000,
            ack_file: None,
            switch_every: None,
            seed: None,
        }
    }

    /// Checks the values [`run`] cannot work with.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |msg: String| Err(WorkloadError::Config(msg));
        if self.users == 0 {
            return bad("users must be at least 1".into());
        }
        if self.duration.is_zero() {
            return bad("the measured duration must be longer than 0 s".into());
        }
        if self.tables == 0 {
            return bad("at least 1 table is needed".into());
        }
        if self.table_size == 0 || self.table_size > i32::MAX as u64 {
            return bad(format!(
                "table size {} is out of range: use 1..={} (k is a 32-bit column)",
                self.table_size,
                i32::MAX
            ));
        }
        if self.ack_file.is_some() && self.workload != WorkloadKind::Insert {
            return bad(format!(
                "only the insert workload writes an acknowledgement file, not {}",
                self.workload
            ));
        }
        if self.switch_every.is_some_and(|d| d.is_zero()) {
            return bad("the redo mode switch interval must be longer than 0 ms".into());
        }
        Ok(())
    }
}

/// Why a run could not start or be measured.
///
/// An engine error *during* the run does not end up here: the run stops and
/// its [`RunReport`] carries the error in `first_error`.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("invalid run configuration: {0}")]
    Config(String),
    #[error("table `{0}` does not exist: prepare the sbtest tables first (Engine::prepare_sbtest) or use fewer tables")]
    MissingTable(String),
    #[error("engine error while {doing}: {source}")]
    Engine {
        doing: &'static str,
        #[source]
        source: EngineError,
    },
    #[error("cannot open the acknowledgement file `{path}`: {source}")]
    AckFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read process statistics from /proc: {0}")]
    ProcStat(#[source] std::io::Error),
    #[error("cannot spawn thread `{name}`: {source}")]
    Spawn {
        name: String,
        #[source]
        source: std::io::Error,
    },
}
