//! `clash`: C-lash, the hierarchical dual write cache of c-lash.txt §3 (Boukhobza and
//! Olivier), as CACH-FTL uses it above itself (cach-ftl.txt §4.1).
//!
//! The cache has a p-space of pages from any logical block and a b-space of whole blocks
//! (page and block the size of the flash's). A write hit updates the page in place in
//! either space; a write miss goes to the p-space. A full p-space evicts the largest
//! group of pages of one logical block into the b-space: into a free b-space block, or
//! by switching places with a b-space block that holds fewer valid pages (the block's
//! pages go back to the p-space, no flash operation), or else after the least recently
//! used b-space block is written to flash. A block written to flash is completed first by
//! a late merge (its missing valid pages are read through the FTL), so the FTL gets the
//! whole block as one group. Read hits are served from either space.
//!
//! Choices the paper leaves open, as options or documented defaults:
//! - `p_space_pages` (128) and `b_space_blocks` (2): "The chosen C-lash configuration has
//!   2 blocks (128KB each) and 128 pages" (c-lash.txt §4.4). cach-ftl.txt §5.1 uses 6
//!   blocks + 128 pages.
//! - `read_miss_insert` (false): §3.1 says "In any case, a read miss does generate a copy
//!   from the flash memory to the cache", where "In any case" after a hit/miss
//!   alternative reads like a lost "not"; cach-ftl.txt §4.1, describing the same cache,
//!   only forwards a read miss to the FTL ("If the data are not available, the read
//!   request is forwarded to the underlying FTL"). SCHEMES.md asks for "default off".
//!   With `true`, a read miss is inserted clean into the p-space like a write miss
//!   (evicting if needed); clean pages are never written back on their own.
//! - `merge` (`late`): "We restrict the scope of the presented study to the use of a late
//!   merge scheme" (§3.2). `early` reads the block's missing pages when a group enters the
//!   b-space; `none` writes only the dirty cached pages (no merge reads), which is what a
//!   page-mapped FTL below needs, and what CACH-FTL expects: its Function 2 reads the
//!   block's missing pages itself, and with whole-block flushes its redirection
//!   threshold would never send a group to its page-mapped region (cach-ftl.txt §4.2.2).
//! - `evict_with_p_space` (false): the paper writes "an entire victim block from the
//!   b-space"; pages of the same logical block that sit in the p-space stay there (their
//!   flash copy is stale, so the late merge does not read them). `true` takes them along.
//! - A p-space group whose logical block already has a b-space block joins that block
//!   (the paper never has two b-space blocks for one logical block; it does not say what
//!   happens when a write miss puts a page of a b-space block into the p-space).
//! - Ties: the largest p-space group is the one that reached its size first; the switch
//!   partner is the b-space block with the fewest valid pages, ties to the least recently
//!   used; LRU recency is refreshed by insertion and by read and write hits.
//! - The paper invalidates the flash copy when a page enters the cache; here the FTL
//!   keeps it until the flush supersedes it (the FTL is a separate layer in ftlab).
//! - A b-space block with no dirty page is dropped without a flash write. A host
//!   flush-cache writes every b-space block (least recently used first, each with the
//!   p-space pages of its logical block), then the p-space groups by ascending logical
//!   block, each completed by the merge policy, then passes the flush to the FTL.
//! - Merge reads go through [`Backend::read`], so the flash counts them under the host
//!   cause; the buffer counts them as `padding_reads`.
//!
//! Report keys (`buffer.extra`): `moves_to_free_block`, `joins`, `switches` (p-space
//! evictions by outcome), `b_evictions` (b-space blocks written to flash),
//! `clean_drops`, `late_merge_reads`, `early_merge_reads`, and `flush_group_pages_*`,
//! the sizes of the groups handed to the FTL by powers of two (`_1`, `_2`, `_3_4`, ...,
//! up to the pages per block).

use ftlab_core::buffer::{Backend, Buffer, BufferStats};
use ftlab_core::geometry::Geometry;
use ftlab_core::lru::{Lists, Lru};
use ftlab_core::options::{bad, JsonSchema, SchemeError};
use ftlab_core::stats::{Pow2Histogram, POW2_BUCKETS};
use ftlab_core::u32map::U32Map;
use ftlab_core::{Lpn, PageTag, PageWrite};
use serde::{Deserialize, Serialize};

/// Scheme id in the registry and in errors.
pub const ID: &str = "clash";

/// Most pages either space may hold (2^24: the tables are sized at construction).
const LIMIT: u32 = 1 << 24;

/// How a block written to flash is completed (`merge` option, c-lash.txt §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Merge {
    /// Read the block's missing pages through the FTL when it is evicted to flash
    /// (c-lash.txt §3.2: "a late merge scheme").
    Late,
    /// Read the block's missing pages when a group enters the b-space.
    Early,
    /// No merge reads: write only the cached pages (for a page-mapped FTL or CACH-FTL
    /// below, cach-ftl.txt §4.2.2).
    None,
}

/// Options of the `clash` buffer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ClashOptions {
    /// Pages in the p-space (c-lash.txt §4.4: 128).
    #[schemars(range(min = 1, max = LIMIT))]
    pub p_space_pages: u32,
    /// Blocks in the b-space (c-lash.txt §4.4: 2; cach-ftl.txt §5.1: 6).
    #[schemars(range(min = 1))]
    pub b_space_blocks: u32,
    /// Complete an evicted block by reading its missing pages: late (at eviction,
    /// c-lash.txt §3.2), early (when a group enters the b-space) or none.
    pub merge: Merge,
    /// Insert read misses into the p-space (c-lash.txt §3.1 is ambiguous).
    pub read_miss_insert: bool,
    /// An evicted b-space block takes the p-space pages of its logical block along.
    pub evict_with_p_space: bool,
}

impl Default for ClashOptions {
    fn default() -> Self {
        ClashOptions {
            p_space_pages: 128,
            b_space_blocks: 2,
            merge: Merge::Late,
            read_miss_insert: false,
            evict_with_p_space: false,
        }
    }
}

const NONE: u32 = u32::MAX;
const EMPTY: u8 = 0;
const CLEAN: u8 = 1;
const DIRTY: u8 = 2;

/// Keys of the flushed-group size histogram (`buffer.extra`), by powers of two.
const GROUP_KEYS: [&str; POW2_BUCKETS] = ftlab_core::pow2_keys!("flush_group_pages_");

/// The p-space: page slots grouped by logical block, with the groups kept in buckets by
/// size (FIFO inside a bucket) so the largest group is found without a scan.
struct PSpace {
    ppb: u32,
    tag: Vec<PageTag>,
    dirty: Vec<bool>,
    /// The slots of each group (list id = group), newest first.
    slots: Lists,
    free: Vec<u32>,
    by_lpn: U32Map,
    g_lbn: Vec<u32>,
    /// The groups of each size (list id = pages in the group), oldest at the back.
    buckets: Lists,
    g_free: Vec<u32>,
    by_lbn: U32Map,
    max: u32,
}

