//! One replica trial's configuration, derived from its seed alone.

use std::fmt;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redoctor_workload::WorkloadKind;
use serde::Serialize;

/// The relay-log arbitration design (`replica_relay_log_arbitration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    Lock,
    Position,
}

impl Design {
    pub fn name(self) -> &'static str {
        match self {
            Design::Lock => "lock",
            Design::Position => "position",
        }
    }

    pub fn other(self) -> Design {
        match self {
            Design::Lock => Design::Position,
            Design::Position => Design::Lock,
        }
    }
}

/// What the soak changes live on the running replica (`SET GLOBAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LiveSwitch {
    /// `replica_relay_log_arbitration`, toggled.
    Arbitration,
    /// `replica_parallel_workers`, cycled through 0, 1, 2, 4.
    Workers,
}

/// The configuration of one replica trial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReplicaConfig {
    pub seed: u64,
    /// The source's load (sysbench-style writes on `sbtest` tables).
    #[serde(serialize_with = "kind_name")]
    pub workload: WorkloadKind,
    pub tables: u32,
    pub table_size: u64,
    /// The source's user threads.
    pub users: usize,
    /// The source's `max_binlog_size` (small: the replica crosses rotations).
    pub source_binlog_kib: u64,
    /// How long the source writes before the replica first starts (a backlog).
    pub backlog_ms: u64,
    /// `replica_parallel_workers` at start (0 = the applier applies itself).
    pub workers: u32,
    pub design: Design,
    pub preserve_commit_order: bool,
    /// `log_bin=ON` and `log_replica_updates=ON` on the replica: its own
    /// binlog must hold every source transaction exactly once.
    pub log_replica_updates: bool,
    /// The replica's `sync_binlog` (with `log_replica_updates`).
    pub sync_binlog: u32,
    pub sync_relay_log: u32,
    /// The replica's `innodb_flush_log_at_trx_commit`.
    pub flush_at_commit: u8,
    /// A live switch every `switch_every_ms` while the replica runs.
    pub switch: Option<(LiveSwitch, u64)>,
    /// SIGKILL this long after the replica (re)started applying, once per kill.
    pub kills_after_ms: Vec<u64>,
    /// The seed of the source's workload random numbers.
    pub run_seed: u64,
}

fn kind_name<S: serde::Serializer>(k: &WorkloadKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&k.to_string())
}

fn pick<T: Copy>(rng: &mut SmallRng, items: &[T]) -> T {
    items[rng.gen_range(0..items.len())]
}

/// A kill delay: half log-uniform in 10 ms..max, half uniform in the late half.
fn draw_kill(rng: &mut SmallRng, max_kill_ms: u64) -> u64 {
    let max = max_kill_ms.max(11);
    if rng.gen_bool(0.5) {
        let lo = 10f64.ln();
        (rng.gen_range(lo..(max as f64).ln()).exp() as u64).clamp(10, max)
    } else {
        rng.gen_range(max / 2..=max)
    }
}

