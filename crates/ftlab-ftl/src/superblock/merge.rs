//! Superblock merges (superblock-ftl.txt §4.3): SimpleCopyAndCompact (Fig. 9), MergeSome
//! (Fig. 10) and MergeAll with hot/cold classification (Fig. 11), over a work area that
//! holds the whole superblock's map while it is reorganised ("LoadAllMapTable").

use super::cache::NONE;
use super::layout::{AddressSplit, Split};
use super::snapshot::{note_in, Event, SnapLog};
use super::SuperblockFtl;
use ftlab_core::flash::{Cause, Flash, JournaledRun};
use ftlab_core::{Pbn, Ppn};

/// The map of one superblock while a merge runs: the PMD and all PTs of each logical
/// block. With map pages, its own buffers, sized once for N logical blocks; with the map
/// in spare areas, the RAM mirror's storage, taken for the merge (the mirror holds the
/// newest spare map, which is what LoadAllMapTable loads), the superblock's run from
/// logical block `at`.
#[derive(Clone, Debug)]
pub(super) struct Workspace {
    sb: u32,
    /// The first logical block of the work area in `pmd` and `pt` (0 with its own
    /// buffers).
    at: usize,
    /// Holds the mirror's storage (the mirror holds the work area's own buffers).
    mirrored: bool,
    /// With map pages: the map changed (copies, a dropped map page) and must be written.
    dirty: bool,
    /// With map pages: write the map page at the end even if it is cached (MergeAll).
    flush: bool,
    pmd_len: usize,
    pt_len: usize,
    pmd: Vec<u32>,
    pt: Vec<u32>,
}

impl Workspace {
    pub(super) fn new(n: u32, pmd_len: usize, pt_len: usize) -> Workspace {
        Workspace {
            sb: NONE,
            at: 0,
            mirrored: false,
            dirty: false,
            flush: false,
            pmd_len,
            pt_len,
            pmd: vec![NONE; n as usize * pmd_len],
            pt: vec![NONE; n as usize * pmd_len * pt_len],
        }
    }

    pub(super) fn is_loaded(&self) -> bool {
        self.sb != NONE
    }

    pub(super) fn pmd(&self, k: usize) -> &[u32] {
        let a = (self.at + k) * self.pmd_len;
        &self.pmd[a..a + self.pmd_len]
    }

    pub(super) fn pt(&self, k: usize, i: usize) -> &[u32] {
        let a = ((self.at + k) * self.pmd_len + i) * self.pt_len;
        &self.pt[a..a + self.pt_len]
    }

    /// The PMDs and the PTs of the work area's first `lbns` logical blocks.
    pub(super) fn run(&self, lbns: usize) -> (&[u32], &[u32]) {
        let a = self.at * self.pmd_len;
        let b = a + lbns * self.pmd_len;
        (&self.pmd[a..b], &self.pt[a * self.pt_len..b * self.pt_len])
    }

    /// A merge moved the page `sp` names from `src` to `dst`: its PT entry follows.
    /// Returns the page's PGD and PMD indices.
    #[inline]
    fn moved(&mut self, sp: &Split, src: Ppn, dst: Ppn) -> (usize, usize) {
        debug_assert_eq!(sp.superblock, self.sb);
        let (k, i, j) = (
            sp.pgd_index as usize,
            sp.pmd_index as usize,
            sp.pte_index as usize,
        );
        let e = ((self.at + k) * self.pmd_len + i) * self.pt_len + j;
        debug_assert_eq!(self.pt[e], src.0, "{sp:?} was not mapped to {src:?}");
        self.pt[e] = dst.0;
        (k, i)
    }

    /// [`Workspace::moved`] with the map in spare areas: the PMD entry of the page's PT
    /// and its logical block's newest page (`pgd`) follow too.
    #[inline]
    fn moved_in_spare(
        &mut self,
        pgd: &mut [u32],
        sp: &Split,
        src: Ppn,
        dst: Ppn,
    ) -> (usize, usize) {
        let (k, i) = self.moved(sp, src, dst);
        self.pmd[(self.at + k) * self.pmd_len + i] = dst.0;
        pgd[sp.lbn as usize] = dst.0;
        (k, i)
    }
}

