//! `bplru`: Block Padding LRU (BPLRU) of Kim and Ahn 2008, as co-op-buffer-ftl.txt §3
//! describes it, and `blru`, the same without padding (§6: "BLRU, which is identical
//! with BPLRU \[11\] without the block padding technique").
//!
//! "a victim block in the buffer cache is selected by block-level LRU order. ... LRU
//! compensation ...: If a buffer block is fully written, the block is moved to the LRU
//! position, not the Most Recently Used (MRU) position. ... when a victim buffer block
//! is flushed, the block padding technique fills up all omitted pages in the victim block
//! by reading them from FTL, and flushes the complete block to FTL."
//!
//! Choices the paper leaves open:
//! - "Fully written" is judged when a host write group has been stored: if the block
//!   then holds every page, it goes to the LRU end (also when the group was a rewrite of
//!   a block that was already complete). Otherwise the written block goes to the MRU end.
//! - Padding reads go through the FTL as ordinary reads and are counted as padding
//!   (`Cause::Padding`, `buffer.padding_reads`); a page the FTL does not hold (never
//!   written or trimmed) cannot be read and is left out, so such a block stays
//!   incomplete.
//! - A trim that drops a buffered page does not move its block.
//! - A host flush-cache command empties the buffer in LRU order, padding each block as
//!   an eviction would.

use crate::blocklru::{capacity_pages, BlockBuffer, BlockCore, BlockPolicy, SizeOptions, Touch};
use ftlab_core::buffer::Backend;
use ftlab_core::geometry::Geometry;
use ftlab_core::options::SchemeError;
use ftlab_core::Lbn;

/// Registry id of the padding buffer, also used in its errors.
pub const BPLRU_ID: &str = "bplru";

/// Registry id of the non-padding buffer, also used in its errors.
pub const BLRU_ID: &str = "blru";

/// Options of `bplru`: its size alone.
pub type BplruOptions = SizeOptions;

/// Options of `blru`: its size alone.
pub type BlruOptions = SizeOptions;

/// Block-level LRU with LRU compensation; pads victims when `pad`.
#[derive(Debug)]
pub struct BplruPolicy {
    pad: bool,
}

/// The `bplru` (padding) and `blru` (no padding) buffers.
pub type Bplru = BlockBuffer<BplruPolicy>;

/// Builds `bplru`.
pub fn new_bplru(geo: &Geometry, opts: &BplruOptions) -> Result<Bplru, SchemeError> {
    let cap = capacity_pages(BPLRU_ID, geo, opts.size)?;
    Ok(BlockBuffer::new(geo, cap, 1, BplruPolicy { pad: true }))
}

/// Builds `blru`.
pub fn new_blru(geo: &Geometry, opts: &BlruOptions) -> Result<Bplru, SchemeError> {
    let cap = capacity_pages(BLRU_ID, geo, opts.size)?;
    Ok(BlockBuffer::new(geo, cap, 1, BplruPolicy { pad: false }))
}

/// LRU placement with compensation, shared with `coop` (§5.1.1: "LRU compensation of
/// BPLRU \[11\] is adopted").
pub fn lru_touched(core: &mut BlockCore, lbn: Lbn, how: Touch) {
    if how != Touch::Shrink {
        core.lists.move_to_front(0, lbn.0);
    }
}

/// LRU compensation: a complete block goes to the LRU end.
pub fn lru_compensate(core: &mut BlockCore, lbn: Lbn) {
    if core.t.is_complete(lbn) {
        core.lists.move_to_back(0, lbn.0);
    }
}

impl BlockPolicy for BplruPolicy {
    fn touched(&mut self, core: &mut BlockCore, lbn: Lbn, how: Touch) {
        lru_touched(core, lbn, how);
    }

    fn group_done(&mut self, core: &mut BlockCore, lbn: Lbn) {
        lru_compensate(core, lbn);
    }

