//! `redoctor-engine serve`: command-line options and the run loop.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use super::{wait_for_signal, Server, ServerConfig};
use crate::{Engine, EngineOptions, RedoMode};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Data directory (created if missing; recovered if it holds a crashed engine).
    #[arg(long)]
    pub datadir: PathBuf,
    /// Unix socket path (created mode 0600; only the server's user may connect).
    #[arg(long)]
    pub socket: PathBuf,
    /// Also listen on 127.0.0.1:PORT (off unless given; no peer check on TCP).
    #[arg(long, value_name = "PORT")]
    pub tcp: Option<u16>,
    /// Dedicated redo log threads at start: on (RT1) or off (RT0). Engine default if absent.
    #[arg(long, value_parser = ["on", "off"])]
    pub redo_threads: Option<String>,
    /// innodb_flush_log_at_trx_commit at start (0, 1, 2). Engine default (1) if absent.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub flush_at_commit: Option<u8>,
    /// Redo log file size in MiB (engine default if absent).
    #[arg(long, value_name = "MB")]
    pub log_file_mb: Option<u64>,
    /// innodb_lock_wait_timeout in seconds at start (engine default if absent).
    #[arg(long, value_name = "SECS")]
    pub lock_wait_timeout: Option<u64>,
    /// max_allowed_packet in bytes: larger client packets close the connection.
    #[arg(long, default_value_t = super::DEFAULT_MAX_PACKET)]
    pub max_packet: usize,
    /// Seconds shutdown lets open transactions finish before rolling them back.
    #[arg(long, default_value_t = 5)]
    pub shutdown_grace: u64,
    /// connect_timeout: seconds a client has to log in after connecting.
    #[arg(long, default_value_t = 10)]
    pub connect_timeout: u64,
}

/// Opens the engine, serves until SIGTERM/SIGINT, shuts down gracefully.
pub fn run(a: ServeArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(&a.datadir).with_context(|| {
        format!(
            "cannot create --datadir {}; pass a directory you can write to",
            a.datadir.display()
        )
    })?;
    let mut opts = EngineOptions::new(a.datadir.clone());
    // Clients send multi-row INSERTs of ~512 KiB (sysbench's bulk load) as one
    // autocommit transaction: allow redo records up to 2 MiB (the link
    // buffer caps a record at half its slots; 4 Mi slots take 32 MiB).
    opts.redo.link_slots = opts.redo.link_slots.max(1 << 22);
    if let Some(m) = &a.redo_threads {
        opts.redo.mode = m.parse::<RedoMode>().map_err(anyhow::Error::msg)?;
    }
    if let Some(f) = a.flush_at_commit {
        opts.redo.flush_at_commit = f;
    }
    if let Some(mb) = a.log_file_mb {
        opts.redo.log_file_size = mb << 20;
    }
    if let Some(s) = a.lock_wait_timeout {
        opts.lock_wait_timeout = Duration::from_secs(s.max(1));
    }
    let engine = Engine::open(opts).with_context(|| {
        format!(
            "cannot open the engine at {}; pass the --datadir of an earlier run or an empty directory",
            a.datadir.display()
        )
    })?;
    let mut cfg = ServerConfig::new(&a.socket);
    cfg.tcp_port = a.tcp;
    cfg.max_packet = a.max_packet;
    cfg.shutdown_grace = Duration::from_secs(a.shutdown_grace);
    cfg.connect_timeout = Duration::from_secs(a.connect_timeout.max(1));
    let server = Server::start(engine, cfg).context("starting the server")?;
    match server.tcp_port() {
        Some(p) => eprintln!(
            "redoctor-engine serve: listening on {} and 127.0.0.1:{p}",
            a.socket.display()
        ),
        None => eprintln!("redoctor-engine serve: listening on {}", a.socket.display()),
    }
    wait_for_signal();
    eprintln!("redoctor-engine serve: shutting down");
    server.shutdown().context("shutting down")?;
    eprintln!("redoctor-engine serve: stopped cleanly");
    Ok(ExitCode::SUCCESS)
}
