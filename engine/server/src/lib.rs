//! `redoctor-engine serve`: the MySQL client/server protocol in front of the engine.
//!
//! - Protocol: `msql_srv` (blocking I/O); one OS thread per connection, named
//!   `conn/N`, so connection threads are the engine's user threads, as in
//!   MySQL's default thread handling. [`framing`] guards the read side;
//!   [`net_spin`] polls for the next request while the CPUs have room.
//!   [`ServerConfig::thread_prefix`] renames them: `redoctor-engine run
//!   --admin-socket` serves on `admin/N` threads, which the probes' profile
//!   does not count as user threads.
//! - SQL: `sqlparser`'s MySQL dialect turned into engine plans ([`sql`],
//!   [`exec`]); the surface is what sysbench's OLTP scripts send plus the
//!   admin statements ([`admin`]). Plain text INSERTs take a scanner that
//!   gives the same result without building an AST (`sql::fast_insert`).
//!   [`stmt_timing`] counts and times statements per kind.
//! - Auth: the Unix socket file is created mode 0600 (owner only) and every
//!   accepted connection's peer credentials (SO_PEERCRED) must carry the
//!   server's effective uid; user names and passwords are not checked. TCP is
//!   off unless asked for, binds 127.0.0.1 only, and has no such check: any
//!   local user can connect to it.
//! - Shutdown ([`Server::shutdown`]): stop accepting and remove the socket
//!   file, let open transactions finish for a grace period (no new ones
//!   start), close every connection (rolling back what is still open), then
//!   shut the engine down, which takes a final checkpoint.
//!   [`Server::stop_serving`] does the same but leaves the engine running,
//!   for a server in front of an engine someone else shuts down.

pub mod admin;
pub mod error;
pub mod exec;
pub mod framing;
mod listener;
pub mod net_spin;
pub mod peer;
pub mod replication;
mod replication_stmt;
pub mod session;
pub mod sql;
pub mod stmt_timing;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use listener::{check_socket_path, wait_for_signal, Server};

use redoctor_engine::Engine;

/// MySQL's default max_allowed_packet (64 MiB).
pub const DEFAULT_MAX_PACKET: usize = 64 << 20;

/// How to listen.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Unix socket path (created mode 0600; an existing stale socket is replaced).
    pub socket: PathBuf,
    /// Also listen on 127.0.0.1:PORT (0 = any free port). Off if None.
    pub tcp_port: Option<u16>,
    /// Largest client packet accepted (`max_allowed_packet`).
    pub max_packet: usize,
    /// How long shutdown lets open transactions finish before rolling them back.
    pub shutdown_grace: Duration,
    /// `connect_timeout`: a client must finish the handshake within this.
    pub connect_timeout: Duration,
    /// Connection threads are named `PREFIX/N` and the acceptor
    /// `PREFIX_acceptor` (default `conn`). Linux keeps 15 bytes of a thread
    /// name, so keep it to 6 bytes or the acceptor's name is cut short. The
    /// probes' profile maps `conn/*` to the `user` role.
    pub thread_prefix: String,
    /// What the server's messages on stderr start with
    /// (default `redoctor-engine serve`).
    pub log_prefix: String,
    /// How long a connection thread polls its socket for the next request
    /// before it blocks, while the CPUs have idle time ([`net_spin`]);
    /// zero: never.
    pub net_spin: Duration,
    /// `--source-socket`: be a replica of the `serve` on this socket and
    /// start replicating at once (as `CHANGE REPLICATION SOURCE TO
    /// SOURCE_SOCKET=...` then `START REPLICA`).
    pub source_socket: Option<PathBuf>,
}

/// [`ServerConfig::net_spin`]'s default: longer than a local client takes
/// between a reply and its next request (~30 µs for sysbench's point select).
pub const DEFAULT_NET_SPIN: Duration = Duration::from_micros(50);

impl ServerConfig {
    pub fn new(socket: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            socket: socket.into(),
            tcp_port: None,
            max_packet: DEFAULT_MAX_PACKET,
            shutdown_grace: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(10),
            thread_prefix: "conn".into(),
            log_prefix: "redoctor-engine serve".into(),
            net_spin: DEFAULT_NET_SPIN,
            source_socket: None,
        }
    }
}

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on Unix socket {path}: {source}; check the directory exists and is writable, and that no other server uses the socket")]
    Socket {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on 127.0.0.1:{port}: {source}; pick a free port with --tcp")]
    Tcp {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("engine shutdown failed: {0}")]
    Engine(#[from] redoctor_engine::EngineError),
}

/// State shared by every connection.
pub struct Shared {
    pub engine: Arc<Engine>,
    pub auto_inc: exec::AutoInc,
    pub shutting_down: AtomicBool,
    pub max_packet: usize,
    pub connect_timeout: Duration,
    /// `@@socket` and `@@port` (0 when TCP is off).
    pub socket: String,
    pub port: u16,
    pub threads_connected: AtomicU64,
    pub connections: AtomicU64,
    pub questions: AtomicU64,
    /// Count and time per statement kind (`Redoctor_stmt_*` status).
    pub stmt_timing: stmt_timing::StmtTiming,
    pub started: Instant,
    /// [`ServerConfig::thread_prefix`] and [`ServerConfig::log_prefix`].
    pub thread_prefix: String,
    pub log_prefix: String,
    /// Polling for the next request, and its counters.
    pub net_spin: Arc<net_spin::NetSpin>,
    /// The replica (every server can become one).
    pub replication: replication::Replication,
}

/// What the listener knows about one connection.
pub struct ConnState {
    pub id: u64,
    /// The session has an open transaction.
    pub in_trx: AtomicBool,
}
