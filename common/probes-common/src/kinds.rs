//! What a thread does ([`Role`]) and what a file holds ([`FileKind`]): the
//! keys the probes attribute their measurements by, and the rules read.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a thread does on the commit path.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Writes the log buffer to the redo file (MySQL `ib_log_writer`).
    LogWriter,
    /// fsyncs the redo file (`ib_log_flush`).
    LogFlusher,
    /// Wakes committers whose redo is written/durable (`ib_log_*_notif`).
    LogNotifier,
    /// Runs client transactions (connection / user threads).
    User,
    /// Writes or syncs the binary log.
    Binlog,
    /// Takes checkpoints: flushes dirty pages so the recovery start can
    /// advance (PostgreSQL's checkpointer, InnoDB's `ib_log_checkpt`, the
    /// bundled engine's `log_checkpoint`).
    Checkpointer,
    /// Writes dirty data pages ahead of the checkpoints (PostgreSQL's
    /// background writer).
    PageWriter,
    /// Background cleanup of old row versions (PostgreSQL's autovacuum).
    Maintenance,
    /// Ships or receives the log for replicas (PostgreSQL's walsender and
    /// walreceiver).
    Replication,
    /// A replica's receiver: fetches the source's events into the relay
    /// log (MySQL's I/O thread, the bundled engine's `rpl_receiver`).
    Receiver,
    /// A replica's applier: reads the relay log and applies or hands out
    /// transactions (MySQL's SQL thread / coordinator, `rpl_applier`).
    Applier,
    /// A replica's parallel worker (`replica_parallel_workers`,
    /// `rpl_worker_N`).
    Worker,
    /// Any other thread of the target.
    #[default]
    Other,
    /// A thread outside the target process (only as the other side of a wakeup).
    External,
}

impl Role {
    /// Roles whose wakeups lie on the commit path.
    pub fn on_commit_path(self) -> bool {
        matches!(
            self,
            Role::LogWriter | Role::LogFlusher | Role::LogNotifier | Role::User | Role::Binlog
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::LogWriter => "log_writer",
            Role::LogFlusher => "log_flusher",
            Role::LogNotifier => "log_notifier",
            Role::User => "user",
            Role::Binlog => "binlog",
            Role::Checkpointer => "checkpointer",
            Role::PageWriter => "page_writer",
            Role::Maintenance => "maintenance",
            Role::Replication => "replication",
            Role::Receiver => "receiver",
            Role::Applier => "applier",
            Role::Worker => "worker",
            Role::Other => "other",
            Role::External => "external",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Kind of file behind a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    Redo,
    Binlog,
    Data,
    /// The doublewrite buffer's own files (MySQL 8.0.20's `#ib_*.dblwr`,
    /// the bundled engine's `dblwr-*.bin`); MariaDB keeps it inside its
    /// system tablespace, counted as data.
    Doublewrite,
    /// A replica's relay log (the bundled engine's `relay.NNNNNN`,
    /// MySQL's `*-relay-bin.*`, MariaDB's `*-relay-bin.*`).
    Relay,
    /// Anything else: sockets, pipes, logs, files closed before they could be named.
    Other,
}

impl FileKind {
    /// Every kind, in order (kept beside the enum: a new kind goes in both).
    pub const ALL: [FileKind; 6] = [
        FileKind::Redo,
        FileKind::Binlog,
        FileKind::Data,
        FileKind::Doublewrite,
        FileKind::Relay,
        FileKind::Other,
    ];
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Redo => "redo",
            FileKind::Binlog => "binlog",
            FileKind::Data => "data",
            FileKind::Doublewrite => "doublewrite",
            FileKind::Relay => "relay",
            FileKind::Other => "other",
        })
    }
}
