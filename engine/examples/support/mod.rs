//! What the page-store benches share: their arguments, and the rounds that
//! run the two doublewrite designs interleaved and take the median ratio.

use std::path::PathBuf;

use anyhow::{Context, Result};
use redoctor_engine::page_store::doublewrite::Design;

/// The bench's directory: the first argument, else a new temporary one
/// (kept alive by the returned guard).
pub fn bench_dir(args: &[String]) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    Ok(match args.first() {
        Some(d) => (PathBuf::from(d), None),
        None => {
            let t = tempfile::tempdir().context("creating a temporary directory")?;
            (t.path().to_path_buf(), Some(t))
        }
    })
}

/// Argument `i` parsed, or `default` when absent.
pub fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T, what: &str) -> Result<T> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| anyhow::anyhow!("{what}: `{s}` is not a number")),
    }
}

/// Argument `i` as a comma-separated list, or `default`'s.
pub fn list<T: std::str::FromStr>(
    args: &[String],
    i: usize,
    default: &str,
    what: &str,
) -> Result<Vec<T>> {
    args.get(i)
        .map_or(default, |s| s.as_str())
        .split(',')
        .map(|x| {
            x.parse()
                .map_err(|_| anyhow::anyhow!("{what}: `{x}` is not a number"))
        })
        .collect()
}

/// Runs `cell` for both designs in each of `rounds` rounds, legacy first
/// in even rounds and files first in odd ones (the disk's drift lands on
/// both), and returns the median over rounds of files' rate / legacy's.
pub fn paired_rounds(rounds: u32, mut cell: impl FnMut(Design, u32) -> Result<f64>) -> Result<f64> {
    let mut ratios = vec![];
    for r in 0..rounds {
        let order = if r % 2 == 0 {
            [Design::Legacy, Design::Files]
        } else {
            [Design::Files, Design::Legacy]
        };
        let mut got = [0.0; 2];
        for d in order {
            got[usize::from(d == Design::Files)] = cell(d, r)?;
        }
        ratios.push(got[1] / got[0]);
    }
    ratios.sort_by(f64::total_cmp);
    Ok(median(&ratios))
}

/// The median of sorted `xs` (the mean of the middle two for an even count).
fn median(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}
