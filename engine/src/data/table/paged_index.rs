//! A paged table's secondary index `k_1` on pages: a B+tree of `(k, id)`
//! entries in a scratch tablespace of its own, read and changed through
//! the buffer pool ([`crate::page_store::buffer_pool`]), so the index of a
//! table larger than the pool is not held in memory either.
//!
//! # Layout
//!
//! Page 0 is the root. A node's body (the page between the store's header
//! and trailer) is
//!
//! ```text
//! kind u8 (0 never written = an empty leaf, 1 leaf, 2 internal) | count u16 | link u32 | 0 u8
//! leaf:     count x (k i32 | id i64)                      12 bytes an entry
//! internal: count x (k i32 | id i64 | child u32)          16 bytes an entry
//! ```
//!
//! A leaf's `link` is the next leaf in key order (`u32::MAX`: the last);
//! an internal node's is its leftmost child, and entry `i`'s child holds
//! the keys at or above entry `i`'s key. A 16 KiB page holds 1,362 leaf
//! entries or 1,021 internal ones.
//!
//! # What is on pages and when
//!
//! The tree holds the committed versions' keys; a pending version's `k`
//! stays in memory with its transaction's other state (as InnoDB keeps
//! uncommitted versions in undo). The tree is changed under the table's
//! write latch, unlogged ([`ChangeLsn::UNLOGGED`]): the index is derived
//! from the rows, so every start rebuilds it from one scan of the row
//! pages after recovery ([`PagedIndex::build`], a sorted bottom-up load
//! filling nodes to 15/16), and no redo, write-ahead wait or checkpoint
//! ever concerns its pages. A delete leaves a node as it is, however
//! empty (no merge); the rebuild at the next start compacts it.

use crate::page_store::buffer_pool::{BufferPool, ChangeLsn};
use crate::page_store::page::{PageId, HEADER, TRAILER};
use crate::page_store::StoreError;
use std::sync::Arc;

/// An index entry: `(k, id)`.
pub type Key = (i32, i64);

const LEAF: u8 = 1;
const INTERNAL: u8 = 2;
const NODE_HEADER: usize = 8;
const LEAF_ENTRY: usize = 12;
const INTERNAL_ENTRY: usize = 16;
const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;

/// One table's index `k_1` in the pages of scratch space `space`.
pub struct PagedIndex {
    pool: Arc<BufferPool>,
    space: u32,
    leaf_cap: usize,
    internal_cap: usize,
    /// The next page number a split takes.
    next_page: u32,
    /// Levels of internal nodes above the leaves (0: the root is a leaf).
    height: u32,
    /// The root's entries when it is internal: a copy kept beside its page
    /// (every change of an internal root goes through [`Self::write`]), so
    /// a descent starts at the second level without a pool access, as
    /// InnoDB's root page stays fixed in its pool.
    root: Option<(u32, Vec<(Key, u32)>)>,
}

/// A node decoded for a split.
enum Node {
    Leaf {
        next: u32,
        keys: Vec<Key>,
    },
    Internal {
        first: u32,
        entries: Vec<(Key, u32)>,
    },
}

fn key_at(body: &[u8], at: usize) -> Key {
    (
        i32::from_le_bytes(body[at..at + 4].try_into().unwrap()),
        i64::from_le_bytes(body[at + 4..at + 12].try_into().unwrap()),
    )
}

fn put_key(body: &mut [u8], at: usize, key: Key) {
    body[at..at + 4].copy_from_slice(&key.0.to_le_bytes());
    body[at + 4..at + 12].copy_from_slice(&key.1.to_le_bytes());
}

fn u32_at(body: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(body[at..at + 4].try_into().unwrap())
}

fn count(body: &[u8]) -> usize {
    usize::from(u16::from_le_bytes([body[1], body[2]]))
}

fn set_count(body: &mut [u8], n: usize) {
    body[1..3].copy_from_slice(&(n as u16).to_le_bytes());
}

