//! CACH-FTL's power-loss recovery (not in the paper): rebuilds the BMR table, its
//! validity bits, the PMR page table and the roles of the PMR blocks from the spare
//! tags alone. The choices are listed in the module header of `cach`.

use super::{CachFtl, Image, MOVED, NO_PAGE};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::RecoverError;
use ftlab_core::{Lbn, Lpn, PageTag, Pbn, Ppn};
use std::collections::VecDeque;

const NO_LBN: u32 = u32::MAX;

fn failed(why: String) -> RecoverError {
    RecoverError::Failed(why)
}

/// What the spare scan found.
struct Scan {
    /// Newest version per LPN (0: no data on flash).
    newest: Vec<u32>,
    /// Per LPN: a block outside the PMR holds its newest version (the BMR copy wins a
    /// tie with the PMR, which only a BMR update or BMR-GC creates, by copying).
    bmr_newest: Vec<bool>,
    /// Per block outside the PMR: the logical block its data pages belong to.
    block_lbn: Vec<u32>,
    /// Per block, out of place: it holds a torn page, so it is the target of an image
    /// program a power cut interrupted (or of a torn erase) and is never adopted.
    torn: Vec<bool>,
}

impl CachFtl {
    /// Whether a block lies outside the PMR (a BMR block or, out of place, a spare).
    fn outside_pmr(&self, pbn: Pbn) -> bool {
        !self.pmr.owns(pbn)
    }

    /// The blocks outside the PMR, in block order.
    fn outside_pmr_blocks(&self) -> Vec<Pbn> {
        (0..self.geo.blocks)
            .map(Pbn)
            .filter(|&b| self.outside_pmr(b))
            .collect()
    }

    /// The data tag (not a filler, not a torn page) of a programmed page, without a
    /// flash operation: the scan of [`CachFtl::scan`] already read and counted every
    /// spare area.
    fn data_tag(flash: &Flash, ppn: Ppn) -> Option<PageTag> {
        flash
            .peek_tag(ppn)
            .filter(|t| t.version > 0 && !t.is_uncorrectable())
    }

    /// Out of place: whether block `pbn` outside the PMR holds a torn page. Only an
    /// image program (a BMR update's, or recovery's merge) or an erase is ever cut in
    /// such a block, and the block is mapped only once its image is whole, so one
    /// that holds a torn page holds nothing that is not also elsewhere, but for new
    /// pages of the request the cut struck, which the host never saw completed.
    fn discarded(&self, flash: &Flash, pbn: Pbn) -> bool {
        self.out_of_place
            && self.outside_pmr(pbn)
            && (0..flash.write_ptr(pbn)).any(|off| {
                (flash.peek_tag(self.geo.ppn(pbn, off))).is_some_and(|t| t.is_uncorrectable())
            })
    }

