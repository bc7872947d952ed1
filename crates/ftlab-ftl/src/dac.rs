//! `dac`: Dynamic dAta Clustering, page mapping with K regions by update frequency.
//!
//! Source: superblock-ftl.txt §2.4 (after Chiang et al. 1998/1999): "DAC logically
//! partitions flash memory into several regions. [...] When data are updated, they are
//! promoted to the upper region, while data are demoted back to the lower region when the
//! associated block is erased. [...] finding a victim block for garbage collection is a
//! time-consuming job, as DAC examines all the block information to find the victim
//! block." One L2P entry per logical page in RAM; each region appends to its own active
//! block; greedy GC reclaims the sealed block with the fewest valid pages.
//!
//! Choices the paper leaves open, as options or documented defaults:
//! - `regions` (K, default `auto`): the paper's default is 4. Every region keeps one open
//!   active block, so K active blocks plus the GC reserve must fit the over-provisioned
//!   blocks; `auto` is `min(4, blocks - logical_blocks - gc_threshold)` (at least 1), so
//!   the default scales down on devices with few spare blocks. An explicit K that does not
//!   fit is refused, naming the option.
//! - `gc_threshold` (default 2): GC runs while fewer than this many blocks are free. Two
//!   is the least that is always safe: all pages a GC victim of region `r` holds are
//!   demoted to the one region `max(r-1, 0)`, and a victim holds fewer valid pages than a
//!   block, so one victim opens at most one new block; with `blocks >= logical_blocks +
//!   gc_threshold + K` a sealed block with an invalid page always exists (pigeonhole).
//!   This is `die_alloc = "single"`'s argument; a multi-die allocation keeps a larger
//!   reserve (below).
//! - A page written for the first time (or again after a trim) starts in region 0, the
//!   coldest: it has no update history. An update of a page in region `r` goes to
//!   `min(r+1, K-1)`; a GC copy from region `r` to `max(r-1, 0)`.
//! - The region of a page is the region of the block that holds it, so no per-page
//!   region table is needed (one byte per block).
//! - Victim: `gc_policy` over the sealed blocks of all regions (default `greedy`: fewest
//!   valid pages, ties by the lowest block number; the policies are in
//!   [`ftlab_core::victim`]); the active blocks are never victims. A policy other than
//!   greedy may take a fully valid block: its copies open at most one block, as a
//!   greedy victim's do, so `gc_threshold` 2 stays safe.
//! - Where GC copies go (issue 23 item 2, not in the paper): `gc_frontier = "shared"`
//!   (default: a demoted page joins the host writes of its new region in that region's
//!   active block) or `"separate"` (each region has a second open block for GC copies
//!   only, opened when the first copy arrives; so K regions keep up to 2K open blocks,
//!   `auto` regions are `min(4, (blocks - logical_blocks - gc_threshold) / 2)` and an
//!   explicit K needs `logical_blocks + gc_threshold + 2K` blocks). Recovery cannot tell
//!   a GC block from a host block: partly written blocks reopen as the host blocks of
//!   regions 0, 1, ... and then as the GC blocks of regions 0, 1, ... (any beyond 2K are
//!   sealed). Under `separate`, `ftl.extra` reports per stream (`host`, `gc`) the pages
//!   programmed (`stream_*_programs`) and the blocks opened (`stream_*_blocks`).
//! - Free blocks are reused first-in first-out (`wear_leveling = "off"`, default), or
//!   least-erased first (`"dynamic"`, issue 23 item 3, not in the paper; ties by the
//!   lowest block number; [`ftlab_core::wear`]), or `"static"`: dynamic, and after each
//!   collection, when the most-erased block has more than `wl_threshold` (16) erases
//!   more than the least-erased sealed block, that block's valid pages move as GC
//!   copies do (demoted a region: data that sat in a cold block is cold) and it is
//!   erased and freed; one block per check ([`ftlab_core::wear::StaticLeveling`];
//!   `ftl.extra.wl_migrations`, `wl_pages_copied`, not GC rounds, GC copies or
//!   `u_avg`). GC is checked when a host write opens a new active block, the moment the
//!   free pool shrinks.
//! - Endurance (issue 23 item 4, not in the paper): `pe_limit` (default 0: never). A
//!   block erased `pe_limit` times retires as it is handed back to the pool
//!   ([`ftlab_core::wear::Retirement`]); the scheme works on while `logical blocks +
//!   gc_threshold + open blocks` are left, and raises `WornOut` past that or when its
//!   pool runs dry with blocks retired (with `gc_threshold` 2 a retirement during a
//!   collection can do that at once: raise the threshold to give the device room to
//!   lose blocks). Recovery re-derives retirement from the erase counts on flash.
//! - Power-loss recovery (not in the paper): DAC keeps no checkpoint, so start-up reads
//!   the spare area of every programmed page and maps each LPN to its newest version.
//!   Which region a block belonged to is not on flash: recovered blocks are in region 0
//!   (the update history is lost), partly written blocks become the active blocks of
//!   regions 0, 1, ... (any beyond K are sealed). Trims are not persisted, and GC may
//!   erase a trimmed last version before an older stale copy, which the scan then maps:
//!   a trimmed page reads back as zeroes or any version written before the trim
//!   (`TrimRecovery::AnyEarlier`, checked by the oracle).
//! - Torn operations (issue 25 item 3, not in the paper): a power loss inside a flash
//!   operation leaves a torn page (it reads as `PageTag::UNCORRECTABLE`) or a torn
//!   erase (every page of the block torn, its write pointer at the end). The scan
//!   skips torn pages, which are then neither mapped nor valid; a block with torn
//!   pages is otherwise an ordinary block: partly written, it reopens as an active
//!   block (its next program goes past the torn page); full, it is sealed, and a
//!   torn erase, with no valid page, is the first greedy victim (collected, that is
//!   erased again, before its block is used). GC copies a victim's valid pages before
//!   it erases it, so a cut inside a collection leaves every live page on flash. A
//!   host update takes the page for its new version (which may open a block and
//!   collect garbage) before it drops the old copy, and is promoted from the region
//!   the old copy was in when the write began: dropping it first, as this scheme did,
//!   let GC erase the block holding the last durable copy while the new version was
//!   not yet programmed, and a cut in between lost both (the first torn run found it,
//!   `3000@34` on the tiny conformance device; the paper does not order the two).
//! - Die-aware allocation (issue 22 item 3, not in the paper, which models one chip):
//!   `die_alloc = "single"` (default: one active block per region), `"round_robin"`,
//!   `"static"` or `"least_busy"`, as `page` has them: each region has one active block
//!   per die (K x dies open blocks; 2 K x dies under `gc_frontier = "separate"`; dies:
//!   channels x dies of parallel timing, 1 under serial timing, `min(dies, blocks)`),
//!   and a page of a region (a host write, or a GC copy demoted into it) goes to that
//!   region's block on the die the choice gives: in turn (one turn for all regions),
//!   LPN `l % dies`, or the die free first under parallel timing (in turn without a
//!   die clock). Free blocks are kept per die; a die with none borrows from the die
//!   with the most. The region rule is unchanged. Open choice, made here: the full
//!   variant (every region on every die) rather than dealing the K active blocks
//!   over dies, so a run of writes to one region spreads over the dies as in `page`.
//!   Its cost is the GC reserve: with one open block per die, a victim's copies can
//!   open a block on every die of the region it is demoted into, so the one-block
//!   argument above no longer holds. Counting the blocks an invocation takes (at
//!   most one first block per open slot of the regions copies go to, regions 0 to
//!   K - 2, any others only after `pages_per_block` copies each, so no more than the
//!   rounds freed), the pool stays non-empty if GC starts with `(max(K - 1, 1)) x
//!   dies` blocks free; so GC runs while fewer than `gc_threshold + max(K - 1, 1) x
//!   dies - 1` are free, and the device needs `logical_blocks + gc_threshold +
//!   max(K - 1, 1) x dies - 1 + K x dies` blocks (x 2 for the open blocks under
//!   `separate`); `auto` regions are the most, up to 4, that fit, and the refusal
//!   names `die_alloc`. Recovery reopens partly written blocks as the regions' open
//!   blocks, region 0 first, a block to a slot of its own die in that region first.
//! - GC per die (issue 22 item 3, not in the paper; `page` and `dftl` have it too):
//!   `gc_scope = "per_die"`, with a multi-die `die_alloc` (refused otherwise, naming
//!   both). Each die keeps its sealed blocks in its own victim index (its own policy
//!   state, `dievictims.rs`). The trigger is unchanged (a host write that opens a
//!   block with fewer than the threshold free), and that collection's rounds take the
//!   writing die's own victims while it has a block with an invalid page, else the
//!   global pick; the copies are demoted a region down as always, onto the victim's
//!   die (that region's open block there; a die with no free block borrows one, as
//!   host writes do). Open choice, made here, as in `dftl`: the trigger stays the
//!   global pool, so the reserve and the geometry rule are global GC's (a round's
//!   copies now go to one open block and take one block at most, fewer than the
//!   reserve allows for). `ftl.extra.gc_die_victims` counts the victims a die picked
//!   among its own blocks.
//! - `mapping_bytes` counts the L2P table (4 bytes per logical page) and the region byte
//!   per block; the GC index is controller bookkeeping every scheme with GC needs.
//! - Reported `extra`: `regions` (the K in use), `u_avg` (fraction of written pages in GC
//!   victims, superblock-ftl.txt §5.1; DAC only collects sealed blocks, so it is 1) and
//!   `merge_count` (GC victims: the paper counts DAC's block reclamations as its merges).

