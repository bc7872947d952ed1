//! Wear levelling data structures (issue 23 item 3), shared by the schemes that offer
//! the `wear_leveling` option.
//!
//! Sources: none of the papers in the collection models wear levelling (cach-ftl.txt
//! §4.2.3: "Adding a wear leveler into CACH-FTL is also beyond the scope of this
//! paper"; c-lash.txt proposes a cache instead of one). The two kinds are the usual ones of the
//! literature (Gal and Toledo, "Algorithms and data structures for flash memories", ACM
//! Computing Surveys 37(2), 2005; Chang, Hsieh and Kuo, "Endurance enhancement of
//! flash-memory storage systems: an efficient static wear leveling design", DAC 2007):
//! dynamic levelling spreads erases over the blocks that are erased anyway, static
//! levelling also moves data that never changes so its blocks take their share.
//!
//! [`WearLeveling`] is the option: `off` (free blocks in the scheme's own order),
//! `dynamic` (a new block is the least-worn free one) and `static` (dynamic, and when
//! the spread between the most-erased block and the least-erased block holding data
//! passes `wl_threshold`, the data of that coldest block moves so it re-enters
//! circulation). Choices left open, made here: one threshold on max - min (not a ratio
//! to the mean, not Chang et al.'s bit map of recently erased blocks); at most one block
//! moved per check; the schemes say when they check.
//!
//! [`WearHeap`]: a set of blocks with the least-erased one first, ties by the lowest
//! block number (deterministic), in O(log n) per insertion and removal and O(1) for the
//! minimum; a block can be removed from the middle (its position is kept). The erase
//! count is the block's key when it is inserted: the schemes insert blocks whose count
//! cannot change while they are in the set (free blocks, sealed blocks). Nothing is
//! allocated after construction. A heap may hold only the blocks `b` with
//! `b % stride == rem` (one heap per die): its position table then has `blocks /
//! stride` entries.

use crate::units::Pbn;

/// The `wear_leveling` option.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WearLeveling {
    /// No wear levelling: free blocks in the scheme's own order (the papers').
    #[default]
    Off,
    /// A new block is the least-worn free block (ties: the lowest number).
    Dynamic,
    /// Dynamic, and when max - min erase count passes `wl_threshold`, the data of the
    /// least-erased block in use moves, so that block is erased and reused.
    Static,
}

impl WearLeveling {
    /// Every value, in declaration order (for tests and the swarm).
    pub const ALL: [WearLeveling; 3] = [
        WearLeveling::Off,
        WearLeveling::Dynamic,
        WearLeveling::Static,
    ];
}

/// The `wear_leveling` option of the schemes that offer dynamic levelling only (`dac`,
/// `dftl`, `tpm`, `block`, `bast`, `fast`): the same values as [`WearLeveling`] but
/// `static`, so listings, the swarm and the conformance suite never pick a value the
/// scheme refuses.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DynamicWearLeveling {
    /// No wear levelling: free blocks first-in first-out (the papers').
    #[default]
    Off,
    /// A new block is the least-worn free block (ties: the lowest number).
    Dynamic,
}

impl DynamicWearLeveling {
    /// Whether free blocks are handed out least-erased first.
    pub fn dynamic(self) -> bool {
        self == DynamicWearLeveling::Dynamic
    }
}

/// Free blocks: first-in first-out (no levelling: erased blocks go to the back) or
/// least-erased first ([`WearHeap`]: dynamic levelling). The schemes' free pools.
#[derive(Clone, Debug)]
pub enum FreeBlocks {
    /// First-in first-out.
    Fifo(std::collections::VecDeque<Pbn>),
    /// Least-erased first, ties by the lowest block number.
    Worn(WearHeap),
}