    /// Reads the spare area of every programmed page once (`Cause::Recovery`) and
    /// checks that the flash is one this scheme can have written.
    fn scan(&self, flash: &mut Flash) -> Result<Scan, RecoverError> {
        let geo = self.geo.clone();
        let mut newest = vec![0u32; geo.logical_pages as usize];
        let mut block_lbn = vec![NO_LBN; geo.blocks as usize];
        let mut torn = vec![false; geo.blocks as usize];
        for pbn in (0..geo.blocks).map(Pbn) {
            let outside = self.outside_pmr(pbn);
            torn[pbn.idx()] = self.discarded(flash, pbn);
            for off in 0..flash.write_ptr(pbn) {
                let ppn = geo.ppn(pbn, off);
                let tag = flash.read_spare(ppn, Cause::Recovery);
                if tag.version == 0 || tag.is_uncorrectable() || torn[pbn.idx()] {
                    // A filler (never mapped), a torn page (unreadable: a program or
                    // an erase the power cut), or a page of a discarded block.
                    continue;
                }
                let Some(v) = newest.get_mut(tag.lpn.idx()) else {
                    return Err(failed(format!(
                        "{ppn:?} holds {:?}, beyond the logical capacity",
                        tag.lpn
                    )));
                };
                *v = (*v).max(tag.version);
                if !outside {
                    continue;
                }
                let lbn = geo.lbn_of(tag.lpn).0;
                if geo.lpn_offset(tag.lpn) != off {
                    return Err(failed(format!(
                        "BMR {ppn:?} holds {:?} away from its offset",
                        tag.lpn
                    )));
                }
                let owner = &mut block_lbn[pbn.idx()];
                if *owner != NO_LBN && *owner != lbn {
                    return Err(failed(format!(
                        "BMR {pbn:?} holds pages of lbn{} and lbn{lbn}",
                        *owner
                    )));
                }
                *owner = lbn;
            }
        }
        let mut bmr_newest = vec![false; newest.len()];
        for pbn in self.outside_pmr_blocks() {
            if torn[pbn.idx()] {
                continue;
            }
            for off in 0..flash.write_ptr(pbn) {
                if let Some(t) = Self::data_tag(flash, geo.ppn(pbn, off)) {
                    if t.version == newest[t.lpn.idx()] {
                        bmr_newest[t.lpn.idx()] = true;
                    }
                }
            }
        }
        Ok(Scan {
            newest,
            bmr_newest,
            block_lbn,
            torn,
        })
    }

    /// Rebuilds every RAM table from flash after a power loss (see the module header).
    pub(super) fn rebuild(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        let scan = self.scan(flash)?;
        if self.out_of_place {
            self.recover_bmr_out_of_place(flash, &scan)?;
        } else {
            self.recover_bmr_in_place(flash, &scan)?;
        }
        let outside = self.outside_pmr_blocks();
        if let Some(wl) = &mut self.bmr_wl {
            // Static levelling: the BMR's blocks by their erase counts on flash.
            let counts = flash.erase_counts();
            let max = outside.iter().map(|b| counts[b.idx()]).max().unwrap_or(0);
            wl.recover(&[max]);
            self.bmr_lbn.fill(u32::MAX);
            for (l, &b) in self.bmr.iter().enumerate() {
                wl.sealed(b, counts[b.idx()]);
                self.bmr_lbn[b.idx()] = l as u32;
            }
        }
        self.recover_pmr(flash, &scan)
    }

    /// Marks valid the pages of `pbn` that hold the newest BMR copy of their LPN, and
    /// sets their BMR validity bits.
    fn adopt(&mut self, flash: &mut Flash, pbn: Pbn, scan: &Scan) {
        for off in 0..flash.write_ptr(pbn) {
            let ppn = self.geo.ppn(pbn, off);
            if let Some(t) = Self::data_tag(flash, ppn) {
                if scan.bmr_newest[t.lpn.idx()] && t.version == scan.newest[t.lpn.idx()] {
                    flash.mark_valid(ppn);
                    self.set_bmr(t.lpn, true);
                }
            }
        }
    }

    /// In place, logical block `l` always lives in block `l`; blocks beyond the BMR and
    /// the PMR are never used.
    fn recover_bmr_in_place(&mut self, flash: &mut Flash, scan: &Scan) -> Result<(), RecoverError> {
        for pbn in self.outside_pmr_blocks() {
            let owner = scan.block_lbn[pbn.idx()];
            if pbn.0 >= self.geo.logical_blocks() && !flash.is_erased(pbn) {
                return Err(failed(format!(
                    "{pbn:?} is outside both regions but programmed"
                )));
            }
            if owner != NO_LBN && owner != pbn.0 {
                return Err(failed(format!("BMR {pbn:?} holds pages of lbn{owner}")));
            }
            self.adopt(flash, pbn, scan);
        }
        Ok(())
    }

