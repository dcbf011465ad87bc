//! Throughput with the concurrency cap off, seed-001 or FIFO, and the
//! transaction throttle off or on, at rising user counts, through the
//! engine API directly (no load driver).
//!
//! ```text
//! cargo run --release -p redoctor-engine --example admission_bench -- \
//!     [secs=1] [users=1,8,64,256,512] [configs=off,soft:8,fifo:8,throttle:16] \
//!     [workload=update_index|read_write] [redo=on|off] [flush=1] [rows=10000]
//! ```
//!
//! A config is `off`, `soft:N` (`seed001:N` still accepted), `fifo:N` (innodb_thread_concurrency=N with
//! that policy) or `throttle:N` (innodb_max_active_transactions=N); join
//! several with `+`, e.g. `fifo:8+throttle:32`. Prints one line per run: TPS,
//! and the gate and throttle counters of the run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redoctor_engine::TableId;
use redoctor_engine::{Engine, EngineError, EngineOptions};

struct Args {
    secs: f64,
    users: Vec<usize>,
    configs: Vec<String>,
    workload: String,
    redo: String,
    flush: String,
    rows: u64,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        secs: 1.0,
        users: vec![1, 8, 64, 256, 512],
        configs: ["off", "soft:8", "fifo:8", "throttle:16"]
            .map(String::from)
            .to_vec(),
        workload: "update_index".into(),
        redo: "on".into(),
        flush: "1".into(),
        rows: 10_000,
    };
    for arg in std::env::args().skip(1) {
        let (k, v) = arg
            .split_once('=')
            .with_context(|| format!("argument '{arg}' is not key=value"))?;
        match k {
            "secs" => a.secs = v.parse().context("secs")?,
            "users" => {
                a.users = v
                    .split(',')
                    .map(|u| u.parse().context("users"))
                    .collect::<Result<_>>()?
            }
            "configs" => a.configs = v.split(',').map(String::from).collect(),
            "workload" => a.workload = v.into(),
            "redo" => a.redo = v.into(),
            "flush" => a.flush = v.into(),
            "rows" => a.rows = v.parse().context("rows")?,
            _ => {
                bail!("unknown argument '{k}' (secs, users, configs, workload, redo, flush, rows)")
            }
        }
    }
    if !["update_index", "read_write"].contains(&a.workload.as_str()) {
        bail!("workload must be update_index or read_write");
    }
    Ok(a)
}

/// The `SET GLOBAL`s of one config.
fn config_settings(config: &str) -> Result<Vec<(String, String)>> {
    let mut s = vec![
        ("innodb_thread_concurrency".to_string(), "0".to_string()),
        ("innodb_max_active_transactions".into(), "0".into()),
    ];
    for part in config.split('+') {
        match part.split_once(':') {
            None if part == "off" => {}
            Some(("soft" | "seed001" | "fifo", n)) => {
                s.push((
                    "innodb_admission_policy".into(),
                    part[..part.len() - n.len() - 1].into(),
                ));
                s.push(("innodb_thread_concurrency".into(), n.into()));
            }
            Some(("throttle", n)) => s.push(("innodb_max_active_transactions".into(), n.into())),
            _ => bail!("config '{part}': use off, soft:N, fifo:N or throttle:N"),
        }
    }
    Ok(s)
}

