//! `redoctor-engine recover`: open (and so recover) a data directory and
//! print what recovery did and the row count of every table.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;

use redoctor_engine::Engine;
use redoctor_engine::RecoveryReport;

use crate::open::{open_existing, EngineArgs, StartupArgs};

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    startup: StartupArgs,
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
        /// Tables on pages: what the doublewrite buffer did.
        #[serde(skip_serializing_if = "Option::is_none")]
        doublewrite: Option<Doublewrite>,
        tables: BTreeMap<String, usize>,
    }
    #[derive(Serialize)]
    struct Doublewrite {
        checked: usize,
        restored: usize,
    }
    let (engine, elapsed) = open_existing(&a.engine, &a.startup)?;
    let out = Output {
        datadir: &a.engine.datadir,
        recovery: engine.recovery_report(),
        doublewrite: engine
            .pages_restored()
            .map(|(checked, restored)| Doublewrite { checked, restored }),
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
        if let Some(d) = &out.doublewrite {
            println!(
                "doublewrite buffer: {} page(s) checked, {} torn page(s) restored from their copy",
                d.checked, d.restored
            );
        }
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
