//! The expected-state check of one crashed run.
//!
//! Inputs, all kept outside the killed process:
//! - the *base*: the state the run started from (the previous trial's
//!   verified recovery, or the freshly prepared tables);
//! - the run's *journal*: each transaction's after-images, written before
//!   its commit while it held its row locks, then `A` once the commit
//!   returned (see `redoctor_workload::journal`);
//! - the *recovered* state, and the binlog's xids before and after.
//!
//! For every row some transaction of the run changed, the journal lists
//! those transactions in the order the engine applied them (a later one
//! could only lock the row after the earlier one committed), so the values
//! the row may legally hold are `v0` (the base) and the after-images
//! `v1..vn`, and recovery must leave it at some `vp`: the writes `1..=p`
//! survived, `p+1..=n` did not. The check then requires:
//!
//! - the recovered value is one of `v0..vn` (nobody wrote anything else);
//! - `p` is at or after every acknowledged transaction of the chain
//!   (nothing acknowledged is lost), and, with `log_bin=ON`, after every
//!   transaction whose xid is in the binlog and before every one whose xid
//!   is not (a prepared transaction is committed iff it is in the binlog);
//! - each transaction survived at all of its rows or at none (no
//!   half-applied transaction);
//! - every row no transaction changed is exactly as in the base;
//! - the binlog lost no earlier event and holds no xid the journal does not
//!   name; every acknowledged xid is in it (`log_bin=ON`);
//! - the workload's own invariants: `update_index` moves `k` by +1 per
//!   transaction, `insert` only adds new ids, `read_write` changes at most
//!   three rows and deletes none for good, TPCC-lite's consistency
//!   conditions hold on the recovered tables.
//!
//! Values are compared by `k` and a 64-bit digest of the whole row.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use serde::Serialize;

use redoctor_engine::TableId;
use redoctor_workload::journal::{Entry, JournalOp, ParsedJournal, RowValue};

use crate::state::StateFile;
use crate::trial::Workload;

type RowKey = (TableId, i64);

/// Something the recovered state must not be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum Violation {
    #[error("acknowledged transaction {trx} is lost: row {row} holds {found}, not its write {wrote} or a later one")]
    LostAcknowledged {
        trx: u64,
        row: String,
        found: String,
        wrote: String,
    },
    #[error("transaction {trx} is in the binlog but was not committed by recovery: row {row} holds {found}, not its write {wrote} or a later one")]
    BinlogCommittedLost {
        trx: u64,
        row: String,
        found: String,
        wrote: String,
    },
    #[error(
        "transaction {trx} is not in the binlog but recovery committed it: row {row} holds {found}"
    )]
    AppliedWithoutBinlog {
        trx: u64,
        row: String,
        found: String,
    },
    #[error("transaction {trx} is half-applied: its writes survived at {applied} (e.g. {applied_example}) but not at {missing} (e.g. {missing_example})")]
    HalfApplied {
        trx: u64,
        applied: usize,
        missing: usize,
        applied_example: String,
        missing_example: String,
    },
    #[error("row {row} holds {found}, a value no transaction wrote (before the run: {base}; the run wrote: {writes})")]
    UnknownValue {
        row: String,
        found: String,
        base: String,
        writes: String,
    },
    #[error("row {row} holds {found}, written by transaction {trx} whose commit failed and was rolled back")]
    AbortedApplied {
        trx: u64,
        row: String,
        found: String,
    },
    #[error("row {row} changed although no transaction of the run wrote it: {base} before, {found} after recovery")]
    UntouchedChanged {
        row: String,
        base: String,
        found: String,
    },
    #[error("acknowledged transaction {trx} has no event in the binlog")]
    AckNotInBinlog { trx: u64 },
    #[error("the binlog holds xid {xid}, for which the run logged no transaction{why}")]
    UnknownBinlogXid { xid: u64, why: &'static str },
    #[error("{missing} binlog events present before the run are gone (e.g. xid {example})")]
    BinlogShrank { missing: usize, example: u64 },
    #[error("invariant broken: {0}")]
    Invariant(String),
    #[error("the journal is inconsistent: {0}")]
    Journal(String),
}

