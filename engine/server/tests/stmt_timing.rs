//! Per-statement-kind timing over the wire: one statement of each kind, and
//! `SHOW GLOBAL STATUS LIKE 'Redoctor_stmt%'` before and after.

mod server_util;

use std::collections::HashMap;
use std::time::Instant;

use mysql::prelude::Queryable;
use mysql::Conn;
use redoctor_server::stmt_timing::Kind;
use server_util::{load, TestServer, CREATE};

/// `Redoctor_stmt_*` and `Questions`, by name.
fn status(c: &mut Conn) -> HashMap<String, u64> {
    let mut rows: Vec<(String, String)> =
        c.query("SHOW GLOBAL STATUS LIKE 'Redoctor_stmt%'").unwrap();
    rows.extend(
        c.query::<(String, String), _>("SHOW GLOBAL STATUS LIKE 'Questions'")
            .unwrap(),
    );
    rows.into_iter()
        .map(|(n, v)| (n, v.parse().unwrap()))
        .collect()
}

fn figure(s: &HashMap<String, u64>, kind: Kind, what: &str) -> u64 {
    let name = format!("Redoctor_stmt_{}_{what}", kind.name());
    *s.get(&name).unwrap_or_else(|| panic!("no {name} in {s:?}"))
}

#[test]
fn each_statement_is_counted_once_under_its_kind_and_timed() {
    let t = TestServer::start();
    let mut c = t.conn();
    load(&mut c, 20);
    let point = c.prep("SELECT c FROM sbtest1 WHERE id = ?").unwrap();
    let range = c
        .prep("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?")
        .unwrap();

    let started = Instant::now();
    let before = status(&mut c);
    // Text queries (each parsed once) and executions of the two prepared
    // statements, one or more of every kind.
    let text = [
        "SELECT id FROM sbtest1 WHERE k IN (3, 4)",
        "SELECT COUNT(*) FROM sbtest1",
        "BEGIN",
        "UPDATE sbtest1 SET k = k + 1 WHERE id = 1",
        "DELETE FROM sbtest1 WHERE id = 2",
        "INSERT INTO sbtest1 (k, c, pad) VALUES (1, 'x', 'y')",
        "COMMIT",
        "BEGIN",
        "ROLLBACK",
        "INSERT INTO sbtest1 (k, c, pad) VALUES (2, 'x', 'y')",
        "SET autocommit = 1",
        "SELECT @@version",
        &CREATE.replace("sbtest1", "sbtest2"),
        "DROP TABLE sbtest2",
        "SHOW TABLES",
    ];
    c.exec_drop(&point, (3,)).unwrap();
    c.exec_drop(&range, (3, 9)).unwrap();
    for q in text {
        c.query_drop(q).unwrap();
    }
    let after = status(&mut c);
    let elapsed_us = started.elapsed().as_micros() as u64;

    // Each of the two readings is two SHOWs; between the two readings the
    // first reading's SHOWs ran, and the second's were parsed (a
    // statement's parse is counted before it runs, its kind after).
    let want = |k: Kind| -> u64 {
        match k {
            Kind::SelectPoint
            | Kind::SelectRange
            | Kind::SelectK
            | Kind::SelectScan
            | Kind::Update
            | Kind::Delete
            | Kind::Commit
            | Kind::Rollback
            | Kind::Set
            | Kind::Other => 1,
            Kind::Insert | Kind::Begin | Kind::Ddl => 2,
            Kind::Show => 1 + 2,
            Kind::Parse => text.len() as u64 + 2,
            Kind::Reply => 2 + text.len() as u64 + 2,
            // Four autocommit SELECTs and an autocommit INSERT, COMMIT.
            Kind::EngineCommit => 6,
        }
    };
    let mut statements = 0;
    let mut spans_us = 0;
    for k in Kind::ALL {
        let count = figure(&after, k, "count") - figure(&before, k, "count");
        assert_eq!(count, want(k), "{k:?}: count rose by {count}");
        let (us_before, us_after) = (figure(&before, k, "us"), figure(&after, k, "us"));
        assert!(us_after >= us_before, "{k:?}: _us fell");
        if k != Kind::EngineCommit {
            spans_us += us_after - us_before;
        }
        if !matches!(k, Kind::Parse | Kind::Reply | Kind::EngineCommit) {
            statements += count;
        }
    }
    assert_eq!(
        statements,
        after["Questions"] - before["Questions"],
        "statement kinds add up to Questions"
    );
    // One connection runs its statements one after another, inside the
    // span the client measured: their times add up to no more than it
    // (plus 1 µs of rounding per kind).
    assert!(
        spans_us <= elapsed_us + Kind::ALL.len() as u64,
        "statements took {spans_us} µs of the {elapsed_us} µs the client waited"
    );
    // Engine commits happen inside the statements that make them.
    let delta = |k: Kind| figure(&after, k, "us") - figure(&before, k, "us");
    let committing = [
        Kind::SelectPoint,
        Kind::SelectRange,
        Kind::SelectK,
        Kind::SelectScan,
        Kind::Insert,
        Kind::Commit,
    ];
    let commit_us = delta(Kind::EngineCommit);
    assert!(
        commit_us <= committing.iter().map(|k| delta(*k)).sum::<u64>() + 6,
        "engine commits took {commit_us} µs, more than the statements around them"
    );
    // Two durable commits of row changes wait for the log to be flushed.
    assert!(commit_us > 0, "engine commits took no time at all");
}
