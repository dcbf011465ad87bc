//! The on-disk page: a fixed-size block with its identity, an LSN and a
//! checksum, so a page that reached the disk only in part is recognised.
//!
//! Layout (`size` bytes, 16 KiB by default; little-endian):
//!
//! ```text
//! 0   checksum   u32  crc32 of bytes [4, size - 8)
//! 4   page_no    u32
//! 8   space      u32
//! 12  kind       u16  (0 free, 1 data, 2 index, ...: the page store's user says)
//! 14  reserved   u16
//! 16  lsn        u64  the redo LSN of the newest change the page holds
//! 24  body       ...
//! size-8  lsn_low u32  the low 32 bits of `lsn` again
//! size-4  checksum u32 again
//! ```
//!
//! As InnoDB's FIL header and trailer: a write torn between its first and
//! last sector leaves a header and a trailer from different versions, and
//! a tear anywhere else breaks the crc. A page of zeros is a page never
//! written (a file extended but not yet filled) and reads as empty.

use thiserror::Error;

/// Bytes before the body.
pub const HEADER: usize = 24;
/// Bytes after the body.
pub const TRAILER: usize = 8;
/// The default page size (`innodb_page_size`).
pub const DEFAULT_PAGE_SIZE: usize = 16 * 1024;
/// The smallest page size accepted (InnoDB's smallest).
pub const MIN_PAGE_SIZE: usize = 4 * 1024;

/// A page's address: tablespace and page number within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageId {
    pub space: u32,
    pub page_no: u32,
}

impl std::fmt::Display for PageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[space {}, page {}]", self.space, self.page_no)
    }
}

/// Why a page read from disk cannot be used.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PageCorrupt {
    #[error("page {at}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x}): a torn or damaged write")]
    Checksum {
        at: PageId,
        stored: u32,
        computed: u32,
    },
    #[error("page {at}: header and trailer disagree (lsn {lsn} vs low bits {trailer_lsn:#x}): a torn write")]
    Torn {
        at: PageId,
        lsn: u64,
        trailer_lsn: u32,
    },
    #[error("page {at}: holds page {found} instead")]
    Misplaced { at: PageId, found: PageId },
    #[error("page {at}: {len} bytes, not a page of {size}")]
    Size { at: PageId, len: usize, size: usize },
}

/// What a verified page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    /// All zeros: never written.
    Empty,
    /// A sealed page, with its LSN.
    Written { lsn: u64 },
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn crc(b: &[u8]) -> u32 {
    crc32fast::hash(&b[4..b.len() - TRAILER])
}

/// Writes `id`, `kind` and `lsn` into `page`'s header and trailer and
/// computes its checksum: the page is ready to be written.
pub fn seal(page: &mut [u8], id: PageId, kind: u16, lsn: u64) {
    let n = page.len();
    debug_assert!(n >= MIN_PAGE_SIZE && n.is_power_of_two());
    page[4..8].copy_from_slice(&id.page_no.to_le_bytes());
    page[8..12].copy_from_slice(&id.space.to_le_bytes());
    page[12..14].copy_from_slice(&kind.to_le_bytes());
    page[14..16].copy_from_slice(&0u16.to_le_bytes());
    page[16..24].copy_from_slice(&lsn.to_le_bytes());
    page[n - 8..n - 4].copy_from_slice(&(lsn as u32).to_le_bytes());
    let sum = crc(page);
    page[0..4].copy_from_slice(&sum.to_le_bytes());
    page[n - 4..n].copy_from_slice(&sum.to_le_bytes());
}

/// The LSN a sealed page carries (not verified).
pub fn lsn_of(page: &[u8]) -> u64 {
    u64_at(page, 16)
}

/// The kind a sealed page carries (not verified).
pub fn kind_of(page: &[u8]) -> u16 {
    u16::from_le_bytes([page[12], page[13]])
}

