//! The settings registry: metadata, validation (a refused SET changes
//! nothing), history, startup settings, SHOW GLOBAL STATUS, and every
//! setting changed live under 64 users with exact commit accounting.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::status;
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::RedoMode;
use redoctor_engine::{Engine, EngineError, EngineOptions, SettingsError, Value};

fn engine() -> Arc<Engine> {
    let vfs = Arc::new(SimVfs::new());
    Engine::open(common::sim_opts(vfs, RedoMode::On, 1, 1 << 20)).unwrap()
}

fn value(e: &Engine, name: &str) -> String {
    e.variable(name).unwrap().value
}

#[test]
fn variables_list_every_setting_with_metadata() {
    let e = engine();
    let vars = e.variables();
    for name in [
        "innodb_log_writer_threads",
        "innodb_flush_log_at_trx_commit",
        "innodb_log_spin_cpu_pct_hwm",
        "innodb_log_wait_for_flush_spin_hwm",
        "redoctor_spin_gate_window_ms",
        "redoctor_spin_min_success_pct",
        "redoctor_log_idle_self_write",
        "innodb_lock_wait_timeout",
        "innodb_thread_concurrency",
        "innodb_concurrency_tickets",
        "innodb_thread_sleep_delay",
        "innodb_admission_policy",
        "innodb_max_active_transactions",
        "innodb_max_active_transactions_wait_timeout",
    ] {
        let v = vars.iter().find(|v| v.name == name).expect(name);
        assert!(
            v.dynamic && !v.doc.is_empty() && !v.range.is_empty(),
            "{v:?}"
        );
        assert_eq!(v.value, v.default, "{name} starts at its default");
    }
    let tc = e.variable("INNODB_THREAD_CONCURRENCY").unwrap();
    assert_eq!(
        (tc.kind.as_str(), tc.range.as_str()),
        ("integer", "0..=1000 (threads; 0 = unlimited)")
    );
    assert_eq!(value(&e, "innodb_admission_policy"), "soft");
    e.shutdown().unwrap();
}

#[test]
fn set_global_parses_mysql_values_and_applies_them() {
    let e = engine();
    e.set_global("Innodb_Log_Writer_Threads", "off").unwrap();
    assert_eq!(e.redo().mode(), RedoMode::Off);
    e.set_global("innodb_log_writer_threads", "1").unwrap();
    assert_eq!(e.redo().mode(), RedoMode::On);
    e.set_global("innodb_flush_log_at_trx_commit", "2").unwrap();
    assert_eq!(e.redo().flush_at_commit(), 2);
    e.set_global("innodb_thread_concurrency", " 16 ").unwrap();
    assert_eq!(e.concurrency_gate().cap(), 16);
    e.set_global("innodb_admission_policy", "FIFO").unwrap();
    assert_eq!(value(&e, "innodb_admission_policy"), "fifo");
    e.set_global("innodb_admission_policy", "0").unwrap();
    assert_eq!(value(&e, "innodb_admission_policy"), "soft");
    // The old spelling is still accepted; SHOW reports the new name.
    e.set_global("innodb_admission_policy", "fifo").unwrap();
    e.set_global("innodb_admission_policy", "SEED001").unwrap();
    assert_eq!(value(&e, "innodb_admission_policy"), "soft");
    e.set_global("innodb_max_active_transactions", "'32'")
        .unwrap();
    assert_eq!(e.throttle().limit(), 32);
    e.set_global("innodb_max_active_transactions_wait_timeout", "250")
        .unwrap();
    assert_eq!(e.throttle().timeout(), Duration::from_millis(250));
    e.set_global("innodb_lock_wait_timeout", "7").unwrap();
    assert_eq!(e.lock_wait_timeout(), Duration::from_secs(7));
    e.set_global("innodb_concurrency_tickets", "1").unwrap();
    e.set_global("innodb_thread_sleep_delay", "0").unwrap();
    e.set_global("innodb_log_spin_cpu_pct_hwm", "100").unwrap();
    e.set_global("innodb_log_wait_for_flush_spin_hwm", "0")
        .unwrap();
    assert_eq!(value(&e, "innodb_concurrency_tickets"), "1");
    assert_eq!(value(&e, "innodb_log_spin_cpu_pct_hwm"), "100");
    e.shutdown().unwrap();
}

