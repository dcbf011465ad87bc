//! Shared by the server tests: an in-process server on a temporary socket,
//! and a `mysql` client connected to it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use redoctor_engine::{Engine, EngineOptions};
use redoctor_server::{Server, ServerConfig};

pub struct TestServer {
    pub dir: tempfile::TempDir,
    pub server: Option<Server>,
}

impl TestServer {
    pub fn start() -> TestServer {
        Self::start_with(|_| {})
    }

    pub fn start_with(tune: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let server = start_in(dir.path().to_path_buf(), tune);
        TestServer {
            dir,
            server: Some(server),
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("s.sock")
    }

    pub fn datadir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn server(&self) -> &Server {
        self.server.as_ref().unwrap()
    }

    pub fn engine(&self) -> &Arc<Engine> {
        self.server().engine()
    }

    pub fn conn(&self) -> Conn {
        connect(&self.socket())
    }

    /// Graceful shutdown, then reopen engine and server on the same directory.
    pub fn restart(&mut self) {
        self.server.take().unwrap().shutdown().unwrap();
        self.server = Some(start_in(self.dir.path().to_path_buf(), |_| {}));
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let _ = s.shutdown();
        }
    }
}

pub fn start_in(dir: PathBuf, tune: impl FnOnce(&mut ServerConfig)) -> Server {
    let mut opts = EngineOptions::new(dir.join("data"));
    opts.lock_wait_timeout = Duration::from_secs(2);
    let engine = Engine::open(opts).unwrap();
    let mut cfg = ServerConfig::new(dir.join("s.sock"));
    cfg.shutdown_grace = Duration::from_millis(500);
    tune(&mut cfg);
    Server::start(engine, cfg).unwrap()
}

pub fn connect(socket: &std::path::Path) -> Conn {
    let opts = OptsBuilder::new()
        .socket(Some(socket.to_str().unwrap()))
        .user(Some("root"))
        .db_name(Some("sbtest"));
    Conn::new(opts).unwrap()
}

/// The MySQL error code of a failed call.
pub fn code<T: std::fmt::Debug>(r: mysql::Result<T>) -> u16 {
    match r {
        Err(mysql::Error::MySqlError(e)) => e.code,
        other => panic!("expected a MySQL error, got {other:?}"),
    }
}

pub const CREATE: &str = "CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, \
    k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, \
    pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) /*! ENGINE = innodb */";

/// Creates sbtest1 with rows id 1..=n, k = id, c = "c<id>", pad = "p".
pub fn load(c: &mut Conn, n: i64) {
    c.query_drop(CREATE).unwrap();
    let values: Vec<String> = (1..=n).map(|i| format!("({i}, 'c{i}', 'p')")).collect();
    c.query_drop(format!(
        "INSERT INTO sbtest1(k, c, pad) VALUES {}",
        values.join(",")
    ))
    .unwrap();
    c.query_drop("CREATE INDEX k_1 ON sbtest1(k)").unwrap();
}
