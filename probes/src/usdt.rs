//! USDT (SystemTap SDT) probes of a server binary: reading the
//! `.note.stapsdt` notes, turning a probe's address into the file offset a
//! uprobe attaches at, decoding where an argument lives, and enabling the
//! probes' semaphores in the target's processes while attached.
//!
//! A note (`NT_STAPSDT`, owner `stapsdt`) holds the probe's address, the
//! link-time address of `.stapsdt.base` (to adjust for prelinking), the
//! address of its semaphore (0 = none), then `provider\0name\0args\0`.
//! Arguments are `SIZE@LOCATION`, e.g. `8@%rax`, `-4@60(%rax)`, `4@$1`.
//!
//! A semaphore is a 2-byte counter in the binary's data: code guarded by
//! `TRACE_..._ENABLED()` runs only while it is non-zero. It is incremented
//! through `/proc/PID/mem` in each of the target's processes when the
//! probes attach (children forked later inherit it) and decremented when
//! they detach ([`Semaphores`]).

use std::collections::{BTreeMap, HashSet};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment};

/// Why a binary's USDT probes could not be read or enabled.
#[derive(Debug, thiserror::Error)]
pub enum UsdtError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an ELF file the probes can read: {why}")]
    Elf { path: PathBuf, why: String },
    #[error("malformed USDT note in {path}: {why}")]
    Note { path: PathBuf, why: String },
}

/// One probe site (a probe may have several, one per inlined copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsdtSite {
    pub provider: String,
    pub name: String,
    /// The site's virtual address (adjusted for prelinking).
    pub address: u64,
    /// Where a uprobe attaches: the site's offset in the file.
    pub file_offset: u64,
    /// The semaphore's offset in the file (`None`: the probe has none).
    pub semaphore_file_offset: Option<u64>,
    /// The argument string, e.g. `8@%rax -4@$0`.
    pub args: String,
}

impl UsdtSite {
    /// `provider:name`.
    pub fn probe(&self) -> String {
        format!("{}:{}", self.provider, self.name)
    }

    /// Argument `n` (1-based) as written in the note.
    pub fn arg(&self, n: usize) -> Option<&str> {
        self.args.split_whitespace().nth(n.checked_sub(1)?)
    }
}

