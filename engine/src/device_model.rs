//! A modelled storage device: a fixed latency per sync and no limit on the
//! syncs in flight, over any [`Vfs`].
//!
//! This host's one virtual disk serves one sync at a time, and tmpfs serves
//! them for free; neither is the device seed 002's doublewrite comparison
//! needs (one that completes many page writes and syncs at once, where the
//! legacy design's 8 single-page slots are the narrowest point). Wrapping
//! the data directory (on tmpfs) in [`DeviceModel`] gives that device: every
//! `fdatasync` of a file and every directory sync first does the real one,
//! then waits the latency in the calling thread, so N threads
//! syncing at once all finish after about one latency, as on a device with
//! a deep queue. Writes and reads pass through untouched (a device's write
//! cache absorbs them; the sync pays). Set by the engine-specific
//! `redoctor_device_sync_latency_us` at startup; for benches only.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::vfs::{Vfs, VfsFile};

/// A [`Vfs`] whose syncs take `latency` more, any number at once.
pub struct DeviceModel {
    inner: Arc<dyn Vfs>,
    latency: Duration,
}

impl DeviceModel {
    /// Wraps `inner` when `latency` is not zero.
    pub fn wrap(inner: Arc<dyn Vfs>, latency: Duration) -> Arc<dyn Vfs> {
        if latency.is_zero() {
            inner
        } else {
            Arc::new(DeviceModel { inner, latency })
        }
    }
}

struct ModelledFile {
    inner: Arc<dyn VfsFile>,
    latency: Duration,
}

impl VfsFile for ModelledFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()?;
        std::thread::sleep(self.latency);
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl Vfs for DeviceModel {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn VfsFile>> {
        Ok(Arc::new(ModelledFile {
            inner: self.inner.open(name, create)?,
            latency: self.latency,
        }))
    }
    fn exists(&self, name: &str) -> bool {
        self.inner.exists(name)
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, name: &str) -> io::Result<()> {
        self.inner.remove(name)
    }
    fn list(&self) -> io::Result<Vec<String>> {
        self.inner.list()
    }
    fn sync_dir(&self) -> io::Result<()> {
        self.inner.sync_dir()?;
        std::thread::sleep(self.latency);
        Ok(())
    }
    fn describe(&self) -> String {
        format!(
            "{} (a modelled device: {} µs a sync)",
            self.inner.describe(),
            self.latency.as_micros()
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::vfs::SimVfs;

    #[test]
    fn a_sync_waits_the_latency_and_syncs_overlap() {
        let latency = Duration::from_millis(100);
        let sim = Arc::new(SimVfs::new());
        let dev = DeviceModel::wrap(sim.clone(), latency);
        let f = dev.open("a", true).unwrap();
        f.write_at(b"page", 0).unwrap();
        let t = Instant::now();
        f.sync_data().unwrap();
        assert!(t.elapsed() >= latency, "{:?}", t.elapsed());
        // The real sync happened first.
        assert_eq!(sim.sync_count(), 1);
        // Eight syncs at once finish in about one latency, not eight.
        let t = Instant::now();
        std::thread::scope(|s| {
            for i in 0..8 {
                let dev = dev.clone();
                s.spawn(move || {
                    let f = dev.open(&format!("f{i}"), true).unwrap();
                    f.write_at(b"x", 0).unwrap();
                    f.sync_data().unwrap();
                });
            }
        });
        let all = t.elapsed();
        assert!(
            all >= latency && all < latency * 6,
            "8 parallel syncs took {all:?}"
        );
        let t = Instant::now();
        dev.sync_dir().unwrap();
        assert!(t.elapsed() >= latency);
        assert!(
            dev.describe().contains("100000 µs a sync"),
            "{}",
            dev.describe()
        );
    }

    #[test]
    fn zero_latency_is_the_device_itself() {
        let sim: Arc<dyn Vfs> = Arc::new(SimVfs::new());
        let same = DeviceModel::wrap(sim.clone(), Duration::ZERO);
        assert!(Arc::ptr_eq(&sim, &same));
    }
}
