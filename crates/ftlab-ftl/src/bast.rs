//! `bast`: the log block scheme (BAST, Kim et al. 2002): at most one log block per data
//! block.
//!
//! Sources: superblock-ftl.txt §2.3 (D-blocks and U-blocks, full/partial/switch merges,
//! Fig. 3), §2.4 ("the log block scheme"), §3.3 Fig. 4(a) (worked example 1 of
//! SCHEMES.md) and §5.1 (U_avg); co-op-buffer-ftl.txt §2.4.1 (merges decided by how the
//! log block was written; LRU reclaim when free blocks run out) and Table 3 (the CO-OP
//! queries).
//!
//! Data blocks are in-place (logical page `o` at offset `o`); a log block is written
//! out of place, page after page, with a page map for log blocks only. A log block is
//! merged with its data block when it is full, or earlier when another logical block
//! needs a log block and none is left (the least recently written log block is
//! reclaimed):
//! - switch: the log block was written in order (slot `i` holds offset `i`) and the data
//!   block has no valid page left: the log block becomes the data block, the data block
//!   is erased (1 erase, 0 copies);
//! - partial: written in order from offset 0, but the data block still holds valid
//!   pages (after the written part): they are copied into the rest of the log block,
//!   which becomes the data block, and the data block is erased (1 erase);
//! - full: written out of order: every valid page of the pair is copied into a free
//!   block, which becomes the data block, and both old blocks are erased (2 erases).
//!
//! Choices the papers leave open, as options or documented defaults:
//! - `log_blocks` (default `auto`): how many log blocks may be allocated at once. `auto`
//!   gives every spare block (physical minus logical) except one, the free block a full
//!   merge copies into; the log-block share is then set with `--op` (the papers use
//!   2.5-5% of capacity: superblock-ftl.txt §5.1, co-op-buffer-ftl.txt §6.1 and §6.6).
//!   Spare blocks beyond `log_blocks + 1` stay unused.
//! - Writes in place: a page goes to its data block when the data block's next free
//!   page is the page's own offset (superblock-ftl.txt §2.3: "When there is a write
//!   request to one of the pages and the write request cannot be accommodated in the
//!   corresponding D-block, FTL allocates a U-block"); a logical block with no data
//!   block and no log block gets a data block when it is first written at offset 0.
//!   Other writes go to the log block.
//! - When a log block fills up it is merged at once (co-op-buffer-ftl.txt §2.4.1:
//!   "Write requests ... can be written in its allocated log block until all empty log
//!   pages are consumed, when FTL merges the log block").
//! - LRU order counts log writes only (reads do not touch log blocks).
//! - A merge whose pages are all gone (every page trimmed) still erases both blocks and
//!   is counted as a full merge; no empty data block is allocated.
//! - A log block of a logical block that has no data block is "switched" (it becomes
//!   the data block, 0 erases) when written in order, else fully merged.
//! - `mapping_bytes`: the LBN -> data block table, the LBN -> log block table, the log
//!   block descriptors, the per-log-block page map (2 bytes per log page: offset ->
//!   slot), the LRU links and the free-descriptor stack, all 4-byte entries unless said.
//!
//! Options for the co-optimised buffers (issue 8; co-op-buffer-ftl.txt), off by
//! default so that plain `bast` is the scheme above:
//! - `osm`: Optimized Switch Merge (§5.1.2). "If FTL receives a complete-block flush
//!   from BML to one of the pre-allocated log blocks, it writes the buffer flush to a
//!   free block instead of the pre-allocated log block, and the fully-written free block
//!   becomes the new data block. Thereafter, the corresponding data and the
//!   pre-allocated log blocks are simply reclaimed by two erase operations." A complete
//!   block is a group of every page of a logical block ("by checking the first-page
//!   offset and length without an additional interface"), whoever sends it; a complete
//!   group for a block with no log block takes the ordinary path ("original switch
//!   merges take place"). Counted in `merges_osm`, and the log block in U_avg.
//! - `ba_gc`: BA-GC's FTL side (§3), active when the buffer lends a view
//!   ([`GroupInfo::buffer`], the `bagc` buffer): BA-VBS picks the log block to reclaim
//!   when none is free by the most dirty cold buffer pages of its logical block, ties to
//!   the least recently written, and, as §6 adapts BA-GC to BAST, "a log block that
//!   reserves enough free pages for accommodating the dirty buffer pages to be flushed
//!   is excepted from candidates" (read as: a block with dirty buffer pages that all fit
//!   its log block's free pages; when every log block is excepted the LRU one goes);
//!   BA-BM takes, in a full merge, every page the buffer holds dirty from the buffer
//!   instead of flash (no read; the old flash copy is dropped) and marks it clean
//!   there. Partial merges copy from flash as before (§6.2 speaks of "full merge-based
//!   BA-BM"). A full merge that took a page from the buffer is counted in
//!   `merges_ba_bm` instead of `merges_full`; its buffer pages are programmed (cause
//!   merge) and counted as copied. While it writes a group from such a buffer the FTL
//!   marks each page clean just before programming it, and skips pages a BA-BM merge
//!   has already written.
//! - A switch merge of a logical block whose group the buffer padded (the group being
//!   written when the merge happens) is counted in `merges_padding_switch` (PSM,
//!   §6.3) instead of `merges_switch`.
//!
//! Power-loss recovery ([`Ftl::recover`], not in the papers):
//! - Nothing is checkpointed. Recovery reads the spare area of every programmed page
//!   once (`Cause::Recovery`; `logblock::Scan`) and derives every role from the tags.
//!   Between two requests every programmed block is the data block or the log block
//!   of one logical block (merges erase what they empty before the request ends; a
//!   full log is merged at once), so a block holding pages of two logical blocks is
//!   [`RecoverError::Failed`]; a third block for one, or a full log, is what a power
//!   cut inside a merge leaves (see "Torn operations" below).
//! - A block whose pages all sit at their own offsets is a data block, or a log
//!   written in order: a logical block with two such blocks has a data block and an
//!   in-order log, told apart by `Scan::data_and_log` (the one with fillers is the
//!   data block, else the shorter, else the newer). A block with a page away from its
//!   offset is a log written out of order; its logical block may have one data block
//!   beside it. A logical block with one in-place block and no other has no log: a log
//!   opened without a data block starts past offset 0, so it is never in place.
//! - Live copies: per LPN, the newest version on flash; a log copy wins a tie with the
//!   data block's (a buffer's padding rewrites a page with its version; the log's
//!   in-order pages must stay the valid ones), and in a log the last slot holding the
//!   offset wins. Fillers are never mapped; trims are RAM-only, so a trimmed page still
//!   on flash comes back.
//! - LRU order is lost (no tag records time): log blocks are ranked by block number,
//!   the lowest least recently written, and take descriptors in that order. The free
//!   pool is the erased blocks in block-number order. More log blocks than `log_blocks`
//!   is [`RecoverError::Failed`].
//! - `osm` and `ba_gc` keep no state between requests, so they work on after recovery.
//! - Cost: one spare read per programmed page, no page read, program or erase.
//! - Wear levelling (issue 23 item 3, not in the papers): `wear_leveling = "off"`
//!   (default: free blocks first-in first-out), `"dynamic"` (the least-erased free
//!   block first) or `"static"` (dynamic, and past a spread of `wl_threshold`, default
//!   16, the least-erased data block moves to the most-worn free block: a full merge
//!   with no log, under `Cause::Gc`, counted as `wl_migrations` / `wl_pages_copied`);
//!   the pool, the move and what is left open are in `logblock.rs` (`logblock::level`).
//!   After a power loss the pool and the set of blocks in use are rebuilt from the
//!   erase counts on flash.
//!   When the coldest block in use is a log block, static levelling merges it (the
//!   scheme's own merge of that log, counted as a merge as usual and also as a
//!   levelling move; a cold logical block's log can otherwise sit in the LRU list for
//!   long: on the unit test's workload the spread stayed at 20 without this, 4 with it).
//! - Endurance (issue 23 item 4, not in the papers): `pe_limit` (default 0: never); a
//!   block erased `pe_limit` times retires as it returns to the pool (`logblock.rs`,
//!   [`ftlab_core::wear::Retirement`]) and the scheme works on while its data blocks,
//!   log blocks and one merge reserve are left (under `log_blocks = auto` that is every
//!   block, so the first retirement ends the device), then raises `WornOut`. Recovery re-derives retirement from the erase counts.

