//! GC victim selection for the page-mapped schemes (`page`, `dac`, `dftl`, `tpm`).
//!
//! [`GreedyIndex`]: finds the block with the fewest valid pages in O(log64 pages per
//! block + log64 blocks), with ties broken by the lowest block number, so greedy GC never
//! scans every block.
//!
//! One hierarchical bitset per valid count (0..=pages_per_block), all in one flat array;
//! a block is in at most one of them, and a small bitset over the valid counts says
//! which are not empty. Memory: about `(pages_per_block + 1) * blocks / 8` bytes (about
//! 33 MiB for a 1 TiB device with 4 KiB pages and 128 pages per block).
//!
//! [`Victims`]: the sealed blocks of a scheme and its victim policy ([`GcPolicy`], the
//! `gc_policy` option). Sources and the choices they leave open:
//! - `greedy` (default): fewest valid pages, ties by the lowest block number
//!   ([`GreedyIndex`]). O(log64 pages per block + log64 blocks) per collection.
//! - `cost_benefit`: the sealed block with the highest benefit/cost
//!   `(1 - u) * age / (1 + u)` (Rosenblum and Ousterhout, "The design and
//!   implementation of a log-structured file system", ACM TOCS 10(1), 1992; the
//!   same age-weighted rule Kawaguchi et al., USENIX 1995, use for flash with cost
//!   `2u`). `u` is the block's valid fraction. Open in the paper: the clock and the age.
//!   Here time counts sealed blocks (one tick per block sealed, host or GC), and a
//!   block's age is the ticks since it was sealed (LFS takes the newest modification
//!   time of the segment's data, which GC copies keep; that would need a time stamp per
//!   page, and a sequentially written block's newest data is as old as its sealing).
//!   Ties: the older block. Selection: the score changes with time, so no static order
//!   holds it, but within one valid count the oldest block scores best; one bitset per
//!   valid count over seal ranks (ranks renumbered in seal order when `2 * blocks` are
//!   used up, at most once per `blocks` seals) finds those, so a collection costs
//!   O(pages per block * log64 blocks) and an invalidation O(log64 blocks), with twice
//!   the greedy index's memory.
//! - `d_choices`: `gc_d` sealed blocks drawn uniformly with replacement by the run's
//!   seeded generator (SplitMix64, seeded from the run's seed), the one with the fewest
//!   valid pages (ties: the first drawn). O(d) per collection.
//! - `fifo`: the block sealed longest ago, whatever its valid pages (the log-structured
//!   "cyclic" cleaner of Desnoyers' model). O(1).
//! - `random`: one sealed block drawn uniformly. O(1).
//! - `windowed_greedy`: the fewest valid pages among the `gc_window` blocks sealed
//!   longest ago (ties: the older). O(w) per collection.
//!
//! Every policy but greedy may pick a fully valid block: its round copies a whole block
//! and frees one, so the free pool does not shrink and GC goes on to the next victim
//! (the models count such rounds too). [`Victims::stuck`] tells the schemes when no
//! sealed block has an invalid page, which their geometry rules exclude. The seal order
//! (for `fifo`, `windowed_greedy`, `cost_benefit`) is kept in an intrusive list, and the
//! sealed set for the random draws in a dense array: O(1) per seal, invalidation and
//! removal, nothing allocated after construction; with `greedy` neither is kept.
//! After a power loss the seal order is lost: recovery seals blocks in block-number
//! order.

use crate::bitsets::Bitsets;
use crate::units::Pbn;

const NOT_IN: u16 = u16::MAX;

/// The broken invariant of a decrement of a block without valid pages.
#[cold]
#[inline(never)]
fn no_valid_page(pbn: Pbn) -> ! {
    panic!("{pbn:?} has no valid page to lose")
}

/// Candidate victim blocks keyed by valid-page count.
#[derive(Clone, Debug)]
pub struct GreedyIndex {
    /// Set `v`: the blocks with `v` valid pages.
    buckets: Bitsets,
    sizes: Vec<u32>,
    /// The valid counts whose bucket is not empty (one set), so the fewest is found
    /// without a walk of the sizes.
    nonempty: Bitsets,
    member: Vec<u16>,
}

