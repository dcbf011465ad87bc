//! One client connection: its transaction state, prepared statements, and
//! the `msql_srv::MysqlShim` callbacks that run its commands.
//!
//! Transactions follow MySQL: with autocommit on, a statement outside
//! `BEGIN` is its own transaction; with autocommit off the first statement
//! opens one that lasts until COMMIT/ROLLBACK; `BEGIN`, DDL and
//! `SET autocommit=1` commit an open transaction first. A failed statement
//! that changed nothing leaves the transaction open (as MySQL's
//! statement-level rollback would); a failed statement that already changed
//! rows (a multi-row INSERT hitting a duplicate) rolls the whole transaction
//! back and says so, because the engine has no statement savepoints.
//! Deadlocks and lock wait timeouts roll the transaction back (InnoDB with
//! innodb_rollback_on_timeout=ON). Closing the connection rolls back.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use msql_srv::{
    AuthenticationContext, Column, ErrorKind, MysqlShim, ParamParser, QueryResultWriter,
    StatementMetaWriter, ValueInner,
};

use super::admin::like;
use super::error::SqlError;
use super::exec::{self, column, select_columns, Args, Cell, Outcome};
use super::framing::StmtParams;
use super::replication_stmt;
use super::sql::{self, ConstItem, Lit, Parsed, Stmt};
use super::stmt_timing::Kind;
use super::{ConnState, Shared};
use redoctor_engine::Trx;

/// The version string clients see (`SELECT VERSION()`, `@@version`).
pub const VERSION: &str = "8.0.36-redoctor";
/// The schema name reported by `SELECT DATABASE()`.
pub const SCHEMA: &str = "sbtest";

pub struct Session {
    shared: Arc<Shared>,
    conn: Arc<ConnState>,
    /// Result of the listener's peer check; Err refuses the login.
    peer: Result<(), String>,
    trx: Option<Trx>,
    autocommit: bool,
    stmts: HashMap<u32, Arc<Parsed>>,
    next_stmt: u32,
    /// Parameter counts, shared with the connection's framing guard.
    stmt_params: StmtParams,
    /// Run once the client has logged in (lifts the connect timeout).
    on_login: Option<Box<dyn FnOnce() + Send>>,
}

impl Session {
    pub fn new(
        shared: Arc<Shared>,
        conn: Arc<ConnState>,
        peer: Result<(), String>,
        stmt_params: StmtParams,
        on_login: Box<dyn FnOnce() + Send>,
    ) -> Session {
        Session {
            shared,
            conn,
            peer,
            trx: None,
            autocommit: true,
            stmts: HashMap::new(),
            next_stmt: 1,
            stmt_params,
            on_login: Some(on_login),
        }
    }

    fn engine(&self) -> &redoctor_engine::Engine {
        &self.shared.engine
    }

    /// Commits `trx`, timing it as [`Kind::EngineCommit`].
    fn commit(&self, trx: Trx) -> Result<(), SqlError> {
        let s = &self.shared;
        s.stmt_timing
            .time(Kind::EngineCommit, || s.engine.commit(trx))?;
        Ok(())
    }

    fn commit_open(&mut self) -> Result<(), SqlError> {
        if let Some(t) = self.trx.take() {
            self.commit(t)?;
        }
        Ok(())
    }

    fn rollback_open(&mut self) {
        if let Some(t) = self.trx.take() {
            self.shared.engine.rollback(t);
        }
    }

    fn refuse_if_shutting_down(&self) -> Result<(), SqlError> {
        if self.shared.shutting_down.load(Ordering::Acquire) {
            return Err(SqlError::new(
                ErrorKind::ER_SERVER_SHUTDOWN,
                "Server shutdown in progress: no new transactions",
            ));
        }
        Ok(())
    }

    /// Parses a text query or a statement to prepare, timed as [`Kind::Parse`].
    fn parse(&self, query: &str) -> Result<Parsed, SqlError> {
        self.shared
            .stmt_timing
            .time(Kind::Parse, || sql::parse(query))
    }

    /// Writes a statement's reply, timed as [`Kind::Reply`].
    fn reply<W: Read + Write>(
        &self,
        results: QueryResultWriter<'_, W>,
        r: Result<Outcome, SqlError>,
    ) -> io::Result<()> {
        self.shared
            .stmt_timing
            .time(Kind::Reply, || write_outcome(results, r))
    }

