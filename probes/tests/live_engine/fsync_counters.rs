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

/// Tables on pages in a pool a quarter of their size, doublewrite ON: the
/// probes' fsyncs of the doublewrite buffer's files (a file kind of their
/// own) are the engine's `Innodb_dblwr_writes` (one copy written and
/// synced per batch or single page), in both designs; each copy is
/// followed by its pages' tablespace fsyncs, which the probes class as
/// data.
pub fn doublewrite_fsyncs_match_the_engine_in_both_designs() -> Result<(), String> {
    let exe = std::env::current_exe().unwrap();
    let profile = Profile::builtin("redoctor-engine").unwrap();
    for design in ["legacy", "files"] {
        let rows = [(crate::child::ROWS_ENV, "4000")];
        let (mut child, _) =
            EngineChild::start_with(&exe, &format!("pages-{design}"), 8, 1.5, &rows);
        let before = child.status();
        let mut c = FsyncCounters::attach(child.pid(), &profile).map_err(|e| e.to_string())?;
        let calls = |c: &mut FsyncCounters, kind: FileKind| -> Result<u64, String> {
            let t = c.read().map_err(|e| e.to_string())?;
            Ok(t.get(&kind).map_or(0, |r| r.calls))
        };
        let (dw0, data0) = (
            calls(&mut c, FileKind::Doublewrite)?,
            calls(&mut c, FileKind::Data)?,
        );
        child.run_workload();
        let after = child.status();
        let (dw1, data1) = (
            calls(&mut c, FileKind::Doublewrite)?,
            calls(&mut c, FileKind::Data)?,
        );
        child.finish();
        let delta = |name: &str| {
            after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0)
        };
        let (writes, reads) = (
            delta("Innodb_dblwr_writes"),
            delta("Innodb_buffer_pool_reads"),
        );
        if reads == 0 {
            return Err(format!(
                "{design}: no page read from disk: the pool held the data"
            ));
        }
        if writes < 20 {
            return Err(format!(
                "{design}: {writes} doublewrite writes: the check proves little"
            ));
        }
        if dw1 - dw0 != writes {
            return Err(format!(
                "{design}: the probes saw {} doublewrite fsyncs, the engine counted {writes} (Innodb_dblwr_writes)",
                dw1 - dw0
            ));
        }
        println!(
            "  {design}: {writes} doublewrite copies written and synced (probes and engine agree), {} data fsyncs, {reads} page reads",
            data1 - data0
        );
        if data1 - data0 < writes {
            return Err(format!(
                "{design}: {} data fsyncs for {writes} doublewrite copies (each is followed by its pages' tablespace fsync)",
                data1 - data0
            ));
        }
    }
    Ok(())
}