/// One transaction; Err only for retryable errors.
fn transaction(
    e: &Engine,
    t: TableId,
    rows: u64,
    rw: bool,
    rng: &mut SmallRng,
) -> Result<(), EngineError> {
    let mut trx = e.begin();
    let id = |rng: &mut SmallRng| rng.gen_range(1..=rows as i64);
    let r = (|| {
        if rw {
            for _ in 0..10 {
                trx.get(t, id(rng))?;
            }
            let lo = id(rng);
            trx.range_with(t, lo, lo + 99, |_, _| {})?;
            trx.update_k(t, id(rng), 1)?;
            trx.update_c(t, id(rng), format!("{}", rng.gen::<u64>()))?;
            let victim = id(rng);
            if let Some(row) = trx.get(t, victim)? {
                trx.delete(t, victim)?;
                trx.insert(t, victim, row)?;
            }
        } else {
            trx.update_k(t, id(rng), 1)?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => e.commit(trx).map(|_| ()),
        Err(err) => {
            e.rollback(trx);
            Err(EngineError::Trx(err))
        }
    }
}

fn main() -> Result<()> {
    let a = parse_args()?;
    let dir = tempfile::tempdir().context("creating a temporary data directory")?;
    let mut o = EngineOptions::new(dir.path());
    o.settings = vec![
        ("innodb_log_writer_threads".into(), a.redo.clone()),
        ("innodb_flush_log_at_trx_commit".into(), a.flush.clone()),
    ];
    let e = Engine::open(o).context("opening the engine")?;
    e.prepare_sbtest(1, a.rows).context("loading sbtest1")?;
    let table = e.table_id("sbtest1").context("sbtest1 missing")?;
    println!(
        "# {} redo={} flush={} rows={} secs={} (machine shared: numbers are noisy)",
        a.workload, a.redo, a.flush, a.rows, a.secs
    );
    println!(
        "{:<22} {:>5} {:>10} {:>9} {:>9} {:>8} {:>9} {:>7} {:>9} {:>12}",
        "config",
        "users",
        "tps",
        "gate_wait",
        "sleeps",
        "forced",
        "inside_hw",
        "thr_wait",
        "retries",
        "trxsys_cont%"
    );
    for config in &a.configs {
        for (name, value) in config_settings(config)? {
            e.set_global(&name, &value)
                .with_context(|| format!("{name}={value}"))?;
        }
        for &users in &a.users {
            let g0 = e.concurrency_gate().stats();
            let t0 = e.throttle().stats();
            let s0 = e.trx_sys().stats();
            e.concurrency_gate().reset_high_water();
            let stop = Arc::new(AtomicBool::new(false));
            let done = Arc::new(AtomicU64::new(0));
            let retries = Arc::new(AtomicU64::new(0));
            let rw = a.workload == "read_write";
            let hs: Vec<_> = (0..users)
                .map(|u| {
                    let (e, stop, done, retries) =
                        (e.clone(), stop.clone(), done.clone(), retries.clone());
                    let rows = a.rows;
                    std::thread::spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(u as u64);
                        while !stop.load(Ordering::Relaxed) {
                            match transaction(&e, table, rows, rw, &mut rng) {
                                Ok(()) => done.fetch_add(1, Ordering::Relaxed),
                                Err(err) if err.is_retryable() => {
                                    retries.fetch_add(1, Ordering::Relaxed)
                                }
                                Err(err) => panic!("{err}"),
                            };
                        }
                    })
                })
                .collect();
            // Warm up a tenth of the run, then measure.
            std::thread::sleep(Duration::from_secs_f64(a.secs / 10.0));
            let d0 = done.load(Ordering::Relaxed);
            let start = Instant::now();
            std::thread::sleep(Duration::from_secs_f64(a.secs));
            let tps = (done.load(Ordering::Relaxed) - d0) as f64 / start.elapsed().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            for h in hs {
                h.join().expect("user thread panicked");
            }
            let g = e.concurrency_gate().stats();
            let t = e.throttle().stats();
            let s = e.trx_sys().stats();
            let acq = (s.shard_acquisitions - s0.shard_acquisitions).max(1);
            let cont = 100.0 * (s.shard_contended - s0.shard_contended) as f64 / acq as f64;
            println!(
                "{:<22} {:>5} {:>10.0} {:>9} {:>9} {:>8} {:>9} {:>7} {:>9} {:>12.3}",
                config,
                users,
                tps,
                g.waits - g0.waits,
                g.sleeps - g0.sleeps,
                g.forced - g0.forced,
                g.inside_high_water,
                t.waits - t0.waits,
                retries.load(Ordering::Relaxed),
                cont
            );
        }
    }
    e.shutdown().context("shutting down")?;
    Ok(())
}
