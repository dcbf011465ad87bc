//! DROP TABLE is crash-safe: after a power cut at any point, recovery gives
//! a state where each acknowledged CREATE/DROP/commit is present, dropped
//! tables are gone, re-created tables get fresh ids, and late commits of
//! transactions that wrote to a table before it was dropped never leak
//! into a later table of the same name.

mod common;

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::Engine;
use redoctor_engine::RedoMode;
use redoctor_engine::Row;

fn row(k: i32) -> Row {
    Row {
        k,
        c: format!("c{k}"),
        pad: "p".into(),
    }
}

#[test]
fn drop_and_recreate_survive_power_cuts() {
    for seed in 0..12u64 {
        scenario(seed, false);
    }
}

/// The same with tables on pages: a dropped table's tablespaces (rows and
/// index `k_1`) are removed once the drop is durable and no transaction
/// uses the table, and none is left after a power cut and recovery.
#[test]
fn dropped_tables_on_pages_leave_no_tablespace() {
    for seed in 0..12u64 {
        scenario(100 + seed, true);
    }
}

fn opts(v: &Arc<SimVfs>, paged: bool) -> redoctor_engine::EngineOptions {
    let mut o = common::sim_opts(v.clone(), RedoMode::Off, 1, 256 << 10);
    if paged {
        o.settings
            .push(("innodb_buffer_pool_size".into(), (32 * 4096).to_string()));
        o.settings.push(("innodb_page_size".into(), "4096".into()));
    }
    o
}

/// The tablespace files in `vfs` (`space-NNNNN.ibd`, `space-NNNNN.k_1.ibt`).
fn spaces(vfs: &SimVfs) -> Vec<String> {
    use redoctor_engine::vfs::Vfs;
    let mut v: Vec<String> = vfs
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("space-"))
        .collect();
    v.sort();
    v
}

fn files_of(id: u32) -> Vec<String> {
    vec![
        format!("space-{id:05}.ibd"),
        format!("space-{id:05}.k_1.ibt"),
    ]
}

fn scenario(seed: u64, paged: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let vfs = Arc::new(SimVfs::new());
    let e = Engine::open(opts(&vfs, paged)).unwrap();
    // Generation 1 of table "t", with a committed row.
    let t1 = e.create_table("t").unwrap();
    let mut trx = e.begin();
    trx.insert(t1, 1, row(1)).unwrap();
    e.commit(trx).unwrap();
    // A transaction writes to generation 1 and commits only after the drop.
    let mut late = e.begin();
    late.insert(t1, 2, row(2)).unwrap();
    if rng.gen_bool(0.5) {
        e.checkpoint().unwrap();
    }
    e.drop_table("t").unwrap();
    assert!(e.table_id("t").is_none());
    let t2 = e.create_table("t").unwrap();
    assert_ne!(t1, t2, "a dropped table's id was reused");
    if paged {
        // The late transaction still uses generation 1: its files stay.
        let mut want = files_of(t1);
        want.extend(files_of(t2));
        assert_eq!(spaces(&vfs), want, "seed {seed}");
    }
    e.commit(late).unwrap();
    if paged {
        assert_eq!(
            spaces(&vfs),
            files_of(t2),
            "seed {seed}: t1's files outlived the last transaction that used it"
        );
    }
    let mut trx = e.begin();
    trx.insert(t2, 10, row(10)).unwrap();
    e.commit(trx).unwrap();
    if rng.gen_bool(0.5) {
        e.checkpoint().unwrap();
    }
    // Drop a second table, never re-created.
    let u = e.create_table("u").unwrap();
    let mut trx = e.begin();
    trx.insert(u, 5, row(5)).unwrap();
    e.commit(trx).unwrap();
    e.drop_table("u").unwrap();
    if paged {
        assert_eq!(
            spaces(&vfs),
            files_of(t2),
            "seed {seed}: u's files outlived its drop"
        );
    }
    let before = e.dump();
    assert_eq!(before.len(), 1);
    assert_eq!(before["t"].keys().copied().collect::<Vec<_>>(), vec![10]);

    let crashed = Arc::new(vfs.crash(&mut rng));
    drop(e);
    let e = Engine::open(opts(&crashed, paged)).unwrap();
    assert_eq!(e.dump(), before, "seed {seed}");
    assert_eq!(e.table_names(), vec!["t".to_string()]);
    e.check_tables().unwrap();
    if paged {
        assert_eq!(
            spaces(&crashed),
            files_of(t2),
            "seed {seed}: a dropped table's files after recovery"
        );
    }
    // Ids stay taken after recovery too.
    let v = e.create_table("v").unwrap();
    assert!(v > u, "seed {seed}: id {v} reused after recovery");
    e.shutdown().unwrap();
}
