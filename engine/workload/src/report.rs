//! The result of a run: serialisable (JSON) and printable as text.

use std::collections::BTreeMap;
use std::fmt;

use hdrhistogram::Histogram;
use redoctor_engine::RedoMode;
use serde::Serialize;

use super::kinds::WorkloadKind;

/// One interval of the measured window (`RunConfig::report_interval`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalReport {
    /// Seconds from the window's opening to this interval's end.
    pub at_s: f64,
    /// Wall-clock time of the interval's end, ms since the Unix epoch (to
    /// line intervals up with events outside the engine, such as a probe
    /// attaching).
    pub unix_ms: u64,
    /// Length of the interval in seconds.
    pub secs: f64,
    /// Commits the engine acknowledged in it (engine counter).
    pub commits: u64,
    /// `commits / secs`.
    pub tps: f64,
}

impl fmt::Display for IntervalReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[ {:.1}s ] tps: {:.2} commits: {}",
            self.at_s, self.tps, self.commits
        )
    }
}

/// Commit latency percentiles in microseconds (begin of the first attempt →
/// return of the successful commit, lock retries included).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
}

impl LatencySummary {
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            p50_us: h.value_at_quantile(0.50),
            p95_us: h.value_at_quantile(0.95),
            p99_us: h.value_at_quantile(0.99),
            max_us: h.max(),
            mean_us: h.mean(),
        }
    }
}

/// Context switches over the measured window, summed over the threads alive at
/// both ends of it (see [`super::procstat`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CtxSwitchReport {
    pub voluntary: u64,
    pub involuntary: u64,
    pub voluntary_per_commit: Option<f64>,
    pub involuntary_per_commit: Option<f64>,
    /// Threads read when the window opened and when it closed; if they differ,
    /// threads came or went and the counts of exited ones are missing.
    pub tasks_at_start: usize,
    pub tasks_at_end: usize,
}

/// Everything measured in one run. Counts are over the measured window only.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub workload: WorkloadKind,
    /// The workload as given (`read_write`, `tpcc`, `mix:point_select=10,...`).
    pub workload_spec: String,
    /// Key access distribution (`uniform`, `zipf:0.8`, `pareto:0.2`).
    pub access: String,
    /// TPCC-lite warehouses (absent for other workloads).
    pub warehouses: Option<u32>,
    pub users: usize,
    /// CPUs in the process's affinity mask.
    pub cpus: usize,
    /// Redo mode when the run started: `"on"` (RT1) or `"off"` (RT0) in JSON.
    pub redo_mode: RedoMode,
    /// "RT1" or "RT0", the same thing in the notation of the reference.
    pub redo_threads: &'static str,
    /// innodb_flush_log_at_trx_commit when the run started.
    pub flush_at_commit: u8,
    /// Live redo mode switching interval, if any.
    pub switch_every_ms: Option<u64>,
    /// Redo mode switches made by the switcher over the whole run.
    pub mode_switches: u64,
    pub tables: u32,
    pub table_size: u64,
    pub warmup_secs: f64,
    /// Length of the measured window.
    pub measured_secs: f64,
    /// Transactions committed in the window by the user threads.
    pub commits: u64,
    pub tps: f64,
    pub latency_us: LatencySummary,
    /// Rollbacks and re-executions after a deadlock or lock wait timeout.
    pub retries: u64,
    /// Transactions the workload rolled back on purpose (TPC-C's 1 % of
    /// new-orders), not counted in `commits`.
    pub planned_rollbacks: u64,
    /// Statements (and TPCC-lite transactions) of the transactions that ended
    /// in the window, by name; retried attempts included.
    pub statements: BTreeMap<String, u64>,
    /// Non-retryable errors (any one stops the run).
    pub errors: u64,
    /// The first non-retryable error; the run stopped early because of it.
    pub first_error: Option<String>,
    /// Commits counted by the engine in the window (`counters.commits` delta).
    pub engine_commits: u64,
    /// Redo fdatasync calls in the window.
    pub redo_fsyncs: u64,
    /// `engine_commits / redo_fsyncs`; absent when there was no fsync.
    pub commits_per_fsync: Option<f64>,
    pub ctx_switches: CtxSwitchReport,
    /// Process CPU time (user + system, all threads) in the window.
    pub cpu_secs: f64,
    pub cpu_us_per_commit: Option<f64>,
    /// Lines written to the acknowledgement file over the whole run.
    pub acks_written: u64,
    /// Every engine counter's change over the window.
    pub engine_counters_delta: BTreeMap<String, u64>,
    /// Tables on pages: the buffer pool's and the doublewrite buffer's
    /// counters (SHOW GLOBAL STATUS names) changed over the window; empty
    /// with tables in memory.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub page_status_delta: BTreeMap<String, u64>,
    /// Settings applied before the run (`--set name=value`), as given.
    pub settings: BTreeMap<String, String>,
}

