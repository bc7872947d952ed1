//! SB-P: page-level mapping kept in map pages instead of spare areas
//! (superblock-ftl.txt §4.2.3, Fig. 8, §5.8).
//!
//! "Superblock FTL may adopt an alternative strategy, which keeps the page-level mapping
//! information in a separate page called a map page. [...] each PGD entry keeps track of
//! the location of each map page. [...] Superblock FTL caches map pages like the map
//! cache. When the page-level mapping information is modified, the cached page buffers
//! the update instead of writing the map page to flash. The page is flushed to flash
//! memory either when the associated superblock is fully merged or when the dirty map
//! page needs to be evicted from the cache."
//!
//! Choices the paper leaves open:
//! - One map page per superblock (Fig. 8's k = 1); the PGD has one entry per superblock.
//!   A map page holds the superblock's PBMT (24-bit block numbers) and every PTE of its N
//!   logical blocks as a PBMT index plus a page index (two levels, no PMD). The layout is
//!   checked against the page size like SB-S's against the spare size; it allows far more
//!   blocks per superblock than the spare area (the limit is 2^b for b-bit indexes).
//! - `max_u_blocks = auto` is N in this mode (§4.2.3's example: N = 4, M = 4).
//! - A map page is written into its own superblock's current U-block, like data (the
//!   paper reserves map pages in the superblock's blocks: "if a map page is written in a
//!   block more than twice, the block should be fully merged later", §5.8). The previous
//!   map page becomes invalid; a block whose only live page is a map page is not switched.
//! - The cache holds whole map pages (default 16 entries; the paper uses 4 for its
//!   multimedia traces), least recently used out; a dirty one is written back on
//!   eviction. A miss reads the map page (a page read, `translation_reads`); a write-back
//!   is a page program (`translation_writes`), both under [`Cause::Map`].
//! - Merges load the superblock's map once (from the cache, or one map-page read). A map
//!   page met in a block being compacted is not copied but dropped, and the map is
//!   rewritten at the end of the merge: after a MergeAll always ("fully merged"), after a
//!   MergeSome into the cache (dirty) if the superblock's map is cached, else at once. It
//!   goes into the superblock's current U-block, or a new one (a MergeAll has freed one).
//! - Trims just clear the cached PTE (the page is dirty); no carrier page is needed.
//! - Power-loss recovery is not implemented for SB-P (snapshots = on is refused, and the
//!   FTL reports recovery as unsupported): the dirty map pages in RAM would need the
//!   U-block scan of §4.4 matched against map pages, which we did not build.
//! - `mapping_bytes`: the PGD (4 bytes per superblock) plus one page of RAM per cache
//!   entry (§5.9: "PageSize x n").

use super::cache::NONE;
use super::layout::page_bits;
use super::SuperblockFtl;
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::lru::Lru;
use ftlab_core::{Lpn, PageTag, Pbn, Ppn};

/// Spare tag LPN of map pages (the version field holds the superblock number).
pub(super) const MAP_LPN: u32 = u32::MAX - 4;
/// A PTE that maps nothing, packed.
const NO_PTE: u32 = 0xFFFF;

/// Blocks a superblock may use when its map page of `page_size` bytes holds `ptes`
/// entries for blocks of `pages_per_block` pages (PBMT of 24-bit entries + PTEs of a
/// block index and a page index, byte-rounded groups), or why it does not fit.
pub(super) fn map_page_limit(
    page_size: u32,
    ptes: u32,
    pages_per_block: u32,
) -> Result<u32, String> {
    let p = page_bits(pages_per_block);
    let mut best = 0;
    for b in 1..=(16 - p).min(8) {
        let pte_bytes = (ptes * b).div_ceil(8) + (ptes * p).div_ceil(8);
        if pte_bytes + 3 > page_size {
            continue;
        }
        best = best.max(((page_size - pte_bytes) / 3).min(1 << b));
    }
    if best == 0 {
        return Err(format!(
            "a map page of {page_size} bytes cannot hold {ptes} page-table entries and a PBMT"
        ));
    }
    Ok(best)
}

/// Whole map pages cached in RAM, decoded to absolute page numbers.
#[derive(Clone, Debug)]
pub(super) struct MapPageCache {
    /// Entries per map page (N logical blocks x 2^(m+t)).
    len: usize,
    sb: Vec<u32>,
    dirty: Vec<bool>,
    /// Every slot, most recently used first; slots never used are at the back, the
    /// lowest number last, so they fill up in order before anything is evicted.
    lru: Lru,
    map: Vec<u32>,
    slot_of: Vec<u32>,
}