impl GreedyIndex {
    /// An empty index for `blocks` blocks of `pages_per_block` pages.
    pub fn new(blocks: u32, pages_per_block: u32) -> Self {
        assert!(pages_per_block < NOT_IN as u32);
        GreedyIndex {
            buckets: Bitsets::new(pages_per_block as usize + 1, blocks),
            sizes: vec![0; pages_per_block as usize + 1],
            nonempty: Bitsets::new(1, pages_per_block + 1),
            member: vec![NOT_IN; blocks as usize],
        }
    }

    #[inline]
    fn add(&mut self, pbn: Pbn, v: usize) {
        self.buckets.insert(v, pbn.0);
        self.sizes[v] += 1;
        if self.sizes[v] == 1 {
            self.nonempty.insert(0, v as u32);
        }
    }

    #[inline]
    fn take(&mut self, pbn: Pbn, v: usize) {
        self.buckets.remove(v, pbn.0);
        self.sizes[v] -= 1;
        if self.sizes[v] == 0 {
            self.nonempty.remove(0, v as u32);
        }
    }

    /// Adds a block with `valid` valid pages. Panics if it is already in.
    pub fn insert(&mut self, pbn: Pbn, valid: u32) {
        assert_eq!(self.member[pbn.idx()], NOT_IN, "{pbn:?} already indexed");
        assert!(
            (valid as usize) < self.sizes.len(),
            "{pbn:?}: {valid} valid pages"
        );
        self.member[pbn.idx()] = valid as u16;
        self.add(pbn, valid as usize);
    }

    /// Removes a block if present.
    pub fn remove(&mut self, pbn: Pbn) {
        let v = self.member[pbn.idx()];
        if v != NOT_IN {
            self.take(pbn, v as usize);
            self.member[pbn.idx()] = NOT_IN;
        }
    }

    /// Whether a block is indexed.
    pub fn contains(&self, pbn: Pbn) -> bool {
        self.member[pbn.idx()] != NOT_IN
    }

    /// One of the block's pages became invalid; no-op if the block is not indexed.
    ///
    /// The block's bit moves between the bottom words of two adjacent sets (the same
    /// word index in both). In the usual case neither word empties or fills, no bucket
    /// empties or fills, and that is the whole update; the rest is
    /// `decrement_rest`.
    #[inline]
    pub fn decrement(&mut self, pbn: Pbn) {
        let v = self.member[pbn.idx()];
        if v == NOT_IN {
            return;
        }
        if v == 0 {
            no_valid_page(pbn);
        }
        let v = v as usize;
        self.member[pbn.idx()] = (v - 1) as u16;
        let (w, bit) = (pbn.idx() / 64, 1u64 << (pbn.0 % 64));
        let stride = self.buckets.stride;
        let (from, to) = (v * stride + w, (v - 1) * stride + w);
        let words = &mut self.buckets.words;
        words[from] &= !bit;
        let emptied = words[from] == 0;
        let filled = words[to] == 0;
        words[to] |= bit;
        self.sizes[v] -= 1;
        self.sizes[v - 1] += 1;
        if emptied | filled | (self.sizes[v] == 0) | (self.sizes[v - 1] == 1) {
            self.decrement_rest(v, w, emptied, filled);
        }
    }

    /// `k` of the block's pages became invalid: where `k` calls of
    /// [`GreedyIndex::decrement`] leave it (the sets are sets, so the path does not
    /// matter), in one move; no-op if the block is not indexed. Panics if the block
    /// has fewer than `k` valid pages.
    pub fn decrement_by(&mut self, pbn: Pbn, k: u32) {
        let v = self.member[pbn.idx()];
        if v == NOT_IN || k == 0 {
            return;
        }
        if u32::from(v) < k {
            no_valid_page(pbn);
        }
        self.take(pbn, v as usize);
        let to = v - k as u16;
        self.member[pbn.idx()] = to;
        self.add(pbn, to as usize);
    }

    /// Fetches the entry of `pbn` that [`GreedyIndex::decrement`] reads first (which
    /// set the block is in) into the cache: a hint, no state changes; a block past the
    /// end is ignored. [`GreedyIndex::prefetch_words`] is the next step.
    #[inline]
    pub fn prefetch_member(&self, pbn: Pbn) {
        if let Some(m) = self.member.get(pbn.idx()) {
            crate::prefetch::read(m);
        }
    }

