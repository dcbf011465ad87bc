//! The SQL surface over the wire, with the `mysql` client crate: text and
//! server-side prepared statements, transactions, error codes, admin.

mod server_util;

use mysql::prelude::Queryable;
use server_util::{code, load, TestServer};

#[test]
fn sysbench_statements_text_and_prepared() {
    let t = TestServer::start();
    let mut c = t.conn();
    load(&mut c, 20);
    // AUTO_INCREMENT assigned ids 1..=20.
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM sbtest1")
        .unwrap()
        .unwrap();
    assert_eq!(n, 20);
    // Point select, text and prepared.
    let v: String = c
        .query_first("SELECT c FROM sbtest1 WHERE id=7")
        .unwrap()
        .unwrap();
    assert_eq!(v, "c7");
    let v: String = c
        .exec_first("SELECT c FROM sbtest1 WHERE id=?", (8,))
        .unwrap()
        .unwrap();
    assert_eq!(v, "c8");
    // The same prepared statement executed repeatedly with new values.
    let stmt = c.prep("SELECT c FROM sbtest1 WHERE id=?").unwrap();
    for id in 1..=20i64 {
        let v: String = c.exec_first(&stmt, (id,)).unwrap().unwrap();
        assert_eq!(v, format!("c{id}"));
    }
    // Range, SUM, ORDER BY, DISTINCT.
    let cs: Vec<String> = c
        .exec("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?", (3, 5))
        .unwrap();
    assert_eq!(cs, ["c3", "c4", "c5"]);
    let s: i64 = c
        .exec_first(
            "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
            (1, 4),
        )
        .unwrap()
        .unwrap();
    assert_eq!(s, 10);
    let cs: Vec<String> = c
        .exec(
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
            (9, 12),
        )
        .unwrap();
    assert_eq!(cs, ["c10", "c11", "c12", "c9"]);
    c.exec_drop("UPDATE sbtest1 SET c=? WHERE id=?", ("same", 2))
        .unwrap();
    c.exec_drop("UPDATE sbtest1 SET c=? WHERE id=?", ("same", 3))
        .unwrap();
    let cs: Vec<String> = c
        .exec(
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
            (1, 4),
        )
        .unwrap();
    assert_eq!(cs, ["c1", "c4", "same"]);
    // UPDATE k=k+1, DELETE, INSERT with explicit id.
    c.exec_drop("UPDATE sbtest1 SET k=k+1 WHERE id=?", (5,))
        .unwrap();
    assert_eq!(c.affected_rows(), 1);
    let k: i64 = c
        .query_first("SELECT k FROM sbtest1 WHERE id=5")
        .unwrap()
        .unwrap();
    assert_eq!(k, 6);
    let ids: Vec<i64> = c.query("SELECT id FROM sbtest1 WHERE k=6").unwrap();
    assert_eq!(ids, [5, 6]);
    // ORDER BY a column the result does not return, descending: ties keep
    // id order (k: 4, 6, 6, 7 for ids 4..7).
    let ids: Vec<i64> = c
        .exec(
            "SELECT id FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY k DESC",
            (4, 7),
        )
        .unwrap();
    assert_eq!(ids, [7, 5, 6, 4]);
    c.exec_drop("DELETE FROM sbtest1 WHERE id=?", (5,)).unwrap();
    assert_eq!(c.affected_rows(), 1);
    c.exec_drop(
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
        (5, 50, "new", "pad"),
    )
    .unwrap();
    let row: (i64, i64, String, String) = c
        .query_first("SELECT * FROM sbtest1 WHERE id=5")
        .unwrap()
        .unwrap();
    assert_eq!(row, (5, 50, "new".into(), "pad".into()));
    // AUTO_INCREMENT continues above the highest id, including id 0 = auto.
    c.query_drop("INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 1, 'x', 'y')")
        .unwrap();
    assert_eq!(c.last_insert_id(), 21);
    // Duplicate key: 1062, connection usable.
    assert_eq!(
        code(c.query_drop("INSERT INTO sbtest1 (id, k, c, pad) VALUES (3, 1, 'x', 'y')")),
        1062
    );
    // Too long for CHAR(60): refused as strict mode does.
    let long = "x".repeat(61);
    assert_eq!(
        code(c.exec_drop(
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
            (100, 1, "c", long.as_str())
        )),
        1406
    );
    // SHOW TABLES, DROP TABLE, unknown table.
    let tables: Vec<String> = c.query("SHOW TABLES").unwrap();
    assert_eq!(tables, ["sbtest1"]);
    c.query_drop("DROP TABLE IF EXISTS sbtest1").unwrap();
    assert_eq!(code(c.query_drop("SELECT c FROM sbtest1 WHERE id=1")), 1146);
    assert_eq!(code(c.query_drop("DROP TABLE sbtest1")), 1051);
    c.query_drop("DROP TABLE IF EXISTS sbtest1").unwrap();
    assert!(t.engine().table_names().is_empty());
}

