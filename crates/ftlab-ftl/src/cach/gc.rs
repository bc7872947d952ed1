//! CACH-FTL's block updates and garbage collectors (cach-ftl.txt §4.2.3, §4.3): the
//! phases of PMR-GC (Function 5) and of a BMR update / BMR-GC (Functions 2 and 6), run
//! all at once in the foreground or one atomic phase at a time in idle gaps (§4.3.3).

use super::{CachFtl, Image, Job, Window, FILLER, MOVED, NEW, NO_COPY, NO_PAGE};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::IdleBudget;
use ftlab_core::{Lbn, Lpn, Pbn, Ppn};

/// Serial cost of a phase: (reads, programs, erases).
type Cost = (u64, u64, u64);

const PMR_PHASES: u8 = 3;
const BMR_PHASES: u8 = 5;

impl CachFtl {
    // ----- BMR updates (Function 2) and BMR-GC (Function 6) -----

    /// Cost of BMR phase `phase` of logical block `lbn` given the image so far.
    fn bmr_cost(&self, flash: &Flash, lbn: Lbn, phase: u8, img: &Image) -> Cost {
        let first = lbn.0 * self.ppb;
        let missing = |l: &u32| img.kind[(l - first) as usize] == NO_PAGE;
        match phase {
            0 => (self.pmr.count(lbn) as u64, 0, 0),
            1 => {
                // A page live in the BMR is never in the PMR too (`check_maps`), so the
                // validity bit alone decides; no page-table probe.
                let n = self
                    .lpns(lbn)
                    .filter(|l| missing(l) && self.in_bmr(Lpn(*l)))
                    .count();
                (n as u64, 0, 0)
            }
            2 => (0, 0, 0),
            3 => {
                let erase = if self.out_of_place {
                    self.spare.is_empty()
                } else {
                    !flash.is_erased(self.bmr[lbn.idx()])
                };
                let staged = if erase && self.stages() {
                    img.bmr_live.iter().filter(|&&l| l).count() as u64
                } else {
                    0
                };
                (0, staged, u64::from(erase))
            }
            _ => {
                let last = img.kind.iter().rposition(|&k| k != NO_PAGE);
                (0, last.map_or(0, |l| l as u64 + 1), 0)
            }
        }
    }

    /// Runs BMR phase `phase` of logical block `lbn`:
    /// 0 read its PMR pages, 1 read its BMR pages (both into `img`, skipping offsets it
    /// already holds), 2 invalidate every old copy of the block, 3 erase the block (or
    /// take an erased spare block into `target`), 4 program the image.
    fn bmr_phase(
        &mut self,
        flash: &mut Flash,
        lbn: Lbn,
        phase: u8,
        img: &mut Image,
        target: &mut Option<Pbn>,
    ) {
        let first = lbn.0 * self.ppb;
        match phase {
            0 | 1 => {
                // Phase 0 stops probing the page table once it has found as many PMR
                // pages as the block has there (the offsets above hold none).
                let mut in_pmr = self.pmr.count(lbn);
                for l in self.lpns(lbn) {
                    if phase == 0 && in_pmr == 0 {
                        break;
                    }
                    let off = l - first;
                    if img.kind[off as usize] != NO_PAGE {
                        continue;
                    }
                    let src = match phase {
                        0 => self.pmr.map.get(l).map(Ppn),
                        _ => self.in_bmr(Lpn(l)).then(|| self.bmr_ppn(Lpn(l))),
                    };
                    if let Some(src) = src {
                        in_pmr = in_pmr.saturating_sub(1);
                        img.set(off, flash.read(src, Cause::Merge), MOVED);
                        img.from_bmr[off as usize] = phase == 1;
                    }
                }
            }
            2 => {
                for l in self.lpns(lbn) {
                    let lpn = Lpn(l);
                    let live = self.in_bmr(lpn);
                    img.bmr_live[(l - first) as usize] = live;
                    if live {
                        self.unmap(flash, lpn);
                    } else if self.pmr.count(lbn) > 0 {
                        if let Some(p) = self.pmr.remove(flash, lpn) {
                            self.remember_dup(lpn, p);
                        }
                    }
                }
            }
            3 => {
                *target = Some(if self.out_of_place {
                    self.take_erased_block(flash)
                } else {
                    let b = self.bmr[lbn.idx()];
                    if !flash.is_erased(b) {
                        self.guard_erase(flash, lbn, img);
                        flash.erase(b, Cause::Merge);
                        self.record_erase(flash, b);
                        // In place a logical block's block is fixed: at the P/E limit
                        // the device is worn out (raises WornOut).
                        let erases = flash.erase_count(b);
                        self.spare
                            .retirement()
                            .fixed(b, erases, "in-place BMR block");
                    }
                    b
                });
            }
            _ => {
                let b = target
                    .take()
                    .expect("BMR program phase without a target block");
                self.program_image(flash, lbn, b, img);
            }
        }
    }

