//! Statement errors as MySQL reports them: an error code (so clients such as
//! sysbench recognise deadlocks and lock wait timeouts and retry) and a
//! message naming the cause.

use msql_srv::ErrorKind;

use redoctor_engine::DataError;
use redoctor_engine::EngineError;
use redoctor_engine::SettingsError;
use redoctor_engine::TrxError;

/// One failed statement; the connection stays usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SqlError {
    pub kind: ErrorKind,
    pub message: String,
}

impl SqlError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> SqlError {
        SqlError {
            kind,
            message: message.into(),
        }
    }

    /// `ER_NOT_SUPPORTED_YET` (1235) naming what is not supported.
    pub fn unsupported(what: impl std::fmt::Display) -> SqlError {
        SqlError::new(
            ErrorKind::ER_NOT_SUPPORTED_YET,
            format!("This version of redoctor-engine doesn't yet support '{what}'"),
        )
    }

    /// `ER_PARSE_ERROR` (1064).
    pub fn parse(message: impl std::fmt::Display) -> SqlError {
        SqlError::new(
            ErrorKind::ER_PARSE_ERROR,
            format!("You have an error in your SQL syntax: {message}"),
        )
    }

    /// The MySQL error number.
    pub fn code(&self) -> u16 {
        self.kind as u16
    }

    /// Deadlock (1213) or lock wait timeout (1205): the transaction was rolled back.
    pub fn rolled_back_trx(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::ER_LOCK_DEADLOCK | ErrorKind::ER_LOCK_WAIT_TIMEOUT
        )
    }
}

/// Maps a transaction error, naming the table instead of its id.
pub fn trx_error(e: TrxError, table: &str) -> SqlError {
    match e {
        TrxError::NoSuchTable(_) => no_such_table(table),
        TrxError::DuplicateKey { id, .. } => SqlError::new(
            ErrorKind::ER_DUP_ENTRY,
            format!("Duplicate entry '{id}' for key '{table}.PRIMARY'"),
        ),
        TrxError::Deadlock => SqlError::new(ErrorKind::ER_LOCK_DEADLOCK, e.to_string()),
        TrxError::LockWaitTimeout => SqlError::new(ErrorKind::ER_LOCK_WAIT_TIMEOUT, e.to_string()),
        TrxError::RolledBack => SqlError::new(ErrorKind::ER_LOCK_DEADLOCK, e.to_string()),
        // The throttle refused to start the transaction: a retryable wait timeout.
        TrxError::Throttled(_) => SqlError::new(ErrorKind::ER_LOCK_WAIT_TIMEOUT, e.to_string()),
        // A paged table's slot sizes (the statement checks CHAR lengths
        // first; this is the engine's own guard).
        TrxError::DataTooLong { column, id, .. } => SqlError::new(
            ErrorKind::ER_DATA_TOO_LONG,
            format!("Data too long for column '{column}' at row {id} of '{table}'"),
        ),
        TrxError::OutOfRange { id, .. } => SqlError::new(
            ErrorKind::ER_WARN_DATA_OUT_OF_RANGE,
            format!("Out of range value for column 'id' at row {id} of '{table}'"),
        ),
    }
}

/// `ER_NO_SUCH_TABLE` (1146).
pub fn no_such_table(table: &str) -> SqlError {
    SqlError::new(
        ErrorKind::ER_NO_SUCH_TABLE,
        format!("Table '{table}' doesn't exist"),
    )
}

/// A refused `SET GLOBAL`: the registry's message under MySQL's code.
impl From<SettingsError> for SqlError {
    fn from(e: SettingsError) -> SqlError {
        let kind = match e {
            SettingsError::Unknown { .. } => ErrorKind::ER_UNKNOWN_SYSTEM_VARIABLE,
            SettingsError::ReadOnly { .. } => ErrorKind::ER_INCORRECT_GLOBAL_LOCAL_VAR,
            SettingsError::InvalidValue { .. } | SettingsError::Apply { .. } => {
                ErrorKind::ER_WRONG_VALUE_FOR_VAR
            }
        };
        SqlError::new(kind, e.to_string())
    }
}

impl From<EngineError> for SqlError {
    fn from(e: EngineError) -> SqlError {
        match e {
            EngineError::Trx(t) => trx_error(t, "?"),
            EngineError::Data(DataError::TableExists(name)) => SqlError::new(
                ErrorKind::ER_TABLE_EXISTS_ERROR,
                format!("Table '{name}' already exists"),
            ),
            EngineError::Data(DataError::UnknownTable(name)) => SqlError::new(
                ErrorKind::ER_BAD_TABLE_ERROR,
                format!("Unknown table '{name}'"),
            ),
            EngineError::Data(d @ DataError::ReservedTableName(_)) => {
                SqlError::new(ErrorKind::ER_WRONG_ARGUMENTS, d.to_string())
            }
            EngineError::ShutDown => {
                SqlError::new(ErrorKind::ER_SERVER_SHUTDOWN, "Server shutdown in progress")
            }
            other => SqlError::new(
                ErrorKind::ER_ERROR_DURING_COMMIT,
                format!("engine error: {other}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_errors_carry_the_codes_clients_retry_on() {
        assert_eq!(trx_error(TrxError::Deadlock, "t").code(), 1213);
        assert_eq!(trx_error(TrxError::LockWaitTimeout, "t").code(), 1205);
        let dup = trx_error(TrxError::DuplicateKey { table: 1, id: 7 }, "sbtest1");
        assert_eq!(dup.code(), 1062);
        assert!(dup.message.contains("'7'") && dup.message.contains("sbtest1"));
        assert_eq!(no_such_table("x").code(), 1146);
        assert_eq!(SqlError::unsupported("JOIN").code(), 1235);
        assert_eq!(SqlError::from(EngineError::ShutDown).code(), 1053);
    }
}