impl MapPageCache {
    pub(super) fn new(entries: usize, superblocks: u32, len: usize) -> MapPageCache {
        MapPageCache {
            len,
            sb: vec![NONE; entries],
            dirty: vec![false; entries],
            lru: {
                let mut lru = Lru::new(entries as u32);
                (0..entries as u32).for_each(|s| lru.push_front(s));
                lru
            },
            map: vec![NONE; entries * len],
            slot_of: vec![NONE; superblocks as usize],
        }
    }

    pub(super) fn entries(&self) -> usize {
        self.sb.len()
    }

    pub(super) fn peek(&self, sb: u32) -> Option<usize> {
        let s = self.slot_of[sb as usize];
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
        self.lru.touch(s as u32);
    }
}

impl SuperblockFtl {
    /// The cache slot of superblock `sb`'s map page, reading it on a miss (after writing
    /// back the evicted entry if dirty).
    pub(super) fn map_lookup(&mut self, flash: &mut Flash, sb: u32) -> usize {
        if let Some(s) = self.mp().peek(sb) {
            self.mp_mut().touch(s);
            self.stats.map_hits += 1;
            return s;
        }
        self.stats.map_misses += 1;
        let c = self.mp();
        let s = c.lru.back().expect("map cache has entries") as usize;
        if c.sb[s] != NONE {
            if c.dirty[s] {
                self.write_back(flash, s);
            }
            let c = self.mp_mut();
            let old = c.sb[s];
            c.slot_of[old as usize] = NONE;
        }
        let head = self.map_pgd[sb as usize];
        let len = self.mp().len;
        let c = self.mappages.as_mut().expect("map_page mode");
        c.sb[s] = sb;
        c.slot_of[sb as usize] = s as u32;
        c.dirty[s] = false;
        c.touch(s);
        let dst = &mut c.map[s * len..(s + 1) * len];
        if head == NONE {
            dst.fill(NONE);
        } else {
            flash.read(Ppn(head), Cause::Map);
            self.stats.translation_reads += 1;
            decode(&self.geo, flash, head, dst);
        }
        s
    }

    /// Writes the map page held in cache slot `s` into its superblock's current U-block.
    fn write_back(&mut self, flash: &mut Flash, s: usize) {
        let sb = self.mp().sb[s];
        // Finding a page may merge `sb`, which updates slot `s` in place.
        let dst = self.frontier_page(flash, sb);
        let map = std::mem::take(&mut self.mpbuf);
        let mut map = map;
        map.clear();
        map.extend_from_slice(self.mp().map(s));
        self.program_map_page(flash, sb, dst, &map);
        self.mpbuf = map;
        self.mp_mut().dirty[s] = false;
    }

    /// Programs `map` as superblock `sb`'s map page at `dst` and retires the old one.
    pub(super) fn program_map_page(&mut self, flash: &mut Flash, sb: u32, dst: Ppn, map: &[u32]) {
        let mut words = std::mem::take(&mut self.mpwords);
        words.clear();
        encode(&self.geo, self.blocks_of(sb), map, &mut words);
        let tag = PageTag {
            lpn: Lpn(MAP_LPN),
            version: sb,
        };
        flash.program_payload(dst, tag, &words, Cause::Map);
        self.mpwords = words;
        self.stats.translation_writes += 1;
        let old = self.map_pgd[sb as usize];
        self.map_pgd[sb as usize] = dst.0;
        if old != NONE {
            self.drop_page(flash, Ppn(old));
        }
    }

    /// After a merge of an uncached superblock: writes its map page into its current
    /// U-block, or a new one from the free list.
    pub(super) fn write_map_now(&mut self, flash: &mut Flash, sb: u32, map: &[u32]) {
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
        self.program_map_page(flash, sb, dst, map);
    }

    /// A merge's "LoadAllMapTable": the map of `sb` from the cache, else one map-page read.
    pub(super) fn load_map(&mut self, flash: &mut Flash, sb: u32, out: &mut [u32]) {
        let len = self.mp().len;
        if let Some(s) = self.mp().peek(sb) {
            out[..len].copy_from_slice(self.mp().map(s));
        } else if self.map_pgd[sb as usize] != NONE {
            let head = self.map_pgd[sb as usize];
            flash.read(Ppn(head), Cause::Map);
            self.stats.translation_reads += 1;
            decode(&self.geo, flash, head, &mut out[..len]);
        } else {
            out[..len].fill(NONE);
        }
    }