    /// Whether an in-place BMR update stages the block's live pages in the PMR before
    /// erasing it (`power_safe_bmr_gc`).
    pub(super) fn stages(&self) -> bool {
        self.power_safe_bmr_gc && !self.out_of_place
    }

    /// In place, before the erase of a BMR block whose live pages `img` holds: with
    /// `power_safe_bmr_gc`, programs them to the PMR first (same versions: recovery
    /// prefers the BMR copy on a tie, so they are garbage once the block is
    /// programmed, and the only copy while it is not), if the PMR has the room;
    /// otherwise records them as held only in RAM until programmed
    /// ([`Ftl::volatile_pages`](ftlab_core::ftl::Ftl::volatile_pages)).
    fn guard_erase(&mut self, flash: &mut Flash, lbn: Lbn, img: &Image) {
        self.windows.retain(|w| w.lbn != lbn);
        self.staged.clear();
        let live = (0..self.ppb).filter(|&off| img.bmr_live[off as usize]);
        let n = live.clone().count() as u32;
        if self.stages() && n <= self.pmr.free_pages(flash) {
            for off in live {
                let ppn = self.pmr.program(flash, img.tag[off as usize], Cause::Merge);
                self.staged.push(ppn);
            }
            self.x.staged_pages += n as u64;
        } else {
            let mut pages = Vec::new();
            for off in live {
                let tag = img.tag[off as usize];
                // Not lost if the PMR still holds this very version.
                let kept =
                    (self.dups.get(tag.lpn.0)).is_some_and(|p| flash.peek_tag(Ppn(p)) == Some(tag));
                if !kept {
                    pages.push((off, tag.lpn));
                }
            }
            if !pages.is_empty() {
                self.windows.push(Window {
                    lbn,
                    pages,
                    from: 0,
                });
            }
        }
    }

    /// In place: PMR page `ppn`, no longer mapped, may hold the version of `lpn` the
    /// BMR holds (`dups`).
    pub(super) fn remember_dup(&mut self, lpn: Lpn, ppn: Ppn) {
        let d = &mut self.dups;
        if !self.out_of_place && (d.len() < d.max_len() || d.contains(lpn.0)) {
            d.insert(lpn.0, ppn.0);
        }
    }

    /// PMR-GC victim `pbn` is about to be erased: its pages leave `dups`. The pages its
    /// switch just moved (the bits of `switched`) are not looked at:
    /// they were valid until that switch, and `dups` only ever names pages no longer
    /// valid (a page leaves the PMR's map, or was never in it, before it is remembered),
    /// so none of them is in it.
    fn forget_dups(&mut self, flash: &Flash, pbn: Pbn) {
        if self.dups.is_empty() {
            return;
        }
        for off in 0..flash.write_ptr(pbn) {
            if self.switched[off as usize / 64] & (1 << (off % 64)) != 0 {
                debug_assert!({
                    let p = self.geo.ppn(pbn, off);
                    flash
                        .peek_tag(p)
                        .is_none_or(|t| self.dups.get(t.lpn.0) != Some(p.0))
                });
                continue;
            }
            let p = self.geo.ppn(pbn, off);
            if let Some(t) = flash.peek_tag(p) {
                if self.dups.get(t.lpn.0) == Some(p.0) {
                    self.dups.remove(t.lpn.0);
                }
            }
        }
    }

