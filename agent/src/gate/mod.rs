//! `redoctor gate run`: a CI performance gate on scheduling and I/O per
//! commit. Runs a scenario N times (interleaved with another build when
//! `--against` names one), compares with a baseline, and exits 0 pass,
//! 1 regression, 2 error. Format, metrics and statistics: `agent/GATE.md`.

use redoctor_args::say;
mod scenario;
mod target;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use redoctor_advisor::gate::{compare, output, Baseline, GateReport, Judge};
use redoctor_files::write_atomic;

use scenario::Scenario;

/// Exit code of a regression.
pub const EXIT_REGRESSION: u8 = 1;
/// Exit code of an error (nothing was judged; no file was overwritten).
pub const EXIT_ERROR: u8 = 2;

#[derive(Args, Debug)]
pub struct GateArgs {
    #[command(subcommand)]
    command: GateCommand,
}

#[derive(Subcommand, Debug)]
enum GateCommand {
    /// Run a scenario and compare it with a baseline file or another build.
    Run(RunArgs),
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The scenario (TOML; see agent/GATE.md).
    #[arg(long)]
    scenario: PathBuf,
    /// The baseline file (JSON) to compare with, or to write with --update-baseline.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Record this build's runs as the baseline (written atomically) instead of comparing.
    #[arg(long, requires = "baseline")]
    update_baseline: bool,
    /// Another build's binary (e.g. the main branch's redoctor-engine): run it and this
    /// build side by side, interleaved, and compare them (no baseline file needed).
    #[arg(long, value_name = "OTHER_BIN", conflicts_with = "update_baseline")]
    against: Option<PathBuf>,
    /// Against a stored baseline, judge the metrics that move with the host too
    /// (throughput, latency, CPU, waits, fsyncs and redo bytes per commit): only when the
    /// baseline was recorded on this host, recently. By default a stored baseline judges
    /// the counts per commit the code alone sets (switches, wakeups by role pair);
    /// --against judges every metric.
    #[arg(long, conflicts_with = "against")]
    judge_host_metrics: bool,
    /// Record the commit the baseline's build came from in the baseline file (with
    /// --update-baseline; tests/run.sh passes the reference commit).
    #[arg(long, requires = "update_baseline", value_name = "COMMIT")]
    source_commit: Option<String>,
    /// The binary under test (`{bin}` in a [command] scenario; the bundled engine for an
    /// [engine] scenario). Default: redoctor-engine beside redoctor, or $REDOCTOR_ENGINE.
    #[arg(long, value_name = "BIN")]
    bin: Option<PathBuf>,
    /// Runs per side (default: the scenario's `repeats`).
    #[arg(long)]
    repeats: Option<u32>,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Write the output here (atomically) instead of stdout; with --format md the
    /// chart is written beside it as FILE.svg.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Junit,
    Md,
}