    /// Out of place, a logical block may have several programmed blocks: its current
    /// one and retired ones not yet erased. The current one is a block that holds every
    /// newest BMR copy of the logical block; when none does (a retired block kept a
    /// page trimmed before the update that replaced it, whose order against the current
    /// block's pages no tag can tell), the newest copies are merged into one block.
    fn recover_bmr_out_of_place(
        &mut self,
        flash: &mut Flash,
        scan: &Scan,
    ) -> Result<(), RecoverError> {
        let geo = self.geo.clone();
        let logical = geo.logical_blocks();
        let mut cands: Vec<Vec<Pbn>> = vec![Vec::new(); logical as usize];
        let mut erased = VecDeque::new();
        self.retired.clear();
        self.spare.clear();
        for pbn in self.outside_pmr_blocks() {
            match scan.block_lbn[pbn.idx()] {
                // An erased block at the P/E limit retires again (counts on flash).
                _ if flash.is_erased(pbn)
                    && self.spare.retirement().reached(flash.erase_count(pbn)) =>
                {
                    self.spare.push(pbn, flash.erase_count(pbn))
                }
                _ if flash.is_erased(pbn) => erased.push_back(pbn),
                // Only fillers, or a torn page (a cut image program or erase): erased
                // before it is used again.
                _ if scan.torn[pbn.idx()] => self.retired.push_back(pbn),
                NO_LBN => self.retired.push_back(pbn),
                l => cands[l as usize].push(pbn),
            }
        }
        let (mut homeless, mut merges) = (Vec::new(), Vec::new());
        for (l, blocks) in cands.iter().enumerate() {
            let lbn = Lbn(l as u32);
            if blocks.is_empty() {
                homeless.push(lbn);
                continue;
            }
            match blocks
                .iter()
                .find(|&&b| self.holds_all(flash, b, lbn, scan))
            {
                Some(&b) => self.settle_lbn(flash, lbn, b, blocks, scan),
                None => merges.push(lbn),
            }
        }
        for lbn in homeless {
            self.bmr[lbn.idx()] = erased
                .pop_front()
                .ok_or_else(|| failed(format!("no erased block left for the empty {lbn:?}")))?;
        }
        // After the empty logical blocks took theirs: a merge takes an erased block if
        // one is left.
        for lbn in merges {
            let blocks = &cands[lbn.idx()];
            let chosen = self.merge_newest(flash, lbn, blocks, scan, &mut erased)?;
            self.settle_lbn(flash, lbn, chosen, blocks, scan);
        }
        for b in erased {
            self.spare.push(b, flash.erase_count(b));
        }
        Ok(())
    }

    /// Maps `lbn` to `chosen`, adopts its newest pages and retires the logical block's
    /// other `blocks`.
    fn settle_lbn(
        &mut self,
        flash: &mut Flash,
        lbn: Lbn,
        chosen: Pbn,
        blocks: &[Pbn],
        scan: &Scan,
    ) {
        self.bmr[lbn.idx()] = chosen;
        self.adopt(flash, chosen, scan);
        // (A block the merge erased to the P/E limit has retired.)
        self.retired.extend(
            blocks
                .iter()
                .copied()
                .filter(|&b| b != chosen && !flash.is_erased(b)),
        );
    }

    /// Whether `pbn` holds, at their offsets, the newest BMR copy of every page of `lbn`
    /// that has one.
    fn holds_all(&self, flash: &Flash, pbn: Pbn, lbn: Lbn, scan: &Scan) -> bool {
        self.lpns(lbn).all(|l| {
            let lpn = Lpn(l);
            if !scan.bmr_newest[lpn.idx()] {
                return true;
            }
            let off = self.geo.lpn_offset(lpn);
            off < flash.write_ptr(pbn)
                && Self::data_tag(flash, self.geo.ppn(pbn, off))
                    == Some(PageTag {
                        lpn,
                        version: scan.newest[lpn.idx()],
                    })
        })
    }

