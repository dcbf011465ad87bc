//! The bundled engine's probe interface: the `redoctor_*` functions the
//! probes attach uprobes to, and the table of named locks the engine hands
//! to `redoctor_named_locks` (read from its memory by the probes). The
//! engine writes these, the probes read them; both compile this module, so
//! a change to one side that the other does not follow fails to build (the
//! layout) or fails the engine's test that every symbol here is defined
//! (the symbols: `engine/src/probe_points.rs`). Semantics: `engine/PROBES.md`.

use serde::{Deserialize, Serialize};

/// Uprobes: (BPF program, symbol in the target binary).
pub const PROBE_POINTS: &[(&str, &str)] = &[
    ("log_write", "redoctor_log_write"),
    ("log_flush", "redoctor_log_flush"),
    ("flush_notified", "redoctor_flush_notified"),
    ("mode_switch", "redoctor_mode_switch"),
    ("checkpoint", "redoctor_checkpoint"),
    ("fail_stop", "redoctor_fail_stop"),
    ("counters_tick", "redoctor_counters_tick"),
    ("idle_poll", "redoctor_idle_poll"),
    ("page_syncs", "redoctor_page_syncs"),
    ("named_locks", "redoctor_named_locks"),
];

/// Probe points called once per redo write/flush batch. At very high commit
/// rates a batch holds barely more than one commit, and each hit costs a
/// uprobe trap (~1.4 µs), so the probes attach them only on request; the
/// syscall tracepoints measure redo writes and fsyncs without them.
pub const BATCH_PROBE_POINTS: &[&str] = &[
    "redoctor_log_write",
    "redoctor_log_flush",
    "redoctor_flush_notified",
];

/// Bytes of a name in the table, NUL padding included (names are at most
/// `NAME_LEN - 1` bytes; longer ones are cut at a character boundary).
pub const NAME_LEN: usize = 32;

/// Bytes of one [`NamedLockEntry`].
pub const ENTRY_LEN: usize = std::mem::size_of::<NamedLockEntry>();

const _: () = assert!(ENTRY_LEN == 48, "the table's entry is 48 bytes");

/// Largest table a reader accepts (the bundled engine has about a thousand
/// ranges per engine; a larger count is taken for garbage).
pub const MAX_ENTRIES: u64 = 1 << 16;

/// One row of the published table: a named range of the engine's memory.
/// Layout (48 bytes, little endian): `start u64 | len u64 | name [u8; 32]`,
/// the name UTF-8 and NUL-padded (at least one NUL).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedLockEntry {
    /// First byte of the object (a futex word inside it names it).
    pub start: u64,
    /// The object's size in bytes.
    pub len: u64,
    /// Its name, NUL-padded.
    pub name: [u8; NAME_LEN],
}

impl NamedLockEntry {
    /// An entry for `[start, start + len)`; `name` is cut to fit.
    pub fn new(name: &str, start: usize, len: usize) -> NamedLockEntry {
        let mut cut = name.len().min(NAME_LEN - 1);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut bytes = [0u8; NAME_LEN];
        bytes[..cut].copy_from_slice(&name.as_bytes()[..cut]);
        NamedLockEntry {
            start: start as u64,
            len: len as u64,
            name: bytes,
        }
    }

    /// An entry as read from another process's memory (little endian).
    pub fn from_bytes(b: &[u8; ENTRY_LEN]) -> NamedLockEntry {
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        NamedLockEntry {
            start: word(0),
            len: word(8),
            name: b[16..16 + NAME_LEN].try_into().expect("NAME_LEN bytes"),
        }
    }

    /// The name (up to the first NUL).
    pub fn name(&self) -> &str {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
        std::str::from_utf8(&self.name[..end]).unwrap_or("")
    }

    /// Whether `addr` lies in `[start, start + len)`.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr - self.start < self.len
    }
}

/// The six values `redoctor_page_syncs` carries (`engine/PROBES.md`): page
/// syncs as the engine timed them around the `fdatasync`. The engine
/// publishes them cumulative; the probes report a window's growth
/// (`EngineEvents::page_syncs`) and the advisor sums windows.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PageSyncs {
    /// Syncs of the doublewrite buffer's area or files.
    pub doublewrite_syncs: u64,
    /// Their time, ns.
    pub doublewrite_ns: u64,
    /// Syncs of tablespaces.
    pub data_syncs: u64,
    /// Their time, ns.
    pub data_ns: u64,
    /// Of either kind, the syncs that began while another sync of the
    /// process was in flight: on a device that serves syncs one at a time
    /// these take longer than those that began alone; on one that overlaps
    /// them, as long.
    pub overlapped_syncs: u64,
    /// Their time, ns.
    pub overlapped_ns: u64,
}

