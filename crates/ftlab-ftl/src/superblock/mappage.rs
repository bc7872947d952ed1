//! SB-P: page-level mapping kept in map pages instead of spare areas
//! (superblock-ftl.txt §4.2.3, Fig. 8, §5.8), and the map held in RAM of §5.6.
//!
//! "Superblock FTL may adopt an alternative strategy, which keeps the page-level mapping
//! information in a separate page called a map page. [...] each PGD entry keeps track of
//! the location of each map page. [...] Superblock FTL caches map pages like the map
//! cache. When the page-level mapping information is modified, the cached page buffers
//! the update instead of writing the map page to flash. The page is flushed to flash
//! memory either when the associated superblock is fully merged or when the dirty map
//! page needs to be evicted from the cache."
//!
//! Where the map pages live (option `map_page_home`) is the choice the paper leaves most
//! open, and two sentences pull different ways:
//! - `pool` (default): map pages are written into a pool of blocks carved out of the
//!   extra blocks. §5.8: "For fair comparison, we have also reduced the number of extra
//!   blocks in SB-P by the amount of space reserved for map pages": the map pages take
//!   their space from the extra (U-block) blocks, so a filled device needs no block
//!   beyond the data blocks, the pool and the merge reserve (§5.1's 3.1% of extra blocks
//!   is enough). The pool is written as a log: a map page goes to the pool's open block,
//!   the previous copy is invalidated, and when the pool takes its last free block the
//!   pool block with the fewest valid map pages is collected (its valid map pages copied
//!   into the open block, the block erased); these copies and erases are map traffic
//!   ([`Cause::Map`]), reported as `ftl.extra.map_pool_gc_copies` / `_erases`.
//!   `map_pool_blocks` (default auto): the blocks the live map pages fill,
//!   `ceil(map pages / pages per block)`, twice (room for out-of-place updates) plus the
//!   open block: our assumption (the paper gives "the amount of space reserved for map
//!   pages" but not the amount). An explicit size below the live map pages + 2 blocks is
//!   refused, naming the option.
//! - `u_block`: a map page is written into its own superblock's current U-block, like
//!   data. §5.8: "If a map page is written in a block more than twice, the block should
//!   be fully merged later" and "the chance of switch merge and partial merge operations
//!   is lowered due to map page update" read as if map pages shared blocks with data.
//!   The previous map page becomes invalid; a block whose only live page is a map page is
//!   not switched; a superblock whose data fill its N blocks needs one more block for its
//!   map page, so a filled device needs one more block per superblock (25% spare blocks
//!   at N = 4), far above §5.1's 3.1%: this is why `pool` is the default. Only one
//!   superblock per map page (k = 1).
//!
//! Other choices the paper leaves open:
//! - Superblocks per map page, k (`superblocks_per_map_page`, default auto): as many as
//!   the page holds. §4.2.3: "a single map page can contain PBMTs and PTs for multiple
//!   superblocks. [...] if the superblock size is four (N = 4) with the maximum number of
//!   U-blocks being restricted to four (M = 4), a single map page can hold the mapping
//!   information for six superblocks (k = 6 in Figure 8)". A superblock's part of a map
//!   page is its PBMT (N + M block numbers of 24 bits, Table III's PBMT width, more bits
//!   on devices of 2^24 blocks or more), a PBMT length, and its N x pages-per-block PTEs
//!   of a PBMT index (`ceil(log2(N + M))` bits) and a page index: on the MLC part (4 KiB
//!   pages, 128 per block) with N = M = 4 that is 4 + 192 + 5,120 bits, and 6 of them fit,
//!   the paper's k = 6. The PGD has one entry per map page (§5.9: "(c1 x L)/(N x k)").
//!   An explicit k larger than what fits is refused.
//! - The simulator stores each map page's contents in the flash page in that packed form
//!   ([`Flash::program_payload`]) and decodes it on every map-page read, so a wrong map
//!   page shows up as an oracle violation. A PTE of all ones means "unmapped" unless the
//!   page it would name holds the entry's live copy (it could only be the last page of
//!   the 2^b-th block; a real FTL would tell them apart by the DI's logical sector
//!   number, §4.2.2).
//! - `max_u_blocks = auto` is N in this mode (§4.2.3's example: N = 4, M = 4).
//! - The cache holds whole map pages (default 16 entries; §5.8: "the map cache size is
//!   set to four entries for PIC, MP3, MOV, and PMP traces, and 16 entries for other
//!   traces"), least recently used out; a dirty one is written back on eviction. A miss
//!   reads the map page (a page read, `translation_reads`); a write-back is a page
//!   program (`translation_writes`), both under [`Cause::Map`].
//! - Merges load the superblock's map once (from the cache, or one map-page read), not
//!   caching a page they read. In `u_block`, a map page met in a block being compacted
//!   is not copied but dropped, and rewritten at the end of the merge. The map page is
//!   written at the end of a MergeAll always ("fully merged"), after a MergeSome into
//!   the cache (dirty) if the map page is cached, else at once.
//! - Trims just clear the cached PTE (the page is dirty); no carrier page is needed.
//! - Power-loss recovery is not implemented for SB-P (snapshots = on is refused, and the
//!   FTL reports recovery as unsupported): the dirty map pages in RAM would need the
//!   U-block scan of §4.4 matched against map pages, which we did not build.
//! - `mapping_bytes`: the PGD (4 bytes per map page) plus one page of RAM per cache
//!   entry (§5.9: "PageSize x n").
//!
//! `mapping = ram` (§5.6): "For this experiment, we held all the page-mapping
//! information in RAM without storing them in spare areas, since the current
//! implementation does not support the superblock size greater than eight." The page
//! map of every superblock stays in RAM (the same table as a map-page cache that holds
//! every superblock and never writes): no spare area, no map page, no map cache and no
//! map traffic (the hit ratio is not reported), and no block limit beyond N + M
//! (`max_u_blocks = auto` is N, as with map pages; §5.6 does not give M). It is a
//! simulation device for §5.6's sweep, not a design of the paper: nothing survives a
//! power loss (snapshots refused), and `mapping_bytes` counts 4 bytes per logical page.

