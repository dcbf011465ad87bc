//! Runs data statements (SELECT, INSERT, UPDATE, DELETE) inside a transaction.

use std::collections::{HashMap, HashSet};

use msql_srv::{Column, ColumnFlags, ColumnType, ErrorKind};
use parking_lot::Mutex;

use super::error::{no_such_table, trx_error, SqlError};
use super::sql::{
    shape_columns, value_count_error, Col, Filter, Lit, Operand, Projection, Select, SetCol, Stmt,
};
use redoctor_engine::Row;
use redoctor_engine::Trx;
use redoctor_engine::{Engine, Shape, TableId};

/// `c CHAR(120)`, `pad CHAR(60)`: longer values are refused (strict mode).
const C_LEN: usize = 120;
const PAD_LEN: usize = 60;

/// One result cell.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cell {
    Null,
    Int(i64),
    Str(String),
    /// Binary (a `BINLOG DUMP` payload).
    Bytes(Vec<u8>),
}

/// What a statement returns.
#[derive(Debug)]
pub enum Outcome {
    Done {
        affected: u64,
        last_insert_id: u64,
    },
    Rows {
        cols: Vec<Column>,
        rows: Vec<Vec<Cell>>,
    },
}

impl Outcome {
    pub fn ok() -> Outcome {
        Outcome::Done {
            affected: 0,
            last_insert_id: 0,
        }
    }
}

/// A result column description.
pub fn column(name: &str, int: bool) -> Column {
    Column {
        table: String::new(),
        column: name.to_string(),
        coltype: if int {
            ColumnType::MYSQL_TYPE_LONGLONG
        } else {
            ColumnType::MYSQL_TYPE_VAR_STRING
        },
        colflags: ColumnFlags::empty(),
    }
}

/// The columns a SELECT on a table of `shape` returns (also sent when it
/// is prepared).
pub fn select_columns(s: &Select, shape: Shape) -> Vec<Column> {
    match &s.projection {
        Projection::Count(None) => vec![column("COUNT(*)", true)],
        Projection::Count(Some(c)) => vec![column(&format!("COUNT({})", c.name()), true)],
        Projection::Sum(c) => vec![column(&format!("SUM({})", c.name()), true)],
        Projection::Cols(cols) => result_columns(cols),
        Projection::Star => result_columns(shape_columns(shape)),
    }
}

fn result_columns(cols: &[Col]) -> Vec<Column> {
    cols.iter()
        .map(|c| column(c.name(), matches!(c, Col::Id | Col::K)))
        .collect()
}

/// AUTO_INCREMENT counters, per table, shared by all connections. A table's
/// counter starts above its highest committed id (as InnoDB does on restart).
#[derive(Default)]
pub struct AutoInc(Mutex<HashMap<TableId, i64>>);

impl AutoInc {
    /// Runs `f` on `table`'s counter (the next id to hand out).
    fn with<R>(&self, engine: &Engine, table: TableId, f: impl FnOnce(&mut i64) -> R) -> R {
        let mut m = self.0.lock();
        let v = m
            .entry(table)
            .or_insert_with(|| engine.max_row_id(table).unwrap_or(0).max(0) + 1);
        f(v)
    }

    fn next(&self, engine: &Engine, table: TableId) -> i64 {
        self.with(engine, table, |v| {
            let id = *v;
            *v += 1;
            id
        })
    }

    /// An explicit id moves the counter past it.
    fn saw(&self, engine: &Engine, table: TableId, id: i64) {
        self.with(engine, table, |v| {
            if id >= *v {
                *v = id.saturating_add(1);
            }
        })
    }
}

/// Resolves operands against the statement's parameters.
pub struct Args<'a>(pub &'a [Lit]);

