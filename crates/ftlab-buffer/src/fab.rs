//! `fab`: the Flash-Aware Buffer (FAB) of Jo et al. 2006, as co-op-buffer-ftl.txt §3
//! describes it (Table 4: "largest block-based victim selection + block-level LRU",
//! non-padding).
//!
//! "buffer pages that belong to the same logical block are managed together by a
//! block-level LRU policy. If the buffer cache becomes full, FAB selects a buffer block
//! that has the largest number of valid pages as a victim block and then flushes all
//! dirty pages in the victim block. If there are multiple buffer blocks that have the
//! largest number, block-level LRU order is applied to select a victim block among
//! them."
//!
//! Implementation: one LRU list per buffered-page count (0..=pages per block); a block
//! sits on the list of its count, so within a list blocks are in block-level LRU order
//! and the victim is the LRU end of the highest non-empty list, found in O(pages per
//! block) with no scan of the buffer.
//!
//! Choices the paper leaves open:
//! - "Access" for block-level LRU is a host write to any page of the block (a read hit
//!   does not count: the buffer is a write buffer, §2.1).
//! - A trim that drops a buffered page counts as an access of its block (the block moves
//!   to the MRU end of its new count's list).
//! - A host flush-cache command empties the buffer in victim order (largest first).

use crate::blocklru::{capacity_pages, BlockBuffer, BlockCore, BlockPolicy, SizeOptions, Touch};
use ftlab_core::buffer::Backend;
use ftlab_core::geometry::Geometry;
use ftlab_core::options::SchemeError;
use ftlab_core::Lbn;

/// Scheme id in the registry and in errors.
pub const ID: &str = "fab";

/// Options of `fab`: its size alone.
pub type FabOptions = SizeOptions;

// Every block buffer is a policy struct, a `BlockBuffer` alias and a builder, as in
// bplru.rs: the shared part is `BlockBuffer` itself.

/// FAB's policy: largest block first, block-level LRU among equals.
#[derive(Debug)]
pub struct FabPolicy {
    ppb: u32,
}

/// The `fab` buffer.
pub type Fab = BlockBuffer<FabPolicy>;

/// Builds `fab` for `geo`.
pub fn new(geo: &Geometry, opts: &FabOptions) -> Result<Fab, SchemeError> {
    let cap = capacity_pages(ID, geo, opts.size)?;
    let ppb = geo.pages_per_block;
    Ok(BlockBuffer::new(geo, cap, ppb + 1, FabPolicy { ppb }))
}

impl BlockPolicy for FabPolicy {
    fn touched(&mut self, core: &mut BlockCore, lbn: Lbn, _how: Touch) {
        let count = core.t.pages(lbn);
        core.lists.move_to_front(count, lbn.0);
    }

    fn evict(&mut self, core: &mut BlockCore, be: &mut Backend<'_>) {
        let victim = (1..=self.ppb)
            .rev()
            .find_map(|c| core.lists.back(c))
            .expect("a buffer holding pages has a block on a count list");
        core.flush_block(be, Lbn(victim), false);
    }

    fn check(&self, core: &BlockCore) -> Result<(), String> {
        if core.lists.len(0) != 0 {
            return Err("a block with no buffered page is listed".into());
        }
        for c in 1..=self.ppb {
            for b in core.lists.iter(c).rev() {
                if core.t.pages(Lbn(b)) != c {
                    return Err(format!(
                        "lbn{b} is on the list of {c} pages but holds {}",
                        core.t.pages(Lbn(b))
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocklru::testutil::{opts, tags, Rig};
    use ftlab_core::buffer::Buffer;

    #[test]
    fn victim_is_the_largest_block_then_the_least_recent() {
        // 4 pages per block, room for 6 pages.
        let mut rig = Rig::new(4, 16);
        let mut b = new(&rig.geo, &opts(ID, &[("size", "12KiB")])).unwrap();
        b.write(&mut rig.be(), &tags(&[0, 1])); // lbn0: 2 pages
        b.write(&mut rig.be(), &tags(&[4, 5])); // lbn1: 2 pages, more recent
        b.write(&mut rig.be(), &tags(&[8])); // lbn2: 1 page
        b.write(&mut rig.be(), &tags(&[12])); // lbn3: 1 page; buffer full
        b.write(&mut rig.be(), &tags(&[16])); // evicts lbn0 (largest, LRU among 2s)
        assert_eq!(rig.ftl().groups, [vec![0, 1]]);
        b.write(&mut rig.be(), &tags(&[9, 10])); // lbn2 grows to 3: evicts lbn1 first
        assert_eq!(rig.ftl().groups, [vec![0, 1], vec![4, 5]]);
        b.check().unwrap();
        assert_eq!(b.core().t.pages(Lbn(2)), 3);
    }

    #[test]
    fn flush_empties_in_victim_order_without_padding() {
        let mut rig = Rig::new(4, 16);
        let mut b = new(&rig.geo, &FabOptions::default()).unwrap();
        b.write(&mut rig.be(), &tags(&[1]));
        b.write(&mut rig.be(), &tags(&[4, 6, 7]));
        b.flush(&mut rig.be());
        assert_eq!(rig.ftl().groups, [vec![4, 6, 7], vec![1]]);
        assert_eq!(b.stats().padding_reads, 0);
        assert_eq!(b.core().t.used(), 0);
        b.check().unwrap();
    }
}