//!
//! Torn operations (issue 25 item 3: power lost inside a flash operation,
//! `ftlab_core::flash`; not in the papers). BAST's orders are power-safe as the papers
//! give them: a merge programs its destination whole before it erases the blocks it
//! replaces, a page's old copy is dropped in RAM only, and the log block a write may
//! have to open reclaims another logical block's log; no page is ever only in RAM.
//! What a cut leaves, recovery repairs before it assigns roles (`logblock::repair`,
//! shared with `fast` and `block`):
//! - a block none of whose pages reads back (a torn erase, a torn first program) is
//!   garbage: erased;
//! - a logical block whose blocks are no data block and log block BAST can run on (a
//!   torn page in one of them, a full log: a cut between the log's last program and
//!   its merge; a merge's destination partly written beside the data and log blocks it
//!   replaces; an in-order log a partial merge was completing, with fillers like the
//!   data block) first loses, one at a time, the blocks that hold nothing another
//!   block does not hold as new (a cut merge's destination holds copies; the sources
//!   of a merge cut in its erases hold what the destination holds); if it still does
//!   not fit, its newest copies are merged into a free block and its old blocks erased
//!   (the merge done again); "more than a data and a log block" is no longer refused.
//!   With no free block (the cut struck a merge or OSM write that took the last one),
//!   the destination, the in-place block whose pages are the newest of all, is erased:
//!   the logical block is back to before that merge; only the cut request's own pages
//!   (OSM, BA-BM) go, which the oracle accepts;
//! - more in-order logs than `log_blocks` (a cut levelling move's destination taken
//!   for a log): one that holds nothing new is erased, else its logical block's
//!   in-place blocks are merged into a free block.
//!
//! So no torn page is left in a data or log block, and a log never continues after
//! one. Every repair keeps each page's newest version on flash (but the cut request's
//! pages of a dropped destination) and is done under `Cause::Recovery`; a loss inside
//! a repair leaves garbage or a redundant block, which the next recovery repairs. Cost:
//! one spare scan more per repair step, and the copies of a merge done again.
use crate::auto::AutoOr;
use crate::logblock::{
    self, compose, Copies, FreePool, Group, MergeCounters, Scan, Src, MIXED, NONE,
};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{Answer, BufferView, Ftl, FtlStats, GroupInfo, Query, RecoverError};
use ftlab_core::geometry::Geometry;
use ftlab_core::lru::Lru;
use ftlab_core::options::{geometry_error, JsonSchema, SchemeError};
use ftlab_core::wear::{self, WearLeveling};
use ftlab_core::{Lbn, Lpn, PageTag, PageWrite, Pbn, Ppn};
use serde::{Deserialize, Serialize};

/// Scheme id in the registry and in errors.
pub const ID: &str = "bast";

/// Options of the `bast` FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BastOptions {
    /// Log blocks allocatable at once; auto: every spare block but the merge reserve,
    /// so --op sets it (papers: 2.5-5% of capacity).
    #[schemars(range(min = 1))]
    pub log_blocks: AutoOr<u32>,
    /// Optimized Switch Merge: a complete-block write to a block with a log block goes
    /// to a free block (co-op-buffer-ftl.txt §5.1.2).
    pub osm: bool,
    /// BA-GC with a bagc buffer: BA-VBS victim choice and BA-BM full merges
    /// (co-op-buffer-ftl.txt §3, §6).
    pub ba_gc: bool,
    /// Wear levelling (ftlab_core::wear): off (free blocks first-in first-out), dynamic
    /// (a new block is the least-erased free one) or static (dynamic, and when max - min
    /// erase count exceeds wl_threshold the least-erased data block moves to the
    /// most-erased free block).
    pub wear_leveling: WearLeveling,
    /// Erase-count spread (max - min) above which wear_leveling = static moves data.
    #[schemars(range(min = 1))]
    pub wl_threshold: u32,
    /// Erases after which a block retires (never written again); 0: blocks never
    /// retire. The NAND presets' rated cycles are in ftlab_core::nand (pe_cycles).
    pub pe_limit: u32,
}

impl Default for BastOptions {
    fn default() -> Self {
        BastOptions {
            log_blocks: AutoOr::Auto,
            osm: false,
            ba_gc: false,
            wear_leveling: WearLeveling::Off,
            wl_threshold: wear::DEFAULT_WL_THRESHOLD,
            pe_limit: 0,
        }
    }
}

/// The buffer view lent for one group (BA-GC), threaded through the write path.
type Bv<'a> = Option<&'a mut dyn BufferView>;

const NO_SLOT: u16 = u16::MAX;

/// One allocated log block.
#[derive(Clone, Copy, Debug)]
struct LogBlock {
    pbn: Pbn,
    lbn: Lbn,
    /// Pages written (the next slot).
    written: u32,
    /// Every slot `i` written so far holds offset `i`.
    seq: bool,
}

/// The BAST FTL.
pub struct Bast {
    geo: Geometry,
    ppb: u32,
    dmap: Vec<u32>,
    log_of: Vec<u32>,
    logs: Vec<LogBlock>,
    slot_of: Vec<u16>,
    free_desc: Vec<u32>,
    lru: Lru,
    pool: FreePool,
    srcs: Vec<Src>,
    counters: MergeCounters,
    stats: FtlStats,
    osm: bool,
    ba_gc: bool,
    /// The group being written (CO-OP options).
    group: Group,
}