impl Args<'_> {
    fn get(&self, o: &Operand) -> Result<Lit, SqlError> {
        match o {
            Operand::Lit(l) => Ok(l.clone()),
            Operand::Param(i) => self.0.get(*i).cloned().ok_or_else(|| {
                SqlError::new(
                    ErrorKind::ER_WRONG_ARGUMENTS,
                    format!("parameter {} was not supplied", i + 1),
                )
            }),
        }
    }

    pub fn int(&self, o: &Operand, what: &str) -> Result<i64, SqlError> {
        lit_int(self.get(o)?, what)
    }

    fn i32(&self, o: &Operand, what: &str) -> Result<i32, SqlError> {
        let v = self.int(o, what)?;
        i32::try_from(v).map_err(|_| {
            SqlError::new(
                ErrorKind::ER_WARN_DATA_OUT_OF_RANGE,
                format!("Out of range value {v} for {what} (INTEGER)"),
            )
        })
    }

    pub fn text(&self, o: &Operand, what: &str, max: usize) -> Result<String, SqlError> {
        let s = match self.get(o)? {
            Lit::Str(s) => s,
            Lit::Int(i) => i.to_string(),
            Lit::Null => {
                return Err(SqlError::new(
                    ErrorKind::ER_BAD_NULL_ERROR,
                    format!("Column '{what}' cannot be null"),
                ))
            }
        };
        if s.chars().count() > max {
            return Err(SqlError::new(
                ErrorKind::ER_DATA_TOO_LONG,
                format!(
                    "Data too long for column '{what}' (CHAR({max}), got {} characters)",
                    s.chars().count()
                ),
            ));
        }
        Ok(s)
    }

    /// The id of an INSERT row: None means AUTO_INCREMENT (absent, NULL or 0).
    fn insert_id(&self, o: Option<&Operand>) -> Result<Option<i64>, SqlError> {
        match o.map(|o| self.get(o)).transpose()? {
            None | Some(Lit::Null) => Ok(None),
            Some(l) => match lit_int(l, "column 'id'")? {
                0 => Ok(None),
                id => Ok(Some(id)),
            },
        }
    }
}

fn lit_int(l: Lit, what: &str) -> Result<i64, SqlError> {
    match l {
        Lit::Int(i) => Ok(i),
        Lit::Str(s) => s.trim().parse().map_err(|_| {
            SqlError::new(
                ErrorKind::ER_TRUNCATED_WRONG_VALUE,
                format!("Incorrect integer value: '{s}' for {what}"),
            )
        }),
        Lit::Null => Err(SqlError::new(
            ErrorKind::ER_BAD_NULL_ERROR,
            format!("{what} cannot be null"),
        )),
    }
}

