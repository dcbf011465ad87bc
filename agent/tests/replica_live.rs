//! A bundled-engine replica under load, probed from outside through the
//! real `redoctor` binary: two `redoctor-engine serve` processes, a source
//! (`log_bin=ON`) written by client threads and a replica fetching over
//! the source's socket.
//! 1. The probes name the replica's threads by role (receiver, applier,
//!    workers) and its relay log as a file kind of its own; the relay-log
//!    fsyncs they count equal the engine's `Relay_log_fsyncs` over the
//!    same span (within the 100 ms the bracketing reads can miss at each
//!    end).
//! 2. The ping-pong measure sees the designs differ: under `lock` the
//!    receiver and the applier wait for each other on `relay_log.lock`
//!    (named by the probes, and counted by the engine's
//!    `Relay_log_lock_waits`); under `position` neither does, and the
//!    receiver's wakeups of the applier are the engine's
//!    `Receiver_applier_wakeups`.
//! 3. `diagnose` of the replica in the lock design with `sync_relay_log=1`
//!    names the bottleneck (the relay log's lock, its fsyncs) and proposes
//!    `position` and a larger `sync_relay_log`; its trial is judged by the
//!    applier's rate (`Replica_trx_applied`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use serde_json::Value;

use common::{engine, need_tracefs, skip, text};

const TABLE: &str =
    "CREATE TABLE sbtest1 (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, \
     c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))";

struct Server {
    child: redoctor_testkit::KillOnDrop,
    socket: PathBuf,
}

