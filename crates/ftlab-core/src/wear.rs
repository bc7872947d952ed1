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
//! moved per check; the schemes say when they check. Where the moved data go is the
//! scheme's choice too; the built-in ones park it on the most-worn free block
//! ([`FreeBlocks::with_most_worn`]), so cold data rest on worn flash while the freed
//! cold block, least worn, is handed out next (sending it to the least-worn block
//! instead, as `page` first did, kept cold data circulating and could widen the spread).
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

/// The `wear_leveling` option of a scheme that offers dynamic levelling only: the same
/// values as [`WearLeveling`] but `static`, so listings, the swarm and the conformance
/// suite never pick a value the scheme refuses. (Every built-in scheme now offers
/// `static`; kept for schemes that cannot move data.)
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
///
/// A pool may also retire blocks ([`FreeBlocks::with_retirement`]): an erased block
/// handed back with `pe_limit` or more erases does not enter the pool but is kept by
/// its [`Retirement`], the one mechanism every scheme's `pe_limit` goes through.
#[derive(Clone, Debug)]
pub struct FreeBlocks {
    order: Order,
    retirement: Retirement,
}

#[derive(Clone, Debug)]
enum Order {
    /// First-in first-out.
    Fifo(std::collections::VecDeque<Pbn>),
    /// Least-erased first, ties by the lowest block number; under static levelling
    /// also most-erased first ([`FreeBlocks::with_most_worn`]), the same blocks.
    Worn(WearHeap, Option<WearHeap>),
}

impl FreeBlocks {
    /// An empty pool for the blocks `b < blocks` with `b % stride` equal to one value
    /// (stride 1: any block), least-erased first if `dynamic`. No block retires.
    pub fn new(blocks: u32, stride: u32, dynamic: bool) -> Self {
        let order = if dynamic {
            Order::Worn(WearHeap::new(blocks, stride), None)
        } else {
            Order::Fifo(std::collections::VecDeque::with_capacity(
                blocks.div_ceil(stride.max(1)) as usize,
            ))
        };
        FreeBlocks {
            order,
            retirement: Retirement::off(),
        }
    }

    /// The pool retires blocks as `retirement` says (see [`FreeBlocks::push`]).
    pub fn with_retirement(mut self, retirement: Retirement) -> Self {
        self.retirement = retirement;
        self
    }

    /// The pool can also hand out its most-erased block ([`FreeBlocks::pop_most_worn`]:
    /// static levelling parks cold data there). Only a least-erased-first pool
    /// (`dynamic`) can; a first-in first-out one is left as it is. Costs O(log n) more
    /// per push and pop (a second heap).
    pub fn with_most_worn(mut self) -> Self {
        if let Order::Worn(h, most @ None) = &mut self.order {
            let mut m = WearHeap::new_most_worn(h.pos.len() as u32 * h.stride, h.stride);
            for &(e, b) in &h.heap {
                m.push(Pbn(b), e);
            }
            *most = Some(m);
        }
        self
    }

