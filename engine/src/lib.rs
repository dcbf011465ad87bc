//! The bundled engine: a compact, InnoDB-style transactional engine.
//!
//! Data flows through it the way it does through InnoDB:
//! a transaction changes rows under row locks (`data/lock_sys.rs`), its commit
//! is serialised into one redo record (`data/record.rs`), copied into the
//! concurrent log buffer (`redo/log_buffer.rs`), written by the log writer
//! (`redo/writer.rs`), made durable by the log flusher (`redo/flusher.rs`) and
//! acknowledged by the notifiers (`redo/notifiers.rs`) — or, with dedicated log
//! threads off, by the committing user threads themselves. Checkpoints
//! (`checkpoint.rs`) let the circular redo file be reused; `recovery.rs` rebuilds
//! the tables after a crash.
//!
//! See `engine/DESIGN.md` for the on-disk layout and failure analysis and
//! `engine/PROBES.md` for the probe points.

mod admission;
mod base_writer;
mod binlog;
mod checkpoint;
mod counters;
mod data;
mod debug_hooks;
mod device_model;
mod engine;
mod error;
pub mod failpoints;
mod file_error;
pub mod idle_poll;
mod named_locks;
pub mod page_store;
mod paged_tables;
mod probe_points;
mod recovery;
mod redo;
pub mod replica;
pub mod replica_settings;
mod settings;
mod sync;
pub mod sync_timing;
mod throttle;
mod trx_sys;
pub mod vfs;

#[cfg(test)]
mod tests;

// The public API: what the server, the load driver, the CLI and the probes'
// live tests use. Everything else is private to the engine.
pub use binlog::file::read_xids as read_binlog_xids;
pub use binlog::file::{BinlogPos, LogicalClock, FILE_HDR as BINLOG_FILE_HDR};
pub use binlog::published::DumpEvent;
pub use binlog::BinlogError;
pub use counters::CounterValues;
pub use data::catalog::DataError;
pub use data::record::{decode as decode_record, RedoRecord, RowOp};
pub use data::table::paged_rows::{PagedError, PagedRows};
pub use data::table::{Row, Shape, TableId};
pub use data::trx::{Trx, TrxError};
pub use engine::{find_setting, Engine, EngineOptions, StatusSnapshot, SETTINGS};
pub use error::EngineError;
pub use recovery::{RecoveryError, RecoveryReport};
pub use redo::log_file::StopReason;
pub use redo::{Lsn, RedoMode, RedoOptions};
pub use settings::{Setting, SettingChange, SettingsError, Value, Variable, HISTORY_LEN};
