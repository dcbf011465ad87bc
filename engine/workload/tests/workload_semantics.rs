//! Workload semantics: statement counts per transaction match the sysbench
//! definitions, and TPCC-lite keeps TPC-C's consistency conditions under load.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use redoctor_engine::{Engine, EngineOptions};
use redoctor_workload::txn::{InsertIds, OpCounts, Outcome};
use redoctor_workload::txn_gen::{SbtestPlan, TxnGen};
use redoctor_workload::{
    self as workload, tpcc, KeyDist, KeySampler, Mix, RunConfig, Statement, WorkloadKind,
    WorkloadSpec,
};

const TABLE_SIZE: u64 = 1000;

fn engine(dir: &tempfile::TempDir) -> Arc<Engine> {
    Engine::open(EngineOptions::new(dir.path())).unwrap()
}

fn generator(engine: &Engine, mix: Mix, seed: u64) -> TxnGen {
    let tables = (1..=2)
        .map(|i| engine.table_id(&format!("sbtest{i}")).unwrap())
        .collect();
    TxnGen::sbtest(
        SmallRng::seed_from_u64(seed),
        SbtestPlan {
            tables,
            keys: KeySampler::new(KeyDist::Uniform, TABLE_SIZE),
            table_size: TABLE_SIZE,
            insert_ids: InsertIds::new(&[TABLE_SIZE as i64 + 1; 2], 0, 1),
            mix,
        },
    )
}

/// `[point, simple, sum, order, distinct, update_index, update_non_index, delete_insert, insert]`.
fn expected(kind: WorkloadKind) -> [u64; 9] {
    match kind {
        WorkloadKind::ReadWrite => [10, 1, 1, 1, 1, 1, 1, 1, 0],
        WorkloadKind::ReadWritePlus => [10, 0, 0, 0, 0, 1, 1, 1, 0],
        WorkloadKind::ReadWritePlusPlus => [1, 0, 0, 0, 0, 1, 1, 1, 0],
        WorkloadKind::UpdateIndex => [0, 0, 0, 0, 0, 1, 0, 0, 0],
        WorkloadKind::UpdateNonIndex => [0, 0, 0, 0, 0, 0, 1, 0, 0],
        WorkloadKind::Insert => [0, 0, 0, 0, 0, 0, 0, 0, 1],
        WorkloadKind::PointSelect => [1, 0, 0, 0, 0, 0, 0, 0, 0],
        k => panic!("{k} has no fixed statements"),
    }
}

#[test]
fn every_sysbench_transaction_runs_its_definition() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    engine.prepare_sbtest(2, TABLE_SIZE).unwrap();
    let kinds = [
        WorkloadKind::ReadWrite,
        WorkloadKind::ReadWritePlus,
        WorkloadKind::ReadWritePlusPlus,
        WorkloadKind::UpdateIndex,
        WorkloadKind::UpdateNonIndex,
        WorkloadKind::Insert,
        WorkloadKind::PointSelect,
    ];
    for kind in kinds {
        let mut gen = generator(&engine, kind.mix().unwrap(), 5);
        for round in 1..=20u64 {
            let mut trx = engine.begin();
            let outcome = gen.execute(&mut trx).unwrap();
            // Independent evidence from the transaction itself: the rows it changed.
            let writes = trx.write_count();
            let e = expected(kind);
            let max_rows = (e[5] + e[6] + e[7] + e[8]) as usize;
            assert!(
                writes <= max_rows && (max_rows == 0) == (writes == 0),
                "{kind}: {writes} rows changed, the definition changes up to {max_rows}"
            );
            assert!(matches!(outcome, Outcome::Commit(_)));
            engine.commit(trx).unwrap();
            let counts = gen.counts();
            let want: Vec<u64> = e.iter().map(|n| n * round).collect();
            assert_eq!(
                counts.statements.to_vec(),
                want,
                "{kind} after {round} transactions"
            );
        }
    }
}

