//! Running the replication statements (see `sql::replication`) in a session.

use std::time::Duration;

use msql_srv::{Column, ColumnFlags, ColumnType};
use redoctor_engine::BinlogPos;

use super::error::SqlError;
use super::exec::{column, Cell, Outcome};
use super::replication::replica_error;
use super::sql::Stmt;
use super::Shared;

/// How long `BINLOG DUMP` waits for the next commit group.
pub const DUMP_WAIT: Duration = Duration::from_millis(500);

fn blob(name: &str) -> Column {
    Column {
        table: String::new(),
        column: name.to_string(),
        coltype: ColumnType::MYSQL_TYPE_BLOB,
        colflags: ColumnFlags::BINARY_FLAG,
    }
}

fn yes_no(b: bool) -> Cell {
    Cell::Str(if b { "Yes" } else { "No" }.into())
}

fn binlog_name(file: u64) -> String {
    format!("binlog.{file:06}")
}

pub fn run(shared: &Shared, stmt: &Stmt) -> Result<Outcome, SqlError> {
    let rep = &shared.replication;
    match stmt {
        Stmt::ChangeSource(c) => rep.change(c).map(|()| Outcome::ok()),
        Stmt::StartReplica => rep.start().map(|()| Outcome::ok()).map_err(replica_error),
        Stmt::StopReplica => {
            rep.stop();
            Ok(Outcome::ok())
        }
        Stmt::ShowReplicaStatus => Ok(show_status(shared)),
        Stmt::BinlogDump {
            file,
            offset,
            limit,
        } => {
            let from = BinlogPos {
                file: *file,
                offset: *offset,
            };
            let events = shared.engine.binlog_dump(from, *limit, DUMP_WAIT)?;
            let int = |n: &str| column(n, true);
            Ok(Outcome::Rows {
                cols: vec![
                    int("end_file"),
                    int("end_offset"),
                    int("xid"),
                    int("last_committed"),
                    int("sequence"),
                    blob("payload"),
                ],
                rows: events
                    .into_iter()
                    .map(|e| {
                        vec![
                            Cell::Int(e.end.file as i64),
                            Cell::Int(e.end.offset as i64),
                            Cell::Int(e.xid as i64),
                            Cell::Int(e.clock.last_committed as i64),
                            Cell::Int(e.clock.sequence as i64),
                            Cell::Bytes(e.payload),
                        ]
                    })
                    .collect(),
            })
        }
        Stmt::BinlogTable { id } => {
            let rows = match shared.engine.table_info(*id) {
                Some((name, shape)) => vec![vec![Cell::Str(name), Cell::Int(shape.code() as i64)]],
                None => Vec::new(),
            };
            Ok(Outcome::Rows {
                cols: vec![column("name", false), column("shape", true)],
                rows,
            })
        }
        _ => unreachable!("only replication statements are routed here"),
    }
}

fn show_status(shared: &Shared) -> Outcome {
    let rep = &shared.replication;
    let s = rep.replica().status();
    let st = &s.state;
    let source = rep.source().map(|p| p.display().to_string());
    let configured = source.is_some() || st.io_running;
    if !configured {
        // As MySQL: an empty result on a server that is not a replica.
        return Outcome::Rows {
            cols: status_columns(),
            rows: Vec::new(),
        };
    }
    let io_state = if st.io_running {
        "Waiting for source to send event"
    } else {
        ""
    };
    let row = vec![
        Cell::Str(io_state.into()),
        source.map_or(Cell::Null, Cell::Str),
        Cell::Str(binlog_name(st.received.file)),
        Cell::Int(st.received.offset as i64),
        Cell::Str(binlog_name(st.applied.file)),
        Cell::Int(st.applied.offset as i64),
        yes_no(st.io_running),
        yes_no(st.sql_running),
        st.seconds_behind
            .map_or(Cell::Null, |s| Cell::Int(s.floor() as i64)),
        Cell::Int(s.relay_log_space as i64),
        Cell::Str(st.last_io_error.clone().unwrap_or_default()),
        Cell::Str(st.last_sql_error.clone().unwrap_or_default()),
        Cell::Int(s.workers as i64),
        Cell::Str(s.arbitration.name().into()),
        st.seconds_behind
            .map_or(Cell::Null, |s| Cell::Str(format!("{s:.3}"))),
    ];
    Outcome::Rows {
        cols: status_columns(),
        rows: vec![row],
    }
}

/// `SHOW REPLICA STATUS` columns: MySQL's names where they apply, then the
/// engine's own.
pub const STATUS_COLUMNS: &[(&str, bool)] = &[
    ("Replica_IO_State", false),
    ("Source_Socket", false),
    ("Source_Log_File", false),
    ("Read_Source_Log_Pos", true),
    ("Relay_Source_Log_File", false),
    ("Exec_Source_Log_Pos", true),
    ("Replica_IO_Running", false),
    ("Replica_SQL_Running", false),
    ("Seconds_Behind_Source", true),
    ("Relay_Log_Space", true),
    ("Last_IO_Error", false),
    ("Last_SQL_Error", false),
    ("Replica_Parallel_Workers", true),
    ("Replica_Relay_Log_Arbitration", false),
    ("Replica_Lag_Seconds", false),
];

fn status_columns() -> Vec<Column> {
    STATUS_COLUMNS
        .iter()
        .map(|(n, int)| column(n, *int))
        .collect()
}