/// The page id a sealed page names (not verified).
pub fn id_of(page: &[u8]) -> PageId {
    PageId {
        space: u32_at(page, 8),
        page_no: u32_at(page, 4),
    }
}

/// Checks `page`, read from where `at` lives, before it is used.
pub fn verify(page: &[u8], at: PageId, size: usize) -> Result<PageState, PageCorrupt> {
    if page.len() != size {
        return Err(PageCorrupt::Size {
            at,
            len: page.len(),
            size,
        });
    }
    if page.iter().all(|&b| b == 0) {
        return Ok(PageState::Empty);
    }
    let n = page.len();
    let lsn = lsn_of(page);
    let trailer_lsn = u32_at(page, n - 8);
    let (head_sum, tail_sum) = (u32_at(page, 0), u32_at(page, n - 4));
    if trailer_lsn != lsn as u32 || head_sum != tail_sum {
        return Err(PageCorrupt::Torn {
            at,
            lsn,
            trailer_lsn,
        });
    }
    let computed = crc(page);
    if computed != head_sum {
        return Err(PageCorrupt::Checksum {
            at,
            stored: head_sum,
            computed,
        });
    }
    let found = id_of(page);
    if found != at {
        return Err(PageCorrupt::Misplaced { at, found });
    }
    Ok(PageState::Written { lsn })
}

/// Whether `size` is a page size the store accepts (a power of two from
/// 4 KiB to 64 KiB).
pub fn valid_size(size: usize) -> bool {
    size.is_power_of_two() && (MIN_PAGE_SIZE..=64 * 1024).contains(&size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::SECTOR;

    const AT: PageId = PageId {
        space: 3,
        page_no: 7,
    };

    fn sealed(fill: u8, lsn: u64) -> Vec<u8> {
        let mut p = vec![fill; DEFAULT_PAGE_SIZE];
        seal(&mut p, AT, 1, lsn);
        p
    }

    #[test]
    fn a_sealed_page_verifies_and_zeros_are_empty() {
        let p = sealed(0xab, 42);
        assert_eq!(
            verify(&p, AT, DEFAULT_PAGE_SIZE),
            Ok(PageState::Written { lsn: 42 })
        );
        assert_eq!(kind_of(&p), 1);
        assert_eq!(
            verify(&vec![0; DEFAULT_PAGE_SIZE], AT, DEFAULT_PAGE_SIZE),
            Ok(PageState::Empty)
        );
    }

    #[test]
    fn every_tear_at_a_sector_boundary_is_caught() {
        let (old, new) = (sealed(0x11, 100), sealed(0x22, 200));
        for cut in (SECTOR..DEFAULT_PAGE_SIZE).step_by(SECTOR) {
            // A prefix of the new version, the rest old; and the reverse
            // (sectors reach the disk in any order).
            let mut a = new[..cut].to_vec();
            a.extend_from_slice(&old[cut..]);
            let mut b = old[..cut].to_vec();
            b.extend_from_slice(&new[cut..]);
            assert!(verify(&a, AT, DEFAULT_PAGE_SIZE).is_err(), "cut {cut}");
            assert!(verify(&b, AT, DEFAULT_PAGE_SIZE).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn a_flipped_bit_or_a_page_in_the_wrong_place_is_caught() {
        let mut p = sealed(0x33, 5);
        p[5000] ^= 1;
        assert!(matches!(
            verify(&p, AT, DEFAULT_PAGE_SIZE),
            Err(PageCorrupt::Checksum { .. })
        ));
        let p = sealed(0x33, 5);
        let other = PageId {
            space: 3,
            page_no: 8,
        };
        assert!(matches!(
            verify(&p, other, DEFAULT_PAGE_SIZE),
            Err(PageCorrupt::Misplaced { .. })
        ));
        assert!(matches!(
            verify(&p[..4096], AT, DEFAULT_PAGE_SIZE),
            Err(PageCorrupt::Size { .. })
        ));
    }
}
