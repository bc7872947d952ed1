//! Machinery shared by the block-mapped family (`block`, `bast`, `fast`): the pool of
//! erased blocks, composing a block from the latest copies of its pages (the heart of
//! every merge and block rewrite), the LPN index of FAST's shared log pages, the group a
//! co-optimised buffer is writing, the merge counters, the recovery scan of block shapes
//! and the deep check. (BAST's LRU list of log blocks is an [`ftlab_core::lru::Lru`].)
//!
//! Sources: superblock-ftl.txt §2.3 (D-blocks, U-blocks, full/partial/switch merges,
//! Fig. 3) and §5.1 (U_avg); co-op-buffer-ftl.txt §2.4.
//!
//! Choices the papers leave open, settled here for the whole family:
//! - Holes. [`Flash`] programs every block strictly in page order without skipping, as
//!   large-block NAND requires ("pages should be programmed in sequential order from
//!   the first page to the last page within a block", superblock-ftl.txt §4.1). A
//!   block-mapped block keeps logical page `o` at offset `o`, so when a block is
//!   composed and some offset below the last live one has no data (never written, or
//!   trimmed), that offset is programmed with a *filler* page (spare tag: the LPN of the
//!   offset with version 0) that is invalidated at once. Fillers cost a program each and
//!   are counted under the cause of the operation that needed them and in
//!   `ftl.extra.filler_pages`. With a device preconditioned by a full sequential fill
//!   there are no holes and no fillers. Offsets after the last live one stay free, so a
//!   later write of the next offset can still be appended in place.
//! - Which blocks are free: first in, first out (erased blocks go to the back), which
//!   spreads wear without a wear-leveling policy, as in the `page` FTL
//!   (`wear_leveling = "off"`, default); or least-erased first (`"dynamic"`, issue 23
//!   item 3, not in the papers; ties by the lowest block number;
//!   [`ftlab_core::wear`]), or `"static"`: dynamic, plus [`level`] once per host
//!   request. Not in the papers (their cost models have no such merge). Choices made
//!   here: the pool keeps every block in use (taken and not yet returned: data and log
//!   blocks alike) in a heap by its erase count when taken (`block`'s in-place rewrite
//!   re-keys it), and the most erases seen; when the coldest block in use has more than
//!   `wl_threshold` (default 16) erases fewer than the most-erased block and is a data
//!   block, its data move, a full merge with no log: each offset up to its write
//!   pointer is copied if valid, else gets a filler (the new block has the old one's
//!   shape, so recovery tells it as the data block, and a trimmed page stays trimmed),
//!   into the *most-worn* free block (a second heap of the free pool), so cold data
//!   rest on worn flash and the freed cold block, least-worn, is handed out next; only
//!   if that free block has more erases than the cold one (else the move would not
//!   rest anything). A cold log block is returned to the scheme (`bast` merges it,
//!   `block` has none, `fast` leaves it to its round robin and SW merges). One move per
//!   request; flash work under `Cause::Gc`, fillers counted in `filler_pages`, moves
//!   in `ftl.extra.wl_migrations` and `wl_pages_copied` (valid pages copied), not as
//!   merges. O(log blocks) per block taken, returned or moved, O(1) per request,
//!   nothing per page. Recovery rebuilds the in-use set from the erase counts on flash
//!   (every programmed block is in use) and the free pool's two heaps from the erased
//!   blocks.
//! - Retirement (issue 23 item 4, not in the papers; `pe_limit`): [`FreePool`] carries a
//!   [`ftlab_core::wear::Retirement`], so an erased block at the limit retires as it is
//!   put back, whatever merge erased it, and a pool that runs dry with blocks retired
//!   is a worn-out device. The deep check counts retired blocks as a role of their own.
//! - Power-loss recovery of `bast` and `fast` starts from [`Scan`]: one spare read per
//!   programmed page (`Cause::Recovery`), the newest version of every LPN, and the
//!   *shape* of every block (which logical blocks its pages belong to, whether every
//!   page sits at its own offset, whether it holds fillers). Nothing else is on flash:
//!   no roles, no sequence numbers, so each scheme derives its roles from the shapes
//!   (see their module headers). Fillers are never mapped. The free pool is rebuilt in
//!   block-number order, since the FIFO order of erasures is lost.
//! - Torn operations (issue 25 item 3; `ftlab_core::flash`): the scan skips torn pages
//!   and records which blocks hold one ([`Shape::torn`]). Before roles are assigned,
//!   [`repair`] turns what a power cut inside an operation leaves into a state the
//!   scheme runs on, one step per scan ([`scan_repaired`]): blocks with no readable
//!   page are erased; a logical block whose own blocks do not fit the scheme's roles
//!   loses its blocks that hold nothing no other block holds as new ([`Copies`]), then
//!   has its newest copies merged into a free block, or, with none free, loses the
//!   destination the cut merge was filling. All three schemes use it (`block` too).

use crate::scan;
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{BufferView, FtlStats, RecoverError};
use ftlab_core::geometry::Geometry;
use ftlab_core::stats::Sink;
use ftlab_core::wear::{FreeBlocks, Retirement, StaticLeveling, WearLeveling};
use ftlab_core::{Lbn, Lpn, PageTag, Pbn, Ppn};

/// "No entry" in the `u32` tables of this family.
pub(crate) const NONE: u32 = u32::MAX;

/// [`Shape::lbn`] of a block holding pages of several logical blocks.
pub(crate) const MIXED: u32 = u32::MAX - 1;

/// The pool of erased blocks, first in first out, or least-erased first under dynamic
/// wear levelling; under static levelling it also knows every block in use (taken and
/// not yet returned) by its erase count, and moves cold data blocks ([`level`]).
#[derive(Clone, Debug)]
pub(crate) struct FreePool {
    blocks: FreeBlocks,
    /// Static levelling: the blocks in use, keyed by their erase count when taken.
    wl: Option<StaticLeveling>,
    /// Static levelling: each free block's erase count when it was returned (the key
    /// it enters the in-use set with when taken).
    erases: Vec<u32>,
}

impl FreePool {
    /// A pool holding every block of the device (a new device: none erased yet),
    /// least-erased first if `dynamic`, retiring blocks at `scheme`'s `pe_limit` (0:
    /// never) while at least `min_blocks` are left ([`Retirement`]).
    ///
    /// Under `wear_leveling = "static"` the pool also hands out its most-worn block for
    /// [`level`]'s moves, at a spread past `wl_threshold`.
    pub(crate) fn all(
        geo: &Geometry,
        wear_leveling: WearLeveling,
        wl_threshold: u32,
        scheme: &'static str,
        pe_limit: u32,
        min_blocks: u32,
    ) -> FreePool {
        let statik = wear_leveling == WearLeveling::Static;
        let mut blocks = FreeBlocks::new(geo.blocks, 1, wear_leveling != WearLeveling::Off)
            .with_retirement(Retirement::new(scheme, geo.blocks, pe_limit, min_blocks));
        if statik {
            blocks = blocks.with_most_worn();
        }
        (0..geo.blocks).for_each(|b| blocks.push(Pbn(b), 0));
        FreePool {
            blocks,
            wl: statik.then(|| StaticLeveling::new(geo.blocks, wl_threshold)),
            erases: if statik {
                vec![0; geo.blocks as usize]
            } else {
                Vec::new()
            },
        }
    }

    /// An empty first-in first-out pool with room for every block of the device
    /// (recovery fills it; [`FreePool::refill`] moves it into the scheme's pool).
    pub(crate) fn empty(geo: &Geometry) -> FreePool {
        FreePool {
            blocks: FreeBlocks::new(geo.blocks, 1, false),
            wl: None,
            erases: Vec::new(),
        }
    }

    /// Takes the oldest (or least-erased) erased block. Panics if none is left: each
    /// scheme sizes its reserve so that this cannot happen.
    pub(crate) fn take(&mut self, scheme: &str) -> Pbn {
        let b = self
            .blocks
            .pop()
            .unwrap_or_else(|| panic!("{scheme}: no free block left (merge reserve broken)"));
        if let Some(wl) = &mut self.wl {
            wl.sealed(b, self.erases[b.idx()]);
        }
        b
    }

