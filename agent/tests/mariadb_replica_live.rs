//! A real MariaDB source and replica (Debian's `mariadb-server`, 10.11) on
//! this host: private datadirs and sockets, the source on a loopback port
//! for replication, both killed at the end (also on failure).
//!
//! 1. The replica's threads by role: the probes find its receiver (slave
//!    I/O thread) and applier (slave SQL thread) by their stacks, and its
//!    parallel workers once `slave_parallel_threads` is set; the diagnosis
//!    reads its lag (`Seconds_Behind_Master`) and that it runs.
//! 2. Advice on a lagging replica with one SQL thread:
//!    `mariadb-replica-parallel-threads` proposes `slave_parallel_threads`.
//! 3. The advised count is the best of those measured: the applier's rate
//!    (transactions applied per second, from `gtid_slave_pos`) at 0, the
//!    CPU count, a quarter of the advice, the advice and four times it, in
//!    interleaved rounds on the same backlog.
//! 4. `diagnose --trial` verifies it live on the applier's rate (the
//!    profile's counter, `Handler_commit`, counts the replica's applied
//!    commits: nothing else writes there): the SQL thread is stopped around
//!    each `SET GLOBAL` and started again; `revert` restores 0 and the
//!    replica runs on.
//!
//! Needs mariadbd, mariadb-install-db and sysbench (`apt-get install
//! mariadb-server sysbench`) and BPF; without them it says why and stops,
//! and under `REDOCTOR_REQUIRE_ALL=1` (CI) it fails naming the cause.

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::maria::{tools, Maria};
use common::{free_port, proposal, role_threads, text};
use mysql::prelude::Queryable;

use redoctor_testkit::KillOnDrop as Reap;

fn redoctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(args)
        .output()
        .unwrap()
}

