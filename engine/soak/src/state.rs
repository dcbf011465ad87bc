//! What a data directory holds after recovery, as a file the runner reads:
//! every row's value (its `k` and [`row_digest`](redoctor_workload::journal::row_digest)),
//! the transaction ids in the binary log, what recovery did, and the TPC-C
//! consistency conditions on the recovered tables.
//!
//! The runner never opens an engine itself: `redoctor-soak recover-state`
//! (a child process, so a recovery that panics or hangs cannot take the
//! runner with it) recovers the directory and writes this file.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use redoctor_engine::vfs::OsVfs;
use redoctor_engine::Engine;
use redoctor_engine::TableId;
use redoctor_workload::journal::RowValue;
use redoctor_workload::tpcc;

use crate::SoakError;

/// One table's rows: `(id, k, digest)` in id order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableState {
    pub name: String,
    pub rows: Vec<(i64, i32, u64)>,
}

/// TPC-C's consistency conditions on the recovered tables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TpccState {
    pub warehouses: u32,
    pub orders: usize,
    pub order_lines: usize,
    pub history: usize,
    /// Every broken condition, in words.
    pub violations: Vec<String>,
}

/// The state file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateFile {
    /// Tables by id.
    pub tables: BTreeMap<TableId, TableState>,
    /// Xids of every valid binlog event, in binlog order; None when the
    /// directory has no binlog.
    pub binlog_xids: Option<Vec<u64>>,
    /// The engine's recovery report, as it serialises it.
    pub recovery: serde_json::Value,
    /// Present when the directory holds the TPCC-lite tables.
    pub tpcc: Option<TpccState>,
    /// Tables on pages: pages the doublewrite buffer checked and restored
    /// at this open, as (checked, restored).
    #[serde(default)]
    pub pages_restored: Option<(usize, usize)>,
}

impl StateFile {
    /// Every row by `(table, id)`.
    pub fn rows(&self) -> HashMap<(TableId, i64), RowValue> {
        let mut out = HashMap::new();
        for (&t, table) in &self.tables {
            for &(id, k, digest) in &table.rows {
                out.insert((t, id), RowValue { k, digest });
            }
        }
        out
    }

    pub fn binlog_set(&self) -> Option<HashSet<u64>> {
        self.binlog_xids
            .as_ref()
            .map(|x| x.iter().copied().collect())
    }

    pub fn table_name(&self, t: TableId) -> &str {
        self.tables
            .get(&t)
            .map_or("(unknown table)", |t| t.name.as_str())
    }

    /// A number from the recovery report (`xa.rolled_back`, ...); 0 if absent.
    pub fn recovery_count(&self, path: &[&str]) -> u64 {
        let mut v = &self.recovery;
        for p in path {
            match v.get(p) {
                Some(x) => v = x,
                None => return 0,
            }
        }
        v.as_u64().unwrap_or(0)
    }

    pub fn read(path: &Path) -> Result<StateFile, SoakError> {
        let bytes = fs::read(path).map_err(|source| SoakError::Io {
            what: "reading the state file",
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_slice(&bytes).map_err(|source| SoakError::BadState {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Writes the file atomically (a temporary file renamed into place).
    pub fn write(&self, path: &Path) -> Result<(), SoakError> {
        let io = |what| {
            move |source| SoakError::Io {
                what,
                path: path.to_path_buf(),
                source,
            }
        };
        let tmp = path.with_extension("tmp");
        let text = serde_json::to_vec(self).map_err(|source| SoakError::BadState {
            path: path.to_path_buf(),
            source,
        })?;
        let mut f = fs::File::create(&tmp).map_err(io("creating the state file"))?;
        f.write_all(&text).map_err(io("writing the state file"))?;
        drop(f);
        fs::rename(&tmp, path).map_err(io("renaming the state file into place"))
    }
}

/// The xids of the binlog in `datadir`, read without changing anything
/// (None when it has no binlog). Read before the engine opens.
pub fn read_binlog_xids(datadir: &Path) -> Result<Option<Vec<u64>>, SoakError> {
    let vfs = OsVfs::new(datadir).map_err(|source| SoakError::Io {
        what: "opening the data directory",
        path: datadir.to_path_buf(),
        source,
    })?;
    Ok(redoctor_engine::read_binlog_xids(&vfs)?)
}

/// The state of an open engine.
pub fn capture(engine: &Engine, binlog_xids: Option<Vec<u64>>) -> Result<StateFile, SoakError> {
    let recovery =
        serde_json::to_value(engine.recovery_report()).map_err(|source| SoakError::BadState {
            path: "(recovery report)".into(),
            source,
        })?;
    // The indexes rebuilt or recovered must agree with the rows (k_1 on
    // pages is rebuilt at every start): a disagreement fails the trial.
    engine
        .check_tables()
        .map_err(|e| SoakError::Engine(format!("after recovery: {e}")))?;
    let mut tables = BTreeMap::new();
    for (name, rows) in engine.dump() {
        let id = engine
            .table_id(&name)
            .ok_or_else(|| SoakError::Engine(format!("table {name} has no id")))?;
        let rows = rows
            .iter()
            .map(|(&id, row)| {
                let v = RowValue::of(row);
                (id, v.k, v.digest)
            })
            .collect();
        tables.insert(id, TableState { name, rows });
    }
    let tpcc = match engine.table_id(tpcc::TABLES[0]) {
        Some(wt) => {
            let warehouses = tables.get(&wt).map_or(0, |t| t.rows.len()) as u32;
            let c = tpcc::check_consistency(engine, warehouses)
                .map_err(|e| SoakError::Engine(e.to_string()))?;
            Some(TpccState {
                warehouses,
                orders: c.orders,
                order_lines: c.order_lines,
                history: c.history,
                violations: c.violations,
            })
        }
        None => None,
    };
    Ok(StateFile {
        tables,
        binlog_xids,
        recovery,
        tpcc,
        pages_restored: engine.pages_restored(),
    })
}
