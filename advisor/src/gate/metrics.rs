//! What the gate measures per run: the metrics, their direction and the
//! default thresholds, taken from the summary signals of the probes'
//! windows (and the engine's own report for latency).

use std::collections::BTreeMap;

use redoctor_probes_common::Signals;
use serde::{Deserialize, Serialize};

use crate::summary::summarize;

/// Which way is worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// A larger value is a regression (costs per commit).
    LowerIsBetter,
    /// A smaller value is a regression (throughput).
    HigherIsBetter,
}

/// When a change of a metric is a regression: worse by at least `pct`
/// percent and by at least `min_abs` (in the metric's unit) between the
/// medians, and the one-sided Mann–Whitney U test says so at level `alpha`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Threshold {
    pub pct: f64,
    #[serde(default)]
    pub min_abs: f64,
    #[serde(default = "default_alpha")]
    pub alpha: f64,
}

fn default_alpha() -> f64 {
    DEFAULT_ALPHA
}

/// The default level of the Mann–Whitney U test.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// One metric the gate knows.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub name: &'static str,
    pub unit: &'static str,
    pub direction: Direction,
    pub meaning: &'static str,
    /// The default threshold: tight for the per-commit counts of switches
    /// and wakeups, which hardly move run to run; loose for what follows
    /// the group-commit size or the machine's load (fsyncs, redo bytes and
    /// CPU per commit, waits) and for throughput and latency, which vary
    /// 15-20% run to run on a shared 2-CPU machine (`agent/bench/GATE_RESULTS.md`).
    pub threshold: Threshold,
    /// What the metric moves with: the code alone, or the host too.
    pub scope: Scope,
}

/// What a metric moves with, and so what it can be judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Counts of the commit path's events per commit (switches a committer
    /// makes, wakeups between roles): set by the code, the same on another
    /// host of the same shape, so a stored baseline judges them.
    Code,
    /// Time and rates (throughput, latency, CPU and waits per commit) and
    /// what follows the group-commit size (fsyncs and redo bytes per
    /// commit, which follow the disk's fsync latency): they move with the
    /// host and its day, so only a build run side by side (`--against`)
    /// judges them by default.
    Host,
}

const fn m(
    name: &'static str,
    unit: &'static str,
    direction: Direction,
    pct: f64,
    min_abs: f64,
    meaning: &'static str,
    scope: Scope,
) -> MetricDef {
    MetricDef {
        name,
        unit,
        direction,
        meaning,
        threshold: Threshold {
            pct,
            min_abs,
            alpha: DEFAULT_ALPHA,
        },
        scope,
    }
}

use Direction::{HigherIsBetter as Up, LowerIsBetter as Down};

/// Every fixed metric. Wakeups by role pair are added per run as
/// `wakeups_per_commit:FROM->TO` with [`ROLE_PAIR`]'s threshold.
pub const METRICS: &[MetricDef] = &[
    m(
        "commits_per_s",
        "1/s",
        Up,
        25.0,
        0.0,
        "commits per second (probes)",
        Scope::Host,
    ),
    m(
        "p95_commit_latency_us",
        "us",
        Down,
        50.0,
        50.0,
        "95th percentile commit latency as the engine reports it",
        Scope::Host,
    ),
    m(
        "voluntary_switches_per_commit",
        "",
        Down,
        10.0,
        0.2,
        "voluntary context switches of the target's threads / commits",
        Scope::Code,
    ),
    m(
        "involuntary_switches_per_commit",
        "",
        Down,
        50.0,
        0.3,
        "involuntary context switches (preemptions) / commits",
        Scope::Host,
    ),
    m(
        "commit_path_wakeups_per_commit",
        "",
        Down,
        15.0,
        0.3,
        "wakeups between commit-path roles (users, log threads, binlog) / commits",
        Scope::Code,
    ),
    m(
        "redo_fsyncs_per_commit",
        "",
        Down,
        30.0,
        0.05,
        "fsync/fdatasync calls on redo files / commits",
        Scope::Host,
    ),
    m(
        "redo_bytes_per_commit",
        "B",
        Down,
        20.0,
        64.0,
        "bytes written to redo files / commits",
        Scope::Host,
    ),
    m(
        "cpu_us_per_commit",
        "us",
        Down,
        35.0,
        3.0,
        "on-CPU time of the target's threads / commits",
        Scope::Host,
    ),
    m(
        "runq_wait_us_per_commit",
        "us",
        Down,
        100.0,
        10.0,
        "user threads' run-queue wait / commits",
        Scope::Host,
    ),
    m(
        "futex_wait_us_per_commit",
        "us",
        Down,
        50.0,
        5.0,
        "user threads' futex wait (commit wait and lock waits) / commits",
        Scope::Host,
    ),
];

