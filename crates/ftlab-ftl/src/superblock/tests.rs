//! Scripted scenarios of superblock-ftl.txt (Fig. 4, Fig. 10, Fig. 12), cache accounting,
//! refusals, and a randomised run against a reference map.

use super::*;
use ftlab_core::flash::FlashStats;
use ftlab_core::geometry::GeometryBuilder;
use ftlab_core::nand;
use ftlab_core::options::from_pairs;

pub(super) fn geo(ppb: u32, logical_blocks: u32, op: f64, spare: u32) -> Geometry {
    GeometryBuilder {
        page_size: 2048,
        pages_per_block: ppb,
        spare_bytes: spare,
        logical_bytes: (logical_blocks * ppb * 2048) as u64,
        op_percent: op,
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
        min_spare_blocks: 0,
    }
    .build()
    .unwrap()
}

pub(super) fn opts(pairs: &[(&str, &str)]) -> SuperblockOptions {
    from_pairs(ID, pairs).unwrap()
}

/// The FTL, or the error of its options or of its constructor.
pub(super) fn build(g: &Geometry, pairs: &[(&str, &str)]) -> Result<SuperblockFtl, SchemeError> {
    SuperblockFtl::new(g, lat(), &from_pairs(ID, pairs)?)
}

pub(super) fn lat() -> Latencies {
    nand::preset("slc-k9f1g16u0m").unwrap().latencies()
}

pub(super) fn ftl(g: &Geometry, pairs: &[(&str, &str)]) -> SuperblockFtl {
    SuperblockFtl::new(g, lat(), &opts(pairs)).unwrap()
}

/// Writes one page per call, stamping versions like the engine's oracle.
pub(super) struct Driver {
    pub(super) flash: Flash,
    pub(super) ftl: SuperblockFtl,
    pub(super) version: Vec<u32>,
}

impl Driver {
    pub(super) fn new(g: &Geometry, pairs: &[(&str, &str)]) -> Driver {
        Driver {
            flash: Flash::new(g),
            ftl: ftl(g, pairs),
            version: vec![0; g.logical_pages as usize],
        }
    }

    pub(super) fn write(&mut self, lpns: &[u32]) {
        for &l in lpns {
            self.version[l as usize] = (self.version[l as usize] & !(1 << 31)) + 1;
            let tag = PageTag {
                lpn: Lpn(l),
                version: self.version[l as usize],
            };
            self.ftl.write(&mut self.flash, &[tag]);
        }
    }

    pub(super) fn trim(&mut self, lpn: u32) {
        self.ftl.trim(&mut self.flash, Lpn(lpn));
        self.version[lpn as usize] |= 1 << 31;
    }

    /// Reads every page back and checks it against the last write.
    pub(super) fn verify(&mut self) {
        for l in 0..self.version.len() as u32 {
            let v = self.version[l as usize];
            let got = self.ftl.read(&mut self.flash, Lpn(l));
            if v == 0 || v & (1 << 31) != 0 {
                assert_eq!(got, None, "lpn{l} was never written or was trimmed");
            } else {
                assert_eq!(
                    got,
                    Some(PageTag {
                        lpn: Lpn(l),
                        version: v
                    }),
                    "lpn{l}"
                );
            }
        }
        self.check();
    }

    pub(super) fn check(&self) {
        self.flash.check().unwrap();
        self.ftl.check(&self.flash).unwrap();
    }

    /// The LPN of each valid page of each block of superblock `sb` (`None`: invalid or
    /// free), in allocation order.
    pub(super) fn contents(&self, sb: u32) -> Vec<(u32, Vec<Option<u32>>)> {
        let g = self.flash.geometry();
        self.ftl
            .superblock_blocks(sb)
            .into_iter()
            .map(|b| {
                let pages = (0..g.pages_per_block)
                    .map(|o| {
                        let p = g.ppn(b, o);
                        self.flash
                            .is_valid(p)
                            .then(|| self.flash.peek_tag(p).unwrap().lpn.0)
                    })
                    .collect();
                (b.0, pages)
            })
            .collect()
    }

    pub(super) fn merge_ops(&self) -> (u64, u64) {
        let s = self.flash.stats();
        let m = Cause::Merge as usize;
        (s.erases[m], s.programs[m])
    }
}

fn blocks(v: &[&[Option<u32>]]) -> Vec<Vec<Option<u32>>> {
    v.iter().map(|b| b.to_vec()).collect()
}

#[test]
fn fig4_superblock_merges_hot_pages_with_one_full_merge() {
    // superblock-ftl.txt §3.3 Fig. 4(c): 4 pages per block, D-blocks 0 and 1 form a
    // superblock, the hot pages P0, P5, P6 sit in D-block 0, and a single U-block is
    // available. W = <P0, P0, P5, P6, P8>: the merge at w5 costs two erases and four
    // page copies.
    let g = geo(4, 4, 50.0, 64); // 4 logical + 2 = 6 blocks: 1 reserved, 1 U-block
    let mut d = Driver::new(&g, &[("superblock_size", "2")]);
    d.write(&[0, 5, 6, 1, 2, 3, 4, 7]); // D-block 0 = P0 P5 P6 P1, D-block 1 = P2 P3 P4 P7
    d.write(&[8, 9, 10, 11, 12, 13, 14, 15]);
    d.ftl.merge_all(&mut d.flash, 0); // all valid: no copy, just D-blocks
    d.ftl.merge_all(&mut d.flash, 1);
    assert_eq!(d.merge_ops(), (0, 0));
    assert_eq!(d.ftl.free.len(), 1, "exactly one U-block available");
    d.write(&[0, 0, 5, 6]);
    assert_eq!(d.merge_ops(), (0, 0), "no merge until w5");
    d.write(&[8]);
    assert_eq!(d.merge_ops(), (2, 4), "two erases and four copies");
    let s = d.ftl.stats();
    assert_eq!(
        (s.merges_full, s.merges_partial, s.merges_switch),
        (1, 1, 0)
    );
    // The hot pages and the one cold page of D-block 0 now share one D-block; D-block 1
    // is untouched.
    let c: Vec<_> = d.contents(0).into_iter().map(|(_, p)| p).collect();
    assert_eq!(
        c,
        blocks(&[
            &[Some(2), Some(3), Some(4), Some(7)],
            &[Some(0), Some(5), Some(6), Some(1)],
        ])
    );
    d.verify();
}

