//! The page-mapped region (PMR) of CACH-FTL (cach-ftl.txt §4.2.2, §4.3.1): its blocks
//! (free, one active, sealed; an active block per die under a multi-die `die_alloc`,
//! and a victim index per die under `gc_scope = "per_die"`), the page table of the
//! logical pages it holds, and, per logical block, how many of its pages it holds (the
//! groups BMR-GC picks from).

use crate::demand::{DiePools, DieStreams};
use crate::dievictims::DieVictims;
use crate::page::DieAlloc;
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::geometry::Geometry;
use ftlab_core::u32map::U32Map;
use ftlab_core::victim::{GreedyIndex, VictimPolicy};
use ftlab_core::wear::{Retirement, StaticLeveling};
use ftlab_core::{Lbn, Lpn, PageTag, Pbn, Ppn};

/// The PMR. Sealed (full) blocks are indexed by valid count for greedy PMR-GC; the
/// active block is not, and neither is a block a GC job has taken as its victim.
pub(super) struct Pmr {
    ppb: u32,
    first: Pbn,
    blocks: u32,
    min_invalid: u32,
    /// Erased blocks (first-in first-out, or least-erased first), per die under a
    /// multi-die `die_alloc`, retiring at the P/E limit.
    pub(super) free: DiePools,
    /// The write frontier: one active block per die stream (one under `single`).
    active: Vec<Option<Pbn>>,
    /// Which stream (die) each page goes to.
    streams: DieStreams,
    sealed: GreedyIndex,
    /// Under `gc_scope = "per_die"`: the sealed blocks of each die again (greedy), the
    /// victims PMR-GC picks from; empty under `global`.
    die_sealed: DieVictims,
    /// Under `per_die`: PMR-GC copies that landed off their victim's die (its pool was
    /// empty and its block was borrowed from another die).
    pub(super) copies_off_die: u64,
    /// LPN -> PPN of every logical page whose live copy is in the PMR.
    pub(super) map: U32Map,
    count: Vec<u16>,
    /// Logical blocks with pages in the PMR, keyed by `ppb - count` so the minimum is
    /// the largest group. `GreedyIndex` is keyed by `Pbn`; here its numbers are LBNs
    /// (converted only in [`Pmr::largest_group`] and [`Pmr::rekey`]).
    groups: GreedyIndex,
    /// Static levelling: the sealed blocks by erase count and the region's most erases.
    pub(super) wl: Option<StaticLeveling>,
}

impl Pmr {
    /// A PMR of the `blocks` physical blocks starting at `first`, all erased, whose GC
    /// victims must have at least `min_invalid` invalid pages; free blocks least-erased
    /// first if `dynamic`, retiring as `retirement` says.
    pub(super) fn new(
        geo: &Geometry,
        first: Pbn,
        blocks: u32,
        min_invalid: u32,
        dynamic: bool,
        retirement: Retirement,
        alloc: DieAlloc,
    ) -> Pmr {
        let ppb = geo.pages_per_block;
        let streams = DieStreams::new(geo, alloc);
        let free = DiePools::of_range(
            geo.blocks,
            first.0..first.0 + blocks,
            streams.n as u32,
            dynamic,
            retirement,
        );
        Pmr {
            ppb,
            first,
            blocks,
            min_invalid,
            free,
            active: vec![None; streams.n],
            streams,
            sealed: GreedyIndex::new(geo.blocks, ppb),
            die_sealed: DieVictims::new(geo.blocks, ppb, VictimPolicy::default(), 0),
            copies_off_die: 0,
            map: U32Map::with_max_len(blocks * ppb),
            count: vec![0; geo.logical_blocks() as usize],
            groups: GreedyIndex::new(geo.logical_blocks(), ppb),
            wl: None,
        }
    }

    /// GC per die (`gc_scope = "per_die"`, module docs of `cach`): a victim index per
    /// die stream; PMR-GC then takes a die's victim whose copies fit that die's active
    /// block ([`Pmr::victim`]) and keeps the copies there.
    pub(super) fn with_gc_per_die(mut self, geo: &Geometry) -> Pmr {
        let dies = self.active.len() as u32;
        self.die_sealed = DieVictims::new(geo.blocks, self.ppb, VictimPolicy::default(), dies);
        self
    }