#[test]
fn refused_values_change_nothing_and_name_the_range() {
    let e = engine();
    let before = e.variables();
    let cases = [
        ("innodb_flush_log_at_trx_commit", "3", "0..=2"),
        ("innodb_flush_log_at_trx_commit", "-1", "0..=2"),
        ("innodb_log_spin_cpu_pct_hwm", "101", "0..=100"),
        ("innodb_thread_concurrency", "abc", "0..=1000"),
        ("innodb_thread_concurrency", "1001", "0..=1000"),
        ("innodb_concurrency_tickets", "0", "1..=4294967295"),
        ("innodb_log_writer_threads", "maybe", "ON|OFF"),
        ("innodb_admission_policy", "lifo", "soft|fifo"),
        ("innodb_admission_policy", "2", "soft|fifo"),
        ("innodb_lock_wait_timeout", "0", "1..=1073741824"),
        ("innodb_max_active_transactions", "", "0..=1000000"),
        (
            "innodb_max_active_transactions_wait_timeout",
            "0",
            "1..=3600000",
        ),
    ];
    for (name, v, range) in cases {
        let err = e.set_global(name, v).unwrap_err();
        assert!(matches!(err, SettingsError::InvalidValue { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(name) && msg.contains(range), "{msg}");
    }
    let err = e.set_global("innodb_no_such_thing", "1").unwrap_err();
    assert!(err
        .to_string()
        .contains("Unknown system variable 'innodb_no_such_thing'"));
    assert_eq!(e.variables(), before, "refused SETs changed nothing");
    assert!(e.setting_changes().is_empty());
    e.shutdown().unwrap();
}

/// The engine's typed setters go through the registry without text: a
/// value of the wrong kind or out of range is refused and changes nothing,
/// an accepted one is applied and recorded like SET GLOBAL; the status
/// snapshot carries the redo mode as a `RedoMode`.
#[test]
fn typed_values_are_checked_applied_and_recorded() {
    let e = engine();
    let before = e.variables();
    for (name, v) in [
        ("innodb_log_writer_threads", Value::UInt(0)),
        ("innodb_flush_log_at_trx_commit", Value::UInt(3)),
        ("innodb_flush_log_at_trx_commit", Value::Bool(true)),
        ("innodb_admission_policy", Value::Enum("lifo")),
    ] {
        let err = e.set_global_value(name, v).unwrap_err();
        assert!(matches!(err, SettingsError::InvalidValue { .. }), "{err}");
        assert!(err.to_string().contains(name), "{err}");
    }
    assert_eq!(e.variables(), before);
    assert!(e.setting_changes().is_empty());
    e.set_redo_mode(RedoMode::Off).unwrap();
    assert_eq!(e.status().redo_mode, RedoMode::Off);
    e.set_global_value("innodb_admission_policy", Value::Enum("fifo"))
        .unwrap();
    assert_eq!(value(&e, "innodb_admission_policy"), "fifo");
    let got: Vec<_> = e
        .setting_changes()
        .iter()
        .map(|c| (c.name.clone(), c.old.clone(), c.new.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "innodb_log_writer_threads".into(),
                "ON".into(),
                "OFF".into()
            ),
            (
                "innodb_admission_policy".into(),
                "soft".into(),
                "fifo".into()
            ),
        ]
    );
    // JSON keeps the old spelling.
    let json = serde_json::to_value(e.status()).unwrap();
    assert_eq!(json["redo_mode"], "off");
    e.shutdown().unwrap();
}

#[test]
fn accepted_changes_are_recorded_with_old_new_and_time() {
    let e = engine();
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    e.set_global("innodb_thread_concurrency", "8").unwrap();
    e.set_global("innodb_thread_concurrency", "0").unwrap();
    e.set_global("innodb_log_writer_threads", "OFF").unwrap();
    let _ = e.set_global("innodb_thread_concurrency", "x");
    let h = e.setting_changes();
    let got: Vec<_> = h
        .iter()
        .map(|c| (c.name.as_str(), c.old.as_str(), c.new.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("innodb_thread_concurrency", "0", "8"),
            ("innodb_thread_concurrency", "8", "0"),
            ("innodb_log_writer_threads", "ON", "OFF"),
        ]
    );
    assert!(h.iter().all(|c| c.unix_ms >= t0 && c.unix_ms < t0 + 60_000));
    // The history is bounded.
    for i in 0..300 {
        e.set_global("innodb_concurrency_tickets", &(i + 1).to_string())
            .unwrap();
    }
    let h = e.setting_changes();
    assert_eq!(h.len(), redoctor_engine::HISTORY_LEN);
    assert_eq!(h.last().unwrap().new, "300");
    e.shutdown().unwrap();
}

#[test]
fn startup_settings_apply_at_open_and_bad_ones_create_nothing() {
    let vfs = Arc::new(SimVfs::new());
    let mut o = common::sim_opts(vfs, RedoMode::On, 1, 1 << 20);
    o.settings = vec![
        ("innodb_log_writer_threads".into(), "OFF".into()),
        ("innodb_thread_concurrency".into(), "4".into()),
        ("innodb_admission_policy".into(), "fifo".into()),
        ("innodb_max_active_transactions".into(), "9".into()),
    ];
    let e = Engine::open(o).unwrap();
    assert_eq!(e.redo().mode(), RedoMode::Off);
    assert_eq!(e.concurrency_gate().cap(), 4);
    assert_eq!(value(&e, "innodb_admission_policy"), "fifo");
    assert_eq!(e.throttle().limit(), 9);
    assert!(
        e.setting_changes().is_empty(),
        "startup values are not changes"
    );
    e.shutdown().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("data");
    for bad in [("innodb_thread_concurrency", "-4"), ("innodb_bogus", "1")] {
        let mut o = EngineOptions::new(&datadir);
        o.settings = vec![
            ("innodb_flush_log_at_trx_commit".into(), "2".into()),
            (bad.0.into(), bad.1.into()),
        ];
        let err = Engine::open(o).err().expect("open must refuse");
        assert!(matches!(err, EngineError::Settings(_)), "{err}");
        assert!(err.to_string().contains(bad.0), "{err}");
        assert!(!datadir.exists(), "nothing created for a bad setting");
    }
}

/// Each user increments its own counter row per commit; every acknowledged
/// commit must show exactly once, whatever changed meanwhile.
#[test]
fn every_setting_changes_live_under_64_users_without_losing_commits() {
    const USERS: usize = 64;
    let e = engine();
    e.prepare_sbtest(1, USERS as u64).unwrap();
    let table = e.table_id("sbtest1").unwrap();
    let start_k: Vec<i32> = (1..=USERS as i64)
        .map(|id| e.dump()["sbtest1"][&id].k)
        .collect();
    let commits0 = status(&e, "Com_commit");
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..USERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..USERS)
        .map(|u| {
            let (e, acked, stop) = (e.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut retries = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let mut t = e.begin();
                    let r = t
                        .update_k(table, u as i64 + 1, 1)
                        .and_then(|_| t.get(table, (u as i64 + 7) % USERS as i64 + 1));
                    match r {
                        Ok(_) => {
                            e.commit(t).unwrap();
                            acked[u].fetch_add(1, Ordering::Relaxed);
                        }
                        Err(err) => {
                            // Only the throttle may refuse, and only if it times out.
                            assert!(
                                matches!(err, redoctor_engine::TrxError::Throttled(_)),
                                "{err}"
                            );
                            e.rollback(t);
                            retries += 1;
                        }
                    }
                }
                retries
            })
        })
        .collect();
    let changes: &[(&str, &[&str])] = &[
        ("innodb_thread_concurrency", &["4", "1", "16", "0", "2"]),
        (
            "innodb_admission_policy",
            &["fifo", "soft", "fifo", "seed001"],
        ),
        ("innodb_concurrency_tickets", &["1", "3", "5000"]),
        ("innodb_thread_sleep_delay", &["1000", "10000"]),
        (
            "innodb_max_active_transactions",
            &["8", "1", "32", "0", "3"],
        ),
        ("innodb_max_active_transactions_wait_timeout", &["60000"]),
        ("innodb_log_writer_threads", &["OFF", "ON"]),
        ("innodb_flush_log_at_trx_commit", &["2", "0", "1"]),
        ("innodb_log_spin_cpu_pct_hwm", &["0", "100", "50"]),
        ("innodb_log_wait_for_flush_spin_hwm", &["0", "400"]),
        ("redoctor_spin_gate_window_ms", &["200", "20", "50"]),
        ("redoctor_spin_min_success_pct", &["0", "100", "5"]),
        ("innodb_lock_wait_timeout", &["30", "50"]),
    ];
    let mut n_set = 0;
    let mut last = 0u64;
    let mut last_progress = Instant::now();
    for round in 0..6 {
        for (name, values) in changes {
            let v = values[round % values.len()];
            e.set_global(name, v).unwrap();
            n_set += 1;
            std::thread::sleep(Duration::from_millis(15));
            let now: u64 = acked.iter().map(|a| a.load(Ordering::Relaxed)).sum();
            if now > last {
                last = now;
                last_progress = Instant::now();
            }
            assert!(
                last_progress.elapsed() < Duration::from_secs(5),
                "no commit for 5 s after {name}={v}"
            );
        }
    }
    // Leave a permissive state and let everyone finish.
    e.set_global("innodb_thread_concurrency", "0").unwrap();
    e.set_global("innodb_max_active_transactions", "0").unwrap();
    stop.store(true, Ordering::Release);
    let retries: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(retries, 0, "no throttle timeout with a 60 s wait limit");
    let total: u64 = acked.iter().map(|a| a.load(Ordering::Relaxed)).sum();
    let dump = e.dump();
    for u in 0..USERS {
        let want = start_k[u].wrapping_add(acked[u].load(Ordering::Relaxed) as i32);
        assert_eq!(dump["sbtest1"][&(u as i64 + 1)].k, want, "user {u}");
        assert!(acked[u].load(Ordering::Relaxed) > 0, "user {u} starved");
    }
    assert_eq!(status(&e, "Com_commit") - commits0, total);
    assert_eq!(status(&e, "Innodb_active_transactions"), 0);
    assert_eq!(status(&e, "Innodb_threads_inside"), 0);
    assert_eq!(e.setting_changes().len(), n_set + 2);
    e.shutdown().unwrap();
}