use crate::auto::AutoOr;
use crate::demand::{DiePools, DieStreams};
use crate::dievictims::DieVictims;
use crate::hints::{self, Hints};
use crate::page::{DieAlloc, GcScope};
use crate::scan::{self, UNMAPPED};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{Ftl, FtlStats, RecoverError, TrimRecovery};
use ftlab_core::geometry::Geometry;
use ftlab_core::options::{geometry_error, JsonSchema, SchemeError};
use ftlab_core::victim::{self, GcFrontier, GcPolicy, VictimPolicy, Victims};
use ftlab_core::wear::{self, Retirement, StaticLeveling, WearLeveling};
use ftlab_core::{Lpn, PageTag, PageWrite, Pbn, Ppn};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Scheme id in the registry and in errors.
pub const ID: &str = "dac";

/// Options of the `dac` FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DacOptions {
    /// Number of regions K (superblock-ftl.txt §2.4; auto: 4, fewer if the spare blocks
    /// cannot hold K active blocks plus the GC reserve).
    #[schemars(range(min = 1, max = 255))]
    pub regions: AutoOr<u32>,
    /// GC runs while fewer than this many blocks are free (at least 2: one block for the
    /// host, one for a GC victim's copies).
    #[schemars(range(min = 2))]
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
    /// Wear levelling (ftlab_core::wear): off (free blocks first-in first-out), dynamic
    /// (a new block is the least-erased free one) or static (dynamic, and when max - min
    /// erase count exceeds wl_threshold the data of the least-erased sealed block moves).
    pub wear_leveling: WearLeveling,
    /// Erase-count spread (max - min) above which wear_leveling = static moves data.
    #[schemars(range(min = 1))]
    pub wl_threshold: u32,
    /// Where GC copies are written: shared (the active block of the region they are
    /// demoted to) or separate (a second open block per region, for GC copies only).
    pub gc_frontier: GcFrontier,
    /// Erases after which a block retires (never written again); 0: blocks never
    /// retire. The NAND presets' rated cycles are in ftlab_core::nand (pe_cycles).
    pub pe_limit: u32,
    /// Which die a page is written on: single (one active block per region, the
    /// paper's), round_robin (one per region and die, pages dealt in turn), static (die
    /// = LPN % dies) or least_busy (the die free first under parallel timing). Dies:
    /// channels x dies of parallel timing (1 under serial).
    pub die_alloc: DieAlloc,
    /// Where GC looks for victims: global (every sealed block, copies dealt by
    /// die_alloc; the default) or per_die (a collection a die's host write starts takes
    /// that die's own blocks and the copies stay on it; needs a multi-die die_alloc).
    pub gc_scope: GcScope,
}

impl Default for DacOptions {
    fn default() -> Self {
        DacOptions {
            regions: AutoOr::Auto,
            gc_threshold: 2,
            gc_policy: GcPolicy::Greedy,
            gc_d: victim::DEFAULT_D,
            gc_window: victim::DEFAULT_WINDOW,
            wear_leveling: WearLeveling::Off,
            wl_threshold: wear::DEFAULT_WL_THRESHOLD,
            gc_frontier: GcFrontier::Shared,
            pe_limit: 0,
            die_alloc: DieAlloc::Single,
            gc_scope: GcScope::Global,
        }
    }
}

const NO_BLOCK: u32 = u32::MAX;
const DEFAULT_REGIONS: u32 = 4;

/// The DAC FTL.
pub struct DacFtl {
    geo: Geometry,
    l2p: Vec<u32>,
    /// Region of each block's data (meaningful for active and sealed blocks).
    region: Vec<u8>,
    /// Active block of each region and die stream, at `region * dies + stream` (one
    /// stream under `die_alloc = "single"`; `NO_BLOCK` until first written).
    active: Vec<u32>,
    /// Under `gc_frontier = "separate"`: the GC copies' open block of each region and
    /// stream, indexed as `active` (`NO_BLOCK` until its first copy); empty under
    /// `shared`.
    gc_active: Vec<u32>,
    /// Which stream (die) each page goes to.
    streams: DieStreams,
    /// Per stream (host, GC): pages programmed and blocks opened (`separate` only).
    stream_programs: [u64; 2],
    stream_blocks: [u64; 2],
    free: DiePools,
    index: Victims,
    /// The last prefetch hints ([`Ftl::prefetch`]).
    hints: Hints,
    /// Under `gc_scope = "per_die"`: each die's sealed blocks (empty under `global`).
    die_index: DieVictims,
    /// Under `per_die`: the die whose host write started the collection running.
    gc_die: Option<usize>,
    /// Victims a die picked among its own blocks (`per_die`).
    die_victims: u64,
    /// Static wear levelling, if on.
    wl: Option<StaticLeveling>,
    gc_threshold: u32,
    stats: FtlStats,
    /// Pages written in GC victims when they were chosen (for `u_avg`).
    victim_pages_written: u64,
}

