//! SQL text → [`Stmt`], through `sqlparser`'s MySQL dialect.
//!
//! The engine's tables have sysbench's shape (`id` primary key, `k`
//! indexed, `c`, `pad`), or the `(id, k)` shape of sysbench's bulk_insert
//! ([`Shape`]), so a statement is turned into one of a few plans the engine
//! can run directly; the columns a statement names are checked against its
//! table's shape when it runs (`exec`). Anything outside that surface is refused
//! with an error naming the unsupported part. `?` placeholders become
//! [`Operand::Param`] numbered in text order (for server-side prepared
//! statements).

use sqlparser::ast::{
    self, AssignmentTarget, BinaryOperator, Distinct, Expr, FromTable, FunctionArg,
    FunctionArgExpr, FunctionArguments, ObjectName, ObjectNamePart, ObjectType, OrderByKind,
    SelectItem, SetExpr, ShowStatementFilter, Statement, TableFactor, TableObject, TableWithJoins,
    UnaryOperator, Value,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::SqlError;
use redoctor_engine::Shape;

/// Plain text INSERTs, parsed without building an AST.
mod fast_insert;
pub mod replication;

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Null,
    Int(i64),
    Str(String),
}

/// A value known at parse time or supplied at execution.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Lit(Lit),
    /// The n-th `?` (0-based).
    Param(usize),
}

/// A column of an sbtest-shaped table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    Id,
    K,
    C,
    Pad,
}

impl Col {
    pub fn name(self) -> &'static str {
        match self {
            Col::Id => "id",
            Col::K => "k",
            Col::C => "c",
            Col::Pad => "pad",
        }
    }

    /// The column named `name` (any case), if the tables have one.
    pub(crate) fn from_name(name: &str) -> Option<Col> {
        [Col::Id, Col::K, Col::C, Col::Pad]
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }

    fn parse(name: &str) -> Result<Col, SqlError> {
        Col::from_name(name).ok_or_else(|| {
            SqlError::new(
                msql_srv::ErrorKind::ER_BAD_FIELD_ERROR,
                format!("Unknown column '{name}' (tables have columns id, k, c, pad)"),
            )
        })
    }
}

/// Rows a statement reads or writes.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// No WHERE clause.
    All,
    IdEq(Operand),
    IdBetween(Operand, Operand),
    KEq(Operand),
    /// `k` in any of these closed ranges, through the index on `k`:
    /// `k IN (a, b)`, `k BETWEEN a AND b`, and ORs of those and `k = v`.
    KIn(Vec<(Operand, Operand)>),
}

/// What a SELECT returns.
#[derive(Clone, Debug, PartialEq)]
pub enum Projection {
    Cols(Vec<Col>),
    /// `SELECT *`: every column of the table, whatever its shape.
    Star,
    Sum(Col),
    /// `COUNT(*)` (None) or `COUNT(col)`: the same, as no column is NULL.
    Count(Option<Col>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub table: String,
    pub projection: Projection,
    pub distinct: bool,
    pub filter: Filter,
    /// ORDER BY column, descending?
    pub order: Option<(Col, bool)>,
    pub limit: Option<Operand>,
}

/// One assignment of an UPDATE.
#[derive(Clone, Debug, PartialEq)]
pub enum SetCol {
    /// `k = k + v` (`negate`: `k = k - v`).
    KAdd { delta: Operand, negate: bool },
    /// `c = v`.
    C(Operand),
}

/// One item of a table-less SELECT (`SELECT @@version_comment`, `SELECT 1`).
#[derive(Clone, Debug, PartialEq)]
pub enum ConstItem {
    /// `@@[global.|session.]name`; `global` if written with `global.`.
    Var {
        name: String,
        global: bool,
    },
    Lit(Operand),
    Database,
    Version,
    ConnectionId,
}

/// A parsed statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Select(Select),
    /// Rows of (id, k, c, pad); None = the column's default (id: AUTO_INCREMENT).
    Insert {
        table: String,
        rows: Vec<[Option<Operand>; 4]>,
        /// `Some(n)`: the INSERT names no columns and each row gives `n`
        /// values, for the table's first `n` columns; the count is checked
        /// against the table's shape when it runs.
        implicit_cols: Option<usize>,
    },
    Update {
        table: String,
        set: Vec<SetCol>,
        id: Operand,
    },
    Delete {
        table: String,
        id: Operand,
    },
    CreateTable {
        table: String,
        if_not_exists: bool,
        shape: Shape,
    },
    /// `CREATE INDEX .. ON table(k)`: the engine always indexes `k`.
    CreateIndexK {
        table: String,
    },
    DropTable {
        tables: Vec<String>,
        if_exists: bool,
    },
    Begin,
    Commit,
    Rollback,
    SetAutocommit(Operand),
    /// `SET NAMES`, `SET sql_mode = ..` and other session settings that
    /// drivers send on connect and that do not change what the engine does.
    SetSessionIgnored,
    SetGlobal(Vec<(String, Operand)>),
    SelectConst(Vec<(String, ConstItem)>),
    ShowVariables(Option<String>),
    ShowStatus(Option<String>),
    ShowTables,
    Use,
    /// `CHANGE REPLICATION SOURCE TO ...`.
    ChangeSource(replication::ChangeSource),
    StartReplica,
    StopReplica,
    ShowReplicaStatus,
    /// A replica's fetch: events after (file, offset).
    BinlogDump {
        file: u64,
        offset: u64,
        limit: usize,
    },
    /// The name and shape of a source table (a replica's table map).
    BinlogTable {
        id: u32,
    },
}