/// The state of Fig. 12: superblock size 2, D-blocks B0 and B1 (cold), U-blocks B2
/// (full, one invalid page) and B3 (the last U-block: one page, no invalid page).
fn fig12_state(hot_cold: &str) -> Driver {
    let g = geo(4, 2, 200.0, 64); // 2 logical + 4 = 6 blocks
    let mut d = Driver::new(&g, &[("superblock_size", "2"), ("hot_cold", hot_cold)]);
    d.write(&[0, 1, 2, 3, 4, 5, 6, 7]);
    d.ftl.merge_all(&mut d.flash, 0);
    d.write(&[0, 1, 0, 4, 5]);
    assert_eq!(
        d.contents(0),
        vec![
            (0, vec![None, None, Some(2), Some(3)]),
            (1, vec![None, None, Some(6), Some(7)]),
            (2, vec![None, Some(1), Some(0), Some(4)]),
            (3, vec![Some(5), None, None, None]),
        ]
    );
    d
}

#[test]
fn fig12_merge_all_separates_hot_and_cold_pages() {
    // superblock-ftl.txt §4.3 Fig. 12: hot pages of B2 go into the free pages of the last
    // U-block B3 (step 1), then the cold pages of B0 and B1 are clustered in a new block
    // B4 (step 2).
    let mut d = fig12_state("on");
    d.ftl.merge_all(&mut d.flash, 0);
    assert_eq!(
        d.contents(0),
        vec![
            (3, vec![Some(5), Some(1), Some(0), Some(4)]),
            (5, vec![Some(2), Some(3), Some(6), Some(7)]),
        ]
    );
    assert_eq!(d.merge_ops(), (3, 7));
    let s = d.ftl.stats();
    assert_eq!(
        (s.merges_full, s.merges_partial, s.merges_switch),
        (1, 2, 0)
    );
    assert!(!d.ftl.lru.contains(0), "only D-blocks left");
    assert!(d.ftl.blocks_of(0).iter().all(|&b| !d.ftl.hot[b as usize]));
    d.verify();
}

#[test]
fn fig12_without_hot_cold_mixes_the_pages() {
    let mut d = fig12_state("off");
    d.ftl.merge_all(&mut d.flash, 0);
    assert_eq!(
        d.contents(0),
        vec![
            (3, vec![Some(5), Some(2), Some(3), Some(6)]),
            (5, vec![Some(7), Some(1), Some(0), Some(4)]),
        ]
    );
    assert_eq!(d.merge_ops(), (3, 7));
    d.verify();
}

#[test]
fn merge_some_frees_two_entries_when_a_superblock_hits_its_limit() {
    // Fig. 10: N = 1, M = 2, plenty of free blocks; the fourth block cannot be added.
    let g = geo(4, 2, 300.0, 64);
    let mut d = Driver::new(&g, &[("superblock_size", "1"), ("max_u_blocks", "2")]);
    d.write(&[0, 1, 2, 3]); // A = P0 P1 P2 P3
    d.write(&[0, 0, 0, 0]); // B: P0 valid once; A keeps P1 P2 P3
    d.write(&[1, 1, 1, 1]); // C: P1 valid once; A keeps P2 P3
    assert_eq!(d.ftl.blocks_of(0).len(), 3);
    assert_eq!(d.merge_ops(), (0, 0));
    d.write(&[2]);
    let s = d.ftl.stats();
    assert_eq!(s.extra["merges_some"], 1.0);
    // B (1 valid) needs the reserved block; C (1 valid) and A (2 valid) fit into it.
    assert_eq!((s.merges_full, s.merges_partial), (1, 2));
    assert_eq!(d.merge_ops(), (3, 4));
    let c = d.contents(0);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].1, vec![Some(0), Some(1), None, Some(3)]);
    assert_eq!(c[1].1, vec![Some(2), None, None, None]);
    d.verify();
}

#[test]
fn map_cache_misses_cost_one_or_two_spare_reads() {
    let g = geo(64, 8, 25.0, 64);
    let mut d = Driver::new(&g, &[("map_cache_entries", "1")]);
    let spare = |d: &Driver| d.flash.stats().spare_reads[Cause::Map as usize];
    d.write(&[0]); // miss, nothing on flash yet
    d.write(&[1]); // hit
    assert_eq!((d.ftl.stats.map_hits, d.ftl.stats.map_misses), (1, 1));
    assert_eq!(spare(&d), 0);
    d.write(&[16]); // miss (lbn 0, PT 1): PMD from P1's spare, PT 1 does not exist yet
    assert_eq!(spare(&d), 1);
    d.ftl.read(&mut d.flash, Lpn(0)); // miss (lbn 0, PT 0): PMD at P16, PT 0 at P1
    assert_eq!(spare(&d), 3);
    d.ftl.read(&mut d.flash, Lpn(17)); // miss (lbn 0, PT 1): PMD and PT 1 both at P16
    assert_eq!(spare(&d), 4);
    assert_eq!((d.ftl.stats.map_hits, d.ftl.stats.map_misses), (1, 4));
    d.verify();
}

