//! Tables on pages through the engine's public API: the startup settings,
//! SHOW GLOBAL STATUS's buffer pool and doublewrite rows against what the
//! load did, a clean restart, and the refusals that keep a data directory
//! from being read the wrong way.

mod common;

use std::sync::Arc;

use common::status;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::{Engine, EngineOptions, RedoMode};

/// 4 KiB pages, a pool of `frames` frames, doublewrite `design`.
fn opts(vfs: &Arc<SimVfs>, frames: u64, design: &str) -> EngineOptions {
    let mut o = common::sim_opts(vfs.clone(), RedoMode::On, 1, 4 << 20);
    for (k, v) in [
        ("innodb_buffer_pool_size", (frames * 4096).to_string()),
        ("innodb_page_size", "4096".into()),
        ("innodb_lru_scan_depth", "100".into()),
        ("innodb_doublewrite_design", design.into()),
    ] {
        o.settings.push((k.into(), v));
    }
    o
}

#[test]
fn an_io_bound_load_is_counted_as_mysql_counts_it_and_survives_a_restart() {
    for design in ["legacy", "files"] {
        let vfs = Arc::new(SimVfs::new());
        let e = Engine::open(opts(&vfs, 32, design)).unwrap();
        assert_eq!(
            e.variable("innodb_buffer_pool_size").unwrap().value,
            "131072"
        );
        assert_eq!(
            e.variable("innodb_doublewrite_design").unwrap().value,
            design
        );
        // 2 x 3,000 rows: ~290 pages of 21 rows for a pool of 32.
        e.prepare_sbtest(2, 3000).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..1500 {
            let mut trx = e.begin();
            let t = e
                .table_id(&format!("sbtest{}", rng.gen_range(1..=2)))
                .unwrap();
            let id = rng.gen_range(1..=3000);
            assert!(trx.update_k(t, id, 1).unwrap());
            let _ = trx.get(t, rng.gen_range(1..=3000)).unwrap();
            e.commit(trx).unwrap();
        }
        let s = |n: &str| status(&e, n);
        assert!(
            s("Innodb_buffer_pool_reads") > 500,
            "{design}: the pool held the data"
        );
        assert!(s("Innodb_buffer_pool_read_requests") >= s("Innodb_buffer_pool_reads") + 3000);
        assert_eq!(s("Innodb_buffer_pool_pages_total"), 32);
        let single = s("Innodb_buffer_pool_pages_flushed_single_page");
        let by_cleaners = s("Innodb_buffer_pool_pages_flushed_by_cleaners");
        assert!(s("Innodb_buffer_pool_wait_free") >= single);
        assert_eq!(
            s("Innodb_dblwr_pages_written"),
            single + by_cleaners,
            "{design}: every page written went through the doublewrite buffer"
        );
        assert_eq!(s("Innodb_dblwr_single_page_flushes"), single);
        assert!(
            s("Innodb_dblwr_writes") > 0
                && s("Innodb_dblwr_writes") <= s("Innodb_dblwr_pages_written")
        );
        let before = e.dump();
        e.shutdown().unwrap();
        drop(e);

        // A clean restart: the rows come back from the pages, nothing to replay.
        let e = Engine::open(opts(&vfs, 32, design)).unwrap();
        assert_eq!(e.recovery_report().records_replayed, 0);
        assert_eq!(e.dump(), before);
        assert_eq!(e.pages_restored().map(|(_, restored)| restored), Some(0));
    }
}

#[test]
fn a_directory_is_read_only_the_way_it_was_made() {
    // Tables on pages, then opened without a pool: refused, named.
    let vfs = Arc::new(SimVfs::new());
    let e = Engine::open(opts(&vfs, 16, "files")).unwrap();
    e.prepare_sbtest(1, 100).unwrap();
    e.shutdown().unwrap();
    drop(e);
    let plain = common::sim_opts(vfs.clone(), RedoMode::On, 1, 4 << 20);
    let err = Engine::open(plain)
        .err()
        .expect("opened without its pool")
        .to_string();
    assert!(
        err.contains("keeps its tables on pages") && err.contains("innodb_buffer_pool_size"),
        "{err}"
    );

    // An in-memory directory, then opened with a pool: refused, untouched.
    let vfs = Arc::new(SimVfs::new());
    let e = Engine::open(common::sim_opts(vfs.clone(), RedoMode::On, 1, 4 << 20)).unwrap();
    e.prepare_sbtest(1, 100).unwrap();
    e.shutdown().unwrap();
    drop(e);
    use redoctor_engine::vfs::Vfs;
    let files = vfs.list().unwrap();
    let err = Engine::open(opts(&vfs, 16, "files"))
        .err()
        .expect("opened with a pool")
        .to_string();
    assert!(
        err.contains("in memory") && err.contains("new data directory"),
        "{err}"
    );
    assert_eq!(vfs.list().unwrap(), files, "the refused open wrote nothing");

    // Settings that cannot make a pool.
    for (k, v, says) in [
        ("innodb_buffer_pool_size", "32768", "at least 16 pages"),
        ("innodb_page_size", "5000", "power of two"),
        ("innodb_doublewrite_files", "3", "must be even"),
    ] {
        let mut o = opts(&Arc::new(SimVfs::new()), 16, "files");
        o.settings.push((k.into(), v.into()));
        let err = Engine::open(o)
            .err()
            .expect("bad settings accepted")
            .to_string();
        assert!(err.contains(says), "{k}={v}: {err}");
    }
}

