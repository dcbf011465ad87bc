//! Re-analyses recorded switchback trials with the current analysis: every
//! record with `log_ratios` (one per block) in the bench files given,
//! optionally cut to its first K blocks (a first look of a longer trial).
//! Prints each trial's stated 95% interval as recorded (when the record
//! has `ci` and is not cut) beside the current one, then the spread of the
//! half-widths either way, and how many the current analysis decides at
//! 5% in one look. For checking a change to the analysis against
//! the trials the benches kept.
//!
//! Usage: `cargo run --release -p redoctor-advisor --example replay_blocks
//! -- [--first K] FILE.jsonl|FILE.json ...` (a `.json` file's `trials`
//! array, a `.jsonl` file's lines).

use std::path::Path;

use redoctor_advisor::experiment::{hac_look, nw_lag};
use serde_json::Value;

fn records(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e == "json") {
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(v["trials"].as_array().cloned().unwrap_or_default());
    }
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(((v.len() as f64 - 1.0) * q).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

fn main() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let first = match args.iter().position(|a| a == "--first") {
        Some(i) => {
            let k = args
                .get(i + 1)
                .and_then(|k| k.parse::<usize>().ok())
                .filter(|&k| k >= 3)
                .ok_or("--first takes a number of blocks, at least 3")?;
            args.drain(i..=i + 1);
            Some(k)
        }
        None => None,
    };
    if args.is_empty() {
        return Err("usage: replay_blocks [--first K] FILE.jsonl|FILE.json ...".into());
    }
    println!("| file | blocks | recorded 95% | current 95% | p |");
    println!("|---|---|---|---|---|");
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let mut decided = 0;
    for file in &args {
        let path = Path::new(file);
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or(file);
        for r in records(path)? {
            let Some(d) = r["log_ratios"].as_array() else {
                continue;
            };
            let mut d: Vec<f64> = d.iter().filter_map(Value::as_f64).collect();
            let cut = first.is_some_and(|k| k < d.len());
            if let Some(k) = first {
                d.truncate(k);
            }
            let Some(l) = hac_look(&d, 0.05, nw_lag(d.len())) else {
                continue;
            };
            let now = (l.ci_high.ln() - l.ci_low.ln()) / 2.0;
            decided += usize::from(l.p_value < 0.05);
            after.push(now);
            let recorded = match (r["ci"][0].as_f64(), r["ci"][1].as_f64()) {
                (Some(lo), Some(hi)) if !cut && lo > 0.0 => {
                    before.push((hi.ln() - lo.ln()) / 2.0);
                    format!("{lo:.3}-{hi:.3}")
                }
                _ => "-".into(),
            };
            println!(
                "| {stem} | {} | {recorded} | {:.3}-{:.3} | {:.4} |",
                d.len(),
                l.ci_low,
                l.ci_high,
                l.p_value
            );
        }
    }
    println!(
        "current analysis: {decided} of {} decided at 5% (p < 0.05, one look)",
        after.len()
    );
    for (name, v) in [("recorded", &mut before), ("current", &mut after)] {
        if !v.is_empty() {
            let n = v.len();
            println!(
                "{name}: {n} intervals, log half-width median {:.3}, 90th percentile {:.3}, largest {:.3}",
                quantile(v, 0.5),
                quantile(v, 0.9),
                quantile(v, 1.0)
            );
        }
    }
    Ok(())
}
