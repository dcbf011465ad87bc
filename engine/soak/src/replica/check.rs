//! The replica trial's verdict: after catch-up the replica's tables equal
//! the source's, and (with `log_replica_updates`) the replica's own binlog
//! holds every source transaction exactly once, in the source's order when
//! the configuration promises it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use redoctor_engine::replica::applied::TABLE as APPLIED;
use redoctor_engine::{decode_record, Engine, RedoRecord, Row, RowOp};
use serde::Serialize;

use crate::SoakError;

/// Every user table's rows by id (the applied-position table left out).
pub type Tables = BTreeMap<String, BTreeMap<i64, Row>>;

/// One row change of a binlog transaction: table name, id, the after-image
/// (`None`: deleted), as `(k, c, pad)`.
pub type Change = (String, i64, Option<(i32, String, String)>);

/// One binlog transaction's row changes, in its order.
pub type Transaction = Vec<Change>;

/// What a replica trial found wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReplicaViolation {
    /// A table the source has and the replica lacks, or the reverse.
    TableMissing { table: String, on: &'static str },
    /// A table whose rows differ after catch-up.
    TableDiffers {
        table: String,
        source_rows: usize,
        replica_rows: usize,
        differing_ids: usize,
        first_id: i64,
    },
    /// Source transactions absent from the replica's binlog (lost).
    Lost { count: usize, first: usize },
    /// Source transactions in the replica's binlog more than once.
    Duplicated { count: usize, first: usize },
    /// Replica binlog transactions the source never wrote.
    Foreign { count: usize },
    /// The replica's binlog has the source's transactions in another order
    /// although one applier or commit-order preservation promised it.
    OutOfOrder { at: usize },
}

impl fmt::Display for ReplicaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplicaViolation::TableMissing { table, on } => {
                write!(f, "table {table} is missing on the {on}")
            }
            ReplicaViolation::TableDiffers {
                table,
                source_rows,
                replica_rows,
                differing_ids,
                first_id,
            } => write!(
                f,
                "table {table} differs after catch-up: {differing_ids} id(s) differ (first id {first_id}); \
                 {source_rows} rows on the source, {replica_rows} on the replica"
            ),
            ReplicaViolation::Lost { count, first } => write!(
                f,
                "{count} source transaction(s) missing from the replica's binlog (first: source \
                 transaction #{first}): lost"
            ),
            ReplicaViolation::Duplicated { count, first } => write!(
                f,
                "{count} source transaction(s) in the replica's binlog more than once (first: \
                 source transaction #{first}): applied twice"
            ),
            ReplicaViolation::Foreign { count } => write!(
                f,
                "{count} transaction(s) in the replica's binlog that the source never wrote"
            ),
            ReplicaViolation::OutOfOrder { at } => write!(
                f,
                "the replica's binlog leaves the source's commit order at transaction #{at} \
                 although the configuration preserves it"
            ),
        }
    }
}

/// `e`'s user tables.
pub fn user_tables(e: &Engine) -> Tables {
    let mut d = e.dump();
    d.remove(APPLIED);
    d
}

/// Every transaction in `e`'s binlog with its row changes by table name
/// (the applied-position table left out; a transaction left with none is
/// skipped), in binlog order.
pub fn binlog_transactions(e: &Engine) -> Result<Vec<Transaction>, SoakError> {
    let mut out = Vec::new();
    let mut from = redoctor_engine::BinlogPos::default();
    loop {
        let events = e
            .binlog_dump(from, 4096, std::time::Duration::ZERO)
            .map_err(|err| SoakError::Engine(format!("reading the binlog: {err}")))?;
        let Some(last) = events.last() else {
            return Ok(out);
        };
        from = last.end;
        for ev in events {
            let record = decode_record(&ev.payload).map_err(|err| {
                SoakError::Engine(format!("a binlog event ending at {:?}: {err}", ev.end))
            })?;
            let RedoRecord::Commit { ops, .. } = record else {
                return Err(SoakError::Engine(format!(
                    "the binlog event ending at {:?} is not a transaction",
                    ev.end
                )));
            };
            let mut trx = Vec::with_capacity(ops.len());
            for op in ops {
                let (table, id, row) = match op {
                    RowOp::Put { table, id, row } => (table, id, Some((row.k, row.c, row.pad))),
                    RowOp::Delete { table, id } => (table, id, None),
                };
                let name = e.table_info(table).map(|(n, _)| n).ok_or_else(|| {
                    SoakError::Engine(format!(
                        "binlog names table {table:?}, which does not exist"
                    ))
                })?;
                if name != APPLIED {
                    trx.push((name, id, row));
                }
            }
            if !trx.is_empty() {
                out.push(trx);
            }
        }
    }
}