impl SuperblockFtl {
    /// LoadAllMapTable: the map of every logical block of `sb` into the work area. Entries
    /// in the map cache cost nothing; the others cost spare reads (one for the PMD, one per
    /// PT not in the PMD's spare).
    pub(super) fn load_ws(&mut self, flash: &mut Flash, sb: u32) {
        let pl = self.ws.pmd_len;
        debug_assert!(self.journal.is_none(), "a spare journal left open");
        self.ws.sb = sb;
        self.ws.dirty = false;
        if self.mappages.is_some() {
            let mut pt = std::mem::take(&mut self.ws.pt);
            self.load_map(flash, sb, &mut pt);
            self.ws.pt = pt;
            return;
        }
        // The mirror holds the newest spare map, which the cached entries equal: the
        // work area is the mirror's run of `sb`. Only the spare reads of the entries
        // not cached are issued; empty logical blocks and PTs read as unmapped.
        let first = (sb * self.cfg.n) as usize;
        for k in 0..self.lbns_of(sb) as usize {
            let lbn = sb * self.cfg.n + k as u32;
            let head = self.pgd[lbn as usize];
            if head == NONE {
                self.mirror.fill_lbn(lbn, NONE);
                continue;
            }
            let mut read_head = false;
            if let Some(o) = self.cache.any_of_lbn(lbn, usize::MAX) {
                debug_assert_eq!(self.mirror.pmd(lbn), self.cache.pmd(o));
            } else {
                flash.read_spare(Ppn(head), Cause::Map);
                self.counters.merge_map_spare_reads += 1;
                read_head = true;
                debug_assert!(
                    !flash.keeps_recovery_data()
                        || self.mirror.pmd(lbn) == super::spare_pmd(flash, head, pl)
                );
            }
            for i in 0..pl {
                let loc = self.mirror.pmd(lbn)[i];
                if loc == NONE {
                    self.mirror.fill_pt(lbn, i, NONE);
                } else if let Some(cs) = self.cache.peek(lbn, i as u32) {
                    debug_assert_eq!(self.mirror.pt(lbn, i), self.cache.pt(cs));
                } else {
                    if !(read_head && loc == head) {
                        flash.read_spare(Ppn(loc), Cause::Map);
                        self.counters.merge_map_spare_reads += 1;
                    }
                    debug_assert!(
                        !flash.keeps_recovery_data()
                            || self.mirror.pt(lbn, i) == super::spare_pt(flash, loc, pl)
                    );
                }
            }
        }
        self.mirror.swap_storage(&mut self.ws.pmd, &mut self.ws.pt);
        self.ws.at = first;
        self.ws.mirrored = true;
    }

    /// Writes the work area back into the cached entries of `sb` and releases it (with map
    /// pages: into the cached map page, or onto flash if it is not cached).
    pub(super) fn store_ws(&mut self, flash: &mut Flash, sb: u32) {
        debug_assert_eq!(self.ws.sb, sb);
        self.close_journal(flash);
        if self.mappages.is_some() {
            let pt = std::mem::take(&mut self.ws.pt);
            self.store_map(flash, sb, &pt, self.ws.dirty, self.ws.flush);
            self.ws.pt = pt;
            self.ws.sb = NONE;
            self.ws.flush = false;
            return;
        }
        // Every page the merge programmed carried its block's PMD and PT as they stand in
        // the work area, and what it did not touch was loaded from the newest spares: the
        // work area is the newest spare map of the superblock, and the mirror's run.
        let lbns = self.lbns_of(sb) as usize;
        for k in 0..lbns {
            let lbn = sb * self.cfg.n + k as u32;
            for i in 0..self.ws.pmd_len {
                if let Some(cs) = self.cache.peek(lbn, i as u32) {
                    self.cache.pmd_mut(cs).copy_from_slice(self.ws.pmd(k));
                    self.cache.pt_mut(cs).copy_from_slice(self.ws.pt(k, i));
                }
            }
        }
        debug_assert!(self.ws.mirrored);
        self.mirror.swap_storage(&mut self.ws.pmd, &mut self.ws.pt);
        self.ws.at = 0;
        self.ws.mirrored = false;
        self.ws.sb = NONE;
    }

