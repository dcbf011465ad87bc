//! The replica's live settings (kept by the engine, replica or not, as
//! MySQL shows them on every server), and the arbitration designs' names.
//! A module of its own, outside `replica`, because the engine holds these
//! settings and `replica` uses the engine.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};

/// `replica_relay_log_arbitration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Arbitration {
    /// Before MySQL 8.0.1: the hot log's lock for every write and read.
    Lock,
    /// MySQL 8.0.1: the last fully queued position, read without the lock.
    #[default]
    Position,
}

/// The setting's names, in code order.
pub const ARBITRATION_NAMES: &[&str] = &["lock", "position"];

impl Arbitration {
    pub fn name(self) -> &'static str {
        ARBITRATION_NAMES[self as usize]
    }
    pub fn parse(s: &str) -> Option<Arbitration> {
        match s.to_ascii_lowercase().as_str() {
            "lock" | "0" => Some(Arbitration::Lock),
            "position" | "1" => Some(Arbitration::Position),
            _ => None,
        }
    }
}

/// `replica_parallel_workers` bounds (MySQL allows up to 1024).
pub const MAX_WORKERS: u64 = 64;

#[derive(Debug)]
pub struct ReplicaSettings {
    parallel_workers: AtomicU32,
    preserve_commit_order: AtomicBool,
    sync_relay_log: AtomicU32,
    relay_log_space_limit: AtomicU64,
    arbitration: AtomicU8,
    /// `log_replica_updates` (startup only).
    pub log_replica_updates: bool,
}

impl Default for ReplicaSettings {
    /// MySQL 8.0.27+ defaults (4 workers, commit order kept,
    /// sync_relay_log=10000, no space limit) and the 8.0.1 arbitration.
    fn default() -> Self {
        ReplicaSettings {
            parallel_workers: AtomicU32::new(4),
            preserve_commit_order: AtomicBool::new(true),
            sync_relay_log: AtomicU32::new(10_000),
            relay_log_space_limit: AtomicU64::new(0),
            arbitration: AtomicU8::new(Arbitration::Position as u8),
            log_replica_updates: true,
        }
    }
}

impl ReplicaSettings {
    /// The defaults, with `log_replica_updates` as given.
    pub fn new(log_replica_updates: bool) -> ReplicaSettings {
        ReplicaSettings {
            log_replica_updates,
            ..ReplicaSettings::default()
        }
    }

    /// `replica_parallel_workers` (read at START REPLICA; 0 = the applier
    /// applies by itself).
    pub fn parallel_workers(&self) -> u32 {
        self.parallel_workers.load(Relaxed)
    }
    pub fn set_parallel_workers(&self, n: u32) {
        self.parallel_workers.store(n, Relaxed)
    }
    /// `replica_preserve_commit_order` (read at START REPLICA).
    pub fn preserve_commit_order(&self) -> bool {
        self.preserve_commit_order.load(Relaxed)
    }
    pub fn set_preserve_commit_order(&self, on: bool) {
        self.preserve_commit_order.store(on, Relaxed)
    }
    /// `sync_relay_log`: fdatasync after every N queued transactions (0 = never).
    pub fn sync_relay_log(&self) -> u32 {
        self.sync_relay_log.load(Relaxed)
    }
    pub fn set_sync_relay_log(&self, n: u32) {
        self.sync_relay_log.store(n, Relaxed)
    }
    /// `relay_log_space_limit` in bytes (0 = none).
    pub fn relay_log_space_limit(&self) -> u64 {
        self.relay_log_space_limit.load(Relaxed)
    }
    pub fn set_relay_log_space_limit(&self, n: u64) {
        self.relay_log_space_limit.store(n, Relaxed)
    }
    /// `replica_relay_log_arbitration` (live: the next record either
    /// thread handles follows it).
    pub fn arbitration(&self) -> Arbitration {
        if self.arbitration.load(Relaxed) == Arbitration::Lock as u8 {
            Arbitration::Lock
        } else {
            Arbitration::Position
        }
    }
    pub fn set_arbitration(&self, a: Arbitration) {
        self.arbitration.store(a as u8, Relaxed)
    }
}