impl Bast {
    /// Builds the FTL for `geo`.
    pub fn new(geo: &Geometry, opts: &BastOptions) -> Result<Bast, SchemeError> {
        let spare = geo.spare_blocks();
        let log_blocks = opts.log_blocks.unwrap_or(spare.saturating_sub(1));
        if log_blocks == 0 || log_blocks + 1 > spare {
            return Err(geometry_error(
                ID,
                format!(
                    "{} needs {} spare blocks (the log blocks and one merge reserve) but the \
                     geometry has {spare} ({} physical - {} logical); {}",
                    match opts.log_blocks.value() {
                        Some(n) => format!("log_blocks = {n}"),
                        None => "one log block (the least)".into(),
                    },
                    log_blocks.max(1) + 1,
                    geo.blocks,
                    geo.logical_blocks(),
                    match opts.log_blocks.value() {
                        Some(_) => "raise --op or lower log_blocks",
                        None => "raise --op",
                    }
                ),
            ));
        }
        if geo.pages_per_block >= NO_SLOT as u32 {
            return Err(geometry_error(ID, "pages_per_block must be below 65535"));
        }
        let ppb = geo.pages_per_block;
        let osm = opts.osm;
        let ba_gc = opts.ba_gc;
        let idle = LogBlock {
            pbn: Pbn(NONE),
            lbn: Lbn(NONE),
            written: 0,
            seq: true,
        };
        Ok(Bast {
            geo: geo.clone(),
            ppb,
            dmap: vec![NONE; geo.logical_blocks() as usize],
            log_of: vec![NONE; geo.logical_blocks() as usize],
            logs: vec![idle; log_blocks as usize],
            slot_of: vec![NO_SLOT; (log_blocks * ppb) as usize],
            free_desc: (0..log_blocks).rev().collect(),
            lru: Lru::new(log_blocks),
            pool: FreePool::all(
                geo,
                opts.wear_leveling,
                opts.wl_threshold,
                ID,
                opts.pe_limit,
                // Data blocks, log blocks and the merge reserve.
                geo.logical_blocks() + log_blocks + 1,
            ),
            srcs: vec![Src::Hole; ppb as usize],
            counters: MergeCounters::default(),
            stats: FtlStats::default(),
            osm,
            ba_gc,
            group: Group::new(ppb),
        })
    }

    #[inline]
    fn slot_idx(&self, desc: u32, offset: u32) -> usize {
        (desc * self.ppb + offset) as usize
    }

    /// The physical page holding the live copy of `lpn`, if any.
    fn live(&self, flash: &Flash, lpn: Lpn) -> Option<Ppn> {
        let lbn = self.geo.lbn_of(lpn);
        let o = self.geo.lpn_offset(lpn);
        let desc = self.log_of[lbn.idx()];
        if desc != NONE {
            let slot = self.slot_of[self.slot_idx(desc, o)];
            if slot != NO_SLOT {
                let ppn = self.geo.ppn(self.logs[desc as usize].pbn, slot as u32);
                if flash.is_valid(ppn) {
                    return Some(ppn);
                }
            }
        }
        let d = self.dmap[lbn.idx()];
        if d == NONE {
            return None;
        }
        let ppn = self.geo.ppn(Pbn(d), o);
        flash.is_valid(ppn).then_some(ppn)
    }

    fn write_page(&mut self, flash: &mut Flash, tag: PageTag, bv: &mut Bv<'_>) {
        if let Some(old) = self.live(flash, tag.lpn) {
            flash.invalidate(old);
        }
        let lbn = self.geo.lbn_of(tag.lpn);
        let o = self.geo.lpn_offset(tag.lpn);
        let d = self.dmap[lbn.idx()];
        let mut desc = self.log_of[lbn.idx()];
        if d != NONE && flash.write_ptr(Pbn(d)) == o {
            flash.program(self.geo.ppn(Pbn(d), o), tag, Cause::Host);
            return;
        }
        if d == NONE && o == 0 && desc == NONE {
            let pbn = self.pool.take(ID);
            self.dmap[lbn.idx()] = pbn.0;
            flash.program(self.geo.ppn(pbn, 0), tag, Cause::Host);
            return;
        }
        if desc == NONE {
            desc = self.open_log(flash, lbn, bv);
        }
        let log = &mut self.logs[desc as usize];
        let slot = log.written;
        flash.program(self.geo.ppn(log.pbn, slot), tag, Cause::Host);
        log.written += 1;
        log.seq &= slot == o;
        let full = log.written == self.ppb;
        let i = self.slot_idx(desc, o);
        self.slot_of[i] = slot as u16;
        self.lru.touch(desc);
        if full {
            self.merge(flash, desc, bv);
        }
    }

    /// Allocates a log block for `lbn`, reclaiming the least recently written one if
    /// none is left.
    fn open_log(&mut self, flash: &mut Flash, lbn: Lbn, bv: &mut Bv<'_>) -> u32 {
        if self.free_desc.is_empty() {
            let victim = match bv.as_deref() {
                Some(v) if self.ba_gc => self.ba_vbs_victim(v),
                _ => self.lru.back().expect("every log block is in the LRU list"),
            };
            self.merge(flash, victim, bv);
        }
        let desc = self.free_desc.pop().expect("a log block was just freed");
        self.logs[desc as usize] = LogBlock {
            pbn: self.pool.take(ID),
            lbn,
            written: 0,
            seq: true,
        };
        self.log_of[lbn.idx()] = desc;
        desc
    }

    /// Merges log block `desc` with its data block (switch, partial or full) and frees
    /// it.
    fn merge(&mut self, flash: &mut Flash, desc: u32, bv: &mut Bv<'_>) {
        let log = self.logs[desc as usize];
        self.counters.reclaimed(log.written, self.ppb);
        let d = self.dmap[log.lbn.idx()];
        let data = (d != NONE).then_some(Pbn(d));
        if log.seq {
            self.merge_in_order(flash, &log, data);
        } else {
            self.merge_full(flash, desc, &log, data, bv);
        }
        self.release_log(desc);
    }

    /// Static levelling after a request ([`logblock::level`]); a cold log block is
    /// merged (its data go to a new data block) and counted as a move.
    fn level(&mut self, flash: &mut Flash) {
        let Some(cold) = logblock::level(flash, &mut self.pool, &mut self.dmap, &mut self.counters)
        else {
            return;
        };
        let lbn = logblock::block_lbn(flash, cold);
        let Some(desc) = lbn.and_then(|l| self.log_of.get(l.idx()).copied()) else {
            return;
        };
        if desc == NONE || self.logs[desc as usize].pbn != cold {
            return;
        }
        let before = self.stats.merge_pages_copied;
        self.merge(flash, desc, &mut None);
        let pages = self.stats.merge_pages_copied - before;
        logblock::levelled_log(&mut self.pool, pages);
    }

    /// Frees log descriptor `desc` (its block was merged or erased).
    fn release_log(&mut self, desc: u32) {
        let lbn = self.logs[desc as usize].lbn;
        self.log_of[lbn.idx()] = NONE;
        let row = self.slot_idx(desc, 0);
        self.slot_of[row..row + self.ppb as usize].fill(NO_SLOT);
        self.lru.remove(desc);
        self.logs[desc as usize].lbn = Lbn(NONE);
        self.free_desc.push(desc);
    }