    /// ValidPageCopy inside a merge: copies `src` to `dst`, moves the page's PT and PMD
    /// to `dst`'s spare and invalidates `src` (its block is erased by the caller).
    pub(super) fn copy_ws(&mut self, flash: &mut Flash, src: Ppn, dst: Ppn) {
        let tag = flash.read(src, Cause::Merge);
        flash.invalidate(src);
        let sp = self.split.split(tag.lpn.0);
        if self.mappages.is_some() {
            self.ws.moved(&sp, src, dst);
            flash.program(dst, tag, Cause::Merge);
            self.ws.dirty = true;
            self.stats.merge_pages_copied += 1;
            return;
        }
        // The journal's table would miss this copy's change to the work area.
        self.close_journal(flash);
        let (k, i) = self.ws.moved_in_spare(&mut self.pgd, &sp, src, dst);
        // The PMD and the PT go straight into the page's spare (no staging copy).
        flash.program_with_spare_parts(dst, tag, self.ws.pmd(k), self.ws.pt(k, i), Cause::Merge);
        self.note(Event::Write {
            lpn: tag.lpn.0,
            ppn: dst.0,
        });
        self.stats.merge_pages_copied += 1;
    }

    /// [`SuperblockFtl::copy_ws`] of every valid page of `src` from offset `from` on
    /// into block `dst` until it is full, with the map in spare areas: the same
    /// operations, spares and events, a destination block at a time
    /// ([`Flash::move_valid_with_spare`]). Returns the offset in `src` to resume from.
    fn copy_ws_run(&mut self, flash: &mut Flash, src: Pbn, from: u32, dst: Pbn) -> u32 {
        debug_assert!(self.mappages.is_none());
        let pl = self.ws.pmd_len;
        let words = pl + self.ws.pt_len;
        let mut copied = 0;
        let off = if self.journal_spares {
            let journal = match self.journal {
                Some(j) => j,
                None => {
                    // The work area as the merge found it (or as the last direct copy
                    // left it): the journal's table.
                    let head = [pl as u32, self.ws.pt_len as u32];
                    let (pmds, pts) = self.ws.run(self.lbns_of(self.ws.sb) as usize);
                    let base: [&[u32]; 3] = [&head, pmds, pts];
                    let j = flash.open_spare_journal(words, &base, decode_spare);
                    self.journal = Some(j);
                    j
                }
            };
            let (split, ws, pgd, snap) = (&self.split, &mut self.ws, &mut self.pgd, &mut self.snap);
            flash.move_valid_journaled(src, from, dst, Cause::Merge, journal, |run| {
                copied += run.tags.len() as u64;
                follow_run(split, ws, pgd, snap, run);
            })
        } else {
            let (split, ws, pgd, snap) = (&self.split, &mut self.ws, &mut self.pgd, &mut self.snap);
            flash.move_valid_with_spare(src, from, dst, Cause::Merge, words, |tag, s, d, spare| {
                let (_, (k, i)) = followed(split, ws, pgd, snap, tag.lpn.0, s, d);
                spare[..pl].copy_from_slice(ws.pmd(k));
                spare[pl..].copy_from_slice(ws.pt(k, i));
                copied += 1;
            })
        };
        self.stats.merge_pages_copied += copied;
        off
    }

    /// Closes the spare journal of the work area, if one is open: the merge is over, or
    /// a copy is about to change the work area without an entry.
    pub(super) fn close_journal(&mut self, flash: &mut Flash) {
        if let Some(j) = self.journal.take() {
            flash.close_spare_journal(j);
        }
    }

