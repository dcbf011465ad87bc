//! [`FileError`]: an I/O failure on one of the engine's files, with what
//! the operator should do about it. A leaf: the redo log, the binlog,
//! checkpoints and recovery raise it, and the top-level
//! [`EngineError`](crate::EngineError) wraps it.

use std::io;
use std::path::Path;
use std::sync::Arc;

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