    /// Switch or partial merge of a log block written in order.
    fn merge_in_order(&mut self, flash: &mut Flash, log: &LogBlock, data: Option<Pbn>) {
        let first_lpn = log.lbn.0 * self.ppb;
        match data {
            Some(d) if flash.valid_count(d) > 0 => {
                for o in 0..self.ppb {
                    let ppn = self.geo.ppn(d, o);
                    self.srcs[o as usize] = if flash.is_valid(ppn) {
                        assert!(
                            o >= log.written,
                            "bast: {ppn:?} valid under in-order log {:?}",
                            log.pbn
                        );
                        Src::Copy(ppn)
                    } else {
                        Src::Hole
                    };
                }
                let done = compose(
                    flash,
                    log.pbn,
                    log.written,
                    &self.srcs,
                    first_lpn,
                    Cause::Merge,
                );
                self.counters.fillers += done.fillers;
                self.stats.merges_partial += 1;
                self.stats.merge_pages_copied += done.copied;
            }
            _ if self.group.is_padded(log.lbn) => self.stats.merges_padding_switch += 1,
            _ => self.stats.merges_switch += 1,
        }
        if let Some(d) = data {
            flash.erase(d, Cause::Merge);
            self.pool.put(flash, d);
        }
        self.dmap[log.lbn.idx()] = log.pbn.0;
    }

    /// Full merge: every live page of the pair into a free block.
    fn merge_full(
        &mut self,
        flash: &mut Flash,
        desc: u32,
        log: &LogBlock,
        data: Option<Pbn>,
        bv: &mut Bv<'_>,
    ) {
        let mut any = false;
        let mut from_buffer = false;
        for o in 0..self.ppb {
            let slot = self.slot_of[self.slot_idx(desc, o)];
            let in_log = (slot != NO_SLOT)
                .then(|| self.geo.ppn(log.pbn, slot as u32))
                .filter(|&p| flash.is_valid(p));
            let in_data = data
                .map(|d| self.geo.ppn(d, o))
                .filter(|&p| flash.is_valid(p));
            self.srcs[o as usize] = match in_log.or(in_data) {
                Some(p) => {
                    any = true;
                    Src::Copy(p)
                }
                None => Src::Hole,
            };
            if let Some(v) = bv.as_deref_mut().filter(|_| self.ba_gc) {
                let src = &mut self.srcs[o as usize];
                if self.group.take_dirty(flash, v, log.lbn, o, src) {
                    any = true;
                    from_buffer = true;
                }
            }
        }
        self.dmap[log.lbn.idx()] = NONE;
        if any {
            let dst = self.pool.take(ID);
            let done = compose(
                flash,
                dst,
                0,
                &self.srcs,
                log.lbn.0 * self.ppb,
                Cause::Merge,
            );
            self.counters.fillers += done.fillers;
            self.stats.merge_pages_copied += done.copied;
            self.dmap[log.lbn.idx()] = dst.0;
        }
        if let Some(d) = data {
            flash.erase(d, Cause::Merge);
            self.pool.put(flash, d);
        }
        flash.erase(log.pbn, Cause::Merge);
        self.pool.put(flash, log.pbn);
        if from_buffer {
            self.stats.merges_ba_bm += 1;
        } else {
            self.stats.merges_full += 1;
        }
    }

    // --- CO-OP options (issue 8): OSM and BA-VBS -------------------------------------

    /// BA-VBS: the allocated log block whose logical block has the most dirty cold
    /// pages in the buffer, ties to the least recently written; log blocks whose free
    /// pages hold all their block's dirty buffer pages are excepted (§6).
    fn ba_vbs_victim(&self, v: &dyn BufferView) -> u32 {
        let mut best: Option<(u32, u32)> = None;
        for desc in self.lru.iter().rev() {
            let log = &self.logs[desc as usize];
            let dirty = v.dirty_pages(log.lbn);
            if dirty > 0 && self.ppb - log.written >= dirty {
                continue;
            }
            let cold = v.cold_dirty_pages(log.lbn);
            if best.is_none_or(|(_, c)| cold > c) {
                best = Some((desc, cold));
            }
        }
        best.map_or_else(
            || self.lru.back().expect("every log block is in the LRU list"),
            |(d, _)| d,
        )
    }

    /// OSM: a complete group for a block with log block `desc` goes to a free block,
    /// which becomes the data block; the old data and log blocks are erased.
    fn osm_write(&mut self, flash: &mut Flash, desc: u32, pages: &[PageWrite]) {
        let log = self.logs[desc as usize];
        for p in pages {
            if let Some(old) = self.live(flash, p.lpn) {
                flash.invalidate(old);
            }
        }
        let dst = self.pool.take(ID);
        for (o, &p) in pages.iter().enumerate() {
            flash.program(self.geo.ppn(dst, o as u32), p, Cause::Host);
        }
        self.counters.reclaimed(log.written, self.ppb);
        let d = self.dmap[log.lbn.idx()];
        if d != NONE {
            flash.erase(Pbn(d), Cause::Merge);
            self.pool.put(flash, Pbn(d));
        }
        flash.erase(log.pbn, Cause::Merge);
        self.pool.put(flash, log.pbn);
        self.dmap[log.lbn.idx()] = dst.0;
        self.release_log(desc);
        self.stats.merges_osm += 1;
    }

    // --- Power-loss recovery --------------------------------------------------------

    /// Each logical block's data block and log block from the block shapes.
    fn recover_roles(&self, flash: &Flash, scan: &Scan) -> Result<Vec<(u32, u32)>, RecoverError> {
        let fail = |why: String| Err(RecoverError::Failed(why));
        let logical = self.geo.logical_blocks();
        let mut roles = vec![(NONE, NONE); logical as usize];
        for (b, shape) in scan.shapes.iter().enumerate() {
            if shape.lbn == MIXED {
                return fail(format!("pbn{b} holds pages of several logical blocks"));
            }
            if shape.lbn != NONE && !shape.in_place {
                let log = &mut roles[shape.lbn as usize].1;
                if *log != NONE {
                    return fail(format!("lbn{} has two logs out of order", shape.lbn));
                }
                *log = b as u32;
            }
        }
        for (lbn, blocks) in scan.in_place_by_lbn() {
            let l = lbn.idx();
            let (data, log) = &mut roles[l];
            match (&blocks[..], *log) {
                (&[d], _) => *data = d.0,
                (&[a, b], NONE) => {
                    let (d, g) = scan.data_and_log(flash, a, b)?;
                    (*data, *log) = (d.0, g.0);
                }
                _ => return fail(format!("lbn{l} has more than a data and a log block")),
            }
        }
        if let Some((l, &(_, log))) = (roles.iter().enumerate())
            .find(|&(_, &(_, log))| log != NONE && flash.is_full(Pbn(log)))
        {
            return fail(format!("the log pbn{log} of lbn{l} is full but not merged"));
        }
        Ok(roles)
    }