    /// SimpleCopyAndCompact (Fig. 9): copies the valid pages of `src` into the last
    /// U-block, continuing in a reserved block when it fills, and erases `src`. Returns
    /// whether no reserved block was needed (Fig. 9's `ret = 1`): then `src` is a free
    /// block; otherwise it replaces the reserved block taken.
    pub(super) fn simple_copy_and_compact(&mut self, flash: &mut Flash, sb: u32, src: Pbn) -> bool {
        let valid = flash.valid_count(src);
        self.sample_u(flash, src);
        let mut fits = true;
        if self.mappages.is_none() {
            // The map in spare areas: every valid page is copied, a destination block
            // at a time.
            let mut off = 0;
            while flash.valid_count(src) > 0 {
                fits &= self.copy_frontier(flash, sb);
                let f = Pbn(self.frontier[sb as usize]);
                off = self.copy_ws_run(flash, src, off, f);
            }
        } else {
            for off in 0..flash.write_ptr(src) {
                let p = self.geo.ppn(src, off);
                if !flash.is_valid(p) {
                    continue;
                }
                if self.home() == Some(super::Home::UBlock) && self.map_pgd[sb as usize] == p.0 {
                    // The superblock's map page: rewritten after the merge, not copied.
                    flash.invalidate(p);
                    self.map_pgd[sb as usize] = NONE;
                    self.ws.dirty = true;
                    continue;
                }
                fits &= self.copy_frontier(flash, sb);
                let f = Pbn(self.frontier[sb as usize]);
                let dst = self.geo.ppn(f, flash.write_ptr(f));
                self.copy_ws(flash, p, dst);
            }
        }
        // Detached (and logged) only now, with every valid page copied: a snapshot
        // written while the copies run (a reserved block's allocation, a full snapshot)
        // must still list `src` with its superblock, since a power cut there leaves its
        // uncopied pages live in it. (The copies never go to `src`: it is full or not
        // the superblock's frontier.)
        self.detach(sb, src);
        self.note(Event::Detach { sb, pbn: src.0 });
        flash.erase(src, Cause::Merge);
        self.wl_erased(flash, src);
        // (A block at the P/E limit retires; the log sees it released to the free pool.)
        let retired = self.retire_if_worn(flash, src);
        if retired {
        } else if fits {
            self.free.push(src, flash.erase_count(src));
        } else {
            self.owner[src.idx()] = super::OWN_RESERVED;
            self.reserved.push(src);
        }
        self.note(Event::Release {
            pbn: src.0,
            to_reserved: !fits && !retired,
        });
        match (valid, fits) {
            (0, _) => self.stats.merges_switch += 1,
            (_, true) => self.stats.merges_partial += 1,
            (_, false) => self.stats.merges_full += 1,
        }
        fits
    }

    /// Makes sure `sb`'s frontier (its last U-block) has a free page for a merge's
    /// copy, continuing in a reserved block when it has none; returns whether it had.
    fn copy_frontier(&mut self, flash: &mut Flash, sb: u32) -> bool {
        let f = self.frontier[sb as usize];
        if f != NONE && !flash.is_full(Pbn(f)) {
            return true;
        }
        if self.reserved.is_empty() {
            self.retirement.exhausted();
        }
        let d = self
            .reserved
            .pop()
            .expect("superblock: reserved block missing during a merge");
        self.attach(sb, d, true);
        self.frontier[sb as usize] = d.0;
        self.note_now(flash, Event::Alloc { sb, pbn: d.0 });
        false
    }

    /// The block of `sb` with the fewest valid pages (ties: allocation order), never the
    /// U-block being written while it has free pages.
    fn greedy_victim(&self, flash: &Flash, sb: u32) -> Option<Pbn> {
        let f = self.frontier[sb as usize];
        self.blocks_of(sb)
            .iter()
            .filter(|&&b| b != f || flash.is_full(Pbn(b)))
            .min_by_key(|&&b| flash.valid_count(Pbn(b)))
            .map(|&b| Pbn(b))
    }

    /// MergeSome (Fig. 10): run when superblock `sb` has reached its block limit; frees
    /// two PBMT entries (or as many as its valid pages allow).
    pub(super) fn merge_some(&mut self, flash: &mut Flash, sb: u32) {
        self.counters.merges_some += 1;
        if self.cfg.ip {
            return self.merge_some_ip(flash, sb);
        }
        self.load_ws(flash, sb);
        let ppb = self.geo.pages_per_block;
        let need = self.valid_of(flash, sb).div_ceil(ppb);
        let target = self.sb_len[sb as usize].saturating_sub(need).min(2);
        assert!(
            target >= 1,
            "superblock {sb}: at its block limit with every block needed"
        );
        let mut freed = 0;
        let mut rounds = 0u32;
        while freed < target {
            rounds += 1;
            assert!(
                rounds <= 4 * self.cfg.max_blocks * ppb,
                "superblock {sb}: MergeSome makes no progress"
            );
            let Some(victim) = self.greedy_victim(flash, sb) else {
                break;
            };
            freed += self.simple_copy_and_compact(flash, sb, victim) as u32;
        }
        self.store_ws(flash, sb);
        self.maybe_promote(sb);
    }