    /// Static levelling: whether a block in use with `erases` erases is worn past the
    /// least-worn free block by more than `wl_threshold`, so that its data had better
    /// move to that block than be rewritten in place (`block`).
    pub(crate) fn worn_past_free(&self, erases: u32) -> bool {
        let Some(wl) = &self.wl else {
            return false;
        };
        self.blocks
            .peek_least_worn()
            .is_some_and(|(_, least)| erases > least.saturating_add(wl.threshold()))
    }

    /// A block in use was erased where it stays in use (`block`'s in-place rewrite):
    /// under static levelling its key is its new erase count. Call before returning it
    /// if it retires ([`FreePool::retires`]).
    pub(crate) fn erased_in_place(&mut self, flash: &Flash, pbn: Pbn) {
        if let Some(wl) = &mut self.wl {
            let erases = flash.erase_count(pbn);
            wl.unsealed(pbn);
            wl.erased(erases);
            wl.sealed(pbn, erases);
        }
    }

    /// Whether a block erased `erases` times retires when it is returned.
    pub(crate) fn retires(&self, erases: u32) -> bool {
        self.blocks.retirement().reached(erases)
    }

    /// The retired blocks (erased, never used again).
    pub(crate) fn retired(&self) -> &[Pbn] {
        self.blocks.retirement().retired()
    }

    /// Reports `retired_blocks` under a P/E limit, and `wl_migrations` and
    /// `wl_pages_copied` under static levelling.
    pub(crate) fn report(&self, extra: &mut Sink) {
        self.blocks.retirement().report(extra);
        if let Some(wl) = &self.wl {
            wl.report(extra);
        }
    }

    /// Zeroes the levelling counters (the scheme's `reset_stats`).
    pub(crate) fn reset_stats(&mut self) {
        if let Some(wl) = &mut self.wl {
            wl.reset_stats();
        }
    }

    /// Returns an erased block (which retires if it is at the P/E limit).
    pub(crate) fn put(&mut self, flash: &Flash, pbn: Pbn) {
        assert!(
            flash.is_erased(pbn),
            "{pbn:?} returned to the pool unerased"
        );
        let erases = flash.erase_count(pbn);
        if let Some(wl) = &mut self.wl {
            wl.unsealed(pbn);
            wl.erased(erases);
            self.erases[pbn.idx()] = erases;
        }
        self.blocks.push(pbn, erases);
    }

    /// Empties this pool and puts `from`'s blocks in it, in `from`'s order, keeping
    /// this pool's kind (recovery: the scan's pool into the scheme's). Erased blocks at
    /// the P/E limit retire again (the erase counts are on flash).
    /// Under static levelling every programmed block is in use again, keyed by its
    /// erase count on flash.
    pub(crate) fn refill(&mut self, flash: &Flash, from: FreePool) {
        self.blocks.clear();
        if let Some(wl) = &mut self.wl {
            wl.recover(flash.erase_counts());
        }
        for b in from.iter() {
            self.put(flash, b);
        }
        if let Some(wl) = &mut self.wl {
            for b in (0..flash.geometry().blocks).map(Pbn) {
                if !flash.is_erased(b) {
                    wl.sealed(b, flash.erase_count(b));
                }
            }
        }
    }

    /// The blocks, oldest first (least-erased first: in no particular order).
    pub(crate) fn iter(&self) -> impl Iterator<Item = Pbn> + '_ {
        self.blocks.iter()
    }
}

/// What the spare tags of one block say about it (power-loss recovery).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The logical block its pages belong to: [`NONE`] if erased, [`MIXED`] if several.
    pub lbn: u32,
    /// Every programmed page at offset `o` holds logical page `o` of `lbn`: a data
    /// block, or a log written in order from offset 0 (BAST's sequential log, FAST's SW
    /// log, or a FAST RW log that happened to receive one block's pages in order).
    pub in_place: bool,
    /// It holds a filler (version 0), which only a composed data block does.
    pub fillers: bool,
    /// Pages read back (programmed and not torn).
    pub pages: u32,
    /// A page of it reads as uncorrectable: a program, or the block's erase, was torn
    /// by a power cut (`ftlab_core::flash`, "Torn operations").
    pub torn: bool,
}

impl Shape {
    /// The shape of an erased block, and where every block's starts.
    const ERASED: Shape = Shape {
        lbn: NONE,
        in_place: true,
        fillers: false,
        pages: 0,
        torn: false,
    };
}

/// The block-mapped part of the spare scan: the shape of every block.
struct Shapes<'a> {
    geo: &'a Geometry,
    shapes: Vec<Shape>,
    /// The shape of the block being read.
    cur: Shape,
}

impl scan::Visit for Shapes<'_> {
    fn page(&mut self, _: Pbn, off: u32, _: Ppn, tag: PageTag) -> Result<bool, RecoverError> {
        // (An LPN beyond the capacity fails the scan right after.)
        let lbn = self.geo.lbn_of(tag.lpn).0;
        let shape = &mut self.cur;
        shape.lbn = match shape.lbn {
            NONE => lbn,
            l if l == lbn => l,
            _ => MIXED,
        };
        shape.in_place &= self.geo.lpn_offset(tag.lpn) == off;
        shape.fillers |= tag.version == 0;
        shape.pages += 1;
        Ok(true)
    }

    fn block(&mut self, pbn: Pbn) -> Result<(), RecoverError> {
        let shape = std::mem::replace(&mut self.cur, Shape::ERASED);
        if shape.fillers && !shape.in_place {
            return Err(RecoverError::Failed(format!(
                "{pbn:?} holds a filler but is not a data block"
            )));
        }
        self.shapes.push(shape);
        Ok(())
    }
}

/// The spare scan every block-mapped recovery starts from.
pub(crate) struct Scan {
    /// The shape of every block.
    pub shapes: Vec<Shape>,
    /// Newest version on flash per LPN (0: no data).
    pub newest: Vec<u32>,
    /// LPNs whose live copy has been chosen ([`Scan::claim`]).
    claimed: Vec<bool>,
}

impl Scan {
    /// Reads the spare area of every programmed page once (`Cause::Recovery`;
    /// `scan::newest_versions`) and refuses flash no block-mapped scheme can have
    /// written: an LPN beyond the capacity, or a filler away from its own offset.
    pub(crate) fn read(flash: &mut Flash) -> Result<Scan, RecoverError> {
        let geo = flash.geometry().clone();
        let mut shapes = Shapes {
            geo: &geo,
            shapes: Vec::with_capacity(geo.blocks as usize),
            cur: Shape::ERASED,
        };
        let newest = scan::newest_versions(flash, &mut shapes)?;
        for (b, shape) in shapes.shapes.iter_mut().enumerate() {
            shape.torn = shape.pages < flash.write_ptr(Pbn(b as u32));
        }
        Ok(Scan {
            shapes: shapes.shapes,
            newest,
            claimed: vec![false; geo.logical_pages as usize],
        })
    }

    /// The programmed blocks whose pages all sit at their own offsets, grouped by
    /// logical block: `(lbn, blocks in block-number order)`, ascending by `lbn`.
    pub(crate) fn in_place_by_lbn(&self) -> Vec<(Lbn, Vec<Pbn>)> {
        self.by_lbn(|s| s.in_place)
    }

    /// The programmed blocks holding pages of one logical block only (in place or
    /// not), grouped by logical block: `(lbn, blocks in block-number order)`,
    /// ascending by `lbn`.
    pub(crate) fn single_lbn_blocks(&self) -> Vec<(Lbn, Vec<Pbn>)> {
        self.by_lbn(|_| true)
    }

    /// The blocks of one logical block each whose shape passes `keep`, grouped by
    /// logical block, ascending.
    fn by_lbn(&self, keep: impl Fn(&Shape) -> bool) -> Vec<(Lbn, Vec<Pbn>)> {
        let mut pairs: Vec<(u32, Pbn)> = (self.shapes.iter().enumerate())
            .filter(|(_, s)| s.lbn != NONE && s.lbn != MIXED && keep(s))
            .map(|(b, s)| (s.lbn, Pbn(b as u32)))
            .collect();
        pairs.sort_unstable();
        pairs
            .chunk_by(|a, b| a.0 == b.0)
            .map(|g| (Lbn(g[0].0), g.iter().map(|p| p.1).collect()))
            .collect()
    }

