//! The first window splits writes by caller like every later one: a child
//! process's thread named as the engine's page cleaner writes pages of a
//! tablespace file without pause from before the probes are attached, so
//! any write counted before the sampler marked it a background writer
//! would show up as a foreground (user thread's) write. Forty short
//! windows follow: the programs count a write while user space reads the
//! counters field by field, so a split that a racing write could tear
//! would show a foreground write in one of them (the old counters, a
//! total and its background part, did within a few windows). A write
//! can stall past a 5-ms window (a page under writeback, a busy disk, a
//! descheduled writer), so empty short windows are skipped and more are
//! read until forty held writes.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redoctor_probes::{AttachOptions, FileKind, Probes, Profile, Sampler, WriterSide};

use crate::child::{tablespace_file, wait_line, LineChild};

/// The child mode of this check.
pub const MODE: &str = "steady-writer";
const PAGE: usize = 16384;
/// Pages the writer cycles over.
const PAGES: u64 = 64;
/// Short windows with writes read after the first two.
const SHORT_WINDOWS: usize = 40;
/// Short windows read at most while waiting for those.
const MAX_SHORT_WINDOWS: usize = 400;

/// Child side: prints READY once the cleaner's thread has written a
/// first round of pages, keeps it writing until a line from the parent,
/// then prints DONE and exits.
pub fn run_child() {
    let writer = Writer::start("page_cleaner/0", 0xc1);
    println!("READY");
    wait_line();
    writer.stop();
    println!("DONE");
    std::io::stdout().flush().unwrap();
}

/// A thread named `name` writing pages of the tablespace file without
/// pause (filled with `fill`); started once it has written a first round.
struct Writer {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Writer {
    fn start(name: &str, fill: u8) -> Writer {
        let file = tablespace_file();
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let (s, w) = (stop.clone(), written.clone());
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let buf = vec![fill; PAGE];
                let mut page = 0u64;
                while !s.load(Ordering::Relaxed) {
                    file.write_at(&buf, page * PAGE as u64)
                        .expect("writing a page");
                    page = (page + 1) % PAGES;
                    w.fetch_add(1, Ordering::Relaxed);
                }
            })
            .unwrap();
        while written.load(Ordering::Relaxed) < PAGES {
            std::thread::sleep(Duration::from_millis(1));
        }
        Writer { stop, thread }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
    }
}

pub fn background_writes_are_split_from_the_first_window() -> Result<(), String> {
    let mut child = LineChild::start(MODE);
    child.expect("READY")?;
    let probes = Probes::attach(&AttachOptions::new(child.pid())).map_err(|e| e.to_string())?;
    let mut sampler = Sampler::new(probes, Profile::builtin("redoctor-engine").unwrap())
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(100));
    let first = sampler.window().map_err(|e| e.to_string())?;
    sampler.restart().map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(100));
    let after_restart = sampler.window().map_err(|e| e.to_string())?;
    let mut short = Vec::new();
    let mut read = 0;
    while short.len() < SHORT_WINDOWS && read < MAX_SHORT_WINDOWS {
        std::thread::sleep(Duration::from_millis(5));
        let w = sampler.window().map_err(|e| e.to_string())?;
        read += 1;
        if w.io.get(&FileKind::Data).is_some_and(|d| d.write_calls > 0) {
            short.push((read, w));
        }
    }
    child.go();
    child.expect("DONE")?;
    child.wait()?;
    let short_total: u64 = short
        .iter()
        .filter_map(|(_, w)| w.io.get(&FileKind::Data))
        .map(|d| d.write_calls)
        .sum();
    println!(
        "  {} of {read} windows of 5 ms held writes: {short_total} data-file writes",
        short.len()
    );
    if short.len() < SHORT_WINDOWS {
        return Err(format!(
            "only {} of {read} windows of 5 ms held a data-file write of a writer that never pauses; is the disk stalled?",
            short.len()
        ));
    }
    let long = [
        ("first window", &first),
        ("window after a restart", &after_restart),
    ];
    for (which, w) in long {
        let data = w.io.get(&FileKind::Data).cloned().unwrap_or_default();
        println!(
            "  {which}: {} data-file writes, {} by the cleaner",
            data.write_calls, data.background_write_calls
        );
    }
    let short = short.iter().map(|(i, w)| (format!("5-ms window {i}"), w));
    for (which, w) in long
        .map(|(n, w)| (n.to_string(), w))
        .into_iter()
        .chain(short)
    {
        let data = w.io.get(&FileKind::Data).cloned().unwrap_or_default();
        if data.write_calls == 0 {
            return Err(format!(
                "{which}: no data-file write of a writer that never paused"
            ));
        }
        if data.background_write_calls != data.write_calls {
            return Err(format!(
                "{which}: {} of {} data-file writes counted as background; only the page cleaner's thread wrote",
                data.background_write_calls, data.write_calls
            ));
        }
    }
    Ok(())
}