    /// Whether the blocks of one logical block are a state BAST runs on (the repair of
    /// torn operations, `logblock::repair`): no torn page, a data block (in place) and
    /// a log block at most, told apart as `recover_roles` does, the log not full.
    fn fits(flash: &Flash, scan: &Scan, _: &Copies, blocks: &[Pbn], ppb: u32) -> bool {
        let shape = |b: &Pbn| scan.shapes[b.idx()];
        if blocks.iter().any(|b| shape(b).torn) {
            return false;
        }
        let (ip, oo): (Vec<Pbn>, Vec<Pbn>) = blocks.iter().partition(|b| shape(b).in_place);
        let log_ok = |g: Pbn| flash.write_ptr(g) < ppb;
        match (&ip[..], &oo[..]) {
            ([_], []) => true,
            ([] | [_], &[g]) => log_ok(g),
            (&[a, b], []) => scan.data_and_log(flash, a, b).is_ok_and(|(_, g)| log_ok(g)),
            _ => false,
        }
    }

    /// Installs the log block `pbn` of `lbn` as descriptor `desc` and claims its live
    /// pages (the last slot of each offset first).
    fn recover_log(&mut self, flash: &mut Flash, scan: &mut Scan, desc: u32, lbn: Lbn, pbn: Pbn) {
        let written = flash.write_ptr(pbn);
        let mut seq = true;
        for slot in (0..written).rev() {
            let ppn = self.geo.ppn(pbn, slot);
            let tag = flash.peek_tag(ppn).expect("programmed");
            if tag.is_uncorrectable() {
                // (Repaired away before roles are assigned; a torn slot is out of order.)
                seq = false;
                continue;
            }
            let o = self.geo.lpn_offset(tag.lpn);
            seq &= o == slot;
            let i = self.slot_idx(desc, o);
            if self.slot_of[i] == NO_SLOT {
                self.slot_of[i] = slot as u16;
            }
            scan.claim(flash, ppn);
        }
        self.logs[desc as usize] = LogBlock {
            pbn,
            lbn,
            written,
            seq,
        };
        self.log_of[lbn.idx()] = desc;
        self.lru.touch(desc);
    }

    fn log_block(&self, lbn: Lbn) -> Option<Option<&LogBlock>> {
        let desc = *self.log_of.get(lbn.idx())?;
        Some((desc != NONE).then(|| &self.logs[desc as usize]))
    }

    fn check_logs(&self, flash: &Flash, in_use: &mut [bool]) -> Result<(), String> {
        let mut allocated = 0;
        for (desc, log) in self.logs.iter().enumerate() {
            if log.lbn.0 == NONE {
                continue;
            }
            allocated += 1;
            if self.log_of[log.lbn.idx()] != desc as u32 {
                return Err(format!("log block {desc} of {:?} is not its log", log.lbn));
            }
            if std::mem::replace(&mut in_use[log.pbn.idx()], true) {
                return Err(format!("{:?} is a log block and in use elsewhere", log.pbn));
            }
            if flash.write_ptr(log.pbn) != log.written || log.written == self.ppb {
                return Err(format!("log {:?}: {} pages written", log.pbn, log.written));
            }
            for slot in 0..log.written {
                let ppn = self.geo.ppn(log.pbn, slot);
                let tag = flash.peek_tag(ppn).ok_or("log slot not programmed")?;
                let o = self.geo.lpn_offset(tag.lpn);
                if self.geo.lbn_of(tag.lpn) != log.lbn || (log.seq && o != slot) {
                    return Err(format!("{ppn:?} holds {tag:?} in log of {:?}", log.lbn));
                }
                let latest = self.slot_of[self.slot_idx(desc as u32, o)];
                if flash.is_valid(ppn) && latest as u32 != slot {
                    return Err(format!("{ppn:?} is valid but not the latest copy"));
                }
            }
        }
        if allocated + self.free_desc.len() != self.logs.len()
            || self.lru.len() as usize != allocated
        {
            return Err(format!(
                "{allocated} log blocks allocated, {} free descriptors, {} in LRU",
                self.free_desc.len(),
                self.lru.len()
            ));
        }
        Ok(())
    }
}