    /// Fetches the two bottom words a [`GreedyIndex::decrement`] of `pbn` would update
    /// now (from the block's set number, which should be cached by then:
    /// [`GreedyIndex::prefetch_member`]). A hint: no state changes, and a block that
    /// is not indexed, or past the end, is ignored.
    #[inline]
    pub fn prefetch_words(&self, pbn: Pbn) {
        let Some(&v) = self.member.get(pbn.idx()) else {
            return;
        };
        if v == NOT_IN || v == 0 {
            return;
        }
        let stride = self.buckets.stride;
        let from = v as usize * stride + pbn.idx() / 64;
        let words = &self.buckets.words;
        if let Some(w) = words.get(from) {
            crate::prefetch::read(w);
        }
        if let Some(w) = words.get(from - stride) {
            crate::prefetch::read(w);
        }
    }

    /// The rest of [`GreedyIndex::decrement`] from set `v` to `v - 1` at bottom word
    /// `w`: the levels above a bottom word that emptied or filled, and the non-empty
    /// set.
    #[cold]
    #[inline(never)]
    fn decrement_rest(&mut self, v: usize, w: usize, emptied: bool, filled: bool) {
        if emptied {
            self.buckets.remove_above(v, w);
        }
        if filled {
            self.buckets.insert_above(v - 1, w);
        }
        if self.sizes[v] == 0 {
            self.nonempty.remove(0, v as u32);
        }
        if self.sizes[v - 1] == 1 {
            self.nonempty.insert(0, (v - 1) as u32);
        }
    }

    /// The block with the fewest valid pages (lowest number on ties) and its count.
    #[inline]
    pub fn min(&self) -> Option<(Pbn, u32)> {
        let v = self.nonempty.first(0)? as usize;
        let b = self
            .buckets
            .first(v)
            .expect("the non-empty set says non-empty");
        Some((Pbn(b), v as u32))
    }

    /// Every indexed block with its valid-page count, by fewest valid pages first and
    /// the lowest block number on ties (the order greedy ranks them in); a lazy walk, so
    /// a caller that stops at the first block it accepts pays for the buckets it saw.
    pub fn ascending(&self) -> impl Iterator<Item = (Pbn, u32)> + '_ {
        self.nonempty
            .iter(0)
            .flat_map(move |v| self.buckets.iter(v as usize).map(move |b| (Pbn(b), v)))
    }

    /// Removes and returns [`GreedyIndex::min`].
    pub fn pop_min(&mut self) -> Option<(Pbn, u32)> {
        let (b, v) = self.min()?;
        self.remove(b);
        Some((b, v))
    }

    /// Memory used, in bytes.
    pub fn bytes(&self) -> u64 {
        self.buckets.bytes()
            + self.nonempty.bytes()
            + (self.member.len() * 2 + self.sizes.len() * 4) as u64
    }
}

/// A GC victim policy (the `gc_policy` option of `page`, `dac`, `dftl` and `tpm`).
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
pub enum GcPolicy {
    /// Fewest valid pages.
    #[default]
    Greedy,
    /// Highest (1-u)*age/(1+u) (Rosenblum and Ousterhout 1992).
    CostBenefit,
    /// Fewest valid pages among gc_d random sealed blocks.
    DChoices,
    /// Oldest sealed block.
    Fifo,
    /// A random sealed block.
    Random,
    /// Fewest valid pages among the gc_window oldest sealed blocks.
    WindowedGreedy,
}

impl GcPolicy {
    /// Every policy, in declaration order (for tests and the swarm).
    pub const ALL: [GcPolicy; 6] = [
        GcPolicy::Greedy,
        GcPolicy::CostBenefit,
        GcPolicy::DChoices,
        GcPolicy::Fifo,
        GcPolicy::Random,
        GcPolicy::WindowedGreedy,
    ];
}

/// Where a page-mapped scheme writes its GC copies (the `gc_frontier` option of `page`;
/// issue 23 item 2, hot/cold separation by write origin).
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
pub enum GcFrontier {
    /// GC copies and host writes share one open block (the papers' model).
    #[default]
    Shared,
    /// GC copies go to an open block of their own: data that survived a collection
    /// (cold) is kept apart from fresh host writes (hot).
    Separate,
}

impl GcFrontier {
    /// Both values, in declaration order (for tests and the swarm).
    pub const ALL: [GcFrontier; 2] = [GcFrontier::Shared, GcFrontier::Separate];
}

/// Default of the `gc_d` option.
pub const DEFAULT_D: u32 = 8;
/// Default of the `gc_window` option.
pub const DEFAULT_WINDOW: u32 = 16;