/// A statement and how many `?` it has.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub stmt: Stmt,
    pub params: usize,
}

/// Session variables drivers set on connect; accepted and ignored.
const IGNORED_SESSION_VARS: &[&str] = &[
    "sql_mode",
    "character_set_client",
    "character_set_results",
    "character_set_connection",
    "collation_connection",
    "time_zone",
    "net_write_timeout",
    "net_read_timeout",
    "wait_timeout",
    "interactive_timeout",
    "sql_auto_is_null",
    "session_track_schema",
    "tmp_table_size",
    "max_heap_table_size",
    "transaction_isolation",
    "tx_isolation",
    "sql_select_limit",
    "names",
];

/// Parses one statement.
pub fn parse(sql: &str) -> Result<Parsed, SqlError> {
    if let Some(p) = fast_insert::parse(sql) {
        return Ok(p);
    }
    if let Some(r) = replication::parse(sql) {
        return r.map(|stmt| Parsed { stmt, params: 0 });
    }
    parse_general(sql)
}

/// Parses one statement with sqlparser (every statement the server knows;
/// [`parse`] tries the plain-INSERT fast path first).
pub(crate) fn parse_general(sql: &str) -> Result<Parsed, SqlError> {
    let dialect = MySqlDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql)
        .tokenize()
        .map_err(|e| SqlError::parse(e.to_string()))?;
    // sqlparser 0.55 does not parse `SET GLOBAL name = v`: drop the GLOBAL
    // token and remember the scope.
    let global = strip_set_global(&mut tokens);
    let mut parser = Parser::new(&dialect).with_tokens(tokens);
    let stmts = parser
        .parse_statements()
        .map_err(|e| SqlError::parse(e.to_string()))?;
    let stmt = match stmts.len() {
        1 => stmts.into_iter().next().expect("one statement"),
        0 => return Err(SqlError::parse("empty query")),
        _ => return Err(SqlError::unsupported("multiple statements in one query")),
    };
    let mut p = Params(0);
    let stmt = p.statement(stmt, global)?;
    Ok(Parsed { stmt, params: p.0 })
}

fn is_word(t: &Token, kw: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == kw)
}

fn strip_set_global(tokens: &mut Vec<Token>) -> bool {
    let significant: Vec<usize> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)))
        .map(|(i, _)| i)
        .take(2)
        .collect();
    if let [a, b] = significant[..] {
        if is_word(&tokens[a], Keyword::SET) && is_word(&tokens[b], Keyword::GLOBAL) {
            tokens.remove(b);
            return true;
        }
    }
    false
}

fn one_name(name: &ObjectName) -> Result<String, SqlError> {
    // `db.table` is accepted: the server has one schema.
    match name.0.last() {
        Some(ObjectNamePart::Identifier(id)) => Ok(id.value.clone()),
        None => Err(SqlError::parse("missing table name")),
    }
}

fn table_of(from: &[TableWithJoins]) -> Result<String, SqlError> {
    match from {
        [TableWithJoins { relation, joins }] if joins.is_empty() => match relation {
            TableFactor::Table { name, .. } => one_name(name),
            other => Err(SqlError::unsupported(format!("FROM {other}"))),
        },
        [] => Err(SqlError::parse("missing FROM")),
        _ => Err(SqlError::unsupported("joins and multi-table statements")),
    }
}

/// Counts placeholders while converting, in text order.
struct Params(usize);