    /// If the page at `ppn` holds the newest version of its LPN and no copy of it was
    /// claimed yet, marks it valid and returns its tag. Fillers are never claimed. Uses
    /// the tag [`Scan::read`] already read (no flash operation).
    pub(crate) fn claim(&mut self, flash: &mut Flash, ppn: Ppn) -> Option<PageTag> {
        let tag = flash.peek_tag(ppn).filter(|t| !t.is_uncorrectable())?;
        let l = tag.lpn.idx();
        if tag.version == 0 || tag.version != self.newest[l] || self.claimed[l] {
            return None;
        }
        self.claimed[l] = true;
        flash.mark_valid(ppn);
        Some(tag)
    }

    /// The last step of a block-mapped recovery, after the logs claimed their pages (a
    /// log copy wins a tie): installs the data block `data[lbn]` (or [`NONE`]) of every
    /// logical block in `dmap`, claims its pages in offset order, and returns the free
    /// pool (the erased blocks in block-number order).
    pub(crate) fn install_data_blocks(
        &mut self,
        flash: &mut Flash,
        dmap: &mut [u32],
        data: impl IntoIterator<Item = u32>,
    ) -> FreePool {
        let geo = flash.geometry().clone();
        for (l, d) in data.into_iter().enumerate() {
            if d == NONE {
                continue;
            }
            dmap[l] = d;
            for o in 0..flash.write_ptr(Pbn(d)) {
                self.claim(flash, geo.ppn(Pbn(d), o));
            }
        }
        erased_pool(flash)
    }

    /// Of two in-place blocks of one logical block, which is the data block and which
    /// the log written in order after it: `(data, log)`. The data block is the one with
    /// fillers; else the log is the shorter one (a page goes to the log only when the
    /// data block's write pointer is past its offset, so the data block is at least as
    /// long); at equal length, the one holding the newer version at the first offset
    /// where they differ (the log's copies were written after the data block's). If
    /// every version is equal the two hold the same data and either choice is right;
    /// `b` is taken as the log.
    pub(crate) fn data_and_log(
        &self,
        flash: &Flash,
        a: Pbn,
        b: Pbn,
    ) -> Result<(Pbn, Pbn), RecoverError> {
        let (sa, sb) = (self.shapes[a.idx()], self.shapes[b.idx()]);
        match (sa.fillers, sb.fillers) {
            (true, true) => {
                return Err(RecoverError::Failed(format!(
                    "{a:?} and {b:?} both hold fillers of lbn{}",
                    sa.lbn
                )))
            }
            (true, false) => return Ok((a, b)),
            (false, true) => return Ok((b, a)),
            _ => {}
        }
        let (wa, wb) = (flash.write_ptr(a), flash.write_ptr(b));
        if wa != wb {
            return Ok(if wa < wb { (b, a) } else { (a, b) });
        }
        let geo = flash.geometry();
        for off in 0..wa {
            let va = flash.peek_tag(geo.ppn(a, off)).map(|t| t.version);
            let vb = flash.peek_tag(geo.ppn(b, off)).map(|t| t.version);
            if va != vb {
                return Ok(if va > vb { (b, a) } else { (a, b) });
            }
        }
        Ok((a, b))
    }
}

// --- Torn operations: the repair step of recovery -----------------------------------

/// For every LPN, the newest version on flash (fillers and torn pages aside), the
/// block holding it, and the newest version held by any *other* block: enough to tell
/// whether a block holds anything no other block has. Built from the tags the spare
/// scan already read (no flash operation).
pub(crate) struct Copies {
    /// Per LPN: (newest version, its block or NONE, newest version in another block).
    top: Vec<(u32, u32, u32)>,
}

impl Copies {
    /// The copies on flash now.
    pub(crate) fn read(flash: &Flash) -> Copies {
        let geo = flash.geometry();
        let mut top = vec![(0u32, NONE, 0u32); geo.logical_pages as usize];
        for b in 0..geo.blocks {
            for tag in data_tags(flash, Pbn(b)) {
                let Some(e) = top.get_mut(tag.lpn.idx()) else {
                    continue;
                };
                let v = tag.version;
                if e.1 == b {
                    e.0 = e.0.max(v);
                } else if v > e.0 {
                    *e = (v, b, e.0);
                } else {
                    e.2 = e.2.max(v);
                }
            }
        }
        Copies { top }
    }

    /// The newest version of `lpn` held by a block other than `pbn` (0: none).
    fn other(&self, lpn: Lpn, pbn: Pbn) -> u32 {
        let (v, b, w) = self.top[lpn.idx()];
        if b == pbn.0 {
            w
        } else {
            v
        }
    }

    /// Whether erasing `pbn` loses nothing: every data page of it has a copy as new or
    /// newer in another block (a merge's destination cut half way holds only copies; a
    /// source whose pages were all copied before the cut holds nothing new either).
    pub(crate) fn redundant(&self, flash: &Flash, pbn: Pbn) -> bool {
        data_tags(flash, pbn).all(|t| self.other(t.lpn, pbn) >= t.version)
    }

    /// Whether every data page of `pbn` is at least as new as any other copy of its
    /// LPN and some is strictly newer than an existing other copy: the block a merge or
    /// an OSM write was filling when the power failed (its pages are copies or the cut
    /// request's own), when the blocks it was replacing still hold everything else.
    fn dominates(&self, flash: &Flash, pbn: Pbn) -> Option<usize> {
        let mut newer = 0;
        for t in data_tags(flash, pbn) {
            let o = self.other(t.lpn, pbn);
            if o > t.version {
                return None;
            }
            newer += usize::from(o > 0 && o < t.version);
        }
        (newer > 0).then_some(newer)
    }

    /// The newest version of `lpn` on flash (0: none).
    fn newest(&self, lpn: Lpn) -> u32 {
        self.top[lpn.idx()].0
    }
}

/// The readable data pages of a block (no filler, no torn page).
fn data_tags(flash: &Flash, pbn: Pbn) -> impl Iterator<Item = PageTag> + '_ {
    let geo = flash.geometry();
    (0..flash.write_ptr(pbn))
        .filter_map(move |o| flash.peek_tag(geo.ppn(pbn, o)))
        .filter(|t| !t.is_uncorrectable() && t.version > 0)
}

/// The logical block of a block in use: that of its first readable page (`None` if
/// none is readable).
pub(crate) fn block_lbn(flash: &Flash, pbn: Pbn) -> Option<Lbn> {
    let geo = flash.geometry();
    (0..flash.write_ptr(pbn))
        .filter_map(|o| flash.peek_tag(geo.ppn(pbn, o)))
        .find(|t| !t.is_uncorrectable())
        .map(|t| geo.lbn_of(t.lpn))
}

