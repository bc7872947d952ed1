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
//! - Where GC copies go: `gc_frontier = "shared"` (default, the papers' model: GC copies
//!   and host writes share the open block) or `"separate"` (issue 23 item 2, not in the
//!   papers: GC copies get an open block of their own, one per die under a multi-die
//!   `die_alloc`, so data that survived a collection, cold on average, is not mixed
//!   with fresh host writes; Rosenblum and Ousterhout's LFS cleaner sorts survivors by
//!   age the same way). Open choices, made here: the split is by write origin only (not
//!   by a per-page update count); the GC frontier is opened at construction (one more
//!   block, so `separate` needs one more block per die); a full GC block is sealed like
//!   any other and may itself become a victim, whose survivors go to the GC frontier
//!   again; filling the GC frontier during a collection takes a free block without
//!   nesting a collection. Reported (`ftl.extra`, only under `separate`, so reports of
//!   the default keep their keys): per stream (`host`, `gc`) the pages programmed
//!   (`stream_*_programs`), the blocks opened (`stream_*_blocks`), the victims that
//!   stream wrote (`stream_*_victims`) and the valid pages copied out of them
//!   (`stream_*_victim_valid`); blocks found sealed by a recovery belong to neither.
//! - Free blocks are reused first-in first-out (erased blocks go to the back), which
//!   spreads wear without a wear-leveling policy (`wear_leveling = "off"`, default).
//! - Wear levelling (issue 23 item 3, not in the papers; [`ftlab_core::wear`]):
//!   `wear_leveling = "dynamic"` hands out the least-erased free block (ties: the
//!   lowest number; per die under a multi-die `die_alloc`, whose pools are per die);
//!   `"static"` does the same and, after every collection, when the most-erased block
//!   has more than `wl_threshold` (default 16) erases more than the least-erased sealed
//!   block, moves that block's valid pages (copies, `Cause::Gc`) to a levelling
//!   frontier opened on the most-worn free block and erases it, so its little-used
//!   erase budget goes back into circulation while the cold data rests on worn flash;
//!   one block per check. Open choices, made here: the spread is taken against sealed
//!   blocks only (free and open blocks are handed out least-worn first anyway); the
//!   moved data goes to an open block of its own, one per die (the cold block's die,
//!   so striped pages stay on theirs when it has a free block), opened on demand on the most-worn free block of
//!   that die (a second heap of the free blocks, most-erased first; ties: the lowest
//!   number; with none free there, of the die with the most free blocks), filled by
//!   successive moves and sealed when full, so cold data shares blocks with cold data
//!   only; this needs one more block per die (the geometry rule counts it). The first
//!   version sent the data where GC copies go, the host's open block, which is the
//!   least-worn free block: on a 41-block device the cold data circulated among the
//!   least-worn blocks and the spread widened (docs/results.md has both measurements);
//!   a levelling frontier left partly written at a power loss is sealed or reopened
//!   like any partly written block, and the next move opens a new one; blocks written
//!   by levelling moves belong to neither stream under `gc_frontier = "separate"`;
//!   the moves are reported as `ftl.extra.wl_migrations` and `wl_pages_copied`, not as
//!   GC rounds or `ftl.gc.pages_copied` (their programs and erases do count under
//!   `gc` in `flash.by_cause`, so WAF includes them). Costs: O(log blocks) per block
//!   allocated, sealed or collected (an indexed heap), nothing per page. After a power
//!   loss the erase counts are read from the flash (a controller keeps them with the
//!   blocks).
//! - GC is checked right after a new active block is opened, the moment the free pool
//!   shrinks.
//! - Power-loss recovery (not in the papers): the scheme keeps no checkpoint, so it
//!   scans the spare area of every programmed page and maps each LPN to its newest
//!   version (a GC copy and its source hold the same version; the first found wins).
//!   Erased blocks become free (or stay retired, see `pe_limit`), partly written blocks
//!   reopen as open blocks (one per die, and under `gc_frontier = "separate"` as many
//!   again for GC copies), the rest are sealed GC candidates. Trims are not persisted, so
//!   a trimmed page may come back; not only as its last version: GC may erase the block
//!   of the trimmed (invalid) last version while an older stale copy survives in another
//!   block, and the scan then maps that copy (`TrimRecovery::AnyEarlier`, which the
//!   oracle checks: zeroes or a version written before the trim, never a newer one).
//!   Torn operations (issue 25 item 3): the scan skips torn pages (they read as
//!   uncorrectable); a block left by a torn erase is full of them, so it is sealed with
//!   no valid page and the next collection erases it; a torn copy leaves its source
//!   valid, so a collection cut half way only leaves duplicates of the same version. A
//!   host write takes its page (which may collect garbage) before it drops the page's
//!   old copy, so no collection can erase the last durable copy before the new one is
//!   on flash (the first order lost both at a cut in between).
//! - Die-aware allocation (issue 22; not in the papers, which model one chip):
//!   `die_alloc = "single"` (default, the papers' one write frontier), `"round_robin"`
//!   (one open block per die, consecutive page writes dealt to the dies in turn: a
//!   multi-page write or a run of writes spreads over every die) or `"static"` (one open
//!   block per die, LPN `l` always written on die `l % dies`: striping by LPN, GC copies
//!   included) or `"least_busy"` (one open block per die, each page, host or GC copy, to
//!   the open block whose die the parallel timing model has free first, ties to the
//!   lowest; the FTL reads when each die is free off the flash's die clock,
//!   `Flash::clock`, and never the time itself; under serial timing there is no die
//!   clock and it deals pages in turn). A block's die is `pbn % dies`, as parallel timing places it.
//!   On a device with several planes per die the streams are the planes, not the
//!   dies: one open block per plane (plane `pbn % planes` over the device, so
//!   consecutive streams are on consecutive dies, then on the next plane of each), and
//!   "die" below means plane; parallel timing runs programs on a die's planes
//!   together (multi-plane programs). Free blocks
//!   are kept per die (first-in first-out in each); when a die has none left, its open
//!   block comes from the die with the most free blocks (the lowest such die), so
//!   allocation never fails while any block is free. GC is global by default
//!   (`gc_scope = "global"`): the victim policy picks among every sealed block, and
//!   its copies go through the same allocation.
//!   Under serial timing (one die) all three are the same. With one open block per die,
//!   the copies of one victim can fill every open block once, so GC keeps `dies` more
//!   blocks free (it runs while fewer than gc_threshold + dies are free) and the device
//!   needs at least logical blocks + gc_threshold + 2 x dies blocks.
//! - GC per die (issue 22 item 3; not in the papers; MQSim collects per plane the same
//!   way): `gc_scope = "per_die"`, with a multi-die `die_alloc`. Each die (plane)
//!   collects its own blocks: when a die takes a free block for host writes and is
//!   left with fewer than gc_threshold free blocks, its own victim policy picks among
//!   the sealed blocks on that die, and the copies go to that die's open block, so a
//!   collection keeps the data on its die and leaves the other dies' queues to the
//!   host. Open choices, made here: the trigger is the die's own pool (a die that
//!   borrowed blocks from another, when its pool ran dry, collects its own blocks
//!   still); a die whose sealed blocks are all fully valid stops collecting and the
//!   global rule below catches up; the global rule stays as a floor (GC while fewer
//!   than gc_threshold + dies blocks are free in all, the victim chosen among every
//!   sealed block), with its copies also kept on the victim's die; each die's
//!   policy keeps its own state (its own seal order for fifo and cost_benefit, its own
//!   draws for random and d_choices, seeded from the run's seed and the die). A
//!   victim's copies then fill at most its die's open block once, so the device needs
//!   at least logical blocks + dies x (gc_threshold + 2) blocks (the die's reserve, a
//!   block for the copies, its open block). Costs: a second victim index per die
//!   (its blocks only), kept beside the global one; nothing under `global`.
//! - Endurance (issue 23 item 4, in part; not in the papers): `pe_limit` (default 0:
//!   blocks never retire). A block erased `pe_limit` times retires: it is not returned
//!   to the free pool and never written again (`ftl.extra.retired_blocks`). The scheme
//!   works on with fewer blocks while at least its geometry rule's minimum (logical
//!   blocks + GC reserve + open blocks) remains; past that the device is worn out: the
//!   scheme raises [`WornOut`](ftlab_core::ftl::WornOut) mid-request and the run ends with `Failure::WornOut`
//!   (not a bug; the report is written). Retirement is derived from the erase counts
//!   on flash, so recovery keeps retired blocks retired. `--until-worn-out` (config
//!   `until_worn_out`) replays the workload until then, with the NAND preset's rated
//!   cycles (`nand::NandPreset::pe_cycles`) as `pe_limit` unless it is set, and reports
//!   TBW and simulated days (`endurance`). The mechanism is shared by every scheme
//!   ([`ftlab_core::wear::Retirement`]); a collection that finds no free block left
//!   with blocks retired (the retirements ate its reserve) also ends the device. Not
//!   built: a limit per block (every block has the same).
//! - `mapping_bytes` counts the L2P table (4 bytes per logical page); the GC index is
//!   controller bookkeeping that every scheme with GC needs and is not counted.