use super::cache::NONE;
use super::layout::page_bits;
use super::{SuperblockFtl, OWN_MAP_POOL};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::lru::Lru;
use ftlab_core::{Lpn, PageTag, Pbn, Ppn};

/// Spare tag LPN of map pages (the version field holds the map page number).
pub(super) const MAP_LPN: u32 = u32::MAX - 4;

/// Most blocks a superblock may own with the map in RAM.
pub(super) const RAM_LIMIT: u32 = 1 << 20;

/// Where the page map lives, beyond the spare areas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Home {
    /// Map pages in the superblock's own U-blocks.
    UBlock,
    /// Map pages in a pool carved out of the extra blocks.
    Pool,
    /// In RAM (§5.6), never written.
    Ram,
}

/// The packed fields of one superblock's part of a map page.
#[derive(Clone, Copy, Debug)]
pub(super) struct Format {
    len_bits: u32,
    pbn_bits: u32,
    pbmt: u32,
    idx_bits: u32,
    page_bits: u32,
    ptes: u32,
}

/// Bits needed to write the numbers `0..n`.
fn bits_for(n: u32) -> u32 {
    (32 - n.saturating_sub(1).leading_zeros()).max(1)
}

impl Format {
    /// The part of a superblock owning at most `max_blocks` blocks, with `ptes` page
    /// entries, on a device of `blocks` blocks of `ppb` pages.
    pub(super) fn new(max_blocks: u32, ptes: u32, ppb: u32, blocks: u32) -> Format {
        Format {
            len_bits: bits_for(max_blocks + 1),
            pbn_bits: bits_for(blocks).max(24),
            pbmt: max_blocks,
            idx_bits: bits_for(max_blocks),
            page_bits: page_bits(ppb),
            ptes,
        }
    }

    /// Bits of one superblock's part.
    pub(super) fn region_bits(&self) -> u64 {
        self.len_bits as u64
            + self.pbmt as u64 * self.pbn_bits as u64
            + self.ptes as u64 * (self.idx_bits + self.page_bits) as u64
    }

    /// Superblocks a page of `page_size` bytes holds.
    pub(super) fn per_page(&self, page_size: u32) -> u32 {
        (page_size as u64 * 8 / self.region_bits()).min(u32::MAX as u64) as u32
    }