    /// Flash operations a MergeAll of `sb` would issue, at most: page reads (copies and
    /// map spare reads), programs and erases (for idle-time budgeting).
    pub(super) fn merge_all_estimate(&self, flash: &Flash, sb: u32) -> (u64, u64, u64) {
        let ppb = self.geo.pages_per_block;
        let map_reads = self.lbns_of(sb) as u64 * (1 + self.ws.pmd_len as u64);
        let (mut copies, mut erases) = (0u64, 0u64);
        if self.cfg.ip {
            for &b in self.blocks_of(sb) {
                copies += flash.valid_count(Pbn(b)) as u64;
                erases += 1;
            }
            copies += self.lbns_of(sb) as u64 * ppb as u64; // fillers, at most
        } else {
            let f = self.frontier[sb as usize];
            for &b in self.blocks_of(sb) {
                let v = flash.valid_count(Pbn(b));
                if b != f && v < ppb || b == f && flash.write_ptr(Pbn(b)) > v {
                    copies += v as u64;
                    erases += 1;
                }
            }
        }
        (copies + map_reads, copies, erases)
    }

    /// MergeAll (Fig. 11): run on a victim superblock when no free block is left. Hot
    /// blocks are compacted first, then cold ones (hot/cold on), into the last U-block and
    /// reserved blocks; the superblock ends with D-blocks only, all cold.
    pub(super) fn merge_all(&mut self, flash: &mut Flash, sb: u32) {
        self.counters.merges_all += 1;
        if self.cfg.ip {
            return self.merge_all_ip(flash, sb);
        }
        self.load_ws(flash, sb);
        let ppb = self.geo.pages_per_block;
        let f = self.frontier[sb as usize];
        if f != NONE && flash.write_ptr(Pbn(f)) > flash.valid_count(Pbn(f)) {
            // InvalidateAllFreePages: the last U-block has invalid pages, so it cannot
            // become a D-block; its free pages are abandoned.
            self.frontier[sb as usize] = NONE;
            self.note(Event::Abandon { sb });
        }
        let keep = self.frontier[sb as usize];
        let mut order = std::mem::take(&mut self.scratch);
        order.clear();
        let blocks = self.blocks_of(sb);
        if self.cfg.hot_cold {
            order.extend(blocks.iter().filter(|&&b| self.hot[b as usize]));
            order.extend(blocks.iter().filter(|&&b| !self.hot[b as usize]));
        } else {
            order.extend_from_slice(blocks);
        }
        for &b in &order {
            if b != keep && flash.valid_count(Pbn(b)) < ppb {
                self.simple_copy_and_compact(flash, sb, Pbn(b));
            }
        }
        self.scratch = order;
        self.mark_all_d(sb, true);
        self.ws.flush = true;
        self.store_ws(flash, sb);
    }
}

/// A merge copy of `lpn` from `src` to `dst`, followed by the work area, the PGD and the
/// snapshot log. Returns the page's split and its PGD and PMD indices.
#[inline(always)]
fn followed(
    split: &AddressSplit,
    ws: &mut Workspace,
    pgd: &mut [u32],
    snap: &mut Option<SnapLog>,
    lpn: u32,
    src: Ppn,
    dst: Ppn,
) -> (Split, (usize, usize)) {
    let sp = split.split(lpn);
    let ki = ws.moved_in_spare(pgd, &sp, src, dst);
    note_in(snap, Event::Write { lpn, ppn: dst.0 });
    (sp, ki)
}

