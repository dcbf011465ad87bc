//! The engine's top-level error: one variant per subsystem. The I/O failure
//! that every fail-stop message is built around, [`FileError`], is a leaf
//! of its own (`file_error`), so the subsystems that raise it do not depend
//! on this aggregate that depends on them.

use crate::binlog::group_commit::CommitError;
use crate::binlog::BinlogError;
use crate::data::catalog::DataError;
use crate::data::trx::TrxError;
use crate::file_error::FileError;
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
    #[error(transparent)]
    Pages(#[from] crate::paged_tables::PagesError),
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

impl From<CommitError> for EngineError {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::Redo(e) => EngineError::Redo(e),
            CommitError::Binlog(e) => EngineError::Binlog(e),
        }
    }
}
