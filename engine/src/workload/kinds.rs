//! What one transaction of each workload does, with sysbench's semantics.
//!
//! Every statement picks its table uniformly from `sbtest1..=N` and its id
//! uniformly from `1..=table_size`, as sysbench's `oltp_common.lua` does with
//! the default `--rand-type=uniform`. SQL ranges are computed in Rust on the
//! rows [`Trx::range`] returns.

use std::fmt;
use std::hint::black_box;
use std::str::FromStr;

use rand::rngs::SmallRng;
use rand::Rng;
use serde::Serialize;

use crate::data::table::Row;
use crate::data::trx::Trx;
use crate::engine::TableId;
use crate::error::EngineError;

/// A named workload (the sysbench script it imitates in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// `oltp_point_select`: one `SELECT c FROM sbtestN WHERE id=?` per transaction.
    PointSelect,
    /// `oltp_update_index`: one `UPDATE sbtestN SET k=k+1 WHERE id=?`.
    UpdateIndex,
    /// `oltp_update_non_index`: one `UPDATE sbtestN SET c=? WHERE id=?`.
    UpdateNonIndex,
    /// `oltp_insert`: one `INSERT` of a fresh id (ids never collide between threads).
    Insert,
    /// `oltp_read_write`: 10 point selects, 4 kinds of 100-row ranges, an index
    /// update, a non-index update, and a delete + insert of the same id.
    ReadWrite,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 5] = [
        WorkloadKind::PointSelect,
        WorkloadKind::UpdateIndex,
        WorkloadKind::UpdateNonIndex,
        WorkloadKind::Insert,
        WorkloadKind::ReadWrite,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::PointSelect => "point_select",
            WorkloadKind::UpdateIndex => "update_index",
            WorkloadKind::UpdateNonIndex => "update_non_index",
            WorkloadKind::Insert => "insert",
            WorkloadKind::ReadWrite => "read_write",
        }
    }

    /// True when no transaction of this kind writes.
    pub fn is_read_only(self) -> bool {
        self == WorkloadKind::PointSelect
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A workload name that is not one of [`WorkloadKind::ALL`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown workload `{0}`: choose one of point_select, update_index, update_non_index, insert, read_write")]
pub struct UnknownWorkload(pub String);

impl FromStr for WorkloadKind {
    type Err = UnknownWorkload;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WorkloadKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownWorkload(s.to_string()))
    }
}

/// sysbench `oltp_read_write` defaults.
pub mod read_write_shape {
    pub const POINT_SELECTS: usize = 10;
    pub const SIMPLE_RANGES: usize = 1;
    pub const SUM_RANGES: usize = 1;
    pub const ORDER_RANGES: usize = 1;
    pub const DISTINCT_RANGES: usize = 1;
    pub const RANGE_SIZE: i64 = 100;
    pub const INDEX_UPDATES: usize = 1;
    pub const NON_INDEX_UPDATES: usize = 1;
    pub const DELETE_INSERTS: usize = 1;
}

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

/// One user thread's transaction generator.
pub struct TxnGen {
    rng: SmallRng,
    /// Index `i` holds the id of table `sbtest{i+1}`.
    tables: Vec<TableId>,
    table_size: i64,
    insert_ids: InsertIds,
}

impl TxnGen {
    pub fn new(
        rng: SmallRng,
        tables: Vec<TableId>,
        table_size: u64,
        insert_ids: InsertIds,
    ) -> Self {
        assert!(!tables.is_empty(), "a workload needs at least one table");
        TxnGen {
            rng,
            tables,
            table_size: table_size as i64,
            insert_ids,
        }
    }

    /// A uniformly random table index.
    fn table_index(&mut self) -> usize {
        self.rng.gen_range(0..self.tables.len())
    }

    /// A uniformly random table and id, like sysbench's `get_table_num()` and `get_id()`.
    fn pick(&mut self) -> (TableId, i64) {
        let ti = self.table_index();
        let t = self.tables[ti];
        (t, self.rng.gen_range(1..=self.table_size))
    }

    fn random_k(&mut self) -> i32 {
        // `TxnGen::new` callers validate table_size <= i32::MAX.
        self.rng.gen_range(1..=self.table_size) as i32
    }

    fn random_row(&mut self) -> Row {
        Row {
            k: self.random_k(),
            c: random_c(&mut self.rng),
            pad: random_pad(&mut self.rng),
        }
    }

