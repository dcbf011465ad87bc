//! The shipped systemd unit (`agent/systemd/redoctor-agent.service`): it
//! verifies cleanly, and the capabilities it grants are enough. The agent
//! runs as an unprivileged user with exactly the unit's ambient
//! capabilities (those this host can grant) next to an engine run by the
//! same user, as the unit's notes say to deploy it, and samples and
//! advises.

mod common;

use common::{events, status_json, wait};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_redoctor");
/// The user both processes run as (`nobody`).
const UID: u32 = 65534;

fn unit() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/redoctor-agent.service");
    std::fs::read_to_string(p).unwrap()
}

/// The values of `key=` lines, split on spaces.
fn unit_list(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .flat_map(|v| v.split_whitespace().map(str::to_string))
        .collect()
}

fn found(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `systemd-analyze verify` passes the unit without a warning (it exits 0
/// even on a value it ignores, so its output must be empty too).
#[test]
fn the_unit_verifies_without_warnings() {
    if redoctor_testkit::skip_if_missing(
        "the_unit_verifies_without_warnings",
        (!found("systemd-analyze"))
            .then(|| "systemd-analyze is not installed (apt-get install systemd)".into()),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The same unit with ExecStart at this build's binary.
    let body = unit().replace("/usr/local/bin/redoctor", BIN);
    assert!(body.contains(&format!("ExecStart={BIN} agent")), "{body}");
    let path = dir.path().join("redoctor-agent.service");
    std::fs::write(&path, body).unwrap();
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.trim().is_empty() && err.trim().is_empty(),
        "warnings:\n{out}{err}"
    );
}

/// Capability numbers (linux/capability.h) of the names a unit may use.
fn cap_number(name: &str) -> u32 {
    match name {
        "CAP_SYS_PTRACE" => 19,
        "CAP_SYS_ADMIN" => 21,
        "CAP_SYS_RESOURCE" => 24,
        "CAP_PERFMON" => 38,
        "CAP_BPF" => 39,
        other => panic!("the unit grants {other}: add it to this test"),
    }
}

/// This process's bounding set: what it can hand on.
fn bounding_set() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let hex = s
        .lines()
        .find_map(|l| l.strip_prefix("CapBnd:"))
        .unwrap()
        .trim();
    u64::from_str_radix(hex, 16).unwrap()
}

/// A directory `UID` owns.
fn owned_dir(parent: &Path, name: &str) -> PathBuf {
    let d = parent.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::chown(&d, Some(UID), Some(UID)).unwrap();
    d
}

use redoctor_testkit::agent_config::{AgentConfig, Target};
use redoctor_testkit::KillOnDrop as Killed;

/// With only the unit's capabilities, as the server's user, the agent
/// attaches, samples and advises; without CAP_BPF it refuses to start and
/// names what is missing.
#[test]
fn the_units_capabilities_are_enough_to_sample_and_advise() {
    if common::skip() {
        return;
    }
    if redoctor_testkit::skip_if_missing(
        "the_units_capabilities_are_enough_to_sample_and_advise",
        (!found("setpriv")).then(|| "setpriv is not installed (apt-get install util-linux)".into()),
    ) {
        return;
    }
    let unit = unit();
    let bounding = unit_list(&unit, "CapabilityBoundingSet");
    let ambient = unit_list(&unit, "AmbientCapabilities");
    assert_eq!(bounding, ambient, "the unit grants what it bounds");
    assert!(unit.contains("\nNoNewPrivileges=yes\n"));
    let have = bounding_set();
    let (granted, absent): (Vec<&String>, Vec<&String>) = ambient
        .iter()
        .partition(|c| have & (1 << cap_number(c)) != 0);
    if !absent.is_empty() {
        // E.g. CAP_SYS_RESOURCE, which only kernels before 5.11 need.
        eprintln!("note: this host cannot grant {absent:?}; testing with {granted:?}");
    }
    let caps: Vec<String> = granted
        .iter()
        .map(|c| format!("+{}", c.trim_start_matches("CAP_").to_lowercase()))
        .collect();
    let caps = caps.join(",");

    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = owned_dir(dir.path(), "data");
    let state = owned_dir(dir.path(), "state");
    let socket = data.join("admin.sock");
    let as_user = |cmd: &mut Command| {
        cmd.args([
            format!("--reuid={UID}"),
            format!("--regid={UID}"),
            "--clear-groups".into(),
        ]);
    };
    let mut e = Command::new("setpriv");
    as_user(&mut e);
    e.arg(common::engine())
        .args(["run", "--workload", "update_index", "--tables", "1"])
        .args(["--table-size", "2000", "--duration", "600", "--warmup", "0"])
        .args(["--users", "4", "--admin-socket"])
        .arg(&socket)
        .arg("--datadir")
        .arg(data.join("db"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let engine = Killed(e.spawn().unwrap());
    wait("the engine's admin socket", 60, || socket.exists());
    let cfg = AgentConfig::new(&state)
        .metrics("off")
        .target(
            Target::pid("engine", engine.0.id())
                .socket(&socket)
                .set("mode", "recommend")
                .sampling("3600s", "0s", "1s"),
        )
        .write(dir.path());
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    let agent = |caps: &str, log: &Path| {
        let mut a = Command::new("setpriv");
        as_user(&mut a);
        a.arg(format!("--inh-caps={caps}"))
            .arg(format!("--ambient-caps={caps}"))
            .arg(format!("--bounding-set=-all,{caps}"))
            .arg("--no-new-privs")
            .arg(BIN)
            .args(["agent", "--config"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap());
        a
    };

    // Without CAP_BPF: a clear refusal, nothing started.
    let without_bpf: Vec<&str> = caps.split(',').filter(|c| *c != "+bpf").collect();
    let log = dir.path().join("no-bpf.log");
    let s = agent(&without_bpf.join(","), &log).status().unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(!s.success(), "{err}");
    assert!(err.contains("CAP_BPF"), "{err}");
    assert!(!state.join("audit.jsonl").exists(), "{err}");

    // With the unit's capabilities: a sample, its advice, a clean stop.
    let log = dir.path().join("agent.log");
    let mut a = Killed(agent(&caps, &log).spawn().unwrap());
    wait("the agent's first sample and advice", 60, || {
        !events(&state, "advice").is_empty()
    });
    // The status file is rewritten once a second.
    wait("the verdict in the status file", 10, || {
        status_json(&state)["targets"][0]["verdict"].is_string()
    });
    let st = status_json(&state);
    assert_eq!(st["targets"][0]["pid"], engine.0.id(), "{st}");
    unsafe { libc::kill(a.0.id() as i32, libc::SIGTERM) };
    let t = std::time::Instant::now();
    let s = loop {
        if let Some(s) = a.0.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "no exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(s.success(), "{s:?}: {err}");
    // What the unit's notes say these capabilities cannot do on some
    // kernels is reported as a warning, never as a failure.
    for line in err.lines().filter(|l| l.contains("unavailable")) {
        eprintln!("as the unit's user: {line}");
    }
    // A tracefs that is mounted but closed to this user (mode 0700, the
    // default) is named as such, not as unmounted.
    let tracefs = Path::new("/sys/kernel/tracing");
    if tracefs.join("events").is_dir()
        && tracefs.metadata().unwrap().permissions().mode() & 0o005 == 0
    {
        assert!(
            err.contains("tracefs at /sys/kernel/tracing is not readable by this user"),
            "{err}"
        );
    }
}