/// Runs the gate; errors exit 2.
pub fn run(args: GateArgs) -> ExitCode {
    let GateCommand::Run(a) = args.command;
    match run_gate(a) {
        Ok(code) => code,
        Err(e) => {
            say!("redoctor gate: error: {e:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn run_gate(a: RunArgs) -> Result<ExitCode> {
    let mut s = Scenario::load(&a.scenario)?;
    if let Some(r) = a.repeats {
        if !(2..=100).contains(&r) {
            bail!("--repeats {r}: the comparison needs 2 to 100 runs per side");
        }
        s.repeats = r;
    }
    let bin = crate::demo::engine_binary(a.bin.as_deref())?;
    // Check every input before the first run: a bad baseline fails at once.
    let baseline = match (&a.baseline, a.update_baseline, &a.against) {
        (Some(p), false, None) => Some(Baseline::load(p)?),
        (_, true, _) => None,
        (_, false, Some(other)) => {
            if !other.is_file() {
                bail!(
                    "--against {}: no such file; pass the other build's binary",
                    other.display()
                );
            }
            None
        }
        (None, false, None) => {
            bail!("give --baseline FILE (compare with, or write with --update-baseline) or --against OTHER_BIN")
        }
    };
    if let Some(b) = &baseline {
        if b.scenario != s.name {
            say!(
                "redoctor gate: warning: the baseline was recorded for scenario `{}`, this is `{}`",
                b.scenario,
                s.name
            );
        }
    }
    let started = std::time::Instant::now();
    let sides: Vec<(&str, PathBuf)> = match &a.against {
        Some(other) => vec![("new", bin.clone()), ("old", other.clone())],
        None => vec![("new", bin.clone())],
    };
    let mut runs: BTreeMap<&str, Vec<BTreeMap<String, f64>>> = BTreeMap::new();
    let mut commands: Vec<String> = Vec::new();
    for i in 0..s.repeats {
        // ABBA: the order alternates so drift hits both sides alike.
        let mut order: Vec<&(&str, PathBuf)> = sides.iter().collect();
        if i % 2 == 1 {
            order.reverse();
        }
        for (side, b) in order {
            say!(
                "redoctor gate: run {}/{} ({side}: {})",
                i + 1,
                s.repeats,
                b.display()
            );
            let r = target::run_once(&s, b).with_context(|| format!("run {} of {side}", i + 1))?;
            if !commands.contains(&r.command) {
                commands.push(r.command);
            }
            runs.entry(side).or_default().push(r.metrics);
        }
    }
    say!(
        "redoctor gate: {} runs in {:.0} s",
        runs.values().map(Vec::len).sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
    let new = runs.remove("new").unwrap_or_default();
    if a.update_baseline {
        let path = a.baseline.as_ref().expect("clap requires --baseline");
        let mut b = Baseline::new(&s.name, commands, new);
        b.source_commit = a.source_commit.clone();
        b.save(path)?;
        say!("redoctor gate: baseline written to {}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let (old, baseline_from) = match (baseline, &a.against) {
        (Some(b), _) => (
            b.runs,
            format!(
                "baseline file {}",
                a.baseline.as_ref().expect("given").display()
            ),
        ),
        (None, Some(other)) => (
            runs.remove("old").unwrap_or_default(),
            format!("binary {} (run side by side)", other.display()),
        ),
        (None, None) => unreachable!("checked above"),
    };
    let judge = if a.against.is_some() || a.judge_host_metrics {
        Judge::All
    } else {
        Judge::CodeOnly
    };
    let comparison = compare(&old, &new, &s.thresholds, judge);
    let report = GateReport {
        scenario: s.name.clone(),
        baseline_from,
        new_from: format!("binary {}", bin.display()),
        baseline_runs: old.len(),
        new_runs: new.len(),
        exit_code: i32::from(comparison.regressions > 0),
        comparison,
    };
    emit(&report, a.format, a.out.as_deref())?;
    Ok(if report.comparison.regressions > 0 {
        ExitCode::from(EXIT_REGRESSION)
    } else {
        ExitCode::SUCCESS
    })
}

fn emit(r: &GateReport, format: Format, out: Option<&Path>) -> Result<()> {
    let chart_name = out.map(|p| format!("{}.svg", p.display()));
    let text = match format {
        Format::Text => output::text(r),
        Format::Json => output::json(r)?,
        Format::Junit => output::junit(r),
        Format::Md => {
            let name = chart_name.as_deref().map(|c| {
                Path::new(c)
                    .file_name()
                    .map_or(c.to_string(), |f| f.to_string_lossy().into_owned())
            });
            output::markdown(r, name.as_deref())
        }
    };
    match out {
        None => print!("{text}"),
        Some(p) => {
            if format == Format::Md {
                let svg = output::svg_chart(r)?;
                let chart = Path::new(chart_name.as_deref().expect("out given"));
                write_atomic(chart, svg.as_bytes())
                    .with_context(|| format!("writing the chart {}", chart.display()))?;
            }
            write_atomic(p, text.as_bytes())
                .with_context(|| format!("writing the output {}", p.display()))?;
            // The verdict also goes to stderr, for the CI log.
            eprint!("{}", output::text(r));
        }
    }
    Ok(())
}
