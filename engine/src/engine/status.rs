//! `SHOW GLOBAL STATUS`: every engine counter under a MySQL-style name.
//!
//! Counters of [`Counters`](crate::counters::Counters) appear under the
//! MySQL name where the meaning matches (see [`MYSQL_NAMES`]) and as
//! `Innodb_<counter>` (`Binlog_<rest>` for `binlog_<rest>`, the replica's counters
//! capitalised) otherwise, so new counters show up without an edit
//! here. Gate, throttle and trx-sys counters follow.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::Engine;
use crate::counters::CounterValues;
use crate::page_store::store::PageStore;
use crate::redo::RedoMode;

/// What `Engine::status` returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusSnapshot {
    pub counters: CounterValues,
    /// Reserved up to (the log's current lsn).
    pub lsn: u64,
    /// Written to the OS up to.
    pub write_lsn: u64,
    /// Durable up to.
    pub flushed_lsn: u64,
    /// Newest durable checkpoint.
    pub checkpoint_lsn: u64,
    /// On (dedicated log threads, RT1) or off (user threads write, RT0);
    /// `"on"`/`"off"` in JSON.
    pub redo_mode: RedoMode,
    pub flush_at_commit: u8,
    /// Set once an fdatasync failed: the engine acknowledges no more commits.
    pub fail_stop: Option<String>,
}

/// Engine counter → MySQL status name.
pub const MYSQL_NAMES: &[(&str, &str)] = &[
    ("commits", "Com_commit"),
    ("rollbacks", "Com_rollback"),
    ("redo_bytes", "Innodb_os_log_written"),
    ("redo_writes", "Innodb_log_writes"),
    ("redo_fsyncs", "Innodb_os_log_fsyncs"),
    ("redo_buffer_waits", "Innodb_log_waits"),
    ("lock_waits", "Innodb_row_lock_waits"),
    ("lock_deadlocks", "Innodb_deadlocks"),
    ("lock_timeouts", "Innodb_row_lock_timeouts"),
    ("binlog_bytes", "Binlog_bytes_written"),
    ("binlog_events", "Binlog_commits"),
    ("binlog_groups", "Binlog_group_commits"),
];

/// The buffer pool's and the doublewrite buffer's rows (tables on pages),
/// as MySQL names them, plus the engine's own (`Innodb_buffer_pool_pages_flushed_*`,
/// `Innodb_page_cleaner_busy_us`, `Innodb_dblwr_*_waits`).
fn page_status(store: &PageStore) -> Vec<(String, u64)> {
    let c = &store.pool().counters;
    let r = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let d = store.doublewrite();
    let frames = store.pool().frames() as u64;
    [
        ("Innodb_buffer_pool_read_requests", r(&c.read_requests)),
        ("Innodb_buffer_pool_reads", r(&c.reads)),
        ("Innodb_buffer_pool_pages_dirty", r(&c.pages_dirty)),
        ("Innodb_buffer_pool_pages_total", frames),
        ("Innodb_buffer_pool_wait_free", r(&c.wait_free)),
        (
            "Innodb_buffer_pool_pages_flushed_single_page",
            r(&c.single_page_flushes),
        ),
        (
            "Innodb_buffer_pool_pages_flushed_by_cleaners",
            r(&c.cleaner_pages),
        ),
        ("Innodb_page_cleaner_busy_us", r(&c.cleaner_ns) / 1000),
        ("Innodb_dblwr_writes", d.writes),
        ("Innodb_dblwr_pages_written", d.pages_written),
        ("Innodb_dblwr_single_page_flushes", d.single_page_flushes),
        ("Innodb_dblwr_waits", d.waits),
        ("Innodb_dblwr_wait_us", d.wait_ns / 1000),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), v))
    .collect()
}

/// Counters of a replica's threads, shown under their own capitalised name.
const REPLICA_PREFIXES: &[&str] = &["relay_log_", "replica_", "applier_", "receiver_", "worker_"];

/// The status rows, sorted by name.
pub fn global_status(engine: &Engine) -> Vec<(String, u64)> {
    let snap = engine.status();
    let mut rows = Vec::new();
    if let Ok(Json::Object(map)) = serde_json::to_value(&snap.counters) {
        for (k, v) in map {
            let name = MYSQL_NAMES
                .iter()
                .find(|(c, _)| *c == k)
                .map(|(_, m)| m.to_string())
                .unwrap_or_else(|| {
                    if let Some(rest) = k.strip_prefix("binlog_") {
                        format!("Binlog_{rest}")
                    } else if REPLICA_PREFIXES.iter().any(|p| k.starts_with(p)) {
                        // Replica counters: `Relay_log_writes`, `Replica_trx_applied`, ...
                        let mut c = k.chars();
                        let first = c.next().map(|f| f.to_ascii_uppercase());
                        first.into_iter().chain(c).collect()
                    } else {
                        format!("Innodb_{k}")
                    }
                });
            rows.push((name, v.as_u64().unwrap_or(0)));
        }
    }
    rows.push(("Innodb_lsn_current".into(), snap.lsn));
    rows.push(("Innodb_lsn_flushed".into(), snap.flushed_lsn));
    rows.push(("Innodb_lsn_last_checkpoint".into(), snap.checkpoint_lsn));

    let g = engine.concurrency_gate().stats();
    rows.push(("Innodb_concurrency_enters".into(), g.enters));
    rows.push(("Innodb_concurrency_ticket_enters".into(), g.ticket_enters));
    rows.push(("Innodb_concurrency_waits".into(), g.waits));
    rows.push(("Innodb_concurrency_sleeps".into(), g.sleeps));
    rows.push(("Innodb_concurrency_forced_enters".into(), g.forced));
    rows.push((
        "Innodb_concurrency_lock_wait_exits".into(),
        g.lock_wait_exits,
    ));
    rows.push(("Innodb_concurrency_queue_length".into(), g.queued));
    rows.push(("Innodb_threads_inside".into(), g.inside));
    rows.push((
        "Innodb_threads_inside_high_water".into(),
        g.inside_high_water,
    ));

    let t = engine.throttle().stats();
    rows.push(("Innodb_trx_throttle_admitted".into(), t.admitted));
    rows.push(("Innodb_trx_throttle_waits".into(), t.waits));
    rows.push(("Innodb_trx_throttle_timeouts".into(), t.timeouts));
    rows.push(("Innodb_trx_throttle_queue_length".into(), t.queued));

    if let Some(store) = engine.page_store() {
        rows.extend(page_status(store));
    }

    let s = engine.trx_sys().stats();
    rows.push(("Innodb_active_transactions".into(), s.active));
    rows.push(("Innodb_trx_sys_registered".into(), s.registered));
    rows.push((
        "Innodb_trx_sys_shard_acquisitions".into(),
        s.shard_acquisitions,
    ));
    rows.push(("Innodb_trx_sys_shard_contended".into(), s.shard_contended));
    rows.sort();
    rows
}
