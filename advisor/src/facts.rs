//! `facts.*`: what is known about the target besides its signals — cores,
//! binlog on/off, the engine kind and its current settings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::summary::Summary;

/// Facts about the diagnosed server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    /// CPUs the server may use (its affinity mask).
    pub cores: u32,
    /// Binary log enabled (`log_bin`).
    pub binlog: bool,
    /// Engine kind: the probe profile name (`redoctor-engine`, `mysql8`, ...).
    pub engine: String,
    /// Current value of each known setting, as `SHOW GLOBAL VARIABLES` prints it.
    pub settings: BTreeMap<String, String>,
    /// Where each setting's value came from (`stated`, `observed`, `default`).
    pub settings_source: BTreeMap<String, String>,
    /// The user consented to durability trade-offs
    /// (`--allow-durability-changes`): rules proposing one read it.
    #[serde(default)]
    pub allow_durability: bool,
    /// The server's own counters over the observation, as rates and
    /// ratios (`wal_fpi_per_s`, `dblwr_pages_written_per_s`, ...: see
    /// `rules/README.md`); empty where the server was not asked (no
    /// admin socket) or has none of them.
    #[serde(default)]
    pub counters: BTreeMap<String, f64>,
}

/// PostgreSQL's defaults of the settings its rules read (`SHOW` spelling).
pub const POSTGRESQL_SETTINGS: &[(&str, &str)] = &[
    ("commit_delay", "0"),
    ("commit_siblings", "5"),
    ("wal_writer_delay", "200ms"),
    ("synchronous_commit", "on"),
    ("max_connections", "100"),
    ("checkpoint_timeout", "5min"),
    ("max_wal_size", "1GB"),
    ("checkpoint_completion_target", "0.9"),
    ("wal_compression", "off"),
];

/// Defaults of the settings the rules read (the bundled engine's; MySQL 8.0's
/// for the redo and concurrency settings are the same).
pub const DEFAULT_SETTINGS: &[(&str, &str)] = &[
    ("innodb_log_writer_threads", "ON"),
    ("innodb_flush_log_at_trx_commit", "1"),
    ("innodb_thread_concurrency", "0"),
    ("innodb_admission_policy", "soft"),
    ("innodb_max_active_transactions", "0"),
    ("log_bin", "OFF"),
    ("sync_binlog", "1"),
    ("innodb_buffer_pool_size", "0"),
    ("innodb_doublewrite", "ON"),
    ("innodb_doublewrite_design", "files"),
    ("innodb_doublewrite_files", "2"),
    ("innodb_doublewrite_pages", "64"),
    ("innodb_page_cleaners", "1"),
    ("replica_parallel_workers", "4"),
    ("replica_preserve_commit_order", "ON"),
    ("sync_relay_log", "10000"),
    ("replica_relay_log_arbitration", "position"),
];

/// MariaDB 10.11's defaults of the settings its rules read
/// (`rules/mariadb.toml`). MariaDB has no `innodb_log_writer_threads` (no
/// dedicated redo threads) and no `innodb_thread_concurrency` (removed in
/// 10.6); its levers are the thread pool and binlog group commit.
/// `thread_pool_size` defaults to the CPU count (filled in from `cores`).
pub const MARIADB_DEFAULT_SETTINGS: &[(&str, &str)] = &[
    ("innodb_flush_log_at_trx_commit", "1"),
    ("log_bin", "OFF"),
    ("sync_binlog", "0"),
    ("thread_handling", "one-thread-per-connection"),
    ("thread_pool_size", ""),
    ("thread_pool_max_threads", "65536"),
    ("binlog_commit_wait_count", "0"),
    ("binlog_commit_wait_usec", "100000"),
    ("slave_parallel_threads", "0"),
    ("slave_parallel_mode", "optimistic"),
];

/// The settings (and their defaults) that exist on `engine` (a profile
/// name) and that the rules read: what `diagnose --socket` reads from the
/// server.
pub fn default_settings(engine: &str) -> &'static [(&'static str, &'static str)] {
    match engine {
        "mariadb" => MARIADB_DEFAULT_SETTINGS,
        "postgresql" => POSTGRESQL_SETTINGS,
        _ => DEFAULT_SETTINGS,
    }
}

