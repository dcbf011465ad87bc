//! The server's own counters, read before and after an observation and
//! turned into rates and ratios (`Facts::counters`) that rules read and
//! the report prints beside the probes' signals.
//!
//! - MySQL/MariaDB (`SHOW GLOBAL STATUS`): buffer-pool reads and read
//!   requests, free-page waits, pages flushed, and the doublewrite
//!   buffer's writes and pages (`Innodb_dblwr_*`), each `<name>_per_s`,
//!   plus `dblwr_pages_per_write` (single-page flushes and batches alike)
//!   and, for the bundled engine, `dblwr_pages_per_batch` (the page
//!   cleaners' batch writes alone, without its single-page flushes); its
//!   pages written by caller (`pages_flushed_single_page_per_s` by user
//!   threads, `pages_flushed_by_cleaners_per_s`) and their
//!   `single_page_flush_share`. A counter the server does not have is
//!   left out.
//! - A replica (`SHOW SLAVE STATUS` plus the bundled engine's replica
//!   counters): `replica_running` (1 when both threads run),
//!   `replica_lag_s` (Seconds_Behind_Source/Master), the applier's and
//!   the relay log's counters as rates, `relay_log_lock_waits_per_trx`.
//! - A PostgreSQL standby: `replica_running` (its walreceiver streams),
//!   `replica_lag_s` (since the last replayed commit, 0 when replay has
//!   caught up with what was received), WAL received and replayed per
//!   second (`wal_received_bytes_per_s`, `wal_replayed_bytes_per_s`).
//! - PostgreSQL (`pg_stat_wal`, `pg_stat_bgwriter`): WAL records, full-page
//!   images and bytes per second; `wal_fpi_bytes_share`, the share of WAL
//!   bytes that full-page images can account for (each at most one block,
//!   `block_size`: an upper bound, as holes and `wal_compression` make
//!   images smaller); checkpoints requested by WAL volume against those by
//!   `checkpoint_timeout` (`checkpoints_req_share`); WAL bytes and
//!   full-page images per committed transaction (`wal_bytes_per_commit`,
//!   `wal_fpi_per_commit`, from `pg_stat_database.xact_commit` summed
//!   over the databases).

use std::collections::BTreeMap;
use std::time::Instant;

use crate::admin::Admin;

/// `SHOW GLOBAL STATUS` counters read, and the name each rate takes.
const MYSQL: &[(&str, &str)] = &[
    ("Innodb_buffer_pool_reads", "buffer_pool_reads"),
    (
        "Innodb_buffer_pool_read_requests",
        "buffer_pool_read_requests",
    ),
    ("Innodb_buffer_pool_wait_free", "buffer_pool_wait_free"),
    (
        "Innodb_buffer_pool_pages_flushed",
        "buffer_pool_pages_flushed",
    ),
    // The bundled engine's pages written by caller: user threads flushing
    // one for a free frame, or the page cleaners' batches.
    (
        "Innodb_buffer_pool_pages_flushed_single_page",
        "pages_flushed_single_page",
    ),
    (
        "Innodb_buffer_pool_pages_flushed_by_cleaners",
        "pages_flushed_by_cleaners",
    ),
    ("Innodb_dblwr_writes", "dblwr_writes"),
    ("Innodb_dblwr_pages_written", "dblwr_pages_written"),
    // The bundled engine's single-page flushes, each one doublewrite write
    // of one page: what is left is the page cleaners' batches.
    (
        "Innodb_dblwr_single_page_flushes",
        "dblwr_single_page_flushes",
    ),
    // A bundled-engine replica (engine/src/replica).
    ("Replica_trx_applied", "replica_trx_applied"),
    ("Relay_log_lock_waits", "relay_log_lock_waits"),
    ("Relay_log_fsyncs", "relay_log_fsyncs"),
    ("Applier_waits", "applier_waits"),
    ("Receiver_applier_wakeups", "receiver_applier_wakeups"),
    ("Applier_worker_wakeups", "applier_worker_wakeups"),
    ("Applier_worker_waits", "applier_worker_waits"),
    ("Worker_commit_order_waits", "worker_commit_order_waits"),
];

/// Readings that are levels, not counters: reported as the last value.
const GAUGES: &[&str] = &["replica_lag_s", "replica_running"];

