//! The host's calibration file: the points `redoctor calibrate` measured on
//! this host, the constants fitted to them and the host they describe.
//! Written atomically (temporary file, fsync, rename), read with its schema
//! and version checked.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fit::{fit, CalibrationPoint, Fitted};
use super::mechanics::REVISION;
use super::ModelError;

pub const SCHEMA: &str = "redoctor.calibration";
/// Bump on any incompatible change of [`Calibration`].
pub const VERSION: u32 = 1;
/// Environment variable naming the directory of redoctor's state files.
pub const STATE_DIR_ENV: &str = "REDOCTOR_STATE_DIR";

/// What the calibration was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    /// CPUs online on the host.
    pub cpus_online: u32,
    /// CPUs the calibration runs were bound to.
    pub cores: u32,
    /// The directory the engine's data lived in during calibration (the
    /// storage whose fsync it measured).
    pub storage: String,
    /// Median redo fsync latency seen during calibration, µs.
    pub fsync_us: f64,
}

/// A host's calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub schema: String,
    pub version: u32,
    /// When it was measured, seconds since the Unix epoch.
    pub created_unix_s: u64,
    pub host: HostFacts,
    /// The `redoctor` version that measured it.
    pub tool_version: String,
    /// Every measured point (kept so a later version can refit).
    pub points: Vec<CalibrationPoint>,
    pub fitted: Fitted,
}

impl Calibration {
    pub fn new(host: HostFacts, points: Vec<CalibrationPoint>, fitted: Fitted) -> Calibration {
        Calibration {
            schema: SCHEMA.into(),
            version: VERSION,
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            host,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            points,
            fitted,
        }
    }

    /// Reads and checks a calibration file.
    pub fn load(path: &Path) -> Result<Calibration, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let bad = |reason: String| ModelError::Calibration {
            path: path.to_path_buf(),
            reason,
        };
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
            return Err(bad(format!("not a {SCHEMA} file (field `schema`)")));
        }
        let ver = v.get("version").and_then(|s| s.as_u64());
        if ver != Some(u64::from(VERSION)) {
            let ver = ver.map_or("missing".to_string(), |v| v.to_string());
            return Err(bad(format!(
                "version {ver} is not the supported {VERSION}; run `redoctor calibrate` again"
            )));
        }
        serde_json::from_value(v).map_err(|e| bad(format!("malformed: {e}")))
    }

    /// Refits the constants from the measured points when they were fitted
    /// under another revision of the mechanics; returns the revision they
    /// were fitted under when it did. Errors (and leaves `self` as it was)
    /// when the points cannot be fitted.
    pub fn refit_if_stale(&mut self) -> Result<Option<u32>, ModelError> {
        let was = self.fitted.mechanics;
        if was == REVISION {
            return Ok(None);
        }
        self.fitted = fit(&self.points)?;
        Ok(Some(was))
    }

    /// Writes atomically: a temporary file beside `path`, fsync'd, renamed over it.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let io = |source| ModelError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).expect("a calibration always serialises");
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(io)
    }
}

/// redoctor's state directory: `$REDOCTOR_STATE_DIR`, else
/// `$XDG_STATE_HOME/redoctor`, else `~/.local/state/redoctor`.
pub fn state_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(STATE_DIR_ENV) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME") {
        return Some(PathBuf::from(d).join("redoctor"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state/redoctor"))
}

/// Where the host's calibration lives by default: `calibration-<cores>cpu.json`
/// in the state directory (one per core count the server is bound to).
pub fn default_path(cores: u32) -> Option<PathBuf> {
    state_dir().map(|d| d.join(format!("calibration-{cores}cpu.json")))
}