#[test]
fn transactions_follow_autocommit_rules() {
    let t = TestServer::start();
    let mut a = t.conn();
    let mut b = t.conn();
    load(&mut a, 5);
    let c_of = |c: &mut mysql::Conn, id: i64| -> String {
        c.exec_first("SELECT c FROM sbtest1 WHERE id=?", (id,))
            .unwrap()
            .unwrap()
    };
    // BEGIN .. ROLLBACK: nothing visible.
    a.query_drop("BEGIN").unwrap();
    a.exec_drop("UPDATE sbtest1 SET c=? WHERE id=?", ("rolled", 1))
        .unwrap();
    assert_eq!(
        c_of(&mut a, 1),
        "rolled",
        "a transaction sees its own change"
    );
    assert_eq!(c_of(&mut b, 1), "c1", "others see only committed rows");
    a.query_drop("ROLLBACK").unwrap();
    assert_eq!(c_of(&mut b, 1), "c1");
    // START TRANSACTION .. COMMIT: visible after commit.
    a.query_drop("START TRANSACTION").unwrap();
    a.exec_drop("UPDATE sbtest1 SET c=? WHERE id=?", ("kept", 1))
        .unwrap();
    assert_eq!(c_of(&mut b, 1), "c1");
    a.query_drop("COMMIT").unwrap();
    assert_eq!(c_of(&mut b, 1), "kept");
    // autocommit=0: a transaction opens implicitly and lasts until COMMIT.
    a.query_drop("SET autocommit=0").unwrap();
    a.exec_drop("UPDATE sbtest1 SET c=? WHERE id=?", ("implicit", 2))
        .unwrap();
    assert_eq!(c_of(&mut b, 2), "c2");
    a.query_drop("COMMIT").unwrap();
    assert_eq!(c_of(&mut b, 2), "implicit");
    // SET autocommit=1 commits the open transaction.
    a.exec_drop("UPDATE sbtest1 SET c=? WHERE id=?", ("on", 3))
        .unwrap();
    a.query_drop("SET autocommit=1").unwrap();
    assert_eq!(c_of(&mut b, 3), "on");
    // A failed statement that changed nothing keeps the transaction.
    a.query_drop("BEGIN").unwrap();
    a.exec_drop("UPDATE sbtest1 SET c=? WHERE id=?", ("kept2", 4))
        .unwrap();
    assert_eq!(
        code(a.query_drop("INSERT INTO sbtest1 (id, k, c, pad) VALUES (1, 1, 'x', 'y')")),
        1062
    );
    a.query_drop("COMMIT").unwrap();
    assert_eq!(c_of(&mut b, 4), "kept2");
    // A multi-row INSERT that fails after changing rows rolls the transaction back.
    a.query_drop("BEGIN").unwrap();
    a.exec_drop("UPDATE sbtest1 SET c=? WHERE id=?", ("lost", 4))
        .unwrap();
    assert_eq!(
        code(a.query_drop(
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (50, 1, 'x', 'y'), (1, 1, 'x', 'y')"
        )),
        1062
    );
    a.query_drop("COMMIT").unwrap();
    assert_eq!(c_of(&mut b, 4), "kept2");
    let n: Option<String> = b.query_first("SELECT c FROM sbtest1 WHERE id=50").unwrap();
    assert_eq!(n, None);
}

