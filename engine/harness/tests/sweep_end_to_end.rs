//! Real sweeps through the `redoctor-sweep` binary, each cell a real
//! `redoctor-engine run`: a tiny sweep end to end (sweep, oracle, plot),
//! resume after an interruption, and refusal up front of settings the engine
//! does not know.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use redoctor_sweep::{
    run_sweep, CellKey, CellRunner, CellStatus, Grid, SweepError, SweepOptions, SweepResults,
};

const SWEEP: &str = env!("CARGO_BIN_EXE_redoctor-sweep");

/// The `redoctor-engine` binary beside `redoctor-sweep` (built when missing).
fn engine_bin() -> PathBuf {
    let p = Path::new(SWEEP).with_file_name("redoctor-engine");
    if !p.is_file() {
        let mut b = Command::new(env!("CARGO"));
        b.args([
            "build",
            "-p",
            "redoctor-engine-cli",
            "--bin",
            "redoctor-engine",
        ]);
        if Path::new(SWEEP)
            .components()
            .any(|c| c.as_os_str() == "release")
        {
            b.arg("--release");
        }
        assert!(
            b.status().unwrap().success(),
            "building redoctor-engine failed"
        );
    }
    p
}

fn grid(users: &str, duration: f64, configs: &str) -> String {
    format!(
        r#"
[run]
duration_secs = {duration}
warmup_secs = 0.1
repeats = 1
tables = 2
table_size = 1000

[axes]
workloads = ["update_index"]
users = {users}
cores = [1]

[configurations]
{configs}
"#
    )
}

const RT: &str =
    "RT0 = { innodb_log_writer_threads = \"OFF\" }\nRT1 = { innodb_log_writer_threads = \"ON\" }";

fn runner(work: &Path) -> CellRunner {
    CellRunner::new(engine_bin(), work.to_path_buf())
}

/// A new sweep into `out`, every cell, no progress bar, no command recorded.
fn fresh_options(out: PathBuf) -> SweepOptions {
    SweepOptions {
        out,
        resume: false,
        max_cells: None,
        progress: false,
        command: None,
    }
}

fn cli(args: &[&str]) -> std::process::Output {
    command(args).output().unwrap()
}

/// `redoctor-engine run ...`, or `redoctor-sweep ...` (with `--engine` for
/// `sweep`).
fn command(args: &[&str]) -> Command {
    match args.split_first() {
        Some((&"run", _)) => {
            let mut c = Command::new(engine_bin());
            c.args(args);
            c
        }
        Some((&"sweep", rest)) => {
            let mut c = Command::new(SWEEP);
            c.arg("sweep").arg("--engine").arg(engine_bin()).args(rest);
            c
        }
        _ => {
            let mut c = Command::new(SWEEP);
            c.args(args);
            c
        }
    }
}

