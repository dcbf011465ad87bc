//! The agent's test scaffolding: the redoctor binary's output, the BPF
//! skip check, and a bundled engine served over the MySQL protocol.
#![allow(dead_code)]

pub mod bpf;
pub mod maria;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

/// A finished run's (stdout, stderr) as text.
/// `diagnose` flags for a short live trial: 500 ms windows, at most 4
/// pairs, 12 s in all.
pub const QUICK_TRIAL: [&str; 7] = [
    "--trial",
    "--trial-window",
    "500ms",
    "--trial-rounds",
    "4",
    "--trial-max",
    "12s",
];

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Whether a BPF test must stop here (`redoctor_testkit::skip_if_missing`:
/// a failure naming the cause under `REDOCTOR_REQUIRE_ALL=1`).
pub fn skip() -> bool {
    let test = std::thread::current().name().unwrap_or("test").to_string();
    redoctor_testkit::skip_if_missing(&test, redoctor_testkit::bpf_missing())
}

/// Fails at once, naming the cause and the fix, when tracefs is not
/// mounted: the daemon's fsync counters need the per-syscall tracepoints it
/// lists (without it the agent warns and runs without them, and a test of
/// them would only time out). The kernel has tracefs here; a fresh host may
/// not have it mounted, which `tests/run.sh` fixes as root.
pub fn need_tracefs() {
    let mounted = [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ]
    .iter()
    .any(|p| Path::new(p).is_dir());
    assert!(
        mounted,
        "tracefs is not mounted, and the fsync counters this test checks need it: \
         mount -t tracefs tracefs /sys/kernel/tracing (tests/run.sh does it as root)"
    );
}

pub fn engine() -> PathBuf {
    let me = Path::new(env!("CARGO_BIN_EXE_redoctor"));
    let p = me.with_file_name("redoctor-engine");
    if !p.is_file() {
        let mut b = Command::new(env!("CARGO"));
        b.args([
            "build",
            "-p",
            "redoctor-engine-cli",
            "--bin",
            "redoctor-engine",
        ]);
        if me.components().any(|c| c.as_os_str() == "release") {
            b.arg("--release");
        }
        assert!(
            b.status().unwrap().success(),
            "building redoctor-engine failed"
        );
    }
    p
}

/// The engine's binary under another file name, `dir/name` (a hard link,
/// or a copy across file systems), so that its processes can be told from
/// other tests' by their name (`/proc/PID/comm`: the kernel keeps the
/// first 15 bytes of the file name, so `name` must fit in them).
pub fn engine_named(dir: &Path, name: &str) -> PathBuf {
    assert!(
        !name.is_empty() && name.len() <= 15 && !name.contains('/'),
        "{name:?}: a process name is at most 15 bytes"
    );
    let src = engine();
    let p = dir.join(name);
    if std::fs::hard_link(&src, &p).is_err() {
        std::fs::copy(&src, &p)
            .unwrap_or_else(|e| panic!("copying {} to {}: {e}", src.display(), p.display()));
    }
    p
}

/// `cmd` started; a binary just copied (`engine_named`) may still be open
/// for writing in a child another thread forked meanwhile (ETXTBSY until
/// it execs), so that is tried again for up to 5 s.
pub fn spawn_copied(cmd: &mut Command) -> Child {
    for _ in 0..50 {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(Duration::from_millis(100));
            }
            r => return r.unwrap_or_else(|e| panic!("starting {cmd:?}: {e}")),
        }
    }
    panic!("{cmd:?}: its binary stayed busy (ETXTBSY) for 5 s")
}

/// A served engine in a temporary directory, killed on drop.
pub struct Served {
    pub child: redoctor_testkit::KillOnDrop,
    pub dir: tempfile::TempDir,
}

impl Served {
    /// Starts with dedicated log threads (RT1), MySQL 8.0's default, the
    /// state these tests change and restore (`serve` on its own picks by the
    /// host's CPUs, as MySQL 8.4 does).
    pub fn start() -> Served {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(engine())
            .arg("serve")
            .arg("--datadir")
            .arg(dir.path().join("data"))
            .arg("--socket")
            .arg(dir.path().join("s.sock"))
            .args(["--redo-threads", "on"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Served {
            child: redoctor_testkit::KillOnDrop(child),
            dir,
        };
        let t = Instant::now();
        while !s.socket().exists() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("s.sock")
    }
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }
    pub fn var(&self, name: &str) -> String {
        let mut c = self.conn();
        let rows: Vec<(String, String)> = c
            .query(format!("SHOW GLOBAL VARIABLES LIKE '{name}'"))
            .unwrap();
        rows.into_iter().next().unwrap().1
    }
    pub fn redoctor(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_redoctor"))
            .args(args)
            .arg("--socket")
            .arg(self.socket())
            .arg("--state")
            .arg(self.state())
            .output()
            .unwrap()
    }
    pub fn state_entries(&self) -> usize {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(self.state()).unwrap()).unwrap();
        v["entries"].as_array().unwrap().len()
    }
}

impl Served {
    pub fn conn(&self) -> Conn {
        let opts = OptsBuilder::new()
            .socket(Some(self.socket().to_str().unwrap().to_string()))
            .user(Some("root"));
        Conn::new(opts).unwrap()
    }
}

/// Polls `ok` until it holds (`redoctor_testkit::wait_until`); panics after `secs` naming `what`.
pub fn wait(what: &str, secs: u64, ok: impl FnMut() -> bool) {
    redoctor_testkit::wait_until(what, Duration::from_secs(secs), ok);
}

/// The daemon's audit log in `state` (every line must be JSON).
pub fn audit(state: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(state.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every audit line is JSON"))
        .collect()
}

/// The audit lines of one `event`.
pub fn events(state: &Path, event: &str) -> Vec<serde_json::Value> {
    audit(state)
        .into_iter()
        .filter(|v| v["event"] == event)
        .collect()
}

/// The daemon's status file, or Null while it is missing or half-written.
pub fn status_json(state: &Path) -> serde_json::Value {
    std::fs::read_to_string(state.join("status.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// The BPF program ids the status file lists for the first target under
/// `key` (`probe_program_ids`, `fsync_program_ids`).
pub fn program_ids(state: &Path, key: &str) -> Vec<u32> {
    status_json(state)["targets"][0][key]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x as u32)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the kernel still holds BPF program `id`.
pub fn bpf_prog_exists(id: u32) -> bool {
    Command::new("bpftool")
        .args(["prog", "show", "id", &id.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("bpftool (apt-get install bpftool; .ci/run does this)")
        .success()
}

/// Writes `body` as `dir/agent.toml`; returns its path.
pub fn write_config(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("agent.toml");
    std::fs::write(&p, body).unwrap();
    p
}

/// What `rule` proposed in diagnosis report `d` (a recommendation or not
/// applied), if it fired.
pub fn proposal(d: &serde_json::Value, rule: &str) -> Option<serde_json::Value> {
    ["recommendations", "not_applied"]
        .iter()
        .flat_map(|k| d[*k].as_array().unwrap().iter())
        .find(|r| r["rule"] == rule)
        .cloned()
}

/// The most threads of `role` any window of diagnosis report `d` saw.
pub fn role_threads(d: &serde_json::Value, role: &str) -> u64 {
    d["windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["roles"][role]["threads"].as_u64())
        .max()
        .unwrap_or(0)
}

/// A free loopback TCP port (bound, then released for a server to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
