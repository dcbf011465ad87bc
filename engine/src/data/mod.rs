//! Tables, row locks and transactions (the part of the engine above the redo log).

pub mod catalog;
pub mod delta;
pub mod lock_sys;
pub mod record;
pub mod snapshot;
pub mod table;
pub mod trx;
