//! Power-loss recovery and deep checks shared by the schemes that keep no checkpoint
//! and rebuild their state from the spare areas: `page`, `dac`, `bast`, `fast`, `dftl`
//! and `tpm` (none of the papers describes a recovery; each module header says what
//! its own recovery derives, and what is not on flash).
//!
//! - The spare scan. [`newest_copies`] and [`newest_versions`] read the spare tag of
//!   every programmed page once (`Cause::Recovery`), block by block in block-number
//!   order and page by page in program order, and keep per LPN the newest version on
//!   flash; a tag beyond the logical capacity is [`RecoverError::Failed`]. A scheme sees
//!   every tag and every finished block through [`Visit`]: the demand-paged schemes
//!   keep their translation pages out of the LPN table and tell data blocks from
//!   translation blocks, the block-mapped ones record each block's shape.
//! - Live copies. [`newest_copies`] maps each LPN to the first page found holding its
//!   newest version (a GC copy and its source, or a buffer's padding rewrite, carry the
//!   same version and the same data) and re-marks those pages valid (`page`, `dac`,
//!   `dftl`, `tpm`). `bast` and `fast` choose among the newest copies by the roles of
//!   their blocks (`logblock::Scan::claim`), so they take [`newest_versions`] only.
//! - Block lists. Erased blocks are free, in block-number order (the FIFO order of
//!   erasures is lost): [`erased`]. [`sort_blocks`] also offers each partly written
//!   block to the scheme as an open block and seals every other programmed block in the
//!   GC index (`page`, `dac`, `dftl`, `tpm`).
//! - Deep checks. [`check_map`]: every mapped LPN maps to a valid page whose spare tag
//!   holds that LPN, and the mapped pages are all the valid data pages (all six and
//!   `block`; [`check_l2p`] for a page-level table). [`check_blocks`]: free, open and
//!   sealed blocks are disjoint and are all the blocks (`page`, `dac`; the demand-paged
//!   schemes check their block kinds instead, `demand::Space::check`).

use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::RecoverError;
use ftlab_core::victim::Victims;
use ftlab_core::{PageTag, Pbn, Ppn};
use std::collections::VecDeque;

/// An unmapped LPN in the map [`newest_copies`] returns.
pub(crate) const UNMAPPED: u32 = u32::MAX;

/// What a scheme adds to the spare scan.
pub(crate) trait Visit {
    /// The tag of the page `ppn` (at offset `off` of `pbn`) was just read: `Ok(true)` if
    /// the page holds data of `tag.lpn`, to be entered in the LPN table; `Ok(false)` if
    /// the scheme keeps it apart (a translation page); an error if no run of the scheme
    /// can have written it.
    fn page(&mut self, pbn: Pbn, off: u32, ppn: Ppn, tag: PageTag) -> Result<bool, RecoverError> {
        let _ = (pbn, off, ppn, tag);
        Ok(true)
    }

    /// Every page of `pbn` has been read (called for erased blocks too).
    fn block(&mut self, pbn: Pbn) -> Result<(), RecoverError> {
        let _ = pbn;
        Ok(())
    }
}

/// Nothing beyond the LPN table: every programmed page holds data.
impl Visit for () {}

/// The spare scan: the newest version per LPN (0: none on flash); `newer(lpn, ppn)` is
/// called whenever a page holds a newer version of its LPN than any read before.
fn scan(
    flash: &mut Flash,
    visit: &mut impl Visit,
    mut newer: impl FnMut(usize, Ppn),
) -> Result<Vec<u32>, RecoverError> {
    let geo = flash.geometry().clone();
    let mut newest = vec![0u32; geo.logical_pages as usize];
    for pbn in (0..geo.blocks).map(Pbn) {
        for off in 0..flash.write_ptr(pbn) {
            let ppn = geo.ppn(pbn, off);
            let tag = flash.read_spare(ppn, Cause::Recovery);
            // A program or erase a power loss tore: nothing on it can be trusted.
            if tag.is_uncorrectable() || !visit.page(pbn, off, ppn, tag)? {
                continue;
            }
            let Some(v) = newest.get_mut(tag.lpn.idx()) else {
                return Err(RecoverError::Failed(format!(
                    "{ppn:?} holds {tag:?}, beyond the logical capacity"
                )));
            };
            if tag.version > *v {
                *v = tag.version;
                newer(tag.lpn.idx(), ppn);
            }
        }
        visit.block(pbn)?;
    }
    Ok(newest)
}

/// Scans every programmed spare area once and returns the newest version on flash per
/// LPN (0: none, or fillers only).
pub(crate) fn newest_versions(
    flash: &mut Flash,
    visit: &mut impl Visit,
) -> Result<Vec<u32>, RecoverError> {
    scan(flash, visit, |_, _| {})
}