#[test]
fn deadlock_and_lock_wait_timeout_codes() {
    let t = TestServer::start();
    let mut a = t.conn();
    let mut b = t.conn();
    load(&mut a, 5);
    // Lock wait timeout (the test server uses 2 s): 1205, transaction rolled back.
    a.query_drop("BEGIN").unwrap();
    a.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=1").unwrap();
    b.query_drop("BEGIN").unwrap();
    b.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=2").unwrap();
    assert_eq!(
        code(b.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=1")),
        1205
    );
    // b's transaction is gone: its change to id 2 was rolled back.
    b.query_drop("COMMIT").unwrap();
    a.query_drop("COMMIT").unwrap();
    let k2: i64 = a
        .query_first("SELECT k FROM sbtest1 WHERE id=2")
        .unwrap()
        .unwrap();
    assert_eq!(k2, 2);
    // Deadlock: a holds 1 and waits for 2; b holds 2 and asks for 1.
    a.query_drop("BEGIN").unwrap();
    a.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=1").unwrap();
    b.query_drop("BEGIN").unwrap();
    b.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=2").unwrap();
    let h = std::thread::spawn(move || {
        let r = a.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=2");
        (
            a,
            r.err().map(|e| match e {
                mysql::Error::MySqlError(e) => e.code,
                _ => 0,
            }),
        )
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    let rb = b.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=1");
    let rb = rb.err().map(|e| match e {
        mysql::Error::MySqlError(e) => e.code,
        _ => 0,
    });
    let (mut a, ra) = h.join().unwrap();
    let codes = [ra, rb];
    assert!(
        codes.contains(&Some(1213)),
        "one side is the deadlock victim: {codes:?}"
    );
    let _ = a.query_drop("COMMIT");
    let _ = b.query_drop("COMMIT");
}

#[test]
fn unsupported_sql_gets_an_error_and_the_connection_stays_usable() {
    let t = TestServer::start();
    let mut c = t.conn();
    load(&mut c, 3);
    for (sql, want) in [
        (
            "SELECT * FROM sbtest1 a JOIN sbtest1 b ON a.id = b.id",
            1235,
        ),
        ("UPDATE sbtest1 SET pad = 'x' WHERE id = 1", 1235),
        ("CREATE TABLE other (a INT)", 1235),
        ("GRANT ALL ON *.* TO someone", 1235),
        ("THIS IS NOT SQL", 1064),
        ("SELECT nope FROM sbtest1", 1054),
    ] {
        assert_eq!(code(c.query_drop(sql)), want, "{sql}");
        // Prepared too.
        assert_eq!(code(c.prep(sql)), want, "prepare {sql}");
        let v: i64 = c
            .query_first("SELECT k FROM sbtest1 WHERE id=2")
            .unwrap()
            .unwrap();
        assert_eq!(v, 2);
    }
}

#[test]
fn admin_set_global_show_and_select_variables() {
    let t = TestServer::start();
    let mut c = t.conn();
    c.query_drop("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
        .unwrap();
    let v: String = c
        .query_first("SELECT @@global.innodb_flush_log_at_trx_commit")
        .unwrap()
        .unwrap();
    assert_eq!(v, "2");
    assert_eq!(t.engine().status().flush_at_commit, 2);
    // A refused value: 1231, nothing changed.
    assert_eq!(
        code(c.query_drop("SET GLOBAL innodb_flush_log_at_trx_commit = 9")),
        1231
    );
    assert_eq!(t.engine().status().flush_at_commit, 2);
    assert_eq!(code(c.query_drop("SET GLOBAL no_such_variable = 1")), 1193);
    c.query_drop("SET GLOBAL innodb_log_writer_threads = OFF")
        .unwrap();
    let rows: Vec<(String, String)> = c
        .query("SHOW GLOBAL VARIABLES LIKE 'innodb_log_writer%'")
        .unwrap();
    assert_eq!(
        rows,
        [("innodb_log_writer_threads".to_string(), "OFF".to_string())]
    );
    let v: String = c
        .query_first("SELECT @@innodb_log_writer_threads")
        .unwrap()
        .unwrap();
    assert_eq!(v, "OFF");
    let v: String = c
        .query_first("select @@version_comment limit 1")
        .unwrap()
        .unwrap();
    assert!(v.contains("redoctor"));
    assert_eq!(code(c.query_drop("SELECT @@no_such_variable")), 1193);
    let status: Vec<(String, String)> = c.query("SHOW GLOBAL STATUS LIKE 'Com_commit'").unwrap();
    assert_eq!(status.len(), 1);
    let all: Vec<(String, String)> = c.query("SHOW GLOBAL STATUS").unwrap();
    assert!(all.iter().any(|(n, _)| n == "Threads_connected"));
}

/// `Redoctor_net_*` counters, by name.
fn net_polls(c: &mut mysql::Conn) -> std::collections::HashMap<String, u64> {
    let rows: Vec<(String, String)> = c.query("SHOW GLOBAL STATUS LIKE 'Redoctor_net%'").unwrap();
    rows.into_iter()
        .map(|(n, v)| (n, v.parse().unwrap()))
        .collect()
}

#[test]
fn polling_for_the_next_request_is_shown_and_can_be_switched_off() {
    let t = TestServer::start_with(|cfg| cfg.net_spin = std::time::Duration::from_micros(7000));
    let mut c = t.conn();
    let v: String = c
        .query_first("SELECT @@redoctor_net_spin_us")
        .unwrap()
        .unwrap();
    assert_eq!(v, "7000");
    let polls = net_polls(&mut c);
    let mut names: Vec<&str> = polls.keys().map(|s| s.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "Redoctor_net_poll_us",
            "Redoctor_net_polls_hit",
            "Redoctor_net_polls_timed_out"
        ]
    );

    // Off: queries are answered and nothing ever polls.
    let t = TestServer::start_with(|cfg| cfg.net_spin = std::time::Duration::ZERO);
    let mut c = t.conn();
    for i in 0..200 {
        let one: i64 = c.query_first(format!("SELECT {i}")).unwrap().unwrap();
        assert_eq!(one, i);
    }
    assert!(net_polls(&mut c).values().all(|&v| v == 0));
    let v: String = c
        .query_first("SELECT @@redoctor_net_spin_us")
        .unwrap()
        .unwrap();
    assert_eq!(v, "0");
}

#[test]
fn each_connection_runs_on_its_own_named_thread() {
    let t = TestServer::start();
    let conns: Vec<_> = (0..3).map(|_| t.conn()).collect();
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|s| s.trim().to_string())
        .collect();
    let conn_threads = names.iter().filter(|n| n.starts_with("conn/")).count();
    assert!(conn_threads >= 3, "threads: {names:?}");
    assert!(names.iter().any(|n| n == "conn_acceptor"));
    drop(conns);
}

/// `thread_prefix` names the connection threads and the acceptor;
/// `stop_serving` closes the server (socket file removed) and leaves the
/// engine running for its owner.
#[test]
fn thread_prefix_names_threads_and_stop_serving_keeps_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine =
        redoctor_engine::Engine::open(redoctor_engine::EngineOptions::new(dir.path().join("data")))
            .unwrap();
    let socket = dir.path().join("adm.sock");
    let mut cfg = redoctor_server::ServerConfig::new(&socket);
    cfg.thread_prefix = "adm".into();
    let server = redoctor_server::Server::start(engine.clone(), cfg).unwrap();
    let mut c = server_util::connect(&socket);
    c.query_drop("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
        .unwrap();
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|s| s.trim().to_string())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("adm/")),
        "threads: {names:?}"
    );
    assert!(
        names.iter().any(|n| n == "adm_acceptor"),
        "threads: {names:?}"
    );
    drop(c);
    server.stop_serving();
    assert!(!socket.exists(), "socket file left behind");
    // The engine still runs, with the setting made over the wire.
    assert_eq!(
        engine
            .variable("innodb_flush_log_at_trx_commit")
            .unwrap()
            .value,
        "2"
    );
    // ... and open: a shut-down engine refuses DDL.
    engine.create_table("after_stop").unwrap();
    engine.shutdown().unwrap();
    assert!(engine.create_table("after_shutdown").is_err());
}

