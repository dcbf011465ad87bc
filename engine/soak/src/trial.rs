//! One trial's configuration, derived from its seed alone.
//!
//! Trials come in pairs sharing a data directory: a *fresh* trial (even
//! seed) prepares a new directory, runs, is killed and verified; the
//! *reusing* trial after it (the same seed with the low bit set) runs again
//! on what the first one's recovery left, is killed and verified again. A
//! reusing trial keeps its predecessor's data shape (tables, redo log file)
//! and draws the rest anew, so [`TrialConfig::from_seed`] of an odd seed
//! first derives its predecessor.

use std::fmt;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// The workloads of the matrix (their `redoctor-engine run --workload` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// One insert of a fresh id per transaction, acknowledged.
    Insert,
    /// One `k = k + 1` per transaction.
    UpdateIndex,
    /// sysbench's oltp_read_write: 10 point selects, 4 ranges, an index
    /// update, a non-index update, a delete and re-insert (3 rows changed).
    ReadWrite,
    /// TPCC-lite new-order (up to 32 rows changed) and payment.
    Tpcc,
}

impl Workload {
    pub const ALL: [Workload; 4] = [
        Workload::Insert,
        Workload::UpdateIndex,
        Workload::ReadWrite,
        Workload::Tpcc,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Insert => "insert",
            Workload::UpdateIndex => "update_index",
            Workload::ReadWrite => "read_write",
            Workload::Tpcc => "tpcc",
        }
    }

    pub fn is_tpcc(self) -> bool {
        self == Workload::Tpcc
    }
}

/// A workload name outside the soak's matrix.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown soak workload `{0}`: choose insert, update_index, read_write or tpcc")]
pub struct UnknownWorkload(pub String);

impl std::str::FromStr for Workload {
    type Err = UnknownWorkload;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| UnknownWorkload(s.to_string()))
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a data directory holds and how its redo log is laid out: fixed for
/// both trials on one directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// sbtest tables (sysbench workloads).
    pub tables: u32,
    /// Rows each sbtest table is prepared with.
    pub table_size: u64,
    /// TPCC-lite warehouses.
    pub warehouses: u32,
    /// `--log-file-mb`, in KiB: small, so checkpoints and wrap-around happen.
    pub log_file_kib: u64,
    /// `--log-buffer-mb`, in KiB (at most an eighth of the file).
    pub log_buffer_kib: u64,
    /// `--checkpoint-fill-pct`.
    pub checkpoint_fill_pct: u32,
    /// Tables on pages, IO-bound (sysbench workloads only), or in memory.
    pub pages: Option<Pages>,
}

/// Tables on pages: 4 KiB pages (21 sbtest rows each), a buffer pool of
/// `pool_pages` (the smallest the engine takes is 16), doublewrite
/// `design`: most tables are larger than the pool, so pages are evicted,
/// flushed by the cleaners and by user threads. `doublewrite_on` false
/// runs with `innodb_doublewrite=OFF`, where a torn page cannot be
/// restored and recovery must name it instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pages {
    pub pool_pages: u64,
    pub design: &'static str,
    pub doublewrite_on: bool,
}

impl Pages {
    pub const PAGE_SIZE: u64 = 4096;

    /// The startup settings, as `(name, value)`.
    pub fn settings(&self) -> Vec<(String, String)> {
        vec![
            (
                "innodb_buffer_pool_size".into(),
                (self.pool_pages * Pages::PAGE_SIZE).to_string(),
            ),
            ("innodb_page_size".into(), Pages::PAGE_SIZE.to_string()),
            ("innodb_lru_scan_depth".into(), "100".into()),
            ("innodb_doublewrite_design".into(), self.design.into()),
            (
                "innodb_doublewrite".into(),
                if self.doublewrite_on { "ON" } else { "OFF" }.into(),
            ),
        ]
    }
}

/// Which trials on pages tear a page write (`page::write::short`, then
/// SIGKILL: a power cut in the middle of a data page's write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
pub enum TearAxis {
    /// Never: every trial ends with the soak's SIGKILL.
    Never,
    /// Half of the trials on pages.
    Mixed,
    /// Every trial on pages (with doublewrite OFF, only the last trial on
    /// its directory: a torn page there cannot be repaired, by design).
    Always,
}

/// Which trials keep their tables on pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
pub enum PagesAxis {
    /// Never (tables in memory).
    Never,
    /// One sysbench trial pair in three.
    Mixed,
    /// Every sysbench trial pair (TPCC-lite stays in memory).
    Always,
}