impl PSpace {
    fn new(cap: u32, ppb: u32) -> PSpace {
        let n = cap as usize;
        let buckets = ppb.min(cap) + 1;
        PSpace {
            ppb,
            tag: vec![PageTag::default(); n],
            dirty: vec![false; n],
            slots: Lists::new(cap, cap),
            free: (0..cap).rev().collect(),
            by_lpn: U32Map::with_max_len(cap),
            g_lbn: vec![NONE; n],
            buckets: Lists::new(cap, buckets),
            g_free: (0..cap).rev().collect(),
            by_lbn: U32Map::with_max_len(cap),
            max: 0,
        }
    }

    fn capacity(&self) -> u32 {
        self.tag.len() as u32
    }

    fn used(&self) -> u32 {
        self.capacity() - self.free.len() as u32
    }

    fn find(&self, lpn: u32) -> Option<u32> {
        self.by_lpn.get(lpn)
    }

    /// Pages in group `g`.
    fn count(&self, g: u32) -> u32 {
        self.slots.len(g)
    }

    /// Files group `g` in the bucket of its size, as the newest there.
    fn bucket(&mut self, g: u32) {
        let c = self.count(g);
        self.buckets.push_front(c, g);
        self.max = self.max.max(c);
    }

    /// Stores a page in a free slot. The caller made room.
    fn insert(&mut self, tag: PageTag, dirty: bool) {
        let s = self
            .free
            .pop()
            .expect("p-space: insert without a free slot");
        let lbn = tag.lpn.0 / self.ppb;
        self.tag[s as usize] = tag;
        self.dirty[s as usize] = dirty;
        self.by_lpn.insert(tag.lpn.0, s);
        let g = match self.by_lbn.get(lbn) {
            Some(g) => {
                self.buckets.remove(g);
                g
            }
            None => {
                let g = self.g_free.pop().expect("p-space: more groups than slots");
                self.g_lbn[g as usize] = lbn;
                self.by_lbn.insert(lbn, g);
                g
            }
        };
        self.slots.push_front(g, s);
        self.bucket(g);
    }

    /// Frees a slot; returns its page and dirty bit.
    fn remove(&mut self, s: u32) -> (PageTag, bool) {
        let g = self
            .slots
            .list_of(s)
            .expect("p-space: remove of a free slot");
        self.slots.remove(s);
        self.buckets.remove(g);
        if self.slots.is_empty(g) {
            self.by_lbn.remove(self.g_lbn[g as usize]);
            self.g_lbn[g as usize] = NONE;
            self.g_free.push(g);
        } else {
            self.bucket(g);
        }
        let tag = self.tag[s as usize];
        self.by_lpn.remove(tag.lpn.0);
        self.free.push(s);
        (tag, self.dirty[s as usize])
    }

    /// The largest group (the one that reached that size first).
    fn largest(&mut self) -> Option<u32> {
        while self.max > 0 && self.buckets.is_empty(self.max) {
            self.max -= 1;
        }
        match self.max {
            0 => None,
            max => self.buckets.back(max),
        }
    }

    fn group_dirty(&self, g: u32) -> bool {
        self.slots.iter(g).any(|s| self.dirty[s as usize])
    }
}

/// The b-space: whole blocks, each holding pages of one logical block at their offsets.
struct BSpace {
    ppb: u32,
    lbn: Vec<u32>,
    tag: Vec<PageTag>,
    state: Vec<u8>,
    valid: Vec<u32>,
    /// The blocks in use, most recently used first.
    lru: Lru,
    by_lbn: U32Map,
}

impl BSpace {
    fn new(blocks: u32, ppb: u32) -> BSpace {
        let pages = (blocks * ppb) as usize;
        BSpace {
            ppb,
            lbn: vec![NONE; blocks as usize],
            tag: vec![PageTag::default(); pages],
            state: vec![EMPTY; pages],
            valid: vec![0; blocks as usize],
            lru: Lru::new(blocks),
            by_lbn: U32Map::with_max_len(blocks),
        }
    }

    fn blocks(&self) -> u32 {
        self.lbn.len() as u32
    }

    #[inline]
    fn at(&self, b: u32, off: u32) -> usize {
        (b * self.ppb + off) as usize
    }

    fn state(&self, b: u32, off: u32) -> u8 {
        self.state[self.at(b, off)]
    }

    fn get(&self, b: u32, off: u32) -> Option<PageTag> {
        let i = self.at(b, off);
        (self.state[i] != EMPTY).then(|| self.tag[i])
    }

    fn put(&mut self, b: u32, off: u32, tag: PageTag, state: u8) {
        let i = self.at(b, off);
        if self.state[i] == EMPTY {
            self.valid[b as usize] += 1;
        }
        self.tag[i] = tag;
        self.state[i] = state;
    }

    fn clear(&mut self, b: u32, off: u32) {
        let i = self.at(b, off);
        assert!(self.state[i] != EMPTY, "b-space: clear of an empty page");
        self.state[i] = EMPTY;
        self.valid[b as usize] -= 1;
    }

    /// A use of block `b` (in use): it becomes the most recently used.
    fn touch(&mut self, b: u32) {
        self.lru.touch(b);
    }

    fn assign(&mut self, b: u32, lbn: u32) {
        assert_eq!(self.lbn[b as usize], NONE, "b-space: block {b} is in use");
        self.lbn[b as usize] = lbn;
        self.by_lbn.insert(lbn, b);
    }

    fn release(&mut self, b: u32) {
        let lbn = std::mem::replace(&mut self.lbn[b as usize], NONE);
        self.by_lbn.remove(lbn);
        let first = self.at(b, 0);
        self.state[first..first + self.ppb as usize].fill(EMPTY);
        self.valid[b as usize] = 0;
        self.lru.remove(b);
    }

    fn free_block(&self) -> Option<u32> {
        self.lbn.iter().position(|&l| l == NONE).map(|b| b as u32)
    }

    /// The block in use with the fewest valid pages, ties to the least recently used.
    fn fewest_valid(&self) -> (u32, u32) {
        self.lru
            .iter()
            .rev()
            .map(|b| (b, self.valid[b as usize]))
            .min_by_key(|&(_, v)| v)
            .expect("b-space has blocks in use")
    }

    /// The least recently used block in use.
    fn lru(&self) -> u32 {
        self.lru.back().expect("b-space has blocks in use")
    }
}

