//! `dftl`: demand-based page-level mapping (DFTL), as tpm.txt §II describes it and as
//! the DFTL paper it cites (\[11\], Gupta, Kim and Urgaonkar, ASPLOS'09) defines it.
//!
//! The whole page table lives in translation pages on flash (`entries_per_page` entries
//! each); the global translation directory (GTD) in RAM holds each translation page's
//! PPN; the cached mapping table (CMT) holds single LPN -> PPN entries with a dirty bit,
//! replaced by LRU. A miss reads one translation page; evicting a dirty entry reads its
//! translation page, updates the one entry and writes the page to a new place (tpm.txt
//! §II, Fig. 1: "one cache miss leads to one read operation in the best case, but
//! produces two read operations and one write operation in the worst case"). Host data
//! goes to one current data block; GC of a data block updates the moved pages' entries
//! in the CMT when they are cached ("lazy copying" in \[11\]) and otherwise batches the
//! translation page updates, one read and one write per distinct translation page
//! ("batch updates" in \[11\]; tpm.txt Fig. 2 shows the unbatched worst case). GC of a
//! translation block moves its valid translation pages and updates the GTD. The block
//! pool, GC and translation pages are shared with `tpm` (see `demand.rs` for the choices
//! they make).
//!
//! Choices the papers leave open, as options or documented defaults:
//! - `cmt_bytes` (default 512 KiB): RAM for the CMT. "The size of CMT is set to 128KB,
//!   256KB, 512KB, and 1024KB ... we select 512 KB as the CMT size" (tpm.txt §IV-B.1).
//!   An entry costs 8 bytes, a 4-byte LPN and a 4-byte PPN (the dirty bit rides in a
//!   spare bit of the LPN); the CMT holds `cmt_bytes / 8` entries, at most one per
//!   logical page. The LRU links and the LPN -> slot index the simulator uses to find an
//!   entry in O(1) stand for the controller's lookup structure and are not counted.
//! - Replacement: plain LRU over entries, as tpm.txt §II and the issue describe; \[11\]
//!   uses a segmented LRU, which is not modelled.
//! - A dirty eviction writes back only the evicted entry, as tpm.txt §II says ("the
//!   corresponding mapping item in the page is updated to the version of that in the
//!   cache"); other dirty entries of the same translation page stay dirty.
//! - A miss inserts the entry for reads as well as writes; a trim is an update (the
//!   entry becomes unmapped and dirty), so it is looked up like a write.
//! - If the requested entry and an evicted dirty entry share a translation page, the
//!   page is read twice (the eviction completes before the fetch), the worst case of
//!   tpm.txt §II.
//! - Pages moved by GC go to the same current data block as host writes (the "CDB" of
//!   tpm.txt §III-C; `gc_frontier = "shared"`, default), or, with `"separate"` (issue
//!   23 item 2, not in the papers), to a data block of their own, opened without
//!   nesting a collection: one more open data block, so the geometry rule counts 2 open
//!   data blocks and the low-pool victim rule counts the room of the GC block (where
//!   the copies go). Recovery reopens up to two partly written data blocks, the first
//!   (in block-number order) for host writes, the second for GC copies (which was which
//!   is not on flash). Under `separate`, `ftl.extra` reports `stream_host_programs`,
//!   `stream_gc_programs`, `stream_host_blocks` and `stream_gc_blocks`.
//! - `mapping_bytes` = GTD (4 bytes per translation page) + CMT (8 bytes per entry).
//! - A device at rest has a clean cache (`settle`, after `--precondition fill` or
//!   `footprint`): each translation page holding dirty entries is read once and written
//!   once with all of them, and they stay cached, clean. The papers measure from a
//!   filled device but do not say what its CMT holds; without this, the fill leaves
//!   every cached entry dirty (the fill wrote each of them), so the first
//!   `cmt_bytes / 8` evictions of the measured run all write back a translation page
//!   the fill dirtied: on financial1 with a 512 MiB device, every eviction of the run
//!   was dirty and WA was 9.5. A real controller writes its dirty map entries back when
//!   idle or before power-off (it must, to survive one), so a device handed over after
//!   a fill has done so. Host flush-cache commands do not write the CMT back (not in
//!   the papers; the co-op experiments' flushes stay as they were).
//! - Power-loss recovery (not in the papers): a full spare scan that rebuilds the GTD
//!   and the mapping; the mappings of translation pages never written go back into
//!   the CMT as dirty, those on flash are rewritten; see `demand.rs` for the choice and
//!   its cost. The partly written data block, at most
//!   one, becomes the current data block again (one per die under a multi-die
//!   `die_alloc`, below).
//! - Torn operations (issue 25 item 3, not in the papers; the shared part is in
//!   `demand.rs`): recovery skips torn pages and erases a block with no readable page,
//!   so a block whose first program was torn is neither a second open translation
//!   block nor an extra open data block. A host write takes its data page (which may
//!   collect garbage) before it drops the old copy from the CMT entry: GC must not
//!   erase the last durable copy of a page before its new version is programmed (the
//!   first torn runs lost pages that way). \[11\]'s lazy copying and batch updates are
//!   power-safe as they are here: the translation pages on flash are a cache of the
//!   data pages' spare tags, which recovery reads.
//! - Die-aware allocation (issue 22 item 3, not in the papers, which model one chip):
//!   `die_alloc = "single"` (default: the one current data block), `"round_robin"`,
//!   `"static"` or `"least_busy"`, as `page` has them: one current data block per die
//!   (dies: channels x dies of parallel timing, 1 under serial timing, where the
//!   three are `single`'s one block; `min(dies, blocks)`), host writes dealt to the
//!   dies in turn, by LPN (`l % dies`) or to the die the parallel timing model has
//!   free first (read off `Flash::clock`; in turn without a die clock). GC copies go
//!   through the same choice; under `gc_frontier = "separate"` each die also has a GC
//!   data block (so `2 x dies` open data blocks). The translation block stays one,
//!   opened from the die with the most free blocks. Free blocks are kept per die, a
//!   die with none borrowing from the die with the most (so under `static` an LPN is
//!   on die `l % dies` unless its die's pool ran dry); GC is global by default
//!   (`gc_scope`, below). GC keeps `dies`
//!   more blocks free (`ftl.extra.gc_threshold` reports the sum) and the geometry
//!   rule counts the open data blocks: see `demand.rs`. Recovery reopens the partly
//!   written data blocks as the dies' current data blocks (a block to a slot of its
//!   own die first, host slots before GC slots, in block-number order); more partly
//!   written data blocks than open slots is `RecoverError::Failed`.
//! - GC per die (issue 22 item 3, not in the papers; `page` and `dac` have it too):
//!   `gc_scope = "per_die"`, with a multi-die `die_alloc` (refused otherwise, naming
//!   both). Each die keeps its sealed blocks, data and translation, in its own victim
//!   index (`dievictims.rs`: its own policy state, seeded from the run's seed
//!   and the die). A host write whose die opens a block with the pool below the
//!   threshold starts the collection as before, and its rounds take that die's own
//!   victims while the pool holds more than `dies` blocks and the die has a block
//!   with an invalid page, else the global pick (the low-pool rule stays global). A
//!   data victim's copies stay on its die (its open data block, or its GC block under
//!   `separate`; a die with no free block borrows one, as host writes do); a
//!   translation victim's pages go to the one active translation block, wherever it
//!   is. Open choices, made here: translation blocks are in the dies' indexes (with
//!   data blocks only, the dies collected data blocks with few invalid pages while
//!   the translation blocks, where most of DFTL's garbage is, waited for the global
//!   rule: WA 76 against 7.9 on the run in docs/timing.md); and, unlike `page`'s, the
//!   trigger stays the global pool, not each die's own. DFTL's GC is lazy (the pool
//!   sits at the threshold in steady state), so a per-die trigger above it could only
//!   run where it would leave the global rule less than its reserve; a die that gets
//!   blocks back only from its own victims keeps its pool filled by its own
//!   collections. The reserve and the geometry rule are global GC's: a die's data
//!   round takes one block at most for its copies, as a global round under `single`
//!   does, so it fits wherever a global round does (the low-pool rule counts the
//!   victim die's room only). `ftl.extra.gc_die_victims` counts the victims a die
//!   picked among its own blocks. Checked by the stress sweep with
//!   `FTLAB_STRESS_SCOPE=per_die` (CHANGELOG).

