//! The CO-OP options of `bast` and `fast` (issue 8): Optimized Switch Merge, the
//! counting of padding switch merges, and FAST's adaptive RW threshold
//! (co-op-buffer-ftl.txt §5.1.2, §5.2.2, §6.3).

use ftlab_core::flash::{Flash, FlashStats};
use ftlab_core::ftl::{Answer, Ftl, GroupInfo, Query};
use ftlab_core::geometry::Geometry;
use ftlab_core::{Lbn, Lpn, PageTag};
use ftlab_ftl::auto::AutoOr;
use ftlab_ftl::bast::{Bast, BastOptions};
use ftlab_ftl::fast::{Fast, FastOptions};

/// 4 logical blocks of 4 pages on `blocks` physical blocks.
fn geometry(blocks: u32) -> Geometry {
    Geometry {
        page_size: 2048,
        pages_per_block: 4,
        spare_bytes: 64,
        blocks,
        logical_pages: 16,
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
    }
}

/// Writes versions of LPNs, one group per call, and checks reads at the end.
struct Driver {
    flash: Flash,
    version: [u32; 16],
}

impl Driver {
    fn new(geo: &Geometry) -> Driver {
        Driver {
            flash: Flash::new(geo),
            version: [0; 16],
        }
    }

    fn group(&mut self, lpns: &[u32]) -> Vec<PageTag> {
        lpns.iter()
            .map(|&l| {
                self.version[l as usize] += 1;
                PageTag {
                    lpn: Lpn(l),
                    version: self.version[l as usize],
                }
            })
            .collect()
    }

    fn write(&mut self, ftl: &mut dyn Ftl, lpns: &[u32], padded: u32) {
        let pages = self.group(lpns);
        ftl.write_with(
            &mut self.flash,
            &pages,
            GroupInfo {
                padded,
                buffer: None,
            },
        );
    }

    fn fill(&mut self, ftl: &mut dyn Ftl) {
        for b in 0..4 {
            self.write(ftl, &[4 * b, 4 * b + 1, 4 * b + 2, 4 * b + 3], 0);
        }
        self.flash.reset_stats();
    }

    fn erases(&self) -> u64 {
        FlashStats::total(&self.flash.stats().erases)
    }

    fn verify(&mut self, ftl: &mut dyn Ftl) {
        for l in 0..16 {
            let got = ftl.read(&mut self.flash, Lpn(l)).map(|t| t.version);
            assert_eq!(got, Some(self.version[l as usize]), "lpn{l}");
        }
        ftl.check(&self.flash).unwrap();
    }
}

