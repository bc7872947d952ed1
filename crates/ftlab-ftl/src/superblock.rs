//! `superblock`: Superblock FTL (superblock-ftl.txt §4).
//!
//! N adjacent logical blocks form a superblock that owns up to N+M physical blocks
//! (D-blocks and U-blocks); pages are mapped freely inside the superblock, and every write
//! of the superblock is logged sequentially into its current U-block (§4.1). The page
//! mapping is a three-level table (§4.2, Fig. 5): the PGD (one entry per logical block,
//! in RAM) points to the page whose spare area holds the latest PMD of that logical block;
//! the PMD points to the pages holding its `2^m` PTs; a PT's entries point to the data.
//! The PMD and the one PT a page belongs to are written into the spare area with the page
//! (SB-S, Table III), so the map costs no extra flash write; a small LRU map cache of
//! `PMD + PT` entries saves the spare reads (§4.2.2, §5.7). Merges (§4.3): a block whose
//! pages are all invalid is reclaimed at once (switch); a superblock that reaches its
//! block limit runs MergeSome (Fig. 10 with SimpleCopyAndCompact of Fig. 9); when no free
//! block is left, the least recently used superblock owning U-blocks runs MergeAll with
//! hot/cold classification (Fig. 11).
//!
//! Choices the paper leaves open, as options (see [`SuperblockOptions`]) or documented
//! defaults:
//! - `superblock_size` N (default 4, §5.1). The last superblock may have fewer logical
//!   blocks when N does not divide the device.
//! - `max_u_blocks` M (default `auto`): "the total number of D-blocks and U-blocks that
//!   can be allocated to a superblock is limited to eight" (§4.2.2); `auto` uses the
//!   whole limit the spare layout allows (PBMT entries + 1 - N: 4 for SLC with N = 4). An
//!   explicit M above the limit is refused.
//! - `hot_cold` (default on): Fig. 11's classification. Off, MergeAll compacts blocks in
//!   allocation order. Fig. 11 continues packing cold pages into the block the hot pages
//!   ended in ("in the same manner"); Fig. 12 shows the cold pages in a new block, which is
//!   what happens when the hot pages fill the last U-block. We follow the pseudo-code, so
//!   MergeAll always ends with `ceil(valid / pages_per_block)` blocks.
//! - MergeSome repeats "until two free PBMT entries are generated" (Fig. 10 reads
//!   `until nFreed < 2`, a typo for `>= 2`), or as many as the superblock can free
//!   (`blocks - ceil(valid / pages_per_block)`) when that is fewer than two.
//! - Victim inside a superblock: fewest valid pages, ties by allocation order; the U-block
//!   being written is never a victim while it has free pages.
//! - MergeAll's "has no free page and has invalid pages": free pages of any block that is
//!   not being written were abandoned (Fig. 11 line 5), so they count as invalid.
//! - A SimpleCopyAndCompact that fits into the current U-block is counted as a partial
//!   merge, one that needs a reserved block as a full merge, one without valid pages as a
//!   switch merge; each reclaimed block is one merge (Table VII sums the three kinds to
//!   MergeCount). The merge cost is the time of merge copies and erases (§3.1).
//! - "AllocReservedBlock": one block is kept in reserve for merges (Fig. 9 takes at most
//!   one per victim and gives one back); blocks freed by a merge refill the reserve first.
//! - U-blocks are hot and D-blocks cold when assigned; MergeAll marks every block cold.
//!   When a merge leaves a superblock with N blocks its U-blocks become D-blocks (§4.3).
//! - The MergeAll victim is the least recently written superblock that owns a U-block
//!   and whose merge frees a block (it owns more than `ceil(valid / pages_per_block)`
//!   blocks; in place, more than one per logical block with data). If none does, the
//!   superblock with the most such blocks is merged. The paper preconditions every D-block
//!   full, so its LRU victim always frees its U-blocks; without preconditioning a
//!   superblock may own U-blocks and still be compact, and merging it would free nothing
//!   (in place it could even need more blocks).
//! - `map_cache_entries` (default 16, §5.1). A lookup is a hit when the `(logical block,
//!   PMD index)` entry is cached; a miss reads the PMD's spare (unless another cached entry
//!   of the block holds the PMD) and the PT's spare (unless it is the same spare), under
//!   [`Cause::Map`]. The hit ratio is eq. 4. Merges load the whole superblock's map
//!   ("LoadAllMapTable") into a work area, reading the spares of the entries not cached;
//!   those reads are counted in `extra.merge_map_spare_reads`, not in the hit ratio.
//! - Trim (not in the paper): the PT in flash still maps a trimmed page, so the FTL
//!   rewrites one valid page of the same PT (or of the same logical block, if the PT is now
//!   empty) to carry the updated PT and PMD, under [`Cause::Map`]; that keeps the
//!   invariant that every PTE points to the live copy of its page.
//! - Simulation of the spare contents: the PMD and PT written with each page are stored
//!   as the page's spare words in the [`Flash`] ([`Flash::program_with_spare`]), as
//!   absolute page numbers rather than PBMT-indexed bit fields (the layout check proves
//!   the bit fields fit). Reads resolve through the cache and these spares, never through
//!   a full page table, so a wrong PGD or PT shows up as an oracle violation, and the map
//!   survives a power loss with the flash (recovery: see the `snapshot` module, §4.4).
//!   A merge's copies keep their words in a spare journal of the flash
//!   ([`Flash::move_valid_journaled`]): the work area as the merge found it, and per copy
//!   the PT entry it moved; [`Flash::spare_words`] decodes the words each copy was
//!   programmed with, so every reader sees them as if stored whole (8 bytes a copy
//!   instead of 96; `merge::decode_spare`, test
//!   `journaled_merge_spares_read_back_as_the_words_written_whole`). The lookups read
//!   the words from a RAM mirror that stands for them (the `mirror` module), so only a
//!   recovery, a deep check and the debug builds' checks read the spares themselves:
//!   a run with no power loss planned stores none of them, nor the snapshots'
//!   contents, and programs the same pages ([`Flash::drop_recovery_data`]; its deep
//!   check walks the mirror; test `dropping_recovery_data_changes_no_operation`).
//! - `placement = ip` (SB-n-IP), `background_merge` and `snapshots`: see the `inplace`
//!   and `snapshot` modules and [`SuperblockOptions`].
//! - `mapping = map_page` (SB-P, §4.2.3; `map_page_home`, `superblocks_per_map_page`,
//!   `map_pool_blocks`) and `mapping = ram` (the map held in RAM of §5.6, for
//!   superblocks beyond the spare layout's 8 blocks): see the `mappage` module, which
//!   lists the choices each leaves open. SB-S parts whose spare area cannot hold the
//!   Table III layout are refused, naming that option.
//! - `mapping_bytes` counts the PGD (4 bytes per entry; the paper packs 3) and the cache
//!   entries (key + PMD + PT, 4 bytes per entry field). Per-block valid counts, the block
//!   lists and the free lists are controller state saved in the snapshot (§4.4), not map.
//! - Endurance (issue 23 item 4, not in the paper): `pe_limit` (default 0: never). A
//!   block erased `pe_limit` times by a merge or a switch retires
//!   ([`ftlab_core::wear::Retirement`]): it joins neither the free list nor the merge
//!   reserve, which is refilled from the free list when the block was due there. The
//!   scheme works on while its geometry rule's blocks are left, and raises `WornOut`
//!   past that, when no block can be freed with blocks retired, when a retirement finds
//!   no free block to refill the merge reserve with (the next merge needing it could
//!   not run), or when a block of the fixed snapshot area reaches the limit. The snapshot log records a retired block as
//!   released to the free list; recovery takes the pooled blocks at the limit out again
//!   (the erase counts are on flash).
//! - Wear levelling (issue 23 item 3, not in the paper; [`ftlab_core::wear`]):
//!   `wear_leveling = "off"` (default: the free list first-in first-out) or
//!   `"dynamic"`: a new U-block (or map-page block, or merge-reserve refill) is the
//!   least-erased free block, ties by the lowest number. Choices made here: only the
//!   free list is ordered by wear; the merge reserve (a handful of blocks a merge
//!   takes at once) keeps its own order. This fits the snapshot design because the
//!   snapshot log records every allocation by block number (`Alloc { sb, pbn }`) and
//!   every release (`Release { pbn, .. }`), never by position, and recovery takes a
//!   block off wherever it is: the lists a snapshot saves are replayed as sets, and
//!   once recovery ends the free list is keyed by the erase counts on flash again
//!   (a first-in first-out list keeps its replayed order, as before). `"static"`:
//!   dynamic, and after each host request, when the least-erased block a superblock
//!   owns has more than `wl_threshold` (default 16) erases fewer than the most-erased
//!   block erased by a merge, the most-worn free block becomes a U-block of that
//!   superblock (`Alloc`, as for any U-block) and the cold block is compacted into it
//!   by the paper's own SimpleCopyAndCompact (Fig. 9: its valid pages copied, the map
//!   entries in the spares rewritten, the block detached, erased and released; all in
//!   the snapshot log), so the cold data rest on worn flash and the cold block is
//!   handed out next. Choices made here: the heap holds the blocks superblocks own,
//!   keyed by their erase count when attached; the snapshot area is left out (fixed
//!   blocks); a move only when the superblock has room for one more block and its
//!   current U-block is not freshly opened (empty), and only if the free block has
//!   more erases than the cold one; a U-block with free pages is abandoned first
//!   (`Abandon` in the log, as MergeAll's InvalidateAllFreePages), so the cold data get
//!   a block of their own; one move per request; counted as a merge as usual and
//!   as `ftl.extra.wl_migrations` / `wl_pages_copied`. Only with `placement = oop` and
//!   `mapping = spare`: in place a logical block's pages sit at their offsets of its
//!   own block, and SB-P's map pages move with their own rules; other combinations are
//!   refused naming `wear_leveling`. After a power loss the replay restores the
//!   superblocks' block lists, and the heap is rebuilt from them and the erase counts
//!   on flash. O(log blocks) per block attached, detached or erased, O(1) per request.

