//! The engine's settings: one row each of the registry's table (see
//! [`Setting`]), read from and applied to the [`Engine`], or to its
//! [`EngineOptions`] before it is built.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::{Engine, EngineOptions};
use crate::admission::Policy;
use crate::page_store::doublewrite::{Design, DoublewriteMode};
use crate::paged_tables;
use crate::redo::RedoMode;
use crate::replica_settings::{Arbitration, ARBITRATION_NAMES, MAX_WORKERS};
use crate::settings::{Kind, Setting, SettingsError, Value};

/// Turns an engine error from a setter into a refusal naming the setting.
fn failed(name: &'static str) -> impl FnOnce(crate::EngineError) -> SettingsError {
    move |e| SettingsError::Apply {
        name,
        reason: e.to_string(),
    }
}

const U32_MAX: u64 = u32::MAX as u64;

pub static SETTINGS: &[Setting<Engine, EngineOptions>] = &[
    Setting {
        name: "innodb_log_writer_threads",
        kind: Kind::Bool,
        default: "ON",
        doc: "Dedicated log writer/flusher/notifier threads (ON, RT1) or user threads write and flush the redo log themselves (OFF, RT0).",
        get: |e| Value::Bool(e.redo().mode() == RedoMode::On),
        set: Some(|e, v| {
            let mode = if v.as_bool() { RedoMode::On } else { RedoMode::Off };
            e.check_open().map_err(failed("innodb_log_writer_threads"))?;
            e.redo().set_mode(mode);
            Ok(())
        }),
        at_startup: Some(|o, v| {
            o.redo.mode = if v.as_bool() { RedoMode::On } else { RedoMode::Off };
        }),
    },
    Setting {
        name: "redoctor_log_idle_self_write",
        kind: Kind::Bool,
        default: "OFF",
        doc: "Not a MySQL setting. With dedicated log threads, a committer that finds the log idle writes and fdatasyncs its own record instead of waking the log threads (RT1 under load, RT0's one-commit latency when idle).",
        get: |e| Value::Bool(e.redo().idle_self_write()),
        set: Some(|e, v| {
            e.redo().set_idle_self_write(v.as_bool());
            Ok(())
        }),
        at_startup: Some(|o, v| o.redo.idle_self_write = v.as_bool()),
    },
    Setting {
        name: "innodb_flush_log_at_trx_commit",
        kind: Kind::UInt { min: 0, max: 2, unit: "" },
        default: "1",
        doc: "At commit: 1 = wait until the redo is durable, 2 = until written to the OS, 0 = do not wait (flushed once a second).",
        get: |e| Value::UInt(e.redo().flush_at_commit() as u64),
        set: Some(|e, v| {
            e.redo()
                .set_flush_at_commit(v.as_u64() as u8)
                .map_err(|err| failed("innodb_flush_log_at_trx_commit")(err.into()))
        }),
        at_startup: Some(|o, v| o.redo.flush_at_commit = v.as_u64() as u8),
    },
    Setting {
        name: "innodb_log_spin_cpu_pct_hwm",
        kind: Kind::UInt { min: 0, max: 100, unit: "percent of usable CPUs" },
        default: "50",
        doc: "Committers spin while waiting for the redo only while the process uses less CPU than this.",
        get: |e| Value::UInt(e.redo().spin.cpu_pct_hwm.load(Relaxed) as u64),
        set: Some(|e, v| {
            e.redo().spin.cpu_pct_hwm.store(v.as_u64() as u32, Relaxed);
            Ok(())
        }),
        at_startup: Some(|o, v| o.redo.spin_cpu_pct_hwm = v.as_u64() as u32),
    },
    Setting {
        name: "innodb_log_wait_for_flush_spin_hwm",
        kind: Kind::UInt { min: 0, max: U32_MAX, unit: "microseconds" },
        default: "400",
        doc: "Committers spin while waiting for a flush only while the average fdatasync is shorter than this.",
        get: |e| Value::UInt(e.redo().spin.flush_spin_hwm_us.load(Relaxed)),
        set: Some(|e, v| {
            e.redo().spin.flush_spin_hwm_us.store(v.as_u64(), Relaxed);
            Ok(())
        }),
        at_startup: Some(|o, v| o.redo.wait_for_flush_spin_hwm_us = v.as_u64()),
    },
    Setting {
        name: "redoctor_spin_gate_window_ms",
        kind: Kind::UInt { min: 10, max: 1000, unit: "milliseconds" },
        default: "50",
        doc: "Not a MySQL setting. How often the spin gate re-reads the process's CPU use (each reading covers this window); also how long the gate takes to answer a change in CPU use.",
        get: |e| Value::UInt(e.redo().spin.window_ms.load(Relaxed).into()),
        set: Some(|e, v| {
            e.redo().spin.window_ms.store(v.as_u64() as u32, Relaxed);
            Ok(())
        }),
        at_startup: Some(|o, v| o.redo.spin_gate_window_ms = v.as_u64() as u32),
    },
    Setting {
        name: "redoctor_spin_min_success_pct",
        kind: Kind::UInt { min: 0, max: 100, unit: "percent of spins" },
        default: "5",
        doc: "Not a MySQL setting. Committers spin only while at least this share of recent spins ended with the redo durable (one wait in 16 spins anyway, to keep measuring); 0 leaves spinning to the two MySQL high-water marks.",
        get: |e| Value::UInt(e.redo().spin.min_success_pct.load(Relaxed).into()),
        set: Some(|e, v| {
            e.redo().spin.min_success_pct.store(v.as_u64() as u32, Relaxed);
            Ok(())
        }),
        at_startup: Some(|o, v| o.redo.spin_min_success_pct = v.as_u64() as u32),
    },
    Setting {
        name: "innodb_lock_wait_timeout",
        kind: Kind::UInt { min: 1, max: 1_073_741_824, unit: "seconds" },
        default: "50",
        doc: "How long a row-lock wait lasts before the transaction is rolled back with a lock wait timeout; applies to waits that start afterwards.",
        get: |e| Value::UInt(e.lock_wait_timeout().as_secs()),
        set: Some(|e, v| {
            e.set_lock_wait_timeout(Duration::from_secs(v.as_u64()));
            Ok(())
        }),
        at_startup: Some(|o, v| o.lock_wait_timeout = Duration::from_secs(v.as_u64())),
    },
    Setting {
        name: "innodb_thread_concurrency",
        kind: Kind::UInt { min: 0, max: 1000, unit: "threads; 0 = unlimited" },
        default: "0",
        doc: "Most threads working inside the engine at once (each statement and each commit enters); row-lock waiters do not count.",
        get: |e| Value::UInt(e.concurrency_gate().cap() as u64),
        set: Some(|e, v| {
            e.concurrency_gate().set_cap(v.as_u64() as usize);
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "innodb_concurrency_tickets",
        kind: Kind::UInt { min: 1, max: U32_MAX, unit: "statements" },
        default: "5000",
        doc: "Statements a transaction may run after passing the concurrency gate before it must pass it again; it keeps its slot meanwhile.",
        get: |e| Value::UInt(e.concurrency_gate().tickets() as u64),
        set: Some(|e, v| {
            e.concurrency_gate().set_tickets(v.as_u64() as u32);
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "innodb_thread_sleep_delay",
        kind: Kind::UInt { min: 0, max: 1_000_000, unit: "microseconds" },
        default: "10000",
        doc: "How long the soft admission policy sleeps between tries at a full gate (twice at most).",
        get: |e| Value::UInt(e.concurrency_gate().sleep_delay_us()),
        set: Some(|e, v| {
            e.concurrency_gate().set_sleep_delay_us(v.as_u64());
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "innodb_admission_policy",
        kind: Kind::Enum(&["soft", "fifo"]),
        default: "soft",
        doc: "How threads wait at a full concurrency gate: soft (no queue: yield, sleep twice, enter regardless; MySQL 5.4's policy, the old spelling seed001 is accepted) or fifo (queue, one waiter woken per exit; hard cap).",
        get: |e| Value::Enum(e.concurrency_gate().policy().name()),
        set: Some(|e, v| {
            let p = if v.as_str() == "fifo" { Policy::Fifo } else { Policy::Soft };
            e.concurrency_gate().set_policy(p);
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "innodb_max_active_transactions",
        kind: Kind::UInt { min: 0, max: 1_000_000, unit: "transactions; 0 = unlimited" },
        default: "0",
        doc: "Transaction throttle: a transaction starts only while fewer than this many are active; others queue (FIFO), one admitted per finish.",
        get: |e| Value::UInt(e.throttle().limit()),
        set: Some(|e, v| {
            e.throttle().set_limit(v.as_u64());
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "innodb_max_active_transactions_wait_timeout",
        kind: Kind::UInt { min: 1, max: 3_600_000, unit: "milliseconds" },
        default: "50000",
        doc: "How long a transaction waits in the throttle queue before it fails with a throttle timeout; applies to waits that start afterwards.",
        get: |e| Value::UInt(e.throttle().timeout().as_millis() as u64),
        set: Some(|e, v| {
            e.throttle().set_timeout(Duration::from_millis(v.as_u64()));
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "log_bin",
        kind: Kind::Bool,
        default: "OFF",
        doc: "Binary log with two-phase commit and ordered FLUSH/SYNC/COMMIT group commit; fixed at startup.",
        get: |e| Value::Bool(e.log_bin()),
        set: None,
        at_startup: Some(|o, v| o.log_bin = v.as_bool()),
    },
    Setting {
        name: "sync_binlog",
        kind: Kind::UInt { min: 0, max: U32_MAX, unit: "commit groups; 0 = never" },
        default: "1",
        doc: "fdatasync the binlog after every N commit groups (1 = every group, crash-safe with innodb_flush_log_at_trx_commit=1).",
        get: |e| Value::UInt(e.binlog_settings().sync_binlog() as u64),
        set: Some(|e, v| {
            e.check_open().map_err(failed("sync_binlog"))?;
            e.binlog_settings().set_sync_binlog(v.as_u64() as u32);
            Ok(())
        }),
        at_startup: Some(|o, v| o.sync_binlog = v.as_u64() as u32),
    },
    Setting {
        name: "binlog_group_commit_sync_delay",
        kind: Kind::UInt { min: 0, max: 1_000_000, unit: "microseconds" },
        default: "0",
        doc: "Wait this long before the binlog fdatasync so more transactions join the group.",
        get: |e| Value::UInt(e.binlog_settings().sync_delay_us()),
        set: Some(|e, v| {
            e.check_open()
                .map_err(failed("binlog_group_commit_sync_delay"))?;
            e.binlog_settings()
                .set_sync_delay_us(v.as_u64())
                .map_err(|err| failed("binlog_group_commit_sync_delay")(err.into()))
        }),
        at_startup: Some(|o, v| o.binlog_group_commit_sync_delay_us = v.as_u64()),
    },
    Setting {
        name: "replica_parallel_workers",
        kind: Kind::UInt { min: 0, max: MAX_WORKERS, unit: "worker threads; 0 = the applier applies alone" },
        default: "4",
        doc: "A replica's applier hands whole transactions to this many workers, scheduled by the source's commit groups (LOGICAL_CLOCK). Live: a running applier drains its workers and starts the new count (MySQL needs STOP/START REPLICA SQL_THREAD).",
        get: |e| Value::UInt(e.replica_settings().parallel_workers() as u64),
        set: Some(|e, v| {
            e.replica_settings().set_parallel_workers(v.as_u64() as u32);
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "replica_preserve_commit_order",
        kind: Kind::Bool,
        default: "ON",
        doc: "Workers commit in the source's commit order (a worker waits for its predecessors before it commits). Live.",
        get: |e| Value::Bool(e.replica_settings().preserve_commit_order()),
        set: Some(|e, v| {
            e.replica_settings().set_preserve_commit_order(v.as_bool());
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "sync_relay_log",
        kind: Kind::UInt { min: 0, max: U32_MAX, unit: "transactions; 0 = never" },
        default: "10000",
        doc: "The replica's receiver fdatasyncs the relay log after every N queued transactions.",
        get: |e| Value::UInt(e.replica_settings().sync_relay_log() as u64),
        set: Some(|e, v| {
            e.replica_settings().set_sync_relay_log(v.as_u64() as u32);
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "relay_log_space_limit",
        kind: Kind::UInt { min: 0, max: 1 << 50, unit: "bytes; 0 = no limit" },
        default: "0",
        doc: "The receiver stops fetching while the relay log holds this many bytes the applier has not purged.",
        get: |e| Value::UInt(e.replica_settings().relay_log_space_limit()),
        set: Some(|e, v| {
            e.replica_settings().set_relay_log_space_limit(v.as_u64());
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "replica_relay_log_arbitration",
        kind: Kind::Enum(ARBITRATION_NAMES),
        default: "position",
        doc: "Not a MySQL setting. How a replica's receiver and applier share the hot relay log: lock (before MySQL 8.0.1: the relay log's lock for every write and read) or position (8.0.1: the applier reads up to the last fully queued position without the lock). Live.",
        get: |e| Value::Enum(e.replica_settings().arbitration().name()),
        set: Some(|e, v| {
            let a = Arbitration::parse(v.as_str()).unwrap_or_default();
            e.replica_settings().set_arbitration(a);
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "log_replica_updates",
        kind: Kind::Bool,
        default: "ON",
        doc: "A replica with log_bin=ON writes the transactions it applies to its own binlog (so it can be a source too). Fixed at startup.",
        get: |e| Value::Bool(e.replica_settings().log_replica_updates),
        set: None,
        at_startup: Some(|o, v| o.log_replica_updates = v.as_bool()),
    },
    Setting {
        name: "innodb_buffer_pool_size",
        kind: Kind::UInt { min: 0, max: 1 << 40, unit: "bytes; 0 = tables in memory" },
        default: "0",
        doc: "Tables keep their committed rows on 16 KiB pages in tablespace files, cached in a buffer pool of this many bytes (page cleaners, doublewrite buffer, fuzzy checkpoints); 0 (the engine's default, unlike MySQL's 128M) keeps them in memory with checkpoint images. Fixed at startup, and for the life of a data directory.",
        get: |e| Value::UInt(e.page_settings().pool_bytes),
        set: None,
        at_startup: Some(|o, v| o.pages.pool_bytes = v.as_u64()),
    },
    Setting {
        name: "innodb_page_size",
        kind: Kind::UInt { min: 4096, max: 65536, unit: "bytes, a power of two" },
        default: "16384",
        doc: "Page size of tables on pages; fixed at startup.",
        get: |e| Value::UInt(e.page_settings().page_size),
        set: None,
        at_startup: Some(|o, v| o.pages.page_size = v.as_u64()),
    },
    Setting {
        name: "innodb_doublewrite",
        kind: Kind::Enum(paged_tables::DOUBLEWRITE_MODES),
        default: "ON",
        doc: "Pages are written to the doublewrite buffer (synced) before their place, so a torn page is restored at recovery (ON); OFF writes none (a torn page is detected and refused); DETECT_ONLY writes only each page's header (torn pages named, not restored). Fixed at startup.",
        get: |e| Value::Enum(e.page_settings().doublewrite.mode.name()),
        set: None,
        at_startup: Some(|o, v| {
            o.pages.doublewrite.mode = DoublewriteMode::parse(v.as_str()).unwrap_or_default();
        }),
    },
    Setting {
        name: "innodb_doublewrite_design",
        kind: Kind::Enum(&["legacy", "files"]),
        default: "files",
        doc: "Not a MySQL setting. The doublewrite buffer before MySQL 8.0.20 (legacy: one 128-page area, one mutex, 8 single-page slots) or as 8.0.20 (files: own files, a segment per batch, no global mutex). Fixed at startup.",
        get: |e| Value::Enum(e.page_settings().doublewrite.design.name()),
        set: None,
        at_startup: Some(|o, v| {
            o.pages.doublewrite.design = Design::parse(v.as_str()).unwrap_or_default();
        }),
    },
    Setting {
        name: "innodb_doublewrite_files",
        kind: Kind::UInt { min: 2, max: 256, unit: "files, even" },
        default: "2",
        doc: "Doublewrite files of the files design (flush-list and LRU batches in pairs). Fixed at startup.",
        get: |e| Value::UInt(u64::from(e.page_settings().doublewrite.files)),
        set: None,
        at_startup: Some(|o, v| o.pages.doublewrite.files = v.as_u64() as u32),
    },
    Setting {
        name: "innodb_doublewrite_pages",
        kind: Kind::UInt { min: 1, max: 512, unit: "pages" },
        default: "64",
        doc: "Pages of one batch segment of the files design. Fixed at startup.",
        get: |e| Value::UInt(u64::from(e.page_settings().doublewrite.pages)),
        set: None,
        at_startup: Some(|o, v| o.pages.doublewrite.pages = v.as_u64() as u32),
    },
    Setting {
        name: "innodb_doublewrite_dir",
        kind: Kind::Path,
        default: "",
        doc: "Where the doublewrite buffer's files go (both designs); empty: the data directory. A directory on another device takes the copies' writes and syncs off the data's. Recovery reads the copies here: start a directory with the value it crashed with. Fixed at startup.",
        get: |e| {
            Value::Text(
                e.page_settings()
                    .doublewrite_dir
                    .as_ref()
                    .map_or("".into(), |d| d.display().to_string().into()),
            )
        },
        set: None,
        at_startup: Some(|o, v| {
            let t = v.as_str();
            o.pages.doublewrite_dir = (!t.is_empty()).then(|| std::path::PathBuf::from(t));
        }),
    },
    Setting {
        name: "innodb_page_cleaners",
        kind: Kind::UInt { min: 1, max: 64, unit: "threads" },
        default: "1",
        doc: "Page cleaner threads (page_cleaner/N): write dirty pages from the LRU tail and the flush list. Fixed at startup.",
        get: |e| Value::UInt(e.page_settings().page_cleaners),
        set: None,
        at_startup: Some(|o, v| o.pages.page_cleaners = v.as_u64()),
    },
    Setting {
        name: "innodb_io_capacity",
        kind: Kind::UInt { min: 100, max: U32_MAX, unit: "pages/s" },
        default: "200",
        doc: "Pages a second the page cleaners' flush-list batches aim at (four times that above 90% dirty pages). Fixed at startup here.",
        get: |e| Value::UInt(e.page_settings().io_capacity),
        set: None,
        at_startup: Some(|o, v| o.pages.io_capacity = v.as_u64()),
    },
    Setting {
        name: "innodb_lru_scan_depth",
        kind: Kind::UInt { min: 100, max: U32_MAX, unit: "pages" },
        default: "1024",
        doc: "Pages an LRU batch looks at, and the free pages the page cleaners keep. Fixed at startup here.",
        get: |e| Value::UInt(e.page_settings().lru_scan_depth),
        set: None,
        at_startup: Some(|o, v| o.pages.lru_scan_depth = v.as_u64()),
    },
    Setting {
        name: "redoctor_device_sync_latency_us",
        kind: Kind::UInt { min: 0, max: 1_000_000, unit: "microseconds" },
        default: "0",
        doc: "Not a MySQL setting; for benches. Models a storage device with this latency per sync and no limit on syncs in flight: every fdatasync in the data and doublewrite directories (redo, binlog, tablespaces, doublewrite copies) and every directory sync does the real one, then waits this long. Put the data on tmpfs to measure on that device alone. 0: off. Fixed at startup.",
        get: |e| Value::UInt(e.device_sync_latency().as_micros() as u64),
        set: None,
        at_startup: Some(|o, v| o.device_sync_latency = std::time::Duration::from_micros(v.as_u64())),
    },
    Setting {
        name: "redoctor_debug_commit_extra_hop",
        kind: Kind::Bool,
        default: "OFF",
        doc: "Debug (a regression on purpose, for performance-gate tests): every commit takes one more notifier hand-off each way after it is durable.",
        get: |e| Value::Bool(e.debug_hooks().extra_hop()),
        set: Some(|e, v| {
            e.debug_hooks()
                .set_extra_hop(v.as_u64() == 1)
                .map_err(|err| SettingsError::Apply {
                    name: "redoctor_debug_commit_extra_hop",
                    reason: format!("cannot start the relay thread: {err}"),
                })
        }),
        at_startup: None,
    },
    Setting {
        name: "redoctor_debug_commit_sleep_us",
        kind: Kind::UInt { min: 0, max: crate::debug_hooks::MAX_SLEEP_US, unit: "microseconds" },
        default: "0",
        doc: "Debug (a regression on purpose, for performance-gate tests): every commit sleeps this long after it is durable.",
        get: |e| Value::UInt(e.debug_hooks().sleep_us()),
        set: Some(|e, v| {
            e.debug_hooks().set_sleep_us(v.as_u64());
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "redoctor_debug_commit_spin_ns",
        kind: Kind::UInt { min: 0, max: crate::debug_hooks::MAX_SPIN_NS, unit: "nanoseconds" },
        default: "0",
        doc: "Debug (a known slowdown, to calibrate a live trial's meter): every commit spins on the CPU this long after it is durable.",
        get: |e| Value::UInt(e.debug_hooks().spin_ns()),
        set: Some(|e, v| {
            e.debug_hooks().set_spin_ns(v.as_u64());
            Ok(())
        }),
        at_startup: None,
    },
    Setting {
        name: "redoctor_device_sync_serial",
        kind: Kind::Bool,
        default: "OFF",
        doc: "Not a MySQL setting; for benches, with redoctor_device_sync_latency_us: ON models a device that serves one sync at a time (a single queue shared by the data and doublewrite directories), so syncs in flight wait for each other; OFF, any number at once. Fixed at startup.",
        get: |e| Value::Bool(e.device_sync_serial()),
        set: None,
        at_startup: Some(|o, v| o.device_sync_serial = v.as_u64() == 1),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for s in SETTINGS {
            assert!(s.kind.parse(s.default).is_some(), "{} default", s.name);
            assert!(
                names.insert(s.name.to_ascii_lowercase()),
                "{} twice",
                s.name
            );
            assert!(!s.doc.is_empty());
        }
    }
}
