//! Quick measurement: update_index-like commits/s with log_bin OFF vs ON,
//! both redo modes (RT0 = user threads write the redo, RT1 = dedicated log
//! threads), at several user counts, on a real directory.
//!
//! ```text
//! cargo run --release -p redoctor-engine --example binlog_commit_rate -- [DIR] [SECONDS] [USERS,..]
//! ```
//! DIR defaults to a new temporary directory (removed afterwards), SECONDS
//! to 3 per cell (plus 0.5 s warm-up), USERS to 1,16,64. Each transaction is
//! one `UPDATE sbtestN SET k=k+1 WHERE id=?` on 4 tables × 10000 rows,
//! innodb_flush_log_at_trx_commit=1, sync_binlog=1.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redoctor_engine::{Engine, EngineOptions, RedoMode};

const TABLES: u32 = 4;
const ROWS: u64 = 10_000;

struct Cell {
    tps: f64,
    per_redo_fsync: f64,
    per_binlog_fsync: f64,
    group: f64,
}

fn run_cell(
    dir: &std::path::Path,
    mode: RedoMode,
    log_bin: bool,
    users: usize,
    secs: f64,
) -> Result<Cell> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cleaning {}", dir.display()))?;
    }
    let mut o = EngineOptions::new(dir);
    o.redo.mode = mode;
    o.log_bin = log_bin;
    let engine = Engine::open(o).with_context(|| format!("opening {}", dir.display()))?;
    engine.prepare_sbtest(TABLES, ROWS)?;
    let tables: Vec<u32> = (1..=TABLES)
        .map(|t| engine.table_id(&format!("sbtest{t}")).expect("prepared"))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..users)
        .map(|u| {
            let (engine, stop, commits, tables) = (
                engine.clone(),
                stop.clone(),
                commits.clone(),
                tables.clone(),
            );
            std::thread::Builder::new()
                .name(format!("user/{u}"))
                .spawn(move || -> Result<()> {
                    let mut rng = SmallRng::seed_from_u64(u as u64);
                    while !stop.load(Ordering::Relaxed) {
                        let mut trx = engine.begin();
                        let t = tables[rng.gen_range(0..tables.len())];
                        match trx.update_k(t, rng.gen_range(1..=ROWS as i64), 1) {
                            Ok(_) => {
                                engine.commit(trx)?;
                                commits.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(_) => engine.rollback(trx),
                        }
                    }
                    Ok(())
                })
                .expect("spawning a user thread")
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (c0, s0, t0) = (
        commits.load(Ordering::Relaxed),
        engine.status().counters,
        Instant::now(),
    );
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (c1, s1, el) = (
        commits.load(Ordering::Relaxed),
        engine.status().counters,
        t0.elapsed(),
    );
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("user thread panicked")?;
    }
    engine.shutdown()?;
    let n = (c1 - c0) as f64;
    let ratio = |d: u64| if d == 0 { f64::NAN } else { n / d as f64 };
    Ok(Cell {
        tps: n / el.as_secs_f64(),
        per_redo_fsync: ratio(s1.redo_fsyncs - s0.redo_fsyncs),
        per_binlog_fsync: ratio(s1.binlog_fsyncs - s0.binlog_fsyncs),
        group: ratio(s1.binlog_groups - s0.binlog_groups),
    })
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tmp;
    let base = match args.first().filter(|a| !a.is_empty()) {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir().context("creating a temporary directory")?;
            tmp.path().to_path_buf()
        }
    };
    let secs: f64 = match args.get(1) {
        Some(s) => s
            .parse()
            .with_context(|| format!("SECONDS '{s}' is not a number"))?,
        None => 3.0,
    };
    let users: Vec<usize> = match args.get(2) {
        Some(s) => s
            .split(',')
            .map(|u| {
                u.parse()
                    .with_context(|| format!("USERS '{u}' is not a number"))
            })
            .collect::<Result<_>>()?,
        None => vec![1, 16, 64],
    };
    println!("| users | redo | log_bin | commits/s | commits/redo fsync | commits/binlog fsync | commits/group |");
    println!("|---|---|---|---|---|---|---|");
    for &u in &users {
        for mode in [RedoMode::Off, RedoMode::On] {
            for log_bin in [false, true] {
                let c = run_cell(&base.join("data"), mode, log_bin, u, secs)?;
                let rt = if mode == RedoMode::On { "RT1" } else { "RT0" };
                let show = |v: f64| {
                    if v.is_nan() {
                        "–".to_string()
                    } else {
                        format!("{v:.1}")
                    }
                };
                println!(
                    "| {u} | {rt} | {} | {:.0} | {} | {} | {} |",
                    if log_bin { "ON" } else { "OFF" },
                    c.tps,
                    show(c.per_redo_fsync),
                    show(c.per_binlog_fsync),
                    show(c.group)
                );
            }
        }
    }
    Ok(())
}
