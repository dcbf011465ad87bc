//! Reading a whole BPF map in a few syscalls (`BPF_MAP_LOOKUP_BATCH`,
//! Linux 5.6+).
//!
//! Iterating a hash map key by key costs two syscalls per entry (next key,
//! then lookup), and an array one per index: with a few thousand futex
//! words and the per-CPU pair slots that was ~5,600 `bpf(2)` calls per
//! window, most of the agent's own CPU. A batch lookup copies up to
//! `CHUNK` entries per call. aya 0.14 has no batch API, so this calls
//! `bpf(2)` itself; where the kernel refuses (an older kernel, a map type
//! without batch support) [`lookup_all`] says so and the caller iterates.

use std::os::fd::{AsFd, AsRawFd};

use aya::maps::{Map, MapData, MapError};
use aya::Pod;

use crate::error::ProbeError;

/// Entries copied per call at most (the buffers grow if one hash bucket
/// holds more, which the kernel reports with ENOSPC).
const CHUNK: usize = 4096;

const BPF_MAP_LOOKUP_BATCH: libc::c_long = 24;
const BPF_MAP_LOOKUP_AND_DELETE_ELEM: libc::c_long = 21;
/// The kernel's internal "operation not supported" (not in libc).
const ENOTSUPP: i32 = 524;

/// `bpf_attr.batch` (include/uapi/linux/bpf.h).
#[repr(C)]
#[derive(Default)]
struct BatchAttr {
    in_batch: u64,
    out_batch: u64,
    keys: u64,
    values: u64,
    count: u32,
    map_fd: u32,
    elem_flags: u64,
    flags: u64,
}

/// `bpf_attr` for the element commands (include/uapi/linux/bpf.h).
#[repr(C)]
#[derive(Default)]
struct ElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// The kernel cannot look up and delete in one step for this map.
#[derive(Debug)]
pub struct Unsupported;

/// Reads and removes `key` from a hash map in one step; `None` if it is
/// not there. [`Unsupported`] on kernels before 5.14 (or another error:
/// the caller falls back to a lookup and a delete, which reports it).
pub fn lookup_and_delete<K: Pod, V: Pod>(map: &MapData, key: &K) -> Result<Option<V>, Unsupported> {
    let mut value = std::mem::MaybeUninit::<V>::zeroed();
    let mut attr = ElemAttr {
        map_fd: map.fd().as_fd().as_raw_fd() as u32,
        key: key as *const K as u64,
        value: value.as_mut_ptr() as u64,
        ..ElemAttr::default()
    };
    // SAFETY: `attr` points at a key of the map's key size and a buffer of
    // its value size (the caller's types match the map, as aya checked when
    // the map was opened), both outliving the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_LOOKUP_AND_DELETE_ELEM,
            &mut attr as *mut ElemAttr,
            size_of::<ElemAttr>(),
        )
    };
    if r == 0 {
        // SAFETY: the kernel wrote a whole value; `Pod` admits any bits.
        return Ok(Some(unsafe { value.assume_init() }));
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOENT) => Ok(None),
        _ => Err(Unsupported),
    }
}

/// Every entry of a map: key `i` has values `values[i * per_key..][..per_key]`
/// (one per possible CPU for per-CPU maps, else one).
pub struct Entries<K, V> {
    pub keys: Vec<K>,
    pub values: Vec<V>,
    pub per_key: usize,
}

impl<K: Copy, V> Entries<K, V> {
    /// (key, its values) pairs.
    pub fn iter(&self) -> impl Iterator<Item = (K, &[V])> {
        self.keys
            .iter()
            .copied()
            .zip(self.values.chunks_exact(self.per_key.max(1)))
    }
}

/// The map's data and whether it is per CPU; `None` for map types this
/// module does not read.
fn map_data(map: &Map) -> Option<(&MapData, bool)> {
    match map {
        Map::PerCpuArray(d) | Map::PerCpuHashMap(d) => Some((d, true)),
        Map::Array(d) | Map::HashMap(d) => Some((d, false)),
        _ => None,
    }
}

fn err(name: &'static str, io_error: std::io::Error) -> ProbeError {
    ProbeError::Map {
        map: name,
        source: Box::new(MapError::SyscallError(aya::sys::SyscallError {
            call: "bpf_map_lookup_batch",
            io_error,
        })),
    }
}

