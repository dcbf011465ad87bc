//! The engine's named locks: the table it hands to the `redoctor_named_locks`
//! probe point (see `engine/PROBES.md`), read from the target's memory, and
//! the lookup of a futex address in it.
//!
//! The uprobe records only where the table is (`engine_named_locks`: table
//! address, entry count, registry generation). When the generation moves,
//! user space copies `count` entries of 48 bytes
//! (`start u64 | len u64 | name [u8; 32]`, NUL-padded UTF-8) with
//! `process_vm_readv(2)`, validates them, and maps each futex address to the
//! range `[start, start + len)` that contains it.

use crate::maps::NamedLocksTable;

pub use redoctor_probes_common::abi::{NamedLockEntry, ENTRY_LEN, MAX_ENTRIES, NAME_LEN};

/// One named range of the target's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedRange {
    pub start: u64,
    pub len: u64,
    pub name: String,
}

impl NamedRange {
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr - self.start < self.len
    }
}

/// Why a table could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TableError {
    #[error("named-lock table claims {count} entries (more than {MAX_ENTRIES}): not a table")]
    TooLarge { count: u64 },
    #[error("named-lock table at {addr:#x} is null or misaligned")]
    BadAddress { addr: u64 },
    #[error("named-lock table is {got} bytes, expected {want} for its entry count")]
    Truncated { got: usize, want: usize },
    #[error("named-lock entry {index}: name is not NUL-terminated within {NAME_LEN} bytes")]
    NameNotTerminated { index: usize },
    #[error("named-lock entry {index}: name is empty or not UTF-8")]
    BadName { index: usize },
    #[error("named-lock entry {index} ({name}): empty range or range past the end of memory")]
    BadRange { index: usize, name: String },
    #[error("named-lock entry {index} ({name}) is out of order or overlaps the one before it")]
    Overlap { index: usize, name: String },
    #[error(
        "cannot read the named-lock table from process {pid}: {errno_text}; reading another \
         process's memory needs root (or CAP_SYS_PTRACE)"
    )]
    Read { pid: u32, errno_text: String },
    #[error("the table changed while it was read (a new generation was published)")]
    Changed,
    #[error("cannot re-read the engine_named_locks map after reading the table: {0}")]
    Recheck(String),
}

/// Parses and validates `count` entries from `bytes`: names NUL-terminated,
/// non-empty UTF-8; ranges non-empty, not wrapping, sorted by start and not
/// overlapping.
pub fn parse_table(bytes: &[u8], count: u64) -> Result<Vec<NamedRange>, TableError> {
    if count > MAX_ENTRIES {
        return Err(TableError::TooLarge { count });
    }
    let want = count as usize * ENTRY_LEN;
    if bytes.len() != want {
        return Err(TableError::Truncated {
            got: bytes.len(),
            want,
        });
    }
    let mut out: Vec<NamedRange> = Vec::with_capacity(count as usize);
    for (index, e) in bytes.chunks_exact(ENTRY_LEN).enumerate() {
        let entry = NamedLockEntry::from_bytes(e.try_into().expect("ENTRY_LEN bytes"));
        let (start, len, raw) = (entry.start, entry.len, &entry.name);
        let end = raw
            .iter()
            .position(|&b| b == 0)
            .ok_or(TableError::NameNotTerminated { index })?;
        let name = std::str::from_utf8(&raw[..end])
            .ok()
            .filter(|n| !n.is_empty())
            .ok_or(TableError::BadName { index })?
            .to_string();
        if len == 0 || start.checked_add(len).is_none() {
            return Err(TableError::BadRange { index, name });
        }
        if let Some(prev) = out.last() {
            if start < prev.start + prev.len {
                return Err(TableError::Overlap { index, name });
            }
        }
        out.push(NamedRange { start, len, name });
    }
    Ok(out)
}

/// Copies `len` bytes at `addr` out of process `pid`.
fn read_memory(pid: u32, addr: u64, len: usize) -> Result<Vec<u8>, TableError> {
    let mut buf = vec![0u8; len];
    if len == 0 {
        return Ok(buf);
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: `local` points at `buf`, `len` bytes we own; the kernel
    // checks the remote range and fails with EFAULT when it is not mapped.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(TableError::Read {
            pid,
            errno_text: std::io::Error::last_os_error().to_string(),
        });
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// Reads and validates the table `t` describes from process `pid`.
pub fn read_table(pid: u32, t: &NamedLocksTable) -> Result<Vec<NamedRange>, TableError> {
    if t.count > MAX_ENTRIES {
        return Err(TableError::TooLarge { count: t.count });
    }
    if t.count > 0 && (t.table == 0 || !t.table.is_multiple_of(8)) {
        return Err(TableError::BadAddress { addr: t.table });
    }
    let bytes = read_memory(pid, t.table, t.count as usize * ENTRY_LEN)?;
    parse_table(&bytes, t.count)
}