#[test]
fn read_write_rows_really_change() {
    // The writes of one OLTP_RW transaction are visible after commit: k grew by
    // one on the index-updated row, and the deleted-and-reinserted row exists.
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    engine.prepare_sbtest(2, TABLE_SIZE).unwrap();
    let before: i64 = engine
        .dump()
        .values()
        .flat_map(|rows| rows.values().map(|r| i64::from(r.k)))
        .sum();
    let mut gen = generator(&engine, WorkloadKind::UpdateIndex.mix().unwrap(), 9);
    for _ in 0..50 {
        let mut trx = engine.begin();
        gen.execute(&mut trx).unwrap();
        engine.commit(trx).unwrap();
    }
    let after: i64 = engine
        .dump()
        .values()
        .flat_map(|rows| rows.values().map(|r| i64::from(r.k)))
        .sum();
    assert_eq!(after - before, 50, "50 index updates add 1 to k each");
    let rows: usize = engine.dump().values().map(|r| r.len()).sum();
    let mut gen = generator(&engine, WorkloadKind::ReadWrite.mix().unwrap(), 10);
    for _ in 0..50 {
        let mut trx = engine.begin();
        gen.execute(&mut trx).unwrap();
        engine.commit(trx).unwrap();
    }
    let rows_after: usize = engine.dump().values().map(|r| r.len()).sum();
    assert_eq!(
        rows, rows_after,
        "delete + insert of the same id keeps the row count"
    );
    engine.shutdown().unwrap();
}

#[test]
fn run_reports_statement_counts_per_commit() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let spec: WorkloadSpec = "mix:point_select=3,sum_range=2,update_index=1,insert=1"
        .parse()
        .unwrap();
    let cfg = RunConfig {
        users: 1,
        duration: Duration::from_millis(300),
        warmup: Duration::from_millis(50),
        tables: 2,
        table_size: TABLE_SIZE,
        seed: Some(3),
        ..RunConfig::for_spec(spec)
    };
    workload::prepare(&engine, &cfg).unwrap();
    let report = workload::run(&engine, cfg).unwrap();
    assert!(report.commits > 10, "{report}");
    assert_eq!(report.retries, 0, "one user never waits for a lock");
    let s = &report.statements;
    assert_eq!(s["point_select"], 3 * report.commits, "{s:?}");
    assert_eq!(s["sum_range"], 2 * report.commits);
    assert_eq!(s["update_index"], report.commits);
    assert_eq!(s["insert"], report.commits);
    assert_eq!(s.len(), 4, "{s:?}");
    assert_eq!(
        report.workload_spec,
        "mix:point_select=3,sum_range=2,update_index=1,insert=1"
    );
    engine.shutdown().unwrap();
}

#[test]
fn tpcc_lite_stays_consistent_under_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let cfg = RunConfig {
        users: 6,
        warehouses: 2,
        duration: Duration::from_millis(1500),
        warmup: Duration::from_millis(100),
        ..RunConfig::new(WorkloadKind::Tpcc)
    };
    workload::prepare(&engine, &cfg).unwrap();
    // Preparing twice is a no-op; another scale is refused.
    tpcc::prepare(&engine, 2).unwrap();
    let err = tpcc::prepare(&engine, 3).unwrap_err();
    assert!(err.to_string().contains("2 warehouses"), "{err}");
    let initial = tpcc::check_consistency(&engine, 2).unwrap();
    assert!(initial.violations.is_empty(), "{:?}", initial.violations);
    assert_eq!(initial.orders, 0);

    let report = workload::run(&engine, cfg).unwrap();
    assert!(report.first_error.is_none(), "{report}");
    assert!(report.commits > 100, "{report}");
    let s = &report.statements;
    assert!(s["tpcc_new_order"] > 0 && s["tpcc_payment"] > 0, "{s:?}");
    // 45 : 43 within a generous band.
    let share = s["tpcc_new_order"] as f64 / (s["tpcc_new_order"] + s["tpcc_payment"]) as f64;
    assert!((0.4..0.62).contains(&share), "new-order share {share}");
    assert_eq!(
        report.planned_rollbacks,
        s.get("planned_rollbacks").copied().unwrap_or(0)
    );

    let check = tpcc::check_consistency(&engine, 2).unwrap();
    assert!(check.violations.is_empty(), "{:#?}", check.violations);
    assert!(check.orders > 50 && check.history > 50, "{check:?}");
    assert!(check.order_lines >= 5 * check.orders, "{check:?}");

    // The data survive recovery still consistent.
    engine.shutdown().unwrap();
    drop(engine);
    let engine = self::engine(&dir);
    let check = tpcc::check_consistency(&engine, 2).unwrap();
    assert!(check.violations.is_empty(), "{:#?}", check.violations);
    engine.shutdown().unwrap();
}