/// Bounds the command line puts on the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Most user threads (the matrix goes up to 256).
    pub max_users: usize,
    /// Latest kill, in milliseconds after the first acknowledged commit.
    pub max_kill_ms: u64,
    /// Which trials keep their tables on pages.
    pub pages: PagesAxis,
    /// Which trials on pages tear a page write.
    pub tear: TearAxis,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_users: 256,
            max_kill_ms: 2000,
            pages: PagesAxis::Mixed,
            tear: TearAxis::Mixed,
        }
    }
}

/// Everything one trial does, derived from its seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrialConfig {
    pub seed: u64,
    /// The seed of the trial whose data directory this one continues.
    pub reuse_of: Option<u64>,
    pub workload: Workload,
    pub shape: Shape,
    /// `--access`: `uniform` or a Zipfian skew (hot rows, long row chains).
    pub access: String,
    pub users: usize,
    /// `--redo-threads on|off` at the start.
    pub redo_threads: bool,
    /// `--switch-every-ms`: toggle the redo log threads during the run.
    pub switch_every_ms: Option<u64>,
    /// `log_bin=ON` with `sync_binlog=1` (two-phase commit).
    pub log_bin: bool,
    /// `binlog_group_commit_sync_delay` (µs; bigger commit groups).
    pub binlog_sync_delay_us: u64,
    /// SIGKILL this long after the first acknowledged commit.
    pub kill_after_ms: u64,
    /// Tables on pages: tear the data page write after this many whole
    /// ones (`page::write::short=N*off->return(kill)`); the engine kills
    /// itself there, unless the soak's SIGKILL comes first.
    pub tear_after_page_writes: Option<u32>,
    /// After verifying, shut the engine down cleanly (final checkpoint);
    /// otherwise exit without it, so the next open replays the same log again.
    pub clean_shutdown_after_verify: bool,
    /// `--seed` of the workload's random numbers.
    pub run_seed: u64,
}

/// Users: 1..=128 log-uniformly by power-of-two bucket, skewed to small
/// counts, and exactly 256 in about one trial of 37.
fn draw_users(rng: &mut SmallRng, max: usize) -> usize {
    const WEIGHTS: [u32; 9] = [8, 7, 6, 5, 4, 3, 2, 1, 1];
    let total: u32 = WEIGHTS.iter().sum();
    let mut pick = rng.gen_range(0..total);
    let mut bucket = 0;
    for (i, w) in WEIGHTS.iter().enumerate() {
        if pick < *w {
            bucket = i;
            break;
        }
        pick -= w;
    }
    let users = match bucket {
        0 => 1,
        8 => 256,
        b => rng.gen_range((1usize << (b - 1)) + 1..=1usize << b),
    };
    users.clamp(1, max.max(1))
}

fn pick<T: Copy>(rng: &mut SmallRng, items: &[T]) -> T {
    items[rng.gen_range(0..items.len())]
}

fn draw_shape(rng: &mut SmallRng) -> Shape {
    // TPCC-lite's load commits 100 items at once (about 10 KB of redo),
    // and a record may fill a quarter of the log buffer: 64 KiB at least.
    let log_file_kib = pick(rng, &[512, 1024, 2048, 16384]);
    let log_buffer_kib = pick(rng, &[64u64, 128, 256, 512]).min(log_file_kib / 8);
    Shape {
        tables: rng.gen_range(1..=4),
        table_size: pick(rng, &[50, 200, 1000, 4000]),
        warehouses: pick(rng, &[1, 1, 2]),
        log_file_kib,
        log_buffer_kib,
        checkpoint_fill_pct: pick(rng, &[10, 30, 50, 80]),
        pages: None,
    }
}

/// The pages axis of the trial pair of `fresh_seed` (its own stream, so
/// the other axes of a seed stay what they were before it existed).
fn draw_pages(fresh_seed: u64, tpcc: bool, axis: PagesAxis) -> Option<Pages> {
    let mut rng = SmallRng::seed_from_u64(fresh_seed ^ 0x0070_a9e5_0070_a9e5);
    let on = match axis {
        PagesAxis::Never => false,
        PagesAxis::Mixed => rng.gen_ratio(1, 3),
        PagesAxis::Always => true,
    };
    (on && !tpcc).then(|| Pages {
        pool_pages: pick(&mut rng, &[16, 32, 64]),
        design: pick(&mut rng, &["legacy", "files"]),
        doublewrite_on: !rng.gen_ratio(1, 5),
    })
}