    /// Whether PMR-GC is per die.
    #[inline]
    pub(super) fn per_die(&self) -> bool {
        !self.die_sealed.is_empty()
    }

    fn seal(&mut self, flash: &Flash, b: Pbn) {
        self.sealed.insert(b, flash.valid_count(b));
        if self.per_die() {
            self.die_sealed.insert(b, flash.valid_count(b));
        }
        if let Some(wl) = &mut self.wl {
            wl.sealed(b, flash.erase_count(b));
        }
    }

    /// Static wear levelling in the region past a spread of `threshold`
    /// ([`Pmr::wl_candidate`]).
    pub(super) fn with_static_leveling(mut self, geo: &Geometry, threshold: u32) -> Pmr {
        self.wl = Some(StaticLeveling::new(geo.blocks, threshold));
        self
    }

    /// Static levelling: the sealed block whose data should move (the least-erased one,
    /// if the region's most-erased block has more than the threshold more).
    pub(super) fn wl_candidate(&self) -> Option<Pbn> {
        self.wl
            .as_ref()?
            .candidate()
            .filter(|&b| self.sealed.contains(b))
    }

    /// Blocks in the region.
    pub(super) fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Whether a physical block belongs to the PMR.
    pub(super) fn owns(&self, pbn: Pbn) -> bool {
        (self.first.0..self.first.0 + self.blocks).contains(&pbn.0)
    }

    /// Free pages: erased blocks plus the unwritten tail of the active block. Under a
    /// multi-die `die_alloc`, the erased blocks less `dies - 1` only: the pages of a
    /// group or of a victim's copies are dealt over the dies, so they may open a block
    /// on every die whose active block is full while the tails of the others stay
    /// unused, and a count of pages that passes the reserve checks must still leave a
    /// block for each (module docs).
    pub(super) fn free_pages(&self, flash: &Flash) -> u32 {
        if self.active.len() == 1 {
            let tail = self.active[0].map_or(0, |a| self.ppb - flash.write_ptr(a));
            return self.free.len() as u32 * self.ppb + tail;
        }
        let margin = self.active.len() - 1;
        self.free.len().saturating_sub(margin) as u32 * self.ppb
    }

    /// Active blocks open now (tests of recovery).
    #[cfg(test)]
    pub(super) fn open_blocks(&self) -> usize {
        self.active.iter().flatten().count()
    }

    /// Whether `pbn` is an active block (a write frontier).
    pub(super) fn is_active(&self, pbn: Pbn) -> bool {
        self.active.contains(&Some(pbn))
    }

    /// Programs `tag` at the write frontier of the die stream the allocation picks;
    /// seals the active block when it fills. Panics if the region has no free page
    /// (the GC reserve is broken).
    pub(super) fn program(&mut self, flash: &mut Flash, tag: PageTag, cause: Cause) -> Ppn {
        let s = if self.active.len() == 1 {
            0
        } else {
            let active = &self.active;
            self.streams.pick(flash, tag.lpn, |s| active[s])
        };
        self.program_on(flash, s, tag, cause)
    }

    /// The stream every PMR-GC copy of `victim` goes to when that is one stream for all
    /// of them (a single frontier, or the victim's die under `gc_scope = "per_die"`);
    /// `None` when the allocation deals each copy on its own ([`Pmr::program`]).
    #[inline]
    pub(super) fn copy_stream(&self, victim: Pbn) -> Option<usize> {
        if self.per_die() {
            Some(self.die_sealed.on_die(victim).0)
        } else {
            (self.active.len() == 1).then_some(0)
        }
    }

