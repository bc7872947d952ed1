//! `page`: ideal page-level mapping (PM), the baseline of every paper.
//!
//! Sources: tpm.txt §II (page-level mapping as the ideal), cach-ftl.txt §2,
//! superblock-ftl.txt §2.2. One L2P entry per logical page in RAM; writes append to a
//! single active block; greedy GC reclaims the sealed block with the fewest valid pages.
//!
//! Choices the papers leave open, as options or documented defaults:
//! - `gc_threshold` (default 3): GC runs while fewer than this many blocks are free;
//!   "The minimum number of free blocks: 3" (tpm.txt Table I).
//! - Victim: `gc_policy` (default `greedy`: fewest valid pages, ties by the lowest block
//!   number); the policies and what they leave open are in [`ftlab_core::victim`]. A
//!   policy other than greedy may take a fully valid block: the round frees as much as
//!   it takes, and GC goes on.
//! - GC copies go to the same write frontier as host writes (no hot/cold separation).
//! - Free blocks are reused first-in first-out (erased blocks go to the back), which
//!   spreads wear without a wear-leveling policy.
//! - GC is checked right after a new active block is opened, the moment the free pool
//!   shrinks.
//! - Power-loss recovery (not in the papers): the scheme keeps no checkpoint, so it
//!   scans the spare area of every programmed page and maps each LPN to its newest
//!   version (a GC copy and its source hold the same version; the first found wins).
//!   Erased blocks become free, one partly written block becomes the active block, the
//!   rest are sealed GC candidates. Trims are not persisted, so a trimmed page may
//!   come back.
//! - `mapping_bytes` counts the L2P table (4 bytes per logical page); the GC index is
//!   controller bookkeeping that every scheme with GC needs and is not counted.

use crate::scan::{self, UNMAPPED};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{Ftl, FtlStats, RecoverError};
use ftlab_core::geometry::Geometry;
use ftlab_core::options::{geometry_error, JsonSchema, SchemeError};
use ftlab_core::victim::{self, GcPolicy, VictimPolicy, Victims};
use ftlab_core::{Lpn, PageTag, PageWrite, Pbn, Ppn};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Scheme id in the registry and in errors.
pub const ID: &str = "page";

/// Options of the `page` FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PageOptions {
    /// GC runs while fewer than this many blocks are free (tpm.txt Table I: 3).
    #[schemars(range(min = 1))]
    pub gc_threshold: u32,
    /// GC victim policy (ftlab_core::victim): greedy (fewest valid pages), cost_benefit
    /// ((1-u)*age/(1+u)), d_choices (best of gc_d random blocks), fifo (oldest sealed),
    /// random, windowed_greedy (greedy among the gc_window oldest).
    pub gc_policy: GcPolicy,
    /// Blocks drawn by gc_policy = d_choices.
    #[schemars(range(min = 1))]
    pub gc_d: u32,
    /// Oldest sealed blocks considered by gc_policy = windowed_greedy.
    #[schemars(range(min = 1))]
    pub gc_window: u32,
}

impl Default for PageOptions {
    fn default() -> Self {
        PageOptions {
            gc_threshold: 3,
            gc_policy: GcPolicy::Greedy,
            gc_d: victim::DEFAULT_D,
            gc_window: victim::DEFAULT_WINDOW,
        }
    }
}

impl PageOptions {
    /// The victim policy these options select.
    pub fn victim_policy(&self) -> VictimPolicy {
        VictimPolicy {
            policy: self.gc_policy,
            d: self.gc_d,
            window: self.gc_window,
        }
    }
}

/// The page-mapped FTL.
pub struct PageFtl {
    geo: Geometry,
    l2p: Vec<u32>,
    free: VecDeque<Pbn>,
    active: Pbn,
    index: Victims,
    gc_threshold: u32,
    stats: FtlStats,
}