/// The child mode of [`new_threads_count_on_the_profiles_side`].
pub const MODE_LATE: &str = "late-writer";

/// Child side: prints READY, and on a line from the parent starts a page
/// cleaner's thread that writes pages without pause; prints STARTED once
/// it has written a first round, stops it on the next line, then prints
/// DONE and exits.
pub fn run_late_child() {
    println!("READY");
    wait_line();
    let writer = Writer::start("page_cleaner/1", 0xc2);
    println!("STARTED");
    wait_line();
    writer.stop();
    println!("DONE");
    std::io::stdout().flush().unwrap();
}

/// A thread born after the probes attached writes before any window has
/// marked it: those writes count where the profile's `new_threads` says.
/// With `background` (MariaDB's: its task pool starts threads on demand)
/// every write of the new page cleaner is the background's from the
/// window it was born in; with the default, `foreground`, the writes it
/// made before that window's end read as the foreground's, and later
/// windows count it by its role.
pub fn new_threads_count_on_the_profiles_side() -> Result<(), String> {
    let engine = Profile::builtin("redoctor-engine").unwrap();
    let mut background = engine.clone();
    background.new_threads = WriterSide::Background;
    for (side, profile) in [("background", background), ("foreground", engine)] {
        let mut child = LineChild::start(MODE_LATE);
        child.expect("READY")?;
        let mut opts = AttachOptions::new(child.pid());
        opts.unmarked_background = profile.new_threads == WriterSide::Background;
        let probes = Probes::attach(&opts).map_err(|e| e.to_string())?;
        let mut sampler = Sampler::new(probes, profile).map_err(|e| e.to_string())?;
        child.go();
        child.expect("STARTED")?;
        std::thread::sleep(Duration::from_millis(20));
        let born = sampler.window().map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(20));
        let next = sampler.window().map_err(|e| e.to_string())?;
        child.go();
        child.expect("DONE")?;
        child.wait()?;
        let data =
            |w: &redoctor_probes::Signals| w.io.get(&FileKind::Data).cloned().unwrap_or_default();
        let (born, next) = (data(&born), data(&next));
        println!(
            "  new_threads = {side}: the window it was born in {} data-file writes, {} background; the next {} of {}",
            born.write_calls, born.background_write_calls, next.background_write_calls, next.write_calls
        );
        if born.write_calls < PAGES || next.write_calls == 0 {
            return Err(format!(
                "new_threads = {side}: {} writes in the window the thread was born in, {} in the next",
                born.write_calls, next.write_calls
            ));
        }
        if next.background_write_calls != next.write_calls {
            return Err(format!(
                "new_threads = {side}: the window after it was marked counted {} of {} writes as background",
                next.background_write_calls, next.write_calls
            ));
        }
        let before_mark = born.write_calls - born.background_write_calls;
        match side {
            "background" if before_mark != 0 => {
                return Err(format!(
                    "new_threads = background: {before_mark} of {} writes of a thread not marked yet counted in the foreground",
                    born.write_calls
                ))
            }
            "foreground" if before_mark < PAGES => {
                return Err(format!(
                    "new_threads = foreground: only {before_mark} writes counted in the foreground, but the thread wrote {PAGES} before any window marked it"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}
