//! The engine's top-level error: one variant per subsystem.

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
    #[error("checkpoint failed in {dir}: {source}; check free space and permissions there")]
    Checkpoint {
        dir: String,
        #[source]
        source: std::io::Error,
    },
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