    fn pte_bits(&self) -> u32 {
        self.idx_bits + self.page_bits
    }
}

/// Most blocks a superblock may own when one map page of `page_size` bytes holds its
/// part (`ptes` entries, blocks of `ppb` pages, `blocks` on the device), or why none fit.
pub(super) fn map_page_limit(
    page_size: u32,
    ptes: u32,
    ppb: u32,
    blocks: u32,
) -> Result<u32, String> {
    let mut best = 0;
    for b in 1..=16u32 {
        let hi = 1u32 << b;
        // The largest block count whose part still fits, with b-bit indexes.
        let (mut lo, mut top) = ((hi >> 1) + 1, hi);
        if Format::new(lo, ptes, ppb, blocks).per_page(page_size) == 0 {
            continue;
        }
        while lo < top {
            let mid = (lo + top).div_ceil(2);
            if Format::new(mid, ptes, ppb, blocks).per_page(page_size) >= 1 {
                lo = mid;
            } else {
                top = mid - 1;
            }
        }
        best = best.max(lo);
    }
    if best < 2 {
        return Err(format!(
            "a map page of {page_size} bytes cannot hold {ptes} page-table entries and a PBMT"
        ));
    }
    Ok(best)
}

/// Writes fields of any width into 32-bit words.
struct Bits<'a> {
    out: &'a mut Vec<u32>,
    at: u64,
}

impl Bits<'_> {
    fn put(&mut self, v: u32, w: u32) {
        debug_assert!(w <= 32 && (w == 32 || v >> w == 0));
        let need = (self.at + w as u64).div_ceil(32) as usize;
        if self.out.len() < need {
            self.out.resize(need, 0);
        }
        let (word, shift) = ((self.at / 32) as usize, (self.at % 32) as u32);
        let wide = (v as u64) << shift;
        self.out[word] |= wide as u32;
        if shift + w > 32 {
            self.out[word + 1] |= (wide >> 32) as u32;
        }
        self.at += w as u64;
    }
}

/// Reads fields back.
fn get(words: &[u32], at: u64, w: u32) -> u32 {
    let (word, shift) = ((at / 32) as usize, (at % 32) as u32);
    let mut wide = (words[word] as u64) >> shift;
    if shift + w > 32 {
        wide |= (words[word + 1] as u64) << (32 - shift);
    }
    (wide & ((1u64 << w) - 1)) as u32
}

/// Whole map pages cached in RAM, decoded to absolute page numbers (with the map in
/// RAM: every superblock's map, never evicted).
#[derive(Clone, Debug)]
pub(super) struct MapPageCache {
    pub(super) home: Home,
    /// Superblocks per map page.
    pub(super) k: u32,
    /// Entries per superblock (N logical blocks x 2^(m+t)).
    pub(super) per_sb: usize,
    /// Entries per map page.
    len: usize,
    fmt: Format,
    /// The map page held by each slot.
    mp: Vec<u32>,
    dirty: Vec<bool>,
    /// Every slot, most recently used first; slots never used are at the back, the
    /// lowest number last, so they fill up in order before anything is evicted.
    lru: Lru,
    map: Vec<u32>,
    slot_of: Vec<u32>,
}

impl MapPageCache {
    pub(super) fn new(
        home: Home,
        entries: usize,
        map_pages: u32,
        k: u32,
        per_sb: usize,
        fmt: Format,
    ) -> MapPageCache {
        let ram = home == Home::Ram;
        let entries = if ram { map_pages as usize } else { entries };
        let len = k as usize * per_sb;
        MapPageCache {
            home,
            k,
            per_sb,
            len,
            fmt,
            mp: if ram {
                (0..map_pages).collect()
            } else {
                vec![NONE; entries]
            },
            dirty: vec![false; entries],
            lru: {
                let mut lru = Lru::new(if ram { 0 } else { entries as u32 });
                if !ram {
                    (0..entries as u32).for_each(|s| lru.push_front(s));
                }
                lru
            },
            map: vec![NONE; entries * len],
            slot_of: if ram {
                (0..map_pages).collect()
            } else {
                vec![NONE; map_pages as usize]
            },
        }
    }

