//! Page reads seen by the probes (positional reads on data files) against
//! the engine's own count of pages read from disk.

use redoctor_probes::{AttachOptions, FileKind, Probes, Profile, Sampler, Signals};

use crate::child::{EngineChild, ROWS_ENV};

/// The engine with tables on pages in a pool a quarter of their size,
/// the probes attached: the window over one run of its workload, and each
/// status counter's advance over it. The sampler marks the page cleaners
/// when it starts (their role comes from their names); a first window
/// closes whatever loading the tables left.
fn paged_workload() -> Result<(Signals, impl Fn(&str) -> u64), String> {
    let exe = std::env::current_exe().unwrap();
    let profile = Profile::builtin("redoctor-engine").unwrap();
    let (mut child, _) =
        EngineChild::start_with(&exe, "pages-files", 8, 1.5, &[(ROWS_ENV, "4000")]);
    let probes = Probes::attach(&AttachOptions::new(child.pid())).map_err(|e| e.to_string())?;
    let mut sampler = Sampler::new(probes, profile).map_err(|e| e.to_string())?;
    sampler.window().map_err(|e| e.to_string())?;
    let before = child.status();
    child.run_workload();
    let after = child.status();
    let w = sampler.window().map_err(|e| e.to_string())?;
    child.finish();
    Ok((w, move |name: &str| after[name] - before[name]))
}

/// Tables on pages in a pool a quarter of their size: every page the
/// workload misses is one `pread` of one page on a tablespace file (a
/// table's `.ibd` or its secondary index's scratch `.ibt`), so the
/// probes' reads on data files are the engine's `Innodb_buffer_pool_reads`,
/// each of a page's bytes, and each timed.
pub fn page_reads_match_the_engine() -> Result<(), String> {
    let (w, d) = paged_workload()?;
    let reads = d("Innodb_buffer_pool_reads");
    if reads < 50 {
        return Err(format!(
            "{reads} pages read from disk: the check proves little"
        ));
    }
    let data = w.io.get(&FileKind::Data).cloned().unwrap_or_default();
    println!(
        "  {reads} pages read (engine), {} data-file reads (probes), mean {:.1} us, p99 <= {} us",
        data.read_calls,
        data.read_ns as f64 / data.read_calls.max(1) as f64 / 1e3,
        data.read_latency.p99_ns_le / 1000
    );
    if data.read_calls != reads {
        return Err(format!(
            "the probes saw {} reads on data files, the engine read {reads} pages (Innodb_buffer_pool_reads)",
            data.read_calls
        ));
    }
    if data.read_bytes != reads * 16384 {
        return Err(format!(
            "{} bytes read for {reads} pages of 16 KiB",
            data.read_bytes
        ));
    }
    if data.read_latency.count != reads || data.read_ns == 0 {
        return Err(format!(
            "reads timed {} times ({} ns in all) for {reads} reads",
            data.read_latency.count, data.read_ns
        ));
    }
    if (data.reads_per_s - reads as f64 / (w.window_ns as f64 / 1e9)).abs()
        > 1e-6 * data.reads_per_s
    {
        return Err(format!(
            "reads per second {} off the count",
            data.reads_per_s
        ));
    }
    // Positional reads are file reads only: no other kind reads here
    // (sockets and pipes use read(2), which is not traced).
    for (kind, io) in &w.io {
        if *kind != FileKind::Data && io.read_calls > 0 {
            return Err(format!("{} reads on {kind} files", io.read_calls));
        }
    }
    Ok(())
}

/// Page writes split by caller: the background writers (here the page
/// cleaners, `page_cleaner/N`) are marked in the programs' per-thread
/// entries, and their data-file writes counted apart. Every page goes to
/// its tablespace in one `pwrite` of one page, so the background writers'
/// writes are the engine's `Innodb_buffer_pool_pages_flushed_by_cleaners`
/// and the rest its single-page flushes (user threads that found no free
/// page).
pub fn page_writes_split_by_caller() -> Result<(), String> {
    let (w, d) = paged_workload()?;
    let cleaners = d("Innodb_buffer_pool_pages_flushed_by_cleaners");
    let single = d("Innodb_buffer_pool_pages_flushed_single_page");
    let data = w.io.get(&FileKind::Data).cloned().unwrap_or_default();
    let others = data.write_calls - data.background_write_calls;
    println!(
        "  engine: {cleaners} pages by the cleaners, {single} single-page; probes: {} data-file writes by background writers, {others} by others",
        data.background_write_calls
    );
    if cleaners < 50 || single < 10 {
        return Err(format!(
            "{cleaners} pages flushed by the cleaners and {single} by user threads: the check proves little"
        ));
    }
    if data.background_write_calls != cleaners || others != single {
        return Err(format!(
            "probes: {} data-file writes by background writers and {others} by others; engine: {cleaners} by the cleaners and {single} single-page flushes",
            data.background_write_calls
        ));
    }
    if data.background_write_bytes != cleaners * 16384 {
        return Err(format!(
            "{} bytes by background writers for {cleaners} pages of 16 KiB",
            data.background_write_bytes
        ));
    }
    Ok(())
}
