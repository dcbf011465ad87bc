//! TPC-C's consistency conditions, checked on the committed data.

use std::collections::BTreeMap;

use super::{district_key, field, split_order_key, TpccError, DISTRICTS, INITIAL_W_YTD};
use redoctor_engine::Engine;
use redoctor_engine::Row;

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