    pub(super) fn entries(&self) -> usize {
        self.mp.len()
    }

    pub(super) fn peek_mp(&self, mp: u32) -> Option<usize> {
        let s = self.slot_of[mp as usize];
        (s != NONE).then_some(s as usize)
    }

    pub(super) fn map(&self, s: usize) -> &[u32] {
        &self.map[s * self.len..(s + 1) * self.len]
    }

    pub(super) fn map_mut(&mut self, s: usize) -> &mut [u32] {
        self.dirty[s] = true;
        &mut self.map[s * self.len..(s + 1) * self.len]
    }

    fn touch(&mut self, s: usize) {
        if self.home != Home::Ram {
            self.lru.touch(s as u32);
        }
    }
}

/// The pool of blocks map pages are written to (`map_page_home = pool`).
#[derive(Clone, Debug)]
pub(super) struct MapPool {
    pub(super) blocks: Vec<Pbn>,
    free: Vec<Pbn>,
    open: u32,
    pub(super) gc_copies: u64,
    pub(super) gc_erases: u64,
}

impl MapPool {
    pub(super) fn new(blocks: Vec<Pbn>) -> MapPool {
        MapPool {
            free: blocks.iter().rev().copied().collect(),
            blocks,
            open: NONE,
            gc_copies: 0,
            gc_erases: 0,
        }
    }
}

/// Blocks `map_pool_blocks = auto` carves out for `map_pages` map pages in blocks of
/// `ppb` pages, and the fewest an explicit value may give.
pub(super) fn pool_blocks(map_pages: u32, ppb: u32) -> (u32, u32) {
    let live = map_pages.div_ceil(ppb);
    (2 * live + 1, live + 2)
}

impl SuperblockFtl {
    /// Where the page map lives beyond the spares, if it does.
    pub(super) fn home(&self) -> Option<Home> {
        self.mappages.as_ref().map(|c| c.home)
    }

    /// The map page holding superblock `sb`'s part.
    #[inline]
    fn mp_of(&self, sb: u32) -> u32 {
        sb / self.mp().k
    }

    /// Where superblock `sb`'s part starts in its map page.
    #[inline]
    pub(super) fn region(&self, sb: u32) -> usize {
        (sb % self.mp().k) as usize * self.mp().per_sb
    }

    /// The cache slot of the map page holding superblock `sb`'s map, reading it on a
    /// miss (after writing back the evicted entry if dirty).
    pub(super) fn map_lookup(&mut self, flash: &mut Flash, sb: u32) -> usize {
        let mp = self.mp_of(sb);
        if let Some(s) = self.mp().peek_mp(mp) {
            if self.mp().home == Home::Ram {
                return s;
            }
            self.mp_mut().touch(s);
            self.stats.map_hits += 1;
            return s;
        }
        self.stats.map_misses += 1;
        let c = self.mp();
        let s = c.lru.back().expect("map cache has entries") as usize;
        if c.mp[s] != NONE {
            if c.dirty[s] {
                self.write_back(flash, s);
            }
            let c = self.mp_mut();
            let old = c.mp[s];
            c.slot_of[old as usize] = NONE;
        }
        let head = self.map_pgd[mp as usize];
        let len = self.mp().len;
        let fmt = self.mp().fmt;
        let ends = self.map_page_superblocks(mp);
        let c = self.mappages.as_mut().expect("map_page mode");
        c.mp[s] = mp;
        c.slot_of[mp as usize] = s as u32;
        c.dirty[s] = false;
        c.touch(s);
        let dst = &mut c.map[s * len..(s + 1) * len];
        if head == NONE {
            dst.fill(NONE);
        } else {
            flash.read(Ppn(head), Cause::Map);
            self.stats.translation_reads += 1;
            decode(&self.geo, &fmt, self.cfg.n, ends, flash, head, dst);
        }
        s
    }

    /// The superblocks map page `mp` covers.
    fn map_page_superblocks(&self, mp: u32) -> (u32, u32) {
        let k = self.mp().k;
        (mp * k, ((mp + 1) * k).min(self.superblocks))
    }

