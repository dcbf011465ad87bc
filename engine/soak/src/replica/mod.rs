//! The replica soak (`redoctor-soak replica`): `kill -9` a replica while it
//! applies, restart it, let it catch up, and check it against its source.
//!
//! A trial ([`config::ReplicaConfig`], derived from a printed seed) serves
//! a source engine from the soak's own process (`log_bin=ON`,
//! `sync_binlog=1`, under a sysbench-style write load for the whole trial)
//! and runs the replica as a `redoctor-engine serve --source-socket`
//! child with the trial's worker count, arbitration design, commit-order
//! preservation, `log_replica_updates`, `sync_relay_log` and durability,
//! sometimes switching the design or the worker count live. It `SIGKILL`s
//! the replica 1-3 times, each a random delay after the new process applied
//! its first transaction, restarts it (relay-log recovery: the relay log is
//! discarded and the receiver resumes from the applied position recorded in
//! the replica's own tables), stops the source's load, waits until the
//! replica applied the source's whole binlog, shuts it down cleanly and
//! checks ([`check`]):
//!
//! - every user table equal on both (row by row);
//! - with `log_replica_updates`, the replica's own binlog holds every
//!   source transaction exactly once and nothing else (none lost, none
//!   applied twice), in the source's order when one applier or
//!   `replica_preserve_commit_order` promise it. This is the check that
//!   proves "applied once": a transaction's row images applied twice leave
//!   the tables as they were, so 85% of the trials log the replica's
//!   updates.
//!
//! Module map: [`config`] (the matrix), [`client`] (the MySQL-protocol
//! client to the replica), [`run`] (the processes of a trial), [`check`]
//! (the verdict), and here the totals.

pub mod check;
pub mod client;
pub mod config;
pub mod run;

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use run::ReplicaTrialResult;

/// One failed replica trial, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct FailedReplicaTrial {
    pub seed: u64,
    pub config: String,
    pub reasons: Vec<String>,
    pub dir: String,
    pub commands: Vec<String>,
    pub replay: String,
}

/// What a replica soak did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplicaSummary {
    pub master_seed: Option<u64>,
    pub replay: Option<u64>,
    pub trials: usize,
    pub passed: usize,
    pub failed: usize,
    /// SIGKILLs delivered to a replica while it applied.
    pub kills: usize,
    /// Source transactions replicated and checked (tables equal).
    pub source_transactions: usize,
    /// Trials whose replica binlog was checked transaction by transaction.
    pub binlog_checked: usize,
    pub binlog_checked_ordered: usize,
    pub per_workers: BTreeMap<u32, usize>,
    pub per_design: BTreeMap<String, usize>,
    pub per_workload: BTreeMap<String, usize>,
    pub with_live_switches: usize,
    pub wall_secs: f64,
    pub failures: Vec<FailedReplicaTrial>,
}

impl ReplicaSummary {
    pub fn add(&mut self, r: &ReplicaTrialResult, replay: String) {
        let c = &r.config;
        self.trials += 1;
        self.kills += r.kills;
        *self.per_workers.entry(c.workers).or_default() += 1;
        *self.per_design.entry(c.design.name().into()).or_default() += 1;
        *self.per_workload.entry(c.workload.to_string()).or_default() += 1;
        self.with_live_switches += usize::from(c.switch.is_some());
        if r.passed() {
            self.passed += 1;
            self.source_transactions += r.source_transactions;
            if r.replica_binlog_transactions.is_some() {
                self.binlog_checked += 1;
                self.binlog_checked_ordered += usize::from(c.ordered());
            }
            return;
        }
        self.failed += 1;
        let mut reasons: Vec<String> = r.failure.iter().cloned().collect();
        reasons.extend(r.violations.iter().map(ToString::to_string));
        self.failures.push(FailedReplicaTrial {
            seed: c.seed,
            config: c.to_string(),
            reasons,
            dir: r.dir.display().to_string(),
            commands: r.commands.clone(),
            replay,
        });
    }
}

impl fmt::Display for ReplicaSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.master_seed, self.replay) {
            (Some(s), _) => writeln!(f, "replica soak, --seed {s}")?,
            (None, Some(s)) => writeln!(f, "replica soak, replay of trial {s}")?,
            (None, None) => writeln!(f, "replica soak")?,
        }
        writeln!(
            f,
            "trials: {} ({} passed, {} failed) in {:.0} s",
            self.trials, self.passed, self.failed, self.wall_secs
        )?;
        writeln!(
            f,
            "replica kill -9 while applying: {}; source transactions replicated and checked: {}",
            self.kills, self.source_transactions
        )?;
        writeln!(
            f,
            "replica binlog checked transaction by transaction: {} trials ({} in source order)",
            self.binlog_checked, self.binlog_checked_ordered
        )?;
        writeln!(
            f,
            "workers: {:?}; designs: {:?}; workloads: {:?}; live switches: {}",
            self.per_workers, self.per_design, self.per_workload, self.with_live_switches
        )?;
        for t in &self.failures {
            writeln!(f, "FAILED seed {} ({}):", t.seed, t.config)?;
            for r in &t.reasons {
                writeln!(f, "  {r}")?;
            }
            writeln!(f, "  kept {}", t.dir)?;
            writeln!(f, "  replay: {}", t.replay)?;
        }
        Ok(())
    }
}