#[test]
fn bast_osm_writes_a_complete_group_to_a_free_block() {
    let geo = geometry(8);
    let mut ftl = Bast::new(
        &geo,
        &BastOptions {
            osm: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut d = Driver::new(&geo);
    d.fill(&mut ftl);
    d.write(&mut ftl, &[2], 0);
    d.write(&mut ftl, &[1], 0);
    d.flash.reset_stats();
    d.write(&mut ftl, &[0, 1, 2, 3], 1);
    let s = ftl.stats();
    assert_eq!((s.merges_osm, s.merges_full, s.merges_switch), (1, 0, 0));
    assert_eq!(d.erases(), 2, "old data block and log block");
    assert_eq!(FlashStats::total(&d.flash.stats().page_reads), 0);
    assert_eq!(FlashStats::total(&d.flash.stats().programs), 4);
    assert_eq!(ftl.query(Query::LogFreePages(Lbn(0))), Answer::NoLogBlock);
    // No log block: a complete group takes the ordinary path, a switch merge, which
    // is a padding switch merge when the buffer padded it.
    d.write(&mut ftl, &[4, 5, 6, 7], 2);
    d.write(&mut ftl, &[8, 9, 10, 11], 0);
    let s = ftl.stats();
    assert_eq!((s.merges_padding_switch, s.merges_switch), (1, 1));
    d.verify(&mut ftl);
}

#[test]
fn fast_osm_sends_complete_groups_to_the_sw_log_and_the_rest_to_rw_logs() {
    let geo = geometry(8);
    let mut ftl = Fast::new(
        &geo,
        &FastOptions {
            osm: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut d = Driver::new(&geo);
    d.fill(&mut ftl);
    // Offset 0 of an incomplete group: a RW log under OSM, not the SW log.
    d.write(&mut ftl, &[0, 1], 0);
    assert_eq!(ftl.query(Query::LogFreePages(Lbn(0))), Answer::NoLogBlock);
    d.write(&mut ftl, &[0, 1, 2, 3], 2);
    let s = ftl.stats();
    assert_eq!((s.merges_osm, s.merges_partial, s.merges_full), (1, 0, 0));
    d.write(&mut ftl, &[4, 5, 6, 7], 0);
    assert_eq!(ftl.stats().merges_switch, 1, "unpadded: an original switch");
    d.verify(&mut ftl);
    // Without OSM the padded complete group is a padding switch merge.
    let mut plain = Fast::new(&geo, &FastOptions::default()).unwrap();
    let mut d = Driver::new(&geo);
    d.fill(&mut plain);
    d.write(&mut plain, &[0, 1, 2, 3], 3);
    let s = plain.stats();
    assert_eq!((s.merges_padding_switch, s.merges_osm), (1, 0));
    d.verify(&mut plain);
}

#[test]
fn fast_rw_threshold_rises_with_full_merge_hits_and_falls_without() {
    // 16 physical blocks: two RW log blocks, one SW log, one reserve.
    let geo = geometry(8);
    let threshold = |f: &Fast| match f.query(Query::RwThreshold) {
        Answer::Count(t) => t,
        a => panic!("{a:?}"),
    };
    let rw2 = FastOptions {
        rw_logs: AutoOr::Value(2),
        ..Default::default()
    };
    // One page rewritten over and over: every reclaimed RW log holds only stale
    // copies (full-merge hits).
    let mut ftl = Fast::new(&geo, &rw2).unwrap();
    let mut d = Driver::new(&geo);
    d.fill(&mut ftl);
    assert_eq!(threshold(&ftl), 2, "70/128 of 4 pages");
    for _ in 0..16 {
        d.write(&mut ftl, &[1], 0);
    }
    assert_eq!(threshold(&ftl), 4, "two hits: up to the block size");
    assert!(ftl.stats().extra["fm_hit_ratio"] == 1.0);
    d.verify(&mut ftl);
    // Pages of different blocks in each RW log: every reclaim needs full merges.
    let mut ftl = Fast::new(&geo, &rw2).unwrap();
    let mut d = Driver::new(&geo);
    d.fill(&mut ftl);
    for l in [1, 2, 3, 5, 9, 10, 11, 13, 14] {
        d.write(&mut ftl, &[l], 0);
    }
    assert_eq!(threshold(&ftl), 1, "one reclaim, no hit: down one page");
    for l in [15, 1, 2, 3] {
        d.write(&mut ftl, &[l], 0);
    }
    assert_eq!(threshold(&ftl), 1, "no hit again: it stays at one page");
    assert_eq!(ftl.stats().extra["fm_hit_ratio"], 0.0);
    d.verify(&mut ftl);
    // Fixed when rw_adapt is off.
    let mut ftl = Fast::new(
        &geo,
        &FastOptions {
            rw_logs: AutoOr::Value(2),
            rw_adapt: false,
            ..Default::default()
        },
    )
    .unwrap();
    let mut d = Driver::new(&geo);
    d.fill(&mut ftl);
    for _ in 0..16 {
        d.write(&mut ftl, &[1], 0);
    }
    assert_eq!(threshold(&ftl), 2);
}

#[test]
fn fast_osm_without_a_sw_log_is_refused_naming_the_option() {
    let e = Fast::new(
        &geometry(8),
        &FastOptions {
            osm: true,
            sw_logs: 0,
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("`osm`"), "{e}");
}

/// A buffer view with fixed counts and dirty copies, recording what the FTL cleaned.
struct FakeView {
    dirty: [u32; 4],
    cold: [u32; 4],
    copies: Vec<PageTag>,
    cleaned: Vec<u32>,
}

impl ftlab_core::ftl::BufferView for FakeView {
    fn dirty_pages(&self, lbn: Lbn) -> u32 {
        self.dirty[lbn.idx()]
    }
    fn cold_dirty_pages(&self, lbn: Lbn) -> u32 {
        self.cold[lbn.idx()]
    }
    fn dirty_copy(&self, lpn: Lpn) -> Option<PageTag> {
        let cleaned = self.cleaned.contains(&lpn.0);
        self.copies
            .iter()
            .find(|t| t.lpn == lpn && !cleaned)
            .copied()
    }
    fn mark_clean(&mut self, lpn: Lpn) {
        self.cleaned.push(lpn.0);
    }
}

#[test]
fn bast_ba_vbs_reclaims_the_log_with_most_cold_dirty_pages_unless_they_fit() {
    let geo = geometry(8);
    let mut ftl = Bast::new(
        &geo,
        &BastOptions {
            ba_gc: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut d = Driver::new(&geo);
    d.fill(&mut ftl);
    for l in [1, 5, 9] {
        d.write(&mut ftl, &[l], 0);
    }
    assert_eq!(ftl.query(Query::NextVictim), Answer::Block(Some(Lbn(0))));
    // lbn0 and lbn2: their dirty pages fit their logs' 3 free pages (excepted);
    // lbn1: 5 dirty pages, 4 of them cold.
    let mut view = FakeView {
        dirty: [1, 5, 2, 0],
        cold: [1, 4, 2, 0],
        copies: Vec::new(),
        cleaned: Vec::new(),
    };
    let pages = d.group(&[13]);
    ftl.write_with(
        &mut d.flash,
        &pages,
        GroupInfo {
            padded: 0,
            buffer: Some(&mut view),
        },
    );
    assert_eq!(ftl.query(Query::LogFreePages(Lbn(1))), Answer::NoLogBlock);
    assert_eq!(ftl.query(Query::LogFreePages(Lbn(0))), Answer::Count(3));
    assert_eq!(
        view.cleaned,
        [13],
        "the written page is clean in the buffer"
    );
    d.verify(&mut ftl);
}

#[test]
fn fast_ba_gc_reclaims_the_rw_log_with_cold_dirty_pages_and_merges_from_the_buffer() {
    let geo = geometry(8);
    let o = FastOptions {
        rw_logs: AutoOr::Value(2),
        ba_gc: true,
        ..Default::default()
    };
    let mut ftl = Fast::new(&geo, &o).unwrap();
    let mut d = Driver::new(&geo);
    d.fill(&mut ftl);
    for l in [1, 2, 3, 5, 9, 10, 11, 13] {
        d.write(&mut ftl, &[l], 0);
    }
    // The buffer holds newer, cold copies of 9 and 10 (in the second RW log).
    let copies = d.group(&[9, 10]);
    let mut view = FakeView {
        dirty: [0, 0, 2, 0],
        cold: [0, 0, 2, 0],
        copies,
        cleaned: Vec::new(),
    };
    let pages = d.group(&[14]);
    ftl.write_with(
        &mut d.flash,
        &pages,
        GroupInfo {
            padded: 0,
            buffer: Some(&mut view),
        },
    );
    let s = ftl.stats();
    // Round robin would have taken the first RW log (lbn0 and lbn1, two full merges).
    assert_eq!(
        (s.merges_ba_bm, s.merges_full),
        (1, 1),
        "lbn2 from the buffer, lbn3"
    );
    assert_eq!(view.cleaned, [14, 9, 10]);
    d.verify(&mut ftl);
}
