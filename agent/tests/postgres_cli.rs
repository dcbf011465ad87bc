//! `redoctor diagnose`, `apply` and `revert` against a private PostgreSQL
//! 15 cluster (the probes' test cluster, `probes/tests/support`), driven by
//! sysbench. Skipped, with the reason printed, where PostgreSQL 15 or
//! sysbench is not installed.

#[path = "../../probes/tests/support/pg_cluster.rs"]
mod pg_cluster;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pg_cluster::Cluster;

fn redoctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
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
    let o = redoctor(&[
        "diagnose",
        "--pid",
        &pid,
        "--socket",
        sock,
        "--duration",
        "4s",
        "--format",
        "json",
    ]);
    let took = t.elapsed();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(took <= Duration::from_secs(10), "diagnose took {took:?}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["facts"]["engine"], "postgresql");
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
