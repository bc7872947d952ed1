//! `cach`: CACH-FTL, the cache-aware configurable hybrid FTL of cach-ftl.txt §4
//! (Boukhobza, Olivier and Rubini), designed to sit below a flash-aware cache such as
//! C-lash (cach-ftl.txt §4.1).
//!
//! The flash is split into a block-mapped region (BMR) that holds the logical space, one
//! physical block per logical block at fixed page offsets, and a page-mapped region
//! (PMR) in the over-provisioned blocks. A group of pages of one logical block written in
//! one call (a cache flush) goes to the BMR if it has more pages than the redirection
//! threshold (Function 2: the block's other valid pages are read from the BMR and the
//! PMR, the block is erased and rewritten in place), else to the PMR (Function 3, an
//! append at the PMR's write frontier). Reads look in the BMR first (its validity bit),
//! then in the PMR (§4.2.1). PMR-GC reclaims the PMR block with the most invalid pages
//! (Function 5); when no PMR block has an invalid page, BMR-GC moves the largest PMR
//! group of one logical block back into its BMR block together with that block's BMR
//! pages (Function 6). GC runs synchronously, uninterruptibly, when a PMR write would
//! leave `sync_free_blocks` or less of free space (Function 3), and asynchronously in
//! idle time, interruptibly at the phase boundaries of §4.3.3, while the PMR's free space
//! is at most `async_free_percent` of it (Function 4).
//!
//! Choices the paper leaves open, as options or documented defaults:
//! - `threshold` (4): "a redirection threshold of four pages" (§5.1); a group of more
//!   than `threshold` pages goes to the BMR ("if (NbPagesEvict > NbPagesThreshold)",
//!   Function 1, line 9). Values of at least the pages per block send every host group to
//!   the PMR; 0 sends every group to the BMR.
//! - `pmr_percent` (`auto`): the paper's PMR is "an over-provisioning region" next to a
//!   BMR whose "size dictates the addressable space" (§4), "10% of the flash space" in
//!   §5.1. ftlab's device has `logical blocks * (1 + op/100)` blocks, so `auto` gives the
//!   PMR every block beyond the BMR (the paper's 10% is `--op 11.12`); a number takes that
//!   percentage of the physical blocks and is refused if it does not fit.
//! - `sync_free_blocks` (`auto` = min(3, PMR blocks - 2)): "fixed to three blocks"
//!   (§4.3.3), capped so a small PMR still has an active block and a victim. The
//!   condition of Function 3, line 29, "FreePages_PMR - GroupPages > SyncFreeP", counts
//!   free pages (erased blocks plus the active block's unwritten tail) against
//!   `sync_free_blocks * pages_per_block`. When it fails, GC steps run until it holds
//!   (Function 5 instead counts reclaimed invalid pages against the group size; the
//!   condition is what that count is meant to restore, and it cannot end below it).
//! - `pmr_gc_min_invalid` (1): Algorithm 2 runs BMR-GC only when "no BlockMaxInvalid
//!   found //no invalid pages in PMR" (line 24), while §4.3.2 says "whenever the PMR-GC
//!   cannot find any physical block containing enough invalid pages to recycle". The
//!   default follows the algorithm (a victim needs one invalid page); a larger value is
//!   the text's "enough".
//! - `async_free_percent` (10): "This percentage threshold was fixed at 10%" (§4.3.3);
//!   idle-time GC starts while free pages are at most that share of the PMR's pages and
//!   stops when they exceed it or the idle gap is spent. `async_gc` (true) turns it off.
//! - Interruption points (§4.3.3): PMR-GC in three phases (read the victim's valid pages
//!   into RAM; program them to the PMR frontier; switch the map, invalidate the old
//!   copies and erase the victim); BMR-GC in five (read the group from the PMR; read the
//!   block's BMR pages; invalidate both, after which reads of that block are served from
//!   the RAM copy; erase; program the block). Each phase is atomic and starts in idle
//!   time only if its serial cost fits what is left of the gap ([`IdleBudget`]). A pending
//!   job is finished in the foreground before any synchronous GC, and on a host
//!   flush-cache if its data lives only in RAM; a host write or trim of the block of a
//!   pending BMR-GC job aborts it before its invalidation phase and finishes it after.
//!   A page overwritten while a PMR-GC job holds it is not copied (or its copy is
//!   dropped at the switch).
//! - `bmr_update` (`in_place`): "a simple direct (block) mapping in-place update
//!   algorithm was used" (§4.2.3). `out_of_place` writes the new image to an erased spare
//!   block, remaps the logical block and erases the old one later (in idle time with
//!   `async_gc`, else when a block is needed); it reserves one over-provisioned block.
//! - An erase of a BMR block that was never programmed since its last erase is skipped.
//! - ftlab's NAND refuses out-of-order programs, so a BMR block is programmed from
//!   offset 0 up to its last page holding data; offsets with no data below it get a
//!   filler page (cause `padding`, invalidated at once, counted as `filler_programs`).
//! - Flash causes: host pages of a BMR write are `host`; the pages a BMR update or BMR-GC
//!   reads and rewrites and the BMR erases are `merge`; PMR-GC is `gc`. A BMR update
//!   that rewrote at least one old page counts as a full merge, one that rewrote none as
//!   a switch merge.
//! - Mapping RAM: the BMR table (4 bytes per logical block) and its validity bits (1 bit
//!   per logical page, §4.2.1), plus the PMR page table, a hash table of (LPN, PPN) pairs
//!   sized for every PMR page at a load of 3/4 ([`U32Map`]). `ftl.extra.map_bytes_paper`
//!   gives the paper's count instead: one 4-byte entry per logical block and per PMR page.
//!   The GC indexes (greedy victim and largest group) are bookkeeping, not counted, as
//!   for `page`.
//!
//! - `power_safe_bmr_gc` (false): §4.3.3 lets an idle-time BMR-GC stop after "Line 41,
//!   the block is erased" and program the block in a later gap (Line 42). In place, the
//!   block's BMR pages then live only in the "dedicated cache block" in RAM, so a power
//!   loss there loses them: [`Ftl::volatile_pages`] reports them and the engine counts
//!   them as lost (`power_loss.lost_pages`). `true` starts that erase only when the
//!   program after it fits the same gap, which closes the window between requests,
//!   and stages the pages in the PMR first, which closes it inside the erase and the
//!   program too (see Torn operations below); out of place there is no window (the old
//!   block stays mapped until the new one is programmed).
//! - Wear levelling (issue 23 item 3; "Adding a wear leveler into CACH-FTL is also
//!   beyond the scope of this paper", §4.2.3): `wear_leveling = "off"` (default: free
//!   PMR blocks and out-of-place BMR spares first-in first-out) or `"dynamic"` (the
//!   least-erased free block first, ties by the lowest number; [`ftlab_core::wear`]).
//!   In place, a BMR block's address is its logical block's, so only the PMR levels.
//!   `"static"`: dynamic, and after each host request with no GC job pending, at most
//!   one move per region, each region levelled against its own most-erased block (the
//!   regions are fixed ranges of blocks, which recovery relies on, so wear never
//!   crosses between them: a device-wide spread, PMR against BMR, stays). Choices made
//!   here: in the PMR, when its least-erased sealed block has more than `wl_threshold`
//!   (default 16) erases fewer than the PMR's most-erased block, that block is
//!   collected by PMR-GC (its valid pages go to the PMR frontier; only if they leave
//!   the synchronous reserve free), counted as a PMR-GC run and as a levelling move;
//!   PMR data is transient (BMR-GC drains it), so no destination is chosen for it. In
//!   the BMR, out of place only: when the least-erased block mapped to a logical block
//!   has more than `wl_threshold` erases fewer than the BMR's most-erased block, and
//!   the block the move would take has more erases than it (the most-worn erased
//!   spare, else the next old block waiting for its erase, erased then), the logical
//!   block is rewritten there by an out-of-place BMR update with no new page (its PMR
//!   pages merge in too; `Cause::Merge`, counted as a BMR update and as a levelling
//!   move); a logical block with no data just takes that block. In place the BMR does
//!   not level (a rewrite of a hot block keeps its address). Moves are reported as
//!   `ftl.extra.wl_migrations` and `wl_pages_copied` (both regions). Costs O(log
//!   blocks) per block sealed, mapped, erased or moved, O(1) per request. Recovery
//!   rebuilds both sets from the erase counts on flash.
//! - Endurance (issue 23 item 4, not in the paper): `pe_limit` (default 0: never). The
//!   regions are fixed, so each retires on its own ([`ftlab_core::wear::Retirement`]):
//!   a PMR block at the limit leaves the PMR, which works on while it keeps an active
//!   block, a victim and `sync_free_blocks` (at least 3 blocks); out of place, a BMR
//!   block at the limit leaves the BMR, which works on while one spare is left (under
//!   `pmr_percent = auto` the BMR has just that spare, so its first worn block ends the
//!   device; a smaller `pmr_percent` leaves it more); in place, a logical block's
//!   block cannot be replaced and its reaching the limit ends the device. Then the run
//!   ends with `Failure::WornOut`. Recovery derives retirement from the erase counts
//!   on flash; its merge of an out-of-place block (below) skips blocks that erase
//!   takes to the limit. `ftl.extra.retired_blocks` counts both regions.
//! - Die-aware allocation (issue 22 item 3, not in the paper, which models one chip):
//!   `die_alloc = "single"` (default: the PMR's one write frontier), `"round_robin"`,
//!   `"static"` or `"least_busy"`, with `page`'s semantics, for the PMR, the scheme's
//!   page-mapped part: one active PMR block per die (dies: channels x dies of parallel
//!   timing, 1 under serial timing, where all four are `single`), each PMR page (a
//!   host group's, a PMR-GC copy, a staged page) dealt to a die in turn, by LPN
//!   (`l % dies`) or to the die free first (read off `Flash::clock`). Free PMR blocks
//!   are kept per die (a block's die is `pbn % dies`); a die with none borrows from the
//!   die with the most. The BMR is block mapped (one block per logical block, fixed in
//!   place) and keeps the paper's placement, as the other block-mapped schemes do.
//!   The reserve, a choice made here: with one frontier the synchronous check counts
//!   the active block's free tail; with a frontier per die a group's (or a victim's)
//!   pages can open a block on every die whose active block is full while the other
//!   tails stay unused, so the PMR's free pages count the erased blocks less `dies - 1`
//!   and no tail. Whenever a check passes, the pool then holds a block for every die
//!   the pages can reach. The PMR needs `2 x dies + 1` blocks beyond its synchronous
//!   reserve (an active block per die, the `dies - 1` of margin, a block for a group;
//!   the refusal names `die_alloc`), and `sync_free_blocks` `auto` is `min(3, PMR
//!   blocks - 2 x dies - 1)`. Recovery reopens the partly written PMR blocks as the
//!   dies' active blocks (a block to its own die's first, else to the first without
//!   one, in block order); more than `dies` of them is a `RecoverError::Failed`.
//! - GC per die (issue 22 item 3, not in the paper; `page`, `dftl`, `tpm` and `dac`
//!   have it too): `gc_scope = "per_die"`, with a multi-die `die_alloc` (refused
//!   otherwise, naming both). The triggers stay the paper's (Functions 3 and 4 count
//!   the PMR's free space), and so does BMR-GC; PMR-GC changes in two ways, choices
//!   made here. (1) A victim's copies go to the active block of its own die, so a
//!   collection reads, programs and erases on that die only. (2) Each die keeps its
//!   sealed blocks in its own greedy index, and the victim is the block with the
//!   fewest valid pages among the dies' own victims whose valid pages fit their die's
//!   active block (a round then frees a whole block); when none fits, BMR-GC runs
//!   (§4.3.2: PMR-GC runs unless it "cannot find any physical block containing enough
//!   invalid pages to recycle", "enough" read per die), and with no PMR group left the
//!   global victim. Why (2): with copies kept on one die and the free space counted in
//!   erased blocks (above), a victim whose copies overflow its die's active block opens
//!   a block and frees one, so the round gains nothing; with the paper's rule (any
//!   invalid page) the synchronous loop then ran PMR-GC on blocks of 63 valid pages of
//!   64 until the tails filled: WA 40 against 15.8 under `global` on docs/timing.md's
//!   1 GiB run (the same churn `die_alloc = "static"` shows under `global`, whose
//!   copies also stay on a die). Taking the die with the fewest free blocks first
//!   did the same. `ftl.extra.gc_copies_off_die` counts copies that still landed off
//!   their die (a block borrowed when the die's pool was empty: static levelling's
//!   moves, or recovered states). Costs: a second victim index per die, nothing under
//!   `global`, whose reports are byte for byte those of before.
//!
//! Power-loss recovery ([`Ftl::recover`], not in the paper):
//! - Nothing is checkpointed and no role is stored: the PMR is a fixed range of blocks
//!   (right after the BMR), so a block's region follows from its number. Recovery reads
//!   the spare area of every programmed page once (`Cause::Recovery`) and takes, per
//!   LPN, the newest version on flash; a BMR copy wins a tie with a PMR copy (BMR-GC and
//!   BMR updates copy PMR pages into the BMR and leave the sources until PMR-GC erases
//!   them), and among PMR copies of one version (a PMR-GC interrupted between its copy
//!   and its switch) the first in block order wins. Filler pages (version 0) are never
//!   mapped. A block outside the PMR must hold only its logical block's pages at their
//!   own offsets, which names its logical block; anything else is
//!   [`RecoverError::Failed`].
//! - In place, logical block `l` is block `l`, as before. Out of place, a logical block
//!   may also have retired blocks not yet erased: its BMR block is the first one that
//!   holds every newest BMR copy of the block; the others are retired again. If none
//!   does, a retired block kept a page that was trimmed when the newer image was made,
//!   and no tag tells which block came last, so recovery merges the newest copies into
//!   one block (page reads, an erase and programs, all `Cause::Recovery`). Empty logical
//!   blocks get erased blocks, the rest are spares.
//! - PMR blocks: erased ones are free (in block order), full ones sealed, the one
//!   partly written block is active (one per die under a multi-die `die_alloc`). Pending GC jobs were RAM state and are gone; the
//!   flash they left (copies not yet switched, pages invalidated only in RAM) is
//!   consistent, so `check()` holds right after recovery. A PMR-GC victim whose valid
//!   pages do not fit the free pages is passed over for BMR-GC, which can only happen in
//!   such a recovered state.
//! - Trims are RAM-only: a trimmed page still on flash comes back after recovery, and
//!   not only as its last version: GC may erase the block of the trimmed (invalid) last
//!   copy while an older stale copy survives elsewhere (a PMR page under a BMR block, or
//!   the reverse), and the scan maps the newest copy left (`TrimRecovery::AnyEarlier`:
//!   the oracle accepts zeroes or any version written before the trim; found by the
//!   model test, issue 25).
//! - Cost: one spare read per programmed page, plus the merges above when a retired
//!   block makes them necessary (out of place only).
//! - Torn operations (issue 25 item 3: a power cut inside a program, an erase, a copy,
//!   mid-request or mid-recovery): a torn page reads as uncorrectable and carries no
//!   tag, so the scan skips it (it read one as lpn4294967280 before). A torn erase
//!   leaves a block full of such pages: in the PMR it is a sealed block without valid
//!   pages, the next PMR-GC victim; in place it is its logical block's block, empty,
//!   erased again by its next update; out of place it is retired (erased before use).
//!   Out of place, a block holding a torn page is never adopted: only an image program
//!   (an update's or recovery's merge) or an erase is ever cut in a block outside the
//!   PMR, and an image is mapped only once whole, so everything in it is also
//!   elsewhere but for new pages of the request the cut struck, which may be lost (the
//!   oracle accepts their version before that request). A PMR-GC cut half way leaves
//!   copies of the same version as their sources; the first readable one wins. The
//!   recovery merge programs an erased block when one is left and erases its sources
//!   only later, so a second cut inside that recovery loses nothing (the torn target is
//!   discarded next time); with no erased block it erases the first source first, as
//!   before. In place, a cut between a BMR update's erase and the end of its program
//!   (the paper's window, now reachable inside any request: host BMR writes and
//!   synchronous BMR-GC too) loses the block's live pages not yet programmed again,
//!   which [`Ftl::volatile_pages`] reports at every point of that window (not a page
//!   whose version the PMR still holds, which recovery finds: a BMR update leaves its
//!   PMR sources on flash, and a buffer's padding hands a page the version it has).
//!   `power_safe_bmr_gc = true` closes the window inside requests too: before erasing
//!   a BMR block in place, the update programs its live pages to the PMR (`Cause::Merge`,
//!   counted as `ftl.extra.bmr_staged_pages`; recovery prefers the BMR copy on a tie,
//!   so they are garbage once the block is programmed), making room first by
//!   synchronous GC when the last staging took the PMR into its reserve; only a PMR
//!   without room for them (a state a cut PMR-GC can leave) falls back to the window.
//!
//! Report keys (`ftl.extra`): `pmr_groups` / `pmr_pages_written` and `bmr_groups` /
//! `bmr_pages_written` (host groups by region); `bmr_updates` (block rewrites, host and
//! GC); `pmr_gc_sync`, `bmr_gc_sync` (runs started in the foreground), `pmr_gc_async`,
//! `bmr_gc_async` (runs started in idle time), `gc_interruptions` (idle gaps that ended
//! with a run pending), `gc_finished_in_foreground`, `bmr_gc_aborted`; `pmr_erases`,
//! `bmr_erases`; `filler_programs`; `group_pages_*` (received group sizes, by powers of
//! two); `map_bytes_bmr`, `map_bytes_pmr`, `map_bytes_paper`; and the resolved sizes
//! `pmr_blocks`, `sync_free_blocks`, `async_free_pages`. `ftl.gc` counts PMR-GC runs
//! and the pages they copied; `ftl.merges` counts block rewrites (full if they copied
//! an old page, switch if not) and the pages they copied.
//!
//! [`IdleBudget`]: ftlab_core::ftl::IdleBudget
//! [`Ftl::volatile_pages`]: ftlab_core::ftl::Ftl::volatile_pages
//! [`Ftl::recover`]: ftlab_core::ftl::Ftl::recover
//! [`RecoverError::Failed`]: ftlab_core::ftl::RecoverError::Failed
//! [`U32Map`]: ftlab_core::u32map::U32Map

