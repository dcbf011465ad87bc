//! Model checking of the log buffer's reservation and copy protocol with
//! loom, on the real ring and link buffer (their bytes are loom's
//! `UnsafeCell`s and their slots loom's atomics in this build, so loom
//! checks every byte read against every byte written). The steps around
//! them are `RedoLog::append`'s and the log writer's: reserve with one
//! `fetch_add` of `sn`, wait until the range lies within `write_lsn + size`,
//! copy in without locks, link the range in `recent_written`; the writer
//! copies out only below the link buffer's tail, then publishes
//! `write_lsn`. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_log_buffer`;
//! a normal build leaves it out.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use std::sync::Arc;

use crate::redo::link_buffer::LinkBuffer;
use crate::redo::log_buffer::LogBuffer;
use loom::sync::atomic::AtomicU64;
use loom::thread;

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

struct Log {
    buf: LogBuffer,
    recent_written: LinkBuffer,
    /// Reserved up to.
    sn: AtomicU64,
    /// Copied out by the writer up to.
    write_lsn: AtomicU64,
}

impl Log {
    fn new(size: usize) -> Arc<Log> {
        Arc::new(Log {
            buf: LogBuffer::new(size),
            recent_written: LinkBuffer::new(16, 0),
            sn: AtomicU64::new(0),
            write_lsn: AtomicU64::new(0),
        })
    }

    /// Thread `id`'s record: its length, then `id` repeated.
    fn record(id: u8, len: usize) -> Vec<u8> {
        let mut r = vec![id; len];
        r[0] = len as u8;
        r
    }

    /// `RedoLog::append`: reserve, wait for ring space, copy, link.
    fn append(&self, rec: &[u8]) {
        let len = rec.len() as u64;
        let start = self.sn.fetch_add(len, AcqRel);
        let end = start + len;
        while end > self.write_lsn.load(Acquire) + self.buf.size() {
            thread::yield_now();
        }
        // SAFETY: [start, end) is ours (one fetch_add) and the writer has
        // copied out what the ring held there before (the wait above).
        unsafe { self.buf.copy_in(start, rec) };
        while !self.recent_written.has_space(start) {
            self.recent_written.advance_tail();
            thread::yield_now();
        }
        self.recent_written.add_link(start, end);
    }

    /// The log writer: copies out everything below the link buffer's tail
    /// until `total` bytes are out, then returns them.
    fn write_out(&self, total: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = 0;
        while w < total {
            let t = self.recent_written.advance_tail();
            if t == w {
                thread::yield_now();
                continue;
            }
            let mut chunk = vec![0; (t - w) as usize];
            // SAFETY: [w, t) is below the tail (complete) and above
            // write_lsn (not yet reusable).
            unsafe { self.buf.copy_out(w, &mut chunk) };
            out.extend_from_slice(&chunk);
            self.write_lsn.store(t, Release);
            w = t;
        }
        out
    }
}

/// Parses what the writer copied out: every record whole, each thread's
/// exactly once (so no two reservations overlapped), nothing else.
fn check_stream(out: &[u8], lens: &[usize]) {
    let mut seen = vec![false; lens.len()];
    let mut at = 0;
    while at < out.len() {
        let len = out[at] as usize;
        assert!(
            len >= 2 && at + len <= out.len(),
            "bad record at {at}: {out:?}"
        );
        let id = out[at + 1] as usize;
        assert!(
            id < lens.len() && lens[id] == len,
            "bad record at {at}: {out:?}"
        );
        assert!(
            out[at + 1..at + len].iter().all(|&b| b as usize == id),
            "torn record at {at}: {out:?}"
        );
        assert!(!seen[id], "record {id} twice: {out:?}");
        seen[id] = true;
        at += len;
    }
    assert!(seen.iter().all(|&s| s), "a record is missing: {out:?}");
}

/// Spawns one copier per record length (thread `i` appends record `i`),
/// runs the writer on this thread, and checks what it copied out.
fn run(size: usize, lens: &'static [usize]) {
    let log = Log::new(size);
    let total = lens.iter().sum::<usize>() as u64;
    let hs: Vec<_> = (0..lens.len())
        .map(|i| {
            let log = log.clone();
            thread::spawn(move || log.append(&Log::record(i as u8, lens[i])))
        })
        .collect();
    let out = log.write_out(total);
    for h in hs {
        h.join().unwrap();
    }
    check_stream(&out, lens);
    assert_eq!(log.recent_written.tail(), total);
}

/// Three copiers and the writer; the ring holds everything.
#[test]
fn three_copiers_the_writer_sees_each_record_whole() {
    model(3, || run(16, &[2, 3, 4]));
}

/// Two copiers whose records do not fit the 8-byte ring together: the
/// second waits for the writer to free space, and its record wraps.
#[test]
fn records_wrapping_the_ring_wait_for_space_and_arrive_whole() {
    model(3, || run(8, &[5, 6]));
}

/// Three copiers over the 8-byte ring: waits for space, a wrap, and the
/// writer copying out while others copy in.
#[test]
fn three_copiers_over_a_small_ring() {
    model(2, || run(8, &[3, 3, 4]));
}
