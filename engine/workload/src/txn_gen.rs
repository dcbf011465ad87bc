//! One user thread's transaction generator, and the sysbench statements.
//!
//! Every statement picks its table uniformly from `sbtest1..=N` and its id
//! from `1..=table_size` with the run's key distribution (uniform unless told
//! otherwise, as sysbench's `--rand-type`). SQL ranges are computed in Rust on
//! the rows [`Trx::range`] returns. [`TxnGen`] runs a statement [`Mix`] per
//! transaction, or a TPCC-lite transaction ([`super::tpcc`]), counting what
//! it executes ([`OpCounts`]).

use std::hint::black_box;

use rand::rngs::SmallRng;
use rand::Rng;

use super::access::KeySampler;
use super::kinds::read_write_shape;
use super::mix::{Mix, Statement};
use super::tpcc::TpccGen;
use super::txn::{random_c, random_pad, Ack, InsertIds, OpCounts, Outcome, StatementError};
use redoctor_engine::Row;
use redoctor_engine::TableId;
use redoctor_engine::Trx;

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
fn pick(p: &SbtestPlan, rng: &mut SmallRng) -> (TableId, i64) {
    let ti = rng.gen_range(0..p.tables.len());
    (p.tables[ti], p.keys.sample(rng))
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
    let (t, lo) = pick(p, rng);
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
            let (t, id) = pick(p, rng);
            black_box(trx.get(t, id)?.map(|r| r.c));
        }
        Statement::SimpleRange => {
            black_box(range_cs(p, rng, trx)?);
        }
        Statement::SumRange => {
            let (t, lo) = pick(p, rng);
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
            let (t, id) = pick(p, rng);
            trx.update_k(t, id, 1)?;
        }
        Statement::UpdateNonIndex => {
            let (t, id) = pick(p, rng);
            trx.update_c(t, id, random_c(rng))?;
        }
        Statement::DeleteInsert => {
            let (t, id) = pick(p, rng);
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
