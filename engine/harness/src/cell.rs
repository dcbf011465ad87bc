//! Runs one cell: a fresh `redoctor-engine run` process on a fresh data directory.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::grid::{CellKey, Grid};

/// Starts engine processes for cells.
#[derive(Debug, Clone)]
pub struct CellRunner {
    /// The `redoctor-engine` binary.
    pub engine_bin: PathBuf,
    /// Where the cells' data directories are created (and removed afterwards).
    pub workdir: PathBuf,
    /// Extra time a cell may take beyond warm-up + duration (start, load, shutdown).
    pub slack: Duration,
}

/// What a finished process left.
struct Finished {
    success: bool,
    status: String,
    stdout: String,
    stderr: String,
}

impl CellRunner {
    pub fn new(engine_bin: PathBuf, workdir: PathBuf) -> CellRunner {
        CellRunner {
            engine_bin,
            workdir,
            slack: Duration::from_secs(120),
        }
    }

    /// A fresh directory for one engine process.
    fn fresh_dir(&self) -> Result<tempfile::TempDir, String> {
        tempfile::Builder::new()
            .prefix("redoctor-cell-")
            .tempdir_in(&self.workdir)
            .map_err(|e| {
                format!(
                    "cannot create a data directory in {}: {e}; pass a writable --workdir",
                    self.workdir.display()
                )
            })
    }

    /// Runs the engine with `args` plus `--datadir <fresh dir>`, killing it after `limit`.
    fn spawn(&self, args: &[String], limit: Duration) -> Result<Finished, String> {
        let dir = self.fresh_dir()?;
        let mut child = Command::new(&self.engine_bin)
            .args(args)
            .arg("--datadir")
            .arg(dir.path().join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.engine_bin.display()))?;
        let drain = |mut r: Box<dyn Read + Send>| {
            thread::spawn(move || {
                let mut s = String::new();
                let _ = r.read_to_string(&mut s);
                s
            })
        };
        let out = drain(Box::new(child.stdout.take().expect("stdout is piped")));
        let err = drain(Box::new(child.stderr.take().expect("stderr is piped")));
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if started.elapsed() > limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(format!(
                        "the engine process ran longer than {:.0} s and was killed",
                        limit.as_secs_f64()
                    ));
                }
                Ok(None) => thread::sleep(Duration::from_millis(20)),
                Err(e) => break Err(format!("waiting for the engine process: {e}")),
            }
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        let status = status?;
        Ok(Finished {
            success: status.success(),
            status: status.to_string(),
            stdout,
            stderr,
        })
    }

    /// Opens a fresh engine with these settings and applies them
    /// (`run --check-settings`); the error is the engine's own message.
    pub fn check_settings(&self, settings: &[(String, String)]) -> Result<(), String> {
        let mut args = vec!["run".to_string(), "--check-settings".to_string()];
        push_sets(&mut args, settings);
        let f = self.spawn(&args, self.slack)?;
        if f.success {
            Ok(())
        } else {
            Err(last_error_line(&f.stderr).unwrap_or(f.status))
        }
    }

    /// The command-line arguments of a cell (without `--datadir`).
    pub fn cell_args(grid: &Grid, key: &CellKey) -> Vec<String> {
        let r = &grid.run;
        let s = &key.scenario;
        let mut args: Vec<String> = [
            "run",
            "--json",
            "--workload",
            &s.workload,
            "--users",
            &s.users.to_string(),
            "--cpus",
            &s.cores.to_string(),
            "--duration",
            &r.duration_secs.to_string(),
            "--warmup",
            &r.warmup_secs.to_string(),
            "--tables",
            &r.tables.to_string(),
            "--table-size",
            &r.table_size.to_string(),
            "--access",
            &r.access,
            "--warehouses",
            &r.warehouses.to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        push_sets(&mut args, &grid.settings(key));
        args
    }

    /// Runs a cell and returns its `run --json` report.
    pub fn run(&self, grid: &Grid, key: &CellKey) -> Result<serde_json::Value, String> {
        let limit =
            Duration::from_secs_f64(grid.run.warmup_secs + grid.run.duration_secs) + self.slack;
        let f = self.spawn(&Self::cell_args(grid, key), limit)?;
        let report = f
            .stdout
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok());
        match (f.success, report) {
            (true, Some(r)) => Ok(r),
            (true, None) => Err("the engine printed no JSON report".into()),
            (false, _) => Err(format!(
                "the engine failed ({}): {}",
                f.status,
                last_error_line(&f.stderr).unwrap_or_default()
            )),
        }
    }
}

/// Appends `--set name=value` for each setting.
fn push_sets(args: &mut Vec<String>, settings: &[(String, String)]) {
    for (k, v) in settings {
        args.push("--set".into());
        args.push(format!("{k}={v}"));
    }
}

/// The last `error: ...` line of a process's stderr (or its last line).
fn last_error_line(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    lines
        .iter()
        .rev()
        .find(|l| l.starts_with("error"))
        .or(lines.last())
        .map(|l| l.to_string())
}
