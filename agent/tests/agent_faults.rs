//! The probes and the daemon under faults, with real processes (root: the
//! probes): a probe map that fills up, a target whose connection threads
//! come and go by the thousand, a target killed while the probes are
//! attached, and an admin socket that disappears in the middle of a trial.
//! Each must end with no crash, nothing left in the kernel, and a clear
//! account of what was lost.

mod common;

use common::{bpf_prog_exists, events, program_ids, status_json, wait};

use std::io::Read;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_redoctor");

use redoctor_testkit::agent_config::{AgentConfig, Target};
use redoctor_testkit::KillOnDrop as Proc;

/// `redoctor-engine run` under an update load, with an admin socket.
fn engine_run(dir: &Path, users: u32) -> (Proc, PathBuf) {
    let socket = dir.join("admin.sock");
    let child = Command::new(common::engine())
        .args(["run", "--workload", "update_index", "--tables", "1"])
        .args(["--table-size", "2000", "--duration", "600", "--warmup", "0"])
        .arg("--users")
        .arg(users.to_string())
        .arg("--admin-socket")
        .arg(&socket)
        .arg("--datadir")
        .arg(dir.join("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let p = Proc(child);
    wait("the engine's admin socket", 60, || socket.exists());
    (p, socket)
}

fn conn(socket: &Path) -> mysql::Conn {
    let o = mysql::OptsBuilder::new()
        .socket(Some(socket.to_str().unwrap()))
        .user(Some("root"));
    mysql::Conn::new(o).unwrap()
}

fn var(socket: &Path, name: &str) -> String {
    let rows: Vec<(String, String)> = conn(socket)
        .query(format!("SHOW GLOBAL VARIABLES LIKE '{name}'"))
        .unwrap();
    rows.into_iter().next().unwrap().1
}

fn agent(config: &Path, log: &Path) -> Proc {
    let f = std::fs::File::create(log).unwrap();
    Proc(
        Command::new(BIN)
            .arg("agent")
            .arg("--config")
            .arg(config)
            .stdout(Stdio::null())
            .stderr(f)
            .spawn()
            .unwrap(),
    )
}

fn alive(p: &mut Proc) -> bool {
    p.0.try_wait().unwrap().is_none()
}

/// SIGTERM; asserts a clean exit within 5 s (every probe detached).
fn term(p: &mut Proc, log: &Path) {
    unsafe { libc::kill(p.0.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    loop {
        if let Some(s) = p.0.try_wait().unwrap() {
            assert!(
                s.success(),
                "{s}: {}",
                std::fs::read_to_string(log).unwrap()
            );
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "no exit after SIGTERM"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

fn probe_ids(state: &Path) -> Vec<u32> {
    program_ids(state, "probe_program_ids")
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// A wakeup map of one entry fills at once: every further pair's wakeups
/// are counted as lost and said so; with the default capacity none are.
#[test]
fn a_full_probe_map_is_counted_and_reported_never_silent() {
    if common::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (e, _) = engine_run(dir.path(), 16);
    let run = |pairs: &str, json: bool| {
        let mut c = Command::new(BIN);
        c.args(["probe", "--pid", &e.0.id().to_string(), "--interval", "1s"])
            .args(["--duration", "3s", "--wake-pairs", pairs]);
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        (out, err)
    };
    let lost = |out: &str| -> u64 {
        out.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| v["events_lost"].as_u64().unwrap())
            .sum()
    };
    let (out, err) = run("1", true);
    assert!(lost(&out) > 0, "one entry for every wakeup pair: {out}");
    assert!(
        err.contains("were not recorded because a probe map was full"),
        "{err}"
    );
    let (text, _) = run("1", false);
    assert!(text.contains("LOST: "), "{text}");
    let (out, err) = run("65536", true);
    assert_eq!(lost(&out), 0, "{out}");
    assert!(!err.contains("not recorded"), "{err}");
}

/// Thousands of short connections a second against `serve` (each a new
/// connection thread): the agent keeps sampling, stays within its memory
/// budget, and detaches everything on SIGTERM.
#[test]
fn thread_churn_is_observed_within_budget_and_leaves_nothing() {
    if common::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("serve.sock");
    let server = Proc(
        Command::new(common::engine())
            .arg("serve")
            .arg("--datadir")
            .arg(dir.path().join("data"))
            .arg("--socket")
            .arg(&socket)
            .args(["--redo-threads", "on"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait("serve's socket", 60, || socket.exists());
    let state = dir.path().join("state");
    let cfg = AgentConfig::new(&state)
        .metrics("off")
        .budget("tps_percent", 50.0)
        .target(
            Target::pid("serve", server.0.id())
                .socket(&socket)
                .set("mode", "recommend")
                .sampling("3s", "200ms", "1s"),
        )
        .write(dir.path());
    let log = dir.path().join("agent.log");
    let mut a = agent(&cfg, &log);
    wait("attached", 30, || !events(&state, "attached").is_empty());

    let stop = Arc::new(AtomicBool::new(false));
    let made = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (stop, made, socket) = (stop.clone(), made.clone(), socket.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let mut c = conn(&socket);
                    let _: Option<u64> = c.query_first("SELECT 1").unwrap();
                    drop(c);
                    made.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let t0 = Instant::now();
    let mut samples = std::collections::BTreeSet::new();
    let mut peak_rss = 0;
    while t0.elapsed() < Duration::from_secs(12) {
        assert!(alive(&mut a), "{}", std::fs::read_to_string(&log).unwrap());
        peak_rss = peak_rss.max(rss_kib(a.0.id()));
        if let Some(t) = status_json(&state)["targets"][0]["last_sample_unix_ms"].as_u64() {
            samples.insert(t);
        }
        thread::sleep(Duration::from_millis(250));
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let rate = made.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64();
    eprintln!("{rate:.0} connections/s; agent peak RSS {peak_rss} KiB");
    assert!(rate > 200.0, "churn too slow to mean anything: {rate:.0}/s");
    assert!(
        samples.len() >= 2,
        "sampled {} times in 12 s of churn",
        samples.len()
    );
    assert!(
        peak_rss < 64 * 1024,
        "RSS {peak_rss} KiB over the 64 MiB budget"
    );
    let st = status_json(&state);
    assert!(st["targets"][0]["last_error"].is_null(), "{st}");
    term(&mut a, &log);
    drop(server);
}

/// The target is killed while the probes are attached: reported, the
/// agent lives on, and the kernel holds none of the probes' programs.
#[test]
fn target_killed_mid_window_is_reported_and_leaves_no_bpf_objects() {
    if common::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut e, _) = engine_run(dir.path(), 4);
    let state = dir.path().join("state");
    let cfg = AgentConfig::new(&state)
        .metrics("off")
        .budget("tps_percent", 50.0)
        .target(
            Target::pid("engine", e.0.id())
                .set("mode", "observe")
                .sampling("60s", "0s", "30s"),
        )
        .write(dir.path());
    let log = dir.path().join("agent.log");
    let mut a = agent(&cfg, &log);
    let mut ids = vec![];
    wait("the probes attached", 30, || {
        ids = probe_ids(&state);
        !ids.is_empty()
    });
    // The fsync counters go with the target too.
    let fsync_ids = program_ids(&state, "fsync_program_ids");
    assert_eq!(fsync_ids.len(), 2, "{fsync_ids:?}");
    ids.extend(fsync_ids);
    assert!(ids.iter().any(|id| bpf_prog_exists(*id)), "{ids:?}");
    e.0.kill().unwrap();
    e.0.wait().unwrap();
    wait("the target reported gone", 30, || {
        !events(&state, "target_gone").is_empty()
    });
    wait("the probes detached", 10, || {
        !ids.iter().any(|id| bpf_prog_exists(*id))
    });
    thread::sleep(Duration::from_secs(1));
    assert!(alive(&mut a), "{}", std::fs::read_to_string(&log).unwrap());
    term(&mut a, &log);
}

/// A Unix-socket forwarder in front of the server's admin socket that can
/// be cut (its socket file removed, every forwarded connection shut):
/// the admin socket disappearing as a server's would.
struct Forwarder {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<UnixStream>>>,
    accept: Option<thread::JoinHandle<()>>,
}

impl Forwarder {
    fn start(path: &Path, to: &Path) -> Forwarder {
        let _ = std::fs::remove_file(path);
        let l = UnixListener::bind(path).unwrap();
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<Vec<UnixStream>>> = Arc::default();
        let (s, st, to) = (stop.clone(), streams.clone(), to.to_path_buf());
        let accept = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let Ok((client, _)) = l.accept() else {
                    thread::sleep(Duration::from_millis(10));
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                let server = UnixStream::connect(&to).unwrap();
                let mut list = st.lock().unwrap();
                for (mut from, mut into) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server.try_clone().unwrap(), client.try_clone().unwrap()),
                ] {
                    thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut into);
                        let _ = into.shutdown(std::net::Shutdown::Both);
                    });
                }
                list.push(client);
                list.push(server);
            }
        });
        Forwarder {
            path: path.to_path_buf(),
            stop,
            streams,
            accept: Some(accept),
        }
    }

    fn cut(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            h.join().unwrap();
        }
        let _ = std::fs::remove_file(&self.path);
        for s in self.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.cut();
    }
}

/// The admin socket disappears in the middle of a trial: the trial is
/// abandoned and recorded, the journal keeps it, the agent keeps running,
/// and when the socket is back the baseline is restored before anything
/// else.
#[test]
fn admin_socket_gone_mid_trial_is_recorded_and_reconciled() {
    if common::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (e, real) = engine_run(dir.path(), 4);
    let front = dir.path().join("front.sock");
    let mut fwd = Forwarder::start(&front, &real);
    let state = dir.path().join("state");
    let cfg = AgentConfig::new(&state)
        .metrics("off")
        .budget("tps_percent", 5.0)
        .target(
            Target::pid("engine", e.0.id())
                .socket(&front)
                .set("mode", "apply")
                .knobs(&["redoctor_debug_commit_sleep_us"])
                .candidates(&[&[("redoctor_debug_commit_sleep_us", "50")]])
                .sampling("30s", "500ms", "1s")
                .guardrail("floor", 0.0)
                .trial("window", "1s")
                .trial("warmup", "0s")
                .trial("design", "pairs")
                .trial("min_pairs", 40)
                .trial("max_pairs", 40)
                .trial("max_total", "120s"),
        )
        .write(dir.path());
    let log = dir.path().join("agent.log");
    let mut a = agent(&cfg, &log);
    wait("the candidate applied", 60, || {
        !events(&state, "trial_started").is_empty()
            && var(&real, "redoctor_debug_commit_sleep_us") == "50"
    });
    fwd.cut();
    wait("the trial recorded as abandoned", 30, || {
        !events(&state, "trial").is_empty()
    });
    let t = &events(&state, "trial")[0];
    assert_eq!(t["outcome"], "failed", "{t}");
    assert!(t["error"].is_string(), "the cause is recorded: {t}");
    // The trial's line is written before the restore is found pending.
    wait("the restore recorded as pending", 10, || {
        !events(&state, "restore_pending").is_empty()
    });
    let pending = events(&state, "restore_pending");
    assert_eq!(pending.len(), 1, "{pending:?}");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(state.join("targets/engine.json")).unwrap())
            .unwrap();
    assert_eq!(
        j["open_trial"]["baseline"]["redoctor_debug_commit_sleep_us"], "0",
        "the journal keeps the trial: {j}"
    );
    assert_eq!(var(&real, "redoctor_debug_commit_sleep_us"), "50");
    thread::sleep(Duration::from_secs(2));
    assert!(alive(&mut a), "{}", std::fs::read_to_string(&log).unwrap());

    // The socket is back: the next connection restores the baseline first.
    let _back = Forwarder::start(&front, &real);
    wait("the restore", 30, || {
        var(&real, "redoctor_debug_commit_sleep_us") == "0"
    });
    // The setting is restored before the audit line is written.
    wait("the restore audited", 10, || {
        !events(&state, "reconciled").is_empty()
    });
    let r = events(&state, "reconciled");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["restored"][0]["to"], "0", "{r:?}");
    wait("the journal cleared", 10, || {
        let j: Value = serde_json::from_str(
            &std::fs::read_to_string(state.join("targets/engine.json")).unwrap_or_default(),
        )
        .unwrap_or(Value::Null);
        j["open_trial"].is_null()
    });
    let mut s = String::new();
    std::fs::File::open(&log)
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert!(s.contains("was interrupted; restored 1 setting"), "{s}");
    term(&mut a, &log);
}
