//! Reads and writes through an io_uring (a server's native asynchronous
//! IO, as MariaDB's page writes) counted like the syscalls': a child
//! process writes pages of a tablespace file through a ring from a thread
//! named as the engine's page cleaner and from one named as a user thread,
//! which then reads some back through a ring; the probes' data-file totals must be exactly
//! those requests, split by caller, each read timed.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::mpsc;

use io_uring::{opcode, types, IoUring};
use redoctor_probes::{AttachOptions, FileKind, Probes, Profile, Sampler};

use crate::child::{tablespace_file, wait_line, LineChild};

/// The child mode of this check.
pub const MODE: &str = "ring";
const PAGE: usize = 16384;
/// Pages written by the page cleaner's thread, then by the main thread.
const BACKGROUND: usize = 40;
const FOREGROUND: usize = 24;
/// Pages read back.
const READS: usize = 30;

/// One request through a fresh ring, waited for: `write` the buffer at
/// `page`, or read it from there.
fn one_request(ring: &mut IoUring, fd: i32, page: usize, buf: &mut [u8], write: bool) {
    let off = (page * PAGE) as u64;
    let sqe = if write {
        opcode::Write::new(types::Fd(fd), buf.as_ptr(), PAGE as u32)
            .offset(off)
            .build()
    } else {
        opcode::Read::new(types::Fd(fd), buf.as_mut_ptr(), PAGE as u32)
            .offset(off)
            .build()
    };
    // SAFETY: `buf` outlives the request, which is waited for below.
    unsafe {
        ring.submission()
            .push(&sqe)
            .expect("a free submission entry")
    };
    ring.submit_and_wait(1).expect("io_uring_enter");
    let cqe = ring.completion().next().expect("a completion");
    assert_eq!(cqe.result(), PAGE as i32, "request at page {page}");
}

/// Child side: prints READY once the cleaner's thread exists (so the
/// sampler marks it), runs the requests on a line from the parent, prints
/// DONE and keeps the file open until the next line.
pub fn run_child() {
    let file = tablespace_file();
    let fd = file.as_raw_fd();
    // Both threads exist before READY, so the sampler marks them: the
    // cleaner's by its role (page_writer, a background writer), the user's
    // as one that runs transactions (user/N).
    let thread = |name: &str, work: fn(i32)| {
        let (go, wait) = mpsc::channel::<()>();
        let t = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                wait.recv().unwrap();
                work(fd);
            })
            .unwrap();
        (go, t)
    };
    let cleaner = thread("page_cleaner/0", |fd| {
        let mut ring = IoUring::new(8).expect("io_uring_setup");
        let mut buf = vec![0xc1u8; PAGE];
        for page in 0..BACKGROUND {
            one_request(&mut ring, fd, page, &mut buf, true);
        }
    });
    let user = thread("user/0", |fd| {
        let mut ring = IoUring::new(8).expect("io_uring_setup");
        let mut buf = vec![0xf6u8; PAGE];
        for page in BACKGROUND..BACKGROUND + FOREGROUND {
            one_request(&mut ring, fd, page, &mut buf, true);
        }
        for page in 0..READS {
            one_request(&mut ring, fd, page * 2, &mut buf, false);
        }
    });
    println!("READY");
    wait_line();
    for (go, t) in [cleaner, user] {
        go.send(()).unwrap();
        t.join().unwrap();
    }
    println!("DONE");
    std::io::stdout().flush().unwrap();
    wait_line();
    drop(file);
}

pub fn ring_requests_are_counted_by_file_and_caller() -> Result<(), String> {
    let mut child = LineChild::start(MODE);
    child.expect("READY")?;
    let probes = Probes::attach(&AttachOptions::new(child.pid())).map_err(|e| e.to_string())?;
    if let Some(u) = probes
        .unavailable()
        .iter()
        .find(|u| u.what.contains("io_uring"))
    {
        return Err(format!("{}: {}", u.what, u.why));
    }
    let mut sampler = Sampler::new(probes, Profile::builtin("redoctor-engine").unwrap())
        .map_err(|e| e.to_string())?;
    sampler.window().map_err(|e| e.to_string())?;
    child.go();
    child.expect("DONE")?;
    let w = sampler.window().map_err(|e| e.to_string())?;
    child.go();
    child.wait()?;
    let data = w.io.get(&FileKind::Data).cloned().unwrap_or_default();
    println!(
        "  ring: {} data-file writes ({} by the cleaner), {} reads, mean read {:.1} us",
        data.write_calls,
        data.background_write_calls,
        data.read_calls,
        data.read_ns as f64 / data.read_calls.max(1) as f64 / 1e3
    );
    let pages = (BACKGROUND + FOREGROUND) as u64;
    let page = PAGE as u64;
    if data.write_calls != pages || data.write_bytes != pages * page {
        return Err(format!(
            "{} data-file writes of {} bytes for {pages} pages written through rings",
            data.write_calls, data.write_bytes
        ));
    }
    let bg = BACKGROUND as u64;
    if data.background_write_calls != bg || data.background_write_bytes != bg * page {
        return Err(format!(
            "{} writes ({} bytes) by background writers, the page cleaner's thread wrote {bg} pages",
            data.background_write_calls, data.background_write_bytes
        ));
    }
    let reads = READS as u64;
    if data.read_calls != reads
        || data.read_bytes != reads * page
        || data.read_latency.count != reads
        || data.read_ns == 0
    {
        return Err(format!(
            "{} reads of {} bytes, {} timed ({} ns), for {reads} pages read through a ring",
            data.read_calls, data.read_bytes, data.read_latency.count, data.read_ns
        ));
    }
    Ok(())
}
