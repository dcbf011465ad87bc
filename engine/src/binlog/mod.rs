//! The binary log and MySQL's two-phase, ordered group commit (`log_bin=ON`).
//!
//! - [`file`]: the binlog files (checksummed events, rotation at
//!   `max_binlog_size`, an index), the reader, and torn-tail repair.
//! - [`group_commit`]: prepare in the redo log, then the FLUSH / SYNC /
//!   COMMIT stages with leaders and followers, as in MySQL's
//!   `MYSQL_BIN_LOG::ordered_commit`.
//! - [`published`]: the end of the binlog replicas may read, and the
//!   dump reader that follows it.
//! - [`recover`]: reads the binlog after a crash (repairing the last file's
//!   tail) and says which transaction ids it holds.
//! - [`xa`]: replays two-phase redo records, committing a prepared
//!   transaction iff its binlog event is durable.

pub mod file;
pub mod group_commit;
pub mod published;
pub mod recover;
pub mod xa;

use crate::file_error::FileError;

/// Binlog errors: each names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum BinlogError {
    #[error("binlog I/O error ({what} {file}): {source}; check free space and permissions in the data directory")]
    Io {
        what: &'static str,
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file} has no valid binlog header: it is not a redoctor binlog file or it is damaged; restore the binlog from a backup")]
    BadHeader { file: String },
    #[error("binlog file {file} is listed in binlog.index but missing; restore it from a backup or remove the data directory")]
    MissingFile { file: String },
    #[error("binlog.index is invalid: {why}; restore it from a backup")]
    BadIndex { why: String },
    #[error("binlog file {file} is corrupt at offset {offset} ({why}), and it is not the last file (earlier files are synced before rotation); restore the binlog from a backup")]
    Corrupt {
        file: String,
        offset: u64,
        why: String,
    },
    #[error("invalid binlog setting: {0}")]
    InvalidOption(String),
    #[error(
        "{cause}; the engine stopped accepting commits (fail-stop): this commit and every later \
         one fail, and nothing is retried. {fix}, then restart: recovery commits exactly the \
         prepared transactions whose binlog events are durable",
        fix = .cause.fix()
    )]
    FailStop { cause: FileError },
}

impl BinlogError {
    /// The error as a [`FileError`] with the file's full path (`dir/name`),
    /// for the fail-stop latch. Group commit meets only I/O errors; any
    /// other is kept as its message.
    pub(crate) fn into_file_error(self, dir: &str) -> FileError {
        match self {
            BinlogError::Io { what, file, source } => {
                FileError::new(what, format!("{dir}/{file}"), source)
            }
            BinlogError::FailStop { cause } => cause,
            other => FileError::new(
                "group commit in",
                dir,
                std::io::Error::other(other.to_string()),
            ),
        }
    }
}

/// `max_binlog_size` bounds, as in MySQL (4 KiB ..= 1 GiB).
pub const MAX_BINLOG_SIZE_RANGE: std::ops::RangeInclusive<u64> = 4096..=(1 << 30);
/// `binlog_group_commit_sync_delay` bounds in µs, as in MySQL (0 ..= 1 s).
pub const SYNC_DELAY_RANGE_US: std::ops::RangeInclusive<u64> = 0..=1_000_000;

/// Checks `max_binlog_size`.
pub fn validate_max_binlog_size(v: u64) -> Result<(), BinlogError> {
    if MAX_BINLOG_SIZE_RANGE.contains(&v) {
        Ok(())
    } else {
        Err(BinlogError::InvalidOption(format!(
            "max_binlog_size={v} (allowed: {}..={} bytes)",
            MAX_BINLOG_SIZE_RANGE.start(),
            MAX_BINLOG_SIZE_RANGE.end()
        )))
    }
}

/// Checks `binlog_group_commit_sync_delay`.
pub fn validate_sync_delay_us(us: u64) -> Result<(), BinlogError> {
    if SYNC_DELAY_RANGE_US.contains(&us) {
        Ok(())
    } else {
        Err(BinlogError::InvalidOption(format!(
            "binlog_group_commit_sync_delay={us} (allowed: {}..={} microseconds)",
            SYNC_DELAY_RANGE_US.start(),
            SYNC_DELAY_RANGE_US.end()
        )))
    }
}