mod gc;
mod pmr;
mod recover;
#[cfg(test)]
mod tests;

use crate::auto::AutoOr;
use crate::demand::{self, DieStreams};
use crate::page::{DieAlloc, GcScope};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{Ftl, FtlStats, IdleBudget, RecoverError, TrimRecovery};
use ftlab_core::geometry::Geometry;
use ftlab_core::options::{bad, geometry_error, JsonSchema, SchemeError};
use ftlab_core::stats::{Pow2Histogram, POW2_BUCKETS};
use ftlab_core::u32map::U32Map;
use ftlab_core::wear::{self, FreeBlocks, Retirement, StaticLeveling, WearLeveling};
use ftlab_core::{Lbn, Lpn, PageTag, PageWrite, Pbn, Ppn};
use pmr::Pmr;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Scheme id in the registry and in errors.
pub const ID: &str = "cach";

/// Options of the `cach` FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CachOptions {
    /// A group of more than this many pages goes to the BMR, else to the PMR
    /// (cach-ftl.txt §5.1: 4).
    pub threshold: u32,
    /// PMR size in percent of the physical blocks; auto: every block beyond the BMR
    /// (the paper's 10% of the flash is --op 11.12).
    #[schemars(range(min = 0))]
    pub pmr_percent: AutoOr<f64>,
    /// Synchronous GC keeps more free PMR space than this many blocks; auto: min(3, PMR
    /// blocks - 2) (cach-ftl.txt §4.3.3: 3).
    #[schemars(range(min = 1))]
    pub sync_free_blocks: AutoOr<u32>,
    /// Idle-time GC runs while PMR free space is at most this percent of the PMR
    /// (cach-ftl.txt §4.3.3: 10).
    #[schemars(range(min = 0, max = 100))]
    pub async_free_percent: f64,
    /// Run interruptible GC in idle gaps (cach-ftl.txt §4.3.3).
    pub async_gc: bool,
    /// PMR-GC takes a victim only with at least this many invalid pages, else BMR-GC runs
    /// (cach-ftl.txt Algorithm 2, line 24: 1).
    #[schemars(range(min = 1))]
    pub pmr_gc_min_invalid: u32,
    /// in_place (cach-ftl.txt §4.2.3) or out_of_place (new image to a spare block, old
    /// block erased later).
    pub bmr_update: BmrUpdate,
    /// In idle time, start an in-place BMR-GC's erase only together with its program, so
    /// no block's data lives only in RAM between requests, and stage an in-place
    /// block's live pages in the PMR before its erase, so a power cut inside the erase
    /// or the program loses none; false: the five interruption points of cach-ftl.txt
    /// §4.3.3.
    pub power_safe_bmr_gc: bool,
    /// Wear levelling (ftlab_core::wear): off (free PMR blocks and BMR spares
    /// first-in first-out), dynamic (a new block is the least-erased free one) or
    /// static (dynamic, and past a spread of wl_threshold within a region the
    /// least-erased PMR block is collected and, out of place, the least-erased BMR
    /// block moves to the most-erased spare).
    pub wear_leveling: WearLeveling,
    /// Erase-count spread (max - min) above which wear_leveling = static moves data.
    #[schemars(range(min = 1))]
    pub wl_threshold: u32,
    /// Erases after which a block retires (never written again); 0: blocks never
    /// retire. The NAND presets' rated cycles are in ftlab_core::nand (pe_cycles).
    pub pe_limit: u32,
    /// Which die a PMR page is written on: single (one PMR write frontier, the
    /// paper's), round_robin (one active PMR block per die, pages dealt in turn), static
    /// (die = LPN % dies) or least_busy (the die free first under parallel timing).
    /// Dies: channels x dies of parallel timing (1 under serial). The BMR is block
    /// mapped and keeps its placement.
    pub die_alloc: DieAlloc,
    /// Where PMR-GC looks for victims: global (the PMR block with the most invalid
    /// pages; the default) or per_die (that block of the die with the fewest free PMR
    /// blocks, its copies kept on its die; needs a multi-die die_alloc). The trigger
    /// stays the paper's PMR free space either way.
    pub gc_scope: GcScope,
}