impl FreeBlocks {
    /// An empty pool for the blocks `b < blocks` with `b % stride` equal to one value
    /// (stride 1: any block), least-erased first if `dynamic`.
    pub fn new(blocks: u32, stride: u32, dynamic: bool) -> Self {
        if dynamic {
            FreeBlocks::Worn(WearHeap::new(blocks, stride))
        } else {
            FreeBlocks::Fifo(std::collections::VecDeque::with_capacity(
                blocks.div_ceil(stride.max(1)) as usize,
            ))
        }
    }

    /// Free blocks.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            FreeBlocks::Fifo(q) => q.len(),
            FreeBlocks::Worn(h) => h.len(),
        }
    }

    /// Whether none is free.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds an erased block that has been erased `erases` times.
    #[inline]
    pub fn push(&mut self, b: Pbn, erases: u32) {
        match self {
            FreeBlocks::Fifo(q) => q.push_back(b),
            FreeBlocks::Worn(h) => h.push(b, erases),
        }
    }

    /// Takes the next block: the oldest freed, or the least erased.
    #[inline]
    pub fn pop(&mut self) -> Option<Pbn> {
        match self {
            FreeBlocks::Fifo(q) => q.pop_front(),
            FreeBlocks::Worn(h) => h.pop(),
        }
    }

    /// Empties the pool.
    pub fn clear(&mut self) {
        match self {
            FreeBlocks::Fifo(q) => q.clear(),
            FreeBlocks::Worn(h) => h.clear(),
        }
    }

    /// The free blocks (first-in first-out: oldest first; else in no particular
    /// order).
    pub fn iter(&self) -> impl Iterator<Item = Pbn> + '_ {
        let (q, h) = match self {
            FreeBlocks::Fifo(q) => (Some(q.iter().copied()), None),
            FreeBlocks::Worn(h) => (None, Some(h.iter())),
        };
        q.into_iter().flatten().chain(h.into_iter().flatten())
    }
}

/// Default of the `wl_threshold` option: the erase-count spread (max - min) above which
/// static wear levelling moves the coldest block's data.
pub const DEFAULT_WL_THRESHOLD: u32 = 16;

const NIL: u32 = u32::MAX;

/// Blocks by erase count, least first (module docs).
#[derive(Clone, Debug)]
pub struct WearHeap {
    /// Heap of (erase count, block) keys.
    heap: Vec<(u32, u32)>,
    /// Position in `heap` of block `b` (indexed by `b / stride`), [`NIL`] if absent.
    pos: Vec<u32>,
    stride: u32,
}

impl WearHeap {
    /// An empty set for the blocks `b < blocks` with `b % stride` equal to one value.
    pub fn new(blocks: u32, stride: u32) -> Self {
        let stride = stride.max(1);
        let n = blocks.div_ceil(stride) as usize;
        WearHeap {
            heap: Vec::with_capacity(n),
            pos: vec![NIL; n],
            stride,
        }
    }

    /// Blocks in the set.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Whether `pbn` is in the set.
    pub fn contains(&self, pbn: Pbn) -> bool {
        self.pos
            .get((pbn.0 / self.stride) as usize)
            .is_some_and(|&p| p != NIL)
    }

    /// Adds `pbn` with `erases` erases. Panics if it is already in.
    pub fn push(&mut self, pbn: Pbn, erases: u32) {
        let slot = (pbn.0 / self.stride) as usize;
        assert_eq!(self.pos[slot], NIL, "{pbn:?} already in the wear heap");
        self.heap.push((erases, pbn.0));
        let i = self.heap.len() - 1;
        self.pos[slot] = i as u32;
        self.up(i);
    }

    /// The least-erased block (lowest number on ties) and its erase count.
    pub fn peek(&self) -> Option<(Pbn, u32)> {
        self.heap.first().map(|&(e, b)| (Pbn(b), e))
    }

    /// Removes and returns [`WearHeap::peek`]'s block.
    pub fn pop(&mut self) -> Option<Pbn> {
        let (b, _) = self.peek()?;
        self.remove(b);
        Some(b)
    }

