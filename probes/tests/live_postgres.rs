//! Live tests against a private PostgreSQL 15 cluster driven by sysbench:
//! the probes follow the postmaster's process tree (backends forked after
//! attach included), count commits (USDT) and WAL fdatasyncs that agree
//! with PostgreSQL's own statistics, refuse a pid that is not a
//! postmaster, and degrade clearly on a binary without USDT notes.
//! Skipped, with the reason printed, where PostgreSQL 15 or sysbench is
//! not installed.

#[path = "support/pg_cluster.rs"]
mod pg_cluster;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pg_cluster::Cluster;
use redoctor_probes::{
    AttachOptions, FileKind, ProbeError, Probes, Profile, Role, Sampler, Signals,
};

fn attach(pid: u32) -> Result<Sampler, ProbeError> {
    let profile = Profile::builtin("postgresql").unwrap();
    let probes = Probes::attach(&AttachOptions::for_profile(pid, &profile))?;
    Sampler::new(probes, profile)
}

/// Windows of `every` until `done` says stop.
fn windows_until(s: &mut Sampler, every: Duration, mut done: impl FnMut() -> bool) -> Vec<Signals> {
    let mut out = Vec::new();
    loop {
        let stop = done();
        out.push(s.wait_window(every).unwrap());
        if stop {
            return out;
        }
    }
}

fn redo_fdatasyncs(ws: &[Signals]) -> u64 {
    ws.iter()
        .filter_map(|w| w.io.get(&FileKind::Redo))
        .map(|f| f.fdatasync_calls)
        .sum()
}

fn within(a: u64, b: u64, share: f64) -> bool {
    (a as f64 - b as f64).abs() <= share * b.max(1) as f64
}

#[test]
fn commits_and_wal_syncs_agree_with_pg_stats() {
    if pg_cluster::skip("commits_and_wal_syncs_agree_with_pg_stats") {
        return;
    }
    // Autovacuum off: a worker still running when the statistics are read
    // has commits the probes saw and the statistics do not have yet.
    let pg = Cluster::start(&["autovacuum=off"], None);
    pg.prepare_sysbench("sbtest", 10_000);
    let mut s = attach(pg.pid).expect("attach to the postmaster");
    let commits_sql = "SELECT sum(xact_commit) FROM pg_stat_database";
    let wal_sql = "SELECT wal_sync FROM pg_stat_wal";
    let (c0, w0) = (
        pg.number("postgres", commits_sql),
        pg.number("postgres", wal_sql),
    );
    // The backends connect after the probes attached: they are followed
    // from their fork.
    let mut bench = pg.sysbench("sbtest", 4, 4, 10_000, "run").spawn().unwrap();
    let mut ws = windows_until(&mut s, Duration::from_millis(500), || {
        bench.try_wait().unwrap().is_some()
    });
    assert!(bench.wait().unwrap().success());
    // The walwriter reports its WAL statistics every wal_writer_delay.
    std::thread::sleep(Duration::from_millis(1200));
    let (c1, w1) = (
        pg.number("postgres", commits_sql),
        pg.number("postgres", wal_sql),
    );
    ws.push(s.window().unwrap());

    let probed_commits: u64 = ws.iter().filter_map(|w| w.engine.commits).sum();
    let probed_syncs = redo_fdatasyncs(&ws);
    let (stat_commits, stat_syncs) = (c1 - c0, w1 - w0);
    eprintln!(
        "commits: probes {probed_commits}, pg_stat_database {stat_commits}; \
         WAL fdatasyncs: probes {probed_syncs}, pg_stat_wal.wal_sync {stat_syncs}"
    );
    assert!(
        stat_commits > 1000,
        "too little load: {stat_commits} commits"
    );
    assert!(stat_syncs > 100, "too few WAL syncs: {stat_syncs}");
    assert!(
        within(probed_commits, stat_commits, 0.01),
        "commits diverge: probes {probed_commits}, pg_stat_database {stat_commits}"
    );
    assert!(
        within(probed_syncs, stat_syncs, 0.01),
        "WAL syncs diverge: probes {probed_syncs}, pg_stat_wal {stat_syncs}"
    );

    // Roles from the process titles: the walwriter, and sysbench's
    // backends (forked after attach) as users.
    let procs: Vec<_> = ws.iter().flat_map(|w| w.processes.iter()).collect();
    assert!(
        procs
            .iter()
            .any(|p| p.role == Role::LogWriter && p.title.contains("walwriter")),
        "no walwriter as log_writer in {procs:?}"
    );
    assert!(
        procs
            .iter()
            .any(|p| p.role == Role::User && p.title.contains("sbtest") && p.parent == pg.pid),
        "no sysbench backend as user in {procs:?}"
    );
    assert!(procs
        .iter()
        .any(|p| p.pid == pg.pid && p.role == Role::Other));
    // LWLock waits by tranche name, from the USDT probes.
    let busiest = ws
        .iter()
        .map(|w| w.roles.get(&Role::User).map_or(0, |r| r.oncpu_ns))
        .sum::<u64>();
    assert!(busiest > 0, "the users' CPU time was not seen");
    assert!(
        ws.iter()
            .all(|w| w.unavailable.iter().all(|u| !u.what.starts_with("usdt"))),
        "{:?}",
        ws[0].unavailable
    );
}