/// The USDT sites of the ELF file at `path` (empty when it has none).
pub fn read_sites(path: &Path) -> Result<Vec<UsdtSite>, UsdtError> {
    let data = std::fs::read(path).map_err(|source| UsdtError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let elf_err = |why: String| UsdtError::Elf {
        path: path.to_path_buf(),
        why,
    };
    let file = object::File::parse(&*data).map_err(|e| elf_err(e.to_string()))?;
    let Some(notes) = file.section_by_name(".note.stapsdt") else {
        return Ok(Vec::new());
    };
    let notes = notes.data().map_err(|e| elf_err(e.to_string()))?;
    let base = file.section_by_name(".stapsdt.base").map(|s| s.address());
    let offsets = FileOffsets::of(&file);
    let to_offset = |addr: u64| offsets.get(addr);
    let note_err = |why: &str| UsdtError::Note {
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let mut sites = Vec::new();
    let mut rest = notes;
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    while rest.len() >= 12 {
        let namesz = u32_at(rest, 0) as usize;
        let descsz = u32_at(rest, 4) as usize;
        let kind = u32_at(rest, 8);
        let name_end = 12 + namesz.div_ceil(4) * 4;
        let desc_end = name_end + descsz.div_ceil(4) * 4;
        if rest.len() < name_end + descsz {
            return Err(note_err("a note runs past the end of the section"));
        }
        let owner = &rest[12..12 + namesz];
        let desc = &rest[name_end..name_end + descsz];
        rest = &rest[desc_end.min(rest.len())..];
        if kind != 3 || owner != b"stapsdt\0" {
            continue;
        }
        if desc.len() < 24 {
            return Err(note_err("a stapsdt note shorter than its three addresses"));
        }
        let (pc, link_base, sema) = (u64_at(desc, 0), u64_at(desc, 8), u64_at(desc, 16));
        let mut strings = desc[24..].split(|&b| b == 0);
        let mut next = || {
            strings
                .next()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .ok_or_else(|| note_err("a stapsdt note without provider, name or arguments"))
        };
        let (provider, name, args) = (next()?, next()?, next().unwrap_or_default());
        // Prelinking moves the binary; .stapsdt.base shows by how much.
        let shift = |a: u64| match base {
            Some(b) if a != 0 => a.wrapping_add(b).wrapping_sub(link_base),
            _ => a,
        };
        let address = shift(pc);
        let file_offset = to_offset(address)
            .ok_or_else(|| note_err(&format!("{provider}:{name} lies in no segment")))?;
        let semaphore_file_offset = if sema == 0 {
            None
        } else {
            Some(to_offset(shift(sema)).ok_or_else(|| {
                note_err(&format!(
                    "the semaphore of {provider}:{name} lies in no segment"
                ))
            })?)
        };
        sites.push(UsdtSite {
            provider,
            name,
            address,
            file_offset,
            semaphore_file_offset,
            args,
        });
    }
    Ok(sites)
}

/// Index in the kernel's x86-64 `struct pt_regs` (in 8-byte units) of the
/// register an argument names, as `usdt_reg` in the BPF source decodes it.
/// Memory operands (`60(%rax)`), constants (`$1`) and `%rsp` give `None`.
pub fn register_arg(arg: &str) -> Option<u32> {
    let (_, loc) = arg.split_once('@')?;
    let reg = loc.strip_prefix('%')?;
    let idx = match reg {
        "r15" | "r15d" | "r15w" | "r15b" => 0,
        "r14" | "r14d" | "r14w" | "r14b" => 1,
        "r13" | "r13d" | "r13w" | "r13b" => 2,
        "r12" | "r12d" | "r12w" | "r12b" => 3,
        "rbp" | "ebp" | "bp" | "bpl" => 4,
        "rbx" | "ebx" | "bx" | "bl" => 5,
        "r11" | "r11d" | "r11w" | "r11b" => 6,
        "r10" | "r10d" | "r10w" | "r10b" => 7,
        "r9" | "r9d" | "r9w" | "r9b" => 8,
        "r8" | "r8d" | "r8w" | "r8b" => 9,
        "rax" | "eax" | "ax" | "al" => 10,
        "rcx" | "ecx" | "cx" | "cl" => 11,
        "rdx" | "edx" | "dx" | "dl" => 12,
        "rsi" | "esi" | "si" | "sil" => 13,
        "rdi" | "edi" | "di" | "dil" => 14,
        _ => return None,
    };
    Some(idx)
}

/// Virtual address -> file offset, through an ELF file's loadable segments.
pub(crate) struct FileOffsets(Vec<(u64, u64, u64)>);

impl FileOffsets {
    pub(crate) fn of(file: &object::File) -> FileOffsets {
        FileOffsets(
            file.segments()
                .map(|s| (s.address(), s.file_range().0, s.file_range().1))
                .collect(),
        )
    }

    /// The file offset of virtual address `addr`, if a segment holds it.
    pub(crate) fn get(&self, addr: u64) -> Option<u64> {
        self.0
            .iter()
            .find(|(va, _, len)| addr >= *va && addr < va + len)
            .map(|(va, off, _)| addr - va + off)
    }
}

/// Where file offset `file_offset` of `exe` is mapped in process `pid`
/// (from `/proc/PID/maps`).
pub(crate) fn mapped_address(pid: u32, exe: &Path, file_offset: u64) -> Option<u64> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let exe = exe.to_str()?;
    maps.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let range = f.next()?;
        let _perms = f.next()?;
        let offset = u64::from_str_radix(f.next()?, 16).ok()?;
        let _dev = f.next()?;
        let _inode = f.next()?;
        let path = f.next()?;
        if path != exe {
            return None;
        }
        let (lo, hi) = range.split_once('-')?;
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).ok()?,
            u64::from_str_radix(hi, 16).ok()?,
        );
        (file_offset >= offset && file_offset < offset + (hi - lo))
            .then(|| lo + file_offset - offset)
    })
}

/// Adds `delta` to the 2-byte semaphore at `addr` in process `pid`;
/// returns the value before.
fn add_semaphore(pid: u32, addr: u64, delta: i32) -> std::io::Result<u16> {
    let mem = OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/{pid}/mem"))?;
    let mut b = [0u8; 2];
    mem.read_exact_at(&mut b, addr)?;
    let old = u16::from_ne_bytes(b);
    let new = (i32::from(old) + delta).clamp(0, i32::from(u16::MAX)) as u16;
    mem.write_all_at(&new.to_ne_bytes(), addr)?;
    Ok(old)
}

/// The current value of the semaphore at `file_offset` of `exe` in process
/// `pid` (how many tracers enabled its probe there); `None` when `exe` is
/// not mapped there or the process cannot be read.
pub fn semaphore_value(pid: u32, exe: &Path, file_offset: u64) -> Option<u16> {
    let addr = mapped_address(pid, exe, file_offset)?;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut b = [0u8; 2];
    mem.read_exact_at(&mut b, addr).ok()?;
    Some(u16::from_ne_bytes(b))
}