/// Compares the source's and the replica's tables.
pub fn compare_tables(source: &Tables, replica: &Tables) -> Vec<ReplicaViolation> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = source.keys().chain(replica.keys()).collect();
    for name in names {
        let (Some(s), Some(r)) = (source.get(name), replica.get(name)) else {
            out.push(ReplicaViolation::TableMissing {
                table: name.clone(),
                on: if source.contains_key(name) {
                    "replica"
                } else {
                    "source"
                },
            });
            continue;
        };
        let ids: BTreeSet<&i64> = s.keys().chain(r.keys()).collect();
        let differing: Vec<i64> = ids
            .into_iter()
            .filter(|id| s.get(id) != r.get(id))
            .copied()
            .collect();
        if let Some(&first_id) = differing.first() {
            out.push(ReplicaViolation::TableDiffers {
                table: name.clone(),
                source_rows: s.len(),
                replica_rows: r.len(),
                differing_ids: differing.len(),
                first_id,
            });
        }
    }
    out
}

/// Compares the replica's binlog with the source's: each source
/// transaction exactly once, nothing else; in order when `ordered`.
pub fn compare_binlogs(
    source: &[Transaction],
    replica: &[Transaction],
    ordered: bool,
) -> Vec<ReplicaViolation> {
    let mut out = Vec::new();
    // Source transactions by content: identical ones count together.
    let mut want: BTreeMap<&Transaction, Vec<usize>> = BTreeMap::new();
    for (i, t) in source.iter().enumerate() {
        want.entry(t).or_default().push(i);
    }
    let mut got: BTreeMap<&Transaction, usize> = BTreeMap::new();
    let mut foreign = 0;
    for t in replica {
        if want.contains_key(t) {
            *got.entry(t).or_default() += 1;
        } else {
            foreign += 1;
        }
    }
    let (mut lost, mut first_lost) = (0, usize::MAX);
    let (mut dup, mut first_dup) = (0, usize::MAX);
    for (t, at) in &want {
        let n = got.get(t).copied().unwrap_or(0);
        if n < at.len() {
            lost += at.len() - n;
            first_lost = first_lost.min(at[n]);
        } else if n > at.len() {
            dup += n - at.len();
            first_dup = first_dup.min(at[0]);
        }
    }
    if lost > 0 {
        out.push(ReplicaViolation::Lost {
            count: lost,
            first: first_lost,
        });
    }
    if dup > 0 {
        out.push(ReplicaViolation::Duplicated {
            count: dup,
            first: first_dup,
        });
    }
    if foreign > 0 {
        out.push(ReplicaViolation::Foreign { count: foreign });
    }
    if ordered && out.is_empty() {
        if let Some(at) = source.iter().zip(replica).position(|(s, r)| s != r) {
            out.push(ReplicaViolation::OutOfOrder { at });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(k: i32) -> Row {
        Row {
            k,
            c: format!("c{k}"),
            pad: "p".into(),
        }
    }

    fn tables(rows: &[(i64, i32)]) -> Tables {
        let mut t = Tables::new();
        t.insert(
            "sbtest1".into(),
            rows.iter().map(|&(id, k)| (id, row(k))).collect(),
        );
        t
    }

    fn trx(id: i64, k: i32) -> Transaction {
        vec![("sbtest1".into(), id, Some((k, format!("c{k}"), "p".into())))]
    }

    #[test]
    fn equal_tables_pass_and_each_difference_is_named() {
        let s = tables(&[(1, 1), (2, 2), (3, 3)]);
        assert!(compare_tables(&s, &s.clone()).is_empty());
        let v = compare_tables(&s, &tables(&[(1, 1), (2, 5)]));
        assert_eq!(
            v,
            vec![ReplicaViolation::TableDiffers {
                table: "sbtest1".into(),
                source_rows: 3,
                replica_rows: 2,
                differing_ids: 2,
                first_id: 2
            }]
        );
        let mut r = s.clone();
        r.insert("sbtest2".into(), BTreeMap::new());
        let v = compare_tables(&s, &r);
        assert!(
            matches!(
                &v[..],
                [ReplicaViolation::TableMissing { on: "source", .. }]
            ),
            "{v:?}"
        );
        assert!(v[0].to_string().contains("sbtest2"));
    }

    #[test]
    fn lost_duplicated_foreign_and_reordered_transactions_are_caught() {
        let src = vec![trx(1, 1), trx(2, 1), trx(1, 2), trx(2, 1)];
        assert!(compare_binlogs(&src, &src, true).is_empty());
        let swapped = vec![trx(2, 1), trx(1, 1), trx(1, 2), trx(2, 1)];
        assert!(compare_binlogs(&src, &swapped, false).is_empty());
        assert_eq!(
            compare_binlogs(&src, &swapped, true),
            vec![ReplicaViolation::OutOfOrder { at: 0 }]
        );
        // One of two identical transactions lost.
        let lost = vec![trx(1, 1), trx(2, 1), trx(1, 2)];
        assert_eq!(
            compare_binlogs(&src, &lost, false),
            vec![ReplicaViolation::Lost { count: 1, first: 3 }]
        );
        let twice = vec![trx(1, 1), trx(2, 1), trx(1, 2), trx(1, 2), trx(2, 1)];
        assert_eq!(
            compare_binlogs(&src, &twice, false),
            vec![ReplicaViolation::Duplicated { count: 1, first: 2 }]
        );
        let mut foreign = src.clone();
        foreign.push(trx(9, 9));
        assert_eq!(
            compare_binlogs(&src, &foreign, true),
            vec![ReplicaViolation::Foreign { count: 1 }]
        );
    }
}