use crate::auto::AutoOr;
use crate::demand::{self, Demand, DieStreams, Kind, Space, Why, NONE};
use crate::hints::{self, Hints};
use crate::page::{DieAlloc, GcScope};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{Ftl, FtlStats, RecoverError, TrimRecovery};
use ftlab_core::geometry::Geometry;
use ftlab_core::lru::Lru;
use ftlab_core::options::{bad, JsonSchema, SchemeError};
use ftlab_core::units::ByteSize;
use ftlab_core::victim::{self, GcFrontier, GcPolicy, VictimPolicy};
use ftlab_core::wear::{self, Retirement, WearLeveling};
use ftlab_core::{Lpn, PageTag, PageWrite, Pbn, Ppn};
use serde::{Deserialize, Serialize};

/// Scheme id in the registry and in errors.
pub const ID: &str = "dftl";

/// Options of the `dftl` FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DftlOptions {
    /// RAM of the cached mapping table; 8 bytes per entry (tpm.txt §IV-B: 128 KiB to
    /// 1 MiB).
    pub cmt_bytes: ByteSize,
    /// Mappings per translation page; auto = page_size / 4 (tpm.txt §II: 512 for 2 KiB).
    #[schemars(range(min = 1))]
    pub entries_per_page: AutoOr<u32>,
    /// GC runs while fewer blocks are free; auto = 3, the least accepted (tpm.txt Table I:
    /// "The minimum number of free blocks: 3"; with 2, GC of a full device can run the
    /// free pool dry).
    #[schemars(range(min = demand::MIN_GC_THRESHOLD))]
    pub gc_threshold: AutoOr<u32>,
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
    /// Where GC copies of data pages are written: shared (the current data block, with
    /// host writes) or separate (a data block of their own).
    pub gc_frontier: GcFrontier,
    /// Erases after which a block retires (never written again); 0: blocks never
    /// retire. The NAND presets' rated cycles are in ftlab_core::nand (pe_cycles).
    pub pe_limit: u32,
    /// Which die a data page is written on: single (one current data block, the
    /// papers'), round_robin (one open data block per die, pages dealt in turn), static
    /// (die = LPN % dies) or least_busy (the die free first under parallel timing).
    /// Dies: channels x dies of parallel timing (1 under serial).
    pub die_alloc: DieAlloc,
    /// Where GC looks for victims: global (every sealed block, copies dealt by
    /// die_alloc; the default) or per_die (a collection a die's host write starts takes
    /// that die's own blocks, data or translation, and data copies stay on it; needs a
    /// multi-die die_alloc).
    pub gc_scope: GcScope,
}

