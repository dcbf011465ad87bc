//! Recovery's first step, before redo: every page the doublewrite area
//! names is checked in its tablespace; one that fails its checksum (its
//! write was torn by the crash) is put back from its intact copy.
//!
//! The order of a flush makes this safe: a data page is written only
//! after its copy is durable, and a slot is reused only after the data
//! write it covered is durable. So a torn data page always has an intact
//! copy, the newest one for that page; a copy torn itself (the crash came
//! while the area was written) covers a data page not yet touched, which
//! verifies. A DETECT_ONLY slot (header only) names its page and nothing
//! more: a torn page it names is reported, not restored.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::vfs::Vfs;

use super::{files, legacy};
use crate::page_store::page::{self, PageCorrupt, PageId, PageState, HEADER};
use crate::page_store::{Spaces, StoreError};

/// What recovery did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Pages the doublewrite area named (each once).
    pub checked: usize,
    /// Torn pages restored from their copy.
    pub restored: Vec<PageId>,
    /// Torn pages with no copy to restore them from (DETECT_ONLY): never
    /// used; the engine refuses to open until they are dealt with.
    pub unrepaired: Vec<PageCorrupt>,
}

/// A slot's content.
enum Slot {
    /// A whole page that verifies against its own id.
    Copy {
        id: PageId,
        lsn: u64,
        bytes: Vec<u8>,
    },
    /// A DETECT_ONLY header: the page's id.
    Named(PageId),
}

fn read_slots(
    dir: &dyn Vfs,
    name: &str,
    page_size: usize,
    out: &mut Vec<Slot>,
) -> Result<(), StoreError> {
    let f = dir
        .open(name, false)
        .map_err(|e| StoreError::io(name, "opening", e))?;
    let len = f.len().map_err(|e| StoreError::io(name, "sizing", e))?;
    let mut buf = vec![0u8; page_size];
    for i in 0..len / page_size as u64 {
        let n = f
            .read_at(&mut buf, i * page_size as u64)
            .map_err(|e| StoreError::io(name, "reading", e))?;
        buf[n..].fill(0);
        if buf.iter().all(|&b| b == 0) {
            continue;
        }
        let id = page::id_of(&buf);
        match page::verify(&buf, id, page_size) {
            Ok(PageState::Written { lsn }) => out.push(Slot::Copy {
                id,
                lsn,
                bytes: buf.clone(),
            }),
            Ok(PageState::Empty) => {}
            // A header alone: a DETECT_ONLY record.
            Err(_) if buf[HEADER..].iter().all(|&b| b == 0) => out.push(Slot::Named(id)),
            // A copy torn while the area was written: its data write had
            // not started.
            Err(_) => {}
        }
    }
    Ok(())
}

/// Checks and repairs the pages the doublewrite files in `dir` name.
pub fn recover(
    dir: &Arc<dyn Vfs>,
    spaces: &Spaces,
    page_size: usize,
) -> Result<Recovered, StoreError> {
    let names = dir
        .list()
        .map_err(|e| StoreError::io("doublewrite directory", "listing", e))?;
    let mut slots = vec![];
    for name in names {
        let ours = name == legacy::FILE || files::is_file_name(&name);
        if ours {
            read_slots(dir.as_ref(), &name, page_size, &mut slots)?;
        }
    }
    // The newest intact copy of each page named.
    let mut named: BTreeMap<PageId, Option<(u64, Vec<u8>)>> = BTreeMap::new();
    for s in slots {
        match s {
            Slot::Copy { id, lsn, bytes } => {
                let e = named.entry(id).or_insert(None);
                if e.as_ref().is_none_or(|(l, _)| lsn > *l) {
                    *e = Some((lsn, bytes));
                }
            }
            Slot::Named(id) => {
                named.entry(id).or_insert(None);
            }
        }
    }
    let mut out = Recovered {
        checked: named.len(),
        ..Recovered::default()
    };
    let mut buf = vec![0u8; page_size];
    let mut synced = vec![];
    for (id, copy) in named {
        // A page of a tablespace dropped since: nothing to repair.
        let Ok(ts) = spaces.get(id.space) else {
            continue;
        };
        match ts.read_verified(id.page_no, &mut buf) {
            Ok(_) => {}
            Err(StoreError::Corrupt(why)) => match copy {
                Some((_, bytes)) => {
                    ts.write(id.page_no, &bytes)?;
                    if !synced.contains(&id.space) {
                        synced.push(id.space);
                    }
                    out.restored.push(id);
                }
                None => out.unrepaired.push(why),
            },
            Err(e) => return Err(e),
        }
    }
    for space in synced {
        spaces.get(space)?.sync()?;
    }
    Ok(out)
}
