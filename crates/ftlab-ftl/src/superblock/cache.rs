//! The map cache of Superblock FTL (superblock-ftl.txt §4.2.2, §5.7). (The LRU list of
//! superblocks that own U-blocks, §4.3's MergeAll victim, is an [`ftlab_core::lru::Lru`]
//! over superblock numbers.)
//!
//! A map cache entry is the PMD of one logical block and one of its PTs, keyed by
//! `(logical block, PMD index)`; entries are replaced least recently used. In SB-S mode
//! the spare areas are always up to date (the PMD and PT are written with every page), so
//! entries are never dirty and an eviction costs nothing. Lookup goes through a direct
//! index `(lbn, pmd index) -> slot` (simulator bookkeeping standing in for the small hash
//! a controller would use; not counted as mapping RAM); the replacement order is the
//! crate-wide intrusive [`Lru`] over slots.

use ftlab_core::lru::Lru;

pub(super) const NONE: u32 = u32::MAX;

/// Entries of `PMD + PT`, LRU-replaced.
#[derive(Clone, Debug)]
pub(super) struct MapCache {
    pmd_len: usize,
    pt_len: usize,
    key: Vec<u32>,
    /// Every slot, most recently used at the front; empty slots start at the back, the
    /// lowest slot last, so they are taken first and in order.
    lru: Lru,
    pmd: Vec<u32>,
    pt: Vec<u32>,
    slot_of: Vec<u32>,
}

impl MapCache {
    /// A cache of `entries` entries for `lbns` logical blocks.
    pub(super) fn new(entries: usize, lbns: u32, pmd_len: usize, pt_len: usize) -> MapCache {
        let mut lru = Lru::new(entries as u32);
        for s in 0..entries as u32 {
            lru.push_front(s);
        }
        MapCache {
            pmd_len,
            pt_len,
            key: vec![NONE; entries],
            lru,
            pmd: vec![NONE; entries * pmd_len],
            pt: vec![NONE; entries * pt_len],
            slot_of: vec![NONE; lbns as usize * pmd_len],
        }
    }

    /// RAM of the entries in bytes: key, PMD and PT of each (the PGD is counted apart).
    pub(super) fn bytes(&self) -> u64 {
        (self.key.len() * (1 + self.pmd_len + self.pt_len) * 4) as u64
    }

    #[inline]
    fn key_of(&self, lbn: u32, i: u32) -> u32 {
        lbn * self.pmd_len as u32 + i
    }

    /// The slot holding `(lbn, i)`, marked most recently used.
    #[inline]
    pub(super) fn get(&mut self, lbn: u32, i: u32) -> Option<usize> {
        let s = self.slot_of[self.key_of(lbn, i) as usize];
        if s == NONE {
            return None;
        }
        self.lru.touch(s);
        Some(s as usize)
    }

    /// The slot holding `(lbn, i)` without touching the LRU order.
    #[inline]
    pub(super) fn peek(&self, lbn: u32, i: u32) -> Option<usize> {
        let s = self.slot_of[self.key_of(lbn, i) as usize];
        (s != NONE).then_some(s as usize)
    }

    /// Any cached slot of `lbn` (to take its PMD from) other than `except`.
    pub(super) fn any_of_lbn(&self, lbn: u32, except: usize) -> Option<usize> {
        let base = self.key_of(lbn, 0) as usize;
        self.slot_of[base..base + self.pmd_len]
            .iter()
            .map(|&s| s as usize)
            .find(|&s| s != NONE as usize && s != except)
    }

    /// Takes the least recently used slot for `(lbn, i)` and returns it; its PMD and PT
    /// are left for the caller to fill.
    pub(super) fn insert(&mut self, lbn: u32, i: u32) -> usize {
        debug_assert!(self.peek(lbn, i).is_none());
        let s = self.lru.back().expect("map cache has at least one entry") as usize;
        if self.key[s] != NONE {
            self.slot_of[self.key[s] as usize] = NONE;
        }
        let k = self.key_of(lbn, i);
        self.key[s] = k;
        self.slot_of[k as usize] = s as u32;
        self.lru.touch(s as u32);
        s
    }

    /// The PMD of slot `s`.
    #[inline]
    pub(super) fn pmd(&self, s: usize) -> &[u32] {
        &self.pmd[s * self.pmd_len..(s + 1) * self.pmd_len]
    }

    /// The PMD of slot `s`, writable.
    #[inline]
    pub(super) fn pmd_mut(&mut self, s: usize) -> &mut [u32] {
        &mut self.pmd[s * self.pmd_len..(s + 1) * self.pmd_len]
    }

    /// The PT of slot `s`.
    #[inline]
    pub(super) fn pt(&self, s: usize) -> &[u32] {
        &self.pt[s * self.pt_len..(s + 1) * self.pt_len]
    }

    /// The PT of slot `s`, writable.
    #[inline]
    pub(super) fn pt_mut(&mut self, s: usize) -> &mut [u32] {
        &mut self.pt[s * self.pt_len..(s + 1) * self.pt_len]
    }

    /// Copies the PMD of slot `from` into slot `to`.
    pub(super) fn copy_pmd(&mut self, from: usize, to: usize) {
        let n = self.pmd_len;
        self.pmd.copy_within(from * n..(from + 1) * n, to * n);
    }

    /// Sets PMD entry `i` of `lbn` to `value` in every cached entry of `lbn` (they all
    /// hold a copy of the one PMD).
    pub(super) fn set_pmd_entry(&mut self, lbn: u32, i: usize, value: u32) {
        let base = self.key_of(lbn, 0) as usize;
        for k in base..base + self.pmd_len {
            let s = self.slot_of[k];
            if s != NONE {
                self.pmd[s as usize * self.pmd_len + i] = value;
            }
        }
    }

    /// `(lbn, pmd index, slot)` of every cached entry.
    pub(super) fn entries(&self) -> impl Iterator<Item = (u32, u32, usize)> + '_ {
        let pl = self.pmd_len as u32;
        self.key
            .iter()
            .enumerate()
            .filter(|&(_, &k)| k != NONE)
            .map(move |(s, &k)| (k / pl, k % pl, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_evicts_the_least_recently_used() {
        let mut c = MapCache::new(2, 8, 4, 16);
        let a = c.insert(1, 0);
        let b = c.insert(1, 2);
        assert_ne!(a, b);
        assert_eq!(c.get(1, 0), Some(a));
        let d = c.insert(5, 3);
        assert_eq!(d, b, "(1, 2) was least recently used");
        assert_eq!(c.peek(1, 2), None);
        assert_eq!(c.peek(5, 3), Some(d));
        c.set_pmd_entry(1, 3, 77);
        assert_eq!(c.pmd(a)[3], 77);
        assert_eq!(c.pmd(d)[3], NONE);
        assert_eq!(c.any_of_lbn(1, usize::MAX), Some(a));
        assert_eq!(c.any_of_lbn(1, a), None);
        assert_eq!(c.entries().count(), 2);
    }
}