#[test]
fn a_pid_that_is_not_a_postmaster_is_refused_with_the_fix() {
    if pg_cluster::skip("a_pid_that_is_not_a_postmaster_is_refused_with_the_fix") {
        return;
    }
    let pg = Cluster::start(&[], None);
    let (mut session, backend) = pg.backend(30);
    let e = attach(backend)
        .err()
        .expect("a backend is refused")
        .to_string();
    assert!(
        e.contains(&format!(
            "pid {backend} is not a postgresql server's root process"
        )),
        "{e}"
    );
    assert!(e.contains("child processes"), "{e}");
    assert!(e.contains(&format!("its parent is pid {}", pg.pid)), "{e}");
    assert!(e.contains("head -1 DATADIR/postmaster.pid"), "{e}");
    session.kill().unwrap();
    session.wait().unwrap();

    let mut sleep = Command::new("sleep").arg("30").spawn().unwrap();
    let e = attach(sleep.id())
        .err()
        .expect("sleep is refused")
        .to_string();
    assert!(e.contains("runs `sleep`"), "{e}");
    assert!(e.contains("postmaster.pid"), "{e}");
    sleep.kill().unwrap();
    sleep.wait().unwrap();
}

/// A copy of the server binary without its USDT notes, laid out as the
/// installed one (`lib/postgresql/15/bin`) so it finds its share and lib
/// directories relative to itself.
fn binary_without_usdt(root: &Path) -> std::path::PathBuf {
    let bin = root.join("lib/postgresql/15/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(
        "/usr/lib/postgresql/15/lib",
        root.join("lib/postgresql/15/lib"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("share/postgresql")).unwrap();
    std::os::unix::fs::symlink("/usr/share/postgresql/15", root.join("share/postgresql/15"))
        .unwrap();
    let out = bin.join("postgres");
    let o = Command::new("objcopy")
        .args(["--remove-section", ".note.stapsdt"])
        .arg(Path::new(pg_cluster::BIN_DIR).join("postgres"))
        .arg(&out)
        .output()
        .expect("objcopy (binutils)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn without_usdt_commits_are_unavailable_and_the_rest_is_measured() {
    if pg_cluster::skip("without_usdt_commits_are_unavailable_and_the_rest_is_measured") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let stripped = binary_without_usdt(root.path());
    let pg = Cluster::start(&[], Some(&stripped));
    pg.prepare_sysbench("sbtest", 1000);
    let mut s = attach(pg.pid).expect("attach");
    let mut bench = pg.sysbench("sbtest", 2, 2, 1000, "run").spawn().unwrap();
    let t = Instant::now();
    let ws = windows_until(&mut s, Duration::from_millis(500), || {
        bench.try_wait().unwrap().is_some() || t.elapsed() > Duration::from_secs(20)
    });
    assert!(bench.wait().unwrap().success());
    let u = &ws[0].unavailable;
    let usdt = u
        .iter()
        .find(|u| u.what == "usdt")
        .unwrap_or_else(|| panic!("{u:?}"));
    assert!(usdt.why.contains("has no USDT probes"), "{}", usdt.why);
    assert!(usdt.why.contains("commits"), "{}", usdt.why);
    assert!(
        ws.iter().all(|w| w.engine.commits.is_none()),
        "commits must not be guessed"
    );
    assert!(redo_fdatasyncs(&ws) > 0, "WAL fsyncs are still measured");
}
