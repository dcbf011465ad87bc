//! Seed 003's method on this host: the applier's throughput of a replica
//! catching up a backlog, `position` arbitration (MySQL 8.0.1) against
//! `lock` (before), by workload, durability and worker count.
//!
//! ```text
//! cargo run --release -p redoctor-workload --example replica_apply -- \
//!     [DIR] [BACKLOG_TRX] [ROUNDS] [WORKERS,..] [WORKLOADS,..] [durable|nondurable|both]
//! ```
//!
//! Per cell: a source engine (`log_bin=ON`) and a replica engine are
//! prepared alike on real files under DIR (4 tables × 10 000 rows); the
//! workload runs on the source with 64 users, in quarter-second runs, until
//! its binlog holds BACKLOG_TRX transactions (default 20 000) while the
//! replica is stopped (the backlog); then the replica starts, and while 4
//! source threads keep writing (single-row `k` updates), the time until
//! the applier has applied the whole backlog gives the applier's rate.
//! Afterwards the replica catches up fully and its tables are compared
//! with the source's (a checksum per table): a difference fails the run.
//! Durable: `sync_binlog=1` and `innodb_flush_log_at_trx_commit=1` on
//! both, `log_replica_updates=ON`; non-durable: `sync_binlog=0`,
//! `innodb_flush_log_at_trx_commit=2`. The two designs run back to back
//! in alternating order per round, so the disk's drift lands on both.
//! One JSON line per cell and round on stdout.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use redoctor_engine::replica::applied::TABLE as APPLIED;
use redoctor_engine::replica::{LocalSource, Replica};
use redoctor_engine::{Engine, EngineOptions, RedoMode, RedoOptions};
use redoctor_workload::{RunConfig, WorkloadKind};

const TABLES: u32 = 4;
const ROWS: u64 = 10_000;
const BACKLOG_USERS: usize = 64;
const KEEP_WRITING_USERS: usize = 4;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn list(args: &[String], i: usize, default: &str) -> Vec<String> {
    args.get(i)
        .map(String::as_str)
        .unwrap_or(default)
        .split(',')
        .map(str::to_string)
        .collect()
}

fn open(dir: &Path, durable: bool) -> Arc<Engine> {
    let mut o = EngineOptions::new(dir);
    o.redo = RedoOptions {
        mode: RedoMode::Off,
        flush_at_commit: if durable { 1 } else { 2 },
        log_file_size: 256 << 20,
        ..RedoOptions::default()
    };
    o.log_bin = true;
    o.sync_binlog = u32::from(durable);
    o.max_binlog_size = 64 << 20;
    let e = Engine::open(o).expect("opening an engine");
    e.prepare_sbtest(TABLES, ROWS).expect("preparing");
    e
}

fn status(e: &Engine, name: &str) -> u64 {
    e.global_status()
        .into_iter()
        .find(|(n, _)| n == name)
        .map_or(0, |(_, v)| v)
}

/// A checksum per table (the applied-position table left out).
fn checksums(e: &Engine) -> BTreeMap<String, u32> {
    e.dump()
        .into_iter()
        .filter(|(n, _)| n != APPLIED)
        .map(|(n, rows)| {
            let mut h = crc32fast::Hasher::new();
            for (id, r) in rows {
                h.update(&id.to_le_bytes());
                h.update(&r.k.to_le_bytes());
                h.update(r.c.as_bytes());
                h.update(r.pad.as_bytes());
            }
            (n, h.finalize())
        })
        .collect()
}

/// Source threads updating `k` of random rows until `stop`.
fn keep_writing(src: &Arc<Engine>, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    (0..KEEP_WRITING_USERS)
        .map(|u| {
            let (e, stop) = (src.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(u as u64);
                let tables: Vec<_> = (1..=TABLES)
                    .map(|t| e.table_id(&format!("sbtest{t}")).expect("table"))
                    .collect();
                while !stop.load(Ordering::Relaxed) {
                    let mut trx = e.begin();
                    let t = tables[rng.gen_range(0..tables.len())];
                    match trx.update_k(t, rng.gen_range(1..=ROWS as i64), 1) {
                        Ok(_) => {
                            let _ = e.commit(trx);
                        }
                        Err(_) => e.rollback(trx),
                    }
                }
            })
        })
        .collect()
}

struct Cell<'a> {
    workload: &'a str,
    durable: bool,
    workers: u32,
    design: &'a str,
    backlog_trx: u64,
}

