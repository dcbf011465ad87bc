//! The soak's MySQL-protocol client to the replica child: its status and
//! live switches.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

/// A connection to the replica `serve`.
pub struct ReplicaClient {
    conn: Conn,
}

/// The columns of `SHOW REPLICA STATUS` the soak reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub io_running: bool,
    pub sql_running: bool,
    /// The source position the applier has applied up to.
    pub exec_file: String,
    pub exec_pos: u64,
    pub last_io_error: String,
    pub last_sql_error: String,
}

impl ReplicaClient {
    /// Connects to `socket`, retrying until `limit` passes (the server is
    /// still opening its engine).
    pub fn connect(socket: &Path, limit: Duration) -> Result<ReplicaClient, String> {
        let t0 = Instant::now();
        let path = socket.to_str().ok_or("the socket path is not UTF-8")?;
        loop {
            let opts = OptsBuilder::new()
                .socket(Some(path))
                .prefer_socket(true)
                .tcp_connect_timeout(Some(Duration::from_secs(2)));
            match Conn::new(opts) {
                Ok(conn) => return Ok(ReplicaClient { conn }),
                Err(e) if t0.elapsed() >= limit => {
                    return Err(format!(
                        "cannot connect to the replica on {} after {:.0} s: {e}",
                        socket.display(),
                        limit.as_secs_f64()
                    ))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// `SHOW GLOBAL STATUS LIKE name`.
    pub fn counter(&mut self, name: &str) -> Result<u64, String> {
        let row: Option<(String, u64)> = self
            .conn
            .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
            .map_err(|e| format!("SHOW GLOBAL STATUS LIKE '{name}': {e}"))?;
        row.map(|(_, v)| v)
            .ok_or_else(|| format!("the replica has no status counter {name}"))
    }

    /// `SET GLOBAL name = value`.
    pub fn set_global(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.conn
            .query_drop(format!("SET GLOBAL {name} = '{value}'"))
            .map_err(|e| format!("SET GLOBAL {name} = '{value}': {e}"))
    }

    /// `SHOW REPLICA STATUS`, or `None` when the server is not a replica.
    pub fn status(&mut self) -> Result<Option<Status>, String> {
        let rows: Vec<mysql::Row> = self
            .conn
            .query("SHOW REPLICA STATUS")
            .map_err(|e| format!("SHOW REPLICA STATUS: {e}"))?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let names: Vec<String> = row
            .columns_ref()
            .iter()
            .map(|c| c.name_str().to_string())
            .collect();
        let cols: BTreeMap<String, String> = names
            .into_iter()
            .zip(row.unwrap())
            .map(|(k, v)| {
                let v = match v {
                    mysql::Value::NULL => String::new(),
                    v => mysql::from_value_opt::<String>(v).unwrap_or_default(),
                };
                (k, v)
            })
            .collect();
        let get = |k: &str| {
            cols.get(k)
                .cloned()
                .ok_or_else(|| format!("SHOW REPLICA STATUS has no column {k}"))
        };
        let exec_pos = get("Exec_Source_Log_Pos")?;
        Ok(Some(Status {
            io_running: get("Replica_IO_Running")? == "Yes",
            sql_running: get("Replica_SQL_Running")? == "Yes",
            exec_file: get("Relay_Source_Log_File")?,
            exec_pos: exec_pos
                .parse()
                .map_err(|_| format!("Exec_Source_Log_Pos is {exec_pos:?}, not a number"))?,
            last_io_error: get("Last_IO_Error")?,
            last_sql_error: get("Last_SQL_Error")?,
        }))
    }
}