    /// The end of a merge: the map goes back into the cache (dirty), or, if `sb` is not
    /// cached and the map changed, onto flash now ("flushed [...] when the associated
    /// superblock is fully merged").
    pub(super) fn store_map(
        &mut self,
        flash: &mut Flash,
        sb: u32,
        map: &[u32],
        changed: bool,
        flush: bool,
    ) {
        let len = self.mp().len;
        let cached = self.mp().peek(sb);
        if let Some(s) = cached {
            self.mp_mut().map_mut(s).copy_from_slice(&map[..len]);
        }
        if flush && cached.is_some_and(|s| self.mp().dirty[s]) || cached.is_none() && changed {
            self.write_map_now(flash, sb, &map[..len]);
            if let Some(s) = cached {
                self.mp_mut().dirty[s] = false;
            }
        }
    }

    /// The map of superblock `sb` as the FTL sees it (cache, else flash), for checks.
    pub(super) fn current_map(
        &self,
        flash: &Flash,
        sb: u32,
        out: &mut [u32],
    ) -> Result<(), String> {
        if let Some(s) = self.mp().peek(sb) {
            out.copy_from_slice(self.mp().map(s));
            return Ok(());
        }
        let head = self.map_pgd[sb as usize];
        if head == NONE {
            out.fill(NONE);
            return Ok(());
        }
        match flash.peek_tag(Ppn(head)) {
            Some(t) if t.lpn.0 == MAP_LPN && t.version == sb && flash.is_valid(Ppn(head)) => {
                decode(&self.geo, flash, head, out);
                Ok(())
            }
            other => Err(format!(
                "superblock {sb}: PGD points to ppn{head} holding {other:?}"
            )),
        }
    }

    /// Checks every superblock's map (cached or on flash) against flash; returns the live
    /// pages it accounts for (mapped data pages and current map pages).
    pub(super) fn check_map_pages(&self, flash: &Flash) -> Result<u64, String> {
        let c = self.mp();
        let per_lbn = self.split.pmd_len() * self.split.pt_len();
        let ppb = self.geo.pages_per_block;
        let mut buf = vec![NONE; c.len];
        let mut flashed = vec![NONE; c.len];
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
            let head = self.map_pgd[sb as usize];
            if head != NONE {
                if self.owner[self.geo.block_of(Ppn(head)).idx()] != sb {
                    return Err(format!(
                        "superblock {sb}: map page ppn{head} in another's block"
                    ));
                }
                live += 1;
                if let Some(s) = c.peek(sb) {
                    if !c.dirty[s] {
                        decode(&self.geo, flash, head, &mut flashed);
                        if flashed[..] != *c.map(s) {
                            return Err(format!("superblock {sb}: clean cached map differs"));
                        }
                    }
                }
            }
        }
        Ok(live)
    }

    fn mp(&self) -> &MapPageCache {
        self.mappages.as_ref().expect("map_page mode")
    }

    fn mp_mut(&mut self) -> &mut MapPageCache {
        self.mappages.as_mut().expect("map_page mode")
    }
}

/// Packs a map page: `[pbmt_len, pbmt..., PTE pairs]`, each PTE a PBMT index and a page
/// index in 16 bits.
fn encode(geo: &ftlab_core::geometry::Geometry, blocks: &[u32], map: &[u32], out: &mut Vec<u32>) {
    let p = page_bits(geo.pages_per_block);
    out.push(blocks.len() as u32);
    out.extend_from_slice(blocks);
    let pte = |ppn: u32| -> u32 {
        if ppn == NONE {
            return NO_PTE;
        }
        let b = geo.block_of(Ppn(ppn)).0;
        let idx = blocks
            .iter()
            .position(|&x| x == b)
            .unwrap_or_else(|| panic!("map page: ppn{ppn} outside its superblock's blocks"));
        (idx as u32) << p | geo.offset_of(Ppn(ppn))
    };
    for pair in map.chunks(2) {
        let lo = pte(pair[0]);
        let hi = pair.get(1).map_or(NO_PTE, |&x| pte(x));
        out.push(lo | hi << 16);
    }
}

/// Unpacks the map page at `ppn` into absolute page numbers.
fn decode(geo: &ftlab_core::geometry::Geometry, flash: &Flash, ppn: u32, out: &mut [u32]) {
    let w = flash
        .payload(Ppn(ppn))
        .unwrap_or_else(|| panic!("map page at ppn{ppn} has no contents"));
    let p = page_bits(geo.pages_per_block);
    let n = w[0] as usize;
    let (pbmt, ptes) = (&w[1..1 + n], &w[1 + n..]);
    for (k, e) in out.iter_mut().enumerate() {
        let v = (ptes[k / 2] >> (16 * (k % 2))) & 0xFFFF;
        *e = if v == NO_PTE {
            NONE
        } else {
            geo.ppn(Pbn(pbmt[(v >> p) as usize]), v & ((1 << p) - 1)).0
        };
    }
}