use crate::dievictims::DieVictims;
use crate::hints::{self, Hints};
use crate::scan::{self, UNMAPPED};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{Ftl, FtlStats, RecoverError, TrimRecovery};
use ftlab_core::geometry::Geometry;
use ftlab_core::options::{geometry_error, JsonSchema, SchemeError};
use ftlab_core::oracle::{Oracle, Violation};
use ftlab_core::victim::{self, GcFrontier, GcPolicy, VictimPolicy, Victims};
use ftlab_core::wear::{self, FreeBlocks, Retirement, WearHeap, WearLeveling};
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
    /// Where GC copies are written: shared (the host's open block, the papers') or
    /// separate (an open block of their own, per die: hot/cold separation by origin).
    pub gc_frontier: GcFrontier,
    /// Where GC looks for victims: global (every sealed block, copies dealt by
    /// die_alloc; the default) or per_die (each die collects its own blocks when its
    /// own free pool runs low and copies stay on the die; needs a multi-die die_alloc).
    pub gc_scope: GcScope,
    /// Wear levelling (ftlab_core::wear): off (free blocks first-in first-out), dynamic
    /// (a new block is the least-erased free one) or static (dynamic, and when max - min
    /// erase count exceeds wl_threshold the data of the least-erased sealed block moves).
    pub wear_leveling: WearLeveling,
    /// Erase-count spread (max - min) above which wear_leveling = static moves data.
    #[schemars(range(min = 1))]
    pub wl_threshold: u32,
    /// Erases after which a block retires (never written again); 0: blocks never
    /// retire. The NAND presets' rated cycles are in ftlab_core::nand (pe_cycles).
    pub pe_limit: u32,
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
    /// One open block per die; each page goes to the open block whose die is free
    /// first under parallel timing (ties to the lowest die); without a die clock
    /// (serial timing), as `round_robin`.
    LeastBusy,
}

/// Where the `page` FTL's GC looks for victims (`gc_scope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GcScope {
    /// Every sealed block; copies go through the allocation (the papers' one chip).
    #[default]
    Global,
    /// Each die collects its own blocks and keeps the copies (module docs).
    PerDie,
}