/// The repair step of a block-mapped recovery after torn operations (`ftlab_core::flash`,
/// "Torn operations"), before roles are assigned. One step per call; returns whether it
/// changed the flash (the caller scans again, since versions and shapes moved):
/// 1. every programmed block with no readable page (a torn erase, or a torn first
///    program) is garbage: erased;
/// 2. a logical block whose own blocks `groups` are not a state the scheme can run on
///    (`fits`: more blocks than its roles, a torn page, a full log, two data-shaped
///    blocks it cannot tell apart) loses, one at a time, a block holding nothing no
///    other block holds ([`Copies::redundant`]; torn blocks first, then logs, then the
///    highest number), while that leaves more than one;
/// 3. if it still does not fit, its newest copies are composed into a free block
///    (`usable`: erased and not retiring) and every old block of it is erased: the
///    merge the cut interrupted, done again from flash; with no free block (the cut
///    struck a merge that had taken the last one), the block that dominates the others
///    ([`Copies::dominates`]) is erased instead, which takes the logical block back to
///    before that merge.
///
/// Every step keeps, for every LPN, a copy of its newest version on flash, unless the
/// newest is only in a destination block being filled (the cut request's own pages),
/// which step 3's fallback drops: the oracle accepts either for those pages. All
/// operations are `Cause::Recovery`; a power cut inside them leaves a state this
/// recovers from again (a torn erase is garbage, a half-composed block redundant).
pub(crate) fn repair(
    flash: &mut Flash,
    scan: &Scan,
    groups: &[(Lbn, Vec<Pbn>)],
    fits: impl Fn(&Flash, &Scan, &Copies, &[Pbn]) -> bool,
    usable: impl Fn(&Flash, Pbn) -> bool,
) -> Result<bool, RecoverError> {
    let geo = flash.geometry().clone();
    let garbage: Vec<Pbn> = (0..geo.blocks)
        .map(Pbn)
        .filter(|&b| !flash.is_erased(b) && scan.shapes[b.idx()].pages == 0)
        .collect();
    for &b in &garbage {
        flash.erase(b, Cause::Recovery);
    }
    if !garbage.is_empty() {
        return Ok(true);
    }
    let mut copies = Copies::read(flash);
    for (lbn, blocks) in groups {
        if fits(flash, scan, &copies, blocks) {
            continue;
        }
        let mut set = blocks.clone();
        let mut changed = false;
        while set.len() > 1 && !fits(flash, scan, &copies, &set) {
            let victim = (set.iter().copied())
                .filter(|&b| copies.redundant(flash, b))
                .max_by_key(|&b| {
                    let s = scan.shapes[b.idx()];
                    (s.torn, !s.in_place, b)
                });
            let Some(v) = victim else { break };
            flash.erase(v, Cause::Recovery);
            set.retain(|&b| b != v);
            copies = Copies::read(flash);
            changed = true;
        }
        if changed {
            return Ok(true);
        }
        if let Some(free) = (0..geo.blocks)
            .map(Pbn)
            .find(|&b| flash.is_erased(b) && usable(flash, b))
        {
            consolidate(flash, &copies, *lbn, &set, free);
            return Ok(true);
        }
        let undo = (set.iter().copied())
            .filter(|&b| scan.shapes[b.idx()].in_place)
            .filter_map(|b| copies.dominates(flash, b).map(|n| (n, b)))
            .max();
        let Some((_, undo)) = undo.filter(|_| set.len() > 1) else {
            return Err(RecoverError::Failed(format!(
                "{lbn:?}: blocks {set:?} are no state the scheme writes and no free block \
                 is left to merge them"
            )));
        };
        flash.erase(undo, Cause::Recovery);
        return Ok(true);
    }
    Ok(false)
}

/// Recovery found more logs of a kind than the scheme allocates, after [`repair`]: one
/// of the in-place blocks it took for logs (`logs`; in-order logs, or FAST's RW logs
/// without SW logs) is the destination of a merge, a levelling move or an OSM write
/// the power cut stopped. If one holds nothing no other block holds, it is erased;
/// else the in-place blocks of the logical block of one of them are merged into a
/// free block (`usable`) and erased ([`repair`]'s step 3), which keeps the newest
/// copy of every page. Work under `Cause::Recovery`; the caller scans again. With
/// neither, the flash is no state the scheme writes.
pub(crate) fn drop_extra_log(
    flash: &mut Flash,
    scan: &Scan,
    logs: impl IntoIterator<Item = Pbn>,
    usable: impl Fn(&Flash, Pbn) -> bool,
    what: impl FnOnce() -> String,
) -> Result<(), RecoverError> {
    let copies = Copies::read(flash);
    // The in-place blocks of the logical blocks of in-place logs, the data blocks too
    // (which of a pair took which role may be a guess).
    let by_lbn = scan.in_place_by_lbn();
    let groups: Vec<&(Lbn, Vec<Pbn>)> = (logs.into_iter())
        .filter(|g| scan.shapes[g.idx()].in_place)
        .filter_map(|g| {
            let lbn = scan.shapes[g.idx()].lbn;
            by_lbn
                .iter()
                .find(|(l, blocks)| l.0 == lbn && blocks.len() > 1)
        })
        .collect();
    let redundant = (groups.iter())
        .flat_map(|g| g.1.iter().copied())
        .find(|&b| copies.redundant(flash, b));
    if let Some(b) = redundant {
        flash.erase(b, Cause::Recovery);
        return Ok(());
    }
    let geo = flash.geometry().clone();
    let free = (0..geo.blocks)
        .map(Pbn)
        .find(|&b| flash.is_erased(b) && usable(flash, b));
    let group = groups.first().copied();
    match (group, free) {
        (Some((lbn, blocks)), Some(free)) => {
            consolidate(flash, &copies, *lbn, blocks, free);
            Ok(())
        }
        _ => Err(RecoverError::Failed(what())),
    }
}

/// Composes the newest copy on flash of every page of `lbn` that `blocks` hold into
/// the free block `dst` (a filler where none is held below the last one), then erases
/// `blocks` (repair step 3). A page whose newest copy lies elsewhere (a FAST RW log)
/// is left there. The composed pages are left invalid: the scan that follows claims
/// them.
fn consolidate(flash: &mut Flash, copies: &Copies, lbn: Lbn, blocks: &[Pbn], dst: Pbn) {
    let geo = flash.geometry().clone();
    let ppb = geo.pages_per_block;
    let first = lbn.0 * ppb;
    let mut srcs = vec![None; ppb as usize];
    for &b in blocks {
        for o in 0..flash.write_ptr(b) {
            let ppn = geo.ppn(b, o);
            let Some(t) = flash.peek_tag(ppn) else {
                continue;
            };
            if !t.is_uncorrectable() && t.version > 0 && t.version == copies.newest(t.lpn) {
                let at = geo.lpn_offset(t.lpn) as usize;
                debug_assert_eq!(geo.lbn_of(t.lpn), lbn);
                srcs[at].get_or_insert(ppn);
            }
        }
    }
    if let Some(last) = srcs.iter().rposition(Option::is_some) {
        for (o, src) in srcs[..=last].iter().enumerate() {
            let to = geo.ppn(dst, o as u32);
            match *src {
                Some(from) => {
                    flash.copy(from, to, Cause::Recovery);
                }
                None => {
                    let filler = PageTag {
                        lpn: Lpn(first + o as u32),
                        version: 0,
                    };
                    flash.program(to, filler, Cause::Recovery);
                }
            }
            flash.invalidate(to);
        }
    }
    for &b in blocks {
        flash.erase(b, Cause::Recovery);
    }
}

/// A block-mapped recovery's scan, repaired until it needs no repair
/// ([`repair`]; `groups` names each logical block's own blocks in a scan). Reads
/// every programmed spare area once per pass; untorn flash needs one pass.
pub(crate) fn scan_repaired(
    flash: &mut Flash,
    groups: impl Fn(&Scan) -> Vec<(Lbn, Vec<Pbn>)>,
    fits: impl Fn(&Flash, &Scan, &Copies, &[Pbn]) -> bool,
    usable: impl Fn(&Flash, Pbn) -> bool,
) -> Result<Scan, RecoverError> {
    let passes = 2 * flash.geometry().blocks + 8;
    for _ in 0..passes {
        let scan = Scan::read(flash)?;
        if !repair(flash, &scan, &groups(&scan), &fits, &usable)? {
            return Ok(scan);
        }
    }
    Err(RecoverError::Failed(
        "the repair of torn operations does not converge".into(),
    ))
}

/// Static wear levelling of the block-mapped family (`wear_leveling = "static"`; the
/// module docs), called by a scheme once per host request, after it: when the block in
/// use with the fewest erases has more than `wl_threshold` erases fewer than the
/// most-erased block and is the data block of its logical block (`dmap`), its pages
/// move to the most-worn free block, offset for offset up to its write pointer (a
/// valid page is copied, any other offset gets a filler, so the new block has the
/// shape of the old and recovery tells it as a data block), the old block is erased
/// and returned (the least-worn-first pool hands it out next) and `dmap` names the new
/// one. Flash work under `Cause::Gc`; fillers are added to `counters.fillers`. One
/// block per call; nothing if the pool is not static or no free block is more worn
/// than the cold one. If the coldest block is not a data block (a log block), nothing
/// moves and it is returned: the scheme may reclaim it its own way. O(log blocks).
pub(crate) fn level(
    flash: &mut Flash,
    pool: &mut FreePool,
    dmap: &mut [u32],
    counters: &mut MergeCounters,
) -> Option<Pbn> {
    let cold = pool.wl.as_ref().and_then(StaticLeveling::candidate)?;
    let geo = flash.geometry().clone();
    let lbn = block_lbn(flash, cold)?;
    if dmap.get(lbn.idx()) != Some(&cold.0) {
        return Some(cold);
    }
    let (dst, dst_erases) = pool.blocks.pop_most_worn()?;
    if dst_erases <= flash.erase_count(cold) {
        // Parking the data there would not rest worn flash.
        pool.blocks.unpop(dst, dst_erases);
        return None;
    }
    let first_lpn = lbn.0 * geo.pages_per_block;
    let mut copied = 0;
    for o in 0..flash.write_ptr(cold) {
        let (src, to) = (geo.ppn(cold, o), geo.ppn(dst, o));
        if flash.is_valid(src) {
            flash.copy(src, to, Cause::Gc);
            flash.invalidate(src);
            copied += 1;
        } else {
            let filler = PageTag {
                lpn: Lpn(first_lpn + o),
                version: 0,
            };
            flash.program(to, filler, Cause::Gc);
            flash.invalidate(to);
            counters.fillers += 1;
        }
    }
    dmap[lbn.idx()] = dst.0;
    let wl = pool.wl.as_mut().expect("checked above");
    wl.sealed(dst, dst_erases);
    wl.moved(copied);
    flash.erase(cold, Cause::Gc);
    pool.put(flash, cold);
    None
}