/// A victim policy with its parameters, as a scheme's options give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VictimPolicy {
    /// The policy.
    pub policy: GcPolicy,
    /// Blocks drawn by `d_choices`.
    pub d: u32,
    /// Oldest blocks considered by `windowed_greedy`.
    pub window: u32,
}

impl Default for VictimPolicy {
    fn default() -> Self {
        VictimPolicy {
            policy: GcPolicy::Greedy,
            d: DEFAULT_D,
            window: DEFAULT_WINDOW,
        }
    }
}

const NIL: u32 = u32::MAX;

/// The sealed blocks of a page-mapped scheme, and the victim its policy picks (module
/// docs).
#[derive(Clone, Debug)]
pub struct Victims {
    greedy: GreedyIndex,
    pol: VictimPolicy,
    ppb: u32,
    rng: crate::rng::SplitMix64,
    /// Whether the seal-order list and the dense array are kept (not for greedy).
    ordered: bool,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    sealed_at: Vec<u64>,
    clock: u64,
    dense: Vec<u32>,
    pos: Vec<u32>,
    /// `cost_benefit` only: per valid count, the sealed blocks by seal rank (module
    /// docs), so the oldest block of each count is found in O(log64 blocks).
    cb: CostBenefitIndex,
}

/// The seal ranks of `cost_benefit`: ranks grow with sealing, in `0..2 * blocks`; when
/// they run out, the sealed blocks are ranked again `0..sealed` in seal order (the list)
/// and the bitsets rebuilt, at most once per `blocks` seals.
#[derive(Clone, Debug, Default)]
struct CostBenefitIndex {
    /// Set `v`: the seal ranks of the blocks with `v` valid pages; no set unless the
    /// policy is `cost_benefit`.
    buckets: Bitsets,
    rank: Vec<u32>,
    at_rank: Vec<u32>,
    next_rank: u32,
}

impl CostBenefitIndex {
    /// Whether the policy is `cost_benefit` (the index is kept).
    #[inline]
    fn on(&self) -> bool {
        !self.buckets.words.is_empty()
    }
}

impl Victims {
    /// No sealed block yet, for `blocks` blocks of `pages_per_block` pages.
    pub fn new(blocks: u32, pages_per_block: u32, pol: VictimPolicy) -> Self {
        let ordered = pol.policy != GcPolicy::Greedy;
        let n = if ordered { blocks as usize } else { 0 };
        Victims {
            greedy: GreedyIndex::new(blocks, pages_per_block),
            pol: VictimPolicy {
                d: pol.d.max(1),
                window: pol.window.max(1),
                ..pol
            },
            ppb: pages_per_block,
            rng: crate::rng::SplitMix64::new(0),
            ordered,
            prev: vec![NIL; n],
            next: vec![NIL; n],
            head: NIL,
            tail: NIL,
            sealed_at: vec![0; n],
            clock: 0,
            dense: Vec::with_capacity(n),
            pos: vec![NIL; n],
            cb: if pol.policy == GcPolicy::CostBenefit {
                let ranks = (2 * blocks).max(64);
                CostBenefitIndex {
                    buckets: Bitsets::new(pages_per_block as usize + 1, ranks),
                    rank: vec![NIL; blocks as usize],
                    at_rank: vec![NIL; ranks as usize],
                    next_rank: 0,
                }
            } else {
                CostBenefitIndex::default()
            },
        }
    }

    /// Ranks the sealed blocks `0..sealed` again in seal order and rebuilds the
    /// cost-benefit bitsets (when the ranks run out).
    fn rerank(&mut self) {
        self.cb.buckets.clear();
        self.cb.at_rank.fill(NIL);
        let (mut c, mut r) = (self.head, 0u32);
        while c != NIL {
            self.cb.rank[c as usize] = r;
            self.cb.at_rank[r as usize] = c;
            let v = self.valid(c) as usize;
            self.cb.buckets.insert(v, r);
            r += 1;
            c = self.next[c as usize];
        }
        self.cb.next_rank = r;
    }

    /// Seeds the generator of `d_choices` and `random` (from the run's seed).
    pub fn seed(&mut self, seed: u64) {
        self.rng = crate::rng::SplitMix64::new(seed ^ 0x6763_5f70_6f6c_6963);
    }

    /// The policy in use.
    pub fn policy(&self) -> VictimPolicy {
        self.pol
    }

