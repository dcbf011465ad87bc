//! Model-based crash tests: random transactions against the engine and a
//! `BTreeMap` model, a simulated power cut that drops every unsynced byte
//! (sector by sector, at random), recovery, and a check that the recovered
//! state is exactly the state after some prefix of the commits that
//! includes every acknowledged-durable one. Both redo modes, all three
//! flush settings, a redo file small enough that it is recycled many times,
//! and two crashes per run (so a log recovered once is recovered again).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redoctor_engine::vfs::SimVfs;
use redoctor_engine::RedoMode;
use redoctor_engine::Row;
use redoctor_engine::{Engine, EngineOptions};

/// The checkpoint files of the new directory's base image.
const FIRST_BASE: &str = "checkpoint-00000000000000000000-";

/// Bounds the states kept in memory per round.
const MAX_COMMITS: usize = 4000;

type State = BTreeMap<String, BTreeMap<i64, Row>>;

mod common;

fn small_opts(vfs: Arc<SimVfs>, mode: RedoMode, fac: u8) -> EngineOptions {
    let mut o = common::sim_opts(vfs, mode, fac, 128 << 10);
    o.checkpoint_fill_pct = 25;
    o.lock_wait_timeout = Duration::from_secs(5);
    o
}

/// Tables on pages: 4 KiB pages, a pool of 16 (the smallest) for ~20
/// pages of rows, so pages are evicted, written by the cleaners and by
/// users (single-page flushes), through the doublewrite `design`.
fn paged_opts(vfs: Arc<SimVfs>, mode: RedoMode, fac: u8, design: &str) -> EngineOptions {
    let mut o = small_opts(vfs, mode, fac);
    for (k, v) in [
        ("innodb_buffer_pool_size", "65536"),
        ("innodb_page_size", "4096"),
        ("innodb_lru_scan_depth", "100"),
        ("innodb_doublewrite_design", design),
    ] {
        o.settings.push((k.into(), v.into()));
    }
    o
}

/// How a scenario runs: tables in memory or on pages (with which
/// doublewrite design), and the range of row ids its transactions touch.
#[derive(Clone, Copy)]
struct Cfg {
    pages: Option<&'static str>,
    ids: i64,
}

const IN_MEMORY: Cfg = Cfg {
    pages: None,
    ids: 80,
};

impl Cfg {
    fn opts(self, vfs: Arc<SimVfs>, mode: RedoMode, fac: u8) -> EngineOptions {
        match self.pages {
            Some(design) => paged_opts(vfs, mode, fac, design),
            None => small_opts(vfs, mode, fac),
        }
    }
}

/// One random transaction on `sbtest1`/`sbtest2`; applies it to `model` if committed.
fn random_trx(engine: &Engine, rng: &mut StdRng, model: &mut State, ids: i64) -> bool {
    let mut trx = engine.begin();
    let mut m = model.clone();
    for _ in 0..rng.gen_range(1..5) {
        let t = rng.gen_range(1..=2);
        let name = format!("sbtest{t}");
        let table = engine.table_id(&name).unwrap();
        let rows = m.get_mut(&name).unwrap();
        let id = rng.gen_range(1..ids);
        match rng.gen_range(0..4) {
            0 => {
                let row = Row {
                    k: rng.gen_range(0..1000),
                    c: format!("c{}", rng.gen::<u32>()),
                    pad: "p".into(),
                };
                let exists = rows.contains_key(&id);
                let r = trx.insert(table, id, row.clone());
                assert_eq!(r.is_err(), exists);
                if !exists {
                    rows.insert(id, row);
                }
            }
            1 => {
                let found = trx.update_k(table, id, 1).unwrap();
                assert_eq!(found, rows.contains_key(&id));
                if let Some(r) = rows.get_mut(&id) {
                    r.k += 1;
                }
            }
            2 => {
                let c = format!("u{}", rng.gen::<u32>());
                let found = trx.update_c(table, id, c.clone()).unwrap();
                if let Some(r) = rows.get_mut(&id) {
                    r.c = c;
                }
                assert_eq!(found, rows.contains_key(&id));
            }
            _ => {
                let found = trx.delete(table, id).unwrap();
                assert_eq!(found, rows.remove(&id).is_some());
            }
        }
    }
    if rng.gen_bool(0.15) {
        engine.rollback(trx);
        false
    } else {
        engine.commit(trx).unwrap();
        *model = m;
        true
    }
}