/// Every entry of hash or array map `name`, in as few syscalls as the
/// kernel allows; `Ok(None)` when the kernel does not support batch
/// lookups of this map (iterate it instead). Entries added or removed
/// while reading may or may not be included, as with iteration.
pub fn lookup_all<K: Pod, V: Pod>(
    name: &'static str,
    map: &Map,
) -> Result<Option<Entries<K, V>>, ProbeError> {
    let Some((data, percpu)) = map_data(map) else {
        return Ok(None);
    };
    let info = data.info().map_err(|e| ProbeError::Map {
        map: name,
        source: Box::new(e),
    })?;
    let (ksize, vsize) = (size_of::<K>(), size_of::<V>());
    if info.key_size() as usize != ksize || info.value_size() as usize != vsize {
        return Err(ProbeError::MapLayout {
            map: name,
            why: format!(
                "keys of {} and values of {} bytes, user space expects {ksize} and {vsize}",
                info.key_size(),
                info.value_size()
            ),
        });
    }
    let per_key = if percpu {
        // Per-CPU values come 8-byte aligned, one per possible CPU.
        if !vsize.is_multiple_of(8) {
            return Ok(None);
        }
        aya::util::nr_cpus().map_err(|(_, e)| err(name, e))?
    } else {
        1
    };
    let fd = data.fd().as_fd().as_raw_fd() as u32;
    let mut chunk = CHUNK.min(info.max_entries().max(1) as usize);
    let mut keys: Vec<u8> = Vec::new();
    let mut values: Vec<u8> = Vec::new();
    let mut kbuf = vec![0u8; chunk * ksize];
    let mut vbuf = vec![0u8; chunk * vsize * per_key];
    // The position token: a bucket index for hashes, a key for arrays.
    let mut token_in = [0u8; 64];
    let mut token_out = [0u8; 64];
    let mut first = true;
    loop {
        let mut attr = BatchAttr {
            in_batch: if first { 0 } else { token_in.as_ptr() as u64 },
            out_batch: token_out.as_mut_ptr() as u64,
            keys: kbuf.as_mut_ptr() as u64,
            values: vbuf.as_mut_ptr() as u64,
            count: chunk as u32,
            map_fd: fd,
            ..BatchAttr::default()
        };
        // SAFETY: `attr` points at buffers of `count` keys and values (and
        // tokens larger than any key) that outlive the call; the kernel
        // writes at most that much.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                BPF_MAP_LOOKUP_BATCH,
                &mut attr as *mut BatchAttr,
                size_of::<BatchAttr>(),
            )
        };
        let errno = if r < 0 {
            std::io::Error::last_os_error().raw_os_error()
        } else {
            None
        };
        let n = (attr.count as usize).min(chunk);
        keys.extend_from_slice(&kbuf[..n * ksize]);
        values.extend_from_slice(&vbuf[..n * vsize * per_key]);
        match errno {
            None => {}
            Some(libc::ENOENT) => break, // the last entries came with this call
            Some(libc::ENOSPC) if n == 0 => {
                // One bucket holds more than `chunk` entries.
                chunk *= 2;
                kbuf.resize(chunk * ksize, 0);
                vbuf.resize(chunk * vsize * per_key, 0);
                continue;
            }
            Some(libc::EINVAL | libc::EOPNOTSUPP | ENOTSUPP) if first => return Ok(None),
            Some(e) => return Err(err(name, std::io::Error::from_raw_os_error(e))),
        }
        token_in = token_out;
        first = false;
    }
    let count = keys.len() / ksize;
    // SAFETY: `Pod` types are valid for any bit pattern; the buffers hold
    // `count` keys and `count * per_key` values of exactly these sizes
    // (checked against the map above); reads are unaligned-safe.
    let read = |buf: &[u8], size: usize, i: usize| buf[i * size..][..size].as_ptr();
    let keys: Vec<K> = (0..count)
        .map(|i| unsafe { std::ptr::read_unaligned(read(&keys, ksize, i).cast::<K>()) })
        .collect();
    let values: Vec<V> = (0..count * per_key)
        .map(|i| unsafe { std::ptr::read_unaligned(read(&values, vsize, i).cast::<V>()) })
        .collect();
    Ok(Some(Entries {
        keys,
        values,
        per_key,
    }))
}