/// The id of table `name`, after checking that `cols`, the columns the
/// statement names (in the part of it `clause` names), are columns of the
/// table; returns the table's shape too.
fn table_with(
    engine: &Engine,
    name: &str,
    cols: impl IntoIterator<Item = (Col, &'static str)>,
) -> Result<(TableId, Shape), SqlError> {
    let (id, shape) = engine
        .table_id_shape(name)
        .ok_or_else(|| no_such_table(name))?;
    if !shape.has_c_pad() {
        if let Some((c, clause)) = cols
            .into_iter()
            .find(|(c, _)| matches!(c, Col::C | Col::Pad))
        {
            return Err(SqlError::new(
                ErrorKind::ER_BAD_FIELD_ERROR,
                format!("Unknown column '{}' in '{clause}'", c.name()),
            ));
        }
    }
    Ok((id, shape))
}

fn table_id(engine: &Engine, name: &str) -> Result<TableId, SqlError> {
    table_with(engine, name, []).map(|(id, _)| id)
}

fn cell(row_id: i64, row: &Row, c: Col) -> Cell {
    match c {
        Col::Id => Cell::Int(row_id),
        Col::K => Cell::Int(row.k as i64),
        Col::C => Cell::Str(row.c.clone()),
        Col::Pad => Cell::Str(row.pad.clone()),
    }
}

/// Runs a data statement in `trx`. `changed` is set once the statement has
/// changed a row (so a later failure cannot be undone statement-only).
pub fn run(
    engine: &Engine,
    auto_inc: &AutoInc,
    trx: &mut Trx,
    stmt: &Stmt,
    args: &Args<'_>,
    changed: &mut bool,
) -> Result<Outcome, SqlError> {
    match stmt {
        Stmt::Select(s) => select(engine, trx, s, args),
        Stmt::Insert {
            table,
            rows,
            implicit_cols,
        } => {
            let named = rows.first().into_iter().flat_map(|r| {
                [(Col::C, &r[2]), (Col::Pad, &r[3])]
                    .into_iter()
                    .filter(|(_, v)| v.is_some())
                    .map(|(c, _)| (c, "field list"))
            });
            let (tid, _) = match implicit_cols {
                // The values fill every column of the table, whichever it is.
                Some(n) => {
                    let t = table_with(engine, table, [])?;
                    if shape_columns(t.1).len() != *n {
                        return Err(value_count_error(1));
                    }
                    t
                }
                None => table_with(engine, table, named)?,
            };
            let mut first_auto = 0u64;
            for r in rows {
                let id = match args.insert_id(r[0].as_ref())? {
                    Some(id) => {
                        auto_inc.saw(engine, tid, id);
                        id
                    }
                    None => {
                        let id = auto_inc.next(engine, tid);
                        if first_auto == 0 {
                            first_auto = id as u64;
                        }
                        id
                    }
                };
                let k = match &r[1] {
                    Some(o) => args.i32(o, "column 'k'")?,
                    None => 0,
                };
                let c = match &r[2] {
                    Some(o) => args.text(o, "c", C_LEN)?,
                    None => String::new(),
                };
                let pad = match &r[3] {
                    Some(o) => args.text(o, "pad", PAD_LEN)?,
                    None => String::new(),
                };
                trx.insert(tid, id, Row { k, c, pad })
                    .map_err(|e| trx_error(e, table))?;
                *changed = true;
            }
            Ok(Outcome::Done {
                affected: rows.len() as u64,
                last_insert_id: first_auto,
            })
        }
        Stmt::Update { table, set, id } => {
            let named = set
                .iter()
                .filter(|s| matches!(s, SetCol::C(_)))
                .map(|_| (Col::C, "field list"));
            let (tid, _) = table_with(engine, table, named)?;
            let id = args.int(id, "id")?;
            let mut found = true;
            for s in set {
                let hit = match s {
                    SetCol::KAdd { delta, negate } => {
                        let d = args.i32(delta, "k increment")?;
                        let d = if *negate { d.wrapping_neg() } else { d };
                        trx.update_k(tid, id, d)
                    }
                    SetCol::C(v) => {
                        let c = args.text(v, "c", C_LEN)?;
                        trx.update_c(tid, id, c)
                    }
                }
                .map_err(|e| trx_error(e, table))?;
                if hit {
                    *changed = true;
                }
                found &= hit;
            }
            Ok(Outcome::Done {
                affected: found as u64,
                last_insert_id: 0,
            })
        }
        Stmt::Delete { table, id } => {
            let tid = table_id(engine, table)?;
            let id = args.int(id, "id")?;
            let hit = trx.delete(tid, id).map_err(|e| trx_error(e, table))?;
            *changed |= hit;
            Ok(Outcome::Done {
                affected: hit as u64,
                last_insert_id: 0,
            })
        }
        other => unreachable!("not a data statement: {other:?}"),
    }
}

fn select(
    engine: &Engine,
    trx: &mut Trx,
    s: &Select,
    args: &Args<'_>,
) -> Result<Outcome, SqlError> {
    let projected: &[Col] = match &s.projection {
        Projection::Cols(cols) => cols,
        Projection::Sum(c) | Projection::Count(Some(c)) => std::slice::from_ref(c),
        Projection::Star | Projection::Count(None) => &[],
    };
    let named = projected
        .iter()
        .map(|c| (*c, "field list"))
        .chain(s.order.map(|(c, _)| (c, "order clause")));
    let (tid, shape) = table_with(engine, &s.table, named)?;
    let e = |e| trx_error(e, &s.table);
    let mut acc = Rows::new(s, shape);
    match &s.filter {
        Filter::IdEq(o) => {
            let id = args.int(o, "id")?;
            if let Some(r) = trx.get(tid, id).map_err(e)? {
                acc.add(id, &r);
            }
        }
        Filter::IdBetween(lo, hi) => {
            let (lo, hi) = (args.int(lo, "id")?, args.int(hi, "id")?);
            // Rows are not cloned: the scan shares the versions it saw and
            // only the projected columns are copied out, latch released.
            trx.range_with(tid, lo, hi, |id, r| acc.add(id, r))
                .map_err(e)?;
        }
        Filter::KEq(o) => {
            let k = args.i32(o, "k")?;
            for (id, r) in trx.get_by_k(tid, k).map_err(e)? {
                acc.add(id, &r);
            }
        }
        Filter::KIn(ranges) => {
            for (lo, hi) in k_ranges(ranges, args)? {
                trx.k_range_with(tid, lo, hi, |id, r| acc.add(id, r))
                    .map_err(e)?;
            }
        }
        Filter::All => trx
            .range_with(tid, i64::MIN, i64::MAX, |id, r| acc.add(id, r))
            .map_err(e)?,
    }
    let mut rows = acc.finish(s);
    if let Some(l) = &s.limit {
        let n = args.int(l, "LIMIT")?.max(0) as usize;
        rows.truncate(n);
    }
    Ok(Outcome::Rows {
        cols: select_columns(s, shape),
        rows,
    })
}

/// The ranges of `k` a [`Filter::KIn`] selects, as disjoint ranges in
/// ascending order, so that a row matching several is read once (`k` IN
/// and OR are set union) and rows come in `(k, id)` order, as InnoDB's
/// range scan of the index returns them. Bounds outside `k`'s INTEGER
/// range match what they can (nothing, if the whole range is outside).
fn k_ranges(ranges: &[(Operand, Operand)], args: &Args<'_>) -> Result<Vec<(i32, i32)>, SqlError> {
    let (min, max) = (i64::from(i32::MIN), i64::from(i32::MAX));
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        let (lo, hi) = (args.int(lo, "k")?.max(min), args.int(hi, "k")?.min(max));
        if lo <= hi {
            out.push((lo, hi));
        }
    }
    out.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(out.len());
    for (lo, hi) in out {
        match merged.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    // In range after the clamps above.
    Ok(merged
        .into_iter()
        .map(|(lo, hi)| (lo as i32, hi as i32))
        .collect())
}

/// A SELECT's result, built row by row from rows it borrows (no row is
/// cloned; only the cells it returns are made).
enum Rows<'a> {
    Count(i64),
    Sum(Col, Option<i64>),
    Cols {
        cols: &'a [Col],
        rows: Vec<Vec<Cell>>,
        /// The ORDER BY column when the result does not return it: its
        /// value is then kept beside each row, in `keys`.
        key_outside: Option<Col>,
        keys: Vec<Cell>,
    },
}