impl Params {
    fn operand(&mut self, e: &Expr) -> Result<Operand, SqlError> {
        Ok(match e {
            Expr::Value(v) => match &v.value {
                Value::Placeholder(_) => {
                    self.0 += 1;
                    Operand::Param(self.0 - 1)
                }
                Value::Number(n, _) => {
                    Operand::Lit(Lit::Int(n.parse().map_err(|_| {
                        SqlError::unsupported(format!("non-integer number {n}"))
                    })?))
                }
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
                    Operand::Lit(Lit::Str(s.clone()))
                }
                Value::Null => Operand::Lit(Lit::Null),
                Value::Boolean(b) => Operand::Lit(Lit::Int(*b as i64)),
                other => return Err(SqlError::unsupported(format!("value {other}"))),
            },
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => match self.operand(expr)? {
                Operand::Lit(Lit::Int(i)) => Operand::Lit(Lit::Int(-i)),
                _ => return Err(SqlError::unsupported(format!("expression {e}"))),
            },
            Expr::Nested(inner) => self.operand(inner)?,
            // `SET x = ON` / `OFF`: words as strings.
            Expr::Identifier(id) if id.quote_style.is_none() => {
                Operand::Lit(Lit::Str(id.value.clone()))
            }
            other => return Err(SqlError::unsupported(format!("expression {other}"))),
        })
    }

    fn column(&self, e: &Expr) -> Result<Col, SqlError> {
        match e {
            Expr::Identifier(id) => Col::parse(&id.value),
            Expr::CompoundIdentifier(parts) => Col::parse(&parts.last().expect("non-empty").value),
            other => Err(SqlError::unsupported(format!("expression {other}"))),
        }
    }

    fn filter(&mut self, selection: Option<&Expr>) -> Result<Filter, SqlError> {
        let Some(e) = selection else {
            return Ok(Filter::All);
        };
        if matches!(
            e,
            Expr::BinaryOp {
                op: BinaryOperator::Or,
                ..
            } | Expr::InList { .. }
        ) || matches!(e, Expr::Between { expr, .. } if self.column(expr).ok() == Some(Col::K))
        {
            let mut ranges = Vec::new();
            self.k_ranges(e, &mut ranges)?;
            return Ok(Filter::KIn(ranges));
        }
        match e {
            Expr::Nested(inner) => self.filter(Some(inner)),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => match self.column(left)? {
                Col::Id => Ok(Filter::IdEq(self.operand(right)?)),
                Col::K => Ok(Filter::KEq(self.operand(right)?)),
                c => Err(SqlError::unsupported(format!(
                    "WHERE on column {} (supported: id = v, id BETWEEN a AND b, k = v)",
                    c.name()
                ))),
            },
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } if self.column(expr)? == Col::Id => {
                let lo = self.operand(low)?;
                Ok(Filter::IdBetween(lo, self.operand(high)?))
            }
            other => Err(SqlError::unsupported(format!(
                "WHERE {other} (supported: id = v, id BETWEEN a AND b, k = v)"
            ))),
        }
    }

    /// Adds the ranges of `k` that `e` selects: `k = v`, `k BETWEEN a AND
    /// b`, `k IN (..)`, and ORs of those.
    fn k_ranges(&mut self, e: &Expr, out: &mut Vec<(Operand, Operand)>) -> Result<(), SqlError> {
        let is_k = |p: &Self, e: &Expr| p.column(e).ok() == Some(Col::K);
        match e {
            Expr::Nested(inner) => self.k_ranges(inner, out),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                right,
            } => {
                self.k_ranges(left, out)?;
                self.k_ranges(right, out)
            }
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } if is_k(self, left) => {
                let v = self.operand(right)?;
                out.push((v.clone(), v));
                Ok(())
            }
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } if is_k(self, expr) => {
                let lo = self.operand(low)?;
                out.push((lo, self.operand(high)?));
                Ok(())
            }
            Expr::InList {
                expr,
                list,
                negated: false,
            } if is_k(self, expr) => {
                for item in list {
                    let v = self.operand(item)?;
                    out.push((v.clone(), v));
                }
                Ok(())
            }
            other => Err(SqlError::unsupported(format!(
                "WHERE {other} (supported: id = v, id BETWEEN a AND b, k = v, \
                 k IN (..), k BETWEEN a AND b, and ORs of the forms on k)"
            ))),
        }
    }

    fn id_filter(&mut self, selection: Option<&Expr>, what: &str) -> Result<Operand, SqlError> {
        match self.filter(selection)? {
            Filter::IdEq(id) => Ok(id),
            _ => Err(SqlError::unsupported(format!(
                "{what} without WHERE id = v"
            ))),
        }
    }

    fn statement(&mut self, stmt: Statement, global: bool) -> Result<Stmt, SqlError> {
        if global && !matches!(stmt, Statement::SetVariable { .. }) {
            return Err(SqlError::parse("GLOBAL must be followed by name = value"));
        }
        match stmt {
            Statement::Query(q) => self.query(*q),
            Statement::Insert(ins) => self.insert(ins),
            Statement::Update {
                table,
                assignments,
                from,
                selection,
                returning,
                or,
            } => {
                if from.is_some() || returning.is_some() || or.is_some() {
                    return Err(SqlError::unsupported("UPDATE with FROM/RETURNING/OR"));
                }
                let table = table_of(std::slice::from_ref(&table))?;
                let mut set = Vec::new();
                for a in &assignments {
                    let col = match &a.target {
                        AssignmentTarget::ColumnName(n) => Col::parse(&one_name(n)?)?,
                        AssignmentTarget::Tuple(_) => {
                            return Err(SqlError::unsupported("tuple assignment"))
                        }
                    };
                    set.push(match col {
                        Col::C => SetCol::C(self.operand(&a.value)?),
                        Col::K => match &a.value {
                            Expr::BinaryOp { left, op, right }
                                if matches!(op, BinaryOperator::Plus | BinaryOperator::Minus)
                                    && self.column(left).ok() == Some(Col::K) =>
                            {
                                SetCol::KAdd {
                                    delta: self.operand(right)?,
                                    negate: *op == BinaryOperator::Minus,
                                }
                            }
                            v => {
                                return Err(SqlError::unsupported(format!(
                                    "SET k = {v} (supported: k = k + v, k = k - v)"
                                )))
                            }
                        },
                        other => {
                            return Err(SqlError::unsupported(format!(
                                "UPDATE of column {} (supported: k, c)",
                                other.name()
                            )))
                        }
                    });
                }
                let id = self.id_filter(selection.as_ref(), "UPDATE")?;
                Ok(Stmt::Update { table, set, id })
            }
            Statement::Delete(d) => {
                if d.using.is_some() || !d.order_by.is_empty() || d.limit.is_some() {
                    return Err(SqlError::unsupported("DELETE with USING/ORDER BY/LIMIT"));
                }
                let from = match &d.from {
                    FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
                };
                let table = table_of(from)?;
                let id = self.id_filter(d.selection.as_ref(), "DELETE")?;
                Ok(Stmt::Delete { table, id })
            }
            Statement::CreateTable(ct) => create_table(&ct),
            Statement::CreateIndex(ci) => {
                let table = one_name(&ci.table_name)?;
                match &ci.columns[..] {
                    [c] if self.column(&c.expr)? == Col::K && !ci.unique => {
                        Ok(Stmt::CreateIndexK { table })
                    }
                    _ => Err(SqlError::unsupported(
                        "CREATE INDEX other than a non-unique index on (k)",
                    )),
                }
            }
            Statement::Drop {
                object_type: ObjectType::Table,
                if_exists,
                names,
                temporary: false,
                ..
            } => Ok(Stmt::DropTable {
                tables: names.iter().map(one_name).collect::<Result<_, _>>()?,
                if_exists,
            }),
            Statement::StartTransaction { modes, .. } if modes.is_empty() => Ok(Stmt::Begin),
            Statement::Commit { chain: false, .. } => Ok(Stmt::Commit),
            Statement::Rollback {
                chain: false,
                savepoint: None,
            } => Ok(Stmt::Rollback),
            Statement::SetNames { .. } | Statement::SetNamesDefault {} => {
                Ok(Stmt::SetSessionIgnored)
            }
            Statement::SetVariable {
                variables, value, ..
            } => self.set(variables, value, global),
            Statement::ShowVariables { filter, .. } => Ok(Stmt::ShowVariables(like(filter)?)),
            Statement::ShowStatus { filter, .. } => Ok(Stmt::ShowStatus(like(filter)?)),
            Statement::ShowTables { .. } => Ok(Stmt::ShowTables),
            Statement::Use(_) => Ok(Stmt::Use),
            other => Err(SqlError::unsupported(first_words(&other.to_string()))),
        }
    }

    fn set(
        &mut self,
        variables: ast::OneOrManyWithParens<ObjectName>,
        value: Vec<Expr>,
        global: bool,
    ) -> Result<Stmt, SqlError> {
        let ast::OneOrManyWithParens::One(first) = variables else {
            return Err(SqlError::unsupported("SET (a, b) = (..)"));
        };
        // `SET a = 1, b = 2` parses as variable a with values [1, b = 2].
        let mut pairs = Vec::new();
        let mut it = value.into_iter();
        let Some(v0) = it.next() else {
            return Err(SqlError::parse("SET without a value"));
        };
        pairs.push((var_name(&first)?, v0));
        for e in it {
            match e {
                Expr::BinaryOp {
                    left,
                    op: BinaryOperator::Eq,
                    right,
                } => {
                    let name = match *left {
                        Expr::Identifier(id) => (false, id.value),
                        Expr::CompoundIdentifier(ids) => var_name(&ObjectName(
                            ids.into_iter().map(ObjectNamePart::Identifier).collect(),
                        ))?,
                        other => return Err(SqlError::unsupported(format!("SET {other}"))),
                    };
                    pairs.push((name, *right));
                }
                other => return Err(SqlError::unsupported(format!("SET value {other}"))),
            }
        }
        let mut globals = Vec::new();
        let mut autocommit = None;
        for ((is_global, name), value) in pairs {
            let operand = self.operand(&value)?;
            let lower = name.to_ascii_lowercase();
            if global || is_global {
                globals.push((lower, operand));
            } else if lower == "autocommit" {
                autocommit = Some(operand);
            } else if !IGNORED_SESSION_VARS.contains(&lower.as_str()) {
                return Err(SqlError::new(
                    msql_srv::ErrorKind::ER_UNKNOWN_SYSTEM_VARIABLE,
                    format!(
                        "Unknown or unsupported session variable '{name}'; engine settings are global: use SET GLOBAL {name} = ..."
                    ),
                ));
            }
        }
        match (globals.is_empty(), autocommit) {
            (false, None) => Ok(Stmt::SetGlobal(globals)),
            (true, Some(a)) => Ok(Stmt::SetAutocommit(a)),
            (true, None) => Ok(Stmt::SetSessionIgnored),
            (false, Some(_)) => Err(SqlError::unsupported(
                "SET of autocommit together with global variables",
            )),
        }
    }

    fn query(&mut self, q: ast::Query) -> Result<Stmt, SqlError> {
        if q.with.is_some() || q.offset.is_some() || q.fetch.is_some() || !q.locks.is_empty() {
            return Err(SqlError::unsupported("WITH/OFFSET/FETCH/locking reads"));
        }
        let SetExpr::Select(sel) = *q.body else {
            return Err(SqlError::unsupported(first_words(&q.body.to_string())));
        };
        if sel.from.is_empty() {
            return self.select_const(&sel.projection);
        }
        let table = table_of(&sel.from)?;
        if sel.having.is_some()
            || !matches!(&sel.group_by, ast::GroupByExpr::Expressions(g, _) if g.is_empty())
        {
            return Err(SqlError::unsupported("GROUP BY/HAVING"));
        }
        let distinct = match &sel.distinct {
            None => false,
            Some(Distinct::Distinct) => true,
            Some(Distinct::On(_)) => return Err(SqlError::unsupported("DISTINCT ON")),
        };
        let projection = self.projection(&sel.projection)?;
        let filter = self.filter(sel.selection.as_ref())?;
        let order = match q.order_by.as_ref().map(|o| &o.kind) {
            None => None,
            Some(OrderByKind::Expressions(exprs)) => match &exprs[..] {
                [] => None,
                [o] => Some((self.column(&o.expr)?, o.options.asc == Some(false))),
                _ => return Err(SqlError::unsupported("ORDER BY more than one column")),
            },
            Some(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        };
        let limit = q.limit.as_ref().map(|l| self.operand(l)).transpose()?;
        Ok(Stmt::Select(Select {
            table,
            projection,
            distinct,
            filter,
            order,
            limit,
        }))
    }

    fn projection(&mut self, items: &[SelectItem]) -> Result<Projection, SqlError> {
        if let [SelectItem::UnnamedExpr(Expr::Function(f))] = items {
            let name = one_name(&f.name)?.to_ascii_lowercase();
            let FunctionArguments::List(list) = &f.args else {
                return Err(SqlError::unsupported(format!("function {}", f.name)));
            };
            if list.duplicate_treatment.is_some() || f.over.is_some() {
                return Err(SqlError::unsupported(format!("{f}")));
            }
            return match (name.as_str(), &list.args[..]) {
                ("count", [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]) => {
                    Ok(Projection::Count(None))
                }
                ("count", [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))]) => {
                    Ok(Projection::Count(Some(self.column(e)?)))
                }
                ("sum", [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))]) => {
                    match self.column(e)? {
                        c @ (Col::Id | Col::K) => Ok(Projection::Sum(c)),
                        c => Err(SqlError::unsupported(format!("SUM({})", c.name()))),
                    }
                }
                _ => Err(SqlError::unsupported(format!(
                    "{f} (supported aggregates: SUM(k), SUM(id), COUNT(*), COUNT(column))"
                ))),
            };
        }
        if let [SelectItem::Wildcard(_)] = items {
            return Ok(Projection::Star);
        }
        let mut cols = Vec::new();
        for item in items {
            match item {
                SelectItem::Wildcard(_) => cols.extend([Col::Id, Col::K, Col::C, Col::Pad]),
                SelectItem::UnnamedExpr(e) => cols.push(self.column(e)?),
                other => return Err(SqlError::unsupported(format!("select item {other}"))),
            }
        }
        Ok(Projection::Cols(cols))
    }

    fn select_const(&mut self, items: &[SelectItem]) -> Result<Stmt, SqlError> {
        let mut out = Vec::new();
        for item in items {
            let (expr, alias) = match item {
                SelectItem::UnnamedExpr(e) => (e, None),
                SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
                other => return Err(SqlError::unsupported(format!("select item {other}"))),
            };
            let label = alias.unwrap_or_else(|| expr.to_string());
            let item = match expr {
                Expr::Identifier(id) if id.value.starts_with("@@") => ConstItem::Var {
                    name: id.value[2..].to_ascii_lowercase(),
                    global: false,
                },
                Expr::CompoundIdentifier(ids)
                    if ids.len() == 2 && ids[0].value.starts_with("@@") =>
                {
                    let scope = ids[0].value[2..].to_ascii_lowercase();
                    if scope != "global" && scope != "session" && scope != "local" {
                        return Err(SqlError::unsupported(format!("variable scope {scope}")));
                    }
                    ConstItem::Var {
                        name: ids[1].value.to_ascii_lowercase(),
                        global: scope == "global",
                    }
                }
                Expr::Function(f) => match one_name(&f.name)?.to_ascii_lowercase().as_str() {
                    "database" | "schema" => ConstItem::Database,
                    "version" => ConstItem::Version,
                    "connection_id" => ConstItem::ConnectionId,
                    _ => return Err(SqlError::unsupported(format!("function {}", f.name))),
                },
                e => ConstItem::Lit(self.operand(e)?),
            };
            out.push((label, item));
        }
        Ok(Stmt::SelectConst(out))
    }

    fn insert(&mut self, ins: ast::Insert) -> Result<Stmt, SqlError> {
        if ins.on.is_some() || ins.ignore || ins.replace_into || ins.returning.is_some() {
            return Err(SqlError::unsupported(
                "INSERT IGNORE/REPLACE/ON DUPLICATE KEY UPDATE/RETURNING",
            ));
        }
        let TableObject::TableName(name) = &ins.table else {
            return Err(SqlError::unsupported("INSERT INTO TABLE FUNCTION"));
        };
        let table = one_name(name)?;
        let Some(source) = ins.source else {
            return Err(SqlError::unsupported("INSERT .. SET"));
        };
        let SetExpr::Values(values) = *source.body else {
            return Err(SqlError::unsupported("INSERT .. SELECT"));
        };
        let implicit_cols = ins
            .columns
            .is_empty()
            .then(|| values.rows.first().map_or(0, Vec::len));
        let cols: Vec<Col> = match implicit_cols {
            Some(n) => implicit_columns(n)
                .ok_or_else(|| value_count_error(1))?
                .to_vec(),
            None => ins
                .columns
                .iter()
                .map(|c| Col::parse(&c.value))
                .collect::<Result<_, _>>()?,
        };
        let mut rows = Vec::with_capacity(values.rows.len());
        for (n, row) in values.rows.iter().enumerate() {
            if row.len() != cols.len() {
                return Err(value_count_error(n + 1));
            }
            let mut out: [Option<Operand>; 4] = [None, None, None, None];
            for (col, e) in cols.iter().zip(row) {
                out[*col as usize] = Some(self.operand(e)?);
            }
            rows.push(out);
        }
        Ok(Stmt::Insert {
            table,
            rows,
            implicit_cols,
        })
    }
}