#[test]
fn a_spare_area_that_does_not_fit_is_refused() {
    let g = geo(64, 8, 25.0, 32);
    let e = SuperblockFtl::new(&g, lat(), &opts(&[])).err().unwrap();
    assert!(e.to_string().contains("spare_bytes"), "{e}");
    let g = geo(64, 8, 25.0, 64);
    let e = SuperblockFtl::new(&g, lat(), &opts(&[("max_u_blocks", "5")]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("max_u_blocks"), "{e}");
    let e = build(&g, &[("hot_cold", "maybe")]).err().unwrap();
    assert!(e.to_string().contains("hot_cold"), "{e}");
    let g = geo(64, 8, 0.0, 64);
    let e = SuperblockFtl::new(&g, lat(), &opts(&[])).err().unwrap();
    assert!(e.to_string().contains("--op"), "{e}");
}

#[test]
fn defaults_follow_the_papers_slc_setup() {
    let g = geo(64, 8, 25.0, 64);
    let f = ftl(&g, &[]);
    assert_eq!(
        f.max_blocks_per_superblock(),
        8,
        "N = 4, M = 4 (8-block limit)"
    );
    assert_eq!((f.address_split().m, f.address_split().t), (2, 4));
    assert_eq!(f.mapping_bytes(), 8 * 4 + 16 * (1 + 4 + 16) * 4);
}

/// A seeded mix of writes (hot and cold), reads and trims with deep checks.
pub(super) fn random_mix(d: &mut Driver, seed: u64, ops: u32, check_every: u32) {
    let pages = d.version.len() as u64;
    let mut x = seed;
    for n in 0..ops {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = x >> 33;
        let lpn = if r.is_multiple_of(3) {
            (r >> 8) % (pages / 8).max(1)
        } else {
            (r >> 8) % pages
        } as u32;
        match r % 16 {
            0 => d.trim(lpn),
            1..=3 => {
                let got = d.ftl.read(&mut d.flash, Lpn(lpn));
                let v = d.version[lpn as usize];
                let want = (v != 0 && v & (1 << 31) == 0).then_some(PageTag {
                    lpn: Lpn(lpn),
                    version: v,
                });
                assert_eq!(got, want, "op {n}: lpn{lpn}");
            }
            _ => {
                let run = 1 + (r >> 40) % 4;
                let lpns: Vec<u32> = (lpn..(lpn + run as u32).min(pages as u32)).collect();
                d.write(&lpns);
            }
        }
        if check_every > 0 && n % check_every == 0 {
            d.check();
        }
    }
}

/// Tiny and small devices (pages per block, logical blocks, over-provisioning %) with
/// options, for the randomised runs.
type MixCase = (u32, u32, f64, &'static [(&'static str, &'static str)]);
const MIX_CASES: [MixCase; 5] = [
    (4, 8, 50.0, &[]),
    (
        4,
        8,
        50.0,
        &[("hot_cold", "off"), ("map_cache_entries", "1")],
    ),
    (4, 16, 30.0, &[("superblock_size", "1")]),
    (
        8,
        12,
        40.0,
        &[("superblock_size", "3"), ("max_u_blocks", "2")],
    ),
    (64, 8, 40.0, &[]),
];

#[test]
fn random_mix_keeps_every_page_on_tiny_and_small_devices() {
    for (ppb, lbns, op, pairs) in MIX_CASES {
        let g = geo(ppb, lbns, op, 64);
        let mut d = Driver::new(&g, pairs);
        random_mix(&mut d, 11, 6000, 97);
        d.verify();
        let erases = FlashStats::total(&d.flash.stats().erases);
        assert!(erases > 50, "{pairs:?}: only {erases} erases");
    }
}

#[test]
fn trimming_the_page_that_holds_the_map_keeps_the_rest_reachable() {
    let g = geo(4, 4, 100.0, 64);
    let mut d = Driver::new(&g, &[("superblock_size", "2")]);
    d.write(&[0, 1, 2, 3]);
    // P3 holds the PMD of lbn 0 and its only PT; trimming it moves both to a copy of P2.
    d.trim(3);
    assert_eq!(d.ftl.stats().extra["trim_copies"], 1.0);
    d.check();
    d.trim(0);
    d.trim(1);
    d.trim(2); // the logical block is empty now: no carrier left
    assert_eq!(d.ftl.pgd[0], NONE);
    d.write(&[4, 5, 6, 7, 4, 5, 6, 7]);
    d.verify();
}

/// Power-cycles a copy of the driver's flash, recovers a fresh FTL on it and checks it
/// against the driver.
fn recover_copy(d: &Driver, pairs: &[(&str, &str)]) -> Driver {
    let g = d.flash.geometry().clone();
    let mut flash = d.flash.clone();
    flash.power_cycle();
    let mut fresh = ftl(&g, pairs);
    fresh.recover(&mut flash).unwrap();
    let r = Driver {
        flash,
        ftl: fresh,
        version: d.version.clone(),
    };
    r.check();
    for p in 0..g.physical_pages() {
        if r.ftl.owner[g.block_of(Ppn(p)).idx()] == snapshot::OWN_SNAPSHOT {
            continue; // recovery ends with a checkpoint into the other half
        }
        assert_eq!(
            r.flash.is_valid(Ppn(p)),
            d.flash.is_valid(Ppn(p)),
            "ppn{p}: validity after recovery"
        );
    }
    assert_eq!(r.ftl.pgd, d.ftl.pgd, "the PGD is rebuilt exactly");
    for sb in 0..d.ftl.superblocks {
        let mut a = d.ftl.superblock_blocks(sb);
        let mut b = r.ftl.superblock_blocks(sb);
        a.sort();
        b.sort();
        assert_eq!(a, b, "blocks of superblock {sb}");
    }
    let pooled = |f: &SuperblockFtl| {
        let mut v: Vec<Pbn> = f.free.iter().chain(f.reserved.iter().copied()).collect();
        v.sort();
        v
    };
    assert_eq!(pooled(&r.ftl), pooled(&d.ftl));
    r
}

#[test]
fn recovery_after_a_power_loss_at_many_points_keeps_every_acknowledged_write() {
    type Case<'a> = (u32, u32, f64, &'a [(&'a str, &'a str)]);
    let cases: [Case; 5] = [
        (8, 12, 100.0, &[("snapshots", "on")]),
        (
            8,
            12,
            100.0,
            &[("snapshots", "on"), ("wear_leveling", "dynamic")],
        ),
        (
            8,
            12,
            100.0,
            &[
                ("snapshots", "on"),
                ("wear_leveling", "static"),
                ("wl_threshold", "1"),
            ],
        ),
        (
            4,
            8,
            150.0,
            &[("snapshots", "on"), ("superblock_size", "2")],
        ),
        (
            4,
            8,
            150.0,
            &[
                ("snapshots", "on"),
                ("hot_cold", "off"),
                ("map_cache_entries", "2"),
            ],
        ),
    ];
    for (ppb, lbns, op, pairs) in cases {
        let g = geo(ppb, lbns, op, 64);
        let mut d = Driver::new(&g, pairs);
        let mut recoveries = 0;
        let mut scanned = 0;
        let mut lost = 0;
        for round in 0..60u64 {
            random_mix(&mut d, 1000 + round, 53, 0);
            let mut r = recover_copy(&d, pairs);
            r.verify();
            let rep = r.ftl.recovery_report().unwrap();
            scanned += rep.scanned_pages;
            lost += rep.lost_releases;
            recoveries += 1;
            if round % 10 == 0 {
                // The recovered FTL keeps working, and can itself be recovered.
                random_mix(&mut r, 77 + round, 400, 50);
                r.verify();
                let mut again = recover_copy(&r, pairs);
                again.verify();
            }
        }
        assert_eq!(recoveries, 60);
        let s = d.ftl.stats();
        assert!(s.extra["full_snapshots"] >= 2.0, "{pairs:?}: {s:?}");
        assert!(s.extra["partial_snapshots"] > 10.0, "{pairs:?}");
        assert!(scanned > 0, "{pairs:?}: the scan found nothing to do");
        let _ = lost;
    }
}

#[test]
fn recovery_after_a_clean_shutdown_needs_no_scan() {
    let pairs = &[("snapshots", "on")];
    let g = geo(8, 12, 100.0, 64);
    let mut d = Driver::new(&g, pairs);
    random_mix(&mut d, 5, 3000, 0);
    d.ftl.shutdown(&mut d.flash);
    let r = recover_copy(&d, pairs);
    let rep = r.ftl.recovery_report().unwrap();
    assert_eq!((rep.partial_snapshots, rep.scanned_pages), (0, 0));
    assert!(rep.snapshot_pages_read >= 1);
    let mut r = r;
    r.verify();
}

#[test]
fn snapshot_pages_are_real_flash_writes() {
    let g = geo(8, 12, 100.0, 64);
    let mut d = Driver::new(&g, &[("snapshots", "on")]);
    random_mix(&mut d, 9, 2000, 0);
    let s = d.ftl.stats();
    let pages = s.extra["snapshot_pages"] as u64;
    assert!(pages > 0);
    let map_programs = d.flash.stats().programs[Cause::Map as usize];
    assert_eq!(
        map_programs,
        pages + s.extra["trim_copies"] as u64,
        "Cause::Map programs are snapshot pages and trim carriers"
    );
    d.verify();
}

#[test]
fn recovery_without_snapshots_is_refused() {
    let g = geo(8, 12, 100.0, 64);
    let mut d = Driver::new(&g, &[("snapshots", "off")]);
    d.write(&[0, 1, 2]);
    let mut flash = d.flash.clone();
    flash.power_cycle();
    let mut fresh = ftl(&g, &[("snapshots", "off")]);
    assert_eq!(fresh.recover(&mut flash), Err(RecoverError::Unsupported));
    let e = SuperblockFtl::new(&geo(8, 12, 20.0, 64), lat(), &opts(&[("snapshots", "on")]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("snapshots = off"), "{e}");
}

#[test]
fn recovery_remembers_a_logical_block_emptied_by_trims() {
    let pairs = &[("snapshots", "on")];
    let g = geo(4, 8, 150.0, 64);
    let mut d = Driver::new(&g, pairs);
    d.write(&[0, 1, 2, 3, 4, 5, 6, 7]);
    for l in 0..4 {
        d.trim(l);
    }
    assert_eq!(d.ftl.pgd[0], NONE);
    let mut r = recover_copy(&d, pairs);
    r.verify();
    // And after the trimmed block's pages are erased by later merges.
    random_mix(&mut d, 3, 500, 0);
    let mut r = recover_copy(&d, pairs);
    r.verify();
}

#[test]
fn in_place_merges_leave_each_logical_block_at_its_offsets() {
    let g = geo(4, 2, 200.0, 64);
    let pairs = &[("superblock_size", "1"), ("placement", "ip")];
    let mut d = Driver::new(&g, pairs);
    // Written sequentially into a fresh U-block: already in place, no copy.
    d.write(&[0, 1, 2, 3]);
    d.ftl.merge_all(&mut d.flash, 0);
    assert_eq!(d.merge_ops(), (0, 0));
    assert!(!d.ftl.lru.contains(0));
    // An in-place prefix in a U-block takes the missing tail: a partial merge.
    d.write(&[0, 1]);
    d.ftl.merge_all(&mut d.flash, 0);
    assert_eq!(d.merge_ops(), (1, 2));
    assert_eq!(
        d.contents(0)
            .into_iter()
            .map(|(_, p)| p)
            .collect::<Vec<_>>(),
        blocks(&[&[Some(0), Some(1), Some(2), Some(3)]])
    );
    assert_eq!(d.ftl.stats().merges_partial, 1);
    // Scattered updates: a full merge into a reserved block, in offset order.
    d.write(&[2, 1, 1]);
    d.ftl.merge_all(&mut d.flash, 0);
    assert_eq!(d.merge_ops(), (3, 6));
    assert_eq!(
        d.contents(0)
            .into_iter()
            .map(|(_, p)| p)
            .collect::<Vec<_>>(),
        blocks(&[&[Some(0), Some(1), Some(2), Some(3)]])
    );
    assert_eq!(
        d.ftl.stats().merges_full,
        2,
        "the old D-block and the U-block"
    );
    d.verify();
}

#[test]
fn in_place_merge_fills_a_gap_before_the_last_page() {
    let g = geo(4, 2, 200.0, 64);
    let mut d = Driver::new(&g, &[("superblock_size", "1"), ("placement", "ip")]);
    d.write(&[0, 2, 3]);
    d.ftl.merge_all(&mut d.flash, 0);
    assert_eq!(d.ftl.stats().extra["ip_filler_pages"], 1.0);
    assert_eq!(
        d.contents(0)
            .into_iter()
            .map(|(_, p)| p)
            .collect::<Vec<_>>(),
        blocks(&[&[Some(0), None, Some(2), Some(3)]])
    );
    d.verify();
}

#[test]
fn in_place_random_mix_and_recovery() {
    for (ppb, lbns, op, pairs) in [
        (4, 8, 75.0, &[("placement", "ip")][..]),
        (
            4,
            8,
            40.0,
            &[("placement", "ip"), ("superblock_size", "1")][..],
        ),
        (
            8,
            12,
            60.0,
            &[("placement", "ip"), ("superblock_size", "2")][..],
        ),
    ] {
        let g = geo(ppb, lbns, op, 64);
        let mut d = Driver::new(&g, pairs);
        random_mix(&mut d, 21, 6000, 89);
        d.verify();
        let s = d.ftl.stats();
        assert!(s.merges_full > 10, "{pairs:?}: {s:?}");
    }
    let pairs = &[("placement", "ip"), ("snapshots", "on")];
    let g = geo(4, 8, 150.0, 64);
    let mut d = Driver::new(&g, pairs);
    for round in 0..30 {
        random_mix(&mut d, 300 + round, 67, 0);
        let mut r = recover_copy(&d, pairs);
        r.verify();
    }
}

#[test]
fn background_merge_uses_idle_time_within_its_budget() {
    use ftlab_core::Nanos;
    let g = geo(8, 12, 100.0, 64);
    let pairs = &[("background_merge", "on"), ("background_free_blocks", "6")];
    let mut d = Driver::new(&g, pairs);
    random_mix(&mut d, 4, 3000, 0);
    let free_before = d.ftl.free.len();
    assert!(free_before < 6, "the mix should leave few free blocks");
    let mut none = IdleBudget {
        remaining: Nanos(0),
        latencies: lat(),
    };
    d.ftl.idle(&mut d.flash, &mut none);
    assert_eq!(d.ftl.free.len(), free_before, "no time, no merge");
    let mut lots = IdleBudget {
        remaining: Nanos(10_000_000_000),
        latencies: lat(),
    };
    d.ftl.idle(&mut d.flash, &mut lots);
    assert!(d.ftl.free.len() > free_before);
    assert!(d.ftl.stats().extra["background_merges"] >= 1.0);
    assert!(
        lots.remaining.0 < 10_000_000_000,
        "the merges were paid for"
    );
    d.verify();
    // Off by default.
    let mut d = Driver::new(&g, &[]);
    random_mix(&mut d, 4, 3000, 0);
    let before = d.ftl.free.len();
    d.ftl.idle(&mut d.flash, &mut lots);
    assert_eq!(d.ftl.free.len(), before);
}

#[test]
fn regression_merge_all_victim_must_free_a_block() {
    // In place, a superblock whose two logical blocks share one U-block would need a
    // second block to merge: choosing it as the MergeAll victim drained the reserve.
    let g = geo(8, 4, 200.0, 64);
    let mut d = Driver::new(&g, &[("superblock_size", "2"), ("placement", "ip")]);
    d.write(&[0, 8]);
    assert_eq!(d.ftl.merge_all_victim(&d.flash), None);
    d.write(&[16, 17, 18, 19, 20, 21, 22, 23, 16]);
    assert!(
        d.ftl.lru.contains(0),
        "superblock 0 is the least recently written"
    );
    assert_eq!(d.ftl.merge_all_victim(&d.flash), Some(1));
    d.verify();
}

#[test]
fn regression_a_second_power_loss_soon_after_a_recovery() {
    // What recovery itself rebuilt (pages found by the scan, blocks found erased) was
    // not in any snapshot: a second power loss before the next full snapshot replayed
    // the old snapshot plus newer partial snapshots and lost the scanned pages.
    let pairs = &[("snapshots", "on")];
    let g = geo(8, 12, 100.0, 64);
    let mut d = Driver::new(&g, pairs);
    for round in 0..40 {
        random_mix(&mut d, 900 + round, 31, 0);
        let mut r = recover_copy(&d, pairs);
        r.verify();
        random_mix(&mut r, 50 + round, 3 + round as u32 % 5, 0);
        let mut again = recover_copy(&r, pairs);
        again.verify();
        d = again;
    }
}

#[test]
fn map_pages_are_cached_read_and_written_back() {
    // SB-P (§4.2.3): 2 superblocks of 4 logical blocks, a one-entry map-page cache,
    // map pages in the superblocks' own U-blocks.
    let g = geo(8, 8, 60.0, 64);
    let pairs = &[
        ("mapping", "map_page"),
        ("map_page_home", "u_block"),
        ("map_cache_entries", "1"),
    ];
    let mut d = Driver::new(&g, pairs);
    let s = |d: &Driver| {
        let st = d.ftl.stats();
        (st.translation_reads, st.translation_writes)
    };
    d.write(&[0, 1]); // superblock 0: miss, no map page yet
    assert_eq!(s(&d), (0, 0));
    d.write(&[32]); // superblock 1: evicts superblock 0's dirty map, written back
    assert_eq!(s(&d), (0, 1));
    let map0 = d.ftl.map_pgd[0];
    assert_ne!(map0, NONE);
    assert_eq!(
        d.ftl.owner[g.block_of(Ppn(map0)).idx()],
        0,
        "the map page lives in its own superblock's U-block"
    );
    assert_eq!(d.flash.peek_tag(Ppn(map0)).unwrap().lpn.0, mappage::MAP_LPN);
    assert_eq!(
        d.ftl.read(&mut d.flash, Lpn(1)),
        Some(PageTag {
            lpn: Lpn(1),
            version: 1
        })
    );
    assert_eq!(
        s(&d),
        (1, 2),
        "read superblock 0's map page after writing 1's back"
    );
    assert_eq!(d.ftl.mapping_bytes(), 2 * 4 + 2048);
    d.verify();
}

#[test]
fn map_pages_random_mix_keeps_every_page() {
    for home in ["u_block", "pool"] {
        for (op, pairs) in [
            (60.0, &[("mapping", "map_page")][..]),
            (
                60.0,
                &[("mapping", "map_page"), ("map_cache_entries", "1")][..],
            ),
            (
                120.0,
                &[("mapping", "map_page"), ("superblock_size", "1")][..],
            ),
            (
                60.0,
                &[
                    ("mapping", "map_page"),
                    ("hot_cold", "off"),
                    ("map_cache_entries", "2"),
                ][..],
            ),
        ] {
            let mut pairs = pairs.to_vec();
            pairs.push(("map_page_home", home));
            let g = geo(8, 12, op, 64);
            let mut d = Driver::new(&g, &pairs);
            random_mix(&mut d, 17, 6000, 83);
            d.verify();
            let st = d.ftl.stats();
            assert!(st.merges_full + st.merges_partial > 20, "{st:?}");
            let c = d.ftl.mappages.as_ref().unwrap();
            if (c.entries() as u32) < d.ftl.map_pgd.len() as u32 || st.extra["merges_all"] > 0.0 {
                assert!(st.translation_writes > 0, "{pairs:?}: {st:?}");
            }
        }
    }
}

#[test]
fn map_pages_in_a_pool_share_pages_and_leave_data_blocks_to_data() {
    // §4.2.3: "a single map page can hold the mapping information for six superblocks
    // (k = 6)" with N = M = 4 on the MLC part (4 KiB pages, 128 per block).
    let f = mappage::Format::new(8, 4 * 128, 128, 16_896);
    assert_eq!(f.per_page(4096), 6);
    // 24 superblocks of 4 logical blocks of 8 pages; k = 12 fits in a 2 KiB page here,
    // capped at what the test asks.
    let g = geo(8, 96, 10.0, 64);
    let pairs = [
        ("mapping", "map_page"),
        ("superblocks_per_map_page", "6"),
        ("map_cache_entries", "1"),
        ("map_pool_blocks", "3"),
    ];
    let mut d = Driver::new(&g, &pairs);
    assert_eq!(d.ftl.map_pgd.len(), 4, "24 superblocks, 6 per map page");
    let pool: Vec<Pbn> = d.ftl.pool.as_ref().unwrap().blocks.clone();
    assert_eq!(pool.len(), 3);
    random_mix(&mut d, 5, 20_000, 211);
    d.verify();
    let st = d.ftl.stats();
    assert!(st.translation_writes > 100, "{st:?}");
    assert!(st.extra["map_pool_gc_erases"] > 0.0, "{:?}", st.extra);
    assert_eq!(st.extra["superblocks_per_map_page"], 6.0);
    // No map page in a data block: every valid page outside the pool is data.
    for b in 0..g.blocks {
        if pool.contains(&Pbn(b)) {
            continue;
        }
        for o in 0..g.pages_per_block {
            let p = g.ppn(Pbn(b), o);
            if d.flash.is_valid(p) {
                assert_ne!(d.flash.peek_tag(p).unwrap().lpn.0, mappage::MAP_LPN);
            }
        }
    }
    // Pool traffic is map traffic.
    let m = Cause::Map as usize;
    assert_eq!(
        d.flash.stats().erases[m] as f64,
        st.extra["map_pool_gc_erases"]
    );
}

#[test]
fn a_filled_device_with_3_percent_extra_blocks_runs_sb_p_in_a_pool_only() {
    // §5.1: 3.125% extra blocks; §5.8: the map pages' space comes out of them.
    let g = geo(8, 256, 3.125, 64);
    assert_eq!(g.blocks - g.logical_blocks(), 8);
    let e = build(&g, &[("mapping", "map_page"), ("map_page_home", "u_block")])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("1 per superblock for its map page"), "{e}");
    let pairs = [("mapping", "map_page"), ("map_cache_entries", "4")];
    let mut d = Driver::new(&g, &pairs);
    let all: Vec<u32> = (0..g.logical_pages).collect();
    d.write(&all);
    random_mix(&mut d, 3, 8000, 0);
    d.verify();
    let st = d.ftl.stats();
    assert!(st.merges_switch + st.merges_partial + st.merges_full > 50);
}

#[test]
fn map_page_encoding_round_trips_and_tells_all_ones_apart() {
    // N + M = 8 blocks of 4 pages: PTEs of 3 + 2 bits, so all ones (unmapped) is also
    // block index 7, page 3. Superblock 0 is written until it owns 8 blocks, the last
    // page of the 8th holding lpn 1's live copy; a write to superblock 1 evicts its map
    // page (one cached page, one superblock per page), and reads decode it from flash.
    let g = geo(4, 16, 100.0, 64);
    let mut d = Driver::new(
        &g,
        &[
            ("mapping", "map_page"),
            ("max_u_blocks", "4"),
            ("map_cache_entries", "1"),
            ("superblocks_per_map_page", "1"),
        ],
    );
    d.write(&(0..16).collect::<Vec<u32>>());
    d.write(&[0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 0, 4, 8, 1]);
    let blocks = d.ftl.superblock_blocks(0);
    assert_eq!(blocks.len(), 8, "{:?}", d.contents(0));
    let last = g.ppn(blocks[7], 3);
    assert_eq!(d.flash.peek_tag(last).unwrap().lpn.0, 1);
    assert!(d.flash.is_valid(last));
    d.write(&[16]);
    assert!(
        d.ftl.stats().translation_writes >= 1,
        "superblock 0's map page written"
    );
    // Unmapped entries (lpn 16's neighbours in superblock 1) encode as all ones too.
    d.verify();
}

#[test]
fn map_page_refusals_name_the_option() {
    let g = geo(8, 12, 60.0, 64);
    for (pairs, key) in [
        (
            &[("mapping", "map_page"), ("placement", "ip")][..],
            "placement",
        ),
        (
            &[("mapping", "map_page"), ("snapshots", "on")][..],
            "snapshots",
        ),
        (&[("mapping", "maps")][..], "mapping"),
    ] {
        let e = build(&g, pairs).err().unwrap();
        assert!(e.to_string().contains(key), "{e}");
    }
    for (pairs, key) in [
        (&[("map_page_home", "u_block")][..], "map_page_home"),
        (
            &[("mapping", "ram"), ("map_page_home", "u_block")][..],
            "map_page_home",
        ),
        (&[("map_pool_blocks", "4")][..], "map_pool_blocks"),
        (
            &[
                ("mapping", "map_page"),
                ("map_page_home", "u_block"),
                ("map_pool_blocks", "4"),
            ][..],
            "map_pool_blocks",
        ),
        (
            &[("mapping", "map_page"), ("map_pool_blocks", "2")][..],
            "map_pool_blocks",
        ),
        (
            &[
                ("mapping", "map_page"),
                ("map_page_home", "u_block"),
                ("superblocks_per_map_page", "2"),
            ][..],
            "superblocks_per_map_page",
        ),
        (
            &[("mapping", "map_page"), ("superblocks_per_map_page", "500")][..],
            "superblocks_per_map_page",
        ),
        (
            &[("mapping", "ram"), ("superblocks_per_map_page", "2")][..],
            "superblocks_per_map_page",
        ),
        (&[("mapping", "ram"), ("placement", "ip")][..], "placement"),
        (&[("mapping", "ram"), ("snapshots", "on")][..], "snapshots"),
    ] {
        let e = build(&g, pairs).err().expect("refused").to_string();
        assert!(e.contains(key), "{pairs:?}: {e}");
    }
    let e = SuperblockFtl::new(
        &geo(8, 12, 20.0, 64),
        lat(),
        &opts(&[("mapping", "map_page"), ("map_page_home", "u_block")]),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("map page"), "{e}");
    // A spare area too small for SB-S still works with map pages.
    let g = geo(64, 8, 60.0, 32);
    assert!(SuperblockFtl::new(&g, lat(), &opts(&[])).is_err());
    let f = SuperblockFtl::new(&g, lat(), &opts(&[("mapping", "map_page")])).unwrap();
    assert_eq!(
        f.max_blocks_per_superblock(),
        8,
        "auto M = N with map pages"
    );
    assert!(f.layout().is_none());
}

#[test]
fn dynamic_levelling_allocates_the_least_worn_free_block_and_recovers_the_order() {
    let g = geo(8, 12, 100.0, 64);
    let pairs = &[("snapshots", "on"), ("wear_leveling", "dynamic")];
    let mut d = Driver::new(&g, pairs);
    for round in 0..20u64 {
        random_mix(&mut d, 500 + round, 200, 0);
        // The next U-block is a least-erased free block (ties: the lowest number).
        let least = d
            .ftl
            .free
            .iter()
            .map(|b| (d.flash.erase_count(b), b.0))
            .min();
        let next = d.ftl.free.peek_least_worn().map(|(b, e)| (e, b.0));
        assert_eq!(next, least, "round {round}");
    }
    d.verify();
    // After a power loss the free list is keyed by the erase counts on flash.
    let r = recover_copy(&d, pairs);
    let least = r
        .ftl
        .free
        .iter()
        .map(|b| (r.flash.erase_count(b), b.0))
        .min();
    let next = r.ftl.free.peek_least_worn().map(|(b, e)| (e, b.0));
    assert_eq!(next, least);
}

/// Static levelling on a 90/10-like mix: 32 logical blocks of 8 pages, 4,000 page
/// writes, 95% of them into the first 4 logical blocks. Returns (spread, WAF, moves)
/// after checking every page and a recovery.
fn hot_cold(pairs: &[(&str, &str)]) -> (u32, f64, f64) {
    let g = geo(8, 32, 40.0, 64);
    let mut d = Driver::new(&g, pairs);
    let mut rng = ftlab_core::rng::SplitMix64::new(9);
    d.write(&(0..32 * 8).collect::<Vec<_>>());
    for _ in 0..4000 {
        let l = if rng.below(100) < 95 {
            rng.below(32)
        } else {
            rng.below(32 * 8)
        } as u32;
        d.write(&[l]);
    }
    d.verify();
    let s = d.flash.stats();
    let waf = FlashStats::total(&s.programs) as f64 / s.programs[Cause::Host as usize] as f64;
    // The snapshot area's blocks are fixed: levelling does not move them.
    let owned: Vec<u32> = (0..g.blocks)
        .filter(|&b| d.ftl.owner[b as usize] != OWN_SNAPSHOT)
        .map(|b| d.flash.erase_count(Pbn(b)))
        .collect();
    let spread = owned.iter().max().unwrap() - owned.iter().min().unwrap();
    let moved = d.ftl.stats().extra.get("wl_migrations").unwrap_or(0.0);
    let mut r = recover_copy(&d, pairs);
    r.verify();
    r.write(&[1, 2, 3]);
    r.verify();
    (spread, waf, moved)
}

#[test]
fn static_levelling_narrows_the_spread_at_a_waf_cost_and_recovers() {
    let on = ("snapshots", "on");
    let (off, waf_off, _) = hot_cold(&[on]);
    let (dynamic, _, _) = hot_cold(&[on, ("wear_leveling", "dynamic")]);
    let th = ("wl_threshold", "4");
    let (statik, waf, moved) = hot_cold(&[on, ("wear_leveling", "static"), th]);
    println!(
        "spread off {off}, dynamic {dynamic}, static {statik}; WAF off {waf_off:.3}, \
         static {waf:.3}; moves {moved}"
    );
    assert!(moved > 0.0);
    assert!(
        statik < off && statik < dynamic,
        "{statik}: {off} / {dynamic}"
    );
    assert!(waf < waf_off * 3.0);
    for bad in [("placement", "ip"), ("mapping", "map_page")] {
        let e = build(&geo(8, 32, 40.0, 64), &[("wear_leveling", "static"), bad])
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("wear_leveling") && e.contains(bad.0), "{e}");
    }
}

