//! The server's replication: a replica of another `serve` over its Unix
//! socket, and the source side's `BINLOG DUMP` / `BINLOG TABLE`.
//!
//! The replica's receiver is a MySQL-protocol client of the source
//! ([`RemoteSource`]): it asks `BINLOG DUMP <file> <offset> LIMIT n`, which
//! the source answers with the events after that position (waiting up to a
//! second for the next commit group when there are none), one row each:
//! `(end_file, end_offset, xid, last_committed, sequence, payload)`, and
//! `BINLOG TABLE <id>` for a table's name and shape. The rest (relay log,
//! applier, workers, crash safety) is the engine's `replica` module.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mysql::prelude::Queryable;
use parking_lot::Mutex;
use redoctor_engine::replica::{Replica, ReplicaError, Source};
use redoctor_engine::{BinlogPos, DumpEvent, Engine, LogicalClock, Shape, BINLOG_FILE_HDR};

use crate::error::SqlError;
use crate::sql::replication::ChangeSource;

/// A source `serve` reached over its Unix socket.
pub struct RemoteSource {
    socket: PathBuf,
    conn: Option<mysql::Conn>,
}

impl RemoteSource {
    pub fn new(socket: impl Into<PathBuf>) -> RemoteSource {
        RemoteSource {
            socket: socket.into(),
            conn: None,
        }
    }

    fn err(&self, why: impl std::fmt::Display) -> ReplicaError {
        ReplicaError::Source {
            source_name: self.socket.display().to_string(),
            why: why.to_string(),
        }
    }

    fn conn(&mut self) -> Result<&mut mysql::Conn, ReplicaError> {
        if self.conn.is_none() {
            let opts = mysql::OptsBuilder::new()
                .socket(Some(self.socket.display().to_string()))
                .prefer_socket(true);
            let c = mysql::Conn::new(opts).map_err(|e| self.err(e))?;
            self.conn = Some(c);
        }
        Ok(self.conn.as_mut().expect("connected"))
    }

    fn query(&mut self, q: &str) -> Result<Vec<mysql::Row>, ReplicaError> {
        let r = self.conn()?.query(q);
        r.map_err(|e| {
            self.conn = None;
            self.err(e)
        })
    }
}

fn col<T: mysql::prelude::FromValue>(row: &mysql::Row, i: usize) -> Option<T> {
    row.get_opt::<T, usize>(i).and_then(Result::ok)
}

impl Source for RemoteSource {
    fn read_after(
        &mut self,
        from: BinlogPos,
        max: usize,
        _wait: Duration,
    ) -> Result<Vec<DumpEvent>, ReplicaError> {
        let rows = self.query(&format!(
            "BINLOG DUMP {} {} LIMIT {max}",
            from.file, from.offset
        ))?;
        rows.iter()
            .map(|r| {
                let ev = (|| {
                    Some(DumpEvent {
                        end: BinlogPos {
                            file: col(r, 0)?,
                            offset: col(r, 1)?,
                        },
                        xid: col(r, 2)?,
                        clock: LogicalClock {
                            last_committed: col(r, 3)?,
                            sequence: col(r, 4)?,
                        },
                        payload: col::<Vec<u8>>(r, 5)?,
                    })
                })();
                ev.ok_or_else(|| self.err("a BINLOG DUMP row is malformed"))
            })
            .collect()
    }

    fn table(&mut self, id: u32) -> Result<(String, Shape), ReplicaError> {
        let rows = self.query(&format!("BINLOG TABLE {id}"))?;
        let row = rows
            .first()
            .ok_or_else(|| self.err(format!("it has no table with id {id}")))?;
        let name: String = col(row, 0).ok_or_else(|| self.err("bad BINLOG TABLE row"))?;
        let code: u8 = col(row, 1).ok_or_else(|| self.err("bad BINLOG TABLE row"))?;
        let shape = Shape::from_code(code)
            .ok_or_else(|| self.err(format!("unknown table shape {code}")))?;
        Ok((name, shape))
    }
}

/// The server's replica and its configured source.
pub struct Replication {
    replica: Replica,
    source: Mutex<Option<PathBuf>>,
}

impl Replication {
    pub fn new(engine: Arc<Engine>, source: Option<PathBuf>) -> Replication {
        Replication {
            replica: Replica::new(engine),
            source: Mutex::new(source),
        }
    }

    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    pub fn source(&self) -> Option<PathBuf> {
        self.source.lock().clone()
    }

    /// `CHANGE REPLICATION SOURCE TO` (refused while running).
    pub fn change(&self, c: &ChangeSource) -> Result<(), SqlError> {
        if self.replica.is_running() {
            return Err(replica_error(ReplicaError::Running));
        }
        if let (Some(file), Some(offset)) = (c.log_file, c.log_pos) {
            let at = BinlogPos {
                file,
                offset: offset.max(BINLOG_FILE_HDR),
            };
            self.replica.change_position(at).map_err(replica_error)?;
        }
        if let Some(s) = &c.socket {
            *self.source.lock() = Some(PathBuf::from(s));
        }
        Ok(())
    }

    /// `START REPLICA`.
    pub fn start(&self) -> Result<(), ReplicaError> {
        let Some(socket) = self.source() else {
            return Err(ReplicaError::NoSource);
        };
        check_source_socket(&socket)?;
        self.replica.start(Box::new(RemoteSource::new(socket)))
    }

    /// `STOP REPLICA`.
    pub fn stop(&self) {
        self.replica.stop();
    }
}

fn check_source_socket(p: &Path) -> Result<(), ReplicaError> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(p) {
        Ok(m) if m.file_type().is_socket() => Ok(()),
        Ok(_) => Err(ReplicaError::Source {
            source_name: p.display().to_string(),
            why: "it is not a Unix socket".into(),
        }),
        Err(e) => Err(ReplicaError::Source {
            source_name: p.display().to_string(),
            why: format!("{e} (is the source server running?)"),
        }),
    }
}

/// A replica error as the statement's error (MySQL's ER_REPLICA_* codes
/// are not in the protocol crate; the message names cause and fix).
pub fn replica_error(e: ReplicaError) -> SqlError {
    SqlError::new(msql_srv::ErrorKind::ER_UNKNOWN_ERROR, e.to_string())
}