impl ReplicaConfig {
    pub fn from_seed(seed: u64, max_kill_ms: u64) -> ReplicaConfig {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x0072_6570_6c69_6361);
        let workload = pick(
            &mut rng,
            &[
                WorkloadKind::UpdateIndex,
                WorkloadKind::UpdateIndex,
                WorkloadKind::ReadWrite,
                WorkloadKind::Insert,
                WorkloadKind::UpdateNonIndex,
            ],
        );
        // Row images re-applied leave the tables as they were: only the
        // replica's own binlog shows a transaction applied twice.
        let log_replica_updates = rng.gen_bool(0.85);
        let switch = match rng.gen_range(0..4) {
            0 => Some((LiveSwitch::Arbitration, pick(&mut rng, &[20, 100, 400]))),
            1 => Some((LiveSwitch::Workers, pick(&mut rng, &[50, 200, 500]))),
            _ => None,
        };
        let kills = rng.gen_range(1..=3);
        ReplicaConfig {
            seed,
            workload,
            tables: rng.gen_range(1..=4),
            table_size: pick(&mut rng, &[200, 1000, 4000]),
            users: pick(&mut rng, &[1, 2, 4, 8, 16]),
            source_binlog_kib: pick(&mut rng, &[64, 256, 4096]),
            backlog_ms: pick(&mut rng, &[0, 200, 1000]),
            workers: pick(&mut rng, &[0, 1, 2, 4]),
            design: pick(&mut rng, &[Design::Lock, Design::Position]),
            preserve_commit_order: rng.gen_bool(0.6),
            log_replica_updates,
            sync_binlog: if log_replica_updates {
                pick(&mut rng, &[0, 1])
            } else {
                0
            },
            sync_relay_log: pick(&mut rng, &[1, 10, 10_000]),
            flush_at_commit: pick(&mut rng, &[1, 2]),
            switch,
            kills_after_ms: (0..kills)
                .map(|_| draw_kill(&mut rng, max_kill_ms))
                .collect(),
            run_seed: rng.gen(),
        }
    }

    /// Whether the replica's binlog must hold the source's transactions in
    /// the source's order: one applier, or workers that preserve commit
    /// order, for the whole trial.
    pub fn ordered(&self) -> bool {
        self.preserve_commit_order
            || (self.workers == 0 && self.switch.map(|(s, _)| s) != Some(LiveSwitch::Workers))
    }

    /// The replica's startup settings (`serve --set name=value`).
    pub fn replica_settings(&self) -> Vec<(String, String)> {
        let on = |b: bool| if b { "ON" } else { "OFF" }.to_string();
        let mut s = vec![
            ("replica_parallel_workers".into(), self.workers.to_string()),
            (
                "replica_relay_log_arbitration".into(),
                self.design.name().into(),
            ),
            (
                "replica_preserve_commit_order".into(),
                on(self.preserve_commit_order),
            ),
            ("sync_relay_log".into(), self.sync_relay_log.to_string()),
        ];
        if self.log_replica_updates {
            s.push(("log_bin".into(), "ON".into()));
            s.push(("log_replica_updates".into(), "ON".into()));
            s.push(("sync_binlog".into(), self.sync_binlog.to_string()));
        }
        s
    }
}

impl fmt::Display for ReplicaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}u {}x{} rows, replica workers {} {}{}{}, sync_relay_log {}, flush {}",
            self.workload,
            self.users,
            self.tables,
            self.table_size,
            self.workers,
            self.design.name(),
            if self.preserve_commit_order {
                " ordered"
            } else {
                ""
            },
            if self.log_replica_updates {
                format!(", log_replica_updates sync_binlog {}", self.sync_binlog)
            } else {
                String::new()
            },
            self.sync_relay_log,
            self.flush_at_commit,
        )?;
        if let Some((what, ms)) = self.switch {
            let what = match what {
                LiveSwitch::Arbitration => "arbitration",
                LiveSwitch::Workers => "workers",
            };
            write!(f, ", {what} switched every {ms} ms")?;
        }
        write!(f, ", kills at {:?} ms", self.kills_after_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_are_reproducible_and_cover_the_matrix() {
        let cfgs: Vec<_> = (0..400u64)
            .map(|s| ReplicaConfig::from_seed(s, 1500))
            .collect();
        assert_eq!(cfgs[3], ReplicaConfig::from_seed(3, 1500));
        for w in [0, 1, 2, 4] {
            assert!(cfgs.iter().any(|c| c.workers == w));
        }
        assert!(cfgs.iter().any(|c| c.design == Design::Lock));
        assert!(cfgs.iter().any(|c| c.design == Design::Position));
        assert!(cfgs
            .iter()
            .any(|c| c.log_replica_updates && c.sync_binlog == 1));
        assert!(cfgs.iter().any(|c| !c.ordered()));
        assert!(cfgs.iter().any(|c| c.kills_after_ms.len() == 3));
        assert!(cfgs
            .iter()
            .all(|c| c.kills_after_ms.iter().all(|&k| (10..=1500).contains(&k))));
        let c = cfgs.iter().find(|c| c.log_replica_updates).unwrap();
        let s = c.replica_settings();
        assert!(s.contains(&("log_replica_updates".into(), "ON".into())));
    }
}