/// The engine's named ranges for one generation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedLocks {
    pub generation: u64,
    /// Sorted by start, not overlapping.
    pub ranges: Vec<NamedRange>,
}

impl NamedLocks {
    /// The range holding `addr`, if any.
    pub fn lookup(&self, addr: u64) -> Option<&NamedRange> {
        let i = self.ranges.partition_point(|r| r.start <= addr);
        let r = self.ranges.get(i.checked_sub(1)?)?;
        r.contains(addr).then_some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(start: u64, len: u64, name: &[u8]) -> Vec<u8> {
        let mut e = Vec::with_capacity(ENTRY_LEN);
        e.extend_from_slice(&start.to_le_bytes());
        e.extend_from_slice(&len.to_le_bytes());
        let mut n = [0u8; NAME_LEN];
        n[..name.len()].copy_from_slice(name);
        e.extend_from_slice(&n);
        e
    }

    fn table(entries: &[(u64, u64, &[u8])]) -> Vec<u8> {
        entries
            .iter()
            .flat_map(|(s, l, n)| entry(*s, *l, n))
            .collect()
    }

    #[test]
    fn a_valid_table_parses_and_looks_addresses_up() {
        let t = table(&[
            (0x1000, 0x40, b"redo.flush_waits"),
            (0x1040, 8, b"trx_sys.shard3"),
            (0x2000, 16, b"throttle"),
        ]);
        let ranges = parse_table(&t, 3).unwrap();
        let named = NamedLocks {
            generation: 7,
            ranges,
        };
        let name = |a| named.lookup(a).map(|r| r.name.as_str());
        assert_eq!(name(0xfff), None);
        assert_eq!(name(0x1000), Some("redo.flush_waits"));
        assert_eq!(name(0x103c), Some("redo.flush_waits"));
        assert_eq!(name(0x1040), Some("trx_sys.shard3"));
        assert_eq!(name(0x1048), None, "end is exclusive");
        assert_eq!(name(0x200f), Some("throttle"));
        assert_eq!(name(0x2010), None);
        assert_eq!(NamedLocks::default().lookup(0x1000), None);
    }

    #[test]
    fn malformed_tables_are_refused_with_the_reason() {
        let ok = entry(0x1000, 8, b"a");
        assert_eq!(
            parse_table(&ok, MAX_ENTRIES + 1),
            Err(TableError::TooLarge {
                count: MAX_ENTRIES + 1
            })
        );
        assert_eq!(
            parse_table(&ok[..40], 1),
            Err(TableError::Truncated { got: 40, want: 48 })
        );
        let mut unterminated = entry(0x1000, 8, b"");
        unterminated[16..48].fill(b'x');
        assert_eq!(
            parse_table(&unterminated, 1),
            Err(TableError::NameNotTerminated { index: 0 })
        );
        assert_eq!(
            parse_table(&entry(0x1000, 8, b""), 1),
            Err(TableError::BadName { index: 0 })
        );
        assert_eq!(
            parse_table(&entry(0x1000, 8, &[0xff, 0xfe]), 1),
            Err(TableError::BadName { index: 0 })
        );
        assert!(matches!(
            parse_table(&entry(0x1000, 0, b"z"), 1),
            Err(TableError::BadRange { index: 0, .. })
        ));
        assert!(matches!(
            parse_table(&entry(u64::MAX - 3, 8, b"w"), 1),
            Err(TableError::BadRange { index: 0, .. })
        ));
        let overlapping = table(&[(0x1000, 16, b"a"), (0x1008, 8, b"b")]);
        assert_eq!(
            parse_table(&overlapping, 2),
            Err(TableError::Overlap {
                index: 1,
                name: "b".into()
            })
        );
        let unsorted = table(&[(0x2000, 8, b"a"), (0x1000, 8, b"b")]);
        assert!(matches!(
            parse_table(&unsorted, 2),
            Err(TableError::Overlap { index: 1, .. })
        ));
    }

    #[test]
    fn reading_our_own_memory_round_trips_and_bad_addresses_fail_cleanly() {
        let bytes = table(&[(0x10, 8, b"redo.writer"), (0x20, 8, b"redo.flusher")]);
        // An 8-aligned copy, as the engine's table is.
        let words: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let t = NamedLocksTable {
            table: words.as_ptr() as u64,
            count: 2,
            generation: 1,
            calls: 1,
        };
        let ranges = read_table(std::process::id(), &t).unwrap();
        assert_eq!(ranges[1].name, "redo.flusher");
        let unmapped = NamedLocksTable { table: 8, ..t };
        assert!(matches!(
            read_table(std::process::id(), &unmapped),
            Err(TableError::Read { .. })
        ));
        let odd = NamedLocksTable { table: 0x1001, ..t };
        assert_eq!(
            read_table(std::process::id(), &odd),
            Err(TableError::BadAddress { addr: 0x1001 })
        );
    }
}
