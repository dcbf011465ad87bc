//! Results file round trip, oracle and plots on a synthetic result set
//! (no engine runs): the numbers are chosen so the right answers are known.

use std::collections::BTreeMap;

use redoctor_sweep::results::{HostInfo, SCHEMA, VERSION};
use redoctor_sweep::{
    oracle, plot, CellKey, CellMetrics, CellResult, CellStatus, Grid, Scenario, SweepResults,
};

const GRID: &str = r#"
[run]
duration_secs = 1.0
repeats = 3

[axes]
workloads = ["update_index", "mix:point_select=2,insert=1"]
users = [1, 4]
cores = [1, 2]

[configurations]
A = { innodb_log_writer_threads = "OFF" }
B = { innodb_log_writer_threads = "ON" }
C = { innodb_log_writer_threads = "ON", innodb_log_spin_cpu_pct_hwm = "0" }
"#;

fn metrics(tps: f64) -> CellMetrics {
    CellMetrics {
        tps,
        p50_us: 100,
        p95_us: 200,
        p99_us: 300,
        commits: tps as u64,
        errors: 0,
        retries: 1,
        planned_rollbacks: 0,
        commits_per_fsync: Some(1.5),
        ctx_switches_per_commit: None,
        cpu_us_per_commit: Some(80.0),
        cpus: 1,
    }
}

/// TPS of a configuration's repeat in a scenario: A ≈ 1000 (± 5), B ≈ 800
/// (± 5, clearly worse), C ≈ 1000 with ± 60 spread (not distinguishable from
/// A). In the 4-user, 2-core scenarios B wins clearly instead.
fn tps(s: &Scenario, config: &str, repeat: u32) -> f64 {
    let wiggle = [-1.0, 0.0, 1.0][repeat as usize];
    let b_wins = s.users == 4 && s.cores == 2;
    match config {
        "A" => 1000.0 + 5.0 * wiggle,
        "B" if b_wins => 1500.0 + 5.0 * wiggle,
        "B" => 800.0 + 5.0 * wiggle,
        _ => 990.0 + 60.0 * wiggle,
    }
}

fn synthetic() -> SweepResults {
    let grid = Grid::parse(GRID).unwrap();
    let mut r = SweepResults::new(grid.clone());
    for (seq, key) in grid.schedule().into_iter().enumerate() {
        let t = tps(&key.scenario, &key.config, key.repeat);
        let report = serde_json::json!({ "tps": t, "workload_spec": key.scenario.workload });
        r.record(CellResult {
            seq: seq as u64,
            started_unix: 1_700_000_000 + seq as u64,
            wall_secs: 1.25,
            status: CellStatus::Ok,
            error: None,
            metrics: Some(metrics(t)),
            report: Some(report),
            key,
        });
    }
    r
}

#[test]
fn results_round_trip_through_json_and_disk() {
    let r = synthetic();
    assert_eq!(r.cells.len(), 2 * 2 * 2 * 3 * 3);
    let text = serde_json::to_string(&r).unwrap();
    let back = SweepResults::from_json(&text).unwrap();
    assert_eq!(back, r);
    // Documented top-level and cell fields.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], SCHEMA);
    assert_eq!(v["version"], VERSION);
    let cell = &v["cells"][0];
    for field in [
        "workload", "users", "cores", "binlog", "flush", "config", "repeat", "seq", "status",
        "metrics",
    ] {
        assert!(
            cell.get(field).is_some(),
            "cell field {field} missing: {cell}"
        );
    }
    assert_eq!(cell["status"], "ok");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    r.save(&path).unwrap();
    r.save(&path).unwrap();
    assert_eq!(SweepResults::load(&path).unwrap(), r);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["results.json"], "no temporary file is left behind");
}

#[test]
fn foreign_or_newer_files_are_refused() {
    let mut v = serde_json::to_value(synthetic()).unwrap();
    v["version"] = serde_json::json!(VERSION + 1);
    let e = SweepResults::from_json(&v.to_string())
        .unwrap_err()
        .to_string();
    assert!(e.contains("version"), "{e}");
    v["schema"] = serde_json::json!("something.else");
    let e = SweepResults::from_json(&v.to_string())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a sweep results file"), "{e}");
    assert!(SweepResults::from_json("{").is_err());
}

#[test]
fn recording_a_cell_again_replaces_it() {
    let mut r = synthetic();
    let n = r.cells.len();
    let mut again = r.cells[0].clone();
    again.status = CellStatus::Failed;
    again.metrics = None;
    again.error = Some("boom".into());
    let key = again.key.clone();
    r.record(again);
    assert_eq!(r.cells.len(), n);
    assert!(r.ok_cell(&key).is_none());
}