mod cache;
mod inplace;
mod layout;
mod mappage;
mod merge;
mod mirror;
mod options;
mod snapshot;
#[cfg(test)]
mod tests;

pub use layout::{AddressSplit, Ecc, SpareLayout, Split};
pub use options::{
    EccOption, MapPageHome, Mapping, OnOff, Placement, Snapshots, SuperblockOptions,
};
pub use snapshot::RecoveryReport;
use snapshot::{Event, SnapLog, OWN_SNAPSHOT};

use crate::auto::AutoOr;
use cache::{MapCache, NONE};
use ftlab_core::flash::{Cause, Flash, SpareJournal};
use ftlab_core::ftl::{Ftl, FtlStats, IdleBudget, RecoverError};
use ftlab_core::geometry::Geometry;
use ftlab_core::lru::Lru;
use ftlab_core::nand::Latencies;
use ftlab_core::options::{bad, geometry_error, SchemeError};
use ftlab_core::wear::{FreeBlocks, Retirement, StaticLeveling, WearLeveling};
use ftlab_core::{Lpn, PageTag, PageWrite, Pbn, Ppn};
use mappage::Home;
use std::collections::VecDeque;

/// Scheme id in the registry and in errors.
pub const ID: &str = "superblock";

/// Owner codes of blocks that belong to no superblock.
const OWN_FREE: u32 = u32::MAX;
const OWN_RESERVED: u32 = u32::MAX - 1;
/// Owner code of a block retired at the P/E limit (`OWN_SNAPSHOT` is `u32::MAX - 2`).
const OWN_RETIRED: u32 = u32::MAX - 3;
/// Owner code of the blocks of the map-page pool (`map_page_home = pool`).
const OWN_MAP_POOL: u32 = u32::MAX - 5;

/// Resolved configuration.
#[derive(Clone, Copy, Debug)]
struct Cfg {
    /// Logical blocks per superblock.
    n: u32,
    /// Most physical blocks per superblock (N + M).
    max_blocks: u32,
    /// Slots of a superblock's block list: N + M, plus the reserve an in-place merge may
    /// hold while it writes new D-blocks before erasing the old ones.
    row: u32,
    hot_cold: bool,
    /// In-place D-blocks (SB-n-IP).
    ip: bool,
    /// Blocks kept in reserve for merges ("AllocReservedBlock", Fig. 9): one for
    /// out-of-place merges, N for in-place ones (each logical block may need a new
    /// D-block before any old block empties).
    reserve: u32,
    background: bool,
    background_free: u32,
}

/// Counters beyond [`FtlStats`].
#[derive(Clone, Debug, Default)]
struct Counters {
    merges_some: u64,
    merges_all: u64,
    u_victims: u64,
    u_pages_written: u64,
    map_spare_reads: u64,
    merge_map_spare_reads: u64,
    trim_copies: u64,
    background_merges: u64,
    ip_filler_pages: u64,
}

/// The Superblock FTL.
pub struct SuperblockFtl {
    geo: Geometry,
    lat: Latencies,
    cfg: Cfg,
    split: AddressSplit,
    layout: Option<SpareLayout>,
    superblocks: u32,
    // RAM map (counted in mapping_bytes).
    pgd: Vec<u32>,
    cache: MapCache,
    // Controller state (in the snapshot).
    sb_blocks: Vec<u32>,
    sb_len: Vec<u32>,
    frontier: Vec<u32>,
    nu: Vec<u32>,
    owner: Vec<u32>,
    is_u: Vec<bool>,
    hot: Vec<bool>,
    /// First-in first-out, or least-erased first under `wear_leveling = "dynamic"`.
    free: FreeBlocks,
    reserved: Vec<Pbn>,
    /// Blocks retired at `pe_limit` (owner [`OWN_RETIRED`]).
    retirement: Retirement,
    /// Static levelling: the blocks superblocks own, by erase count when attached.
    wl: Option<StaticLeveling>,
    /// Static levelling: each block's erase count at its last erase by a merge.
    erased_at: Vec<u32>,
    lru: Lru,
    // SB-P: the map-page cache, the PGD of map pages (one per superblock) and buffers.
    mappages: Option<mappage::MapPageCache>,
    /// SB-P: the pool map pages are written to (`map_page_home = pool`).
    pool: Option<mappage::MapPool>,
    /// SB-P: where each map page is (one entry per map page).
    map_pgd: Vec<u32>,
    mpbuf: Vec<u32>,
    mpwords: Vec<u32>,
    // Snapshot log (None: snapshots off) and recovery bookkeeping.
    snap: Option<SnapLog>,
    frontier_wp: Vec<u32>,
    recovery: Option<RecoveryReport>,
    /// SB-S: the newest PMD and PTs of every logical block in logical order (a copy of
    /// what the spares hold, for the simulator to read them from; see `mirror`).
    mirror: mirror::Mirror,
    // Merge work area and scratch.
    ws: merge::Workspace,
    /// The spare journal the work area's copies are programmed through while a merge
    /// runs (`journal_spares`).
    journal: Option<SpareJournal>,
    /// Merge copies keep their spare words in a journal ([`Flash::move_valid_journaled`],
    /// the default) rather than whole ([`Flash::move_valid_with_spare`]): the same
    /// words for every reader, 8 bytes stored a copy instead of 96. Off only in the
    /// tests that compare the two.
    journal_spares: bool,
    scratch: Vec<u32>,
    stats: FtlStats,
    counters: Counters,
}

/// The PMD in the spare area of page `ppn`.
#[inline]
fn spare_pmd(flash: &Flash, ppn: u32, pmd_len: usize) -> Vec<u32> {
    flash.spare_words(Ppn(ppn))[..pmd_len].to_vec()
}

/// The PT in the spare area of page `ppn`.
#[inline]
fn spare_pt(flash: &Flash, ppn: u32, pmd_len: usize) -> Vec<u32> {
    flash.spare_words(Ppn(ppn))[pmd_len..].to_vec()
}

impl SuperblockFtl {
    /// The PMD a deep check reads for `lbn`, whose newest page is `head`: the one in
    /// `head`'s spare, or the mirror's, which stands for it, on a flash that keeps no
    /// spare words ([`Flash::drop_recovery_data`]).
    fn chain_pmd(&self, flash: &Flash, lbn: u32, head: u32) -> Vec<u32> {
        if flash.keeps_recovery_data() {
            spare_pmd(flash, head, self.split.pmd_len())
        } else {
            self.mirror.pmd(lbn).to_vec()
        }
    }

