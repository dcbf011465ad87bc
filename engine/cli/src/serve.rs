//! `redoctor-engine serve`: command-line options and the run loop.

use redoctor_args::say;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use redoctor_args::OnOff;
use redoctor_engine::RedoMode;
use redoctor_server::{wait_for_signal, Server, ServerConfig, DEFAULT_MAX_PACKET};

use crate::open::{ensure_writable_dir, open_engine, EngineArgs, RedoArgs};
use crate::run::{apply_settings, startup_settings};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Unix socket path (created mode 0600; only the server's user may connect).
    #[arg(long)]
    pub socket: PathBuf,
    /// Also listen on 127.0.0.1:PORT (off unless given; no peer check on TCP).
    #[arg(long, value_name = "PORT")]
    pub tcp: Option<u16>,
    /// The redo log's startup options, with `run`'s defaults.
    #[command(flatten)]
    pub redo: RedoArgs,
    /// Set a server variable at start, `name=value` (repeatable), as `run --set`
    /// takes it: startup-only settings when the engine opens, the rest through
    /// SET GLOBAL before the first client connects.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = redoctor_args::setting)]
    pub set: Vec<(String, String)>,
    /// innodb_lock_wait_timeout at start (`50`, `50s`; at least 1 s; engine default if absent).
    #[arg(long, value_parser = redoctor_args::duration)]
    pub lock_wait_timeout: Option<Duration>,
    /// max_allowed_packet in bytes: larger client packets close the connection.
    #[arg(long, default_value_t = DEFAULT_MAX_PACKET)]
    pub max_packet: usize,
    /// How long shutdown lets open transactions finish before rolling them back (`5`, `500ms`).
    #[arg(long, default_value = "5", value_parser = redoctor_args::duration)]
    pub shutdown_grace: Duration,
    /// connect_timeout: how long a client has to log in after connecting (`10`, `10s`; at least 1 s).
    #[arg(long, default_value = "10", value_parser = redoctor_args::duration)]
    pub connect_timeout: Duration,
    /// How long a connection thread polls for the client's next request
    /// before it sleeps, while the CPUs have idle time (`50us`, `0` = never;
    /// `redoctor_net_spin_us`).
    #[arg(long, default_value = "50us", value_parser = redoctor_args::duration)]
    pub net_spin: Duration,
    /// Be a replica of the `serve` listening on this Unix socket (started
    /// with `--set log_bin=ON`) and start replicating at once, as
    /// `CHANGE REPLICATION SOURCE TO SOURCE_SOCKET='...'; START REPLICA`.
    /// The replica must hold the source's tables and rows first (the same
    /// bulk load): only transactions travel.
    #[arg(long, value_name = "PATH")]
    pub source_socket: Option<PathBuf>,
    /// The engine's storage options, shared with `run` (data directory, created if
    /// missing and recovered if it holds a crashed engine; redo buffer and file sizes;
    /// checkpoint fill).
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Opens the engine, serves until SIGTERM/SIGINT, shuts down gracefully.
pub fn run(a: ServeArgs) -> Result<ExitCode> {
    ensure_writable_dir(&a.engine.datadir)?;
    let mut redo = a.redo.options();
    // Clients send multi-row INSERTs of ~512 KiB (sysbench's bulk load) as one
    // autocommit transaction: allow redo records up to 2 MiB (the link
    // buffer caps a record at half its slots; 4 Mi slots take 32 MiB).
    redo.link_slots = redo.link_slots.max(1 << 22);
    if a.redo.redo_threads.is_none() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let host = RedoMode::host_default(cpus);
        if host != redo.mode {
            say!(
                "redoctor-engine serve: innodb_log_writer_threads={} (the engine's default, as \
                 MySQL 8.0's; MySQL 8.4 would choose {} for the {cpus} logical CPUs this process \
                 may run on: --redo-threads sets it)",
                OnOff::from(redo.mode).to_string().to_uppercase(),
                OnOff::from(host).to_string().to_uppercase(),
            );
        }
    }
    let lock_wait = a.lock_wait_timeout.map(|t| t.max(Duration::from_secs(1)));
    let engine = open_engine(&a.engine, redo, lock_wait, startup_settings(&a.set))?;
    apply_settings(&engine, &a.set)?;
    let mut cfg = ServerConfig::new(&a.socket);
    cfg.tcp_port = a.tcp;
    cfg.max_packet = a.max_packet;
    cfg.shutdown_grace = a.shutdown_grace;
    cfg.connect_timeout = a.connect_timeout.max(Duration::from_secs(1));
    cfg.net_spin = a.net_spin;
    cfg.source_socket = a.source_socket.clone();
    let server = Server::start(engine, cfg).context("starting the server")?;
    match server.tcp_port() {
        Some(p) => say!(
            "redoctor-engine serve: listening on {} and 127.0.0.1:{p}",
            a.socket.display()
        ),
        None => say!("redoctor-engine serve: listening on {}", a.socket.display()),
    }
    wait_for_signal();
    say!("redoctor-engine serve: shutting down");
    server.shutdown().context("shutting down")?;
    say!("redoctor-engine serve: stopped cleanly");
    Ok(ExitCode::SUCCESS)
}
