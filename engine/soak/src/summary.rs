//! Totals over a soak, for the final report (text or `--json`).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::runner::{RecoveryStats, TearOutcome, TrialResult};

/// One failed trial, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct FailedTrial {
    pub seed: u64,
    pub config: String,
    pub reason: String,
    /// The kept directory (data, journals, logs, state files).
    pub dir: String,
    /// The commands the trial ran, in order.
    pub commands: Vec<String>,
    /// The command that reruns the trial.
    pub replay: String,
}

/// What a soak did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// `--seed` (None for `--replay`).
    pub master_seed: Option<u64>,
    pub replay: Option<u64>,
    pub trials: usize,
    pub passed: usize,
    pub failed: usize,
    /// Not run because the trial before them on the same directory failed.
    pub skipped: usize,
    /// Trials that checked no acknowledged commit (they prove nothing);
    /// a torn trial whose tear came before the first acknowledgement is
    /// counted apart, in `torn_before_first_ack`.
    pub no_evidence: usize,
    pub torn_before_first_ack: usize,
    /// Trials run per workload / with each setting.
    pub per_workload: BTreeMap<String, usize>,
    pub binlog_on: usize,
    pub redo_threads_on_at_start: usize,
    pub with_live_redo_switches: usize,
    pub reused_datadir: usize,
    /// Trials with their tables on pages (IO-bound buffer pool).
    pub on_pages: usize,
    /// Trials on pages with innodb_doublewrite=OFF.
    pub doublewrite_off: usize,
    /// Trials armed to tear a page write whose SIGKILL came first.
    pub tear_not_reached: usize,
    /// Trials that tore a page write with doublewrite ON (recovered and
    /// checked), and the pages recovery restored in them.
    pub torn_restored: usize,
    pub pages_restored: usize,
    /// Trials that tore a page write with doublewrite OFF: recovery
    /// refused the directory, naming the torn page.
    pub torn_refused: usize,
    pub users_max: usize,
    pub trials_with_256_users: usize,
    /// Acknowledged commits the checks required and found.
    pub acknowledged_commits_checked: usize,
    /// Transactions of the journals checked (acknowledged or not).
    pub transactions_checked: usize,
    /// Unacknowledged transactions recovery kept / dropped (whole).
    pub unacked_applied: usize,
    pub unacked_absent: usize,
    /// Transactions whose commit failed and was rolled back (must be absent).
    pub aborted: usize,
    pub undetermined: usize,
    pub ambiguous_rows: usize,
    /// Rows the runs changed, each checked; rows they did not, each compared.
    pub rows_written_checked: usize,
    pub rows_unchanged_checked: usize,
    /// log_bin=ON: transactions decided by the binlog (committed / absent).
    pub binlog_committed: usize,
    pub binlog_absent: usize,
    /// Crash recoveries checked.
    pub recoveries: usize,
    /// Reusing trials whose engine recovered a log already recovered once
    /// without a checkpoint in between.
    pub rerecoveries: usize,
    pub recovery: RecoveryStats,
    pub wall_secs: f64,
    pub failures: Vec<FailedTrial>,
}

impl Summary {
    /// Adds one trial; `replay` is the command that reruns it.
    pub fn add(&mut self, r: &TrialResult, replay: String) {
        let c = &r.config;
        self.trials += 1;
        if r.skipped {
            self.skipped += 1;
            return;
        }
        *self
            .per_workload
            .entry(c.workload.name().to_string())
            .or_default() += 1;
        self.binlog_on += usize::from(c.log_bin);
        self.redo_threads_on_at_start += usize::from(c.redo_threads);
        self.with_live_redo_switches += usize::from(c.switch_every_ms.is_some());
        self.reused_datadir += usize::from(c.reuse_of.is_some());
        self.on_pages += usize::from(c.shape.pages.is_some());
        self.doublewrite_off += usize::from(c.shape.pages.is_some_and(|p| !p.doublewrite_on));
        match r.tear {
            TearOutcome::NotArmed => {}
            TearOutcome::NotReached => self.tear_not_reached += 1,
            TearOutcome::Restored { pages } => {
                self.torn_restored += 1;
                self.pages_restored += pages;
            }
            TearOutcome::Refused => self.torn_refused += 1,
        }
        self.users_max = self.users_max.max(c.users);
        self.trials_with_256_users += usize::from(c.users == 256);
        if let Some(rep) = &r.report {
            self.recoveries += 1;
            self.recovery.add(&r.recovery);
            let torn = matches!(r.tear, TearOutcome::Restored { .. });
            self.no_evidence += usize::from(rep.no_evidence() && !torn);
            self.torn_before_first_ack += usize::from(rep.no_evidence() && torn);
            self.acknowledged_commits_checked += rep.acknowledged;
            self.transactions_checked += rep.transactions;
            self.unacked_applied += rep.unacked_applied;
            self.unacked_absent += rep.unacked_absent;
            self.aborted += rep.aborted;
            self.undetermined += rep.undetermined;
            self.ambiguous_rows += rep.ambiguous_rows;
            self.rows_written_checked += rep.rows_written;
            self.rows_unchanged_checked += rep.rows_unchanged;
            self.binlog_committed += rep.binlog_committed;
            self.binlog_absent += rep.binlog_absent;
        }
        match &r.failure {
            None => {
                self.passed += 1;
            }
            Some(f) => {
                self.failed += 1;
                self.failures.push(FailedTrial {
                    seed: c.seed,
                    config: c.describe(),
                    reason: f.to_string(),
                    dir: r.dir.display().to_string(),
                    commands: r.commands.clone(),
                    replay,
                });
            }
        }
    }