    /// Writes the map page held in cache slot `s` to flash.
    fn write_back(&mut self, flash: &mut Flash, s: usize) {
        let mp = self.mp().mp[s];
        let mut map = std::mem::take(&mut self.mpbuf);
        match self.mp().home {
            Home::UBlock => {
                // Finding a page may merge the superblock, which updates slot `s` in
                // place (k = 1: the map page number is the superblock's).
                let dst = self.frontier_page(flash, mp);
                map.clear();
                map.extend_from_slice(self.mp().map(s));
                self.program_map_page(flash, mp, dst, &map);
            }
            Home::Pool => {
                map.clear();
                map.extend_from_slice(self.mp().map(s));
                self.pool_write(flash, mp, &map);
            }
            Home::Ram => unreachable!("the map in RAM is never written"),
        }
        self.mpbuf = map;
        self.mp_mut().dirty[s] = false;
    }

    /// Programs `map` as map page `mp` at `dst` and retires the old copy.
    fn program_map_page(&mut self, flash: &mut Flash, mp: u32, dst: Ppn, map: &[u32]) {
        let mut words = std::mem::take(&mut self.mpwords);
        words.clear();
        let (first, end) = self.map_page_superblocks(mp);
        let fmt = self.mp().fmt;
        let per_sb = self.mp().per_sb;
        let mut bits = Bits {
            out: &mut words,
            at: 0,
        };
        for sb in first..end {
            let part = &map[(sb - first) as usize * per_sb..][..per_sb];
            encode(&self.geo, &fmt, self.blocks_of(sb), part, &mut bits);
        }
        let tag = PageTag {
            lpn: Lpn(MAP_LPN),
            version: mp,
        };
        flash.program_payload(dst, tag, &words, Cause::Map);
        self.mpwords = words;
        self.stats.translation_writes += 1;
        let old = self.map_pgd[mp as usize];
        self.map_pgd[mp as usize] = dst.0;
        if old != NONE {
            match self.mp().home {
                Home::UBlock => self.drop_page(flash, Ppn(old)),
                _ => flash.invalidate(Ppn(old)),
            }
        }
    }

    /// Writes map page `mp` into the pool's open block, taking a free pool block when
    /// it is full and collecting a pool block when that was the last free one.
    fn pool_write(&mut self, flash: &mut Flash, mp: u32, map: &[u32]) {
        let ppb = self.geo.pages_per_block;
        let pool = self.pool.as_mut().expect("map pool");
        if pool.open == NONE || flash.write_ptr(Pbn(pool.open)) == ppb {
            let b = pool
                .free
                .pop()
                .expect("the map pool keeps a free block after every write");
            pool.open = b.0;
            if pool.free.is_empty() {
                self.pool_gc(flash);
            }
        }
        let open = Pbn(self.pool.as_ref().expect("map pool").open);
        let dst = self.geo.ppn(open, flash.write_ptr(open));
        self.program_map_page(flash, mp, dst, map);
    }

    /// Collects the pool block with the fewest valid map pages into the open block.
    fn pool_gc(&mut self, flash: &mut Flash) {
        let pool = self.pool.as_ref().expect("map pool");
        let open = pool.open;
        let victim = pool
            .blocks
            .iter()
            .copied()
            .filter(|b| b.0 != open && !flash.is_erased(*b))
            .min_by_key(|b| (flash.valid_count(*b), b.0))
            .expect("the map pool has a block to collect");
        let mut words = std::mem::take(&mut self.mpwords);
        for off in 0..flash.write_ptr(victim) {
            let p = self.geo.ppn(victim, off);
            if !flash.is_valid(p) {
                continue;
            }
            let tag = flash.read(p, Cause::Map);
            words.clear();
            words.extend_from_slice(flash.payload(p).expect("a map page has contents"));
            let o = Pbn(open);
            let dst = self.geo.ppn(o, flash.write_ptr(o));
            assert!(
                flash.write_ptr(o) < self.geo.pages_per_block,
                "map pool: the open block filled during a collection"
            );
            flash.program_payload(dst, tag, &words, Cause::Map);
            flash.invalidate(p);
            self.map_pgd[tag.version as usize] = dst.0;
            self.pool.as_mut().expect("map pool").gc_copies += 1;
        }
        self.mpwords = words;
        flash.erase(victim, Cause::Map);
        self.retirement
            .fixed(victim, flash.erase_count(victim), "map-pool block");
        let pool = self.pool.as_mut().expect("map pool");
        pool.gc_erases += 1;
        pool.free.push(victim);
    }