impl Default for CachOptions {
    fn default() -> Self {
        CachOptions {
            threshold: 4,
            pmr_percent: AutoOr::Auto,
            sync_free_blocks: AutoOr::Auto,
            async_free_percent: 10.0,
            async_gc: true,
            pmr_gc_min_invalid: 1,
            bmr_update: BmrUpdate::InPlace,
            power_safe_bmr_gc: false,
            wear_leveling: WearLeveling::Off,
            wl_threshold: wear::DEFAULT_WL_THRESHOLD,
            pe_limit: 0,
            die_alloc: DieAlloc::Single,
            gc_scope: GcScope::Global,
        }
    }
}

/// How CACH-FTL updates a BMR block (option `bmr_update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BmrUpdate {
    /// Rewrite the block in place (cach-ftl.txt §4.2.3).
    InPlace,
    /// Write the new image to a spare block and erase the old block later.
    OutOfPlace,
}

/// Tag of the filler pages programmed below data in a BMR block (never read).
const FILLER: PageTag = PageTag {
    lpn: Lpn(u32::MAX),
    version: 0,
};

/// Keys of the received-group size histogram (`ftl.extra`), by powers of two.
const GROUP_KEYS: [&str; POW2_BUCKETS] = ftlab_core::pow2_keys!("group_pages_");

