//! Checkpoints as a chain of files: deltas that hold only what changed, a
//! new base once they add up to the base's size, and recovery from the
//! chain (`crate::checkpoint`, `crate::data::delta`).

use std::sync::Arc;

use rand::SeedableRng;

use super::common::sim_opts;
use crate::checkpoint::{delta_file_name, file_name};
use crate::redo::RedoMode;
use crate::vfs::{SimVfs, Vfs};
use crate::Engine;

fn files(vfs: &SimVfs) -> (Vec<String>, Vec<String>) {
    let mut names = vfs.list().unwrap();
    names.sort();
    let bases = names
        .iter()
        .filter(|n| n.ends_with(".img"))
        .cloned()
        .collect();
    let deltas = names
        .iter()
        .filter(|n| n.ends_with(".delta"))
        .cloned()
        .collect();
    (bases, deltas)
}

/// The engine on what a power cut leaves of `vfs` (what was synced).
fn reopen_after_crash(vfs: &SimVfs, mut opts: crate::EngineOptions, seed: u64) -> Arc<Engine> {
    let crashed = Arc::new(vfs.crash(&mut rand::rngs::StdRng::seed_from_u64(seed)));
    opts.vfs = Some(crashed as Arc<dyn Vfs>);
    Engine::open(opts).unwrap()
}

fn size(vfs: &SimVfs, name: &str) -> u64 {
    vfs.open(name, false).unwrap().len().unwrap()
}

#[test]
fn deltas_follow_the_changes_and_a_base_follows_the_deltas() {
    let vfs = Arc::new(SimVfs::new());
    // A log large enough that the background thread takes no checkpoint.
    let opts = sim_opts(vfs.clone(), RedoMode::On, 1, 16 << 20);
    let e = Engine::open(opts.clone()).unwrap();
    // The bulk load goes into a delta on the empty base of the new
    // directory; the next checkpoint (deltas now larger than the base)
    // writes a new base.
    e.prepare_sbtest(1, 2000).unwrap();
    let lsn = e.checkpoint().unwrap();
    let (bases, deltas) = files(&vfs);
    assert!(deltas.is_empty(), "{deltas:?}");
    let base = file_name(lsn);
    assert_eq!(bases.last(), Some(&base));
    let t = e.table_id("sbtest1").unwrap();

    // A few rows changed: a delta of a few rows.
    let mut trx = e.begin();
    for id in 1..=5 {
        trx.update_c(t, id, format!("changed-{id}")).unwrap();
    }
    e.commit(trx).unwrap();
    e.checkpoint().unwrap();
    let (_, deltas) = files(&vfs);
    assert_eq!(deltas, [delta_file_name(lsn, 1)]);
    let small = size(&vfs, &deltas[0]);
    let base_bytes = size(&vfs, &base);
    assert!(
        small * 100 < base_bytes,
        "delta {small} B against base {base_bytes} B"
    );

    // Every row changed, checkpoint after checkpoint: deltas as large as
    // the table, until they add up to the base's size; then a new base.
    let mut rounds = 0;
    loop {
        for ids in (1..=2000).collect::<Vec<i64>>().chunks(5) {
            let mut trx = e.begin();
            for &id in ids {
                trx.update_k(t, id, 1).unwrap();
            }
            e.commit(trx).unwrap();
        }
        e.checkpoint().unwrap();
        rounds += 1;
        let (bases, deltas) = files(&vfs);
        if bases.last() != Some(&base) {
            assert!(
                deltas.is_empty(),
                "a new base removes the deltas: {deltas:?}"
            );
            break;
        }
        assert_eq!(deltas.len(), rounds + 1);
        assert!(rounds < 5, "no new base after {rounds} full-table deltas");
    }
    assert!(rounds >= 1, "a base came before any delta held the table");

    // Recovery from base + deltas, after a crash that drops nothing synced.
    let mut trx = e.begin();
    trx.delete(t, 7).unwrap();
    e.commit(trx).unwrap();
    e.checkpoint().unwrap();
    let mut trx = e.begin();
    trx.update_c(t, 8, "after the last checkpoint".into())
        .unwrap();
    e.commit(trx).unwrap();
    let want = e.dump();
    drop(e);
    let e = reopen_after_crash(&vfs, opts, 1);
    let report = e.recovery_report();
    assert!(report.checkpoint_file.ends_with(".delta"), "{report:?}");
    assert_eq!(report.commits_replayed, 1, "{report:?}");
    assert_eq!(e.dump(), want);
    e.shutdown().unwrap();
}

/// The background checkpoints write a new base aside (`log_ckpt_base`)
/// after a delta, and publish it with a delta of every change made since
/// its snapshot: the old chain's files go, and recovery after a crash gives
/// back every commit.
#[test]
fn a_base_written_in_the_background_holds_every_change_since_its_snapshot() {
    let vfs = Arc::new(SimVfs::new());
    let opts = sim_opts(vfs.clone(), RedoMode::On, 1, 16 << 20);
    let e = Engine::open(opts.clone()).unwrap();
    // Only this test's checkpoints: the background thread would publish
    // the base as soon as it is durable, in the middle of a round.
    e.stop_background();
    e.prepare_sbtest(1, 2000).unwrap();
    let first = e.checkpoint().unwrap();
    assert_eq!(files(&vfs).0.last(), Some(&file_name(first)));
    let t = e.table_id("sbtest1").unwrap();
    let mut next_id = 2001;
    let mut rounds = 0;
    let new_base = loop {
        for ids in (1..=2000).collect::<Vec<i64>>().chunks(5) {
            let mut trx = e.begin();
            for &id in ids {
                trx.update_k(t, id, 1).unwrap();
            }
            e.commit(trx).unwrap();
        }
        let mut trx = e.begin();
        trx.delete(t, 10 + rounds).unwrap();
        let row = crate::data::table::Row {
            k: 7,
            c: "c".into(),
            pad: "pad".into(),
        };
        trx.insert(t, next_id, row).unwrap();
        next_id += 1;
        e.commit(trx).unwrap();
        e.checkpoint_as(true).unwrap();
        rounds += 1;
        let (bases, _) = files(&vfs);
        if bases.last() != Some(&file_name(first)) {
            break bases.last().unwrap().clone();
        }
        assert!(rounds < 20, "no base published after {rounds} checkpoints");
    };
    let (_, deltas) = files(&vfs);
    assert_eq!(
        deltas.len(),
        1,
        "the new base's first delta only: {deltas:?}"
    );
    assert_eq!(
        super::common::status(&e, "Innodb_checkpoint_bases_background"),
        1
    );
    assert!(
        deltas[0].starts_with(new_base.trim_end_matches(".img")),
        "{deltas:?} on {new_base}"
    );
    let mut trx = e.begin();
    trx.update_c(t, 8, "after the last checkpoint".into())
        .unwrap();
    e.commit(trx).unwrap();
    let want = e.dump();
    drop(e);
    let e = reopen_after_crash(&vfs, opts, 2);
    let report = e.recovery_report();
    assert_eq!(report.checkpoint_file, deltas[0], "{report:?}");
    assert_eq!(e.dump(), want);
    e.shutdown().unwrap();
}