#[test]
fn oracle_finds_the_best_and_the_noise() {
    let report = oracle(&synthetic());
    assert_eq!(report.scenarios.len(), 8);
    for s in &report.scenarios {
        let sc = &s.scenario;
        let by: BTreeMap<&str, _> = s.configs.iter().map(|c| (c.config.as_str(), c)).collect();
        assert_eq!(s.configs.len(), 3);
        assert!(s.missing.is_empty());
        if sc.users == 4 && sc.cores == 2 {
            assert_eq!(s.best, "B", "{sc:?}");
            assert_eq!(s.best_tps, 1500.0);
            assert!(s.best_beyond_noise);
            assert!((by["A"].ratio_to_best - 1000.0 / 1500.0).abs() < 1e-9);
            assert_eq!(by["A"].beyond_noise, Some(true));
        } else {
            assert_eq!(s.best, "A", "{sc:?}");
            assert_eq!(s.best_tps, 1000.0);
            assert_eq!(by["A"].ratio_to_best, 1.0);
            assert_eq!(by["A"].p_value, None);
            assert!((by["B"].ratio_to_best - 0.8).abs() < 1e-9);
            assert_eq!(
                by["B"].beyond_noise,
                Some(true),
                "B is 20 % lower with tiny spread"
            );
            assert!((by["C"].ratio_to_best - 0.99).abs() < 1e-9);
            assert_eq!(by["C"].beyond_noise, Some(false), "C is within A's noise");
            assert!(by["C"].p_value.unwrap() > 0.5);
            assert!(!s.best_beyond_noise, "C is not beaten beyond noise");
        }
        // Descending medians.
        assert!(s
            .configs
            .windows(2)
            .all(|w| w[0].median_tps >= w[1].median_tps));
    }
    let text = report.to_string();
    assert!(text.contains("Welch"), "{text}");
    assert!(text.contains("B 0.800*"), "{text}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["scenarios"][0]["best"].as_str().unwrap().len(), 1);
}

#[test]
fn oracle_skips_failures_reports_missing_and_unknown_noise() {
    let mut r = synthetic();
    // Scenario 1: C failed everywhere; B has a single successful repeat.
    let target = r.cells[0].key.scenario.clone();
    for c in r.cells.iter_mut().filter(|c| c.key.scenario == target) {
        if c.key.config == "C" || (c.key.config == "B" && c.key.repeat > 0) {
            c.status = CellStatus::Failed;
            c.metrics = None;
        }
    }
    let report = oracle(&r);
    let s = report
        .scenarios
        .iter()
        .find(|s| s.scenario == target)
        .unwrap();
    assert_eq!(s.missing, ["C"]);
    let b = s.configs.iter().find(|c| c.config == "B").unwrap();
    assert_eq!(b.samples.len(), 1);
    assert_eq!(b.beyond_noise, None, "one repeat: the noise is unknown");
}

fn xml_options() -> roxmltree::ParsingOptions {
    roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    }
}

fn parse_xml(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    roxmltree::Document::parse_with_options(&text, xml_options())
        .unwrap_or_else(|e| panic!("{} is not well-formed: {e}", path.display()));
    text
}

#[test]
fn plots_are_well_formed_svg_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let files = plot(&synthetic(), dir.path()).unwrap();
    // 2 workloads × 2 cores × 1 binlog charts; 2 workloads × 1 binlog × 1 flush heatmaps.
    assert_eq!(files.charts.len(), 4);
    assert_eq!(files.heatmaps.len(), 2);
    for p in files.charts.iter().chain(&files.heatmaps) {
        let svg = parse_xml(p);
        assert!(svg.starts_with("<svg"), "{}", p.display());
    }
    let chart = std::fs::read_to_string(&files.charts[0]).unwrap();
    for name in [">\nA\n<", ">\nB\n<", ">\nC\n<", "concurrent users"] {
        assert!(chart.contains(name), "chart lacks {name:?}");
    }
    let heat = std::fs::read_to_string(&files.heatmaps[0]).unwrap();
    assert!(
        heat.contains("B*"),
        "B wins beyond noise at 4 users on 2 cores"
    );
    let html = parse_xml(&files.index);
    let doc = roxmltree::Document::parse_with_options(&html, xml_options()).unwrap();
    let imgs: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("img"))
        .map(|n| n.attribute("src").unwrap())
        .collect();
    assert_eq!(imgs.len(), 6);
    for src in imgs {
        assert!(
            dir.path().join(src).is_file(),
            "{src} is embedded but missing"
        );
    }
    assert!(html.contains("mix:point_select=2,insert=1"));
}

#[test]
fn a_single_point_grid_plots_too() {
    let text = GRID
        .replace("users = [1, 4]", "users = [8]")
        .replace("cores = [1, 2]", "cores = [1]");
    let grid = Grid::parse(&text).unwrap();
    let mut r = SweepResults::new(grid.clone());
    r.host = HostInfo {
        cpus: 2,
        kernel: "test <kernel> & co".into(),
    };
    for key in grid.schedule() {
        let t = tps(&key.scenario, &key.config, key.repeat);
        r.record(CellResult {
            seq: 0,
            started_unix: 0,
            wall_secs: 1.0,
            status: CellStatus::Ok,
            error: None,
            metrics: Some(metrics(t)),
            report: None,
            key,
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let files = plot(&r, dir.path()).unwrap();
    for p in files
        .charts
        .iter()
        .chain(&files.heatmaps)
        .chain([&files.index])
    {
        parse_xml(p);
    }
}

#[test]
fn nothing_to_plot_is_an_error() {
    let r = SweepResults::new(Grid::parse(GRID).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let e = plot(&r, dir.path()).unwrap_err().to_string();
    assert!(e.contains("no successful cell"), "{e}");
    let _unused: Option<CellKey> = None;
}
