//! `redoctor-sweep`: the measurement harness for the bundled engine.
//!
//! - `sweep`: run a grid of cells, each a fresh `redoctor-engine run`
//!   process on a fresh data directory, into one resumable JSON results file;
//! - `oracle`: the best configuration per scenario of a results file, and
//!   whether it wins beyond noise;
//! - `plot`: SVG charts and an `index.html` from a results file.
//!
//! Reports go to stdout, progress and errors to stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use redoctor_sweep as sweep;

#[derive(Parser, Debug)]
#[command(
    name = "redoctor-sweep",
    version,
    about = "Sweep grids of bundled-engine runs, find the best configuration per scenario, plot them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a grid of cells (each a fresh `redoctor-engine run` process) into one resumable JSON results file.
    Sweep(SweepArgs),
    /// The best configuration of every scenario of a results file, and whether it wins beyond noise.
    Oracle(OracleArgs),
    /// SVG charts and an index.html from a results file.
    Plot(PlotArgs),
    /// Charts and a markdown table of the replica bench's JSON lines
    /// (engine/workload/examples/replica_apply.rs).
    PlotReplica(PlotReplicaArgs),
}

#[derive(Args, Debug)]
struct PlotReplicaArgs {
    /// The bench's output (one JSON object per line).
    results: PathBuf,
    /// Directory for the SVG files (created if needed).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
struct SweepArgs {
    /// The grid (TOML; see engine/sweeps/default.toml).
    #[arg(long)]
    grid: PathBuf,
    /// The results file (JSON), rewritten after every cell.
    #[arg(long)]
    out: PathBuf,
    /// Continue an interrupted sweep of the same grid: cells already in --out are not run again.
    #[arg(long)]
    resume: bool,
    /// The `redoctor-engine` binary that runs each cell (default: the one
    /// beside this program).
    #[arg(long, value_name = "PATH")]
    engine: Option<PathBuf>,
    /// Where the cells' fresh data directories are made (and removed); the system temp dir if absent.
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// Stop after this many cells (resume later with --resume).
    #[arg(long)]
    max_cells: Option<usize>,
    /// Check the grid and the settings, print the cell count, and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct OracleArgs {
    /// A results file written by `sweep`.
    results: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// A results file written by `sweep`.
    results: PathBuf,
    /// Directory for the SVG files and index.html (created if needed).
    #[arg(long)]
    out: PathBuf,
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Sweep(a) => cmd_sweep(a),
        Command::Oracle(a) => cmd_oracle(a),
        Command::Plot(a) => cmd_plot(a),
        Command::PlotReplica(a) => cmd_plot_replica(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--engine`, or `redoctor-engine` beside this program.
fn engine_binary(a: &SweepArgs) -> Result<PathBuf> {
    if let Some(p) = &a.engine {
        return Ok(p.clone());
    }
    let me = std::env::current_exe().context("cannot find this program's own path")?;
    let p = me.with_file_name("redoctor-engine");
    anyhow::ensure!(
        p.is_file(),
        "{} not found: build it (cargo build --release -p redoctor-engine-cli) or pass --engine PATH",
        p.display()
    );
    Ok(p)
}

fn cmd_sweep(a: SweepArgs) -> Result<ExitCode> {
    let grid = sweep::Grid::load(&a.grid)?;
    let bin = engine_binary(&a)?;
    let workdir = a.workdir.clone().unwrap_or_else(std::env::temp_dir);
    let runner = sweep::CellRunner::new(bin, workdir);
    let cells = grid.cells().len();
    let per_cell = grid.run.warmup_secs + grid.run.duration_secs;
    if a.dry_run {
        sweep::preflight(&grid, &runner)?;
        println!(
            "grid ok: {} scenarios x {} configurations x {} repeats = {cells} cells; \
             at least {:.0} s of warm-up + measurement ({:.1} s per cell) plus process start and load",
            grid.scenarios().len(),
            grid.configurations.len(),
            grid.run.repeats,
            cells as f64 * per_cell,
            per_cell
        );
        return Ok(ExitCode::SUCCESS);
    }
    let opts = sweep::SweepOptions {
        out: a.out.clone(),
        resume: a.resume,
        max_cells: a.max_cells,
        progress: !a.quiet,
        command: Some(
            std::env::args()
                .enumerate()
                .map(|(i, arg)| {
                    if i == 0 {
                        "redoctor-sweep".to_string()
                    } else {
                        arg
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
    };
    eprintln!(
        "sweep of {cells} cells ({:.2} s of warm-up + measurement each, plus process start and load); \
         checking the settings first",
        per_cell
    );
    let started = Instant::now();
    let summary = sweep::run_sweep(&grid, &runner, &opts)?;
    eprintln!(
        "ran {} cells in {:.0} s ({} failed, {} done earlier, {} in the grid); results in {}",
        summary.executed.len(),
        started.elapsed().as_secs_f64(),
        summary.failed,
        summary.already_done,
        summary.total,
        a.out.display()
    );
    if !summary.complete() {
        eprintln!("the sweep is not complete: run the same command with --resume to finish it");
    }
    Ok(if summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn cmd_oracle(a: OracleArgs) -> Result<ExitCode> {
    let results = sweep::SweepResults::load(&a.results)?;
    let report = sweep::oracle(&results);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).context("serialising the oracle")?
        );
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_plot_replica(a: PlotReplicaArgs) -> Result<ExitCode> {
    let cells = sweep::replica_plot::load(&a.results)?;
    anyhow::ensure!(
        cells.iter().all(|c| c.tables_equal),
        "{}: a cell's replica differs from its source",
        a.results.display()
    );
    let files = sweep::replica_plot::plot(&cells, &a.out)?;
    print!("{}", sweep::replica_plot::table(&cells));
    println!("wrote {} charts in {}", files.len(), a.out.display());
    Ok(ExitCode::SUCCESS)
}

fn cmd_plot(a: PlotArgs) -> Result<ExitCode> {
    let results = sweep::SweepResults::load(&a.results)?;
    let files = sweep::plot(&results, &a.out)?;
    println!(
        "wrote {} charts, {} heatmaps and {}",
        files.charts.len(),
        files.heatmaps.len(),
        files.index.display()
    );
    Ok(ExitCode::SUCCESS)
}