impl Facts {
    /// Facts from the signals alone: the redo mode from whether dedicated log
    /// threads ran (`log_threads`, on engines that have the setting: paused
    /// log threads stay alive at OFF, as MySQL's do), binlog from writes
    /// to binlog files, everything else at its default
    /// ([`default_settings`]); `stated` (`name=value`, e.g. from
    /// `--setting`) overrides.
    pub fn infer(engine: &str, summary: &Summary, stated: &[(String, String)]) -> Facts {
        let mut settings = BTreeMap::new();
        let mut source = BTreeMap::new();
        let get = |k: &str| summary.get(k).copied().unwrap_or(0.0);
        let cores = get("cores").max(1.0) as u32;
        let defaults = default_settings(engine);
        for (k, v) in defaults {
            let v = if *k == "thread_pool_size" && v.is_empty() {
                cores.to_string()
            } else {
                v.to_string()
            };
            settings.insert(k.to_string(), v);
            source.insert(k.to_string(), "default".to_string());
        }
        if engine == "postgresql" {
            // Only PostgreSQL's own settings: nothing InnoDB is inferred.
            for (k, v) in stated {
                settings.insert(k.clone(), v.clone());
                source.insert(k.clone(), "stated".into());
            }
            return Facts {
                cores,
                binlog: false,
                engine: engine.to_string(),
                settings,
                settings_source: source,
                allow_durability: false,
                counters: BTreeMap::new(),
            };
        }
        if defaults
            .iter()
            .any(|(k, _)| *k == "innodb_log_writer_threads")
        {
            let redo_on = get("log_threads") > 0.0;
            settings.insert(
                "innodb_log_writer_threads".into(),
                if redo_on { "ON" } else { "OFF" }.into(),
            );
            source.insert("innodb_log_writer_threads".into(), "observed".into());
        }
        if get("binlog_write_bytes_per_s") > 0.0 {
            settings.insert("log_bin".into(), "ON".into());
            source.insert("log_bin".into(), "observed".into());
        }
        for (k, v) in stated {
            settings.insert(k.clone(), normalize(v));
            source.insert(k.clone(), "stated".into());
        }
        let binlog = settings.get("log_bin").is_some_and(|v| v == "ON");
        Facts {
            cores,
            binlog,
            engine: engine.to_string(),
            settings,
            settings_source: source,
            allow_durability: false,
            counters: BTreeMap::new(),
        }
    }
}

/// A number with a unit as PostgreSQL's `SHOW` prints it (`200ms`, `8kB`),
/// scaled by its unit's factor in `units`; `None` for a bare number (its
/// unit is the setting's own, which only `pg_settings.unit` knows) or a
/// unit not listed.
fn with_unit(v: &str, units: &[(&str, f64)]) -> Option<f64> {
    let v = v.trim();
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().ok()?;
    let unit = unit.trim();
    units.iter().find(|(u, _)| *u == unit).map(|(_, f)| n * f)
}

/// A time setting (`200ms`, `1s`, `1min`; units us, ms, s, min, h, d) in
/// milliseconds.
pub fn duration_ms(v: &str) -> Option<f64> {
    const UNITS: &[(&str, f64)] = &[
        ("us", 1e-3),
        ("ms", 1.0),
        ("s", 1e3),
        ("min", 60e3),
        ("h", 3600e3),
        ("d", 86400e3),
    ];
    with_unit(v, UNITS)
}

/// A size setting (`1GB`, `80MB`, `8kB`; units B, kB, MB, GB, TB, each
/// 1024 of the one before) in bytes.
pub fn size_bytes(v: &str) -> Option<f64> {
    const K: f64 = 1024.0;
    const UNITS: &[(&str, f64)] = &[
        ("B", 1.0),
        ("kB", K),
        ("MB", K * K),
        ("GB", K * K * K),
        ("TB", K * K * K * K),
    ];
    with_unit(v, UNITS)
}

/// How a setting with a unit reads as a number.
pub type ReadUnit = fn(&str) -> Option<f64>;

/// The settings rules read as numbers with units: `facts.<name>.SETTING`,
/// and how each is read.
pub const UNIT_SETTINGS: &[(&str, ReadUnit)] =
    &[("settings_ms", duration_ms), ("settings_bytes", size_bytes)];

/// Booleans as SHOW GLOBAL VARIABLES prints them (ON/OFF); others unchanged.
pub fn normalize(v: &str) -> String {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" if is_boolish(v) => "ON".into(),
        "off" | "false" | "0" if is_boolish(v) => "OFF".into(),
        _ => v.to_string(),
    }
}

fn is_boolish(v: &str) -> bool {
    !v.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::{duration_ms, size_bytes};

    #[test]
    fn postgres_size_settings_read_in_bytes() {
        assert_eq!(size_bytes("1GB"), Some(1073741824.0));
        assert_eq!(size_bytes("80MB"), Some(83886080.0));
        assert_eq!(size_bytes("8kB"), Some(8192.0));
        assert_eq!(size_bytes("16B"), Some(16.0));
        assert_eq!(size_bytes("1TB"), Some(1099511627776.0));
        assert_eq!(size_bytes("128"), None);
        assert_eq!(size_bytes("1min"), None);
        assert_eq!(size_bytes("off"), None);
    }

    #[test]
    fn postgres_time_settings_read_in_milliseconds() {
        assert_eq!(duration_ms("200ms"), Some(200.0));
        assert_eq!(duration_ms("1s"), Some(1000.0));
        assert_eq!(duration_ms("1min"), Some(60000.0));
        assert_eq!(duration_ms("500us"), Some(0.5));
        assert_eq!(duration_ms("0"), None);
        assert_eq!(duration_ms("ON"), None);
        assert_eq!(duration_ms("8MB"), None);
    }
}