    /// After a merge: writes the map page holding superblock `sb` (whose whole contents
    /// are `map`) to flash now.
    fn write_map_now(&mut self, flash: &mut Flash, sb: u32, map: &[u32]) {
        let mp = self.mp_of(sb);
        if self.mp().home == Home::Pool {
            return self.pool_write(flash, mp, map);
        }
        let f = self.frontier[sb as usize];
        let dst = if f != NONE && !flash.is_full(Pbn(f)) {
            self.geo.ppn(Pbn(f), flash.write_ptr(Pbn(f)))
        } else {
            if f != NONE {
                self.frontier[sb as usize] = NONE;
            }
            assert!(
                self.sb_len[sb as usize] < self.cfg.max_blocks,
                "superblock {sb}: no room for its map page after a merge"
            );
            if self.free.is_empty() {
                self.retirement.exhausted();
            }
            let b = self
                .free
                .pop_if_any()
                .expect("superblock: no free block for a map page after a merge");
            self.attach(sb, b, true);
            self.frontier[sb as usize] = b.0;
            self.geo.ppn(b, 0)
        };
        self.program_map_page(flash, mp, dst, map);
    }

    /// A merge's "LoadAllMapTable": superblock `sb`'s map from the cache, else one
    /// map-page read.
    pub(super) fn load_map(&mut self, flash: &mut Flash, sb: u32, out: &mut [u32]) {
        let (per_sb, r, mp) = (self.mp().per_sb, self.region(sb), self.mp_of(sb));
        if let Some(s) = self.mp().peek_mp(mp) {
            out[..per_sb].copy_from_slice(&self.mp().map(s)[r..r + per_sb]);
        } else if self.map_pgd[mp as usize] != NONE {
            let head = self.map_pgd[mp as usize];
            flash.read(Ppn(head), Cause::Map);
            self.stats.translation_reads += 1;
            let mut page = std::mem::take(&mut self.mpbuf);
            self.decode_page(flash, mp, &mut page);
            out[..per_sb].copy_from_slice(&page[r..r + per_sb]);
            self.mpbuf = page;
        } else {
            out[..per_sb].fill(NONE);
        }
    }

    /// Map page `mp` as it is on flash, decoded into `page` (no flash operation: for a
    /// merge that has read it already, and for checks).
    fn decode_page(&self, flash: &Flash, mp: u32, page: &mut Vec<u32>) {
        page.clear();
        page.resize(self.mp().len, NONE);
        let head = self.map_pgd[mp as usize];
        if head != NONE {
            let fmt = self.mp().fmt;
            let ends = self.map_page_superblocks(mp);
            decode(&self.geo, &fmt, self.cfg.n, ends, flash, head, page);
        }
    }

    /// The end of a merge: superblock `sb`'s map goes back into the cache (dirty), or,
    /// if its map page is not cached and the map changed, onto flash now; with `flush`
    /// (MergeAll: "flushed [...] when the associated superblock is fully merged") a
    /// dirty cached map page is written too.
    pub(super) fn store_map(
        &mut self,
        flash: &mut Flash,
        sb: u32,
        map: &[u32],
        changed: bool,
        flush: bool,
    ) {
        let (per_sb, r, mp) = (self.mp().per_sb, self.region(sb), self.mp_of(sb));
        let cached = self.mp().peek_mp(mp);
        if let Some(s) = cached {
            self.mp_mut().map_mut(s)[r..r + per_sb].copy_from_slice(&map[..per_sb]);
        }
        if self.mp().home == Home::Ram {
            return;
        }
        if flush && cached.is_some_and(|s| self.mp().dirty[s]) {
            let s = cached.expect("checked");
            let mut page = std::mem::take(&mut self.mpbuf);
            page.clear();
            page.extend_from_slice(self.mp().map(s));
            self.write_map_now(flash, sb, &page);
            self.mpbuf = page;
            self.mp_mut().dirty[s] = false;
        } else if cached.is_none() && changed {
            let mut page = std::mem::take(&mut self.mpbuf);
            self.decode_page(flash, mp, &mut page);
            page[r..r + per_sb].copy_from_slice(&map[..per_sb]);
            self.write_map_now(flash, sb, &page);
            self.mpbuf = page;
        }
    }