#[test]
fn the_consistency_check_catches_a_broken_district() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    tpcc::prepare(&engine, 1).unwrap();
    let t = tpcc::TpccTables::resolve(&engine).unwrap();
    // Bump a district's next order id without inserting the order, and move
    // money into a warehouse without a district or history row.
    let mut trx = engine.begin();
    trx.update_k(t.district, tpcc::district_key(1, 3), 1)
        .unwrap();
    trx.update_c(
        t.warehouse,
        1,
        tpcc::encode_fields(&[("ytd", tpcc::INITIAL_W_YTD + 5)]),
    )
    .unwrap();
    engine.commit(trx).unwrap();
    let check = tpcc::check_consistency(&engine, 1).unwrap();
    let text = check.violations.join("\n");
    assert!(text.contains("district 1/3: d_next_o_id is 2"), "{text}");
    assert!(text.contains("w_ytd"), "{text}");
    assert!(text.contains("history"), "{text}");
    engine.shutdown().unwrap();
}

#[test]
fn op_counts_add_up() {
    let mut a = OpCounts::default();
    a.statements[0] = 2;
    a.tpcc_payment = 1;
    let mut b = a.clone();
    b.add(&a);
    assert_eq!(b.statement(Statement::PointSelect), 4);
    assert_eq!(b.to_map()["tpcc_payment"], 2);
    assert!(!b.to_map().contains_key("insert"));
}

#[test]
fn skewed_concurrent_updates_lose_nothing() {
    // 8 users hammer a few hot rows (Zipf 1.2 over 200 ids) with two index
    // updates per transaction, in random order, so lock waits and deadlocks
    // happen; every committed transaction must add exactly 2 to sum(k).
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let spec: WorkloadSpec = "mix:update_index=2".parse().unwrap();
    let cfg = RunConfig {
        users: 8,
        access: "zipf:1.2".parse().unwrap(),
        duration: Duration::from_millis(800),
        warmup: Duration::from_millis(100),
        tables: 1,
        table_size: 200,
        ..RunConfig::for_spec(spec)
    };
    workload::prepare(&engine, &cfg).unwrap();
    let sum_k = |e: &Engine| -> i64 { e.dump()["sbtest1"].values().map(|r| i64::from(r.k)).sum() };
    let (k0, c0) = (sum_k(&engine), engine.status().counters.commits);
    let report = workload::run(&engine, cfg).unwrap();
    let (k1, c1) = (sum_k(&engine), engine.status().counters.commits);
    assert!(report.first_error.is_none(), "{report}");
    assert!(report.commits > 100, "{report}");
    assert_eq!(k1 - k0, 2 * (c1 - c0) as i64, "lost or doubled updates");
    // A retried attempt ran 1 or 2 statements before its lock error.
    let extra = report.statements["update_index"] - 2 * report.commits;
    assert!(
        (report.retries..=2 * report.retries).contains(&extra),
        "{extra} extra statements for {} retries",
        report.retries
    );
    engine.shutdown().unwrap();
}

#[test]
fn interval_reports_cover_the_measured_window() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let cfg = RunConfig {
        users: 2,
        duration: Duration::from_millis(350),
        warmup: Duration::from_millis(50),
        tables: 1,
        table_size: TABLE_SIZE,
        seed: Some(5),
        report_interval: Some(Duration::from_millis(100)),
        ..RunConfig::new(WorkloadKind::UpdateIndex)
    };
    workload::prepare(&engine, &cfg).unwrap();
    let mut intervals = Vec::new();
    let report =
        workload::run_with_reports(&engine, cfg, &mut |r| intervals.push(r.clone())).unwrap();
    // 100, 200, 300 ms, and a last one of 50 ms that ends with the window.
    assert_eq!(intervals.len(), 4, "{intervals:?}");
    let last = intervals.last().unwrap();
    assert!((last.at_s - 0.35).abs() < 0.05, "{intervals:?}");
    for w in intervals.windows(2) {
        assert!(
            w[1].at_s > w[0].at_s && w[1].unix_ms >= w[0].unix_ms,
            "{intervals:?}"
        );
    }
    for r in &intervals {
        assert!((r.tps - r.commits as f64 / r.secs).abs() < 1e-6, "{r:?}");
    }
    // The intervals split the window's engine commits; the window's own
    // count also takes the few commits that return while it drains.
    let sum: u64 = intervals.iter().map(|r| r.commits).sum();
    assert!(
        sum > 0 && sum <= report.engine_commits,
        "{sum} vs {}",
        report.engine_commits
    );
    assert!(
        sum * 10 >= report.engine_commits * 9,
        "{sum} vs {}",
        report.engine_commits
    );
    engine.shutdown().unwrap();
}
