//! `redoctor-engine recover`: open (and so recover) a data directory and
//! print what recovery did and the row count of every table.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;

use redoctor_engine::RecoveryReport;
use redoctor_engine::{Engine, RedoOptions};

use crate::open::{ensure_existing_datadir, open_engine, EngineArgs};

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Row count per table.
pub fn row_counts(engine: &Engine) -> BTreeMap<String, usize> {
    engine
        .dump()
        .into_iter()
        .map(|(name, rows)| (name, rows.len()))
        .collect()
}

pub fn cmd_recover(a: RecoverArgs) -> Result<ExitCode> {
    #[derive(Serialize)]
    struct Output<'a> {
        datadir: &'a Path,
        recovery: &'a RecoveryReport,
        tables: BTreeMap<String, usize>,
    }
    ensure_existing_datadir(&a.engine.datadir)?;
    let started = Instant::now();
    let engine = open_engine(&a.engine, RedoOptions::default(), None, vec![])?;
    let elapsed = started.elapsed();
    let out = Output {
        datadir: &a.engine.datadir,
        recovery: engine.recovery_report(),
        tables: row_counts(&engine),
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).context("serialising the recovery report")?
        );
    } else {
        println!(
            "recovered {} in {:.2} s",
            a.engine.datadir.display(),
            elapsed.as_secs_f64()
        );
        println!("{}", out.recovery.tail_summary());
        match serde_json::to_value(out.recovery).context("serialising the recovery report")? {
            serde_json::Value::Object(fields) => {
                for (k, v) in fields {
                    println!("  {k:<28} {v}");
                }
            }
            other => println!("  {other}"),
        }
        println!("tables:");
        for (name, rows) in &out.tables {
            println!("  {name:<28} {rows} rows");
        }
    }
    engine
        .shutdown()
        .context("the clean shutdown after recovery failed")?;
    Ok(ExitCode::SUCCESS)
}