    /// After an in-place block's image is on flash: nothing is held only in RAM any
    /// more, and the staged PMR copies are garbage.
    fn image_durable(&mut self, flash: &mut Flash, lbn: Lbn) {
        if !self.windows.is_empty() {
            self.windows.retain(|w| w.lbn != lbn);
        }
        for i in 0..self.staged.len() {
            let p = self.staged[i];
            self.pmr.invalidate(flash, p);
            if let Some(t) = flash.peek_tag(p) {
                self.remember_dup(t.lpn, p);
            }
        }
        self.staged.clear();
    }

    /// Phase 4: programs the image into `b` from offset 0 to its last page (fillers in
    /// the holes) and points the logical block at `b`.
    fn program_image(&mut self, flash: &mut Flash, lbn: Lbn, b: Pbn, img: &Image) {
        let Some(last) = img.kind.iter().rposition(|&k| k != NO_PAGE) else {
            self.image_durable(flash, lbn);
            return self.retire_or_keep(flash, lbn, b);
        };
        let mut moved = 0;
        for off in 0..=last as u32 {
            // A power cut inside this program leaves offsets from here on unwritten.
            if !self.windows.is_empty() {
                if let Some(w) = self.windows.iter_mut().find(|w| w.lbn == lbn) {
                    w.from = off;
                }
            }
            let ppn = self.geo.ppn(b, off);
            match img.kind[off as usize] {
                NO_PAGE => {
                    flash.program(ppn, FILLER, Cause::Padding);
                    flash.invalidate(ppn);
                    self.x.filler_programs += 1;
                }
                kind => {
                    let tag = img.tag[off as usize];
                    let cause = if kind == NEW {
                        Cause::Host
                    } else {
                        Cause::Merge
                    };
                    flash.program(ppn, tag, cause);
                    self.set_bmr(tag.lpn, true);
                    moved += u64::from(kind == MOVED);
                }
            }
        }
        self.image_durable(flash, lbn);
        self.retire_or_keep(flash, lbn, b);
        self.x.bmr_updates += 1;
        self.stats.merge_pages_copied += moved;
        if moved > 0 {
            self.stats.merges_full += 1;
        } else {
            self.stats.merges_switch += 1;
        }
    }

    /// Out of place: maps the logical block to `b` and retires its old block.
    pub(super) fn retire_or_keep(&mut self, flash: &Flash, lbn: Lbn, b: Pbn) {
        let old = std::mem::replace(&mut self.bmr[lbn.idx()], b);
        if old == b {
            return;
        }
        if let Some(wl) = &mut self.bmr_wl {
            wl.unsealed(old);
            wl.sealed(b, flash.erase_count(b));
            self.bmr_lbn[old.idx()] = u32::MAX;
            self.bmr_lbn[b.idx()] = lbn.0;
        }
        if flash.is_erased(old) {
            self.spare.push(old, flash.erase_count(old));
        } else {
            self.retired.push_back(old);
        }
    }

    /// Out of place: an erased spare block, erasing a retired one if none is erased.
    pub(super) fn take_erased_block(&mut self, flash: &mut Flash) -> Pbn {
        loop {
            // A levelling move parks the cold data on the most-worn spare.
            if self.park {
                if let Some((b, _)) = self.spare.pop_most_worn() {
                    return b;
                }
            }
            if let Some(b) = self.spare.pop_if_any() {
                return b;
            }
            if let Some(b) = self.retired.pop_front() {
                flash.erase(b, Cause::Merge);
                self.record_erase(flash, b);
                let erases = flash.erase_count(b);
                if self.spare.retirement().reached(erases) {
                    self.spare.push(b, erases); // retires it
                    continue;
                }
                return b;
            }
            // No spare and none to erase: with blocks worn out, the device's end.
            self.spare.retirement().exhausted();
            // A pending BMR-GC job holds the only spare block between its phases.
            assert!(
                self.job.is_some(),
                "CACH-FTL: no spare block for an out-of-place BMR update"
            );
            self.finish_job(flash);
        }
    }

