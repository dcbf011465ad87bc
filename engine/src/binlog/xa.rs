//! Replay of two-phase redo records (log_bin=ON), during redo recovery.
//!
//! A `Prepare` is held until it is decided; its changes are applied when
//! its `CommitMark` is replayed (if its binlog event is durable) or, for a
//! prepare without a mark, at the end of the scan (if its binlog event is
//! durable). Otherwise it is rolled back: its changes are simply never
//! applied (a prepared transaction's rows were never in a checkpoint image,
//! see `Engine::checkpoint`).
//!
//! Order is preserved: a transaction that conflicts with a prepared one can
//! only lock its rows after that one's commit mark was appended, so
//! applying at the mark keeps the row-lock order, and a prepare still
//! undecided at the end conflicts with nothing after it.
//!
//! The binlog is the authority: a commit mark whose binlog event was lost
//! (possible only with `sync_binlog` other than 1) is rolled back too, so the
//! committed set equals the binlog's. With no binlog at all (it was removed),
//! the commit mark decides.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::data::catalog::{Catalog, DataError};
use crate::data::record::{RedoRecord, RowOp};

/// Counts of what two-phase replay decided.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct XaReport {
    /// Prepare records replayed.
    pub prepared: u64,
    /// Prepared transactions committed (binlog event durable).
    pub committed: u64,
    /// ... of which had no commit mark yet (decided by the binlog alone).
    pub committed_without_mark: u64,
    /// Prepared transactions rolled back (no durable binlog event).
    pub rolled_back: u64,
    /// ... of which had a commit mark (binlog event lost: sync_binlog != 1).
    pub rolled_back_with_mark: u64,
}

/// Replays redo records, holding prepared transactions until decided.
pub struct XaReplay<'a> {
    catalog: &'a Catalog,
    binlog: Option<&'a HashSet<u64>>,
    /// Prepared transactions by id: their prepare record's lsn and rows.
    pending: BTreeMap<u64, (u64, Vec<RowOp>)>,
    pub report: XaReport,
}

impl<'a> XaReplay<'a> {
    /// `binlog`: the xids with durable events, or None if there is no binlog.
    pub fn new(catalog: &'a Catalog, binlog: Option<&'a HashSet<u64>>) -> Self {
        XaReplay {
            catalog,
            binlog,
            pending: BTreeMap::new(),
            report: XaReport::default(),
        }
    }

    /// Applies a decided transaction's rows as of its prepare record (a
    /// paged table's checkpoint may not pass that record while the rows
    /// are unwritten: the replay needs it to find them).
    fn apply_ops(&self, trx_id: u64, (lsn, ops): (u64, Vec<RowOp>)) -> Result<(), DataError> {
        self.catalog
            .apply_at(&RedoRecord::Commit { trx_id, ops }, lsn)
    }

    /// Replays one record in log order; `lsn` is where it starts.
    pub fn record(&mut self, rec: RedoRecord, lsn: u64) -> Result<(), DataError> {
        match rec {
            RedoRecord::Prepare { trx_id, ops } => {
                self.report.prepared += 1;
                self.pending.insert(trx_id, (lsn, ops));
                Ok(())
            }
            RedoRecord::CommitMark { trx_id } => {
                // A mark whose prepare is before the replay start: the
                // transaction is in the checkpoint image already.
                let Some(ops) = self.pending.remove(&trx_id) else {
                    return Ok(());
                };
                let durable = self.binlog.is_none_or(|b| b.contains(&trx_id));
                if durable {
                    self.report.committed += 1;
                    self.apply_ops(trx_id, ops)
                } else {
                    self.report.rolled_back += 1;
                    self.report.rolled_back_with_mark += 1;
                    Ok(())
                }
            }
            other => self.catalog.apply_at(&other, lsn),
        }
    }

