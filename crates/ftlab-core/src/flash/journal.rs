//! Spare words kept as a journal: a lossless encoding of the spare areas of pages whose
//! words are windows of one table that changes a little with each page written (issue
//! 26, item 2).
//!
//! Superblock FTL writes, with every page a merge copies, the PMD and the PT that page
//! belongs to, as they stand in the merge's work area after the copy (superblock-ftl.txt
//! §4.2.2, Table III): 24 words a copy, about 125 copies per host write under uniform
//! random writes, and writing those 96 bytes into the spare store was about 40% of a
//! run (docs/performance.md, sections 15 and 16). Each copy changes two words of the
//! work area (the page's PT entry and its PMD entry, both now the copy's address), so a
//! merge's spares are fully described by the work area as the merge found it and, per
//! copy, the copy's address and which entry it moved.
//!
//! A *journal* holds exactly that: a `base` (the table, written once when the journal is
//! opened) and one entry `[page, code]` per page programmed through it, in program order.
//! The FTL supplies the meaning as a decoding function ([`SpareDecode`]): the spare words
//! of the page of entry `s` are `decode(base, entries[..=s])`. [`super::Flash::spare_words`]
//! decodes a journaled page's words on demand, so every reader sees the words the page
//! was programmed with, exactly as if they had been stored whole; only the storage
//! differs (8 bytes a copy instead of 96).
//!
//! A journal lives while a page programmed through it has not been erased: each block
//! lists the runs of its pages programmed through a journal (a merge writes a run of
//! consecutive pages, so a block has one or a few), an erase (or a torn program or
//! erase) drops the runs of its pages, and a journal with no page left that is no
//! longer open is freed (its buffers are reused by the next journal). At most one
//! journal is open (the FTL appends to it); opening one closes the previous one.

use crate::units::{PageTag, Ppn};

/// Decodes a journaled page's spare words into `out` (cleared first by the caller): `base`
/// is the journal's table, `entries` the journal's entries up to and including the
/// page's own (the last one), each `[page, code]` as [`super::Flash::move_valid_journaled`]
/// recorded it.
pub type SpareDecode = fn(base: &[u32], entries: &[[u32; 2]], out: &mut Vec<u32>);

/// An open spare journal ([`super::Flash::open_spare_journal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpareJournal(u32);

/// Copies a journaled move hands its caller ([`super::Flash::move_valid_journaled`]: a
/// destination block's run at once, or one copy at a time on the page-by-page path):
/// copy `k` moved the page tagged `tags[k]` from page `from[k]` to page `first + k`, and
/// the caller sets `codes[k]` to its entry code. The copies are done (programmed, their
/// sources invalidated); their entries are pushed, in order, when the caller returns.
#[derive(Debug)]
pub struct JournaledRun<'a> {
    /// The copies' tags, in copy order.
    pub tags: &'a [PageTag],
    /// The page each copy was read from.
    pub from: &'a [u32],
    /// The first copy's page; copy `k` is on page `first + k`.
    pub first: Ppn,
    /// The copies' entry codes, set by the caller (0 when handed over).
    pub codes: &'a mut [u32],
}

#[derive(Clone, Debug)]
struct Journal {
    base: Vec<u32>,
    entries: Vec<[u32; 2]>,
    /// Pages that still reference the journal (programmed through it, not erased).
    live: u32,
    decode: SpareDecode,
}

/// Pages `start..end` (offsets in their block) programmed through journal `slot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    start: u32,
    end: u32,
    slot: u32,
}

/// Every journal of a device and, per block, the runs of its pages programmed through
/// one.
#[derive(Clone, Debug, Default)]
pub(super) struct Journals {
    /// Per block (sized on the first journal).
    runs: Vec<Vec<Run>>,
    slots: Vec<Journal>,
    /// Slots of freed journals, reused.
    free: Vec<u32>,
    open: Option<u32>,
    /// A run's source pages and entry codes while its caller computes them (a block's
    /// pages each, sized on the first journal): [`Journals::take_scratch`].
    from: Vec<u32>,
    codes: Vec<u32>,
    /// Keep nothing ([`Journals::drop_all`]): a run without power losses, where no
    /// page's spare words are ever read.
    lean: bool,
}

impl Journals {
    /// From now on, journals keep no table, entry or reference: opening one only sizes
    /// the scratch buffers a run borrows. Only before the first journal.
    pub(super) fn drop_all(&mut self) {
        debug_assert!(
            self.slots.is_empty(),
            "journals dropped after the first one"
        );
        self.lean = true;
    }