/// Whether trial `seed` (on `pages`) tears a page write, and after how
/// many whole ones (its own stream, as [`draw_pages`]). With doublewrite
/// OFF only a reusing trial tears: recovery refuses the directory then.
fn draw_tear(seed: u64, pages: Option<Pages>, axis: TearAxis) -> Option<u32> {
    let p = pages?;
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x7ea2_7ea2_7ea2_7ea2);
    let on = match axis {
        TearAxis::Never => false,
        TearAxis::Mixed => rng.gen_bool(0.5),
        TearAxis::Always => true,
    };
    let last_on_dir = seed & 1 == 1;
    (on && (p.doublewrite_on || last_on_dir)).then(|| {
        // Log-uniform from the first write to the thousandth: early tears
        // hit the first batches after the pool fills, late ones a pool in
        // its steady state.
        let x: f64 = rng.gen_range(0.0..1000f64.ln());
        x.exp() as u32 - 1
    })
}

impl TrialConfig {
    /// The configuration of trial `seed` (odd: a reusing trial).
    pub fn from_seed(seed: u64, limits: &Limits) -> TrialConfig {
        let fresh_seed = seed & !1;
        let mut rng = SmallRng::seed_from_u64(fresh_seed);
        let mut shape = draw_shape(&mut rng);
        let mut workload = pick(&mut rng, &Workload::ALL);
        shape.pages = draw_pages(fresh_seed, workload.is_tpcc(), limits.pages);
        let reuse_of = (seed & 1 == 1).then_some(fresh_seed);
        let shape_pages = shape.pages;
        if reuse_of.is_some() {
            // Same directory, same tables: a sysbench workload may become
            // another sysbench workload, TPCC-lite stays TPCC-lite.
            rng = SmallRng::seed_from_u64(seed.rotate_left(17) ^ 0x5eed_5eed_5eed_5eed);
            if !workload.is_tpcc() {
                workload = pick(
                    &mut rng,
                    &[Workload::Insert, Workload::UpdateIndex, Workload::ReadWrite],
                );
            }
        }
        let access = if rng.gen_ratio(3, 10) {
            "zipf:0.9"
        } else {
            "uniform"
        };
        let users = draw_users(&mut rng, limits.max_users);
        let redo_threads = rng.gen_bool(0.5);
        let switch_every_ms = if rng.gen_ratio(2, 5) {
            None
        } else {
            Some(pick(&mut rng, &[5, 20, 50, 200]))
        };
        let log_bin = rng.gen_bool(0.5);
        let binlog_sync_delay_us = if log_bin && rng.gen_ratio(3, 10) {
            pick(&mut rng, &[100, 1000])
        } else {
            0
        };
        // Half log-uniform from 10 ms to the limit (early kills: in the
        // first commits, the first checkpoint), half uniform over its last
        // three quarters (the small logs have wrapped by then).
        let max = limits.max_kill_ms.max(11);
        let kill_after_ms = if rng.gen_bool(0.5) {
            let (lo, hi) = (10f64.ln(), (max as f64).ln());
            rng.gen_range(lo..hi).exp().round() as u64
        } else {
            rng.gen_range((max / 4).max(10)..=max)
        };
        TrialConfig {
            seed,
            reuse_of,
            workload,
            shape,
            access: access.to_string(),
            users,
            redo_threads,
            switch_every_ms,
            log_bin,
            binlog_sync_delay_us,
            kill_after_ms,
            tear_after_page_writes: draw_tear(seed, shape_pages, limits.tear),
            clean_shutdown_after_verify: rng.gen_bool(0.5),
            run_seed: rng.gen(),
        }
    }

    /// `--log-file-mb` / `--log-buffer-mb` as the engine reads them.
    pub fn log_file_mb(&self) -> String {
        mib(self.shape.log_file_kib)
    }

    pub fn log_buffer_mb(&self) -> String {
        mib(self.shape.log_buffer_kib)
    }

    /// One line for logs: `tpcc users=12 redo=on switch=20ms binlog ...`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} users={} redo={}",
            self.workload,
            self.users,
            if self.redo_threads { "on" } else { "off" }
        );
        if let Some(ms) = self.switch_every_ms {
            s.push_str(&format!(" switch={ms}ms"));
        }
        s.push_str(if self.log_bin { " binlog" } else { " nobinlog" });
        if self.binlog_sync_delay_us > 0 {
            s.push_str(&format!("(delay {}us)", self.binlog_sync_delay_us));
        }
        if self.workload.is_tpcc() {
            s.push_str(&format!(" wh={}", self.shape.warehouses));
        } else {
            s.push_str(&format!(
                " tables={}x{} {}",
                self.shape.tables, self.shape.table_size, self.access
            ));
        }
        s.push_str(&format!(
            " log={}K/{}K ckpt={}% kill=+{}ms",
            self.shape.log_file_kib,
            self.shape.log_buffer_kib,
            self.shape.checkpoint_fill_pct,
            self.kill_after_ms
        ));
        if let Some(p) = self.shape.pages {
            s.push_str(&format!(
                " pages(pool={} {}{})",
                p.pool_pages,
                p.design,
                if p.doublewrite_on { "" } else { " dblwr=OFF" }
            ));
        }
        if let Some(n) = self.tear_after_page_writes {
            s.push_str(&format!(" tear@{n}"));
        }
        if self.reuse_of.is_some() {
            s.push_str(" reused");
        }
        s
    }
}