/// Counters beyond [`BufferStats`].
#[derive(Clone, Debug, Default)]
struct Extra {
    moves_to_free_block: u64,
    joins: u64,
    switches: u64,
    b_evictions: u64,
    clean_drops: u64,
    late_merge_reads: u64,
    early_merge_reads: u64,
    groups: Pow2Histogram,
}

/// The C-lash buffer.
pub struct Clash {
    ppb: u32,
    logical_pages: u32,
    merge: Merge,
    read_miss_insert: bool,
    evict_with_p_space: bool,
    /// The LPN whose insertion into the full p-space triggered the current eviction.
    inserting: u32,
    p: PSpace,
    b: BSpace,
    group: Vec<PageWrite>,
    stash: Vec<(PageTag, bool)>,
    order_p: Vec<u32>,
    stats: BufferStats,
    x: Extra,
}

impl Clash {
    /// Builds the buffer for `geo`.
    pub fn new(geo: &Geometry, opts: &ClashOptions) -> Result<Clash, SchemeError> {
        let p_pages = opts.p_space_pages;
        let b_blocks = opts.b_space_blocks;
        let ppb = geo.pages_per_block;
        if b_blocks as u64 * ppb as u64 > LIMIT as u64 {
            return Err(bad(
                ID,
                "b_space_blocks",
                b_blocks,
                format!("must hold at most {LIMIT} pages ({ppb} pages per block)"),
            ));
        }
        Ok(Clash {
            ppb,
            logical_pages: geo.logical_pages,
            merge: opts.merge,
            read_miss_insert: opts.read_miss_insert,
            evict_with_p_space: opts.evict_with_p_space,
            inserting: NONE,
            p: PSpace::new(p_pages, ppb),
            b: BSpace::new(b_blocks, ppb),
            group: Vec::with_capacity(ppb as usize),
            stash: Vec::with_capacity(ppb as usize),
            order_p: Vec::with_capacity(p_pages as usize),
            stats: BufferStats::default(),
            x: Extra::default(),
        })
    }

    /// The cached copy of a page and whether it is in the b-space.
    fn lookup(&self, lpn: u32) -> Option<(PageTag, bool)> {
        if let Some(b) = self.b.by_lbn.get(lpn / self.ppb) {
            if let Some(tag) = self.b.get(b, lpn % self.ppb) {
                return Some((tag, true));
            }
        }
        self.p.find(lpn).map(|s| (self.p.tag[s as usize], false))
    }

    fn write_page(&mut self, be: &mut Backend<'_>, tag: PageTag) {
        let (lbn, off) = (tag.lpn.0 / self.ppb, tag.lpn.0 % self.ppb);
        if let Some(b) = self.b.by_lbn.get(lbn) {
            if self.b.state(b, off) != EMPTY {
                self.b.put(b, off, tag, DIRTY);
                self.b.touch(b);
                self.stats.write_hits += 1;
                return;
            }
        }
        if let Some(s) = self.p.find(tag.lpn.0) {
            self.p.tag[s as usize] = tag;
            self.p.dirty[s as usize] = true;
            self.stats.write_hits += 1;
            return;
        }
        self.stats.write_misses += 1;
        self.insert_p(be, tag, true);
    }

    fn insert_p(&mut self, be: &mut Backend<'_>, tag: PageTag, dirty: bool) {
        if self.p.free.is_empty() {
            self.inserting = tag.lpn.0;
            self.evict_p(be);
            self.inserting = NONE;
        }
        self.p.insert(tag, dirty);
    }

    /// p-space eviction (c-lash.txt §3.2): the largest group goes to the b-space.
    fn evict_p(&mut self, be: &mut Backend<'_>) {
        let g = self.p.largest().expect("a full p-space has a group");
        let lbn = self.p.g_lbn[g as usize];
        let n = self.p.count(g);
        if let Some(b) = self.b.by_lbn.get(lbn) {
            self.move_group(g, b);
            self.b.touch(b);
            self.x.joins += 1;
            return;
        }
        let b = match self.b.free_block() {
            Some(b) => {
                self.x.moves_to_free_block += 1;
                b
            }
            None => {
                let (b, valid) = self.b.fewest_valid();
                if valid < n {
                    self.switch(be, g, b);
                    return;
                }
                let victim = self.b.lru();
                self.evict_b(be, victim);
                victim
            }
        };
        self.b.assign(b, lbn);
        self.move_group(g, b);
        self.b.touch(b);
        if self.merge == Merge::Early {
            self.early_merge(be, b);
        }
    }

    /// Moves every page of p-space group `g` into b-space block `b`.
    fn move_group(&mut self, g: u32, b: u32) {
        while let Some(s) = self.p.slots.front(g) {
            let (tag, dirty) = self.p.remove(s);
            let off = tag.lpn.0 % self.ppb;
            assert_eq!(self.b.state(b, off), EMPTY, "{:?} cached twice", tag.lpn);
            self.b.put(b, off, tag, if dirty { DIRTY } else { CLEAN });
        }
    }

    /// The switch (c-lash.txt §3.2, Fig. 1-b top): block `b` holds fewer valid pages
    /// than group `g`; its pages go to the p-space and `g` takes the block. No flash
    /// operation.
    fn switch(&mut self, be: &mut Backend<'_>, g: u32, b: u32) {
        self.stash.clear();
        for off in 0..self.ppb {
            let i = self.b.at(b, off);
            if self.b.state[i] != EMPTY {
                self.stash.push((self.b.tag[i], self.b.state[i] == DIRTY));
            }
        }
        self.b.release(b);
        let lbn = self.p.g_lbn[g as usize];
        self.b.assign(b, lbn);
        self.move_group(g, b);
        self.b.touch(b);
        for i in 0..self.stash.len() {
            let (tag, dirty) = self.stash[i];
            self.p.insert(tag, dirty);
        }
        self.x.switches += 1;
        if self.merge == Merge::Early {
            self.early_merge(be, b);
        }
    }

    /// b-space eviction (c-lash.txt §3.2): writes block `b` to flash and frees it.
    fn evict_b(&mut self, be: &mut Backend<'_>, b: u32) {
        let lbn = self.b.lbn[b as usize];
        self.write_block(be, lbn, Some(b), self.evict_with_p_space);
        self.b.release(b);
        self.x.b_evictions += 1;
    }

    /// Early merge: reads the missing pages of block `b` from flash into it, clean.
    fn early_merge(&mut self, be: &mut Backend<'_>, b: u32) {
        let first = self.b.lbn[b as usize] * self.ppb;
        let end = (first + self.ppb).min(self.logical_pages);
        for lpn in first..end {
            let off = lpn - first;
            // The page being inserted is not merged: its flash copy is stale (regression:
            // an eviction made room for a page of the very block it moved, and the merge
            // cached the old version next to the new one).
            if self.b.state(b, off) == EMPTY && self.p.find(lpn).is_none() && lpn != self.inserting
            {
                if let Some(tag) = be.read(Lpn(lpn)) {
                    self.b.put(b, off, tag, CLEAN);
                    self.x.early_merge_reads += 1;
                    self.stats.padding_reads += 1;
                }
            }
        }
    }