/// Counts a log block reclaimed for static levelling (the scheme's merge did the work)
/// as a levelling move of `pages` pages.
pub(crate) fn levelled_log(pool: &mut FreePool, pages: u64) {
    if let Some(wl) = &mut pool.wl {
        wl.moved(pages);
    }
}

/// The erased blocks, in block-number order (recovery).
pub(crate) fn erased_pool(flash: &Flash) -> FreePool {
    let mut pool = FreePool::empty(flash.geometry());
    for pbn in scan::erased(flash) {
        pool.put(flash, pbn);
    }
    pool
}

/// Deep check of a block-mapped scheme. Roles: no block is the data block of two
/// logical blocks (`dmap`); `logs` marks the scheme's log blocks in the in-use bits it
/// is handed, and checks them; the free blocks are erased; every block has exactly one
/// role. Then the live copy `live(lpn)` of every LPN against the flash
/// (`scan::check_map`).
pub(crate) fn check(
    flash: &Flash,
    dmap: &[u32],
    pool: &FreePool,
    logs: impl FnOnce(&mut [bool]) -> Result<(), String>,
    live: impl Fn(Lpn) -> Option<Ppn>,
) -> Result<(), String> {
    let mut in_use = vec![false; flash.geometry().blocks as usize];
    for &d in dmap.iter().filter(|&&d| d != NONE) {
        if std::mem::replace(&mut in_use[d as usize], true) {
            return Err(format!("pbn{d} is the data block of two logical blocks"));
        }
    }
    logs(&mut in_use)?;
    for b in pool.iter() {
        if std::mem::replace(&mut in_use[b.idx()], true) || !flash.is_erased(b) {
            return Err(format!("free {b:?} is in use or not erased"));
        }
    }
    for &b in pool.retired() {
        if std::mem::replace(&mut in_use[b.idx()], true) || !flash.is_erased(b) {
            return Err(format!("retired {b:?} is in use or not erased"));
        }
    }
    if in_use.iter().any(|&u| !u) {
        return Err("a block is neither data, log nor free (leaked)".into());
    }
    let lpns = flash.geometry().logical_pages;
    scan::check_map(flash, lpns, flash.total_valid(), |l| live(Lpn(l)), |_| true)
}

/// Where the page at one offset of a block being composed comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Src {
    /// No data: a filler if a later offset has data, else left free.
    Hole,
    /// Copy this valid page (a read and a program, cause `Merge`), then invalidate it.
    Copy(Ppn),
    /// A host page being written (a program, cause `Host`).
    Host(PageTag),
    /// A page read into controller RAM before its block was erased (a program, cause
    /// `Merge`; the read was counted when it happened).
    Ram(PageTag),
}

/// What [`compose`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Composed {
    /// Pages copied (`Copy` and `Ram`).
    pub copied: u64,
    /// Filler pages programmed.
    pub fillers: u64,
    /// Pages programmed in all.
    pub programmed: u64,
}

/// Programs offsets `from..=last` of `dst`, where `last` is the last offset of `srcs`
/// that is not a hole; `srcs[o]` says where the page of offset `o` comes from (entries
/// before `from` are ignored). `first_lpn` is the LPN of offset 0 (for filler tags).
pub(crate) fn compose(
    flash: &mut Flash,
    dst: Pbn,
    from: u32,
    srcs: &[Src],
    first_lpn: u32,
    filler_cause: Cause,
) -> Composed {
    compose_noting(flash, dst, from, srcs, first_lpn, filler_cause, |_| {})
}

/// [`compose`], calling `programmed(o)` once offset `o` is on flash (`block`'s
/// in-place rewrite keeps count of what is still only in RAM).
pub(crate) fn compose_noting(
    flash: &mut Flash,
    dst: Pbn,
    from: u32,
    srcs: &[Src],
    first_lpn: u32,
    filler_cause: Cause,
    mut programmed: impl FnMut(u32),
) -> Composed {
    let mut done = Composed::default();
    let Some(last) = srcs.iter().rposition(|s| *s != Src::Hole) else {
        return done;
    };
    assert_eq!(
        flash.write_ptr(dst),
        from,
        "compose into {dst:?} must start at its write pointer"
    );
    assert_eq!(srcs.len() as u32, flash.geometry().pages_per_block);
    let mut o = from;
    while o <= last as u32 {
        let dst_ppn = flash.geometry().ppn(dst, o);
        // A run of copies from consecutive pages of one block (a merge's pages that keep
        // their offsets), moved in one call: the same operations as page by page.
        let run_from = match srcs[o as usize] {
            Src::Copy(src) if flash.block_of(src) != dst => Some(src),
            _ => None,
        };
        if let Some(src) = run_from {
            let in_block = flash.geometry().pages_per_block - flash.geometry().offset_of(src);
            let n = srcs[o as usize..=last]
                .iter()
                .take(in_block as usize)
                .zip(src.0..)
                .take_while(|&(s, p)| *s == Src::Copy(Ppn(p)))
                .count() as u32;
            if n > 1 {
                #[cfg(debug_assertions)]
                for i in 0..n {
                    let tag = flash.peek_tag(Ppn(src.0 + i));
                    debug_assert_eq!(
                        tag.map(|t| t.lpn.0),
                        Some(first_lpn + o + i),
                        "copy of a misplaced page"
                    );
                }
                flash.move_run(src, dst_ppn, n, Cause::Merge);
                for i in 0..n {
                    programmed(o + i);
                }
                done.copied += n as u64;
                done.programmed += n as u64;
                o += n;
                continue;
            }
        }
        match srcs[o as usize] {
            Src::Hole => {
                let filler = PageTag {
                    lpn: Lpn(first_lpn + o),
                    version: 0,
                };
                flash.program(dst_ppn, filler, filler_cause);
                flash.invalidate(dst_ppn);
                done.fillers += 1;
            }
            Src::Copy(src) => {
                let tag = flash.copy(src, dst_ppn, Cause::Merge);
                debug_assert_eq!(tag.lpn.0, first_lpn + o, "copy of a misplaced page");
                flash.invalidate(src);
                done.copied += 1;
            }
            Src::Host(tag) => flash.program(dst_ppn, tag, Cause::Host),
            Src::Ram(tag) => {
                flash.program(dst_ppn, tag, Cause::Merge);
                done.copied += 1;
            }
        }
        programmed(o);
        done.programmed += 1;
        o += 1;
    }
    done
}

/// The group a buffer is writing, for the co-optimised options of `bast` and `fast`
/// (co-op-buffer-ftl.txt): its logical block, whether the buffer padded it (a switch
/// merge of it is then a padding switch merge, PSM, §6.3), and the offsets a BA-BM full
/// merge has already written from the buffer (§3), which the group's write skips.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    current: Option<(Lbn, bool)>,
    taken: Vec<bool>,
}

impl Group {
    /// No group, for blocks of `ppb` pages.
    pub(crate) fn new(ppb: u32) -> Group {
        Group {
            current: None,
            taken: vec![false; ppb as usize],
        }
    }

    /// A group of `lbn` starts being written.
    pub(crate) fn begin(&mut self, lbn: Lbn, padded: bool) {
        self.current = Some((lbn, padded));
        self.taken.fill(false);
    }

    /// The group is written.
    pub(crate) fn end(&mut self) {
        self.current = None;
    }

    /// Whether `lbn` is the group being written and the buffer padded it.
    pub(crate) fn is_padded(&self, lbn: Lbn) -> bool {
        self.current == Some((lbn, true))
    }

