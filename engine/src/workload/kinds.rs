//! The named workloads, and what one transaction of each does.
//!
//! The sysbench workloads are fixed statement mixes ([`WorkloadKind::mix`])
//! executed with sysbench's semantics: every statement picks its table
//! uniformly from `sbtest1..=N` and its id from `1..=table_size` with the
//! run's key distribution (uniform unless told otherwise, as sysbench's
//! `--rand-type`). SQL ranges are computed in Rust on the rows
//! [`Trx::range`] returns. TPCC-lite lives in [`super::tpcc`].

use std::fmt;
use std::hint::black_box;
use std::str::FromStr;

use rand::rngs::SmallRng;
use rand::Rng;
use serde::Serialize;

use super::access::KeySampler;
use super::mix::{Mix, MixError, Statement};
use super::tpcc::TpccGen;
use crate::data::table::Row;
use crate::data::trx::Trx;
use crate::engine::TableId;
use crate::error::EngineError;

/// A named workload (the original it imitates in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// `oltp_point_select`: one `SELECT c FROM sbtestN WHERE id=?` per transaction.
    PointSelect,
    /// `oltp_update_index`: one `UPDATE sbtestN SET k=k+1 WHERE id=?` ("UPDATEs bombarding").
    UpdateIndex,
    /// `oltp_update_non_index`: one `UPDATE sbtestN SET c=? WHERE id=?`.
    UpdateNonIndex,
    /// `oltp_insert`: one `INSERT` of a fresh id ("INSERTs bombarding"; ids never collide).
    Insert,
    /// `oltp_read_write` (OLTP_RW): 10 point selects, 4 kinds of 100-row ranges,
    /// an index update, a non-index update, and a delete + insert of the same id.
    ReadWrite,
    /// OLTP_RW+: `oltp_read_write` without the range selects.
    ReadWritePlus,
    /// OLTP_RW++: one point select plus the writes of `oltp_read_write`.
    ReadWritePlusPlus,
    /// TPCC-lite: new-order and payment in the standard mix (see [`super::tpcc`]).
    Tpcc,
    /// A statement mix given as text (see [`Mix`]).
    Custom,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 9] = [
        WorkloadKind::PointSelect,
        WorkloadKind::UpdateIndex,
        WorkloadKind::UpdateNonIndex,
        WorkloadKind::Insert,
        WorkloadKind::ReadWrite,
        WorkloadKind::ReadWritePlus,
        WorkloadKind::ReadWritePlusPlus,
        WorkloadKind::Tpcc,
        WorkloadKind::Custom,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::PointSelect => "point_select",
            WorkloadKind::UpdateIndex => "update_index",
            WorkloadKind::UpdateNonIndex => "update_non_index",
            WorkloadKind::Insert => "insert",
            WorkloadKind::ReadWrite => "read_write",
            WorkloadKind::ReadWritePlus => "read_write_plus",
            WorkloadKind::ReadWritePlusPlus => "read_write_plus_plus",
            WorkloadKind::Tpcc => "tpcc",
            WorkloadKind::Custom => "custom",
        }
    }

    /// The label the reference articles use (OLTP_RW, OLTP_RW+, ...).
    pub fn label(self) -> &'static str {
        match self {
            WorkloadKind::PointSelect => "point SELECTs",
            WorkloadKind::UpdateIndex => "UPDATEs",
            WorkloadKind::UpdateNonIndex => "UPDATEs (non-index)",
            WorkloadKind::Insert => "INSERTs",
            WorkloadKind::ReadWrite => "OLTP_RW",
            WorkloadKind::ReadWritePlus => "OLTP_RW+",
            WorkloadKind::ReadWritePlusPlus => "OLTP_RW++",
            WorkloadKind::Tpcc => "TPCC-lite",
            WorkloadKind::Custom => "custom mix",
        }
    }

    /// The statements of one transaction of a sysbench workload; None for
    /// TPCC-lite and for a custom mix (which brings its own).
    pub fn mix(self) -> Option<Mix> {
        use read_write_shape::*;
        use Statement as S;
        let writes = [
            (S::UpdateIndex, INDEX_UPDATES),
            (S::UpdateNonIndex, NON_INDEX_UPDATES),
            (S::DeleteInsert, DELETE_INSERTS),
        ];
        let ranges = [
            (S::SimpleRange, SIMPLE_RANGES),
            (S::SumRange, SUM_RANGES),
            (S::OrderRange, ORDER_RANGES),
            (S::DistinctRange, DISTINCT_RANGES),
        ];
        let pairs: Vec<(Statement, u32)> = match self {
            WorkloadKind::PointSelect => vec![(S::PointSelect, 1)],
            WorkloadKind::UpdateIndex => vec![(S::UpdateIndex, 1)],
            WorkloadKind::UpdateNonIndex => vec![(S::UpdateNonIndex, 1)],
            WorkloadKind::Insert => vec![(S::Insert, 1)],
            WorkloadKind::ReadWrite => [(S::PointSelect, POINT_SELECTS)]
                .into_iter()
                .chain(ranges)
                .chain(writes)
                .collect(),
            WorkloadKind::ReadWritePlus => [(S::PointSelect, POINT_SELECTS)]
                .into_iter()
                .chain(writes)
                .collect(),
            WorkloadKind::ReadWritePlusPlus => {
                [(S::PointSelect, 1)].into_iter().chain(writes).collect()
            }
            WorkloadKind::Tpcc | WorkloadKind::Custom => return None,
        };
        Some(Mix::of(&pairs))
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
#[error("unknown workload `{0}`: choose one of point_select, update_index, update_non_index, insert, read_write (oltp_rw), read_write_plus (oltp_rw+), read_write_plus_plus (oltp_rw++), tpcc, or mix:STATEMENT=COUNT,...")]
pub struct UnknownWorkload(pub String);

impl FromStr for WorkloadKind {
    type Err = UnknownWorkload;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let alias = match s {
            "oltp_rw" | "oltp_read_write" => Some(WorkloadKind::ReadWrite),
            "oltp_rw+" => Some(WorkloadKind::ReadWritePlus),
            "oltp_rw++" => Some(WorkloadKind::ReadWritePlusPlus),
            "tpcc_lite" | "tpcc-lite" => Some(WorkloadKind::Tpcc),
            _ => None,
        };
        alias
            .or_else(|| WorkloadKind::ALL.into_iter().find(|k| k.name() == s))
            .ok_or_else(|| UnknownWorkload(s.to_string()))
    }
}

