//! The binlog file format: write, rotate, read back, checksums catch
//! corruption, a torn tail is found and repaired, rotation crashes leave
//! orphans that recovery removes.

use std::sync::Arc;

use crate::binlog::file::{self, BinlogWriter, FileEnd, FILE_HDR};
use crate::binlog::recover;
use crate::binlog::BinlogError;
use crate::vfs::{SimVfs, Vfs};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn payload(xid: u64) -> Vec<u8> {
    (0..(xid % 97 + 1)).map(|i| (xid + i) as u8).collect()
}

/// Writes events `first..first+n`, one append per event; returns the writer.
fn write(w: &mut BinlogWriter, first: u64, n: u64) {
    for xid in first..first + n {
        let mut ev = Vec::new();
        let p = payload(xid);
        let crc = file::payload_crc(&p);
        w.frame_group([(xid, p.as_slice(), &crc)], &mut ev);
        w.append(&ev).unwrap();
        if w.needs_rotation() {
            w.rotate().unwrap();
        }
    }
}

fn xids(vfs: &dyn Vfs) -> Vec<u64> {
    file::read_all(vfs).unwrap().iter().map(|e| e.xid).collect()
}

#[test]
fn write_rotate_read_back() {
    let vfs = Arc::new(SimVfs::new());
    let mut w = BinlogWriter::open(vfs.clone(), Vec::new(), FILE_HDR, 0, 4096).unwrap();
    write(&mut w, 1, 300);
    assert!(
        w.names().len() > 3,
        "rotated into {} files",
        w.names().len()
    );
    let events = file::read_all(vfs.as_ref()).unwrap();
    assert_eq!(events.len(), 300);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.xid, i as u64 + 1);
        assert_eq!(e.payload, payload(e.xid));
    }
    // Every file but the last reached the limit; the index lists them in order.
    let names = file::read_index(vfs.as_ref()).unwrap().unwrap();
    assert_eq!(names, w.names());
    for (i, n) in names.iter().enumerate() {
        assert_eq!(file::seq_of(n), Some(i as u64 + 1));
        let len = vfs.open(n, false).unwrap().len().unwrap();
        if i + 1 < names.len() {
            assert!(len >= 4096, "{n} rotated early at {len}");
        }
    }
    // Reopening continues the last file where recovery says it ends.
    let rec = recover::recover(vfs.as_ref()).unwrap().unwrap();
    assert_eq!(rec.report.events, 300);
    assert_eq!(rec.xids.len(), 300);
    let mut w = BinlogWriter::open(
        vfs.clone(),
        rec.files,
        rec.end_offset,
        rec.last_sequence,
        4096,
    )
    .unwrap();
    write(&mut w, 301, 10);
    assert_eq!(xids(vfs.as_ref()), (1..=310).collect::<Vec<_>>());
    // One-event groups: each file's sequences run 1, 2, ... and each
    // event's last_committed is its predecessor, across the reopen too.
    let events = file::read_all(vfs.as_ref()).unwrap();
    let mut prev: Option<&file::Event> = None;
    for e in &events {
        let want = match prev {
            Some(p) if p.file == e.file => p.clock.sequence + 1,
            _ => 1,
        };
        assert_eq!(e.clock.sequence, want, "{e:?}");
        assert_eq!(e.clock.last_committed, want - 1, "{e:?}");
        prev = Some(e);
    }
}

#[test]
fn a_group_shares_its_last_committed() {
    let vfs = Arc::new(SimVfs::new());
    let mut w = BinlogWriter::open(vfs.clone(), Vec::new(), FILE_HDR, 0, 1 << 20).unwrap();
    let p = payload(1);
    let crc = file::payload_crc(&p);
    for group in [3usize, 1, 4] {
        let mut buf = Vec::new();
        w.frame_group((0..group).map(|i| (i as u64, p.as_slice(), &crc)), &mut buf);
        w.append(&buf).unwrap();
    }
    let clocks: Vec<(u64, u64)> = file::read_all(vfs.as_ref())
        .unwrap()
        .iter()
        .map(|e| (e.clock.last_committed, e.clock.sequence))
        .collect();
    assert_eq!(
        clocks,
        vec![
            (0, 1),
            (0, 2),
            (0, 3),
            (3, 4),
            (4, 5),
            (4, 6),
            (4, 7),
            (4, 8)
        ]
    );
}

#[test]
fn checksum_catches_corruption_and_recovery_repairs_the_tail() {
    let vfs = Arc::new(SimVfs::new());
    let mut w = BinlogWriter::open(vfs.clone(), Vec::new(), FILE_HDR, 0, 1 << 20).unwrap();
    write(&mut w, 1, 50);
    let events = file::read_all(vfs.as_ref()).unwrap();
    let victim = &events[30];
    // Flip one payload byte of event 31: the reader stops before it.
    let f = vfs.open(&victim.file, false).unwrap();
    let mut b = [0u8; 1];
    let at = victim.offset + file::EVENT_HDR as u64 + 2;
    f.read_at(&mut b, at).unwrap();
    f.write_at(&[b[0] ^ 0x40], at).unwrap();
    assert_eq!(xids(vfs.as_ref()), (1..=30).collect::<Vec<_>>());
    let scan = file::scan_file(vfs.as_ref(), &victim.file, |_| true).unwrap();
    assert!(
        matches!(&scan.end, FileEnd::Torn { offset, why } if *offset == victim.offset && why.contains("checksum")),
        "{:?}",
        scan.end
    );
    // Recovery zero-fills the tail; new events then follow event 30 and the
    // stale events 32..50 never come back.
    let rec = recover::recover(vfs.as_ref()).unwrap().unwrap();
    assert!(rec.report.torn_tail.is_some());
    assert_eq!(rec.report.truncated_bytes, scan.len - victim.offset);
    assert_eq!(rec.end_offset, victim.offset);
    let mut w = BinlogWriter::open(
        vfs.clone(),
        rec.files,
        rec.end_offset,
        rec.last_sequence,
        1 << 20,
    )
    .unwrap();
    write(&mut w, 1000, 1);
    let mut want: Vec<u64> = (1..=30).collect();
    want.push(1000);
    assert_eq!(xids(vfs.as_ref()), want);
    let again = recover::recover(vfs.as_ref()).unwrap().unwrap();
    assert_eq!(again.report.torn_tail, None);
    assert_eq!(again.report.truncated_bytes, 0);
}