/// [`followed`] for each copy of a journaled run, each entry code set: with the split's
/// shifts (powers of two, every preset) taken out of the loop and the work area's
/// indices computed from the LPN alone, the loop does per copy what the map needs (the
/// PT entry, the PMD entry, the PGD, the log's event) and no more; otherwise copy by
/// copy through [`followed`].
#[inline]
fn follow_run(
    split: &AddressSplit,
    ws: &mut Workspace,
    pgd: &mut [u32],
    snap: &mut Option<SnapLog>,
    run: JournaledRun<'_>,
) {
    let copies = run.tags.iter().zip(run.from).zip(run.codes.iter_mut());
    let Some((p, nb, t)) = split.shifts() else {
        for (d, ((tag, &s), code)) in (run.first.0..).zip(copies) {
            let (sp, _) = followed(split, ws, pgd, snap, tag.lpn.0, Ppn(s), Ppn(d));
            *code = entry_code(&sp);
        }
        return;
    };
    // Row `lbn + rows` of the work area is logical block `lbn`'s (the superblock's
    // first logical block is row `at`), each row `pmd_len` PMD entries and as many PTs
    // of `pt_len` entries: the split's `(pgd_index, pmd_index, pte_index)` addressing,
    // from the LPN's bits.
    let first_lbn = ws.sb << nb;
    let rows = ws.at.wrapping_sub(first_lbn as usize);
    let (pl, tl) = (ws.pmd_len, ws.pt_len);
    let (page_mask, pte_mask) = ((1u32 << p) - 1, (1u32 << t) - 1);
    for (d, ((tag, &s), code)) in (run.first.0..).zip(copies) {
        let lpn = tag.lpn.0;
        let lbn = lpn >> p;
        let page = lpn & page_mask;
        let (k, i, j) = (lbn.wrapping_sub(first_lbn), page >> t, page & pte_mask);
        debug_assert_eq!(
            (k, i, j),
            {
                let sp = split.split(lpn);
                (sp.pgd_index, sp.pmd_index, sp.pte_index)
            },
            "the shifts split {lpn} as AddressSplit::split does"
        );
        debug_assert!(k < 1 << nb, "lpn {lpn} is not in superblock {}", ws.sb);
        debug_assert!(
            k < 1 << 10 && i < 1 << 10 && j < 1 << 10,
            "entry code of {lpn}"
        );
        let m = (lbn as usize).wrapping_add(rows) * pl + i as usize;
        let e = m * tl + j as usize;
        debug_assert_eq!(ws.pt[e], s, "lpn {lpn} was not mapped to {s}");
        ws.pt[e] = d;
        ws.pmd[m] = d;
        pgd[lbn as usize] = d;
        note_in(snap, Event::Write { lpn, ppn: d });
        *code = k << 20 | i << 10 | j;
    }
}

/// A merge copy's journal entry code: which PT entry (`pgd_index`, `pmd_index`,
/// `pte_index`) it moved. The copy's address is the entry's page.
#[inline(always)]
fn entry_code(sp: &Split) -> u32 {
    debug_assert!(sp.pgd_index < 1 << 10 && sp.pmd_index < 1 << 10 && sp.pte_index < 1 << 10);
    sp.pgd_index << 20 | sp.pmd_index << 10 | sp.pte_index
}

