//! Model checking of the buffer pool's paths without its mutex (the page
//! hash's own latches, a hit on a young page, a change to a dirty page
//! that leaves the flush list alone) with loom, on the real pool: its
//! mutex, frame latches, page hash and frame atomics are loom's in this
//! build. The pool is two frames over an in-memory disk, so a third page
//! evicts; the doublewrite buffer is off (its own locks are not the
//! subject). Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_buffer_pool`.

use std::sync::Arc;

use crate::page_store::buffer_pool::{BufferPool, PoolOptions};
use crate::page_store::doublewrite::{
    Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions,
};
use crate::page_store::page::{PageId, PageState, HEADER};
use crate::page_store::tablespace::Tablespace;
use crate::page_store::Spaces;
use crate::vfs::{SimVfs, Vfs};

const PS: usize = 4096;

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

fn pool(vfs: &Arc<dyn Vfs>) -> Arc<BufferPool> {
    let spaces = Spaces::new();
    spaces.insert(Tablespace::open(vfs.as_ref(), 1, PS, true).unwrap());
    let o = DoublewriteOptions {
        mode: DoublewriteMode::Off,
        ..DoublewriteOptions::default()
    };
    let c = Arc::new(DoublewriteCounters::default());
    let dw = Doublewrite::open(vfs.clone(), o, PS, c).unwrap();
    let opts = PoolOptions {
        frames: 2,
        lru_scan_depth: 2,
        ..PoolOptions::default()
    };
    BufferPool::new(PS, Arc::new(spaces), Arc::new(dw), opts)
}

fn id(no: u32) -> PageId {
    PageId {
        space: 1,
        page_no: no,
    }
}

/// A page's own number, kept in its body.
fn stamp(p: &[u8]) -> u32 {
    u32::from_le_bytes(p[HEADER..HEADER + 4].try_into().unwrap())
}

/// Pages 0..3 on disk, each stamped with its number; the pool's two
/// frames hold pages 0 and 1, both young, page 0 at the young tail (the
/// next to go when a page is read in).
fn three_pages() -> (Arc<dyn Vfs>, Arc<BufferPool>) {
    let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
    let bp = pool(&vfs);
    for no in 0..3u32 {
        bp.modify(id(no), u64::from(no) + 1, |b| {
            b[..4].copy_from_slice(&no.to_le_bytes())
        })
        .unwrap();
        bp.flush_all().unwrap();
    }
    for no in [0, 0, 1, 1] {
        bp.read(id(no), stamp).unwrap();
    }
    (vfs, bp)
}

/// Hits on a young page (no mutex) race a reader whose miss evicts that
/// page's frame and reads another page into it: each hit reads its own
/// page or looks again, never the page the frame holds next.
#[test]
fn a_hit_racing_an_eviction_reads_its_own_page() {
    model(2, || {
        let (_vfs, bp) = three_pages();
        let b = bp.clone();
        let evictor = loom::thread::spawn(move || {
            assert_eq!(b.read(id(2), stamp).unwrap(), 2);
        });
        assert_eq!(bp.read(id(0), stamp).unwrap(), 0);
        assert_eq!(bp.read(id(0), stamp).unwrap(), 0);
        evictor.join().unwrap();
    });
}

/// A change to a dirty page takes no mutex while a flush writes that page:
/// after both, the page is either dirty still or on disk with the change
/// (a page marked clean with a change its write missed would be lost).
#[test]
fn a_change_to_a_dirty_page_racing_its_flush_is_never_lost() {
    model(3, || {
        let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
        let bp = pool(&vfs);
        bp.modify(id(0), 10, |b| b[0] = 1).unwrap();
        let b = bp.clone();
        let flusher = loom::thread::spawn(move || b.flush_all().unwrap());
        bp.modify(id(0), 20, |b| b[0] = 2).unwrap();
        flusher.join().unwrap();
        let ts = Tablespace::open(vfs.as_ref(), 1, PS, false).unwrap();
        let mut buf = vec![0u8; PS];
        let on_disk = match ts.read_verified(0, &mut buf).unwrap() {
            PageState::Written { .. } => buf[HEADER],
            PageState::Empty => 0,
        };
        match bp.oldest_dirty_lsn() {
            None => assert_eq!(on_disk, 2, "clean, but the disk misses the change"),
            Some(lsn) => assert!(lsn == 10 || lsn == 20, "{lsn}"),
        }
        bp.flush_all().unwrap();
        ts.read_verified(0, &mut buf).unwrap();
        assert_eq!(buf[HEADER], 2);
    });
}
