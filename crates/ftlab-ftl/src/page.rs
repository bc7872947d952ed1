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
//! - Die-aware allocation (issue 22; not in the papers, which model one chip):
//!   `die_alloc = "single"` (default, the papers' one write frontier), `"round_robin"`
//!   (one open block per die, consecutive page writes dealt to the dies in turn: a
//!   multi-page write or a run of writes spreads over every die) or `"static"` (one open
//!   block per die, LPN `l` always written on die `l % dies`: striping by LPN, GC copies
//!   included). A block's die is `pbn % dies`, as parallel timing places it. Free blocks
//!   are kept per die (first-in first-out in each); when a die has none left, its open
//!   block comes from the die with the most free blocks (the lowest such die), so
//!   allocation never fails while any block is free. GC is global: the victim policy
//!   picks among every sealed block, and its copies go through the same allocation.
//!   Under serial timing (one die) all three are the same. With one open block per die,
//!   the copies of one victim can fill every open block once, so GC keeps `dies` more
//!   blocks free (it runs while fewer than gc_threshold + dies are free) and the device
//!   needs at least logical blocks + gc_threshold + 2 x dies blocks.
//!   A least-busy-die policy needs the die clocks, which FTLs do not see (the timing
//!   model owns them); it is not offered.
//! - `mapping_bytes` counts the L2P table (4 bytes per logical page); the GC index is
//!   controller bookkeeping that every scheme with GC needs and is not counted.

use crate::scan::{self, UNMAPPED};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{Ftl, FtlStats, RecoverError};
use ftlab_core::geometry::Geometry;
use ftlab_core::options::{geometry_error, JsonSchema, SchemeError};
use ftlab_core::oracle::{Oracle, Violation};
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
    /// Which die a page is written on: single (one write frontier, the papers'),
    /// round_robin (one open block per die, pages dealt in turn) or static (die =
    /// LPN % dies). Dies: channels x dies of parallel timing (1 under serial).
    pub die_alloc: DieAlloc,
}

/// Die-aware allocation of the `page` FTL (`die_alloc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DieAlloc {
    /// One write frontier for the whole device (the papers' model).
    #[default]
    Single,
    /// One open block per die; consecutive page writes go to the dies in turn.
    RoundRobin,
    /// One open block per die; LPN `l` is written on die `l % dies`.
    Static,
}

