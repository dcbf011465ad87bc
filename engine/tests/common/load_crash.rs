//! Users commit flat out while a driver changes the redo log's settings
//! live, with a power-cut image of the disk (unsynced sectors dropped at
//! random) taken after each change; then each image is recovered. Every
//! acknowledged commit must be present and none applied twice: each user
//! increments its own counter row (k) and inserts one row per commit, so a
//! lost commit shows as a missing row or a short counter, and a double one
//! as a counter ahead of the inserted rows.
#![allow(dead_code)] // not every test crate that includes `common` uses it

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::{Engine, EngineOptions, Row};

const BASE: i64 = 1_000_000;

/// Runs `users` committers on an engine made by `opts`, calls `change(engine,
/// i)` for i in 0..changes every `every`, and takes a power-cut image of the
/// disk after each change (the engine runs on; each image is what a cut at
/// that moment would leave). Then recovers every image and checks every
/// commit acknowledged before it was taken. Returns how many commits were
/// acknowledged by the last image.
pub fn commit_through_changes_then_crash(
    opts: impl Fn(Arc<SimVfs>) -> EngineOptions,
    users: usize,
    changes: usize,
    every: Duration,
    change: impl Fn(&Engine, usize),
) -> u64 {
    let vfs = Arc::new(SimVfs::new());
    let engine = Engine::open(opts(vfs.clone())).unwrap();
    engine.prepare_sbtest(1, users as u64).unwrap();
    let table = engine.table_id("sbtest1").unwrap();
    // Counter rows start at k = 0.
    for u in 1..=users as i64 {
        let mut t = engine.begin();
        let k = t.get(table, u).unwrap().unwrap().k;
        t.update_k(table, u, -k).unwrap();
        engine.commit(t).unwrap();
    }
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..users).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let mut hs = vec![];
    for u in 0..users {
        let (engine, acked, stop) = (engine.clone(), acked.clone(), stop.clone());
        hs.push(std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Acquire) {
                let mut t = engine.begin();
                assert!(t.update_k(table, u as i64 + 1, 1).unwrap());
                let id = BASE + (u as i64) * BASE + n as i64;
                let row = Row {
                    k: n as i32,
                    c: "x".into(),
                    pad: "y".into(),
                };
                t.insert(table, id, row).unwrap();
                if engine.commit(t).is_err() {
                    return;
                }
                n += 1;
                acked[u].store(n, Ordering::Release);
            }
        }));
    }
    let mut images = Vec::with_capacity(changes);
    for i in 0..changes {
        std::thread::sleep(every);
        change(&engine, i);
        let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
        let rng = &mut rand::rngs::StdRng::seed_from_u64(9 + i as u64);
        images.push((before, Arc::new(vfs.crash(rng))));
    }
    stop.store(true, Ordering::Release);
    for h in hs {
        h.join().unwrap();
    }
    engine.shutdown().unwrap();
    drop(engine);
    let total: u64 = images.last().map_or(0, |(b, _)| b.iter().sum());
    assert!(
        total > 1000,
        "too little load to be meaningful: {total} commits"
    );
    for (i, (before, image)) in images.into_iter().enumerate() {
        check_image(&opts, image, &before, i);
    }
    total
}

/// Recovers `image` and checks every commit `before` counts.
fn check_image(
    opts: &impl Fn(Arc<SimVfs>) -> EngineOptions,
    image: Arc<SimVfs>,
    before: &[u64],
    i: usize,
) {
    let engine = Engine::open(opts(image)).unwrap();
    let dump = engine.dump();
    let rows = &dump["sbtest1"];
    for (u, &acked) in before.iter().enumerate() {
        let k = rows[&(u as i64 + 1)].k as u64;
        let inserted = rows
            .range(BASE + u as i64 * BASE..BASE + (u as i64 + 1) * BASE)
            .count() as u64;
        assert!(
            k >= acked,
            "cut {i}, user {u}: counter {k} < acknowledged {acked}"
        );
        assert_eq!(
            k, inserted,
            "cut {i}, user {u}: counter and inserted rows disagree (a commit applied twice or half)"
        );
        for n in 0..k {
            assert!(
                rows.contains_key(&(BASE + u as i64 * BASE + n as i64)),
                "cut {i}, user {u}: commit {n} missing"
            );
        }
    }
    engine.shutdown().unwrap();
}