    /// Free blocks.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.order {
            Order::Fifo(q) => q.len(),
            Order::Worn(h, _) => h.len(),
        }
    }

    /// Whether none is free.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds an erased block that has been erased `erases` times, unless it has reached
    /// the P/E limit: then it retires instead (and raises [`WornOut`] if the blocks
    /// left are too few; [`Retirement::erased`]).
    ///
    /// [`WornOut`]: crate::ftl::WornOut
    #[inline]
    pub fn push(&mut self, b: Pbn, erases: u32) {
        if self.retirement.erased(b, erases) {
            return;
        }
        match &mut self.order {
            Order::Fifo(q) => q.push_back(b),
            Order::Worn(h, most) => {
                h.push(b, erases);
                if let Some(m) = most {
                    m.push(b, erases);
                }
            }
        }
    }

    /// Takes the next block: the oldest freed, or the least erased. An empty pool
    /// after retirements is a worn-out device: raises [`WornOut`] then
    /// ([`Retirement::exhausted`]).
    ///
    /// [`WornOut`]: crate::ftl::WornOut
    #[inline]
    pub fn pop(&mut self) -> Option<Pbn> {
        let b = self.pop_if_any();
        if b.is_none() {
            self.retirement.exhausted();
        }
        b
    }

    /// [`FreeBlocks::pop`] for a scheme to which an empty pool is no failure (it has
    /// another source of blocks): never raises.
    #[inline]
    pub fn pop_if_any(&mut self) -> Option<Pbn> {
        match &mut self.order {
            Order::Fifo(q) => q.pop_front(),
            Order::Worn(h, most) => {
                let b = h.pop()?;
                if let Some(m) = most {
                    m.remove(b);
                }
                Some(b)
            }
        }
    }

    /// The next block [`FreeBlocks::pop`] would take and its erase count, if the pool
    /// is least-erased first (`None` under first-in first-out or if empty).
    pub fn peek_least_worn(&self) -> Option<(Pbn, u32)> {
        match &self.order {
            Order::Fifo(_) => None,
            Order::Worn(h, _) => h.peek(),
        }
    }

    /// Puts back a block taken by [`FreeBlocks::pop_most_worn`] that was not used (no
    /// retirement check: it was not erased since).
    pub fn unpop(&mut self, b: Pbn, erases: u32) {
        if let Order::Worn(h, most) = &mut self.order {
            h.push(b, erases);
            if let Some(m) = most {
                m.push(b, erases);
            }
        }
    }

    /// The most-erased free block (ties: the lowest number) and its erase count, taken
    /// out of the pool; `None` if the pool is empty or was not built
    /// [`FreeBlocks::with_most_worn`]. Never raises (the caller has another way on).
    pub fn pop_most_worn(&mut self) -> Option<(Pbn, u32)> {
        let Order::Worn(h, Some(m)) = &mut self.order else {
            return None;
        };
        let (b, e) = m.peek()?;
        m.remove(b);
        h.remove(b);
        Some((b, e))
    }

    /// Empties the pool and forgets the retired blocks (a recovery rebuilds both
    /// from the erase counts on flash by pushing every erased block again).
    pub fn clear(&mut self) {
        match &mut self.order {
            Order::Fifo(q) => q.clear(),
            Order::Worn(h, most) => {
                h.clear();
                if let Some(m) = most {
                    m.clear();
                }
            }
        }
        self.retirement.clear();
    }

    /// Takes block `b` out of the pool wherever it is; whether it was there. O(log n)
    /// least-erased first, O(n) first-in first-out (a scheme's recovery).
    pub fn remove(&mut self, b: Pbn) -> bool {
        match &mut self.order {
            Order::Fifo(q) => match q.iter().position(|&x| x == b) {
                Some(i) => {
                    q.remove(i);
                    true
                }
                None => false,
            },
            Order::Worn(h, most) => {
                if let Some(m) = most {
                    m.remove(b);
                }
                h.remove(b)
            }
        }
    }

    /// The free blocks (first-in first-out: oldest first; else in no particular
    /// order). Retired blocks are not among them.
    pub fn iter(&self) -> impl Iterator<Item = Pbn> + '_ {
        let (q, h) = match &self.order {
            Order::Fifo(q) => (Some(q.iter().copied()), None),
            Order::Worn(h, _) => (None, Some(h.iter())),
        };
        q.into_iter().flatten().chain(h.into_iter().flatten())
    }

    /// The pool's retirement (retired blocks, the limit).
    pub fn retirement(&self) -> &Retirement {
        &self.retirement
    }
}

/// Retirement of worn blocks (issue 23 item 4), shared by every scheme with a
/// `pe_limit` option: a block erased `pe_limit` times is never written again. The
/// scheme works on with fewer blocks while at least `min_blocks` (its geometry rule's
/// minimum) are left; past that, or when its free pool runs dry with blocks retired,
/// the device is worn out and [`Retirement::erased`] (or [`Retirement::exhausted`])
/// raises [`WornOut`] in the middle of the request. Retirement is derived from the
/// erase counts on flash, so a recovery that hands every erased block back (after
/// [`Retirement::clear`]) keeps retired blocks retired. Nothing is allocated after
/// construction (room for every block is reserved when the limit is on).
///
/// [`WornOut`]: crate::ftl::WornOut
#[derive(Clone, Debug, Default)]
pub struct Retirement {
    scheme: &'static str,
    pe_limit: u32,
    blocks: u32,
    min_blocks: u32,
    retired: Vec<Pbn>,
}

