//! Worked example 1 of SCHEMES.md: superblock-ftl.txt §3.3, Fig. 4. Four pages per
//! block, full data blocks, a single U-block, and the write trace
//! W = <P0, P0, P5, P6, P8>.
//!
//! - Log block scheme (BAST), Fig. 4(a): a full merge at w3 (D-block 0 with U-block 0)
//!   and another at w5 (D-block 1 with U-block 1; a partial merge is impossible because
//!   P5 and P6 are not at their in-place offsets): 4 erases and 8 page copies.
//! - FAST with its sequential log disabled, Fig. 4(b): nothing is merged until w5, then
//!   D-block 0 and D-block 1 are fully merged with U-block 0, which is erased: 3 erases
//!   and 8 page copies.
//!
//! Besides the one U-block, the device has one free block for a full merge to copy
//! into ("it allocates a free block that is erased beforehand", §2.3).

use ftlab_core::flash::{Cause, Flash, FlashStats};
use ftlab_core::ftl::Ftl;
use ftlab_core::geometry::Geometry;
use ftlab_core::{Lpn, PageTag};
use ftlab_ftl::auto::AutoOr;

/// Three full data blocks of 4 pages (P0..P11), one U-block, one merge reserve.
fn geometry() -> Geometry {
    Geometry {
        page_size: 2048,
        pages_per_block: 4,
        spare_bytes: 64,
        blocks: 5,
        logical_pages: 12,
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
    }
}

/// Fills the data blocks, zeroes the counters, replays W and returns the flash.
fn replay(ftl: &mut dyn Ftl) -> Flash {
    let geo = geometry();
    let mut flash = Flash::new(&geo);
    let mut version = [0u32; 12];
    let mut write = |ftl: &mut dyn Ftl, flash: &mut Flash, lpns: &[u32]| {
        let pages: Vec<PageTag> = lpns
            .iter()
            .map(|&l| {
                version[l as usize] += 1;
                PageTag {
                    lpn: Lpn(l),
                    version: version[l as usize],
                }
            })
            .collect();
        ftl.write(flash, &pages);
    };
    for block in 0..3 {
        let lpns: Vec<u32> = (block * 4..block * 4 + 4).collect();
        write(ftl, &mut flash, &lpns);
    }
    assert_eq!(
        FlashStats::total(&flash.stats().erases),
        0,
        "fill is in place"
    );
    flash.reset_stats();
    ftl.reset_stats();
    for p in [0, 0, 5, 6, 8] {
        write(ftl, &mut flash, &[p]);
    }
    ftl.check(&flash).unwrap();
    for l in 0..12 {
        let tag = ftl.read(&mut flash, Lpn(l)).expect("every page is written");
        assert_eq!(tag.version, version[l as usize], "P{l}");
    }
    flash
}

fn erases(f: &Flash) -> u64 {
    FlashStats::total(&f.stats().erases)
}

fn copies(f: &Flash) -> (u64, u64) {
    let s = f.stats();
    (
        s.page_reads[Cause::Merge as usize],
        s.programs[Cause::Merge as usize],
    )
}

#[test]
fn worked_example_1_log_block_scheme_costs_4_erases_and_8_copies() {
    use ftlab_ftl::bast::{Bast, BastOptions};
    let opts = BastOptions {
        log_blocks: AutoOr::Value(1),
        ..Default::default()
    };
    let mut ftl = Bast::new(&geometry(), &opts).unwrap();
    let flash = replay(&mut ftl);
    assert_eq!(erases(&flash), 4);
    assert_eq!(flash.stats().erases[Cause::Merge as usize], 4);
    assert_eq!(copies(&flash), (8, 8), "8 page copies: 8 reads, 8 programs");
    assert_eq!(flash.stats().programs[Cause::Host as usize], 5);
    let s = ftl.stats();
    assert_eq!(
        (s.merges_switch, s.merges_partial, s.merges_full),
        (0, 0, 2)
    );
    assert_eq!(s.merge_pages_copied, 8);
    // U-block 0 held P0, P0 and U-block 1 held P5, P6 when merged: 2 of 4 pages each.
    assert_eq!(s.extra["u_avg"], 0.5);
}

#[test]
fn worked_example_1_fast_without_sequential_log_costs_3_erases_and_8_copies() {
    use ftlab_ftl::fast::{Fast, FastOptions};
    let opts = FastOptions {
        sw_logs: 0,
        rw_logs: AutoOr::Value(1),
        ..Default::default()
    };
    let mut ftl = Fast::new(&geometry(), &opts).unwrap();
    let flash = replay(&mut ftl);
    assert_eq!(erases(&flash), 3);
    assert_eq!(flash.stats().erases[Cause::Merge as usize], 3);
    assert_eq!(copies(&flash), (8, 8));
    assert_eq!(flash.stats().programs[Cause::Host as usize], 5);
    let s = ftl.stats();
    assert_eq!(
        (s.merges_switch, s.merges_partial, s.merges_full),
        (0, 0, 2)
    );
    assert_eq!(s.merge_pages_copied, 8);
    // One merge operation (MergeCount 1) of a full U-block.
    assert_eq!(s.extra["log_reclaims"], 1.0);
    assert_eq!(s.extra["u_avg"], 1.0);
}

#[test]
fn worked_example_1_block_mapping_rewrites_a_block_per_write() {
    // Not in the paper's figure: the same trace under pure block mapping, as the lower
    // bound. Each of the 5 updates rewrites its block: 5 erases, 3 copies each.
    use ftlab_ftl::block::{BlockFtl, BlockOptions};
    let mut ftl = BlockFtl::new(&geometry(), &BlockOptions::default()).unwrap();
    let flash = replay(&mut ftl);
    assert_eq!(erases(&flash), 5);
    assert_eq!(copies(&flash), (15, 15));
    assert_eq!(ftl.stats().merges_full, 5);
}