    /// A whole BMR update in the foreground (Function 2 for a host group preloaded in
    /// `img`, Function 6 for a synchronous BMR-GC with an empty image).
    pub(super) fn bmr_update_now(&mut self, flash: &mut Flash, lbn: Lbn, img: &mut Image) {
        let mut target = None;
        for phase in 0..BMR_PHASES {
            self.bmr_phase(flash, lbn, phase, img, &mut target);
        }
    }

    // ----- PMR-GC (Function 5) -----

    fn pmr_cost(&self, flash: &Flash, victim: Pbn, phase: u8) -> Cost {
        match phase {
            0 => (flash.valid_count(victim) as u64, 0, 0),
            1 => {
                // A held page is still live iff its old copy is still valid: every
                // change of a PMR page's mapping (overwrite, trim, BMR-GC) invalidates
                // the old copy, and a valid PMR page outside a job's copies is mapped.
                // The validity bit is one load, the page table a hash probe.
                let live = self
                    .held
                    .iter()
                    .filter(|&&(_, old)| flash.is_valid(old))
                    .count();
                (0, live as u64, 0)
            }
            _ => (0, 0, 1),
        }
    }

    /// Runs PMR-GC phase `phase` of `victim`: 0 read its valid pages into RAM, 1 program
    /// the ones still live at the PMR frontier, 2 switch the map to the copies (dropping
    /// copies overwritten meanwhile) and erase the victim.
    fn pmr_phase(&mut self, flash: &mut Flash, victim: Pbn, phase: u8) {
        match phase {
            0 => {
                self.held.clear();
                flash.read_valid(victim, Cause::Gc, &mut self.held);
            }
            1 => {
                self.copies.clear();
                if let Some(s) = self.pmr.copy_stream(victim) {
                    // Every copy on one frontier: programmed a run per block.
                    self.run_tags.clear();
                    if self.all_held_live(flash, victim) {
                        // Every page is copied, and the copies are the run's pages.
                        self.run_tags.extend(self.held.iter().map(|&(tag, _)| tag));
                        self.pmr
                            .program_copies(flash, s, &self.run_tags, &mut self.copies);
                        return;
                    }
                    // Live iff still valid (see `pmr_cost`); the copies, programmed in
                    // other blocks, leave the victim's validity bits as they are.
                    let live = self.held.iter().filter(|&&(_, old)| flash.is_valid(old));
                    self.run_tags.extend(live.map(|&(tag, _)| tag));
                    self.run_ppns.clear();
                    self.pmr
                        .program_copies(flash, s, &self.run_tags, &mut self.run_ppns);
                    let mut made = self.run_ppns.iter();
                    for &(_, old) in &self.held {
                        self.copies.push(if flash.is_valid(old) {
                            *made.next().expect("a copy for every live page")
                        } else {
                            NO_COPY
                        });
                    }
                    return;
                }
                for i in 0..self.held.len() {
                    let (tag, old) = self.held[i];
                    // Live iff still valid (see `pmr_cost`).
                    let copy = if flash.is_valid(old) {
                        self.pmr.program(flash, tag, Cause::Gc)
                    } else {
                        NO_COPY
                    };
                    self.copies.push(copy);
                }
            }
            _ => {
                let first = self.geo.ppn(victim, 0).0;
                self.switched.fill(0);
                if self.all_held_live(flash, victim) {
                    // Every page was live at the copy too (a page only ever turns
                    // invalid here), so each has its copy and is still mapped at `old`:
                    // the loop below without its two tests per page.
                    debug_assert!(!self.copies.contains(&NO_COPY));
                    for (&(tag, old), &copy) in self.held.iter().zip(&self.copies) {
                        let was = self.pmr.map.replace(tag.lpn.0, copy.0);
                        debug_assert_eq!(was, Some(old.0), "{:?} moved under PMR-GC", tag.lpn);
                    }
                    // The held pages are all of the victim's valid pages.
                    flash.invalidate_block(victim);
                    if !self.dups.is_empty() {
                        // Only `forget_dups` reads these bits, and only with duplicates.
                        for &(_, old) in &self.held {
                            let off = old.0 - first;
                            self.switched[off as usize / 64] |= 1 << (off % 64);
                        }
                    }
                    self.stats.gc_pages_copied += self.held.len() as u64;
                } else {
                    for i in 0..self.held.len() {
                        let ((tag, old), copy) = (self.held[i], self.copies[i]);
                        if copy == NO_COPY {
                            continue;
                        }
                        // Still mapped at `old` iff `old` is still valid (see
                        // `pmr_cost`): one probe of the page table instead of two.
                        if flash.is_valid(old) {
                            let was = self.pmr.map.replace(tag.lpn.0, copy.0);
                            debug_assert_eq!(was, Some(old.0), "{:?} moved under PMR-GC", tag.lpn);
                            flash.invalidate(old);
                            let off = old.0 - first;
                            self.switched[off as usize / 64] |= 1 << (off % 64);
                            self.stats.gc_pages_copied += 1;
                        } else {
                            self.pmr.invalidate(flash, copy);
                        }
                    }
                }
                self.forget_dups(flash, victim);
                flash.erase(victim, Cause::Gc);
                self.record_erase(flash, victim);
                self.pmr.release(flash, victim);
                self.stats.gc_invocations += 1;
                self.held.clear();
                self.copies.clear();
            }
        }
    }