impl Retirement {
    /// No block ever retires.
    pub fn off() -> Self {
        Retirement::default()
    }

    /// Blocks of a device of `blocks` blocks retire after `pe_limit` erases (0: never);
    /// `scheme` (its id, for the message) needs at least `min_blocks` of them.
    pub fn new(scheme: &'static str, blocks: u32, pe_limit: u32, min_blocks: u32) -> Self {
        Retirement {
            scheme,
            pe_limit,
            blocks,
            min_blocks,
            retired: Vec::with_capacity(if pe_limit > 0 { blocks as usize } else { 0 }),
        }
    }

    /// The P/E limit (0: off).
    pub fn pe_limit(&self) -> u32 {
        self.pe_limit
    }

    /// Whether a block erased `erases` times is at the limit.
    #[inline]
    pub fn reached(&self, erases: u32) -> bool {
        self.pe_limit > 0 && erases >= self.pe_limit
    }

    /// A block was just erased (its `erases`th erase): whether it retires (the caller
    /// must then not reuse it). Raises [`WornOut`] if the blocks left are fewer than
    /// the scheme runs on.
    ///
    /// [`WornOut`]: crate::ftl::WornOut
    #[inline]
    pub fn erased(&mut self, b: Pbn, erases: u32) -> bool {
        if !self.reached(erases) {
            return false;
        }
        self.retired.push(b);
        let usable = self.blocks.saturating_sub(self.retired.len() as u32);
        if usable < self.min_blocks {
            self.worn_out(&format!(
                "{usable} left, the scheme needs {}",
                self.min_blocks
            ));
        }
        true
    }

    /// A block the scheme cannot replace (its address is fixed: an in-place data
    /// block, a snapshot area) was just erased for the `erases`th time: at the limit the
    /// device is worn out, and this raises [`WornOut`] naming `what`.
    ///
    /// [`WornOut`]: crate::ftl::WornOut
    #[inline]
    pub fn fixed(&self, b: Pbn, erases: u32, what: &str) {
        if self.reached(erases) {
            self.worn_out(&format!(
                "{what} {b:?} is at the limit and cannot be replaced"
            ));
        }
    }

    /// The scheme found no free block where it needs one (its pool is empty, or a
    /// collection finds no victim that fits): with blocks retired that is the end of
    /// the device's life (retirements ate the reserve that the geometry rule counts on
    /// between retirements), and this raises [`WornOut`]; otherwise it returns (the
    /// caller's own check reports the broken invariant).
    ///
    /// [`WornOut`]: crate::ftl::WornOut
    #[inline]
    pub fn exhausted(&self) {
        if !self.retired.is_empty() {
            self.worn_out("no free block left");
        }
    }

    fn worn_out(&self, why: &str) -> ! {
        std::panic::panic_any(crate::ftl::WornOut(format!(
            "{}: device worn out: {} of {} blocks retired at pe_limit {}, {why}",
            self.scheme,
            self.retired.len(),
            self.blocks,
            self.pe_limit,
        )))
    }

    /// Forgets the retired blocks (before a recovery derives them again).
    pub fn clear(&mut self) {
        self.retired.clear();
    }

    /// The retired blocks, in order of retirement.
    pub fn retired(&self) -> &[Pbn] {
        &self.retired
    }

    /// Reports `retired_blocks` (only with a limit, so reports without one keep their
    /// keys).
    pub fn report(&self, extra: &mut crate::stats::Sink) {
        if self.pe_limit > 0 {
            extra.gauge("retired_blocks", "blocks", self.retired.len() as f64);
        }
    }
}

