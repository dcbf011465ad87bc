//! Live mode switching under full load: 64 users commit while the redo mode
//! is switched 100 times; then a power cut and recovery. Every acknowledged
//! commit must be present and none applied twice: each user increments its
//! own counter row (k) and inserts one row per commit, so a lost commit shows
//! as a missing row or a short counter, and a double one as a counter ahead
//! of the inserted rows.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use redoctor_engine::vfs::{SimVfs, Vfs};
use redoctor_engine::Row;
use redoctor_engine::{Engine, EngineOptions};
use redoctor_engine::{RedoMode, RedoOptions};

const USERS: usize = 64;
const SWITCHES: usize = 100;
const BASE: i64 = 1_000_000;

fn opts(vfs: Arc<SimVfs>) -> EngineOptions {
    let mut o = EngineOptions::new("unused");
    o.vfs = Some(vfs as Arc<dyn Vfs>);
    o.redo = RedoOptions {
        mode: RedoMode::On,
        flush_at_commit: 1,
        log_buffer_size: 64 << 10,
        log_file_size: 1 << 20,
        link_slots: 8192,
        wait_slots: 256,
        ..RedoOptions::default()
    };
    o
}

#[test]
fn switch_100_times_under_64_users_then_crash() {
    let vfs = Arc::new(SimVfs::new());
    let engine = Engine::open(opts(vfs.clone())).unwrap();
    engine.prepare_sbtest(1, USERS as u64).unwrap();
    let table = engine.table_id("sbtest1").unwrap();
    // Counter rows start at k = 0.
    for u in 1..=USERS as i64 {
        let mut t = engine.begin();
        let k = t.get(table, u).unwrap().unwrap().k;
        t.update_k(table, u, -k).unwrap();
        engine.commit(t).unwrap();
    }
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..USERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let mut hs = vec![];
    for u in 0..USERS {
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
                    return; // the engine was dropped under us after the crash
                }
                n += 1;
                acked[u].store(n, Ordering::Release);
            }
        }));
    }
    let mut mode = RedoMode::On;
    for _ in 0..SWITCHES {
        std::thread::sleep(Duration::from_millis(15));
        mode = if mode == RedoMode::On {
            RedoMode::Off
        } else {
            RedoMode::On
        };
        engine.set_redo_mode(mode).unwrap();
    }
    assert_eq!(engine.status().counters.redo_mode_switches, SWITCHES as u64);
    let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
    let crashed = Arc::new(vfs.crash(&mut rand::rngs::StdRng::seed_from_u64(9)));
    stop.store(true, Ordering::Release);
    for h in hs {
        h.join().unwrap();
    }
    let total: u64 = before.iter().sum();
    assert!(
        total > 1000,
        "too little load to be meaningful: {total} commits"
    );
    drop(engine);

    let engine = Engine::open(opts(crashed)).unwrap();
    let dump = engine.dump();
    let rows = &dump["sbtest1"];
    for u in 0..USERS {
        let k = rows[&(u as i64 + 1)].k as u64;
        let inserted = rows
            .range(BASE + u as i64 * BASE..BASE + (u as i64 + 1) * BASE)
            .count() as u64;
        assert!(
            k >= before[u],
            "user {u}: counter {k} < acknowledged {}",
            before[u]
        );
        assert_eq!(
            k, inserted,
            "user {u}: counter and inserted rows disagree (a commit applied twice or half)"
        );
        for n in 0..k {
            assert!(
                rows.contains_key(&(BASE + u as i64 * BASE + n as i64)),
                "user {u}: commit {n} missing"
            );
        }
    }
    println!("{total} commits acknowledged across {SWITCHES} switches; all recovered");
    engine.shutdown().unwrap();
}