/// What the check counted and found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// Transactions that logged an intent and were not rolled back.
    pub transactions: usize,
    /// ... of which acknowledged.
    pub acknowledged: usize,
    /// Acknowledged transactions found applied at every row they wrote.
    pub acknowledged_verified: usize,
    /// Intents whose commit failed with a retryable error (rolled back).
    pub aborted: usize,
    /// Unacknowledged transactions recovery kept (all their rows).
    pub unacked_applied: usize,
    /// Unacknowledged transactions recovery dropped (all their rows).
    pub unacked_absent: usize,
    /// Transactions whose fate no row shows (their rows were rewritten to
    /// the same value later); none in practice.
    pub undetermined: usize,
    /// Rows the run changed / did not change, each checked.
    pub rows_written: usize,
    pub rows_unchanged: usize,
    /// Rows whose value appears at several places of their chain.
    pub ambiguous_rows: usize,
    /// Transactions the binlog decided (log_bin=ON): in it / not in it.
    pub binlog_committed: usize,
    pub binlog_absent: usize,
    /// The journal ended in a torn line (ignored).
    pub torn_tail: bool,
    pub violations: Vec<Violation>,
}

impl CheckReport {
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// A run that acknowledged nothing proves nothing.
    pub fn no_evidence(&self) -> bool {
        self.acknowledged == 0
    }
}

/// Everything one check needs.
pub struct CheckInput<'a> {
    pub workload: Workload,
    /// The run had `log_bin=ON` (with `sync_binlog=1`).
    pub log_bin: bool,
    pub base: &'a StateFile,
    pub journal: &'a ParsedJournal,
    pub recovered: &'a StateFile,
}

struct Txn {
    trx: u64,
    ops: Vec<JournalOp>,
    acked: bool,
    aborted: bool,
    /// log_bin=ON: whether the binlog holds its xid.
    in_binlog: Option<bool>,
    applied_at: Vec<RowKey>,
    missing_at: Vec<RowKey>,
}

impl Txn {
    fn must_apply(&self) -> bool {
        self.acked || self.in_binlog == Some(true)
    }

    fn must_not_apply(&self) -> bool {
        self.in_binlog == Some(false)
    }
}

fn show(v: Option<RowValue>) -> String {
    match v {
        Some(v) => format!("k={} #{:016x}", v.k, v.digest),
        None => "no row".to_string(),
    }
}