impl PageFtl {
    /// Builds the FTL for `geo`.
    pub fn new(geo: &Geometry, opts: &PageOptions) -> Result<PageFtl, SchemeError> {
        let gc_threshold = opts.gc_threshold.max(1);
        let needed = geo.logical_blocks() + gc_threshold + 1;
        if geo.blocks < needed {
            return Err(geometry_error(
                ID,
                format!(
                    "needs at least {needed} physical blocks (logical blocks + gc_threshold + 1) \
                 but the geometry has {}; raise --op or lower gc_threshold",
                    geo.blocks
                ),
            ));
        }
        let mut free: VecDeque<Pbn> = (0..geo.blocks).map(Pbn).collect();
        let active = free.pop_front().expect("geometry has blocks");
        Ok(PageFtl {
            geo: geo.clone(),
            l2p: vec![UNMAPPED; geo.logical_pages as usize],
            free,
            active,
            index: Victims::new(geo.blocks, geo.pages_per_block, opts.victim_policy()),
            gc_threshold,
            stats: FtlStats::default(),
        })
    }

    /// Seeds the generator of the random victim policies (from the run's seed).
    pub fn with_gc_seed(mut self, seed: u64) -> Self {
        self.index.seed(seed);
        self
    }

    /// The next free page of the write frontier, opening a new active block (and, for
    /// host writes, collecting garbage) when the current one is full.
    fn frontier(&mut self, flash: &mut Flash, in_gc: bool) -> Ppn {
        while flash.is_full(self.active) {
            self.index
                .insert(self.active, flash.valid_count(self.active));
            self.active = self
                .free
                .pop_front()
                .expect("page FTL: free pool empty (GC reserve broken)");
            if !in_gc {
                self.collect(flash);
            }
        }
        self.geo.ppn(self.active, flash.write_ptr(self.active))
    }

    /// GC while free blocks are fewer than the threshold.
    fn collect(&mut self, flash: &mut Flash) {
        while (self.free.len() as u32) < self.gc_threshold {
            let (victim, valid) = self
                .index
                .pop()
                .expect("page FTL: no sealed block to collect");
            assert!(
                valid < self.geo.pages_per_block || !self.index.stuck(),
                "page FTL: GC victim {victim:?} and every sealed block are fully valid; \
                 no progress possible"
            );
            for off in 0..flash.write_ptr(victim) {
                let src = self.geo.ppn(victim, off);
                if !flash.is_valid(src) {
                    continue;
                }
                let dst = self.frontier(flash, true);
                let tag = flash.copy(src, dst, Cause::Gc);
                flash.invalidate(src);
                debug_assert_eq!(self.l2p[tag.lpn.idx()], src.0);
                self.l2p[tag.lpn.idx()] = dst.0;
                self.stats.gc_pages_copied += 1;
            }
            flash.erase(victim, Cause::Gc);
            self.free.push_back(victim);
            self.stats.gc_invocations += 1;
        }
    }

    #[inline]
    fn unmap(&mut self, flash: &mut Flash, lpn: Lpn) {
        let old = self.l2p[lpn.idx()];
        if old != UNMAPPED {
            let old = Ppn(old);
            flash.invalidate(old);
            self.index.decrement(self.geo.block_of(old));
            self.l2p[lpn.idx()] = UNMAPPED;
        }
    }
}

impl Ftl for PageFtl {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        for &tag in pages {
            self.unmap(flash, tag.lpn);
            let ppn = self.frontier(flash, false);
            flash.program(ppn, tag, Cause::Host);
            self.l2p[tag.lpn.idx()] = ppn.0;
        }
    }

    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        let ppn = self.l2p[lpn.idx()];
        (ppn != UNMAPPED).then(|| flash.read(Ppn(ppn), Cause::Host))
    }

    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.unmap(flash, lpn);
    }

    fn recover(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        self.l2p = scan::newest_copies(flash, &mut ())?;
        let mut active = None;
        scan::sort_blocks(flash, &mut self.free, &mut self.index, |b| {
            let open = active.is_none();
            if open {
                active = Some(b);
            }
            Ok(open)
        })?;
        self.active = match active {
            Some(b) => b,
            None => self
                .free
                .pop_front()
                .ok_or_else(|| RecoverError::Failed("no free or open block left".into()))?,
        };
        self.collect(flash);
        Ok(())
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        scan::check_l2p(flash, &self.l2p)?;
        scan::check_blocks(flash, &self.free, &self.index, &[self.active])
    }

    fn stats(&self) -> FtlStats {
        self.stats.clone()
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
    }

    fn mapping_bytes(&self) -> u64 {
        self.l2p.len() as u64 * 4
    }
}
