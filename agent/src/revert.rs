//! `redoctor revert --socket S [--state FILE]`: restores every setting
//! `redoctor apply` changed on that server to its value before the first
//! change, and forgets them.

use redoctor_args::tell;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::admin::Admin;
use crate::state::{path_or_default, State};

#[derive(Args, Debug)]
pub struct RevertArgs {
    /// The server's Unix socket: a MySQL socket file, or a PostgreSQL
    /// socket directory (or its `.s.PGSQL.PORT` file).
    #[arg(long)]
    socket: PathBuf,
    /// State file written by `redoctor apply` (same default).
    #[arg(long)]
    state: Option<PathBuf>,
    /// User to connect as (default: root for MySQL, postgres for PostgreSQL).
    #[arg(long, default_value = "")]
    user: String,
}

pub fn run(args: RevertArgs) -> Result<ExitCode> {
    let state_path = path_or_default(args.state.as_deref())?;
    let mut state = State::load(&state_path)?;
    let mut admin = Admin::connect(&args.socket, &args.user)?;
    let socket = admin.socket().to_string();
    let mine: Vec<_> = state
        .entries
        .iter()
        .filter(|e| e.socket == socket)
        .cloned()
        .collect();
    if mine.is_empty() {
        tell!(
            "nothing to revert for {socket} (state file {})",
            state_path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    for e in mine.iter().rev() {
        admin.restore(&e.setting, &e.original)?;
        state
            .entries
            .retain(|x| !(x.socket == socket && x.setting == e.setting));
        state.save(&state_path)?;
        let now = admin.get(&e.setting)?;
        tell!("{}: {} -> {now}", e.setting, e.applied);
    }
    Ok(ExitCode::SUCCESS)
}