    /// Seals a block with `valid` valid pages. Panics if it is already in.
    pub fn insert(&mut self, pbn: Pbn, valid: u32) {
        self.greedy.insert(pbn, valid);
        if !self.ordered {
            return;
        }
        let b = pbn.0;
        self.clock += 1;
        self.sealed_at[b as usize] = self.clock;
        self.prev[b as usize] = self.tail;
        self.next[b as usize] = NIL;
        if self.tail == NIL {
            self.head = b;
        } else {
            self.next[self.tail as usize] = b;
        }
        self.tail = b;
        self.pos[b as usize] = self.dense.len() as u32;
        self.dense.push(b);
        if self.cb.on() {
            if self.cb.next_rank as usize == self.cb.at_rank.len() {
                // `b` is already last in the list: it gets the last rank.
                self.rerank();
            } else {
                let r = self.cb.next_rank;
                self.cb.next_rank += 1;
                self.cb.rank[b as usize] = r;
                self.cb.at_rank[r as usize] = b;
                self.cb.buckets.insert(valid as usize, r);
            }
        }
    }

    /// Removes a block if sealed.
    pub fn remove(&mut self, pbn: Pbn) {
        if !self.greedy.contains(pbn) {
            return;
        }
        let b = pbn.0 as usize;
        if self.cb.on() {
            let r = self.cb.rank[b];
            let v = self.valid(pbn.0) as usize;
            self.cb.buckets.remove(v, r);
            self.cb.at_rank[r as usize] = NIL;
            self.cb.rank[b] = NIL;
        }
        self.greedy.remove(pbn);
        if !self.ordered {
            return;
        }
        let (p, n) = (self.prev[b], self.next[b]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[b] = NIL;
        self.next[b] = NIL;
        let i = self.pos[b] as usize;
        let last = self
            .dense
            .pop()
            .expect("a sealed block is in the dense array");
        if last as usize != b {
            self.dense[i] = last;
            self.pos[last as usize] = i as u32;
        }
        self.pos[b] = NIL;
    }

    /// Whether a block is sealed.
    pub fn contains(&self, pbn: Pbn) -> bool {
        self.greedy.contains(pbn)
    }

    /// One of the block's pages became invalid; no-op if the block is not sealed.
    #[inline]
    pub fn decrement(&mut self, pbn: Pbn) {
        if self.cb.on() {
            self.cost_benefit_decrement(pbn);
        }
        self.greedy.decrement(pbn);
    }

    /// `k` of the block's pages became invalid: `k` calls of [`Victims::decrement`],
    /// in one move of the greedy index (the cost-benefit index, when kept, still takes
    /// them one at a time).
    pub fn decrement_by(&mut self, pbn: Pbn, k: u32) {
        if self.cb.on() {
            for _ in 0..k {
                self.decrement(pbn);
            }
        } else {
            self.greedy.decrement_by(pbn, k);
        }
    }

    /// [`GreedyIndex::prefetch_member`] of the greedy index (the one every policy
    /// keeps; the cost-benefit ranks are not fetched).
    #[inline]
    pub fn prefetch_member(&self, pbn: Pbn) {
        self.greedy.prefetch_member(pbn);
    }

    /// [`GreedyIndex::prefetch_words`] of the greedy index.
    #[inline]
    pub fn prefetch_words(&self, pbn: Pbn) {
        self.greedy.prefetch_words(pbn);
    }

    /// The cost-benefit index's part of [`Victims::decrement`].
    #[inline(never)]
    fn cost_benefit_decrement(&mut self, pbn: Pbn) {
        if self.greedy.contains(pbn) {
            let (v, r) = (self.valid(pbn.0) as usize, self.cb.rank[pbn.idx()]);
            if v > 0 {
                self.cb.buckets.remove(v, r);
                self.cb.buckets.insert(v - 1, r);
            }
        }
    }

    /// The sealed block with the fewest valid pages (lowest number on ties).
    pub fn min(&self) -> Option<(Pbn, u32)> {
        self.greedy.min()
    }

    /// Every sealed block with its valid-page count, fewest valid pages first, the
    /// lowest block number on ties ([`GreedyIndex::ascending`]), whatever the policy.
    pub fn ascending(&self) -> impl Iterator<Item = (Pbn, u32)> + '_ {
        self.greedy.ascending()
    }

