//! Replication between two servers over the source's socket: CHANGE
//! REPLICATION SOURCE TO / START REPLICA / SHOW REPLICA STATUS / STOP
//! REPLICA, a live switch of the arbitration design, a replica restart
//! with `--source-socket` that resumes where it stopped, and refusals that
//! name their cause.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use redoctor_engine::replica::applied::TABLE as APPLIED;
use redoctor_engine::{Engine, EngineOptions, Row};
use redoctor_server::{Server, ServerConfig};

fn start(dir: &Path, name: &str, log_bin: bool, source: Option<&Path>) -> Server {
    let mut opts = EngineOptions::new(dir.join(name));
    opts.lock_wait_timeout = Duration::from_secs(2);
    opts.log_bin = log_bin;
    opts.max_binlog_size = 64 << 10;
    let engine = Engine::open(opts).unwrap();
    engine.prepare_sbtest(2, 100).unwrap();
    engine.set_global("sync_relay_log", "1").unwrap();
    let mut cfg = ServerConfig::new(dir.join(format!("{name}.sock")));
    cfg.shutdown_grace = Duration::from_millis(200);
    cfg.source_socket = source.map(Path::to_path_buf);
    Server::start(engine, cfg).unwrap()
}

fn connect(s: &Server) -> Conn {
    let opts = OptsBuilder::new()
        .socket(Some(s.socket_path().to_str().unwrap()))
        .prefer_socket(true);
    Conn::new(opts).unwrap()
}

fn user_tables(e: &Engine) -> BTreeMap<String, BTreeMap<i64, Row>> {
    let mut d = e.dump();
    d.remove(APPLIED);
    d
}

fn writes(c: &mut Conn, from: i64, n: i64) {
    for i in from..from + n {
        let t = 1 + i % 2;
        c.query_drop(format!(
            "UPDATE sbtest{t} SET k = k + 1 WHERE id = {}",
            1 + i % 100
        ))
        .unwrap();
        if i % 10 == 0 {
            c.query_drop("BEGIN").unwrap();
            c.query_drop(format!(
                "INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({}, {i}, 'c{i}', 'p')",
                1000 + i
            ))
            .unwrap();
            c.query_drop(format!("DELETE FROM sbtest{t} WHERE id = {}", 50 + i % 40))
                .unwrap();
            c.query_drop("COMMIT").unwrap();
        }
    }
}

/// SHOW REPLICA STATUS as column name -> value.
fn status(c: &mut Conn) -> Option<BTreeMap<String, Option<String>>> {
    let rows: Vec<mysql::Row> = c.query("SHOW REPLICA STATUS").unwrap();
    let row = rows.into_iter().next()?;
    let cols: Vec<String> = row
        .columns_ref()
        .iter()
        .map(|c| c.name_str().to_string())
        .collect();
    let vals = row.unwrap();
    Some(
        cols.into_iter()
            .zip(vals)
            .map(|(k, v)| {
                let v = match v {
                    mysql::Value::NULL => None,
                    v => Some(mysql::from_value::<String>(v)),
                };
                (k, v)
            })
            .collect(),
    )
}

fn get<'a>(s: &'a BTreeMap<String, Option<String>>, k: &str) -> &'a str {
    s.get(k)
        .unwrap_or_else(|| panic!("no column {k}"))
        .as_deref()
        .unwrap_or("NULL")
}