#[test]
fn tiny_sweep_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let grid_path = dir.path().join("tiny.toml");
    std::fs::write(&grid_path, grid("[2]", 1.0, RT)).unwrap();
    let out = dir.path().join("results.json");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let (g, o, w) = (
        grid_path.to_str().unwrap(),
        out.to_str().unwrap(),
        work.to_str().unwrap(),
    );
    let run = cli(&["sweep", "--grid", g, "--out", o, "--workdir", w, "--quiet"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let results = SweepResults::load(&out).unwrap();
    assert_eq!(results.cells.len(), 2);
    assert_eq!(results.commands.len(), 1);
    assert!(
        results.commands[0].starts_with("redoctor-sweep sweep --engine")
            && results.commands[0].contains(" --grid "),
        "{:?}",
        results.commands
    );
    for c in &results.cells {
        assert_eq!(c.status, CellStatus::Ok, "{:?}", c.error);
        let m = c.metrics.as_ref().unwrap();
        assert!(m.tps > 0.0 && m.commits > 0, "{m:?}");
        assert_eq!(m.cpus, 1, "the cell's engine is pinned to 1 core");
        let report = c.report.as_ref().unwrap();
        let want = if c.key.config == "RT0" { "RT0" } else { "RT1" };
        assert_eq!(
            report["redo_threads"], want,
            "the configuration was applied"
        );
        assert_eq!(report["settings"]["log_bin"], "OFF");
        assert_eq!(report["users"], 2);
    }
    // The cells' data directories were removed.
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);

    let oracle = cli(&["oracle", o, "--json"]);
    assert!(oracle.status.success());
    let v: serde_json::Value = serde_json::from_slice(&oracle.stdout).unwrap();
    let s = &v["scenarios"][0];
    assert_eq!(v["scenarios"].as_array().unwrap().len(), 1);
    assert!(["RT0", "RT1"].contains(&s["best"].as_str().unwrap()));
    assert_eq!(s["configs"][0]["ratio_to_best"], 1.0);
    assert!(
        s["configs"][1]["beyond_noise"].is_null(),
        "1 repeat: noise unknown"
    );
    let text = cli(&["oracle", o]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("update_index"));

    let plots = dir.path().join("plots");
    let p = cli(&["plot", o, "--out", plots.to_str().unwrap()]);
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    assert!(plots.join("index.html").is_file());
    assert!(plots.join("tps_update_index_c1_binlog0.svg").is_file());
    assert!(plots
        .join("winner_update_index_binlog0_flush1.svg")
        .is_file());

    // Running again onto the same file without --resume is refused.
    let again = cli(&["sweep", "--grid", g, "--out", o, "--workdir", w, "--quiet"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--resume"));
}

#[test]
fn an_interrupted_sweep_resumes_without_running_a_cell_twice() {
    let dir = tempfile::tempdir().unwrap();
    let g = Grid::parse(&grid("[1, 2]", 0.2, RT)).unwrap();
    let out = dir.path().join("r.json");
    let runner = runner(dir.path());
    let opts = |resume, max_cells| SweepOptions {
        out: out.clone(),
        resume,
        max_cells,
        progress: false,
        command: Some(format!("test resume={resume}")),
    };
    // "Interrupted" after 3 of 4 cells.
    let first = run_sweep(&g, &runner, &opts(false, Some(3))).unwrap();
    assert_eq!(first.executed.len(), 3);
    assert!(!first.complete());
    let saved = SweepResults::load(&out).unwrap();
    assert_eq!(saved.cells.len(), 3);
    assert_eq!(
        first.executed,
        g.schedule()[..3].to_vec(),
        "cells run in schedule order"
    );

    // Resuming without --resume is refused; with another grid too.
    let e = run_sweep(&g, &runner, &opts(false, None)).unwrap_err();
    assert!(e.to_string().contains("--resume"), "{e}");
    let other = Grid::parse(&grid("[1, 4]", 0.2, RT)).unwrap();
    let e = run_sweep(&other, &runner, &opts(true, None)).unwrap_err();
    assert!(e.to_string().contains("different grid"), "{e}");

    let second = run_sweep(&g, &runner, &opts(true, None)).unwrap();
    assert_eq!(second.already_done, 3);
    assert_eq!(second.executed.len(), 1);
    assert!(second.complete());
    let a: BTreeSet<&CellKey> = first.executed.iter().collect();
    let b: BTreeSet<&CellKey> = second.executed.iter().collect();
    assert!(a.is_disjoint(&b), "no cell ran twice");
    let all: BTreeSet<CellKey> = g.cells().into_iter().collect();
    let union: BTreeSet<CellKey> = a.union(&b).map(|k| (*k).clone()).collect();
    assert_eq!(union, all);

    let done = SweepResults::load(&out).unwrap();
    assert_eq!(done.cells.len(), 4);
    assert_eq!(done.commands, ["test resume=false", "test resume=true"]);
    for c in &saved.cells {
        let now = done.cells.iter().find(|d| d.key == c.key).unwrap();
        assert_eq!(now, c, "the results of the first run are kept as they were");
    }
    let seqs: BTreeSet<u64> = done.cells.iter().map(|c| c.seq).collect();
    assert_eq!(seqs, (0..4).collect());

    // A third run has nothing left to do.
    let third = run_sweep(&g, &runner, &opts(true, None)).unwrap();
    assert!(third.executed.is_empty() && third.complete());
}

#[test]
fn unknown_settings_fail_before_any_cell_runs() {
    let dir = tempfile::tempdir().unwrap();
    let configs = format!("{RT}\n\"RT1+bogus\" = {{ innodb_log_writer_threads = \"ON\", innodb_no_such_knob = \"8\" }}");
    let g = Grid::parse(&grid("[1]", 0.2, &configs)).unwrap();
    let out = dir.path().join("r.json");
    let opts = fresh_options(out.clone());
    let started = std::time::Instant::now();
    let e = run_sweep(&g, &runner(dir.path()), &opts).unwrap_err();
    assert!(matches!(e, SweepError::Settings(_)), "{e}");
    let text = e.to_string();
    assert!(text.contains("RT1+bogus"), "{text}");
    assert!(
        text.contains("unknown setting `innodb_no_such_knob`"),
        "{text}"
    );
    assert!(
        !text.contains("`RT0`"),
        "valid configurations are not blamed: {text}"
    );
    assert!(!out.exists(), "nothing was written");
    assert!(started.elapsed().as_secs() < 60);

    // The CLI's --dry-run says the same.
    let grid_path = dir.path().join("bogus.toml");
    std::fs::write(&grid_path, grid("[1]", 0.2, &configs)).unwrap();
    let o = cli(&[
        "sweep",
        "--grid",
        grid_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--dry-run",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("innodb_no_such_knob"));
}

#[test]
fn more_cores_than_the_machine_has_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = grid("[1]", 0.2, RT).replace("cores = [1]", "cores = [1, 4096]");
    let g = Grid::parse(&text).unwrap();
    let opts = fresh_options(dir.path().join("r.json"));
    let e = run_sweep(&g, &runner(dir.path()), &opts).unwrap_err();
    assert!(e.to_string().contains("4096 cores"), "{e}");
}

#[test]
fn run_refuses_unknown_settings_and_prints_json() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    let check = |setting: &str| {
        cli(&[
            "run",
            "--check-settings",
            "--datadir",
            d.to_str().unwrap(),
            "--set",
            setting,
        ])
    };
    let o = check("innodb_bogus=1");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown setting `innodb_bogus`") && err.contains("innodb_log_writer_threads"),
        "{err}"
    );
    let o = check("innodb_flush_log_at_trx_commit=7");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("0..=2"));
    let o = check("innodb_log_writer_threads=maybe");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("ON|OFF"));
    let o = cli(&["run", "--datadir", d.to_str().unwrap(), "--set", "novalue"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("NAME=VALUE"));

    let mix = dir.path().join("mix.txt");
    std::fs::write(
        &mix,
        "# a custom shape\npoint_select=4\nupdate_non_index=1\n",
    )
    .unwrap();
    let o = cli(&[
        "run",
        "--json",
        "--mix-file",
        mix.to_str().unwrap(),
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--tables",
        "1",
        "--table-size",
        "500",
        "--access",
        "pareto",
        "--set",
        "innodb_log_writer_threads=OFF",
        "--set",
        "innodb_lock_wait_timeout=5",
        "--datadir",
        dir.path().join("m").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["workload_spec"], "mix:point_select=4,update_non_index=1");
    assert_eq!(v["access"], "pareto:0.2");
    assert_eq!(v["redo_threads"], "RT0");
    assert_eq!(
        v["statements"]["point_select"].as_u64().unwrap(),
        4 * v["commits"].as_u64().unwrap()
    );
    let m = redoctor_sweep::CellMetrics::from_report(&v).unwrap();
    assert_eq!(m.commits, v["commits"].as_u64().unwrap());
}

#[test]
fn a_killed_sweep_process_resumes_from_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let grid_path = dir.path().join("g.toml");
    std::fs::write(&grid_path, grid("[1, 2, 3]", 0.3, RT)).unwrap();
    let out = dir.path().join("r.json");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let args = [
        "sweep",
        "--grid",
        grid_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--workdir",
        work.to_str().unwrap(),
        "--quiet",
    ];
    let mut child = command(&args).spawn().unwrap();
    // Kill it (SIGKILL: no chance to clean up) once the first cell is saved.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let first = loop {
        if let Ok(r) = SweepResults::load(&out) {
            if !r.cells.is_empty() {
                break r;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no cell finished in time"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = SweepResults::load(&out).expect("the file is whole after a kill");
    assert!(killed.cells.len() < 6, "killed before the end");
    assert!(killed.cells.len() >= first.cells.len());

    let resumed = cli(&[&args[..], &["--resume"]].concat());
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let done = SweepResults::load(&out).unwrap();
    assert_eq!(done.cells.len(), 6);
    assert!(done.cells.iter().all(|c| c.status == CellStatus::Ok));
    for c in &killed.cells {
        let now = done.cells.iter().find(|d| d.key == c.key).unwrap();
        assert_eq!(now, c, "a cell finished before the kill was not run again");
    }
    assert_eq!(done.commands.len(), 2);
    assert!(done.commands[1].ends_with("--resume"));
}
