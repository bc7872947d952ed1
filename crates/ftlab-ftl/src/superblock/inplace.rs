//! In-place D-blocks: the SB-n-IP variants of superblock-ftl.txt Table VI (§5.4).
//!
//! "D-blocks are arranged by the in-place scheme in SB-1-IP and SB-4-IP and by the
//! out-of-place scheme in SB-1-OOP and SB-4-OOP. [...] The in-place scheme requires extra
//! full merge operations to meet the programming restriction of the large block SLC or
//! MLC NAND flash memory." The paper gives no algorithm for the IP variants; ours:
//! - Writes are logged into U-blocks exactly as out of place; only merges differ. A
//!   merge must leave every logical block's pages at their own offsets in one D-block, and
//!   pages of a block can only be programmed in ascending order, so each logical block is
//!   merged on its own, in offset order:
//!   - already in place in one block (e.g. written sequentially into a fresh U-block):
//!     that block becomes its D-block, no copy (the old D-block was already reclaimed by a
//!     switch merge when its last page became invalid);
//!   - the block holding offset 0 has only this logical block's pages, in place, and free
//!     pages after them: the missing tail is copied into it (partial merge);
//!   - otherwise every page is copied into a reserved block (full merge).
//! - An offset with no live page before the last live one is programmed with a filler
//!   page (counted in `extra.ip_filler_pages`, under [`Cause::Merge`]) because the next
//!   offset cannot be programmed without it.
//! - Blocks a merge empties are erased and counted as merges of the kind (partial or
//!   full) of the merge that emptied them.
//! - MergeSome merges logical blocks in ascending order until it has freed two blocks (or
//!   as many as in-place D-blocks allow); MergeAll merges all of them. There is no hot/cold
//!   separation: in place, a page cannot leave its logical block's D-block.
//! - N blocks are kept in reserve (each logical block may need a new D-block before any
//!   old block empties), and a superblock may hold them beyond its N + M limit while the
//!   merge runs.

use super::cache::NONE;
use super::snapshot::Event;
use super::SuperblockFtl;
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::{Lpn, PageTag, Pbn, Ppn};

/// Spare tag LPN of filler pages.
const FILLER_LPN: u32 = u32::MAX - 3;

impl SuperblockFtl {
    /// The live page of offset `o` of logical block `k` of the loaded superblock.
    fn ws_loc(&self, k: usize, o: u32) -> u32 {
        let t = self.split.t;
        self.ws.pt(k, (o >> t) as usize)[(o & ((1 << t) - 1)) as usize]
    }

    /// Marks `b` a D-block of `sb`; it no longer receives writes.
    fn adopt_d(&mut self, sb: u32, b: u32) {
        if self.is_u[b as usize] {
            self.is_u[b as usize] = false;
            self.nu[sb as usize] -= 1;
            if self.nu[sb as usize] == 0 {
                self.lru.remove(sb);
            }
        }
        self.hot[b as usize] = false;
        if self.frontier[sb as usize] == b {
            self.frontier[sb as usize] = NONE;
            self.note(Event::Abandon { sb });
        }
    }

    /// The block holding offset 0 of logical block `k` in place, if it holds nothing else,
    /// every live page of `k` below its write pointer is in place in it, and it has free
    /// pages for the rest.
    fn prefix_block(&self, flash: &Flash, k: usize) -> Option<u32> {
        let loc0 = self.ws_loc(k, 0);
        if loc0 == NONE || self.geo.offset_of(Ppn(loc0)) != 0 {
            return None;
        }
        let b = self.geo.block_of(Ppn(loc0));
        if flash.is_full(b) {
            return None;
        }
        let mut mine = 0;
        for o in 0..flash.write_ptr(b) {
            let loc = self.ws_loc(k, o);
            if loc == self.geo.ppn(b, o).0 {
                mine += 1;
            } else if loc != NONE {
                return None;
            }
        }
        (mine == flash.valid_count(b)).then_some(b.0)
    }

    /// Reorganises logical block `k` of superblock `sb` (work area loaded) into one
    /// in-place D-block.
    fn merge_lbn_ip(&mut self, flash: &mut Flash, sb: u32, k: usize) {
        let ppb = self.geo.pages_per_block;
        let (mut last, mut count, mut b0, mut in_place) = (None, 0, NONE, true);
        for o in 0..ppb {
            let loc = self.ws_loc(k, o);
            if loc == NONE {
                continue;
            }
            let b = self.geo.block_of(Ppn(loc)).0;
            if b0 == NONE {
                b0 = b;
            }
            in_place &= b == b0 && self.geo.offset_of(Ppn(loc)) == o;
            count += 1;
            last = Some(o);
        }
        let Some(last) = last else {
            return;
        };
        if in_place && flash.valid_count(Pbn(b0)) == count {
            self.adopt_d(sb, b0);
            return;
        }
        let (dest, full) = match self.prefix_block(flash, k) {
            Some(b) => (b, false),
            None => {
                let d = self
                    .reserved
                    .pop()
                    .expect("superblock: reserved block missing during an in-place merge");
                self.attach(sb, d, false);
                self.note_now(flash, Event::Alloc { sb, pbn: d.0 });
                (d.0, true)
            }
        };
        for o in flash.write_ptr(Pbn(dest))..=last {
            let dst = self.geo.ppn(Pbn(dest), o);
            let loc = self.ws_loc(k, o);
            if loc != NONE {
                self.copy_ws(flash, Ppn(loc), dst);
            } else {
                let filler = PageTag {
                    lpn: Lpn(FILLER_LPN),
                    version: 0,
                };
                flash.program(dst, filler, Cause::Merge);
                flash.invalidate(dst);
                self.counters.ip_filler_pages += 1;
            }
        }
        self.adopt_d(sb, dest);
        self.reclaim_emptied(flash, sb, full);
    }

    /// Erases the blocks of `sb` that hold no valid page any more.
    fn reclaim_emptied(&mut self, flash: &mut Flash, sb: u32, full: bool) {
        let mut k = 0;
        while k < self.sb_len[sb as usize] as usize {
            let b = Pbn(self.blocks_of(sb)[k]);
            if flash.valid_count(b) > 0 {
                k += 1;
                continue;
            }
            self.reclaim_empty(flash, sb, b);
            if full {
                self.stats.merges_full += 1;
            } else {
                self.stats.merges_partial += 1;
            }
        }
    }

    /// MergeSome for in-place D-blocks.
    pub(super) fn merge_some_ip(&mut self, flash: &mut Flash, sb: u32) {
        self.load_ws(flash, sb);
        let start = self.sb_len[sb as usize] as i64;
        let target = (start - self.need_blocks(flash, sb) as i64).min(2);
        assert!(
            target >= 1,
            "superblock {sb}: at its block limit with every block needed"
        );
        for k in 0..self.lbns_of(sb) as usize {
            if start - self.sb_len[sb as usize] as i64 >= target {
                break;
            }
            self.merge_lbn_ip(flash, sb, k);
        }
        self.store_ws(flash, sb);
        self.maybe_promote(sb);
    }

    /// MergeAll for in-place D-blocks: every logical block gets its own in-place D-block.
    pub(super) fn merge_all_ip(&mut self, flash: &mut Flash, sb: u32) {
        self.load_ws(flash, sb);
        for k in 0..self.lbns_of(sb) as usize {
            self.merge_lbn_ip(flash, sb, k);
        }
        self.mark_all_d(sb, true);
        self.store_ws(flash, sb);
    }
}
