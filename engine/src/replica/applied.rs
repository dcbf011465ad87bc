//! Where the applier is, recorded in the replica's own table so that it is
//! exactly as durable as the transactions it describes (MySQL keeps it in
//! `mysql.slave_relay_log_info` / `slave_worker_info`, InnoDB tables, for
//! the same reason).
//!
//! Table `redoctor_replica_applied` (shape `(id, k)`): one row per source
//! transaction applied since the last compaction, `id` = the source
//! position where its event ends ([`key`]), `k` = the worker that applied
//! it. Each applied transaction writes its own row in the transaction that
//! applies it. Every so often the applier writes, in one transaction, the
//! low-water mark (the position up to which *every* transaction is
//! applied) and removes the rows below it, so the table's smallest row is
//! the low-water mark and the rows above it are the transactions applied
//! out of order by parallel workers.
//!
//! After a crash the receiver fetches again from the low-water mark and
//! the applier skips every transaction whose row exists: nothing is lost
//! and nothing is applied twice.

use std::collections::BTreeSet;

use crate::binlog::file::{BinlogPos, FILE_HDR};
use crate::data::table::{Row, Shape, TableId};
use crate::data::trx::Trx;
use crate::engine::Engine;
use crate::error::EngineError;

/// The bookkeeping table's name (left out of replica/source comparisons).
pub const TABLE: &str = "redoctor_replica_applied";

/// A source position as a row id: file number in the high bits, offset in
/// the low 32 (binlog files are at most 1 GiB plus one event).
pub fn key(p: BinlogPos) -> i64 {
    ((p.file << 32) | (p.offset & 0xffff_ffff)) as i64
}

/// The position a row id stands for.
pub fn pos(key: i64) -> BinlogPos {
    let k = key as u64;
    BinlogPos {
        file: k >> 32,
        offset: k & 0xffff_ffff,
    }
}

/// The start of a source's binlog.
pub fn binlog_start() -> BinlogPos {
    BinlogPos {
        file: 1,
        offset: FILE_HDR,
    }
}

/// What the table says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Every transaction up to here is applied.
    pub low_water: BinlogPos,
    /// Transactions after the low-water mark that are applied too.
    pub above: BTreeSet<BinlogPos>,
}

/// The table's id, creating it when missing.
pub fn ensure_table(engine: &Engine) -> Result<TableId, EngineError> {
    match engine.table_id(TABLE) {
        Some(id) => Ok(id),
        None => engine.create_shaped_table(TABLE, Shape::IdK),
    }
}

/// Reads the table; None when it holds no row (never started).
pub fn load(engine: &Engine) -> Result<Option<Applied>, EngineError> {
    let Some(table) = engine.table_id(TABLE) else {
        return Ok(None);
    };
    let mut trx = engine.begin();
    let rows = trx.range(table, i64::MIN, i64::MAX);
    engine.rollback(trx);
    let mut keys = rows?.into_iter().map(|(id, _)| pos(id));
    let Some(low_water) = keys.next() else {
        return Ok(None);
    };
    Ok(Some(Applied {
        low_water,
        above: keys.collect(),
    }))
}

/// Records, in `trx`, that the transaction ending at `at` is applied.
pub fn record(
    trx: &mut Trx,
    table: TableId,
    at: BinlogPos,
    worker: u32,
) -> Result<(), EngineError> {
    let row = Row {
        k: worker as i32,
        c: String::new(),
        pad: String::new(),
    };
    trx.put(table, key(at), row)?;
    Ok(())
}

/// One transaction: writes `low_water` and removes every row below it.
/// Every transaction up to `low_water` must be committed.
pub fn compact(engine: &Engine, table: TableId, low_water: BinlogPos) -> Result<(), EngineError> {
    rewrite(engine, table, key(low_water) - 1, low_water)
}

/// `CHANGE REPLICATION SOURCE TO ... SOURCE_LOG_FILE/POS`: starts the
/// record over at `at` (everything before it counts as applied).
pub fn reset(engine: &Engine, at: BinlogPos) -> Result<(), EngineError> {
    let table = ensure_table(engine)?;
    rewrite(engine, table, i64::MAX, at)
}

/// One redo-only transaction: removes the rows up to `upto` and writes
/// the low-water row `at`.
fn rewrite(engine: &Engine, table: TableId, upto: i64, at: BinlogPos) -> Result<(), EngineError> {
    let mut trx = engine.begin();
    let r = (|| {
        for (id, _) in trx.range(table, i64::MIN, upto)? {
            trx.delete(table, id)?;
        }
        record(&mut trx, table, at, 0)
    })();
    match r {
        Ok(()) => engine.commit_unlogged(trx).map(|_| ()),
        Err(e) => {
            engine.rollback(trx);
            Err(e)
        }
    }
}