    /// Reads the newest BMR copies of `lbn`'s pages from its `blocks` into RAM and
    /// programs them into an erased block, or, when none is left, into the first of
    /// `blocks`, erased (all under `Cause::Recovery`; holes get fillers). Returns that
    /// block. An erased target keeps every copy on flash until the merged image is
    /// whole, so a power cut inside this recovery loses nothing (the torn target is
    /// discarded by the next one); erasing one of `blocks` first is the fallback.
    fn merge_newest(
        &mut self,
        flash: &mut Flash,
        lbn: Lbn,
        blocks: &[Pbn],
        scan: &Scan,
        erased: &mut VecDeque<Pbn>,
    ) -> Result<Pbn, RecoverError> {
        let mut img = std::mem::take(&mut self.fg_img);
        img.clear();
        for l in self.lpns(lbn) {
            let lpn = Lpn(l);
            if !scan.bmr_newest[lpn.idx()] {
                continue;
            }
            let off = self.geo.lpn_offset(lpn);
            let want = Some(PageTag {
                lpn,
                version: scan.newest[lpn.idx()],
            });
            let src = blocks
                .iter()
                .map(|&b| self.geo.ppn(b, off))
                .find(|&p| Self::data_tag(flash, p) == want)
                .expect("a newest BMR copy lies in a block of its logical block");
            img.set(off, flash.read(src, Cause::Recovery), MOVED);
        }
        // An erased block; else the first block that this erase leaves below the P/E
        // limit (one that reaches it retires).
        let mut target = erased.pop_front();
        if target.is_none() {
            for &b in blocks {
                flash.erase(b, Cause::Recovery);
                let erases = flash.erase_count(b);
                if !self.spare.retirement().reached(erases) {
                    target = Some(b);
                    break;
                }
                self.spare.push(b, erases); // retires it
            }
        }
        let target = match target {
            Some(b) => b,
            None => {
                self.fg_img = img;
                // Every block at the limit: the device's end (raises WornOut).
                self.spare.retirement().exhausted();
                return Err(failed(format!(
                    "no block below the P/E limit left to merge {lbn:?} into"
                )));
            }
        };
        self.program_recovered(flash, target, &img);
        self.fg_img = img;
        Ok(target)
    }

    /// Programs a recovered image from offset 0 to its last page, with fillers in the
    /// holes, under `Cause::Recovery`, leaving every page invalid (`adopt` marks them).
    fn program_recovered(&self, flash: &mut Flash, pbn: Pbn, img: &Image) {
        let Some(last) = img.kind.iter().rposition(|&k| k != NO_PAGE) else {
            return;
        };
        for off in 0..=last as u32 {
            let ppn = self.geo.ppn(pbn, off);
            let tag = img.get(off).unwrap_or(super::FILLER);
            flash.program(ppn, tag, Cause::Recovery);
            flash.invalidate(ppn);
        }
    }

    /// Maps every LPN whose newest copy is only in the PMR to its first such copy
    /// (a copy programmed by an interrupted PMR-GC and its source carry the same
    /// version), then sorts the PMR blocks into free, active and sealed.
    fn recover_pmr(&mut self, flash: &mut Flash, scan: &Scan) -> Result<(), RecoverError> {
        let geo = self.geo.clone();
        let pmr_blocks: Vec<Pbn> = (0..geo.blocks)
            .map(Pbn)
            .filter(|&b| self.pmr.owns(b))
            .collect();
        for pbn in pmr_blocks {
            for off in 0..flash.write_ptr(pbn) {
                let ppn = geo.ppn(pbn, off);
                let Some(t) = Self::data_tag(flash, ppn) else {
                    continue;
                };
                let l = t.lpn.idx();
                if scan.bmr_newest[l] && t.version == scan.newest[l] {
                    // The BMR's version survives here too.
                    self.remember_dup(t.lpn, ppn);
                }
                if !scan.bmr_newest[l]
                    && t.version == scan.newest[l]
                    && self.pmr.map.get(t.lpn.0).is_none()
                {
                    flash.mark_valid(ppn);
                    self.pmr.add(t.lpn, ppn);
                }
            }
        }
        self.pmr.rebuild_blocks(flash).map_err(failed)
    }
}