/// Checks one crashed run; see the module documentation.
pub fn check(input: &CheckInput<'_>) -> CheckReport {
    let mut report = CheckReport {
        torn_tail: input.journal.partial_tail,
        ..CheckReport::default()
    };
    let v = &mut report.violations;
    let row_name = |(t, id): RowKey| {
        let name = input
            .recovered
            .tables
            .get(&t)
            .or_else(|| input.base.tables.get(&t))
            .map_or("(unknown table)", |t| t.name.as_str());
        format!("{name}[{id}]")
    };

    // The transactions, in intent order.
    let mut txns: Vec<Txn> = Vec::new();
    let mut by_trx: HashMap<u64, usize> = HashMap::new();
    for e in &input.journal.entries {
        match e {
            Entry::Intent { trx, ops } => {
                if by_trx.insert(*trx, txns.len()).is_some() {
                    v.push(Violation::Journal(format!(
                        "two intents for transaction {trx}"
                    )));
                    continue;
                }
                let mut seen = HashSet::new();
                if !ops.iter().all(|o| seen.insert((o.table, o.id))) {
                    v.push(Violation::Journal(format!(
                        "transaction {trx} names a row twice"
                    )));
                }
                txns.push(Txn {
                    trx: *trx,
                    ops: ops.clone(),
                    acked: false,
                    aborted: false,
                    in_binlog: None,
                    applied_at: Vec::new(),
                    missing_at: Vec::new(),
                });
            }
            Entry::Ack { trx } | Entry::Abort { trx } => {
                let ack = matches!(e, Entry::Ack { .. });
                let Some(&i) = by_trx.get(trx) else {
                    v.push(Violation::Journal(format!(
                        "{} for transaction {trx}, which has no intent",
                        if ack { "acknowledgement" } else { "abort" }
                    )));
                    continue;
                };
                let t = &mut txns[i];
                if t.acked || t.aborted {
                    v.push(Violation::Journal(format!(
                        "transaction {trx} has two outcomes"
                    )));
                }
                if ack {
                    t.acked = true;
                } else {
                    t.aborted = true;
                }
            }
        }
    }

    // The binlog: only ever appended to, and only with the run's transactions.
    let base_bl = input.base.binlog_set().unwrap_or_default();
    let rec_bl = input.recovered.binlog_set();
    let after_bl = rec_bl.clone().unwrap_or_default();
    let gone: Vec<u64> = base_bl.difference(&after_bl).copied().collect();
    if let Some(&example) = gone.iter().min() {
        v.push(Violation::BinlogShrank {
            missing: gone.len(),
            example,
        });
    }
    let mut new_xids: Vec<u64> = after_bl.difference(&base_bl).copied().collect();
    new_xids.sort_unstable();
    for xid in new_xids {
        let why = match by_trx.get(&xid).map(|&i| &txns[i]) {
            None => "",
            Some(t) if t.aborted => " (its commit failed and was rolled back)",
            Some(_) if !input.log_bin => " (the run had log_bin=OFF)",
            Some(_) => continue,
        };
        v.push(Violation::UnknownBinlogXid { xid, why });
    }
    if input.log_bin {
        for t in txns.iter_mut().filter(|t| !t.aborted) {
            let inb = after_bl.contains(&t.trx);
            t.in_binlog = Some(inb);
            if t.acked && !inb {
                v.push(Violation::AckNotInBinlog { trx: t.trx });
            }
        }
    }

    // Each written row's chain of transactions, in the order they applied.
    let mut chains: BTreeMap<RowKey, Vec<(usize, Option<RowValue>)>> = BTreeMap::new();
    let mut aborted_writes: HashMap<RowKey, Vec<(u64, Option<RowValue>)>> = HashMap::new();
    for (i, t) in txns.iter().enumerate() {
        for op in &t.ops {
            let key = (op.table, op.id);
            if t.aborted {
                aborted_writes
                    .entry(key)
                    .or_default()
                    .push((t.trx, op.after));
            } else {
                chains.entry(key).or_default().push((i, op.after));
            }
        }
    }
    let base_rows = input.base.rows();
    let rec_rows = input.recovered.rows();
    report.rows_written = chains.len();

    for (&key, chain) in &chains {
        let base = base_rows.get(&key).copied();
        let found = rec_rows.get(&key).copied();
        let n = chain.len();
        let value = |p: usize| if p == 0 { base } else { chain[p - 1].1 };
        let txn = |p: usize| &txns[chain[p - 1].0];
        let candidates: Vec<usize> = (0..=n).filter(|&p| value(p) == found).collect();
        let lo = (1..=n).filter(|&p| txn(p).must_apply()).max().unwrap_or(0);
        let hi = (1..=n)
            .filter(|&p| txn(p).must_not_apply())
            .min()
            .map_or(n, |p| p - 1);
        let fits: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&p| lo <= p && p <= hi)
            .collect();
        if fits.is_empty() {
            let row = row_name(key);
            if candidates.is_empty() {
                let aborted = aborted_writes
                    .get(&key)
                    .and_then(|w| w.iter().find(|(_, a)| *a == found));
                if let Some(&(trx, _)) = aborted {
                    v.push(Violation::AbortedApplied {
                        trx,
                        row,
                        found: show(found),
                    });
                } else {
                    let mut writes = String::new();
                    for p in 1..=n.min(6) {
                        let _ = write!(
                            writes,
                            "{}{}",
                            if p > 1 { ", " } else { "" },
                            show(value(p))
                        );
                    }
                    if n > 6 {
                        let _ = write!(writes, ", ... ({n} in all)");
                    }
                    v.push(Violation::UnknownValue {
                        row,
                        found: show(found),
                        base: show(base),
                        writes,
                    });
                }
            } else if candidates.iter().any(|&p| p < lo) {
                let t = txn(lo);
                let (trx, found, wrote) = (t.trx, show(found), show(value(lo)));
                v.push(if t.acked {
                    Violation::LostAcknowledged {
                        trx,
                        row,
                        found,
                        wrote,
                    }
                } else {
                    Violation::BinlogCommittedLost {
                        trx,
                        row,
                        found,
                        wrote,
                    }
                });
            } else {
                v.push(Violation::AppliedWithoutBinlog {
                    trx: txn(hi + 1).trx,
                    row,
                    found: show(found),
                });
            }
        }
        // Where the row's chain stopped (among the places that obey the
        // bounds, or else among all that hold the recovered value), so that
        // a transaction cut in two shows as half-applied too.
        let at = if fits.is_empty() { &candidates } else { &fits };
        let (Some(&pmin), Some(&pmax)) = (at.first(), at.last()) else {
            continue;
        };
        if pmin != pmax {
            report.ambiguous_rows += 1;
        }
        for p in 1..=n {
            let t = &mut txns[chain[p - 1].0];
            if p <= pmin {
                t.applied_at.push(key);
            } else if p > pmax {
                t.missing_at.push(key);
            }
        }
    }

    // All or nothing, per transaction.
    for t in &txns {
        if t.aborted {
            report.aborted += 1;
            continue;
        }
        report.transactions += 1;
        report.acknowledged += usize::from(t.acked);
        match t.in_binlog {
            Some(true) => report.binlog_committed += 1,
            Some(false) => report.binlog_absent += 1,
            None => {}
        }
        match (t.applied_at.is_empty(), t.missing_at.is_empty()) {
            (false, false) => v.push(Violation::HalfApplied {
                trx: t.trx,
                applied: t.applied_at.len(),
                missing: t.missing_at.len(),
                applied_example: row_name(t.applied_at[0]),
                missing_example: row_name(t.missing_at[0]),
            }),
            (false, true) if t.acked => report.acknowledged_verified += 1,
            (false, true) => report.unacked_applied += 1,
            // An acknowledged one was reported lost at its rows.
            (true, false) if t.acked => {}
            (true, false) => report.unacked_absent += 1,
            (true, true) => report.undetermined += 1,
        }
    }

    // Rows nobody wrote: exactly as before.
    let mut untouched: Vec<RowKey> = base_rows
        .keys()
        .chain(rec_rows.keys())
        .filter(|k| !chains.contains_key(k))
        .copied()
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    untouched.sort_unstable();
    report.rows_unchanged = untouched.len();
    for key in untouched {
        let (base, found) = (base_rows.get(&key).copied(), rec_rows.get(&key).copied());
        if base == found {
            continue;
        }
        let aborted = aborted_writes
            .get(&key)
            .and_then(|w| w.iter().find(|(_, a)| *a == found));
        if let Some(&(trx, _)) = aborted {
            v.push(Violation::AbortedApplied {
                trx,
                row: row_name(key),
                found: show(found),
            });
        } else {
            v.push(Violation::UntouchedChanged {
                row: row_name(key),
                base: show(base),
                found: show(found),
            });
        }
    }

    workload_invariants(input, &txns, &chains, &base_rows, v, &row_name);
    report
}

