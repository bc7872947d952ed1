//! [`GreedyIndex`]: finds the block with the fewest valid pages in O(pages per block +
//! log64 blocks), with ties broken by the lowest block number, so greedy GC never scans
//! every block.
//!
//! One hierarchical bitset per valid count (0..=pages_per_block); a block is in at most
//! one of them. Memory: `(pages_per_block + 1) * blocks / 8` bytes (about 33 MiB for a
//! 1 TiB device with 4 KiB pages and 128 pages per block).

use crate::units::Pbn;

/// A set of block numbers with find-first, as a 64-ary tree of bitmaps.
#[derive(Clone, Debug)]
struct Bitset {
    levels: Vec<Vec<u64>>,
}

impl Bitset {
    fn new(n: u32) -> Self {
        let mut levels = Vec::new();
        let mut len = (n as usize).div_ceil(64).max(1);
        loop {
            levels.push(vec![0u64; len]);
            if len == 1 {
                break;
            }
            len = len.div_ceil(64);
        }
        Bitset { levels }
    }

    fn insert(&mut self, i: u32) {
        let mut i = i as usize;
        for level in &mut self.levels {
            let was_empty = level[i / 64] == 0;
            level[i / 64] |= 1 << (i % 64);
            if !was_empty {
                break;
            }
            i /= 64;
        }
    }

    fn remove(&mut self, i: u32) {
        let mut i = i as usize;
        for level in &mut self.levels {
            level[i / 64] &= !(1 << (i % 64));
            if level[i / 64] != 0 {
                break;
            }
            i /= 64;
        }
    }

    fn first(&self) -> Option<u32> {
        let top = self.levels.last()?;
        if top[0] == 0 {
            return None;
        }
        let mut i = 0usize;
        for level in self.levels.iter().rev() {
            let word = level[i];
            debug_assert!(word != 0);
            i = i * 64 + word.trailing_zeros() as usize;
        }
        Some(i as u32)
    }
}

const NOT_IN: u16 = u16::MAX;

/// Candidate victim blocks keyed by valid-page count.
#[derive(Clone, Debug)]
pub struct GreedyIndex {
    buckets: Vec<Bitset>,
    sizes: Vec<u32>,
    member: Vec<u16>,
}

impl GreedyIndex {
    /// An empty index for `blocks` blocks of `pages_per_block` pages.
    pub fn new(blocks: u32, pages_per_block: u32) -> Self {
        assert!(pages_per_block < NOT_IN as u32);
        GreedyIndex {
            buckets: (0..=pages_per_block).map(|_| Bitset::new(blocks)).collect(),
            sizes: vec![0; pages_per_block as usize + 1],
            member: vec![NOT_IN; blocks as usize],
        }
    }

    /// Adds a block with `valid` valid pages. Panics if it is already in.
    pub fn insert(&mut self, pbn: Pbn, valid: u32) {
        assert_eq!(self.member[pbn.idx()], NOT_IN, "{pbn:?} already indexed");
        self.member[pbn.idx()] = valid as u16;
        self.buckets[valid as usize].insert(pbn.0);
        self.sizes[valid as usize] += 1;
    }

    /// Removes a block if present.
    pub fn remove(&mut self, pbn: Pbn) {
        let v = self.member[pbn.idx()];
        if v != NOT_IN {
            self.buckets[v as usize].remove(pbn.0);
            self.sizes[v as usize] -= 1;
            self.member[pbn.idx()] = NOT_IN;
        }
    }

    /// Whether a block is indexed.
    pub fn contains(&self, pbn: Pbn) -> bool {
        self.member[pbn.idx()] != NOT_IN
    }

    /// One of the block's pages became invalid; no-op if the block is not indexed.
    #[inline]
    pub fn decrement(&mut self, pbn: Pbn) {
        let v = self.member[pbn.idx()];
        if v != NOT_IN {
            assert!(v > 0, "{pbn:?} has no valid page to lose");
            self.buckets[v as usize].remove(pbn.0);
            self.sizes[v as usize] -= 1;
            self.buckets[v as usize - 1].insert(pbn.0);
            self.sizes[v as usize - 1] += 1;
            self.member[pbn.idx()] = v - 1;
        }
    }

    /// The block with the fewest valid pages (lowest number on ties) and its count.
    pub fn min(&self) -> Option<(Pbn, u32)> {
        let v = self.sizes.iter().position(|&s| s > 0)?;
        let b = self.buckets[v].first().expect("bucket size says non-empty");
        Some((Pbn(b), v as u32))
    }

    /// Removes and returns [`GreedyIndex::min`].
    pub fn pop_min(&mut self) -> Option<(Pbn, u32)> {
        let (b, v) = self.min()?;
        self.remove(b);
        Some((b, v))
    }

    /// Memory used, in bytes.
    pub fn bytes(&self) -> u64 {
        let bits: usize = self
            .buckets
            .iter()
            .map(|b| b.levels.iter().map(Vec::len).sum::<usize>() * 8)
            .sum();
        (bits + self.member.len() * 2 + self.sizes.len() * 4) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_with_ties_by_lowest_block() {
        let mut g = GreedyIndex::new(10_000, 64);
        g.insert(Pbn(9000), 3);
        g.insert(Pbn(5), 3);
        g.insert(Pbn(70), 10);
        assert_eq!(g.min(), Some((Pbn(5), 3)));
        g.decrement(Pbn(9000));
        assert_eq!(g.min(), Some((Pbn(9000), 2)));
        assert_eq!(g.pop_min(), Some((Pbn(9000), 2)));
        assert_eq!(g.pop_min(), Some((Pbn(5), 3)));
        g.remove(Pbn(70));
        assert_eq!(g.min(), None);
        g.decrement(Pbn(70)); // not indexed: ignored
    }

    #[test]
    fn matches_a_linear_scan() {
        // A small deterministic pseudo-random walk compared with brute force.
        let mut g = GreedyIndex::new(300, 8);
        let mut valid = [None::<u32>; 300];
        let mut x: u64 = 12345;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let b = ((x >> 33) % 300) as u32;
            match (x >> 20) % 3 {
                0 if valid[b as usize].is_none() => {
                    let v = ((x >> 40) % 9) as u32;
                    g.insert(Pbn(b), v);
                    valid[b as usize] = Some(v);
                }
                1 => {
                    if let Some(v) = valid[b as usize] {
                        if v > 0 {
                            g.decrement(Pbn(b));
                            valid[b as usize] = Some(v - 1);
                        }
                    }
                }
                _ => {
                    g.remove(Pbn(b));
                    valid[b as usize] = None;
                }
            }
            let brute = valid
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (v, i as u32)))
                .min()
                .map(|(v, i)| (Pbn(i), v));
            assert_eq!(g.min(), brute);
        }
    }
}
