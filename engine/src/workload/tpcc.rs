//! TPCC-lite: TPC-C's new-order and payment transactions on sbtest-shaped rows.
//!
//! The engine stores rows `Row { k: i32, c: String, pad: String }` keyed by an
//! `i64` id, so each TPC-C table is one engine table and its composite key is
//! encoded into the id; the one column that changes by increments lives in
//! `k`, every other number is a `name=value;...` field list in `c`
//! ([`encode_fields`], [`field`]). Money is in cents.
//!
//! | table             | id                              | k              | c (fields)                                  |
//! |-------------------|---------------------------------|----------------|---------------------------------------------|
//! | `tpcc_warehouse`  | `w`                             | tax (1/10000)  | `ytd`                                       |
//! | `tpcc_district`   | `w*100 + d`                     | `d_next_o_id`  | `ytd`, `tax`                                |
//! | `tpcc_customer`   | `(w*100 + d)*100000 + c`        | discount (1/10000) | `bal`, `ytd`, `cnt` (payments), `bc` (bad credit 0/1) |
//! | `tpcc_item`       | `i`                             | price          | (name; `pad` holds the data)                |
//! | `tpcc_stock`      | `w*1000000 + i`                 | `s_quantity`   | `ytd`, `ocnt`, `rcnt`                       |
//! | `tpcc_orders`     | `(w*100 + d)*10^7 + o`          | `o_c_id`       | `ol_cnt`, `local` (all local 0/1)           |
//! | `tpcc_new_order`  | as `tpcc_orders`                | 0              | (empty)                                     |
//! | `tpcc_order_line` | `orders id * 16 + ol_number`    | `ol_i_id`      | `w` (supply), `qty`, `amount`               |
//! | `tpcc_history`    | a fresh sequence number         | `h_c_id`       | `cw`, `cd` (customer's), `w`, `d`, `amount` |
//!
//! Scale ("lite"): 10 districts per warehouse as TPC-C, but 300 customers per
//! district (TPC-C: 3000) and 10 000 items (TPC-C: 100 000), so a warehouse
//! loads in well under a second; no initial orders are loaded (TPC-C loads
//! 3000 per district), so `d_next_o_id` starts at 1. Customers are chosen by
//! id with NURand (TPC-C picks 60 % of payment customers by last name; there is
//! no name index here). Each user thread has a home warehouse (`thread % W +
//! 1`), as TPC-C terminals do.
//!
//! The transactions follow TPC-C 2.4 and 2.5: new-order reads the warehouse,
//! increments the district's next order id, reads the customer, inserts the
//! order and new-order rows, then for 5..=15 lines reads the item, updates the
//! stock (1 % from a remote warehouse when there are several) and inserts the
//! order line; 1 % of new-orders name an unknown item in the last line and are
//! rolled back. Payment adds the amount to the warehouse's and district's YTD,
//! updates the customer's balance (15 % of customers belong to a remote
//! warehouse when there are several) and inserts a history row. Read-modify-
//! write rows are locked before they are read (`SELECT ... FOR UPDATE`: a
//! `k = k + 0` update takes the lock). The mix is TPC-C's 45 : 43 ratio of the
//! two transactions.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::Rng;

use super::kinds::{InsertIds, OpCounts, Outcome, StatementError};
use crate::data::table::Row;
use crate::data::trx::Trx;
use crate::engine::{Engine, TableId};
use crate::error::EngineError;

pub const DISTRICTS: u32 = 10;
pub const CUSTOMERS_PER_DISTRICT: u32 = 300;
pub const ITEMS: u32 = 10_000;
/// Most warehouses (the key encodings leave room for far more).
pub const MAX_WAREHOUSES: u32 = 1000;
/// Initial `w_ytd` (300 000.00) and `d_ytd` (30 000.00), in cents.
pub const INITIAL_W_YTD: i64 = 30_000_000;
pub const INITIAL_D_YTD: i64 = 3_000_000;
/// New-order : payment weights (TPC-C's 45 % and 43 %).
pub const NEW_ORDER_WEIGHT: u32 = 45;
pub const PAYMENT_WEIGHT: u32 = 43;

const A_CUSTOMER: u32 = 255;
const A_ITEM: u32 = 4095;
const C_CUSTOMER: u32 = 123;
const C_ITEM: u32 = 2045;

pub const TABLES: [&str; 9] = [
    "tpcc_warehouse",
    "tpcc_district",
    "tpcc_customer",
    "tpcc_item",
    "tpcc_stock",
    "tpcc_orders",
    "tpcc_new_order",
    "tpcc_order_line",
    "tpcc_history",
];