impl Default for DftlOptions {
    fn default() -> Self {
        DftlOptions {
            cmt_bytes: ByteSize(512 << 10),
            entries_per_page: AutoOr::Auto,
            gc_threshold: AutoOr::Auto,
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

/// Bytes of one CMT entry: a 4-byte LPN and a 4-byte PPN.
pub const ENTRY_BYTES: u64 = 8;

/// The DFTL FTL.
pub struct Dftl {
    s: Space,
    /// Data blocks host writes (and, under `shared`, GC copies) go to: one per die
    /// stream (one under `die_alloc = "single"`), `None` until opened.
    active: Vec<Option<Pbn>>,
    /// Under `gc_frontier = "separate"`: the data blocks GC copies go to, one per die
    /// stream; empty under `shared`.
    gc_active: Vec<Option<Pbn>>,
    separate: bool,
    /// Which stream (die) each page goes to.
    streams: DieStreams,
    /// The stream of the GC copy being made (for [`Demand::after_gc_program`]).
    gc_stream: usize,
    /// `gc_scope = "per_die"`: GC copies stay on the victim's die.
    per_die: bool,
    /// Per stream (host, GC): pages programmed and blocks opened (`separate` only).
    stream_programs: [u64; 2],
    stream_blocks: [u64; 2],
    lru: Lru,
    slot_lpn: Vec<u32>,
    slot_ppn: Vec<u32>,
    slot_dirty: Vec<bool>,
    free_slots: Vec<u32>,
    /// LPN -> CMT slot, or NONE.
    lpn_slot: Vec<u32>,
    /// The last prefetch hints ([`Ftl::prefetch`]).
    hints: Hints,
}

impl Dftl {
    /// Seeds the generator of the random victim policies (from the run's seed).
    pub fn with_gc_seed(mut self, seed: u64) -> Self {
        self.s.seed(seed);
        self
    }

    /// Builds the FTL for `geo`.
    pub fn new(geo: &Geometry, opts: &DftlOptions) -> Result<Dftl, SchemeError> {
        let lay = demand::layout(geo, ID, opts.entries_per_page)?;
        let bytes = opts.cmt_bytes.0;
        if bytes < ENTRY_BYTES {
            return Err(bad(
                ID,
                "cmt_bytes",
                opts.cmt_bytes,
                format!("must hold at least one {ENTRY_BYTES}-byte entry"),
            ));
        }
        let slots = (bytes / ENTRY_BYTES).min(geo.logical_pages as u64) as u32;
        let separate = opts.gc_frontier == GcFrontier::Separate;
        let streams = DieStreams::new(geo, opts.die_alloc);
        let n = streams.n as u32;
        let open_data = if separate { 2 * n } else { n };
        let per_die = opts.gc_scope == GcScope::PerDie;
        if per_die && n == 1 {
            return Err(demand::per_die_refusal(ID));
        }
        // One open data block per die: a victim's copies can fill each once, so GC keeps
        // one more block per die free (none more under `single`; kept under `per_die`,
        // whose copies take one block at most, so its rounds fit where global ones do).
        let reserve = if n == 1 { 0 } else { n };
        let theta = demand::gc_threshold_dies(
            geo,
            ID,
            opts.gc_threshold,
            lay.tpages,
            open_data,
            n,
            reserve,
        )? + reserve;
        let space = Space::new(
            geo,
            lay,
            theta,
            VictimPolicy {
                policy: opts.gc_policy,
                d: opts.gc_d,
                window: opts.gc_window,
            },
            demand::Wear {
                leveling: opts.wear_leveling,
                threshold: opts.wl_threshold,
                retirement: Retirement::new(
                    ID,
                    geo.blocks,
                    opts.pe_limit,
                    demand::min_blocks(geo, lay.tpages, open_data, theta),
                ),
            },
            n,
            ID,
        );
        Ok(Dftl {
            s: if per_die {
                space.with_gc_per_die()
            } else {
                space
            },
            active: vec![None; n as usize],
            gc_active: if separate {
                vec![None; n as usize]
            } else {
                Vec::new()
            },
            separate,
            streams,
            gc_stream: 0,
            per_die,
            stream_programs: [0; 2],
            stream_blocks: [0; 2],
            lru: Lru::new(slots),
            slot_lpn: vec![NONE; slots as usize],
            slot_ppn: vec![NONE; slots as usize],
            slot_dirty: vec![false; slots as usize],
            free_slots: (0..slots).rev().collect(),
            lpn_slot: vec![NONE; geo.logical_pages as usize],
            hints: Hints::new(),
        })
    }

    /// CMT capacity in entries.
    pub fn cmt_entries(&self) -> u32 {
        self.slot_lpn.len() as u32
    }

    /// The GC threshold in use.
    pub fn gc_threshold(&self) -> u32 {
        self.s.gc_threshold
    }

    /// Whether the mapping of `lpn` is in the CMT, and whether it is dirty.
    pub fn cached(&self, lpn: Lpn) -> Option<bool> {
        let s = self.lpn_slot[lpn.idx()];
        (s != NONE).then(|| self.slot_dirty[s as usize])
    }

    /// The CMT slot of `lpn`, loading the entry on a miss.
    fn lookup(&mut self, flash: &mut Flash, lpn: Lpn) -> u32 {
        let s = self.lpn_slot[lpn.idx()];
        if s != NONE {
            self.s.c.map_hits += 1;
            self.lru.touch(s);
            return s;
        }
        self.s.c.map_misses += 1;
        if self.free_slots.is_empty() {
            self.evict(flash);
        }
        let (t, off) = self.s.tpage_of(lpn);
        self.s.read_tpage(flash, t, Why::Miss);
        let ppn = self.s.content[self.s.entry(t, off)];
        let s = self.free_slots.pop().expect("eviction freed a slot");
        self.slot_lpn[s as usize] = lpn.0;
        self.slot_ppn[s as usize] = ppn;
        self.slot_dirty[s as usize] = false;
        self.lpn_slot[lpn.idx()] = s;
        self.lru.push_front(s);
        s
    }

    /// Evicts the LRU entry, writing it back if dirty (one read, one write).
    fn evict(&mut self, flash: &mut Flash) {
        let v = self
            .lru
            .back()
            .expect("a full CMT has a least recently used entry");
        self.s.c.evictions += 1;
        if self.slot_dirty[v as usize] {
            self.room_for_tpage(flash);
            let lpn = Lpn(self.slot_lpn[v as usize]);
            let (t, off) = self.s.tpage_of(lpn);
            self.s.read_tpage(flash, t, Why::Evict);
            let e = self.s.entry(t, off);
            self.s.content[e] = self.slot_ppn[v as usize];
            self.s.write_tpage(flash, t, Why::Evict);
            self.s.c.dirty_evictions += 1;
        }
        self.lru.remove(v);
        self.lpn_slot[self.slot_lpn[v as usize] as usize] = NONE;
        self.slot_lpn[v as usize] = NONE;
        self.free_slots.push(v);
        // The next victim's entry and links, which the next eviction reads first: on
        // a large CMT they have not been touched since they were last used (hints).
        if let Some(n) = self.lru.back() {
            ftlab_core::prefetch::read(&self.slot_lpn[n as usize]);
            ftlab_core::prefetch::read(&self.slot_ppn[n as usize]);
            ftlab_core::prefetch::read(&self.slot_dirty[n as usize]);
            self.lru.prefetch(n);
        }
    }

    /// The next page of stream `st`'s current data block (opened from its die's pool).
    /// Outside GC, GC runs first when a new block is needed and the pool is below the
    /// threshold.
    /// Under `gc_scope = "per_die"` that collection takes die `st`'s own victims first.
    fn data_dest(&mut self, flash: &mut Flash, st: usize, in_gc: bool) -> Ppn {
        loop {
            if let Some(a) = self.active[st] {
                return self.s.geo.ppn(a, flash.write_ptr(a));
            }
            if !in_gc && self.s.below_threshold() {
                if self.per_die {
                    self.s.gc_die = Some(st);
                }
                self.collect(flash);
                self.s.gc_die = None;
                continue;
            }
            self.active[st] = Some(self.s.open_block_on(st, Kind::Data));
            self.stream_blocks[0] += 1;
        }
    }

    fn after_data_program(&mut self, flash: &Flash, st: usize, dst: Ppn) {
        if self.s.seal_if_full(flash, self.s.geo.block_of(dst)) {
            self.active[st] = None;
        }
    }

    /// The next page of stream `st`'s GC copies' data block (`gc_frontier =
    /// "separate"`), opened without a nested collection.
    fn gc_data_dest(&mut self, flash: &Flash, st: usize) -> Ppn {
        let b = match self.gc_active[st] {
            Some(b) => b,
            None => {
                let b = self.s.open_block_on(st, Kind::Data);
                self.gc_active[st] = Some(b);
                self.stream_blocks[1] += 1;
                b
            }
        };
        self.s.geo.ppn(b, flash.write_ptr(b))
    }

    /// The stream the next page of `lpn` goes to: host writes pick among the host
    /// blocks, GC copies (`in_gc`) among the blocks they go to.
    #[inline]
    fn pick_stream(&mut self, flash: &Flash, lpn: Lpn, in_gc: bool) -> usize {
        let open = if in_gc && self.separate {
            &self.gc_active
        } else {
            &self.active
        };
        self.streams.pick(flash, lpn, |s| open[s])
    }

    /// Recovery: the mappings of never-written translation pages back into the CMT as
    /// dirty entries; the translation pages on flash written anew from the scanned
    /// mapping (GC first when the translation block is full, as for a dirty eviction).
    fn restore_mappings(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        let (unwritten, on_flash) = self.s.recovery_pages();
        let logical = self.s.geo.logical_pages;
        for t in unwritten {
            let first = t * self.s.lay.epp;
            for l in first..(first + self.s.lay.epp).min(logical) {
                let ppn = self.s.content[l as usize];
                if ppn == NONE {
                    continue;
                }
                let s = self
                    .free_slots
                    .pop()
                    .ok_or_else(|| self.s.cmt_overflow(t))?;
                self.slot_lpn[s as usize] = l;
                self.slot_ppn[s as usize] = ppn;
                self.slot_dirty[s as usize] = true;
                self.lpn_slot[l as usize] = s;
                self.lru.push_front(s);
            }
            self.s.forget_unwritten(t);
        }
        self.rewrite_tpages(flash, on_flash);
        Ok(())
    }

    /// Unmaps the current copy of the LPN in `slot`, leaving the entry unmapped.
    fn drop_old(&mut self, flash: &mut Flash, slot: u32) {
        let old = self.slot_ppn[slot as usize];
        if old != NONE {
            self.s.invalidate(flash, Ppn(old));
            self.slot_ppn[slot as usize] = NONE;
            self.slot_dirty[slot as usize] = true;
        }
    }
}

impl Demand for Dftl {
    fn space(&mut self) -> &mut Space {
        &mut self.s
    }

    fn pick_victim(&mut self, flash: &Flash) -> Pbn {
        let copies_to = if self.separate {
            &self.gc_active
        } else {
            &self.active
        };
        let ppb = self.s.geo.pages_per_block;
        let lpn_slot = &self.lpn_slot;
        if copies_to.len() == 1 {
            let room = copies_to[0].map_or(0, |a| ppb - flash.write_ptr(a));
            return self
                .s
                .pick_victim(flash, |_| room, |l| lpn_slot[l.idx()] != NONE);
        }
        // One open block per die: the copies may take a block on each die they overflow.
        let room: Vec<u32> = copies_to
            .iter()
            .map(|a| a.map_or(0, |a| ppb - flash.write_ptr(a)))
            .collect();
        if self.per_die {
            // The copies stay on the victim's die.
            let n = room.len();
            let most = self.s.free.dies();
            return self.s.pick_victim_with(
                flash,
                most,
                |b, valid| (valid > room[b.idx() % n]) as u32,
                |l| lpn_slot[l.idx()] != NONE,
            );
        }
        let (streams, geo) = (&self.streams, &self.s.geo.clone());
        let most = self.s.free.dies();
        self.s.pick_victim_with(
            flash,
            most,
            |b, valid| streams.copy_blocks(flash, geo, b, valid, &room),
            |l| lpn_slot[l.idx()] != NONE,
        )
    }

    /// Pages moved by GC go to the current data block of the stream the allocation
    /// picks, as host writes do (or to their own under `separate`); under `gc_scope =
    /// "per_die"`, to the victim's die.
    fn gc_dest(&mut self, flash: &mut Flash, victim: Pbn, src: Ppn) -> Ppn {
        let st = if self.per_die {
            victim.idx() % self.active.len()
        } else {
            let lpn = match self.streams.alloc {
                DieAlloc::Static => {
                    flash
                        .peek_tag(src)
                        .unwrap_or_else(|| panic!("dftl: valid page {src:?} has no tag"))
                        .lpn
                }
                _ => Lpn(0),
            };
            self.pick_stream(flash, lpn, true)
        };
        self.gc_stream = st;
        if self.separate {
            return self.gc_data_dest(flash, st);
        }
        self.data_dest(flash, st, true)
    }

    fn after_gc_program(&mut self, flash: &Flash, _: Pbn, dst: Ppn) {
        let st = self.gc_stream;
        if self.separate {
            self.stream_programs[1] += 1;
            if self.s.seal_if_full(flash, self.s.geo.block_of(dst)) {
                self.gc_active[st] = None;
            }
            return;
        }
        self.after_data_program(flash, st, dst);
    }

    /// One open block takes the copies under `single` (the current data block, or the
    /// GC block under `separate`) and under GC per die (the victim's die's).
    fn gc_in_runs(&self) -> bool {
        self.active.len() == 1 || self.per_die
    }

    fn after_gc_run(&mut self, flash: &Flash, _: Pbn, dst: Pbn, n: u32) {
        let st = self.gc_stream;
        if self.separate {
            self.stream_programs[1] += n as u64;
            if self.s.seal_if_full(flash, dst) {
                self.gc_active[st] = None;
            }
        } else if self.s.seal_if_full(flash, dst) {
            self.active[st] = None;
        }
    }

    /// DFTL's lazy copying: a cached entry is updated in RAM and becomes dirty.
    /// Each copy's first step is its LPN's CMT slot, a random entry of a table of 4
    /// bytes per logical page (1 MiB at 1 GiB), which missed the cache once per copy,
    /// each miss after the one before: a victim's are fetched together first.
    fn gc_prefetch(&self, flash: &Flash, victim: Pbn) {
        flash.valid_lpns_hint(victim, |lpn| {
            if let Some(s) = self.lpn_slot.get(lpn.idx()) {
                ftlab_core::prefetch::read(s);
            }
        });
    }

    /// A cached entry is updated in the CMT (and is dirty); an uncached one is batched.
    #[inline]
    fn gc_moved(&mut self, lpn: Lpn, src: Ppn, dst: Ppn) {
        let slot = self.lpn_slot[lpn.idx()];
        if slot == NONE {
            self.s.gc_batch_entry(lpn, dst);
            return;
        }
        debug_assert_eq!(self.slot_ppn[slot as usize], src.0);
        self.slot_ppn[slot as usize] = dst.0;
        self.slot_dirty[slot as usize] = true;
    }
}

impl Ftl for Dftl {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        for &tag in pages {
            let slot = self.lookup(flash, tag.lpn);
            let st = self.pick_stream(flash, tag.lpn, false);
            // The page to program first (opening a block may collect garbage), then the
            // old copy is dropped: GC must not erase the last durable copy of a page
            // before its new version is on flash (issue 25, item 3). GC may move the
            // old copy meanwhile; it updates the cached entry, which `drop_old` reads.
            let dst = self.data_dest(flash, st, false);
            self.drop_old(flash, slot);
            flash.program(dst, tag, Cause::Host);
            self.after_data_program(flash, st, dst);
            debug_assert_eq!(self.lpn_slot[tag.lpn.idx()], slot);
            self.slot_ppn[slot as usize] = dst.0;
            self.slot_dirty[slot as usize] = true;
        }
        self.stream_programs[0] += pages.len() as u64;
    }

    /// The chain of the crate's `hints` module: the CMT slot and the translation entry of `lpn`
    /// now; the old copy of the LPN hinted a step ago (from its cached entry if it has
    /// one, else from the translation page); the victim-set words of the one two steps
    /// ago. The CMT's own arrays are small enough to stay cached.
    #[inline]
    fn prefetch(&mut self, flash: &Flash, lpn: Lpn) {
        if let Some(s) = self.lpn_slot.get(lpn.idx()) {
            ftlab_core::prefetch::read(s);
            // An LPN's entry in `content` is at t * epp + off = the LPN.
            ftlab_core::prefetch::read(&self.s.content[lpn.idx()]);
        }
        let (one, two) = self.hints.push(lpn.0);
        let old_copy = |lpn: u32| {
            let ppn = match *self.lpn_slot.get(lpn as usize)? {
                NONE => self.s.content[lpn as usize],
                slot => self.slot_ppn[slot as usize],
            };
            (ppn != NONE).then_some(Ppn(ppn))
        };
        if let Some(old) = old_copy(one) {
            hints::old_copy(flash, &self.s.index, old);
        }
        if let Some(old) = old_copy(two) {
            hints::old_copy_words(flash, &self.s.index, old);
        }
        // A cached LPN's LRU links (its slot read above a step ago), then its
        // neighbours' (the hit's `touch` unlinks it between them).
        if let Some(&s) = self.lpn_slot.get(one as usize) {
            if s != NONE {
                self.lru.prefetch(s);
            }
        }
        if let Some(&s) = self.lpn_slot.get(two as usize) {
            if s != NONE {
                for n in [self.lru.newer(s), self.lru.older(s)].into_iter().flatten() {
                    self.lru.prefetch(n);
                }
            }
        }
    }

    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        let slot = self.lookup(flash, lpn);
        let ppn = self.slot_ppn[slot as usize];
        (ppn != NONE).then(|| flash.read(Ppn(ppn), Cause::Host))
    }

    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        let slot = self.lookup(flash, lpn);
        self.drop_old(flash, slot);
    }

