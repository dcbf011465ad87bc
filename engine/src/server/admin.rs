//! The admin surface: `SET GLOBAL`, `SHOW GLOBAL VARIABLES/STATUS`, `SELECT @@name`.
//!
//! The SQL layer talks to a [`Settings`] registry so the same statements
//! serve the bundled engine (through [`EngineSettings`], which applies each
//! setting with the engine's own setter) and any registry implemented later.
//! A refused value returns an error and changes nothing.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::Engine;
use crate::redo::RedoMode;

/// Why a `SET GLOBAL` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("Unknown system variable '{0}'")]
    Unknown(String),
    #[error("Variable '{name}' can't be set to the value of '{value}': {why}")]
    BadValue {
        name: String,
        value: String,
        why: String,
    },
}

/// A registry of global settings and status counters.
pub trait Settings: Send + Sync {
    /// Applies `SET GLOBAL name = value` (`value` as the client wrote it,
    /// e.g. `OFF`, `2`). On error nothing was changed.
    fn set_global(&self, name: &str, value: &str) -> Result<(), SettingError>;
    /// Every global variable with its current value, sorted by name.
    fn variables(&self) -> Vec<(String, String)>;
    /// Every status counter, sorted by name.
    fn global_status(&self) -> Vec<(String, u64)>;
}

/// [`Settings`] over the bundled engine's setters and counters.
pub struct EngineSettings(pub Arc<Engine>);

fn on_off(v: bool) -> &'static str {
    if v {
        "ON"
    } else {
        "OFF"
    }
}

fn parse_u64(name: &str, value: &str, max: u64) -> Result<u64, SettingError> {
    match value.parse::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(SettingError::BadValue {
            name: name.into(),
            value: value.into(),
            why: format!("expected an integer in 0..={max}"),
        }),
    }
}

impl Settings for EngineSettings {
    fn set_global(&self, name: &str, value: &str) -> Result<(), SettingError> {
        let e = &self.0;
        let bad = |why: String| SettingError::BadValue {
            name: name.into(),
            value: value.into(),
            why,
        };
        match name.to_ascii_lowercase().as_str() {
            "innodb_log_writer_threads" => {
                let mode: RedoMode = value.parse().map_err(bad)?;
                e.set_redo_mode(mode).map_err(|x| bad(x.to_string()))
            }
            "innodb_flush_log_at_trx_commit" => {
                let v = parse_u64(name, value, 2)?;
                e.set_flush_at_commit(v as u8)
                    .map_err(|x| bad(x.to_string()))
            }
            "innodb_log_spin_cpu_pct_hwm" => {
                let v = parse_u64(name, value, 100)?;
                e.set_log_spin_cpu_pct_hwm(v as u32)
                    .map_err(|x| bad(x.to_string()))
            }
            "innodb_log_wait_for_flush_spin_hwm" => {
                let v = parse_u64(name, value, u32::MAX as u64)?;
                e.set_log_wait_for_flush_spin_hwm(v);
                Ok(())
            }
            "innodb_lock_wait_timeout" => {
                let v = parse_u64(name, value, 1_073_741_824)?;
                if v == 0 {
                    return Err(bad("expected an integer in 1..=1073741824 (seconds)".into()));
                }
                e.set_lock_wait_timeout(Duration::from_secs(v));
                Ok(())
            }
            _ => Err(SettingError::Unknown(name.into())),
        }
    }

    fn variables(&self) -> Vec<(String, String)> {
        let e = &self.0;
        let redo = e.redo();
        let mut v = vec![
            (
                "innodb_flush_log_at_trx_commit".to_string(),
                redo.flush_at_commit().to_string(),
            ),
            (
                "innodb_lock_wait_timeout".into(),
                e.lock_wait_timeout().as_secs().to_string(),
            ),
            (
                "innodb_log_spin_cpu_pct_hwm".into(),
                redo.spin.cpu_pct_hwm.load(Ordering::Relaxed).to_string(),
            ),
            (
                "innodb_log_wait_for_flush_spin_hwm".into(),
                redo.spin
                    .flush_spin_hwm_us
                    .load(Ordering::Relaxed)
                    .to_string(),
            ),
            (
                "innodb_log_writer_threads".into(),
                on_off(redo.mode() == RedoMode::On).into(),
            ),
        ];
        v.sort();
        v
    }

    fn global_status(&self) -> Vec<(String, u64)> {
        let s = self.0.status();
        let json = serde_json::to_value(&s.counters).expect("counters serialise");
        let mut v: Vec<(String, u64)> = json
            .as_object()
            .expect("counters are a struct")
            .iter()
            .map(|(k, v)| (format!("Redoctor_{k}"), v.as_u64().unwrap_or(0)))
            .collect();
        v.extend([
            ("Redoctor_lsn".to_string(), s.lsn),
            ("Redoctor_write_lsn".into(), s.write_lsn),
            ("Redoctor_flushed_lsn".into(), s.flushed_lsn),
            ("Redoctor_checkpoint_lsn".into(), s.checkpoint_lsn),
        ]);
        v.sort();
        v
    }
}

/// SQL `LIKE` (`%`, `_`, `\` escape), case-insensitive as MySQL matches
/// variable names.
pub fn like(pattern: &str, s: &str) -> bool {
    fn go(p: &[char], s: &[char]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some(('%', rest)) => (0..=s.len()).any(|i| go(rest, &s[i..])),
            Some(('_', rest)) => !s.is_empty() && go(rest, &s[1..]),
            Some(('\\', rest)) if !rest.is_empty() => {
                !s.is_empty() && s[0] == rest[0] && go(&rest[1..], &s[1..])
            }
            Some((c, rest)) => !s.is_empty() && s[0] == *c && go(rest, &s[1..]),
        }
    }
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let s: Vec<char> = s.to_lowercase().chars().collect();
    go(&p, &s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_as_mysql_does() {
        assert!(like("innodb%", "InnoDB_log_writer_threads"));
        assert!(like("%log\\_writer%", "innodb_log_writer_threads"));
        assert!(!like("%log\\_writer%", "innodb_logXwriter_threads"));
        assert!(like("a_c", "abc"));
        assert!(!like("a_c", "ac"));
        assert!(like("%", ""));
        assert!(!like("x", "xy"));
    }
}
