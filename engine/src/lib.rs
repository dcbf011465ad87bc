//! The bundled engine: a compact, InnoDB-style transactional engine.
//!
//! Data flows through it the way it does through InnoDB:
//! a transaction changes rows under row locks ([`data::lock_sys`]), its commit
//! is serialised into one redo record ([`data::record`]), copied into the
//! concurrent log buffer ([`redo::log_buffer`]), written by the log writer
//! ([`redo::writer`]), made durable by the log flusher ([`redo::flusher`]) and
//! acknowledged by the notifiers ([`redo::notifiers`]) — or, with dedicated log
//! threads off, by the committing user threads themselves. Checkpoints
//! ([`checkpoint`]) let the circular redo file be reused; [`recovery`] rebuilds
//! the tables after a crash.
//!
//! See `engine/DESIGN.md` for the on-disk layout and failure analysis and
//! `engine/PROBES.md` for the probe points.

pub mod admission;
pub mod binlog;
pub mod checkpoint;
pub mod counters;
pub mod data;
pub mod debug_hooks;
pub mod engine;
pub mod error;
pub mod failpoints;
pub mod named_locks;
pub mod probe_points;
pub mod recovery;
pub mod redo;
pub mod settings;
mod sync;
pub mod throttle;
pub mod trx_sys;
pub mod vfs;

pub use engine::{Engine, EngineOptions};
pub use error::EngineError;
pub use redo::{Lsn, RedoMode, RedoOptions};
pub use settings::{SettingChange, SettingsError, Variable};