#[test]
fn corruption_in_an_earlier_file_is_an_error() {
    let vfs = Arc::new(SimVfs::new());
    let mut w = BinlogWriter::open(vfs.clone(), Vec::new(), FILE_HDR, 0, 4096).unwrap();
    write(&mut w, 1, 200);
    let first = &w.names()[0];
    let f = vfs.open(first, false).unwrap();
    f.write_at(&[0xff; 8], FILE_HDR + 100).unwrap();
    let err = file::read_all(vfs.as_ref()).unwrap_err();
    assert!(matches!(err, BinlogError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("restore"), "{err}");
    assert!(recover::recover(vfs.as_ref()).is_err());
    // A damaged header is named as such.
    f.write_at(b"XXXX", 0).unwrap();
    let err = file::read_all(vfs.as_ref()).unwrap_err();
    assert!(matches!(err, BinlogError::BadHeader { .. }), "{err}");
}

#[test]
fn missing_file_and_bad_index_are_reported() {
    let vfs = Arc::new(SimVfs::new());
    let mut w = BinlogWriter::open(vfs.clone(), Vec::new(), FILE_HDR, 0, 4096).unwrap();
    write(&mut w, 1, 100);
    vfs.remove(&w.names()[1].clone()).unwrap();
    let err = recover::recover(vfs.as_ref()).unwrap_err();
    assert!(matches!(err, BinlogError::MissingFile { .. }), "{err}");
    file::write_index(vfs.as_ref(), &["notabinlog".to_string()]).unwrap();
    let err = recover::recover(vfs.as_ref()).unwrap_err();
    assert!(matches!(err, BinlogError::BadIndex { .. }), "{err}");
}

/// Power cuts at random points of writing and rotating: the events found are
/// a prefix of those written that holds every synced one; an unindexed new
/// file is removed as an orphan; writing resumes cleanly.
#[test]
fn torn_tail_after_power_cut() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let vfs = Arc::new(SimVfs::new());
        let mut w = BinlogWriter::open(vfs.clone(), Vec::new(), FILE_HDR, 0, 8192).unwrap();
        let mut synced = 0u64;
        let n = rng.gen_range(1..400u64);
        for xid in 1..=n {
            let mut ev = Vec::new();
            let p = payload(xid);
            let crc = file::payload_crc(&p);
            w.frame_group([(xid, p.as_slice(), &crc)], &mut ev);
            w.append(&ev).unwrap();
            if rng.gen_bool(0.1) {
                w.file().sync_data().unwrap();
                synced = xid;
            }
            if w.needs_rotation() {
                w.rotate().unwrap();
                synced = xid;
            }
        }
        // Sometimes crash in the middle of a rotation (file made, not indexed).
        if rng.gen_bool(0.3) {
            file::create_file(vfs.as_ref(), w.names().len() as u64 + 1).unwrap();
        }
        let crashed = Arc::new(vfs.crash(&mut rng));
        let rec = recover::recover(crashed.as_ref()).unwrap().unwrap();
        let got = xids(crashed.as_ref());
        assert!(
            got.len() as u64 >= synced,
            "seed {seed}: lost synced events"
        );
        assert_eq!(
            got,
            (1..=got.len() as u64).collect::<Vec<_>>(),
            "seed {seed}"
        );
        assert_eq!(rec.xids.len(), got.len());
        for name in crashed.list().unwrap() {
            if file::seq_of(&name).is_some() {
                assert!(rec.files.contains(&name), "seed {seed}: orphan {name} left");
            }
        }
        let mut w = BinlogWriter::open(
            crashed.clone(),
            rec.files,
            rec.end_offset,
            rec.last_sequence,
            8192,
        )
        .unwrap();
        write(&mut w, 10_000, 5);
        let after = xids(crashed.as_ref());
        assert_eq!(&after[..got.len()], &got[..]);
        assert_eq!(
            &after[got.len()..],
            &[10_000, 10_001, 10_002, 10_003, 10_004]
        );
    }
}

#[test]
fn settings_are_validated() {
    use crate::binlog::{validate_max_binlog_size, validate_sync_delay_us};
    assert!(validate_max_binlog_size(4096).is_ok());
    let e = validate_max_binlog_size(100).unwrap_err().to_string();
    assert!(
        e.contains("max_binlog_size=100") && e.contains("4096"),
        "{e}"
    );
    assert!(validate_sync_delay_us(1_000_000).is_ok());
    let e = validate_sync_delay_us(1_000_001).unwrap_err().to_string();
    assert!(e.contains("binlog_group_commit_sync_delay"), "{e}");
}
