//! `redoctor`: the command-line agent. One module per subcommand.
//!
//! Exit codes: 0 success; 1 error (message on stderr); 3 the target process
//! exited during `probe` (its last window was still printed).

mod duration;
mod probe;
mod table;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Probe(args) => probe::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("redoctor: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
