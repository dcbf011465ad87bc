//! What the model reads from an observation: the summary's per-commit
//! costs plus the configuration the server ran in.

use serde::{Deserialize, Serialize};

use super::config::Config;
use super::ModelError;
use crate::facts::Facts;
use crate::summary::Summary;

/// One observed configuration, reduced to what the mechanics need. Times
/// are µs per commit unless named otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    /// The configuration observed.
    pub config: Config,
    /// CPUs the server may use.
    pub cores: f64,
    /// User (connection) threads.
    pub users: f64,
    /// Commits per second over the observation.
    pub commits_per_s: f64,
    /// Commits per second of each window (their spread is the anchor's noise).
    pub window_rates: Vec<f64>,
    /// `log_bin` on: a binlog fsync and a serial FLUSH stage per group.
    pub binlog: bool,
    /// `innodb_flush_log_at_trx_commit` (1: the commit waits for an fsync).
    pub flush: u8,
    /// On-CPU time of every thread of the server.
    pub cpu_us: f64,
    /// Of it, the dedicated log threads'.
    pub log_cpu_us: f64,
    /// Commits per round of the log path (the group size): per redo fsync
    /// when commits wait for it, else per redo write; at least 1.
    pub group: f64,
    /// Mean redo fsync latency.
    pub fsync_us: f64,
    /// Mean binlog fsync latency (0 without binlog fsyncs).
    pub binlog_fsync_us: f64,
    /// User threads' waits outside the commit path (row locks, latches, gates).
    pub lock_wait_us: f64,
    /// Such waits per commit (each a sleep and a wakeup).
    pub lock_waits: f64,
    /// Every futex wait of the server's threads per commit: the commit
    /// path's and the ones above. In RT0 the waits beyond one per follower
    /// and the lock waits are its election convoy (waiters woken to find
    /// their data not yet durable, waiting again).
    #[serde(default)]
    pub futex_waits: f64,
    /// User threads' wait for the redo log (the commit wait). Not read by
    /// the mechanics (the commit latency is what they predict); kept for
    /// the report and the calibration file (`advisor/MODEL.md`, "What the
    /// model reads").
    pub commit_wait_us: f64,
    /// Busy CPUs / cores. Not read by the mechanics (the CPU bound comes
    /// from CPU per commit and the cores); kept for the report and the
    /// calibration file.
    pub cpu_share: f64,
}

/// Inputs observed and kept (report, calibration file) that no equation
/// of the mechanics reads (`advisor/MODEL.md`, "What the model reads").
pub const NOT_READ_BY_THE_MODEL: &[&str] = &["commit_wait_us", "cpu_share"];

impl Inputs {
    /// Whether a commit waits for the redo fsync (`innodb_flush_log_at_trx_commit`
    /// = 1). At 0 or 2 the fsync runs once a second in the background: its
    /// latency is no part of the commit path.
    pub fn waits_for_fsync(&self) -> bool {
        self.flush == 1
    }

    /// From a diagnosis' summary and facts; `window_rates` are the windows'
    /// commits/s. Errors when no commit was counted (nothing to scale).
    pub fn from_summary(
        summary: &Summary,
        facts: &Facts,
        window_rates: Vec<f64>,
    ) -> Result<Inputs, ModelError> {
        let g = |k: &str| summary.get(k).copied().unwrap_or(0.0);
        if g("commits_known") < 1.0 || g("commits") <= 0.0 {
            return Err(ModelError::NoCommits);
        }
        let flush = facts
            .settings
            .get("innodb_flush_log_at_trx_commit")
            .and_then(|v| v.parse::<u8>().ok())
            .unwrap_or(1);
        // Facts carry the redo mode stated by the user or read from the
        // server, else observed (dedicated log threads present or not).
        let config = Config::from_settings(&facts.settings);
        Ok(Inputs {
            config,
            cores: g("cores").max(1.0),
            users: g("user_threads").max(1.0),
            commits_per_s: g("commits_per_s"),
            window_rates,
            binlog: facts.binlog,
            flush,
            cpu_us: g("cpu_us_per_commit"),
            log_cpu_us: g("log_cpu_us_per_commit"),
            group: {
                let per = if flush == 1 {
                    g("commits_per_fsync")
                } else {
                    g("commits_per_redo_write")
                };
                per.max(1.0)
            },
            fsync_us: g("redo_fsync_mean_us"),
            binlog_fsync_us: g("binlog_fsync_mean_us"),
            lock_wait_us: g("lock_wait_us_per_commit"),
            lock_waits: g("lock_waits_per_commit"),
            futex_waits: g("futex_waits_per_commit"),
            commit_wait_us: g("commit_wait_us_per_commit"),
            cpu_share: g("cpu_share"),
        })
    }

    /// Relative standard error of the observed rate (spread of the window
    /// rates' logs / √windows); 0 with fewer than two windows.
    pub fn rate_noise(&self) -> f64 {
        let logs: Vec<f64> = self
            .window_rates
            .iter()
            .filter(|r| **r > 0.0)
            .map(|r| r.ln())
            .collect();
        if logs.len() < 2 {
            return 0.0;
        }
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (var / n).sqrt()
    }
}

/// Commits/s of each window that counted commits.
pub fn window_rates(windows: &[redoctor_probes_common::Signals]) -> Vec<f64> {
    windows
        .iter()
        .filter_map(|w| {
            let secs = w.window_ns as f64 / 1e9;
            w.engine
                .commits
                .filter(|_| secs > 0.0)
                .map(|c| c as f64 / secs)
        })
        .collect()
}

impl Inputs {
    /// From observed windows and the facts about the server.
    pub fn from_windows(
        windows: &[redoctor_probes_common::Signals],
        facts: &Facts,
    ) -> Result<Inputs, ModelError> {
        Inputs::from_summary(
            &crate::summary::summarize(windows),
            facts,
            window_rates(windows),
        )
    }
}