#[test]
fn data_survives_a_restart_and_auto_increment_resumes() {
    let mut t = TestServer::start();
    let mut c = t.conn();
    load(&mut c, 10);
    c.query_drop("DELETE FROM sbtest1 WHERE id=10").unwrap();
    drop(c);
    t.restart();
    let mut c = t.conn();
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM sbtest1")
        .unwrap()
        .unwrap();
    assert_eq!(n, 9);
    c.query_drop("INSERT INTO sbtest1 (k, c, pad) VALUES (1, 'a', 'b')")
        .unwrap();
    assert_eq!(c.last_insert_id(), 10);
}

#[test]
fn tcp_on_loopback_when_asked() {
    let t = TestServer::start_with(|cfg| cfg.tcp_port = Some(0));
    let port = t.server().tcp_port().expect("TCP is on");
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .prefer_socket(false)
        .user(Some("root"));
    let mut c = mysql::Conn::new(opts).unwrap();
    load(&mut c, 3);
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM sbtest1")
        .unwrap()
        .unwrap();
    assert_eq!(n, 3);
    let p: String = c.query_first("SELECT @@port").unwrap().unwrap();
    assert_eq!(p, port.to_string());
    // Off unless asked.
    let t2 = TestServer::start();
    assert_eq!(t2.server().tcp_port(), None);
}