fn mib(kib: u64) -> String {
    // Exact: every size is a whole number of KiB, a power of two or a small multiple.
    let mb = kib as f64 / 1024.0;
    format!("{mb}")
}

/// The trial seeds of a soak: pairs `(s, s | 1)` with `s` even, drawn from
/// the master seed.
pub fn trial_seeds(master: u64, trials: usize) -> Vec<u64> {
    let mut rng = SmallRng::seed_from_u64(master);
    let mut out = Vec::with_capacity(trials);
    while out.len() < trials {
        let fresh: u64 = rng.gen::<u64>() & !1;
        out.push(fresh);
        if out.len() < trials {
            out.push(fresh | 1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pair_up_and_configs_are_reproducible() {
        let seeds = trial_seeds(7, 5);
        assert_eq!(seeds.len(), 5);
        assert_eq!(seeds[0] | 1, seeds[1]);
        assert_eq!(seeds[2] | 1, seeds[3]);
        assert_eq!(seeds[4] & 1, 0);
        let limits = Limits::default();
        for &s in &seeds {
            assert_eq!(
                TrialConfig::from_seed(s, &limits),
                TrialConfig::from_seed(s, &limits)
            );
        }
        let (a, b) = (
            TrialConfig::from_seed(seeds[0], &limits),
            TrialConfig::from_seed(seeds[1], &limits),
        );
        assert_eq!(a.reuse_of, None);
        assert_eq!(b.reuse_of, Some(seeds[0]));
        assert_eq!(a.shape, b.shape);
        assert_eq!(a.workload.is_tpcc(), b.workload.is_tpcc());
    }

    #[test]
    fn the_matrix_is_covered() {
        let limits = Limits::default();
        let configs: Vec<TrialConfig> = trial_seeds(1, 2000)
            .into_iter()
            .map(|s| TrialConfig::from_seed(s, &limits))
            .collect();
        for w in Workload::ALL {
            assert!(configs.iter().filter(|c| c.workload == w).count() > 300);
        }
        assert!(configs.iter().any(|c| c.users == 256));
        assert!(configs.iter().filter(|c| c.users <= 8).count() > 1000);
        assert!(configs.iter().all(|c| (1..=256).contains(&c.users)));
        assert!(configs.iter().any(|c| c.log_bin) && configs.iter().any(|c| !c.log_bin));
        assert!(configs.iter().any(|c| c.switch_every_ms.is_some()));
        assert!(configs
            .iter()
            .all(|c| (10..=2000).contains(&c.kill_after_ms)
                && c.shape.log_buffer_kib * 8 <= c.shape.log_file_kib));
        let paged = configs.iter().filter(|c| c.shape.pages.is_some()).count();
        assert!(
            (300..1000).contains(&paged),
            "{paged} of 2000 trials on pages"
        );
        assert!(configs
            .iter()
            .all(|c| c.shape.pages.is_none() || !c.workload.is_tpcc()));
        let torn: Vec<&TrialConfig> = configs
            .iter()
            .filter(|c| c.tear_after_page_writes.is_some())
            .collect();
        assert!(
            (paged / 3..paged * 2 / 3).contains(&torn.len()),
            "{} of {paged} trials on pages tear a page",
            torn.len()
        );
        assert!(torn.iter().all(|c| c.shape.pages.is_some()
            && c.tear_after_page_writes < Some(1000)
            && (c.shape.pages.is_some_and(|p| p.doublewrite_on) || c.seed & 1 == 1)));
        assert!(torn
            .iter()
            .any(|c| c.shape.pages.is_some_and(|p| !p.doublewrite_on)));
        let small = Limits {
            max_users: 16,
            max_kill_ms: 300,
            pages: PagesAxis::Mixed,
            tear: TearAxis::Never,
        };
        let c = TrialConfig::from_seed(configs[0].seed, &small);
        assert!(c.users <= 16 && c.kill_after_ms <= 300);
        assert_eq!(c.tear_after_page_writes, None);
        assert_eq!(
            TrialConfig {
                shape: Shape {
                    log_file_kib: 64,
                    ..c.shape.clone()
                },
                ..c
            }
            .log_file_mb(),
            "0.0625"
        );
    }
}
