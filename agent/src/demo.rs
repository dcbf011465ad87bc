//! `redoctor diagnose --demo`: the bundled engine running a default workload
//! in a temporary directory, removed (and the engine killed) on drop. The
//! engine serves the MySQL protocol on an admin socket in that directory
//! while it runs (`redoctor-engine run --admin-socket`), for live settings
//! changes; its connection threads are `admin/N`, not user threads.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Environment variable naming the engine binary (else next to `redoctor`).
pub const ENGINE_ENV: &str = "REDOCTOR_ENGINE";
/// How long the engine may take to load its tables and start its users.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// What the demo engine runs.
#[derive(Debug, Clone)]
pub struct DemoWorkload {
    pub workload: String,
    pub users: u32,
    /// TPCC-lite warehouses (the engine's default when None).
    pub warehouses: Option<u32>,
    /// sbtest tables and rows per table (the engine's defaults when None).
    pub tables: Option<u32>,
    pub table_size: Option<u64>,
    /// Key access distribution (`uniform`, `zipf:0.8`, `pareto:0.2`; the
    /// engine's default, uniform, when None).
    pub access: Option<String>,
    pub cpus: Option<u32>,
    /// `--set name=value` passed to the engine at start.
    pub settings: Vec<(String, String)>,
    /// Where the temporary directory (data, admin socket) is made: the
    /// storage whose fsync is measured (default: the system temp dir).
    pub workdir: Option<PathBuf>,
}

/// A running demo engine.
pub struct DemoEngine {
    child: Child,
    _dir: tempfile::TempDir,
    admin_socket: PathBuf,
    pub settings: Vec<(String, String)>,
}

/// The engine binary: `explicit`, else `$REDOCTOR_ENGINE`, else
/// `redoctor-engine` next to the running `redoctor`.
pub fn engine_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(ENGINE_ENV) {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe().context("finding the redoctor binary's directory")?;
    let p = me.with_file_name("redoctor-engine");
    if !p.is_file() {
        bail!(
            "the bundled engine was not found at {}: build it (`cargo build --release -p redoctor-engine-cli`) or name it with --engine-bin or ${ENGINE_ENV}",
            p.display()
        );
    }
    Ok(p)
}

impl DemoEngine {
    /// Starts the engine and waits until its user threads run (tables loaded)
    /// and its admin socket is listening. It runs for `run_for` at most (the
    /// demo kills it earlier when done).
    pub fn start(bin: &Path, w: &DemoWorkload, run_for: Duration) -> Result<DemoEngine> {
        let mut b = tempfile::Builder::new();
        b.prefix("redoctor-demo-");
        let dir = match &w.workdir {
            Some(d) => b.tempdir_in(d).with_context(|| {
                format!(
                    "creating the demo's directory in {}: pass a writable directory",
                    d.display()
                )
            })?,
            None => b
                .tempdir()
                .context("creating the demo's temporary directory")?,
        };
        let admin_socket = dir.path().join("admin.sock");
        let mut cmd = Command::new(bin);
        cmd.arg("run")
            .arg("--datadir")
            .arg(dir.path().join("data"))
            .arg("--admin-socket")
            .arg(&admin_socket)
            .args(["--workload", &w.workload])
            .args(["--users", &w.users.to_string()])
            .args(["--warmup", "0", "--duration"])
            .arg(format!("{:.1}", run_for.as_secs_f64()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(c) = w.cpus {
            cmd.args(["--cpus", &c.to_string()]);
        }
        if let Some(n) = w.warehouses {
            cmd.args(["--warehouses", &n.to_string()]);
        }
        if let Some(n) = w.tables {
            cmd.args(["--tables", &n.to_string()]);
        }
        if let Some(n) = w.table_size {
            cmd.args(["--table-size", &n.to_string()]);
        }
        if let Some(a) = &w.access {
            cmd.args(["--access", a]);
        }
        for (k, v) in &w.settings {
            cmd.arg("--set").arg(format!("{k}={v}"));
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting the bundled engine {}", bin.display()))?;
        let mut e = DemoEngine {
            child,
            _dir: dir,
            admin_socket,
            settings: w.settings.clone(),
        };
        e.wait_for_users()?;
        Ok(e)
    }

    /// The temporary directory (removed on drop).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The engine's admin socket (MySQL protocol; `SET GLOBAL` etc. on the
    /// running engine). It exists from [`DemoEngine::start`] until the run ends.
    pub fn admin_socket(&self) -> &Path {
        &self.admin_socket
    }

    fn wait_for_users(&mut self) -> Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                let mut err = String::new();
                if let Some(mut s) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut s, &mut err);
                }
                bail!(
                    "the demo engine exited before its workload started ({status}): {}",
                    err.trim()
                );
            }
            let users = has_user_threads(self.pid());
            let socket = self.admin_socket().exists();
            if users && socket {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                let sock = self.admin_socket().display();
                let missing = match (users, socket) {
                    (false, false) => format!("its user threads and its admin socket {sock}"),
                    (false, true) => "its user threads".to_string(),
                    _ => format!("its admin socket {sock}"),
                };
                bail!("the demo engine did not start {missing} within {START_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for DemoEngine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn has_user_threads(pid: u32) -> bool {
    redoctor_probes::procfs::threads(pid)
        .is_ok_and(|threads| threads.values().any(|comm| comm.starts_with("user/")))
}

#[cfg(test)]
mod tests {
    use redoctor_probes::{Profile, Role};

    /// The admin socket's threads must not read as users: the engine's
    /// profile maps `conn/*` to `user`, and nothing to `admin/*`.
    #[test]
    fn admin_socket_threads_are_not_user_threads() {
        let p = Profile::builtin("redoctor-engine").unwrap();
        assert_eq!(p.role_of("admin/1"), Role::Other);
        assert_eq!(p.role_of("admin_acceptor"), Role::Other);
        assert_eq!(p.role_of("user/1"), Role::User);
        assert_eq!(p.role_of("conn/1"), Role::User);
    }
}
