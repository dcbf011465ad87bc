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
//!
//! Module map: this file holds the schema (names, key encodings, the `c`
//! field format, the scale); [`load`] creates and fills the tables, [`txns`]
//! runs new-order and payment, [`check`] verifies TPC-C's consistency conditions.

mod check;
mod load;
mod txns;

pub use check::{check_consistency, TpccCheck};
pub use load::{first_free_history_id, prepare};
pub use txns::{nurand, TpccGen};

use redoctor_engine::EngineError;
use redoctor_engine::Row;
use redoctor_engine::{Engine, TableId};

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

pub(crate) const A_CUSTOMER: u32 = 255;
pub(crate) const A_ITEM: u32 = 4095;
pub(crate) const C_CUSTOMER: u32 = 123;
pub(crate) const C_ITEM: u32 = 2045;

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
pub(crate) fn set_field(c: &str, name: &str, value: i64) -> String {
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

pub(crate) fn engine_err(doing: &'static str) -> impl FnOnce(EngineError) -> TpccError {
    move |source| TpccError::Engine { doing, source }
}

/// A row with `k` and `c` and an empty `pad`.
pub(crate) fn row(k: i32, c: String) -> Row {
    Row {
        k,
        c,
        pad: String::new(),
    }
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
        let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(1);
        for _ in 0..10_000 {
            let v = nurand(&mut rng, A_ITEM, C_ITEM, 1, ITEMS);
            assert!((1..=ITEMS).contains(&v));
        }
    }
}
