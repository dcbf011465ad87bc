//! Charts of the replica bench (`engine/workload/examples/replica_apply.rs`):
//! one SVG per workload and durability, the applier's transactions/s
//! (median over the rounds, each round's value as a dot) against the
//! worker count, one line per arbitration design; and a table of the
//! medians and the position/lock ratio.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::Deserialize;

use super::SweepError;

/// One cell of the bench (the fields the charts use).
#[derive(Debug, Clone, Deserialize)]
pub struct ReplicaCell {
    pub workload: String,
    pub durable: bool,
    pub workers: u32,
    pub design: String,
    pub applier_trx_per_s: f64,
    pub lock_waits_per_trx: f64,
    pub receiver_wakeups_per_trx: f64,
    pub tables_equal: bool,
}

/// Reads the bench's JSON lines.
pub fn load(path: &Path) -> Result<Vec<ReplicaCell>, SweepError> {
    let text = std::fs::read_to_string(path).map_err(|source| SweepError::Io {
        doing: format!("reading {}", path.display()),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| SweepError::Results(format!("{} line {}: {e}", path.display(), i + 1)))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

type Key = (String, bool);

/// Values per (workload, durable) → design → workers.
fn groups(cells: &[ReplicaCell]) -> BTreeMap<Key, BTreeMap<String, BTreeMap<u32, Vec<f64>>>> {
    let mut g: BTreeMap<Key, BTreeMap<String, BTreeMap<u32, Vec<f64>>>> = BTreeMap::new();
    for c in cells {
        g.entry((c.workload.clone(), c.durable))
            .or_default()
            .entry(c.design.clone())
            .or_default()
            .entry(c.workers)
            .or_default()
            .push(c.applier_trx_per_s);
    }
    g
}

/// A markdown table: median applier rate per design and the ratio
/// position/lock per (workload, durability, workers).
pub fn table(cells: &[ReplicaCell]) -> String {
    let mut out = String::from(
        "| workload | durable | workers | lock trx/s | position trx/s | position/lock | rounds |\n|---|---|---|---|---|---|---|\n",
    );
    for ((wl, durable), designs) in groups(cells) {
        let (Some(lock), Some(pos)) = (designs.get("lock"), designs.get("position")) else {
            continue;
        };
        for (w, lv) in lock {
            let Some(pv) = pos.get(w) else { continue };
            let (l, p) = (median(lv.clone()), median(pv.clone()));
            let _ = writeln!(
                out,
                "| {wl} | {} | {w} | {l:.0} | {p:.0} | {:.2} | {} |",
                if durable { "yes" } else { "no" },
                p / l,
                lv.len().min(pv.len())
            );
        }
    }
    out
}

fn plot_err(e: impl std::fmt::Display) -> SweepError {
    SweepError::Plot(e.to_string())
}

/// Writes one SVG per (workload, durability) into `out`; returns them.
pub fn plot(cells: &[ReplicaCell], out: &Path) -> Result<Vec<PathBuf>, SweepError> {
    std::fs::create_dir_all(out).map_err(|source| SweepError::Io {
        doing: format!("creating {}", out.display()),
        source,
    })?;
    let mut files = Vec::new();
    for ((wl, durable), designs) in groups(cells) {
        let name = format!(
            "replica_{wl}_{}.svg",
            if durable { "durable" } else { "nondurable" }
        );
        let path = out.join(&name);
        let ymax = designs
            .values()
            .flat_map(|w| w.values().flatten())
            .fold(0.0f64, |a, &b| a.max(b))
            .max(1.0);
        let xmax = designs
            .values()
            .flat_map(|w| w.keys())
            .max()
            .copied()
            .unwrap_or(1) as f64;
        let root = SVGBackend::new(&path, (640, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let title = format!(
            "applier rate, {wl}, {}",
            if durable { "durable" } else { "non-durable" }
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.3f64..xmax + 0.3, 0f64..ymax * 1.15)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("replica_parallel_workers")
            .y_desc("transactions applied / s")
            .y_label_formatter(&|y: &f64| format!("{y:.0}"))
            .draw()
            .map_err(plot_err)?;
        for (i, (design, by_workers)) in designs.iter().enumerate() {
            let col = Palette99::pick(i).to_rgba();
            let col = RGBColor(col.0, col.1, col.2);
            let line: Vec<(f64, f64)> = by_workers
                .iter()
                .map(|(w, v)| (f64::from(*w), median(v.clone())))
                .collect();
            chart
                .draw_series(LineSeries::new(line, col.stroke_width(2)))
                .map_err(plot_err)?
                .label(design.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2))
                });
            chart
                .draw_series(by_workers.iter().flat_map(|(w, v)| {
                    v.iter()
                        .map(move |y| Circle::new((f64::from(*w), *y), 3, col.filled()))
                }))
                .map_err(plot_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
        drop(chart);
        drop(root);
        files.push(path);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(design: &str, workers: u32, rate: f64) -> ReplicaCell {
        ReplicaCell {
            workload: "update_index".into(),
            durable: true,
            workers,
            design: design.into(),
            applier_trx_per_s: rate,
            lock_waits_per_trx: 0.0,
            receiver_wakeups_per_trx: 0.0,
            tables_equal: true,
        }
    }

    #[test]
    fn the_table_has_the_medians_and_their_ratio() {
        let cells = vec![
            cell("lock", 0, 100.0),
            cell("lock", 0, 300.0),
            cell("lock", 0, 200.0),
            cell("position", 0, 250.0),
            cell("position", 0, 240.0),
            cell("position", 0, 260.0),
        ];
        let t = table(&cells);
        assert!(
            t.contains("| update_index | yes | 0 | 200 | 250 | 1.25 | 3 |"),
            "{t}"
        );
        let dir = tempfile::tempdir().unwrap();
        let files = plot(&cells, dir.path()).unwrap();
        assert_eq!(files.len(), 1);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("position"),
            "an SVG with a legend"
        );
    }
}