#[test]
fn the_map_in_ram_allows_superblocks_past_the_spare_layouts_limit() {
    // §5.6: "we held all the page-mapping information in RAM [...] since the current
    // implementation does not support the superblock size greater than eight".
    let g = geo(8, 64, 20.0, 64);
    assert!(build(&g, &[("superblock_size", "16")]).is_err());
    for pairs in [
        &[("mapping", "ram"), ("superblock_size", "16")][..],
        &[
            ("mapping", "ram"),
            ("superblock_size", "32"),
            ("max_u_blocks", "4"),
        ][..],
        &[("mapping", "ram"), ("superblock_size", "64")][..],
    ] {
        let mut d = Driver::new(&g, pairs);
        random_mix(&mut d, 9, 8000, 149);
        d.verify();
        let st = d.ftl.stats();
        assert!(st.merges_partial + st.merges_full > 10, "{pairs:?}: {st:?}");
        assert_eq!(
            (
                st.map_hits,
                st.map_misses,
                st.translation_reads,
                st.translation_writes
            ),
            (0, 0, 0, 0),
            "no map traffic with the map in RAM"
        );
        let s = d.flash.stats();
        let m = Cause::Map as usize;
        assert_eq!(
            s.page_reads[m] + s.programs[m] + s.erases[m] + s.spare_reads[m],
            0
        );
        assert_eq!(st.extra["map_in_ram"], 1.0);
    }
    let f = ftl(&g, &[("mapping", "ram"), ("superblock_size", "16")]);
    assert_eq!(f.max_blocks_per_superblock(), 32, "auto M = N in RAM");
}

