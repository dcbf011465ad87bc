//! The cheap set kept attached for good (`FsyncCounters`): fsyncs alone,
//! no scheduler hook, the engine's own count, and a tidy map after the
//! threads that fsync'd have exited.

use std::path::Path;

use redoctor_probes::maps::MapsReading;
use redoctor_probes::{FileKind, FsyncCounters, Profile};

use crate::child::EngineChild;

/// RT0: the user threads fsync the redo log themselves, then exit when the
/// workload ends.
pub fn fsync_counters_match_the_engine_and_forget_exited_threads() -> Result<(), String> {
    let exe = std::env::current_exe().unwrap();
    let (mut child, was) = EngineChild::start(&exe, "rt0", 4, 0.5);
    let pid = child.pid();
    let profile = Profile::builtin("redoctor-engine").unwrap();
    let mut c = FsyncCounters::attach(pid, &profile).map_err(|e| e.to_string())?;
    // Per-syscall tracepoints: fsync and fdatasync, entry and exit; two
    // programs, nothing on the scheduler or on writes.
    let ids = c.program_ids();
    if c.link_count() != 4 || ids.len() != 2 {
        return Err(format!(
            "{} links, programs {ids:?}: expected 4 links of 2 programs",
            c.link_count()
        ));
    }
    let redo = |c: &mut FsyncCounters| -> Result<(u64, u64), String> {
        let t = c.read().map_err(|e| e.to_string())?;
        Ok(t.get(&FileKind::Redo).map_or((0, 0), |r| (r.calls, r.ns)))
    };
    let (before, _) = redo(&mut c)?;
    let after_run = child.run_workload();
    let (after, ns) = redo(&mut c)?;
    let engine = after_run.redo_fsyncs - was.redo_fsyncs;
    if after - before != engine || engine < 50 {
        return Err(format!(
            "redo fsyncs counted {} (from {before} to {after}), the engine's own {engine}",
            after - before
        ));
    }
    if ns == 0 {
        return Err("redo fsyncs timed at 0 ns".into());
    }
    // The user threads have exited: a tidy reading drops their entries,
    // and the totals stay.
    let exited = |c: &FsyncCounters| -> Result<Vec<u32>, String> {
        Ok(MapsReading::read(c.probes())
            .map_err(|e| e.to_string())?
            .threads
            .keys()
            .copied()
            .filter(|tid| !Path::new(&format!("/proc/{pid}/task/{tid}")).exists())
            .collect())
    };
    let dead = exited(&c)?;
    if dead.is_empty() {
        return Err("no exited thread in the maps to forget: the check proves nothing".into());
    }
    c.set_tidy_every(std::time::Duration::ZERO);
    let (tidied, _) = redo(&mut c)?;
    let left = exited(&c)?;
    child.finish();
    if tidied != after {
        return Err(format!("tidying moved the total from {after} to {tidied}"));
    }
    if !left.is_empty() {
        return Err(format!("exited threads {left:?} still in the maps"));
    }
    Ok(())
}
