//! What the transactions of every workload share, sysbench's and
//! TPCC-lite's alike: sysbench's random strings, collision-free insert ids,
//! why a transaction's statements failed or how they ended, and the counts
//! of what a generator executed. A leaf, so that the sysbench generator
//! (`txn_gen`) and TPCC-lite (`tpcc`) both build on it without depending
//! on each other both ways.

use rand::Rng;

use super::mix::Statement;
use redoctor_engine::EngineError;
use redoctor_engine::TableId;

/// Width of the `c` column (`CHAR(120)`) and its number of 11-digit groups.
pub const C_WIDTH: usize = 120;
const C_GROUPS: usize = 10;
/// Width of the `pad` column (`CHAR(60)`) and its number of 11-digit groups.
pub const PAD_WIDTH: usize = 60;
const PAD_GROUPS: usize = 5;
const DIGITS_PER_GROUP: usize = 11;

/// sysbench's `###########-###########-...` value: `groups` groups of 11
/// random digits joined by `-`, blank-padded to `width` as a `CHAR(width)`
/// column stores it (truncated if the groups are longer).
pub fn sysbench_string(rng: &mut impl Rng, groups: usize, width: usize) -> String {
    let mut s = String::with_capacity(width.max(groups * (DIGITS_PER_GROUP + 1)));
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..DIGITS_PER_GROUP {
            s.push(char::from(rng.gen_range(b'0'..=b'9')));
        }
    }
    s.truncate(width);
    while s.len() < width {
        s.push(' ');
    }
    s
}

/// A fresh `c` value (120 characters).
pub fn random_c(rng: &mut impl Rng) -> String {
    sysbench_string(rng, C_GROUPS, C_WIDTH)
}

/// A fresh `pad` value (60 characters).
pub fn random_pad(rng: &mut impl Rng) -> String {
    sysbench_string(rng, PAD_GROUPS, PAD_WIDTH)
}

/// Collision-free ids for inserted rows: for every table, thread `t` of `n`
/// uses `first_free + t`, `first_free + t + n`, `first_free + t + 2n`, ...
#[derive(Debug, Clone)]
pub struct InsertIds {
    next: Vec<i64>,
    stride: i64,
}

impl InsertIds {
    /// `first_free[i]`: the lowest id of table `i` above every existing row.
    pub fn new(first_free: &[i64], thread: usize, users: usize) -> Self {
        InsertIds {
            next: first_free.iter().map(|&f| f + thread as i64).collect(),
            stride: users as i64,
        }
    }

    /// The next id of table index `table`.
    pub fn take(&mut self, table: usize) -> i64 {
        let id = self.next[table];
        self.next[table] += self.stride;
        id
    }
}

/// A committed insert the crash test must find again after recovery.
pub type Ack = (TableId, i64);

/// Why a transaction's statements failed.
#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A row the workload's data model guarantees is gone (the data was
    /// changed outside the workload).
    #[error("row {id} of table {table} is missing: the data was not prepared by this workload; use a fresh --datadir")]
    MissingRow { table: TableId, id: i64 },
}

impl From<redoctor_engine::TrxError> for StatementError {
    fn from(e: redoctor_engine::TrxError) -> Self {
        StatementError::Engine(e.into())
    }
}

impl StatementError {
    /// Deadlocks and lock wait timeouts: roll back and retry the transaction.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StatementError::Engine(e) if e.is_retryable())
    }
}

/// How a transaction's statements ended, when none failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Commit it; for `insert`, the row the acknowledgement log records.
    Commit(Option<Ack>),
    /// Roll it back: the workload's definition asks for it (TPC-C's 1 % of
    /// new-orders with an unknown item).
    Rollback,
}

/// Statements and transactions a generator executed, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// Per [`Statement`], in [`Statement::ALL`] order.
    pub statements: [u64; Statement::ALL.len()],
    /// TPCC-lite transactions started, by name.
    pub tpcc_new_order: u64,
    pub tpcc_payment: u64,
    /// Transactions the workload rolled back on purpose.
    pub planned_rollbacks: u64,
}

impl OpCounts {
    pub fn statement(&self, s: Statement) -> u64 {
        self.statements[s.index()]
    }

    pub(crate) fn bump(&mut self, s: Statement) {
        self.statements[s.index()] += 1;
    }

    pub fn add(&mut self, other: &OpCounts) {
        for (a, b) in self.statements.iter_mut().zip(other.statements) {
            *a += b;
        }
        self.tpcc_new_order += other.tpcc_new_order;
        self.tpcc_payment += other.tpcc_payment;
        self.planned_rollbacks += other.planned_rollbacks;
    }

    /// The non-zero counts by name (statement names, `tpcc_new_order`, ...).
    pub fn to_map(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m: std::collections::BTreeMap<String, u64> = Statement::ALL
            .iter()
            .zip(self.statements)
            .map(|(s, n)| (s.name().to_string(), n))
            .collect();
        m.insert("tpcc_new_order".into(), self.tpcc_new_order);
        m.insert("tpcc_payment".into(), self.tpcc_payment);
        m.insert("planned_rollbacks".into(), self.planned_rollbacks);
        m.retain(|_, n| *n > 0);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn sysbench_strings_have_the_column_widths() {
        let mut rng = SmallRng::seed_from_u64(7);
        let c = random_c(&mut rng);
        assert_eq!(c.len(), C_WIDTH);
        assert_eq!(c.matches('-').count(), C_GROUPS - 1);
        assert!(c
            .trim_end()
            .split('-')
            .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
        let pad = random_pad(&mut rng);
        assert_eq!(pad.len(), PAD_WIDTH);
        assert_eq!(pad.trim_end().len(), 59);
        assert_eq!(sysbench_string(&mut rng, 3, 10).len(), 10);
    }

    #[test]
    fn insert_ids_never_collide_between_threads() {
        let first_free = [1001, 5001];
        let users = 3;
        let mut seen = std::collections::HashSet::new();
        for thread in 0..users {
            let mut ids = InsertIds::new(&first_free, thread, users);
            for n in 0..100 {
                let table = n % 2;
                let id = ids.take(table);
                assert!(id >= first_free[table]);
                assert!(seen.insert((table, id)), "duplicate {table} {id}");
            }
        }
    }
}