/// A workload as written on the command line or in a sweep grid: a name
/// (`read_write`, `oltp_rw+`, `tpcc`, ...) or `mix:` and a statement mix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkloadSpec {
    pub kind: WorkloadKind,
    /// The custom statement mix (only with [`WorkloadKind::Custom`]).
    pub mix: Option<Mix>,
}

/// Why a workload text was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkloadSpecError {
    #[error(transparent)]
    Unknown(#[from] UnknownWorkload),
    #[error("invalid statement mix `{text}`: {source}")]
    Mix {
        text: String,
        #[source]
        source: MixError,
    },
    #[error("`custom` needs its statements: write `mix:point_select=10,update_index=1` (or pass a mix file)")]
    CustomWithoutMix,
}

impl WorkloadSpec {
    pub fn named(kind: WorkloadKind) -> WorkloadSpec {
        WorkloadSpec { kind, mix: None }
    }

    pub fn custom(mix: Mix) -> WorkloadSpec {
        WorkloadSpec {
            kind: WorkloadKind::Custom,
            mix: Some(mix),
        }
    }
}

impl FromStr for WorkloadSpec {
    type Err = WorkloadSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(text) = s.strip_prefix("mix:") {
            let mix = Mix::parse(text).map_err(|source| WorkloadSpecError::Mix {
                text: text.to_string(),
                source,
            })?;
            return Ok(WorkloadSpec::custom(mix));
        }
        match s.parse::<WorkloadKind>()? {
            WorkloadKind::Custom => Err(WorkloadSpecError::CustomWithoutMix),
            kind => Ok(WorkloadSpec::named(kind)),
        }
    }
}

