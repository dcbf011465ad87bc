//! Grid files: the shipped sweeps are valid, bad grids are refused with the
//! cause, and the run order is a seeded shuffle, round by round.

use std::collections::BTreeSet;
use std::path::Path;

use redoctor_sweep::{CellKey, Grid};

const GRID: &str = r#"
[run]
duration_secs = 0.5
repeats = 2

[axes]
workloads = ["update_index", "tpcc"]
users = [1, 2, 4]
cores = [1]
flush = [1, 2]

[configurations]
RT0 = { innodb_log_writer_threads = "OFF" }
RT1 = { innodb_log_writer_threads = "ON" }
"#;

#[test]
fn shipped_sweeps_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sweeps");
    let default = Grid::load(&dir.join("default.toml")).unwrap();
    assert_eq!(default.cells().len(), 384);
    assert_eq!(default.axes.binlog, [false, true]);
    for c in ["RT0", "RT1", "RT0+cap4", "RT0+throttle16"] {
        assert!(default.configurations.contains_key(c), "{c}");
    }
    // ≤ 15 minutes at the measured ~0.8 s of overhead per cell.
    let per_cell = default.run.warmup_secs + default.run.duration_secs + 0.8;
    assert!(default.cells().len() as f64 * per_cell <= 15.0 * 60.0);
    let full = Grid::load(&dir.join("full.toml")).unwrap();
    assert!(full.cells().len() > default.cells().len());
}

/// Every grid shipped under `engine/sweeps` loads, and each setting its
/// configurations name is one the engine knows, at a value it takes: a
/// typo fails here, not in a cell partway through a sweep.
#[test]
fn every_shipped_grid_names_settings_the_engine_takes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sweeps");
    let mut grids = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        grids += 1;
        let grid = Grid::load(&path).unwrap();
        for (name, settings) in &grid.configurations {
            for (key, value) in settings {
                let s = redoctor_engine::find_setting(key)
                    .unwrap_or_else(|e| panic!("{}: `{name}`: {e}", path.display()));
                if let Err(e) = s.parse(value) {
                    panic!("{}: `{name}`: {e}", path.display());
                }
            }
        }
    }
    assert!(grids >= 5, "{grids} grids in {}", dir.display());
}

#[test]
fn grid_defaults_and_settings() {
    let g = Grid::parse(GRID).unwrap();
    assert_eq!(g.run.warmup_secs, 1.0);
    assert_eq!(g.run.table_size, 10_000);
    assert_eq!(g.axes.binlog, [false]);
    assert_eq!(g.scenarios().len(), 2 * 3 * 2);
    assert_eq!(g.cells().len(), 12 * 2 * 2);
    let key = g
        .cells()
        .into_iter()
        .find(|c| c.config == "RT0" && c.scenario.flush == 2)
        .unwrap();
    let s = g.settings(&key);
    assert_eq!(
        s,
        [
            ("log_bin".to_string(), "OFF".to_string()),
            ("innodb_flush_log_at_trx_commit".into(), "2".into()),
            ("innodb_log_writer_threads".into(), "OFF".into()),
        ]
    );
}

#[test]
fn bad_grids_name_the_cause() {
    let cases = [
        (GRID.replace("users = [1, 2, 4]", "users = []"), "axes.users is empty"),
        (GRID.replace("users = [1, 2, 4]", "users = [1, 1]"), "repeats a value"),
        (GRID.replace("users = [1, 2, 4]", "users = [0, 1]"), "at least 1 user"),
        (GRID.replace("cores = [1]", "cores = [0]"), "at least 1 core"),
        (GRID.replace("flush = [1, 2]", "flush = [3]"), "0, 1 or 2"),
        (GRID.replace("repeats = 2", "repeats = 0"), "repeats"),
        (GRID.replace("duration_secs = 0.5", "duration_secs = 0"), "duration_secs"),
        (GRID.replace("\"tpcc\"", "\"tpcd\""), "unknown workload `tpcd`"),
        (GRID.replace("\"tpcc\"", "\"mix:insert=x\""), "invalid statement mix"),
        (GRID.replace("repeats = 2", "repeats = 2\nrepeat = 3"), "unknown field `repeat`"),
        (
            GRID.replace("RT0 = { ", "RT0 = { log_bin = \"ON\", "),
            "configuration `RT0` sets `log_bin`, which is an axis",
        ),
        (
            GRID.replace("RT0 = { ", "RT0 = { innodb_flush_log_at_trx_commit = \"2\", "),
            "which is an axis",
        ),
        (
            GRID.replace(
                "RT0 = { innodb_log_writer_threads = \"OFF\" }\nRT1 = { innodb_log_writer_threads = \"ON\" }",
                "",
            ),
            "[configurations] is empty",
        ),
        (GRID.replace("[axes]", "[axis]"), "axis"),
    ];
    for (text, want) in cases {
        let e = Grid::parse(&text).unwrap_err().to_string();
        assert!(e.contains(want), "expected `{want}` in: {e}");
    }
}

#[test]
fn schedule_is_a_seeded_shuffle_round_by_round() {
    let g = Grid::parse(GRID).unwrap();
    let order = g.schedule();
    let all: BTreeSet<CellKey> = g.cells().into_iter().collect();
    let ran: BTreeSet<CellKey> = order.iter().cloned().collect();
    assert_eq!(order.len(), all.len());
    assert_eq!(ran, all, "every cell exactly once");
    // All first repeats before any second.
    let half = order.len() / 2;
    assert!(order[..half].iter().all(|c| c.repeat == 0));
    assert!(order[half..].iter().all(|c| c.repeat == 1));
    // Shuffled, deterministic, and seed-dependent.
    let axis_order: Vec<CellKey> = g.cells();
    assert_ne!(order, axis_order);
    assert_eq!(order, g.schedule());
    let other = Grid::parse(&GRID.replace("repeats = 2", "repeats = 2\norder_seed = 99")).unwrap();
    assert_ne!(order, other.schedule());
    // Configurations interleave: both appear within the first few cells.
    let first: BTreeSet<&str> = order[..6].iter().map(|c| c.config.as_str()).collect();
    assert_eq!(first.len(), 2);
}
