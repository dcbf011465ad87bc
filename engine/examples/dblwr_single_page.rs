//! The seed-002 mechanism on this host: user threads flushing single pages
//! through the doublewrite buffer, legacy design (8 slots behind one
//! mutex) against the 8.0.20 files design, on a real directory.
//!
//! ```text
//! cargo run --release -p redoctor-engine --example dblwr_single_page -- [DIR] [SECONDS] [THREADS,..] [ROUNDS]
//! ```
//! DIR defaults to a new temporary directory, SECONDS to 2 per cell,
//! THREADS to 1,4,8,16,32,64,128, ROUNDS to 3. Each thread rewrites pages
//! of its own (16 KiB, sealed) as single-page flushes: a doublewrite copy
//! written and synced, then the page written and its tablespace synced.
//! The two designs run interleaved per cell and round (legacy, files,
//! files, legacy, ...), so the disk's drift lands on both; one JSON line
//! per cell and round, then a summary line per thread count: the median
//! of files/legacy over the rounds.

#[path = "support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use redoctor_engine::page_store::doublewrite::{
    Design, Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions, PageWrite,
};
use redoctor_engine::page_store::page::{seal, PageId, DEFAULT_PAGE_SIZE};
use redoctor_engine::page_store::tablespace::Tablespace;
use redoctor_engine::page_store::Spaces;
use redoctor_engine::vfs::{OsVfs, Vfs};

const PAGES_PER_THREAD: u32 = 4;

struct Cell {
    flushes_per_s: f64,
    wait_share: f64,
}

fn cell(dir: &std::path::Path, design: Design, threads: u32, secs: f64) -> Result<Cell> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cleaning {}", dir.display()))?;
    }
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs::new(dir).context("creating the directory")?);
    let spaces = Spaces::new();
    spaces.insert(Tablespace::open(vfs.as_ref(), 1, DEFAULT_PAGE_SIZE, true)?);
    let counters = Arc::new(DoublewriteCounters::default());
    let opts = DoublewriteOptions {
        mode: DoublewriteMode::On,
        design,
        ..DoublewriteOptions::default()
    };
    let dw = Arc::new(Doublewrite::open(
        vfs,
        opts,
        DEFAULT_PAGE_SIZE,
        counters.clone(),
    )?);
    let spaces = Arc::new(spaces);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (dw, spaces, stop, done) = (dw.clone(), spaces.clone(), stop.clone(), done.clone());
            std::thread::spawn(move || -> Result<()> {
                let mut page = vec![0u8; DEFAULT_PAGE_SIZE];
                let mut lsn = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    let id = PageId {
                        space: 1,
                        page_no: t * PAGES_PER_THREAD + (lsn as u32 % PAGES_PER_THREAD),
                    };
                    page[100] = lsn as u8;
                    seal(&mut page, id, 1, lsn);
                    dw.write_single(PageWrite { id, bytes: &page }, &spaces)?;
                    done.fetch_add(1, Ordering::Relaxed);
                    lsn += 1;
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("a flushing thread panicked")?;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let s = counters.snapshot();
    Ok(Cell {
        flushes_per_s: done.load(Ordering::Relaxed) as f64 / elapsed,
        wait_share: s.wait_ns as f64 / 1e9 / (elapsed * f64::from(threads)),
    })
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, _tmp) = support::bench_dir(&args)?;
    let secs: f64 = support::arg(&args, 1, 2.0, "SECONDS")?;
    let threads: Vec<u32> = support::list(&args, 2, "1,4,8,16,32,64,128", "THREADS")?;
    let rounds: u32 = support::arg(&args, 3, 3, "ROUNDS")?;
    for &n in &threads {
        let ratio = support::paired_rounds(rounds, |d, r| {
            let c = cell(&dir.join(d.name()), d, n, secs)?;
            println!(
                "{}",
                serde_json::json!({
                    "design": d.name(), "threads": n, "round": r,
                    "flushes_per_s": c.flushes_per_s, "wait_share": c.wait_share,
                })
            );
            Ok(c.flushes_per_s)
        })?;
        println!(
            "{}",
            serde_json::json!({
                "summary": true, "threads": n, "rounds": rounds,
                "files_over_legacy_median": ratio,
            })
        );
    }
    Ok(())
}