    /// Opens a journal whose table is the concatenation of `base`, closing the one open.
    pub(super) fn open(
        &mut self,
        blocks: usize,
        pages_per_block: u32,
        base: &[&[u32]],
        decode: SpareDecode,
    ) -> SpareJournal {
        self.close_open();
        if self.from.is_empty() {
            self.from = vec![0; pages_per_block as usize];
            self.codes = vec![0; pages_per_block as usize];
        }
        if self.lean {
            // Nothing kept: the caller's runs still borrow the scratch buffers.
            return SpareJournal(u32::MAX);
        }
        if self.runs.is_empty() {
            self.runs = vec![Vec::new(); blocks];
        }
        let slot = match self.free.pop() {
            Some(s) => {
                let j = &mut self.slots[s as usize];
                j.base.clear();
                j.entries.clear();
                j.decode = decode;
                s
            }
            None => {
                self.slots.push(Journal {
                    base: Vec::new(),
                    entries: Vec::new(),
                    live: 0,
                    decode,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let j = &mut self.slots[slot as usize];
        debug_assert_eq!(j.live, 0);
        for part in base {
            j.base.extend_from_slice(part);
        }
        self.open = Some(slot);
        SpareJournal(slot)
    }

    /// Closes the open journal, if any (the firmware that appended to it is gone).
    pub(super) fn close_open(&mut self) {
        if let Some(j) = self.open {
            self.close(SpareJournal(j));
        }
    }

    /// Closes `j`, the open journal: no more entries; freed if no page references it.
    pub(super) fn close(&mut self, j: SpareJournal) {
        if self.lean {
            return;
        }
        assert_eq!(
            self.open,
            Some(j.0),
            "spare journal {j:?} closed, but it is not the open one"
        );
        self.open = None;
        if self.slots[j.0 as usize].live == 0 {
            self.free.push(j.0);
        }
    }

    /// Records that `ppn`, page `offset` of `block`, just programmed (its block's
    /// next page), carries the spare words of entry `code` of `j`.
    #[inline(always)]
    pub(super) fn push(&mut self, j: SpareJournal, block: usize, offset: u32, ppn: u32, code: u32) {
        self.push_entry(j, ppn, code);
        self.add_run(j, block, offset, offset + 1);
    }

    /// Appends the entry of `ppn` to `j`; the page's reference follows with
    /// [`Journals::add_run`].
    #[inline(always)]
    pub(super) fn push_entry(&mut self, j: SpareJournal, ppn: u32, code: u32) {
        if self.lean {
            return;
        }
        debug_assert_eq!(self.open, Some(j.0), "an entry in a closed journal");
        self.slots[j.0 as usize].entries.push([ppn, code]);
    }

    /// The buffers of a run's source pages and entry codes (a block's pages each), taken
    /// while the run is done; [`Journals::push_run`] gives them back.
    #[inline]
    pub(super) fn take_scratch(&mut self) -> (Vec<u32>, Vec<u32>) {
        (
            std::mem::take(&mut self.from),
            std::mem::take(&mut self.codes),
        )
    }

    /// Appends the entries of the `n` pages from `first` (page `offset` of `block` on),
    /// programmed through `j` in that order, their codes the first `n` of the lent
    /// buffers', with their references, and takes back the buffers
    /// [`Journals::take_scratch`] lent.
    #[inline]
    pub(super) fn push_run(
        &mut self,
        j: SpareJournal,
        block: usize,
        offset: u32,
        first: u32,
        n: usize,
        scratch: (Vec<u32>, Vec<u32>),
    ) {
        if self.lean {
            (self.from, self.codes) = scratch;
            return;
        }
        debug_assert_eq!(self.open, Some(j.0), "entries in a closed journal");
        let codes = &scratch.1[..n];
        let entries = &mut self.slots[j.0 as usize].entries;
        entries.extend(codes.iter().zip(first..).map(|(&c, p)| [p, c]));
        self.add_run(j, block, offset, offset + n as u32);
        (self.from, self.codes) = scratch;
    }

    /// Records that pages `start..end` of `block`, just programmed through `j` (their
    /// entries pushed), reference it.
    #[inline]
    pub(super) fn add_run(&mut self, j: SpareJournal, block: usize, start: u32, end: u32) {
        if start == end || self.lean {
            return;
        }
        let runs = &mut self.runs[block];
        match runs.last_mut() {
            Some(r) if r.end == start && r.slot == j.0 => r.end = end,
            _ => {
                debug_assert!(runs.last().is_none_or(|r| r.end <= start));
                runs.push(Run {
                    start,
                    end,
                    slot: j.0,
                })
            }
        }
        self.slots[j.0 as usize].live += end - start;
    }

    /// Drops the pages at offsets `[first, end)` of `block` (erased, or torn).
    #[inline]
    pub(super) fn drop_pages(&mut self, block: usize, first: u32, end: u32) {
        let Some(runs) = self.runs.get_mut(block) else {
            return;
        };
        if runs.is_empty() {
            return;
        }
        if first == 0 && runs.last().is_some_and(|r| r.end <= end) {
            // The whole block (an erase): every run goes.
            let mut runs = std::mem::take(runs);
            for r in runs.drain(..) {
                self.unref(r.slot, r.end - r.start);
            }
            self.runs[block] = runs;
            return;
        }
        let mut runs = std::mem::take(runs);
        let mut i = 0;
        while i < runs.len() {
            let r = runs[i];
            let (a, b) = (r.start.max(first), r.end.min(end));
            if a >= b {
                i += 1;
                continue;
            }
            self.unref(r.slot, b - a);
            match (a == r.start, b == r.end) {
                (true, true) => {
                    runs.remove(i);
                    continue;
                }
                (true, false) => runs[i].start = b,
                (false, true) => runs[i].end = a,
                (false, false) => {
                    runs[i].end = a;
                    runs.insert(i + 1, Run { start: b, ..r });
                }
            }
            i += 1;
        }
        self.runs[block] = runs;
    }

    /// Drops `n` pages' references to journal `slot`.
    #[inline]
    fn unref(&mut self, slot: u32, n: u32) {
        let j = &mut self.slots[slot as usize];
        j.live -= n;
        if j.live == 0 && self.open != Some(slot) {
            self.free.push(slot);
        }
    }

    /// The spare words of `ppn`, page `offset` of `block`, if it was programmed through
    /// a journal.
    pub(super) fn words(&self, block: usize, offset: u32, ppn: u32) -> Option<Vec<u32>> {
        let run = self
            .runs
            .get(block)?
            .iter()
            .find(|r| (r.start..r.end).contains(&offset))?;
        let j = &self.slots[run.slot as usize];
        // The newest entry of the page: a block erased and programmed again while the
        // journal was open left an older one behind.
        let s = j
            .entries
            .iter()
            .rposition(|e| e[0] == ppn)
            .expect("a journaled page has an entry in its journal");
        let mut out = Vec::new();
        (j.decode)(&j.base, &j.entries[..=s], &mut out);
        Some(out)
    }

    /// Journals allocated and the words they hold (tables, entries and runs), for tests
    /// and the memory figures.
    pub(super) fn footprint(&self) -> (usize, usize) {
        let live = self.slots.len() - self.free.len();
        let words = self
            .slots
            .iter()
            .map(|j| j.base.capacity() + 2 * j.entries.capacity())
            .sum::<usize>()
            + self.runs.iter().map(|r| 3 * r.capacity()).sum::<usize>();
        (live, words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_page(_: &[u32], entries: &[[u32; 2]], out: &mut Vec<u32>) {
        out.push(entries[entries.len() - 1][0]);
    }

    /// Dropping any range of a block's pages keeps the runs and the journals' page
    /// counts exact: the pages outside the range still decode, the others do not, and
    /// the journal is freed with its last page.
    #[test]
    fn dropping_pages_splits_and_trims_runs() {
        let mut js = Journals::default();
        let j = js.open(2, 4, &[&[]], last_page);
        for o in 0..8 {
            js.push(j, 1, o, 100 + o, 0);
        }
        js.close(j);
        js.drop_pages(1, 3, 5);
        js.drop_pages(1, 0, 1);
        js.drop_pages(1, 7, 8);
        js.drop_pages(0, 0, 8);
        let alive: Vec<u32> = (0..8)
            .filter(|&o| js.words(1, o, 100 + o) == Some(vec![100 + o]))
            .collect();
        assert_eq!(alive, [1, 2, 5, 6]);
        assert_eq!(js.slots[0].live, 4);
        assert_eq!(js.footprint().0, 1);
        js.drop_pages(1, 0, 8);
        assert_eq!(js.footprint().0, 0, "freed with its last page");
        assert!(js.runs[1].is_empty());
    }
}
