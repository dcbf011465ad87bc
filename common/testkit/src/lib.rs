//! What the project's tests share, dev-only.
//!
//! - [`skip_if_missing`]: a test that needs a server, a tool, root or a
//!   kernel feature asks here. Missing on a developer's machine, the test
//!   says why and stops; with `REDOCTOR_REQUIRE_ALL=1` (set by `.ci/run`,
//!   where everything is installed) it fails naming the cause and the fix,
//!   so CI can never pass by skipping. The checks: [`bpf_missing`],
//!   [`tool_missing`], [`root_missing`].
//! - [`KillOnDrop`]: a child process killed and reaped when the test ends,
//!   a failed assertion included.
//! - [`wait_until`]: polls a condition, fails naming it after a timeout
//!   (a liveness check never hangs the run).
//! - [`agent_config`]: the daemon's TOML configuration, built with typed
//!   values instead of pasted text.

pub mod agent_config;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The variable that turns every missing requirement into a failure.
pub const REQUIRE_ALL: &str = "REDOCTOR_REQUIRE_ALL";

/// Whether missing requirements fail (`REDOCTOR_REQUIRE_ALL=1`).
pub fn require_all() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1")
}

/// Whether `test` must stop here because of `missing` (the cause and the
/// fix): false when nothing is missing; true after printing `SKIPPED`
/// outside CI; a panic naming the cause under `REDOCTOR_REQUIRE_ALL=1`.
pub fn skip_if_missing(test: &str, missing: Option<String>) -> bool {
    let Some(why) = missing else {
        return false;
    };
    if require_all() {
        panic!("{test} cannot run: {why} ({REQUIRE_ALL}=1: every requirement must be met)");
    }
    eprintln!("SKIPPED {test}: {why} (set {REQUIRE_ALL}=1 to make this a failure)");
    true
}

/// Why BPF probes cannot be loaded here, if they cannot: the kernel's BTF,
/// the BPF syscall, root.
pub fn bpf_missing() -> Option<String> {
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("the kernel has no BTF (/sys/kernel/btf/vmlinux)".into());
    }
    if !Path::new("/proc/sys/kernel/unprivileged_bpf_disabled").exists() {
        return Some("the kernel has no BPF syscall (CONFIG_BPF_SYSCALL)".into());
    }
    root_missing("loading BPF programs")
}

/// Why `what` cannot be done: not root.
pub fn root_missing(what: &str) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    (unsafe { libc::geteuid() } != 0).then(|| format!("{what} needs root (run the tests as root)"))
}

/// Why `tool` cannot be run: not on PATH (`install` says how to get it).
pub fn tool_missing(tool: &str, install: &str) -> Option<String> {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    (!found).then(|| format!("`{tool}` is not installed ({install})"))
}

/// A child process killed (SIGKILL) and reaped when dropped.
pub struct KillOnDrop(pub Child);

impl KillOnDrop {
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `cond` every 20 ms until it holds; panics naming `what` after
/// `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A missing requirement skips outside CI and fails under
    /// REDOCTOR_REQUIRE_ALL=1 (checked in a child, whose environment can
    /// differ from this run's).
    #[test]
    fn a_missing_requirement_fails_under_require_all() {
        if let Ok(mode) = std::env::var("REDOCTOR_TESTKIT_CHILD") {
            let skipped = skip_if_missing("t", Some("`x` is not installed".into()));
            assert!(skipped && mode == "skip");
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let run = |require: &str| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "tests::a_missing_requirement_fails_under_require_all",
                ])
                .args(["--nocapture", "--test-threads", "1"])
                .env(
                    "REDOCTOR_TESTKIT_CHILD",
                    if require == "1" { "fail" } else { "skip" },
                )
                .env(REQUIRE_ALL, require)
                .output()
                .unwrap()
        };
        let skip = run("0");
        assert!(skip.status.success(), "{skip:?}");
        assert!(String::from_utf8_lossy(&skip.stderr).contains("SKIPPED t: `x` is not installed"));
        let fail = run("1");
        assert!(!fail.status.success(), "{fail:?}");
        let err = String::from_utf8_lossy(&fail.stdout).to_string()
            + &String::from_utf8_lossy(&fail.stderr);
        assert!(err.contains("t cannot run: `x` is not installed"), "{err}");
        assert!(!skip_if_missing("t", None));
    }

    #[test]
    fn tools_and_children() {
        assert!(tool_missing("sh", "").is_none());
        let why = tool_missing("redoctor-no-such-tool", "apt-get install it").unwrap();
        assert!(why.contains("apt-get install it"), "{why}");
        let child = KillOnDrop(Command::new("sleep").arg("30").spawn().unwrap());
        let pid = child.id();
        drop(child);
        wait_until("the child is gone", Duration::from_secs(5), || {
            !Path::new(&format!("/proc/{pid}")).exists()
        });
    }
}
