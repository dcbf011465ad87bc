//! Plots of a sweep: SVG charts (plotters) and an `index.html` embedding them.
//!
//! - `tps_<workload>_c<cores>_binlog<0|1>.svg`: median TPS against users, one
//!   line per configuration (per configuration and flush value when the grid
//!   has several), as the reference's graphs;
//! - `winner_<workload>_binlog<0|1>_flush<N>.svg`: which configuration wins
//!   each (users, cores) cell, `*` when it wins beyond noise;
//! - `index.html`: every chart and the oracle's table.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::grid::{on_off, Scenario};
use super::oracle::{oracle, OracleReport, ScenarioVerdict};
use super::results::SweepResults;
use super::SweepError;

/// The files [`plot`] wrote.
#[derive(Debug, Clone, Default)]
pub struct PlotFiles {
    pub charts: Vec<PathBuf>,
    pub heatmaps: Vec<PathBuf>,
    pub index: PathBuf,
}

fn plot_err(e: impl std::fmt::Display) -> SweepError {
    SweepError::Plot(e.to_string())
}

/// `mix:point_select=10` → `mix_point_select_10`.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn color(configs: &[String], name: &str) -> RGBColor {
    let i = configs.iter().position(|c| c == name).unwrap_or(0);
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// The scenarios grouped by `key`, in key order (one chart per group).
fn group<K: Ord>(
    scenarios: &[ScenarioVerdict],
    key: impl Fn(&Scenario) -> K,
) -> BTreeMap<K, Vec<&ScenarioVerdict>> {
    let mut out: BTreeMap<K, Vec<&ScenarioVerdict>> = BTreeMap::new();
    for s in scenarios {
        out.entry(key(&s.scenario)).or_default().push(s);
    }
    out
}

/// The distinct values of one axis, ascending: the chart's categories.
fn axis(scenarios: &[&ScenarioVerdict], value: impl Fn(&Scenario) -> u32) -> Vec<u32> {
    let set: BTreeSet<u32> = scenarios.iter().map(|s| value(&s.scenario)).collect();
    set.into_iter().collect()
}

/// The category index of `v` on `axis`, as a chart coordinate.
fn index_on(axis: &[u32], v: u32) -> f64 {
    axis.iter().position(|&a| a == v).unwrap_or(0) as f64
}

/// Writes the charts and `index.html` for `results` into `dir` (created if needed).
pub fn plot(results: &SweepResults, dir: &Path) -> Result<PlotFiles, SweepError> {
    fs::create_dir_all(dir).map_err(|source| SweepError::Io {
        doing: format!("creating the plot directory {}", dir.display()),
        source,
    })?;
    let report = oracle(results);
    if report.scenarios.is_empty() {
        return Err(SweepError::Results(
            "the results file has no successful cell: nothing to plot".into(),
        ));
    }
    let configs: Vec<String> = results.grid.configurations.keys().cloned().collect();
    let several_flush = report
        .scenarios
        .iter()
        .map(|s| s.scenario.flush)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let mut files = PlotFiles::default();

    // TPS vs users, one chart per workload × cores × binlog.
    let charts = group(&report.scenarios, |sc| {
        (sc.workload.clone(), sc.cores, sc.binlog)
    });
    for ((workload, cores, binlog), scenarios) in &charts {
        let path = dir.join(format!(
            "tps_{}_c{cores}_binlog{}.svg",
            slug(workload),
            u8::from(*binlog)
        ));
        let title = format!("{workload}: {cores} core(s), binlog {}", on_off(*binlog));
        tps_chart(&path, &title, scenarios, &configs, several_flush)?;
        files.charts.push(path);
    }

    // The winner over users × cores, one heatmap per workload × binlog × flush.
    let maps = group(&report.scenarios, |sc| {
        (sc.workload.clone(), sc.binlog, sc.flush)
    });
    for ((workload, binlog, flush), scenarios) in &maps {
        let path = dir.join(format!(
            "winner_{}_binlog{}_flush{flush}.svg",
            slug(workload),
            u8::from(*binlog)
        ));
        let title = format!(
            "winner: {workload}, binlog {}, flush {flush}",
            on_off(*binlog)
        );
        heatmap(&path, &title, scenarios, &configs)?;
        files.heatmaps.push(path);
    }

    files.index = dir.join("index.html");
    let html = index_html(results, &report, &files);
    fs::write(&files.index, html).map_err(|source| SweepError::Io {
        doing: format!("writing {}", files.index.display()),
        source,
    })?;
    Ok(files)
}