#[test]
fn k_lists_and_k_ranges_read_each_row_once_in_k_order() {
    let t = TestServer::start();
    let mut c = t.conn();
    load(&mut c, 20);
    // k = id, then rows 4 and 5 move to k 30 and 31.
    c.query_drop("UPDATE sbtest1 SET k = k + 26 WHERE id = 4")
        .unwrap();
    c.query_drop("UPDATE sbtest1 SET k = k + 26 WHERE id = 5")
        .unwrap();
    // select_random_points: IN with repeats and values no row has.
    let rows: Vec<(i64, i64, String, String)> = c
        .exec(
            "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, ?, ?, ?)",
            (31, 7, 4, 7, 99),
        )
        .unwrap();
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(ids, [7, 5]);
    assert_eq!(rows[1], (5, 31, "c5".into(), "p".into()));
    // select_random_ranges: overlapping ranges count a row once.
    let n: i64 = c
        .exec_first(
            "SELECT count(k) FROM sbtest1 WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ? OR k BETWEEN ? AND ?",
            (1, 6, 3, 8, 30, 40),
        )
        .unwrap()
        .unwrap();
    assert_eq!(n, 8, "k 1-3, 6-8, 30, 31");
    let ids: Vec<i64> = c
        .query("SELECT id FROM sbtest1 WHERE k BETWEEN 19 AND 40 OR k = 2")
        .unwrap();
    assert_eq!(ids, [2, 19, 20, 4, 5]);
    // Bounds beyond INTEGER match nothing rather than fail.
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM sbtest1 WHERE k BETWEEN 3000000000 AND 4000000000 OR k IN (-3000000000, 1)")
        .unwrap()
        .unwrap();
    assert_eq!(n, 1);
    // A transaction sees its own change of k, once.
    c.query_drop("BEGIN").unwrap();
    c.query_drop("UPDATE sbtest1 SET k = k + 1 WHERE id = 9")
        .unwrap();
    let ids: Vec<i64> = c
        .query("SELECT id FROM sbtest1 WHERE k IN (9, 10)")
        .unwrap();
    assert_eq!(ids, [9, 10]);
    c.query_drop("ROLLBACK").unwrap();
    let ids: Vec<i64> = c
        .query("SELECT id FROM sbtest1 WHERE k IN (9, 10)")
        .unwrap();
    assert_eq!(ids, [9, 10]);
}

#[test]
fn id_k_tables_have_two_columns_and_keep_them_over_a_restart() {
    let mut t = TestServer::start();
    let mut c = t.conn();
    // sysbench's bulk_insert, as it sends it.
    c.query_drop(
        "CREATE TABLE IF NOT EXISTS sbtest1 (\n id INTEGER NOT NULL,\n \
         k INTEGER DEFAULT '0' NOT NULL,\n PRIMARY KEY (id))",
    )
    .unwrap();
    c.query_drop("INSERT INTO sbtest1 VALUES(1,1),(2,2),(3,3)")
        .unwrap();
    assert_eq!(c.affected_rows(), 3);
    c.exec_drop("INSERT INTO sbtest1 (id, k) VALUES (?, ?)", (4, 40))
        .unwrap();
    for (sql, want) in [
        // c and pad are no columns of this table.
        ("SELECT c FROM sbtest1 WHERE id = 1", 1054),
        ("SELECT id FROM sbtest1 WHERE id = 1 ORDER BY pad", 1054),
        ("SELECT COUNT(c) FROM sbtest1", 1054),
        ("UPDATE sbtest1 SET c = 'x' WHERE id = 1", 1054),
        ("INSERT INTO sbtest1 (id, k, c) VALUES (5, 5, 'x')", 1054),
        // Four values are one sbtest row, not a row of this table.
        ("INSERT INTO sbtest1 VALUES (5, 5, 'x', 'y')", 1136),
    ] {
        assert_eq!(code(c.query_drop(sql)), want, "{sql}");
    }
    // ... and two values are no sbtest row.
    c.query_drop(server_util::CREATE.replace("sbtest1", "sbtest2"))
        .unwrap();
    assert_eq!(
        code(c.query_drop("INSERT INTO sbtest2 VALUES (1, 1)")),
        1136
    );
    drop(c);
    t.restart();
    let mut c = t.conn();
    let rows: Vec<(i64, i64)> = c.query("SELECT * FROM sbtest1").unwrap();
    assert_eq!(rows, [(1, 1), (2, 2), (3, 3), (4, 40)]);
    let stmt = c.prep("SELECT * FROM sbtest1 WHERE id = ?").unwrap();
    assert_eq!(stmt.num_columns(), 2);
    let row: (i64, i64) = c.exec_first(&stmt, (4,)).unwrap().unwrap();
    assert_eq!(row, (4, 40));
    assert_eq!(
        code(c.query_drop("SELECT c FROM sbtest1 WHERE id = 1")),
        1054
    );
    let n: i64 = c
        .query_first("SELECT SUM(k) FROM sbtest1 WHERE k IN (1, 2, 3, 40)")
        .unwrap()
        .unwrap();
    assert_eq!(n, 46);
    c.query_drop("DROP TABLE IF EXISTS sbtest1").unwrap();
}