    /// Superblock `sb`'s map as the FTL sees it (cache, else flash), for checks.
    fn current_map(&self, flash: &Flash, sb: u32, out: &mut [u32]) -> Result<(), String> {
        let (per_sb, r, mp) = (self.mp().per_sb, self.region(sb), self.mp_of(sb));
        if let Some(s) = self.mp().peek_mp(mp) {
            out.copy_from_slice(&self.mp().map(s)[r..r + per_sb]);
            return Ok(());
        }
        let head = self.map_pgd[mp as usize];
        if head == NONE {
            out.fill(NONE);
            return Ok(());
        }
        match flash.peek_tag(Ppn(head)) {
            Some(t) if t.lpn.0 == MAP_LPN && t.version == mp && flash.is_valid(Ppn(head)) => {
                let mut page = Vec::new();
                self.decode_page(flash, mp, &mut page);
                out.copy_from_slice(&page[r..r + per_sb]);
                Ok(())
            }
            other => Err(format!(
                "map page {mp}: PGD points to ppn{head} holding {other:?}"
            )),
        }
    }

    /// Checks every superblock's map (cached or on flash) against flash; returns the live
    /// pages it accounts for (mapped data pages and current map pages).
    pub(super) fn check_map_pages(&self, flash: &Flash) -> Result<u64, String> {
        let c = self.mp();
        let per_lbn = self.split.pmd_len() * self.split.pt_len();
        let ppb = self.geo.pages_per_block;
        let mut buf = vec![NONE; c.per_sb];
        let mut flashed = Vec::new();
        let mut live = 0u64;
        for sb in 0..self.superblocks {
            self.current_map(flash, sb, &mut buf)?;
            for (e, &p) in buf.iter().enumerate() {
                if p == NONE {
                    continue;
                }
                let (k, o) = ((e / per_lbn) as u32, (e % per_lbn) as u32);
                let lpn = (sb * self.cfg.n + k) * ppb + o;
                let ok = o < ppb
                    && flash.is_valid(Ppn(p))
                    && flash.peek_tag(Ppn(p)).is_some_and(|t| t.lpn.0 == lpn)
                    && self.owner[self.geo.block_of(Ppn(p)).idx()] == sb;
                if !ok {
                    return Err(format!(
                        "lpn{lpn}: map page entry ppn{p} is not its live copy"
                    ));
                }
                live += 1;
            }
        }
        for mp in 0..self.map_pgd.len() as u32 {
            let head = self.map_pgd[mp as usize];
            if head == NONE {
                continue;
            }
            let owner = self.owner[self.geo.block_of(Ppn(head)).idx()];
            let home_ok = match c.home {
                Home::UBlock => owner == mp,
                Home::Pool => owner == OWN_MAP_POOL,
                Home::Ram => false,
            };
            if !home_ok || !flash.is_valid(Ppn(head)) {
                return Err(format!("map page {mp} at ppn{head} in a wrong block"));
            }
            live += 1;
            if let Some(s) = c.peek_mp(mp) {
                if !c.dirty[s] {
                    self.decode_page(flash, mp, &mut flashed);
                    if flashed[..] != *c.map(s) {
                        return Err(format!("map page {mp}: clean cached copy differs"));
                    }
                }
            }
        }
        Ok(live)
    }

