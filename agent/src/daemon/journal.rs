//! Per-target durable state (`targets/<name>.json` in the state dir): the
//! trial in progress, if any, and the kept changes. A trial is written here
//! (fsync'd, atomically) before its candidate is applied and cleared after
//! its outcome is settled, so a crash or `kill -9` in between leaves the
//! record that the next start uses to restore the baseline before anything
//! else ([`super::reconcile`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use redoctor_advisor::experiment::Settings;
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "redoctor.agent.journal";
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenTrial {
    /// The admin socket the candidate was applied through.
    pub socket: String,
    pub user: String,
    /// What to restore.
    pub baseline: Settings,
    pub candidate: Settings,
    pub started_unix_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptChange {
    pub at_unix_ms: u64,
    pub before: Settings,
    pub after: Settings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub schema: String,
    pub version: u32,
    pub target: String,
    pub open_trial: Option<OpenTrial>,
    /// Kept changes of the last days (older ones are dropped on save).
    pub changes: Vec<KeptChange>,
}

/// Kept changes older than this are forgotten (the daily budget looks back 24 h).
const KEEP_MS: u64 = 7 * 24 * 3600 * 1000;

pub fn path(state_dir: &Path, target: &str) -> PathBuf {
    state_dir.join("targets").join(format!("{target}.json"))
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Journal {
    pub fn empty(target: &str) -> Journal {
        Journal {
            schema: SCHEMA.into(),
            version: VERSION,
            target: target.into(),
            open_trial: None,
            changes: vec![],
        }
    }

    /// The journal at `p`, or an empty one when there is none.
    pub fn load(p: &Path, target: &str) -> Result<Journal> {
        if !p.exists() {
            return Ok(Journal::empty(target));
        }
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        let j: Journal = serde_json::from_str(&text).with_context(|| {
            format!(
                "the journal {} is not valid JSON of {SCHEMA}: inspect it (it may record a trial to undo by hand), then move it away",
                p.display()
            )
        })?;
        if j.schema != SCHEMA || j.version != VERSION {
            bail!(
                "{} is {} v{}, not {SCHEMA} v{VERSION}",
                p.display(),
                j.schema,
                j.version
            );
        }
        Ok(j)
    }

    /// Writes atomically and durably (temporary file fsync'd, renamed).
    pub fn save(&mut self, p: &Path) -> Result<()> {
        let cutoff = now_ms().saturating_sub(KEEP_MS);
        self.changes.retain(|c| c.at_unix_ms >= cutoff);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let bytes = serde_json::to_vec_pretty(self)?;
        // Durable once written: the directory is fsync'd after the rename.
        redoctor_files::write_atomic(p, &bytes)
            .with_context(|| format!("writing the journal {}", p.display()))
    }

    /// When `setting` last changed (kept), if ever.
    pub fn last_change_of(&self, setting: &str) -> Option<u64> {
        self.changes
            .iter()
            .filter(|c| c.after.contains_key(setting))
            .map(|c| c.at_unix_ms)
            .max()
    }

    pub fn last_change(&self) -> Option<u64> {
        self.changes.iter().map(|c| c.at_unix_ms).max()
    }

    /// Kept changes in the 24 hours before `now`.
    pub fn changes_in_day(&self, now: u64) -> usize {
        let from = now.saturating_sub(24 * 3600 * 1000);
        self.changes.iter().filter(|c| c.at_unix_ms > from).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_another_schema() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), "db");
        let mut j = Journal::empty("db");
        j.open_trial = Some(OpenTrial {
            socket: "/s".into(),
            user: "root".into(),
            baseline: Settings::from([("a".into(), "1".into())]),
            candidate: Settings::from([("a".into(), "2".into())]),
            started_unix_ms: 5,
        });
        j.save(&p).unwrap();
        assert_eq!(Journal::load(&p, "db").unwrap(), j);
        std::fs::write(&p, b"{\"schema\":\"x\",\"version\":1,\"target\":\"db\",\"open_trial\":null,\"changes\":[]}").unwrap();
        assert!(Journal::load(&p, "db").is_err());
        std::fs::write(&p, b"{").unwrap();
        let e = format!("{:#}", Journal::load(&p, "db").unwrap_err());
        assert!(e.contains("move it away"), "{e}");
    }
}