    /// PMR-GC copies of `victim`'s pages `tags`, in order, on stream `s` (from
    /// [`Pmr::copy_stream`]): the pages, in order, as many programs at the stream's
    /// frontier would take them (blocks opened and sealed at the same points, the same
    /// flash counts and times), a run of pages per block ([`Flash::program_run`])
    /// instead of a call per page; under `per_die`, copies that land off the victim's
    /// die are counted. Appends the copies' addresses to `out`.
    pub(super) fn program_copies(
        &mut self,
        flash: &mut Flash,
        s: usize,
        tags: &[PageTag],
        out: &mut Vec<Ppn>,
    ) {
        let per_die = self.per_die();
        let mut rest = tags;
        while !rest.is_empty() {
            let active = self.frontier(s);
            let wp = flash.write_ptr(active);
            let n = rest.len().min((self.ppb - wp) as usize);
            let first = flash.geometry().ppn(active, wp);
            let (run, after) = rest.split_at(n);
            flash.program_run(first, run, Cause::Gc);
            out.extend((0..n as u32).map(|i| Ppn(first.0 + i)));
            if per_die && self.die_sealed.on_die(active).0 != s {
                self.copies_off_die += n as u64;
            }
            if flash.is_full(active) {
                self.seal(flash, active);
                self.active[s] = None;
            }
            rest = after;
        }
    }

    /// The active block of die stream `s`, opened from the free pool if it has none.
    fn frontier(&mut self, s: usize) -> Pbn {
        match self.active[s] {
            Some(a) => a,
            None => {
                let a = self
                    .free
                    .pop_die(s)
                    .expect("CACH-FTL: PMR has no free block (GC reserve broken)");
                self.active[s] = Some(a);
                a
            }
        }
    }

    /// Programs `tag` at the write frontier of die stream `s`.
    fn program_on(&mut self, flash: &mut Flash, s: usize, tag: PageTag, cause: Cause) -> Ppn {
        let active = self.frontier(s);
        let ppn = flash.geometry().ppn(active, flash.write_ptr(active));
        flash.program(ppn, tag, cause);
        if flash.is_full(active) {
            self.seal(flash, active);
            self.active[s] = None;
        }
        ppn
    }

    /// Marks a PMR page invalid (it was superseded, trimmed or moved).
    pub(super) fn invalidate(&mut self, flash: &mut Flash, ppn: Ppn) {
        flash.invalidate(ppn);
        let b = flash.geometry().block_of(ppn);
        self.sealed.decrement(b);
        if self.per_die() {
            self.die_sealed.decrement(b);
        }
    }

    /// Records that the live copy of `lpn` is at `ppn` (a new page of the region).
    pub(super) fn add(&mut self, lpn: Lpn, ppn: Ppn) {
        let old = self.map.insert(lpn.0, ppn.0);
        debug_assert!(old.is_none(), "{lpn:?} added to the PMR twice");
        let lbn = lpn.0 / self.ppb;
        self.count[lbn as usize] += 1;
        self.rekey(lbn);
    }