/// Static wear levelling's bookkeeping (`wear_leveling = "static"`), for a scheme that
/// moves the least-erased sealed block's data when the spread passes the threshold (the
/// module docs; `page` keeps its own copy, per die). The scheme tells it when a block
/// is sealed, leaves the sealed set (collected or moved) and is erased, asks
/// [`StaticLeveling::candidate`] after each collection, and reports
/// [`StaticLeveling::moved`] blocks. O(log blocks) per seal, unseal and candidate;
/// nothing per page; nothing allocated after construction.
#[derive(Clone, Debug)]
pub struct StaticLeveling {
    sealed: WearHeap,
    max_erase: u32,
    threshold: u32,
    migrations: u64,
    pages: u64,
}

impl StaticLeveling {
    /// For a device of `blocks` blocks, moving data past a spread of `threshold` (at
    /// least 1).
    pub fn new(blocks: u32, threshold: u32) -> Self {
        StaticLeveling {
            sealed: WearHeap::new(blocks, 1),
            max_erase: 0,
            threshold: threshold.max(1),
            migrations: 0,
            pages: 0,
        }
    }

    /// Block `b`, erased `erases` times, was sealed (a candidate to move).
    #[inline]
    pub fn sealed(&mut self, b: Pbn, erases: u32) {
        self.sealed.push(b, erases);
    }

    /// Block `b` is no longer sealed (a victim, or moved).
    #[inline]
    pub fn unsealed(&mut self, b: Pbn) {
        self.sealed.remove(b);
    }

    /// A block was erased for the `erases`th time.
    #[inline]
    pub fn erased(&mut self, erases: u32) {
        self.max_erase = self.max_erase.max(erases);
    }

    /// The sealed block whose data should move now: the least-erased one, if the
    /// most-erased block has more than `threshold` erases more.
    #[inline]
    pub fn candidate(&self) -> Option<Pbn> {
        let (cold, erases) = self.sealed.peek()?;
        (self.max_erase - erases > self.threshold).then_some(cold)
    }

    /// The spread past which data moves.
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// A block's `pages` valid pages moved (counted for the report).
    pub fn moved(&mut self, pages: u64) {
        self.migrations += 1;
        self.pages += pages;
    }

    /// Recovery: forgets the sealed set and takes the most erases from the flash's
    /// counts; the scheme then reports its sealed blocks again.
    pub fn recover(&mut self, erase_counts: &[u32]) {
        self.sealed.clear();
        self.max_erase = erase_counts.iter().copied().max().unwrap_or(0);
    }

    /// Reports `wl_migrations` and `wl_pages_copied`.
    pub fn report(&self, extra: &mut crate::stats::Sink) {
        extra.counter("wl_migrations", "blocks", self.migrations as f64);
        extra.counter("wl_pages_copied", "pages", self.pages as f64);
    }

    /// Adds `other`'s moves to these (a scheme reporting two regions as one).
    pub fn add(&mut self, other: &StaticLeveling) {
        self.migrations += other.migrations;
        self.pages += other.pages;
    }