    /// Whether every page PMR-GC phase 0 read off `victim` (`held`: every valid page
    /// then) is still valid. A taken victim is never programmed (copies and staging go
    /// to the frontier), and a page turns valid again only in recovery, which starts
    /// from a fresh instance (no job survives it); so between phases its pages only
    /// turn invalid (a host write or trim of the page, a foreground BMR update taking
    /// it), and the count says whether any did.
    #[inline]
    fn all_held_live(&self, flash: &Flash, victim: Pbn) -> bool {
        let live = flash.valid_count(victim) as usize == self.held.len();
        #[cfg(test)]
        let live = live && !self.pmr_gc_by_page;
        debug_assert!(!live || self.held.iter().all(|&(_, old)| flash.is_valid(old)));
        live
    }

    /// The PMR-GC victim, if its valid pages fit the PMR's free pages. Between requests
    /// they always do (the synchronous reserve is at least a block); only a state
    /// recovered from a power loss that struck a PMR-GC between its copy and its erase
    /// (both copies on flash, one of them mapped) can hold fewer free pages, and then
    /// BMR-GC, which frees PMR pages without programming any, runs instead. Under
    /// `gc_scope = "per_die"`, a victim whose copies fit its die's active block
    /// ([`Pmr::victim`](super::pmr::Pmr::victim)).
    fn fitting_victim(&self, flash: &Flash) -> Option<Pbn> {
        let free = self.pmr.free_pages(flash);
        self.pmr.victim(flash, free).map(|(victim, _)| victim)
    }

    pub(super) fn pmr_gc_now(&mut self, flash: &mut Flash, victim: Pbn) {
        self.pmr.take_victim(victim);
        for phase in 0..PMR_PHASES {
            self.pmr_phase(flash, victim, phase);
        }
    }

    // ----- when GC runs -----

    /// Synchronous GC (Function 3, lines 33-35): finish any pending job, then reclaim
    /// until a group of `g` pages leaves more than the reserve free.
    pub(super) fn sync_gc(&mut self, flash: &mut Flash, g: u32) {
        self.finish_job(flash);
        while self.pmr.free_pages(flash) <= self.sync_free_pages + g {
            if let Some(victim) = self.fitting_victim(flash) {
                self.pmr_gc_now(flash, victim);
                self.x.pmr_gc_sync += 1;
            } else {
                let (lbn, _) = self
                    .pmr
                    .largest_group()
                    .expect("CACH-FTL: PMR full without data to move (GC reserve broken)");
                let mut img = std::mem::take(&mut self.fg_img);
                img.clear();
                self.bmr_update_now(flash, lbn, &mut img);
                self.fg_img = img;
                self.x.bmr_gc_sync += 1;
            }
        }
    }