impl DacFtl {
    /// Builds the FTL for `geo`.
    pub fn new(geo: &Geometry, opts: &DacOptions) -> Result<DacFtl, SchemeError> {
        let gc_threshold = opts.gc_threshold.max(2);
        let streams = DieStreams::new(geo, opts.die_alloc);
        let n = streams.n as u32;
        // Open blocks per region: the active block, and under `separate` the GC's; one
        // of each per die under a multi-die allocation.
        let separate = opts.gc_frontier == GcFrontier::Separate;
        let per = if separate { 2 * n } else { n };
        let what = match (separate, n) {
            (true, 1) => "two open blocks per region (gc_frontier = \"separate\")".to_string(),
            (false, 1) => "one active block per region".to_string(),
            (true, _) => format!(
                "two open blocks per region and die, {per} per region (gc_frontier = \
                 \"separate\", die_alloc)"
            ),
            (false, _) => {
                format!("one active block per region and die, {n} per region (die_alloc)")
            }
        };
        // The GC reserve of a multi-die allocation (module docs): one block per die and
        // per region GC copies can be demoted into, less one.
        let reserve = |k: u32| {
            if n == 1 {
                0
            } else {
                k.saturating_sub(1).max(1) * n - 1
            }
        };
        let reserve_what = |k: u32| {
            if n == 1 {
                String::new()
            } else {
                format!(
                    " + {} (GC reserve of die_alloc, (regions - 1) x dies - 1)",
                    reserve(k)
                )
            }
        };
        let regions = match opts.regions {
            AutoOr::Auto => {
                let fits = |k: u32| {
                    geo.logical_blocks() + gc_threshold + reserve(k) + per * k <= geo.blocks
                };
                let fit = (1..=DEFAULT_REGIONS).rev().find(|&k| fits(k)).unwrap_or(0);
                if fit == 0 {
                    return Err(geometry_error(
                        ID,
                        format!(
                            "needs at least {} physical blocks (logical blocks + gc_threshold{} \
                             + 1 region, {what}) but the geometry has {}; raise --op or \
                             lower gc_threshold",
                            geo.logical_blocks() + gc_threshold + reserve(1) + per,
                            reserve_what(1),
                            geo.blocks
                        ),
                    ));
                }
                fit
            }
            AutoOr::Value(k) => {
                let k = k.clamp(1, 255);
                let needed = geo.logical_blocks() + gc_threshold + reserve(k) + per * k;
                if geo.blocks < needed {
                    return Err(geometry_error(
                        ID,
                        format!(
                            "regions = {k} needs at least {needed} physical blocks (logical \
                             blocks + gc_threshold{} + {what}) but the geometry has {}; raise \
                             --op or lower regions",
                            reserve_what(k),
                            geo.blocks
                        ),
                    ));
                }
                k
            }
        };
        let per_die = opts.gc_scope == GcScope::PerDie;
        if per_die && n == 1 {
            return Err(crate::demand::per_die_refusal(ID));
        }
        let slots = (regions * n) as usize;
        let gc_threshold = gc_threshold + reserve(regions);
        let policy = VictimPolicy {
            policy: opts.gc_policy,
            d: opts.gc_d,
            window: opts.gc_window,
        };
        Ok(DacFtl {
            geo: geo.clone(),
            l2p: vec![UNMAPPED; geo.logical_pages as usize],
            region: vec![0; geo.blocks as usize],
            active: vec![NO_BLOCK; slots],
            gc_active: if separate {
                vec![NO_BLOCK; slots]
            } else {
                Vec::new()
            },
            streams,
            stream_programs: [0; 2],
            stream_blocks: [0; 2],
            free: {
                let min_blocks = geo.logical_blocks() + gc_threshold + per * regions;
                let dynamic = opts.wear_leveling != WearLeveling::Off;
                DiePools::new(
                    geo.blocks,
                    n,
                    dynamic,
                    Retirement::new(ID, geo.blocks, opts.pe_limit, min_blocks),
                )
            },
            index: Victims::new(geo.blocks, geo.pages_per_block, policy),
            hints: Hints::new(),
            die_index: DieVictims::new(
                geo.blocks,
                geo.pages_per_block,
                policy,
                if per_die { n } else { 0 },
            ),
            gc_die: None,
            die_victims: 0,
            wl: (opts.wear_leveling == WearLeveling::Static)
                .then(|| StaticLeveling::new(geo.blocks, opts.wl_threshold)),
            gc_threshold,
            stats: FtlStats::default(),
            victim_pages_written: 0,
        })
    }

    /// Seeds the generator of the random victim policies (from the run's seed).
    pub fn with_gc_seed(mut self, seed: u64) -> Self {
        self.index.seed(seed);
        self.die_index.seed(seed);
        self
    }

    /// Number of regions in use.
    pub fn regions(&self) -> u32 {
        (self.active.len() / self.streams.n) as u32
    }

    /// The stream (die) the next page of `lpn` in `region` goes to; GC copies (`in_gc`)
    /// compare the die clocks of the blocks they go to.
    #[inline]
    fn pick_stream(&mut self, flash: &Flash, lpn: Lpn, region: usize, in_gc: bool) -> usize {
        if self.streams.n == 1 {
            return 0;
        }
        let n = self.streams.n;
        let open = if in_gc && !self.gc_active.is_empty() {
            &self.gc_active
        } else {
            &self.active
        };
        let open = &open[region * n..(region + 1) * n];
        self.streams.pick(flash, lpn, |s| {
            Some(Pbn(open[s])).filter(|b| b.0 != NO_BLOCK)
        })
    }

    /// The region of the block holding `lpn`'s live copy, if mapped.
    pub fn region_of(&self, lpn: Lpn) -> Option<u32> {
        let p = self.l2p[lpn.idx()];
        (p != UNMAPPED).then(|| self.region[self.geo.block_of(Ppn(p)).idx()] as u32)
    }

    /// The next free page of `region`'s active block on stream `st`, opening a new one
    /// (from the stream's die) when it is full (and, for host writes, collecting
    /// garbage after opening it).
    #[inline]
    fn frontier(&mut self, flash: &mut Flash, region: usize, st: usize, in_gc: bool) -> Ppn {
        // The common case inline (as `page`'s): the open block has room.
        if !in_gc || self.gc_active.is_empty() {
            let a = self.active[region * self.streams.n + st];
            if a != NO_BLOCK {
                let wp = flash.write_ptr(Pbn(a));
                if wp < self.geo.pages_per_block {
                    return self.geo.ppn(Pbn(a), wp);
                }
            }
        }
        self.frontier_slow(flash, region, st, in_gc)
    }

    /// [`DacFtl::frontier`] when the open block is full or not yet open, or for a GC
    /// copy under a separate GC frontier.
    #[inline(never)]
    fn frontier_slow(&mut self, flash: &mut Flash, region: usize, st: usize, in_gc: bool) -> Ppn {
        if in_gc && !self.gc_active.is_empty() {
            return self.gc_frontier(flash, region, st);
        }
        let i = region * self.streams.n + st;
        loop {
            let a = self.active[i];
            if a != NO_BLOCK && !flash.is_full(Pbn(a)) {
                return self.geo.ppn(Pbn(a), flash.write_ptr(Pbn(a)));
            }
            if a != NO_BLOCK {
                self.seal(flash, Pbn(a));
            }
            let b = self
                .free
                .pop_die(st)
                .expect("dac: free pool empty (GC reserve broken)");
            debug_assert!(flash.is_erased(b));
            self.region[b.idx()] = region as u8;
            self.active[i] = b.0;
            self.stream_blocks[0] += 1;
            if !in_gc {
                // Under `per_die`, this die's own blocks first.
                if !self.die_index.is_empty() {
                    self.gc_die = Some(st);
                }
                self.collect(flash);
                self.gc_die = None;
            }
        }
    }