    fn evict(&mut self, core: &mut BlockCore, be: &mut Backend<'_>) {
        let victim = core
            .lists
            .back(0)
            .expect("a buffer holding pages lists a block");
        core.flush_block(be, Lbn(victim), self.pad);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocklru::testutil::{opts, tags, Rig};
    use ftlab_core::buffer::Buffer;
    use ftlab_core::flash::Cause;

    #[test]
    fn victim_is_lru_and_is_padded_from_the_ftl() {
        let mut rig = Rig::new(4, 8);
        // The FTL already holds pages 1 and 3 of lbn0; page 2 was never written.
        rig.ftl_mut()
            .store
            .extend(tags(&[1, 3]).into_iter().map(|t| (t.lpn.0, t)));
        let mut b = new_bplru(&rig.geo, &opts(BPLRU_ID, &[("size", "6KiB")])).unwrap();
        b.write(&mut rig.be(), &tags(&[0]));
        b.write(&mut rig.be(), &tags(&[4, 5]));
        b.write(&mut rig.be(), &tags(&[8])); // evicts lbn0, the LRU block
        assert_eq!(
            rig.ftl().reads,
            [1, 2, 3],
            "missing pages read through the FTL"
        );
        assert_eq!(rig.ftl().groups, [vec![0, 1, 3]], "page 2 cannot be padded");
        let s = b.stats();
        assert_eq!(s.padding_reads, 2);
        assert_eq!(s.extra["padding_writes"], 2.0);
        assert_eq!(s.pages_flushed, 3);
        b.check().unwrap();
    }

    #[test]
    fn lru_compensation_sends_a_complete_block_first() {
        let mut rig = Rig::new(4, 8);
        let mut b = new_blru(&rig.geo, &opts(BLRU_ID, &[("size", "16KiB")])).unwrap();
        b.write(&mut rig.be(), &tags(&[8]));
        b.write(&mut rig.be(), &tags(&[0, 1, 2, 3])); // complete: goes to the LRU end
        b.write(&mut rig.be(), &tags(&[12, 13, 14]));
        b.write(&mut rig.be(), &tags(&[9])); // hit-free growth: lbn2 to MRU; full (8)
        b.write(&mut rig.be(), &tags(&[20]));
        assert_eq!(rig.ftl().groups, [vec![0, 1, 2, 3]]);
        b.write(&mut rig.be(), &tags(&[21, 22, 23]));
        // lbn3 (12..14) is now the LRU block; blru does not pad it.
        assert_eq!(rig.ftl().groups[1], [12, 13, 14]);
        assert!(rig.ftl().reads.is_empty());
        b.check().unwrap();
    }

    #[test]
    fn padding_is_counted_under_the_padding_cause() {
        use ftlab_core::buffer::Backend;
        use ftlab_core::flash::Flash;
        use ftlab_core::ftl::Ftl;
        use ftlab_ftl::page::{PageFtl, PageOptions};
        let rig = Rig::new(4, 8);
        let geo = rig.geo.clone();
        let mut flash = Flash::new(&geo);
        let mut ftl = PageFtl::new(&geo, &PageOptions::default()).unwrap();
        ftl.write(&mut flash, &tags(&[0, 1, 2, 3]));
        let host_programs = flash.stats().programs[Cause::Host as usize];
        let mut b = new_bplru(&geo, &opts(BPLRU_ID, &[("size", "2KiB")])).unwrap();
        let mut be = Backend {
            ftl: &mut ftl,
            flash: &mut flash,
        };
        b.write(&mut be, &tags(&[1]));
        b.write(&mut be, &tags(&[4])); // evicts lbn0: 3 padding reads, 4 programs
        let s = flash.stats();
        assert_eq!(s.page_reads[Cause::Padding as usize], 3);
        assert_eq!(s.page_reads[Cause::Host as usize], 0);
        assert_eq!(s.programs[Cause::Padding as usize], 3);
        assert_eq!(s.programs[Cause::Host as usize], host_programs + 1);
        assert_eq!(b.stats().padding_reads, 3);
    }
}