pub fn district_key(w: u32, d: u32) -> i64 {
    i64::from(w) * 100 + i64::from(d)
}
pub fn customer_key(w: u32, d: u32, c: u32) -> i64 {
    district_key(w, d) * 100_000 + i64::from(c)
}
pub fn stock_key(w: u32, i: u32) -> i64 {
    i64::from(w) * 1_000_000 + i64::from(i)
}
pub fn order_key(w: u32, d: u32, o: i64) -> i64 {
    district_key(w, d) * 10_000_000 + o
}
pub fn order_line_key(order: i64, ol: u32) -> i64 {
    order * 16 + i64::from(ol)
}
/// `(w, d, o)` of an orders / new-order id.
pub fn split_order_key(key: i64) -> (u32, u32, i64) {
    let dk = key / 10_000_000;
    ((dk / 100) as u32, (dk % 100) as u32, key % 10_000_000)
}

/// `name=value;name=value` (the `c` column's fixed format).
pub fn encode_fields(fields: &[(&str, i64)]) -> String {
    fields
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// The value of field `name` in a `c` column written by [`encode_fields`].
pub fn field(c: &str, name: &str) -> Option<i64> {
    c.split(';')
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// Replaces (or appends) field `name`.
fn set_field(c: &str, name: &str, value: i64) -> String {
    let mut found = false;
    let mut parts: Vec<String> = c
        .split(';')
        .filter(|s| !s.is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((n, _)) if n == name => {
                found = true;
                format!("{name}={value}")
            }
            _ => kv.to_string(),
        })
        .collect();
    if !found {
        parts.push(format!("{name}={value}"));
    }
    parts.join(";")
}

/// TPCC-lite errors outside a transaction: loading and checking.
#[derive(Debug, thiserror::Error)]
pub enum TpccError {
    #[error("warehouses must be 1..={MAX_WAREHOUSES}, not {0}")]
    Warehouses(u32),
    #[error("the data directory holds TPCC-lite tables for {found} warehouses, not {wanted}: use a fresh --datadir or --warehouses {found}")]
    ScaleMismatch { found: usize, wanted: u32 },
    #[error("table `{0}` is missing: prepare TPCC-lite first (tpcc::prepare)")]
    MissingTable(&'static str),
    #[error("engine error while {doing}: {source}")]
    Engine {
        doing: &'static str,
        #[source]
        source: EngineError,
    },
}

/// The engine ids of the TPCC-lite tables.
#[derive(Debug, Clone, Copy)]
pub struct TpccTables {
    pub warehouse: TableId,
    pub district: TableId,
    pub customer: TableId,
    pub item: TableId,
    pub stock: TableId,
    pub orders: TableId,
    pub new_order: TableId,
    pub order_line: TableId,
    pub history: TableId,
}

impl TpccTables {
    /// Looks the tables up.
    pub fn resolve(engine: &Engine) -> Result<TpccTables, TpccError> {
        let id = |name: &'static str| engine.table_id(name).ok_or(TpccError::MissingTable(name));
        Ok(TpccTables {
            warehouse: id(TABLES[0])?,
            district: id(TABLES[1])?,
            customer: id(TABLES[2])?,
            item: id(TABLES[3])?,
            stock: id(TABLES[4])?,
            orders: id(TABLES[5])?,
            new_order: id(TABLES[6])?,
            order_line: id(TABLES[7])?,
            history: id(TABLES[8])?,
        })
    }
}

fn engine_err(doing: &'static str) -> impl FnOnce(EngineError) -> TpccError {
    move |source| TpccError::Engine { doing, source }
}

/// Rows per load transaction.
const LOAD_BATCH: usize = 100;

/// Inserts `rows` into `table` in transactions of [`LOAD_BATCH`] rows.
fn load(
    engine: &Engine,
    table: TableId,
    rows: impl Iterator<Item = (i64, Row)>,
) -> Result<(), EngineError> {
    let mut trx = engine.begin();
    let mut n = 0;
    for (id, row) in rows {
        if let Err(e) = trx.insert(table, id, row) {
            engine.rollback(trx);
            return Err(e.into());
        }
        n += 1;
        if n % LOAD_BATCH == 0 {
            engine.commit(std::mem::replace(&mut trx, engine.begin()))?;
        }
    }
    engine.commit(trx)?;
    Ok(())
}

fn row(k: i32, c: String) -> Row {
    Row {
        k,
        c,
        pad: String::new(),
    }
}

/// Creates and loads the TPCC-lite tables for `warehouses` warehouses unless
/// they are already there (then the warehouse count must match), and
/// checkpoints. Deterministic: the same warehouses give the same data.
pub fn prepare(engine: &Engine, warehouses: u32) -> Result<(), TpccError> {
    if warehouses == 0 || warehouses > MAX_WAREHOUSES {
        return Err(TpccError::Warehouses(warehouses));
    }
    if let Some(wt) = engine.table_id(TABLES[0]) {
        let mut trx = engine.begin();
        let found = trx
            .range(wt, 1, i64::from(MAX_WAREHOUSES))
            .map_err(|e| engine_err("counting warehouses")(e.into()))?
            .len();
        engine.rollback(trx);
        if found == warehouses as usize {
            return Ok(());
        }
        if found > 0 {
            return Err(TpccError::ScaleMismatch {
                found,
                wanted: warehouses,
            });
        }
    }
    for name in TABLES {
        if engine.table_id(name).is_none() {
            engine
                .create_table(name)
                .map_err(engine_err("creating the TPCC-lite tables"))?;
        }
    }
    let t = TpccTables::resolve(engine)?;
    let mut rng = <SmallRng as rand::SeedableRng>::seed_from_u64(0x7bcc);
    let rng = &mut rng;
    let err = engine_err("loading the TPCC-lite tables");
    let items: Vec<(i64, Row)> = (1..=ITEMS)
        .map(|i| {
            let mut r = row(rng.gen_range(100..=10_000), format!("item-{i}"));
            r.pad = super::kinds::random_pad(rng);
            (i64::from(i), r)
        })
        .collect();
    load(engine, t.item, items.into_iter()).map_err(err)?;
    for w in 1..=warehouses {
        let err = engine_err("loading the TPCC-lite tables");
        let wh = row(
            rng.gen_range(0..=2000),
            encode_fields(&[("ytd", INITIAL_W_YTD)]),
        );
        load(engine, t.warehouse, std::iter::once((i64::from(w), wh))).map_err(err)?;
        let districts: Vec<(i64, Row)> = (1..=DISTRICTS)
            .map(|d| {
                let tax = rng.gen_range(0..=2000);
                (
                    district_key(w, d),
                    row(1, encode_fields(&[("ytd", INITIAL_D_YTD), ("tax", tax)])),
                )
            })
            .collect();
        load(engine, t.district, districts.into_iter())
            .map_err(engine_err("loading the TPCC-lite districts"))?;
        let mut customers = Vec::with_capacity((DISTRICTS * CUSTOMERS_PER_DISTRICT) as usize);
        for d in 1..=DISTRICTS {
            for c in 1..=CUSTOMERS_PER_DISTRICT {
                let bad = i64::from(rng.gen_ratio(1, 10));
                let fields = [("bal", -1000), ("ytd", 1000), ("cnt", 1), ("bc", bad)];
                customers.push((
                    customer_key(w, d, c),
                    row(rng.gen_range(0..=5000), encode_fields(&fields)),
                ));
            }
        }
        load(engine, t.customer, customers.into_iter())
            .map_err(engine_err("loading the TPCC-lite customers"))?;
        let stock: Vec<(i64, Row)> = (1..=ITEMS)
            .map(|i| {
                let fields = [("ytd", 0), ("ocnt", 0), ("rcnt", 0)];
                (
                    stock_key(w, i),
                    row(rng.gen_range(10..=100), encode_fields(&fields)),
                )
            })
            .collect();
        load(engine, t.stock, stock.into_iter())
            .map_err(engine_err("loading the TPCC-lite stock"))?;
    }
    engine
        .checkpoint()
        .map_err(engine_err("checkpointing after the TPCC-lite load"))?;
    Ok(())
}

/// The lowest history id above every existing one (history ids are a sequence).
pub fn first_free_history_id(engine: &Engine, t: &TpccTables) -> Result<i64, TpccError> {
    let mut trx = engine.begin();
    let mut max = 0;
    let r = trx.range_with(t.history, 1, i64::MAX, |id, _| max = max.max(id));
    engine.rollback(trx);
    r.map_err(|e| engine_err("looking for free history ids")(e.into()))?;
    Ok(max + 1)
}

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

/// What [`check_consistency`] found.
#[derive(Debug, Clone, Default)]
pub struct TpccCheck {
    pub orders: usize,
    pub order_lines: usize,
    pub history: usize,
    /// Every broken condition, in words; empty when consistent.
    pub violations: Vec<String>,
}

/// TPC-C's consistency conditions 1-4 (clause 3.3.2), on the committed data:
/// 1. `w_ytd = sum(d_ytd)` per warehouse;
/// 2. `d_next_o_id - 1 = max(o_id) = max(no_o_id)` per district (and, as no
///    delivery runs, the order ids are exactly `1..d_next_o_id`);
/// 3. new-order rows are exactly the orders (no delivery);
/// 4. `sum(o_ol_cnt)` = number of order lines, per district;
///
/// plus: each warehouse's YTD growth equals the sum of its history amounts.
pub fn check_consistency(engine: &Engine, warehouses: u32) -> Result<TpccCheck, TpccError> {
    let mut dump = engine.dump();
    let mut take = |name: &'static str| dump.remove(name).ok_or(TpccError::MissingTable(name));
    let wh = take("tpcc_warehouse")?;
    let di = take("tpcc_district")?;
    let orders = take("tpcc_orders")?;
    let new_orders = take("tpcc_new_order")?;
    let lines = take("tpcc_order_line")?;
    let history = take("tpcc_history")?;
    let mut check = TpccCheck {
        orders: orders.len(),
        order_lines: lines.len(),
        history: history.len(),
        violations: Vec::new(),
    };
    let v = &mut check.violations;
    let ytd = |r: &Row| field(&r.c, "ytd").unwrap_or(i64::MIN);

    let mut paid: BTreeMap<u32, i64> = BTreeMap::new();
    for h in history.values() {
        let w = field(&h.c, "w").unwrap_or(0) as u32;
        *paid.entry(w).or_default() += field(&h.c, "amount").unwrap_or(0);
    }
    let mut by_district: BTreeMap<(u32, u32), Vec<i64>> = BTreeMap::new();
    let mut ol_cnt: BTreeMap<(u32, u32), i64> = BTreeMap::new();
    for (&key, o) in &orders {
        let (w, d, o_id) = split_order_key(key);
        by_district.entry((w, d)).or_default().push(o_id);
        *ol_cnt.entry((w, d)).or_default() += field(&o.c, "ol_cnt").unwrap_or(0);
        if !new_orders.contains_key(&key) {
            v.push(format!("order {w}/{d}/{o_id} has no new-order row"));
        }
    }
    for &key in new_orders.keys() {
        if !orders.contains_key(&key) {
            v.push(format!("new-order row {key} has no order"));
        }
    }
    let mut lines_per: BTreeMap<(u32, u32), i64> = BTreeMap::new();
    for &key in lines.keys() {
        let (w, d, _) = split_order_key(key / 16);
        *lines_per.entry((w, d)).or_default() += 1;
    }
    for w in 1..=warehouses {
        let Some(wr) = wh.get(&i64::from(w)) else {
            v.push(format!("warehouse {w} is missing"));
            continue;
        };
        let mut sum_d = 0;
        for d in 1..=DISTRICTS {
            let Some(dr) = di.get(&district_key(w, d)) else {
                v.push(format!("district {w}/{d} is missing"));
                continue;
            };
            sum_d += ytd(dr);
            let next = i64::from(dr.k);
            let mut ids = by_district.remove(&(w, d)).unwrap_or_default();
            ids.sort_unstable();
            let expected: Vec<i64> = (1..next).collect();
            if ids != expected {
                v.push(format!(
                    "district {w}/{d}: d_next_o_id is {next} but the orders are {} (max {:?}); expected ids 1..{next}",
                    ids.len(),
                    ids.last()
                ));
            }
            let want = ol_cnt.get(&(w, d)).copied().unwrap_or(0);
            let have = lines_per.get(&(w, d)).copied().unwrap_or(0);
            if want != have {
                v.push(format!(
                    "district {w}/{d}: sum(o_ol_cnt) is {want} but there are {have} order lines"
                ));
            }
        }
        if ytd(wr) != sum_d {
            v.push(format!(
                "warehouse {w}: w_ytd {} != sum(d_ytd) {sum_d}",
                ytd(wr)
            ));
        }
        let growth = ytd(wr) - INITIAL_W_YTD;
        let h = paid.get(&w).copied().unwrap_or(0);
        if growth != h {
            v.push(format!(
                "warehouse {w}: w_ytd grew by {growth} but its history amounts sum to {h}"
            ));
        }
    }
    for (w, d) in by_district.keys() {
        v.push(format!("orders of unknown district {w}/{d}"));
    }
    Ok(check)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_fields() {
        let o = order_key(7, 10, 1234);
        assert_eq!(split_order_key(o), (7, 10, 1234));
        assert_eq!(split_order_key(order_line_key(o, 15) / 16), (7, 10, 1234));
        let c = encode_fields(&[("ytd", -5), ("tax", 12)]);
        assert_eq!(c, "ytd=-5;tax=12");
        assert_eq!(field(&c, "tax"), Some(12));
        assert_eq!(field(&c, "ta"), None);
        assert_eq!(set_field(&c, "ytd", 9), "ytd=9;tax=12");
        assert_eq!(set_field("", "x", 1), "x=1");
        assert!(customer_key(1, 10, 300) < customer_key(2, 1, 1));
        assert!(stock_key(1, ITEMS) < stock_key(2, 1));
    }

    #[test]
    fn nurand_stays_in_range() {
        let mut rng = <SmallRng as rand::SeedableRng>::seed_from_u64(1);
        for _ in 0..10_000 {
            let v = nurand(&mut rng, A_ITEM, C_ITEM, 1, ITEMS);
            assert!((1..=ITEMS).contains(&v));
        }
    }
}