impl Default for PageOptions {
    fn default() -> Self {
        PageOptions {
            gc_threshold: 3,
            gc_policy: GcPolicy::Greedy,
            gc_d: victim::DEFAULT_D,
            gc_window: victim::DEFAULT_WINDOW,
            die_alloc: DieAlloc::Single,
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
    /// Free blocks per die (one pool under `single`), first-in first-out in each.
    free: Vec<VecDeque<Pbn>>,
    /// Free blocks in all pools.
    free_count: u32,
    /// Open blocks: one per die (one under `single`).
    active: Vec<Pbn>,
    alloc: DieAlloc,
    /// The die of the next round-robin write.
    turn: usize,
    index: Victims,
    gc_threshold: u32,
    stats: FtlStats,
}

impl PageFtl {
    /// Builds the FTL for `geo`.
    pub fn new(geo: &Geometry, opts: &PageOptions) -> Result<PageFtl, SchemeError> {
        let gc_threshold = opts.gc_threshold.max(1);
        let streams = match opts.die_alloc {
            DieAlloc::Single => 1,
            DieAlloc::RoundRobin | DieAlloc::Static => geo.dies().min(geo.blocks),
        };
        // With one open block per die, one victim's copies can fill every open block
        // once: GC keeps that many more blocks free (none more under `single`).
        let gc_threshold = if streams == 1 {
            gc_threshold
        } else {
            gc_threshold + streams
        };
        let needed = geo.logical_blocks() + gc_threshold + streams;
        if geo.blocks < needed {
            let what = if streams == 1 {
                "logical blocks + gc_threshold + 1".to_string()
            } else {
                format!(
                    "logical blocks + gc_threshold + {streams} (GC reserve, one block per \
                     die) + {streams} open blocks, one per die"
                )
            };
            return Err(geometry_error(
                ID,
                format!(
                    "needs at least {needed} physical blocks ({what}) \
                 but the geometry has {}; raise --op or lower gc_threshold",
                    geo.blocks
                ),
            ));
        }
        let mut free = vec![VecDeque::new(); streams as usize];
        for b in 0..geo.blocks {
            free[(b % streams) as usize].push_back(Pbn(b));
        }
        let active = free
            .iter_mut()
            .map(|f| f.pop_front().expect("every die has a block"))
            .collect();
        Ok(PageFtl {
            geo: geo.clone(),
            l2p: vec![UNMAPPED; geo.logical_pages as usize],
            free,
            free_count: geo.blocks - streams,
            active,
            alloc: opts.die_alloc,
            turn: 0,
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

    /// The stream (die) the next write of `lpn` goes to.
    #[inline]
    fn stream(&mut self, lpn: Lpn) -> usize {
        match self.alloc {
            DieAlloc::Single => 0,
            DieAlloc::RoundRobin => {
                let s = self.turn;
                self.turn = if s + 1 == self.active.len() { 0 } else { s + 1 };
                s
            }
            DieAlloc::Static => lpn.idx() % self.active.len(),
        }
    }

    /// A free block for die `s`: its own pool's oldest, else the oldest of the die
    /// with the most free blocks.
    fn take_free(&mut self, s: usize) -> Pbn {
        let from = if self.free[s].is_empty() {
            let most = self.free.iter().map(VecDeque::len).max().unwrap_or(0);
            self.free
                .iter()
                .position(|f| f.len() == most)
                .expect("pools exist")
        } else {
            s
        };
        self.free_count -= 1;
        self.free[from]
            .pop_front()
            .expect("page FTL: free pool empty (GC reserve broken)")
    }

    /// The next free page of stream `s`'s write frontier, opening a new block (and,
    /// for host writes, collecting garbage) when its current one is full.
    fn frontier(&mut self, flash: &mut Flash, s: usize, in_gc: bool) -> Ppn {
        while flash.is_full(self.active[s]) {
            self.index
                .insert(self.active[s], flash.valid_count(self.active[s]));
            self.active[s] = self.take_free(s);
            if !in_gc {
                self.collect(flash);
            }
        }
        self.geo
            .ppn(self.active[s], flash.write_ptr(self.active[s]))
    }

    /// GC while free blocks are fewer than the threshold.
    fn collect(&mut self, flash: &mut Flash) {
        while self.free_count < self.gc_threshold {
            let (victim, valid) = self
                .index
                .pop()
                .expect("page FTL: no sealed block to collect");
            assert!(
                valid < self.geo.pages_per_block || !self.index.stuck(),
                "page FTL: GC victim {victim:?} and every sealed block are fully valid; \
                 no progress possible"
            );
            // One loop per allocation, so `single` (the papers', the hot case) pays
            // nothing for the others.
            match self.alloc {
                DieAlloc::Single => self.copy_valid(flash, victim, |_, _, _| 0),
                DieAlloc::RoundRobin | DieAlloc::Static => {
                    self.copy_valid(flash, victim, |f: &mut PageFtl, flash: &Flash, src| {
                        let lpn = f.lpn_of(flash, src);
                        f.stream(lpn)
                    })
                }
            }
            flash.erase(victim, Cause::Gc);
            let pools = self.free.len();
            self.free[victim.idx() % pools].push_back(victim);
            self.free_count += 1;
            self.stats.gc_invocations += 1;
        }
    }

    /// Copies the valid pages of `victim`, each to the frontier of the stream `pick`
    /// says.
    #[inline(always)]
    fn copy_valid(
        &mut self,
        flash: &mut Flash,
        victim: Pbn,
        mut pick: impl FnMut(&mut PageFtl, &Flash, Ppn) -> usize,
    ) {
        for off in 0..flash.write_ptr(victim) {
            let src = self.geo.ppn(victim, off);
            if !flash.is_valid(src) {
                continue;
            }
            let s = pick(self, flash, src);
            let dst = self.frontier(flash, s, true);
            let tag = flash.copy(src, dst, Cause::Gc);
            flash.invalidate(src);
            debug_assert_eq!(self.l2p[tag.lpn.idx()], src.0);
            self.l2p[tag.lpn.idx()] = dst.0;
            self.stats.gc_pages_copied += 1;
        }
    }

    /// The LPN a valid page holds (only static allocation needs it before the copy).
    #[inline]
    fn lpn_of(&self, flash: &Flash, src: Ppn) -> Lpn {
        match self.alloc {
            DieAlloc::Static => flash.peek_tag(src).expect("a valid page is programmed").lpn,
            DieAlloc::Single | DieAlloc::RoundRobin => Lpn(0),
        }
    }

    /// Every free block, pool by pool (for the checks).
    fn free_blocks(&self) -> VecDeque<Pbn> {
        self.free.iter().flatten().copied().collect()
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
            let s = self.stream(tag.lpn);
            let ppn = self.frontier(flash, s, false);
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
        // Partly written blocks reopen, one per stream (its die's, else any free
        // stream); erased blocks go back to their die's pool.
        let streams = self.active.len();
        let mut open: Vec<Option<Pbn>> = vec![None; streams];
        let mut all_free = VecDeque::new();
        scan::sort_blocks(flash, &mut all_free, &mut self.index, |b| {
            let own = b.idx() % streams;
            let slot = if open[own].is_none() {
                Some(own)
            } else {
                open.iter().position(Option::is_none)
            };
            if let Some(s) = slot {
                open[s] = Some(b);
            }
            Ok(slot.is_some())
        })?;
        self.free.iter_mut().for_each(VecDeque::clear);
        self.free_count = all_free.len() as u32;
        for b in all_free {
            self.free[b.idx() % streams].push_back(b);
        }
        for (s, o) in open.into_iter().enumerate() {
            self.active[s] = match o {
                Some(b) => b,
                None if self.free_count > 0 => self.take_free(s),
                None => return Err(RecoverError::Failed("no free or open block left".into())),
            };
        }
        self.turn = 0;
        self.collect(flash);
        Ok(())
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        scan::check_l2p(flash, &self.l2p)?;
        let free = self.free_blocks();
        if free.len() != self.free_count as usize {
            return Err(format!(
                "{} free blocks counted, {} in the pools",
                self.free_count,
                free.len()
            ));
        }
        scan::check_blocks(flash, &free, &self.index, &self.active)
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

    /// Host and GC writes program the tags they are handed; only recovery orders them.
    fn packed_tags(&self) -> bool {
        true
    }

    fn read_back(&mut self, flash: &mut Flash, oracle: &mut Oracle) -> Result<u64, Violation> {
        let mut checked = 0;
        for (l, &ppn) in self.l2p.iter().enumerate() {
            let read = || (ppn != UNMAPPED).then(|| flash.read(Ppn(ppn), Cause::Host));
            checked += oracle.read_back(Lpn(l as u32), read)? as u64;
            if l % 4096 == 0 {
                flash.clear_log();
            }
        }
        Ok(checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::geometry::GeometryBuilder;

    /// 4 dies (2 channels x 2), 8 pages per block, 64 logical blocks.
    fn geo() -> Geometry {
        GeometryBuilder {
            page_size: 2048,
            pages_per_block: 8,
            spare_bytes: 64,
            logical_bytes: 64 * 8 * 2048,
            op_percent: 25.0,
            channels: 2,
            dies_per_channel: 2,
            min_spare_blocks: 0,
        }
        .build()
        .unwrap()
    }

    fn ftl(alloc: DieAlloc) -> (PageFtl, Flash) {
        let g = geo();
        let opts = PageOptions {
            die_alloc: alloc,
            ..PageOptions::default()
        };
        (PageFtl::new(&g, &opts).unwrap(), Flash::new(&g))
    }

    /// Writes `lpns` one page at a time (version 1, 2, ... per LPN), deep-checking.
    fn write_all(f: &mut PageFtl, flash: &mut Flash, lpns: impl Iterator<Item = u32>) {
        let mut version = vec![0u32; geo().logical_pages as usize];
        for l in lpns {
            version[l as usize] += 1;
            let tag = PageWrite {
                lpn: Lpn(l),
                version: version[l as usize],
            };
            f.write(flash, &[tag]);
        }
        f.check(flash).unwrap();
    }

    fn die_of(f: &PageFtl, lpn: u32) -> u32 {
        f.l2p[lpn as usize] / f.geo.pages_per_block % f.geo.dies()
    }

    #[test]
    fn round_robin_deals_consecutive_writes_to_every_die() {
        let (mut f, mut flash) = ftl(DieAlloc::RoundRobin);
        write_all(&mut f, &mut flash, 0..8);
        let dies: Vec<u32> = (0..8).map(|l| die_of(&f, l)).collect();
        assert_eq!(dies, [0, 1, 2, 3, 0, 1, 2, 3]);
        // Single keeps the papers' one frontier: the same 8 pages on one die.
        let (mut s, mut flash) = ftl(DieAlloc::Single);
        write_all(&mut s, &mut flash, 0..8);
        assert!((0..8).all(|l| die_of(&s, l) == 0));
    }

    #[test]
    fn static_striping_keeps_every_lpn_on_its_die_through_gc() {
        let (mut f, mut flash) = ftl(DieAlloc::Static);
        let n = geo().logical_pages;
        // Fill, then overwrite at random many times over: GC runs and copies.
        let mut rng = ftlab_core::rng::SplitMix64::new(3);
        let random: Vec<u32> = (0..20 * n).map(|_| rng.below(n as u64) as u32).collect();
        write_all(&mut f, &mut flash, (0..n).chain(random));
        assert!(f.stats.gc_pages_copied > 0, "GC must have copied");
        for l in 0..n {
            assert_eq!(die_of(&f, l), l % 4, "LPN {l}");
        }
    }

    #[test]
    fn round_robin_survives_heavy_gc_and_recovers_its_open_blocks() {
        let (mut f, mut flash) = ftl(DieAlloc::RoundRobin);
        let n = geo().logical_pages;
        let mut rng = ftlab_core::rng::SplitMix64::new(5);
        let random: Vec<u32> = (0..20 * n).map(|_| rng.below(n as u64) as u32).collect();
        write_all(&mut f, &mut flash, (0..n).chain(random));
        assert!(f.stats.gc_invocations > 0);
        // A power loss: a fresh instance rebuilds from flash (its GC may move pages)
        // and passes the checks, every LPN on its newest version.
        let tags = |f: &PageFtl, flash: &Flash| -> Vec<Option<PageTag>> {
            f.l2p.iter().map(|&p| flash.peek_tag(Ppn(p))).collect()
        };
        let before = tags(&f, &flash);
        let (mut g, _) = ftl(DieAlloc::RoundRobin);
        flash.power_cycle();
        g.recover(&mut flash).unwrap();
        g.check(&flash).unwrap();
        assert_eq!(tags(&g, &flash), before);
    }

    #[test]
    fn one_open_block_per_die_needs_its_reserve() {
        // 64 logical blocks + gc_threshold 3 + 4 (GC reserve) + 4 open blocks = 75.
        let mut g = geo();
        g.blocks = 74;
        let opts = PageOptions {
            die_alloc: DieAlloc::RoundRobin,
            ..PageOptions::default()
        };
        let e = PageFtl::new(&g, &opts).err().unwrap().to_string();
        assert!(
            e.contains("needs at least 75") && e.contains("one per die"),
            "{e}"
        );
        g.blocks = 75;
        assert!(PageFtl::new(&g, &opts).is_ok());
    }
}