fn tps_chart(
    path: &Path,
    title: &str,
    scenarios: &[&ScenarioVerdict],
    configs: &[String],
    several_flush: bool,
) -> Result<(), SweepError> {
    let users = axis(scenarios, |s| s.users);
    // (config, flush) → [(x index, median tps)]
    let mut series: BTreeMap<(String, u8), Vec<(f64, f64)>> = BTreeMap::new();
    let mut ymax: f64 = 1.0;
    for s in scenarios {
        let x = index_on(&users, s.scenario.users);
        for c in &s.configs {
            ymax = ymax.max(c.median_tps);
            series
                .entry((c.config.clone(), s.scenario.flush))
                .or_default()
                .push((x, c.median_tps));
        }
    }
    let root = SVGBackend::new(path, (720, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let n = users.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n - 0.5), 0f64..ymax * 1.15)
        .map_err(plot_err)?;
    let label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < users.len() {
            users[i as usize].to_string()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_labels(users.len().max(2) * 2 + 1)
        .x_label_formatter(&label)
        .y_label_formatter(&|y: &f64| format!("{y:.0}"))
        .x_desc("concurrent users")
        .y_desc("TPS (median of repeats)")
        .draw()
        .map_err(plot_err)?;
    for ((config, flush), mut points) in series {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let col = color(configs, &config);
        let name = if several_flush {
            format!("{config} flush={flush}")
        } else {
            config.clone()
        };
        chart
            .draw_series(LineSeries::new(points.clone(), col.stroke_width(2)))
            .map_err(plot_err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 4, col.filled())))
            .map_err(plot_err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

fn heatmap(
    path: &Path,
    title: &str,
    scenarios: &[&ScenarioVerdict],
    configs: &[String],
) -> Result<(), SweepError> {
    let users = axis(scenarios, |s| s.users);
    let cores = axis(scenarios, |s| s.cores);
    let (nx, ny) = (users.len(), cores.len());
    let width = (200 + 120 * nx as u32).max(440);
    let root = SVGBackend::new(path, (width, 150 + 70 * ny as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..nx as f64, 0f64..ny as f64)
        .map_err(plot_err)?;
    // Axis lines and titles from plotters; the category labels are placed at
    // the cell centres below.
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .x_desc("concurrent users")
        .y_desc("cores")
        .draw()
        .map_err(plot_err)?;
    let label_font = ("sans-serif", 13).into_font().color(&BLACK);
    for (i, u) in users.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let style = label_font.pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(u.to_string(), (px, py + 6), style))
            .map_err(plot_err)?;
    }
    for (j, c) in cores.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(0.0, j as f64 + 0.5));
        let style = label_font.pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(c.to_string(), (px - 8, py), style))
            .map_err(plot_err)?;
    }
    for s in scenarios {
        let x = index_on(&users, s.scenario.users);
        let y = index_on(&cores, s.scenario.cores);
        let col = color(configs, &s.best);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x, y), (x + 1.0, y + 1.0)],
                col.mix(0.55).filled(),
            )))
            .map_err(plot_err)?;
        let mark = if s.best_beyond_noise { "*" } else { "" };
        let mut lines = vec![format!("{}{mark}", s.best)];
        if let Some(c) = s.configs.get(1) {
            lines.push(format!("2nd: {:.2}x", c.ratio_to_best));
        }
        let origin = chart.backend_coord(&(x, y + 1.0));
        for (i, line) in lines.into_iter().enumerate() {
            root.draw(&Text::new(
                line,
                (origin.0 + 6, origin.1 + 6 + 16 * i as i32),
                label_font.clone(),
            ))
            .map_err(plot_err)?;
        }
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A well-formed (XHTML-compatible) page with every chart and the oracle table.
fn index_html(results: &SweepResults, report: &OracleReport, files: &PlotFiles) -> String {
    let mut h = String::new();
    let g = &results.grid;
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>redoctor sweep</title>\n\
         <style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}} \
         td,th{{border:1px solid #bbb;padding:2px 6px;text-align:right}} img{{margin:4px}}</style>\n</head>\n<body>\n\
         <h1>redoctor sweep</h1>\n<p>{} cells, {} repeats of {:.1} s after {:.1} s warm-up; host: {} CPUs, kernel {}; noise test: {}.</p>\n",
        results.cells.len(),
        g.run.repeats,
        g.run.duration_secs,
        g.run.warmup_secs,
        results.host.cpus,
        esc(&results.host.kernel),
        esc(&report.test)
    );
    h.push_str("<h2>Winning configuration</h2>\n<div>\n");
    for p in &files.heatmaps {
        let n = esc(&file_name(p));
        let _ = writeln!(h, "<img src=\"{n}\" alt=\"{n}\"/>");
    }
    h.push_str("</div>\n<h2>TPS against users</h2>\n<div>\n");
    for p in &files.charts {
        let n = esc(&file_name(p));
        let _ = writeln!(h, "<img src=\"{n}\" alt=\"{n}\"/>");
    }
    h.push_str("</div>\n<h2>Oracle</h2>\n<table>\n<tr><th>workload</th><th>users</th><th>cores</th><th>binlog</th><th>flush</th><th>best</th><th>best TPS</th><th>others: ratio to best (p-value; * beyond noise)</th></tr>\n");
    for s in &report.scenarios {
        let sc = &s.scenario;
        let others: Vec<String> = s
            .configs
            .iter()
            .skip(1)
            .map(|c| {
                let p = c.p_value.map(|p| format!("{p:.3}")).unwrap_or("-".into());
                let mark = if c.beyond_noise == Some(true) {
                    " *"
                } else {
                    ""
                };
                format!("{} {:.3} ({p}){mark}", esc(&c.config), c.ratio_to_best)
            })
            .collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td></tr>",
            esc(&sc.workload),
            sc.users,
            sc.cores,
            on_off(sc.binlog),
            sc.flush,
            esc(&s.best),
            s.best_tps,
            others.join("; ")
        );
    }
    h.push_str("</table>\n</body>\n</html>\n");
    h
}