/// The leaf position of `key` in `body`: `Ok` where it is, `Err` where it
/// would go.
fn leaf_search(body: &[u8], key: Key) -> Result<usize, usize> {
    let (mut lo, mut hi) = (0, count(body));
    while lo < hi {
        let mid = (lo + hi) / 2;
        match key_at(body, NODE_HEADER + mid * LEAF_ENTRY).cmp(&key) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

/// In an internal node: the index of the entry whose child covers `key`
/// (`None`: the leftmost child), and that child.
fn child_for(body: &[u8], key: Key) -> (Option<usize>, u32) {
    let (mut lo, mut hi) = (0, count(body));
    // The number of entries whose key is at most `key`.
    while lo < hi {
        let mid = (lo + hi) / 2;
        if key_at(body, NODE_HEADER + mid * INTERNAL_ENTRY) <= key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    match lo {
        0 => (None, u32_at(body, 3)),
        i => (
            Some(i - 1),
            u32_at(body, NODE_HEADER + (i - 1) * INTERNAL_ENTRY + 12),
        ),
    }
}

fn decode(body: &[u8]) -> Node {
    let n = count(body);
    match body[0] {
        INTERNAL => Node::Internal {
            first: u32_at(body, 3),
            entries: (0..n)
                .map(|i| {
                    let at = NODE_HEADER + i * INTERNAL_ENTRY;
                    (key_at(body, at), u32_at(body, at + 12))
                })
                .collect(),
        },
        // A page never written is an empty leaf (the root of a new index).
        LEAF | 0 => Node::Leaf {
            next: if body[0] == 0 { NONE } else { u32_at(body, 3) },
            keys: (0..n)
                .map(|i| key_at(body, NODE_HEADER + i * LEAF_ENTRY))
                .collect(),
        },
        kind => panic!("index page of unknown kind {kind}: the scratch space was overwritten"),
    }
}

fn encode(node: &Node, body: &mut [u8]) {
    body.fill(0);
    match node {
        Node::Leaf { next, keys } => {
            body[0] = LEAF;
            set_count(body, keys.len());
            body[3..7].copy_from_slice(&next.to_le_bytes());
            for (i, k) in keys.iter().enumerate() {
                put_key(body, NODE_HEADER + i * LEAF_ENTRY, *k);
            }
        }
        Node::Internal { first, entries } => {
            body[0] = INTERNAL;
            set_count(body, entries.len());
            body[3..7].copy_from_slice(&first.to_le_bytes());
            for (i, (k, child)) in entries.iter().enumerate() {
                let at = NODE_HEADER + i * INTERNAL_ENTRY;
                put_key(body, at, *k);
                body[at + 12..at + 16].copy_from_slice(&child.to_le_bytes());
            }
        }
    }
}

impl PagedIndex {
    /// The index in scratch space `space` (open in `pool`, empty): call
    /// [`build`](Self::build) before anything else.
    pub fn new(pool: Arc<BufferPool>, space: u32, page_size: usize) -> PagedIndex {
        let body = page_size - HEADER - TRAILER - NODE_HEADER;
        PagedIndex {
            pool,
            space,
            leaf_cap: body / LEAF_ENTRY,
            internal_cap: body / INTERNAL_ENTRY,
            next_page: ROOT + 1,
            height: 0,
            root: None,
        }
    }

    /// An index whose nodes hold at most `leaf` and `internal` entries
    /// (tests: deep trees from a few keys).
    #[cfg(test)]
    pub fn with_caps(mut self, leaf: usize, internal: usize) -> PagedIndex {
        assert!(leaf >= 2 && internal >= 2);
        self.leaf_cap = leaf.min(self.leaf_cap);
        self.internal_cap = internal.min(self.internal_cap);
        self
    }

    fn page(&self, page_no: u32) -> PageId {
        PageId {
            space: self.space,
            page_no,
        }
    }

    fn write(&mut self, page_no: u32, node: &Node) -> Result<(), StoreError> {
        if page_no == ROOT {
            self.root = match node {
                Node::Internal { first, entries } => Some((*first, entries.clone())),
                Node::Leaf { .. } => None,
            };
        }
        self.pool
            .modify(self.page(page_no), ChangeLsn::UNLOGGED, |b| encode(node, b))
    }

    fn alloc(&mut self) -> u32 {
        let p = self.next_page;
        self.next_page += 1;
        p
    }

    /// Loads `keys` (sorted, no duplicates) bottom-up: leaves filled to
    /// 15/16, then each level of internal nodes over the one below, the
    /// top one written as the root.
    pub fn build(&mut self, keys: &[Key]) -> Result<(), StoreError> {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        self.next_page = ROOT + 1;
        self.height = 0;
        let fill = |cap: usize| (cap * 15 / 16).max(2);
        if keys.len() <= self.leaf_cap {
            let node = Node::Leaf {
                next: NONE,
                keys: keys.to_vec(),
            };
            return self.write(ROOT, &node);
        }
        // (first key, page) of every node of the level just written.
        let mut level: Vec<(Key, u32)> = vec![];
        let chunks: Vec<&[Key]> = keys.chunks(fill(self.leaf_cap)).collect();
        let pages: Vec<u32> = chunks.iter().map(|_| self.alloc()).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let next = pages.get(i + 1).copied().unwrap_or(NONE);
            let node = Node::Leaf {
                next,
                keys: chunk.to_vec(),
            };
            self.write(pages[i], &node)?;
            level.push((chunk[0], pages[i]));
        }
        loop {
            self.height += 1;
            // A node of `fill` entries has `fill + 1` children.
            let per = fill(self.internal_cap) + 1;
            if level.len() <= self.internal_cap + 1 {
                let node = Node::Internal {
                    first: level[0].1,
                    entries: level[1..].to_vec(),
                };
                return self.write(ROOT, &node);
            }
            let mut up = vec![];
            for group in level.chunks(per) {
                let page = self.alloc();
                let node = Node::Internal {
                    first: group[0].1,
                    entries: group[1..].to_vec(),
                };
                self.write(page, &node)?;
                up.push((group[0].0, page));
            }
            level = up;
        }
    }

    /// The pages from the root to the leaf that covers `key`: the root's
    /// child from its copy, then one pool read a level (none for the leaf).
    fn path(&self, key: Key) -> Result<Vec<u32>, StoreError> {
        let mut path = vec![ROOT];
        let Some((first, entries)) = &self.root else {
            return Ok(path);
        };
        let i = entries.partition_point(|(k, _)| *k <= key);
        path.push(if i == 0 { *first } else { entries[i - 1].1 });
        for _ in 1..self.height {
            let at = *path.last().expect("a node");
            let child = self
                .pool
                .read(self.page(at), |p| child_for(&p[HEADER..], key).1)?;
            path.push(child);
        }
        Ok(path)
    }

    /// Adds `key` (no change if it is there).
    pub fn insert(&mut self, key: Key) -> Result<(), StoreError> {
        let path = self.path(key)?;
        let leaf = *path.last().expect("a leaf");
        let cap = self.leaf_cap;
        let mut full = false;
        self.pool
            .modify(self.page(leaf), ChangeLsn::UNLOGGED, |b| {
                if b[0] == 0 {
                    encode(
                        &Node::Leaf {
                            next: NONE,
                            keys: vec![],
                        },
                        b,
                    );
                }
                let Err(at) = leaf_search(b, key) else { return };
                let n = count(b);
                if n == cap {
                    full = true;
                    return;
                }
                let from = NODE_HEADER + at * LEAF_ENTRY;
                b.copy_within(from..NODE_HEADER + n * LEAF_ENTRY, from + LEAF_ENTRY);
                put_key(b, from, key);
                set_count(b, n + 1);
            })?;
        if full {
            self.split_insert(&path, key)?;
        }
        Ok(())
    }

    /// Removes `key` (no change if it is not there).
    pub fn remove(&mut self, key: Key) -> Result<(), StoreError> {
        let leaf = *self.path(key)?.last().expect("a leaf");
        self.pool.modify(self.page(leaf), ChangeLsn::UNLOGGED, |b| {
            let Ok(at) = leaf_search(b, key) else { return };
            let n = count(b);
            let from = NODE_HEADER + at * LEAF_ENTRY;
            b.copy_within(from + LEAF_ENTRY..NODE_HEADER + n * LEAF_ENTRY, from);
            set_count(b, n - 1);
        })
    }

    fn read_node(&self, page_no: u32) -> Result<Node, StoreError> {
        self.pool.read(self.page(page_no), |p| decode(&p[HEADER..]))
    }

    /// Inserts `key` into the full leaf at the end of `path`, splitting it
    /// and, as far as needed, its ancestors.
    fn split_insert(&mut self, path: &[u32], key: Key) -> Result<(), StoreError> {
        let leaf = *path.last().expect("a leaf");
        let Node::Leaf { next, mut keys } = self.read_node(leaf)? else {
            unreachable!("the path ends at a leaf")
        };
        let at = keys.binary_search(&key).unwrap_err();
        keys.insert(at, key);
        let right_keys = keys.split_off(keys.len() / 2);
        let sep = right_keys[0];
        let right = Node::Leaf {
            next,
            keys: right_keys,
        };
        // Carried up: a split's right half, as (its first key, its page).
        let Some(mut carry) = self.split(leaf, right, sep, |r| Node::Leaf { next: r, keys })?
        else {
            return Ok(());
        };
        for &parent in path[..path.len() - 1].iter().rev() {
            let Node::Internal { first, mut entries } = self.read_node(parent)? else {
                unreachable!("a leaf's ancestors are internal")
            };
            let at = entries.partition_point(|(k, _)| *k < carry.0);
            entries.insert(at, carry);
            if entries.len() <= self.internal_cap {
                return self.write(parent, &Node::Internal { first, entries });
            }
            // The middle entry moves up; its child leads the right half.
            let mut right = entries.split_off(entries.len() / 2);
            let (up, right_first) = right.remove(0);
            let right = Node::Internal {
                first: right_first,
                entries: right,
            };
            match self.split(parent, right, up, |_| Node::Internal { first, entries })? {
                Some(c) => carry = c,
                None => return Ok(()),
            }
        }
        unreachable!("the root absorbs or splits")
    }

    /// Writes node `page` split in two halves: `right` (whose first key is
    /// `sep`) on a new page, the left half (`left`, given that page) in
    /// place; returns `(sep, right's page)` for the parent. The root stays
    /// page 0: its halves move to two new pages under a new root, one
    /// level higher, and nothing is carried up.
    fn split(
        &mut self,
        page: u32,
        right: Node,
        sep: Key,
        left: impl FnOnce(u32) -> Node,
    ) -> Result<Option<(Key, u32)>, StoreError> {
        if page != ROOT {
            let r = self.alloc();
            self.write(r, &right)?;
            self.write(page, &left(r))?;
            return Ok(Some((sep, r)));
        }
        self.height += 1;
        let (l, r) = (self.alloc(), self.alloc());
        self.write(l, &left(r))?;
        self.write(r, &right)?;
        let root = Node::Internal {
            first: l,
            entries: vec![(sep, r)],
        };
        self.write(ROOT, &root)?;
        Ok(None)
    }

    /// The entries with `lo <= key <= hi`, in order: down to the leaf of
    /// `lo`, then along the leaves.
    pub fn range(&self, lo: Key, hi: Key) -> Result<Vec<Key>, StoreError> {
        let mut out = vec![];
        if lo > hi {
            return Ok(out);
        }
        let mut leaf = *self.path(lo)?.last().expect("a leaf");
        loop {
            let next = self.pool.read(self.page(leaf), |p| {
                let body = &p[HEADER..];
                let start = leaf_search(body, lo).unwrap_or_else(|i| i);
                for i in start..count(body) {
                    let k = key_at(body, NODE_HEADER + i * LEAF_ENTRY);
                    if k > hi {
                        return NONE;
                    }
                    out.push(k);
                }
                if body[0] == LEAF {
                    u32_at(body, 3)
                } else {
                    NONE
                }
            })?;
            if next == NONE {
                return Ok(out);
            }
            leaf = next;
        }
    }

    /// Every entry, in order.
    pub fn entries(&self) -> Result<Vec<Key>, StoreError> {
        self.range((i32::MIN, i64::MIN), (i32::MAX, i64::MAX))
    }

    /// Pages the index has taken (nodes written since the last build).
    pub fn pages(&self) -> u32 {
        self.next_page
    }
}

#[cfg(test)]
mod tests;