    /// Writes back every dirty CMT entry, one read and one write per translation page
    /// (see the module documentation). GC on the way can dirty entries again (it
    /// updates cached entries in RAM), so it repeats while any is dirty, a few times at
    /// most.
    fn settle(&mut self, flash: &mut Flash) {
        for _ in 0..8 {
            let mut dirty: Vec<(u32, u32)> = (0..self.cmt_entries())
                .filter(|&s| self.slot_lpn[s as usize] != NONE && self.slot_dirty[s as usize])
                .map(|s| (self.s.tpage_of(Lpn(self.slot_lpn[s as usize])).0, s))
                .collect();
            if dirty.is_empty() {
                return;
            }
            dirty.sort_unstable();
            for group in dirty.chunk_by(|a, b| a.0 == b.0) {
                let t = group[0].0;
                self.room_for_tpage(flash);
                self.s.read_tpage(flash, t, Why::Evict);
                for &(_, slot) in group {
                    let (_, off) = self.s.tpage_of(Lpn(self.slot_lpn[slot as usize]));
                    let e = self.s.entry(t, off);
                    self.s.content[e] = self.slot_ppn[slot as usize];
                    self.slot_dirty[slot as usize] = false;
                }
                self.s.write_tpage(flash, t, Why::Evict);
            }
        }
    }

    fn trim_recovery(&self) -> TrimRecovery {
        // Trims are not persisted and GC may erase a trimmed last version before an
        // older, stale copy of the page (module docs).
        TrimRecovery::AnyEarlier
    }