impl<'a> Rows<'a> {
    fn new(s: &'a Select, shape: Shape) -> Rows<'a> {
        let cols = match &s.projection {
            Projection::Count(_) => return Rows::Count(0),
            Projection::Sum(c) => return Rows::Sum(*c, None),
            Projection::Cols(cols) => cols,
            Projection::Star => shape_columns(shape),
        };
        Rows::Cols {
            cols,
            rows: Vec::new(),
            key_outside: s.order.map(|(c, _)| c).filter(|c| !cols.contains(c)),
            keys: Vec::new(),
        }
    }

    fn add(&mut self, id: i64, r: &Row) {
        match self {
            Rows::Count(n) => *n += 1,
            Rows::Sum(c, sum) => {
                let v = if *c == Col::Id { id } else { r.k as i64 };
                *sum = Some(sum.unwrap_or(0).wrapping_add(v));
            }
            Rows::Cols {
                cols,
                rows,
                key_outside,
                keys,
            } => {
                rows.push(cols.iter().map(|c| cell(id, r, *c)).collect());
                if let Some(k) = key_outside {
                    keys.push(cell(id, r, *k));
                }
            }
        }
    }

    fn finish(self, s: &Select) -> Vec<Vec<Cell>> {
        match self {
            Rows::Count(n) => vec![vec![Cell::Int(n)]],
            Rows::Sum(_, sum) => vec![vec![sum.map_or(Cell::Null, Cell::Int)]],
            Rows::Cols {
                cols, rows, keys, ..
            } => order_and_distinct(s, cols, rows, keys),
        }
    }
}

/// ORDER BY (stable: ties keep id order, as InnoDB's filesort of a PK range
/// does), then DISTINCT (the first of equal rows stays). `keys` holds the
/// ORDER BY values when the rows do not carry that column, else is empty.
fn order_and_distinct(
    s: &Select,
    cols: &[Col],
    mut rows: Vec<Vec<Cell>>,
    keys: Vec<Cell>,
) -> Vec<Vec<Cell>> {
    if let Some((c, desc)) = s.order {
        let cmp = |a: &Cell, b: &Cell| if desc { b.cmp(a) } else { a.cmp(b) };
        match cols.iter().position(|x| *x == c) {
            Some(i) => rows.sort_by(|a, b| cmp(&a[i], &b[i])),
            None => {
                let mut keyed: Vec<(Cell, Vec<Cell>)> = keys.into_iter().zip(rows).collect();
                keyed.sort_by(|a, b| cmp(&a.0, &b.0));
                rows = keyed.into_iter().map(|(_, r)| r).collect();
            }
        }
    }
    if s.distinct {
        let mut seen = HashSet::with_capacity(rows.len());
        let keep: Vec<bool> = rows.iter().map(|r| seen.insert(r)).collect();
        drop(seen);
        let mut keep = keep.into_iter();
        rows.retain(|_| keep.next().unwrap_or(false));
    }
    rows
}