const PG_WAL: &str = "SELECT wal_records, wal_fpi, wal_bytes::bigint FROM pg_stat_wal";
const PG_CHECKPOINTS: &str = "SELECT checkpoints_timed, checkpoints_req FROM pg_stat_bgwriter";
const PG_BLOCK: &str = "SELECT current_setting('block_size')::bigint";
const PG_COMMITS: &str = "SELECT sum(xact_commit)::bigint FROM pg_stat_database";
/// A standby only (no row on a primary): whether its walreceiver streams,
/// the WAL received and replayed (bytes since 0/0), and how far replay
/// trails in time (ms since the last replayed commit's timestamp, 0 when
/// everything received is replayed).
const PG_STANDBY: &str = "SELECT \
    (SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming')::bigint, \
    pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '0/0')::bigint, \
    pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::bigint, \
    CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 \
         ELSE (EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) * 1000)::bigint END \
    WHERE pg_is_in_recovery()";

/// One reading of the counters.
#[derive(Debug, Clone)]
pub struct Reading {
    at: Instant,
    values: BTreeMap<&'static str, f64>,
}

/// Reads every counter the server has (none is an error: a server
/// without them gives an empty reading).
pub fn read(a: &mut Admin) -> Reading {
    let mut values = BTreeMap::new();
    if a.engine() == "postgresql" {
        let mut put = |sql: &str, names: &[&'static str]| {
            if let Ok(row) = a.pg_row(sql) {
                for (n, v) in names.iter().zip(row) {
                    if let Some(v) = v {
                        values.insert(*n, v as f64);
                    }
                }
            }
        };
        put(PG_WAL, &["wal_records", "wal_fpi", "wal_bytes"]);
        put(PG_CHECKPOINTS, &["checkpoints_timed", "checkpoints_req"]);
        put(PG_BLOCK, &["block_size"]);
        put(PG_COMMITS, &["commits"]);
        put(
            PG_STANDBY,
            &[
                "replica_running",
                "wal_received_bytes",
                "wal_replayed_bytes",
                "replica_lag_ms",
            ],
        );
        if let Some(ms) = values.remove("replica_lag_ms") {
            values.insert("replica_lag_s", ms / 1000.0);
        }
    } else {
        for (status, name) in MYSQL {
            if let Ok(v) = a.status(status) {
                values.insert(*name, v as f64);
            }
        }
        // A replica (MySQL, MariaDB, the bundled engine): its lag and
        // whether both threads run.
        if let Ok(Some(st)) = a.replica_status() {
            let yes = |k: &str| st.get(k).cloned().flatten().as_deref() == Some("Yes");
            let both = yes("Slave_IO_Running") && yes("Slave_SQL_Running")
                || yes("Replica_IO_Running") && yes("Replica_SQL_Running");
            values.insert("replica_running", f64::from(u8::from(both)));
            let lag = ["Seconds_Behind_Source", "Seconds_Behind_Master"]
                .iter()
                .find_map(|k| st.get(*k).cloned().flatten());
            if let Some(l) = lag.and_then(|l| l.parse::<f64>().ok()) {
                values.insert("replica_lag_s", l);
            }
        }
    }
    Reading {
        at: Instant::now(),
        values,
    }
}

