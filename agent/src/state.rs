//! The state file of `redoctor apply`: the value each setting had before
//! redoctor first changed it, per server socket, so `redoctor revert` can
//! restore it. Written before any change is made.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "redoctor.applied";
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub socket: String,
    pub setting: String,
    /// Value before redoctor's first change (what revert restores).
    pub original: String,
    /// Value redoctor last set.
    pub applied: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub schema: String,
    pub version: u32,
    pub entries: Vec<Entry>,
}

/// `explicit` (a `--state FILE`), else [`default_path`].
pub fn path_or_default(explicit: Option<&Path>) -> Result<PathBuf> {
    match explicit {
        Some(p) => Ok(p.to_path_buf()),
        None => default_path(),
    }
}

/// `$REDOCTOR_STATE`, else `$XDG_STATE_HOME/redoctor/applied.json`, else
/// `~/.local/state/redoctor/applied.json`.
pub fn default_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("REDOCTOR_STATE") {
        return Ok(p.into());
    }
    let base = match std::env::var_os("XDG_STATE_HOME") {
        Some(p) => PathBuf::from(p),
        None => {
            PathBuf::from(std::env::var_os("HOME").context("HOME is not set: pass --state FILE")?)
                .join(".local/state")
        }
    };
    Ok(base.join("redoctor/applied.json"))
}

impl State {
    pub fn load(path: &Path) -> Result<State> {
        if !path.exists() {
            return Ok(State {
                schema: SCHEMA.into(),
                version: VERSION,
                entries: vec![],
            });
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the state file {}", path.display()))?;
        let s: State = serde_json::from_str(&text).with_context(|| {
            format!(
                "the state file {} is not valid: remove it or pass another --state",
                path.display()
            )
        })?;
        if s.schema != SCHEMA || s.version != VERSION {
            bail!("{} is not a {SCHEMA} v{VERSION} state file", path.display());
        }
        Ok(s)
    }

    /// Writes atomically (temporary file, then rename).
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    }

    /// Records a change, keeping the first original value of a setting.
    pub fn record(&mut self, socket: &str, setting: &str, before: &str, after: &str) {
        match self
            .entries
            .iter_mut()
            .find(|e| e.socket == socket && e.setting == setting)
        {
            Some(e) => e.applied = after.to_string(),
            None => self.entries.push(Entry {
                socket: socket.into(),
                setting: setting.into(),
                original: before.into(),
                applied: after.into(),
            }),
        }
    }
}