    /// The next free page of `region`'s GC block (`gc_frontier = "separate"`), opening
    /// one when it is full or not yet open (inside a collection: no nested one).
    fn gc_frontier(&mut self, flash: &mut Flash, region: usize, st: usize) -> Ppn {
        let i = region * self.streams.n + st;
        let a = self.gc_active[i];
        if a == NO_BLOCK || flash.is_full(Pbn(a)) {
            if a != NO_BLOCK {
                self.seal(flash, Pbn(a));
            }
            let b = self
                .free
                .pop_die(st)
                .expect("dac: free pool empty (GC reserve broken)");
            self.region[b.idx()] = region as u8;
            self.gc_active[i] = b.0;
            self.stream_blocks[1] += 1;
        }
        let a = Pbn(self.gc_active[i]);
        self.geo.ppn(a, flash.write_ptr(a))
    }

    /// Seals a full open block: a GC candidate (and, under static wear levelling, a
    /// block whose data may move).
    fn seal(&mut self, flash: &Flash, b: Pbn) {
        self.index.insert(b, flash.valid_count(b));
        if !self.die_index.is_empty() {
            self.die_index.insert(b, flash.valid_count(b));
        }
        if let Some(wl) = &mut self.wl {
            wl.sealed(b, flash.erase_count(b));
        }
    }

    /// GC while free blocks are fewer than the threshold, then under static wear
    /// levelling at most one levelling move (and GC again if the moved block retired).
    fn collect(&mut self, flash: &mut Flash) {
        self.gc_rounds(flash);
        if self.wl.is_some() && self.level(flash) {
            self.gc_rounds(flash);
        }
    }

    /// GC while free blocks are fewer than the threshold. Each victim's valid
    /// pages are demoted one region down.
    fn gc_rounds(&mut self, flash: &mut Flash) {
        while (self.free.len() as u32) < self.gc_threshold {
            if let Some(d) = self.gc_die.filter(|&d| !self.die_index.stuck(d)) {
                // GC per die: the die's own victim (its policy's pick; one the policy
                // finds fully valid frees as much as it takes, as globally).
                let (victim, _) = self
                    .die_index
                    .choose(d, false)
                    .expect("not stuck: a block is sealed");
                self.index.remove(victim);
                self.die_index.remove(victim);
                self.die_victims += 1;
                self.reclaim(flash, victim);
                continue;
            }
            let (victim, valid) = self.index.pop().expect("dac: no sealed block to collect");
            assert!(
                valid < self.geo.pages_per_block || !self.index.stuck(),
                "dac: GC victim {victim:?} and every sealed block are fully valid; no \
                 progress possible"
            );
            if !self.die_index.is_empty() {
                self.die_index.remove(victim);
            }
            self.reclaim(flash, victim);
        }
    }

    /// Static wear levelling, checked after each collection (as `page` does): past
    /// the spread, the least-erased sealed block's valid pages move (GC copies, demoted
    /// a region like any GC copy, `Cause::Gc`) and it is erased and freed, so its
    /// erase budget goes back into circulation. Counted as `wl_migrations` and
    /// `wl_pages_copied`, not as GC rounds or GC copies. Whether a block moved.
    fn level(&mut self, flash: &mut Flash) -> bool {
        let Some(cold) = self.wl.as_ref().and_then(StaticLeveling::candidate) else {
            return false;
        };
        self.index.remove(cold);
        if !self.die_index.is_empty() {
            self.die_index.remove(cold);
        }
        let valid = flash.valid_count(cold) as u64;
        let written = flash.write_ptr(cold) as u64;
        self.reclaim(flash, cold);
        // Counted as levelling, not as a GC round, its copies or U_avg.
        self.stats.gc_pages_copied -= valid;
        self.stats.gc_invocations -= 1;
        self.victim_pages_written -= written;
        if let Some(wl) = &mut self.wl {
            wl.moved(valid);
        }
        true
    }

    /// Copies a victim's valid pages one region down and erases it.
    // Like `page`'s GC loop but for the demotion target; `page` keeps its own copy so
    // the baseline every paper compares against reads on its own, without regions.
    fn reclaim(&mut self, flash: &mut Flash, victim: Pbn) {
        if let Some(wl) = &mut self.wl {
            wl.unsealed(victim);
        }
        self.victim_pages_written += flash.write_ptr(victim) as u64;
        let dest = (self.region[victim.idx()] as usize).saturating_sub(1);
        if self.streams.n == 1 || !self.die_index.is_empty() {
            // One frontier takes every copy (`single`, or GC per die: the victim's
            // die): a destination block at a time.
            let st = if self.streams.n == 1 {
                0
            } else {
                self.die_index.on_die(victim).0
            };
            self.move_valid(flash, victim, dest, st);
        } else {
            self.copy_valid(flash, victim, dest);
        }
        flash.erase(victim, Cause::Gc);
        let erases = flash.erase_count(victim);
        if let Some(wl) = &mut self.wl {
            wl.erased(erases);
        }
        self.free.push(victim, erases);
        self.stats.gc_invocations += 1;
    }

    /// [`DacFtl::reclaim`]'s copies to region `dest`'s frontier on stream `st`, a
    /// destination block at a time ([`Flash::move_valid`]: the same operations, counts
    /// and times as page by page; the frontier seals a full block when asked for the
    /// next page, as page by page).
    fn move_valid(&mut self, flash: &mut Flash, victim: Pbn, dest: usize, st: usize) {
        let mut off = 0;
        while let Some(from) = flash.next_valid(victim, off) {
            off = from;
            let first = self.frontier(flash, dest, st, true);
            let to = self.geo.block_of(first);
            let (l2p, mut n) = (&mut self.l2p, 0);
            off = flash.move_valid(victim, off, to, Cause::Gc, |tag, src, dst| {
                debug_assert_eq!(l2p[tag.lpn.idx()], src.0);
                l2p[tag.lpn.idx()] = dst.0;
                n += 1;
            });
            self.stats.gc_pages_copied += n;
            if !self.gc_active.is_empty() {
                self.stream_programs[1] += n;
            }
        }
    }

    /// [`DacFtl::reclaim`]'s copies page by page, each to the stream the allocation
    /// picks.
    fn copy_valid(&mut self, flash: &mut Flash, victim: Pbn, dest: usize) {
        for off in 0..flash.write_ptr(victim) {
            let src = self.geo.ppn(victim, off);
            if !flash.is_valid(src) {
                continue;
            }
            let st = if self.die_index.is_empty() {
                let lpn = match self.streams.alloc {
                    DieAlloc::Static => {
                        flash.peek_tag(src).expect("a valid page is programmed").lpn
                    }
                    _ => Lpn(0),
                };
                self.pick_stream(flash, lpn, dest, true)
            } else {
                // GC per die: the copies stay on the victim's die.
                self.die_index.on_die(victim).0
            };
            let dst = self.frontier(flash, dest, st, true);
            let tag = flash.copy(src, dst, Cause::Gc);
            flash.invalidate(src);
            debug_assert_eq!(self.l2p[tag.lpn.idx()], src.0);
            self.l2p[tag.lpn.idx()] = dst.0;
            self.stats.gc_pages_copied += 1;
            if !self.gc_active.is_empty() {
                self.stream_programs[1] += 1;
            }
        }
    }

