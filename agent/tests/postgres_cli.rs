//! `redoctor diagnose`, `apply` and `revert` against a private PostgreSQL
//! 15 cluster (the probes' test cluster, `probes/tests/support`), driven by
//! sysbench. Skipped, with the reason printed, where PostgreSQL 15 or
//! sysbench is not installed.

mod common;
#[path = "../../probes/tests/support/pg_cluster.rs"]
mod pg_cluster;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{role_threads, text};
use pg_cluster::Cluster;

fn redoctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn diagnose_a_loaded_cluster_from_its_postmaster() {
    if pg_cluster::skip("diagnose_a_loaded_cluster_from_its_postmaster") {
        return;
    }
    let pg = Cluster::start(&[], None);
    pg.prepare_sysbench("sbtest", 10_000);
    let mut bench = pg
        .sysbench("sbtest", 16, 14, 10_000, "run")
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let sock = pg.sock.to_str().unwrap();
    let pid = pg.pid.to_string();
    let t = Instant::now();
    // A checkpoint during the observation: the next change of each page
    // logs a full-page image, which the server's counters show.
    let o = std::thread::scope(|sc| {
        sc.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            pg.sql("postgres", "CHECKPOINT");
        });
        redoctor(&[
            "diagnose",
            "--pid",
            &pid,
            "--socket",
            sock,
            "--duration",
            "4s",
            "--format",
            "json",
        ])
    });
    let took = t.elapsed();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(took <= Duration::from_secs(10), "diagnose took {took:?}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["facts"]["engine"], "postgresql");
    // The server's WAL counters over the observation: records, bytes and
    // full-page images (after the checkpoint), the share images can
    // account for, and the checkpoint itself.
    let c = &d["facts"]["counters"];
    for k in ["wal_records_per_s", "wal_bytes_per_s", "wal_fpi_per_s"] {
        assert!(c[k].as_f64().is_some_and(|v| v > 0.0), "{k}: {c}");
    }
    let share = c["wal_fpi_bytes_share"].as_f64().unwrap();
    assert!(share > 0.0 && share <= 1.0, "{c}");
    // Per committed transaction: an update_index commit logs at least its
    // commit record and heap and index changes (~100+ bytes), and after a
    // checkpoint some full-page images of 8 KiB.
    let per_commit = c["wal_bytes_per_commit"].as_f64().unwrap();
    assert!(per_commit > 100.0 && per_commit < 1e6, "{c}");
    assert!(
        c["wal_fpi_per_commit"].as_f64().is_some_and(|v| v > 0.0),
        "{c}"
    );
    // Only PostgreSQL's settings, each as the server reports it.
    let settings = d["facts"]["settings"].as_object().unwrap();
    assert!(!settings.is_empty());
    for (k, v) in settings {
        assert_eq!(d["facts"]["settings_source"][k], "stated", "{k}");
        assert_eq!(
            pg.sql("postgres", &format!("SHOW {k}")),
            v.as_str().unwrap(),
            "{k}"
        );
    }
    // Every setting a rule proposes or files exists on the server; no
    // durability setting without consent.
    let mut named: Vec<String> = Vec::new();
    for r in d["recommendations"].as_array().unwrap() {
        named.push(r["setting"].as_str().unwrap().to_string());
    }
    for r in d["not_applied"].as_array().unwrap() {
        if let Some(s) = r["setting"].as_str() {
            if r["proposed"].is_string() {
                named.push(s.to_string());
            }
        }
    }
    for s in &named {
        assert!(
            !s.starts_with("innodb"),
            "an InnoDB setting on PostgreSQL: {out}"
        );
        assert_ne!(s, "synchronous_commit", "proposed without consent");
        assert_eq!(
            pg.number(
                "postgres",
                &format!("SELECT count(*) FROM pg_settings WHERE name = '{s}'")
            ),
            1,
            "{s}"
        );
    }
    assert!(
        d["model"].is_null()
            || d["model"]["predictions"]
                .as_array()
                .is_none_or(|p| p.is_empty())
    );
    // The windows name the profile and the processes' roles.
    let w = d["windows"].as_array().unwrap().last().unwrap();
    assert_eq!(w["profile"], "postgresql");
    let procs = w["processes"].as_array().unwrap();
    let role_of = |needle: &str| {
        procs
            .iter()
            .find(|p| p["title"].as_str().unwrap().contains(needle))
            .map(|p| p["role"].as_str().unwrap().to_string())
    };
    assert_eq!(role_of("walwriter").as_deref(), Some("log_writer"));
    assert_eq!(role_of("checkpointer").as_deref(), Some("checkpointer"));
    assert_eq!(role_of("background writer").as_deref(), Some("page_writer"));
    assert_eq!(
        role_of("autovacuum launcher").as_deref(),
        Some("maintenance")
    );
    assert_eq!(role_of("sbtest").as_deref(), Some("user"));
    assert!(w["engine"]["commits"].as_u64().unwrap() > 0);
    bench.kill().unwrap();
    bench.wait().unwrap();
}

