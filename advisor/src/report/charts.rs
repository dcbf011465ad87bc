//! SVG charts (plotters) for the HTML report: the wakeup matrix by role as
//! a heatmap, run-queue and redo fsync latency histograms, and commits/s and
//! CPUs busy over the windows.

use std::collections::{BTreeMap, BTreeSet};

use plotters::prelude::*;
use redoctor_probes_common::signals::Histogram;
use redoctor_probes_common::FileKind;

use crate::advice::Diagnosis;
use crate::error::AdvisorError;
use crate::summary::merge_hists;

fn err(e: impl std::fmt::Display) -> AdvisorError {
    AdvisorError::Render {
        format: "html",
        reason: format!("drawing a chart: {e}"),
    }
}

/// Waker role (rows) × wakee role (columns), cell colour by wakeups/s.
pub fn wakeup_heatmap_svg(d: &Diagnosis) -> Result<String, AdvisorError> {
    let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
    for w in &d.windows {
        for e in &w.wakeups.by_role {
            *counts
                .entry((e.waker.to_string(), e.wakee.to_string()))
                .or_default() += e.count;
        }
    }
    let roles: Vec<String> = counts
        .keys()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let secs = d.summary.get("window_s").copied().unwrap_or(1.0).max(1e-9);
    let max = counts.values().copied().max().unwrap_or(0).max(1) as f64;
    let n = roles.len().max(1) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Wakeups by role (waker row -> wakee column), per second",
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d(0f64..n, 0f64..n)
            .map_err(err)?;
        let name = |v: &f64| {
            let i = v.floor() as usize;
            if (v - v.floor() - 0.5).abs() < 1e-6 {
                roles.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(roles.len() * 2 + 1)
            .y_labels(roles.len() * 2 + 1)
            .x_label_formatter(&name)
            .y_label_formatter(&name)
            .x_desc("wakee")
            .y_desc("waker")
            .draw()
            .map_err(err)?;
        for ((a, b), c) in &counts {
            let x = roles.iter().position(|r| r == b).unwrap_or(0) as f64;
            let y = roles.iter().position(|r| r == a).unwrap_or(0) as f64;
            let heat = (*c as f64 / max).sqrt();
            let col = RGBColor(
                255,
                (255.0 * (1.0 - heat)) as u8,
                (255.0 * (1.0 - heat)) as u8,
            );
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x, y), (x + 1.0, y + 1.0)],
                    col.filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{:.0}", *c as f64 / secs),
                    (x + 0.3, y + 0.55),
                    ("sans-serif", 12),
                )))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn histogram_svg(title: &str, h: &Histogram) -> Result<String, AdvisorError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let labels: Vec<String> = h.buckets.iter().map(|b| ns_label(b.hi_ns)).collect();
        let n = h.buckets.len().max(1) as f64;
        let ymax = h.buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} ({} samples)", h.count), ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n, 0f64..ymax * 1.1)
            .map_err(err)?;
        let name = |v: &f64| {
            let i = v.floor() as usize;
            if (v - v.floor() - 0.5).abs() < 1e-6 {
                labels.get(i).map(|l| format!("<{l}")).unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_labels(h.buckets.len() * 2 + 1)
            .x_label_formatter(&name)
            .y_label_formatter(&|y: &f64| format!("{y:.0}"))
            .x_desc("latency bucket (log2)")
            .y_desc("samples")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(h.buckets.iter().enumerate().map(|(i, b)| {
                let x = i as f64;
                Rectangle::new(
                    [(x + 0.1, 0.0), (x + 0.9, b.count as f64)],
                    BLUE.mix(0.7).filled(),
                )
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn ns_label(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{}s", ns / 1_000_000_000)
    } else if ns >= 1_000_000 {
        format!("{}ms", ns / 1_000_000)
    } else if ns >= 1_000 {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// Run-queue latency histogram over all windows.
pub fn runq_latency_svg(d: &Diagnosis) -> Result<String, AdvisorError> {
    let h = merge_hists(d.windows.iter().map(|w| &w.cpu.runq_latency));
    histogram_svg("Run-queue latency", &h)
}

/// Redo fsync latency histogram over all windows.
pub fn fsync_latency_svg(d: &Diagnosis) -> Result<String, AdvisorError> {
    let h = merge_hists(
        d.windows
            .iter()
            .filter_map(|w| w.io.get(&FileKind::Redo).map(|io| &io.fsync_latency)),
    );
    histogram_svg("Redo fsync latency", &h)
}

/// Commits/s (left axis) and CPUs busy (right axis) per window.
pub fn timeline_svg(d: &Diagnosis) -> Result<String, AdvisorError> {
    let pts: Vec<(f64, f64, f64)> = d
        .windows
        .iter()
        .scan(0.0, |t, w| {
            *t += w.window_ns as f64 / 1e9;
            Some((*t, w.engine.commits_per_s.unwrap_or(0.0), w.cpu.cpus_busy))
        })
        .collect();
    let tmax = pts.last().map_or(1.0, |p| p.0).max(1e-3);
    let ymax = pts.iter().map(|p| p.1).fold(1.0, f64::max);
    let cmax = pts
        .iter()
        .map(|p| p.2)
        .fold(f64::from(d.facts.cores), f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Commits/s and CPUs busy per window", ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .right_y_label_area_size(50)
            .build_cartesian_2d(0f64..tmax, 0f64..ymax * 1.15)
            .map_err(err)?
            .set_secondary_coord(0f64..tmax, 0f64..cmax * 1.15);
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("commits/s")
            .y_label_formatter(&|y: &f64| format!("{y:.0}"))
            .draw()
            .map_err(err)?;
        chart
            .configure_secondary_axes()
            .y_desc("CPUs busy")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                BLUE.stroke_width(2),
            ))
            .map_err(err)?
            .label("commits/s")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
        chart
            .draw_secondary_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.2)),
                RED.stroke_width(2),
            ))
            .map_err(err)?
            .label("CPUs busy")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}