/// The threshold of every `wakeups_per_commit:FROM->TO` metric.
pub const ROLE_PAIR: Threshold = Threshold {
    pct: 10.0,
    min_abs: 0.3,
    alpha: DEFAULT_ALPHA,
};

/// The prefix of the per-role-pair wakeup metrics.
pub const ROLE_PAIR_PREFIX: &str = "wakeups_per_commit:";

/// The definition of `name` (role-pair metrics get a made-up one).
pub fn def_of(name: &str) -> Option<MetricDef> {
    if let Some(d) = METRICS.iter().find(|d| d.name == name) {
        return Some(*d);
    }
    name.starts_with(ROLE_PAIR_PREFIX).then_some(MetricDef {
        name: "wakeups_per_commit:(role pair)",
        unit: "",
        direction: Direction::LowerIsBetter,
        meaning: "wakeups from the first role to the second / commits",
        threshold: ROLE_PAIR,
        scope: Scope::Code,
    })
}

/// One run's metrics from its probe windows, plus the engine's reported
/// p95 commit latency when there is one. None when the probes saw no
/// commit (per-commit metrics need the engine's commit count).
pub fn of_run(windows: &[Signals], p95_latency_us: Option<f64>) -> Option<BTreeMap<String, f64>> {
    let s = summarize(windows);
    let get = |k: &str| s.get(k).copied().unwrap_or(0.0);
    if get("commits_known") < 1.0 || get("commits") < 1.0 {
        return None;
    }
    let commits = get("commits");
    let ctx = get("ctx_switches_per_commit");
    let inv = get("involuntary_share");
    let mut out = BTreeMap::new();
    out.insert("commits_per_s".to_string(), get("commits_per_s"));
    if let Some(p) = p95_latency_us {
        out.insert("p95_commit_latency_us".to_string(), p);
    }
    out.insert("voluntary_switches_per_commit".into(), ctx * (1.0 - inv));
    out.insert("involuntary_switches_per_commit".into(), ctx * inv);
    out.insert(
        "commit_path_wakeups_per_commit".into(),
        get("commit_path_wakeups_per_commit"),
    );
    let cpf = get("commits_per_fsync");
    out.insert(
        "redo_fsyncs_per_commit".into(),
        if cpf > 0.0 { 1.0 / cpf } else { 0.0 },
    );
    out.insert(
        "redo_bytes_per_commit".into(),
        get("redo_write_bytes_per_s") * get("window_s") / commits,
    );
    out.insert("cpu_us_per_commit".into(), get("cpu_us_per_commit"));
    out.insert(
        "runq_wait_us_per_commit".into(),
        get("runq_wait_us_per_commit"),
    );
    out.insert(
        "futex_wait_us_per_commit".into(),
        get("commit_wait_us_per_commit") + get("lock_wait_us_per_commit"),
    );
    let mut pairs: BTreeMap<String, u64> = BTreeMap::new();
    for w in windows {
        for p in &w.wakeups.by_role {
            *pairs
                .entry(format!("{ROLE_PAIR_PREFIX}{}->{}", p.waker, p.wakee))
                .or_default() += p.count;
        }
    }
    for (k, n) in pairs {
        out.insert(k, n as f64 / commits);
    }
    Some(out)
}
