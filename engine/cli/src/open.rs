//! Opening the engine's data directory: the options every subcommand shares.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use redoctor_args::OnOff;
use redoctor_engine::{Engine, EngineOptions, RedoOptions};

/// The redo log's startup options, shared by `run` and `serve` with one
/// default: the engine's (dedicated log threads on, as MySQL 8.0; flush at
/// every commit).
#[derive(Args, Debug, Default)]
pub struct RedoArgs {
    /// Dedicated redo log threads at start: on (RT1) or off (RT0, user threads write).
    /// Engine default (on, as MySQL 8.0; MySQL 8.4 turns them off below 32 logical CPUs) if absent.
    #[arg(long, value_enum)]
    pub redo_threads: Option<OnOff>,
    /// innodb_flush_log_at_trx_commit at start: 1 write+fsync per commit, 2 write only, 0 neither.
    /// Engine default (1) if absent.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub flush_at_commit: Option<u8>,
}

impl RedoArgs {
    /// The engine's redo options with these applied.
    pub fn options(&self) -> RedoOptions {
        let mut redo = RedoOptions::default();
        if let Some(mode) = self.redo_threads {
            redo.mode = mode.into();
        }
        if let Some(f) = self.flush_at_commit {
            redo.flush_at_commit = f;
        }
        redo
    }
}

/// Options for opening the engine, shared by every subcommand.
#[derive(Args, Debug)]
pub struct EngineArgs {
    /// Data directory (created by `run` if missing).
    #[arg(long)]
    pub datadir: PathBuf,
    /// Redo log buffer size in MiB, fractions allowed (a power of two in bytes; engine default if absent).
    #[arg(long = "log-buffer-mb", value_name = "MB", value_parser = redoctor_args::mib)]
    pub log_buffer_bytes: Option<u64>,
    /// Redo log file size in MiB, fractions allowed (engine default if absent).
    #[arg(long = "log-file-mb", value_name = "MB", value_parser = redoctor_args::mib)]
    pub log_file_bytes: Option<u64>,
    /// Take a checkpoint when the redo log is this full (percent; engine default if absent).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub checkpoint_fill_pct: Option<u32>,
}

/// Opens the engine at `args.datadir` (recovering it if needed).
pub fn open_engine(
    args: &EngineArgs,
    mut redo: RedoOptions,
    lock_wait_timeout: Option<Duration>,
    startup: Vec<(String, String)>,
) -> Result<Arc<Engine>> {
    if let Some(bytes) = args.log_buffer_bytes {
        redo.log_buffer_size =
            usize::try_from(bytes).context("--log-buffer-mb is too large for this machine")?;
    }
    if let Some(bytes) = args.log_file_bytes {
        redo.log_file_size = bytes;
    }
    let mut opts = EngineOptions::new(args.datadir.clone());
    opts.redo = redo;
    opts.settings = startup;
    if let Some(t) = lock_wait_timeout {
        opts.lock_wait_timeout = t;
    }
    if let Some(pct) = args.checkpoint_fill_pct {
        opts.checkpoint_fill_pct = pct;
    }
    Engine::open(opts).with_context(|| {
        format!(
            "cannot open the engine at {} (recovery failed or the directory holds something else); \
             pass the --datadir of an earlier run or an empty directory",
            args.datadir.display()
        )
    })
}

/// `--set` for the subcommands that only open a data directory (`recover`,
/// `verify-acks`): startup settings the directory needs (a directory whose
/// tables are on pages opens only with `innodb_buffer_pool_size`).
#[derive(Args, Debug, Default)]
pub struct StartupArgs {
    /// A startup setting to open the directory with, NAME=VALUE (repeatable),
    /// as the run that made it had them (e.g. innodb_buffer_pool_size).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = redoctor_args::setting)]
    pub set: Vec<(String, String)>,
}

impl StartupArgs {
    /// The settings, each checked to be a startup setting.
    pub fn settings(&self) -> Result<Vec<(String, String)>> {
        for (name, value) in &self.set {
            let s = redoctor_engine::find_setting(name)
                .map_err(|e| anyhow::anyhow!("--set {name}={value}: {e}"))?;
            if s.dynamic() {
                bail!(
                    "--set {name}={value}: {name} is a live setting, which this subcommand has \
                     no use for (it only opens the directory); pass startup settings only"
                );
            }
        }
        Ok(self.set.clone())
    }
}

/// Opens (and so recovers) the existing directory of `args` with the
/// startup settings of `startup`, as `recover` and `verify-acks` do; also
/// returns how long opening took.
pub fn open_existing(
    args: &EngineArgs,
    startup: &StartupArgs,
) -> Result<(Arc<Engine>, std::time::Duration)> {
    ensure_existing_datadir(&args.datadir)?;
    let started = std::time::Instant::now();
    let engine = open_engine(args, RedoOptions::default(), None, startup.settings()?)?;
    Ok((engine, started.elapsed()))
}

/// Creates `dir` if needed and checks that files can be created in it.
pub fn ensure_writable_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "--datadir {} exists but is not a directory; pass a directory path",
            dir.display()
        );
    }
    fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create --datadir {}; pass a directory you can write to",
            dir.display()
        )
    })?;
    let probe = dir.join(".redoctor-write-probe");
    fs::write(&probe, b"").with_context(|| {
        format!(
            "--datadir {} is not writable; pass a directory you can write to",
            dir.display()
        )
    })?;
    fs::remove_file(&probe).with_context(|| format!("cannot remove {}", probe.display()))?;
    Ok(())
}

/// Checks that `dir` is an existing directory (recover and verify never create one).
pub fn ensure_existing_datadir(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        bail!(
            "--datadir {} does not exist or is not a directory: there is nothing to recover; \
             pass the --datadir of an earlier `run`",
            dir.display()
        );
    }
    Ok(())
}