/// What an offset of a block image holds.
const NO_PAGE: u8 = 0;
const MOVED: u8 = 1;
const NEW: u8 = 2;

/// One logical block assembled in RAM (the paper's "dedicated cache block").
#[derive(Default)]
struct Image {
    tag: Vec<PageTag>,
    kind: Vec<u8>,
    /// The page was read from the block's BMR copy (gone from flash once the block is
    /// erased in place).
    from_bmr: Vec<bool>,
    /// The block's BMR copy held a live page at this offset when the update
    /// invalidated it (phase 2): the page in `tag` (moved or new) must reach flash
    /// again before the block's data is durable (in place).
    bmr_live: Vec<bool>,
}

impl Image {
    fn new(ppb: u32) -> Image {
        Image {
            tag: vec![PageTag::default(); ppb as usize],
            kind: vec![NO_PAGE; ppb as usize],
            from_bmr: vec![false; ppb as usize],
            bmr_live: vec![false; ppb as usize],
        }
    }

    fn clear(&mut self) {
        self.kind.fill(NO_PAGE);
        self.from_bmr.fill(false);
        self.bmr_live.fill(false);
    }

    fn set(&mut self, off: u32, tag: PageTag, kind: u8) {
        self.tag[off as usize] = tag;
        self.kind[off as usize] = kind;
    }

    fn get(&self, off: u32) -> Option<PageTag> {
        (self.kind[off as usize] != NO_PAGE).then(|| self.tag[off as usize])
    }
}

/// An in-place BMR block erased and not yet wholly programmed again.
#[derive(Clone, Debug)]
struct Window {
    lbn: Lbn,
    /// The offsets (ascending) and LPNs of the pages only the RAM image holds...
    pages: Vec<(u32, Lpn)>,
    /// ...of which those at this offset or beyond are not on flash yet.
    from: u32,
}

/// A GC run left pending between idle gaps. `phase` is the next phase to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Job {
    /// PMR-GC of `victim`: 0 read, 1 copy, 2 switch the map and erase.
    Pmr { victim: Pbn, phase: u8 },
    /// BMR-GC of logical block `lbn`: 0 read PMR, 1 read BMR, 2 invalidate, 3 erase
    /// (or take a spare block, `target`), 4 program.
    Bmr {
        lbn: Lbn,
        phase: u8,
        target: Option<Pbn>,
    },
}

/// Counters beyond [`FtlStats`].
#[derive(Clone, Debug, Default)]
struct Extra {
    pmr_groups: u64,
    pmr_pages_written: u64,
    bmr_groups: u64,
    bmr_pages_written: u64,
    bmr_updates: u64,
    pmr_gc_sync: u64,
    pmr_gc_async: u64,
    bmr_gc_sync: u64,
    bmr_gc_async: u64,
    gc_finished_in_foreground: u64,
    gc_interruptions: u64,
    bmr_gc_aborted: u64,
    pmr_erases: u64,
    bmr_erases: u64,
    filler_programs: u64,
    staged_pages: u64,
    groups: Pow2Histogram,
}