/// Scans every programmed spare area once, maps each LPN to the first page found
/// holding its newest version ([`UNMAPPED`] if none) and marks those pages valid.
pub(crate) fn newest_copies(
    flash: &mut Flash,
    visit: &mut impl Visit,
) -> Result<Vec<u32>, RecoverError> {
    let mut l2p = vec![UNMAPPED; flash.geometry().logical_pages as usize];
    scan(flash, visit, |l, ppn| l2p[l] = ppn.0)?;
    for &p in &l2p {
        if p != UNMAPPED {
            flash.mark_valid(Ppn(p));
        }
    }
    Ok(l2p)
}

/// The erased blocks, in block-number order.
pub(crate) fn erased(flash: &Flash) -> impl Iterator<Item = Pbn> + '_ {
    (0..flash.geometry().blocks)
        .map(Pbn)
        .filter(|&b| flash.is_erased(b))
}

/// Rebuilds the block lists of a page-mapped scheme, in block-number order: erased
/// blocks become `free` (which is emptied first); each partly written block is offered
/// to `reopen`, which returns whether the scheme takes it as an open block; every other
/// programmed block is sealed in `index` with its valid pages.
pub(crate) fn sort_blocks(
    flash: &Flash,
    free: &mut VecDeque<Pbn>,
    index: &mut Victims,
    mut reopen: impl FnMut(Pbn) -> Result<bool, RecoverError>,
) -> Result<(), RecoverError> {
    free.clear();
    for b in (0..flash.geometry().blocks).map(Pbn) {
        if flash.is_erased(b) {
            free.push_back(b);
        } else if flash.is_full(b) || !reopen(b)? {
            index.insert(b, flash.valid_count(b));
        }
    }
    Ok(())
}

/// Deep check of a map against the flash: every LPN below `lpns` that `map` maps lies
/// on a valid page that `in_data` accepts and whose spare tag holds that LPN, and the
/// mapped pages are as many as the `valid` data pages on flash (no stale copy is valid,
/// no live one lost).
pub(crate) fn check_map(
    flash: &Flash,
    lpns: u32,
    valid: u64,
    map: impl Fn(u32) -> Option<Ppn>,
    in_data: impl Fn(Ppn) -> bool,
) -> Result<(), String> {
    let pages = flash.geometry().physical_pages();
    let mut mapped = 0u64;
    for l in 0..lpns {
        let Some(ppn) = map(l) else {
            continue;
        };
        mapped += 1;
        if ppn.0 >= pages || !flash.is_valid(ppn) {
            return Err(format!("lpn{l} maps to {ppn:?}, which is not valid"));
        }
        if !in_data(ppn) {
            return Err(format!("lpn{l} maps to {ppn:?} outside a data block"));
        }
        match flash.peek_tag(ppn) {
            Some(t) if t.lpn.0 == l => {}
            other => return Err(format!("lpn{l} maps to {ppn:?} holding {other:?}")),
        }
    }
    if mapped != valid {
        return Err(format!(
            "{mapped} mapped pages but {valid} valid data pages on flash"
        ));
    }
    Ok(())
}

/// [`check_map`] of a page-level table (LPN -> PPN, [`UNMAPPED`] for none) that maps
/// every valid page on flash.
pub(crate) fn check_l2p(flash: &Flash, l2p: &[u32]) -> Result<(), String> {
    let map = |l: u32| Some(Ppn(l2p[l as usize])).filter(|p| p.0 != UNMAPPED);
    check_map(flash, l2p.len() as u32, flash.total_valid(), map, |_| true)
}

/// Deep check of the block lists of a page-mapped scheme: the free blocks are erased,
/// neither sealed nor open; no open block is sealed; and free, open and sealed blocks
/// are all the blocks.
pub(crate) fn check_blocks(
    flash: &Flash,
    free: &VecDeque<Pbn>,
    index: &Victims,
    open: &[Pbn],
) -> Result<(), String> {
    if let Some(b) = open.iter().find(|&&b| index.contains(b)) {
        return Err(format!("open {b:?} is also sealed"));
    }
    for &b in free {
        if !flash.is_erased(b) || index.contains(b) || open.contains(&b) {
            return Err(format!("free {b:?} is not erased or is also in use"));
        }
    }
    let blocks = flash.geometry().blocks;
    let sealed = (0..blocks).filter(|&b| index.contains(Pbn(b))).count();
    if sealed + free.len() + open.len() != blocks as usize {
        return Err(format!(
            "{sealed} sealed + {} free + {} open != {blocks} blocks",
            free.len(),
            open.len(),
        ));
    }
    Ok(())
}