/// The sequence number of a single-domain GTID position (`0-1-12345`).
fn seqno(pos: &str) -> u64 {
    pos.rsplit('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn gtid(m: &Maria, var: &str) -> u64 {
    let v: Option<String> = m.conn().query_first(format!("SELECT @@{var}")).unwrap();
    seqno(&v.unwrap_or_default())
}

fn set_threads(rep: &Maria, n: u32) {
    rep.conn()
        .query_drop(format!(
            "STOP SLAVE SQL_THREAD; SET GLOBAL slave_parallel_threads = {n}; START SLAVE SQL_THREAD"
        ))
        .unwrap();
}

fn slave_status(rep: &Maria, col: &str) -> String {
    let row: Option<mysql::Row> = rep.conn().query_first("SHOW SLAVE STATUS").unwrap();
    let row = row.expect("the replica has a SHOW SLAVE STATUS row");
    let i = row
        .columns_ref()
        .iter()
        .position(|c| c.name_str() == col)
        .unwrap_or_else(|| panic!("no column {col}"));
    row.get_opt::<Option<String>, _>(i)
        .and_then(Result::ok)
        .flatten()
        .unwrap_or_default()
}

#[test]
fn mariadb_replica_live() {
    if common::skip() {
        return;
    }
    let t = match tools() {
        Ok(t) => t,
        Err(why) => {
            assert!(redoctor_testkit::skip_if_missing(
                "mariadb_replica_live",
                Some(why)
            ));
            return;
        }
    };
    let port = free_port();
    let mut src = Maria::install(&t);
    let mut rep = Maria::install(&t);
    let port_arg = format!("--port={port}");
    src.start(&[
        &port_arg,
        "--server-id=1",
        "--log-bin=src-bin",
        "--sync-binlog=1",
        "--innodb-flush-log-at-trx-commit=1",
        "--max-connections=300",
    ]);
    rep.start(&[
        "--server-id=2",
        "--log-bin=rep-bin",
        "--relay-log=rep-relay-bin",
        "--log-slave-updates",
        "--sync-binlog=1",
        "--innodb-flush-log-at-trx-commit=1",
        "--skip-slave-start",
    ]);
    src.conn()
        .query_drop(
            "CREATE USER repl@'127.0.0.1' IDENTIFIED BY 'r'; \
             GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1'",
        )
        .unwrap();
    rep.conn()
        .query_drop(format!(
            "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={port}, MASTER_USER='repl', \
             MASTER_PASSWORD='r', MASTER_USE_GTID=slave_pos; START SLAVE"
        ))
        .unwrap();
    // The tables travel through replication.
    src.conn().query_drop("CREATE DATABASE sbtest").unwrap();
    sysbench_done(src.sysbench(&t, "oltp_update_index", 4, 10, "prepare"));
    let t0 = Instant::now();
    while gtid(&rep, "gtid_slave_pos") < gtid(&src, "gtid_binlog_pos") {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the replica did not apply the load: {}",
            slave_status(&rep, "Last_SQL_Error")
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // A backlog: the SQL thread stopped while the source writes, then the
    // source keeps writing and the single SQL thread lags.
    rep.conn().query_drop("STOP SLAVE SQL_THREAD").unwrap();
    sysbench_done(src.sysbench(&t, "oltp_update_index", 32, 12, "run"));
    let _load = Reap(src.sysbench(&t, "oltp_update_index", 32, 600, "run"));
    rep.conn().query_drop("START SLAVE SQL_THREAD").unwrap();
    std::thread::sleep(Duration::from_secs(2));

    let advised = roles_lag_and_advice(&rep);
    best_of_measured(&src, &rep, advised);
    trial_and_revert(&rep, advised);
}

fn sysbench_done(c: std::process::Child) {
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success(), "sysbench failed: {:?}", text(&o));
}

/// Checks 1 and 2; the advised `slave_parallel_threads`.
fn roles_lag_and_advice(rep: &Maria) -> u32 {
    let (d, err) = rep.diagnose("one-applier.json", "3s", &[]);
    for role in ["receiver", "applier"] {
        assert_eq!(
            role_threads(&d, role),
            1,
            "{role} threads: {}\n{err}",
            d["windows"]
        );
    }
    assert!(
        d["summary"]["applier_busy_share"].as_f64().unwrap() > 0.05,
        "the single applier is busy: {}",
        d["summary"]
    );
    let counters = &d["facts"]["counters"];
    assert_eq!(counters["replica_running"], 1.0, "{counters}");
    assert!(
        counters["replica_lag_s"].as_f64().unwrap() >= 1.0,
        "the replica lags: {counters}"
    );
    let p = proposal(&d, "mariadb-replica-parallel-threads")
        .unwrap_or_else(|| panic!("no slave_parallel_threads advice: {}", d["not_applied"]));
    let cores = std::thread::available_parallelism().unwrap().get() as u64;
    let advised: u64 = p["proposed"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a count: {p}"));
    assert_eq!(advised, (16 * cores).min(64), "{p}");

    // Workers by role once they run.
    set_threads(rep, advised as u32);
    std::thread::sleep(Duration::from_secs(1));
    let (d, err) = rep.diagnose("workers.json", "2s", &[]);
    assert!(
        role_threads(&d, "worker") >= 1,
        "workers by role: {}\n{err}",
        d["windows"]
    );
    set_threads(rep, 0);
    advised as u32
}

/// Check 3: the applier's rate per count, interleaved rounds.
fn best_of_measured(src: &Maria, rep: &Maria, advised: u32) {
    let cores = std::thread::available_parallelism().unwrap().get() as u32;
    let mut counts = vec![0, cores, (advised / 4).max(1), advised, advised * 4];
    counts.sort_unstable();
    counts.dedup();
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); counts.len()];
    for round in 0..3 {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..counts.len()).collect()
        } else {
            (0..counts.len()).rev().collect()
        };
        for i in order {
            set_threads(rep, counts[i]);
            std::thread::sleep(Duration::from_millis(700));
            let (a, t0) = (gtid(rep, "gtid_slave_pos"), Instant::now());
            std::thread::sleep(Duration::from_secs(2));
            let b = gtid(rep, "gtid_slave_pos");
            rates[i].push((b - a) as f64 / t0.elapsed().as_secs_f64());
            let left = gtid(src, "gtid_binlog_pos").saturating_sub(b);
            assert!(
                left > 5000,
                "the backlog ran out ({left} left): the rates are the source's"
            );
        }
    }
    let medians: Vec<f64> = rates
        .iter()
        .map(|r| redoctor_stats::median(r).expect("3 rounds"))
        .collect();
    for (c, (m, r)) in counts.iter().zip(medians.iter().zip(&rates)) {
        eprintln!("slave_parallel_threads {c}: median {m:.0} trx/s applied ({r:.0?})");
    }
    let best = medians.iter().copied().fold(0.0, f64::max);
    let at = counts.iter().position(|&c| c == advised).unwrap();
    assert!(
        medians[at] >= 0.8 * best,
        "the advised {advised} workers applied {:.0} trx/s, the best measured {best:.0}: {counts:?} -> {medians:.0?}",
        medians[at]
    );
    assert!(
        medians[at] >= 1.5 * medians[0],
        "the advice beats one SQL thread: {counts:?} -> {medians:.0?}"
    );
    set_threads(rep, 0);
}

/// Check 4: the trial keeps the advice, revert restores 0.
fn trial_and_revert(rep: &Maria, advised: u32) {
    let state = rep.dir.path().join("state.json");
    let (d, err) = rep.diagnose(
        "trial.json",
        "2s",
        &[
            "--state",
            state.to_str().unwrap(),
            "--trial",
            "--trial-window",
            "1s",
            "--trial-rounds",
            "4",
            "--trial-max",
            "20s",
        ],
    );
    assert!(
        err.contains("measured by the server's status counter Handler_commit"),
        "{err}"
    );
    for l in err.lines().filter(|l| l.contains("trial")) {
        eprintln!("{l}");
    }
    let trial = d["trial"].to_string();
    assert!(trial.contains("slave_parallel_threads"), "{trial}");
    assert_eq!(d["verdict"]["kind"], "change", "{}\n{err}", d["verdict"]);
    assert_eq!(rep.var("slave_parallel_threads"), advised.to_string());
    assert_eq!(slave_status(rep, "Slave_SQL_Running"), "Yes");
    let o = redoctor(&[
        "revert",
        "--socket",
        rep.socket().to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(rep.var("slave_parallel_threads"), "0");
    assert_eq!(slave_status(rep, "Slave_SQL_Running"), "Yes");
}