impl Server {
    fn start(dir: &Path, name: &str, sets: &[&str]) -> Server {
        let socket = dir.join(format!("{name}.sock"));
        let mut cmd = Command::new(engine());
        cmd.arg("serve")
            .arg("--datadir")
            .arg(dir.join(name))
            .arg("--socket")
            .arg(&socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for s in sets {
            cmd.args(["--set", s]);
        }
        let child = redoctor_testkit::KillOnDrop(cmd.spawn().unwrap());
        let t = Instant::now();
        while !socket.exists() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "{name} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server { child, socket }
    }

    fn conn(&self) -> Conn {
        let opts = OptsBuilder::new()
            .socket(Some(self.socket.to_str().unwrap().to_string()))
            .user(Some("root"));
        Conn::new(opts).unwrap()
    }

    fn status(&self, name: &str) -> u64 {
        let rows: Vec<(String, String)> = self
            .conn()
            .query(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
            .unwrap();
        rows[0].1.parse().unwrap()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// `threads` clients updating and inserting on the source until `stop`.
fn load(src: &Server, threads: usize, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    (0..threads)
        .map(|t| {
            let mut c = src.conn();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut i: i64 = 0;
                while !stop.load(Ordering::Relaxed) {
                    let id = 1 + (i * 7 + t as i64 * 13) % 500;
                    c.query_drop(format!("UPDATE sbtest1 SET k = k + 1 WHERE id = {id}"))
                        .unwrap();
                    i += 1;
                }
            })
        })
        .collect()
}

/// A source, a replica of it (tables created alike, 500 rows through
/// replication), and the replica caught up.
fn pair(dir: &Path, replica_sets: &[&str]) -> (Server, Server) {
    let src = Server::start(dir, "src", &["log_bin=ON", "sync_binlog=1"]);
    let rep = Server::start(dir, "rep", replica_sets);
    src.conn().query_drop(TABLE).unwrap();
    rep.conn().query_drop(TABLE).unwrap();
    let mut r = rep.conn();
    r.query_drop(format!(
        "CHANGE REPLICATION SOURCE TO SOURCE_SOCKET='{}'",
        src.socket.display()
    ))
    .unwrap();
    r.query_drop("START REPLICA").unwrap();
    let mut c = src.conn();
    for chunk in 0..5 {
        let rows: Vec<String> = (1..=100)
            .map(|i| format!("({}, 0, 'c', 'p')", chunk * 100 + i))
            .collect();
        c.query_drop(format!(
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES {}",
            rows.join(",")
        ))
        .unwrap();
    }
    common::wait("the replica has the rows", 30, || {
        let n: Option<i64> = rep
            .conn()
            .query_first("SELECT COUNT(*) FROM sbtest1")
            .unwrap();
        n == Some(500)
    });
    (src, rep)
}

fn probe(pid: u32) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["probe", "--pid", &pid.to_string()])
        .args(["--interval", "1s", "--duration", "3s", "--json"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sum(ws: &[Value], f: impl Fn(&Value) -> u64) -> u64 {
    ws.iter().map(f).sum()
}

fn wakeups(w: &Value, a: &str, b: &str) -> u64 {
    w["wakeups"]["by_role"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["waker"] == a && e["wakee"] == b)
        .map(|e| e["count"].as_u64().unwrap())
        .sum()
}

fn lock_waits(w: &Value, name: &str) -> u64 {
    w["named_lock_waits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["lock"] == name)
        .map(|l| l["waits"].as_u64().unwrap())
        .sum()
}

struct Span {
    windows: Vec<Value>,
    fsyncs: u64,
    lock_waits: u64,
    wakeups: u64,
    applied: u64,
}

/// The replica probed for 3 s under load, with its counters read around it.
fn observe(src: &Server, rep: &Server) -> Span {
    let stop = Arc::new(AtomicBool::new(false));
    let clients = load(src, 8, &stop);
    std::thread::sleep(Duration::from_millis(500));
    let get = |n: &str| rep.status(n);
    let b = [
        get("Relay_log_fsyncs"),
        get("Relay_log_lock_waits"),
        get("Receiver_applier_wakeups"),
        get("Replica_trx_applied"),
    ];
    let windows = probe(rep.pid());
    let a = [
        get("Relay_log_fsyncs"),
        get("Relay_log_lock_waits"),
        get("Receiver_applier_wakeups"),
        get("Replica_trx_applied"),
    ];
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    Span {
        windows,
        fsyncs: a[0] - b[0],
        lock_waits: a[1] - b[1],
        wakeups: a[2] - b[2],
        applied: a[3] - b[3],
    }
}

/// `probe` within `tol` of `engine` (the probed span lies inside the
/// counters' bracket, which is wider by up to `slack` of its rate).
fn close(what: &str, probe: u64, engine: u64, tol: f64) {
    let (p, e) = (probe as f64, engine as f64);
    assert!(
        p <= e * (1.0 + tol) + 5.0 && p >= e * (1.0 - tol) - 5.0,
        "{what}: probes {probe}, engine {engine}"
    );
}

#[test]
fn the_probes_see_the_replica_threads_and_the_designs_differ() {
    if skip() {
        return;
    }
    need_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let (src, rep) = pair(
        dir.path(),
        &[
            "replica_relay_log_arbitration=lock",
            "replica_parallel_workers=2",
            "sync_relay_log=1",
        ],
    );

    let lock = observe(&src, &rep);
    let w0 = &lock.windows[0];
    for (role, n) in [("receiver", 1), ("applier", 1), ("worker", 2)] {
        assert_eq!(w0["roles"][role]["threads"], n, "{role}: {}", w0["roles"]);
    }
    let relay_fsyncs = sum(&lock.windows, |w| {
        w["io"]["relay"]["fsync_calls"].as_u64().unwrap_or(0)
    });
    assert!(lock.applied > 1000, "the replica applied {}", lock.applied);
    // Each bracketing read may add up to 0.5 s of the rate beyond the span.
    close(
        "relay fsyncs (lock)",
        relay_fsyncs,
        lock.fsyncs * 3 / 4,
        0.4,
    );
    assert!(
        relay_fsyncs > 0 && relay_fsyncs <= lock.fsyncs,
        "{relay_fsyncs} {}",
        lock.fsyncs
    );
    let probed_lock_waits = sum(&lock.windows, |w| lock_waits(w, "relay_log.lock"));
    assert!(
        probed_lock_waits > 0 && lock.lock_waits > 0,
        "the lock design blocks: probes {probed_lock_waits}, engine {}",
        lock.lock_waits
    );

    rep.conn()
        .query_drop("SET GLOBAL replica_relay_log_arbitration = 'position'")
        .unwrap();
    let pos = observe(&src, &rep);
    assert_eq!(
        pos.lock_waits, 0,
        "position: the engine never waited on the lock"
    );
    let probed = sum(&pos.windows, |w| lock_waits(w, "relay_log.lock"));
    assert!(
        probed * 10 <= probed_lock_waits.max(10),
        "position: the probes see (almost) no relay_log.lock waits: {probed} vs {probed_lock_waits}"
    );
    // Under position the receiver wakes the applier only when it sleeps
    // with nothing queued: what the engine counts is what the scheduler saw.
    let r2a = sum(&pos.windows, |w| wakeups(w, "receiver", "applier"));
    assert!(
        r2a <= pos.wakeups + 5,
        "probes {r2a} wakeups, engine {}",
        pos.wakeups
    );
    let per_trx = |s: &Span| {
        sum(&s.windows, |w| {
            wakeups(w, "receiver", "applier") + wakeups(w, "applier", "receiver")
        }) as f64
            / s.applied.max(1) as f64
    };
    assert!(
        per_trx(&pos) < per_trx(&lock),
        "fewer receiver<->applier wakeups per transaction under position: {} vs {}",
        per_trx(&pos),
        per_trx(&lock)
    );
}

#[test]
fn diagnose_names_the_relay_log_bottleneck_and_judges_by_the_applier() {
    if skip() {
        return;
    }
    need_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let (src, rep) = pair(
        dir.path(),
        &[
            "replica_relay_log_arbitration=lock",
            "replica_parallel_workers=0",
            "sync_relay_log=1",
        ],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let clients = load(&src, 8, &stop);
    std::thread::sleep(Duration::from_millis(500));
    let o = Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["diagnose", "--pid", &rep.pid().to_string()])
        .arg("--socket")
        .arg(&rep.socket)
        .args(["--duration", "4s", "--format", "json"])
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let d: Value = serde_json::from_str(&out).unwrap();
    assert!(
        d["summary"]["replica_applier_threads"].as_f64().unwrap() >= 1.0,
        "{}",
        d["summary"]
    );
    // Fired rules: advised, or held back by the decision rule (then they
    // wait for a trial), each with its reason.
    let ids: Vec<&str> = ["recommendations", "not_applied"]
        .iter()
        .flat_map(|k| d[*k].as_array().unwrap().iter())
        .filter_map(|a| a["rule"].as_str())
        .collect();
    assert!(
        ids.contains(&"replica-position-arbitration") && ids.contains(&"replica-sync-relay-log"),
        "advice: {ids:?}\nsummary: {}",
        d["summary"]
    );
    assert_eq!(
        d["facts"]["counters"]["replica_running"], 1.0,
        "{}",
        d["facts"]
    );

    // A trial on the replica is judged by the applier's own counter.
    let stop = Arc::new(AtomicBool::new(false));
    let clients = load(&src, 8, &stop);
    let o = Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["diagnose", "--pid", &rep.pid().to_string()])
        .arg("--socket")
        .arg(&rep.socket)
        .args([
            "--duration",
            "2s",
            "--format",
            "json",
            "--trial",
            "--trial-max",
            "6s",
        ])
        .arg("--state")
        .arg(dir.path().join("state.json"))
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("a trial judges its applier's rate (Replica_trx_applied)"),
        "{err}"
    );
    let d: Value = serde_json::from_str(&out).unwrap();
    assert!(!d["trial"].is_null(), "a trial ran: {err}");
}
