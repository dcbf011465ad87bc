//! Load driver: sysbench-style and TPCC-lite workloads run by many user threads.
//!
//! The workloads ([`WorkloadKind`]) mirror sysbench's OLTP scripts on tables
//! `sbtest1..=N` (ids `1..=table_size`, keys uniform or skewed — see
//! [`access`] — and a random table per statement), any statement [`mix`]
//! written as text, and TPCC-lite ([`tpcc`]). [`run`] starts `users` OS threads named `user/N`, lets them
//! warm up, then measures for a fixed window and returns a [`RunReport`]:
//! throughput, commit latency percentiles, lock retries, and the cost side
//! — commits per redo fsync, context switches and CPU time per commit — that
//! tells the two redo modes (RT0: user threads write the log; RT1: dedicated
//! log threads) apart.
//!
//! Module map:
//! - [`kinds`]: the named workloads, their labels and statement mixes;
//! - [`txn_gen`]: one user thread's transaction generator and the sysbench statements;
//! - [`mix`]: statement mixes (`point_select=10,update_index=1`);
//! - [`access`]: uniform, Zipfian and Pareto key access;
//! - [`tpcc`]: TPCC-lite's tables, loader, transactions and consistency check;
//! - [`runner`]: the threads, phases and measurement window;
//! - [`report`]: the result, as JSON (serde) and as text;
//! - [`procstat`]: context switches and CPU time from `/proc`, CPU affinity;
//! - [`acks`]: the acknowledgement log the crash test checks after recovery;
//! - [`journal`]: the crash soak's expected-state journal (every workload).

pub mod access;
pub mod acks;
pub mod journal;
pub mod kinds;
pub mod mix;
pub mod procstat;
pub mod report;
pub mod runner;
pub mod tpcc;
pub mod txn;
pub mod txn_gen;

use std::path::PathBuf;
use std::time::Duration;

pub use access::{KeyDist, KeySampler};
pub use acks::{AckCheck, AckWriter, ParsedAcks};
pub use journal::JournalWriter;
pub use kinds::{UnknownWorkload, WorkloadKind, WorkloadSpec, WorkloadSpecError};
pub use mix::{Mix, MixError, Statement};
pub use report::{CtxSwitchReport, IntervalReport, LatencySummary, RunReport};
pub use runner::{prepare, run, run_with_reports};

use redoctor_engine::EngineError;

/// Everything [`run`] needs to know besides the engine.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub workload: WorkloadKind,
    /// The statements of a [`WorkloadKind::Custom`] transaction (None otherwise).
    pub mix: Option<Mix>,
    /// How statements choose row ids.
    pub access: KeyDist,
    /// TPCC-lite warehouses (other workloads ignore it).
    pub warehouses: u32,
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
    /// Crash-soak journal (any workload): before every commit of a
    /// transaction with changes, an intent line with its after-images; after
    /// it, an acknowledgement (see [`journal`]).
    pub journal: Option<PathBuf>,
    /// Toggle the redo mode (on ↔ off) this often while the run lasts.
    pub switch_every: Option<Duration>,
    /// Seed for the per-thread random generators (random when `None`).
    pub seed: Option<u64>,
    /// Report the measured window's throughput this often
    /// (sysbench `--report-interval`; see [`run_with_reports`]).
    pub report_interval: Option<Duration>,
}

impl RunConfig {
    /// A configuration with sysbench-like defaults: 1 user, 10 s after a 1 s
    /// warm-up, 4 tables of 10 000 rows.
    pub fn new(workload: WorkloadKind) -> Self {
        RunConfig {
            workload,
            mix: None,
            access: KeyDist::Uniform,
            warehouses: 1,
            users: 1,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(1),
            tables: 4,
            table_size: 10_000,
            ack_file: None,
            journal: None,
            switch_every: None,
            seed: None,
            report_interval: None,
        }
    }

    /// A configuration for `spec` (a named workload or a custom mix).
    pub fn for_spec(spec: WorkloadSpec) -> Self {
        RunConfig {
            mix: spec.mix,
            ..RunConfig::new(spec.kind)
        }
    }

    /// The workload as written on a command line (`read_write`, `mix:...`).
    pub fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            kind: self.workload,
            mix: self.mix.clone(),
        }
    }

    /// The statements of one transaction, for the sysbench-style workloads.
    pub fn statement_mix(&self) -> Option<Mix> {
        self.workload.mix().or_else(|| self.mix.clone())
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
        match (self.workload, &self.mix) {
            (WorkloadKind::Custom, None) => {
                return bad("the custom workload needs a statement mix (mix:...)".into())
            }
            (WorkloadKind::Custom, Some(_)) | (_, None) => {}
            (kind, Some(_)) => {
                return bad(format!(
                "{kind} has fixed statements; a statement mix goes with the custom workload only"
            ))
            }
        }
        if self.workload == WorkloadKind::Tpcc
            && (self.warehouses == 0 || self.warehouses > tpcc::MAX_WAREHOUSES)
        {
            return bad(format!(
                "warehouses must be 1..={}, not {}",
                tpcc::MAX_WAREHOUSES,
                self.warehouses
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
    #[error("cannot open the journal `{path}`: {source}")]
    Journal {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the acknowledgement file `{path}`: {source}")]
    AckFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Tpcc(#[from] tpcc::TpccError),
    #[error("cannot read process statistics from /proc: {0}")]
    ProcStat(#[source] std::io::Error),
    #[error("cannot spawn thread `{name}`: {source}")]
    Spawn {
        name: String,
        #[source]
        source: std::io::Error,
    },
}
