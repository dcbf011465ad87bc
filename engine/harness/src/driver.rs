//! Runs a sweep: checks the grid up front, then runs the cells in their
//! shuffled order, saving the results after each, skipping cells a previous
//! (interrupted) run of the same grid already finished.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::cell::CellRunner;
use super::grid::{on_off, CellKey, Grid};
use super::results::{now_unix, CellMetrics, CellResult, CellStatus, SweepResults};
use super::SweepError;

/// How to run a sweep.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// The results file.
    pub out: PathBuf,
    /// Continue the results file of an earlier run of the same grid.
    pub resume: bool,
    /// Stop after running this many cells (the rest is left for `resume`).
    pub max_cells: Option<usize>,
    /// Draw a progress bar with an ETA on stderr.
    pub progress: bool,
    /// The command line, recorded in the results file (None: not recorded).
    pub command: Option<String>,
}

/// What a call to [`run_sweep`] did.
#[derive(Debug, Clone, Default)]
pub struct SweepSummary {
    /// Cells run by this call, in order.
    pub executed: Vec<CellKey>,
    /// Cells an earlier run had finished.
    pub already_done: usize,
    /// Cells of this call that failed (recorded with their error; a resume runs them again).
    pub failed: usize,
    /// Cells in the grid.
    pub total: usize,
}

impl SweepSummary {
    /// True when every cell of the grid has a successful result.
    pub fn complete(&self) -> bool {
        self.already_done + self.executed.len() - self.failed == self.total
    }
}

/// Checks, before any cell runs, that the machine has the cores the grid asks
/// for and that the engine accepts every configuration's settings (each
/// distinct combination of configuration, binlog and flush is applied once to
/// a fresh engine with `run --check-settings`). All failures are reported together.
pub fn preflight(grid: &Grid, runner: &CellRunner) -> Result<(), SweepError> {
    grid.validate()?;
    let cpus = redoctor_workload::procstat::allowed_cpus()
        .map(|c| c.len())
        .unwrap_or(0);
    if let Some(&k) = grid.axes.cores.iter().find(|&&k| k as usize > cpus) {
        return Err(SweepError::Grid(format!(
            "axes.cores asks for {k} cores but this process may use {cpus}; remove the larger values"
        )));
    }
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    for key in grid.cells().into_iter().filter(|c| c.repeat == 0) {
        let settings = grid.settings(&key);
        if !seen.insert(settings.clone()) {
            continue;
        }
        if let Err(e) = runner.check_settings(&settings) {
            let shown: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
            failures.push(format!(
                "configuration `{}` (binlog {}, flush {}): {e} [settings: {}]",
                key.config,
                on_off(key.scenario.binlog),
                key.scenario.flush,
                shown.join(" ")
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(SweepError::Settings(failures.join("\n  ")))
    }
}

/// Opens the results file: new, or the earlier run of the same grid with `resume`.
fn open_results(grid: &Grid, opts: &SweepOptions) -> Result<SweepResults, SweepError> {
    if !opts.out.exists() {
        return Ok(SweepResults::new(grid.clone()));
    }
    if !opts.resume {
        return Err(SweepError::Results(format!(
            "{} already exists: pass --resume to continue it, or choose another --out",
            opts.out.display()
        )));
    }
    let results = SweepResults::load(&opts.out)?;
    if results.grid != *grid {
        return Err(SweepError::Results(format!(
            "{} was made from a different grid: resume with the same grid file, or choose another --out",
            opts.out.display()
        )));
    }
    Ok(results)
}

fn progress_bar(todo: usize, show: bool) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(
        Some(todo as u64),
        if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} cells, ETA {eta_precise} {msg}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    pb.set_style(style);
    pb
}

/// Runs (or resumes) the sweep of `grid`, writing `opts.out` after every cell.
pub fn run_sweep(
    grid: &Grid,
    runner: &CellRunner,
    opts: &SweepOptions,
) -> Result<SweepSummary, SweepError> {
    let mut results = open_results(grid, opts)?;
    preflight(grid, runner)?;
    results.commands.extend(opts.command.clone());
    results.save(&opts.out)?;

    let schedule = grid.schedule();
    let mut summary = SweepSummary {
        total: schedule.len(),
        ..Default::default()
    };
    let todo: Vec<(usize, CellKey)> = schedule
        .into_iter()
        .enumerate()
        .filter(|(_, k)| results.ok_cell(k).is_none())
        .collect();
    summary.already_done = summary.total - todo.len();
    let limit = opts.max_cells.unwrap_or(usize::MAX).min(todo.len());
    let pb = progress_bar(limit, opts.progress);
    for (seq, key) in todo.into_iter().take(limit) {
        pb.set_message(key.to_string());
        let started_unix = now_unix();
        let started = Instant::now();
        let outcome = runner.run(grid, &key).and_then(|report| {
            let metrics = CellMetrics::from_report(&report)?;
            Ok((metrics, report))
        });
        let wall_secs = started.elapsed().as_secs_f64();
        let (status, error, metrics, report) = match outcome {
            Ok((metrics, report)) => (CellStatus::Ok, None, Some(metrics), Some(report)),
            Err(e) => {
                summary.failed += 1;
                pb.println(format!("cell {key} failed: {e}"));
                (CellStatus::Failed, Some(e), None, None)
            }
        };
        let result = CellResult {
            key: key.clone(),
            seq: seq as u64,
            started_unix,
            wall_secs,
            status,
            error,
            metrics,
            report,
        };
        results.record(result);
        results.save(&opts.out)?;
        summary.executed.push(key);
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(summary)
}
