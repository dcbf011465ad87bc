//! The engine's top-level error: one variant per subsystem, and
//! [`FileError`], the I/O failure on one of the engine's files that every
//! fail-stop message is built around.

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::binlog::BinlogError;
use crate::data::catalog::DataError;
use crate::data::trx::TrxError;
use crate::recovery::RecoveryError;
use crate::redo::RedoError;
use crate::settings::SettingsError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Redo(#[from] RedoError),
    #[error(transparent)]
    Trx(#[from] TrxError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Recovery(#[from] RecoveryError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Binlog(#[from] BinlogError),
    #[error(
        "checkpoint failed: {0}; the engine stopped accepting commits (fail-stop). {fix}, \
         then restart: recovery starts from the previous checkpoint and replays the redo log",
        fix = .0.fix()
    )]
    Checkpoint(FileError),
    #[error("the engine is shut down")]
    ShutDown,
}

impl EngineError {
    /// Deadlocks, lock wait timeouts and throttle timeouts: roll back and
    /// retry the transaction.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            EngineError::Trx(
                TrxError::Deadlock | TrxError::LockWaitTimeout | TrxError::Throttled(_)
            )
        )
    }
}

/// An I/O error on one of the engine's files: what was done, to which file
/// (its full path), and the error with its errno. Cheap to clone (the error
/// is shared), so a fail-stop latch can hand it to every later committer.
/// Its message includes the I/O error's, so it reports no `source()`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{op} {path} failed: {error}")]
pub struct FileError {
    /// What was done, phrased to precede the path: "fdatasync of", "write to".
    pub op: &'static str,
    pub path: String,
    pub error: Arc<io::Error>,
}

impl FileError {
    pub fn new(op: &'static str, path: impl Into<String>, source: io::Error) -> FileError {
        FileError {
            op,
            path: path.into(),
            error: Arc::new(source),
        }
    }

    /// The errno, when the error came from the OS (or a failpoint posing as it).
    pub fn raw_os_error(&self) -> Option<i32> {
        self.error.raw_os_error()
    }

    /// The directory holding the file.
    fn dir(&self) -> &str {
        Path::new(&self.path)
            .parent()
            .and_then(Path::to_str)
            .filter(|d| !d.is_empty())
            .unwrap_or(".")
    }

    /// What the operator should do about it (a sentence without a final
    /// period, so callers can go on with ", then restart ...").
    pub fn fix(&self) -> String {
        match self.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => format!(
                "Free space on the file system that holds {} (or move the data directory to \
                 a larger one)",
                self.dir()
            ),
            Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM) => format!(
                "Make {} writable by this user (is the file system mounted read-only?)",
                self.dir()
            ),
            Some(libc::EIO) => "Check the storage device (the kernel log says which one \
                 failed and why)"
                .to_string(),
            _ => format!("Fix the storage problem behind {}", self.dir()),
        }
    }
}

/// `dir/name` for messages, `dir` being what the storage backend says it is.
pub(crate) fn path_in(vfs: &dyn crate::vfs::Vfs, name: &str) -> String {
    format!("{}/{}", vfs.describe(), name)
}