    fn recover(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        let open = self.s.recover_scan(flash)?;
        // Partly written data blocks reopen, one per slot: the host's blocks (one per
        // die stream), then under `separate` the GC's (which was which is not on
        // flash); a block goes to a slot of its die first, else to any free slot, in
        // block-number order. Slots left empty open when first written.
        let n = self.active.len();
        let slots = n + self.gc_active.len();
        if open.len() > slots {
            return Err(RecoverError::Failed(format!(
                "{} partly written data blocks; dftl writes {slots} at a time",
                open.len()
            )));
        }
        let mut slot: Vec<Option<Pbn>> = vec![None; slots];
        for b in open {
            let own = b.idx() % n;
            let i = (own..slots)
                .step_by(n)
                .find(|&i| slot[i].is_none())
                .or_else(|| slot.iter().position(Option::is_none))
                .ok_or_else(|| RecoverError::Failed("no slot for an open block".into()))?;
            slot[i] = Some(b);
        }
        let gc = slot.split_off(n);
        self.active = slot;
        if self.separate {
            self.gc_active = gc;
        }
        self.streams.turn = 0;
        self.restore_mappings(flash)
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        self.s.check(flash, |b| {
            self.active.contains(&Some(b)) || self.gc_active.contains(&Some(b))
        })?;
        if let Some(b) = self
            .active
            .iter()
            .flatten()
            .find(|&b| self.gc_active.contains(&Some(*b)))
        {
            return Err(format!("{b:?} is open for host writes and for GC copies"));
        }
        let used = self.slot_lpn.len() - self.free_slots.len();
        if self.lru.len() as usize != used || self.lru.iter().count() != used {
            return Err(format!(
                "CMT: {used} slots used but LRU holds {}",
                self.lru.len()
            ));
        }
        for s in self.lru.iter() {
            let lpn = self.slot_lpn[s as usize];
            if lpn == NONE || self.lpn_slot[lpn as usize] != s {
                return Err(format!("CMT slot {s} holds lpn {lpn} not indexed to it"));
            }
            let (t, off) = self.s.tpage_of(Lpn(lpn));
            let on_flash = self.s.content[self.s.entry(t, off)];
            if !self.slot_dirty[s as usize] && self.slot_ppn[s as usize] != on_flash {
                return Err(format!(
                    "clean CMT entry lpn{lpn} -> {} but translation page {t} says {on_flash}",
                    self.slot_ppn[s as usize]
                ));
            }
        }
        let cached = self.lpn_slot.iter().filter(|&&s| s != NONE).count();
        if cached != used {
            return Err(format!("{cached} LPNs indexed but {used} CMT slots used"));
        }
        self.s.check_mapping(flash, |l| {
            let s = self.lpn_slot[l as usize];
            if s != NONE {
                self.slot_ppn[s as usize]
            } else {
                let (t, off) = self.s.tpage_of(Lpn(l));
                self.s.content[self.s.entry(t, off)]
            }
        })
    }

    fn stats(&self) -> FtlStats {
        let mut st = FtlStats::default();
        self.s.c.fill(&mut st);
        st.extra
            .gauge("cmt_entries", "entries", self.cmt_entries() as f64);
        st.extra
            .gauge("translation_pages", "pages", self.s.lay.tpages as f64);
        st.extra
            .gauge("gc_threshold", "blocks", self.s.gc_threshold as f64);
        let (gtd, cmt) = self.mapping_parts();
        st.extra.gauge("mapping_bytes_gtd", "bytes", gtd as f64);
        st.extra.gauge("mapping_bytes_cmt", "bytes", cmt as f64);
        self.s.free.retirement().report(&mut st.extra);
        if let Some(wl) = &self.s.wl {
            wl.report(&mut st.extra);
        }
        if self.separate {
            st.extra.streams(self.stream_programs, self.stream_blocks);
        }
        if self.per_die {
            st.extra
                .counter("gc_die_victims", "blocks", self.s.c.die_victims as f64);
        }
        st
    }

    fn reset_stats(&mut self) {
        self.s.c = Default::default();
        if let Some(wl) = &mut self.s.wl {
            wl.reset_stats();
        }
        self.stream_programs = [0; 2];
        self.stream_blocks = [0; 2];
    }

    fn mapping_bytes(&self) -> u64 {
        let (gtd, cmt) = self.mapping_parts();
        gtd + cmt
    }
}