    /// Whether every sealed block is fully valid (or none is sealed): GC cannot make
    /// progress.
    pub fn stuck(&self) -> bool {
        self.greedy.min().is_none_or(|(_, v)| v >= self.ppb)
    }

    fn valid(&self, b: u32) -> u32 {
        self.greedy.member[b as usize] as u32
    }

    /// The victim the policy picks now, with its valid pages, still sealed (`random` and
    /// `d_choices` draw from the generator at each call).
    pub fn choose(&mut self) -> Option<(Pbn, u32)> {
        if !self.ordered {
            return self.greedy.min();
        }
        if self.dense.is_empty() {
            return None;
        }
        let b = match self.pol.policy {
            GcPolicy::Greedy => return self.greedy.min(),
            GcPolicy::Fifo => self.head,
            GcPolicy::Random => self.dense[self.rng.below(self.dense.len() as u64) as usize],
            GcPolicy::DChoices => {
                let mut best = NIL;
                for _ in 0..self.pol.d {
                    let c = self.dense[self.rng.below(self.dense.len() as u64) as usize];
                    if best == NIL || self.valid(c) < self.valid(best) {
                        best = c;
                    }
                }
                best
            }
            GcPolicy::WindowedGreedy => {
                let (mut best, mut c) = (self.head, self.head);
                for _ in 0..self.pol.window {
                    if c == NIL {
                        break;
                    }
                    if self.valid(c) < self.valid(best) {
                        best = c;
                    }
                    c = self.next[c as usize];
                }
                best
            }
            GcPolicy::CostBenefit => {
                // The oldest block of each valid count is the best of its count (same
                // u, the greatest age); compare those, (ppb - v) * age / (ppb + v)
                // exactly in integers, ties to the older.
                let ppb = self.ppb as u128;
                let mut best: Option<(u128, u128, u64, u32)> = None;
                for v in 0..=self.ppb as usize {
                    let Some(r) = self.cb.buckets.first(v) else {
                        continue;
                    };
                    let c = self.cb.at_rank[r as usize];
                    let sealed = self.sealed_at[c as usize];
                    let num = (ppb - v as u128) * (self.clock - sealed) as u128;
                    let den = ppb + v as u128;
                    let better = best.is_none_or(|(bn, bd, bs, _)| {
                        let (l, rr) = (num * bd, bn * den);
                        l > rr || (l == rr && sealed < bs)
                    });
                    if better {
                        best = Some((num, den, sealed, c));
                    }
                }
                best.expect("a sealed block is in a bucket").3
            }
        };
        Some((Pbn(b), self.valid(b)))
    }

    /// Removes and returns [`Victims::choose`].
    pub fn pop(&mut self) -> Option<(Pbn, u32)> {
        let (b, v) = self.choose()?;
        self.remove(b);
        Some((b, v))
    }