/// Waits until the replica applied everything the source has published.
fn caught_up(src: &Server, rep: &Server, c: &mut Conn) -> BTreeMap<String, Option<String>> {
    let end = src.engine().binlog_end().unwrap();
    let t = Instant::now();
    loop {
        let s = status(c).expect("a replica has a status row");
        let file = get(&s, "Relay_Source_Log_File").to_string();
        let pos: u64 = get(&s, "Exec_Source_Log_Pos").parse().unwrap();
        if file == format!("binlog.{:06}", end.file) && pos == end.offset {
            assert_eq!(user_tables(src.engine()), user_tables(rep.engine()));
            return s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "not caught up: {s:?} vs {end:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn replica_over_the_socket_follows_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let src = start(dir.path(), "src", true, None);
    let rep = start(dir.path(), "rep", true, None);
    let (mut sc, mut rc) = (connect(&src), connect(&rep));
    assert!(status(&mut rc).is_none(), "not a replica yet: no row");
    let e = rc.query_drop("START REPLICA").unwrap_err().to_string();
    assert!(e.contains("CHANGE REPLICATION SOURCE TO"), "{e}");

    writes(&mut sc, 0, 100); // a backlog before the replica starts
    rc.query_drop(format!(
        "CHANGE REPLICATION SOURCE TO SOURCE_SOCKET='{}'",
        src.socket_path().display()
    ))
    .unwrap();
    rc.query_drop("START REPLICA").unwrap();
    let e = rc.query_drop("START REPLICA").unwrap_err().to_string();
    assert!(e.contains("already running"), "{e}");
    writes(&mut sc, 100, 100);
    let s = caught_up(&src, &rep, &mut rc);
    assert_eq!(get(&s, "Replica_IO_Running"), "Yes");
    assert_eq!(get(&s, "Replica_SQL_Running"), "Yes");
    assert_eq!(get(&s, "Seconds_Behind_Source"), "0");
    assert_eq!(get(&s, "Replica_Relay_Log_Arbitration"), "position");
    assert_eq!(get(&s, "Last_SQL_Error"), "");

    // The arbitration design switches live; the replica keeps up.
    rc.query_drop("SET GLOBAL replica_relay_log_arbitration = 'lock'")
        .unwrap();
    writes(&mut sc, 200, 100);
    let s = caught_up(&src, &rep, &mut rc);
    assert_eq!(get(&s, "Replica_Relay_Log_Arbitration"), "lock");

    rc.query_drop("STOP REPLICA").unwrap();
    let s = status(&mut rc).unwrap();
    assert_eq!(get(&s, "Replica_IO_Running"), "No");
    assert_eq!(get(&s, "Seconds_Behind_Source"), "NULL");
    let e = rc
        .query_drop("CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE='x', SOURCE_LOG_POS=4")
        .unwrap_err()
        .to_string();
    assert!(e.contains("binlog.NNNNNN"), "{e}");

    // Writes while the replica is down; it restarts with --source-socket
    // and resumes at its applied position.
    writes(&mut sc, 300, 100);
    drop(rc);
    rep.shutdown().unwrap();
    let rep = start(dir.path(), "rep", true, Some(src.socket_path()));
    let mut rc = connect(&rep);
    writes(&mut sc, 400, 50);
    let s = caught_up(&src, &rep, &mut rc);
    assert_eq!(get(&s, "Replica_IO_Running"), "Yes");
    let applied: u64 = rc
        .query_first::<(String, u64), _>("SHOW GLOBAL STATUS LIKE 'Replica_trx_applied'")
        .unwrap()
        .unwrap()
        .1;
    let dumped = src
        .engine()
        .binlog_dump(
            redoctor_engine::BinlogPos::default(),
            1 << 20,
            Duration::ZERO,
        )
        .unwrap();
    let after_stop = dumped
        .iter()
        .filter(|e| e.end > redoctor_engine::BinlogPos { file: 0, offset: 0 })
        .count() as u64;
    assert!(
        applied > 0 && applied < after_stop,
        "resumed, not restarted: {applied}"
    );
    drop(rc);
    rep.shutdown().unwrap();
    drop(sc);
    src.shutdown().unwrap();
    let _ = Arc::new(());
}

#[test]
fn a_missing_source_is_named_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let rep = start(dir.path(), "rep", false, None);
    let mut rc = connect(&rep);
    rc.query_drop("CHANGE REPLICATION SOURCE TO SOURCE_SOCKET='/nonexistent/src.sock'")
        .unwrap();
    let e = rc.query_drop("START REPLICA").unwrap_err().to_string();
    assert!(
        e.contains("/nonexistent/src.sock") && e.contains("source server running"),
        "{e}"
    );
    // A source without a binlog: the receiver stops and says why.
    let plain = start(dir.path(), "plain", false, None);
    rc.query_drop(format!(
        "CHANGE REPLICATION SOURCE TO SOURCE_SOCKET='{}'",
        plain.socket_path().display()
    ))
    .unwrap();
    rc.query_drop("START REPLICA").unwrap();
    let t = Instant::now();
    loop {
        let s = status(&mut rc).unwrap();
        if get(&s, "Replica_IO_Running") == "No" {
            assert!(get(&s, "Last_IO_Error").contains("log_bin=ON"), "{s:?}");
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{s:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    rc.query_drop("STOP REPLICA").unwrap();
    drop(rc);
    rep.shutdown().unwrap();
    plain.shutdown().unwrap();
}