impl RunReport {
    /// True when the run stopped on an error.
    pub fn aborted(&self) -> bool {
        self.first_error.is_some()
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(v) => format!("{v:.decimals$}"),
        None => "-".to_string(),
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let switching = match self.switch_every_ms {
            Some(ms) => format!(", switched every {ms} ms ({} switches)", self.mode_switches),
            None => String::new(),
        };
        writeln!(
            f,
            "workload {} ({}): {} users on {} cpus, {}",
            self.workload_spec,
            self.workload.label(),
            self.users,
            self.cpus,
            match self.warehouses {
                Some(w) => format!("{w} warehouses"),
                None => format!(
                    "{} tables x {} rows, {} keys",
                    self.tables, self.table_size, self.access
                ),
            }
        )?;
        if !self.settings.is_empty() {
            let s: Vec<String> = self
                .settings
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            writeln!(f, "settings {}", s.join(" "))?;
        }
        writeln!(
            f,
            "redo log threads {} ({}){}, flush_at_commit {}",
            self.redo_mode, self.redo_threads, switching, self.flush_at_commit
        )?;
        writeln!(
            f,
            "measured {:.2} s after {:.2} s of warm-up",
            self.measured_secs, self.warmup_secs
        )?;
        writeln!(
            f,
            "  commits        {:>12}   tps {:.1}",
            self.commits, self.tps
        )?;
        let l = &self.latency_us;
        writeln!(
            f,
            "  latency us     p50 {}  p95 {}  p99 {}  max {}  mean {:.1}",
            l.p50_us, l.p95_us, l.p99_us, l.max_us, l.mean_us
        )?;
        writeln!(
            f,
            "  retries        {:>12}   errors {}   planned rollbacks {}",
            self.retries, self.errors, self.planned_rollbacks
        )?;
        writeln!(
            f,
            "  redo fsyncs    {:>12}   commits/fsync {}",
            self.redo_fsyncs,
            opt(self.commits_per_fsync, 2)
        )?;
        let c = &self.ctx_switches;
        let tasks = if c.tasks_at_start == c.tasks_at_end {
            format!("{} threads", c.tasks_at_end)
        } else {
            format!(
                "{} -> {} threads: threads came or went, exited ones are not counted",
                c.tasks_at_start, c.tasks_at_end
            )
        };
        writeln!(
            f,
            "  ctx switches   {:>12}   per commit: voluntary {}  involuntary {}  ({tasks})",
            c.voluntary + c.involuntary,
            opt(c.voluntary_per_commit, 2),
            opt(c.involuntary_per_commit, 2),
        )?;
        writeln!(
            f,
            "  cpu            {:>10.2} s   per commit {} us",
            self.cpu_secs,
            opt(self.cpu_us_per_commit, 1)
        )?;
        if self.acks_written > 0 {
            writeln!(f, "  acks written   {:>12}", self.acks_written)?;
        }
        if let Some(e) = &self.first_error {
            writeln!(f, "  STOPPED EARLY: {e}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RunReport {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        RunReport {
            workload: WorkloadKind::UpdateIndex,
            workload_spec: "update_index".into(),
            access: "uniform".into(),
            warehouses: None,
            users: 16,
            cpus: 2,
            redo_mode: RedoMode::Off,
            redo_threads: "RT0",
            flush_at_commit: 1,
            switch_every_ms: None,
            mode_switches: 0,
            tables: 4,
            table_size: 10_000,
            warmup_secs: 1.0,
            measured_secs: 5.0,
            commits: 1000,
            tps: 200.0,
            latency_us: LatencySummary::from_histogram(&h),
            retries: 2,
            planned_rollbacks: 0,
            statements: BTreeMap::from([("update_index".to_string(), 1000)]),
            errors: 0,
            first_error: None,
            engine_commits: 1001,
            redo_fsyncs: 100,
            commits_per_fsync: Some(10.01),
            ctx_switches: CtxSwitchReport {
                voluntary: 2000,
                involuntary: 10,
                voluntary_per_commit: Some(2.0),
                involuntary_per_commit: Some(0.01),
                tasks_at_start: 20,
                tasks_at_end: 20,
            },
            cpu_secs: 0.5,
            cpu_us_per_commit: Some(500.0),
            acks_written: 0,
            engine_counters_delta: BTreeMap::new(),
            page_status_delta: BTreeMap::new(),
            settings: BTreeMap::new(),
        }
    }

    #[test]
    fn percentiles_come_from_the_histogram() {
        let r = sample();
        assert!(
            (499..=501).contains(&r.latency_us.p50_us),
            "{:?}",
            r.latency_us
        );
        assert!((949..=951).contains(&r.latency_us.p95_us));
        assert_eq!(r.latency_us.max_us, 1000);
        assert_eq!(
            LatencySummary::from_histogram(&Histogram::new(3).unwrap()),
            LatencySummary::default()
        );
    }

    #[test]
    fn json_and_text() {
        let r = sample();
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(v["workload"], "update_index");
        assert_eq!(v["latency_us"]["max_us"], 1000);
        assert_eq!(v["ctx_switches"]["voluntary_per_commit"], 2.0);
        assert!(v["first_error"].is_null());
        let text = r.to_string();
        assert!(text.contains("tps 200.0"), "{text}");
        assert!(text.contains("commits/fsync 10.01"), "{text}");
        assert!(!text.contains("STOPPED"));
    }
}