/// Every programmed page's spare words, as a reader of the flash sees them.
fn all_spares(f: &Flash) -> Vec<(u32, Vec<u32>)> {
    let g = f.geometry();
    (0..g.physical_pages())
        .filter(|&p| {
            let (b, o) = (g.block_of(Ppn(p)), p % g.pages_per_block);
            o < f.write_ptr(b)
        })
        .map(|p| (p, f.spare_words(Ppn(p)).into_owned()))
        .collect()
}

#[test]
fn journaled_merge_spares_read_back_as_the_words_written_whole() {
    let more: [MixCase; 2] = [
        (8, 12, 100.0, &[("snapshots", "on")]),
        (8, 16, 50.0, &[("background_merge", "on")]),
    ];
    for (ppb, lbns, op, pairs) in MIX_CASES.into_iter().chain(more) {
        let g = geo(ppb, lbns, op, 64);
        let mut journaled = Driver::new(&g, pairs);
        let mut whole = Driver::new(&g, pairs);
        whole.ftl.journal_spares = false;
        let mut used = 0;
        for round in 0..30 {
            random_mix(&mut journaled, 100 + round, 300, 1000);
            random_mix(&mut whole, 100 + round, 300, 1000);
            assert_eq!(journaled.flash.stats(), whole.flash.stats(), "{pairs:?}");
            assert_eq!(
                all_spares(&journaled.flash),
                all_spares(&whole.flash),
                "{pairs:?}: round {round}"
            );
            used = used.max(journaled.flash.spare_journal_footprint().0);
            // Journals die with their pages: never more than one per block.
            assert!(journaled.flash.spare_journal_footprint().0 <= g.blocks as usize);
        }
        assert!(used > 0, "{pairs:?}: no merge went through a journal");
        assert_eq!(whole.flash.spare_journal_footprint().0, 0);
        journaled.verify();
        whole.verify();
        // And a recovery reads the journaled spares like whole ones.
        if pairs.contains(&("snapshots", "on")) {
            recover_copy(&journaled, pairs).verify();
        }
    }
}

