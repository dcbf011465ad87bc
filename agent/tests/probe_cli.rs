//! `redoctor probe` run as the real binary: its error paths, and its options.
//!
//! The tests that load BPF need root (CI runs as root) and are skipped only
//! when the kernel lacks BPF or BTF.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use common::{skip, text};

fn redoctor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_redoctor"))
}

#[test]
fn no_such_pid_names_the_pid() {
    let o = redoctor()
        .args(["probe", "--pid", "2147483600"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("no process with pid 2147483600"), "{err}");
}

#[test]
fn unknown_profile_lists_the_shipped_ones() {
    let me = std::process::id().to_string();
    let o = redoctor()
        .args(["probe", "--pid", &me, "--profile", "oracle"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("unknown profile `oracle`") && err.contains("mariadb"),
        "{err}"
    );
}

#[test]
fn futex_sample_must_be_a_power_of_two() {
    let me = std::process::id().to_string();
    let o = redoctor()
        .args(["probe", "--pid", &me, "--futex-sample", "3"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("futex sample 3 is not a power of two"),
        "{err}"
    );
}

#[test]
fn zero_interval_is_refused() {
    let o = redoctor()
        .args(["probe", "--pid", "1", "--interval", "0s"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("longer than 0"), "{err}");
}

#[test]
fn without_capabilities_it_says_which_are_missing() {
    let me = std::process::id().to_string();
    // Root without any capability: empty bounding and inheritable sets.
    let o = Command::new("setpriv")
        .args(["--inh-caps=-all", "--bounding-set=-all"])
        .arg(env!("CARGO_BIN_EXE_redoctor"))
        .args(["probe", "--pid", &me])
        .output()
        .expect("setpriv (util-linux) is needed");
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not allowed to load BPF programs") && err.contains("CAP_BPF"),
        "{err}"
    );
}

#[test]
fn bpf_syscall_unavailable_is_reported() {
    if skip() {
        return;
    }
    let me = std::process::id().to_string();
    let mut cmd = redoctor();
    cmd.args(["probe", "--pid", &me]);
    // SAFETY: only async-signal-safe calls (prctl, seccomp) in the child.
    unsafe {
        cmd.pre_exec(|| {
            deny_bpf_syscall();
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot load the BPF object into the kernel"),
        "{err}"
    );
}

/// Makes bpf(2) fail with ENOSYS, like a kernel without CONFIG_BPF_SYSCALL.
fn deny_bpf_syscall() {
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let ld = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    let filter = [
        stmt(ld, 4), // seccomp_data.arch
        jeq(AUDIT_ARCH_X86_64, 1, 0),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
        stmt(ld, 0), // seccomp_data.nr
        jeq(libc::SYS_bpf as u32, 0, 1),
        stmt(ret, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut _,
    };
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        );
    }
}

#[test]
fn target_exit_ends_the_run_with_its_last_window() {
    if skip() {
        return;
    }
    let mut target = Command::new("sleep")
        .arg("1.5")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = target.id().to_string();
    // Reap the target as soon as it exits, so it does not linger as a zombie.
    let reaper = std::thread::spawn(move || target.wait());
    let o = redoctor()
        .args(["probe", "--pid", &pid, "--interval", "1s", "--json"])
        .args(["--duration", "30s", "--no-uprobes"])
        .output()
        .unwrap();
    reaper.join().unwrap().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "stdout {out}\nstderr {err}");
    assert!(err.contains("exited during the last window"), "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty() && lines.len() <= 3, "{out}");
    let last = lines.last().unwrap();
    assert_eq!(last["target_exited"], true, "{last}");
    assert_eq!(last["schema_version"], 1);
    assert!(lines[..lines.len() - 1]
        .iter()
        .all(|l| l["target_exited"] == false));
}

/// A reader that stops early (`redoctor probe ... | head -1`): probe
/// detaches and exits 0 at its next window, with no error (it exited 1
/// with "Broken pipe" before).
#[test]
fn a_reader_that_stops_early_ends_the_run_quietly() {
    use std::io::{BufRead, BufReader};
    if skip() {
        return;
    }
    let mut target = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = target.id().to_string();
    let mut probe = redoctor()
        .args(["probe", "--pid", &pid, "--interval", "300ms", "--json"])
        .args(["--duration", "30s", "--no-uprobes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(probe.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the next window's write finds no reader.
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["schema_version"], 1, "{first}");
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(s) = probe.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "probe still running 10 s after its reader went"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut probe.stderr.take().unwrap(), &mut err).unwrap();
    target.kill().unwrap();
    target.wait().unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(!err.contains("error"), "{err}");
}

/// `--runq-stamps` attaches the wakeup hooks and fills the run-queue
/// histogram from them: a process that sleeps 0.5 ms in a loop is woken
/// hundreds of times a second, and each wakeup ends in one timed wait.
/// (Without the flag the same count comes from schedstat; the flag's own
/// effect is checked against runqlat in probes/tests/live_engine.)
#[test]
fn runq_stamps_time_the_wakeups_of_a_sleeping_loop() {
    if skip() {
        return;
    }
    let mut target = Command::new("python3")
        .args(["-c", "import time\nwhile True: time.sleep(0.0005)"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = target.id().to_string();
    let o = redoctor()
        .args(["probe", "--pid", &pid, "--interval", "1s", "--json"])
        .args(["--duration", "2s", "--no-uprobes", "--runq-stamps"])
        .output()
        .unwrap();
    target.kill().unwrap();
    target.wait().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "stdout {out}\nstderr {err}");
    // Every switch-out is followed by one timed wait before the next
    // switch-in (the windows' edges may split a pair).
    let (mut waits, mut switches) = (0, 0);
    for l in out.lines() {
        let w: serde_json::Value = serde_json::from_str(l).unwrap();
        waits += w["cpu"]["runq_latency"]["count"].as_u64().unwrap();
        // A stamped wait spans a wakeup and a context switch, never ~0 ns
        // (schedstat reads a third of these waits as exactly 0 here).
        for b in w["cpu"]["runq_latency"]["buckets"].as_array().unwrap() {
            assert!(
                b["hi_ns"].as_u64().unwrap() > 128,
                "a stamped wait under 128 ns: {l}"
            );
        }
        switches += w["cpu"]["voluntary_switches"].as_u64().unwrap()
            + w["cpu"]["involuntary_switches"].as_u64().unwrap();
    }
    assert!(waits >= 400, "{waits} run-queue waits in 2 s:\n{out}");
    assert!(
        waits.abs_diff(switches) <= 3 + switches / 50,
        "{waits} run-queue waits for {switches} switches:\n{out}"
    );
}

/// The engine's commit counter reaches the probes every 100 ms from its own
/// thread, so a slow checkpoint does not hold it back: with each checkpoint's
/// fdatasync made 1.2 s slower (a failpoint) while users keep committing,
/// every 400-ms window still counts commits (before, a window inside a
/// checkpoint read 0 and the next one twice as many).
#[test]
fn a_slow_checkpoint_does_not_stop_the_commit_count() {
    if skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut engine = Command::new(common::engine())
        .args(["run", "--workload", "update_index", "--users", "4"])
        // A small log (640 KiB of redo between checkpoints) so that the
        // failpoint's sleep, not the commit rate, paces the checkpoints:
        // under a loaded CI host 2.6 MiB took the whole window to fill.
        .args(["--duration", "30", "--log-buffer-mb", "4"])
        .args(["--log-file-mb", "32", "--checkpoint-fill-pct", "2"])
        .args(["--failpoint", "checkpoint::fsync::eio=sleep(1200)"])
        .arg("--datadir")
        .arg(dir.path().join("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let o = redoctor()
        .args(["probe", "--pid", &engine.id().to_string(), "--json"])
        .args(["--interval", "400ms", "--duration", "6s"])
        .output()
        .unwrap();
    let _ = engine.kill();
    let _ = engine.wait();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let windows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let checkpoints: u64 = windows
        .iter()
        .map(|w| w["engine"]["checkpoints"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        checkpoints >= 2,
        "the test needs checkpoints: {checkpoints}"
    );
    let commits: Vec<u64> = windows
        .iter()
        .map(|w| w["engine"]["commits"].as_u64().unwrap_or(0))
        .collect();
    // From the first window of the load on (the engine formats its redo
    // file and loads its tables first).
    let start = commits.iter().position(|&c| c > 0).expect("no commits");
    assert!(start <= 4, "the load started late: {commits:?}");
    assert!(
        commits[start..].iter().all(|&c| c > 0),
        "a window without commits: {commits:?}"
    );
}