#[test]
fn global_status_counts_commits_rollbacks_and_redo() {
    let e = engine();
    e.prepare_sbtest(1, 10).unwrap();
    let table = e.table_id("sbtest1").unwrap();
    let c0 = status(&e, "Com_commit");
    let f0 = status(&e, "Innodb_os_log_fsyncs");
    for _ in 0..5 {
        let mut t = e.begin();
        t.update_k(table, 1, 1).unwrap();
        e.commit(t).unwrap();
    }
    let mut t = e.begin();
    t.update_k(table, 2, 1).unwrap();
    assert_eq!(status(&e, "Innodb_active_transactions"), 1);
    e.rollback(t);
    assert_eq!(status(&e, "Com_commit") - c0, 5);
    assert!(status(&e, "Com_rollback") >= 1);
    assert!(status(&e, "Innodb_os_log_fsyncs") > f0);
    assert!(status(&e, "Innodb_os_log_written") > 0);
    assert_eq!(status(&e, "Innodb_active_transactions"), 0);
    assert!(status(&e, "Innodb_trx_sys_registered") >= 6);
    let names: Vec<_> = e.global_status().into_iter().map(|(n, _)| n).collect();
    for n in [
        "Innodb_row_lock_waits",
        "Innodb_concurrency_waits",
        "Innodb_trx_throttle_waits",
        "Innodb_trx_throttle_timeouts",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} missing");
    }
    e.shutdown().unwrap();
}