fn run_cell(dir: &Path, c: &Cell<'_>) -> serde_json::Value {
    let _ = std::fs::remove_dir_all(dir);
    let src = open(&dir.join("src"), c.durable);
    let rep = open(&dir.join("rep"), c.durable);
    rep.set_global("replica_parallel_workers", &c.workers.to_string())
        .unwrap();
    rep.set_global("replica_relay_log_arbitration", c.design)
        .unwrap();
    let kind = match c.workload {
        "update_index" => WorkloadKind::UpdateIndex,
        _ => WorkloadKind::ReadWrite,
    };
    let mut cfg = RunConfig::new(kind);
    cfg.users = BACKLOG_USERS;
    cfg.tables = TABLES;
    cfg.table_size = ROWS;
    cfg.warmup = Duration::ZERO;
    cfg.duration = Duration::from_millis(250);
    let mut chunk = 0;
    while status(&src, "Binlog_commits") < c.backlog_trx {
        cfg.seed = Some(chunk);
        chunk += 1;
        redoctor_workload::run(&src, cfg.clone()).expect("the backlog load");
    }
    let backlog = status(&src, "Binlog_commits");
    let backlog_end = src.binlog_end().expect("log_bin");
    let groups = status(&src, "Binlog_group_commits");

    let stop = Arc::new(AtomicBool::new(false));
    let writers = keep_writing(&src, &stop);
    let before = rep.global_status();
    let r = Replica::new(rep.clone());
    let t0 = Instant::now();
    r.start(Box::new(LocalSource(src.clone())))
        .expect("START REPLICA");
    let caught = r.wait_applied(backlog_end, Duration::from_secs(600));
    let secs = t0.elapsed().as_secs_f64();
    let after = rep.global_status();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(caught, "the replica did not catch up: {:?}", r.status());
    let end = src.binlog_end().unwrap();
    assert!(
        r.wait_applied(end, Duration::from_secs(600)),
        "{:?}",
        r.status()
    );
    r.stop();
    let equal = checksums(&src) == checksums(&rep);
    assert!(equal, "replica differs from the source after catch-up");
    let delta = |name: &str| {
        let get =
            |rows: &[(String, u64)]| rows.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
        get(&after) - get(&before)
    };
    let applied = delta("Replica_trx_applied").max(1) as f64;
    let out = serde_json::json!({
        "workload": c.workload,
        "durable": c.durable,
        "workers": c.workers,
        "design": c.design,
        "backlog_trx": backlog,
        "backlog_groups": groups,
        "catch_up_s": secs,
        "applier_trx_per_s": backlog as f64 / secs,
        "lock_waits_per_trx": delta("Relay_log_lock_waits") as f64 / applied,
        "lock_wait_ms": delta("Relay_log_lock_wait_ns") as f64 / 1e6,
        "applier_waits_per_trx": delta("Applier_waits") as f64 / applied,
        "receiver_wakeups_per_trx": delta("Receiver_applier_wakeups") as f64 / applied,
        "worker_wakeups_per_trx": delta("Applier_worker_wakeups") as f64 / applied,
        "coordinator_waits_per_trx": delta("Applier_worker_waits") as f64 / applied,
        "relay_fsyncs": delta("Relay_log_fsyncs"),
        "tables_equal": equal,
    });
    drop(r);
    rep.shutdown().unwrap();
    src.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(dir);
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tmp;
    let dir = match args.first() {
        Some(d) if d != "-" => std::path::PathBuf::from(d),
        _ => {
            tmp = tempfile::tempdir().expect("a temporary directory");
            tmp.path().to_path_buf()
        }
    };
    let backlog_trx: u64 = arg(&args, 1, 20_000);
    let rounds: usize = arg(&args, 2, 2);
    let workers: Vec<u32> = list(&args, 3, "0,1,2,4")
        .iter()
        .map(|w| w.parse().expect("worker counts are integers"))
        .collect();
    let workloads = list(&args, 4, "update_index,read_write");
    let durabilities: Vec<bool> = match args.get(5).map(String::as_str) {
        Some("durable") => vec![true],
        Some("nondurable") => vec![false],
        _ => vec![true, false],
    };
    for round in 0..rounds {
        for wl in &workloads {
            for &durable in &durabilities {
                for &w in &workers {
                    let designs = if round % 2 == 0 {
                        ["lock", "position"]
                    } else {
                        ["position", "lock"]
                    };
                    for design in designs {
                        let cell = Cell {
                            workload: wl,
                            durable,
                            workers: w,
                            design,
                            backlog_trx,
                        };
                        let mut v = run_cell(&dir.join("cell"), &cell);
                        v["round"] = serde_json::json!(round);
                        println!("{v}");
                    }
                }
            }
        }
    }
}