/// The columns an INSERT without a column list fills from `n` values per
/// row: all of a table's columns, so `n` is the width of some [`Shape`].
pub(crate) fn implicit_columns(n: usize) -> Option<&'static [Col]> {
    [Shape::Sbtest, Shape::IdK]
        .into_iter()
        .map(shape_columns)
        .find(|cols| cols.len() == n)
}

/// A table's columns, in order.
pub fn shape_columns(shape: Shape) -> &'static [Col] {
    match shape {
        Shape::Sbtest => &[Col::Id, Col::K, Col::C, Col::Pad],
        Shape::IdK => &[Col::Id, Col::K],
    }
}

/// `ER_WRONG_VALUE_COUNT_ON_ROW` (1136) for row `n` (1-based).
pub(crate) fn value_count_error(n: usize) -> SqlError {
    SqlError::new(
        msql_srv::ErrorKind::ER_WRONG_VALUE_COUNT_ON_ROW,
        format!("Column count doesn't match value count at row {n}"),
    )
}

/// `@@global.x` → (true, x); `x` → (false, x).
fn var_name(name: &ObjectName) -> Result<(bool, String), SqlError> {
    let parts: Vec<&str> = name
        .0
        .iter()
        .map(|ObjectNamePart::Identifier(i)| i.value.as_str())
        .collect();
    match parts[..] {
        [one] => Ok((false, one.trim_start_matches("@@").to_owned())),
        [scope, name] if scope.starts_with("@@") => {
            Ok((scope.eq_ignore_ascii_case("@@global"), name.to_owned()))
        }
        _ => Err(SqlError::unsupported(format!("variable {name}"))),
    }
}