/// When a round cuts the power: once `crash_after` commits are
/// acknowledged (plus a random delay), the worker committing at most
/// `limit`.
#[derive(Clone, Copy)]
struct Cut {
    crash_after: usize,
    limit: usize,
}

/// Runs commits on a thread and cuts the power as `cut` says; returns every state
/// reached (index = number of commits), how many were acknowledged before
/// the cut, and the image the cut left.
fn run_until_crash(
    engine: Arc<Engine>,
    ids: i64,
    seed: u64,
    start: State,
    cut: Cut,
    vfs: &SimVfs,
    rng: &mut StdRng,
) -> (Vec<State>, usize, SimVfs) {
    let states = Arc::new(Mutex::new(vec![start]));
    let acked = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let Cut { crash_after, limit } = cut;
    let (s2, a2, st2, e2) = (states.clone(), acked.clone(), stop.clone(), engine.clone());
    let h = std::thread::spawn(move || {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut model = s2.lock()[0].clone();
        while !st2.load(Ordering::Acquire) {
            if a2.load(Ordering::Relaxed) >= limit {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            if random_trx(&e2, &mut rng, &mut model, ids) {
                s2.lock().push(model.clone());
                a2.fetch_add(1, Ordering::Release);
            }
        }
    });
    // Crash once `crash_after` commits are acknowledged, plus a random delay.
    let t0 = std::time::Instant::now();
    while acked.load(Ordering::Acquire) < crash_after {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "commits stalled at {}",
            acked.load(Ordering::Acquire)
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(Duration::from_micros(rng.gen_range(0..3000)));
    let acked_before = acked.load(Ordering::Acquire);
    let crashed = vfs.crash(rng);
    stop.store(true, Ordering::Release);
    h.join().unwrap();
    drop(engine);
    let states = std::mem::take(&mut *states.lock());
    (states, acked_before, crashed)
}

/// The commit prefix closest to `got` (fewest differing rows) and how it
/// differs: what a failed check needs to tell a lost commit from a stray
/// change.
fn nearest_state(states: &[State], got: &State) -> String {
    let rows = |s: &State| -> BTreeMap<(String, i64), Row> {
        s.iter()
            .flat_map(|(t, rows)| {
                rows.iter()
                    .map(move |(id, r)| ((t.clone(), *id), r.clone()))
            })
            .collect()
    };
    let got_rows = rows(got);
    let diff = |s: &State| -> Vec<String> {
        let want = rows(s);
        let mut d = Vec::new();
        for (k, v) in &want {
            match got_rows.get(k) {
                None => d.push(format!("{k:?}: missing, prefix has {v:?}")),
                Some(g) if g != v => d.push(format!("{k:?}: {g:?}, prefix has {v:?}")),
                _ => {}
            }
        }
        for (k, g) in &got_rows {
            if !want.contains_key(k) {
                d.push(format!("{k:?}: {g:?}, absent from the prefix"));
            }
        }
        d
    };
    let Some((i, d)) = states
        .iter()
        .enumerate()
        .map(|(i, s)| (i, diff(s)))
        .min_by_key(|(_, d)| d.len())
    else {
        return "no states".into();
    };
    // Where each differing row's recovered value was current.
    let nearest = rows(&states[i]);
    let when: Vec<String> = got_rows
        .iter()
        .filter(|(k, g)| nearest.get(*k) != Some(*g))
        .map(|(k, g)| {
            let at: Vec<usize> = states
                .iter()
                .enumerate()
                .filter(|(_, s)| s.get(&k.0).and_then(|t| t.get(&k.1)) == Some(g))
                .map(|(j, _)| j)
                .collect();
            format!(
                "{k:?} as recovered is the state after commits {:?}..={:?}",
                at.first(),
                at.last()
            )
        })
        .collect();
    format!(
        "nearest prefix: {i} commits, {} rows differ:\n  {}\n  {}",
        d.len(),
        d.join("\n  "),
        when.join("\n  ")
    )
}

fn check_recovered(
    engine: &Engine,
    states: &[State],
    acked_before: usize,
    fac: u8,
    ctx: &str,
) -> usize {
    let got = engine.dump();
    if let Err(e) = engine.check_tables() {
        panic!("{ctx}: the recovered indexes disagree with the rows: {e}");
    }
    let pos = states.iter().rposition(|s| *s == got);
    let Some(pos) = pos else {
        panic!(
            "{ctx}: recovered state is no prefix of the commits ({} states, {acked_before} \
             acknowledged before the crash)\n{}\nrecovery: {:?}",
            states.len(),
            nearest_state(states, &got),
            engine.recovery_report()
        );
    };
    if fac == 1 {
        assert!(
            pos >= acked_before,
            "{ctx}: lost acknowledged commits: recovered prefix {pos} < acked {acked_before}"
        );
    }
    pos
}

/// Runs two crash rounds; returns the checkpoint file each recovery
/// started from (a base image or a delta on it).
fn scenario(mode: RedoMode, fac: u8, seed: u64) -> Vec<String> {
    scenario_with(IN_MEMORY, mode, fac, seed)
}

fn scenario_with(cfg: Cfg, mode: RedoMode, fac: u8, seed: u64) -> Vec<String> {
    scenario_counting(cfg, mode, fac, seed, &mut 0)
}

/// [`scenario_with`], adding the pages the doublewrite buffer restored at
/// each recovery to `restored`.
fn scenario_counting(
    cfg: Cfg,
    mode: RedoMode,
    fac: u8,
    seed: u64,
    restored: &mut usize,
) -> Vec<String> {
    let mut started_from = Vec::new();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut vfs = Arc::new(SimVfs::new());
    let mut engine = Engine::open(cfg.opts(vfs.clone(), mode, fac)).unwrap();
    engine.prepare_sbtest(2, cfg.ids as u64 / 2).unwrap();
    let mut prev_report = String::from("none");
    for round in 0..2u64 {
        let start = engine.dump();
        // The first round of every third seed is short: a few commits, the
        // worker held at that count, so its log never reaches the second
        // checkpoint, after which a background base replaces the first:
        // its recovery starts from the first base's chain whatever the
        // host's load. (The other rounds overshoot their target by
        // hundreds of commits on a loaded host; one CI run saw all 18
        // recoveries of a test start from background bases.)
        let short = round == 0 && seed.is_multiple_of(3);
        let cut = if short {
            let n = rng.gen_range(10..30);
            Cut {
                crash_after: n,
                limit: n,
            }
        } else {
            Cut {
                crash_after: rng.gen_range(30..MAX_COMMITS),
                limit: MAX_COMMITS,
            }
        };
        let (states, acked, crashed) = run_until_crash(
            engine,
            cfg.ids,
            seed * 10 + round,
            start,
            cut,
            &vfs,
            &mut rng,
        );
        let crashed = Arc::new(crashed);
        engine = Engine::open(cfg.opts(crashed.clone(), mode, fac)).unwrap();
        let ctx = format!(
            "mode {mode} fac {fac} pages {:?} seed {seed} round {round} (previous recovery: \
             {prev_report})",
            cfg.pages
        );
        prev_report = format!("{:?}", engine.recovery_report());
        let from = engine.recovery_report().checkpoint_file.clone();
        assert!(
            !short || from.starts_with(FIRST_BASE),
            "{ctx}: a short round recovered from {from}, not the first base's chain"
        );
        started_from.push(from);
        *restored += engine.pages_restored().map_or(0, |(_, r)| r);
        check_recovered(&engine, &states, acked, fac, &ctx);
        vfs = crashed;
    }
    engine.shutdown().unwrap();
    started_from
}

/// The runs must have recovered from deltas on both kinds of base, or they
/// did not test the chain: the base of the new directory (lsn 0, with the
/// bulk load as its first delta), and a base written later, in the
/// background, and published with its first delta (`base_writer`). (A
/// 128 KiB log, checkpointed at 25% full, makes rounds long enough for
/// background bases to be published; the short first rounds of
/// [`scenario_counting`] start from the first base's chain.)
fn assert_both_kinds(started_from: &[String]) {
    assert!(
        started_from.iter().all(|f| f.ends_with(".delta")),
        "a recovery started from a base without its deltas: {started_from:?}"
    );
    assert!(
        started_from.iter().any(|f| f.starts_with(FIRST_BASE)),
        "no recovery started from the first base's chain: {started_from:?}"
    );
    assert!(
        started_from.iter().any(|f| !f.starts_with(FIRST_BASE)),
        "no recovery started from a base written in the background: {started_from:?}"
    );
}

#[test]
fn crash_recovery_rt0_all_flush_settings() {
    let mut from = Vec::new();
    for fac in [1, 2, 0] {
        for seed in 0..3 {
            from.extend(scenario(RedoMode::Off, fac, seed));
        }
    }
    assert_both_kinds(&from);
}

#[test]
fn crash_recovery_rt1_all_flush_settings() {
    let mut from = Vec::new();
    for fac in [1, 2, 0] {
        for seed in 0..3 {
            from.extend(scenario(RedoMode::On, fac, 100 + seed));
        }
    }
    assert_both_kinds(&from);
}

/// Tables on pages, both doublewrite designs, both redo modes, flush at
/// commit and not: every recovery is a prefix holding every acknowledged commit
/// (durable ones with flush 1), from pages written through the
/// doublewrite buffer (torn ones restored) plus the redo replayed from the
/// fuzzy checkpoint.
#[test]
fn crash_recovery_tables_on_pages() {
    let mut restored = 0;
    for (i, design) in ["legacy", "files"].into_iter().enumerate() {
        let cfg = Cfg {
            pages: Some(design),
            ids: 600,
        };
        for mode in [RedoMode::Off, RedoMode::On] {
            for fac in [1, 0] {
                let seed = 300 + i as u64 * 10 + u64::from(fac);
                scenario_counting(cfg, mode, fac, seed, &mut restored);
            }
        }
    }
    // A power cut tears a page only between its write and its sync: rare
    // here (the page store's own tests tear pages on purpose).
    println!("pages restored from the doublewrite buffer over 16 power cuts: {restored}");
}

/// The header of redo block `b` in `vfs`'s redo file (see the engine's
/// `redo::log_file`): (block_no, epoch, data_len), or None if it fails its
/// checksum.
fn block_header(vfs: &SimVfs, b: u64) -> Option<(u64, u32, u16)> {
    use redoctor_engine::vfs::Vfs;
    let f = vfs.open("redo.log", false).unwrap();
    let nblocks = (f.len().unwrap() - 4096) / 512;
    let mut buf = [0u8; 512];
    f.read_at(&mut buf, 4096 + (b % nblocks) * 512).unwrap();
    let crc = u32::from_le_bytes(buf[508..].try_into().unwrap());
    (crc32fast::hash(&buf[..508]) == crc).then(|| {
        (
            u64::from_le_bytes(buf[0..8].try_into().unwrap()),
            u32::from_le_bytes(buf[8..12].try_into().unwrap()),
            u16::from_le_bytes(buf[12..14].try_into().unwrap()),
        )
    })
}

/// Recovery seals the block it resumes in: written with the new life's
/// epoch and only the payload before the recovered end, and synced before
/// the engine takes a commit. So a power cut right after opening (nothing
/// committed) finds that block of the new life, never the dead life's
/// version with bytes past the end. (Without the seal, a lost first
/// rewrite of that block brought the dead version back and the next scan
/// spliced the two lives' records: `crash_recovery_rt0_all_flush_settings`
/// failed about once in thirty runs with a state that was no prefix.)
#[test]
fn recovery_seals_the_block_it_resumes_in() {
    let mut sealed_mid_block = 0;
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let vfs = Arc::new(SimVfs::new());
        let engine = Engine::open(small_opts(vfs.clone(), RedoMode::Off, 2)).unwrap();
        engine.prepare_sbtest(2, 40).unwrap();
        let mut model = engine.dump();
        // Some durable commits, then flush_at_commit=2: every commit
        // written, none synced but by the background second, so the crash
        // tears the log's tail at random.
        engine.set_flush_at_commit(1).unwrap();
        for _ in 0..rng.gen_range(0..100) {
            random_trx(&engine, &mut rng, &mut model, 80);
        }
        engine.set_flush_at_commit(2).unwrap();
        for _ in 0..rng.gen_range(20..200) {
            random_trx(&engine, &mut rng, &mut model, 80);
        }
        let image = Arc::new(vfs.crash(&mut rng));
        drop(engine);
        let engine = Engine::open(small_opts(image.clone(), RedoMode::Off, 2)).unwrap();
        let r = engine.recovery_report().clone();
        let again = image.crash(&mut rng);
        drop(engine);
        let (end, epoch) = (r.redo_end_lsn, r.epoch);
        let b = end / 492;
        let want = (b, epoch, (end % 492) as u16);
        assert_eq!(
            block_header(&again, b),
            Some(want),
            "seed {seed}: block {b} holding the recovered end {end} is not this life's \
             (epoch {epoch}) after a power cut right after opening"
        );
        sealed_mid_block += usize::from(end % 492 != 0);
        // And the next recovery ends exactly there.
        let engine = Engine::open(small_opts(Arc::new(again), RedoMode::Off, 2)).unwrap();
        assert_eq!(engine.recovery_report().redo_end_lsn, end, "seed {seed}");
    }
    assert!(
        sealed_mid_block >= 20,
        "only {sealed_mid_block} ends inside a block"
    );
}