impl PageSyncs {
    /// What grew from `earlier` to `self` (cumulative values).
    pub fn since(&self, earlier: &PageSyncs) -> PageSyncs {
        PageSyncs {
            doublewrite_syncs: self
                .doublewrite_syncs
                .saturating_sub(earlier.doublewrite_syncs),
            doublewrite_ns: self.doublewrite_ns.saturating_sub(earlier.doublewrite_ns),
            data_syncs: self.data_syncs.saturating_sub(earlier.data_syncs),
            data_ns: self.data_ns.saturating_sub(earlier.data_ns),
            overlapped_syncs: self
                .overlapped_syncs
                .saturating_sub(earlier.overlapped_syncs),
            overlapped_ns: self.overlapped_ns.saturating_sub(earlier.overlapped_ns),
        }
    }
    /// Mean time of a doublewrite sync, ns; `None` without one.
    pub fn doublewrite_mean_ns(&self) -> Option<f64> {
        (self.doublewrite_syncs > 0)
            .then(|| self.doublewrite_ns as f64 / self.doublewrite_syncs as f64)
    }

    /// Mean time of the page syncs that began beside another over that of
    /// those that began alone: ~1 on a device that serves syncs side by
    /// side, more by the queue ahead on one that serves them in turn.
    /// `None` unless both sorts were seen.
    pub fn overlap_ratio(&self) -> Option<f64> {
        let all = self.doublewrite_syncs + self.data_syncs;
        let alone = all.checked_sub(self.overlapped_syncs).filter(|&n| n > 0)?;
        if self.overlapped_syncs == 0 {
            return None;
        }
        let alone_ns = (self.doublewrite_ns + self.data_ns).saturating_sub(self.overlapped_ns);
        let beside = self.overlapped_ns as f64 / self.overlapped_syncs as f64;
        Some(beside / (alone_ns as f64 / alone as f64))
    }
}

/// Two windows' syncs together.
impl std::ops::Add for PageSyncs {
    type Output = PageSyncs;
    fn add(self, o: PageSyncs) -> PageSyncs {
        PageSyncs {
            doublewrite_syncs: self.doublewrite_syncs + o.doublewrite_syncs,
            doublewrite_ns: self.doublewrite_ns + o.doublewrite_ns,
            data_syncs: self.data_syncs + o.data_syncs,
            data_ns: self.data_ns + o.data_ns,
            overlapped_syncs: self.overlapped_syncs + o.overlapped_syncs,
            overlapped_ns: self.overlapped_ns + o.overlapped_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the engine lays out in memory is what a reader decodes.
    #[test]
    fn an_entry_round_trips_through_its_bytes() {
        let e = NamedLockEntry::new("redo.flush_mutex", 0x7f00_1000, 64);
        // SAFETY: a repr(C) struct of integers and bytes, no padding (48 =
        // 8 + 8 + 32), read as the bytes another process would copy.
        let bytes: [u8; ENTRY_LEN] = unsafe { std::mem::transmute(e) };
        let back = NamedLockEntry::from_bytes(&bytes);
        assert_eq!(back, e);
        assert_eq!(back.name(), "redo.flush_mutex");
        assert!(back.contains(0x7f00_1000 + 63) && !back.contains(0x7f00_1000 + 64));
        // Names are cut at a character boundary, one NUL kept.
        let long = NamedLockEntry::new(&"é".repeat(40), 0, 1);
        assert_eq!(long.name().len(), 30);
        assert_eq!(long.name[NAME_LEN - 1], 0);
    }

    #[test]
    fn the_overlap_ratio_compares_syncs_begun_beside_others_with_those_begun_alone() {
        // 100 alone at 1 ms, 300 beside others at 3 ms: a queue of two ahead.
        let p = PageSyncs {
            doublewrite_syncs: 200,
            doublewrite_ns: 500_000_000,
            data_syncs: 200,
            data_ns: 500_000_000,
            overlapped_syncs: 300,
            overlapped_ns: 900_000_000,
        };
        assert!((p.overlap_ratio().unwrap() - 3.0).abs() < 1e-9);
        assert!((p.doublewrite_mean_ns().unwrap() - 2.5e6).abs() < 1e-3);
        // Without both sorts (or without syncs) there is nothing to compare.
        let all_beside = PageSyncs {
            overlapped_syncs: 400,
            overlapped_ns: 1_000_000_000,
            ..p
        };
        assert_eq!(all_beside.overlap_ratio(), None);
        let none_beside = PageSyncs {
            overlapped_syncs: 0,
            overlapped_ns: 0,
            ..p
        };
        assert_eq!(none_beside.overlap_ratio(), None);
        assert_eq!(PageSyncs::default().doublewrite_mean_ns(), None);
    }
}
