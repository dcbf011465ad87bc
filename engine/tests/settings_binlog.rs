//! The binlog's settings in the registry: `log_bin` is read-only at run time
//! and set at startup; `sync_binlog` and `binlog_group_commit_sync_delay`
//! change live, are validated, recorded, and reach the group commit; the
//! binlog's counters appear in SHOW GLOBAL STATUS under `Binlog_*` names.

mod common;

use std::sync::Arc;

use common::status;
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::RedoMode;
use redoctor_engine::{Engine, EngineError, SettingsError};

fn open(log_bin: &str) -> Arc<Engine> {
    let mut o = common::sim_opts(Arc::new(SimVfs::new()), RedoMode::Off, 1, 1 << 20);
    o.settings = vec![
        ("log_bin".into(), log_bin.into()),
        ("sync_binlog".into(), "1".into()),
    ];
    Engine::open(o).unwrap()
}

#[test]
fn log_bin_is_startup_only() {
    let e = open("ON");
    assert!(e.log_bin());
    let v = e.variable("log_bin").unwrap();
    assert_eq!((v.value.as_str(), v.dynamic), ("ON", false));
    let err = e.set_global("log_bin", "OFF").unwrap_err();
    assert!(
        matches!(err, SettingsError::ReadOnly { name: "log_bin" }),
        "{err}"
    );
    assert!(e.log_bin(), "a refused SET changes nothing");
    assert!(e.setting_changes().is_empty());
    e.shutdown().unwrap();

    let e = open("OFF");
    assert!(!e.log_bin());
    assert_eq!(e.variable("log_bin").unwrap().value, "OFF");
    e.shutdown().unwrap();
}

#[test]
fn sync_settings_change_live_and_are_validated() {
    let e = open("ON");
    e.set_global("sync_binlog", "4").unwrap();
    assert_eq!(e.binlog_settings().sync_binlog(), 4);
    e.set_global("binlog_group_commit_sync_delay", "250")
        .unwrap();
    assert_eq!(e.binlog_settings().sync_delay_us(), 250);
    let err = e
        .set_global("binlog_group_commit_sync_delay", "1000001")
        .unwrap_err();
    assert!(err.to_string().contains("0..=1000000"), "{err}");
    assert_eq!(
        e.binlog_settings().sync_delay_us(),
        250,
        "refused: unchanged"
    );
    let err = e.set_global("sync_binlog", "-1").unwrap_err();
    assert!(matches!(err, SettingsError::InvalidValue { .. }), "{err}");
    let changes = e.setting_changes();
    let names: Vec<_> = changes
        .iter()
        .map(|c| (c.name.as_str(), c.old.as_str(), c.new.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("sync_binlog", "1", "4"),
            ("binlog_group_commit_sync_delay", "0", "250")
        ]
    );
    e.set_global("binlog_group_commit_sync_delay", "0").unwrap();
    e.shutdown().unwrap();
}

#[test]
fn startup_refuses_bad_binlog_values_before_creating_anything() {
    let mut o = common::sim_opts(Arc::new(SimVfs::new()), RedoMode::Off, 1, 1 << 20);
    o.settings = vec![("binlog_group_commit_sync_delay".into(), "2000000".into())];
    match Engine::open(o) {
        Err(EngineError::Settings(SettingsError::InvalidValue { name, .. })) => {
            assert_eq!(name, "binlog_group_commit_sync_delay")
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("accepted an out-of-range delay"),
    }
}

#[test]
fn binlog_counters_show_under_binlog_names() {
    let e = open("ON");
    let t = e.create_table("t1").unwrap();
    for i in 0..20 {
        let mut trx = e.begin();
        trx.insert(
            t,
            i,
            redoctor_engine::Row {
                k: 1,
                c: "c".into(),
                pad: "p".into(),
            },
        )
        .unwrap();
        e.commit(trx).unwrap();
    }
    assert_eq!(status(&e, "Binlog_commits"), 20);
    assert!(status(&e, "Binlog_group_commits") >= 1);
    assert!(status(&e, "Binlog_group_commits") <= 20);
    assert!(status(&e, "Binlog_bytes_written") > 0);
    assert!(status(&e, "Binlog_fsyncs") >= 1, "sync_binlog=1 syncs");
    assert_eq!(status(&e, "Com_commit"), 20);
    e.shutdown().unwrap();
}