    /// Drops the live copy of `lpn` from the region (invalidating it); returns where it
    /// was.
    pub(super) fn remove(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<Ppn> {
        let ppn = Ppn(self.map.remove(lpn.0)?);
        self.invalidate(flash, ppn);
        let lbn = lpn.0 / self.ppb;
        self.count[lbn as usize] -= 1;
        self.rekey(lbn);
        Some(ppn)
    }

    fn rekey(&mut self, lbn: u32) {
        let c = self.count[lbn as usize] as u32;
        self.groups.remove(Pbn(lbn));
        if c > 0 {
            self.groups.insert(Pbn(lbn), self.ppb - c);
        }
    }

    /// Pages of a logical block held in the region.
    pub(super) fn count(&self, lbn: Lbn) -> u32 {
        self.count[lbn.idx()] as u32
    }

    /// The logical block with the most pages in the region (lowest LBN on ties).
    pub(super) fn largest_group(&self) -> Option<(Lbn, u32)> {
        self.groups.min().map(|(b, key)| (Lbn(b.0), self.ppb - key))
    }

    /// Free pages left in die stream `d`'s active block (0 with none open).
    pub(super) fn tail(&self, flash: &Flash, d: usize) -> u32 {
        self.active[d].map_or(0, |a| self.ppb - flash.write_ptr(a))
    }

    /// PMR-GC's victim: the sealed block with the fewest valid pages, if it has at
    /// least `min_invalid` invalid pages and no more than `room` valid ones. Under
    /// `gc_scope = "per_die"`, the fewest valid pages among the dies' own such victims
    /// whose copies fit their die's active block, so that the round frees a whole
    /// block (cach-ftl.txt §4.3.2's "enough invalid pages to recycle", read per die);
    /// none while the PMR holds a group for BMR-GC, else the block `global` takes
    /// (module docs).
    pub(super) fn victim(&self, flash: &Flash, room: u32) -> Option<(Pbn, u32)> {
        let ok = |valid: u32| valid + self.min_invalid <= self.ppb && valid <= room;
        let global = || self.sealed.min().filter(|&(_, valid)| ok(valid));
        if !self.per_die() {
            return global();
        }
        let fitting = (0..self.active.len())
            .filter_map(|d| {
                let (b, valid) = self.die_sealed.min(d)?;
                (ok(valid) && valid <= self.tail(flash, d)).then_some((b, valid))
            })
            .min_by_key(|&(_, valid)| valid);
        if fitting.is_none() && self.map.is_empty() {
            return global();
        }
        fitting
    }

    /// Takes a victim out of the index for the duration of its collection.
    pub(super) fn take_victim(&mut self, pbn: Pbn) {
        self.sealed.remove(pbn);
        if self.per_die() {
            self.die_sealed.remove(pbn);
        }
        if let Some(wl) = &mut self.wl {
            wl.unsealed(pbn);
        }
    }

    /// An erased victim returns to the free pool (erased blocks go to the back), or
    /// retires at the P/E limit.
    pub(super) fn release(&mut self, flash: &Flash, pbn: Pbn) {
        if let Some(wl) = &mut self.wl {
            wl.erased(flash.erase_count(pbn));
        }
        self.free.push(pbn, flash.erase_count(pbn));
    }

    /// Whether a block is sealed and indexed.
    pub(super) fn is_sealed(&self, pbn: Pbn) -> bool {
        self.sealed.contains(pbn)
    }

    /// Recovery: after the live pages were marked valid and [`Pmr::add`]ed, sorts the
    /// region's blocks by their write pointers: erased ones are free (in block order),
    /// full ones sealed, and the partly written blocks are the active blocks (one, or
    /// one per die stream: a block to its own die's stream first, else to the first
    /// stream without one, in block order).
    pub(super) fn rebuild_blocks(&mut self, flash: &Flash) -> Result<(), String> {
        self.free.clear();
        self.active.fill(None);
        self.streams.turn = 0;
        self.die_sealed.clear();
        let mut partly = Vec::new();
        let region = self.first.idx()..self.first.idx() + self.blocks as usize;
        if let Some(wl) = &mut self.wl {
            // The region's erase counts are on flash.
            wl.recover(&flash.erase_counts()[region]);
        }
        for pbn in (self.first.0..self.first.0 + self.blocks).map(Pbn) {
            self.sealed.remove(pbn);
            if flash.is_erased(pbn) {
                // (At the P/E limit it retires again: the erase counts are on flash.)
                self.free.push(pbn, flash.erase_count(pbn));
            } else if flash.is_full(pbn) {
                self.seal(flash, pbn);
            } else {
                partly.push(pbn);
            }
        }
        let n = self.active.len();
        if partly.len() > n {
            return Err(format!(
                "PMR blocks {partly:?} are partly written; the PMR writes {n} at a time"
            ));
        }
        for pbn in partly {
            let own = pbn.idx() % n;
            let s = if self.active[own].is_none() {
                own
            } else {
                self.active
                    .iter()
                    .position(Option::is_none)
                    .expect("no more partly written blocks than streams")
            };
            self.active[s] = Some(pbn);
        }
        Ok(())
    }

    /// Deep check of the group counts against the page table.
    pub(super) fn check_counts(&self) -> Result<(), String> {
        let mut n = vec![0u32; self.count.len()];
        for (lpn, _) in self.map.iter() {
            n[(lpn / self.ppb) as usize] += 1;
        }
        for (lbn, (&c, &m)) in self.count.iter().zip(&n).enumerate() {
            if c as u32 != m {
                return Err(format!("PMR holds {m} pages of lbn{lbn} but counts {c}"));
            }
            let indexed = self.groups.contains(Pbn(lbn as u32));
            if indexed != (m > 0) {
                return Err(format!("PMR group index wrong for lbn{lbn} ({m} pages)"));
            }
        }
        Ok(())
    }
}