/// The NUL-terminated string at `addr` in process `pid` (at most `max`
/// bytes), read through `/proc/PID/mem`, which faults its pages in where a
/// probe could not: a string argument whose page the process never
/// touched. `None` when unreadable or not UTF-8.
pub fn read_string(pid: u32, addr: u64, max: usize) -> Option<String> {
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < max {
        // Page by page: a read across into an unmapped page fails whole.
        let room = (4096 - (at % 4096) as usize).min(max - out.len());
        let mut b = vec![0u8; room];
        mem.read_exact_at(&mut b, at).ok()?;
        if let Some(end) = b.iter().position(|&c| c == 0) {
            out.extend_from_slice(&b[..end]);
            return String::from_utf8(out).ok();
        }
        out.extend_from_slice(&b);
        at += room as u64;
    }
    String::from_utf8(out).ok()
}

/// Semaphores raised in the target's processes; lowered again on drop.
#[derive(Debug, Default)]
pub struct Semaphores {
    exe: PathBuf,
    /// The semaphores' file offsets.
    offsets: Vec<u64>,
    /// Processes each semaphore was raised in.
    raised: HashSet<u32>,
}

impl Semaphores {
    /// Raises the semaphores at `offsets` (of the file `exe`, the binary
    /// the processes run; its real path) in every process of `pids`. A
    /// process that cannot be written is listed with the error in the
    /// result's second part (its guarded probes stay silent).
    pub fn raise(exe: &Path, offsets: &[u64], pids: &[u32]) -> (Semaphores, BTreeMap<u32, String>) {
        let mut s = Semaphores {
            exe: exe.to_path_buf(),
            offsets: offsets.to_vec(),
            raised: HashSet::new(),
        };
        let mut failed = BTreeMap::new();
        for &pid in pids {
            match s.add(pid, 1) {
                Ok(()) => {
                    s.raised.insert(pid);
                }
                Err(e) => {
                    failed.insert(pid, e);
                }
            }
        }
        (s, failed)
    }

    fn add(&self, pid: u32, delta: i32) -> Result<(), String> {
        for &off in &self.offsets {
            let addr = mapped_address(pid, &self.exe, off).ok_or_else(|| {
                format!(
                    "{} is not mapped in pid {pid} at file offset {off:#x}",
                    self.exe.display()
                )
            })?;
            add_semaphore(pid, addr, delta)
                .map_err(|e| format!("writing /proc/{pid}/mem at {addr:#x}: {e}"))?;
        }
        Ok(())
    }

    /// Lowers the semaphores in the processes they were raised in and in
    /// `inherited` (processes forked since, which got them raised from
    /// their parent), where still alive.
    pub fn lower(&mut self, inherited: &[u32]) {
        let pids: HashSet<u32> = self
            .raised
            .drain()
            .chain(inherited.iter().copied())
            .collect();
        for pid in pids {
            // A process gone since has nothing to restore.
            let _ = self.add(pid, -1);
        }
    }

    /// Whether any semaphore is raised anywhere.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty() || self.raised.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_arguments_are_decoded() {
        assert_eq!(register_arg("8@%rax"), Some(10));
        assert_eq!(register_arg("-4@%r14d"), Some(1));
        assert_eq!(register_arg("1@%dil"), Some(14));
        assert_eq!(register_arg("4@60(%rax)"), None);
        assert_eq!(register_arg("-4@$0"), None);
        assert_eq!(register_arg("8@%rsp"), None);
    }

    #[test]
    fn strings_are_read_from_another_process_memory() {
        let s = b"WALWrite\0tail";
        let me = std::process::id();
        assert_eq!(
            read_string(me, s.as_ptr() as u64, 32).as_deref(),
            Some("WALWrite")
        );
        // Bounded by `max` without a NUL in reach.
        assert_eq!(
            read_string(me, s.as_ptr() as u64, 3).as_deref(),
            Some("WAL")
        );
        assert_eq!(read_string(me, 0, 32), None);
    }

    #[test]
    fn a_binary_without_notes_has_no_sites() {
        // This test binary is built without USDT probes.
        let me = std::env::current_exe().unwrap();
        assert!(read_sites(&me).unwrap().is_empty());
        let e = read_sites(Path::new("/nonexistent/x")).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
    }

    #[test]
    fn postgres_notes_are_read_when_installed() {
        let pg = Path::new("/usr/lib/postgresql/15/bin/postgres");
        if redoctor_testkit::skip_if_missing(
            "postgres_notes_are_read_when_installed",
            (!pg.exists()).then(|| {
                format!(
                    "{} is not installed (apt-get install postgresql-15)",
                    pg.display()
                )
            }),
        ) {
            return;
        }
        let sites = read_sites(pg).unwrap();
        assert!(!sites.is_empty(), "{} has no USDT notes", pg.display());
        let commit = sites
            .iter()
            .find(|s| s.probe() == "postgresql:transaction__commit")
            .expect("transaction__commit");
        assert!(commit.file_offset > 0);
        assert!(commit.semaphore_file_offset.is_some());
        // A site is an instruction: the 1-byte nop sdt.h emits.
        let bytes = std::fs::read(pg).unwrap();
        assert_eq!(bytes[commit.file_offset as usize], 0x90);
    }
}
