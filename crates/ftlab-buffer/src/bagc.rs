//! `bagc`: the buffer side of Buffer-Aware Garbage Collection (BA-GC) of Lee, Shin and
//! Kim 2008, as co-op-buffer-ftl.txt §3 and Table 4 describe it: a "3-region LRU"
//! block-level buffer, victim unit a block, non-padding flushes.
//!
//! "BA-GC uses the 3-region LRU buffer that maintains an update probability for each
//! buffer block, which is used to sort out cold pages that are unlikely to be updated.
//! Supported by the 3-region LRU buffer, BA-GC selects log blocks that have many dirty
//! and cold buffer pages as victim log blocks in FTL".
//!
//! The BA-GC paper itself is not among our sources; the text above is all we follow,
//! and every structural choice below is ours:
//! - Buffered blocks are kept in block-level recency order split into three regions:
//!   hot (MRU side), warm and cold (LRU side). Region sizes are shares of the buffered
//!   blocks: `hot_pct` (default 33) and `warm_pct` (default 33); cold holds the rest.
//!   When a region grows past its share, its LRU block is demoted to the MRU end of the
//!   next region.
//! - The "update probability" is carried by placement, segmented-LRU style: a block
//!   whose buffered page is overwritten (a write hit, evidence that it is updated) goes
//!   to the MRU end of hot; a block that enters the buffer or only gains new pages goes
//!   to the MRU end of warm (a hot block that gains pages stays hot, at its MRU end).
//!   Blocks that are not written age towards cold. A page is *cold* when its block is in
//!   the cold region.
//! - The victim is the LRU block of cold (else warm, else hot); its dirty pages are
//!   flushed in one group without padding; its clean pages (made clean by BA-BM) are
//!   dropped without a write.
//! - Read hits and trims do not move blocks. A host flush-cache command empties the
//!   buffer in victim order.
//!
//! The FTL side (BA-VBS victim choice and BA-BM merges that take valid pages from this
//! buffer and mark them clean) is the `ba_gc` option of the `bast` and `fast` FTLs.
//! This buffer hands them a [`BufferView`](ftlab_core::ftl::BufferView) with every
//! flush: dirty and cold-dirty page counts per block, the dirty copies, and marking a
//! copy clean. Above an FTL without `ba_gc` the view is ignored and `bagc` is a plain
//! non-padding 3-region LRU buffer.

use crate::blocklru::{capacity_pages, BlockBuffer, BlockCore, BlockPolicy, Touch, DEFAULT_SIZE};
use ftlab_core::buffer::Backend;
use ftlab_core::geometry::Geometry;
use ftlab_core::options::{bad, JsonSchema, SchemeError};
use ftlab_core::units::ByteSize;
use ftlab_core::Lbn;
use serde::{Deserialize, Serialize};

/// Scheme id in the registry and in errors.
pub const ID: &str = "bagc";

/// Options of `bagc`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BagcOptions {
    /// Buffer capacity in bytes (co-op-buffer-ftl.txt §6.3 and Figs. 8-9: 16 MB DRAM).
    pub size: ByteSize,
    /// Share of buffered blocks in the hot (MRU) region of the 3-region LRU (§3).
    #[schemars(range(min = 0, max = 100))]
    pub hot_pct: u32,
    /// Share of buffered blocks in the warm region; cold holds the rest (§3).
    #[schemars(range(min = 0, max = 100))]
    pub warm_pct: u32,
}

impl Default for BagcOptions {
    fn default() -> Self {
        BagcOptions {
            size: DEFAULT_SIZE,
            hot_pct: 33,
            warm_pct: 33,
        }
    }
}

const HOT: u32 = 0;
const WARM: u32 = 1;
const COLD: u32 = 2;

/// The 3-region LRU policy.
#[derive(Debug)]
pub struct BagcPolicy {
    hot_pct: u32,
    warm_pct: u32,
}

/// The `bagc` buffer.
pub type Bagc = BlockBuffer<BagcPolicy>;

/// Builds `bagc`.
pub fn new(geo: &Geometry, opts: &BagcOptions) -> Result<Bagc, SchemeError> {
    let cap = capacity_pages(ID, geo, opts.size)?;
    let (hot_pct, warm_pct) = (opts.hot_pct, opts.warm_pct);
    if hot_pct.saturating_add(warm_pct) > 100 {
        return Err(bad(
            ID,
            "warm_pct",
            warm_pct,
            format!("hot_pct + warm_pct must not exceed 100 (hot_pct is {hot_pct})"),
        ));
    }
    let mut b = BlockBuffer::new(geo, cap, 3, BagcPolicy { hot_pct, warm_pct });
    b.core_mut().view_cold = Some(COLD);
    Ok(b)
}