    /// Runs one parsed statement with its parameters.
    fn execute(&mut self, p: &Parsed, params: &[Lit]) -> Result<Outcome, SqlError> {
        self.shared.questions.fetch_add(1, Ordering::Relaxed);
        let args = Args(params);
        let start = Instant::now();
        let r = self.execute_inner(&p.stmt, &args);
        self.shared
            .stmt_timing
            .record(Kind::of(&p.stmt), start.elapsed());
        self.conn
            .in_trx
            .store(self.trx.is_some(), Ordering::Release);
        r
    }

    fn execute_inner(&mut self, stmt: &Stmt, args: &Args<'_>) -> Result<Outcome, SqlError> {
        match stmt {
            Stmt::Select(_) | Stmt::Insert { .. } | Stmt::Update { .. } | Stmt::Delete { .. } => {
                self.data(stmt, args)
            }
            Stmt::Begin => {
                self.commit_open()?;
                self.refuse_if_shutting_down()?;
                self.trx = Some(self.engine().begin());
                Ok(Outcome::ok())
            }
            Stmt::Commit => self.commit_open().map(|_| Outcome::ok()),
            Stmt::Rollback => {
                self.rollback_open();
                Ok(Outcome::ok())
            }
            Stmt::SetAutocommit(v) => {
                let on = match args
                    .text(v, "autocommit", 16)?
                    .to_ascii_lowercase()
                    .as_str()
                {
                    "1" | "on" | "true" => true,
                    "0" | "off" | "false" => false,
                    other => {
                        return Err(SqlError::new(
                            ErrorKind::ER_WRONG_VALUE_FOR_VAR,
                            format!("Variable 'autocommit' can't be set to the value of '{other}'"),
                        ))
                    }
                };
                if on {
                    self.commit_open()?;
                }
                self.autocommit = on;
                Ok(Outcome::ok())
            }
            Stmt::CreateTable {
                table,
                if_not_exists,
                shape,
            } => {
                self.commit_open()?;
                if *if_not_exists && self.engine().table_id(table).is_some() {
                    return Ok(Outcome::ok());
                }
                self.engine().create_shaped_table(table, *shape)?;
                Ok(Outcome::ok())
            }
            Stmt::CreateIndexK { table } => {
                self.commit_open()?;
                if self.engine().table_id(table).is_none() {
                    return Err(super::error::no_such_table(table));
                }
                Ok(Outcome::ok())
            }
            Stmt::DropTable { tables, if_exists } => {
                self.commit_open()?;
                let missing: Vec<&str> = tables
                    .iter()
                    .filter(|t| self.engine().table_id(t).is_none())
                    .map(|t| t.as_str())
                    .collect();
                if !missing.is_empty() && !if_exists {
                    return Err(SqlError::new(
                        ErrorKind::ER_BAD_TABLE_ERROR,
                        format!("Unknown table '{}'", missing.join(",")),
                    ));
                }
                for t in tables {
                    if self.engine().table_id(t).is_some() {
                        self.engine().drop_table(t)?;
                    }
                }
                Ok(Outcome::ok())
            }
            Stmt::SetSessionIgnored | Stmt::Use => Ok(Outcome::ok()),
            Stmt::SetGlobal(pairs) => {
                // One variable per statement, so a refused value changes nothing.
                let [(name, v)] = &pairs[..] else {
                    return Err(SqlError::unsupported(
                        "several variables in one SET GLOBAL (set one per statement)",
                    ));
                };
                let value = args.text(v, name, 4096)?;
                self.engine().set_global(name, &value)?;
                Ok(Outcome::ok())
            }
            Stmt::SelectConst(items) => self.select_const(items, args),
            Stmt::ShowVariables(pattern) => {
                let rows = self
                    .all_variables()
                    .into_iter()
                    .filter(|(n, _)| pattern.as_deref().is_none_or(|p| like(p, n)))
                    .map(|(n, v)| vec![Cell::Str(n), Cell::Str(v)])
                    .collect();
                Ok(name_value(rows))
            }
            Stmt::ShowStatus(pattern) => {
                let rows = self
                    .all_status()
                    .into_iter()
                    .filter(|(n, _)| pattern.as_deref().is_none_or(|p| like(p, n)))
                    .map(|(n, v)| vec![Cell::Str(n), Cell::Str(v.to_string())])
                    .collect();
                Ok(name_value(rows))
            }
            Stmt::ChangeSource(_)
            | Stmt::StartReplica
            | Stmt::StopReplica
            | Stmt::ShowReplicaStatus
            | Stmt::BinlogDump { .. }
            | Stmt::BinlogTable { .. } => replication_stmt::run(&self.shared, stmt),
            Stmt::ShowTables => Ok(Outcome::Rows {
                cols: vec![column(&format!("Tables_in_{SCHEMA}"), false)],
                rows: self
                    .engine()
                    .table_names()
                    .into_iter()
                    .map(|n| vec![Cell::Str(n)])
                    .collect(),
            }),
        }
    }

