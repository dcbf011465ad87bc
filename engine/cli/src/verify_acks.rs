//! `redoctor-engine verify-acks` (a crash-test helper, hidden from
//! `--help`): recover, then check that every insert a crash test saw
//! acknowledged (`run --ack-file`) is in the recovered tables.

use redoctor_args::say;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use redoctor_engine::TableId;
use redoctor_workload::acks;

use crate::open::{open_existing, EngineArgs, StartupArgs};

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Acknowledgement file written by `run --ack-file`; repeat for several runs on the same datadir.
    #[arg(long, required = true)]
    acks: Vec<PathBuf>,
    /// Exit without the clean shutdown (no final checkpoint), so the next open recovers again.
    #[arg(long)]
    no_shutdown: bool,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    startup: StartupArgs,
}

pub fn cmd_verify_acks(a: VerifyArgs) -> Result<ExitCode> {
    let mut all = Vec::new();
    let mut partial = 0;
    for path in &a.acks {
        let bytes = fs::read(path).with_context(|| {
            format!(
                "cannot read the acknowledgement file {}; pass the --ack-file of the run",
                path.display()
            )
        })?;
        let parsed = acks::parse_acks(&bytes)
            .with_context(|| format!("{} is not an acknowledgement file", path.display()))?;
        partial += usize::from(parsed.partial_tail);
        all.extend(parsed.acks);
    }
    let (engine, recovered_in) = open_existing(&a.engine, &a.startup)?;

    let names: HashMap<TableId, String> = engine
        .table_names()
        .into_iter()
        .filter_map(|name| Some((engine.table_id(&name)?, name)))
        .collect();
    let ids: BTreeMap<String, BTreeSet<i64>> = engine
        .dump()
        .into_iter()
        .map(|(name, rows)| (name, rows.into_keys().collect()))
        .collect();
    let check = acks::check_acks(&all, &names, &ids);

    println!(
        "recovered {} in {:.2} s; {} ack lines ({} distinct) from {} file(s), {} partial trailing line(s) ignored",
        a.engine.datadir.display(),
        recovered_in.as_secs_f64(),
        check.lines,
        check.distinct,
        a.acks.len(),
        partial
    );
    println!("present {}  missing {}", check.present, check.missing.len());
    for (name, rows) in &ids {
        println!("  {name:<12} {} rows", rows.len());
    }
    if check.lines == 0 {
        say!("warning: no acknowledgement lines: nothing was checked");
    }
    if !check.ok() {
        const SHOWN: usize = 20;
        say!(
            "{} acknowledged inserts are missing after recovery; the first ones:",
            check.missing.len()
        );
        for (table, id) in check.missing.iter().take(SHOWN) {
            let name = names.get(table).map_or("(unknown table)", String::as_str);
            say!("  table {table} {name} id {id}");
        }
    }
    if a.no_shutdown {
        // Leave the log as recovery left it: no final checkpoint, no clean stop.
        std::io::stdout().flush().context("flushing stdout")?;
        std::mem::forget(engine);
    } else {
        engine
            .shutdown()
            .context("the clean shutdown after verification failed")?;
    }
    Ok(if check.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