/// [`ftlab_core::flash::SpareDecode`] of superblock's spare journal: the table is
/// `[pmd_len, pt_len]`, the work area's PMDs (`pmd_len` words per logical block) and its
/// PTs (`pt_len` words per PMD entry); each entry `[copy, code]` set the PT entry `code`
/// names and its PMD entry to the copy (as [`Workspace::moved_in_spare`] does). The last
/// entry's page carries its logical block's PMD and its PT after its own change.
pub(super) fn decode_spare(base: &[u32], entries: &[[u32; 2]], out: &mut Vec<u32>) {
    let (pl, tl) = (base[0] as usize, base[1] as usize);
    let table = &base[2..];
    let lbns = table.len() / (pl + pl * tl);
    let (pmds, pts) = table.split_at(lbns * pl);
    let unpack = |c: u32| {
        (
            (c >> 20) as usize,
            (c >> 10 & 0x3ff) as usize,
            (c & 0x3ff) as usize,
        )
    };
    let [.., [_, last]] = entries else {
        panic!("a journaled page without its entry");
    };
    let (k, i, _) = unpack(*last);
    out.clear();
    out.extend_from_slice(&pmds[k * pl..(k + 1) * pl]);
    let pt = (k * pl + i) * tl;
    out.extend_from_slice(&pts[pt..pt + tl]);
    for &[page, code] in entries {
        let (ek, ei, ej) = unpack(code);
        if ek == k {
            out[ei] = page;
            if ei == i {
                out[pl + ej] = page;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::rng::SplitMix64;
    use ftlab_core::units::PageTag;
    use ftlab_core::Lpn;

    /// A run followed at once ([`follow_run`], shifts hoisted when the geometry has
    /// them) leaves the work area, the PGD, the snapshot log and the entry codes as
    /// [`followed`] and [`entry_code`] copy by copy do: with powers of two and without,
    /// in the mirror's run (`at` the superblock's first logical block) and in a work
    /// area of its own (`at` 0).
    #[test]
    fn a_run_followed_at_once_matches_the_copy_by_copy_bookkeeping() {
        let mut rng = SplitMix64::new(7);
        for (n, ppb, t) in [(4, 128, 4), (4, 64, 3), (2, 32, 5), (3, 96, 4), (4, 48, 2)] {
            let split = AddressSplit::new(n, ppb, t);
            let (pl, tl) = (split.pmd_len(), split.pt_len());
            let superblocks = 5u32;
            let lbns = superblocks * n;
            let geo = super::super::tests::geo(ppb, lbns, 50.0, 64);
            for mirrored in [false, true] {
                let sb = 3;
                let mut ws = Workspace::new(if mirrored { lbns } else { n }, pl, tl);
                ws.sb = sb;
                ws.at = if mirrored { (sb * n) as usize } else { 0 };
                for w in ws.pt.iter_mut().chain(ws.pmd.iter_mut()) {
                    *w = rng.next_u64() as u32;
                }
                let mut pgd: Vec<u32> = (0..lbns).map(|_| rng.next_u64() as u32).collect();
                // Distinct pages of the superblock, each mapped where the copy takes it
                // from.
                let first_lpn = sb * n * ppb;
                let mut lpns: Vec<u32> = (first_lpn..first_lpn + n * ppb).collect();
                for i in (1..lpns.len()).rev() {
                    lpns.swap(i, rng.below(i as u64 + 1) as usize);
                }
                lpns.truncate(ppb as usize);
                let tags: Vec<PageTag> = lpns
                    .iter()
                    .map(|&l| PageTag {
                        lpn: Lpn(l),
                        version: 1,
                    })
                    .collect();
                let from: Vec<u32> = (0..ppb).map(|k| 10_000 + k).collect();
                for (&l, &s) in lpns.iter().zip(&from) {
                    let sp = split.split(l);
                    let e = ((ws.at + sp.pgd_index as usize) * pl + sp.pmd_index as usize) * tl
                        + sp.pte_index as usize;
                    ws.pt[e] = s;
                }
                let before = ws.pt.clone();
                let first = Ppn(50_000);
                let log = SnapLog::new(&geo, 0, 1, 1);
                let (mut ws2, mut pgd2, mut snap, mut snap2) =
                    (ws.clone(), pgd.clone(), Some(log.clone()), Some(log));
                let mut codes = vec![0; tags.len()];
                follow_run(
                    &split,
                    &mut ws,
                    &mut pgd,
                    &mut snap,
                    JournaledRun {
                        tags: &tags,
                        from: &from,
                        first,
                        codes: &mut codes,
                    },
                );
                let expected: Vec<u32> = (first.0..)
                    .zip(tags.iter().zip(&from))
                    .map(|(d, (tag, &s))| {
                        let (sp, _) = followed(
                            &split,
                            &mut ws2,
                            &mut pgd2,
                            &mut snap2,
                            tag.lpn.0,
                            Ppn(s),
                            Ppn(d),
                        );
                        entry_code(&sp)
                    })
                    .collect();
                let at = format!("N {n}, {ppb} pages, t {t}, mirrored {mirrored}");
                assert_eq!(codes, expected, "{at}: entry codes");
                assert_eq!(ws.pt, ws2.pt, "{at}: PTs");
                assert_eq!(ws.pmd, ws2.pmd, "{at}: PMDs");
                assert_eq!(pgd, pgd2, "{at}: PGD");
                assert_eq!(format!("{snap:?}"), format!("{snap2:?}"), "{at}: log");
                assert_ne!(ws.pt, before, "{at}: the run moved nothing");
            }
        }
    }
}