impl Ftl for Bast {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        self.write_with(flash, pages, GroupInfo::default());
    }

    fn write_with(&mut self, flash: &mut Flash, pages: &[PageWrite], info: GroupInfo<'_>) {
        let Some(first) = pages.first() else {
            return;
        };
        let lbn = self.geo.lbn_of(first.lpn);
        let desc = self.log_of[lbn.idx()];
        if self.osm && pages.len() as u32 == self.ppb && desc != NONE {
            self.osm_write(flash, desc, pages);
            self.level(flash);
            return;
        }
        self.group.begin(lbn, info.padded > 0);
        let mut bv = if self.ba_gc { info.buffer } else { None };
        for &p in pages {
            if self.group.admit(self.geo.lpn_offset(p.lpn), p.lpn, &mut bv) {
                self.write_page(flash, p, &mut bv);
            }
        }
        self.group.end();
        self.level(flash);
    }

    // `read` and `trim` have `block`'s shape: all they share is a call of the scheme's
    // own live-copy lookup, nothing worth a common function.
    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        let ppn = self.live(flash, lpn)?;
        Some(flash.read(ppn, Cause::Host))
    }

    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        if let Some(ppn) = self.live(flash, lpn) {
            flash.invalidate(ppn);
        }
    }

    fn recover(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        let (mut scan, roles, logs) = loop {
            let pool = &self.pool;
            let ppb = self.ppb;
            let scan = logblock::scan_repaired(
                flash,
                Scan::single_lbn_blocks,
                |flash, scan, copies, blocks| Self::fits(flash, scan, copies, blocks, ppb),
                |flash, b| !pool.retires(flash.erase_count(b)),
            )?;
            let roles = self.recover_roles(flash, &scan)?;
            let logs = roles.iter().filter(|r| r.1 != NONE).count();
            if logs <= self.logs.len() {
                break (scan, roles, logs);
            }
            let max = self.logs.len();
            let pool = &self.pool;
            logblock::drop_extra_log(
                flash,
                &scan,
                roles.iter().filter(|r| r.1 != NONE).map(|r| Pbn(r.1)),
                |flash, b| !pool.retires(flash.erase_count(b)),
                || format!("{logs} log blocks on flash but log_blocks = {max}"),
            )?;
        };
        // Descriptors and LRU rank by block number: recency is not on flash.
        let mut by_block: Vec<(u32, Lbn)> = (0..roles.len())
            .filter(|&l| roles[l].1 != NONE)
            .map(|l| (roles[l].1, Lbn(l as u32)))
            .collect();
        by_block.sort_unstable();
        for (desc, &(pbn, lbn)) in by_block.iter().enumerate() {
            self.recover_log(flash, &mut scan, desc as u32, lbn, Pbn(pbn));
        }
        self.free_desc = (logs as u32..self.logs.len() as u32).rev().collect();
        let pool = scan.install_data_blocks(flash, &mut self.dmap, roles.iter().map(|r| r.0));
        self.pool.refill(flash, pool);
        Ok(())
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        let logs = |in_use: &mut [bool]| self.check_logs(flash, in_use);
        logblock::check(flash, &self.dmap, &self.pool, logs, |l| self.live(flash, l))
    }

    fn stats(&self) -> FtlStats {
        let mut s = self.stats.clone();
        self.counters.report(&mut s);
        s.extra
            .gauge("log_blocks", "blocks", self.logs.len() as f64);
        self.pool.report(&mut s.extra);
        s
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.counters = MergeCounters::default();
        self.pool.reset_stats();
    }

    fn mapping_bytes(&self) -> u64 {
        let n = self.logs.len() as u64;
        (self.dmap.len() + self.log_of.len()) as u64 * 4
            + n * std::mem::size_of::<LogBlock>() as u64
            + self.slot_of.len() as u64 * 2
            + self.lru.nodes() as u64 * 8 // the LRU list's two u32 links per log block
            + n * 4
    }

    fn query(&self, q: Query) -> Answer {
        match q {
            Query::LogFreePages(lbn) => match self.log_block(lbn) {
                None => Answer::NotApplicable,
                Some(None) => Answer::NoLogBlock,
                Some(Some(log)) => Answer::Count(self.ppb - log.written),
            },
            Query::LogIsSequential(lbn) => match self.log_block(lbn) {
                None => Answer::NotApplicable,
                Some(None) => Answer::NoLogBlock,
                Some(Some(log)) => Answer::Bool(log.seq),
            },
            Query::FreeLogBlocks => Answer::Count(self.free_desc.len() as u32),
            Query::NextVictim => Answer::Block(self.lru.back().map(|d| self.logs[d as usize].lbn)),
            Query::RwThreshold => Answer::NotApplicable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logblock::tests::geometry;
    use ftlab_core::options::from_pairs;

    fn bast(geo: &Geometry, log_blocks: &str) -> Bast {
        let o = from_pairs(ID, &[("log_blocks", log_blocks)]).unwrap();
        Bast::new(geo, &o).unwrap()
    }

    fn w(lpn: u32, version: u32) -> PageWrite {
        PageTag {
            lpn: Lpn(lpn),
            version,
        }
    }

    /// Fills logical blocks `0..n` with version 1 in place, then zeroes the counters.
    fn filled(geo: &Geometry, log_blocks: &str, n: u32) -> (Bast, Flash) {
        let mut b = bast(geo, log_blocks);
        let mut f = Flash::new(geo);
        for l in 0..n {
            let pages: Vec<_> = (0..geo.pages_per_block)
                .map(|o| w(l * geo.pages_per_block + o, 1))
                .collect();
            b.write(&mut f, &pages);
        }
        assert_eq!(f.stats().erases.iter().sum::<u64>(), 0);
        f.reset_stats();
        b.reset_stats();
        (b, f)
    }

    fn erases(f: &Flash) -> u64 {
        f.stats().erases.iter().sum()
    }

    #[test]
    fn switch_merge_when_the_log_is_written_in_order() {
        let geo = geometry(4, 2, 4);
        let (mut b, mut f) = filled(&geo, "auto", 2);
        for o in 0..4 {
            b.write(&mut f, &[w(o, 2)]);
        }
        let s = b.stats();
        assert_eq!(
            (s.merges_switch, s.merges_partial, s.merges_full),
            (1, 0, 0)
        );
        assert_eq!(s.merge_pages_copied, 0);
        assert_eq!(erases(&f), 1);
        assert_eq!(s.extra["u_avg"], 1.0);
        for o in 0..4 {
            assert_eq!(b.read(&mut f, Lpn(o)), Some(w(o, 2)));
        }
        b.check(&f).unwrap();
    }

    #[test]
    fn partial_merge_when_an_in_order_log_is_reclaimed_early() {
        let geo = geometry(4, 2, 4);
        let (mut b, mut f) = filled(&geo, "1", 2);
        b.write(&mut f, &[w(0, 2), w(1, 2)]);
        assert_eq!(b.query(Query::LogIsSequential(Lbn(0))), Answer::Bool(true));
        assert_eq!(b.query(Query::LogFreePages(Lbn(0))), Answer::Count(2));
        // Logical block 1 needs the only log block: LBN 0's is reclaimed.
        b.write(&mut f, &[w(5, 2)]);
        let s = b.stats();
        assert_eq!(
            (s.merges_switch, s.merges_partial, s.merges_full),
            (0, 1, 0)
        );
        assert_eq!(
            s.merge_pages_copied, 2,
            "offsets 2 and 3 copied into the log"
        );
        assert_eq!(erases(&f), 1);
        assert_eq!(s.extra["u_avg"], 0.5);
        assert_eq!(b.read(&mut f, Lpn(3)), Some(w(3, 1)));
        assert_eq!(b.read(&mut f, Lpn(1)), Some(w(1, 2)));
        b.check(&f).unwrap();
    }

    #[test]
    fn full_merge_when_the_log_is_written_out_of_order() {
        let geo = geometry(4, 2, 4);
        let (mut b, mut f) = filled(&geo, "auto", 2);
        for (lpn, v) in [(2, 2), (0, 2), (2, 3), (3, 2)] {
            b.write(&mut f, &[w(lpn, v)]);
        }
        let s = b.stats();
        assert_eq!(
            (s.merges_switch, s.merges_partial, s.merges_full),
            (0, 0, 1)
        );
        assert_eq!(s.merge_pages_copied, 4);
        assert_eq!(erases(&f), 2);
        b.check(&f).unwrap();
    }

    #[test]
    fn lru_log_block_is_the_victim() {
        let geo = geometry(4, 4, 7);
        let (mut b, mut f) = filled(&geo, "2", 4);
        b.write(&mut f, &[w(1, 2)]); // log for LBN 0
        b.write(&mut f, &[w(5, 2)]); // log for LBN 1
        b.write(&mut f, &[w(2, 2)]); // LBN 0 used again: LBN 1 is now LRU
        assert_eq!(b.query(Query::NextVictim), Answer::Block(Some(Lbn(1))));
        assert_eq!(b.query(Query::FreeLogBlocks), Answer::Count(0));
        b.write(&mut f, &[w(9, 2)]); // LBN 2 needs a log: LBN 1's is merged
        assert_eq!(b.query(Query::LogFreePages(Lbn(1))), Answer::NoLogBlock);
        assert_eq!(b.query(Query::LogFreePages(Lbn(0))), Answer::Count(2));
        assert_eq!(b.query(Query::NextVictim), Answer::Block(Some(Lbn(0))));
        assert_eq!(b.stats().merges_full, 1);
        b.check(&f).unwrap();
    }

    #[test]
    fn fresh_blocks_are_written_in_place_and_their_tail_appended() {
        let geo = geometry(4, 2, 5);
        let mut b = bast(&geo, "auto");
        let mut f = Flash::new(&geo);
        b.write(&mut f, &[w(0, 1), w(1, 1)]);
        b.write(&mut f, &[w(2, 1)]);
        assert_eq!(b.query(Query::LogFreePages(Lbn(0))), Answer::NoLogBlock);
        // Not at the write pointer: goes to a log block.
        b.write(&mut f, &[w(1, 2)]);
        assert_eq!(b.query(Query::LogIsSequential(Lbn(0))), Answer::Bool(false));
        // At the write pointer: in place even with a log block.
        b.write(&mut f, &[w(3, 1)]);
        assert_eq!(b.query(Query::LogFreePages(Lbn(0))), Answer::Count(3));
        // A block first written past offset 0 starts in a log block.
        b.write(&mut f, &[w(6, 1)]);
        assert_eq!(b.query(Query::LogFreePages(Lbn(1))), Answer::Count(3));
        assert_eq!(f.stats().erases.iter().sum::<u64>(), 0);
        for (l, v) in [(0, 1), (1, 2), (2, 1), (3, 1), (6, 1)] {
            assert_eq!(b.read(&mut f, Lpn(l)), Some(w(l, v)));
        }
        assert_eq!(b.read(&mut f, Lpn(4)), None);
        b.check(&f).unwrap();
    }

    #[test]
    fn trimmed_pages_are_not_merged() {
        let geo = geometry(4, 2, 4);
        let (mut b, mut f) = filled(&geo, "auto", 2);
        b.write(&mut f, &[w(1, 2)]);
        b.trim(&mut f, Lpn(1));
        b.trim(&mut f, Lpn(3));
        assert_eq!(b.read(&mut f, Lpn(1)), None);
        for v in 3..6 {
            b.write(&mut f, &[w(2, v)]);
        }
        let s = b.stats();
        assert_eq!(s.merges_full, 1);
        assert_eq!(s.merge_pages_copied, 2, "offsets 0 and 2 only");
        assert_eq!(b.read(&mut f, Lpn(1)), None);
        assert_eq!(b.read(&mut f, Lpn(3)), None);
        assert_eq!(b.read(&mut f, Lpn(2)), Some(w(2, 5)));
        b.check(&f).unwrap();
    }

    #[test]
    fn other_queries_and_bad_options() {
        let geo = geometry(4, 2, 4);
        let b = bast(&geo, "auto");
        assert_eq!(b.query(Query::RwThreshold), Answer::NotApplicable);
        assert_eq!(b.query(Query::FreeLogBlocks), Answer::Count(1));
        assert_eq!(b.query(Query::NextVictim), Answer::Block(None));
        assert_eq!(b.query(Query::LogFreePages(Lbn(99))), Answer::NotApplicable);
        let o = BastOptions {
            log_blocks: AutoOr::Value(2),
            ..Default::default()
        };
        let e = Bast::new(&geo, &o).err().unwrap().to_string();
        assert!(e.contains("log_blocks = 2") && e.contains("--op"), "{e}");
        for (bad, why) in [("0", "at least 1"), ("many", "`auto` or a number")] {
            let e = from_pairs::<BastOptions>(ID, &[("log_blocks", bad)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`log_blocks` = `{bad}`")) && e.contains(why),
                "{e}"
            );
        }
        let e = Bast::new(&geometry(4, 2, 3), &BastOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--op"), "{e}");
    }

    fn recovered(geo: &Geometry, log_blocks: &str, f: &mut Flash) -> Bast {
        crate::logblock::tests::power_cycle(f, bast(geo, log_blocks))
    }

    #[test]
    fn recovery_tells_data_blocks_from_logs_in_and_out_of_order() {
        let geo = geometry(4, 4, 8);
        let (mut b, mut f) = filled(&geo, "auto", 2);
        b.write(&mut f, &[w(0, 2), w(1, 2)]); // in-order log of LBN 0
        b.write(&mut f, &[w(6, 2)]);
        b.write(&mut f, &[w(4, 2)]); // out-of-order log of LBN 1
        b.write(&mut f, &[w(9, 1)]); // LBN 2: a log and no data block
        b.write(&mut f, &[w(12, 1), w(13, 1)]); // LBN 3: a half data block
        let mut b = recovered(&geo, "auto", &mut f);
        let q = |b: &Bast, q| b.query(q);
        assert_eq!(q(&b, Query::LogIsSequential(Lbn(0))), Answer::Bool(true));
        assert_eq!(q(&b, Query::LogFreePages(Lbn(0))), Answer::Count(2));
        assert_eq!(q(&b, Query::LogIsSequential(Lbn(1))), Answer::Bool(false));
        assert_eq!(q(&b, Query::LogFreePages(Lbn(2))), Answer::Count(3));
        assert_eq!(q(&b, Query::LogFreePages(Lbn(3))), Answer::NoLogBlock);
        assert_eq!(q(&b, Query::FreeLogBlocks), Answer::Count(0));
        for (l, v) in [
            (0, 2),
            (1, 2),
            (2, 1),
            (4, 2),
            (5, 1),
            (6, 2),
            (9, 1),
            (13, 1),
        ] {
            assert_eq!(b.read(&mut f, Lpn(l)), Some(w(l, v)), "lpn{l}");
        }
        assert_eq!(b.read(&mut f, Lpn(8)), None);
        // The in-order log goes on in order and switches; LBN 3 goes on in place.
        b.write(&mut f, &[w(2, 2), w(3, 2)]);
        b.write(&mut f, &[w(14, 1)]);
        let s = b.stats();
        assert_eq!(
            (s.merges_switch, s.merges_partial, s.merges_full),
            (1, 0, 0)
        );
        assert_eq!(erases(&f), 1);
        assert_eq!(b.read(&mut f, Lpn(14)), Some(w(14, 1)));
        b.check(&f).unwrap();
    }

    /// A buffer's padding rewrites a page with the version it has on flash: the copy in
    /// the log must be the live one, or the in-order log's merge would find a valid
    /// page of the data block under it.
    #[test]
    fn recovery_takes_the_log_copy_of_a_padded_page() {
        let geo = geometry(4, 2, 4);
        let mut b = bast(&geo, "auto");
        let mut f = Flash::new(&geo);
        b.write(&mut f, &[w(0, 1), w(1, 1)]);
        b.write(&mut f, &[w(0, 1), w(1, 1)]); // padded rewrite: an in-order log
        let mut b = recovered(&geo, "auto", &mut f);
        assert_eq!(b.query(Query::LogFreePages(Lbn(0))), Answer::Count(2));
        b.write(&mut f, &[w(2, 1)]); // in place in the data block
        b.write(&mut f, &[w(5, 1)]); // LBN 1 takes the only log: LBN 0's is merged
        let s = b.stats();
        assert_eq!((s.merges_partial, s.merge_pages_copied), (1, 1));
        for (l, v) in [(0, 1), (1, 1), (2, 1), (5, 1)] {
            assert_eq!(b.read(&mut f, Lpn(l)), Some(w(l, v)));
        }
        b.check(&f).unwrap();
    }

    #[test]
    fn recovery_ranks_log_blocks_by_block_number_and_brings_trims_back() {
        let geo = geometry(4, 4, 7);
        let (mut b, mut f) = filled(&geo, "2", 4);
        b.write(&mut f, &[w(13, 2)]); // log of LBN 3 in pbn 4
        b.write(&mut f, &[w(1, 2)]); // log of LBN 0 in pbn 5, the most recent
        b.write(&mut f, &[w(13, 3)]); // LBN 3 is now the most recent
        b.trim(&mut f, Lpn(13));
        assert_eq!(b.query(Query::NextVictim), Answer::Block(Some(Lbn(0))));
        let mut b = recovered(&geo, "2", &mut f);
        assert_eq!(
            b.query(Query::NextVictim),
            Answer::Block(Some(Lbn(3))),
            "recency is lost: the lower block number goes first"
        );
        assert_eq!(
            b.read(&mut f, Lpn(13)),
            Some(w(13, 3)),
            "trims are not durable"
        );
    }

    #[test]
    fn recovery_refuses_flash_bast_cannot_have_written() {
        let geo = geometry(4, 2, 5);
        let program = |case: &[(u32, u32, u32)]| {
            let mut f = Flash::new(&geo);
            for &(ppn, lpn, v) in case {
                f.program(Ppn(ppn), w(lpn, v), Cause::Host);
            }
            f.power_cycle();
            f
        };
        // Two logical blocks in a block.
        let e = (bast(&geo, "auto").recover(&mut program(&[(0, 0, 1), (1, 5, 1)]))).unwrap_err();
        assert!(matches!(e, RecoverError::Failed(_)), "{e}");
        // What a power cut inside a merge leaves (more blocks than roles, a full log)
        // is repaired to the newest copies (module docs, "Torn operations").
        type Case<'a> = (&'a [(u32, u32, u32)], &'a [(u32, u32)]);
        let cases: [Case; 4] = [
            (&[(0, 1, 1), (4, 2, 1)], &[(1, 1), (2, 1)]), // two logs out of order
            (&[(0, 0, 1), (4, 0, 2), (8, 0, 3)], &[(0, 3)]), // three in-place blocks
            (&[(0, 0, 1), (4, 1, 2), (8, 0, 2)], &[(0, 2), (1, 2)]), // pair and a log
            (
                &[(0, 1, 1), (1, 0, 1), (2, 2, 1), (3, 3, 1)],
                &[(0, 1), (3, 1)],
            ), // full log
        ];
        for (case, want) in cases {
            let mut f = program(case);
            let mut b = bast(&geo, "auto");
            b.recover(&mut f).unwrap();
            b.check(&f).unwrap();
            for &(l, v) in want {
                assert_eq!(b.read(&mut f, Lpn(l)), Some(w(l, v)), "{case:?}");
            }
        }
        // More logs than log_blocks.
        let mut f = Flash::new(&geo);
        f.program(Ppn(0), w(1, 1), Cause::Host);
        f.program(Ppn(4), w(5, 1), Cause::Host);
        f.power_cycle();
        let e = bast(&geo, "1").recover(&mut f).unwrap_err().to_string();
        assert!(e.contains("log_blocks"), "{e}");
    }

    #[test]
    fn mapping_bytes_scale_with_blocks_not_pages() {
        let small = bast(&geometry(64, 100, 110), "auto").mapping_bytes();
        let large = bast(&geometry(64, 1000, 1010), "auto").mapping_bytes();
        // Same log blocks, 10x the data blocks: 900 more blocks x 8 bytes of tables.
        assert_eq!(large - small, 900 * 8);
    }
}

#[cfg(test)]
mod wear_tests {
    use super::*;
    use ftlab_core::options::from_pairs;

    /// The WAF ratio static levelling may cost here (measured: see the test's output).
    const COST: f64 = 3.0;

    #[test]
    fn static_levelling_narrows_the_spread_at_a_waf_cost_and_recovers() {
        // wl_threshold 4 on the family's hot/cold workload (logblock::tests::hot_cold).
        crate::logblock::tests::static_levelling_narrows(
            |wl| {
                let o: BastOptions =
                    from_pairs(ID, &[("wear_leveling", wl), ("wl_threshold", "4")]).unwrap();
                Bast::new(&crate::logblock::tests::geometry(8, 32, 40), &o).unwrap()
            },
            COST,
        );
    }
}

#[cfg(test)]
mod torn_tests {
    use super::*;
    use crate::logblock::tests::{cut_everywhere, geometry, reads_one_of};
    use ftlab_core::options::from_pairs;

    fn bast(pairs: &[(&str, &str)]) -> Bast {
        Bast::new(&geometry(4, 2, 5), &from_pairs(ID, pairs).unwrap()).unwrap()
    }

    fn w(lpn: u32, version: u32) -> PageWrite {
        PageTag {
            lpn: Lpn(lpn),
            version,
        }
    }

    /// Both logical blocks full (v1), then `log` written (v2).
    fn setup(pairs: &[(&str, &str)], log: &[u32]) -> (Bast, Flash) {
        let mut b = bast(pairs);
        let mut f = Flash::new(&geometry(4, 2, 5));
        for l in 0..2 {
            b.write(&mut f, &(0..4).map(|o| w(4 * l + o, 1)).collect::<Vec<_>>());
        }
        for &l in log {
            b.write(&mut f, &[w(l, 2)]);
        }
        (b, f)
    }

    /// Cuts `step` everywhere; `want[l]`: what lpn `l` may read after.
    fn walk(pairs: &[(&str, &str)], log: &[u32], step: &[PageWrite], want: &[&[u32]]) {
        let n = cut_everywhere(
            || setup(pairs, log),
            |b, f| b.write(f, step),
            || bast(pairs),
            |b, f, k, lost| {
                assert!(lost.is_empty());
                for (l, ok) in want.iter().enumerate() {
                    reads_one_of(b, f, l as u32, ok, k);
                }
                // Writing on works, and merges again.
                for l in [3, 2, 1, 0, 5, 4] {
                    b.write(f, &[w(l, 9)]);
                }
                b.check(f).unwrap();
                reads_one_of(b, f, 0, &[9], k);
            },
        );
        assert!(n >= 4, "{n} operations (a copy counts as one)");
    }

    #[test]
    fn a_full_merge_cut_anywhere_keeps_the_newest_complete_copies() {
        // An out-of-order log filled by the step: full merge into a free block.
        let want: [&[u32]; 8] = [&[1, 2], &[2], &[2], &[2], &[1], &[1], &[1], &[1]];
        walk(&[], &[2, 1, 3], &[w(0, 2)], &want);
    }

    #[test]
    fn a_partial_merge_cut_anywhere_is_not_two_data_blocks() {
        // One log block: LBN 1's first log write merges LBN 0's in-order log (pages 2
        // and 3 copied into it, then the data block erased).
        let want: [&[u32]; 8] = [&[2], &[2], &[1], &[1], &[1, 2], &[1], &[1], &[1]];
        walk(&[("log_blocks", "1")], &[0, 1], &[w(4, 2)], &want);
    }

    #[test]
    fn an_osm_write_cut_anywhere_keeps_the_old_block_or_the_new() {
        let all: Vec<PageWrite> = (0..4).map(|o| w(o, 3)).collect();
        let want: [&[u32]; 8] = [&[1, 3], &[2, 3], &[1, 3], &[1, 3], &[1], &[1], &[1], &[1]];
        walk(&[("osm", "true")], &[1], &all, &want);
    }
}
