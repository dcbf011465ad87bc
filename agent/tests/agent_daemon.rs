//! `redoctor agent` end to end, with real processes (root: the probes):
//! the bundled engine under load with its admin socket, the agent started
//! as a user would, its audit log, status file, metrics endpoint and the
//! kernel's BPF object list read back.

mod common;

use common::bpf::{bpf_objects_of, bpf_prog, bpf_still_held, BpfProg};
use common::{
    audit, bpf_prog_exists, events, free_port, program_ids, status_json, wait, write_config,
};

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use redoctor_testkit::agent_config::{AgentConfig, Target};
use redoctor_testkit::KillOnDrop;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_redoctor");

/// `redoctor-engine run` under load with an admin socket; killed on drop.
struct Engine {
    child: KillOnDrop,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Engine {
    fn start(users: u32) -> Engine {
        Engine::start_bin(&common::engine(), users)
    }

    /// The engine run from `bin` (see `common::engine_named`).
    fn start_bin(bin: &Path, users: u32) -> Engine {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("admin.sock");
        let mut cmd = Command::new(bin);
        cmd.args(["run", "--workload", "update_index", "--tables", "1"])
            .args(["--table-size", "2000", "--duration", "600", "--warmup", "0"])
            .arg("--users")
            .arg(users.to_string())
            .arg("--admin-socket")
            .arg(&socket)
            .arg("--datadir")
            .arg(dir.path().join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = KillOnDrop(common::spawn_copied(&mut cmd));
        let e = Engine {
            child,
            socket,
            _dir: dir,
        };
        wait("the engine's admin socket", 60, || e.socket.exists());
        e
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn conn(&self) -> mysql::Conn {
        let o = mysql::OptsBuilder::new()
            .socket(Some(self.socket.to_str().unwrap()))
            .user(Some("root"));
        mysql::Conn::new(o).unwrap()
    }

    fn status(&self, name: &str) -> u64 {
        let rows: Vec<(String, String)> = self
            .conn()
            .query(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
            .unwrap();
        rows.into_iter().next().unwrap().1.parse().unwrap()
    }

    fn var(&self, name: &str) -> String {
        let rows: Vec<(String, String)> = self
            .conn()
            .query(format!("SHOW GLOBAL VARIABLES LIKE '{name}'"))
            .unwrap();
        rows.into_iter().next().unwrap().1
    }
}

/// A running agent; SIGKILLed on drop if still running.
struct Agent {
    child: KillOnDrop,
    log: PathBuf,
}

impl Agent {
    fn start(config: &Path) -> Agent {
        let log = config.with_extension(format!("{}.log", Instant::now().elapsed().as_nanos()));
        let f = std::fs::File::create(&log).unwrap();
        let child = Command::new(BIN)
            .arg("agent")
            .arg("--config")
            .arg(config)
            .stdout(Stdio::null())
            .stderr(f)
            .spawn()
            .unwrap();
        Agent {
            child: KillOnDrop(child),
            log,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, sig: i32) {
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// Sends SIGTERM; the exit status, or a panic after `secs`.
    fn term(&mut self, secs: u64) -> std::process::ExitStatus {
        self.signal(libc::SIGTERM);
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(secs),
                "the agent did not exit within {secs} s of SIGTERM:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// The response, or "" while nothing listens yet.
fn http_get(port: u16, path: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    use std::io::Write;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn check_config(body: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = write_config(dir.path(), body);
    let o = Command::new(BIN)
        .args(["agent", "--check-config"])
        .arg(&p)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn config_errors_name_the_key_and_line_and_start_nothing() {
    let base = "[agent]\nstate_dir = \"STATE\"\n\n[[target]]\nname = \"db\"\npid = 1\n";
    for (extra, want) in [
        ("colour = \"red\"\n", vec!["line 7", "colour"]),
        (
            "[target.sampling]\nevery = \"5 fortnights\"\n",
            vec!["line 8", "fortnights"],
        ),
        (
            "knobs = [\"innodb_flush_log_at_trx_commit\"]\n",
            vec![
                "line 7",
                "innodb_flush_log_at_trx_commit",
                "allow_durability",
            ],
        ),
        ("process = \"x\"\n", vec!["line 4", "exactly one of pid"]),
        ("profile = \"oracle\"\n", vec!["line 4", "oracle"]),
        (
            "[agent.log]\nlevel = \"redoctor=loud\"\n",
            vec!["agent.log.level", "not a log filter"],
        ),
        ("[agent.log]\nformat = \"xml\"\n", vec!["xml"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let body = base.replace("STATE", state.to_str().unwrap()) + extra;
        let (ok, err) = check_config(&body);
        assert!(!ok, "{extra}: accepted");
        for w in &want {
            assert!(err.contains(w), "{extra}: `{w}` not in: {err}");
        }
        let p = write_config(dir.path(), &body);
        let o = Command::new(BIN)
            .args(["agent", "--config"])
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{extra}");
        assert!(!state.exists(), "{extra}: the agent created its state dir");
    }
    let (ok, err) = check_config(&base.replace("STATE", "/tmp/unused"));
    assert!(ok, "{err}");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agent.toml");
    let o = Command::new(BIN)
        .args(["agent", "--check-config"])
        .arg(&example)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the shipped example config: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Observe mode: metrics parse, bind loopback only, cover the dashboard;
/// status; SIGHUP reloads (and refuses a bad file); SIGTERM exits 0 in 5 s.
#[test]
fn observes_exports_metrics_on_loopback_reloads_and_stops() {
    if common::skip() {
        return;
    }
    common::need_tracefs();
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let port = free_port();
    // Both targets in `mode`.
    let config = |mode: &str| {
        AgentConfig::new(&state)
            .metrics(format!("127.0.0.1:{port}"))
            .budget("tps_percent", 20.0)
            .target(
                Target::pid("engine", e.pid())
                    .socket(&e.socket)
                    .set("mode", mode)
                    .sampling("4s", "500ms", "1s"),
            )
            .target(Target::process("absent", "no-such-db").set("mode", mode))
    };
    let cfg = config("observe").write(dir.path());
    let mut a = Agent::start(&cfg);
    wait("a sampled observation", 60, || {
        http_get(port, "/metrics").contains("redoctor_samples_total{target=\"engine\"} 1")
    });
    let resp = http_get(port, "/metrics");
    let (head, text) = resp.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape =
        prometheus_parse::Scrape::parse(lines).expect("a Prometheus text-format parser reads it");
    let value = |name: &str| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && s.labels.get("target") == Some("engine"))
            .map(|s| match s.value {
                prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
            .unwrap_or_else(|| panic!("{name} missing from:\n{text}"))
    };
    assert_eq!(value("redoctor_target_up"), 1.0);
    assert_eq!(value("redoctor_target_pid"), e.pid() as f64);
    // The fsync counters, attached between windows: redo-log fsyncs (the
    // engine's own count runs from its start, theirs from their attach),
    // each call in the latency histogram.
    assert_eq!(value("redoctor_agent_fsync_counters_attached"), 1.0);
    let redo = |metric: &str| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && s.labels.get("file") == Some("redo"))
            .map(|s| match &s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => *v,
                prometheus_parse::Value::Histogram(h) => {
                    h.iter().map(|b| b.count).fold(0.0, f64::max)
                }
                _ => f64::NAN,
            })
            .unwrap_or_else(|| panic!("{metric} for the redo log missing from:\n{text}"))
    };
    let fsyncs = redo("redoctor_target_fsyncs_total");
    let engine_fsyncs: u64 = e.status("Innodb_os_log_fsyncs");
    assert!(
        fsyncs > 0.0 && fsyncs <= engine_fsyncs as f64,
        "{fsyncs} redo fsyncs counted, the engine's {engine_fsyncs} since its start"
    );
    // +Inf holds every call (a tick may land between the two families'
    // encoding, so it is bounded by the engine's count, read after).
    let in_histogram = redo("redoctor_target_fsync_latency_seconds");
    assert!(
        in_histogram > 0.0 && in_histogram <= engine_fsyncs as f64,
        "{in_histogram} calls in the histogram, the engine's {engine_fsyncs}"
    );
    assert!(value("redoctor_target_commits_per_second") > 0.0);
    assert!(value("redoctor_agent_bpf_events_total") > 0.0);
    let duty = value("redoctor_agent_probe_duty_cycle");
    assert!(duty > 0.0 && duty < 0.9, "duty cycle {duty}");
    // The cost estimate: the duty cycle at a loaded window's 14%, plus the
    // fsync counters' share.
    let cost = value("redoctor_agent_tps_cost_percent");
    let fsync_cost = value("redoctor_agent_fsync_counters_cost_percent");
    assert!(
        cost >= fsync_cost && cost <= 14.0 * duty + fsync_cost + 1.0,
        "cost {cost}%, duty {duty}, fsync counters {fsync_cost}%"
    );
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "redoctor_signal"
            && s.labels.get("signal") == Some("cpu_us_per_commit")));
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "redoctor_agent_rss_bytes"));
    // Every metric the shipped dashboard charts is exported.
    let dash = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("grafana/redoctor-agent.json"),
    )
    .unwrap();
    let _: Value = serde_json::from_str(&dash).expect("the dashboard is JSON");
    for name in dash
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("redoctor_"))
    {
        let family = ["_total", "_bucket"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "the dashboard charts {name}, which the agent does not export"
        );
    }
    assert!(http_get(port, "/other").starts_with("HTTP/1.1 404"));
    // Bound to loopback only: the kernel's socket table lists one listener
    // on the port, at 127.0.0.1.
    let hex_port = format!(":{port:04X} ");
    let listeners: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(hex_port.trim()) && f[3] == "0A"
        })
        .collect();
    assert_eq!(listeners.len(), 1, "{listeners:?}");
    assert!(
        listeners[0]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .starts_with("0100007F:"),
        "{listeners:?}"
    );

    // Observe mode: signals and metrics only, no advice anywhere.
    assert!(
        !text.contains("redoctor_advice_info{") && !text.contains("redoctor_advice_changes{"),
        "{text}"
    );
    assert!(events(&state, "advice").is_empty());
    wait("the status file", 10, || {
        status_json(&state)["targets"][0]["fsyncs"]["redo"]["per_s"].as_f64() > Some(0.0)
    });
    let o = Command::new(BIN)
        .args(["agent", "status", "--json", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let st: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(st["running"], true);
    assert_eq!(st["targets"][0]["pid"], e.pid());
    // A target that is not running is reported, not fatal.
    assert_eq!(st["targets"][1]["name"], "absent");
    assert_eq!(st["targets"][1]["state"], "waiting for the target process");
    assert!(
        text.contains("redoctor_target_up{target=\"absent\"} 0"),
        "{text}"
    );
    assert!(st["targets"][0]["verdict"].is_null(), "{st}");
    assert!(
        st["targets"][0]["fsyncs"]["redo"]["per_s"].as_f64() > Some(0.0),
        "{st}"
    );
    let o = Command::new(BIN)
        .args(["agent", "status", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&o.stdout);
    // The fsyncs line lists each file kind seen, in name order: `other`
    // (the data directory's fsync after a checkpoint) may come first.
    let fsyncs = human
        .lines()
        .find(|l| l.trim_start().starts_with("fsyncs: "));
    assert!(
        human.contains("engine [Observe]")
            && human.contains("advice: none in observe mode")
            && fsyncs.is_some_and(|l| l.contains(" redo ")),
        "{human}"
    );

    // SIGHUP: a bad file is refused and the agent goes on; a good one reloads.
    config("sideways").write(dir.path());
    a.signal(libc::SIGHUP);
    wait("the reload refused", 20, || {
        !events(&state, "config_rejected").is_empty()
    });
    assert!(a.child.try_wait().unwrap().is_none());
    config("recommend").write(dir.path());
    a.signal(libc::SIGHUP);
    wait("the reload", 20, || {
        !events(&state, "config_reloaded").is_empty()
    });
    wait("the new mode exported", 20, || {
        http_get(port, "/metrics").contains("mode=\"recommend\"")
    });
    // Recommend mode: the advice is logged, exported and shown.
    wait("the advice exported and logged", 30, || {
        http_get(port, "/metrics").contains("redoctor_advice_changes{target=\"engine\"}")
            && !events(&state, "advice").is_empty()
            && status_json(&state)["targets"][0]["verdict"].is_string()
    });
    let s = a.term(5);
    assert!(s.success(), "exit {s:?}: {}", a.stderr());
    assert_eq!(events(&state, "agent_stopped").len(), 1);
}

/// A forced bad candidate (a commit-path sleep that cuts throughput far
/// below the floor) is rolled back right after its first measured window,
/// and the trial aborted at the second.
/// An apply-mode config for target `pid` over `socket` whose one
/// candidate (a 5 ms sleep in every commit) is scripted to be bad.
fn forced_bad_candidate(state: &Path, pid: u32, socket: &Path, design: &str) -> AgentConfig {
    with_target(state, forced_bad_target(pid, socket, design))
}

/// The target of [`forced_bad_candidate`], to amend.
fn forced_bad_target(pid: u32, socket: &Path, design: &str) -> Target {
    Target::pid("engine", pid)
        .socket(socket)
        .set("mode", "apply")
        .knobs(&["redoctor_debug_commit_sleep_us"])
        .candidates(&[&[("redoctor_debug_commit_sleep_us", "5000")]])
        .sampling("30s", "500ms", "1s")
        .trial("design", design)
        .trial("window", "1s")
        .trial("warmup", "500ms")
}

/// An agent config for `t` alone, metrics off, a 5% TPS budget.
fn with_target(state: &Path, t: Target) -> AgentConfig {
    AgentConfig::new(state)
        .metrics("off")
        .budget("tps_percent", 5.0)
        .target(t)
}

#[test]
fn a_bad_candidate_is_rolled_back_within_one_window() {
    if common::skip() {
        return;
    }
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cfg = forced_bad_candidate(&state, e.pid(), &e.socket, "pairs").write(dir.path());
    let mut a = Agent::start(&cfg);
    wait("the trial's outcome", 60, || {
        !events(&state, "trial").is_empty()
    });
    let t = &events(&state, "trial")[0];
    assert_eq!(t["outcome"], "aborted_floor", "{t}");
    // Each low candidate window is undone at once (the baseline's warm-up
    // follows it directly); the second in a row ends the trial.
    let windows = t["windows"].as_array().unwrap();
    let measured: Vec<usize> = (0..windows.len())
        .filter(|&i| windows[i]["side"] == "candidate" && windows[i]["warmup"] == false)
        .collect();
    assert_eq!(measured.len(), 2, "aborted at the second low window: {t}");
    let after_first = &windows[measured[0] + 1];
    assert_eq!(
        (&after_first["side"], &after_first["warmup"]),
        (&Value::from("baseline"), &Value::from(true)),
        "rolled back right after one verification window: {t}"
    );
    assert_eq!(
        windows.len(),
        measured[1] + 1,
        "nothing measured after the abort: {t}"
    );
    assert_eq!(e.var("redoctor_debug_commit_sleep_us"), "0");
    assert_eq!(t["now"]["redoctor_debug_commit_sleep_us"], "0", "{t}");
    let started = events(&state, "trial_started");
    assert_eq!(started.len(), 1);
    assert!(started[0]["candidate"]
        .as_str()
        .unwrap()
        .contains("from the config"));
    // Its evidence: the verdict and the load the trial started under.
    let ev = &started[0]["evidence"];
    assert!(ev["verdict"].is_string(), "{ev}");
    assert!(ev["load"]["commits_per_s"].as_f64() > Some(0.0), "{ev}");
    assert!(ev["rules"].is_array(), "{ev}");
    // The outcome is in `agent status --json` too.
    wait("the trial in the status file", 10, || {
        status_json(&state)["targets"][0]["trials"][0]["outcome"] == "aborted_floor"
    });
    // The audit line is written before the journal closes the trial: wait
    // for the journal to be saved, then check what it holds.
    let journal = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(state.join("targets/engine.json")).unwrap())
            .unwrap()
    };
    wait("the journal to close the trial", 10, || {
        journal()["open_trial"].is_null()
    });
    let j = journal();
    assert!(
        j["open_trial"].is_null() && j["changes"].as_array().unwrap().is_empty(),
        "{j}"
    );
    assert!(a.term(5).success());
}

/// A candidate that lost is tried again once `retry_after` has passed, and
/// after a second loss waits twice as long (the audit line says when).
#[test]
fn a_lost_candidate_is_tried_again_after_its_wait_doubling() {
    if common::skip() {
        return;
    }
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let t = forced_bad_target(e.pid(), &e.socket, "pairs")
        .sampling_key("every", "10s")
        .guardrail("retry_after", "3s");
    let cfg = with_target(&state, t).write(dir.path());
    let mut a = Agent::start(&cfg);
    wait("two trials of the candidate", 90, || {
        events(&state, "trial").len() >= 2
    });
    let trials = events(&state, "trial");
    let started = events(&state, "trial_started");
    for (t, wait_s) in trials.iter().zip([3.0, 6.0]) {
        assert_eq!(t["outcome"], "aborted_floor", "{t}");
        assert_eq!(t["retry_in_s"].as_f64(), Some(wait_s), "{t}");
    }
    let ms = |v: &Value| v["ts_unix_ms"].as_u64().unwrap();
    let gap = ms(&started[1]).saturating_sub(ms(&trials[0]));
    assert!(
        gap >= 3000,
        "tried again {gap} ms after it lost, before its 3-s wait"
    );
    assert_eq!(e.var("redoctor_debug_commit_sleep_us"), "0");
    assert!(a.term(5).success());
}

/// The same bad candidate in the daemon's default design: the knob's
/// carryover is known (300 ms, the engine's spin gate), so the trial runs
/// 600-ms switchback periods and the floor guard undoes it after two
/// judged periods (three when the trial opens on the candidate, before
/// any baseline span to judge it against).
#[test]
fn a_bad_candidate_in_switchback_periods_is_rolled_back_within_three_periods() {
    if common::skip() {
        return;
    }
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cfg = forced_bad_candidate(&state, e.pid(), &e.socket, "auto").write(dir.path());
    let mut a = Agent::start(&cfg);
    wait("the trial's outcome", 60, || {
        !events(&state, "trial").is_empty()
    });
    let started = &events(&state, "trial_started")[0];
    assert!(
        started["plan"].as_str().unwrap().starts_with("switchback"),
        "{started}"
    );
    assert!(
        started["candidate"]
            .as_str()
            .unwrap()
            .contains("trial design: switchback"),
        "{started}"
    );
    let t = &events(&state, "trial")[0];
    assert_eq!(t["outcome"], "aborted_floor", "{t}");
    let windows = t["windows"].as_array().unwrap();
    let candidate_secs: f64 = windows
        .iter()
        .filter(|w| w["side"] == "candidate")
        .map(|w| w["secs"].as_f64().unwrap())
        .sum();
    assert!(
        candidate_secs < 2.0,
        "the bad setting ran {candidate_secs:.2} s, more than three 600-ms periods: {t}"
    );
    assert_eq!(e.var("redoctor_debug_commit_sleep_us"), "0");
    assert_eq!(t["now"]["redoctor_debug_commit_sleep_us"], "0", "{t}");
    assert!(a.term(5).success());
}

/// A target whose socket belongs to another server than its pid: the
/// agent says so and changes nothing on either (with the same config and
/// the right socket, the forced candidate is tried at once, above).
#[test]
fn another_servers_socket_is_refused_and_nothing_is_applied() {
    if common::skip() {
        return;
    }
    let (observed, other) = (Engine::start(2), Engine::start(2));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cfg =
        forced_bad_candidate(&state, observed.pid(), &other.socket, "pairs").write(dir.path());
    let mut a = Agent::start(&cfg);
    let error = || {
        status_json(&state)["targets"]
            .as_array()
            .and_then(|t| t.first())
            .and_then(|t| t["last_error"].as_str().map(str::to_string))
    };
    wait("the refusal", 30, || error().is_some());
    let e = error().unwrap();
    assert!(
        e.contains(&format!("is served by pid {}", other.pid()))
            && e.contains(&format!("not by pid {}", observed.pid())),
        "{e}"
    );
    // Past the point where a trial would have started.
    std::thread::sleep(Duration::from_secs(6));
    assert!(
        events(&state, "trial_started").is_empty(),
        "{:?}",
        audit(&state)
    );
    assert_eq!(other.var("redoctor_debug_commit_sleep_us"), "0");
    assert_eq!(observed.var("redoctor_debug_commit_sleep_us"), "0");
    assert!(a.term(5).success());
}

/// `kill -9` in the middle of a trial: the next start restores the
/// baseline before anything else. `kill -9` while the probes are attached:
/// within 10 s the kernel's lists hold none of their programs, none of the
/// links attaching them and none of the maps they used, and nothing is
/// pinned.
#[test]
fn kill9_mid_trial_is_undone_at_the_next_start_and_leaves_no_bpf_objects() {
    if common::skip() {
        return;
    }
    common::need_tracefs();
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // In `mode`, sampled every `every` for `window`.
    let config = |mode: &str, every: &str, window: &str| {
        AgentConfig::new(&state)
            .metrics("off")
            .budget("tps_percent", 10.0)
            .target(
                Target::pid("engine", e.pid())
                    .socket(&e.socket)
                    .set("mode", mode)
                    .knobs(&["redoctor_debug_commit_sleep_us"])
                    .candidates(&[&[("redoctor_debug_commit_sleep_us", "50")]])
                    .sampling(every, "500ms", window)
                    .guardrail("floor", 0.0)
                    .trial("window", "1s")
                    .trial("warmup", "0s")
                    .trial("design", "pairs")
                    .trial("min_pairs", 40)
                    .trial("max_pairs", 40)
                    .trial("max_total", "120s"),
            )
    };
    let cfg = config("apply", "30s", "1s").write(dir.path());
    let mut a = Agent::start(&cfg);
    wait("the candidate applied", 60, || {
        !events(&state, "trial_started").is_empty()
            && e.var("redoctor_debug_commit_sleep_us") == "50"
    });
    a.kill9();
    assert_eq!(
        e.var("redoctor_debug_commit_sleep_us"),
        "50",
        "killed mid-trial"
    );
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(state.join("targets/engine.json")).unwrap())
            .unwrap();
    assert_eq!(
        j["open_trial"]["baseline"]["redoctor_debug_commit_sleep_us"],
        "0"
    );

    // The next start, in observe mode: the restore comes first.
    config("observe", "60s", "20s").write(dir.path());
    let before = audit(&state).len();
    let mut b = Agent::start(&cfg);
    wait("the restore", 30, || {
        e.var("redoctor_debug_commit_sleep_us") == "0"
    });
    let after: Vec<Value> = audit(&state).into_iter().skip(before).collect();
    let kinds: Vec<&str> = after.iter().map(|v| v["event"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "agent_started", "{kinds:?}");
    assert_eq!(
        kinds[1], "reconciled",
        "restored before anything else: {kinds:?}"
    );
    assert_eq!(after[1]["restored"][0]["to"], "0");
    // The log line follows the audit record: wait for it rather than race it.
    wait("the restore's log line", 10, || {
        b.stderr().contains("was interrupted; restored 1 setting")
    });

    // Now kill it while its probes are attached (a 20 s sampled window),
    // with the fsync counters.
    let mut ids: Vec<u32> = vec![];
    wait("the probes attached", 30, || {
        ids = program_ids(&state, "probe_program_ids");
        !ids.is_empty()
    });
    let fsync_ids = program_ids(&state, "fsync_program_ids");
    assert_eq!(fsync_ids.len(), 2, "{fsync_ids:?}");
    ids.extend(fsync_ids);
    // What the kernel holds for them: the programs (by id and name), the
    // links attaching them and the maps they use. The window lasts 20 s,
    // so they are all attached now.
    let progs: Vec<BpfProg> = ids.iter().filter_map(|id| bpf_prog(*id)).collect();
    let (links, maps) = bpf_objects_of(&ids);
    assert!(
        !progs.is_empty() && !links.is_empty() && !maps.is_empty(),
        "the agent's programs {ids:?}: the kernel lists programs {progs:?}, links {links:?}, maps {maps:?}"
    );
    // The check below sees them while the agent lives.
    assert_eq!(bpf_still_held(&links, &maps), (links.clone(), maps.clone()));
    b.kill9();
    let held_progs = || -> Vec<&BpfProg> {
        progs
            .iter()
            .filter(|p| bpf_prog(p.id).is_some_and(|q| q.name == p.name && q.kind == p.kind))
            .collect()
    };
    let t = Instant::now();
    loop {
        let left_progs = held_progs();
        let (left_links, left_maps) = bpf_still_held(&links, &maps);
        if left_progs.is_empty() && left_links.is_empty() && left_maps.is_empty() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "10 s after kill -9 the kernel still holds programs {left_progs:?}, links {left_links:?}, maps {left_maps:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pinned: Vec<_> = std::fs::read_dir("/sys/fs/bpf")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        !pinned
            .iter()
            .any(|n| n.to_string_lossy().contains("redoctor")),
        "{pinned:?}"
    );
}

/// The target restarts (new pid): re-attached, and said so; the target
/// dies: reported, and the agent keeps running.
#[test]
fn follows_a_restarted_target_and_survives_its_death() {
    if common::skip() {
        return;
    }
    common::need_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let pidfile = dir.path().join("engine.pid");
    let first = Engine::start(2);
    std::fs::write(&pidfile, first.pid().to_string()).unwrap();
    let port = free_port();
    let cfg = restart_config(
        dir.path(),
        &state,
        Target::pidfile("engine", &pidfile),
        &format!("127.0.0.1:{port}"),
    );
    let mut a = Agent::start(&cfg);
    wait("attached", 30, || !events(&state, "attached").is_empty());
    wait("a sample of the first process", 30, || {
        status_json(&state)["targets"][0]["verdict"].is_string()
    });
    let live = r#"redoctor_target_fsyncs_per_second{target="engine","#;
    let signal = r#"redoctor_signal{target="engine","#;
    let m = http_get(port, "/metrics");
    assert!(m.contains(live) && m.contains(signal), "{m}");
    let old = first.pid();
    drop(first);
    wait("the target reported gone", 30, || {
        !events(&state, "target_gone").is_empty()
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        a.child.try_wait().unwrap().is_none(),
        "the agent exited: {}",
        a.stderr()
    );
    // A dead process's rate, signals, settings and advice are not shown as
    // current, in the status or the metrics; its trials and when it was
    // last sampled stay.
    let st = &status_json(&state)["targets"][0];
    assert_eq!(st["state"], "waiting for the target process", "{st}");
    assert_eq!(st["last_pid"], old, "{st}");
    assert!(st["gone_unix_ms"].is_u64(), "{st}");
    assert!(st["last_sample_unix_ms"].is_u64(), "{st}");
    for key in ["verdict", "commits_per_s", "users", "pid"] {
        assert!(st[key].is_null(), "{key} kept: {st}");
    }
    for key in ["advice", "settings", "fsyncs"] {
        assert!(
            st[key].as_array().map(|a| a.is_empty()).unwrap_or(false)
                || st[key].as_object().map(|o| o.is_empty()).unwrap_or(false),
            "{key} kept: {st}"
        );
    }
    let m = http_get(port, "/metrics");
    assert!(!m.contains(live) && !m.contains(signal), "{m}");
    assert!(
        m.contains(r#"redoctor_target_up{target="engine"} 0"#),
        "{m}"
    );
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["agent", "status", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains(&format!("(pid {old} gone")), "{text}");
    assert!(!text.contains("advice:"), "{text}");
    let second = Engine::start(2);
    std::fs::write(&pidfile, second.pid().to_string()).unwrap();
    wait("re-attached", 30, || {
        !events(&state, "target_restarted").is_empty()
    });
    let r = &events(&state, "target_restarted")[0];
    assert_eq!(r["old_pid"], old);
    assert_eq!(r["pid"], second.pid());
    // Said on stderr just after the audit line.
    wait("the restart said on stderr", 10, || {
        a.stderr().contains("target restarted")
    });
    wait("a sample of the new process", 30, || {
        status_json(&state)["targets"][0]["verdict"].is_string()
    });
    assert!(a.term(5).success());
}

/// A target named by its process name (`/proc/PID/comm`): found, kept
/// while another process of that name starts, its death reported while
/// the agent keeps running and waits, and the next process of that name
/// re-attached as a restart. (The engine runs under a
/// name of its own: other tests run engines named `redoctor-engine`.)
#[test]
fn follows_a_restarted_target_by_process_name() {
    if common::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let name = unique_comm("rdx");
    let bin = common::engine_named(dir.path(), &name);
    let comm = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .unwrap_or_default()
            .trim_end()
            .to_string()
    };
    let first = Engine::start_bin(&bin, 2);
    assert_eq!(comm(first.pid()), name);
    let cfg = restart_config(dir.path(), &state, Target::process("engine", &name), "off");
    let mut a = Agent::start(&cfg);
    wait("attached", 30, || !events(&state, "attached").is_empty());
    let old = first.pid();
    assert_eq!(events(&state, "attached")[0]["pid"], old);
    wait("the status to show the pid", 10, || {
        status_json(&state)["targets"][0]["pid"] == old
    });
    // Another process of the same name, started while the target runs,
    // is not a restart: the agent stays with the process it watches.
    let other_dir = tempfile::tempdir().unwrap();
    let sleeper = other_dir.path().join(&name);
    std::fs::copy("/bin/sleep", &sleeper).unwrap();
    let mut namesake = common::spawn_copied(Command::new(&sleeper).arg("60"));
    // Renamed by exec a moment after spawn returns.
    wait("the namesake's name", 5, || comm(namesake.id()) == name);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        events(&state, "target_restarted").is_empty(),
        "a namesake was taken for a restart: {:?}",
        audit(&state)
    );
    assert_eq!(status_json(&state)["targets"][0]["pid"], old);
    namesake.kill().unwrap();
    namesake.wait().unwrap();
    drop(first);
    wait("the target reported gone", 30, || {
        !events(&state, "target_gone").is_empty()
    });
    assert_eq!(events(&state, "target_gone")[0]["pid"], old);
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        a.child.try_wait().unwrap().is_none(),
        "the agent exited: {}",
        a.stderr()
    );
    let st = status_json(&state);
    assert_eq!(
        st["targets"][0]["state"], "waiting for the target process",
        "{st}"
    );
    assert!(st["targets"][0]["pid"].is_null(), "{st}");
    assert!(
        events(&state, "target_restarted").is_empty(),
        "{:?}",
        audit(&state)
    );
    let second = Engine::start_bin(&bin, 2);
    assert_eq!(comm(second.pid()), name);
    wait("re-attached", 30, || {
        !events(&state, "target_restarted").is_empty()
    });
    let restarted = events(&state, "target_restarted");
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    let r = &restarted[0];
    assert_eq!(r["old_pid"], old, "{r}");
    assert_eq!(r["pid"], second.pid(), "{r}");
    let at = r["ts_unix_ms"].as_u64().unwrap();
    wait("the restart said on stderr", 10, || {
        a.stderr()
            .contains(&format!("target restarted (pid {old} -> {})", second.pid()))
    });
    // A sample of the new process: taken after the restart, with it as
    // the target.
    wait("a sample of the new process", 30, || {
        let t = &status_json(&state)["targets"][0];
        t["last_sample_unix_ms"].as_u64() >= Some(at)
            && t["verdict"].is_string()
            && t["pid"] == second.pid()
    });
    assert_eq!(events(&state, "attached").len(), 1);
    assert!(a.term(5).success(), "{}", a.stderr());
}

/// stderr a pipe whose reader has gone (`| tee` stopped, a log shipper
/// restarted): the agent's log lines are dropped, and it still finds,
/// attaches and samples a target that starts afterwards, and stops cleanly.
/// (`eprintln!` panicked there: the worker died at its first line, and the
/// status said "waiting for the target process" for ever.)
#[test]
fn a_closed_stderr_pipe_does_not_stop_the_agent() {
    if common::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let name = unique_comm("rdp");
    let bin = common::engine_named(dir.path(), &name);
    let cfg = restart_config(dir.path(), &state, Target::process("engine", &name), "off");
    let mut child = Command::new(BIN)
        .arg("agent")
        .arg("--config")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let mut a = Agent {
        child: KillOnDrop(child),
        log: PathBuf::new(),
    };
    wait("the agent's status", 30, || {
        status_json(&state)["targets"][0]["state"] == "waiting for the target process"
    });
    let e = Engine::start_bin(&bin, 2);
    wait("attached", 30, || !events(&state, "attached").is_empty());
    wait("a sample of the target", 30, || {
        let t = &status_json(&state)["targets"][0];
        t["pid"] == e.pid() && t["verdict"].is_string()
    });
    assert!(a.child.try_wait().unwrap().is_none(), "the agent exited");
    let st = a.term(5);
    assert!(st.success(), "the agent's exit on SIGTERM: {st}");
}

/// A process name no other process has (a comm, at most 15 bytes):
/// `prefix`, this pid (at most 7 digits), then clock digits.
fn unique_comm(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let mut name = format!("{prefix}{}{:05}", std::process::id(), nanos % 100_000);
    name.truncate(15);
    name
}

/// The restart tests' config: target `t` (found by pidfile or process
/// name) in recommend mode, sampled every 30 s.
fn restart_config(dir: &Path, state: &Path, t: Target, metrics: &str) -> PathBuf {
    AgentConfig::new(state)
        .metrics(metrics)
        .budget("tps_percent", 5.0)
        .target(t.set("mode", "recommend").sampling("30s", "500ms", "1s"))
        .write(dir)
}

/// An observe-mode config for engine `e`, sampled once an hour (1 s
/// windows), with a TPS budget of `tps_percent`, over its admin socket or
/// by pid alone.
fn hourly_observe_config(
    dir: &Path,
    state: &Path,
    e: &Engine,
    tps_percent: f64,
    socket: bool,
) -> PathBuf {
    let mut t = Target::pid("engine", e.pid());
    if socket {
        t = t.socket(&e.socket);
    }
    AgentConfig::new(state)
        .metrics("off")
        .budget("tps_percent", tps_percent)
        .target(t.set("mode", "observe").sampling("3600s", "0s", "1s"))
        .write(dir)
}

/// The fsync counters pause, and say why, when the rate they count would
/// cost more than their share of the TPS budget (a budget of 0.02% here:
/// the loaded engine's fsyncs are far over a quarter of it); their
/// programs leave the kernel.
#[test]
fn fsync_counters_pause_when_their_cost_passes_their_share_of_the_budget() {
    if common::skip() {
        return;
    }
    common::need_tracefs();
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cfg = hourly_observe_config(dir.path(), &state, &e, 0.02, true);
    let mut a = Agent::start(&cfg);
    let mut ids: Vec<u32> = vec![];
    wait("the fsync counters attached", 30, || {
        ids = program_ids(&state, "fsync_program_ids");
        !ids.is_empty()
    });
    wait("the fsync counters paused", 30, || {
        !events(&state, "fsync_counters_paused").is_empty()
    });
    let paused = &events(&state, "fsync_counters_paused")[0];
    let cost = paused["cost_percent"].as_f64().unwrap();
    let limit = paused["limit_percent"].as_f64().unwrap();
    // What the windows (every hour) leave of the 0.02% budget, 80% of it.
    assert!(cost > limit && limit > 0.0 && limit < 0.016, "{paused}");
    assert!(
        a.stderr().contains("fsync counters paused"),
        "{}",
        a.stderr()
    );
    wait("their programs freed", 10, || {
        !ids.iter().any(|id| bpf_prog_exists(*id))
    });
    // The status file (rewritten every second) shows them gone, unless a
    // sampled window (a phase change brings one forward) counted a rate
    // well under the limit and resumed them.
    wait("the status file to list no fsync programs", 5, || {
        status_json(&state)["targets"][0]["fsync_program_ids"] == serde_json::json!([])
            || !events(&state, "fsync_counters_resumed").is_empty()
    });
    let s = a.term(5);
    assert!(s.success(), "{}", a.stderr());
}

/// A target watched by pid alone (no admin socket, so no status
/// counters): the fsyncs/s its fsync counters count mark its phases. The
/// load stopping (SIGSTOP) is a phase change.
#[test]
fn without_a_socket_the_fsync_rate_marks_phase_changes() {
    if common::skip() {
        return;
    }
    common::need_tracefs();
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cfg = hourly_observe_config(dir.path(), &state, &e, 5.0, false);
    let mut a = Agent::start(&cfg);
    wait("fsyncs counted", 30, || {
        status_json(&state)["targets"][0]["fsyncs"]["redo"]["per_s"].as_f64() > Some(100.0)
    });
    // A few seconds of the running load as the reference, then none. (A
    // loaded host can move the rate enough for a change of its own before
    // the stop; the stop's is the one to 0 after it.)
    std::thread::sleep(Duration::from_secs(4));
    let stopped_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    unsafe { libc::kill(e.pid() as i32, libc::SIGSTOP) };
    let to_zero = |c: &Value| {
        c["ts_unix_ms"].as_u64() >= Some(stopped_ms)
            && c["change"]
                .as_str()
                .is_some_and(|s| s.starts_with("fsyncs/s") && s.ends_with("-> 0"))
    };
    let seen = (|| {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if events(&state, "phase_change").iter().any(to_zero) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        false
    })();
    unsafe { libc::kill(e.pid() as i32, libc::SIGCONT) };
    assert!(
        seen,
        "no fsyncs/s phase change to 0 after the stop: {:?}",
        audit(&state)
    );
    let s = a.term(5);
    assert!(s.success(), "{}", a.stderr());
}

/// SIGTERM while a long sampled window is open (30 s): the agent does not
/// wait it out; it exits 0 within 5 s and its probes leave the kernel.
#[test]
fn sigterm_in_a_long_window_exits_within_5s_and_detaches() {
    if common::skip() {
        return;
    }
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cfg = hourly_observe_config(dir.path(), &state, &e, 1.0, true);
    let body = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("window = \"1s\"", "window = \"30s\"");
    std::fs::write(&cfg, body).unwrap();
    let mut a = Agent::start(&cfg);
    let mut ids: Vec<u32> = vec![];
    wait("the probes attached for the window", 30, || {
        ids = program_ids(&state, "probe_program_ids");
        !ids.is_empty()
    });
    std::thread::sleep(Duration::from_secs(1));
    let t = Instant::now();
    let s = a.term(5);
    assert!(s.success(), "exit {s:?}: {}", a.stderr());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(
        !ids.iter().any(|id| bpf_prog_exists(*id)),
        "probe programs {ids:?} left in the kernel"
    );
    assert_eq!(events(&state, "agent_stopped").len(), 1);
}

/// A setting the agent kept (in its journal) that the server no longer
/// has was changed by someone else: the first sample says so, once, in
/// the audit log, naming the kept and the current value.
#[test]
fn a_kept_setting_changed_outside_the_agent_is_logged_once() {
    if common::skip() {
        return;
    }
    let e = Engine::start(4);
    assert_eq!(e.var("innodb_log_writer_threads"), "ON");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(state.join("targets")).unwrap();
    let kept_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        - 60_000;
    let journal = serde_json::json!({
        "schema": "redoctor.agent.journal", "version": 1, "target": "engine",
        "open_trial": null,
        "changes": [{"at_unix_ms": kept_at,
                     "before": {"innodb_log_writer_threads": "ON"},
                     "after": {"innodb_log_writer_threads": "OFF"}}],
    });
    std::fs::write(state.join("targets/engine.json"), journal.to_string()).unwrap();
    let cfg = hourly_observe_config(dir.path(), &state, &e, 1.0, true);
    // Diagnostics as JSON lines (journald, a log shipper).
    let body = std::fs::read_to_string(&cfg).unwrap() + "[agent.log]\nformat = \"json\"\n";
    std::fs::write(&cfg, body).unwrap();
    let mut a = Agent::start(&cfg);
    wait("the drift logged", 30, || {
        !events(&state, "setting_changed_externally").is_empty()
    });
    let d = &events(&state, "setting_changed_externally")[0];
    assert_eq!(d["setting"], "innodb_log_writer_threads", "{d}");
    assert_eq!(
        (d["kept"].as_str(), d["now"].as_str()),
        (Some("OFF"), Some("ON"))
    );
    assert_eq!(d["kept_unix_ms"], kept_at);
    let line = a
        .stderr()
        .lines()
        .find(|l| l.contains("changed outside the agent"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("not on stderr: {}", a.stderr()));
    let j: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
    assert_eq!(j["level"], "WARN", "{j}");
    assert!(
        j["message"]
            .as_str()
            .unwrap()
            .starts_with("engine: innodb_log_writer_threads"),
        "{j}"
    );
    // The agent does not change it back.
    assert_eq!(e.var("innodb_log_writer_threads"), "ON");
    let s = a.term(5);
    assert!(s.success(), "{}", a.stderr());
    assert_eq!(events(&state, "setting_changed_externally").len(), 1);
}

/// The agent's own budget: over `agent.budget.cpu_percent` for a span of
/// `agent.budget.every`, it stretches its sampling (doubles
/// `sampling.every`) and says so in the audit log, on stderr and in its
/// metrics; over `rss_mib` it says so. (Budgets far below what any agent
/// uses, so both are crossed at the first check, 8 s after the start.)
#[test]
fn over_its_cpu_budget_the_agent_stretches_its_sampling_and_says_so() {
    if common::skip() {
        return;
    }
    let e = Engine::start(4);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let port = free_port();
    let cfg = AgentConfig::new(&state)
        .metrics(format!("127.0.0.1:{port}"))
        .budget("tps_percent", 50)
        .budget("cpu_percent", 0.0001)
        .budget("rss_mib", 1)
        .budget("every", "8s")
        .target(
            Target::pid("engine", e.pid())
                .set("mode", "observe")
                .sampling("4s", "0s", "1s"),
        )
        .write(dir.path());
    let mut a = Agent::start(&cfg);
    wait("the first budget check", 30, || {
        events(&state, "over_budget").len() >= 2
    });
    let over = events(&state, "over_budget");
    for resource in ["cpu", "rss"] {
        let ev = over
            .iter()
            .find(|v| v["resource"] == resource)
            .unwrap_or_else(|| panic!("no over_budget for {resource}: {over:?}"));
        assert!(ev["used"].as_f64() > ev["budget"].as_f64(), "{ev}");
        assert_eq!(ev["sampling_backoff"], 2, "{ev}");
    }
    let text = http_get(port, "/metrics");
    assert!(text.contains("redoctor_agent_sampling_backoff 2"), "{text}");
    assert!(
        text.contains("redoctor_agent_over_budget{resource=\"cpu\"} 1"),
        "{text}"
    );
    assert!(
        a.stderr().contains("is over agent.budget"),
        "{}",
        a.stderr()
    );
    let s = a.term(5);
    assert!(s.success(), "{}", a.stderr());
}