/// Share `pct` of `total` blocks, at least one when the share is not zero.
fn share(total: u32, pct: u32) -> u32 {
    if pct == 0 {
        0
    } else {
        (total * pct / 100).max(1)
    }
}

impl BagcPolicy {
    fn rebalance(&self, core: &mut BlockCore) {
        let l = &mut core.lists;
        let total = l.len(HOT) + l.len(WARM) + l.len(COLD);
        let (hot_max, warm_max) = (share(total, self.hot_pct), share(total, self.warm_pct));
        while l.len(HOT) > hot_max {
            let b = l.back(HOT).expect("non-empty");
            l.move_to_front(WARM, b);
        }
        while l.len(WARM) > warm_max {
            let b = l.back(WARM).expect("non-empty");
            l.move_to_front(COLD, b);
        }
    }
}

impl BlockPolicy for BagcPolicy {
    fn touched(&mut self, core: &mut BlockCore, lbn: Lbn, how: Touch) {
        let region = match how {
            Touch::Shrink => return,
            Touch::Hit => HOT,
            Touch::New => WARM,
            Touch::Grow if core.lists.list_of(lbn.0) == Some(HOT) => HOT,
            Touch::Grow => WARM,
        };
        core.lists.move_to_front(region, lbn.0);
        self.rebalance(core);
    }

    fn evict(&mut self, core: &mut BlockCore, be: &mut Backend<'_>) {
        let victim = [COLD, WARM, HOT]
            .iter()
            .find_map(|&r| core.lists.back(r))
            .expect("a buffer holding pages lists a block");
        core.flush_block(be, Lbn(victim), false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocklru::testutil::{opts, tags, Rig};
    use ftlab_core::buffer::Buffer;
    use ftlab_core::options::from_pairs;

    #[test]
    fn updated_blocks_stay_hot_and_cold_blocks_leave_first() {
        let mut rig = Rig::new(4, 16);
        // Room for 5 pages; regions: a third hot, a third warm.
        let mut b = new(&rig.geo, &opts(ID, &[("size", "10KiB")])).unwrap();
        b.write(&mut rig.be(), &tags(&[0])); // lbn0 warm
        b.write(&mut rig.be(), &tags(&[0])); // hit: lbn0 hot
        b.write(&mut rig.be(), &tags(&[4])); // lbn1 warm
        b.write(&mut rig.be(), &tags(&[8])); // lbn2 warm; lbn1 demoted to cold
        assert_eq!(b.core().lists.list_of(1), Some(COLD));
        assert_eq!(b.core().lists.list_of(0), Some(HOT));
        b.write(&mut rig.be(), &tags(&[12])); // lbn3 warm; lbn2 cold
        b.write(&mut rig.be(), &tags(&[16])); // lbn4 warm; lbn3 cold (lbn0 hot)
        b.write(&mut rig.be(), &tags(&[20])); // full: cold LRU is lbn1
        assert_eq!(rig.ftl().groups, [vec![4]]);
        b.write(&mut rig.be(), &tags(&[24]));
        assert_eq!(
            rig.ftl().groups[1],
            [8],
            "then lbn2; the updated lbn0 survives"
        );
        assert!(b.core().t.get(ftlab_core::Lpn(0)).is_some());
        b.check().unwrap();
    }

    #[test]
    fn clean_pages_are_dropped_without_a_write() {
        let mut rig = Rig::new(4, 8);
        let mut b = new(&rig.geo, &BagcOptions::default()).unwrap();
        b.write(&mut rig.be(), &tags(&[0, 1, 2]));
        // As BA-BM would: page 1 was read by a merge and is on flash now.
        assert!(b.core_mut().t.make_clean(ftlab_core::Lpn(1)).is_some());
        b.flush(&mut rig.be());
        assert_eq!(rig.ftl().groups, [vec![0, 2]]);
        b.check().unwrap();
    }

    #[test]
    fn region_shares_over_100_are_refused() {
        let rig = Rig::new(4, 8);
        let e = new(
            &rig.geo,
            &opts(ID, &[("hot_pct", "60"), ("warm_pct", "50")]),
        )
        .err()
        .unwrap();
        assert!(
            e.to_string().contains("bagc: option `warm_pct` = `50`"),
            "{e}"
        );
        for key in ["hot_pct", "warm_pct"] {
            let e = from_pairs::<BagcOptions>(ID, &[(key, "101")])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`{key}` = `101`")) && e.contains("from 0 to 100"),
                "{e}"
            );
        }
    }
}
