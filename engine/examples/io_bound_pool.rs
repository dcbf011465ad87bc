//! Seed 002's experiment scaled to the page store: user threads changing
//! random pages (uniform access) through a buffer pool smaller than the
//! data, legacy doublewrite against the 8.0.20 files design, on a real
//! directory.
//!
//! ```text
//! cargo run --release -p redoctor-engine --example io_bound_pool -- \
//!     [DIR] [SECONDS] [USERS,..] [POOL_FRACTIONS,..] [ROUNDS]
//! ```
//! DIR defaults to a new temporary directory; SECONDS to 3 per cell;
//! USERS to 1,4,16,64,128,256; POOL_FRACTIONS (pool / data) to 1.2,0.5,0.33;
//! ROUNDS to 2. The data is 4096 pages of 16 KiB (64 MiB), written once
//! before the first cell; each operation reads one random page and
//! changes another (a sysbench-like read-write mix on pages). The designs
//! alternate per round (legacy first, then files first), so the disk's
//! drift lands on both. One JSON line per cell: operations/s, misses,
//! single-page flushes and waits per operation, the doublewrite wait
//! share; then per users and pool the median files/legacy ratio.

#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redoctor_engine::page_store::buffer_pool::{BufferPool, PoolOptions};
use redoctor_engine::page_store::doublewrite::{
    Design, Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions,
};
use redoctor_engine::page_store::page::{seal, PageId, DEFAULT_PAGE_SIZE};
use redoctor_engine::page_store::tablespace::Tablespace;
use redoctor_engine::page_store::Spaces;
use redoctor_engine::vfs::{OsVfs, Vfs};

const PAGES: u32 = 4096;
const PS: usize = DEFAULT_PAGE_SIZE;

/// Writes every page once, as the data file every cell starts from.
fn fill(dir: &Path) -> Result<()> {
    let vfs = OsVfs::new(dir)?;
    let ts = Tablespace::open(&vfs, 1, PS, true)?;
    let mut p = vec![0u8; PS];
    for no in 0..PAGES {
        seal(
            &mut p,
            PageId {
                space: 1,
                page_no: no,
            },
            1,
            1,
        );
        ts.write(no, &p)?;
    }
    ts.sync()?;
    Ok(())
}

struct Cell {
    ops_per_s: f64,
    misses_per_op: f64,
    single_per_op: f64,
    dblwr_wait_share: f64,
    cleaner_pages_per_s: f64,
}

fn cell(
    seed: &Path,
    work: &Path,
    design: Design,
    users: u32,
    frames: usize,
    secs: f64,
) -> Result<Cell> {
    if work.exists() {
        std::fs::remove_dir_all(work)?;
    }
    std::fs::create_dir_all(work)?;
    std::fs::copy(seed.join("space-00001.ibd"), work.join("space-00001.ibd"))
        .context("copying the data file")?;
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs::new(work)?);
    let spaces = Spaces::new();
    spaces.insert(Tablespace::open(vfs.as_ref(), 1, PS, false)?);
    let dwc = Arc::new(DoublewriteCounters::default());
    let o = DoublewriteOptions {
        mode: DoublewriteMode::On,
        design,
        ..DoublewriteOptions::default()
    };
    let dw = Doublewrite::open(vfs.clone(), o, PS, dwc.clone())?;
    let opts = PoolOptions {
        frames,
        page_cleaners: 1,
        io_capacity: 2000,
        lru_scan_depth: 256,
        ..PoolOptions::default()
    };
    let bp = BufferPool::new(PS, Arc::new(spaces), Arc::new(dw), opts);
    let cleaners = bp.start_cleaners();
    let (stop, ops, lsn) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(2)),
    );
    let t0 = Instant::now();
    let handles: Vec<_> = (0..users)
        .map(|u| {
            let (bp, stop, ops, lsn) = (bp.clone(), stop.clone(), ops.clone(), lsn.clone());
            std::thread::spawn(move || -> Result<()> {
                let mut rng = SmallRng::seed_from_u64(u64::from(u));
                while !stop.load(Ordering::Relaxed) {
                    let r = PageId {
                        space: 1,
                        page_no: rng.gen_range(0..PAGES),
                    };
                    bp.read(r, |p| p[100])?;
                    let w = PageId {
                        space: 1,
                        page_no: rng.gen_range(0..PAGES),
                    };
                    let l = lsn.fetch_add(1, Ordering::Relaxed);
                    bp.modify(w, l, |b| b[0] = b[0].wrapping_add(1))?;
                    ops.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("a user thread panicked")?;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    bp.stop();
    for c in cleaners {
        c.join().expect("a page cleaner panicked")?;
    }
    let n = ops.load(Ordering::Relaxed).max(1) as f64;
    let c = &bp.counters;
    let d = dwc.snapshot();
    Ok(Cell {
        ops_per_s: n / elapsed,
        misses_per_op: c.reads.load(Ordering::Relaxed) as f64 / n,
        single_per_op: c.single_page_flushes.load(Ordering::Relaxed) as f64 / n,
        dblwr_wait_share: d.wait_ns as f64 / 1e9 / (elapsed * f64::from(users)),
        cleaner_pages_per_s: c.cleaner_pages.load(Ordering::Relaxed) as f64 / elapsed,
    })
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, _tmp) = support::bench_dir(&args)?;
    let secs: f64 = support::arg(&args, 1, 3.0, "SECONDS")?;
    let users: Vec<u32> = support::list(&args, 2, "1,4,16,64,128,256", "USERS")?;
    let fracs: Vec<f64> = support::list(&args, 3, "1.2,0.5,0.33", "POOL_FRACTIONS")?;
    let rounds: u32 = support::arg(&args, 4, 2, "ROUNDS")?;
    let seed = dir.join("seed");
    fill(&seed)?;
    for &frac in &fracs {
        let frames = (f64::from(PAGES) * frac) as usize;
        for &u in &users {
            let ratio = support::paired_rounds(rounds, |d, r| {
                let c = cell(&seed, &dir.join("work"), d, u, frames, secs)?;
                println!(
                    "{}",
                    serde_json::json!({
                        "design": d.name(), "users": u, "pool_fraction": frac, "round": r,
                        "ops_per_s": c.ops_per_s, "misses_per_op": c.misses_per_op,
                        "single_page_flushes_per_op": c.single_per_op,
                        "dblwr_wait_share": c.dblwr_wait_share,
                        "cleaner_pages_per_s": c.cleaner_pages_per_s,
                    })
                );
                Ok(c.ops_per_s)
            })?;
            println!(
                "{}",
                serde_json::json!({
                    "summary": true, "users": u, "pool_fraction": frac, "rounds": rounds,
                    "files_over_legacy_median": ratio,
                })
            );
        }
    }
    Ok(())
}