    /// Removes `pbn` if present; whether it was.
    pub fn remove(&mut self, pbn: Pbn) -> bool {
        let slot = (pbn.0 / self.stride) as usize;
        let Some(&i) = self.pos.get(slot) else {
            return false;
        };
        if i == NIL {
            return false;
        }
        let i = i as usize;
        self.pos[slot] = NIL;
        let last = self.heap.pop().expect("a member is in the heap");
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[(last.1 / self.stride) as usize] = i as u32;
            self.down(i);
            self.up(i);
        }
        true
    }

    /// Empties the set.
    pub fn clear(&mut self) {
        for &(_, b) in &self.heap {
            self.pos[(b / self.stride) as usize] = NIL;
        }
        self.heap.clear();
    }

    /// The blocks in the set, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = Pbn> + '_ {
        self.heap.iter().map(|&(_, b)| Pbn(b))
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[(self.heap[i].1 / self.stride) as usize] = i as u32;
        self.pos[(self.heap[j].1 / self.stride) as usize] = j as u32;
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if self.heap[i] >= self.heap[p] {
                break;
            }
            self.swap(i, p);
            i = p;
        }
    }

    fn down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.heap[l] < self.heap[m] {
                m = l;
            }
            if r < n && self.heap[r] < self.heap[m] {
                m = r;
            }
            if m == i {
                break;
            }
            self.swap(i, m);
            i = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_erased_first_ties_by_lowest_block_and_removal_from_the_middle() {
        let mut h = WearHeap::new(64, 1);
        for (b, e) in [(5, 3), (9, 1), (2, 1), (7, 0), (30, 3), (11, 2)] {
            h.push(Pbn(b), e);
        }
        assert_eq!(h.peek(), Some((Pbn(7), 0)));
        assert!(h.remove(Pbn(9)));
        assert!(!h.remove(Pbn(9)));
        assert!(!h.contains(Pbn(9)));
        let order: Vec<u32> = std::iter::from_fn(|| h.pop()).map(|b| b.0).collect();
        assert_eq!(order, [7, 2, 11, 5, 30]);
        assert!(h.is_empty());
    }

    #[test]
    fn free_blocks_fifo_or_least_erased() {
        let mut f = FreeBlocks::new(8, 1, false);
        let mut w = FreeBlocks::new(8, 1, true);
        for (b, e) in [(3, 5), (1, 2), (6, 2)] {
            f.push(Pbn(b), e);
            w.push(Pbn(b), e);
        }
        assert_eq!(f.iter().collect::<Vec<_>>(), [Pbn(3), Pbn(1), Pbn(6)]);
        assert_eq!(w.iter().count(), 3);
        let order = |p: &mut FreeBlocks| std::iter::from_fn(|| p.pop()).collect::<Vec<_>>();
        assert_eq!(order(&mut f), [Pbn(3), Pbn(1), Pbn(6)]);
        assert_eq!(order(&mut w), [Pbn(1), Pbn(6), Pbn(3)]);
    }

    #[test]
    fn a_strided_heap_holds_one_die_and_matches_a_sort() {
        // Die 1 of 4: blocks 1, 5, 9, ...
        let mut h = WearHeap::new(400, 4);
        let mut rng = crate::rng::SplitMix64::new(1);
        let mut want = Vec::new();
        for b in (1..400).step_by(4) {
            let e = rng.below(10) as u32;
            h.push(Pbn(b), e);
            want.push((e, b));
        }
        for b in (1..400).step_by(12) {
            assert!(h.remove(Pbn(b)));
            want.retain(|&(_, x)| x != b);
        }
        want.sort();
        let got: Vec<(u32, u32)> = std::iter::from_fn(|| {
            let (b, e) = h.peek()?;
            h.pop();
            Some((e, b.0))
        })
        .collect();
        assert_eq!(got, want);
    }
}