    /// Hands logical block `lbn` to the FTL as one group: the pages of b-space block
    /// `b` (if any), the p-space pages of the block when `take_p` (removing them), and,
    /// unless `merge = none`, the block's other pages read from flash. A block with no
    /// dirty page is not written. Does not release `b`.
    fn write_block(&mut self, be: &mut Backend<'_>, lbn: u32, b: Option<u32>, take_p: bool) {
        let mut dirty = b.is_some_and(|b| (0..self.ppb).any(|o| self.b.state(b, o) == DIRTY));
        if take_p {
            if let Some(g) = self.p.by_lbn.get(lbn) {
                dirty |= self.p.group_dirty(g);
            }
        }
        let whole = self.merge != Merge::None;
        let first = lbn * self.ppb;
        let end = (first + self.ppb).min(self.logical_pages);
        self.group.clear();
        for lpn in first..end {
            let off = lpn - first;
            if let Some(b) = b {
                let i = self.b.at(b, off);
                if self.b.state[i] != EMPTY {
                    if dirty && (whole || self.b.state[i] == DIRTY) {
                        self.group.push(self.b.tag[i]);
                    }
                    continue;
                }
            }
            if let Some(s) = self.p.find(lpn) {
                if take_p {
                    let (tag, d) = self.p.remove(s);
                    if dirty && (whole || d) {
                        self.group.push(tag);
                    }
                }
                // Otherwise the newer copy stays in the p-space; flash holds a stale one.
                continue;
            }
            if dirty && whole {
                if let Some(tag) = be.read(Lpn(lpn)) {
                    self.group.push(tag);
                    self.x.late_merge_reads += 1;
                    self.stats.padding_reads += 1;
                }
            }
        }
        if !dirty {
            self.x.clean_drops += 1;
            return;
        }
        if !self.group.is_empty() {
            be.write(&self.group);
            let n = self.group.len() as u32;
            self.stats.flushes += 1;
            self.stats.pages_flushed += n as u64;
            self.x.groups.record(n);
        }
    }
}

impl Buffer for Clash {
    fn write(&mut self, be: &mut Backend<'_>, pages: &[PageWrite]) {
        for &tag in pages {
            self.write_page(be, tag);
        }
    }

    fn read(&mut self, be: &mut Backend<'_>, lpn: Lpn) -> Option<PageTag> {
        if let Some((tag, in_b)) = self.lookup(lpn.0) {
            if in_b {
                let b = self.b.by_lbn.get(lpn.0 / self.ppb).expect("found in b");
                self.b.touch(b);
            }
            self.stats.read_hits += 1;
            return Some(tag);
        }
        self.stats.read_misses += 1;
        let found = be.read(lpn);
        if self.read_miss_insert {
            if let Some(tag) = found {
                self.insert_p(be, tag, false);
            }
        }
        found
    }

    fn trim(&mut self, be: &mut Backend<'_>, lpn: Lpn) {
        let (lbn, off) = (lpn.0 / self.ppb, lpn.0 % self.ppb);
        if let Some(b) = self.b.by_lbn.get(lbn) {
            if self.b.state(b, off) != EMPTY {
                self.b.clear(b, off);
                if self.b.valid[b as usize] == 0 {
                    self.b.release(b);
                }
            }
        }
        if let Some(s) = self.p.find(lpn.0) {
            self.p.remove(s);
        }
        be.trim(lpn);
    }

    fn flush(&mut self, be: &mut Backend<'_>) {
        while let Some(b) = self.b.lru.back() {
            self.write_block(be, self.b.lbn[b as usize], Some(b), true);
            self.b.release(b);
        }
        self.order_p.clear();
        for g in 0..self.p.capacity() {
            if self.p.count(g) > 0 {
                self.order_p.push(self.p.g_lbn[g as usize]);
            }
        }
        self.order_p.sort_unstable();
        for i in 0..self.order_p.len() {
            self.write_block(be, self.order_p[i], None, true);
        }
        debug_assert_eq!(self.p.used(), 0);
        be.ftl.flush(be.flash);
    }

    fn volatile_pages(&self, out: &mut Vec<Lpn>) {
        for s in 0..self.p.capacity() {
            let tag = self.p.tag[s as usize];
            if self.p.dirty[s as usize] && self.p.by_lpn.get(tag.lpn.0) == Some(s) {
                out.push(tag.lpn);
            }
        }
        for (i, &state) in self.b.state.iter().enumerate() {
            if state == DIRTY {
                out.push(self.b.tag[i].lpn);
            }
        }
    }

    fn check(&self) -> Result<(), String> {
        let p = &self.p;
        if p.by_lpn.len() != p.used() {
            return Err(format!(
                "p-space: {} indexed, {} used",
                p.by_lpn.len(),
                p.used()
            ));
        }
        p.slots.check()?;
        p.buckets.check()?;
        let mut in_groups = 0;
        for g in 0..p.capacity() {
            let c = p.count(g);
            if c == 0 {
                continue;
            }
            let lbn = p.g_lbn[g as usize];
            if p.by_lbn.get(lbn) != Some(g) {
                return Err(format!("p-space group {g} of lbn{lbn} is not indexed"));
            }
            if p.buckets.list_of(g) != Some(c) || c > p.max {
                return Err(format!("p-space group of lbn{lbn} ({c} pages) misbucketed"));
            }
            let mut n = 0;
            for s in p.slots.iter(g) {
                let lpn = p.tag[s as usize].lpn.0;
                if lpn / self.ppb != lbn || p.by_lpn.get(lpn) != Some(s) {
                    return Err(format!("p-space slot {s} (lpn{lpn}) misfiled in lbn{lbn}"));
                }
                if self
                    .b
                    .by_lbn
                    .get(lbn)
                    .is_some_and(|b| self.b.state(b, lpn % self.ppb) != EMPTY)
                {
                    return Err(format!("lpn{lpn} is in both the p-space and the b-space"));
                }
                n += 1;
            }
            if n != c {
                return Err(format!("p-space group of lbn{lbn}: count {c}, {n} pages"));
            }
            in_groups += n;
        }
        if in_groups != p.used() || p.by_lbn.len() + p.g_free.len() as u32 != p.capacity() {
            return Err("p-space groups and slots disagree".into());
        }
        let bs = &self.b;
        bs.lru.check()?;
        for b in 0..bs.blocks() {
            let n = (0..self.ppb).filter(|&o| bs.state(b, o) != EMPTY).count() as u32;
            let lbn = bs.lbn[b as usize];
            if bs.lru.contains(b) != (lbn != NONE) {
                return Err(format!(
                    "b-space block {b}: in use and on the LRU list disagree"
                ));
            }
            if n != bs.valid[b as usize] || (lbn == NONE && n != 0) {
                return Err(format!(
                    "b-space block {b}: valid {} but {n} pages",
                    bs.valid[b as usize]
                ));
            }
            if lbn != NONE && bs.by_lbn.get(lbn) != Some(b) {
                return Err(format!("b-space block {b} (lbn{lbn}) is not indexed"));
            }
            for o in 0..self.ppb {
                if let Some(t) = bs.get(b, o) {
                    if t.lpn.0 != lbn * self.ppb + o {
                        return Err(format!("b-space block {b} offset {o} holds {:?}", t.lpn));
                    }
                }
            }
        }
        Ok(())
    }