    /// Drops the live copy of `lpn`; returns the region it was in.
    #[inline]
    fn unmap(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<u8> {
        let old = self.l2p[lpn.idx()];
        if old == UNMAPPED {
            return None;
        }
        let old = Ppn(old);
        let block = self.geo.block_of(old);
        flash.invalidate(old);
        self.index.decrement(block);
        if !self.die_index.is_empty() {
            self.die_index.decrement(block);
        }
        self.l2p[lpn.idx()] = UNMAPPED;
        Some(self.region[block.idx()])
    }
}

// `read` and `trim` are `page`'s: the L2P table is the same; see `reclaim` for why
// the two schemes do not share code.
impl Ftl for DacFtl {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        let top = self.regions() as usize - 1;
        for &tag in pages {
            let region = match self.region_of(tag.lpn) {
                Some(r) => (r as usize + 1).min(top),
                None => 0,
            };
            let st = self.pick_stream(flash, tag.lpn, region, false);
            // The page to program first (opening a block may collect garbage), then
            // the old copy is dropped: GC must not erase the last durable copy of a
            // page before its new version is on flash (a power loss in between would
            // lose both; issue 25, item 3). GC may move the old copy meanwhile (a
            // region down): `unmap` drops it wherever it is. The update is promoted
            // from the region it was in when written.
            let ppn = self.frontier(flash, region, st, false);
            self.unmap(flash, tag.lpn);
            flash.program(ppn, tag, Cause::Host);
            self.l2p[tag.lpn.idx()] = ppn.0;
        }
        self.stream_programs[0] += pages.len() as u64;
    }