    /// Decides the prepared transactions that have no commit mark.
    pub fn finish(mut self) -> Result<XaReport, DataError> {
        let pending = std::mem::take(&mut self.pending);
        for (trx_id, ops) in pending {
            if self.binlog.is_some_and(|b| b.contains(&trx_id)) {
                self.report.committed += 1;
                self.report.committed_without_mark += 1;
                self.apply_ops(trx_id, ops)?;
            } else {
                self.report.rolled_back += 1;
            }
        }
        Ok(self.report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::table::{Row, Shape};

    fn put(id: i64, k: i32) -> Vec<RowOp> {
        vec![RowOp::Put {
            table: 1,
            id,
            row: Row {
                k,
                c: String::new(),
                pad: String::new(),
            },
        }]
    }

    fn k_of(cat: &Catalog, id: i64) -> Option<i32> {
        cat.dump()["t"].get(&id).map(|r| r.k)
    }

    #[test]
    fn decides_by_the_binlog_and_applies_at_the_mark() {
        let cat = Catalog::new();
        cat.create_table_with_id(1, "t", Shape::Sbtest).unwrap();
        let binlog: HashSet<u64> = [1, 2, 4].into();
        let mut xa = XaReplay::new(&cat, Some(&binlog));
        // 1: prepared + marked + in binlog; 2 then changes the same row.
        xa.record(
            RedoRecord::Prepare {
                trx_id: 1,
                ops: put(10, 1),
            },
            0,
        )
        .unwrap();
        xa.record(RedoRecord::CommitMark { trx_id: 1 }, 0).unwrap();
        assert_eq!(k_of(&cat, 10), Some(1), "applied at its mark");
        xa.record(
            RedoRecord::Prepare {
                trx_id: 2,
                ops: put(10, 2),
            },
            0,
        )
        .unwrap();
        xa.record(RedoRecord::CommitMark { trx_id: 2 }, 0).unwrap();
        // 3: marked but its binlog event was lost: rolled back.
        xa.record(
            RedoRecord::Prepare {
                trx_id: 3,
                ops: put(11, 3),
            },
            0,
        )
        .unwrap();
        xa.record(RedoRecord::CommitMark { trx_id: 3 }, 0).unwrap();
        // 4: no mark, in binlog: committed at the end. 5: neither: rolled back.
        xa.record(
            RedoRecord::Prepare {
                trx_id: 4,
                ops: put(12, 4),
            },
            0,
        )
        .unwrap();
        xa.record(
            RedoRecord::Prepare {
                trx_id: 5,
                ops: put(13, 5),
            },
            0,
        )
        .unwrap();
        // A mark whose prepare is before the replay start is ignored.
        xa.record(RedoRecord::CommitMark { trx_id: 99 }, 0).unwrap();
        assert_eq!(k_of(&cat, 12), None, "undecided until the end");
        let r = xa.finish().unwrap();
        assert_eq!(k_of(&cat, 10), Some(2));
        assert_eq!(k_of(&cat, 11), None);
        assert_eq!(k_of(&cat, 12), Some(4));
        assert_eq!(k_of(&cat, 13), None);
        assert_eq!(
            r,
            XaReport {
                prepared: 5,
                committed: 3,
                committed_without_mark: 1,
                rolled_back: 2,
                rolled_back_with_mark: 1,
            }
        );
    }

    #[test]
    fn without_a_binlog_the_mark_decides() {
        let cat = Catalog::new();
        cat.create_table_with_id(1, "t", Shape::Sbtest).unwrap();
        let mut xa = XaReplay::new(&cat, None);
        xa.record(
            RedoRecord::Prepare {
                trx_id: 1,
                ops: put(1, 1),
            },
            0,
        )
        .unwrap();
        xa.record(RedoRecord::CommitMark { trx_id: 1 }, 0).unwrap();
        xa.record(
            RedoRecord::Prepare {
                trx_id: 2,
                ops: put(2, 2),
            },
            0,
        )
        .unwrap();
        let r = xa.finish().unwrap();
        assert_eq!(k_of(&cat, 1), Some(1));
        assert_eq!(k_of(&cat, 2), None);
        assert_eq!((r.committed, r.rolled_back), (1, 1));
    }
}