    /// Whether the group's page at `offset` still has to be programmed: not if a BA-BM
    /// merge already wrote it. If it has, it is on its way to flash, so it is marked
    /// clean in the lent buffer first (a merge it triggers copies it from flash).
    pub(crate) fn admit(
        &self,
        offset: u32,
        lpn: Lpn,
        bv: &mut Option<&mut dyn BufferView>,
    ) -> bool {
        if self.taken[offset as usize] {
            return false;
        }
        if let Some(v) = bv.as_deref_mut() {
            v.mark_clean(lpn);
        }
        true
    }

    /// BA-BM (co-op-buffer-ftl.txt §3) in a full merge of `lbn`: if the buffer holds
    /// `lpn` (at `offset`) dirty, the merge programs the buffer's copy instead of `src`
    /// (whose flash copy is dropped), the page is marked clean there, and the group's
    /// write skips it if it is `lbn`'s. Returns whether the buffer's copy was taken.
    pub(crate) fn take_dirty(
        &mut self,
        flash: &mut Flash,
        v: &mut dyn BufferView,
        lbn: Lbn,
        offset: u32,
        src: &mut Src,
    ) -> bool {
        let lpn = Lpn(lbn.0 * flash.geometry().pages_per_block + offset);
        let Some(tag) = v.dirty_copy(lpn) else {
            return false;
        };
        if let Src::Copy(p) = *src {
            flash.invalidate(p);
        }
        *src = Src::Ram(tag);
        v.mark_clean(lpn);
        if self.current.is_some_and(|(g, _)| g == lbn) {
            self.taken[offset as usize] = true;
        }
        true
    }
}

/// Merge and utilisation counters shared by the family; folded into [`FtlStats`].
#[derive(Clone, Debug, Default)]
pub(crate) struct MergeCounters {
    /// Log blocks reclaimed (merged), for U_avg.
    pub reclaims: u64,
    /// Sum over reclaimed log blocks of written pages / pages per block.
    pub utilisation_sum: f64,
    /// Filler pages programmed.
    pub fillers: u64,
}

impl MergeCounters {
    /// Records a log block reclaimed with `written` of `ppb` pages written
    /// (superblock-ftl.txt §5.1: "the utilization of a U-block is defined as a fraction
    /// of written pages when the block is selected as a victim during the merge").
    pub(crate) fn reclaimed(&mut self, written: u32, ppb: u32) {
        self.reclaims += 1;
        self.utilisation_sum += written as f64 / ppb as f64;
    }

    /// Writes `u_avg` (only when a log block was reclaimed: 0 would be a lie),
    /// `log_reclaims` and `filler_pages` into `stats.extra`.
    pub(crate) fn report(&self, stats: &mut FtlStats) {
        if self.reclaims > 0 {
            let u = self.utilisation_sum / self.reclaims as f64;
            stats.extra.gauge("u_avg", "ratio", (u * 1e6).round() / 1e6);
        }
        stats
            .extra
            .counter("log_reclaims", "reclaims", self.reclaims as f64);
        stats
            .extra
            .counter("filler_pages", "pages", self.fillers as f64);
    }
}

/// A fixed-capacity open-addressing map from LPN to a log slot (linear probing,
/// backward-shift deletion): FAST's lookup of the latest copy of a page among its
/// shared log blocks. Sized once for every log page; never iterated, so its order
/// cannot reach a decision.
///
/// Beside the table, one bit per key says whether the key is present. Most lookups are
/// of absent keys (a full merge asks for each of a block's pages, a host write for the
/// page it overwrites, and few of them are in a log block); the bit answers those
/// without probing the table, whose probes miss the CPU cache on a large device. The
/// bits are a lookup filter, not part of the scheme's map, so [`LpnIndex::bytes`]
/// leaves them out (1 bit per logical page).
#[derive(Clone, Debug)]
pub(crate) struct LpnIndex {
    keys: Vec<u32>,
    vals: Vec<u32>,
    mask: usize,
    len: usize,
    present: Vec<u64>,
}

impl LpnIndex {
    /// A map for at most `entries` entries (load factor at most 1/2) of keys below
    /// `key_limit`.
    pub(crate) fn new(entries: usize, key_limit: u32) -> LpnIndex {
        let cap = (entries.max(1) * 2).next_power_of_two();
        LpnIndex {
            keys: vec![NONE; cap],
            vals: vec![NONE; cap],
            mask: cap - 1,
            len: 0,
            present: vec![0; (key_limit as usize).div_ceil(64)],
        }
    }

    #[inline]
    fn has(&self, key: u32) -> bool {
        self.present[key as usize / 64] & (1 << (key % 64)) != 0
    }

    #[inline]
    fn home(&self, key: u32) -> usize {
        // Fibonacci hashing spreads consecutive LPNs.
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & self.mask
    }

