//! The bundled engine's probe interface: the `redoctor_*` functions the
//! probes attach uprobes to, and the table of named locks the engine hands
//! to `redoctor_named_locks` (read from its memory by the probes). The
//! engine writes these, the probes read them; both compile this module, so
//! a change to one side that the other does not follow fails to build (the
//! layout) or fails the engine's test that every symbol here is defined
//! (the symbols: `engine/src/probe_points.rs`). Semantics: `engine/PROBES.md`.

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
}
