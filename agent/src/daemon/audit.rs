//! The audit log: every decision as one JSON line (`audit.jsonl` in the
//! state dir), written and fsync'd before the agent acts on it further,
//! rotated by size (`audit.jsonl.1` is the newest rotated file).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::journal::now_ms;

pub struct Audit {
    path: PathBuf,
    rotate_bytes: u64,
    keep: u32,
    file: Mutex<File>,
}

impl Audit {
    pub fn open(state_dir: &Path, rotate_bytes: u64, keep: u32) -> Result<Audit> {
        std::fs::create_dir_all(state_dir)
            .with_context(|| format!("creating the state directory {}", state_dir.display()))?;
        let path = state_dir.join("audit.jsonl");
        let file = open(&path)?;
        Ok(Audit {
            path,
            rotate_bytes,
            keep,
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `{"ts_unix_ms", "target", "event", ...fields}` and fsyncs it.
    /// A write failure is reported on stderr (the agent goes on: losing the
    /// daemon over its log would leave a trial half-done).
    pub fn log(&self, target: &str, event: &str, fields: Value) {
        let mut line = Map::new();
        line.insert("ts_unix_ms".into(), json!(now_ms()));
        line.insert("target".into(), json!(target));
        line.insert("event".into(), json!(event));
        if let Value::Object(m) = fields {
            line.extend(m);
        }
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = self.write(&mut f, text.as_bytes()) {
            tracing::error!("writing the audit log {}: {e:#}", self.path.display());
        }
    }

    fn write(&self, f: &mut File, bytes: &[u8]) -> Result<()> {
        if f.metadata()?.len() + bytes.len() as u64 > self.rotate_bytes {
            self.rotate()?;
            *f = open(&self.path)?;
        }
        f.write_all(bytes)?;
        f.sync_data()?;
        Ok(())
    }

    /// audit.jsonl -> .1 -> .2 ... -> .keep (dropped beyond).
    fn rotate(&self) -> Result<()> {
        let name = |i: u32| PathBuf::from(format!("{}.{i}", self.path.display()));
        let _ = std::fs::remove_file(name(self.keep));
        for i in (1..self.keep).rev() {
            if name(i).exists() {
                std::fs::rename(name(i), name(i + 1))?;
            }
        }
        std::fs::rename(&self.path, name(1))?;
        Ok(())
    }
}

fn open(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening the audit log {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_json_and_rotate_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let a = Audit::open(dir.path(), 300, 2).unwrap();
        for i in 0..20 {
            a.log("db", "advice", json!({"i": i}));
        }
        let cur = std::fs::read_to_string(a.path()).unwrap();
        for l in cur.lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["target"], "db");
            assert_eq!(v["event"], "advice");
        }
        assert!(cur.len() <= 300);
        assert!(dir.path().join("audit.jsonl.1").exists());
        assert!(dir.path().join("audit.jsonl.2").exists());
        assert!(!dir.path().join("audit.jsonl.3").exists());
        let last: Value = serde_json::from_str(cur.lines().last().unwrap()).unwrap();
        assert_eq!(last["i"], 19);
    }
}
