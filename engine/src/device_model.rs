//! A modelled storage device: a fixed latency per sync, with no limit on
//! the syncs in flight or (serial) one at a time, over any [`Vfs`].
//!
//! This host's virtual disk syncs in ~0.6 ms (side by side, as the
//! engine's page-sync timing shows: `crate::sync_timing`), and tmpfs
//! serves syncs for free; neither is the device seed 002's doublewrite
//! comparison needs (one that completes many page writes and slow syncs at
//! once, where the legacy design's 8 single-page slots are the narrowest
//! point). Wrapping
//! the data directory (on tmpfs) in [`DeviceModel`] gives that device: every
//! `fdatasync` of a file and every directory sync first does the real one,
//! then waits the latency in the calling thread, so N threads
//! syncing at once all finish after about one latency, as on a device with
//! a deep queue. Writes and reads pass through untouched (a device's write
//! cache absorbs them; the sync pays). Set by the engine-specific
//! `redoctor_device_sync_latency_us` at startup; for benches only.
//!
//! `redoctor_device_sync_serial` models the other kind of device: one that
//! serves one sync at a time (a single queue), so N syncs at once finish
//! after N latencies. One queue for every file the engine opens through
//! the model (data and doublewrite directories alike), as one device.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::vfs::{Vfs, VfsFile};

/// The modelled device (`redoctor_device_sync_latency_us`,
/// `redoctor_device_sync_serial`).
#[derive(Clone, Debug, Default)]
pub struct DeviceSpec {
    /// Added to every sync; zero: no model.
    pub sync_latency: Duration,
    /// One sync at a time: the device's single queue, shared by every
    /// directory wrapped with this spec (clones share it).
    pub serial: Option<Arc<Mutex<()>>>,
}

impl DeviceSpec {
    /// A device that serves syncs one at a time (`serial`) or any number
    /// at once.
    pub fn new(sync_latency: Duration, serial: bool) -> DeviceSpec {
        DeviceSpec {
            sync_latency,
            serial: serial.then(|| Arc::new(Mutex::new(()))),
        }
    }

    /// Waits the latency, in the device's queue when it has one.
    fn wait(&self) {
        let _turn = self
            .serial
            .as_ref()
            .map(|q| q.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        std::thread::sleep(self.sync_latency);
    }
}

/// A [`Vfs`] whose syncs take the spec's latency more.
pub struct DeviceModel {
    inner: Arc<dyn Vfs>,
    spec: DeviceSpec,
}

impl DeviceModel {
    /// Wraps `inner` when the spec's latency is not zero.
    pub fn wrap(inner: Arc<dyn Vfs>, spec: &DeviceSpec) -> Arc<dyn Vfs> {
        if spec.sync_latency.is_zero() {
            inner
        } else {
            Arc::new(DeviceModel {
                inner,
                spec: spec.clone(),
            })
        }
    }
}

struct ModelledFile {
    inner: Arc<dyn VfsFile>,
    spec: DeviceSpec,
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
        self.spec.wait();
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
            spec: self.spec.clone(),
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
        self.spec.wait();
        Ok(())
    }
    fn describe(&self) -> String {
        format!(
            "{} (a modelled device: {} µs a sync, {})",
            self.inner.describe(),
            self.spec.sync_latency.as_micros(),
            if self.spec.serial.is_some() {
                "one at a time"
            } else {
                "any number at once"
            }
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
        let dev = DeviceModel::wrap(sim.clone(), &DeviceSpec::new(latency, false));
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

    /// A serial device serves the syncs of all its directories one at a
    /// time: four at once take four latencies.
    #[test]
    fn a_serial_device_queues_syncs_across_its_directories() {
        let latency = Duration::from_millis(30);
        let spec = DeviceSpec::new(latency, true);
        let a = DeviceModel::wrap(Arc::new(SimVfs::new()), &spec);
        let b = DeviceModel::wrap(Arc::new(SimVfs::new()), &spec);
        let t = Instant::now();
        std::thread::scope(|s| {
            for i in 0..4 {
                let dev = if i % 2 == 0 { a.clone() } else { b.clone() };
                s.spawn(move || {
                    let f = dev.open(&format!("f{i}"), true).unwrap();
                    f.sync_data().unwrap();
                });
            }
        });
        assert!(t.elapsed() >= latency * 4, "{:?}", t.elapsed());
        assert!(a.describe().contains("one at a time"), "{}", a.describe());
    }

    #[test]
    fn zero_latency_is_the_device_itself() {
        let sim: Arc<dyn Vfs> = Arc::new(SimVfs::new());
        let same = DeviceModel::wrap(sim.clone(), &DeviceSpec::new(Duration::ZERO, true));
        assert!(Arc::ptr_eq(&sim, &same));
    }
}