/// A flash that keeps no recovery data (`Flash::drop_recovery_data`, a run without
/// power losses) sees the same operations, counts and statistics as one that keeps the
/// spare words, journals and snapshot contents; the FTL reads every page back and its
/// deep check (on the mirror, which stands for the spares) passes; nothing of the
/// spares, journals or snapshot pages is stored.
#[test]
fn dropping_recovery_data_changes_no_operation() {
    let more: [MixCase; 3] = [
        (8, 12, 100.0, &[("snapshots", "on")]),
        (
            8,
            16,
            50.0,
            &[("background_merge", "on"), ("snapshots", "on")],
        ),
        (8, 16, 60.0, &[("placement", "ip"), ("snapshots", "on")]),
    ];
    for (ppb, lbns, op, pairs) in MIX_CASES.into_iter().chain(more) {
        let g = geo(ppb, lbns, op, 64);
        let mut kept = Driver::new(&g, pairs);
        let mut lean = Driver::new(&g, pairs);
        lean.flash.drop_recovery_data();
        assert!(!lean.flash.keeps_recovery_data());
        for round in 0..20 {
            random_mix(&mut kept, 300 + round, 300, 100);
            random_mix(&mut lean, 300 + round, 300, 100);
            assert_eq!(lean.flash.stats(), kept.flash.stats(), "{pairs:?}");
            assert_eq!(lean.ftl.stats(), kept.ftl.stats(), "{pairs:?}");
        }
        assert!(lean.flash.dropped_recovery_data(), "{pairs:?}");
        assert_eq!(lean.flash.spare_journal_footprint(), (0, 0), "{pairs:?}");
        if pairs.contains(&("snapshots", "on")) {
            let snap = lean.ftl.snap.as_ref().expect("snapshots on");
            assert!(snap.partial_snapshots > 0, "{pairs:?}");
            let g = lean.flash.geometry().clone();
            let stored = (0..g.physical_pages())
                .filter(|&p| lean.flash.payload(Ppn(p)).is_some())
                .count();
            assert_eq!(stored, 0, "{pairs:?}: snapshot contents kept");
        }
        kept.verify();
        lean.verify();
    }
}