/// Rates and ratios between two readings.
pub fn facts(before: &Reading, after: &Reading) -> BTreeMap<String, f64> {
    let secs = after.at.duration_since(before.at).as_secs_f64();
    let mut out = BTreeMap::new();
    if secs <= 0.0 {
        return out;
    }
    let delta =
        |n: &str| -> Option<f64> { Some((after.values.get(n)? - before.values.get(n)?).max(0.0)) };
    for name in after.values.keys() {
        if *name == "block_size" {
            continue;
        }
        if GAUGES.contains(name) {
            out.insert(name.to_string(), after.values[name]);
            continue;
        }
        if let Some(d) = delta(name) {
            out.insert(format!("{name}_per_s"), d / secs);
        }
    }
    if let (Some(l), Some(n)) = (delta("relay_log_lock_waits"), delta("replica_trx_applied")) {
        if n > 0.0 {
            out.insert("relay_log_lock_waits_per_trx".into(), l / n);
        }
    }
    if let (Some(u), Some(c)) = (
        delta("pages_flushed_single_page"),
        delta("pages_flushed_by_cleaners"),
    ) {
        if u + c > 0.0 {
            out.insert("single_page_flush_share".into(), u / (u + c));
        }
    }
    if let (Some(p), Some(w)) = (delta("dblwr_pages_written"), delta("dblwr_writes")) {
        if w > 0.0 {
            out.insert("dblwr_pages_per_write".into(), p / w);
        }
        if let Some(single) = delta("dblwr_single_page_flushes") {
            if w - single > 0.0 {
                out.insert("dblwr_pages_per_batch".into(), (p - single) / (w - single));
            }
        }
    }
    if let (Some(f), Some(b), Some(bs)) = (
        delta("wal_fpi"),
        delta("wal_bytes"),
        after.values.get("block_size"),
    ) {
        if b > 0.0 {
            out.insert("wal_fpi_bytes_share".into(), (f * bs / b).min(1.0));
        }
    }
    if let (Some(b), Some(f), Some(n)) = (delta("wal_bytes"), delta("wal_fpi"), delta("commits")) {
        if n > 0.0 {
            out.insert("wal_bytes_per_commit".into(), b / n);
            out.insert("wal_fpi_per_commit".into(), f / n);
        }
    }
    if let (Some(r), Some(t)) = (delta("checkpoints_req"), delta("checkpoints_timed")) {
        if r + t > 0.0 {
            out.insert("checkpoints_req_share".into(), r / (r + t));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reading(at: Instant, kv: &[(&'static str, f64)]) -> Reading {
        Reading {
            at,
            values: kv.iter().copied().collect(),
        }
    }

    #[test]
    fn rates_and_shares_between_two_readings() {
        let t0 = Instant::now();
        let b = reading(
            t0,
            &[
                ("wal_fpi", 100.0),
                ("wal_bytes", 1e6),
                ("block_size", 8192.0),
                ("checkpoints_req", 1.0),
                ("checkpoints_timed", 1.0),
                ("dblwr_writes", 10.0),
                ("dblwr_pages_written", 100.0),
                ("dblwr_single_page_flushes", 5.0),
                ("commits", 1000.0),
                ("pages_flushed_single_page", 0.0),
                ("pages_flushed_by_cleaners", 100.0),
            ],
        );
        let a = reading(
            t0 + Duration::from_secs(2),
            &[
                ("wal_fpi", 300.0),
                ("wal_bytes", 3e6),
                ("block_size", 8192.0),
                ("checkpoints_req", 4.0),
                ("checkpoints_timed", 2.0),
                ("dblwr_writes", 20.0),
                ("dblwr_pages_written", 400.0),
                ("dblwr_single_page_flushes", 9.0),
                ("commits", 1500.0),
                ("pages_flushed_single_page", 25.0),
                ("pages_flushed_by_cleaners", 175.0),
            ],
        );
        let f = facts(&b, &a);
        assert_eq!(f["wal_fpi_per_s"], 100.0);
        assert_eq!(f["wal_bytes_per_s"], 1e6);
        // 200 images of at most 8 KiB in 2 MB of WAL.
        assert!((f["wal_fpi_bytes_share"] - 200.0 * 8192.0 / 2e6).abs() < 1e-9);
        assert_eq!(f["checkpoints_req_share"], 0.75);
        assert_eq!(f["dblwr_pages_per_write"], 30.0);
        // 10 writes of 300 pages, 4 of them single pages: 6 batches of 296.
        assert!((f["dblwr_pages_per_batch"] - 296.0 / 6.0).abs() < 1e-9);
        // 2 MB of WAL and 200 images for 500 commits.
        assert_eq!(f["wal_bytes_per_commit"], 4000.0);
        assert_eq!(f["wal_fpi_per_commit"], 0.4);
        assert_eq!(f["commits_per_s"], 250.0);
        // 25 pages flushed by users, 75 by the cleaners.
        assert_eq!(f["single_page_flush_share"], 0.25);
        assert!(!f.contains_key("block_size_per_s"));
        // A counter missing from one reading is left out.
        let a2 = reading(t0 + Duration::from_secs(1), &[("wal_fpi", 5.0)]);
        assert!(!facts(&b, &a2).contains_key("wal_bytes_per_s"));
    }
}