impl Dftl {
    fn mapping_parts(&self) -> (u64, u64) {
        (
            self.s.lay.tpages as u64 * 4,
            self.cmt_entries() as u64 * ENTRY_BYTES,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{geo4, geometry, tag};
    use ftlab_core::options::from_pairs;

    fn dftl(geo: &Geometry, given: &[(&str, &str)]) -> Dftl {
        build(geo, given).unwrap()
    }

    /// The FTL, or the error of its options or of its constructor.
    fn build(geo: &Geometry, given: &[(&str, &str)]) -> Result<Dftl, SchemeError> {
        Dftl::new(geo, &from_pairs(ID, given)?)
    }

    fn tstats(f: &Dftl) -> (u64, u64) {
        let s = f.stats();
        (s.translation_reads, s.translation_writes)
    }

    /// tpm.txt §II, Fig. 1: fetching an entry reads one translation page; evicting a
    /// dirty entry reads its translation page and writes it back: exactly one read and
    /// one write, and the data stays readable.
    #[test]
    fn dirty_eviction_costs_one_translation_read_and_one_write() {
        let geo = geometry(2048, 4, 64, 100.0);
        // 8 entries per translation page, room for two cached entries.
        let mut f = dftl(&geo, &[("entries_per_page", "8"), ("cmt_bytes", "16")]);
        let mut flash = Flash::new(&geo);
        // Put translation pages 0 and 2 on flash.
        f.write(&mut flash, &[tag(0, 1)]);
        f.write(&mut flash, &[tag(16, 1)]);
        f.write(&mut flash, &[tag(1, 1)]); // evicts lpn 0 (dirty)
        f.write(&mut flash, &[tag(17, 1)]); // evicts lpn 16 (dirty)
        f.write(&mut flash, &[tag(2, 1)]); // evicts lpn 1 (dirty)
        f.check(&flash).unwrap();
        // Now cached: 17 (dirty), 2 (dirty). Read lpn 20: a miss that evicts lpn 17.
        assert_eq!(f.cached(Lpn(17)), Some(true));
        let before = tstats(&f);
        let evict_before = f.stats().extra["translation_reads_evict"];
        assert_eq!(f.read(&mut flash, Lpn(20)), None);
        let after = tstats(&f);
        // One read + one write for the eviction, one read for the miss.
        assert_eq!(after.0 - before.0, 2);
        assert_eq!(after.1 - before.1, 1);
        assert_eq!(
            f.stats().extra["translation_reads_evict"] - evict_before,
            1.0
        );
        assert_eq!(f.cached(Lpn(17)), None);
        // A clean eviction costs only the miss's read.
        let before = tstats(&f);
        assert_eq!(f.read(&mut flash, Lpn(21)), None); // evicts 2 (dirty): 2 reads 1 write
        assert_eq!(f.read(&mut flash, Lpn(22)), None); // evicts 20 (clean): 1 read
        let after = tstats(&f);
        assert_eq!((after.0 - before.0, after.1 - before.1), (3, 1));
        for (l, v) in [(0, 1), (16, 1), (1, 1), (17, 1), (2, 1)] {
            assert_eq!(f.read(&mut flash, Lpn(l)), Some(tag(l, v)));
        }
        f.check(&flash).unwrap();
    }

    /// A miss on a translation page never written reads nothing.
    #[test]
    fn miss_on_unwritten_translation_page_reads_nothing() {
        let geo = geometry(2048, 4, 64, 100.0);
        let mut f = dftl(&geo, &[("entries_per_page", "8")]);
        let mut flash = Flash::new(&geo);
        assert_eq!(f.read(&mut flash, Lpn(5)), None);
        let s = f.stats();
        assert_eq!((s.map_misses, s.translation_reads), (1, 0));
        assert_eq!(f.read(&mut flash, Lpn(5)), None);
        assert_eq!(f.stats().map_hits, 1);
    }

    /// The device after writing LPNs 0..4 into the first data block with a one-entry
    /// CMT, then rewriting LPN 3: block 0 holds valid LPNs 0, 1, 2, whose entries are on
    /// flash in translation pages 0, 0 and 1 (two entries per page).
    fn gc_scenario() -> (Dftl, Flash) {
        let geo = geometry(2048, 4, 32, 125.0);
        let mut f = dftl(&geo, &[("entries_per_page", "2"), ("cmt_bytes", "8")]);
        let mut flash = Flash::new(&geo);
        for l in 0..4 {
            f.write(&mut flash, &[tag(l, 1)]);
        }
        f.write(&mut flash, &[tag(3, 2)]);
        assert_eq!(flash.valid_count(Pbn(0)), 3);
        assert_eq!(f.s.kind[0], Kind::Data);
        (f, flash)
    }

    fn gc_block0(f: &mut Dftl, flash: &mut Flash) -> (f64, f64, u64) {
        let before = f.stats();
        f.s.index.remove(Pbn(0));
        f.collect_data_block(flash, Pbn(0));
        let after = f.stats();
        let d = |k: &str| after.extra[k] - before.extra[k];
        (
            d("translation_reads_gc"),
            d("translation_writes_data_gc"),
            after.gc_pages_copied - before.gc_pages_copied,
        )
    }

    /// tpm.txt Fig. 2 and DFTL's batch updates: GC of a data block updates each distinct
    /// translation page of its uncached valid pages once (one read, one write), not once
    /// per page.
    #[test]
    fn data_gc_batches_translation_updates_per_translation_page() {
        let (mut f, mut flash) = gc_scenario();
        assert_eq!(gc_block0(&mut f, &mut flash), (2.0, 2.0, 3));
        f.check(&flash).unwrap();
        for (l, v) in [(0, 1), (1, 1), (2, 1), (3, 2)] {
            assert_eq!(f.read(&mut flash, Lpn(l)), Some(tag(l, v)));
        }
    }

    /// DFTL's lazy copying: a moved page whose entry is cached is updated in the CMT
    /// (which becomes dirty), not on flash.
    #[test]
    fn data_gc_updates_cached_entries_in_ram() {
        let (mut f, mut flash) = gc_scenario();
        assert_eq!(f.read(&mut flash, Lpn(2)), Some(tag(2, 1)));
        assert_eq!(f.cached(Lpn(2)), Some(false));
        // LPNs 0 and 1 share translation page 0; LPN 2 is cached.
        assert_eq!(gc_block0(&mut f, &mut flash), (1.0, 1.0, 3));
        assert_eq!(f.cached(Lpn(2)), Some(true));
        f.check(&flash).unwrap();
        for (l, v) in [(0, 1), (1, 1), (2, 1), (3, 2)] {
            assert_eq!(f.read(&mut flash, Lpn(l)), Some(tag(l, v)));
        }
        f.check(&flash).unwrap();
    }

    /// A device at rest after a fill has a clean CMT: settling writes each translation
    /// page with dirty entries once, the entries stay cached and clean, and the next
    /// evictions write nothing back.
    #[test]
    fn settle_writes_back_dirty_entries_once_per_translation_page() {
        let geo = geometry(2048, 4, 64, 100.0);
        let mut f = dftl(&geo, &[("entries_per_page", "8"), ("cmt_bytes", "32")]);
        let mut flash = Flash::new(&geo);
        // Four cached entries, all dirty: lpns 0, 1 (page 0), 8 (page 1), 9 (page 1).
        for l in [0, 1, 8, 9] {
            f.write(&mut flash, &[tag(l, 1)]);
        }
        assert!([0, 1, 8, 9].iter().all(|&l| f.cached(Lpn(l)) == Some(true)));
        let before = tstats(&f);
        f.settle(&mut flash);
        let after = tstats(&f);
        // Pages 0 and 1 were never on flash: no reads, one write each.
        assert_eq!((after.0 - before.0, after.1 - before.1), (0, 2));
        assert!([0, 1, 8, 9]
            .iter()
            .all(|&l| f.cached(Lpn(l)) == Some(false)));
        f.check(&flash).unwrap();
        // Settling again does nothing; evicting a clean entry writes nothing.
        f.settle(&mut flash);
        assert_eq!(tstats(&f), after);
        assert_eq!(f.read(&mut flash, Lpn(20)), None);
        assert_eq!(f.stats().extra["cmt_dirty_evictions"], 0.0);
        for l in [0, 1, 8, 9] {
            assert_eq!(f.read(&mut flash, Lpn(l)), Some(tag(l, 1)));
        }
        f.check(&flash).unwrap();
    }

    #[test]
    fn refuses_impossible_options_naming_them() {
        let geo = geometry(2048, 4, 64, 100.0);
        for (key, value, why) in [
            ("cmt_bytes", "4", "at least one 8-byte entry"),
            ("cmt_bytes", "lots", "not a size"),
            ("entries_per_page", "600", "must be 1 to 512"),
            ("entries_per_page", "0", "at least 1"),
            ("gc_threshold", "1", "at least 3"),
            ("gc_threshold", "2", "at least 3"),
        ] {
            let e = build(&geo, &[(key, value)]).err().unwrap().to_string();
            assert!(
                e.contains(&format!("`{key}` = `{value}")) && e.contains(why),
                "{e}"
            );
        }
        let tight = geometry(2048, 4, 32, 0.0);
        let e = Dftl::new(&tight, &DftlOptions::default()).err().unwrap();
        assert!(e.to_string().contains("--op"), "{e}");
        let f = dftl(&geo, &[("cmt_bytes", "128KiB")]);
        assert_eq!(f.cmt_entries(), 64); // capped at one entry per logical page
    }

    /// Dirty CMT entries are RAM state, but the data they map was acknowledged: the
    /// entries of a translation page never written go back into the CMT, dirty; the
    /// translation pages on flash, stale, are written anew; every page reads back.
    #[test]
    fn recovery_restores_mappings_only_the_cmt_held() {
        use ftlab_core::flash::FlashStats;
        let geo = geometry(2048, 4, 64, 100.0);
        let given = [("entries_per_page", "8"), ("cmt_bytes", "16")];
        let mut f = dftl(&geo, &given);
        let mut flash = Flash::new(&geo);
        // Evictions put translation pages 0 and 2 on flash; lpn 2 (page 0) and lpn 40
        // (page 5, never written) stay dirty in the CMT.
        for l in [0, 16, 1, 17, 2, 40] {
            f.write(&mut flash, &[tag(l, 1)]);
        }
        assert_eq!(
            (f.cached(Lpn(2)), f.cached(Lpn(40))),
            (Some(true), Some(true))
        );
        let mut f = crate::testutil::recover_fresh(&mut flash, dftl(&geo, &given));
        let s = *flash.stats();
        assert_eq!(
            s.programs[Cause::Recovery as usize],
            2,
            "pages 0 and 2 rewritten"
        );
        assert_eq!(FlashStats::total(&s.programs), 2);
        assert_eq!(f.stats().extra["translation_writes_recovery"], 2.0);
        assert_eq!(f.stats().translation_writes, 0);
        assert_eq!((f.cached(Lpn(40)), f.cached(Lpn(2))), (Some(true), None));
        for l in [0, 1, 2, 16, 17, 40] {
            assert_eq!(f.read(&mut flash, Lpn(l)), Some(tag(l, 1)), "lpn{l}");
        }
        assert_eq!(f.read(&mut flash, Lpn(3)), None);
        f.check(&flash).unwrap();
    }

    /// Recovery under churn with GC, at several points, with a one-entry CMT.
    #[test]
    fn a_separate_gc_frontier_keeps_copies_apart_and_recovers() {
        let geo = geometry(2048, 4, 64, 75.0);
        let given = [
            ("entries_per_page", "4"),
            ("cmt_bytes", "8"),
            ("gc_frontier", "separate"),
        ];
        let mut f = dftl(&geo, &given);
        let mut flash = Flash::new(&geo);
        let mut version = [0u32; 64];
        for round in 0..6u32 {
            for i in 0..400u32 {
                let l = (i * 37 + round * 11) % 64;
                version[l as usize] += 1;
                f.write(&mut flash, &[tag(l, version[l as usize])]);
            }
            f.check(&flash).unwrap();
            let st = f.stats();
            assert_eq!(st.extra["stream_gc_programs"], st.gc_pages_copied as f64);
            assert_eq!(st.extra["stream_host_programs"], 400.0);
            f = crate::testutil::recover_fresh(&mut flash, dftl(&geo, &given));
            for l in 0..64 {
                assert_eq!(
                    f.read(&mut flash, Lpn(l)),
                    Some(tag(l, version[l as usize]))
                );
            }
        }
        assert!(flash.stats().erases.iter().sum::<u64>() > 0);
        // One more open data block: the least over-provisioning is higher.
        let least = |g: &[(&str, &str)]| {
            (1..400)
                .find(|&op| build(&geometry(2048, 4, 64, op as f64), g).is_ok())
                .unwrap()
        };
        let (shared, separate) = (least(&given[..2]), least(&given));
        assert!(separate > shared, "{shared}% against {separate}%");
        let e = build(&geometry(2048, 4, 64, shared as f64), &given)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("2 open data block(s)"), "{e}");
    }

    #[test]
    fn recovery_after_churn_keeps_every_page_and_gc_working() {
        let geo = geometry(2048, 4, 64, 75.0);
        let given = [("entries_per_page", "4"), ("cmt_bytes", "8")];
        let mut f = dftl(&geo, &given);
        let mut flash = Flash::new(&geo);
        let mut version = [0u32; 64];
        for round in 0..6u32 {
            for i in 0..400u32 {
                let l = (i * 37 + round * 11) % 64;
                version[l as usize] += 1;
                f.write(&mut flash, &[tag(l, version[l as usize])]);
            }
            f = crate::testutil::recover_fresh(&mut flash, dftl(&geo, &given));
            for l in 0..64 {
                assert_eq!(
                    f.read(&mut flash, Lpn(l)),
                    Some(tag(l, version[l as usize]))
                );
            }
        }
        assert!(f.stats().gc_invocations > 0 || flash.stats().erases.iter().sum::<u64>() > 0);
    }

    #[test]
    fn recovery_refuses_flash_dftl_cannot_have_written() {
        let geo = geometry(2048, 4, 64, 100.0);
        let given = [("entries_per_page", "8"), ("cmt_bytes", "16")];
        let trans = tag(demand::TRANS_MARK, 1);
        let cases: [&[(u32, PageTag)]; 4] = [
            &[(0, tag(0, 1)), (1, trans)],     // data and translation pages
            &[(0, tag(0, 1)), (4, tag(1, 1))], // two open data blocks
            &[(0, tag(0, 1)), (1, tag(1, 1)), (2, tag(2, 1))], // more than the CMT held
            &[(0, tag(demand::TRANS_MARK | 99, 1))], // no such translation page
        ];
        for case in cases {
            let mut flash = Flash::new(&geo);
            for &(p, t) in case {
                flash.program(Ppn(p), t, Cause::Host);
            }
            flash.power_cycle();
            let e = dftl(&geo, &given).recover(&mut flash).unwrap_err();
            assert!(matches!(e, RecoverError::Failed(_)), "{case:?}: {e}");
        }
    }

    /// A multi-die DFTL with a small cache (16 entries per translation page, 8 cached
    /// entries), so GC, evictions and translation writes all run.
    fn multi(alloc: &str, frontier: &str) -> (Dftl, Flash) {
        let g = geo4(40.0);
        let given = [
            ("die_alloc", alloc),
            ("gc_frontier", frontier),
            ("entries_per_page", "16"),
            ("cmt_bytes", "64"),
        ];
        (dftl(&g, &given), Flash::new(&g))
    }

    /// The PPN `lpn` is mapped to (the cached entry, else the translation page's).
    fn ppn_of(f: &Dftl, lpn: u32) -> u32 {
        match f.lpn_slot[lpn as usize] {
            NONE => {
                let (t, off) = f.s.tpage_of(Lpn(lpn));
                f.s.content[f.s.entry(t, off)]
            }
            s => f.slot_ppn[s as usize],
        }
    }

    fn die_of(f: &Dftl, lpn: u32) -> u32 {
        ppn_of(f, lpn) / f.s.geo.pages_per_block % f.s.geo.dies()
    }

    /// Writes `lpns` one page at a time (version 1, 2, ... per LPN), then deep-checks.
    fn write_all(f: &mut Dftl, flash: &mut Flash, lpns: impl Iterator<Item = u32>) {
        let mut version = vec![0u32; f.s.geo.logical_pages as usize];
        for l in lpns {
            version[l as usize] += 1;
            f.write(flash, &[tag(l, version[l as usize])]);
        }
        f.check(flash).unwrap();
    }

    /// Fill, then 20 device writes of random overwrites and 3 more.
    fn overwrite(f: &mut Dftl, flash: &mut Flash, seed: u64) {
        let n = f.s.geo.logical_pages;
        let mut rng = ftlab_core::rng::SplitMix64::new(seed);
        let random: Vec<u32> = (0..20 * n + 3)
            .map(|_| rng.below(n as u64) as u32)
            .collect();
        write_all(f, flash, (0..n).chain(random));
    }

    #[test]
    fn round_robin_deals_consecutive_writes_to_every_die() {
        let (mut f, mut flash) = multi("round_robin", "shared");
        write_all(&mut f, &mut flash, 0..8);
        let dies: Vec<u32> = (0..8).map(|l| die_of(&f, l)).collect();
        assert_eq!(dies, [0, 1, 2, 3, 0, 1, 2, 3]);
        // Single keeps the one current data block: the same pages on one die.
        let g = geo4(40.0);
        let mut s = dftl(&g, &[]);
        let mut flash = Flash::new(&g);
        write_all(&mut s, &mut flash, 0..8);
        assert!((0..8).all(|l| die_of(&s, l) == 0));
    }

    #[test]
    fn static_striping_keeps_every_lpn_on_its_die_through_gc() {
        for frontier in ["shared", "separate"] {
            let (mut f, mut flash) = multi("static", frontier);
            overwrite(&mut f, &mut flash, 3);
            assert!(f.stats().gc_pages_copied > 0, "GC must have copied");
            // LPN l goes to stream l % 4, whose open block is on die l % 4 unless that
            // die's pool ran dry and it borrowed a block of another die.
            let n = f.s.geo.logical_pages;
            let home = (0..n).filter(|&l| die_of(&f, l) == l % 4).count() as u32;
            assert!(home * 10 >= n * 9, "{frontier}: {home} of {n} on their die");
        }
    }

    #[test]
    fn least_busy_writes_where_the_die_clock_is_free_first() {
        use ftlab_core::nand::Latencies;
        use ftlab_core::timing::DieClock;
        use ftlab_core::Nanos;
        // Without a die clock (serial timing) it deals pages in turn.
        let (mut f, mut flash) = multi("least_busy", "shared");
        write_all(&mut f, &mut flash, 0..8);
        let dies: Vec<u32> = (0..8).map(|l| die_of(&f, l)).collect();
        assert_eq!(dies, [0, 1, 2, 3, 0, 1, 2, 3]);
        // With one: each page goes to the die free first (programs take 300; ties to
        // the lowest die). The CMT holds every entry, so no translation page is read
        // or written on the way.
        let g = geo4(40.0);
        let mut f = dftl(&g, &[("die_alloc", "least_busy")]);
        let mut flash = Flash::new(&g);
        let lat = Latencies {
            read: Nanos(1000),
            spare_read: Nanos(10),
            program: Nanos(300),
            erase: Nanos(2000),
        };
        flash.install_clock(DieClock::new(lat, 2, 2, g.blocks, Nanos(0)));
        flash.clock_begin(Nanos(0));
        f.write(&mut flash, &[tag(10, 1)]);
        f.write(&mut flash, &(11..16).map(|l| tag(l, 1)).collect::<Vec<_>>());
        flash.clock_end();
        let dies: Vec<u32> = (10..16).map(|l| die_of(&f, l)).collect();
        assert_eq!(dies, [0, 1, 2, 3, 0, 1]);
        f.check(&flash).unwrap();
    }

    #[test]
    fn multi_die_allocation_survives_heavy_gc_and_recovers_its_open_blocks() {
        for alloc in ["round_robin", "static", "least_busy"] {
            for frontier in ["shared", "separate"] {
                let (mut f, mut flash) = multi(alloc, frontier);
                overwrite(&mut f, &mut flash, 5);
                assert!(f.stats().gc_invocations > 0);
                let partly: Vec<Pbn> = f
                    .active
                    .iter()
                    .chain(&f.gc_active)
                    .flatten()
                    .copied()
                    .filter(|&b| !flash.is_erased(b) && !flash.is_full(b))
                    .collect();
                assert!(partly.len() >= 2, "{alloc} {frontier}: {partly:?}");
                let tags = |f: &Dftl, flash: &Flash| -> Vec<Option<PageTag>> {
                    (0..f.s.geo.logical_pages)
                        .map(|l| flash.peek_tag(Ppn(ppn_of(f, l))))
                        .collect()
                };
                let before = tags(&f, &flash);
                let mut g = crate::testutil::recover_fresh(&mut flash, multi(alloc, frontier).0);
                // Every partly written block reopened as an open data block (unless the
                // GC of the translation rewrites filled it since), and every LPN reads
                // its newest version.
                for b in &partly {
                    assert!(
                        flash.is_full(*b)
                            || g.active.contains(&Some(*b))
                            || g.gc_active.contains(&Some(*b)),
                        "{alloc} {frontier}: {b:?} not reopened"
                    );
                }
                assert_eq!(tags(&g, &flash), before, "{alloc} {frontier}");
                // And it runs on.
                overwrite(&mut g, &mut flash, 6);
            }
        }
    }

    /// [`multi`] with `gc_scope = "per_die"` and the `policy`'s victims.
    fn per_die(alloc: &str, frontier: &str, policy: &str) -> (Dftl, Flash) {
        let g = geo4(40.0);
        let given = [
            ("die_alloc", alloc),
            ("gc_frontier", frontier),
            ("gc_scope", "per_die"),
            ("gc_policy", policy),
            ("entries_per_page", "16"),
            ("cmt_bytes", "64"),
        ];
        (dftl(&g, &given).with_gc_seed(11), Flash::new(&g))
    }

    /// Valid data pages on each of the 4 dies.
    fn valid_per_die(f: &Dftl, flash: &Flash) -> [u32; 4] {
        let mut v = [0; 4];
        for b in (0..f.s.geo.blocks).filter(|&b| f.s.kind[b as usize] == Kind::Data) {
            v[(b % 4) as usize] += flash.valid_count(Pbn(b));
        }
        v
    }

    #[test]
    fn gc_per_die_collects_a_die_and_keeps_its_copies_there() {
        for alloc in ["round_robin", "static", "least_busy"] {
            for frontier in ["shared", "separate"] {
                let (mut f, mut flash) = per_die(alloc, frontier, "greedy");
                overwrite(&mut f, &mut flash, 3);
                let die_rounds = f.stats().extra.get("gc_die_victims").unwrap();
                assert!(die_rounds > 0.0, "{alloc} {frontier}: no die collected");
                // One more collection, forced, started by the die with the most free
                // blocks among those with a sealed block that is not fully valid (a
                // die with none free borrows a block for its copies from another): it
                // takes its own victims (data or translation blocks), the pool grows,
                // and no valid data page leaves the die or arrives on another (the
                // translation pages the rounds write or move are not data).
                let d = (0..4)
                    .filter(|&d| !f.s.die_index.stuck(d))
                    .max_by_key(|&d| (f.s.free.die_len(d), 4 - d))
                    .unwrap();
                let before = valid_per_die(&f, &flash);
                let free_before = f.s.free.die_len(d);
                assert!(free_before > 0, "{alloc} {frontier}");
                let own = f.s.c.die_victims;
                let (theta, total) = (f.s.gc_threshold, f.s.free.len());
                f.s.gc_threshold = total as u32 + 1;
                f.s.gc_die = Some(d);
                f.collect(&mut flash);
                (f.s.gc_threshold, f.s.gc_die) = (theta, None);
                assert!(f.s.free.len() > total, "{alloc} {frontier}");
                assert!(f.s.c.die_victims > own, "{alloc} {frontier}");
                assert_eq!(valid_per_die(&f, &flash), before, "{alloc} {frontier}");
                f.check(&flash).unwrap();
            }
        }
        // Static striping with GC per die: every LPN stays on its die, as globally.
        let (mut f, mut flash) = per_die("static", "shared", "greedy");
        overwrite(&mut f, &mut flash, 4);
        let n = f.s.geo.logical_pages;
        let home = (0..n).filter(|&l| die_of(&f, l) == l % 4).count() as u32;
        assert!(home * 10 >= n * 9, "{home} of {n} on their die");
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
            let (mut f, mut flash) = per_die("round_robin", "shared", name);
            overwrite(&mut f, &mut flash, 5);
            assert!(f.stats().gc_invocations > 0, "{name}");
            let tags = |f: &Dftl, flash: &Flash| -> Vec<Option<PageTag>> {
                (0..f.s.geo.logical_pages)
                    .map(|l| flash.peek_tag(Ppn(ppn_of(f, l))))
                    .collect()
            };
            let before = tags(&f, &flash);
            let mut g = crate::testutil::recover_fresh(
                &mut flash,
                per_die("round_robin", "shared", name).0,
            );
            g.check(&flash).unwrap();
            assert_eq!(tags(&g, &flash), before, "{name}");
            // It runs on after the recovery, its per-die indexes rebuilt.
            overwrite(&mut g, &mut flash, 6);
        }
    }