    /// Checks the map pool's blocks and marks them seen; every valid page in them must
    /// be the current copy of a map page.
    pub(super) fn check_pool(&self, flash: &Flash, seen: &mut [bool]) -> Result<(), String> {
        let Some(pool) = &self.pool else {
            return Ok(());
        };
        for &b in &pool.blocks {
            if self.owner[b.idx()] != OWN_MAP_POOL || seen[b.idx()] {
                return Err(format!("map-pool {b:?} is also in use"));
            }
            seen[b.idx()] = true;
            for off in 0..flash.write_ptr(b) {
                let p = self.geo.ppn(b, off);
                if flash.is_valid(p) {
                    let t = flash.peek_tag(p).expect("programmed");
                    if t.lpn.0 != MAP_LPN || self.map_pgd.get(t.version as usize) != Some(&p.0) {
                        return Err(format!("{p:?} in the map pool holds {t:?}"));
                    }
                }
            }
        }
        for b in &pool.free {
            if !flash.is_erased(*b) {
                return Err(format!("free map-pool {b:?} is not erased"));
            }
        }
        if pool.free.is_empty() {
            return Err("the map pool has no free block".into());
        }
        Ok(())
    }

    fn mp(&self) -> &MapPageCache {
        self.mappages.as_ref().expect("map_page mode")
    }

    fn mp_mut(&mut self) -> &mut MapPageCache {
        self.mappages.as_mut().expect("map_page mode")
    }
}

/// Packs one superblock's part: PBMT length, PBMT (padded to its N + M entries), PTEs
/// (all ones: unmapped).
fn encode(
    geo: &ftlab_core::geometry::Geometry,
    fmt: &Format,
    blocks: &[u32],
    part: &[u32],
    bits: &mut Bits<'_>,
) {
    let p = fmt.page_bits;
    bits.put(blocks.len() as u32, fmt.len_bits);
    for i in 0..fmt.pbmt as usize {
        bits.put(blocks.get(i).copied().unwrap_or(0), fmt.pbn_bits);
    }
    let none = (1u32 << fmt.pte_bits()) - 1;
    for &ppn in part {
        let v = if ppn == NONE {
            none
        } else {
            let b = geo.block_of(Ppn(ppn)).0;
            let idx = blocks
                .iter()
                .position(|&x| x == b)
                .unwrap_or_else(|| panic!("map page: ppn{ppn} outside its superblock's blocks"));
            (idx as u32) << p | geo.offset_of(Ppn(ppn))
        };
        bits.put(v, fmt.pte_bits());
    }
}

/// Unpacks the map page at `ppn` (covering superblocks `ends.0..ends.1` of `n` logical
/// blocks each) into absolute page numbers.
fn decode(
    geo: &ftlab_core::geometry::Geometry,
    fmt: &Format,
    n: u32,
    ends: (u32, u32),
    flash: &Flash,
    ppn: u32,
    out: &mut [u32],
) {
    let w = flash
        .payload(Ppn(ppn))
        .unwrap_or_else(|| panic!("map page at ppn{ppn} has no contents"));
    let p = fmt.page_bits;
    let none = (1u32 << fmt.pte_bits()) - 1;
    let per_sb = fmt.ptes as usize;
    let per_lbn = per_sb / n as usize;
    let mut at = 0u64;
    for (i, sb) in (ends.0..ends.1).enumerate() {
        let len = get(w, at, fmt.len_bits) as usize;
        at += fmt.len_bits as u64;
        let pbmt: Vec<u32> = (0..fmt.pbmt as u64)
            .map(|j| get(w, at + j * fmt.pbn_bits as u64, fmt.pbn_bits))
            .collect();
        at += fmt.pbmt as u64 * fmt.pbn_bits as u64;
        for (e, slot) in out[i * per_sb..(i + 1) * per_sb].iter_mut().enumerate() {
            let v = get(w, at, fmt.pte_bits());
            at += fmt.pte_bits() as u64;
            let idx = (v >> p) as usize;
            let target = (idx < len).then(|| geo.ppn(Pbn(pbmt[idx]), v & ((1 << p) - 1)));
            *slot = match target {
                Some(t) if v != none => t.0,
                // All ones: unmapped, unless it names the entry's live copy.
                Some(t) => {
                    let lpn = (sb * n + (e / per_lbn) as u32) * geo.pages_per_block
                        + (e % per_lbn) as u32;
                    let live =
                        flash.is_valid(t) && flash.peek_tag(t).is_some_and(|tag| tag.lpn.0 == lpn);
                    if live {
                        t.0
                    } else {
                        NONE
                    }
                }
                None => NONE,
            };
        }
    }
}