    /// SELECT/INSERT/UPDATE/DELETE with MySQL's autocommit rules.
    fn data(&mut self, stmt: &Stmt, args: &Args<'_>) -> Result<Outcome, SqlError> {
        let own_trx = self.trx.is_none();
        if own_trx {
            self.refuse_if_shutting_down()?;
        }
        let single = own_trx && self.autocommit;
        let mut trx = match self.trx.take() {
            Some(t) => t,
            None => self.shared.engine.begin(),
        };
        let mut changed = false;
        let r = exec::run(
            &self.shared.engine,
            &self.shared.auto_inc,
            &mut trx,
            stmt,
            args,
            &mut changed,
        );
        match r {
            Ok(out) => {
                if single {
                    self.commit(trx)?;
                } else {
                    self.trx = Some(trx);
                }
                Ok(out)
            }
            Err(mut e) => {
                if single || e.rolled_back_trx() || trx.is_rolled_back() {
                    self.shared.engine.rollback(trx);
                } else if changed {
                    self.shared.engine.rollback(trx);
                    e.message
                        .push_str("; the whole transaction was rolled back (the statement had already changed rows)");
                } else {
                    self.trx = Some(trx);
                }
                Err(e)
            }
        }
    }

    /// Global variables from the registry plus the server's own.
    fn all_variables(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .engine()
            .variables()
            .into_iter()
            .map(|v| (v.name, v.value))
            .collect();
        v.extend(self.server_variables());
        v.sort();
        v
    }

