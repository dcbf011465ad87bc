//! The log buffer under many concurrent appenders: no byte lost or
//! duplicated, each thread's records in its own order, in both redo modes
//! and with a tiny buffer so the ring wraps thousands of times.

use std::sync::Arc;

use crate::counters::Counters;
use crate::recovery;
use crate::redo::log_file::{self, StopReason};
use crate::redo::{RedoLog, RedoMode, RedoOptions};
use crate::vfs::{SimVfs, Vfs};

fn opts(mode: RedoMode) -> RedoOptions {
    RedoOptions {
        mode,
        log_buffer_size: 16 << 10,
        log_file_size: 32 << 20,
        link_slots: 4096,
        wait_slots: 64,
        ..RedoOptions::default()
    }
}

fn run(mode: RedoMode, threads: u32, per_thread: u32) {
    let vfs = Arc::new(SimVfs::new());
    let o = opts(mode);
    let rec = recovery::recover(vfs.as_ref(), &o).unwrap();
    let layout = rec.resume.layout;
    let log = RedoLog::start(&o, rec.resume, Arc::new(Counters::default())).unwrap();
    let mut hs = vec![];
    for t in 0..threads {
        let log = log.clone();
        hs.push(std::thread::spawn(move || {
            for seq in 0..per_thread {
                // Varying sizes, some larger than a block.
                let len = 12 + ((t * 31 + seq * 17) % 700) as usize;
                let mut body = vec![(seq % 251) as u8; len];
                body[0..4].copy_from_slice(&t.to_le_bytes());
                body[4..8].copy_from_slice(&seq.to_le_bytes());
                let (s, e) = log.append(&body).unwrap();
                log.mark_closed(s, e);
                if seq % 7 == 0 {
                    log.wait_for_commit(e).unwrap();
                }
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    let end = log.flush_all().unwrap();
    log.shutdown().unwrap();

    let file = vfs.open(recovery::REDO_FILE, false).unwrap();
    let mut next = vec![0u32; threads as usize];
    let mut last_end = 0;
    let report = log_file::scan(file.as_ref(), layout, 0, 1 << 20, |lsn, body| {
        assert!(lsn >= last_end, "records out of lsn order");
        last_end = lsn + 8 + body.len() as u64;
        let t = u32::from_le_bytes(body[0..4].try_into().unwrap()) as usize;
        let seq = u32::from_le_bytes(body[4..8].try_into().unwrap());
        // Each thread's records appear exactly once and in its own order.
        if seq != next[t] {
            return Err(format!("thread {t}: expected seq {} got {seq}", next[t]));
        }
        let len = 12 + ((t as u32 * 31 + seq * 17) % 700) as usize;
        if body.len() != len || body[8..].iter().any(|&b| b != (seq % 251) as u8) {
            return Err(format!("thread {t} seq {seq}: body damaged"));
        }
        next[t] += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(report.stop, StopReason::CleanEnd, "{report:?}");
    assert_eq!(report.end_lsn, end);
    assert_eq!(report.records, (threads * per_thread) as u64);
    assert!(next.iter().all(|&n| n == per_thread));
}

#[test]
fn concurrent_appends_rt0() {
    run(RedoMode::Off, 16, 2000);
}

#[test]
fn concurrent_appends_rt1() {
    run(RedoMode::On, 16, 2000);
}