#[test]
fn apply_and_revert_through_alter_system() {
    if pg_cluster::skip("apply_and_revert_through_alter_system") {
        return;
    }
    let pg = Cluster::start(&[], None);
    let sock = pg.sock.to_str().unwrap();
    let state = pg.dir().join("state.json");
    let state = state.to_str().unwrap();
    let auto_conf = || std::fs::read_to_string(pg.data.join("postgresql.auto.conf")).unwrap();

    let o = redoctor(&[
        "apply",
        "--socket",
        sock,
        "--state",
        state,
        "--set",
        "commit_delay=100",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(
        text(&o).0.contains("commit_delay: 0 -> 100"),
        "{}",
        text(&o).0
    );
    assert_eq!(pg.sql("postgres", "SHOW commit_delay"), "100");
    assert!(auto_conf().contains("commit_delay"));

    // A durability setting needs consent; a restart-only one is refused.
    for (set, says) in [
        ("synchronous_commit=off", "--allow-durability-changes"),
        ("max_connections=50", "restarts"),
    ] {
        let o = redoctor(&["apply", "--socket", sock, "--state", state, "--set", set]);
        assert!(!o.status.success());
        assert!(text(&o).1.contains(says), "{}", text(&o).1);
    }
    assert_eq!(pg.sql("postgres", "SHOW synchronous_commit"), "on");
    assert_eq!(pg.sql("postgres", "SHOW max_connections"), "100");

    let o = redoctor(&["revert", "--socket", sock, "--state", state]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(pg.sql("postgres", "SHOW commit_delay"), "0");
    // RESET, not a pinned old value: nothing left in postgresql.auto.conf.
    assert!(!auto_conf().contains("commit_delay"), "{}", auto_conf());
}

#[test]
fn a_backend_pid_is_refused_and_nothing_is_applied() {
    if pg_cluster::skip("a_backend_pid_is_refused_and_nothing_is_applied") {
        return;
    }
    let pg = Cluster::start(&[], None);
    let (mut session, backend) = pg.backend(30);
    let sock = pg.sock.to_str().unwrap();
    let state = pg.dir().join("state.json");
    let o = redoctor(&[
        "diagnose",
        "--pid",
        &backend.to_string(),
        "--socket",
        sock,
        "--duration",
        "1s",
        "--trial",
        "--state",
        state.to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains(&format!(
            "pid {backend} is not a postgresql server's root process"
        )),
        "{err}"
    );
    assert!(err.contains("head -1 DATADIR/postmaster.pid"), "{err}");
    assert!(!state.exists(), "nothing may be recorded");
    assert!(
        !std::fs::read_to_string(pg.data.join("postgresql.auto.conf"))
            .unwrap()
            .lines()
            .any(|l| !l.starts_with('#') && !l.trim().is_empty())
    );
    session.kill().unwrap();
    session.wait().unwrap();
}

/// Lines of postgresql.auto.conf that set something (ALTER SYSTEM's file).
fn altered(pg: &Cluster) -> Vec<String> {
    std::fs::read_to_string(pg.data.join("postgresql.auto.conf"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn another_clusters_socket_is_refused_and_nothing_is_applied() {
    if pg_cluster::skip("another_clusters_socket_is_refused_and_nothing_is_applied") {
        return;
    }
    let (a, b) = (Cluster::start(&[], None), Cluster::start(&[], None));
    let state = a.dir().join("state.json");
    // The socket directory and the socket file in it both name b.
    let b_file = b.sock.join(".s.PGSQL.5432");
    for sock in [&b.sock, &b_file] {
        let o = redoctor(&[
            "diagnose",
            "--pid",
            &a.pid.to_string(),
            "--socket",
            sock.to_str().unwrap(),
            "--duration",
            "1s",
            "--trial",
            "--state",
            state.to_str().unwrap(),
        ]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("is served by pid {} (postgres)", b.pid)),
            "{err}"
        );
        assert!(err.contains(&format!("not by pid {}", a.pid)), "{err}");
        // The server behind it tells its own pid (the backend's parent).
        assert!(
            err.contains(&format!("reaches the server of pid {} (postgres)", b.pid)),
            "{err}"
        );
        assert!(err.contains("SHOW unix_socket_directories"), "{err}");
    }
    assert!(!state.exists(), "nothing may be recorded");
    assert!(altered(&a).is_empty() && altered(&b).is_empty());
}

#[test]
fn without_usdt_diagnose_is_degraded_and_the_trial_changes_nothing() {
    if pg_cluster::skip("without_usdt_diagnose_is_degraded_and_the_trial_changes_nothing") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let stripped = pg_cluster::binary_without_usdt(root.path());
    let pg = Cluster::start(&[], Some(&stripped));
    pg.prepare_sysbench("sbtest", 1000);
    let mut bench = pg.sysbench("sbtest", 8, 10, 1000, "run").spawn().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let state = pg.dir().join("state.json");
    let report = pg.dir().join("report.txt");
    let o = redoctor(&[
        "diagnose",
        "--pid",
        &pg.pid.to_string(),
        "--socket",
        pg.sock.to_str().unwrap(),
        "--duration",
        "3s",
        "--trial",
        "--state",
        state.to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]);
    bench.kill().unwrap();
    bench.wait().unwrap();
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("DEGRADED MODE"), "{err}");
    assert!(err.contains("has no USDT probes"), "{err}");
    assert!(err.contains("trial not run"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    let r = std::fs::read_to_string(&report).unwrap();
    assert!(r.contains("DEGRADED MODE"), "{r}");
    assert!(!state.exists(), "nothing may be recorded");
    assert!(altered(&pg).is_empty(), "{:?}", altered(&pg));
}

/// A streaming standby under its primary's load is observed by role: the
/// walreceiver as the receiver, the startup process replaying as the
/// applier, both busy; the report carries that it streams, its lag and the
/// WAL it received and replayed per second, and none of the primary's
/// write rules fire on it (it commits nothing itself).
#[test]
fn a_standby_is_observed_by_role_with_its_lag() {
    if pg_cluster::skip("a_standby_is_observed_by_role_with_its_lag") {
        return;
    }
    let primary = Cluster::start(&[], None);
    primary.prepare_sysbench("sbtest", 10_000);
    let standby = primary.standby(&[]);
    let load = primary
        .sysbench("sbtest", 8, 10, 10_000, "run")
        .spawn()
        .unwrap();
    let _load = redoctor_testkit::KillOnDrop(load);
    std::thread::sleep(Duration::from_millis(500));
    let (d, err) = diagnose_json(&standby, 3, &[]);
    assert_eq!(
        role_threads(&d, "receiver"),
        1,
        "walreceiver: {}\n{err}",
        d["windows"]
    );
    assert_eq!(
        role_threads(&d, "applier"),
        1,
        "startup: {}\n{err}",
        d["windows"]
    );
    let counters = &d["facts"]["counters"];
    assert_eq!(counters["replica_running"], 1.0, "{counters}");
    assert!(
        counters["wal_replayed_bytes_per_s"].as_f64().unwrap() > 0.0
            && counters["wal_received_bytes_per_s"].as_f64().unwrap() > 0.0,
        "{counters}"
    );
    assert!(counters["replica_lag_s"].as_f64().is_some(), "{counters}");
    assert!(
        d["summary"]["replica_applier_threads"].as_f64().unwrap() >= 1.0
            && d["summary"]["applier_busy_share"].as_f64().unwrap() > 0.0,
        "{}",
        d["summary"]
    );
    // The primary sees its walsender, not a receiver.
    let (p, err) = diagnose_json(&primary, 2, &[]);
    assert_eq!(role_threads(&p, "replication"), 1, "walsender: {err}");
    assert_eq!(role_threads(&p, "receiver"), 0, "{err}");
    assert!(
        p["facts"]["counters"]["replica_running"].is_null(),
        "{}",
        p["facts"]
    );
}

/// `redoctor diagnose` on `pg` for `secs` with `extra` flags; the report.
fn diagnose_json(pg: &Cluster, secs: u32, extra: &[&str]) -> (serde_json::Value, String) {
    let pid = pg.pid.to_string();
    let duration = format!("{secs}s");
    let mut args = vec![
        "diagnose",
        "--pid",
        &pid,
        "--socket",
        pg.sock.to_str().unwrap(),
        "--duration",
        &duration,
        "--format",
        "json",
    ];
    args.extend(extra);
    let o = redoctor(&args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    (serde_json::from_str(&out).unwrap(), err)
}

/// `redoctor revert` of what `state` records for `pg`; it must succeed.
fn revert(pg: &Cluster, state: &Path) {
    let o = redoctor(&[
        "revert",
        "--socket",
        pg.sock.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
}

/// The row (recommendation or not applied) of rule `id`, when it fired.
fn fired<'a>(d: &'a serde_json::Value, id: &str) -> Option<&'a serde_json::Value> {
    d["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .chain(d["not_applied"].as_array().unwrap())
        .find(|r| r["rule"] == id && r["proposed"].is_string())
}

fn signal(d: &serde_json::Value, name: &str) -> f64 {
    d["summary"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no signal {name}"))
}

/// PostgreSQL's rules fire on the loads whose mechanism they name, with the
/// evidence in the report: WAL buffers filled by a bulk load
/// (`wal_writer_delay`), a few committers each paying its own WAL flush
/// (`synchronous_commit`, only with consent, then tried live: the verdict
/// follows the trial), many transactions in flight but few per WAL flush
/// (`commit_delay`, tried live), far more runnable backends than cores
/// (pooling, restart-only: advice).
#[test]
fn pg_rules_fire_on_their_evidence() {
    if pg_cluster::skip("pg_rules_fire_on_their_evidence") {
        return;
    }
    // Small WAL buffers (restart-only), so a bulk load fills them.
    let pg = Cluster::start(&["wal_buffers=64kB", "autovacuum=off"], None);
    pg.prepare_sysbench("sbtest", 10_000);
    let cores = std::thread::available_parallelism().unwrap().get() as f64;

    // 1. A bulk load: one transaction writes far more WAL than the buffers hold.
    pg.sql("sbtest", "CREATE TABLE bulk (a int, b text)");
    let sock = pg.sock.clone();
    let bulk = std::thread::spawn(move || {
        for _ in 0..4 {
            let o = Command::new(std::path::Path::new(pg_cluster::BIN_DIR).join("psql"))
                .arg("-h")
                .arg(&sock)
                .args(["-U", "postgres", "-d", "sbtest", "-XAtq", "-c"])
                .arg("INSERT INTO bulk SELECT g, md5(g::text) FROM generate_series(1, 300000) g")
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let (d, _) = diagnose_json(&pg, 3, &[]);
    bulk.join().unwrap();
    eprintln!(
        "bulk load: {:.0} WAL buffer-full writes/s, {:.0} commits",
        signal(&d, "wal_buffer_full_per_s"),
        signal(&d, "commits")
    );
    assert!(signal(&d, "wal_buffer_full_per_s") >= 10.0);
    let r = fired(&d, "pg-wal-writer-delay").unwrap_or_else(|| panic!("{d}"));
    assert_eq!(r["setting"], "wal_writer_delay");
    assert_eq!(r["proposed"], "10ms");

    // 2. Two committers: at most two commits per WAL fsync, each slow.
    let load = |threads: u32, secs: u32, test: &str| {
        // Nothing reads its output: a full pipe would stall the load
        // (oltp_read_write warns of every deadlock it retries).
        pg.sysbench_test(test, "sbtest", threads, secs, 10_000, "run")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut bench = load(2, 30, "oltp_update_index");
    std::thread::sleep(Duration::from_secs(1));
    let (d, _) = diagnose_json(&pg, 3, &[]);
    assert!(
        fired(&d, "pg-synchronous-commit-off").is_none(),
        "a durability change without consent: {d}"
    );
    let (cpf, fsync_us) = (
        signal(&d, "commits_per_fsync"),
        signal(&d, "redo_fsync_mean_us"),
    );
    eprintln!("2 committers: {cpf:.2} commits per WAL fsync, {fsync_us:.0} µs per fsync");
    let state = pg.dir().join("state.json");
    let (d, err) = diagnose_json(
        &pg,
        3,
        &[
            &[
                "--allow-durability-changes",
                "--state",
                state.to_str().unwrap(),
            ],
            &common::QUICK_TRIAL[..],
        ]
        .concat(),
    );
    bench.kill().unwrap();
    bench.wait().unwrap();
    let (cpf, fsync_us) = (
        signal(&d, "commits_per_fsync"),
        signal(&d, "redo_fsync_mean_us"),
    );
    if cpf <= 2.0 && fsync_us >= 100.0 {
        assert!(err.contains("redoctor: trial:"), "{err}");
        let trial = d["trial"].to_string();
        assert!(trial.contains("synchronous_commit"), "{trial}");
        // The verdict follows the trial: kept means recorded and now off;
        // rejected means still on and not advised.
        let now = pg.sql("postgres", "SHOW synchronous_commit");
        let advised = d["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["setting"] == "synchronous_commit");
        eprintln!("trial left synchronous_commit = {now}; advised: {advised}; {err}");
        assert_eq!(advised, now == "off", "{d}");
        assert_eq!(state.exists(), now == "off");
    } else {
        // skip-ok: the load's own variation, and the rule's silence is checked.
        eprintln!("the rule's evidence did not hold in this window (skipping its trial check)");
        assert!(fired(&d, "pg-synchronous-commit-off").is_none(), "{d}");
    }
    revert(&pg, &state);
    assert_eq!(pg.sql("postgres", "SHOW synchronous_commit"), "on");

    // 3. Many committers, each WAL flush carrying few of the transactions
    // in flight: commit_delay (group commit), then tried live.
    // oltp_read_write: each transaction runs 18 statements before its
    // commit, so commits arrive spread out while many are in flight.
    let mut bench = load(16, 60, "oltp_read_write");
    std::thread::sleep(Duration::from_secs(2));
    // This load stalls now and then (row locks, deadlock retries, the
    // disk): a look whose window stalled lacks the evidence (fewer than
    // min_commits), and the rule must then stay silent. Up to 4 looks.
    let mut found = None;
    for look in 1..=4 {
        let (d, _) = diagnose_json(&pg, 3, &[]);
        let (active, cpf, fsyncs) = (
            signal(&d, "active_transactions"),
            signal(&d, "commits_per_fsync"),
            signal(&d, "redo_fsyncs_per_s"),
        );
        eprintln!(
            "16 committers, look {look}: {active:.1} transactions in flight, {:.0} commits, \
             {cpf:.2} commits per WAL fsync, {fsyncs:.0} fsyncs/s of {:.0} µs",
            signal(&d, "commits"),
            signal(&d, "redo_fsync_mean_us")
        );
        // At most every committer in flight.
        assert!(active <= 16.5, "{active}");
        // The rule's evidence: more in flight than commit_siblings (5),
        // each flush carrying under a third of them, enough flushes.
        let holds = signal(&d, "commits") >= 500.0
            && active >= 6.0
            && cpf * 3.0 <= active
            && fsyncs >= 100.0;
        let r = fired(&d, "pg-group-commit-delay").cloned();
        assert_eq!(r.is_some(), holds, "{d}");
        if let Some(r) = r {
            found = Some((d, r));
            break;
        }
    }
    let Some((d, r)) = found else {
        panic!("pg-group-commit-delay's evidence never held in 4 looks at this load");
    };
    {
        let half_fsync = signal(&d, "redo_fsync_mean_us") / 2.0;
        let proposed: f64 = r["proposed"].as_str().unwrap().parse().unwrap();
        assert!(
            (proposed - half_fsync.clamp(10.0, 1000.0)).abs() <= 1.0,
            "{proposed} vs {half_fsync}"
        );
        let delay_state = pg.dir().join("state-delay.json");
        let (d, err) = diagnose_json(
            &pg,
            3,
            &[
                &["--state", delay_state.to_str().unwrap()][..],
                &common::QUICK_TRIAL[..],
            ]
            .concat(),
        );
        // The evidence of this second look decides whether it is tried.
        if fired(&d, "pg-group-commit-delay").is_some() {
            let trial = d["trial"].to_string();
            assert!(trial.contains("commit_delay"), "{trial}");
        }
        // The verdict follows the trial: advised only when kept, and then
        // it is what the server has.
        let now = pg.sql("postgres", "SHOW commit_delay");
        let advised = d["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["setting"] == "commit_delay");
        eprintln!("trial left commit_delay = {now}; advised: {advised}; {err}");
        assert_eq!(advised, now != "0", "{d}");
        assert_eq!(delay_state.exists(), now != "0");
        if delay_state.exists() {
            revert(&pg, &delay_state);
        }
        assert_eq!(pg.sql("postgres", "SHOW commit_delay"), "0");
    }
    bench.kill().unwrap();
    bench.wait().unwrap();

    // 4. 24 connections each running CPU-bound statements back to back
    // (the client idle meanwhile) on a few cores: pooling (restart-only).
    let mut sessions: Vec<std::process::Child> = (0..24)
        .map(|_| {
            let mut c = Command::new(std::path::Path::new(pg_cluster::BIN_DIR).join("psql"));
            c.arg("-h")
                .arg(&pg.sock)
                .args(["-U", "postgres", "-d", "sbtest", "-XAtq"]);
            for _ in 0..2000 {
                c.args(["-c", "SELECT count(*) FROM generate_series(1, 20000)"]);
            }
            c.stdout(std::process::Stdio::null()).spawn().unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let (d, _) = diagnose_json(&pg, 3, &[]);
    for c in &mut sessions {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    let (runnable, sat) = (
        signal(&d, "user_runnable_threads"),
        signal(&d, "saturation"),
    );
    eprintln!("24 busy connections: {runnable:.1} runnable backends, saturation {sat:.2}");
    let r = fired(&d, "pg-connection-pooling").unwrap_or_else(|| panic!("{d}"));
    assert!(runnable >= 2.0 * cores && sat >= 1.5);
    assert_eq!(r["proposed"], (2 * cores as u64 + 1).to_string());
    assert_eq!(r["status"], "needs_restart", "{r}");
    assert!(
        !d["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["setting"] == "max_connections"),
        "max_connections needs a restart: advice only"
    );
    assert_eq!(pg.sql("postgres", "SHOW max_connections"), "100");
}
