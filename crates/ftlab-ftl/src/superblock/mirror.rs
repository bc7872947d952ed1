//! A RAM mirror of the newest spare-resident map (SB-S): for every logical block, the PMD
//! in the spare of its PGD page and each PT in the spare of the page its PMD entry points
//! to.
//!
//! Simulator bookkeeping, not controller RAM (not in `mapping_bytes`): the flash model
//! keeps every page's spare words ([`Flash::spare_words`]), so the newest PMD and PTs of
//! one superblock are scattered over its blocks' spares, one cache line or two each, and
//! LoadAllMapTable (every merge) and map cache misses paid a memory miss per PT. The
//! mirror holds the same words in logical order, so a superblock's map is one contiguous
//! run. The FTL still issues, counts and times every spare read exactly as before; only
//! where the simulator fetches the words from changes. Debug builds check each fetch
//! against the spare it stands for.
//!
//! Invariant (kept by every program of a page with its map, rebuilt on recovery): for a
//! logical block `lbn` with PGD entry `head != NONE`, `pmd(lbn)` equals the PMD in
//! `head`'s spare and, for every PMD entry `loc != NONE` at index `i`, `pt(lbn, i)` equals
//! the PT in `loc`'s spare. Entries of empty logical blocks and PTs are unspecified.
//!
//! [`Flash::spare_words`]: ftlab_core::flash::Flash::spare_words

/// The newest PMD and PTs of every logical block, in logical order.
#[derive(Clone, Debug, Default)]
pub(super) struct Mirror {
    pmd_len: usize,
    pt_len: usize,
    pmd: Vec<u32>,
    pt: Vec<u32>,
}

impl Mirror {
    /// A mirror of `lbns` logical blocks (unspecified until written).
    pub(super) fn new(lbns: usize, pmd_len: usize, pt_len: usize) -> Mirror {
        Mirror {
            pmd_len,
            pt_len,
            pmd: vec![super::cache::NONE; lbns * pmd_len],
            pt: vec![super::cache::NONE; lbns * pmd_len * pt_len],
        }
    }

    /// The PMD of `lbn`.
    #[inline]
    pub(super) fn pmd(&self, lbn: u32) -> &[u32] {
        let a = lbn as usize * self.pmd_len;
        &self.pmd[a..a + self.pmd_len]
    }

    /// PT `i` of `lbn`.
    #[inline]
    pub(super) fn pt(&self, lbn: u32, i: usize) -> &[u32] {
        let a = (lbn as usize * self.pmd_len + i) * self.pt_len;
        &self.pt[a..a + self.pt_len]
    }

    /// Records that a page of `lbn` carrying PT `i` was programmed with `pmd` and `pt`.
    #[inline]
    pub(super) fn set(&mut self, lbn: u32, i: usize, pmd: &[u32], pt: &[u32]) {
        self.set_pmd(lbn, pmd);
        self.set_pt(lbn, i, pt);
    }

    /// Sets the PMD of `lbn` (recovery; no-op without a mirror, with map pages).
    #[inline]
    pub(super) fn set_pmd(&mut self, lbn: u32, pmd: &[u32]) {
        if self.pmd.is_empty() {
            return;
        }
        let a = lbn as usize * self.pmd_len;
        self.pmd[a..a + self.pmd_len].copy_from_slice(pmd);
    }

    /// Sets PT `i` of `lbn` (recovery; no-op without a mirror, with map pages).
    #[inline]
    pub(super) fn set_pt(&mut self, lbn: u32, i: usize, pt: &[u32]) {
        if self.pt.is_empty() {
            return;
        }
        let a = (lbn as usize * self.pmd_len + i) * self.pt_len;
        self.pt[a..a + self.pt_len].copy_from_slice(pt);
    }

    /// Sets the PMD and every PT of `lbn` to `v` (an empty logical block).
    pub(super) fn fill_lbn(&mut self, lbn: u32, v: u32) {
        let a = lbn as usize * self.pmd_len;
        self.pmd[a..a + self.pmd_len].fill(v);
        self.pt[a * self.pt_len..(a + self.pmd_len) * self.pt_len].fill(v);
    }

    /// Sets PT `i` of `lbn` to `v` (a PT without a page).
    pub(super) fn fill_pt(&mut self, lbn: u32, i: usize, v: u32) {
        let a = (lbn as usize * self.pmd_len + i) * self.pt_len;
        self.pt[a..a + self.pt_len].fill(v);
    }

    /// Exchanges the mirror's storage with `pmd` and `pt`: a merge's work area takes the
    /// mirror's and works on its superblock's run in place (no copy in, none out), and
    /// gives it back when the merge ends.
    pub(super) fn swap_storage(&mut self, pmd: &mut Vec<u32>, pt: &mut Vec<u32>) {
        std::mem::swap(&mut self.pmd, pmd);
        std::mem::swap(&mut self.pt, pt);
    }
}