impl Default for PageOptions {
    fn default() -> Self {
        PageOptions {
            gc_threshold: 3,
            gc_policy: GcPolicy::Greedy,
            gc_d: victim::DEFAULT_D,
            gc_window: victim::DEFAULT_WINDOW,
            die_alloc: DieAlloc::Single,
            gc_frontier: GcFrontier::Shared,
            gc_scope: GcScope::Global,
            wear_leveling: WearLeveling::Off,
            wl_threshold: wear::DEFAULT_WL_THRESHOLD,
            pe_limit: 0,
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

/// Stream of a block's writes ([`PageFtl`]'s `origin`): host writes.
const HOST: u8 = 0;
/// GC copies (their own frontier).
const GC: u8 = 1;
/// Sealed when a recovery found it (the writer is not on flash), or written by a static
/// levelling move: neither stream's.
const RECOVERED: u8 = 2;

/// Per-stream counters of `gc_frontier = "separate"`, indexed by [`HOST`] / [`GC`].
#[derive(Clone, Copy, Debug, Default)]
struct StreamCounts {
    programs: [u64; 2],
    blocks: [u64; 2],
    victims: [u64; 2],
    victim_valid: [u64; 2],
}

/// Static wear levelling's state (`wear_leveling = "static"`).
struct StaticWl {
    /// The sealed blocks by erase count.
    sealed: WearHeap,
    /// The most erases of any block.
    max_erase: u32,
    threshold: u32,
    /// The open block of each die's levelling moves (module docs), opened on demand.
    open: Vec<Option<Pbn>>,
    /// Blocks whose data moved, and the pages moved (reported in `ftl.extra`).
    migrations: u64,
    pages: u64,
}

/// The page-mapped FTL.
pub struct PageFtl {
    geo: Geometry,
    l2p: Vec<u32>,
    /// Free blocks per die (one pool under `single`), first-in first-out in each, or
    /// least-erased first under wear levelling.
    free: Vec<FreeBlocks>,
    /// Free blocks in all pools.
    free_count: u32,
    /// Open blocks: one per die (one under `single`).
    active: Vec<Pbn>,
    /// Open blocks of the GC copies under `gc_frontier = "separate"`, one per die;
    /// empty under `shared` (copies go to `active`).
    gc_active: Vec<Pbn>,
    /// Under `separate`: which stream wrote each block ([`HOST`], [`GC`], or
    /// [`RECOVERED`]); empty under `shared`.
    origin: Vec<u8>,
    /// Per-stream counters (reported under `separate` only).
    streams: StreamCounts,
    alloc: DieAlloc,
    /// The die of the next round-robin write.
    turn: usize,
    index: Victims,
    /// Under `gc_scope = "per_die"`: each die's sealed blocks (block `b` as local
    /// block `b / dies` of die `b % dies`), beside `index`, which keeps every sealed
    /// block; empty under `global`.
    die_index: DieVictims,
    /// GC on a die while fewer than this many of its blocks are free (`per_die`).
    die_threshold: u32,
    /// Static wear levelling, if on.
    wl: Option<StaticWl>,
    /// Blocks retired at `pe_limit` (erased, never used again), against the fewest
    /// blocks the scheme runs on (its geometry rule): fewer usable blocks left is a
    /// worn-out device. One retirement across the per-die pools.
    retirement: Retirement,
    gc_threshold: u32,
    stats: FtlStats,
    /// The last prefetch hints ([`Ftl::prefetch`]).
    hints: Hints,
}

impl PageFtl {
    /// Builds the FTL for `geo`.
    pub fn new(geo: &Geometry, opts: &PageOptions) -> Result<PageFtl, SchemeError> {
        let gc_threshold = opts.gc_threshold.max(1);
        let streams = match opts.die_alloc {
            DieAlloc::Single => 1,
            DieAlloc::RoundRobin | DieAlloc::Static | DieAlloc::LeastBusy => {
                geo.planes().min(geo.blocks)
            }
        };
        // With one open block per die, one victim's copies can fill every open block
        // once: GC keeps that many more blocks free (none more under `single`).
        let gc_threshold = if streams == 1 {
            gc_threshold
        } else {
            gc_threshold + streams
        };
        let separate = opts.gc_frontier == GcFrontier::Separate;
        let open = if separate { 2 * streams } else { streams };
        // Static levelling's own open block per die, opened on demand.
        let statik = opts.wear_leveling == WearLeveling::Static;
        let wl_open = if statik { streams } else { 0 };
        let per_die = opts.gc_scope == GcScope::PerDie;
        if per_die && opts.die_alloc == DieAlloc::Single {
            return Err(SchemeError::BadValue {
                scheme: ID.into(),
                key: "gc_scope".into(),
                value: "per_die".into(),
                why: "GC per die needs one open block per die: set die_alloc to \
                      round_robin, static or least_busy"
                    .into(),
            });
        }
        // Per die: its reserve, a block for a victim's copies (module docs).
        let reserve = if per_die {
            streams * (opts.gc_threshold.max(1) + 1)
        } else {
            gc_threshold
        };
        let needed = geo.logical_blocks() + reserve + open + wl_open;
        if geo.blocks < needed {
            let mut what = if streams == 1 {
                "logical blocks + gc_threshold + 1".to_string()
            } else if per_die {
                format!(
                    "logical blocks + {streams} x (gc_threshold + 1) (each die's GC reserve \
                     under gc_scope = \"per_die\") + {streams} open blocks, one per die or plane"
                )
            } else {
                format!(
                    "logical blocks + gc_threshold + {streams} (GC reserve, one block per \
                     die or plane) + {streams} open blocks, one per die or plane"
                )
            };
            if separate {
                what.push_str(&format!(
                    " + {streams} open GC block(s) of gc_frontier = \"separate\""
                ));
            }
            if statik {
                what.push_str(&format!(
                    " + {streams} open levelling block(s) of wear_leveling = \"static\""
                ));
            }
            return Err(geometry_error(
                ID,
                format!(
                    "needs at least {needed} physical blocks ({what}) \
                 but the geometry has {}; raise --op or lower gc_threshold",
                    geo.blocks
                ),
            ));
        }
        let dynamic = opts.wear_leveling != WearLeveling::Off;
        let mut free: Vec<FreeBlocks> = (0..streams)
            .map(|_| {
                let f = FreeBlocks::new(geo.blocks, streams, dynamic);
                if statik {
                    f.with_most_worn()
                } else {
                    f
                }
            })
            .collect();
        // A new device: no block erased yet.
        for b in 0..geo.blocks {
            free[(b % streams) as usize].push(Pbn(b), 0);
        }
        let active: Vec<Pbn> = free
            .iter_mut()
            .map(|f| f.pop().expect("every die has a block"))
            .collect();
        let mut origin = Vec::new();
        let mut gc_active = Vec::new();
        if separate {
            origin = vec![RECOVERED; geo.blocks as usize];
            for &b in &active {
                origin[b.idx()] = HOST;
            }
            for f in free.iter_mut() {
                let b = f.pop().expect("every die has a second block");
                origin[b.idx()] = GC;
                gc_active.push(b);
            }
        }
        let counts = StreamCounts {
            blocks: [active.len() as u64, gc_active.len() as u64],
            ..StreamCounts::default()
        };
        Ok(PageFtl {
            geo: geo.clone(),
            l2p: vec![UNMAPPED; geo.logical_pages as usize],
            free,
            free_count: geo.blocks - open,
            active,
            gc_active,
            origin,
            streams: counts,
            alloc: opts.die_alloc,
            turn: 0,
            index: Victims::new(geo.blocks, geo.pages_per_block, opts.victim_policy()),
            die_index: DieVictims::new(
                geo.blocks,
                geo.pages_per_block,
                opts.victim_policy(),
                if per_die { streams } else { 0 },
            ),
            die_threshold: opts.gc_threshold.max(1),
            wl: (opts.wear_leveling == WearLeveling::Static).then(|| StaticWl {
                sealed: WearHeap::new(geo.blocks, 1),
                max_erase: 0,
                threshold: opts.wl_threshold.max(1),
                open: vec![None; streams as usize],
                migrations: 0,
                pages: 0,
            }),
            retirement: Retirement::new(ID, geo.blocks, opts.pe_limit, needed),
            gc_threshold,
            stats: FtlStats::default(),
            hints: Hints::new(),
        })
    }

    /// Seeds the generator of the random victim policies (from the run's seed).
    pub fn with_gc_seed(mut self, seed: u64) -> Self {
        self.index.seed(seed);
        self.die_index.seed(seed);
        self
    }

    /// Rebuilds the per-die victim indexes from the global one (after a recovery
    /// sorted the blocks), in block order.
    fn rebuild_die_index(&mut self, flash: &Flash) {
        self.die_index.clear();
        for b in (0..self.geo.blocks).map(Pbn) {
            if self.index.contains(b) {
                self.die_index.insert(b, flash.valid_count(b));
            }
        }
    }

    /// The stream (die) the next write of `lpn` goes to.
    #[inline]
    fn stream(&mut self, flash: &Flash, lpn: Lpn) -> usize {
        match self.alloc {
            DieAlloc::Single => 0,
            DieAlloc::RoundRobin => self.next_turn(),
            DieAlloc::Static => lpn.idx() % self.active.len(),
            DieAlloc::LeastBusy => match flash.clock() {
                // The open block whose die is free first (an open block may sit on
                // another die than its stream's, borrowed when the stream's pool ran
                // dry); ties to the lowest stream.
                Some(clock) => {
                    let mut best = 0;
                    let mut at = clock.free_at(self.active[0]);
                    for (s, &b) in self.active.iter().enumerate().skip(1) {
                        let t = clock.free_at(b);
                        if t < at {
                            (best, at) = (s, t);
                        }
                    }
                    best
                }
                None => self.next_turn(),
            },
        }
    }

    /// Round robin over the streams.
    #[inline]
    fn next_turn(&mut self) -> usize {
        let s = self.turn;
        self.turn = if s + 1 == self.active.len() { 0 } else { s + 1 };
        s
    }

    /// A free block for die `s`: its own pool's oldest, else the oldest of the die
    /// with the most free blocks.
    fn take_free(&mut self, s: usize) -> Pbn {
        let from = if self.free[s].is_empty() {
            let most = self.free.iter().map(FreeBlocks::len).max().unwrap_or(0);
            self.free
                .iter()
                .position(|f| f.len() == most)
                .expect("pools exist")
        } else {
            s
        };
        if self.free_count == 0 {
            // With blocks retired, a reserve the retirements ate is the device's end.
            self.retirement.exhausted();
            panic!("page FTL: free pool empty (GC reserve broken)");
        }
        self.free_count -= 1;
        self.free[from]
            .pop()
            .expect("page FTL: free pool empty (GC reserve broken)")
    }

    /// Seals a full open block: a GC candidate (and, under static wear levelling, a
    /// block whose data may move).
    #[inline]
    fn seal(&mut self, flash: &Flash, b: Pbn) {
        self.index.insert(b, flash.valid_count(b));
        if !self.die_index.is_empty() {
            self.die_index.insert(b, flash.valid_count(b));
        }
        if let Some(wl) = &mut self.wl {
            wl.sealed.push(b, flash.erase_count(b));
        }
    }

    /// The next free page of stream `s`'s write frontier, opening a new block (and,
    /// for host writes, collecting garbage) when its current one is full. GC copies
    /// (`in_gc`) go to the GC frontier under `gc_frontier = "separate"`.
    #[inline(always)]
    fn frontier(&mut self, flash: &mut Flash, s: usize, in_gc: bool) -> Ppn {
        // The common case inline: the open block has room.
        if !in_gc || self.gc_active.is_empty() {
            let open = self.active[s];
            let wp = flash.write_ptr(open);
            if wp < self.geo.pages_per_block {
                return self.geo.ppn(open, wp);
            }
        }
        self.frontier_slow(flash, s, in_gc)
    }

    /// [`PageFtl::frontier`] when the open block is full, or for a GC copy under a
    /// separate GC frontier.
    #[inline(never)]
    fn frontier_slow(&mut self, flash: &mut Flash, s: usize, in_gc: bool) -> Ppn {
        if in_gc && !self.gc_active.is_empty() {
            return self.gc_frontier(flash, s);
        }
        while flash.is_full(self.active[s]) {
            self.seal(flash, self.active[s]);
            self.active[s] = self.take_free(s);
            if !self.origin.is_empty() {
                self.origin[self.active[s].idx()] = HOST;
                self.streams.blocks[HOST as usize] += 1;
            }
            if !in_gc {
                if !self.die_index.is_empty() {
                    self.collect_die(flash, s);
                }
                self.collect(flash);
            }
        }
        self.geo
            .ppn(self.active[s], flash.write_ptr(self.active[s]))
    }

    /// The next free page of die `s`'s GC frontier (`gc_frontier = "separate"`),
    /// opening a new block when it is full (inside a collection: no nested one).
    fn gc_frontier(&mut self, flash: &mut Flash, s: usize) -> Ppn {
        let open = self.gc_active[s];
        if flash.is_full(open) {
            self.seal(flash, open);
            let b = self.take_free(s);
            self.gc_active[s] = b;
            self.origin[b.idx()] = GC;
            self.streams.blocks[GC as usize] += 1;
        }
        self.streams.programs[GC as usize] += 1;
        let open = self.gc_active[s];
        self.geo.ppn(open, flash.write_ptr(open))
    }

    /// GC while free blocks are fewer than the threshold; then, under static wear
    /// levelling, at most one levelling move.
    fn collect(&mut self, flash: &mut Flash) {
        self.gc_rounds(flash);
        // A levelling move frees as many blocks as it takes, unless its block
        // retires: then GC once more (no second move).
        if self.wl.is_some() && self.level(flash) && self.free_count < self.gc_threshold {
            self.gc_rounds(flash);
        }
    }

    /// GC per die (`gc_scope = "per_die"`): die `d` collects its own sealed blocks
    /// while fewer than `die_threshold` of its blocks are free, the copies kept on the
    /// die; it stops when its sealed blocks are all fully valid (the global floor in
    /// [`PageFtl::collect`] catches up).
    fn collect_die(&mut self, flash: &mut Flash, d: usize) {
        while self.free[d].len() < self.die_threshold as usize && !self.die_index.stuck(d) {
            let (victim, valid) = self
                .die_index
                .choose(d, false)
                .expect("not stuck: a block is sealed");
            self.die_index.remove(victim);
            self.index.remove(victim);
            // A policy other than greedy may pick a fully valid block: the round frees
            // as much as it takes, as under the global scope.
            self.collect_victim(flash, victim, valid);
        }
    }

    /// One GC round on `victim` (out of the indexes), which had `valid` valid pages:
    /// counted by the stream it was written from, reclaimed.
    fn collect_victim(&mut self, flash: &mut Flash, victim: Pbn, valid: u32) {
        if let Some(&o) = self.origin.get(victim.idx()) {
            if o != RECOVERED {
                self.streams.victims[o as usize] += 1;
                self.streams.victim_valid[o as usize] += valid as u64;
            }
        }
        self.reclaim(flash, victim);
        self.stats.gc_invocations += 1;
    }

    /// GC rounds while free blocks are fewer than the threshold.
    fn gc_rounds(&mut self, flash: &mut Flash) {
        while self.free_count < self.gc_threshold {
            let (victim, valid) = self
                .index
                .pop()
                .expect("page FTL: no sealed block to collect");
            if !self.die_index.is_empty() {
                self.die_index.remove(victim);
            }
            assert!(
                valid < self.geo.pages_per_block || !self.index.stuck(),
                "page FTL: GC victim {victim:?} and every sealed block are fully valid; \
                 no progress possible"
            );
            self.collect_victim(flash, victim, valid);
        }
    }

    /// Copies the valid pages of a block no longer sealed, erases it and frees it.
    fn reclaim(&mut self, flash: &mut Flash, victim: Pbn) {
        if let Some(wl) = &mut self.wl {
            wl.sealed.remove(victim);
        }
        // One loop per allocation, so `single` (the papers', the hot case) pays
        // nothing for the others.
        if !self.die_index.is_empty() {
            let die = self.die_index.on_die(victim).0;
            self.copy_valid(flash, victim, move |_, _, _| die);
        } else {
            self.copy_moves(flash, victim);
        }
        self.erase_and_free(flash, victim);
    }

    /// The copies of `victim` under the global scope: where the allocation deals them.
    fn copy_moves(&mut self, flash: &mut Flash, victim: Pbn) {
        match self.alloc {
            DieAlloc::Single if self.gc_active.is_empty() => self.move_valid(flash, victim),
            DieAlloc::Single => self.copy_valid(flash, victim, |_, _, _| 0),
            DieAlloc::RoundRobin | DieAlloc::Static | DieAlloc::LeastBusy => {
                self.copy_valid(flash, victim, |f: &mut PageFtl, flash: &Flash, src| {
                    let lpn = f.lpn_of(flash, src);
                    f.stream(flash, lpn)
                })
            }
        }
    }

    /// Erases a collected block and frees it (or retires it at the P/E limit).
    fn erase_and_free(&mut self, flash: &mut Flash, victim: Pbn) {
        flash.erase(victim, Cause::Gc);
        let erases = flash.erase_count(victim);
        if let Some(wl) = &mut self.wl {
            wl.max_erase = wl.max_erase.max(erases);
        }
        // At the P/E limit the block retires (raises WornOut if too few are left).
        if self.retirement.erased(victim, erases) {
            return;
        }
        let pools = self.free.len();
        self.free[victim.idx() % pools].push(victim, erases);
        self.free_count += 1;
    }

    /// Static wear levelling, checked after each collection: when the most-erased
    /// block has been erased more than `wl_threshold` times more than the least-erased
    /// sealed block, that block's data moves (GC copies, `Cause::Gc`, to the GC's
    /// frontier) and the block is erased and freed; the least-worn-first pool hands
    /// it out next. One block per check; the free pool does not shrink (a block's
    /// copies open at most one block, its erase frees one) unless the block retires.
    /// Whether a block moved.
    fn level(&mut self, flash: &mut Flash) -> bool {
        let Some(wl) = &self.wl else {
            return false;
        };
        let Some((cold, erases)) = wl.sealed.peek() else {
            return false;
        };
        if wl.max_erase - erases <= wl.threshold {
            return false;
        }
        self.index.remove(cold);
        if !self.die_index.is_empty() {
            self.die_index.remove(cold);
        }
        let valid = flash.valid_count(cold) as u64;
        // The cold data parks on worn flash: the levelling frontier of the cold
        // block's die, opened on that die's most-worn free block (module docs).
        let die = cold.idx() % self.free.len();
        if let Some(wl) = &mut self.wl {
            wl.sealed.remove(cold);
        }
        for off in 0..flash.write_ptr(cold) {
            let src = self.geo.ppn(cold, off);
            if !flash.is_valid(src) {
                continue;
            }
            let to = self.wl_frontier(flash, die);
            let tag = flash.copy(src, to, Cause::Gc);
            flash.invalidate(src);
            debug_assert_eq!(self.l2p[tag.lpn.idx()], src.0);
            self.l2p[tag.lpn.idx()] = to.0;
        }
        flash.erase(cold, Cause::Gc);
        let erases = flash.erase_count(cold);
        if let Some(wl) = &mut self.wl {
            wl.max_erase = wl.max_erase.max(erases);
        }
        if !self.retirement.erased(cold, erases) {
            self.free[die].push(cold, erases);
            self.free_count += 1;
        }
        let wl = self.wl.as_mut().expect("checked above");
        wl.migrations += 1;
        wl.pages += valid;
        true
    }

    /// The next free page of die `die`'s levelling frontier (static wear levelling):
    /// a full one is sealed and the next is the most-worn free block of that die, else
    /// of the die with the most free blocks.
    fn wl_frontier(&mut self, flash: &Flash, die: usize) -> Ppn {
        let open = self.wl.as_ref().and_then(|wl| wl.open[die]);
        let b = match open {
            Some(b) if !flash.is_full(b) => b,
            _ => {
                if let Some(b) = open {
                    self.seal(flash, b);
                }
                let from = if self.free[die].is_empty() {
                    let most = self.free.iter().map(FreeBlocks::len).max().unwrap_or(0);
                    self.free
                        .iter()
                        .position(|f| f.len() == most)
                        .unwrap_or(die)
                } else {
                    die
                };
                let Some((b, _)) = self.free[from].pop_most_worn() else {
                    self.retirement.exhausted();
                    panic!("page FTL: no free block for a levelling move (reserve broken)");
                };
                self.free_count -= 1;
                if let Some(o) = self.origin.get_mut(b.idx()) {
                    *o = RECOVERED;
                }
                if let Some(wl) = &mut self.wl {
                    wl.open[die] = Some(b);
                }
                b
            }
        };
        self.geo.ppn(b, flash.write_ptr(b))
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

    /// [`PageFtl::copy_valid`] for the papers' one write frontier, a destination block
    /// at a time ([`Flash::move_valid`]): the same copies in the same order.
    fn move_valid(&mut self, flash: &mut Flash, victim: Pbn) {
        let mut off = 0;
        // Open a destination only for a valid page, as the page-by-page loop does.
        while let Some(from) = flash.next_valid(victim, off) {
            off = from;
            let next = self.frontier(flash, 0, true);
            let to = self.geo.block_of(next);
            let (l2p, mut n) = (&mut self.l2p, 0);
            off = flash.move_valid(victim, off, to, Cause::Gc, |tag, _, dst| {
                l2p[tag.lpn.idx()] = dst.0;
                n += 1;
            });
            self.stats.gc_pages_copied += n;
        }
    }

    /// The LPN a valid page holds (only static allocation needs it before the copy).
    #[inline]
    fn lpn_of(&self, flash: &Flash, src: Ppn) -> Lpn {
        match self.alloc {
            DieAlloc::Static => flash.peek_tag(src).expect("a valid page is programmed").lpn,
            DieAlloc::Single | DieAlloc::RoundRobin | DieAlloc::LeastBusy => Lpn(0),
        }
    }

    /// Every free block, pool by pool (for the checks).
    fn free_blocks(&self) -> VecDeque<Pbn> {
        self.free.iter().flat_map(FreeBlocks::iter).collect()
    }

    /// [`Ftl::write`] of a run of consecutive LPNs under `single`, an open block's room
    /// at a time ([`Flash::program_run`]): the same operations, in the same order, as
    /// page by page (the old copies' invalidations are bookkeeping, not operations,
    /// and the LPNs are distinct, so dropping a run's old copies before its programs
    /// changes nothing), with one call into the flash per block instead of per page.
    fn write_run(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        let ppb = self.geo.pages_per_block;
        let mut rest = pages;
        while !rest.is_empty() {
            // Opening a block may collect garbage, before the run's old copies drop.
            let first = self.frontier(flash, 0, false);
            let room = (ppb - self.geo.offset_of(first)) as usize;
            let (run, tail) = rest.split_at(room.min(rest.len()));
            // The run's LPNs are consecutive: their map entries are one slice.
            let lpns = run[0].lpn.idx()..run[0].lpn.idx() + run.len();
            if self.l2p[lpns.clone()].iter().any(|&p| p != UNMAPPED) {
                for tag in run {
                    self.unmap(flash, tag.lpn);
                }
            }
            // (A page never written has no old copy, as in a fill: nothing to drop.)
            for (i, slot) in self.l2p[lpns].iter_mut().enumerate() {
                *slot = first.0 + i as u32;
            }
            flash.program_run(first, run, Cause::Host);
            rest = tail;
        }
        self.streams.programs[HOST as usize] += pages.len() as u64;
    }

    #[inline]
    fn unmap(&mut self, flash: &mut Flash, lpn: Lpn) {
        let old = self.l2p[lpn.idx()];
        if old != UNMAPPED {
            let old = Ppn(old);
            flash.invalidate(old);
            let b = self.geo.block_of(old);
            self.index.decrement(b);
            if !self.die_index.is_empty() {
                self.die_index.decrement(b);
            }
            self.l2p[lpn.idx()] = UNMAPPED;
        }
    }
}

/// Whether the pages are of consecutive LPNs, ascending (a request's run).
#[inline]
fn consecutive(pages: &[PageWrite]) -> bool {
    pages
        .windows(2)
        .all(|w| w[1].lpn.0 == w[0].lpn.0.wrapping_add(1))
}

impl Ftl for PageFtl {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        if self.alloc == DieAlloc::Single && pages.len() > 1 && consecutive(pages) {
            return self.write_run(flash, pages);
        }
        for &tag in pages {
            let s = self.stream(flash, tag.lpn);
            // The page to program first (it may collect garbage), then the old copy is
            // dropped: GC must not erase the last durable copy of a page before its new
            // version is on flash (a power loss in between would lose both; issue 25,
            // item 3). GC may move the old copy meanwhile: `unmap` drops wherever it is.
            let ppn = self.frontier(flash, s, false);
            self.unmap(flash, tag.lpn);
            flash.program(ppn, tag, Cause::Host);
            self.l2p[tag.lpn.idx()] = ppn.0;
        }
        self.streams.programs[HOST as usize] += pages.len() as u64;
    }

    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        let ppn = self.l2p[lpn.idx()];
        (ppn != UNMAPPED).then(|| flash.read(Ppn(ppn), Cause::Host))
    }

    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.unmap(flash, lpn);
    }

    /// The chain of the crate's `hints` module: the map entry of `lpn` now, the old copy of the
    /// LPN hinted a step ago, the victim-set words of the one two steps ago.
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
        // Partly written blocks reopen, one per open slot: the host's open blocks (one
        // per die), then under `separate` the GC's (whether a page was a host write or
        // a GC copy is not on flash, and either frontier may continue any block); a
        // block goes to a slot of its die first, else to any free slot. Erased blocks
        // go back to their die's pool.
        let streams = self.active.len();
        let slots = streams + self.gc_active.len();
        let mut open: Vec<Option<Pbn>> = vec![None; slots];
        let mut all_free = VecDeque::new();
        scan::sort_blocks(flash, &mut all_free, &mut self.index, |b| {
            let own = b.idx() % streams;
            let slot = (own..slots)
                .step_by(streams)
                .find(|&i| open[i].is_none())
                .or_else(|| open.iter().position(Option::is_none));
            if let Some(s) = slot {
                open[s] = Some(b);
            }
            Ok(slot.is_some())
        })?;
        self.free.iter_mut().for_each(FreeBlocks::clear);
        // Erased blocks at the P/E limit stay retired (the erase counts are on flash).
        self.retirement.clear();
        let (retired, all_free): (Vec<Pbn>, Vec<Pbn>) = all_free
            .into_iter()
            .partition(|&b| self.retirement.reached(flash.erase_count(b)));
        for b in retired {
            self.retirement.erased(b, flash.erase_count(b));
        }
        self.free_count = all_free.len() as u32;
        for b in all_free {
            self.free[b.idx() % streams].push(b, flash.erase_count(b));
        }
        for (i, o) in open.into_iter().enumerate() {
            let s = i % streams;
            let b = match o {
                Some(b) => b,
                None if self.free_count > 0 => self.take_free(s),
                None => return Err(RecoverError::Failed("no free or open block left".into())),
            };
            if i < streams {
                self.active[s] = b;
            } else {
                self.gc_active[s] = b;
            }
        }
        if let Some(wl) = &mut self.wl {
            // Erase counts are on flash (the controller keeps them with the blocks).
            wl.sealed.clear();
            // A levelling frontier left partly written was sealed or reopened above.
            wl.open.fill(None);
            wl.max_erase = flash.erase_counts().iter().copied().max().unwrap_or(0);
            for b in (0..self.geo.blocks).map(Pbn) {
                if self.index.contains(b) {
                    wl.sealed.push(b, flash.erase_count(b));
                }
            }
        }
        if !self.origin.is_empty() {
            self.origin.fill(RECOVERED);
            for &b in &self.active {
                self.origin[b.idx()] = HOST;
            }
            for &b in &self.gc_active {
                self.origin[b.idx()] = GC;
            }
        }
        if !self.die_index.is_empty() {
            self.rebuild_die_index(flash);
        }
        self.turn = 0;
        self.collect(flash);
        Ok(())
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        scan::check_l2p(flash, &self.l2p)?;
        if !self.die_index.is_empty() {
            for b in (0..self.geo.blocks).map(Pbn) {
                if self.index.contains(b) != self.die_index.contains(b) {
                    return Err(format!(
                        "{b:?}: sealed in the global victim index {} but in its die's {}",
                        self.index.contains(b),
                        self.die_index.contains(b)
                    ));
                }
            }
        }
        let free = self.free_blocks();
        if free.len() != self.free_count as usize {
            return Err(format!(
                "{} free blocks counted, {} in the pools",
                self.free_count,
                free.len()
            ));
        }
        let retired = self.retirement.retired();
        let wl_open: Vec<Pbn> = (self.wl.iter())
            .flat_map(|wl| wl.open.iter().flatten().copied())
            .collect();
        if self.gc_active.is_empty() && retired.is_empty() && wl_open.is_empty() {
            return scan::check_blocks(flash, &free, &self.index, &self.active);
        }
        if let Some(b) = retired.iter().find(|&&b| !flash.is_erased(b)) {
            return Err(format!("retired {b:?} is not erased"));
        }
        // Retired blocks count with the open ones: neither free nor sealed.
        let open: Vec<Pbn> = self
            .active
            .iter()
            .chain(&self.gc_active)
            .chain(retired)
            .chain(&wl_open)
            .copied()
            .collect();
        if let Some(b) = self.gc_active.iter().find(|b| self.active.contains(b)) {
            return Err(format!("{b:?} is open for host writes and for GC copies"));
        }
        if let Some(b) =
            (wl_open.iter()).find(|b| self.active.contains(b) || self.gc_active.contains(b))
        {
            return Err(format!(
                "{b:?} is open for levelling moves and for other writes"
            ));
        }
        scan::check_blocks(flash, &free, &self.index, &open)
    }