    /// `@@name`: one of the server's own variables, else the registry's.
    fn variable(&self, name: &str) -> Result<String, SqlError> {
        if let Some((_, v)) = self
            .server_variables()
            .into_iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            return Ok(v);
        }
        self.engine().variable(name).map(|v| v.value).map_err(|_| {
            SqlError::new(
                ErrorKind::ER_UNKNOWN_SYSTEM_VARIABLE,
                format!("Unknown system variable '{name}'"),
            )
        })
    }

    fn server_variables(&self) -> Vec<(String, String)> {
        let max = self.shared.max_packet.to_string();
        [
            ("version", VERSION.to_string()),
            ("version_comment", "redoctor bundled engine".into()),
            ("max_allowed_packet", max),
            ("socket", self.shared.socket.clone()),
            ("port", self.shared.port.to_string()),
            ("hostname", "localhost".into()),
            // The server's process id: a tool reaching it through a proxy
            // or forwarder can still tell which process it talks to.
            ("pid", std::process::id().to_string()),
            (
                "autocommit",
                if self.autocommit { "ON" } else { "OFF" }.into(),
            ),
            ("transaction_isolation", "READ-COMMITTED".into()),
            ("tx_isolation", "READ-COMMITTED".into()),
            ("sql_mode", "STRICT_TRANS_TABLES".into()),
            ("character_set_client", "utf8mb4".into()),
            ("character_set_connection", "utf8mb4".into()),
            ("character_set_results", "utf8mb4".into()),
            ("collation_connection", "utf8mb4_general_ci".into()),
            ("lower_case_table_names", "0".into()),
            ("time_zone", "SYSTEM".into()),
            ("system_time_zone", "UTC".into()),
            ("wait_timeout", "28800".into()),
            ("interactive_timeout", "28800".into()),
            ("net_write_timeout", "60".into()),
            (
                "redoctor_net_spin_us",
                self.shared.net_spin.spin().as_micros().to_string(),
            ),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect()
    }

    fn all_status(&self) -> Vec<(String, u64)> {
        let s = &self.shared;
        let mut v = s.engine.global_status();
        v.extend([
            (
                "Threads_connected".to_string(),
                s.threads_connected.load(Ordering::Relaxed),
            ),
            ("Connections".into(), s.connections.load(Ordering::Relaxed)),
            ("Questions".into(), s.questions.load(Ordering::Relaxed)),
            ("Uptime".into(), s.started.elapsed().as_secs()),
            (
                "Redoctor_net_polls_hit".into(),
                s.net_spin.hits.load(Ordering::Relaxed),
            ),
            (
                "Redoctor_net_polls_timed_out".into(),
                s.net_spin.timeouts.load(Ordering::Relaxed),
            ),
            (
                "Redoctor_net_poll_us".into(),
                s.net_spin.spun_ns.load(Ordering::Relaxed) / 1000,
            ),
        ]);
        v.extend(s.stmt_timing.status());
        v.sort();
        v
    }

    fn select_const(
        &self,
        items: &[(String, ConstItem)],
        args: &Args<'_>,
    ) -> Result<Outcome, SqlError> {
        let mut cols = Vec::new();
        let mut row = Vec::new();
        for (label, item) in items {
            let (int, cell) = match item {
                ConstItem::Var { name, .. } => (false, Cell::Str(self.variable(name)?)),
                ConstItem::Lit(o) => match args.int(o, label) {
                    Ok(i) => (true, Cell::Int(i)),
                    Err(_) => match args.text(o, label, usize::MAX) {
                        Ok(s) => (false, Cell::Str(s)),
                        Err(_) => (false, Cell::Null),
                    },
                },
                ConstItem::Database => (false, Cell::Str(SCHEMA.into())),
                ConstItem::Version => (false, Cell::Str(VERSION.into())),
                ConstItem::ConnectionId => (true, Cell::Int(self.conn.id as i64)),
            };
            cols.push(column(label, int));
            row.push(cell);
        }
        Ok(Outcome::Rows {
            cols,
            rows: vec![row],
        })
    }

    /// Result columns to announce when preparing `stmt`.
    fn prepared_columns(&self, stmt: &Stmt) -> Vec<Column> {
        match stmt {
            Stmt::Select(s) => {
                // `SELECT *` announces the columns the table has now (sbtest's
                // if it does not exist yet); each execution returns the
                // columns of the table it finds.
                let shape = self.engine().table_id_shape(&s.table);
                select_columns(s, shape.map(|(_, shape)| shape).unwrap_or_default())
            }
            Stmt::ShowVariables(_) | Stmt::ShowStatus(_) => {
                vec![column("Variable_name", false), column("Value", false)]
            }
            Stmt::ShowTables => vec![column(&format!("Tables_in_{SCHEMA}"), false)],
            Stmt::SelectConst(items) => items
                .iter()
                .map(|(label, item)| {
                    let int = matches!(item, ConstItem::ConnectionId)
                        || matches!(item, ConstItem::Lit(super::sql::Operand::Lit(Lit::Int(_))));
                    column(label, int)
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn name_value(rows: Vec<Vec<Cell>>) -> Outcome {
    Outcome::Rows {
        cols: vec![column("Variable_name", false), column("Value", false)],
        rows,
    }
}

fn write_outcome<W: Read + Write>(
    results: QueryResultWriter<'_, W>,
    r: Result<Outcome, SqlError>,
) -> io::Result<()> {
    match r {
        Err(e) => results.error(e.kind, e.message.as_bytes()),
        Ok(Outcome::Done {
            affected,
            last_insert_id,
        }) => results.completed(affected, last_insert_id),
        Ok(Outcome::Rows { cols, rows }) => {
            let mut w = results.start(&cols)?;
            for row in rows {
                for (c, col) in row.into_iter().zip(&cols) {
                    let int = col.coltype == msql_srv::ColumnType::MYSQL_TYPE_LONGLONG;
                    match c {
                        Cell::Null if int => w.write_col(None::<i64>)?,
                        Cell::Null => w.write_col(None::<&str>)?,
                        Cell::Int(i) if int => w.write_col(i)?,
                        Cell::Int(i) => w.write_col(i.to_string())?,
                        Cell::Str(s) => w.write_col(s)?,
                        Cell::Bytes(b) => w.write_col(b.as_slice())?,
                    }
                }
                w.end_row()?;
            }
            w.finish()
        }
    }
}

fn param_value(v: ValueInner<'_>) -> Result<Lit, SqlError> {
    Ok(match v {
        ValueInner::NULL => Lit::Null,
        ValueInner::Bytes(b) => Lit::Str(String::from_utf8_lossy(b).into_owned()),
        ValueInner::Int(i) => Lit::Int(i),
        ValueInner::UInt(u) => Lit::Int(i64::try_from(u).map_err(|_| {
            SqlError::new(
                ErrorKind::ER_WARN_DATA_OUT_OF_RANGE,
                format!("parameter value {u} is out of range"),
            )
        })?),
        ValueInner::Double(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Lit::Int(f as i64),
        ValueInner::Double(f) => Lit::Str(f.to_string()),
        ValueInner::Date(_) | ValueInner::Time(_) | ValueInner::Datetime(_) => {
            return Err(SqlError::unsupported("DATE/TIME parameters"))
        }
    })
}

impl<W: Read + Write> MysqlShim<W> for Session {
    type Error = io::Error;

    fn on_prepare(&mut self, query: &str, info: StatementMetaWriter<'_, W>) -> io::Result<()> {
        match self.parse(query) {
            Err(e) => info.error(e.kind, e.message.as_bytes()),
            Ok(p) => {
                let id = self.next_stmt;
                self.next_stmt = self.next_stmt.wrapping_add(1).max(1);
                let params: Vec<Column> = (0..p.params).map(|_| column("?", false)).collect();
                let cols = self.prepared_columns(&p.stmt);
                let r = info.reply(id, &params, &cols);
                self.stmt_params.lock().insert(id, p.params);
                self.stmts.insert(id, Arc::new(p));
                r
            }
        }
    }

    fn on_execute(
        &mut self,
        id: u32,
        params: ParamParser<'_>,
        results: QueryResultWriter<'_, W>,
    ) -> io::Result<()> {
        let Some(parsed) = self.stmts.get(&id) else {
            return results.error(
                ErrorKind::ER_UNKNOWN_STMT_HANDLER,
                format!("Unknown prepared statement handler ({id}) given to EXECUTE").as_bytes(),
            );
        };
        let parsed = Arc::clone(parsed);
        let mut values = Vec::with_capacity(parsed.params);
        let mut bad = None;
        for p in params {
            match param_value(p.value.into_inner()) {
                Ok(v) => values.push(v),
                Err(e) => bad = Some(e),
            }
        }
        let r = match bad {
            Some(e) => Err(e),
            None if values.len() != parsed.params => Err(SqlError::new(
                ErrorKind::ER_WRONG_ARGUMENTS,
                format!(
                    "statement has {} parameters, {} were sent",
                    parsed.params,
                    values.len()
                ),
            )),
            None => self.execute(&parsed, &values),
        };
        self.reply(results, r)
    }

    fn on_close(&mut self, id: u32) {
        self.stmt_params.lock().remove(&id);
        self.stmts.remove(&id);
    }

    fn on_query(&mut self, query: &str, results: QueryResultWriter<'_, W>) -> io::Result<()> {
        let r = self.parse(query).and_then(|p| {
            if p.params > 0 {
                return Err(SqlError::parse(
                    "'?' placeholders need a prepared statement",
                ));
            }
            self.execute(&p, &[])
        });
        self.reply(results, r)
    }

    fn on_init(&mut self, _db: &str, w: msql_srv::InitWriter<'_, W>) -> io::Result<()> {
        // One schema: every database name selects it.
        w.ok()
    }

    fn after_authentication(&mut self, _ctx: &AuthenticationContext<'_>) -> io::Result<()> {
        if self.peer.is_ok() {
            if let Some(f) = self.on_login.take() {
                f();
            }
        }
        self.peer
            .clone()
            .map_err(|why| io::Error::new(io::ErrorKind::PermissionDenied, why))
    }
}

impl Drop for Session {
    /// A closed connection rolls back its open transaction.
    fn drop(&mut self) {
        self.rollback_open();
        self.conn.in_trx.store(false, Ordering::Release);
    }
}