    /// Counts a reusing trial that followed a verification without a clean shutdown.
    pub fn add_rerecovery(&mut self) {
        self.rerecoveries += 1;
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.master_seed, self.replay) {
            (_, Some(s)) => writeln!(f, "replay of trial {s}")?,
            (Some(s), None) => writeln!(f, "soak with --seed {s}")?,
            _ => {}
        }
        writeln!(
            f,
            "trials {}: passed {}, failed {}, skipped {}, no evidence {}",
            self.trials, self.passed, self.failed, self.skipped, self.no_evidence
        )?;
        let per: Vec<String> = self
            .per_workload
            .iter()
            .map(|(w, n)| format!("{w} {n}"))
            .collect();
        writeln!(f, "  workloads            {}", per.join(", "))?;
        writeln!(
            f,
            "  binlog on {}, redo threads on at start {}, live redo switches {}, reused datadir {}, tables on pages {}, users up to {} ({} trials at 256)",
            self.binlog_on,
            self.redo_threads_on_at_start,
            self.with_live_redo_switches,
            self.reused_datadir,
            self.on_pages,
            self.users_max,
            self.trials_with_256_users
        )?;
        writeln!(
            f,
            "  acknowledged commits checked {}; transactions checked {} (unacknowledged kept {}, dropped {}; rolled back {})",
            self.acknowledged_commits_checked,
            self.transactions_checked,
            self.unacked_applied,
            self.unacked_absent,
            self.aborted
        )?;
        writeln!(
            f,
            "  rows checked: {} written, {} unchanged; binlog decided {} committed, {} absent",
            self.rows_written_checked,
            self.rows_unchanged_checked,
            self.binlog_committed,
            self.binlog_absent
        )?;
        writeln!(
            f,
            "  recoveries {} (+{} re-recoveries without a checkpoint; {} of a wrapped log); prepared {} (committed without mark {}, rolled back {}); torn redo bytes {}",
            self.recoveries,
            self.rerecoveries,
            self.recovery.log_wrapped,
            self.recovery.xa_prepared,
            self.recovery.xa_committed_without_mark,
            self.recovery.xa_rolled_back,
            self.recovery.redo_truncated_bytes
        )?;
        writeln!(
            f,
            "  torn page writes: {} trials restored ({} pages from the doublewrite buffer; {} torn before the first acknowledgement), {} refused with doublewrite OFF (of {} trials with it off); {} armed tears not reached",
            self.torn_restored,
            self.pages_restored,
            self.torn_before_first_ack,
            self.torn_refused,
            self.doublewrite_off,
            self.tear_not_reached
        )?;
        writeln!(f, "  wall time {:.1} s", self.wall_secs)?;
        for fail in &self.failures {
            writeln!(f, "FAILED seed {}: {}", fail.seed, fail.reason)?;
            writeln!(f, "  config: {}", fail.config)?;
            writeln!(f, "  kept:   {}", fail.dir)?;
            for c in &fail.commands {
                writeln!(f, "  ran:    {c}")?;
            }
            writeln!(f, "  replay: {}", fail.replay)?;
        }
        Ok(())
    }
}
