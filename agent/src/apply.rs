//! `redoctor apply --socket S (--set NAME=VALUE ... | --from-report FILE)
//! [--state FILE] [--allow-durability-changes]`: applies settings through
//! the server's admin interface (SET GLOBAL over the MySQL protocol, or
//! ALTER SYSTEM SET + pg_reload_conf() on PostgreSQL) after recording their
//! current values for `redoctor revert`.

use redoctor_args::{say, tell};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use redoctor_advisor::Diagnosis;

use crate::admin::{guard_durability, Admin};
use crate::state::{path_or_default, State};

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The server's Unix socket: a MySQL socket file, or a PostgreSQL
    /// socket directory (or its `.s.PGSQL.PORT` file).
    #[arg(long)]
    socket: PathBuf,
    /// A setting to apply, NAME=VALUE (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = redoctor_args::setting)]
    set: Vec<(String, String)>,
    /// Apply every recommendation of a JSON report (`redoctor diagnose --format json`).
    #[arg(long)]
    from_report: Option<PathBuf>,
    /// Allow changing durability settings (innodb_flush_log_at_trx_commit,
    /// sync_binlog; PostgreSQL's synchronous_commit, fsync, full_page_writes, wal_sync_method).
    #[arg(long)]
    allow_durability_changes: bool,
    /// State file recording the values before the change (default: $REDOCTOR_STATE,
    /// else $XDG_STATE_HOME/redoctor/applied.json, else ~/.local/state/redoctor/applied.json).
    #[arg(long)]
    state: Option<PathBuf>,
    /// User to connect as (default: root for MySQL, postgres for PostgreSQL).
    #[arg(long, default_value = "")]
    user: String,
}

pub fn run(args: ApplyArgs) -> Result<ExitCode> {
    let mut changes = args.set.clone();
    if let Some(p) = &args.from_report {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("reading the report {}", p.display()))?;
        let d = Diagnosis::from_json(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}: pass a report written by `redoctor diagnose --format json`",
                p.display()
            )
        })?;
        changes.extend(d.proposed_settings());
    }
    if changes.is_empty() {
        bail!("nothing to apply: give --set NAME=VALUE or --from-report FILE (a report with recommendations)");
    }
    guard_durability(
        changes.iter().map(|(k, _)| k.as_str()),
        args.allow_durability_changes,
        "change",
    )?;
    let state_path = path_or_default(args.state.as_deref())?;
    let mut state = State::load(&state_path)?;
    let unchanged = state.clone();
    let mut admin = Admin::connect(&args.socket, &args.user)?;
    let mut before = Vec::new();
    for (k, v) in &changes {
        before.push((k.clone(), admin.get(k)?, v.clone()));
    }
    // A static setting (needs a restart) is refused before anything changes.
    for (k, _, v) in &before {
        admin.check_dynamic(k, v)?;
    }
    for (k, old, new) in &before {
        state.record(admin.socket(), k, old, new);
    }
    state.save(&state_path)?;
    let mut done: Vec<&(String, String, String)> = Vec::new();
    for c in &before {
        if let Err(e) = admin.set(&c.0, &c.2) {
            for (k, old, _) in done.iter().rev() {
                let _ = admin.restore(k, old);
            }
            unchanged.save(&state_path)?;
            return Err(
                e.context("nothing was left changed (settings already applied were restored)")
            );
        }
        done.push(c);
    }
    for (k, old, _) in &before {
        let now = admin.get(k)?;
        tell!("{k}: {old} -> {now}");
    }
    say!(
        "redoctor: previous values recorded in {}; `redoctor revert --socket {}` restores them",
        state_path.display(),
        args.socket.display()
    );
    Ok(ExitCode::SUCCESS)
}