    /// Memory used, in bytes.
    pub fn bytes(&self) -> u64 {
        self.greedy.bytes()
            + (self.prev.len() + self.next.len() + self.pos.len() + self.dense.capacity()) as u64
                * 4
            + self.sealed_at.len() as u64 * 8
            + (self.cb.rank.len() + self.cb.at_rank.len()) as u64 * 4
            + self.cb.buckets.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_hints_leave_the_index_as_it_was() {
        let mut g = GreedyIndex::new(300, 8);
        for b in 0..200 {
            g.insert(Pbn(b), b % 9);
        }
        let before: Vec<_> = g.ascending().collect();
        // Indexed blocks, one with no valid page, unindexed ones and past the end.
        for b in [0, 1, 9, 150, 199, 200, 299, 300, u32::MAX] {
            g.prefetch_member(Pbn(b));
            g.prefetch_words(Pbn(b));
        }
        assert_eq!(g.ascending().collect::<Vec<_>>(), before);
        assert_eq!(g.min(), Some((Pbn(0), 0)));
    }

    /// `decrement_by(b, k)` leaves the index where `k` decrements leave it, under every
    /// policy (cost-benefit's ranks included): the same order, the same minimum, and
    /// the same victims popped from then on (random policies drawing alike); a block
    /// not indexed is left out either way.
    #[test]
    fn decrement_by_k_equals_k_decrements() {
        const N: u32 = 300;
        const PPB: u32 = 64;
        let mut rng = crate::rng::SplitMix64::new(17);
        for policy in GcPolicy::ALL {
            let pol = VictimPolicy {
                policy,
                d: 3,
                window: 5,
            };
            let (mut a, mut b) = (Victims::new(N, PPB, pol), Victims::new(N, PPB, pol));
            a.seed(7);
            b.seed(7);
            let mut valid = vec![None::<u32>; N as usize];
            for step in 0..20_000 {
                let blk = rng.below(N as u64) as usize;
                let pbn = Pbn(blk as u32);
                match rng.below(8) {
                    0 if valid[blk].is_none() => {
                        let v = rng.below(PPB as u64 + 1) as u32;
                        a.insert(pbn, v);
                        b.insert(pbn, v);
                        valid[blk] = Some(v);
                    }
                    0 => {}
                    1 => {
                        assert_eq!(a.pop(), b.pop(), "{policy:?} step {step}");
                        valid.iter_mut().for_each(|v| *v = None);
                        for (p, _) in a.ascending() {
                            valid[p.idx()] = Some(a.valid(p.0));
                        }
                    }
                    _ => {
                        let have = valid[blk].unwrap_or(PPB);
                        let k = rng.below(have as u64 + 1) as u32;
                        a.decrement_by(pbn, k);
                        for _ in 0..k {
                            b.decrement(pbn);
                        }
                        if let Some(v) = valid[blk].as_mut() {
                            *v -= k;
                        }
                    }
                }
                assert_eq!(a.min(), b.min(), "{policy:?} step {step}");
                if step % 500 == 0 {
                    let (x, y): (Vec<_>, Vec<_>) =
                        (a.ascending().collect(), b.ascending().collect());
                    assert_eq!(x, y, "{policy:?} step {step}");
                }
            }
        }
    }

    #[test]
    fn ascending_walks_fewest_valid_first_then_lowest_block() {
        let mut g = GreedyIndex::new(300, 8);
        for (b, v) in [
            (250, 3),
            (7, 1),
            (64, 3),
            (130, 0),
            (5, 8),
            (63, 1),
            (200, 3),
        ] {
            g.insert(Pbn(b), v);
        }
        g.decrement(Pbn(250));
        let got: Vec<(u32, u32)> = g.ascending().map(|(b, v)| (b.0, v)).collect();
        assert_eq!(
            got,
            [
                (130, 0),
                (7, 1),
                (63, 1),
                (250, 2),
                (64, 3),
                (200, 3),
                (5, 8)
            ]
        );
        assert_eq!(g.ascending().next(), g.min());
        assert_eq!(GreedyIndex::new(10, 4).ascending().count(), 0);
    }

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

    /// A deterministic pseudo-random walk of insertions, invalidations and removals
    /// (out of 10 steps, `inserts` try an insertion and `decrements` an invalidation;
    /// the rest remove), compared with brute force after every step (`min`) and every
    /// 64 steps (the whole `ascending` walk).
    fn walk_against_brute_force(
        blocks: u32,
        ppb: u32,
        steps: usize,
        inserts: u64,
        decrements: u64,
    ) {
        let mut g = GreedyIndex::new(blocks, ppb);
        let mut valid = vec![None::<u32>; blocks as usize];
        let mut x: u64 = 12345;
        for step in 0..steps {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let b = ((x >> 33) % blocks as u64) as u32;
            let op = (x >> 20) % 10;
            match op {
                _ if op < inserts && valid[b as usize].is_none() => {
                    let v = ((x >> 40) % (ppb as u64 + 1)) as u32;
                    g.insert(Pbn(b), v);
                    valid[b as usize] = Some(v);
                }
                _ if op < inserts => {}
                _ if op < inserts + decrements => {
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
            let mut brute: Vec<(u32, u32)> = valid
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (v, i as u32)))
                .collect();
            brute.sort_unstable();
            assert_eq!(
                g.min(),
                brute.first().map(|&(v, i)| (Pbn(i), v)),
                "step {step}"
            );
            if step % 64 == 0 {
                let got: Vec<(u32, u32)> = g.ascending().map(|(b, v)| (v, b.0)).collect();
                assert_eq!(got, brute, "step {step}");
                g.buckets.check();
                g.nonempty.check();
            }
        }
    }

    #[test]
    fn matches_a_linear_scan() {
        walk_against_brute_force(300, 8, 20_000, 3, 3);
    }

    #[test]
    fn matches_a_linear_scan_when_invalidations_dominate() {
        // Blocks pile up in the low counts, and a block often moves into a word of a
        // non-empty bucket that held none of its blocks.
        walk_against_brute_force(300, 8, 20_000, 2, 7);
        walk_against_brute_force(5_000, 16, 6_000, 2, 7);
    }

    #[test]
    fn matches_a_linear_scan_with_three_levels_and_many_valid_counts() {
        // 5,000 blocks: a bucket's tree has three levels; 130 valid counts: the set of
        // non-empty counts spans three words.
        walk_against_brute_force(5_000, 129, 6_000, 3, 3);
    }

    /// Every policy against a brute-force model of the sealed set (seal order, valid
    /// counts) under a pseudo-random walk of seals, invalidations and removals.
    #[test]
    fn victims_match_brute_force() {
        const N: usize = 200;
        const PPB: u32 = 8;
        for policy in GcPolicy::ALL {
            let pol = VictimPolicy {
                policy,
                d: 3,
                window: 5,
            };
            let mut v = Victims::new(N as u32, PPB, pol);
            v.seed(42);
            // (seal tick, valid) per sealed block.
            let mut model: Vec<Option<(u64, u32)>> = vec![None; N];
            let mut clock = 0u64;
            let mut x: u64 = 99;
            for step in 0..20_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let b = ((x >> 33) % N as u64) as usize;
                match (x >> 20) % 4 {
                    0 if model[b].is_none() => {
                        let valid = ((x >> 40) % (PPB as u64 + 1)) as u32;
                        clock += 1;
                        v.insert(Pbn(b as u32), valid);
                        model[b] = Some((clock, valid));
                    }
                    1 | 2 => {
                        if let Some((_, valid)) = model[b].as_mut() {
                            if *valid > 0 {
                                v.decrement(Pbn(b as u32));
                                *valid -= 1;
                            }
                        }
                    }
                    _ => {
                        v.remove(Pbn(b as u32));
                        model[b] = None;
                    }
                }
                let mut sealed: Vec<(u64, u32, u32)> = model
                    .iter()
                    .enumerate()
                    .filter_map(|(i, m)| m.map(|(t, val)| (t, val, i as u32)))
                    .collect();
                sealed.sort();
                for (i, m) in model.iter().enumerate() {
                    assert_eq!(v.contains(Pbn(i as u32)), m.is_some());
                }
                if step % 7 != 0 {
                    continue;
                }
                let got = v.choose();
                if sealed.is_empty() {
                    assert_eq!(got, None);
                    continue;
                }
                let (g, gv) = got.unwrap();
                assert_eq!(model[g.idx()].map(|m| m.1), Some(gv), "{policy:?}");
                let oldest = |(t, val, i): &(u64, u32, u32)| (*val, *t, *i);
                let want = match policy {
                    GcPolicy::Greedy => sealed
                        .iter()
                        .map(|&(_, val, i)| (val, i))
                        .min()
                        .map(|(_, i)| i),
                    GcPolicy::Fifo => Some(sealed[0].2),
                    GcPolicy::WindowedGreedy => {
                        sealed.iter().take(5).min_by_key(|e| oldest(e)).map(|e| e.2)
                    }
                    GcPolicy::CostBenefit => {
                        let score = |&(t, val, _): &(u64, u32, u32)| {
                            (PPB - val) as f64 * (clock - t) as f64 / (PPB + val) as f64
                        };
                        let best = sealed.iter().map(score).fold(f64::MIN, f64::max);
                        sealed.iter().find(|e| score(e) == best).map(|e| e.2)
                    }
                    // Random draws: any sealed block; d-choices: no worse than a draw.
                    GcPolicy::Random | GcPolicy::DChoices => Some(g.0),
                };
                assert_eq!(Some(g.0), want, "{policy:?} at step {step}");
            }
        }
    }

    #[test]
    fn random_draws_are_seeded_and_spread() {
        let pol = VictimPolicy {
            policy: GcPolicy::Random,
            ..VictimPolicy::default()
        };
        let picks = |seed| {
            let mut v = Victims::new(64, 4, pol);
            v.seed(seed);
            for b in 0..64 {
                v.insert(Pbn(b), 2);
            }
            (0..200)
                .map(|_| v.choose().unwrap().0 .0)
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(1), picks(1));
        assert_ne!(picks(1), picks(2));
        let distinct: std::collections::BTreeSet<u32> = picks(1).into_iter().collect();
        assert!(distinct.len() > 40, "{}", distinct.len());
    }
}