    /// Zeroes the reported counters.
    pub fn reset_stats(&mut self) {
        self.migrations = 0;
        self.pages = 0;
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
    /// Most-erased first: keys are stored as `u32::MAX - erases`.
    most: bool,
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
            most: false,
        }
    }

    /// [`WearHeap::new`], but the most-erased block first (ties still by the lowest
    /// block number).
    pub fn new_most_worn(blocks: u32, stride: u32) -> Self {
        WearHeap {
            most: true,
            ..WearHeap::new(blocks, stride)
        }
    }

    #[inline]
    fn key(&self, erases: u32) -> u32 {
        if self.most {
            u32::MAX - erases
        } else {
            erases
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
        self.heap.push((self.key(erases), pbn.0));
        let i = self.heap.len() - 1;
        self.pos[slot] = i as u32;
        self.up(i);
    }

    /// The least-erased block (most-erased under [`WearHeap::new_most_worn`]; lowest
    /// number on ties) and its erase count.
    pub fn peek(&self) -> Option<(Pbn, u32)> {
        self.heap.first().map(|&(e, b)| (Pbn(b), self.key(e)))
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
    fn a_pool_with_most_worn_hands_out_either_end_and_keeps_both_heaps_in_step() {
        let mut w = FreeBlocks::new(16, 1, true).with_most_worn();
        for (b, e) in [(3, 5), (1, 2), (6, 2), (9, 5), (4, 0)] {
            w.push(Pbn(b), e);
        }
        assert_eq!(
            w.pop_most_worn(),
            Some((Pbn(3), 5)),
            "ties by the lowest number"
        );
        assert_eq!(w.pop(), Some(Pbn(4)));
        assert_eq!(w.pop_most_worn(), Some((Pbn(9), 5)));
        assert_eq!(w.len(), 2);
        w.push(Pbn(12), 7);
        assert_eq!(w.pop_most_worn(), Some((Pbn(12), 7)));
        assert_eq!(w.pop(), Some(Pbn(1)));
        assert_eq!(w.pop_most_worn(), Some((Pbn(6), 2)));
        assert_eq!((w.pop(), w.pop_most_worn()), (None, None));
        // A first-in first-out pool, or a dynamic one not built for it, has no most-worn.
        let mut f = FreeBlocks::new(4, 1, false).with_most_worn();
        f.push(Pbn(1), 3);
        assert_eq!(f.pop_most_worn(), None);
        let mut d = FreeBlocks::new(4, 1, true);
        d.push(Pbn(1), 3);
        assert_eq!(d.pop_most_worn(), None);
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn a_pool_retires_blocks_at_the_limit_and_wears_out_below_the_minimum() {
        let worn = |f: &mut dyn FnMut()| {
            let e =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("worn out");
            e.downcast_ref::<crate::ftl::WornOut>()
                .expect("a WornOut, not another panic")
                .0
                .clone()
        };
        let mut p = FreeBlocks::new(6, 1, false).with_retirement(Retirement::new("t", 6, 3, 4));
        (0..6).for_each(|b| p.push(Pbn(b), 0));
        assert_eq!(p.len(), 6);
        (0..4).for_each(|_| {
            let _ = p.pop();
        });
        p.push(Pbn(0), 2);
        p.push(Pbn(1), 3); // retires: 5 usable
        p.push(Pbn(2), 4); // retires: 4 usable, still enough
        assert_eq!(p.retirement().retired(), [Pbn(1), Pbn(2)]);
        assert_eq!(p.iter().collect::<Vec<_>>(), [Pbn(4), Pbn(5), Pbn(0)]);
        let msg = worn(&mut || p.push(Pbn(3), 3));
        assert!(msg.contains("t: device worn out: 3 of 6 blocks retired at pe_limit 3"));
        assert!(msg.contains("3 left, the scheme needs 4"), "{msg}");
        // Recovery forgets the retired blocks and derives them again.
        p.clear();
        assert!(p.retirement().retired().is_empty() && p.is_empty());
        p.push(Pbn(1), 3);
        assert_eq!(p.retirement().retired(), [Pbn(1)]);
        // An empty pool after retirements is worn out; without any, it is not.
        let msg = worn(&mut || {
            let _ = p.pop();
        });
        assert!(msg.contains("no free block left"), "{msg}");
        let mut q = FreeBlocks::new(4, 1, true).with_retirement(Retirement::new("t", 4, 3, 1));
        assert_eq!(q.pop(), None);
        // Without a limit nothing retires.
        let mut r = FreeBlocks::new(4, 1, false);
        r.push(Pbn(0), u32::MAX);
        assert_eq!(r.len(), 1);
        let mut sink = crate::stats::Sink::default();
        r.retirement().report(&mut sink);
        assert_eq!(sink, crate::stats::Sink::default());
    }

    #[test]
    fn static_leveling_names_the_coldest_sealed_block_past_the_threshold() {
        let mut s = StaticLeveling::new(16, 3);
        s.sealed(Pbn(4), 2);
        s.sealed(Pbn(9), 1);
        s.erased(4);
        assert_eq!(s.candidate(), None, "spread 3 is not past 3");
        s.erased(5);
        assert_eq!(s.candidate(), Some(Pbn(9)));
        s.unsealed(Pbn(9));
        assert_eq!(s.candidate(), None, "spread 3 to block 4");
        s.moved(7);
        let mut sink = crate::stats::Sink::default();
        s.report(&mut sink);
        s.recover(&[0, 9, 3]);
        s.sealed(Pbn(4), 2);
        assert_eq!(s.candidate(), Some(Pbn(4)));
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