fn like(filter: Option<ShowStatementFilter>) -> Result<Option<String>, SqlError> {
    match filter {
        None => Ok(None),
        Some(ShowStatementFilter::Like(p)) => Ok(Some(p)),
        Some(other) => Err(SqlError::unsupported(format!("SHOW .. {other}"))),
    }
}

/// The statement's first three words, to name it in an error.
fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Checks `CREATE TABLE` declares one of the [`Shape`]s: id, k, c, pad (or
/// id, k) with id the primary key.
fn create_table(ct: &ast::CreateTable) -> Result<Stmt, SqlError> {
    let table = one_name(&ct.name)?;
    let shape_err = || {
        SqlError::unsupported(format!(
            "CREATE TABLE {table} with this shape; tables must be sbtest-shaped: \
             (id INTEGER [AUTO_INCREMENT], k INTEGER, c CHAR(120), pad CHAR(60), PRIMARY KEY (id)) \
             with optional KEY on (k), or (id INTEGER [AUTO_INCREMENT], k INTEGER, PRIMARY KEY (id))"
        ))
    };
    if ct.temporary || ct.query.is_some() || ct.like.is_some() {
        return Err(shape_err());
    }
    let names: Vec<String> = ct
        .columns
        .iter()
        .map(|c| c.name.value.to_ascii_lowercase())
        .collect();
    let Some(shape) = [Shape::Sbtest, Shape::IdK].into_iter().find(|s| {
        shape_columns(*s)
            .iter()
            .map(|c| c.name())
            .eq(names.iter().map(String::as_str))
    }) else {
        return Err(shape_err());
    };
    let int = |t: &ast::DataType| t.to_string().to_ascii_uppercase().contains("INT");
    let chr = |t: &ast::DataType| t.to_string().to_ascii_uppercase().contains("CHAR");
    let types_ok = ct.columns.iter().zip(shape_columns(shape)).all(|(c, col)| {
        if matches!(col, Col::Id | Col::K) {
            int(&c.data_type)
        } else {
            chr(&c.data_type)
        }
    });
    if !types_ok {
        return Err(shape_err());
    }
    let id_pk_inline = ct.columns[0].options.iter().any(|o| {
        matches!(
            o.option,
            ast::ColumnOption::Unique {
                is_primary: true,
                ..
            }
        )
    });
    let mut id_pk = id_pk_inline;
    for c in &ct.constraints {
        match c {
            ast::TableConstraint::PrimaryKey { columns, .. }
                if columns.len() == 1 && columns[0].value.eq_ignore_ascii_case("id") =>
            {
                id_pk = true
            }
            ast::TableConstraint::Index { columns, .. }
                if columns.len() == 1 && columns[0].value.eq_ignore_ascii_case("k") => {}
            _ => return Err(shape_err()),
        }
    }
    if !id_pk {
        return Err(shape_err());
    }
    Ok(Stmt::CreateTable {
        table,
        if_not_exists: ct.if_not_exists,
        shape,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sql: &str) -> Parsed {
        parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    #[test]
    fn sysbench_statements() {
        let create = "CREATE TABLE sbtest1(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) /*! ENGINE = innodb */ ";
        assert_eq!(
            p(create).stmt,
            Stmt::CreateTable {
                table: "sbtest1".into(),
                if_not_exists: false,
                shape: Shape::Sbtest,
            }
        );
        assert_eq!(
            p("CREATE INDEX k_1 ON sbtest1(k)").stmt,
            Stmt::CreateIndexK {
                table: "sbtest1".into()
            }
        );
        let sel = p("SELECT DISTINCT c FROM sbtest3 WHERE id BETWEEN ? AND ? ORDER BY c");
        assert_eq!(sel.params, 2);
        assert_eq!(
            sel.stmt,
            Stmt::Select(Select {
                table: "sbtest3".into(),
                projection: Projection::Cols(vec![Col::C]),
                distinct: true,
                filter: Filter::IdBetween(Operand::Param(0), Operand::Param(1)),
                order: Some((Col::C, false)),
                limit: None,
            })
        );
        let sum = p("SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?");
        assert!(matches!(
            sum.stmt,
            Stmt::Select(Select {
                projection: Projection::Sum(Col::K),
                ..
            })
        ));
        let upd = p("UPDATE sbtest1 SET k=k+1 WHERE id=?");
        assert_eq!(
            upd.stmt,
            Stmt::Update {
                table: "sbtest1".into(),
                set: vec![SetCol::KAdd {
                    delta: Operand::Lit(Lit::Int(1)),
                    negate: false
                }],
                id: Operand::Param(0)
            }
        );
        let upd = p("UPDATE sbtest1 SET c=? WHERE id=?");
        assert_eq!(upd.params, 2);
        let ins = p("INSERT INTO sbtest1(k, c, pad) VALUES(5, 'a', 'b'),(-6,'c','d')");
        let Stmt::Insert { rows, .. } = ins.stmt else {
            panic!()
        };
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1][0], None);
        assert_eq!(rows[1][1], Some(Operand::Lit(Lit::Int(-6))));
        assert_eq!(
            p("INSERT INTO t (id, k, c, pad) VALUES (?, ?, ?, ?)").params,
            4
        );
        assert_eq!(p("DELETE FROM sbtest1 WHERE id=?").params, 1);
        assert_eq!(
            p("DROP TABLE IF EXISTS sbtest1").stmt,
            Stmt::DropTable {
                tables: vec!["sbtest1".into()],
                if_exists: true
            }
        );
        assert_eq!(p("BEGIN").stmt, Stmt::Begin);
        assert_eq!(p("START TRANSACTION").stmt, Stmt::Begin);
        assert_eq!(p("COMMIT").stmt, Stmt::Commit);
        assert_eq!(p("ROLLBACK").stmt, Stmt::Rollback);
    }

    #[test]
    fn other_stock_sysbench_scripts() {
        // select_random_points
        let sel = p("SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, 7)");
        assert_eq!(sel.params, 2);
        let Stmt::Select(s) = sel.stmt else { panic!() };
        let point = |o: Operand| (o.clone(), o);
        assert_eq!(
            s.filter,
            Filter::KIn(vec![
                point(Operand::Param(0)),
                point(Operand::Param(1)),
                point(Operand::Lit(Lit::Int(7))),
            ])
        );
        // select_random_ranges: placeholders numbered in text order.
        let sel = p(
            "SELECT count(k) FROM sbtest1 WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR (k = ?)",
        );
        assert_eq!(sel.params, 5);
        let Stmt::Select(s) = sel.stmt else { panic!() };
        assert_eq!(s.projection, Projection::Count(Some(Col::K)));
        assert_eq!(
            s.filter,
            Filter::KIn(vec![
                (Operand::Param(0), Operand::Param(1)),
                (Operand::Param(2), Operand::Param(3)),
                point(Operand::Param(4)),
            ])
        );
        let Stmt::Select(s) = p("SELECT * FROM t WHERE k BETWEEN 1 AND 2").stmt else {
            panic!()
        };
        assert_eq!(s.projection, Projection::Star);
        assert_eq!(
            s.filter,
            Filter::KIn(vec![(Operand::Lit(Lit::Int(1)), Operand::Lit(Lit::Int(2)))])
        );
        // bulk_insert: an (id, k) table, rows without a column list.
        let create = "CREATE TABLE IF NOT EXISTS sbtest1 (\n id INTEGER NOT NULL,\n \
                      k INTEGER DEFAULT '0' NOT NULL,\n PRIMARY KEY (id))";
        assert_eq!(
            p(create).stmt,
            Stmt::CreateTable {
                table: "sbtest1".into(),
                if_not_exists: true,
                shape: Shape::IdK,
            }
        );
        let ins = p("INSERT INTO sbtest1 VALUES(1,1),(2,2)");
        let Stmt::Insert {
            rows,
            implicit_cols,
            ..
        } = ins.stmt
        else {
            panic!()
        };
        assert_eq!(implicit_cols, Some(2));
        assert_eq!(rows[1][1], Some(Operand::Lit(Lit::Int(2))));
        assert_eq!(rows[1][2], None);
        for (sql, code) in [
            ("INSERT INTO t VALUES (1, 2, 3)", 1136),
            ("INSERT INTO t VALUES (1, 2), (3)", 1136),
            ("SELECT c FROM t WHERE k IN (1) OR id = 2", 1235),
            ("SELECT c FROM t WHERE k NOT IN (1)", 1235),
            ("SELECT c FROM t WHERE id IN (1)", 1235),
            ("SELECT COUNT(DISTINCT k) FROM t", 1235),
            ("CREATE TABLE t (id INT, c CHAR(5), PRIMARY KEY (id))", 1235),
            ("CREATE TABLE t (id INT, k CHAR(5), PRIMARY KEY (id))", 1235),
        ] {
            assert_eq!(parse(sql).unwrap_err().code(), code, "{sql}");
        }
    }

    #[test]
    fn admin_statements() {
        assert_eq!(
            p("SET GLOBAL innodb_flush_log_at_trx_commit = 2").stmt,
            Stmt::SetGlobal(vec![(
                "innodb_flush_log_at_trx_commit".into(),
                Operand::Lit(Lit::Int(2))
            )])
        );
        assert_eq!(
            p("set global innodb_log_writer_threads=OFF").stmt,
            Stmt::SetGlobal(vec![(
                "innodb_log_writer_threads".into(),
                Operand::Lit(Lit::Str("OFF".into()))
            )])
        );
        assert_eq!(
            p("SET @@global.x = 1, @@global.y = 'z'").stmt,
            Stmt::SetGlobal(vec![
                ("x".into(), Operand::Lit(Lit::Int(1))),
                ("y".into(), Operand::Lit(Lit::Str("z".into())))
            ])
        );
        assert_eq!(
            p("SET autocommit=0").stmt,
            Stmt::SetAutocommit(Operand::Lit(Lit::Int(0)))
        );
        assert_eq!(p("SET NAMES utf8mb4").stmt, Stmt::SetSessionIgnored);
        assert_eq!(parse("SET foo = 1").unwrap_err().code(), 1193);
        assert_eq!(
            p("SHOW GLOBAL VARIABLES LIKE 'innodb%'").stmt,
            Stmt::ShowVariables(Some("innodb%".into()))
        );
        assert_eq!(p("SHOW GLOBAL STATUS").stmt, Stmt::ShowStatus(None));
        let Stmt::SelectConst(items) = p("select @@version_comment limit 1").stmt else {
            panic!()
        };
        assert_eq!(
            items[0].1,
            ConstItem::Var {
                name: "version_comment".into(),
                global: false
            }
        );
        let Stmt::SelectConst(items) = p("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit").stmt
        else {
            panic!()
        };
        assert_eq!(
            items[0].1,
            ConstItem::Var {
                name: "innodb_flush_log_at_trx_commit".into(),
                global: true
            }
        );
    }

    #[test]
    fn unsupported_sql_is_named() {
        for (sql, code) in [
            ("SELECT * FROM a JOIN b ON a.id = b.id", 1235),
            ("UPDATE t SET pad = 'x' WHERE id = 1", 1235),
            ("CREATE TABLE t (a INT)", 1235),
            ("SELECT c FROM t WHERE c = 'x'", 1235),
            ("GRANT ALL ON *.* TO x", 1235),
            ("SELEC 1", 1064),
            ("SELECT 1; SELECT 2", 1235),
            ("SELECT nope FROM t", 1054),
        ] {
            let e = parse(sql).unwrap_err();
            assert_eq!(e.code(), code, "{sql}: {e}");
        }
        assert!(parse("GRANT ALL ON *.* TO x")
            .unwrap_err()
            .message
            .contains("GRANT"));
    }
}
