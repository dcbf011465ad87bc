//! The admin surface: `SET GLOBAL`, `SHOW GLOBAL VARIABLES/STATUS`, `SELECT @@name`.
//!
//! The SQL layer talks to a small [`Settings`] trait; [`EngineSettings`]
//! implements it with the engine's settings registry, which validates,
//! applies and records each change. A refused value returns an error and
//! changes nothing.

use std::sync::Arc;

use crate::engine::Engine;
use crate::settings::SettingsError;

/// Why a `SET GLOBAL` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    /// No such variable (MySQL error 1193).
    #[error("{0}")]
    Unknown(String),
    /// The value is refused or could not be applied (1231).
    #[error("{0}")]
    BadValue(String),
    /// The variable cannot be changed while running (1238).
    #[error("{0}")]
    ReadOnly(String),
}

/// A registry of global settings and status counters.
pub trait Settings: Send + Sync {
    /// Applies `SET GLOBAL name = value` (`value` as the client wrote it,
    /// e.g. `OFF`, `2`). On error nothing was changed.
    fn set_global(&self, name: &str, value: &str) -> Result<(), SettingError>;
    /// Every global variable with its current value.
    fn variables(&self) -> Vec<(String, String)>;
    /// Every status counter.
    fn global_status(&self) -> Vec<(String, u64)>;
}

/// [`Settings`] over the engine's settings registry (`Engine::set_global`,
/// `Engine::variables`, `Engine::global_status`).
pub struct EngineSettings(pub Arc<Engine>);

impl Settings for EngineSettings {
    fn set_global(&self, name: &str, value: &str) -> Result<(), SettingError> {
        self.0.set_global(name, value).map_err(|e| match e {
            SettingsError::Unknown { .. } => SettingError::Unknown(e.to_string()),
            SettingsError::ReadOnly { .. } => SettingError::ReadOnly(e.to_string()),
            SettingsError::InvalidValue { .. } | SettingsError::Apply { .. } => {
                SettingError::BadValue(e.to_string())
            }
        })
    }

    fn variables(&self) -> Vec<(String, String)> {
        self.0
            .variables()
            .into_iter()
            .map(|v| (v.name, v.value))
            .collect()
    }

    fn global_status(&self) -> Vec<(String, u64)> {
        self.0.global_status()
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