    // `read` and `trim` are `page`'s: both are a direct page map, and the three lines
    // each would share are a table lookup and a call of the scheme's own `unmap`.
    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        let ppn = self.l2p[lpn.idx()];
        (ppn != UNMAPPED).then(|| flash.read(Ppn(ppn), Cause::Host))
    }

    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.unmap(flash, lpn);
    }

    /// As `page`'s: host writes and GC copies program the tags they are handed (no
    /// tag of DAC's own), and only recovery orders versions. Half the bytes of whole
    /// tags, and a GC's reads of its victim's tags miss the cache half as often (the
    /// misses that made DAC's GC slower than `page`'s, issue 26).
    fn packed_tags(&self) -> bool {
        true
    }

    /// `page`'s chain of the crate's `hints` module: the map entry of `lpn` now, the
    /// old copy of the LPN hinted a step ago, the victim-set words of the one two steps
    /// ago (a block's region, one byte, stays cached).
    #[inline]
    fn prefetch(&mut self, flash: &Flash, lpn: Lpn) {
        hints::flat_map(
            flash,
            &self.index,
            &mut self.hints,
            &self.l2p,
            UNMAPPED,
            lpn,
        );
    }

    fn trim_recovery(&self) -> TrimRecovery {
        // Trims are not persisted and GC may erase a trimmed last version before an
        // older, stale copy of the page (module docs).
        TrimRecovery::AnyEarlier
    }

    fn recover(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        self.l2p = scan::newest_copies(flash, &mut ())?;
        self.region.fill(0);
        self.active.fill(NO_BLOCK);
        self.gc_active.fill(NO_BLOCK);
        // Partly written blocks reopen, in block-number order, as the host blocks of
        // regions 0, 1, ..., then the GC blocks; within the slots of a region (one per
        // die stream), a slot of the block's own die first, else any free one. With one
        // stream this is slot after slot. Any beyond the slots are sealed.
        let mut free = VecDeque::new();
        let n = self.streams.n;
        let host = self.active.len();
        let mut slots = vec![NO_BLOCK; host + self.gc_active.len()];
        scan::sort_blocks(flash, &mut free, &mut self.index, |b| {
            let Some(first) = slots.iter().position(|&x| x == NO_BLOCK) else {
                return Ok(false);
            };
            // The region (host or GC) being filled: its `n` slots.
            let start = first - first % n;
            let i = (start..start + n)
                .find(|&i| slots[i] == NO_BLOCK && i % n == b.idx() % n)
                .unwrap_or(first);
            slots[i] = b.0;
            self.region[b.idx()] = ((i % host) / n) as u8;
            Ok(true)
        })?;
        let gc = slots.split_off(host);
        self.active = slots;
        if !self.gc_active.is_empty() {
            self.gc_active = gc;
        }
        self.streams.turn = 0;
        self.free.clear();
        for b in free {
            self.free.push(b, flash.erase_count(b));
        }
        if !self.die_index.is_empty() {
            self.die_index.clear();
            for b in (0..self.geo.blocks).map(Pbn) {
                if self.index.contains(b) {
                    self.die_index.insert(b, flash.valid_count(b));
                }
            }
        }
        if let Some(wl) = &mut self.wl {
            // Erase counts are on flash (the controller keeps them with the blocks).
            wl.recover(flash.erase_counts());
            for b in (0..self.geo.blocks).map(Pbn) {
                if self.index.contains(b) {
                    wl.sealed(b, flash.erase_count(b));
                }
            }
        }
        self.collect(flash);
        Ok(())
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        scan::check_l2p(flash, &self.l2p)?;
        let (host, n) = (self.active.len(), self.streams.n);
        for (i, &a) in self.active.iter().chain(&self.gc_active).enumerate() {
            let r = (i % host) / n;
            if a != NO_BLOCK && self.region[a as usize] as usize != r {
                return Err(format!("open block {a} of region {r} is mislabelled"));
            }
        }
        let actives: Vec<Pbn> = self
            .active
            .iter()
            .chain(&self.gc_active)
            .filter(|&&a| a != NO_BLOCK)
            .map(|&a| Pbn(a))
            .collect();
        let free: VecDeque<Pbn> = self.free.iter().collect();
        // Retired blocks count with the open ones: neither free nor sealed.
        let retired = self.free.retirement().retired();
        if let Some(b) = retired.iter().find(|&&b| !flash.is_erased(b)) {
            return Err(format!("retired {b:?} is not erased"));
        }
        let open: Vec<Pbn> = actives.iter().chain(retired).copied().collect();
        if !self.die_index.is_empty() {
            if let Some(b) = (0..self.geo.blocks)
                .map(Pbn)
                .find(|&b| self.index.contains(b) != self.die_index.contains(b))
            {
                return Err(format!(
                    "{b:?}: sealed in the global victim index {} but in its die's {}",
                    self.index.contains(b),
                    self.die_index.contains(b)
                ));
            }
        }
        scan::check_blocks(flash, &free, &self.index, &open)
    }

    fn stats(&self) -> FtlStats {
        let mut s = self.stats.clone();
        s.extra.gauge("regions", "regions", self.regions() as f64);
        s.extra
            .counter("merge_count", "merges", s.gc_invocations as f64);
        self.free.retirement().report(&mut s.extra);
        if let Some(wl) = &self.wl {
            wl.report(&mut s.extra);
        }
        if !self.gc_active.is_empty() {
            s.extra.streams(self.stream_programs, self.stream_blocks);
        }
        if !self.die_index.is_empty() {
            s.extra
                .counter("gc_die_victims", "blocks", self.die_victims as f64);
        }
        if s.gc_invocations > 0 {
            s.extra.gauge(
                "u_avg",
                "ratio",
                self.victim_pages_written as f64
                    / (s.gc_invocations as f64 * self.geo.pages_per_block as f64),
            );
        }
        s
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.victim_pages_written = 0;
        self.die_victims = 0;
        if let Some(wl) = &mut self.wl {
            wl.reset_stats();
        }
        self.stream_programs = [0; 2];
        self.stream_blocks = [0; 2];
    }

    fn mapping_bytes(&self) -> u64 {
        self.l2p.len() as u64 * 4 + self.region.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{geo4, geometry, tag};
    use ftlab_core::options::from_pairs;

    /// 8 logical blocks of 4 pages of 2 KiB with `op` percent over-provisioning.
    fn geo(op: f64) -> Geometry {
        geometry(2048, 4, 32, op)
    }

    fn opts(pairs: &[(&str, &str)]) -> DacOptions {
        from_pairs(ID, pairs).unwrap()
    }

    #[test]
    fn auto_regions_scale_with_spare_blocks() {
        // 8 logical blocks + 50% = 12 blocks: 4 spare, 2 for the GC reserve -> K = 2.
        let d = DacFtl::new(&geo(50.0), &opts(&[])).unwrap();
        assert_eq!(d.regions(), 2);
        // 8 + 100% = 16 blocks: 8 spare -> the paper's K = 4.
        let d = DacFtl::new(&geo(100.0), &opts(&[])).unwrap();
        assert_eq!(d.regions(), 4);
    }

    #[test]
    fn too_many_regions_are_refused_naming_the_option() {
        let e = DacFtl::new(&geo(50.0), &opts(&[("regions", "4")]))
            .err()
            .unwrap();
        assert!(e.to_string().contains("regions = 4"), "{e}");
        let e = DacFtl::new(&geo(10.0), &opts(&[])).err().unwrap();
        assert!(
            e.to_string().contains("--op") && e.to_string().contains("gc_threshold"),
            "{e}"
        );
    }

    #[test]
    fn out_of_range_options_are_refused_naming_the_key() {
        for (key, value, why) in [
            ("gc_threshold", "1", "at least 2"),
            ("regions", "0", "from 1 to 255"),
            ("regions", "256", "from 1 to 255"),
            ("regions", "few", "`auto` or a number"),
        ] {
            let e = from_pairs::<DacOptions>(ID, &[(key, value)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`{key}` = `{value}`")) && e.contains(why),
                "{e}"
            );
        }
    }

    #[test]
    fn updates_promote_and_gc_copies_demote() {
        let g = geo(100.0);
        let mut f = Flash::new(&g);
        let mut d = DacFtl::new(&g, &opts(&[("regions", "3")])).unwrap();
        d.write(&mut f, &[tag(0, 1)]);
        assert_eq!(d.region_of(Lpn(0)), Some(0), "first write: coldest region");
        d.write(&mut f, &[tag(0, 2)]);
        assert_eq!(d.region_of(Lpn(0)), Some(1), "update: one region up");
        d.write(&mut f, &[tag(0, 3)]);
        d.write(&mut f, &[tag(0, 4)]);
        assert_eq!(d.region_of(Lpn(0)), Some(2), "capped at the top region");
        d.trim(&mut f, Lpn(0));
        d.write(&mut f, &[tag(0, 5)]);
        assert_eq!(d.region_of(Lpn(0)), Some(0), "after a trim it is new data");
        d.check(&f).unwrap();
    }

    #[test]
    fn regions_keep_separate_active_blocks() {
        let g = geo(100.0);
        let mut f = Flash::new(&g);
        let mut d = DacFtl::new(&g, &opts(&[("regions", "2")])).unwrap();
        // Cold data: LPNs 0..4 written once. Hot data: LPN 8 updated repeatedly.
        for l in 0..4 {
            d.write(&mut f, &[tag(l, 1)]);
        }
        for v in 1..=6 {
            d.write(&mut f, &[tag(8, v)]);
        }
        // The cold block holds LPNs 0..3 and the first write of LPN 8 (all region 0);
        // the updates of LPN 8 went to region 1's own block.
        let cold = g.block_of(Ppn(d.l2p[0]));
        let hot = g.block_of(Ppn(d.l2p[8]));
        assert_ne!(cold, hot);
        assert_eq!(d.region[cold.idx()], 0);
        assert_eq!(d.region[hot.idx()], 1);
        d.check(&f).unwrap();
    }

    #[test]
    fn a_gc_copy_moves_a_page_one_region_down() {
        let g = geo(100.0);
        let mut f = Flash::new(&g);
        let mut d = DacFtl::new(&g, &opts(&[("regions", "2")])).unwrap();
        for l in 0..8 {
            d.write(&mut f, &[tag(l, 1)]); // region 0: blocks A = 0..3, B = 4..7
        }
        for l in 0..4 {
            d.write(&mut f, &[tag(l, 2)]); // region 1: block C = 0..3; A all invalid
        }
        for l in 0..3 {
            d.write(&mut f, &[tag(l, 3)]); // region 1: block D; C keeps only LPN 3
        }
        assert_eq!(d.region_of(Lpn(3)), Some(1));
        // Two greedy victims: A (0 valid), then C (1 valid: LPN 3).
        for _ in 0..2 {
            let (victim, _) = d.index.pop().unwrap();
            d.reclaim(&mut f, victim);
        }
        let s = d.stats();
        assert_eq!((s.gc_invocations, s.gc_pages_copied), (2, 1));
        assert_eq!(d.region_of(Lpn(3)), Some(0), "demoted by the GC copy");
        assert_eq!(d.region_of(Lpn(0)), Some(1), "untouched hot page stays up");
        assert_eq!(d.read(&mut f, Lpn(3)), Some(tag(3, 2)));
        d.check(&f).unwrap();
    }

    #[test]
    fn recovery_rebuilds_the_map_from_spare_areas() {
        let g = geo(100.0);
        let mut f = Flash::new(&g);
        let mut d = DacFtl::new(&g, &opts(&[])).unwrap();
        let mut version = vec![0u32; g.logical_pages as usize];
        for n in 0..3000u32 {
            let lpn = (n * 7 + n / 5) % g.logical_pages;
            version[lpn as usize] += 1;
            d.write(&mut f, &[tag(lpn, version[lpn as usize])]);
        }
        f.power_cycle();
        let mut r = DacFtl::new(&g, &opts(&[])).unwrap();
        r.recover(&mut f).unwrap();
        r.check(&f).unwrap();
        assert!(f.stats().spare_reads[Cause::Recovery as usize] > 0);
        for (l, &v) in version.iter().enumerate() {
            assert_eq!(r.read(&mut f, Lpn(l as u32)), Some(tag(l as u32, v)));
        }
        // It keeps working afterwards.
        for n in 0..2000u32 {
            let lpn = (n * 3) % g.logical_pages;
            version[lpn as usize] += 1;
            r.write(&mut f, &[tag(lpn, version[lpn as usize])]);
        }
        r.check(&f).unwrap();
    }

    /// `n` single-page writes from seed `x`, three quarters of them to a hot set of 8
    /// LPNs and the rest anywhere; returns each LPN's last version.
    fn hot_cold_writes(
        d: &mut DacFtl,
        f: &mut Flash,
        g: &Geometry,
        mut x: u64,
        n: u32,
    ) -> Vec<u32> {
        let mut version = vec![0u32; g.logical_pages as usize];
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lpn = if (x >> 60) < 12 {
                ((x >> 33) % 8) as u32
            } else {
                ((x >> 33) % g.logical_pages as u64) as u32
            };
            version[lpn as usize] += 1;
            d.write(f, &[tag(lpn, version[lpn as usize])]);
        }
        version
    }

    #[test]
    fn gc_keeps_data_under_a_hot_cold_mix() {
        let g = geo(50.0);
        let mut f = Flash::new(&g);
        let mut d = DacFtl::new(&g, &opts(&[])).unwrap();
        let version = hot_cold_writes(&mut d, &mut f, &g, 7, 5000);
        d.check(&f).unwrap();
        f.check().unwrap();
        let s = d.stats();
        assert!(s.gc_invocations > 100, "{s:?}");
        assert_eq!(s.extra["u_avg"], 1.0, "DAC only collects sealed blocks");
        for (l, &v) in version.iter().enumerate() {
            if v > 0 {
                assert_eq!(d.read(&mut f, Lpn(l as u32)), Some(tag(l as u32, v)));
            }
        }
    }

    #[test]
    fn a_separate_gc_frontier_halves_auto_regions_and_keeps_copies_apart() {
        // 8 logical + 100% = 16 blocks: 8 spare, 2 for the GC reserve, 6 / 2 -> K = 3.
        let sep = [("gc_frontier", "separate")];
        let d = DacFtl::new(&geo(100.0), &opts(&sep)).unwrap();
        assert_eq!(d.regions(), 3);
        let e = DacFtl::new(&geo(100.0), &opts(&[sep[0], ("regions", "4")]))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("needs at least 18") && e.contains("gc_frontier"),
            "{e}"
        );
        let g = geo(100.0);
        let mut f = Flash::new(&g);
        let mut d = DacFtl::new(&g, &opts(&sep)).unwrap();
        let version = hot_cold_writes(&mut d, &mut f, &g, 3, 4000);
        d.check(&f).unwrap();
        let s = d.stats();
        assert!(s.gc_pages_copied > 0);
        assert_eq!(s.extra["stream_gc_programs"], s.gc_pages_copied as f64);
        assert_eq!(s.extra["stream_host_programs"], 4000.0);
        // A power loss: both kinds of open block reopen; every LPN on its newest
        // version.
        f.power_cycle();
        let mut r = DacFtl::new(&g, &opts(&sep)).unwrap();
        r.recover(&mut f).unwrap();
        r.check(&f).unwrap();
        for (l, &v) in version.iter().enumerate() {
            if v > 0 {
                assert_eq!(r.read(&mut f, Lpn(l as u32)), Some(tag(l as u32, v)));
            }
        }
    }

    /// Static levelling (issue 23 item 3) on a hot/cold mix: the cold blocks' data
    /// moves, which narrows the erase-count spread against dynamic levelling alone,
    /// at a cost in GC copies; the moves are reported apart from GC.
    #[test]
    fn static_levelling_moves_cold_data_and_narrows_the_spread() {
        let g = geo(100.0);
        let spread = |wl: &str| {
            let mut f = Flash::new(&g);
            let o = opts(&[("wear_leveling", wl), ("wl_threshold", "4")]);
            let mut d = DacFtl::new(&g, &o).unwrap();
            let version = hot_cold_writes(&mut d, &mut f, &g, 5, 20_000);
            d.check(&f).unwrap();
            for (l, &v) in version.iter().enumerate() {
                if v > 0 {
                    assert_eq!(d.read(&mut f, Lpn(l as u32)), Some(tag(l as u32, v)));
                }
            }
            let e = f.erase_counts();
            let spread = e.iter().max().unwrap() - e.iter().min().unwrap();
            (spread, d.stats())
        };
        let (dynamic, _) = spread("dynamic");
        let (levelled, st) = spread("static");
        assert!(st.extra["wl_migrations"] > 0.0 && st.extra["wl_pages_copied"] > 0.0);
        assert!(
            levelled < dynamic && levelled <= 4 + 2,
            "spread {levelled} under static, {dynamic} under dynamic"
        );
    }

    #[test]
    fn dynamic_levelling_opens_the_least_erased_free_block() {
        let g = geo(50.0);
        let mut f = Flash::new(&g);
        let mut d = DacFtl::new(&g, &opts(&[("wear_leveling", "dynamic")])).unwrap();
        let mut version = vec![0u32; g.logical_pages as usize];
        let mut x: u64 = 9;
        for i in 0..3000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lpn = ((x >> 33) % 8) as u32;
            version[lpn as usize] += 1;
            // Before a write that opens a block, the block it opens is a least-erased
            // free one.
            let least = d.free.iter().map(|b| (f.erase_count(b), b.0)).min();
            let before: Vec<u32> = d.active.clone();
            d.write(&mut f, &[tag(lpn, version[lpn as usize])]);
            let opened: Vec<u32> = d
                .active
                .iter()
                .zip(&before)
                .filter(|(a, b)| a != b)
                .map(|(a, _)| *a)
                .collect();
            if let ([b], Some((e, _))) = (opened.as_slice(), least) {
                assert_eq!(f.erase_count(Pbn(*b)), e, "write {i}");
            }
        }
        d.check(&f).unwrap();
        assert!(d.stats().gc_invocations > 100);
    }

    fn multi(alloc: &str, frontier: &str) -> (DacFtl, Flash) {
        let g = geo4(100.0);
        let o = opts(&[("die_alloc", alloc), ("gc_frontier", frontier)]);
        (DacFtl::new(&g, &o).unwrap(), Flash::new(&g))
    }

    fn die_of(d: &DacFtl, lpn: u32) -> u32 {
        d.l2p[lpn as usize] / d.geo.pages_per_block % d.geo.dies()
    }

    /// Fill, then 20 device writes of random overwrites and 3 more; deep-checks.
    fn overwrite(d: &mut DacFtl, f: &mut Flash, seed: u64) {
        let n = d.geo.logical_pages;
        let mut rng = ftlab_core::rng::SplitMix64::new(seed);
        let mut version = vec![0u32; n as usize];
        for l in (0..n).chain((0..20 * n + 3).map(|_| rng.below(n as u64) as u32)) {
            version[l as usize] += 1;
            d.write(f, &[tag(l, version[l as usize])]);
        }
        d.check(f).unwrap();
        for (l, &v) in version.iter().enumerate() {
            assert_eq!(d.read(f, Lpn(l as u32)), Some(tag(l as u32, v)));
        }
    }

    #[test]
    fn round_robin_deals_a_regions_writes_to_every_die() {
        let (mut d, mut f) = multi("round_robin", "shared");
        assert_eq!(d.regions(), 4);
        for l in 0..8 {
            d.write(&mut f, &[tag(l, 1)]);
        }
        let dies: Vec<u32> = (0..8).map(|l| die_of(&d, l)).collect();
        assert_eq!(dies, [0, 1, 2, 3, 0, 1, 2, 3]);
        // Updates go to region 1, dealt in turn as well.
        for l in 0..4 {
            d.write(&mut f, &[tag(l, 2)]);
            assert_eq!(d.region_of(Lpn(l)), Some(1));
        }
        let dies: Vec<u32> = (0..4).map(|l| die_of(&d, l)).collect();
        assert_eq!(dies, [0, 1, 2, 3]);
        d.check(&f).unwrap();
    }

    #[test]
    fn static_striping_keeps_every_lpn_on_its_die_through_gc() {
        for frontier in ["shared", "separate"] {
            let (mut d, mut f) = multi("static", frontier);
            overwrite(&mut d, &mut f, 3);
            assert!(d.stats().gc_pages_copied > 0);
            // LPN l goes to stream l % 4, whose open block is on die l % 4 unless that
            // die's pool ran dry and it borrowed a block of another die.
            let n = d.geo.logical_pages;
            let home = (0..n).filter(|&l| die_of(&d, l) == l % 4).count() as u32;
            assert!(home * 10 >= n * 9, "{frontier}: {home} of {n} on their die");
        }
    }

    #[test]
    fn multi_die_allocation_survives_heavy_gc_and_recovers_its_open_blocks() {
        for alloc in ["round_robin", "static", "least_busy"] {
            for frontier in ["shared", "separate"] {
                let (mut d, mut f) = multi(alloc, frontier);
                overwrite(&mut d, &mut f, 5);
                let partly: Vec<u32> = d
                    .active
                    .iter()
                    .chain(&d.gc_active)
                    .copied()
                    .filter(|&b| b != NO_BLOCK)
                    .filter(|&b| !f.is_erased(Pbn(b)) && !f.is_full(Pbn(b)))
                    .collect();
                assert!(partly.len() >= 2, "{alloc} {frontier}: {partly:?}");
                let tags: Vec<Option<PageTag>> =
                    d.l2p.iter().map(|&p| f.peek_tag(Ppn(p))).collect();
                let mut g = crate::testutil::recover_fresh(&mut f, multi(alloc, frontier).0);
                let open: Vec<u32> = g.active.iter().chain(&g.gc_active).copied().collect();
                // Every partly written block reopened (recovery's GC may have filled
                // some since).
                for b in &partly {
                    assert!(
                        f.is_full(Pbn(*b)) || open.contains(b),
                        "{alloc} {frontier}: {b}"
                    );
                }
                let now: Vec<Option<PageTag>> = g.l2p.iter().map(|&p| f.peek_tag(Ppn(p))).collect();
                assert_eq!(now, tags, "{alloc} {frontier}");
                overwrite(&mut g, &mut f, 6);
            }
        }
    }

    /// [`multi`] with `gc_scope = "per_die"` and the `policy`'s victims.
    fn per_die(alloc: &str, frontier: &str, policy: &str) -> (DacFtl, Flash) {
        let g = geo4(100.0);
        let o = opts(&[
            ("die_alloc", alloc),
            ("gc_frontier", frontier),
            ("gc_scope", "per_die"),
            ("gc_policy", policy),
        ]);
        (
            DacFtl::new(&g, &o).unwrap().with_gc_seed(11),
            Flash::new(&g),
        )
    }

    /// Valid pages on each of the 4 dies.
    fn valid_per_die(d: &DacFtl, f: &Flash) -> [u32; 4] {
        let mut v = [0; 4];
        for b in 0..d.geo.blocks {
            v[(b % 4) as usize] += f.valid_count(Pbn(b));
        }
        v
    }

    #[test]
    fn gc_per_die_collects_a_die_and_keeps_its_copies_there() {
        for alloc in ["round_robin", "static", "least_busy"] {
            for frontier in ["shared", "separate"] {
                let (mut d, mut f) = per_die(alloc, frontier, "greedy");
                overwrite(&mut d, &mut f, 3);
                let own = d.stats().extra.get("gc_die_victims").unwrap();
                assert!(own > 0.0, "{alloc} {frontier}: no die collected");
                // One more collection, forced, started by a die with free blocks and a
                // block to gain: it takes its own victims, the pool grows, and no
                // valid page leaves the die or arrives on another.
                let die = (0..4)
                    .filter(|&x| !d.die_index.stuck(x))
                    .max_by_key(|&x| (d.free.die_len(x), 4 - x))
                    .unwrap();
                assert!(d.free.die_len(die) > 0, "{alloc} {frontier}");
                let before = valid_per_die(&d, &f);
                let (theta, total, own) = (d.gc_threshold, d.free.len(), d.die_victims);
                d.gc_threshold = total as u32 + 1;
                d.gc_die = Some(die);
                d.collect(&mut f);
                (d.gc_threshold, d.gc_die) = (theta, None);
                assert!(d.free.len() > total, "{alloc} {frontier}");
                assert!(d.die_victims > own, "{alloc} {frontier}");
                assert_eq!(valid_per_die(&d, &f), before, "{alloc} {frontier}");
                d.check(&f).unwrap();
            }
        }
    }

    #[test]
    fn gc_per_die_runs_every_victim_policy_and_recovers() {
        let policies = [
            "greedy",
            "cost_benefit",
            "d_choices",
            "fifo",
            "random",
            "windowed_greedy",
        ];
        assert_eq!(policies.len(), GcPolicy::ALL.len());
        for name in policies {
            let (mut d, mut f) = per_die("round_robin", "shared", name);
            overwrite(&mut d, &mut f, 5);
            assert!(d.stats().gc_invocations > 0, "{name}");
            let tags: Vec<Option<PageTag>> = d.l2p.iter().map(|&p| f.peek_tag(Ppn(p))).collect();
            let mut g =
                crate::testutil::recover_fresh(&mut f, per_die("round_robin", "shared", name).0);
            let now: Vec<Option<PageTag>> = g.l2p.iter().map(|&p| f.peek_tag(Ppn(p))).collect();
            assert_eq!(now, tags, "{name}");
            // It runs on after the recovery, its per-die indexes rebuilt.
            overwrite(&mut g, &mut f, 6);
        }
    }

    #[test]
    fn gc_per_die_is_refused_without_dies() {
        let e = DacFtl::new(&geo4(100.0), &opts(&[("gc_scope", "per_die")]))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("gc_scope") && e.contains("die_alloc"), "{e}");
    }

    #[test]
    fn one_open_block_per_region_and_die_needs_its_reserve() {
        // 64 logical blocks; K regions x 4 dies open blocks + gc_threshold 2 + a GC
        // reserve of (K - 1) x 4 - 1: K = 4 needs 64 + 16 + 2 + 11 = 93 blocks.
        let o = opts(&[("die_alloc", "round_robin"), ("regions", "4")]);
        let e = DacFtl::new(&geo4(43.0), &o).err().unwrap().to_string();
        assert!(
            e.contains("needs at least 93") && e.contains("die_alloc"),
            "{e}"
        );
        assert!(DacFtl::new(&geo4(45.0), &o).is_ok());
        // Auto scales K down: 64 x 1.3 = 84 blocks hold K = 2 (64 + 8 + 2 + 3 = 77),
        // not 3 (64 + 12 + 2 + 7 = 85).
        let d = DacFtl::new(&geo4(30.0), &opts(&[("die_alloc", "static")])).unwrap();
        assert_eq!(d.regions(), 2);
    }
}