#[test]
fn typed_setters_go_through_the_registry_and_are_recorded() {
    let e = engine();
    e.set_redo_mode(RedoMode::Off).unwrap();
    e.set_flush_at_commit(2).unwrap();
    e.set_log_spin_cpu_pct_hwm(70).unwrap();
    e.set_log_wait_for_flush_spin_hwm(900);
    let err = e.set_flush_at_commit(3).unwrap_err();
    assert!(err.to_string().contains("allowed: 0..=2"), "{err}");
    let err = e.set_log_spin_cpu_pct_hwm(101).unwrap_err();
    assert!(err.to_string().contains("0..=100"), "{err}");
    let got: Vec<_> = e
        .setting_changes()
        .into_iter()
        .map(|c| (c.name, c.old, c.new))
        .collect();
    let want: Vec<(String, String, String)> = [
        ("innodb_log_writer_threads", "ON", "OFF"),
        ("innodb_flush_log_at_trx_commit", "1", "2"),
        ("innodb_log_spin_cpu_pct_hwm", "50", "70"),
        ("innodb_log_wait_for_flush_spin_hwm", "400", "900"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(got, want);
    assert_eq!(e.redo().mode(), RedoMode::Off);
    assert_eq!(e.redo().flush_at_commit(), 2);
    e.shutdown().unwrap();
    let err = e.set_redo_mode(RedoMode::On).unwrap_err();
    assert!(err.to_string().contains("shut down"), "{err}");
}
