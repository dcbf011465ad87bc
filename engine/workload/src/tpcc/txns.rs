//! TPCC-lite's two transactions, new-order and payment, in TPC-C's mix.

use rand::rngs::SmallRng;
use rand::Rng;

use super::{
    customer_key, district_key, encode_fields, field, order_key, order_line_key, row, set_field,
    stock_key, TpccTables, A_CUSTOMER, A_ITEM, CUSTOMERS_PER_DISTRICT, C_CUSTOMER, C_ITEM,
    DISTRICTS, ITEMS, NEW_ORDER_WEIGHT, PAYMENT_WEIGHT,
};
use crate::txn::{InsertIds, OpCounts, Outcome, StatementError};
use redoctor_engine::Row;
use redoctor_engine::TableId;
use redoctor_engine::Trx;

/// TPC-C's non-uniform random number NURand(A, x, y) with run constant `c`.
pub fn nurand(rng: &mut impl Rng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    ((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1) + x
}

/// One user thread's TPCC-lite transactions.
pub struct TpccGen {
    t: TpccTables,
    warehouses: u32,
    home: u32,
    history_ids: InsertIds,
}

impl TpccGen {
    /// The generator of user thread `thread` of `users`; history ids start at `first_history_id`.
    pub fn new(
        t: TpccTables,
        warehouses: u32,
        thread: usize,
        users: usize,
        first_history_id: i64,
    ) -> TpccGen {
        TpccGen {
            t,
            warehouses,
            home: (thread as u32 % warehouses) + 1,
            history_ids: InsertIds::new(&[first_history_id], thread, users),
        }
    }

    /// A warehouse other than `w` (when there is one).
    fn other_warehouse(&self, rng: &mut SmallRng, w: u32) -> u32 {
        if self.warehouses == 1 {
            return w;
        }
        let o = rng.gen_range(1..self.warehouses);
        if o >= w {
            o + 1
        } else {
            o
        }
    }

    pub fn execute(
        &mut self,
        rng: &mut SmallRng,
        counts: &mut OpCounts,
        trx: &mut Trx,
    ) -> Result<Outcome, StatementError> {
        if rng.gen_range(0..NEW_ORDER_WEIGHT + PAYMENT_WEIGHT) < NEW_ORDER_WEIGHT {
            counts.tpcc_new_order += 1;
            let outcome = self.new_order(rng, trx)?;
            if outcome == Outcome::Rollback {
                counts.planned_rollbacks += 1;
            }
            Ok(outcome)
        } else {
            counts.tpcc_payment += 1;
            self.payment(rng, trx)
        }
    }

    /// Locks row `id` (`SELECT ... FOR UPDATE`) and reads it.
    fn read_for_update(trx: &mut Trx, table: TableId, id: i64) -> Result<Row, StatementError> {
        trx.update_k(table, id, 0)?;
        trx.get(table, id)?
            .ok_or(StatementError::MissingRow { table, id })
    }

    fn new_order(&mut self, rng: &mut SmallRng, trx: &mut Trx) -> Result<Outcome, StatementError> {
        let t = self.t;
        let w = self.home;
        let d = rng.gen_range(1..=DISTRICTS);
        let c = nurand(rng, A_CUSTOMER, C_CUSTOMER, 1, CUSTOMERS_PER_DISTRICT);
        let ol_cnt = rng.gen_range(5..=15u32);
        let unknown_item = rng.gen_ratio(1, 100);

        std::hint::black_box(trx.get(t.warehouse, i64::from(w))?.map(|r| r.k));
        let dk = district_key(w, d);
        trx.update_k(t.district, dk, 1)?;
        let district = trx.get(t.district, dk)?.ok_or(StatementError::MissingRow {
            table: t.district,
            id: dk,
        })?;
        let o_id = i64::from(district.k) - 1;
        std::hint::black_box(trx.get(t.customer, customer_key(w, d, c))?.map(|r| r.k));
        let mut all_local = 1;
        let mut lines = Vec::with_capacity(ol_cnt as usize);
        for ol in 1..=ol_cnt {
            let item = if unknown_item && ol == ol_cnt {
                ITEMS + 1
            } else {
                nurand(rng, A_ITEM, C_ITEM, 1, ITEMS)
            };
            let supply = if rng.gen_ratio(1, 100) {
                self.other_warehouse(rng, w)
            } else {
                w
            };
            all_local &= i64::from(supply == w);
            lines.push((ol, item, supply, rng.gen_range(1..=10i64)));
        }
        let order = order_key(w, d, o_id);
        let fields = encode_fields(&[("ol_cnt", i64::from(ol_cnt)), ("local", all_local)]);
        trx.insert(t.orders, order, row(c as i32, fields))?;
        trx.insert(t.new_order, order, row(0, String::new()))?;
        for (ol, item, supply, qty) in lines {
            let Some(item_row) = trx.get(t.item, i64::from(item))? else {
                // "Item number is not valid": the transaction is rolled back.
                return Ok(Outcome::Rollback);
            };
            let sk = stock_key(supply, item);
            let stock = Self::read_for_update(trx, t.stock, sk)?;
            let q = i64::from(stock.k);
            let new_q = if q >= qty + 10 { q - qty } else { q - qty + 91 };
            trx.update_k(t.stock, sk, (new_q - q) as i32)?;
            let mut c = set_field(&stock.c, "ytd", field(&stock.c, "ytd").unwrap_or(0) + qty);
            c = set_field(&c, "ocnt", field(&c, "ocnt").unwrap_or(0) + 1);
            if supply != w {
                c = set_field(&c, "rcnt", field(&c, "rcnt").unwrap_or(0) + 1);
            }
            trx.update_c(t.stock, sk, c)?;
            let amount = qty * i64::from(item_row.k);
            let fields = [("w", i64::from(supply)), ("qty", qty), ("amount", amount)];
            trx.insert(
                t.order_line,
                order_line_key(order, ol),
                row(item as i32, encode_fields(&fields)),
            )?;
        }
        Ok(Outcome::Commit(None))
    }

    /// Adds `amount` to field `name` of a locked row.
    fn add_field(
        trx: &mut Trx,
        table: TableId,
        id: i64,
        changes: &[(&str, i64)],
    ) -> Result<(), StatementError> {
        let r = Self::read_for_update(trx, table, id)?;
        let mut c = r.c;
        for &(name, delta) in changes {
            c = set_field(&c, name, field(&c, name).unwrap_or(0) + delta);
        }
        trx.update_c(table, id, c)?;
        Ok(())
    }

    fn payment(&mut self, rng: &mut SmallRng, trx: &mut Trx) -> Result<Outcome, StatementError> {
        let t = self.t;
        let w = self.home;
        let d = rng.gen_range(1..=DISTRICTS);
        let (cw, cd) = if self.warehouses > 1 && rng.gen_ratio(15, 100) {
            (self.other_warehouse(rng, w), rng.gen_range(1..=DISTRICTS))
        } else {
            (w, d)
        };
        let c = nurand(rng, A_CUSTOMER, C_CUSTOMER, 1, CUSTOMERS_PER_DISTRICT);
        let amount = rng.gen_range(100..=500_000i64);
        Self::add_field(trx, t.warehouse, i64::from(w), &[("ytd", amount)])?;
        Self::add_field(trx, t.district, district_key(w, d), &[("ytd", amount)])?;
        Self::add_field(
            trx,
            t.customer,
            customer_key(cw, cd, c),
            &[("bal", -amount), ("ytd", amount), ("cnt", 1)],
        )?;
        let fields = [
            ("cw", i64::from(cw)),
            ("cd", i64::from(cd)),
            ("w", i64::from(w)),
            ("d", i64::from(d)),
            ("amount", amount),
        ];
        let id = self.history_ids.take(0);
        trx.insert(t.history, id, row(c as i32, encode_fields(&fields)))?;
        Ok(Outcome::Commit(None))
    }
}
