//! A prepared transaction waiting in the binlog group commit holds no
//! concurrency-gate slot: with innodb_thread_concurrency=1 the group commit
//! still gathers many transactions per group.

use redoctor_engine::RedoMode;
use redoctor_engine::Row;
use redoctor_engine::{Engine, EngineOptions};

#[test]
fn group_commit_groups_are_not_capped_by_the_gate() {
    // A real file system: fdatasync takes long enough for queues to form.
    let dir = tempfile::tempdir().unwrap();
    let mut o = EngineOptions::new(dir.path());
    o.redo.mode = RedoMode::Off;
    o.settings = vec![
        ("log_bin".into(), "ON".into()),
        ("innodb_thread_concurrency".into(), "1".into()),
        ("innodb_admission_policy".into(), "fifo".into()),
    ];
    let e = Engine::open(o).unwrap();
    let t = e.create_table("t").unwrap();
    let users = 16;
    let per_user = 100;
    std::thread::scope(|s| {
        for u in 0..users {
            let e = &e;
            s.spawn(move || {
                for i in 0..per_user {
                    let mut trx = e.begin();
                    let row = Row {
                        k: u,
                        c: "c".into(),
                        pad: "p".into(),
                    };
                    trx.insert(t, (u as i64) * 1_000_000 + i, row).unwrap();
                    e.commit(trx).unwrap();
                }
            });
        }
    });
    let st = e.status().counters;
    assert_eq!(st.binlog_events, (users as u64) * per_user as u64);
    let mean_group = st.binlog_group_size_sum as f64 / st.binlog_groups as f64;
    assert!(
        mean_group > 1.5,
        "mean group {mean_group:.2} ({} groups): the gate capped the group commit",
        st.binlog_groups
    );
    assert_eq!(e.concurrency_gate().stats().inside, 0);
    e.shutdown().unwrap();
}
