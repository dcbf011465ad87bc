//! Creating and loading the TPCC-lite tables.

use rand::rngs::SmallRng;
use rand::Rng;

use super::{
    customer_key, district_key, encode_fields, engine_err, row, stock_key, TpccError, TpccTables,
    CUSTOMERS_PER_DISTRICT, DISTRICTS, INITIAL_D_YTD, INITIAL_W_YTD, ITEMS, MAX_WAREHOUSES, TABLES,
};
use redoctor_engine::EngineError;
use redoctor_engine::Row;
use redoctor_engine::{Engine, TableId};

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
            r.pad = crate::txn::random_pad(rng);
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
