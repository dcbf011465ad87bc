//! `redoctor`: the command-line agent. One module per subcommand.
//! `diagnose` prints its report and exits 0 whatever the verdict (the
//! verdict is the report's first line, and `verdict.kind` in JSON).
//!
//! Exit codes: 0 success; 1 error (message on stderr); 3 the target process
//! exited during `probe` (its last window was still printed). `gate run`:
//! 0 pass, 1 regression, 2 error. A reader that stops early (`| head`)
//! ends `probe` and `diagnose` with 0: it has what it asked for.

use redoctor_args::say;
mod admin;
mod apply;
mod calibrate;
mod daemon;
mod demo;
mod diagnose;
mod disk_latency;
mod find;
mod gate;
mod meter;
mod probe;
mod revert;
mod server_counters;
mod state;
mod status_counter;
mod table;
mod trial_run;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "redoctor",
    version,
    about = "eBPF-instrumented tuning advisor for transactional database engines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Attach the probes to a running process and stream one window of signals per interval.
    Probe(probe::ProbeArgs),
    /// Observe a running server (or the bundled engine with --demo) and advise on its settings.
    Diagnose(Box<diagnose::DiagnoseArgs>),
    /// Apply settings (or a report's recommendations) through the server's admin interface, recording the old values.
    Apply(apply::ApplyArgs),
    /// Measure this host's commit path with the bundled engine and fit the advisor's model to it.
    Calibrate(calibrate::CalibrateArgs),
    /// Restore the settings `redoctor apply` changed on a server.
    Revert(revert::RevertArgs),
    /// The daemon: continuous low-cost observation, advice, and (apply mode) live trials with rollback.
    Agent(daemon::AgentArgs),
    /// CI performance gate: context switches, wakeups, fsyncs and CPU per commit vs a baseline.
    Gate(gate::GateArgs),
    /// What a live trial can resolve on a server: its commit rate's noise spectrum and a knob's carryover.
    Meter(meter::MeterArgs),
}

/// Whether a write to stdout reached its reader. A reader that stopped
/// early (`| head`) has what it asked for: that is not an error, and the
/// command ends (`Ok(false)`).
fn reached_reader(r: std::io::Result<()>) -> std::io::Result<bool> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        r => r.map(|()| true),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gate(args) => return gate::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Diagnose(args) => diagnose::run(*args),
        Command::Apply(args) => apply::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Revert(args) => revert::run(args),
        Command::Agent(args) => daemon::run(args),
        Command::Meter(args) => meter::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            say!("redoctor: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
