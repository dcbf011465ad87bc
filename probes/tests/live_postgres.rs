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
    AttachOptions, FileKind, FsyncCounters, ProbeError, Probes, Profile, Role, Sampler, Signals,
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
    // The fsync counters the daemon keeps attached, alongside, read every
    // window (~0.5 s) and tidied every second: new backends named between
    // tidies from their own listing, closed WAL segments and exited
    // backends dropped from the maps while counting.
    let mut fc = FsyncCounters::attach(pg.pid, &Profile::builtin("postgresql").unwrap())
        .expect("fsync counters on the postmaster");
    fc.set_tidy_every(Duration::from_secs(1));
    let wal_fdatasyncs = |fc: &mut FsyncCounters| {
        fc.read()
            .unwrap()
            .get(&FileKind::Redo)
            .map_or(0, |t| t.fdatasync_calls)
    };
    let fc0 = wal_fdatasyncs(&mut fc);
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
        wal_fdatasyncs(&mut fc);
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
    let counted = wal_fdatasyncs(&mut fc) - fc0;

    let probed_commits: u64 = ws.iter().filter_map(|w| w.engine.commits).sum();
    let probed_syncs = redo_fdatasyncs(&ws);
    let (stat_commits, stat_syncs) = (c1 - c0, w1 - w0);
    eprintln!(
        "commits: probes {probed_commits}, pg_stat_database {stat_commits}; \
         WAL fdatasyncs: probes {probed_syncs}, fsync counters {counted}, \
         pg_stat_wal.wal_sync {stat_syncs}"
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
    assert!(
        within(counted, stat_syncs, 0.01),
        "WAL syncs diverge: fsync counters {counted}, pg_stat_wal {stat_syncs}"
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

/// Page writes split by caller, against `pg_stat_bgwriter`: with
/// shared_buffers far below the table, the backends write the dirty
/// buffers they evict and the pages they extend relations by
/// (`buffers_backend`), the background writer cleans ahead
/// (`buffers_clean`) and a checkpoint writes the rest
/// (`buffers_checkpoint`). The probes' data-file writes by the background
/// writer and the checkpointer are the last two, everything else's the
/// first (the profile's `foreground_roles`). A bulk insert after the run
/// makes sure the backends' share is large enough to compare.
#[test]
fn page_writes_split_as_pg_stat_bgwriter_counts_them() {
    if pg_cluster::skip("page_writes_split_as_pg_stat_bgwriter_counts_them") {
        return;
    }
    let pg = Cluster::start(
        &[
            "autovacuum=off",
            "shared_buffers=1MB",
            "bgwriter_delay=10ms",
            "bgwriter_lru_maxpages=1000",
            "checkpoint_timeout=1h",
            "max_wal_size=4GB",
        ],
        None,
    );
    pg.prepare_sysbench("sbtest", 50_000);
    pg.sql("postgres", "CHECKPOINT");
    let stats = || {
        let row = pg.sql(
            "postgres",
            "SELECT buffers_checkpoint, buffers_clean, buffers_backend FROM pg_stat_bgwriter",
        );
        let v: Vec<u64> = row.split('|').map(|x| x.parse().unwrap()).collect();
        (v[0], v[1], v[2])
    };
    std::thread::sleep(Duration::from_millis(1500));
    let mut s = attach(pg.pid).expect("attach to the postmaster");
    let (k0, c0, b0) = stats();
    let mut bench = pg.sysbench("sbtest", 4, 4, 50_000, "run").spawn().unwrap();
    let mut ws = windows_until(&mut s, Duration::from_millis(500), || {
        bench.try_wait().unwrap().is_some()
    });
    assert!(bench.wait().unwrap().success());
    // How many dirty buffers the backends evict depends on how far the
    // background writer keeps ahead (one CI run saw 155). Extending the
    // table by ~1,100 pages gives the backends writes of their own, every
    // extension one write counted in buffers_backend.
    pg.sql(
        "sbtest",
        "INSERT INTO sbtest1 (k, c, pad) SELECT g, repeat('c', 120), repeat('p', 60) \
         FROM generate_series(1, 40000) g",
    );
    pg.sql("postgres", "CHECKPOINT");
    // The checkpointer reports its statistics, the backends' writes among
    // them, after the checkpoint; the background writer every round.
    std::thread::sleep(Duration::from_millis(1500));
    let (k1, c1, b1) = stats();
    ws.push(s.window().unwrap());
    let data = |f: fn(&redoctor_probes::signals::FileIo) -> u64| -> u64 {
        ws.iter()
            .filter_map(|w| w.io.get(&FileKind::Data))
            .map(f)
            .sum()
    };
    let writes = data(|f| f.write_calls);
    let background = data(|f| f.background_write_calls);
    let foreground = writes - background;
    let (checkpoint, clean, backend) = (k1 - k0, c1 - c0, b1 - b0);
    eprintln!(
        "data-file writes: probes {background} by the background writer and checkpointer, \
         {foreground} by the others; pg_stat_bgwriter: {checkpoint} checkpoint + {clean} clean, \
         {backend} backend"
    );
    assert!(
        backend > 200 && clean + checkpoint > 200,
        "too few writes to tell: {checkpoint} checkpoint, {clean} clean, {backend} backend"
    );
    // Slack: pg_control (the checkpointer) and the relation cache's init
    // files (new backends) are data-file writes outside the buffer pool.
    assert!(
        within(background, checkpoint + clean, 0.01),
        "background writes: probes {background}, pg_stat_bgwriter {checkpoint} + {clean}"
    );
    assert!(
        within(foreground, backend, 0.01),
        "foreground writes: probes {foreground}, pg_stat_bgwriter buffers_backend {backend}"
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

#[test]
fn without_usdt_commits_are_unavailable_and_the_rest_is_measured() {
    if pg_cluster::skip("without_usdt_commits_are_unavailable_and_the_rest_is_measured") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let stripped = pg_cluster::binary_without_usdt(root.path());
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

/// The semaphore offsets of the USDT probes `s` attached, in `exe`.
fn attached_semaphores(s: &Sampler, exe: &Path) -> Vec<(String, u64)> {
    let attached: Vec<&str> = s
        .probes()
        .attached_usdt()
        .iter()
        .map(|(p, _)| p.as_str())
        .collect();
    redoctor_probes::usdt::read_sites(exe)
        .unwrap()
        .into_iter()
        .filter(|site| attached.contains(&site.probe().as_str()))
        .filter_map(|site| Some((site.probe(), site.semaphore_file_offset?)))
        .collect()
}

/// Every (probe, process) whose semaphore is not `want`.
fn semaphores_not(want: u16, sems: &[(String, u64)], exe: &Path, pids: &[u32]) -> Vec<String> {
    let mut off = Vec::new();
    for &pid in pids {
        for (probe, o) in sems {
            let v = redoctor_probes::usdt::semaphore_value(pid, exe, *o);
            if v != Some(want) {
                off.push(format!("{probe} in pid {pid}: {v:?}"));
            }
        }
    }
    off
}

#[test]
fn lwlock_waits_are_named_by_tranche_and_semaphores_are_restored() {
    if pg_cluster::skip("lwlock_waits_are_named_by_tranche_and_semaphores_are_restored") {
        return;
    }
    let pg = Cluster::start(&["autovacuum=off"], None);
    pg.prepare_sysbench("sbtest", 10_000);
    let exe = std::fs::read_link(format!("/proc/{}/exe", pg.pid)).unwrap();
    // A backend older than the probes: raised at attach, lowered at detach.
    let (mut before, old_backend) = pg.backend(60);
    let mut s = attach(pg.pid).expect("attach to the postmaster");
    let sems = attached_semaphores(&s, &exe);
    assert!(
        sems.iter()
            .any(|(p, _)| p == "postgresql:lwlock__wait__start"),
        "the LWLock probes are guarded by semaphores: {sems:?}"
    );
    let raised = semaphores_not(1, &sems, &exe, &[pg.pid, old_backend]);
    assert!(raised.is_empty(), "not raised: {raised:?}");
    // A backend forked while attached inherits them from the postmaster.
    let (mut during, new_backend) = pg.backend(61);
    let inherited = semaphores_not(1, &sems, &exe, &[new_backend]);
    assert!(inherited.is_empty(), "not inherited: {inherited:?}");

    // 16 committers on 2 CPUs: backends wait for each other's WAL flush
    // (WALWriteLock, tranche "WALWrite"). pg_stat_activity samples the same
    // waits by the same names (wait_event_type 'LWLock').
    let mut bench = pg.sysbench("sbtest", 16, 4, 10_000, "run").spawn().unwrap();
    let mut sampled: std::collections::BTreeMap<String, u32> = Default::default();
    let mut ws = Vec::new();
    while bench.try_wait().unwrap().is_none() {
        for name in pg
            .sql(
                "postgres",
                "SELECT wait_event FROM pg_stat_activity WHERE wait_event_type = 'LWLock'",
            )
            .lines()
        {
            *sampled.entry(name.to_string()).or_default() += 1;
        }
        ws.push(s.wait_window(Duration::from_millis(100)).unwrap());
    }
    assert!(bench.wait().unwrap().success());
    let mut named: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for w in &ws {
        for l in &w.named_lock_waits {
            let e = named.entry(l.lock.clone()).or_default();
            e.0 += l.waits;
            e.1 += l.wait_ns;
        }
    }
    eprintln!("probes' LWLock waits (waits, ns) by tranche: {named:?}");
    eprintln!("pg_stat_activity samples by LWLock: {sampled:?}");
    let wal_write = named.get("WALWrite").copied().unwrap_or_default();
    assert!(
        wal_write.0 > 0 && wal_write.1 > 0,
        "no WALWrite waits among {named:?}"
    );
    for (name, (waits, ns)) in &named {
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "not a tranche name: {name:?}"
        );
        assert!(*waits > 0 && *ns > 0, "{name}: {waits} waits, {ns} ns");
    }
    // What the server saw its backends wait on often, the probes timed.
    for (name, n) in &sampled {
        if *n >= 3 {
            assert!(
                named.contains_key(name),
                "pg_stat_activity saw {n} waits on {name}; the probes none: {named:?}"
            );
        }
    }

    drop(s);
    let left = semaphores_not(0, &sems, &exe, &[pg.pid, old_backend, new_backend]);
    assert!(left.is_empty(), "left raised after detach: {left:?}");
    for c in [&mut before, &mut during] {
        c.kill().unwrap();
        c.wait().unwrap();
    }
}