/// The CACH-FTL.
pub struct CachFtl {
    geo: Geometry,
    ppb: u32,
    threshold: u32,
    async_gc: bool,
    out_of_place: bool,
    power_safe_bmr_gc: bool,
    sync_free_blocks: u32,
    sync_free_pages: u32,
    async_free_pages: u32,
    /// Logical block -> physical block of the BMR.
    bmr: Vec<Pbn>,
    /// Per logical page: the live copy is in the BMR (the paper's validation bit).
    bmr_valid: Vec<u64>,
    /// Out-of-place only: erased spare blocks (and the BMR's worn-out blocks, in its
    /// retirement; in place only the one that ends the device).
    spare: FreeBlocks,
    retired: VecDeque<Pbn>,
    /// Static levelling of the BMR (out of place only): its blocks in use by erase
    /// count, the BMR's most erases, and moves.
    bmr_wl: Option<StaticLeveling>,
    /// Static levelling: the logical block each BMR block holds (`u32::MAX`: none).
    bmr_lbn: Vec<u32>,
    /// A levelling move is running: the out-of-place update takes the most-worn spare.
    park: bool,
    pmr: Pmr,
    job: Option<Job>,
    job_img: Image,
    fg_img: Image,
    held: Vec<(PageTag, Ppn)>,
    copies: Vec<Ppn>,
    /// PMR-GC's phase 1: the tags of the live pages, and their copies' addresses.
    run_tags: Vec<PageTag>,
    run_ppns: Vec<Ppn>,
    /// PMR-GC's phase 2: the victim's offsets whose pages the switch moved.
    switched: Vec<u64>,
    /// Tests: PMR-GC takes the page-by-page path even when every page it read stays
    /// live (the reference its all-live path is checked against).
    #[cfg(test)]
    pmr_gc_by_page: bool,
    /// In place, the BMR blocks between their erase and the end of their program (the
    /// window of cach-ftl.txt Algorithm 2, lines 41-42; a pending BMR-GC job's and a
    /// foreground update's may be open together), with the pages whose only copy is
    /// the RAM image ([`Ftl::volatile_pages`]). Kept outside the images, which are
    /// taken out of `self` while a phase runs, so that a power cut inside the erase or
    /// a program still finds them.
    windows: Vec<Window>,
    /// `power_safe_bmr_gc`, in place: the PMR copies of the block's live pages staged
    /// before its erase, invalidated once the block is programmed.
    staged: Vec<Ppn>,
    /// In place: PMR pages no longer mapped that may still hold the version of their
    /// LPN the BMR holds (a BMR update took the page over from the PMR, or was handed
    /// the same version again, say by a buffer's padding), LPN -> PPN, entries dropped
    /// when their PMR block is erased (so at most one per PMR page). Simulator
    /// bookkeeping for [`Ftl::volatile_pages`], not map (not in `mapping_bytes`): a
    /// page whose version survives there is not lost with the RAM image, and the
    /// engine must not be told it is (recovery finds it).
    dups: U32Map,
    stats: FtlStats,
    x: Extra,
}

/// The PMR's die streams (`die_alloc`) and the blocks it needs beyond its synchronous
/// reserve: an active block and a victim under one die; an active block per die, the
/// `dies - 1` blocks its free space is counted short by and a block for a group under
/// several (module docs).
fn pmr_dies_and_base(geo: &Geometry, opts: &CachOptions) -> (u32, u32) {
    let dies = DieStreams::new(geo, opts.die_alloc).n as u32;
    (dies, if dies == 1 { 2 } else { 2 * dies + 1 })
}