    #[test]
    fn gc_per_die_is_refused_without_dies() {
        let o: DftlOptions = from_pairs(ID, &[("gc_scope", "per_die")]).unwrap();
        let e = Dftl::new(&geo4(40.0), &o).err().unwrap().to_string();
        assert!(e.contains("gc_scope") && e.contains("die_alloc"), "{e}");
    }

    #[test]
    fn one_open_block_per_die_needs_its_reserve_and_names_die_alloc() {
        let o: DftlOptions = from_pairs(
            ID,
            &[("die_alloc", "round_robin"), ("entries_per_page", "16")],
        )
        .unwrap();
        // The least over-provisioning accepted, in steps of half a percent.
        let least = (0..400)
            .map(|i| i as f64 * 0.5)
            .find(|&op| Dftl::new(&geo4(op), &o).is_ok())
            .unwrap();
        let e = Dftl::new(&geo4(least - 0.5), &o).err().unwrap().to_string();
        assert!(
            e.contains("die_alloc") && e.contains("raise --op to at least"),
            "{e}"
        );
        let op: f64 = e
            .split("raise --op to at least ")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(Dftl::new(&geo4(op), &o).is_ok(), "{e}");
        // 4 open data blocks + gc_threshold 3 + 4 of reserve: 11 blocks more than
        // single's 1 + 3.
        let single: DftlOptions = from_pairs(ID, &[("entries_per_page", "16")]).unwrap();
        let s = Dftl::new(&geo4(40.0), &single).unwrap();
        let m = Dftl::new(&geo4(40.0), &o).unwrap();
        assert_eq!((s.gc_threshold(), m.gc_threshold()), (3, 7));
    }
}