    #[inline]
    fn find(&self, key: u32) -> Result<usize, usize> {
        let mut i = self.home(key);
        loop {
            match self.keys[i] {
                k if k == key => return Ok(i),
                NONE => return Err(i),
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    /// The slot of `key`.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<u32> {
        if !self.has(key) {
            return None;
        }
        self.find(key).ok().map(|i| self.vals[i])
    }

    /// Sets the slot of `key`.
    #[inline]
    pub(crate) fn insert(&mut self, key: u32, val: u32) {
        assert!(key != NONE);
        match self.find(key) {
            Ok(i) => self.vals[i] = val,
            Err(i) => {
                assert!(self.len < self.keys.len() / 2, "LPN index over capacity");
                self.keys[i] = key;
                self.vals[i] = val;
                self.len += 1;
                self.present[key as usize / 64] |= 1 << (key % 64);
            }
        }
    }

    /// Which of the `n` keys `lo..lo + n` (`n` at most 64) are present: bit `i` for key
    /// `lo + i`, read off the presence bits a word or two at a time.
    #[inline]
    pub(crate) fn present_bits(&self, lo: u32, n: u32) -> u64 {
        debug_assert!((1..=64).contains(&n));
        let (w, s) = (lo as usize / 64, lo % 64);
        let word = |i: usize| self.present.get(i).copied().unwrap_or(0);
        let mut bits = word(w) >> s;
        if s != 0 {
            bits |= word(w + 1) << (64 - s);
        }
        if n < 64 {
            bits &= (1u64 << n) - 1;
        }
        bits
    }

    /// Removes `key` and returns its slot.
    #[inline]
    pub(crate) fn remove(&mut self, key: u32) -> Option<u32> {
        if !self.has(key) {
            // The usual answer (a merge asks for each page of a block): no call.
            return None;
        }
        self.remove_present(key)
    }

    /// [`LpnIndex::remove`] of a key whose presence bit is set.
    #[inline(never)]
    fn remove_present(&mut self, key: u32) -> Option<u32> {
        let mut hole = self.find(key).ok()?;
        let val = self.vals[hole];
        self.len -= 1;
        self.present[key as usize / 64] &= !(1 << (key % 64));
        // Backward-shift: move later entries of the probe run into the hole.
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let k = self.keys[i];
            if k == NONE {
                break;
            }
            let home = self.home(k);
            // Entry at i may move to the hole if its home is not in (hole, i].
            let dist_home = i.wrapping_sub(home) & self.mask;
            let dist_hole = i.wrapping_sub(hole) & self.mask;
            if dist_home >= dist_hole {
                self.keys[hole] = k;
                self.vals[hole] = self.vals[i];
                hole = i;
            }
        }
        self.keys[hole] = NONE;
        self.vals[hole] = NONE;
        Some(val)
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the table.
    pub(crate) fn bytes(&self) -> u64 {
        (self.keys.len() + self.vals.len()) as u64 * 4
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ftlab_core::flash::PageState;

    #[test]
    fn a_dynamic_pool_hands_out_the_least_erased_block_and_refill_keeps_its_kind() {
        let g = geometry(4, 4, 8);
        let mut flash = Flash::new(&g);
        let mut pool = FreePool::all(&g, WearLeveling::Dynamic, 16, "t", 0, 0);
        // Erase blocks 0..4 (0 twice), as merges would, and return them.
        let taken: Vec<Pbn> = (0..4).map(|_| pool.take("t")).collect();
        assert_eq!(taken, [Pbn(0), Pbn(1), Pbn(2), Pbn(3)]);
        for &b in &taken {
            flash.erase(b, Cause::Merge);
        }
        flash.erase(Pbn(0), Cause::Merge);
        for &b in taken.iter().rev() {
            pool.put(&flash, b);
        }
        // Never-erased 4..8 first, then 1, 2, 3 (once each, by number), then 0.
        let order: Vec<u32> = (0..8).map(|_| pool.take("t").0).collect();
        assert_eq!(order, [4, 5, 6, 7, 1, 2, 3, 0]);
        // Recovery's pool (block-number order) moves in keeping least-erased first.
        pool.refill(&flash, erased_pool(&flash));
        assert_eq!(pool.take("t"), Pbn(4));
        let mut fifo = FreePool::all(&g, WearLeveling::Off, 16, "t", 0, 0);
        fifo.refill(&flash, erased_pool(&flash));
        assert_eq!(fifo.take("t"), Pbn(0));
    }

    /// Static levelling's test workload for the family: 32 logical blocks of 8 pages
    /// on 40 blocks, filled, then 3,000 writes of 1 to 3 pages, 95% of them into the
    /// first 4 logical blocks (the rest stay cold). After it the deep checks pass and
    /// every page reads back its last version, before and after a power cycle into
    /// `fresh()`. Returns the erase-count spread (max - min), WAF (programs per host
    /// program) and `wl_migrations` (0 if not reported).
    pub(crate) fn hot_cold<F: ftlab_core::ftl::Ftl>(
        mut fresh: impl FnMut() -> F,
    ) -> (u32, f64, f64) {
        use ftlab_core::flash::FlashStats;
        let geo = geometry(8, 32, 40);
        let mut f = Flash::new(&geo);
        let mut ftl = fresh();
        let mut want = vec![0u32; geo.logical_pages as usize];
        let mut rng = ftlab_core::rng::SplitMix64::new(7);
        let mut write = |ftl: &mut F, f: &mut Flash, first: u32, n: u32| {
            let pages: Vec<PageTag> = (first..first + n)
                .map(|l| {
                    want[l as usize] += 1;
                    tag(l, want[l as usize])
                })
                .collect();
            ftl.write(f, &pages);
        };
        for lbn in 0..32 {
            write(&mut ftl, &mut f, lbn * 8, 8);
        }
        for _ in 0..3000 {
            let lbn = if rng.below(100) < 95 {
                rng.below(4)
            } else {
                rng.below(32)
            } as u32;
            let n = 1 + rng.below(3) as u32;
            let off = rng.below((8 - n + 1) as u64) as u32;
            write(&mut ftl, &mut f, lbn * 8 + off, n);
        }
        let reads_back = |ftl: &mut F, f: &mut Flash| {
            ftl.check(f).unwrap();
            for (l, &v) in want.iter().enumerate() {
                let got = ftl.read(f, Lpn(l as u32)).map(|t| t.version);
                assert_eq!(got, Some(v), "lpn{l}");
            }
        };
        reads_back(&mut ftl, &mut f);
        let s = f.stats();
        let waf = FlashStats::total(&s.programs) as f64 / s.programs[Cause::Host as usize] as f64;
        let ec = f.erase_counts();
        let spread = ec.iter().max().unwrap() - ec.iter().min().unwrap();
        let moved = ftl.stats().extra.get("wl_migrations").unwrap_or(0.0);
        let mut again = power_cycle(&mut f, fresh());
        reads_back(&mut again, &mut f);
        (spread, waf, moved)
    }

    /// Static levelling on each scheme of the family: the spread narrows against `off`
    /// (and `dynamic`), blocks move, at a WAF cost bounded by `max_cost` (a ratio).
    pub(crate) fn static_levelling_narrows<F: ftlab_core::ftl::Ftl>(
        mut make: impl FnMut(&str) -> F,
        max_cost: f64,
    ) {
        let (off, waf_off, _) = hot_cold(|| make("off"));
        let (dynamic, _, _) = hot_cold(|| make("dynamic"));
        let (levelled, waf, moved) = hot_cold(|| make("static"));
        println!(
            "spread off {off}, dynamic {dynamic}, static {levelled}; WAF off {waf_off:.3}, \
             static {waf:.3}; moves {moved}"
        );
        assert!(moved > 0.0);
        assert!(
            levelled < off && levelled < dynamic && levelled <= 2 * 4 + 2,
            "spread {levelled} under static, {off} off, {dynamic} dynamic"
        );
        assert!(
            waf < waf_off * max_cost,
            "WAF {waf:.3} under static, {waf_off:.3} off"
        );
    }

    /// A geometry of `logical_blocks` full blocks of `ppb` pages and `blocks` physical
    /// blocks, built directly so tests control the spare count exactly.
    pub(crate) fn geometry(ppb: u32, logical_blocks: u32, blocks: u32) -> Geometry {
        Geometry {
            page_size: 2048,
            pages_per_block: ppb,
            spare_bytes: 64,
            blocks,
            logical_pages: logical_blocks * ppb,
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
        }
    }

    fn tag(lpn: u32, version: u32) -> PageTag {
        PageTag {
            lpn: Lpn(lpn),
            version,
        }
    }

    /// Pages programmed on the device (what a recovery's spare scan must read).
    pub(crate) fn programmed(f: &Flash) -> u64 {
        let g = f.geometry();
        (0..g.blocks).map(|b| f.write_ptr(Pbn(b)) as u64).sum()
    }

    /// Torn operations: for every operation `k` of `step` (run on the state `setup`
    /// builds), cuts the power inside it, recovers a fresh instance from the flash
    /// (the deep checks must pass) and hands it to `check` with `k` and the pages the
    /// cut instance reported only in RAM ([`ftlab_core::ftl::Ftl::volatile_pages`]).
    /// Returns how many operations `step` has.
    pub(crate) fn cut_everywhere<F: ftlab_core::ftl::Ftl>(
        setup: impl Fn() -> (F, Flash),
        step: impl Fn(&mut F, &mut Flash),
        fresh: impl Fn() -> F,
        mut check: impl FnMut(&mut F, &mut Flash, u64, &[Lpn]),
    ) -> u64 {
        use ftlab_core::flash::PowerCut;
        // Cut at the 1st, 2nd, ... operation the countdown sees (a copy is one) until
        // the step completes before the cut.
        let mut k = 0;
        loop {
            k += 1;
            let (mut t, mut f) = setup();
            f.arm_power_cut(k);
            let cut =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step(&mut t, &mut f)));
            let Err(payload) = cut else {
                assert!(f.disarm_power_cut(), "an unstruck cut stays armed");
                break;
            };
            assert!(payload.downcast_ref::<PowerCut>().is_some(), "cut {k}");
            let mut lost = Vec::new();
            t.volatile_pages(&mut lost);
            f.power_cycle();
            let mut g = fresh();
            g.recover(&mut f).unwrap_or_else(|e| panic!("cut {k}: {e}"));
            f.check().unwrap();
            g.check(&f).unwrap_or_else(|e| panic!("cut {k}: {e}"));
            check(&mut g, &mut f, k, &lost);
        }
        k - 1
    }

    /// A page after a cut: `lpn` reads as one of `ok` (versions; 0: no data).
    pub(crate) fn reads_one_of<F: ftlab_core::ftl::Ftl>(
        t: &mut F,
        f: &mut Flash,
        lpn: u32,
        ok: &[u32],
        k: u64,
    ) {
        let got = t.read(f, Lpn(lpn)).map_or(0, |g| g.version);
        assert!(
            ok.contains(&got),
            "cut {k}: lpn{lpn} reads v{got}, not one of {ok:?}"
        );
    }

    /// A power loss: forgets validity and counters, recovers `fresh` from the flash,
    /// and checks that it read each programmed spare area once and nothing else, and
    /// that the rebuilt state passes the deep checks at once.
    pub(crate) fn power_cycle<F: ftlab_core::ftl::Ftl>(f: &mut Flash, mut fresh: F) -> F {
        use ftlab_core::flash::FlashStats;
        let pages = programmed(f);
        f.power_cycle();
        f.reset_stats();
        fresh.recover(f).unwrap();
        let s = f.stats();
        assert_eq!(s.spare_reads[Cause::Recovery as usize], pages);
        assert_eq!(FlashStats::total(&s.spare_reads), pages);
        assert_eq!(FlashStats::total(&s.page_reads), 0);
        assert_eq!(FlashStats::total(&s.programs), 0);
        assert_eq!(FlashStats::total(&s.erases), 0);
        f.check().unwrap();
        fresh.check(f).unwrap();
        f.reset_stats();
        fresh
    }

    #[test]
    fn scan_shapes_blocks_and_finds_the_newest_versions() {
        let geo = geometry(4, 2, 4);
        let mut f = Flash::new(&geo);
        for (ppn, t) in [
            (0, tag(0, 1)),
            (1, tag(1, 0)),
            (4, tag(2, 2)),
            (8, tag(4, 1)),
        ] {
            f.program(Ppn(ppn), t, Cause::Host);
        }
        f.program(Ppn(9), tag(3, 5), Cause::Host);
        f.power_cycle();
        let mut scan = Scan::read(&mut f).unwrap();
        let shape = |lbn, in_place, fillers, pages| Shape {
            lbn,
            in_place,
            fillers,
            pages,
            torn: false,
        };
        assert_eq!(
            scan.shapes,
            [
                shape(0, true, true, 2),
                shape(0, false, false, 1),
                shape(MIXED, false, false, 2),
                shape(NONE, true, false, 0)
            ]
        );
        assert_eq!(scan.newest, [1, 0, 2, 5, 1, 0, 0, 0]);
        assert_eq!(scan.in_place_by_lbn(), [(Lbn(0), vec![Pbn(0)])]);
        assert_eq!(scan.claim(&mut f, Ppn(1)), None, "a filler is never live");
        assert_eq!(scan.claim(&mut f, Ppn(9)), Some(tag(3, 5)));
        assert_eq!(scan.claim(&mut f, Ppn(9)), None, "claimed once");
        assert!(f.is_valid(Ppn(9)) && !f.is_valid(Ppn(0)));
        assert_eq!(f.stats().spare_reads[Cause::Recovery as usize], 5);
    }

    #[test]
    fn torn_pages_are_skipped_never_claimed_and_a_block_of_them_is_garbage() {
        let geo = geometry(4, 2, 4);
        let mut f = Flash::new(&geo);
        f.program(Ppn(0), tag(0, 1), Cause::Host);
        // A torn program at offset 1 of block 0, a torn erase of block 1.
        f.arm_power_cut(1);
        let cut = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f.program(Ppn(1), tag(1, 1), Cause::Host)
        }));
        assert!(cut.is_err());
        f.program(Ppn(4), tag(4, 1), Cause::Host);
        f.invalidate(Ppn(4));
        f.arm_power_cut(1);
        let cut = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f.erase(Pbn(1), Cause::Merge)
        }));
        assert!(cut.is_err());
        f.power_cycle();
        let mut scan = Scan::read(&mut f).unwrap();
        assert!(scan.shapes[0].torn && scan.shapes[0].pages == 1);
        assert!(scan.shapes[1].torn && scan.shapes[1].pages == 0);
        assert_eq!(
            scan.claim(&mut f, Ppn(1)),
            None,
            "a torn page is never live"
        );
        assert_eq!(scan.claim(&mut f, Ppn(0)), Some(tag(0, 1)));
        f.power_cycle();
        let groups = |s: &Scan| s.in_place_by_lbn();
        let scan = scan_repaired(&mut f, groups, |_, _, _, _| true, |_, _| true).unwrap();
        assert!(f.is_erased(Pbn(1)), "the torn erase is erased again");
        assert!(
            !scan.shapes[0].torn || f.write_ptr(Pbn(0)) == 2,
            "block 0 is kept"
        );
    }

    #[test]
    fn the_log_of_an_in_place_pair_is_the_shorter_else_the_newer() {
        let geo = geometry(4, 1, 4);
        let mut f = Flash::new(&geo);
        // Block 0: offsets 0-2 v1. Block 1: offsets 0-1 v2. Block 2: 0 v1, 1 v3, 2 v1.
        for (b, versions) in [(0, &[1, 1, 1][..]), (1, &[2, 2]), (2, &[1, 3, 1])] {
            for (o, &v) in versions.iter().enumerate() {
                f.program(geo.ppn(Pbn(b), o as u32), tag(o as u32, v), Cause::Host);
            }
        }
        f.power_cycle();
        let scan = Scan::read(&mut f).unwrap();
        let pair = |a, b| scan.data_and_log(&f, Pbn(a), Pbn(b)).unwrap();
        assert_eq!(pair(0, 1), (Pbn(0), Pbn(1)), "the shorter is the log");
        assert_eq!(pair(1, 0), (Pbn(0), Pbn(1)));
        assert_eq!(pair(0, 2), (Pbn(0), Pbn(2)), "equal length: the newer");
        assert_eq!(pair(2, 0), (Pbn(0), Pbn(2)));
        assert_eq!(pair(0, 0), (Pbn(0), Pbn(0)), "identical: either");
    }

    #[test]
    fn the_block_with_fillers_is_the_data_block() {
        let geo = geometry(4, 1, 4);
        let mut f = Flash::new(&geo);
        f.program(Ppn(0), tag(0, 2), Cause::Host);
        f.program(Ppn(4), tag(0, 0), Cause::Merge);
        f.program(Ppn(5), tag(1, 1), Cause::Merge);
        f.program(Ppn(8), tag(0, 0), Cause::Merge);
        f.power_cycle();
        let scan = Scan::read(&mut f).unwrap();
        assert_eq!(
            scan.data_and_log(&f, Pbn(0), Pbn(1)).unwrap(),
            (Pbn(1), Pbn(0))
        );
        assert!(scan.data_and_log(&f, Pbn(1), Pbn(2)).is_err());
    }

    #[test]
    fn compose_fills_holes_below_the_last_page_only() {
        let geo = geometry(4, 2, 4);
        let mut f = Flash::new(&geo);
        f.program(Ppn(0), tag(0, 1), Cause::Host);
        f.program(Ppn(1), tag(1, 1), Cause::Host);
        // Block 1 gets: offset 0 from a copy, offset 1 a hole, offset 2 new, offset 3 a
        // hole at the end (left free).
        let srcs = [
            Src::Copy(Ppn(0)),
            Src::Hole,
            Src::Host(tag(2, 1)),
            Src::Hole,
        ];
        let done = compose(&mut f, Pbn(1), 0, &srcs, 0, Cause::Merge);
        assert_eq!(
            done,
            Composed {
                copied: 1,
                fillers: 1,
                programmed: 3
            }
        );
        assert_eq!(f.state(Ppn(4)), PageState::Valid);
        assert_eq!(f.state(Ppn(5)), PageState::Invalid);
        assert_eq!(f.state(Ppn(6)), PageState::Valid);
        assert_eq!(f.state(Ppn(7)), PageState::Free);
        assert_eq!(f.state(Ppn(0)), PageState::Invalid, "copied source dropped");
        let s = f.stats();
        assert_eq!(s.page_reads[Cause::Merge as usize], 1);
        assert_eq!(s.programs[Cause::Merge as usize], 2, "copy + filler");
        assert_eq!(s.programs[Cause::Host as usize], 3);
    }

    #[test]
    fn compose_of_only_holes_programs_nothing() {
        let geo = geometry(4, 2, 4);
        let mut f = Flash::new(&geo);
        let done = compose(&mut f, Pbn(2), 0, &[Src::Hole; 4], 8, Cause::Merge);
        assert_eq!(done, Composed::default());
        assert!(f.is_erased(Pbn(2)));
    }

    #[test]
    fn lpn_index_matches_a_btreemap() {
        let mut idx = LpnIndex::new(64, 200);
        let mut reference = std::collections::BTreeMap::new();
        let mut x: u64 = 7;
        for step in 0..50_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Keys in a narrow range force long probe runs and many shifts.
            let key = ((x >> 33) % 200) as u32;
            if (x >> 20).is_multiple_of(2) && (reference.len() < 64 || reference.contains_key(&key))
            {
                idx.insert(key, step);
                reference.insert(key, step);
            } else {
                assert_eq!(idx.remove(key), reference.remove(&key));
            }
            assert_eq!(idx.len(), reference.len());
            let probe = ((x >> 40) % 200) as u32;
            assert_eq!(idx.get(probe), reference.get(&probe).copied());
        }
    }
}