    /// Runs the pending job's remaining phases in the foreground.
    pub(super) fn finish_job(&mut self, flash: &mut Flash) {
        if self.job.is_some() {
            self.x.gc_finished_in_foreground += 1;
            let done = self.advance_job(flash, None);
            debug_assert!(done);
        }
    }

    /// Runs phases of the pending job while they fit `budget` (all of them with none).
    /// Returns whether the job finished.
    fn advance_job(&mut self, flash: &mut Flash, mut budget: Option<&mut IdleBudget>) -> bool {
        let Some(mut job) = self.job.take() else {
            return true;
        };
        let mut img = std::mem::take(&mut self.job_img);
        let done = loop {
            let (cost, last) = match job {
                Job::Pmr { victim, phase } => {
                    (self.pmr_cost(flash, victim, phase), phase + 1 == PMR_PHASES)
                }
                Job::Bmr { lbn, phase, .. } => (
                    self.bmr_cost(flash, lbn, phase, &img),
                    phase + 1 == BMR_PHASES,
                ),
            };
            if let Some(b) = budget.as_deref_mut() {
                // With `power_safe_bmr_gc`, an in-place erase starts only if the program
                // that follows it fits the gap too.
                let ahead = match job {
                    Job::Bmr { lbn, phase: 3, .. }
                        if self.power_safe_bmr_gc && !self.out_of_place =>
                    {
                        self.bmr_cost(flash, lbn, 4, &img)
                    }
                    _ => (0, 0, 0),
                };
                let mut probe = *b;
                if !probe.try_spend(cost.0 + ahead.0, cost.1 + ahead.1, cost.2 + ahead.2) {
                    self.x.gc_interruptions += 1;
                    break false;
                }
                let spent = b.try_spend(cost.0, cost.1, cost.2);
                debug_assert!(spent);
            }
            match &mut job {
                Job::Pmr { victim, phase } => {
                    self.pmr_phase(flash, *victim, *phase);
                    *phase += 1;
                }
                Job::Bmr { lbn, phase, target } => {
                    self.bmr_phase(flash, *lbn, *phase, &mut img, target);
                    *phase += 1;
                }
            }
            if last {
                break true;
            }
        };
        self.job_img = img;
        if !done {
            self.job = Some(job);
        }
        done
    }

    /// Function 4 in idle time: erase retired blocks, then run GC jobs while the PMR's
    /// free space is at most the asynchronous threshold and the gap lasts.
    pub(super) fn idle_gc(&mut self, flash: &mut Flash, budget: &mut IdleBudget) {
        loop {
            if let Some(&b) = self.retired.front() {
                if !budget.try_spend(0, 0, 1) {
                    return;
                }
                self.retired.pop_front();
                flash.erase(b, Cause::Merge);
                self.record_erase(flash, b);
                self.spare.push(b, flash.erase_count(b));
                continue;
            }
            if self.job.is_none() && !self.start_async_job(flash, budget) {
                return;
            }
            if !self.advance_job(flash, Some(budget)) {
                return;
            }
        }
    }

    /// Starts an idle-time job if the PMR needs one and its first phase fits.
    fn start_async_job(&mut self, flash: &mut Flash, budget: &IdleBudget) -> bool {
        if self.pmr.free_pages(flash) > self.async_free_pages {
            return false;
        }
        let fits = |c: Cost| {
            let mut b = *budget;
            b.try_spend(c.0, c.1, c.2)
        };
        if let Some(victim) = self.fitting_victim(flash) {
            if !fits(self.pmr_cost(flash, victim, 0)) {
                return false;
            }
            self.pmr.take_victim(victim);
            self.job = Some(Job::Pmr { victim, phase: 0 });
            self.x.pmr_gc_async += 1;
        } else if let Some((lbn, _)) = self.pmr.largest_group() {
            self.job_img.clear();
            if !fits(self.bmr_cost(flash, lbn, 0, &self.job_img)) {
                return false;
            }
            self.job = Some(Job::Bmr {
                lbn,
                phase: 0,
                target: None,
            });
            self.x.bmr_gc_async += 1;
        } else {
            return false;
        }
        true
    }
}