    /// [`SuperblockFtl::chain_pmd`] for PT `i` of `lbn`, in the spare of `loc`.
    fn chain_pt(&self, flash: &Flash, lbn: u32, i: usize, loc: u32) -> Vec<u32> {
        if flash.keeps_recovery_data() {
            spare_pt(flash, loc, self.split.pmd_len())
        } else {
            self.mirror.pt(lbn, i).to_vec()
        }
    }

    /// Builds the FTL for `geo`; `lat` prices the merge cost reported in `extra`.
    pub fn new(
        geo: &Geometry,
        lat: Latencies,
        opts: &SuperblockOptions,
    ) -> Result<SuperblockFtl, SchemeError> {
        let n = opts.superblock_size;
        if n == 0 || n > geo.logical_blocks() {
            return Err(bad(
                ID,
                "superblock_size",
                n,
                format!("must be 1 to the logical blocks ({})", geo.logical_blocks()),
            ));
        }
        let t = opts.pt_bits.clamp(1, 12);
        let ecc = opts.ecc.resolve(geo.page_size);
        let split = AddressSplit::new(n, geo.pages_per_block, t);
        let home = match opts.mapping {
            Mapping::Spare => None,
            Mapping::MapPage => Some(match opts.map_page_home {
                MapPageHome::Pool => Home::Pool,
                MapPageHome::UBlock => Home::UBlock,
            }),
            Mapping::Ram => Some(Home::Ram),
        };
        let map_pages = home.is_some();
        if opts.mapping != Mapping::MapPage && opts.map_page_home != MapPageHome::Pool {
            return Err(bad(
                ID,
                "map_page_home",
                opts.map_page_home,
                format!(
                    "applies to mapping = map_page only (mapping is {})",
                    opts.mapping
                ),
            ));
        }
        if home != Some(Home::Pool) {
            if let AutoOr::Value(b) = opts.map_pool_blocks {
                return Err(bad(
                    ID,
                    "map_pool_blocks",
                    b,
                    "applies to mapping = map_page with map_page_home = pool only",
                ));
            }
        }
        let (layout, limit) = Self::block_limit(geo, &split, ecc, home)?;
        let m = match opts.max_u_blocks {
            AutoOr::Auto if map_pages => n.min(limit.saturating_sub(n)),
            AutoOr::Auto => limit.saturating_sub(n),
            AutoOr::Value(m) => m,
        };
        if m == 0 || n + m > limit {
            return Err(bad(
                ID,
                "max_u_blocks",
                opts.max_u_blocks,
                format!(
                    "N + M must be {} to {limit} (the blocks the {} can address); lower \
                     max_u_blocks or superblock_size",
                    n + 1,
                    if map_pages {
                        "map page"
                    } else {
                        "spare layout"
                    }
                ),
            ));
        }
        let entries = opts.map_cache_entries.clamp(1, 1 << 20) as usize;
        let lbns = geo.logical_blocks();
        let superblocks = lbns.div_ceil(n);
        let ip = opts.placement == Placement::Ip;
        if ip && map_pages {
            return Err(bad(
                ID,
                "placement",
                opts.placement,
                format!(
                    "in-place D-blocks are not implemented with mapping = {}",
                    opts.mapping
                ),
            ));
        }
        // Map pages: the part of one superblock, and how many share a page (k).
        let ptes = n * (split.pmd_len() * split.pt_len()) as u32;
        let fmt = mappage::Format::new(n + m, ptes, geo.pages_per_block, geo.blocks);
        let fit = fmt.per_page(geo.page_size);
        let k = match (home, opts.superblocks_per_map_page) {
            (Some(Home::Pool), AutoOr::Auto) => fit.min(superblocks).max(1),
            (Some(Home::Pool), AutoOr::Value(k)) if k <= fit => k.min(superblocks),
            (_, AutoOr::Auto) | (Some(Home::UBlock), AutoOr::Value(1)) => 1,
            (Some(Home::Pool), AutoOr::Value(k)) => {
                return Err(bad(
                    ID,
                    "superblocks_per_map_page",
                    k,
                    format!(
                        "a {}-byte map page holds the maps of at most {fit} superblocks of \
                         N = {n}, M = {m}",
                        geo.page_size
                    ),
                ))
            }
            (_, AutoOr::Value(k)) => {
                return Err(bad(
                    ID,
                    "superblocks_per_map_page",
                    k,
                    "applies to mapping = map_page with map_page_home = pool only \
                     (u_block keeps one superblock per map page)",
                ))
            }
        };
        let map_page_count = superblocks.div_ceil(k);
        let pool_blocks = match home {
            Some(Home::Pool) => {
                let (auto, least) = mappage::pool_blocks(map_page_count, geo.pages_per_block);
                match opts.map_pool_blocks {
                    AutoOr::Auto => auto,
                    AutoOr::Value(b) if b >= least => b,
                    AutoOr::Value(b) => {
                        return Err(bad(
                            ID,
                            "map_pool_blocks",
                            b,
                            format!(
                                "{map_page_count} map pages need at least {least} pool blocks \
                                 (the blocks they fill + 2)"
                            ),
                        ))
                    }
                }
            }
            _ => 0,
        };
        let reserve = if ip { n } else { 1 };
        let full_pages = snapshot::full_snapshot_pages(geo, lbns.div_ceil(n), n + m + reserve);
        let area = 2 * snapshot::half_blocks(geo, full_pages);
        // With map pages in U-blocks, a superblock whose data fills its N blocks needs one
        // more block for its map page; in a pool, the pool's blocks.
        let base = lbns
            + reserve
            + 1
            + match home {
                Some(Home::UBlock) => superblocks,
                Some(Home::Pool) => pool_blocks,
                _ => 0,
            };
        let snapshots = match opts.snapshots {
            Snapshots::Auto => !map_pages && geo.blocks > base + area,
            Snapshots::On => true,
            Snapshots::Off => false,
        };
        if snapshots && map_pages {
            return Err(bad(
                ID,
                "snapshots",
                opts.snapshots,
                format!(
                    "snapshots and recovery are not implemented with mapping = {}",
                    opts.mapping
                ),
            ));
        }
        let needed = base + if snapshots { area } else { 0 };
        if geo.blocks < needed {
            return Err(geometry_error(
                ID,
                format!(
                    "needs at least {needed} physical blocks (logical blocks + {reserve} \
                     reserved for merges + 1 free{}) but the geometry has {}; raise --op{}",
                    if snapshots {
                        format!(" + {area} for snapshots")
                    } else if home == Some(Home::UBlock) {
                        " + 1 per superblock for its map page".to_string()
                    } else if home == Some(Home::Pool) {
                        format!(" + {pool_blocks} for the map-page pool")
                    } else {
                        String::new()
                    },
                    geo.blocks,
                    if snapshots {
                        " or set snapshots = off"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let cfg = Cfg {
            n,
            max_blocks: n + m,
            row: n + m + reserve,
            hot_cold: opts.hot_cold.is_on(),
            ip,
            reserve,
            background: opts.background_merge.is_on(),
            background_free: opts.background_free_blocks,
        };
        let snap = snapshots
            .then(|| SnapLog::new(geo, 0, snapshot::half_blocks(geo, full_pages), full_pages));
        let mut f = Self::build(geo, lat, cfg, split, layout, entries, snap);
        if opts.wear_leveling != WearLeveling::Off {
            let mut worn = FreeBlocks::new(geo.blocks, 1, true);
            if opts.wear_leveling == WearLeveling::Static {
                if ip || map_pages {
                    return Err(bad(
                        ID,
                        "wear_leveling",
                        "static",
                        "static levelling needs placement = oop and mapping = spare \
                         (its move is an out-of-place SimpleCopyAndCompact); use dynamic",
                    ));
                }
                worn = worn.with_most_worn();
                f.wl = Some(StaticLeveling::new(geo.blocks, opts.wl_threshold));
                f.erased_at = vec![0; geo.blocks as usize];
            }
            f.free.iter().for_each(|b| worn.push(b, 0));
            f.free = worn;
        }
        if pool_blocks > 0 {
            let blocks: Vec<Pbn> = (0..pool_blocks)
                .map(|_| f.free.pop_if_any().expect("geometry checked"))
                .collect();
            for b in &blocks {
                f.owner[b.idx()] = OWN_MAP_POOL;
            }
            f.pool = Some(mappage::MapPool::new(blocks));
        }
        f.retirement = Retirement::new(ID, geo.blocks, opts.pe_limit, needed);
        if let Some(home) = home {
            let per_sb = ptes as usize;
            f.mappages = Some(mappage::MapPageCache::new(
                home,
                entries,
                map_page_count,
                k,
                per_sb,
                fmt,
            ));
            f.map_pgd = vec![NONE; map_page_count as usize];
            f.mpbuf = Vec::with_capacity(k as usize * per_sb);
            f.mpwords = Vec::with_capacity(geo.page_size as usize / 4);
        } else {
            f.mirror = mirror::Mirror::new(f.pgd.len(), split.pmd_len(), split.pt_len());
        }
        Ok(f)
    }

    /// The spare layout (SB-S) and the most blocks a superblock may use.
    fn block_limit(
        geo: &Geometry,
        split: &AddressSplit,
        ecc: Ecc,
        home: Option<Home>,
    ) -> Result<(Option<SpareLayout>, u32), SchemeError> {
        if home == Some(Home::Ram) {
            return Ok((None, mappage::RAM_LIMIT));
        }
        if home.is_some() {
            let ptes = split.n * (split.pmd_len() * split.pt_len()) as u32;
            let limit =
                mappage::map_page_limit(geo.page_size, ptes, geo.pages_per_block, geo.blocks)
                    .map_err(|why| bad(ID, "superblock_size", split.n, why))?;
            return Ok((None, limit));
        }
        let layout = SpareLayout::compute(geo.spare_bytes, geo.page_size, split, ecc, geo.blocks)
            .map_err(|why| {
            geometry_error(
                ID,
                format!(
                    "the SB-S spare layout (Table III) does not fit: {why}; use mapping = \
                         map_page, a larger nand_params.spare_bytes, ecc = slc, or a smaller \
                         pt_bits"
                ),
            )
        })?;
        Ok((Some(layout), layout.blocks_per_superblock()))
    }

    fn build(
        geo: &Geometry,
        lat: Latencies,
        cfg: Cfg,
        split: AddressSplit,
        layout: Option<SpareLayout>,
        entries: usize,
        snap: Option<SnapLog>,
    ) -> SuperblockFtl {
        let lbns = geo.logical_blocks();
        let superblocks = lbns.div_ceil(cfg.n);
        let mut owner = vec![OWN_FREE; geo.blocks as usize];
        if let Some(log) = &snap {
            for b in log.blocks() {
                owner[b.idx()] = OWN_SNAPSHOT;
            }
        }
        let mut pooled: VecDeque<Pbn> = (0..geo.blocks)
            .filter(|&b| owner[b as usize] == OWN_FREE)
            .map(Pbn)
            .collect();
        let reserved: Vec<Pbn> = (0..cfg.reserve)
            .map(|_| pooled.pop_back().expect("geometry checked"))
            .collect();
        let mut free = FreeBlocks::new(geo.blocks, 1, false);
        pooled.into_iter().for_each(|b| free.push(b, 0));
        for b in &reserved {
            owner[b.idx()] = OWN_RESERVED;
        }
        SuperblockFtl {
            geo: geo.clone(),
            lat,
            cfg,
            split,
            layout,
            superblocks,
            pgd: vec![NONE; lbns as usize],
            cache: MapCache::new(entries, lbns, split.pmd_len(), split.pt_len()),
            sb_blocks: vec![NONE; (superblocks * cfg.row) as usize],
            sb_len: vec![0; superblocks as usize],
            frontier: vec![NONE; superblocks as usize],
            nu: vec![0; superblocks as usize],
            owner,
            is_u: vec![false; geo.blocks as usize],
            hot: vec![false; geo.blocks as usize],
            free,
            reserved,
            retirement: Retirement::off(),
            wl: None,
            erased_at: Vec::new(),
            lru: Lru::new(superblocks),
            snap,
            frontier_wp: vec![0; superblocks as usize],
            recovery: None,
            mappages: None,
            pool: None,
            map_pgd: Vec::new(),
            mpbuf: Vec::new(),
            mpwords: Vec::new(),
            mirror: mirror::Mirror::default(),
            ws: merge::Workspace::new(cfg.n, split.pmd_len(), split.pt_len()),
            journal: None,
            journal_spares: true,
            scratch: Vec::with_capacity(cfg.max_blocks as usize),
            stats: FtlStats::default(),
            counters: Counters::default(),
        }
    }

    /// The spare layout in use (`None` with map pages).
    pub fn layout(&self) -> Option<&SpareLayout> {
        self.layout.as_ref()
    }

    /// The address split in use.
    pub fn address_split(&self) -> &AddressSplit {
        &self.split
    }

    /// Most physical blocks a superblock may own (N + M).
    pub fn max_blocks_per_superblock(&self) -> u32 {
        self.cfg.max_blocks
    }

    /// Logical blocks of superblock `sb` (N, or fewer for the last one).
    #[inline]
    fn lbns_of(&self, sb: u32) -> u32 {
        (self.geo.logical_blocks() - sb * self.cfg.n).min(self.cfg.n)
    }

    /// The blocks of superblock `sb`, in allocation order.
    #[inline]
    fn blocks_of(&self, sb: u32) -> &[u32] {
        let base = (sb * self.cfg.row) as usize;
        &self.sb_blocks[base..base + self.sb_len[sb as usize] as usize]
    }

    /// Physical blocks of superblock `sb`, in allocation order (for tests and reports).
    pub fn superblock_blocks(&self, sb: u32) -> Vec<Pbn> {
        self.blocks_of(sb).iter().map(|&b| Pbn(b)).collect()
    }

    /// Valid pages of superblock `sb`.
    fn valid_of(&self, flash: &Flash, sb: u32) -> u32 {
        self.blocks_of(sb)
            .iter()
            .map(|&b| flash.valid_count(Pbn(b)))
            .sum()
    }

    /// Adds block `b` to superblock `sb`.
    fn attach(&mut self, sb: u32, b: Pbn, as_u: bool) {
        let len = self.sb_len[sb as usize];
        assert!(
            len < self.cfg.row,
            "superblock {sb} already owns {len} blocks"
        );
        self.sb_blocks[(sb * self.cfg.row + len) as usize] = b.0;
        self.sb_len[sb as usize] = len + 1;
        if let Some(wl) = &mut self.wl {
            wl.sealed(b, self.erased_at[b.idx()]);
        }
        self.owner[b.idx()] = sb;
        self.is_u[b.idx()] = as_u;
        self.hot[b.idx()] = as_u;
        if as_u {
            self.nu[sb as usize] += 1;
            self.lru.touch(sb);
        }
    }

    /// Removes block `b` from superblock `sb` (RemoveFromSB).
    fn detach(&mut self, sb: u32, b: Pbn) {
        let base = (sb * self.cfg.row) as usize;
        let len = self.sb_len[sb as usize] as usize;
        let pos = self.sb_blocks[base..base + len]
            .iter()
            .position(|&x| x == b.0)
            .unwrap_or_else(|| panic!("{b:?} is not in superblock {sb}"));
        self.sb_blocks
            .copy_within(base + pos + 1..base + len, base + pos);
        self.sb_blocks[base + len - 1] = NONE;
        self.sb_len[sb as usize] -= 1;
        if let Some(wl) = &mut self.wl {
            wl.unsealed(b);
        }
        if self.is_u[b.idx()] {
            self.nu[sb as usize] -= 1;
            if self.nu[sb as usize] == 0 {
                self.lru.remove(sb);
            }
        }
        if self.frontier[sb as usize] == b.0 {
            self.frontier[sb as usize] = NONE;
        }
        self.owner[b.idx()] = OWN_FREE;
        self.is_u[b.idx()] = false;
        self.hot[b.idx()] = false;
    }

    /// When a merge leaves a superblock with exactly its N blocks, its U-blocks become
    /// D-blocks (§4.3).
    fn maybe_promote(&mut self, sb: u32) {
        if self.nu[sb as usize] > 0 && self.sb_len[sb as usize] == self.lbns_of(sb) {
            self.mark_all_d(sb, false);
        }
    }

    /// Static levelling: block `b` was just erased (a merge or a switch).
    fn wl_erased(&mut self, flash: &Flash, b: Pbn) {
        if let Some(wl) = &mut self.wl {
            let e = flash.erase_count(b);
            wl.erased(e);
            self.erased_at[b.idx()] = e;
        }
    }

    /// Static wear levelling after a host request (module docs): when the least-erased
    /// block a superblock owns has more than `wl_threshold` erases fewer than the
    /// most-erased block, and its superblock has room for one more block and no U-block
    /// with free pages, the most-worn free block becomes its U-block and the cold
    /// block is compacted into it (SimpleCopyAndCompact), then erased and freed.
    fn level(&mut self, flash: &mut Flash) {
        let Some(cold) = self.wl.as_ref().and_then(StaticLeveling::candidate) else {
            return;
        };
        let sb = self.owner[cold.idx()];
        if sb >= self.superblocks || self.sb_len[sb as usize] >= self.cfg.max_blocks {
            return;
        }
        let f = self.frontier[sb as usize];
        if f != NONE && flash.write_ptr(Pbn(f)) == 0 {
            // A U-block just opened: it is where the superblock's writes go next.
            return;
        }
        let Some((dst, e)) = self.free.pop_most_worn() else {
            return;
        };
        if e <= flash.erase_count(cold) {
            self.free.unpop(dst, e);
            return;
        }
        if f != NONE && !flash.is_full(Pbn(f)) {
            // Its free pages are abandoned (as MergeAll's InvalidateAllFreePages does):
            // the cold data get a block of their own. Abandoned without a valid page,
            // it is reclaimed at once (the switch merge `drop_page` skipped while it
            // was being written).
            self.frontier[sb as usize] = NONE;
            self.note(Event::Abandon { sb });
            if flash.valid_count(Pbn(f)) == 0 {
                self.reclaim_empty(flash, sb, Pbn(f));
                self.stats.merges_switch += 1;
                if f == cold.0 {
                    self.free.unpop(dst, e);
                    return;
                }
            }
        }
        let valid = flash.valid_count(cold) as u64;
        self.load_ws(flash, sb);
        self.attach(sb, dst, true);
        self.frontier[sb as usize] = dst.0;
        self.note_now(flash, Event::Alloc { sb, pbn: dst.0 });
        self.simple_copy_and_compact(flash, sb, cold);
        self.store_ws(flash, sb);
        self.maybe_promote(sb);
        if let Some(wl) = &mut self.wl {
            wl.moved(valid);
        }
    }

    /// Static levelling after a recovery: the blocks owned by superblocks, keyed by
    /// their erase counts on flash (the replay does not track them).
    fn rebuild_levelling(&mut self, flash: &Flash) {
        let Some(mut wl) = self.wl.take() else {
            return;
        };
        // The most erases outside the snapshot area (levelling leaves it alone).
        let max = (0..self.geo.blocks)
            .filter(|&b| self.owner[b as usize] != OWN_SNAPSHOT)
            .map(|b| flash.erase_count(Pbn(b)))
            .max()
            .unwrap_or(0);
        wl.recover(&[max]);
        self.erased_at.copy_from_slice(flash.erase_counts());
        for b in 0..self.geo.blocks {
            if self.owner[b as usize] < self.superblocks {
                wl.sealed(Pbn(b), flash.erase_count(Pbn(b)));
            }
        }
        self.wl = Some(wl);
    }

    /// Marks every block of `sb` a D-block (and cold, when `cold`).
    fn mark_all_d(&mut self, sb: u32, cold: bool) {
        self.note(Event::MarkD { sb, cold });
        let base = (sb * self.cfg.row) as usize;
        for k in 0..self.sb_len[sb as usize] as usize {
            let b = self.sb_blocks[base + k] as usize;
            self.is_u[b] = false;
            if cold {
                self.hot[b] = false;
            }
        }
        self.nu[sb as usize] = 0;
        self.lru.remove(sb);
    }

    /// Returns an erased block to the reserve (if short) or the free pool; says which.
    fn release(&mut self, flash: &Flash, b: Pbn) -> bool {
        if (self.reserved.len() as u32) < self.cfg.reserve {
            self.owner[b.idx()] = OWN_RESERVED;
            self.reserved.push(b);
            true
        } else {
            self.owner[b.idx()] = OWN_FREE;
            self.free.push(b, flash.erase_count(b));
            false
        }
    }

    /// Retires block `b`, just erased, if it is at the P/E limit (raising `WornOut` if
    /// too few blocks are left), and then refills the merge reserve from the free pool
    /// if it was short. The snapshot log still records `b` as released to the free
    /// pool: recovery retires it again from its erase count on flash
    /// ([`SuperblockFtl::retire_worn_pooled`]). Whether it retired.
    fn retire_if_worn(&mut self, flash: &Flash, b: Pbn) -> bool {
        if !self.retirement.erased(b, flash.erase_count(b)) {
            return false;
        }
        self.owner[b.idx()] = OWN_RETIRED;
        if (self.reserved.len() as u32) < self.cfg.reserve {
            if let Some(f) = self.free.pop_if_any() {
                self.owner[f.idx()] = OWN_RESERVED;
                self.reserved.push(f);
                self.note(Event::Release {
                    pbn: f.0,
                    to_reserved: true,
                });
            } else {
                // No free block to refill the merge reserve with: with a block retired
                // that is the end of the device (the swarm, seed 11 run 531, found the
                // reserve left short, which the next merge needing it cannot survive).
                self.retirement.exhausted();
            }
        }
        true
    }

    /// Recovery: the pooled blocks at the P/E limit retire again (the erase counts are
    /// on flash), and the reserve is refilled from the free pool.
    fn retire_worn_pooled(&mut self, flash: &Flash) {
        self.retirement.clear();
        if self.retirement.pe_limit() == 0 {
            return;
        }
        let worn = |b: &Pbn| self.retirement.reached(flash.erase_count(*b));
        let gone: Vec<Pbn> = (self.free.iter())
            .chain(self.reserved.iter().copied())
            .filter(worn)
            .collect();
        gone.iter().for_each(|&b| {
            self.free.remove(b);
        });
        self.reserved.retain(|b| !gone.contains(b));
        for b in gone {
            self.owner[b.idx()] = OWN_RETIRED;
            self.retirement.erased(b, flash.erase_count(b));
        }
        while (self.reserved.len() as u32) < self.cfg.reserve {
            let Some(f) = self.free.pop_if_any() else {
                break;
            };
            self.owner[f.idx()] = OWN_RESERVED;
            self.reserved.push(f);
        }
    }

    /// Records the utilisation of a U-block chosen as a merge victim (U_avg, §5.1).
    fn sample_u(&mut self, flash: &Flash, b: Pbn) {
        if self.is_u[b.idx()] {
            self.counters.u_victims += 1;
            self.counters.u_pages_written += flash.write_ptr(b) as u64;
        }
    }

    /// Invalidates a page and reclaims its block at once if that left it without valid
    /// pages (switch merge, §4.3 situation (i)), unless it is still being written.
    fn drop_page(&mut self, flash: &mut Flash, ppn: Ppn) {
        flash.invalidate(ppn);
        let b = self.geo.block_of(ppn);
        if flash.valid_count(b) > 0 {
            return;
        }
        let sb = self.owner[b.idx()];
        debug_assert!(sb < self.superblocks, "{b:?} owned by {sb}");
        if self.frontier[sb as usize] == b.0 && !flash.is_full(b) {
            return;
        }
        self.reclaim_empty(flash, sb, b);
        self.stats.merges_switch += 1;
        self.maybe_promote(sb);
    }

    /// Erases block `b` of superblock `sb`, which holds no valid page any more: samples
    /// its utilisation, detaches it and returns it to the reserve or the free pool.
    fn reclaim_empty(&mut self, flash: &mut Flash, sb: u32, b: Pbn) {
        self.sample_u(flash, b);
        self.detach(sb, b);
        flash.erase(b, Cause::Merge);
        self.wl_erased(flash, b);
        let to_reserved = !self.retire_if_worn(flash, b) && self.release(flash, b);
        self.note(Event::Release {
            pbn: b.0,
            to_reserved,
        });
    }

    /// The next page of superblock `sb`'s current U-block, allocating a new U-block (and
    /// merging first, if the superblock is at its limit or no block is free).
    fn frontier_page(&mut self, flash: &mut Flash, sb: u32) -> Ppn {
        for _ in 0..64 {
            let f = self.frontier[sb as usize];
            if f != NONE {
                if !flash.is_full(Pbn(f)) {
                    return self.geo.ppn(Pbn(f), flash.write_ptr(Pbn(f)));
                }
                self.frontier[sb as usize] = NONE;
            }
            if self.sb_len[sb as usize] >= self.cfg.max_blocks {
                self.merge_some(flash, sb);
            } else if self.free.is_empty() {
                self.make_free_block(flash);
            } else {
                let b = self.free.pop_if_any().expect("checked non-empty");
                debug_assert!(flash.is_erased(b));
                self.attach(sb, b, true);
                self.frontier[sb as usize] = b.0;
                self.note_now(flash, Event::Alloc { sb, pbn: b.0 });
            }
        }
        self.retirement.exhausted();
        panic!("superblock {sb}: no write frontier after 64 merge rounds");
    }

    /// Runs MergeAll on victims until a free block exists (§4.3 situation (iii)).
    fn make_free_block(&mut self, flash: &mut Flash) {
        while self.free.is_empty() {
            let Some(victim) = self.merge_all_victim(flash) else {
                self.retirement.exhausted();
                panic!("superblock: no block to reclaim (over-provisioning broken)");
            };
            self.merge_all(flash, victim);
            let f = self.frontier[victim as usize];
            if self.free.is_empty()
                && self.mappages.is_none()
                && f != NONE
                && flash.write_ptr(Pbn(f)) == 0
                && self.excess_blocks(flash, victim) > 0
            {
                self.release_empty_u_block(flash, victim);
            }
        }
    }

    /// After a MergeAll of `sb` (map in spare areas) that freed no block while `sb`
    /// still owns more blocks than its pages need and its U-block is opened and never
    /// written (static levelling and recovery leave one): MergeAll keeps that block as
    /// the one being written (Fig. 11) and changes nothing else, so the same victim
    /// would be chosen forever (the swarm, seed 101 run 11536). It holds nothing, so it
    /// is released. (With map pages a MergeAll writes the map, so that state does not
    /// repeat and nothing is released.)
    fn release_empty_u_block(&mut self, flash: &Flash, sb: u32) {
        let f = self.frontier[sb as usize];
        debug_assert!(f != NONE && flash.write_ptr(Pbn(f)) == 0);
        self.frontier[sb as usize] = NONE;
        self.note(Event::Abandon { sb });
        self.detach(sb, Pbn(f));
        self.note(Event::Detach { sb, pbn: f });
        let to_reserved = self.release(flash, Pbn(f));
        self.note(Event::Release {
            pbn: f,
            to_reserved,
        });
    }

    /// The least recently written superblock owning U-blocks whose MergeAll frees a
    /// block, else the one with the most reclaimable blocks.
    fn merge_all_victim(&self, flash: &Flash) -> Option<u32> {
        self.lru
            .iter()
            .rev()
            .find(|&sb| self.excess_blocks(flash, sb) > 0)
            .or_else(|| self.most_reclaimable(flash))
    }

    /// Blocks superblock `sb` needs after a MergeAll: `ceil(valid / pages_per_block)`
    /// out of place, one per logical block holding data in place.
    fn need_blocks(&self, flash: &Flash, sb: u32) -> u32 {
        if self.cfg.ip {
            (0..self.lbns_of(sb))
                .filter(|&k| self.pgd[(sb * self.cfg.n + k) as usize] != NONE)
                .count() as u32
        } else {
            self.valid_of(flash, sb).div_ceil(self.geo.pages_per_block)
        }
    }

    /// Blocks a MergeAll of `sb` would free.
    fn excess_blocks(&self, flash: &Flash, sb: u32) -> u32 {
        self.sb_len[sb as usize].saturating_sub(self.need_blocks(flash, sb))
    }

    /// The superblock with the most blocks beyond what its valid pages need.
    fn most_reclaimable(&self, flash: &Flash) -> Option<u32> {
        (0..self.superblocks)
            .map(|sb| (self.excess_blocks(flash, sb), sb))
            .filter(|&(excess, _)| excess > 0)
            .max_by_key(|&(excess, sb)| (excess, std::cmp::Reverse(sb)))
            .map(|(_, sb)| sb)
    }

    /// The map cache slot of `(lbn, i)`, reading the spares on a miss.
    fn lookup(&mut self, flash: &mut Flash, lbn: u32, i: u32) -> usize {
        if let Some(s) = self.cache.get(lbn, i) {
            self.stats.map_hits += 1;
            return s;
        }
        self.stats.map_misses += 1;
        let s = self.cache.insert(lbn, i);
        let head = self.pgd[lbn as usize];
        let mut read_head = false;
        if let Some(o) = self.cache.any_of_lbn(lbn, s) {
            self.cache.copy_pmd(o, s);
        } else if head != NONE {
            flash.read_spare(Ppn(head), Cause::Map);
            self.counters.map_spare_reads += 1;
            read_head = true;
            debug_assert!(
                !flash.keeps_recovery_data()
                    || self.mirror.pmd(lbn) == spare_pmd(flash, head, self.split.pmd_len())
            );
            self.cache.pmd_mut(s).copy_from_slice(self.mirror.pmd(lbn));
        } else {
            self.cache.pmd_mut(s).fill(NONE);
        }
        let loc = self.cache.pmd(s)[i as usize];
        if loc == NONE {
            self.cache.pt_mut(s).fill(NONE);
        } else {
            if !(read_head && loc == head) {
                flash.read_spare(Ppn(loc), Cause::Map);
                self.counters.map_spare_reads += 1;
            }
            debug_assert!(
                !flash.keeps_recovery_data()
                    || self.mirror.pt(lbn, i as usize)
                        == spare_pt(flash, loc, self.split.pmd_len())
            );
            self.cache
                .pt_mut(s)
                .copy_from_slice(self.mirror.pt(lbn, i as usize));
        }
        s
    }
}

impl SuperblockFtl {
    /// Makes `dst` the live copy of the page `sp` whose map entry is in cache slot `s`:
    /// updates the PT, the PMD (in every cached entry of the block) and the PGD, and
    /// programs `tag` at `dst` with the PMD and PT in its spare area.
    fn place(
        &mut self,
        flash: &mut Flash,
        s: usize,
        sp: Split,
        dst: Ppn,
        tag: PageTag,
        cause: Cause,
    ) {
        self.cache.pt_mut(s)[sp.pte_index as usize] = dst.0;
        self.cache
            .set_pmd_entry(sp.lbn, sp.pmd_index as usize, dst.0);
        self.pgd[sp.lbn as usize] = dst.0;
        // The PMD and the PT go straight into the page's spare (no staging copy).
        flash.program_with_spare_parts(dst, tag, self.cache.pmd(s), self.cache.pt(s), cause);
        self.mirror.set(
            sp.lbn,
            sp.pmd_index as usize,
            self.cache.pmd(s),
            self.cache.pt(s),
        );
    }

    /// Index of a page's entry in its superblock's map page.
    #[inline]
    fn map_index(&self, sp: Split) -> usize {
        let per_lbn = self.split.pmd_len() * self.split.pt_len();
        self.region(sp.superblock) + sp.pgd_index as usize * per_lbn + sp.lpn_offset(self.split.t)
    }

    /// One host page write with map pages (SB-P).
    fn host_write_mp(&mut self, flash: &mut Flash, tag: PageTag) {
        let sp = self.split.split(tag.lpn.0);
        let s = self.map_lookup(flash, sp.superblock);
        let dst = self.frontier_page(flash, sp.superblock);
        let e = self.map_index(sp);
        let c = self.mappages.as_mut().expect("map_page mode");
        let old = c.map(s)[e];
        flash.program(dst, tag, Cause::Host);
        c.map_mut(s)[e] = dst.0;
        if old != NONE {
            self.drop_page(flash, Ppn(old));
        }
    }

    /// One host page write: logged into the superblock's current U-block.
    fn host_write(&mut self, flash: &mut Flash, tag: PageTag) {
        let sp = self.split.split(tag.lpn.0);
        if self.lru.contains(sp.superblock) {
            self.lru.touch(sp.superblock);
        }
        if self.mappages.is_some() {
            return self.host_write_mp(flash, tag);
        }
        let dst = self.frontier_page(flash, sp.superblock);
        let s = self.lookup(flash, sp.lbn, sp.pmd_index);
        let old = self.cache.pt(s)[sp.pte_index as usize];
        self.place(flash, s, sp, dst, tag, Cause::Host);
        self.note(Event::Write {
            lpn: tag.lpn.0,
            ppn: dst.0,
        });
        if old != NONE {
            self.drop_page(flash, Ppn(old));
        }
    }

    /// Unmaps a page. The PT in flash still maps it, so a valid page of the same PT (or,
    /// if the PT became empty, of the same logical block) is rewritten to carry the
    /// updated PT and PMD.
    fn trim_page(&mut self, flash: &mut Flash, lpn: Lpn) {
        let sp = self.split.split(lpn.0);
        if self.mappages.is_some() {
            let s = self.map_lookup(flash, sp.superblock);
            let e = self.map_index(sp);
            let c = self.mappages.as_mut().expect("map_page mode");
            let old = c.map(s)[e];
            if old != NONE {
                c.map_mut(s)[e] = NONE;
                self.drop_page(flash, Ppn(old));
            }
            return;
        }
        let (lbn, i, j) = (sp.lbn, sp.pmd_index as usize, sp.pte_index as usize);
        let s = self.lookup(flash, lbn, sp.pmd_index);
        if self.cache.pt(s)[j] == NONE {
            return;
        }
        let dst = self.frontier_page(flash, sp.superblock);
        let old = self.cache.pt(s)[j];
        self.cache.pt_mut(s)[j] = NONE;
        let (cs, ci, cj) = match self.cache.pt(s).iter().position(|&p| p != NONE) {
            Some(cj) => (s, i, cj),
            None => {
                self.cache.set_pmd_entry(lbn, i, NONE);
                let Some(ci) = self.cache.pmd(s).iter().position(|&p| p != NONE) else {
                    // The logical block holds no page any more: logged before the
                    // drop, which may erase the block of its last page (the PGD's
                    // target; a power cut inside that erase must not leave the log
                    // pointing there).
                    self.pgd[lbn as usize] = NONE;
                    self.note_now(flash, Event::LbnEmpty { lbn });
                    self.drop_page(flash, Ppn(old));
                    return;
                };
                let cs = self.lookup(flash, lbn, ci as u32);
                // The PMD may have come from the spare, which still lists the empty PT.
                self.cache.set_pmd_entry(lbn, i, NONE);
                let cj = self
                    .cache
                    .pt(cs)
                    .iter()
                    .position(|&p| p != NONE)
                    .expect("a PMD entry points to a PT with live pages");
                (cs, ci, cj)
            }
        };
        let src = Ppn(self.cache.pt(cs)[cj]);
        let tag = flash.read(src, Cause::Map);
        let carrier = Split {
            pmd_index: ci as u32,
            pte_index: cj as u32,
            ..sp
        };
        debug_assert_eq!(
            tag.lpn.0,
            lbn * self.geo.pages_per_block + ((ci as u32) << self.split.t) + cj as u32
        );
        self.place(flash, cs, carrier, dst, tag, Cause::Map);
        self.note(Event::Write {
            lpn: tag.lpn.0,
            ppn: dst.0,
        });
        self.counters.trim_copies += 1;
        self.drop_page(flash, src);
        self.drop_page(flash, Ppn(old));
    }

    /// Checks the spare-resident map of every logical block against flash (as the
    /// mirror stands for it when the flash keeps no spare words), and returns the number
    /// of pages it maps.
    fn check_chains(&self, flash: &Flash) -> Result<u64, String> {
        let ppb = self.geo.pages_per_block;
        let live = |p: u32, what: &str| -> Result<PageTag, String> {
            if p as u64 >= self.geo.physical_pages() as u64 || !flash.is_valid(Ppn(p)) {
                return Err(format!("{what} at ppn{p}, which is not a valid page"));
            }
            Ok(flash.peek_tag(Ppn(p)).expect("valid pages are programmed"))
        };
        let mut mapped = 0u64;
        for lbn in 0..self.pgd.len() as u32 {
            let head = self.pgd[lbn as usize];
            if head == NONE {
                continue;
            }
            let t = live(head, &format!("PMD of lbn{lbn}"))?;
            let hs = self.split.split(t.lpn.0);
            let pmd = self.chain_pmd(flash, lbn, head);
            if hs.lbn != lbn || pmd[hs.pmd_index as usize] != head {
                return Err(format!("lbn{lbn}: PGD points to ppn{head} holding {t:?}"));
            }
            if pmd.iter().all(|&p| p == NONE) {
                return Err(format!("lbn{lbn}: PGD set but its PMD is empty"));
            }
            for (i, &loc) in pmd.iter().enumerate() {
                if loc == NONE {
                    continue;
                }
                let t = live(loc, &format!("PT {i} of lbn{lbn}"))?;
                let ts = self.split.split(t.lpn.0);
                if ts.lbn != lbn || ts.pmd_index as usize != i {
                    return Err(format!("lbn{lbn}: PT {i} at ppn{loc} holding {t:?}"));
                }
                let pt = self.chain_pt(flash, lbn, i, loc);
                if pt.iter().all(|&p| p == NONE) {
                    return Err(format!("lbn{lbn}: PT {i} at ppn{loc} maps nothing"));
                }
                for (j, &p) in pt.iter().enumerate() {
                    if p == NONE {
                        continue;
                    }
                    let lpn = lbn * ppb + ((i as u32) << self.split.t) + j as u32;
                    let t = live(p, &format!("lpn{lpn}"))?;
                    if t.lpn.0 != lpn {
                        return Err(format!("lpn{lpn} maps to ppn{p} holding {t:?}"));
                    }
                    let b = self.geo.block_of(Ppn(p));
                    if self.owner[b.idx()] != lbn / self.cfg.n {
                        return Err(format!("lpn{lpn} lives in {b:?} of another owner"));
                    }
                    mapped += 1;
                }
            }
        }
        for (lbn, i, s) in self.cache.entries() {
            let head = self.pgd[lbn as usize];
            let (pmd, pt): (Vec<u32>, Option<Vec<u32>>) = if head == NONE {
                (Vec::new(), None)
            } else {
                let pmd = self.chain_pmd(flash, lbn, head);
                let loc = pmd[i as usize];
                (
                    pmd,
                    (loc != NONE).then(|| self.chain_pt(flash, lbn, i as usize, loc)),
                )
            };
            let pmd_ok = if head == NONE {
                self.cache.pmd(s).iter().all(|&p| p == NONE)
            } else {
                self.cache.pmd(s) == pmd
            };
            let pt_ok = match pt {
                Some(pt) => self.cache.pt(s) == pt,
                None => self.cache.pt(s).iter().all(|&p| p == NONE),
            };
            if !pmd_ok || !pt_ok {
                return Err(format!(
                    "cache entry (lbn{lbn}, {i}) differs from the spares"
                ));
            }
        }
        Ok(mapped)
    }

    /// Checks the block lists, pools and LRU list.
    fn check_blocks(&self, flash: &Flash) -> Result<(), String> {
        if self.ws.is_loaded() {
            return Err("a merge work area is still loaded".into());
        }
        let mut seen = vec![false; self.geo.blocks as usize];
        for sb in 0..self.superblocks {
            let blocks = self.blocks_of(sb);
            if blocks.len() as u32 > self.cfg.max_blocks {
                return Err(format!("superblock {sb} owns {} blocks", blocks.len()));
            }
            let mut nu = 0;
            for &b in blocks {
                if self.owner[b as usize] != sb || seen[b as usize] {
                    return Err(format!(
                        "pbn{b} listed in superblock {sb} but owned elsewhere"
                    ));
                }
                seen[b as usize] = true;
                nu += self.is_u[b as usize] as u32;
                let written = flash.write_ptr(Pbn(b));
                if flash.valid_count(Pbn(b)) == 0
                    && !(self.frontier[sb as usize] == b && written < self.geo.pages_per_block)
                {
                    return Err(format!("pbn{b} of superblock {sb} holds no valid page"));
                }
                for off in 0..written {
                    let p = self.geo.ppn(Pbn(b), off);
                    if flash.is_valid(p) {
                        let t = flash.peek_tag(p).expect("programmed");
                        let owner = if t.lpn.0 == mappage::MAP_LPN {
                            t.version
                        } else {
                            self.split.split(t.lpn.0).superblock
                        };
                        if owner != sb {
                            return Err(format!("{p:?} in superblock {sb} holds {t:?}"));
                        }
                    }
                }
            }
            if nu != self.nu[sb as usize] || (nu > 0) != self.lru.contains(sb) {
                return Err(format!(
                    "superblock {sb}: U-block count or LRU membership wrong"
                ));
            }
            let f = self.frontier[sb as usize];
            if f != NONE && !blocks.contains(&f) {
                return Err(format!("superblock {sb}: frontier pbn{f} not in its list"));
            }
        }
        for b in self.free.iter() {
            if self.owner[b.idx()] != OWN_FREE || seen[b.idx()] || !flash.is_erased(b) {
                return Err(format!("free {b:?} is in use or not erased"));
            }
            seen[b.idx()] = true;
        }
        for b in &self.reserved {
            if self.owner[b.idx()] != OWN_RESERVED || seen[b.idx()] || !flash.is_erased(*b) {
                return Err(format!("reserved {b:?} is in use or not erased"));
            }
            seen[b.idx()] = true;
        }
        for b in self.retirement.retired() {
            if self.owner[b.idx()] != OWN_RETIRED || seen[b.idx()] || !flash.is_erased(*b) {
                return Err(format!("retired {b:?} is in use or not erased"));
            }
            seen[b.idx()] = true;
        }
        if self.reserved.len() as u32 != self.cfg.reserve {
            return Err(format!("{} reserved blocks", self.reserved.len()));
        }
        self.check_pool(flash, &mut seen)?;
        if let Some(log) = &self.snap {
            for b in log.blocks() {
                if self.owner[b.idx()] != OWN_SNAPSHOT || seen[b.idx()] {
                    return Err(format!("snapshot {b:?} is also in use"));
                }
                seen[b.idx()] = true;
            }
        }
        if let Some(b) = seen.iter().position(|&s| !s) {
            return Err(format!("pbn{b} is in no superblock and no pool"));
        }
        for sb in self.lru.iter() {
            if self.nu[sb as usize] == 0 {
                return Err(format!(
                    "superblock {sb} is in the LRU list without U-blocks"
                ));
            }
        }
        Ok(())
    }
}

impl Ftl for SuperblockFtl {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        for &tag in pages {
            self.host_write(flash, tag);
        }
        if self.wl.is_some() {
            self.level(flash);
        }
        self.snap_tick(flash);
    }

    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        let sp = self.split.split(lpn.0);
        if self.mappages.is_some() {
            let s = self.map_lookup(flash, sp.superblock);
            let e = self.map_index(sp);
            let p = self.mappages.as_ref().expect("map_page mode").map(s)[e];
            return (p != NONE).then(|| flash.read(Ppn(p), Cause::Host));
        }
        let s = self.lookup(flash, sp.lbn, sp.pmd_index);
        let p = self.cache.pt(s)[sp.pte_index as usize];
        (p != NONE).then(|| flash.read(Ppn(p), Cause::Host))
    }

    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.trim_page(flash, lpn);
        self.snap_tick(flash);
    }

    fn flush(&mut self, flash: &mut Flash) {
        self.snap_flush(flash);
    }

    fn recover(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        // The replay attaches and detaches blocks in the log's order: levelling's set is
        // rebuilt after it instead.
        let wl = self.wl.take();
        let done = self.recover_from_flash(flash);
        self.wl = wl;
        self.rebuild_levelling(flash);
        done
    }

    /// Recovery needs the snapshots (§4.4): without them the PGD and the block lists
    /// live only in RAM.
    fn recovers(&self) -> bool {
        self.snap.is_some()
    }

    fn idle(&mut self, flash: &mut Flash, budget: &mut IdleBudget) {
        if !self.cfg.background {
            return;
        }
        while (self.free.len() as u32) < self.cfg.background_free {
            let Some(sb) = self.merge_all_victim(flash) else {
                break;
            };
            let (reads, programs, erases) = self.merge_all_estimate(flash, sb);
            if !budget.try_spend(reads, programs, erases) {
                break;
            }
            self.merge_all(flash, sb);
            self.counters.background_merges += 1;
        }
        self.snap_tick(flash);
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        self.check_blocks(flash)?;
        let mapped = if self.mappages.is_some() {
            self.check_map_pages(flash)?
        } else {
            self.check_chains(flash)?
        };
        let snapshot_pages = self.snap.as_ref().map_or(0, |l| l.valid_pages());
        if mapped + snapshot_pages != flash.total_valid() {
            return Err(format!(
                "{mapped} mapped pages + {snapshot_pages} snapshot pages but {} valid pages \
                 on flash",
                flash.total_valid()
            ));
        }
        Ok(())
    }

    fn stats(&self) -> FtlStats {
        let mut s = self.stats.clone();
        self.retirement.report(&mut s.extra);
        if let Some(wl) = &self.wl {
            wl.report(&mut s.extra);
        }
        let c = &self.counters;
        let count = s.merges_switch + s.merges_partial + s.merges_full;
        let l = &self.lat;
        let cost = s.merge_pages_copied * (l.read.0 + l.program.0) + count * l.erase.0;
        s.extra.counter("merge_count", "merges", count as f64);
        if count > 0 {
            s.extra
                .gauge("merge_cost_avg_ns", "ns", cost as f64 / count as f64);
        }
        if c.u_victims > 0 {
            s.extra.gauge(
                "u_avg",
                "ratio",
                c.u_pages_written as f64 / (c.u_victims as f64 * self.geo.pages_per_block as f64),
            );
        }
        s.extra
            .counter("merges_some", "merges", c.merges_some as f64);
        s.extra.counter("merges_all", "merges", c.merges_all as f64);
        s.extra
            .counter("map_spare_reads", "reads", c.map_spare_reads as f64);
        s.extra.counter(
            "merge_map_spare_reads",
            "reads",
            c.merge_map_spare_reads as f64,
        );
        s.extra
            .counter("trim_copies", "pages", c.trim_copies as f64);
        s.extra
            .counter("background_merges", "merges", c.background_merges as f64);
        s.extra
            .counter("ip_filler_pages", "pages", c.ip_filler_pages as f64);
        s.extra
            .gauge("placement_ip", "flag", self.cfg.ip as u8 as f64);
        s.extra
            .gauge("superblock_size", "blocks", self.cfg.n as f64);
        s.extra.gauge(
            "blocks_per_superblock_max",
            "blocks",
            self.cfg.max_blocks as f64,
        );
        if let Some(l) = &self.layout {
            s.extra
                .gauge("pbmt_entries", "entries", l.pbmt_entries as f64);
        }
        s.extra.gauge(
            "map_pages",
            "flag",
            matches!(self.home(), Some(Home::Pool | Home::UBlock)) as u8 as f64,
        );
        if let Some(c) = &self.mappages {
            if c.home == Home::Ram {
                s.extra.gauge("map_in_ram", "flag", 1.0);
            } else {
                s.extra
                    .gauge("superblocks_per_map_page", "superblocks", c.k as f64);
            }
        }
        if let Some(pool) = &self.pool {
            s.extra
                .gauge("map_pool_blocks", "blocks", pool.blocks.len() as f64);
            s.extra
                .counter("map_pool_gc_copies", "pages", pool.gc_copies as f64);
            s.extra
                .counter("map_pool_gc_erases", "erases", pool.gc_erases as f64);
        }
        s.extra
            .gauge("snapshots", "flag", self.snap.is_some() as u8 as f64);
        if let Some(log) = &self.snap {
            s.extra
                .counter("snapshot_pages", "pages", log.pages_written as f64);
            s.extra
                .counter("full_snapshots", "snapshots", log.full_snapshots as f64);
            s.extra.counter(
                "partial_snapshots",
                "snapshots",
                log.partial_snapshots as f64,
            );
        }
        s
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.counters = Counters::default();
        if let Some(pool) = &mut self.pool {
            pool.gc_copies = 0;
            pool.gc_erases = 0;
        }
        if let Some(wl) = &mut self.wl {
            wl.reset_stats();
        }
        if let Some(log) = &mut self.snap {
            log.pages_written = 0;
            log.full_snapshots = 0;
            log.partial_snapshots = 0;
        }
    }

    fn mapping_bytes(&self) -> u64 {
        match &self.mappages {
            Some(c) if c.home == Home::Ram => {
                self.geo.logical_pages as u64 * 4 + self.map_pgd.len() as u64 * 4
            }
            Some(c) => {
                self.map_pgd.len() as u64 * 4 + (c.entries() * self.geo.page_size as usize) as u64
            }
            None => self.pgd.len() as u64 * 4 + self.cache.bytes(),
        }
    }
}