/// The PMR's size in blocks and the synchronous GC reserve, from the options; errors
/// name the option (or `--op`) that would make them fit.
fn region_sizes(
    geo: &Geometry,
    opts: &CachOptions,
    out_of_place: bool,
) -> Result<(u32, u32), SchemeError> {
    let logical = geo.logical_blocks();
    let spare_blocks = geo.blocks - logical;
    let reserve = u32::from(out_of_place);
    let room = spare_blocks.saturating_sub(reserve);
    let pmr_blocks = match opts.pmr_percent {
        AutoOr::Auto => room,
        AutoOr::Value(pct) if !pct.is_finite() => {
            return Err(bad(
                ID,
                "pmr_percent",
                pct,
                "expected auto or a non-negative number",
            ))
        }
        AutoOr::Value(pct) => {
            let n = (pct / 100.0 * geo.blocks as f64).round() as u32;
            if n > room {
                return Err(bad(
                    ID,
                    "pmr_percent",
                    pct,
                    format!(
                        "{n} PMR blocks do not fit the {room} blocks beyond the BMR{}; \
                         raise --op or lower pmr_percent",
                        if out_of_place {
                            " and the out-of-place spare"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            n
        }
    };
    let (dies, base) = pmr_dies_and_base(geo, opts);
    if pmr_blocks < base + 1 {
        let what = if dies == 1 {
            "an active block, a victim and a free reserve".to_string()
        } else {
            format!(
                "an active block per die, {} blocks of free-space margin, a block for a \
                 group and a free reserve, under die_alloc",
                dies - 1
            )
        };
        return Err(geometry_error(
            ID,
            format!(
                "the PMR needs at least {} blocks ({what}) but has {pmr_blocks}; raise --op \
                 (the device has {spare_blocks} blocks beyond the logical ones) or \
                 pmr_percent",
                base + 1
            ),
        ));
    }
    let sync_free_blocks = match opts.sync_free_blocks {
        AutoOr::Auto => 3.min(pmr_blocks - base),
        AutoOr::Value(v) if v >= 1 && v <= pmr_blocks - base => v,
        AutoOr::Value(v) => {
            return Err(bad(
                ID,
                "sync_free_blocks",
                v,
                format!(
                    "must be a whole number from 1 to PMR blocks - {base} = {}",
                    pmr_blocks - base
                ),
            ))
        }
    };
    Ok((pmr_blocks, sync_free_blocks))
}

impl CachFtl {
    /// Builds the FTL for `geo`.
    pub fn new(geo: &Geometry, opts: &CachOptions) -> Result<CachFtl, SchemeError> {
        let ppb = geo.pages_per_block;
        let threshold = opts.threshold;
        let out_of_place = opts.bmr_update == BmrUpdate::OutOfPlace;
        let logical = geo.logical_blocks();
        if opts.gc_scope == GcScope::PerDie && pmr_dies_and_base(geo, opts).0 == 1 {
            return Err(demand::per_die_refusal(ID));
        }
        let (pmr_blocks, sync_free_blocks) = region_sizes(geo, opts, out_of_place)?;
        let min_invalid = opts.pmr_gc_min_invalid;
        if min_invalid == 0 || min_invalid > ppb {
            return Err(bad(
                ID,
                "pmr_gc_min_invalid",
                min_invalid,
                format!("must be from 1 to the pages per block ({ppb})"),
            ));
        }
        let async_pct = opts.async_free_percent.clamp(0.0, 100.0);
        let pmr_pages = pmr_blocks * ppb;
        let first_spare = logical + pmr_blocks;
        let dynamic = opts.wear_leveling != WearLeveling::Off;
        let statik = opts.wear_leveling == WearLeveling::Static;
        // Out of place, the BMR's blocks are a pool (the logical blocks' and the
        // spares), one spare the least; in place, a logical block's block is fixed and
        // the first at the limit ends the device's life.
        let bmr_retirement = if out_of_place {
            Retirement::new(
                "cach (BMR)",
                geo.blocks - pmr_blocks,
                opts.pe_limit,
                logical + 1,
            )
        } else {
            // (In place only `Retirement::fixed` is asked.)
            Retirement::new(ID, logical, opts.pe_limit, logical)
        };
        let mut spare = FreeBlocks::new(geo.blocks, 1, dynamic).with_retirement(bmr_retirement);
        if statik {
            spare = spare.with_most_worn();
        }
        if out_of_place {
            (first_spare..geo.blocks).for_each(|b| spare.push(Pbn(b), 0));
        }
        let (bmr_wl, bmr_lbn) = if statik && out_of_place {
            let mut wl = StaticLeveling::new(geo.blocks, opts.wl_threshold);
            (0..logical).for_each(|b| wl.sealed(Pbn(b), 0));
            let mut of = vec![u32::MAX; geo.blocks as usize];
            (0..logical).for_each(|l| of[l as usize] = l);
            (Some(wl), of)
        } else {
            (None, Vec::new())
        };
        // The PMR runs on an active block, a victim and the synchronous reserve (under
        // a multi-die `die_alloc`, on what `region_sizes` asks).
        let (_, base) = pmr_dies_and_base(geo, opts);
        let pmr_retirement = Retirement::new(
            "cach (PMR)",
            pmr_blocks,
            opts.pe_limit,
            (sync_free_blocks + base).max(base + 1),
        );
        let mut pmr = Pmr::new(
            geo,
            Pbn(logical),
            pmr_blocks,
            min_invalid,
            dynamic,
            pmr_retirement,
            opts.die_alloc,
        );
        if statik {
            pmr = pmr.with_static_leveling(geo, opts.wl_threshold);
        }
        if opts.gc_scope == GcScope::PerDie {
            pmr = pmr.with_gc_per_die(geo);
        }
        Ok(CachFtl {
            geo: geo.clone(),
            ppb,
            threshold,
            async_gc: opts.async_gc,
            out_of_place,
            power_safe_bmr_gc: opts.power_safe_bmr_gc,
            sync_free_blocks,
            sync_free_pages: sync_free_blocks * ppb,
            async_free_pages: (async_pct / 100.0 * pmr_pages as f64).floor() as u32,
            bmr: (0..logical).map(Pbn).collect(),
            bmr_valid: vec![0; (geo.logical_pages as usize).div_ceil(64)],
            spare,
            retired: VecDeque::with_capacity(geo.blocks as usize),
            bmr_wl,
            bmr_lbn,
            park: false,
            pmr,
            job: None,
            job_img: Image::new(ppb),
            fg_img: Image::new(ppb),
            held: Vec::with_capacity(ppb as usize),
            copies: Vec::with_capacity(ppb as usize),
            run_tags: Vec::with_capacity(ppb as usize),
            run_ppns: Vec::with_capacity(ppb as usize),
            switched: vec![0; (ppb as usize).div_ceil(64)],
            #[cfg(test)]
            pmr_gc_by_page: false,
            windows: Vec::with_capacity(2),
            staged: Vec::with_capacity(ppb as usize),
            dups: U32Map::with_max_len(if out_of_place { 0 } else { pmr_pages }),
            stats: FtlStats::default(),
            x: Extra::default(),
        })
    }

    #[inline]
    fn in_bmr(&self, lpn: Lpn) -> bool {
        self.bmr_valid[lpn.idx() / 64] & (1 << (lpn.idx() % 64)) != 0
    }

    #[inline]
    fn set_bmr(&mut self, lpn: Lpn, valid: bool) {
        let bit = 1u64 << (lpn.idx() % 64);
        if valid {
            self.bmr_valid[lpn.idx() / 64] |= bit;
        } else {
            self.bmr_valid[lpn.idx() / 64] &= !bit;
        }
    }

    /// The BMR page of a logical page.
    #[inline]
    fn bmr_ppn(&self, lpn: Lpn) -> Ppn {
        let lbn = self.geo.lbn_of(lpn);
        self.geo.ppn(self.bmr[lbn.idx()], self.geo.lpn_offset(lpn))
    }

    /// The logical pages of a logical block.
    fn lpns(&self, lbn: Lbn) -> std::ops::Range<u32> {
        let first = lbn.0 * self.ppb;
        first..(first + self.ppb).min(self.geo.logical_pages)
    }

    /// Invalidates the live copy of `lpn`, wherever it is.
    fn unmap(&mut self, flash: &mut Flash, lpn: Lpn) {
        if self.in_bmr(lpn) {
            let ppn = self.bmr_ppn(lpn);
            flash.invalidate(ppn);
            self.set_bmr(lpn, false);
        } else if self.pmr.count(self.geo.lbn_of(lpn)) > 0 {
            // The group count spares a page-table probe for a block with no PMR page
            // (most blocks, and every page of a BMR update after its PMR pages went).
            self.pmr.remove(flash, lpn);
        }
    }

    /// Function 3: a small group is appended to the PMR, after synchronous GC if the
    /// free space would fall to the reserve.
    fn write_pmr(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        let g = pages.len() as u32;
        if self.pmr.free_pages(flash) <= self.sync_free_pages + g {
            self.sync_gc(flash, g);
        }
        for &tag in pages {
            self.unmap(flash, tag.lpn);
            let ppn = self.pmr.program(flash, tag, Cause::Host);
            self.pmr.add(tag.lpn, ppn);
        }
        self.x.pmr_groups += 1;
        self.x.pmr_pages_written += g as u64;
    }

    /// Function 2: a large group rewrites its BMR block with the block's other valid
    /// pages.
    fn write_bmr(&mut self, flash: &mut Flash, lbn: Lbn, pages: &[PageWrite]) {
        let mut img = std::mem::take(&mut self.fg_img);
        img.clear();
        for p in pages {
            img.set(self.geo.lpn_offset(p.lpn), *p, NEW);
        }
        self.bmr_update_now(flash, lbn, &mut img);
        self.fg_img = img;
        self.x.bmr_groups += 1;
        self.x.bmr_pages_written += pages.len() as u64;
    }

    /// Settles a pending BMR-GC job of `lbn` before the host changes that block.
    fn settle_job_of(&mut self, flash: &mut Flash, lbn: Lbn) {
        if let Some(Job::Bmr { lbn: l, phase, .. }) = self.job {
            if l == lbn {
                if phase <= 2 {
                    // Nothing was invalidated yet: the PMR and BMR still hold the data.
                    self.job = None;
                    self.x.bmr_gc_aborted += 1;
                } else {
                    self.finish_job(flash);
                }
            }
        }
    }

    fn record_erase(&mut self, flash: &Flash, pbn: Pbn) {
        if self.pmr.owns(pbn) {
            self.x.pmr_erases += 1;
        } else {
            self.x.bmr_erases += 1;
            if let Some(wl) = &mut self.bmr_wl {
                wl.erased(flash.erase_count(pbn));
            }
        }
    }

    /// Static wear levelling after a host request (module docs), when no GC job is
    /// pending: at most one PMR move and one BMR move.
    fn level(&mut self, flash: &mut Flash) {
        if self.job.is_some() {
            return;
        }
        if let Some(cold) = self.pmr.wl_candidate() {
            let valid = flash.valid_count(cold);
            // Its copies must leave the synchronous reserve free.
            if valid + self.sync_free_pages < self.pmr.free_pages(flash) {
                let before = self.stats.gc_pages_copied;
                self.pmr_gc_now(flash, cold);
                let copied = self.stats.gc_pages_copied - before;
                if let Some(wl) = &mut self.pmr.wl {
                    wl.moved(copied);
                }
            }
        }
        let Some(cold) = self.bmr_wl.as_ref().and_then(StaticLeveling::candidate) else {
            return;
        };
        let lbn = self.bmr_lbn[cold.idx()];
        // The block the move would take: the most-worn spare, else the next old block
        // to erase (as `take_erased_block` takes them).
        let dst_erases = match self.spare.pop_most_worn() {
            Some((dst, e)) => {
                self.spare.unpop(dst, e);
                e
            }
            None => match self.retired.front() {
                Some(&b) => flash.erase_count(b) + 1,
                None => return,
            },
        };
        if lbn == u32::MAX || dst_erases <= flash.erase_count(cold) {
            return;
        }
        let before = self.stats.merge_pages_copied;
        if flash.is_erased(cold) {
            // No data: the logical block takes the worn block, the cold one is spare.
            self.park = true;
            let b = self.take_erased_block(flash);
            self.park = false;
            self.retire_or_keep(flash, Lbn(lbn), b);
        } else {
            let mut img = std::mem::take(&mut self.fg_img);
            img.clear();
            self.park = true;
            self.bmr_update_now(flash, Lbn(lbn), &mut img);
            self.park = false;
            self.fg_img = img;
        }
        let copied = self.stats.merge_pages_copied - before;
        if let Some(wl) = &mut self.bmr_wl {
            wl.moved(copied);
        }
    }
}

impl Ftl for CachFtl {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        let Some(first) = pages.first() else { return };
        let lbn = self.geo.lbn_of(first.lpn);
        debug_assert!(pages.iter().all(|p| self.geo.lbn_of(p.lpn) == lbn));
        let g = pages.len() as u32;
        self.x.groups.record(g);
        self.settle_job_of(flash, lbn);
        if g > self.threshold {
            if self.stages() && self.pmr.free_pages(flash) <= self.sync_free_pages {
                // Room to stage the block's pages (the last update's staged copies may
                // have taken the PMR into its reserve).
                self.sync_gc(flash, 0);
            }
            self.write_bmr(flash, lbn, pages);
        } else {
            self.write_pmr(flash, pages);
        }
        self.level(flash);
    }

    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        if self.in_bmr(lpn) {
            return Some(flash.read(self.bmr_ppn(lpn), Cause::Host));
        }
        if let Some(p) = self.pmr.map.get(lpn.0) {
            return Some(flash.read(Ppn(p), Cause::Host));
        }
        match self.job {
            // After BMR-GC's invalidation phase the block lives in RAM until programmed.
            Some(Job::Bmr { lbn, phase, .. }) if phase >= 3 && lbn == self.geo.lbn_of(lpn) => {
                self.job_img.get(self.geo.lpn_offset(lpn))
            }
            _ => None,
        }
    }

    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.settle_job_of(flash, self.geo.lbn_of(lpn));
        self.unmap(flash, lpn);
    }

    fn flush(&mut self, flash: &mut Flash) {
        if let Some(Job::Bmr { phase, .. }) = self.job {
            if phase >= 3 {
                self.finish_job(flash);
            }
        }
    }

    fn idle(&mut self, flash: &mut Flash, budget: &mut IdleBudget) {
        if self.async_gc {
            self.idle_gc(flash, budget);
        }
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        self.check_maps(flash)?;
        self.check_blocks(flash)?;
        self.check_bmr_blocks(flash)
    }

    fn trim_recovery(&self) -> TrimRecovery {
        // GC can erase the trimmed last copy while an older one survives (module docs).
        TrimRecovery::AnyEarlier
    }

    fn recover(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        self.rebuild(flash)
    }

    fn volatile_pages(&self, out: &mut Vec<Lpn>) {
        // In place, a BMR update's erase leaves the block's live pages only in the RAM
        // image until its program reaches them: between requests (BMR-GC left before
        // its program phase) or inside one (a power cut inside the erase or a
        // program). With `power_safe_bmr_gc` they were staged in the PMR first.
        for w in &self.windows {
            out.extend(
                (w.pages.iter())
                    .filter(|&&(off, _)| off >= w.from)
                    .map(|&(_, lpn)| lpn),
            );
        }
    }

    fn stats(&self) -> FtlStats {
        let mut s = self.stats.clone();
        let x = &self.x;
        for (k, v) in [
            ("pmr_groups", x.pmr_groups),
            ("pmr_pages_written", x.pmr_pages_written),
            ("bmr_groups", x.bmr_groups),
            ("bmr_pages_written", x.bmr_pages_written),
            ("bmr_updates", x.bmr_updates),
            ("pmr_gc_sync", x.pmr_gc_sync),
            ("pmr_gc_async", x.pmr_gc_async),
            ("bmr_gc_sync", x.bmr_gc_sync),
            ("bmr_gc_async", x.bmr_gc_async),
            ("gc_finished_in_foreground", x.gc_finished_in_foreground),
            ("gc_interruptions", x.gc_interruptions),
            ("bmr_gc_aborted", x.bmr_gc_aborted),
            ("pmr_erases", x.pmr_erases),
            ("bmr_erases", x.bmr_erases),
            ("filler_programs", x.filler_programs),
        ] {
            s.extra.counter(k, "events", v as f64);
        }
        if self.power_safe_bmr_gc && !self.out_of_place {
            s.extra
                .counter("bmr_staged_pages", "pages", x.staged_pages as f64);
        }
        if self.pmr.per_die() {
            (s.extra).counter("gc_copies_off_die", "pages", self.pmr.copies_off_die as f64);
        }
        if self.spare.retirement().pe_limit() > 0 {
            let worn = self.pmr.free.retirement().retired().len()
                + self.spare.retirement().retired().len();
            s.extra.gauge("retired_blocks", "blocks", worn as f64);
        }
        for (k, unit, v) in [
            ("pmr_blocks", "blocks", self.pmr.blocks() as u64),
            ("sync_free_blocks", "blocks", self.sync_free_blocks as u64),
            ("async_free_pages", "pages", self.async_free_pages as u64),
            ("map_bytes_bmr", "bytes", self.bmr_bytes()),
            ("map_bytes_pmr", "bytes", self.pmr.map.bytes()),
            ("map_bytes_paper", "bytes", self.paper_map_bytes()),
        ] {
            s.extra.gauge(k, unit, v as f64);
        }
        x.groups
            .report(&mut s.extra, &GROUP_KEYS, self.ppb, "groups");
        if let Some(pmr) = &self.pmr.wl {
            // Both regions' moves together (a PMR move is also a PMR-GC run, a BMR move
            // also a BMR update).
            let mut both = pmr.clone();
            if let Some(bmr) = &self.bmr_wl {
                both.add(bmr);
            }
            both.report(&mut s.extra);
        }
        s
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.x = Extra::default();
        for wl in self.bmr_wl.iter_mut().chain(self.pmr.wl.iter_mut()) {
            wl.reset_stats();
        }
    }

    fn mapping_bytes(&self) -> u64 {
        self.bmr_bytes() + self.pmr.map.bytes()
    }
}

impl CachFtl {
    fn bmr_bytes(&self) -> u64 {
        self.bmr.len() as u64 * 4 + self.bmr_valid.len() as u64 * 8
    }

    fn paper_map_bytes(&self) -> u64 {
        (self.bmr.len() as u64 + self.pmr.blocks() as u64 * self.ppb as u64) * 4
    }

    /// Every mapped page is valid and holds its LPN; flash holds no other valid page
    /// (but the copies of a PMR-GC job between its copy and switch phases).
    fn check_maps(&self, flash: &Flash) -> Result<(), String> {
        let mut mapped = 0u64;
        for l in 0..self.geo.logical_pages {
            let lpn = Lpn(l);
            let in_pmr = self.pmr.map.get(l);
            if self.in_bmr(lpn) {
                mapped += 1;
                if in_pmr.is_some() {
                    return Err(format!("{lpn:?} is live in both the BMR and the PMR"));
                }
                let ppn = self.bmr_ppn(lpn);
                if !flash.is_valid(ppn) || flash.peek_tag(ppn).map(|t| t.lpn) != Some(lpn) {
                    return Err(format!("{lpn:?}: BMR page {ppn:?} is not its valid copy"));
                }
            }
        }
        for (l, p) in self.pmr.map.iter() {
            mapped += 1;
            let ppn = Ppn(p);
            if !self.pmr.owns(self.geo.block_of(ppn)) {
                return Err(format!("lpn{l} maps to {ppn:?} outside the PMR"));
            }
            if !flash.is_valid(ppn) || flash.peek_tag(ppn).map(|t| t.lpn) != Some(Lpn(l)) {
                return Err(format!("lpn{l}: PMR page {ppn:?} is not its valid copy"));
            }
        }
        let in_flight = match self.job {
            Some(Job::Pmr { phase: 2, .. }) => self
                .copies
                .iter()
                .filter(|&&c| c != NO_COPY && flash.is_valid(c))
                .count() as u64,
            _ => 0,
        };
        if mapped + in_flight != flash.total_valid() {
            return Err(format!(
                "{mapped} mapped pages + {in_flight} GC copies but {} valid pages on flash",
                flash.total_valid()
            ));
        }
        self.pmr.check_counts()
    }

    /// Every PMR block is free, active, sealed or a GC victim, exactly once; free and
    /// spare blocks are erased.
    fn check_blocks(&self, flash: &Flash) -> Result<(), String> {
        let victim = match self.job {
            Some(Job::Pmr { victim, .. }) => Some(victim),
            _ => None,
        };
        let first = self.geo.logical_blocks();
        for b in first..first + self.pmr.blocks() {
            let pbn = Pbn(b);
            let roles = [
                self.pmr.free.iter().any(|b| b == pbn),
                self.pmr.is_active(pbn),
                self.pmr.is_sealed(pbn),
                victim == Some(pbn),
                self.pmr.free.retirement().retired().contains(&pbn),
            ];
            if roles.iter().filter(|&&r| r).count() != 1 {
                return Err(format!(
                    "PMR {pbn:?} has roles {roles:?} (free, active, sealed, victim, worn out)"
                ));
            }
            if (roles[0] || roles[4]) && !flash.is_erased(pbn) {
                return Err(format!("free or worn-out PMR {pbn:?} is not erased"));
            }
            if roles[2] && !flash.is_full(pbn) {
                return Err(format!("sealed PMR {pbn:?} is not full"));
            }
        }
        let worn = self.spare.retirement().retired();
        for b in self.spare.iter().chain(worn.iter().copied()) {
            if !flash.is_erased(b) || self.bmr.contains(&b) {
                return Err(format!("spare {b:?} is not erased or is mapped"));
            }
        }
        for &b in &self.retired {
            if flash.valid_count(b) != 0 || self.bmr.contains(&b) {
                return Err(format!("retired {b:?} holds valid pages or is mapped"));
            }
        }
        Ok(())
    }

    /// Every block outside the PMR is, exactly once, a logical block's BMR block, a
    /// spare, retired, or the target of a pending BMR-GC job (in place: logical block
    /// `l` is block `l` and the blocks beyond both regions stay erased); a BMR block
    /// holds only fillers and pages of its logical block at their own offsets.
    fn check_bmr_blocks(&self, flash: &Flash) -> Result<(), String> {
        let mut seen = vec![0u32; self.geo.blocks as usize];
        for (l, &b) in self.bmr.iter().enumerate() {
            if self.pmr.owns(b) || (!self.out_of_place && b.0 != l as u32) {
                return Err(format!("lbn{l} is mapped to {b:?}"));
            }
            seen[b.idx()] += 1;
            for off in 0..flash.write_ptr(b) {
                let ppn = self.geo.ppn(b, off);
                match flash.peek_tag(ppn) {
                    // (A torn page, in place: the block is erased before its next use.)
                    Some(t) if t.version == 0 || t.is_uncorrectable() => {}
                    Some(t) if t.lpn.0 == l as u32 * self.ppb + off => {}
                    other => return Err(format!("BMR {ppn:?} of lbn{l} holds {other:?}")),
                }
            }
        }
        let target = match self.job {
            // In place, the target is the logical block's own block.
            Some(Job::Bmr { target, .. }) if self.out_of_place => target,
            _ => None,
        };
        // Worn-out blocks: out of place only (in place the first ends the run).
        let worn = match self.out_of_place {
            true => self.spare.retirement().retired(),
            false => &[],
        };
        for b in (self.spare.iter())
            .chain(worn.iter().copied())
            .chain(self.retired.iter().copied())
            .chain(target)
        {
            seen[b.idx()] += 1;
        }
        for b in (0..self.geo.blocks).map(Pbn).filter(|&b| !self.pmr.owns(b)) {
            let unused = !self.out_of_place && b.0 >= self.geo.logical_blocks();
            match seen[b.idx()] {
                0 if unused && flash.is_erased(b) => {}
                1 if !unused => {}
                n => return Err(format!("{b:?} outside the PMR has {n} roles")),
            }
        }
        Ok(())
    }
}

/// Marks a PMR-GC page that was not copied (overwritten while the job held it).
const NO_COPY: Ppn = Ppn(u32::MAX);
