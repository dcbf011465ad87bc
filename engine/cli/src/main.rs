//! `redoctor-engine`: drive the bundled engine from the command line.
//!
//! - `run`: open (recovering if needed) a data directory, prepare the sbtest
//!   tables if they are missing, run a sysbench-style workload, print the
//!   report, shut down cleanly; with `--admin-socket` the MySQL protocol is
//!   served on the same engine while the workload runs, so settings can be
//!   changed live (`SET GLOBAL`);
//! - `serve`: serve the MySQL protocol until SIGTERM/SIGINT;
//! - `recover`: open a data directory (which recovers it) and print what
//!   recovery did and how many rows each table holds;
//! - `verify-acks` (hidden; the crash tests' helper): recover, then check
//!   that every insert a crash test saw acknowledged is in the recovered
//!   tables.
//!
//! Fault injection (tests and soaks): `FAILPOINTS='redo::fsync::eio=return'`
//! or the hidden `--failpoint NAME=ACTIONS` switch on the engine's
//! failpoints (see `failpoints.rs` here and in the engine).
//!
//! The sweep harness (grids, oracle, plots) is `redoctor-sweep`. Reports go
//! to stdout, progress and errors to stderr.

use redoctor_args::say;
mod failpoints;
mod open;
mod recover;
mod run;
mod serve;
mod verify_acks;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "redoctor-engine",
    version,
    about = "Run workloads against the bundled InnoDB-style engine, serve it over the MySQL protocol, recover it"
)]
struct Cli {
    /// Switch an engine failpoint on, NAME=ACTIONS (repeatable; after the
    /// FAILPOINTS variable, so it wins), e.g. redo::fsync::eio=return.
    #[arg(
        long = "failpoint",
        value_name = "NAME=ACTIONS",
        global = true,
        hide = true
    )]
    failpoints: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a sysbench-style workload and print its report.
    Run(Box<run::RunArgs>),
    /// Serve the MySQL protocol on a Unix socket (and optionally 127.0.0.1) until SIGTERM/SIGINT.
    Serve(serve::ServeArgs),
    /// Open (and so recover) a data directory; print the recovery report and row counts.
    Recover(recover::RecoverArgs),
    /// Recover a data directory and check that every acknowledged insert survived (crash tests).
    #[command(hide = true)]
    VerifyAcks(verify_acks::VerifyArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = failpoints::setup(&cli.failpoints) {
        say!("error: {e:#}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Run(a) => run::cmd_run(*a),
        Command::Serve(a) => serve::run(a),
        Command::Recover(a) => recover::cmd_recover(a),
        Command::VerifyAcks(a) => verify_acks::cmd_verify_acks(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            say!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
