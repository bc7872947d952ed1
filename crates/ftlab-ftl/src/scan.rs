//! The full spare-area scan that page-mapped schemes without checkpoints recover with:
//! read every programmed page's spare tag once (under `Cause::Recovery`), map each LPN
//! to its newest version (a GC copy and its source carry the same version; the first
//! found wins), and re-mark those pages valid.

use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::RecoverError;
use ftlab_core::{Pbn, Ppn};

/// Fills `l2p` (all `u32::MAX` on entry, one entry per logical page) from a scan of
/// `flash` and marks the mapped pages valid.
pub(crate) fn newest_copies(flash: &mut Flash, l2p: &mut [u32]) -> Result<(), RecoverError> {
    let geo = flash.geometry().clone();
    let mut newest = vec![0u32; l2p.len()];
    for b in 0..geo.blocks {
        for off in 0..flash.write_ptr(Pbn(b)) {
            let ppn = geo.ppn(Pbn(b), off);
            let tag = flash.read_spare(ppn, Cause::Recovery);
            let Some(v) = newest.get_mut(tag.lpn.idx()) else {
                return Err(RecoverError::Failed(format!(
                    "{ppn:?} holds {:?}, beyond the logical capacity",
                    tag.lpn
                )));
            };
            if tag.version > *v {
                *v = tag.version;
                l2p[tag.lpn.idx()] = ppn.0;
            }
        }
    }
    for &p in l2p.iter() {
        if p != u32::MAX {
            flash.mark_valid(Ppn(p));
        }
    }
    Ok(())
}