/// `innodb_doublewrite_dir`: the copies go to that directory (both
/// designs), nothing of the doublewrite buffer is left in the data
/// directory, a restart reads them there, SHOW VARIABLES names it; a
/// relative path or a directory that cannot be made is refused by name.
#[test]
fn the_doublewrite_buffer_goes_where_innodb_doublewrite_dir_says() {
    for (design, file) in [("legacy", "ibdata-dblwr.legacy"), ("files", "dblwr-0.bin")] {
        let tmp = tempfile::tempdir().unwrap();
        let (data, dw) = (tmp.path().join("data"), tmp.path().join("dw"));
        let opts = || {
            let mut o = EngineOptions::new(data.clone());
            for (k, v) in [
                ("innodb_buffer_pool_size", (32 * 4096).to_string()),
                ("innodb_page_size", "4096".into()),
                ("innodb_lru_scan_depth", "100".into()),
                ("innodb_doublewrite_design", design.into()),
                ("innodb_doublewrite_dir", dw.display().to_string()),
            ] {
                o.settings.push((k.into(), v));
            }
            o
        };
        let e = Engine::open(opts()).unwrap();
        assert_eq!(
            e.variable("innodb_doublewrite_dir").unwrap().value,
            dw.display().to_string()
        );
        e.prepare_sbtest(2, 2000).unwrap();
        let t = e.table_id("sbtest1").unwrap();
        for id in 1..=500 {
            let mut trx = e.begin();
            assert!(trx.update_k(t, id, 1).unwrap());
            e.commit(trx).unwrap();
        }
        assert!(status(&e, "Innodb_dblwr_pages_written") > 0);
        let before = e.dump();
        e.shutdown().unwrap();
        drop(e);
        assert!(
            dw.join(file).is_file(),
            "{design}: no {file} in the doublewrite dir"
        );
        let in_data: Vec<String> = std::fs::read_dir(&data)
            .unwrap()
            .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("dblwr"))
            .collect();
        assert!(
            in_data.is_empty(),
            "{design}: {in_data:?} in the data directory"
        );
        let e = Engine::open(opts()).unwrap();
        assert_eq!(e.dump(), before);
        e.shutdown().unwrap();
    }
    for (dir, says) in [
        ("relative/dir", "innodb_doublewrite_dir"),
        (
            "/proc/no-such-place/dw",
            "innodb_doublewrite_dir=/proc/no-such-place/dw",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::new(tmp.path().join("data"));
        o.settings
            .push(("innodb_buffer_pool_size".into(), (32 * 4096).to_string()));
        o.settings.push(("innodb_page_size".into(), "4096".into()));
        o.settings
            .push(("innodb_lru_scan_depth".into(), "100".into()));
        o.settings
            .push(("innodb_doublewrite_dir".into(), dir.into()));
        let err = Engine::open(o).err().expect("opened").to_string();
        assert!(err.contains(says), "{dir}: {err}");
    }
}