/// The workload's own rules, on the journal and the recovered tables.
fn workload_invariants(
    input: &CheckInput<'_>,
    txns: &[Txn],
    chains: &BTreeMap<RowKey, Vec<(usize, Option<RowValue>)>>,
    base_rows: &HashMap<RowKey, RowValue>,
    v: &mut Vec<Violation>,
    row_name: &dyn Fn(RowKey) -> String,
) {
    let mut broken = |what: String| v.push(Violation::Invariant(what));
    for t in txns.iter().filter(|t| !t.aborted) {
        let (n, deletes) = (
            t.ops.len(),
            t.ops.iter().filter(|o| o.after.is_none()).count(),
        );
        let bad = match input.workload {
            Workload::Insert | Workload::UpdateIndex => n != 1 || deletes > 0,
            Workload::ReadWrite => !(1..=3).contains(&n) || deletes > 0,
            Workload::Tpcc => deletes > 0,
        };
        if bad {
            broken(format!(
                "{} transaction {} changed {n} rows ({deletes} deleted)",
                input.workload, t.trx
            ));
        }
    }
    match input.workload {
        Workload::UpdateIndex => {
            for (&key, chain) in chains {
                let mut k = base_rows.get(&key).map(|b| b.k);
                for &(i, after) in chain {
                    let want = k.map(|k| k.wrapping_add(1));
                    let got = after.map(|a| a.k);
                    if got != want || want.is_none() {
                        broken(format!(
                            "update_index transaction {} set row {} to k={got:?}, k was {k:?}",
                            txns[i].trx,
                            row_name(key)
                        ));
                        break;
                    }
                    k = got;
                }
            }
        }
        Workload::Insert => {
            for (&key, chain) in chains {
                if chain.len() > 1 || base_rows.contains_key(&key) {
                    broken(format!(
                        "insert transactions wrote row {} {} time(s), and it existed before: {}",
                        row_name(key),
                        chain.len(),
                        base_rows.contains_key(&key)
                    ));
                }
            }
        }
        Workload::ReadWrite => {}
        Workload::Tpcc => match &input.recovered.tpcc {
            Some(t) => {
                for what in &t.violations {
                    broken(format!("TPC-C consistency: {what}"));
                }
            }
            None => broken("the recovered directory has no TPCC-lite tables".into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::TableState;

    fn val(k: i32) -> RowValue {
        RowValue {
            k,
            digest: 1000 + k as u64,
        }
    }

    fn state(rows: &[(i64, i32)], binlog: Option<Vec<u64>>) -> StateFile {
        StateFile {
            tables: [(
                1,
                TableState {
                    name: "sbtest1".into(),
                    rows: rows.iter().map(|&(id, k)| (id, k, val(k).digest)).collect(),
                },
            )]
            .into(),
            binlog_xids: binlog,
            ..StateFile::default()
        }
    }

    fn put(id: i64, k: i32) -> JournalOp {
        JournalOp {
            table: 1,
            id,
            after: Some(val(k)),
        }
    }

    fn intent(trx: u64, ops: Vec<JournalOp>) -> Entry {
        Entry::Intent { trx, ops }
    }

    fn run(
        workload: Workload,
        log_bin: bool,
        base: &StateFile,
        entries: Vec<Entry>,
        recovered: &StateFile,
    ) -> CheckReport {
        let journal = ParsedJournal {
            entries,
            partial_tail: false,
        };
        check(&CheckInput {
            workload,
            log_bin,
            base,
            journal: &journal,
            recovered,
        })
    }

    #[test]
    fn a_prefix_of_each_chain_passes() {
        let base = state(&[(1, 10), (2, 20)], None);
        let entries = vec![
            intent(5, vec![put(1, 11)]),
            Entry::Ack { trx: 5 },
            intent(6, vec![put(1, 12)]),
            intent(7, vec![put(2, 21)]),
        ];
        // 6 survived without its ack, 7 did not: both are allowed.
        let r = run(
            Workload::UpdateIndex,
            false,
            &base,
            entries,
            &state(&[(1, 12), (2, 20)], None),
        );
        assert!(r.ok(), "{:?}", r.violations);
        assert_eq!(
            (r.acknowledged_verified, r.unacked_applied, r.unacked_absent),
            (1, 1, 1)
        );
    }

    #[test]
    fn a_lost_ack_is_caught() {
        let base = state(&[(1, 10)], None);
        let entries = vec![intent(5, vec![put(1, 11)]), Entry::Ack { trx: 5 }];
        let r = run(
            Workload::UpdateIndex,
            false,
            &base,
            entries,
            &state(&[(1, 10)], None),
        );
        assert!(matches!(
            r.violations[..],
            [Violation::LostAcknowledged { trx: 5, .. }]
        ));
    }

    #[test]
    fn a_half_applied_transaction_is_caught() {
        let base = state(&[(1, 10), (2, 20), (3, 30)], None);
        let entries = vec![intent(9, vec![put(1, 11), put(2, 21), put(3, 31)])];
        let r = run(
            Workload::ReadWrite,
            false,
            &base,
            entries,
            &state(&[(1, 11), (2, 20), (3, 31)], None),
        );
        assert!(
            matches!(
                r.violations[..],
                [Violation::HalfApplied {
                    trx: 9,
                    applied: 2,
                    missing: 1,
                    ..
                }]
            ),
            "{:?}",
            r.violations
        );
    }

    #[test]
    fn the_binlog_decides_prepared_transactions() {
        let base = state(&[(1, 10), (2, 20)], Some(vec![1, 2]));
        let entries = vec![intent(5, vec![put(1, 11)]), intent(6, vec![put(2, 21)])];
        // 5 is in the binlog, 6 is not: exactly 5 must be applied.
        let good = run(
            Workload::UpdateIndex,
            true,
            &base,
            entries.clone(),
            &state(&[(1, 11), (2, 20)], Some(vec![1, 2, 5])),
        );
        assert!(good.ok(), "{:?}", good.violations);
        assert_eq!((good.binlog_committed, good.binlog_absent), (1, 1));
        let lost = run(
            Workload::UpdateIndex,
            true,
            &base,
            entries.clone(),
            &state(&[(1, 10), (2, 20)], Some(vec![1, 2, 5])),
        );
        assert!(matches!(
            lost.violations[..],
            [Violation::BinlogCommittedLost { trx: 5, .. }]
        ));
        let extra = run(
            Workload::UpdateIndex,
            true,
            &base,
            entries,
            &state(&[(1, 11), (2, 21)], Some(vec![1, 2, 5])),
        );
        assert!(matches!(
            extra.violations[..],
            [Violation::AppliedWithoutBinlog { trx: 6, .. }]
        ));
    }

    #[test]
    fn binlog_damage_and_strangers_are_caught() {
        let base = state(&[(1, 10)], Some(vec![1, 2]));
        let entries = vec![intent(5, vec![put(1, 11)]), Entry::Ack { trx: 5 }];
        let r = run(
            Workload::UpdateIndex,
            true,
            &base,
            entries,
            &state(&[(1, 11)], Some(vec![1, 99])),
        );
        // Acknowledged, so it must be applied; not in the binlog, so it
        // must not: both are reported.
        assert!(
            matches!(
                r.violations[..],
                [
                    Violation::BinlogShrank {
                        missing: 1,
                        example: 2
                    },
                    Violation::UnknownBinlogXid { xid: 99, .. },
                    Violation::AckNotInBinlog { trx: 5 },
                    Violation::AppliedWithoutBinlog { trx: 5, .. },
                ]
            ),
            "{:?}",
            r.violations
        );
    }

    #[test]
    fn foreign_values_and_untouched_changes_are_caught() {
        let base = state(&[(1, 10), (2, 20)], None);
        let entries = vec![
            intent(5, vec![put(1, 11)]),
            Entry::Abort { trx: 5 },
            intent(6, vec![put(1, 11)]),
        ];
        // 6 wrote the same value 5 did: fine. Row 2 was never written.
        let r = run(
            Workload::UpdateIndex,
            false,
            &base,
            entries.clone(),
            &state(&[(1, 11), (2, 25)], None),
        );
        assert!(matches!(
            r.violations[..],
            [Violation::UntouchedChanged { .. }]
        ));
        let r = run(
            Workload::UpdateIndex,
            false,
            &base,
            entries,
            &state(&[(1, 13), (2, 20)], None),
        );
        assert!(matches!(r.violations[..], [Violation::UnknownValue { .. }]));
        let r = run(
            Workload::Insert,
            false,
            &base,
            vec![intent(7, vec![put(3, 1)]), Entry::Abort { trx: 7 }],
            &state(&[(1, 10), (2, 20), (3, 1)], None),
        );
        assert!(matches!(
            r.violations[..],
            [Violation::AbortedApplied { trx: 7, .. }]
        ));
    }

    #[test]
    fn workload_rules_are_checked() {
        let base = state(&[(1, 10)], None);
        let r = run(
            Workload::UpdateIndex,
            false,
            &base,
            vec![intent(5, vec![put(1, 12)]), Entry::Ack { trx: 5 }],
            &state(&[(1, 12)], None),
        );
        assert!(matches!(r.violations[..], [Violation::Invariant(_)]));
        let r = run(
            Workload::Tpcc,
            false,
            &base,
            vec![],
            &state(&[(1, 10)], None),
        );
        assert!(matches!(r.violations[..], [Violation::Invariant(_)]));
        assert!(r.no_evidence());
    }

    #[test]
    fn journal_contradictions_are_caught() {
        let base = state(&[(1, 10)], None);
        let r = run(
            Workload::UpdateIndex,
            false,
            &base,
            vec![Entry::Ack { trx: 3 }],
            &base,
        );
        assert!(matches!(r.violations[..], [Violation::Journal(_)]));
    }
}