/// The name of a named workload, `mix:...` for a custom one (parses back).
impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.mix {
            Some(mix) => write!(f, "mix:{mix}"),
            None => f.write_str(self.kind.name()),
        }
    }
}

/// sysbench `oltp_read_write` defaults.
pub mod read_write_shape {
    pub const POINT_SELECTS: u32 = 10;
    pub const SIMPLE_RANGES: u32 = 1;
    pub const SUM_RANGES: u32 = 1;
    pub const ORDER_RANGES: u32 = 1;
    pub const DISTINCT_RANGES: u32 = 1;
    pub const RANGE_SIZE: i64 = 100;
    pub const INDEX_UPDATES: u32 = 1;
    pub const NON_INDEX_UPDATES: u32 = 1;
    pub const DELETE_INSERTS: u32 = 1;
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

impl From<crate::data::trx::TrxError> for StatementError {
    fn from(e: crate::data::trx::TrxError) -> Self {
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
        self.statements[Statement::ALL
            .iter()
            .position(|&x| x == s)
            .expect("ALL lists every statement")]
    }

    fn bump(&mut self, s: Statement) {
        let i = Statement::ALL
            .iter()
            .position(|&x| x == s)
            .expect("ALL lists every statement");
        self.statements[i] += 1;
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

/// A sysbench-style generator's tables and key choice.
pub struct SbtestPlan {
    /// Index `i` holds the id of table `sbtest{i+1}`.
    pub tables: Vec<TableId>,
    /// Draws ids from `1..=table_size`.
    pub keys: KeySampler,
    /// The highest prepared id (`table_size`): `k` values are drawn from `1..=table_size`.
    pub table_size: u64,
    pub insert_ids: InsertIds,
    pub mix: Mix,
}

enum Plan {
    Sbtest(SbtestPlan),
    Tpcc(Box<TpccGen>),
}

/// One user thread's transaction generator.
pub struct TxnGen {
    rng: SmallRng,
    plan: Plan,
    counts: OpCounts,
}

impl TxnGen {
    /// A sysbench-style generator running `plan.mix` per transaction.
    pub fn sbtest(rng: SmallRng, plan: SbtestPlan) -> Self {
        assert!(
            !plan.tables.is_empty(),
            "a workload needs at least one table"
        );
        TxnGen {
            rng,
            plan: Plan::Sbtest(plan),
            counts: OpCounts::default(),
        }
    }

    /// A TPCC-lite generator.
    pub fn tpcc(rng: SmallRng, gen: TpccGen) -> Self {
        TxnGen {
            rng,
            plan: Plan::Tpcc(Box::new(gen)),
            counts: OpCounts::default(),
        }
    }

    /// What this generator executed so far (including attempts that were
    /// rolled back and retried).
    pub fn counts(&self) -> &OpCounts {
        &self.counts
    }

    /// Returns the counts so far and starts counting from zero.
    pub fn take_counts(&mut self) -> OpCounts {
        std::mem::take(&mut self.counts)
    }

    /// Runs the statements of one transaction inside `trx`; the caller
    /// commits or rolls back as the [`Outcome`] says (and rolls back on an error).
    pub fn execute(&mut self, trx: &mut Trx) -> Result<Outcome, StatementError> {
        match &mut self.plan {
            Plan::Sbtest(p) => {
                let ack = run_mix(p, &mut self.rng, &mut self.counts, trx)?;
                Ok(Outcome::Commit(ack))
            }
            Plan::Tpcc(g) => g.execute(&mut self.rng, &mut self.counts, trx),
        }
    }
}

/// Executes one transaction of `p.mix`; returns the last inserted row, if any.
fn run_mix(
    p: &mut SbtestPlan,
    rng: &mut SmallRng,
    counts: &mut OpCounts,
    trx: &mut Trx,
) -> Result<Option<Ack>, StatementError> {
    let mut ack = None;
    let mix = p.mix.clone();
    for (statement, n) in mix.statements() {
        for _ in 0..n {
            counts.bump(statement);
            if let Some(a) = run_statement(p, rng, statement, trx)? {
                ack = Some(a);
            }
        }
    }
    Ok(ack)
}

/// A uniformly random table and an id from the key distribution, like
/// sysbench's `get_table_num()` and `get_id()`.
fn pick(p: &SbtestPlan, rng: &mut SmallRng) -> (usize, TableId, i64) {
    let ti = rng.gen_range(0..p.tables.len());
    (ti, p.tables[ti], p.keys.sample(rng))
}

fn random_row(p: &SbtestPlan, rng: &mut SmallRng) -> Row {
    Row {
        // Callers validate table_size <= i32::MAX.
        k: rng.gen_range(1..=p.table_size.max(1)) as i32,
        c: random_c(rng),
        pad: random_pad(rng),
    }
}

/// The `c` values of a random `id BETWEEN start AND start+99` range.
fn range_cs(
    p: &SbtestPlan,
    rng: &mut SmallRng,
    trx: &mut Trx,
) -> Result<Vec<String>, StatementError> {
    let (_, t, lo) = pick(p, rng);
    let hi = lo + read_write_shape::RANGE_SIZE - 1;
    Ok(trx
        .range(t, lo, hi)?
        .into_iter()
        .map(|(_, r)| r.c)
        .collect())
}

fn run_statement(
    p: &mut SbtestPlan,
    rng: &mut SmallRng,
    statement: Statement,
    trx: &mut Trx,
) -> Result<Option<Ack>, StatementError> {
    match statement {
        Statement::PointSelect => {
            let (_, t, id) = pick(p, rng);
            black_box(trx.get(t, id)?.map(|r| r.c));
        }
        Statement::SimpleRange => {
            black_box(range_cs(p, rng, trx)?);
        }
        Statement::SumRange => {
            let (_, t, lo) = pick(p, rng);
            let hi = lo + read_write_shape::RANGE_SIZE - 1;
            let mut sum = 0i64;
            trx.range_with(t, lo, hi, |_, r| sum += i64::from(r.k))?;
            black_box(sum);
        }
        Statement::OrderRange => {
            let mut cs = range_cs(p, rng, trx)?;
            cs.sort_unstable();
            black_box(cs);
        }
        Statement::DistinctRange => {
            let mut cs = range_cs(p, rng, trx)?;
            cs.sort_unstable();
            cs.dedup();
            black_box(cs);
        }
        Statement::UpdateIndex => {
            let (_, t, id) = pick(p, rng);
            trx.update_k(t, id, 1)?;
        }
        Statement::UpdateNonIndex => {
            let (_, t, id) = pick(p, rng);
            trx.update_c(t, id, random_c(rng))?;
        }
        Statement::DeleteInsert => {
            let (_, t, id) = pick(p, rng);
            trx.delete(t, id)?;
            let row = random_row(p, rng);
            trx.insert(t, id, row)?;
        }
        Statement::Insert => {
            let ti = rng.gen_range(0..p.tables.len());
            let (table, id) = (p.tables[ti], p.insert_ids.take(ti));
            let row = random_row(p, rng);
            trx.insert(table, id, row)?;
            return Ok(Some((table, id)));
        }
    }
    Ok(None)
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
        assert_eq!(
            "oltp_rw++".parse::<WorkloadKind>().unwrap(),
            WorkloadKind::ReadWritePlusPlus
        );
        for text in ["read_write", "tpcc", "mix:point_select=10,insert=1"] {
            let spec: WorkloadSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
        }
        assert!(matches!(
            "custom".parse::<WorkloadSpec>(),
            Err(WorkloadSpecError::CustomWithoutMix)
        ));
        assert!(matches!(
            "mix:point_select=x".parse::<WorkloadSpec>(),
            Err(WorkloadSpecError::Mix { .. })
        ));
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