/// `redoctor_device_sync_latency_us` models a device with that latency
/// per sync and syncs in parallel (`device_model`): each commit waits its
/// redo sync's latency on top of the real sync, SHOW VARIABLES says it, a
/// live SET and an out-of-range value are refused by name.
#[test]
fn a_modelled_device_makes_every_sync_wait_its_latency() {
    use std::time::{Duration, Instant};
    let vfs = Arc::new(SimVfs::new());
    let tmp = tempfile::tempdir().unwrap();
    let mut o = opts(&vfs, 32, "files");
    let dw = tmp.path().join("dw").display().to_string();
    o.settings.push(("innodb_doublewrite_dir".into(), dw));
    o.settings
        .push(("redoctor_device_sync_latency_us".into(), "20000".into()));
    let e = Engine::open(o).unwrap();
    assert_eq!(
        e.variable("redoctor_device_sync_latency_us").unwrap().value,
        "20000"
    );
    e.prepare_sbtest(1, 2000).unwrap();
    let t = e.table_id("sbtest1").unwrap();
    let syncs = vfs.sync_count();
    let start = Instant::now();
    for id in 1..=5 {
        let mut trx = e.begin();
        assert!(trx.update_k(t, id, 1).unwrap());
        e.commit(trx).unwrap();
    }
    let took = start.elapsed();
    assert!(vfs.sync_count() - syncs >= 5, "the real syncs happened");
    assert!(
        took >= Duration::from_millis(100),
        "5 commits, one after another, took {took:?}"
    );
    let err = e
        .set_global("redoctor_device_sync_latency_us", "0")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("redoctor_device_sync_latency_us") && err.contains("startup"),
        "{err}"
    );
    e.shutdown().unwrap();
    drop(e);
    let mut o = opts(&Arc::new(SimVfs::new()), 32, "files");
    o.settings
        .push(("redoctor_device_sync_latency_us".into(), "2000000".into()));
    let err = Engine::open(o).err().expect("opened").to_string();
    assert!(err.contains("redoctor_device_sync_latency_us"), "{err}");
}

/// `redoctor_device_sync_serial` (startup only, default OFF) reaches the
/// modelled device: SHOW VARIABLES reads it from the device the engine
/// opened its directories with (whose one queue `device_model`'s tests
/// time), and a live SET is refused by name.
#[test]
fn the_serial_modelled_device_is_a_startup_setting() {
    for serial in ["ON", "OFF"] {
        let mut o = opts(&Arc::new(SimVfs::new()), 32, "files");
        o.settings
            .push(("redoctor_device_sync_latency_us".into(), "1000".into()));
        if serial == "ON" {
            o.settings
                .push(("redoctor_device_sync_serial".into(), serial.into()));
        }
        let e = Engine::open(o).unwrap();
        assert_eq!(
            e.variable("redoctor_device_sync_serial").unwrap().value,
            serial
        );
        let err = e
            .set_global("redoctor_device_sync_serial", "ON")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("redoctor_device_sync_serial") && err.contains("startup"),
            "{err}"
        );
        e.shutdown().unwrap();
    }
}

/// Index `k_1` on pages: lookups by `k` answer from its B+tree (scratch
/// files `space-NNNNN.k_1.ibt`), and every start rebuilds it from the
/// rows: a scratch file overwritten with garbage while the engine is
/// down is never read, even with doublewrite off (which refuses a torn
/// data page).
#[test]
fn the_index_on_pages_is_rebuilt_at_start_and_its_old_file_never_read() {
    use redoctor_engine::vfs::Vfs;
    let vfs = Arc::new(SimVfs::new());
    let mut o = opts(&vfs, 24, "files");
    o.settings.push(("innodb_doublewrite".into(), "OFF".into()));
    let e = Engine::open(o.clone()).unwrap();
    e.prepare_sbtest(2, 3000).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..800 {
        let mut trx = e.begin();
        let t = e.table_id("sbtest1").unwrap();
        assert!(trx
            .update_k(t, rng.gen_range(1..=3000), rng.gen_range(-3..=3))
            .unwrap());
        e.commit(trx).unwrap();
    }
    let t = e.table_id("sbtest1").unwrap();
    // What a lookup by k must return: the rows whose k it is.
    let by_k = |e: &Engine, k: i32| {
        let mut trx = e.begin();
        let got = trx.get_by_k(t, k).unwrap();
        e.commit(trx).unwrap();
        got
    };
    let rows = e.dump()["sbtest1"].clone();
    let ks: Vec<i32> = rows.values().take(40).map(|r| r.k).collect();
    let want = |k: i32| -> Vec<(i64, _)> {
        rows.iter()
            .filter(|(_, r)| r.k == k)
            .map(|(id, r)| (*id, r.clone()))
            .collect()
    };
    for &k in &ks {
        assert_eq!(by_k(&e, k), want(k), "k = {k}");
    }
    e.check_tables().unwrap();
    let scratch: Vec<String> = vfs
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".k_1.ibt"))
        .collect();
    assert_eq!(scratch.len(), 2, "one index file a table: {scratch:?}");
    e.shutdown().unwrap();
    drop(e);

    // Garbage where the index was: the start rebuilds it from the rows.
    for name in &scratch {
        let f = vfs.open(name, false).unwrap();
        f.write_at(&vec![0xA5; 3 * 4096 + 100], 0).unwrap();
        f.sync_data().unwrap();
    }
    let e = Engine::open(o).unwrap();
    e.check_tables().unwrap();
    for &k in &ks {
        assert_eq!(by_k(&e, k), want(k), "k = {k} after the rebuild");
    }
}
