//! The buffer pool's page hash: which frame holds a page, in shards with
//! their own reader-writer latches (InnoDB's `buf_pool->page_hash` with
//! its partitioned latches), so a lookup that hits never takes the pool's
//! mutex and lookups of different pages rarely meet.
//!
//! Changed only by a thread holding the pool's mutex (a read-in, an
//! eviction, a discard), so under that mutex the hash is exact; a lookup
//! without it may return a frame that is being evicted at that moment,
//! and the caller re-checks the frame's page id once it holds the frame's
//! latch.

use std::collections::HashMap;

use crate::sync::RwLock;

use super::page::PageId;

const SHARDS: usize = 16;

pub(super) struct PageHash {
    shards: Box<[RwLock<HashMap<PageId, u32>>]>,
}

impl PageHash {
    pub(super) fn new() -> PageHash {
        PageHash {
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
        }
    }

    fn shard(&self, id: PageId) -> &RwLock<HashMap<PageId, u32>> {
        // Neighbouring pages of one space spread over the shards.
        let code = (u64::from(id.space) << 32) | u64::from(id.page_no);
        let h = code.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60;
        &self.shards[h as usize % SHARDS]
    }

    /// The frame holding `id` now (a hint without the pool's mutex).
    pub(super) fn get(&self, id: PageId) -> Option<u32> {
        self.shard(id).read().get(&id).copied()
    }

    /// With the pool's mutex held.
    pub(super) fn insert(&self, id: PageId, frame: u32) {
        self.shard(id).write().insert(id, frame);
    }

    /// With the pool's mutex held.
    pub(super) fn remove(&self, id: PageId) {
        self.shard(id).write().remove(&id);
    }

    /// The frames holding pages of `space` (with the pool's mutex held).
    pub(super) fn frames_of_space(&self, space: u32) -> Vec<u32> {
        self.shards
            .iter()
            .flat_map(|s| {
                s.read()
                    .iter()
                    .filter(|(id, _)| id.space == space)
                    .map(|(_, fr)| *fr)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_found_in_their_shard_and_listed_by_space() {
        let h = PageHash::new();
        for no in 0..100 {
            h.insert(
                PageId {
                    space: 1,
                    page_no: no,
                },
                no,
            );
            h.insert(
                PageId {
                    space: 2,
                    page_no: no,
                },
                100 + no,
            );
        }
        assert_eq!(
            h.get(PageId {
                space: 2,
                page_no: 7
            }),
            Some(107)
        );
        h.remove(PageId {
            space: 2,
            page_no: 7,
        });
        assert_eq!(
            h.get(PageId {
                space: 2,
                page_no: 7
            }),
            None
        );
        let mut of1 = h.frames_of_space(1);
        of1.sort_unstable();
        assert_eq!(of1, (0..100).collect::<Vec<u32>>());
        assert_eq!(h.frames_of_space(2).len(), 99);
        // Consecutive pages do not all land in one shard.
        let used = (0..64)
            .map(|no| {
                h.shard(PageId {
                    space: 1,
                    page_no: no,
                }) as *const _
            })
            .collect::<std::collections::HashSet<_>>();
        assert!(used.len() >= 8, "{} shards used", used.len());
    }
}