    /// Runs the statements of one `kind` transaction inside `trx` (the caller
    /// commits or rolls back). Returns the inserted row for `insert`.
    pub fn execute(
        &mut self,
        kind: WorkloadKind,
        trx: &mut Trx,
    ) -> Result<Option<Ack>, EngineError> {
        match kind {
            WorkloadKind::PointSelect => {
                self.point_select(trx)?;
                Ok(None)
            }
            WorkloadKind::UpdateIndex => {
                self.index_update(trx)?;
                Ok(None)
            }
            WorkloadKind::UpdateNonIndex => {
                self.non_index_update(trx)?;
                Ok(None)
            }
            WorkloadKind::Insert => {
                let ti = self.table_index();
                let (table, id) = (self.tables[ti], self.insert_ids.take(ti));
                let row = self.random_row();
                trx.insert(table, id, row)?;
                Ok(Some((table, id)))
            }
            WorkloadKind::ReadWrite => {
                self.read_write(trx)?;
                Ok(None)
            }
        }
    }

    /// `SELECT c FROM sbtestN WHERE id=?`
    fn point_select(&mut self, trx: &mut Trx) -> Result<(), EngineError> {
        let (t, id) = self.pick();
        black_box(trx.get(t, id)?.map(|r| r.c));
        Ok(())
    }

    /// `UPDATE sbtestN SET k=k+1 WHERE id=?`
    fn index_update(&mut self, trx: &mut Trx) -> Result<(), EngineError> {
        let (t, id) = self.pick();
        trx.update_k(t, id, 1)?;
        Ok(())
    }

    /// `UPDATE sbtestN SET c=? WHERE id=?`
    fn non_index_update(&mut self, trx: &mut Trx) -> Result<(), EngineError> {
        let (t, id) = self.pick();
        let c = random_c(&mut self.rng);
        trx.update_c(t, id, c)?;
        Ok(())
    }

    /// A random `id BETWEEN start AND start+99` range, as sysbench draws it.
    fn pick_range(&mut self) -> (TableId, i64, i64) {
        let (t, start) = self.pick();
        (t, start, start + read_write_shape::RANGE_SIZE - 1)
    }

    /// sysbench `oltp_read_write`, statement for statement.
    fn read_write(&mut self, trx: &mut Trx) -> Result<(), EngineError> {
        use read_write_shape::*;
        for _ in 0..POINT_SELECTS {
            self.point_select(trx)?;
        }
        for _ in 0..SIMPLE_RANGES {
            // SELECT c FROM sbtestN WHERE id BETWEEN ? AND ?
            let (t, lo, hi) = self.pick_range();
            let cs: Vec<String> = trx
                .range(t, lo, hi)?
                .into_iter()
                .map(|(_, r)| r.c)
                .collect();
            black_box(cs);
        }
        for _ in 0..SUM_RANGES {
            // SELECT SUM(k) FROM sbtestN WHERE id BETWEEN ? AND ?
            let (t, lo, hi) = self.pick_range();
            let sum: i64 = trx
                .range(t, lo, hi)?
                .iter()
                .map(|(_, r)| i64::from(r.k))
                .sum();
            black_box(sum);
        }
        for _ in 0..ORDER_RANGES {
            // SELECT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c
            let (t, lo, hi) = self.pick_range();
            let mut cs: Vec<String> = trx
                .range(t, lo, hi)?
                .into_iter()
                .map(|(_, r)| r.c)
                .collect();
            cs.sort_unstable();
            black_box(cs);
        }
        for _ in 0..DISTINCT_RANGES {
            // SELECT DISTINCT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c
            let (t, lo, hi) = self.pick_range();
            let mut cs: Vec<String> = trx
                .range(t, lo, hi)?
                .into_iter()
                .map(|(_, r)| r.c)
                .collect();
            cs.sort_unstable();
            cs.dedup();
            black_box(cs);
        }
        for _ in 0..INDEX_UPDATES {
            self.index_update(trx)?;
        }
        for _ in 0..NON_INDEX_UPDATES {
            self.non_index_update(trx)?;
        }
        for _ in 0..DELETE_INSERTS {
            // DELETE FROM sbtestN WHERE id=?; INSERT INTO sbtestN (id, k, c, pad) VALUES (?, ?, ?, ?)
            let (t, id) = self.pick();
            trx.delete(t, id)?;
            let row = self.random_row();
            trx.insert(t, id, row)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn names_round_trip() {
        for k in WorkloadKind::ALL {
            assert_eq!(k.name().parse::<WorkloadKind>().unwrap(), k);
            assert_eq!(k.to_string(), k.name());
        }
        let err = "oltp_insert".parse::<WorkloadKind>().unwrap_err();
        assert!(err.to_string().contains("read_write"), "{err}");
    }

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