    fn stats(&self) -> BufferStats {
        let mut s = self.stats.clone();
        let x = &self.x;
        for (k, v) in [
            ("moves_to_free_block", x.moves_to_free_block),
            ("joins", x.joins),
            ("switches", x.switches),
            ("b_evictions", x.b_evictions),
            ("clean_drops", x.clean_drops),
            ("late_merge_reads", x.late_merge_reads),
            ("early_merge_reads", x.early_merge_reads),
        ] {
            s.extra.counter(k, "events", v as f64);
        }
        x.groups
            .report(&mut s.extra, &GROUP_KEYS, self.ppb, "groups");
        s
    }

    fn reset_stats(&mut self) {
        self.stats = BufferStats::default();
        self.x = Extra::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::flash::{Cause, Flash, FlashStats};
    use ftlab_core::ftl::{Ftl, FtlStats};
    use ftlab_core::geometry::GeometryBuilder;
    use ftlab_core::options::from_pairs;
    use ftlab_core::Ppn;

    /// An append-only page-mapped FTL that records every group it is handed.
    struct Recorder {
        l2p: Vec<u32>,
        next: u32,
        groups: Vec<Vec<u32>>,
        flushes: u32,
    }

    impl Ftl for Recorder {
        fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
            self.groups.push(pages.iter().map(|p| p.lpn.0).collect());
            for p in pages {
                let old = self.l2p[p.lpn.idx()];
                if old != NONE {
                    flash.invalidate(Ppn(old));
                }
                flash.program(Ppn(self.next), *p, Cause::Host);
                self.l2p[p.lpn.idx()] = self.next;
                self.next += 1;
            }
        }
        fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
            let p = self.l2p[lpn.idx()];
            (p != NONE).then(|| flash.read(Ppn(p), Cause::Host))
        }
        fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
            let p = std::mem::replace(&mut self.l2p[lpn.idx()], NONE);
            if p != NONE {
                flash.invalidate(Ppn(p));
            }
        }
        fn flush(&mut self, _: &mut Flash) {
            self.flushes += 1;
        }
        fn stats(&self) -> FtlStats {
            FtlStats::default()
        }
        fn reset_stats(&mut self) {}
        fn mapping_bytes(&self) -> u64 {
            0
        }
    }

    const PPB: u32 = 4;

    /// 32 logical blocks of 4 pages; the buffer under test above a [`Recorder`]; a
    /// reference of the last version written per LPN.
    struct Rig {
        flash: Flash,
        ftl: Recorder,
        buf: Clash,
        version: Vec<u32>,
    }

    impl Rig {
        fn new(opts: ClashOptions) -> Rig {
            let geo = GeometryBuilder {
                page_size: 2048,
                pages_per_block: PPB,
                spare_bytes: 64,
                logical_bytes: 32 * PPB as u64 * 2048,
                op_percent: 100.0,
                channels: 1,
                dies_per_channel: 1,
                planes_per_die: 1,
                min_spare_blocks: 0,
            }
            .build()
            .unwrap();
            Rig {
                flash: Flash::new(&geo),
                ftl: Recorder {
                    l2p: vec![NONE; geo.logical_pages as usize],
                    next: 0,
                    groups: Vec::new(),
                    flushes: 0,
                },
                buf: Clash::new(&geo, &opts).unwrap(),
                version: vec![0; geo.logical_pages as usize],
            }
        }

        fn write(&mut self, lbn: u32, offsets: &[u32]) {
            let pages: Vec<PageTag> = offsets
                .iter()
                .map(|o| {
                    let lpn = lbn * PPB + o;
                    self.version[lpn as usize] += 1;
                    PageTag {
                        lpn: Lpn(lpn),
                        version: self.version[lpn as usize],
                    }
                })
                .collect();
            let mut be = Backend {
                ftl: &mut self.ftl,
                flash: &mut self.flash,
            };
            self.buf.write(&mut be, &pages);
            self.buf.check().unwrap();
        }

        fn read(&mut self, lpn: u32) -> Option<PageTag> {
            let mut be = Backend {
                ftl: &mut self.ftl,
                flash: &mut self.flash,
            };
            self.buf.read(&mut be, Lpn(lpn))
        }

        fn trim(&mut self, lpn: u32) {
            let mut be = Backend {
                ftl: &mut self.ftl,
                flash: &mut self.flash,
            };
            self.buf.trim(&mut be, Lpn(lpn));
            self.buf.check().unwrap();
        }

        fn flush(&mut self) {
            let mut be = Backend {
                ftl: &mut self.ftl,
                flash: &mut self.flash,
            };
            self.buf.flush(&mut be);
            self.buf.check().unwrap();
        }

        /// Every written LPN reads back its last version.
        fn verify(&mut self) {
            for lpn in 0..self.version.len() as u32 {
                let v = self.version[lpn as usize];
                let got = self.read(lpn);
                if v == 0 {
                    assert_eq!(got, None, "lpn{lpn}");
                } else {
                    assert_eq!(got.map(|t| (t.lpn.0, t.version)), Some((lpn, v)));
                }
            }
        }

        /// b-space contents: (logical block, cached offsets), by logical block.
        fn b_space(&self) -> Vec<(u32, Vec<u32>)> {
            let b = &self.buf.b;
            let mut v: Vec<_> = (0..b.blocks())
                .filter(|&i| b.lbn[i as usize] != NONE)
                .map(|i| {
                    let offs = (0..PPB).filter(|&o| b.state(i, o) != EMPTY).collect();
                    (b.lbn[i as usize], offs)
                })
                .collect();
            v.sort();
            v
        }

        /// p-space contents: LPNs, ascending.
        fn p_space(&self) -> Vec<u32> {
            let mut v: Vec<u32> = self.buf.p.by_lpn.iter().map(|(k, _)| k).collect();
            v.sort();
            v
        }

        fn ops(&self) -> (u64, u64) {
            let s = self.flash.stats();
            (
                FlashStats::total(&s.page_reads),
                FlashStats::total(&s.programs),
            )
        }

        fn extra(&self, key: &str) -> f64 {
            self.buf.stats().extra[key]
        }
    }

    /// The options of most tests: a p-space of 6 pages, the rest as by default.
    fn small() -> ClashOptions {
        ClashOptions {
            p_space_pages: 6,
            ..Default::default()
        }
    }

    fn lpns(lbn: u32, offs: &[u32]) -> Vec<u32> {
        offs.iter().map(|o| lbn * PPB + o).collect()
    }

    #[test]
    fn worked_example_6_switch() {
        // c-lash.txt Fig. 1-b, top: the largest p-space group (3 pages of B21) meets a
        // full b-space whose block B4 holds 2 valid pages: B4 and the group switch
        // places in RAM, freeing 1 page, with no flash operation.
        let mut r = Rig::new(ClashOptions {
            b_space_blocks: 2,
            ..small()
        });
        r.write(4, &[0, 1]);
        r.write(7, &[0, 1, 2, 3]); // p-space full: B4 x2, B7 x4
        r.write(21, &[0]); // evicts B7 (largest) into a free b-space block
        r.write(21, &[1]);
        r.write(1, &[0]);
        r.write(2, &[0]); // full: B4 x2, B21 x2, B1, B2
        r.write(3, &[0]); // tie of 2: B4 reached 2 first and takes the other block
        r.write(21, &[2]); // full: B21 x3, B1, B2, B3
        assert_eq!(r.b_space(), vec![(4, vec![0, 1]), (7, vec![0, 1, 2, 3])]);
        assert_eq!(r.ops(), (0, 0));

        r.write(5, &[0]); // the example's eviction
        assert_eq!(r.ops(), (0, 0), "a switch costs no flash operation");
        assert_eq!(r.extra("switches"), 1.0);
        assert_eq!(
            r.b_space(),
            vec![(7, vec![0, 1, 2, 3]), (21, vec![0, 1, 2])]
        );
        let mut want = lpns(4, &[0, 1]);
        want.extend([4, 8, 12, 20]); // B1, B2, B3 and the new page of B5
        want.sort();
        assert_eq!(r.p_space(), want);
        assert!(r.ftl.groups.is_empty());
        r.verify();
        assert_eq!(r.ops(), (0, 0), "every read was a hit");
    }

    #[test]
    fn worked_example_6_flush() {
        // c-lash.txt Fig. 1-b, bottom: the largest group (2 pages of B21) meets b-space
        // blocks that all hold more valid pages, so the LRU b-space block (full) is
        // flushed to flash first, with no merge, and B21's pages take its place.
        let mut r = Rig::new(ClashOptions {
            b_space_blocks: 2,
            ..small()
        });
        r.write(7, &[0, 1, 2, 3]);
        r.write(9, &[0, 1]); // full: B7 x4, B9 x2
        r.write(9, &[2]); // evicts B7 into the b-space
        r.write(21, &[0, 1]);
        r.write(1, &[0]); // full: B9 x3, B21 x2, B1
        r.write(2, &[0]); // evicts B9 (3 pages) into the other block
        r.write(3, &[0]);
        r.write(5, &[0]); // full: B21 x2, B1, B2, B3, B5
        assert_eq!(r.b_space(), vec![(7, vec![0, 1, 2, 3]), (9, vec![0, 1, 2])]);
        assert_eq!(r.ops(), (0, 0));

        r.write(6, &[0]); // the example's eviction
        assert_eq!(r.ftl.groups, vec![lpns(7, &[0, 1, 2, 3])]);
        assert_eq!(r.ops(), (0, 4), "no merge read: the flushed block is full");
        assert_eq!(r.buf.stats().padding_reads, 0);
        assert_eq!(r.extra("switches"), 0.0);
        assert_eq!(r.extra("b_evictions"), 1.0);
        assert_eq!(r.extra("flush_group_pages_3_4"), 1.0);
        assert_eq!(r.b_space(), vec![(9, vec![0, 1, 2]), (21, vec![0, 1])]);
        assert_eq!(r.p_space(), vec![4, 8, 12, 20, 24]);
        r.verify();
    }

    /// Puts LBN 3 on flash whole, then 2 of its pages into the b-space (b-space of 1).
    fn rig_with_block_3_on_flash(merge: Merge) -> Rig {
        let mut r = Rig::new(ClashOptions {
            b_space_blocks: 1,
            p_space_pages: 2,
            merge,
            ..Default::default()
        });
        r.write(3, &[0, 1, 2, 3]);
        r.flush();
        r.ftl.groups.clear();
        r.flash.reset_stats();
        r.write(3, &[1, 2]);
        r.write(5, &[0]); // evicts B3's 2 pages into the b-space
        r
    }

    #[test]
    fn late_merge_reads_the_missing_pages_and_writes_the_whole_block() {
        let mut r = rig_with_block_3_on_flash(Merge::Late);
        assert_eq!(r.b_space(), vec![(3, vec![1, 2])]);
        r.write(6, &[0]);
        r.write(8, &[0]); // evicts B5 (tie, first to size 1): the b-space block must go
        assert_eq!(r.ftl.groups, vec![lpns(3, &[0, 1, 2, 3])]);
        assert_eq!(r.ops(), (2, 4));
        assert_eq!(r.buf.stats().padding_reads, 2);
        assert_eq!(r.extra("late_merge_reads"), 2.0);
        r.verify();
    }

    #[test]
    fn early_merge_reads_when_the_group_enters_the_b_space() {
        let mut r = rig_with_block_3_on_flash(Merge::Early);
        assert_eq!(r.b_space(), vec![(3, vec![0, 1, 2, 3])]);
        assert_eq!(r.ops(), (2, 0));
        assert_eq!(r.extra("early_merge_reads"), 2.0);
        let reads = r.ops().0;
        assert!(r.read(3 * PPB).is_some());
        assert_eq!(r.ops().0, reads, "the merged page is now a read hit");
        r.write(6, &[0]);
        r.write(8, &[0]);
        assert_eq!(r.ftl.groups, vec![lpns(3, &[0, 1, 2, 3])]);
        assert_eq!(r.ops(), (2, 4));
        r.verify();
    }

    #[test]
    fn early_merge_skips_the_page_whose_insertion_evicted_its_own_block() {
        // Regression: the write miss of page 0 of block 3 evicts block 3's group to the
        // b-space; the early merge read page 0's old version from flash into the block
        // while the new one went to the p-space, and reads returned the old one.
        let mut r = Rig::new(ClashOptions {
            b_space_blocks: 1,
            p_space_pages: 2,
            merge: Merge::Early,
            ..Default::default()
        });
        r.write(3, &[0, 1, 2, 3]);
        r.flush();
        r.write(3, &[1, 2]);
        r.write(3, &[0]);
        assert_eq!(r.b_space(), vec![(3, vec![1, 2, 3])]);
        assert_eq!(r.p_space(), lpns(3, &[0]));
        assert_eq!(r.read(12).map(|t| t.version), Some(2));
        r.verify();
    }

    #[test]
    fn merge_none_writes_only_the_dirty_pages() {
        let mut r = rig_with_block_3_on_flash(Merge::None);
        r.write(6, &[0]);
        r.write(8, &[0]);
        assert_eq!(r.ftl.groups, vec![lpns(3, &[1, 2])]);
        assert_eq!(r.ops(), (0, 2));
        r.verify();
    }

    #[test]
    fn write_hits_update_in_place_without_flash_operations() {
        let mut r = Rig::new(small());
        r.write(2, &[0, 1, 2]);
        r.write(2, &[1]);
        r.write(2, &[0, 1, 2, 3]);
        let s = r.buf.stats();
        assert_eq!((s.write_hits, s.write_misses), (4, 4));
        assert_eq!(r.ops(), (0, 0));
        r.verify();
    }

    #[test]
    fn read_misses_are_inserted_only_when_asked() {
        for (insert, cached) in [(false, false), (true, true)] {
            let mut r = Rig::new(ClashOptions {
                read_miss_insert: insert,
                ..small()
            });
            r.write(2, &[0]);
            r.flush();
            let before = r.ops().0;
            assert!(r.read(8).is_some());
            assert!(r.read(8).is_some());
            let flash_reads = if cached { 1 } else { 2 };
            assert_eq!(r.ops().0 - before, flash_reads, "read_miss_insert={insert}");
            assert_eq!(r.p_space().contains(&8), cached);
            // A clean page is not written back.
            r.ftl.groups.clear();
            r.flush();
            assert!(r.ftl.groups.is_empty());
            r.verify();
        }
    }

    #[test]
    fn flush_cache_empties_the_buffer_one_group_per_block() {
        let mut r = Rig::new(small());
        r.write(7, &[0, 1, 2, 3]);
        r.write(9, &[0, 1]);
        r.write(9, &[2]); // B7 to the b-space
        r.write(7, &[1]); // write hit in the b-space
        r.write(2, &[3]);
        r.flush();
        assert!(r.b_space().is_empty() && r.p_space().is_empty());
        assert_eq!(
            r.ftl.groups,
            vec![lpns(7, &[0, 1, 2, 3]), lpns(2, &[3]), lpns(9, &[0, 1, 2])]
        );
        assert_eq!(r.ftl.flushes, 1);
        let s = r.buf.stats();
        assert_eq!((s.flushes, s.pages_flushed), (3, 8));
        r.verify();
    }

    #[test]
    fn trim_drops_cached_copies() {
        let mut r = Rig::new(ClashOptions {
            b_space_blocks: 1,
            ..small()
        });
        r.write(7, &[0, 1, 2, 3]);
        r.write(9, &[0, 1]);
        r.write(9, &[2]); // B7 to the b-space
        for o in 0..4 {
            r.trim(7 * PPB + o);
            r.version[(7 * PPB + o) as usize] = 0;
        }
        assert!(r.b_space().is_empty(), "an emptied b-space block is freed");
        r.trim(9 * PPB);
        r.version[(9 * PPB) as usize] = 0;
        assert_eq!(r.p_space(), lpns(9, &[1, 2]));
        r.flush();
        r.verify();
    }

    #[test]
    fn a_p_space_group_joins_the_b_space_block_of_its_logical_block() {
        let mut r = Rig::new(ClashOptions {
            b_space_blocks: 2,
            p_space_pages: 2,
            ..Default::default()
        });
        r.write(7, &[0, 1]); // p-space full
        r.write(7, &[2]); // a miss: B7's two pages go to the b-space first
        assert_eq!(r.b_space(), vec![(7, vec![0, 1])]);
        assert_eq!(r.p_space(), lpns(7, &[2]));
        r.write(8, &[0]); // full again
        r.write(9, &[0]); // the oldest single-page group is B7's: it joins its block
        assert_eq!(r.extra("joins"), 1.0);
        assert_eq!(r.extra("moves_to_free_block"), 1.0);
        assert_eq!(r.b_space(), vec![(7, vec![0, 1, 2])]);
        assert_eq!(r.p_space(), vec![32, 36]);
        assert_eq!(r.ops(), (0, 0));
        r.verify();
    }

    #[test]
    fn evict_with_p_space_takes_the_blocks_p_space_pages_along() {
        for (joined, want) in [(false, lpns(3, &[1, 2])), (true, lpns(3, &[1, 2, 3]))] {
            let mut r = Rig::new(ClashOptions {
                b_space_blocks: 1,
                p_space_pages: 3,
                merge: Merge::None,
                evict_with_p_space: joined,
                ..Default::default()
            });
            r.write(3, &[1, 2]);
            r.write(5, &[0]);
            r.write(6, &[0]); // B3 to the b-space
            r.write(3, &[3]); // p-space: B5, B6, B3.3
            r.write(8, &[0]); // B5 must go: the b-space block (2 valid) is flushed
            assert_eq!(r.ftl.groups[0], want, "evict_with_p_space={joined}");
            r.flush();
            r.verify();
        }
    }

    #[test]
    fn bad_options_are_errors_naming_the_option() {
        for (k, v) in [
            ("p_space_pages", "0"),
            ("p_space_pages", "16777217"),
            ("b_space_blocks", "0"),
            ("merge", "sometimes"),
            ("read_miss_insert", "maybe"),
        ] {
            let e = from_pairs::<ClashOptions>(ID, &[(k, v)]).expect_err("refused");
            assert!(e.to_string().contains(&format!("`{k}` = `{v}`")), "{e}");
        }
        let o: ClashOptions =
            from_pairs(ID, &[("merge", "early"), ("p_space_pages", "6")]).unwrap();
        assert_eq!(
            o,
            ClashOptions {
                merge: Merge::Early,
                ..small()
            }
        );
    }

    #[test]
    fn a_b_space_beyond_the_table_limit_is_refused_naming_the_option() {
        let geo = GeometryBuilder {
            page_size: 2048,
            pages_per_block: 4,
            spare_bytes: 64,
            logical_bytes: 1 << 20,
            op_percent: 10.0,
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
            min_spare_blocks: 0,
        }
        .build()
        .unwrap();
        let o = ClashOptions {
            b_space_blocks: (1 << 22) + 1,
            ..Default::default()
        };
        let e = Clash::new(&geo, &o).err().expect("refused");
        assert!(e.to_string().contains("`b_space_blocks`"), "{e}");
    }

    /// The LRU order the paper's b-space policy implies, kept outside the cache: the
    /// b-space logical blocks, least recently used first.
    fn touch(lru: &mut Vec<u32>, lbn: u32) {
        lru.retain(|&l| l != lbn);
        lru.push(lbn);
    }

    #[test]
    fn every_eviction_of_a_mixed_stream_follows_the_papers_rules() {
        // The eviction walk of issue 24 item 3 (experiments/c-lash/NOTES.md): a stream
        // shaped like c-lash.txt Table 1 (80% writes, 80% of accesses continue a
        // sequential run, the rest jump anywhere) through a 6-page p-space and 2-block
        // b-space. Before each access the rules of §3.2 are applied by hand to the
        // cache's contents; the cache must do what they predict: a write miss into a
        // full p-space evicts a largest group of one logical block (§3.2 "the largest
        // set of pages belonging to the same block") into a free b-space block, else
        // switches it with a b-space block holding fewer valid pages (the fewest), else
        // writes the least recently used b-space block to flash with a late merge and
        // takes its place. Ties between largest groups are not checked (the paper sets
        // no rule). The first evictions are printed (`--nocapture`) for the walk.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as u32
        };
        let logical = 32 * PPB;
        let mut seen = [0u32; 4]; // joins, moves to a free block, switches, flushes
        let mut shown = 0;
        let mut step = 0;
        // The recorder below only appends (256 physical pages): a fresh rig per episode.
        while step < 50_000 {
            let mut r = Rig::new(small());
            let mut lru: Vec<u32> = Vec::new();
            let mut lpn = 0u32;
            while r.ftl.next + 2 * PPB < 64 * PPB {
                step += 1;
                lpn = if rnd(100) < 80 {
                    (lpn + 1) % logical
                } else {
                    rnd(logical)
                };
                let (lbn, off) = (lpn / PPB, lpn % PPB);
                let (b0, p0) = (r.b_space(), r.p_space());
                let in_b = b0.iter().any(|(l, o)| *l == lbn && o.contains(&off));
                let groups0 = r.ftl.groups.len();
                if rnd(100) < 20 {
                    r.read(lpn);
                    if in_b {
                        touch(&mut lru, lbn);
                    }
                    assert_eq!((r.b_space(), r.p_space()), (b0, p0), "step {step}: a read");
                    continue;
                }
                r.write(lbn, &[off]);
                let (b1, p1) = (r.b_space(), r.p_space());
                if in_b {
                    touch(&mut lru, lbn);
                    assert_eq!((&b1, &p1), (&b0, &p0), "step {step}: a b-space write hit");
                    continue;
                }
                if p0.contains(&lpn) || p0.len() < 6 {
                    assert_eq!(b1, b0, "step {step}: no eviction");
                    assert_eq!(r.ftl.groups.len(), groups0, "step {step}: no flash write");
                    continue;
                }
                // An eviction. The candidates: the largest p-space groups.
                let mut size = std::collections::BTreeMap::<u32, u32>::new();
                for &l in &p0 {
                    *size.entry(l / PPB).or_default() += 1;
                }
                let n = *size.values().max().expect("a full p-space");
                let moved: Vec<u32> = size
                    .iter()
                    .filter(|&(&g, &c)| {
                        c == n
                            && p0.iter().filter(|&&l| l / PPB == g).all(|&l| {
                                b1.iter().any(|(bl, o)| *bl == g && o.contains(&(l % PPB)))
                            })
                    })
                    .map(|(&g, _)| g)
                    .collect();
                assert_eq!(
                    moved.len(),
                    1,
                    "step {step}: one largest group left the p-space"
                );
                let g = moved[0];
                let valid = |b: &[(u32, Vec<u32>)], l: u32| {
                    b.iter()
                        .find(|(bl, _)| *bl == l)
                        .map_or(0, |(_, o)| o.len())
                };
                let what = if b0.iter().any(|(l, _)| *l == g) {
                    seen[0] += 1;
                    assert_eq!(
                        valid(&b1, g),
                        valid(&b0, g) + n as usize,
                        "step {step}: join"
                    );
                    "joins its b-space block"
                } else if b0.len() < 2 {
                    seen[1] += 1;
                    assert_eq!(b1.len(), b0.len() + 1, "step {step}: a free block");
                    "moves to a free b-space block"
                } else {
                    let fewest = b0.iter().map(|(_, o)| o.len()).min().expect("full");
                    let gone: Vec<u32> = b0
                        .iter()
                        .filter(|(l, _)| !b1.iter().any(|(bl, _)| bl == l))
                        .map(|(l, _)| *l)
                        .collect();
                    assert_eq!(gone.len(), 1, "step {step}: one b-space block left");
                    if fewest < n as usize {
                        seen[2] += 1;
                        assert_eq!(valid(&b0, gone[0]), fewest, "step {step}: switch partner");
                        assert_eq!(r.ftl.groups.len(), groups0, "step {step}: a switch is free");
                        for &o in &b0.iter().find(|(l, _)| *l == gone[0]).expect("gone").1 {
                            assert!(p1.contains(&(gone[0] * PPB + o)), "step {step}: back to p");
                        }
                        "switches with the b-space block holding the fewest valid pages"
                    } else {
                        seen[3] += 1;
                        assert_eq!(gone[0], lru[0], "step {step}: the LRU block is flushed");
                        let written = &r.ftl.groups[groups0..];
                        assert_eq!(written.len(), 1, "step {step}: one block to flash");
                        assert!(written[0].iter().all(|&l| l / PPB == gone[0]));
                        for &o in &b0.iter().find(|(l, _)| *l == gone[0]).expect("gone").1 {
                            assert!(written[0].contains(&(gone[0] * PPB + o)), "step {step}");
                        }
                        "flushes the LRU b-space block (late merge), takes its place"
                    }
                };
                lru.retain(|l| b1.iter().any(|(bl, _)| bl == l));
                touch(&mut lru, g);
                assert!(
                    p1.contains(&lpn),
                    "step {step}: the written page enters the p-space"
                );
                if shown < 8 {
                    shown += 1;
                    eprintln!(
                        "step {step}: write lpn{lpn} (B{lbn}) misses a full p-space {p0:?}; \
                     largest group B{g} ({n} pages) {what}; b-space {b0:?} -> {b1:?}; \
                     flash groups {:?}",
                        &r.ftl.groups[groups0..]
                    );
                }
            }
            r.verify();
        }
        eprintln!("joins, moves, switches, flushes: {seen:?}");
        assert!(
            seen.iter().all(|&c| c > 100),
            "every outcome is exercised: {seen:?}"
        );
    }
}