    fn stats(&self) -> FtlStats {
        let mut st = self.stats.clone();
        if !self.gc_active.is_empty() {
            let c = &self.streams;
            let e = &mut st.extra;
            e.streams(c.programs, c.blocks);
            for (i, (victims, valid)) in [
                ("stream_host_victims", "stream_host_victim_valid"),
                ("stream_gc_victims", "stream_gc_victim_valid"),
            ]
            .into_iter()
            .enumerate()
            {
                e.counter(victims, "blocks", c.victims[i] as f64);
                e.counter(valid, "pages", c.victim_valid[i] as f64);
            }
        }
        self.retirement.report(&mut st.extra);
        if let Some(wl) = &self.wl {
            st.extra
                .counter("wl_migrations", "blocks", wl.migrations as f64);
            st.extra
                .counter("wl_pages_copied", "pages", wl.pages as f64);
        }
        st
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.streams = StreamCounts::default();
        if let Some(wl) = &mut self.wl {
            wl.migrations = 0;
            wl.pages = 0;
        }
    }

    fn mapping_bytes(&self) -> u64 {
        self.l2p.len() as u64 * 4
    }

    /// Host and GC writes program the tags they are handed; only recovery orders them.
    fn packed_tags(&self) -> bool {
        true
    }

    fn read_back(&mut self, flash: &mut Flash, oracle: &mut Oracle) -> Result<u64, Violation> {
        oracle.read_back_map(&self.l2p, UNMAPPED, flash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::ftl::WornOut;
    use ftlab_core::geometry::GeometryBuilder;

    /// 4 dies (2 channels x 2), 8 pages per block, 64 logical blocks.
    fn geo() -> Geometry {
        geo_builder().build().unwrap()
    }

    fn geo_builder() -> GeometryBuilder {
        GeometryBuilder {
            page_size: 2048,
            pages_per_block: 8,
            spare_bytes: 64,
            logical_bytes: 64 * 8 * 2048,
            op_percent: 25.0,
            channels: 2,
            dies_per_channel: 2,
            planes_per_die: 1,
            min_spare_blocks: 0,
        }
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
    fn prefetch_hints_change_nothing_whatever_they_name() {
        let n = geo().logical_pages;
        let mut rng = ftlab_core::rng::SplitMix64::new(11);
        let lpns: Vec<u32> = (0..n)
            .chain((0..20 * n).map(|_| rng.below(n as u64) as u32))
            .collect();
        let (mut plain, mut plain_flash) = ftl(DieAlloc::RoundRobin);
        write_all(&mut plain, &mut plain_flash, lpns.iter().copied());
        // The same writes, each after a hint: the LPN written 8 later, an unmapped
        // or past-the-end one, or a wrong one.
        let (mut hinted, mut flash) = ftl(DieAlloc::RoundRobin);
        let mut version = vec![0u32; n as usize];
        for (i, &l) in lpns.iter().enumerate() {
            let hint = match i % 4 {
                0 => lpns.get(i + 8).copied().unwrap_or(n),
                1 => n + i as u32,
                2 => u32::MAX,
                _ => (l + 1) % n,
            };
            hinted.prefetch(&flash, Lpn(hint));
            version[l as usize] += 1;
            let tag = PageWrite {
                lpn: Lpn(l),
                version: version[l as usize],
            };
            hinted.write(&mut flash, &[tag]);
        }
        hinted.check(&flash).unwrap();
        assert!(plain.stats.gc_pages_copied > 0, "GC must have run");
        assert_eq!(hinted.l2p, plain.l2p);
        assert_eq!(hinted.stats, plain.stats);
        assert_eq!(flash.stats(), plain_flash.stats());
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
    fn round_robin_deals_writes_over_every_plane_of_every_die() {
        let g = GeometryBuilder {
            planes_per_die: 2,
            op_percent: 50.0,
            ..geo_builder()
        }
        .build()
        .unwrap();
        let opts = PageOptions {
            die_alloc: DieAlloc::RoundRobin,
            ..PageOptions::default()
        };
        let (mut f, mut flash) = (PageFtl::new(&g, &opts).unwrap(), Flash::new(&g));
        assert_eq!(f.active.len(), 8);
        write_all(&mut f, &mut flash, 0..16);
        // Block b is on plane b % 8 of the device: die b % 4, plane b / 4 % 2 of it.
        let planes: Vec<u32> = (0..16)
            .map(|l| f.l2p[l] / g.pages_per_block % g.planes())
            .collect();
        assert_eq!(planes, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn least_busy_writes_where_the_die_clock_is_free_first() {
        use ftlab_core::nand::Latencies;
        use ftlab_core::timing::DieClock;
        use ftlab_core::Nanos;
        // Without a die clock (serial timing) it deals pages in turn.
        let (mut f, mut flash) = ftl(DieAlloc::LeastBusy);
        write_all(&mut f, &mut flash, 0..8);
        let dies: Vec<u32> = (0..8).map(|l| die_of(&f, l)).collect();
        assert_eq!(dies, [0, 1, 2, 3, 0, 1, 2, 3]);
        // With one: each page goes to the die free first (programs take 300, no
        // transfer; ties to the lowest die).
        let (mut f, mut flash) = ftl(DieAlloc::LeastBusy);
        let lat = Latencies {
            read: Nanos(1000),
            spare_read: Nanos(10),
            program: Nanos(300),
            erase: Nanos(2000),
        };
        let g = geo();
        flash.install_clock(DieClock::new(lat, 2, 2, g.blocks, Nanos(0)));
        write_all(&mut f, &mut flash, 0..1);
        assert_eq!(die_of(&f, 0), 0);
        flash.clock_begin(Nanos(0));
        // The first page goes to die 0 (busy until 300); dies 1, 2, 3 are free at 0,
        // so the next pages go there; then all four are free at 300: dies 0 and 1.
        let writes: Vec<PageWrite> = (10..16)
            .map(|l| PageWrite {
                lpn: Lpn(l),
                version: 1,
            })
            .collect();
        f.write(&mut flash, &writes[..1]);
        f.write(&mut flash, &writes[1..]);
        flash.clock_end();
        let dies: Vec<u32> = (10..16).map(|l| die_of(&f, l)).collect();
        assert_eq!(dies, [0, 1, 2, 3, 0, 1]);
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

    /// GC per die on `geo()` with 50% over-provisioning (64 logical blocks + 4 dies x
    /// (gc_threshold 3 + 1) + 4 open blocks = 84 blocks needed).
    fn per_die(alloc: DieAlloc, policy: GcPolicy) -> (PageFtl, Flash) {
        let mut g = geo_builder();
        g.op_percent = 50.0;
        let g = g.build().unwrap();
        let opts = PageOptions {
            die_alloc: alloc,
            gc_scope: GcScope::PerDie,
            gc_policy: policy,
            ..PageOptions::default()
        };
        (
            PageFtl::new(&g, &opts).unwrap().with_gc_seed(11),
            Flash::new(&g),
        )
    }

    /// Valid pages on each of the 4 dies.
    fn valid_per_die(f: &PageFtl, flash: &Flash) -> [u32; 4] {
        let mut v = [0; 4];
        for b in 0..f.geo.blocks {
            v[(b % 4) as usize] += flash.valid_count(Pbn(b));
        }
        v
    }

    #[test]
    fn gc_per_die_collects_a_die_and_keeps_its_copies_there() {
        for alloc in [DieAlloc::RoundRobin, DieAlloc::Static, DieAlloc::LeastBusy] {
            let (mut f, mut flash) = per_die(alloc, GcPolicy::Greedy);
            churn(&mut f, &mut flash, 3);
            assert!(
                f.stats.gc_pages_copied > 0,
                "{alloc:?}: GC must have copied"
            );
            // One more collection on die 2, forced: its free pool grows, and no valid
            // page leaves the die or arrives on another.
            let before = valid_per_die(&f, &flash);
            let free_before = f.free[2].len();
            let copied = f.stats.gc_pages_copied;
            f.die_threshold = free_before as u32 + 2;
            f.collect_die(&mut flash, 2);
            f.die_threshold = 3;
            assert!(f.free[2].len() > free_before, "{alloc:?}: die 2 collected");
            assert!(f.stats.gc_pages_copied > copied, "{alloc:?}: with copies");
            assert_eq!(valid_per_die(&f, &flash), before, "{alloc:?}");
            f.check(&flash).unwrap();
        }
        // Static striping with GC per die: every LPN stays on its die, as globally.
        let (mut f, mut flash) = per_die(DieAlloc::Static, GcPolicy::Greedy);
        churn(&mut f, &mut flash, 4);
        for l in 0..geo().logical_pages {
            assert_eq!(die_of(&f, l), l % 4, "LPN {l}");
        }
    }

    #[test]
    fn gc_per_die_runs_every_victim_policy_and_recovers() {
        for policy in GcPolicy::ALL {
            let (mut f, mut flash) = per_die(DieAlloc::RoundRobin, policy);
            churn(&mut f, &mut flash, 5);
            assert!(f.stats.gc_invocations > 0, "{policy:?}");
            let tags = |f: &PageFtl, flash: &Flash| -> Vec<Option<PageTag>> {
                f.l2p.iter().map(|&p| flash.peek_tag(Ppn(p))).collect()
            };
            let before = tags(&f, &flash);
            let (mut g, _) = per_die(DieAlloc::RoundRobin, policy);
            flash.power_cycle();
            g.recover(&mut flash).unwrap();
            g.check(&flash).unwrap();
            assert_eq!(tags(&g, &flash), before, "{policy:?}");
            // It runs on after the recovery, its per-die indexes rebuilt.
            churn(&mut g, &mut flash, 6);
        }
    }

    #[test]
    fn gc_per_die_is_refused_without_dies_and_needs_its_reserve() {
        let opts = PageOptions {
            gc_scope: GcScope::PerDie,
            ..PageOptions::default()
        };
        let e = PageFtl::new(&geo(), &opts).err().unwrap().to_string();
        assert!(e.contains("gc_scope") && e.contains("die_alloc"), "{e}");
        // 64 logical blocks + 4 x (3 + 1) + 4 open = 84; geo() has 80.
        let opts = PageOptions {
            die_alloc: DieAlloc::RoundRobin,
            ..opts
        };
        let e = PageFtl::new(&geo(), &opts).err().unwrap().to_string();
        assert!(
            e.contains("needs at least 84") && e.contains("per_die"),
            "{e}"
        );
    }

    fn separate(alloc: DieAlloc) -> (PageFtl, Flash) {
        let g = geo();
        let opts = PageOptions {
            die_alloc: alloc,
            gc_frontier: GcFrontier::Separate,
            ..PageOptions::default()
        };
        (PageFtl::new(&g, &opts).unwrap(), Flash::new(&g))
    }

    /// Fill, then 20 device writes of random overwrites (seed `seed`), then 3 more
    /// (so the host's open block is partly written).
    fn churn(f: &mut PageFtl, flash: &mut Flash, seed: u64) {
        let n = geo().logical_pages;
        let mut rng = ftlab_core::rng::SplitMix64::new(seed);
        let random: Vec<u32> = (0..20 * n + 3)
            .map(|_| rng.below(n as u64) as u32)
            .collect();
        write_all(f, flash, (0..n).chain(random));
    }

    #[test]
    fn runs_of_pages_do_what_page_by_page_writes_do() {
        use ftlab_core::nand::Latencies;
        use ftlab_core::timing::DieClock;
        use ftlab_core::Nanos;
        // The same random requests (runs of 1 to 20 consecutive LPNs, so runs cross
        // block ends and GC), once as runs and once a page at a time, under a die clock
        // and without: the same flash, mapping, counters and die times.
        let g = geo();
        let n = g.logical_pages;
        for clocked in [false, true] {
            let mut f = [
                PageFtl::new(&g, &PageOptions::default()).unwrap(),
                PageFtl::new(&g, &PageOptions::default()).unwrap(),
            ];
            let mut fl = [Flash::new(&g), Flash::new(&g)];
            // Counting only (as the engine runs untimed), or timed by a die clock.
            for x in &mut fl {
                x.set_logging(false);
            }
            if clocked {
                let lat = Latencies {
                    read: Nanos(1000),
                    spare_read: Nanos(10),
                    program: Nanos(300),
                    erase: Nanos(2000),
                };
                for x in &mut fl {
                    x.install_clock(DieClock::new(lat, 2, 2, g.blocks, Nanos(0)));
                }
            }
            let mut rng = ftlab_core::rng::SplitMix64::new(7);
            let mut version = vec![0u32; n as usize];
            for req in 0..3000u64 {
                let len = 1 + rng.below(20) as u32;
                let start = rng.below((n - len) as u64) as u32;
                let tags: Vec<PageTag> = (start..start + len)
                    .map(|l| {
                        version[l as usize] += 1;
                        crate::testutil::tag(l, version[l as usize])
                    })
                    .collect();
                for x in &mut fl {
                    x.clock_begin(Nanos(req * 10_000));
                }
                f[0].write(&mut fl[0], &tags);
                for t in &tags {
                    f[1].write(&mut fl[1], std::slice::from_ref(t));
                }
                for x in &mut fl {
                    x.clock_end();
                }
            }
            assert!(f[0].stats.gc_invocations > 50);
            assert_eq!(f[0].l2p, f[1].l2p);
            assert_eq!(f[0].stats(), f[1].stats());
            assert_eq!(fl[0].stats(), fl[1].stats());
            for b in (0..g.blocks).map(Pbn) {
                assert_eq!(fl[0].write_ptr(b), fl[1].write_ptr(b));
                assert_eq!(fl[0].valid_count(b), fl[1].valid_count(b));
                if let (Some(c0), Some(c1)) = (fl[0].clock(), fl[1].clock()) {
                    assert_eq!(c0.free_at(b), c1.free_at(b), "{b:?}");
                }
            }
            for p in (0..g.physical_pages()).map(Ppn) {
                assert_eq!(fl[0].peek_tag(p), fl[1].peek_tag(p));
            }
            f[0].check(&fl[0]).unwrap();
        }
    }

    #[test]
    fn a_separate_gc_frontier_keeps_gc_copies_out_of_host_blocks() {
        for alloc in [DieAlloc::Single, DieAlloc::RoundRobin, DieAlloc::Static] {
            let (mut f, mut flash) = separate(alloc);
            churn(&mut f, &mut flash, 7);
            let st = f.stats();
            assert!(st.gc_pages_copied > 0, "{alloc:?}");
            // Every GC copy went to the GC stream, every host write to the host stream.
            assert_eq!(
                st.extra["stream_gc_programs"], st.gc_pages_copied as f64,
                "{alloc:?}"
            );
            assert_eq!(
                st.extra["stream_host_programs"],
                (21 * geo().logical_pages + 3) as f64
            );
            assert_eq!(
                st.extra["stream_host_victims"] + st.extra["stream_gc_victims"],
                st.gc_invocations as f64
            );
            assert_eq!(
                st.extra["stream_host_victim_valid"] + st.extra["stream_gc_victim_valid"],
                st.gc_pages_copied as f64
            );
            // No block holds both: a GC frontier block's pages are all GC copies.
            let (gc, host) = (&f.gc_active, &f.active);
            assert!(gc.iter().all(|b| !host.contains(b)));
            for &b in gc {
                assert_eq!(f.origin[b.idx()], GC);
            }
        }
        // Shared (the default) reports no stream figures: reports keep their keys.
        let (mut f, mut flash) = ftl(DieAlloc::Single);
        churn(&mut f, &mut flash, 7);
        assert!(!f.stats().extra.contains_key("stream_gc_programs"));
    }

    #[test]
    fn a_separate_gc_frontier_recovers_both_open_blocks() {
        for alloc in [DieAlloc::Single, DieAlloc::RoundRobin] {
            let (mut f, mut flash) = separate(alloc);
            churn(&mut f, &mut flash, 9);
            // Both frontiers partly written (the seeds are chosen so).
            let partly = f
                .active
                .iter()
                .chain(&f.gc_active)
                .filter(|&&b| !flash.is_erased(b) && !flash.is_full(b))
                .count();
            assert!(
                partly >= 2,
                "{alloc:?}: {partly} partly written open blocks"
            );
            let tags = |f: &PageFtl, flash: &Flash| -> Vec<Option<PageTag>> {
                f.l2p.iter().map(|&p| flash.peek_tag(Ppn(p))).collect()
            };
            let before = tags(&f, &flash);
            let (mut g, _) = separate(alloc);
            flash.power_cycle();
            g.recover(&mut flash).unwrap();
            g.check(&flash).unwrap();
            assert_eq!(tags(&g, &flash), before);
            // And it runs on: more overwrites, checks pass.
            churn(&mut g, &mut flash, 10);
        }
    }

    #[test]
    fn a_separate_gc_frontier_needs_one_more_block() {
        // 64 logical blocks + gc_threshold 3 + 1 open + 1 open GC block = 69.
        let mut g = geo();
        g.blocks = 68;
        let opts = PageOptions {
            gc_frontier: GcFrontier::Separate,
            ..PageOptions::default()
        };
        let e = PageFtl::new(&g, &opts).err().unwrap().to_string();
        assert!(
            e.contains("needs at least 69") && e.contains("gc_frontier"),
            "{e}"
        );
        g.blocks = 69;
        assert!(PageFtl::new(&g, &opts).is_ok());
    }

    fn levelled(wl: WearLeveling, alloc: DieAlloc, frontier: GcFrontier) -> (PageFtl, Flash) {
        // Room for static levelling's open block per die beside a GC frontier per die.
        let g = GeometryBuilder {
            op_percent: 32.0,
            ..geo_builder()
        }
        .build()
        .unwrap();
        let opts = PageOptions {
            die_alloc: alloc,
            gc_frontier: frontier,
            wear_leveling: wl,
            wl_threshold: 4,
            ..PageOptions::default()
        };
        (PageFtl::new(&g, &opts).unwrap(), Flash::new(&g))
    }

    /// Fill, then `rounds` device writes of overwrites of the first eighth of the
    /// logical pages only (the rest is written once: cold).
    fn hot_only(f: &mut PageFtl, flash: &mut Flash, rounds: u32) {
        let n = geo().logical_pages;
        let mut rng = ftlab_core::rng::SplitMix64::new(4);
        let hot: Vec<u32> = (0..rounds * n)
            .map(|_| rng.below(n as u64 / 8) as u32)
            .collect();
        write_all(f, flash, (0..n).chain(hot));
    }

    fn spread(flash: &Flash) -> u32 {
        let ec = flash.erase_counts();
        ec.iter().max().unwrap() - ec.iter().min().unwrap()
    }

    #[test]
    fn dynamic_levelling_hands_out_the_least_erased_free_block() {
        let (mut f, mut flash) =
            levelled(WearLeveling::Dynamic, DieAlloc::Single, GcFrontier::Shared);
        hot_only(&mut f, &mut flash, 10);
        // Every block taken from the pool now is a least-erased free one.
        for _ in 0..20 {
            let free = f.free_blocks();
            let least = free.iter().map(|&b| (flash.erase_count(b), b.0)).min();
            let taken = f.take_free(0);
            assert_eq!(Some((flash.erase_count(taken), taken.0)), least);
            f.free[0].push(taken, flash.erase_count(taken));
            f.free_count += 1;
        }
    }

    #[test]
    fn static_levelling_narrows_the_spread_and_recovers() {
        let (mut off, mut flash_off) =
            levelled(WearLeveling::Off, DieAlloc::Single, GcFrontier::Shared);
        hot_only(&mut off, &mut flash_off, 30);
        for alloc in [DieAlloc::Single, DieAlloc::RoundRobin] {
            for frontier in GcFrontier::ALL {
                let (mut f, mut flash) = levelled(WearLeveling::Static, alloc, frontier);
                hot_only(&mut f, &mut flash, 30);
                let st = f.stats();
                assert!(st.extra["wl_migrations"] > 0.0, "{alloc:?} {frontier:?}");
                assert!(
                    spread(&flash) < spread(&flash_off) / 2,
                    "{alloc:?} {frontier:?}: spread {} against {} without levelling",
                    spread(&flash),
                    spread(&flash_off)
                );
                // One move per check, per-die pools under round-robin: the spread stays
                // near the threshold (4), not at it (measured 5 to 17, 100 without).
                assert!(
                    spread(&flash) <= 20,
                    "{alloc:?} {frontier:?}: {}",
                    spread(&flash)
                );
                let tags = |f: &PageFtl, flash: &Flash| -> Vec<Option<PageTag>> {
                    f.l2p.iter().map(|&p| flash.peek_tag(Ppn(p))).collect()
                };
                let before = tags(&f, &flash);
                let (mut g, _) = levelled(WearLeveling::Static, alloc, frontier);
                flash.power_cycle();
                g.recover(&mut flash).unwrap();
                g.check(&flash).unwrap();
                assert_eq!(tags(&g, &flash), before);
            }
        }
        assert!(!off.stats().extra.contains_key("wl_migrations"));
    }

    #[test]
    fn blocks_retire_at_the_pe_limit_until_the_device_is_worn_out() {
        let g = geo();
        let opts = PageOptions {
            pe_limit: 6,
            ..PageOptions::default()
        };
        let (mut f, mut flash) = (PageFtl::new(&g, &opts).unwrap(), Flash::new(&g));
        let n = g.logical_pages;
        let mut rng = ftlab_core::rng::SplitMix64::new(8);
        let mut version = vec![0u32; n as usize];
        let mut retired_seen = 0.0;
        let mut recovered = false;
        let worn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // Checks every 8 writes: with first-in first-out reuse the blocks wear
            // evenly, so they reach the limit within a few hundred writes of each other.
            for round in 0.. {
                for _ in 0..8 {
                    let l = rng.below(n as u64) as u32;
                    version[l as usize] += 1;
                    f.write(
                        &mut flash,
                        &[PageWrite {
                            lpn: Lpn(l),
                            version: version[l as usize],
                        }],
                    );
                }
                f.check(&flash).unwrap();
                let r = f.stats().extra["retired_blocks"];
                assert!(r >= retired_seen);
                retired_seen = r;
                // Every LPN still reads its newest version.
                for l in 0..n {
                    if version[l as usize] > 0 {
                        let t = f.read(&mut flash, Lpn(l)).unwrap();
                        assert_eq!(t.version, version[l as usize]);
                    }
                }
                // Once blocks have retired, a power loss keeps them retired.
                if r > 0.0 && !recovered {
                    recovered = true;
                    let mut g2 = PageFtl::new(&g, &opts).unwrap();
                    flash.power_cycle();
                    g2.recover(&mut flash).unwrap();
                    g2.check(&flash).unwrap();
                    assert_eq!(g2.stats().extra["retired_blocks"], r);
                    f = g2;
                }
                assert!(round < 100_000, "never wore out");
            }
        }));
        let msg = worn.unwrap_err();
        let msg = msg
            .downcast_ref::<WornOut>()
            .map(|w| w.0.clone())
            .unwrap_or_default();
        assert!(
            msg.contains("device worn out") && msg.contains("pe_limit 6"),
            "{msg}"
        );
        assert!(recovered && retired_seen > 0.0);
        // Every erase count stays at or below the limit.
        assert!(flash.erase_counts().iter().all(|&e| e <= 6));
    }

    #[test]
    fn a_bad_wear_leveling_is_refused_naming_the_option() {
        for (key, value, why) in [
            ("wear_leveling", "both", "dynamic"),
            ("wl_threshold", "0", "at least 1"),
        ] {
            let e = ftlab_core::options::from_pairs::<PageOptions>(ID, &[(key, value)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`{key}` = `{value}`")) && e.contains(why),
                "{e}"
            );
        }
    }

    #[test]
    fn a_bad_gc_frontier_is_refused_naming_the_option() {
        let e = ftlab_core::options::from_pairs::<PageOptions>(ID, &[("gc_frontier", "both")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`gc_frontier` = `both`") && e.contains("separate"),
            "{e}"
        );
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
