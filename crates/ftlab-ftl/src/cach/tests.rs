use super::*;
use ftlab_core::buffer::Passthrough;
use ftlab_core::engine::{Engine, EngineConfig, Verify};
use ftlab_core::flash::FlashStats;
use ftlab_core::geometry::GeometryBuilder;
use ftlab_core::nand::{preset, Latencies};
use ftlab_core::options::from_pairs;
use ftlab_core::request::{Op, Request};
use ftlab_core::rng::SplitMix64;
use ftlab_core::timing::SerialTiming;
use ftlab_core::Nanos;

/// 2 KiB pages, `ppb` pages per block, `logical` logical blocks and exactly `extra`
/// blocks beyond them.
fn geo(ppb: u32, logical: u32, extra: u32) -> Geometry {
    geo_builder(ppb, logical, extra).build().unwrap()
}

/// [`geo`]'s builder (one die).
fn geo_builder(ppb: u32, logical: u32, extra: u32) -> GeometryBuilder {
    GeometryBuilder {
        page_size: 2048,
        pages_per_block: ppb,
        spare_bytes: 64,
        logical_bytes: (logical * ppb) as u64 * 2048,
        op_percent: 0.0,
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
        min_spare_blocks: extra,
    }
}

fn opts(kv: &[(&str, &str)]) -> CachOptions {
    from_pairs(ID, kv).unwrap()
}

/// The FTL with options `kv`, or the error of the options or of the constructor.
fn build(g: &Geometry, kv: &[(&str, &str)]) -> Result<CachFtl, SchemeError> {
    CachFtl::new(g, &from_pairs(ID, kv)?)
}

fn lat() -> Latencies {
    preset("slc-k9f1g16u0m").unwrap().latencies()
}

/// The FTL on its flash, with the last version written per LPN (versions keep growing
/// across trims, as the engine's oracle does, so an older copy never looks newer).
struct Rig {
    geo: Geometry,
    flash: Flash,
    ftl: CachFtl,
    opts: Vec<(String, String)>,
    version: Vec<u32>,
    /// Per LPN: the last write is live (not trimmed since).
    live: Vec<bool>,
    /// Per LPN: a power loss made it uncertain (a trim undone, or its newest data lost):
    /// a read may return nothing or any version up to `version`.
    loose: Vec<bool>,
}

impl Rig {
    fn new(geo: Geometry, kv: &[(&str, &str)]) -> Rig {
        Rig {
            flash: Flash::new(&geo),
            ftl: CachFtl::new(&geo, &opts(kv)).unwrap(),
            opts: kv
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            version: vec![0; geo.logical_pages as usize],
            live: vec![false; geo.logical_pages as usize],
            loose: vec![false; geo.logical_pages as usize],
            geo,
        }
    }

    /// What a read of `lpn` must return, if it is certain.
    fn expected(&self, lpn: u32) -> Option<u32> {
        let l = lpn as usize;
        self.live[l].then_some(self.version[l])
    }

    /// Whether a read of `lpn` returned an acceptable version.
    fn acceptable(&self, lpn: u32, got: Option<u32>) -> bool {
        let l = lpn as usize;
        if self.loose[l] {
            got.is_none_or(|v| v <= self.version[l])
        } else {
            got == self.expected(lpn)
        }
    }

    /// A power loss: the FTL's RAM is gone; a fresh instance recovers from the flash,
    /// and the invariants hold at once. Returns the LPNs the FTL reported lost.
    fn power_loss(&mut self) -> Vec<Lpn> {
        let mut lost = Vec::new();
        self.ftl.volatile_pages(&mut lost);
        for l in 0..self.version.len() {
            if !self.live[l] && self.version[l] > 0 {
                self.loose[l] = true;
            }
        }
        for lpn in &lost {
            self.loose[lpn.idx()] = true;
        }
        let kv: Vec<(&str, &str)> = self
            .opts
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.flash.power_cycle();
        self.flash.reset_stats();
        self.ftl = CachFtl::new(&self.geo, &opts(&kv)).unwrap();
        self.ftl.recover(&mut self.flash).unwrap();
        self.check();
        lost
    }

    /// Spare reads, programs and erases of the last recovery (after `power_loss`).
    fn recovery_ops(&self) -> (u64, u64, u64) {
        let s = self.flash.stats();
        let r = Cause::Recovery as usize;
        (s.spare_reads[r], s.programs[r], s.erases[r])
    }

    /// Programmed pages on the device.
    fn programmed(&self) -> u64 {
        (0..self.geo.blocks)
            .map(|b| self.flash.write_ptr(Pbn(b)) as u64)
            .sum()
    }

    fn write(&mut self, lbn: u32, offsets: &[u32]) {
        let ppb = self.geo.pages_per_block;
        let pages: Vec<PageWrite> = offsets
            .iter()
            .map(|o| {
                let lpn = lbn * ppb + o;
                self.version[lpn as usize] += 1;
                self.live[lpn as usize] = true;
                self.loose[lpn as usize] = false;
                PageTag {
                    lpn: Lpn(lpn),
                    version: self.version[lpn as usize],
                }
            })
            .collect();
        self.ftl.write(&mut self.flash, &pages);
        self.flash.clear_log();
    }

    fn read(&mut self, lpn: u32) -> Option<PageTag> {
        let r = self.ftl.read(&mut self.flash, Lpn(lpn));
        self.flash.clear_log();
        r
    }

    fn trim(&mut self, lpn: u32) {
        self.ftl.trim(&mut self.flash, Lpn(lpn));
        self.flash.clear_log();
        self.live[lpn as usize] = false;
    }

    /// Offers an idle gap of `us` microseconds.
    fn idle(&mut self, us: f64) {
        let mut budget = IdleBudget {
            remaining: Nanos::from_us_f64(us),
            latencies: lat(),
        };
        self.ftl.idle(&mut self.flash, &mut budget);
        self.flash.clear_log();
    }

    fn check(&self) {
        self.flash.check().unwrap();
        self.ftl.check(&self.flash).unwrap();
    }

    /// Every LPN reads back its last version (or nothing), and the invariants hold.
    fn verify(&mut self) {
        self.check();
        for lpn in 0..self.version.len() as u32 {
            let got = self.read(lpn);
            assert!(got.is_none_or(|t| t.lpn.0 == lpn), "lpn{lpn}: {got:?}");
            let got = got.map(|t| t.version);
            assert!(
                self.acceptable(lpn, got),
                "lpn{lpn}: read {got:?}, expected {:?}{}",
                self.expected(lpn),
                if self.loose[lpn as usize] {
                    " or older"
                } else {
                    ""
                }
            );
        }
    }

    /// One step of the random mixes: `k` 0 to 5 a write of random pages of a random
    /// logical block, 6 a trim, 7 an idle gap, 8 a read (checked against what it may
    /// return), else a host flush.
    fn random_step(&mut self, rng: &mut SplitMix64, k: u64, what: &str) {
        let ppb = self.geo.pages_per_block;
        let pages = self.geo.logical_pages as u64;
        match k {
            0..=5 => {
                let lbn = rng.below(pages / ppb as u64) as u32;
                let offs: Vec<u32> = (0..ppb).filter(|_| rng.below(3) == 0).collect();
                if !offs.is_empty() {
                    self.write(lbn, &offs);
                }
            }
            6 => self.trim(rng.below(pages) as u32),
            7 => self.idle(rng.below(8000) as f64),
            8 => {
                let lpn = rng.below(pages) as u32;
                let got = self.read(lpn).map(|t| t.version);
                assert!(self.acceptable(lpn, got), "{what}: lpn{lpn} read {got:?}");
            }
            _ => self.ftl.flush(&mut self.flash),
        }
    }

    fn x(&self, key: &str) -> f64 {
        self.ftl.stats().extra[key]
    }

    fn ops(&self) -> FlashStats {
        *self.flash.stats()
    }
}

fn by(counts: &[u64; ftlab_core::flash::CAUSES], cause: Cause) -> u64 {
    counts[cause as usize]
}

#[test]
fn a_group_of_threshold_pages_goes_to_the_pmr_and_one_more_to_the_bmr() {
    for threshold in [4u32, 2] {
        let t = threshold.to_string();
        let mut r = Rig::new(geo(8, 8, 5), &[("threshold", &t)]);
        let small: Vec<u32> = (0..threshold).collect();
        let large: Vec<u32> = (0..threshold + 1).collect();
        r.write(0, &small);
        for &o in &small {
            assert!(
                r.ftl.pmr.map.get(o).is_some(),
                "threshold {t}: lpn{o} in the PMR"
            );
            assert!(!r.ftl.in_bmr(Lpn(o)));
        }
        r.write(1, &large);
        for &o in &large {
            let lpn = Lpn(8 + o);
            assert!(r.ftl.in_bmr(lpn), "threshold {t}: {lpn:?} in the BMR");
            assert_eq!(r.ftl.bmr_ppn(lpn), r.geo.ppn(Pbn(1), o));
            assert!(r.ftl.pmr.map.get(lpn.0).is_none());
        }
        assert_eq!((r.x("pmr_groups"), r.x("bmr_groups")), (1.0, 1.0));
        assert_eq!(r.x("pmr_pages_written"), threshold as f64);
        assert_eq!(r.x("bmr_pages_written"), threshold as f64 + 1.0);
        r.verify();
    }
}

#[test]
fn a_bmr_write_merges_the_blocks_pmr_and_bmr_pages_in_place() {
    // Function 2: offsets 3-7 arrive as a group of 5; offset 0 is read from the BMR,
    // offsets 1-2 from the PMR, the block is erased and rewritten in place.
    let mut r = Rig::new(geo(8, 8, 5), &[]);
    r.write(0, &[0, 1, 2, 3, 4, 5, 6, 7]);
    r.write(0, &[1, 2]);
    r.flash.reset_stats();
    r.write(0, &[3, 4, 5, 6, 7]);
    let s = r.ops();
    assert_eq!(by(&s.page_reads, Cause::Merge), 3);
    assert_eq!(by(&s.programs, Cause::Merge), 3);
    assert_eq!(by(&s.programs, Cause::Host), 5);
    assert_eq!(by(&s.erases, Cause::Merge), 1);
    assert_eq!(FlashStats::total(&s.erases), 1);
    assert!(r.ftl.pmr.map.is_empty());
    assert!((0..8).all(|l| r.ftl.in_bmr(Lpn(l))));
    assert_eq!(r.ftl.bmr[0], Pbn(0), "in place");
    let st = r.ftl.stats();
    assert_eq!((st.merges_full, st.merge_pages_copied), (1, 3));
    r.verify();
}

#[test]
fn holes_below_the_last_page_of_a_bmr_block_get_filler_pages() {
    let mut r = Rig::new(geo(8, 8, 5), &[]);
    r.write(2, &[0, 1, 2, 3, 7]);
    let s = r.ops();
    assert_eq!(by(&s.programs, Cause::Host), 5);
    assert_eq!(by(&s.programs, Cause::Padding), 3);
    assert_eq!(r.x("filler_programs"), 3.0);
    assert_eq!(
        FlashStats::total(&s.erases),
        0,
        "a fresh block needs no erase"
    );
    assert_eq!(r.read(16 + 5), None);
    r.verify();
}

#[test]
fn sync_gc_moves_the_largest_group_to_the_bmr_when_no_pmr_block_has_an_invalid_page() {
    // PMR of 5 blocks of 4 pages, reserve 3 blocks: the 8th single page finds 13 free
    // pages (<= 12 + 1). No sealed block has an invalid page, so BMR-GC moves the
    // largest group (3 pages of lbn 3) to its BMR block; the first PMR block then holds
    // 1 valid page and PMR-GC reclaims it.
    let mut r = Rig::new(geo(4, 16, 5), &[]);
    assert_eq!(r.x("sync_free_blocks"), 3.0);
    for (lbn, off) in [(3, 0), (3, 1), (3, 2), (5, 0), (6, 0), (7, 0), (8, 0)] {
        r.write(lbn, &[off]);
    }
    assert_eq!(r.ftl.pmr.free_pages(&r.flash), 13);
    assert_eq!(r.x("bmr_gc_sync") + r.x("pmr_gc_sync"), 0.0);
    r.write(9, &[0]);
    assert_eq!(r.x("bmr_gc_sync"), 1.0);
    assert_eq!(r.x("pmr_gc_sync"), 1.0);
    assert_eq!(r.ftl.stats().gc_pages_copied, 1);
    assert!((12..15).all(|l| r.ftl.in_bmr(Lpn(l))));
    assert_eq!(r.ftl.pmr.free_pages(&r.flash), 15);
    assert_eq!(FlashStats::total(&r.ops().erases), 1);
    r.verify();
}

#[test]
fn pmr_gc_min_invalid_sends_gc_to_the_bmr_until_a_block_has_enough_invalid_pages() {
    let mut r = Rig::new(geo(4, 16, 5), &[("pmr_gc_min_invalid", "2")]);
    for (lbn, off) in [(3, 0), (3, 1), (5, 0), (3, 2), (6, 0), (7, 0), (8, 0)] {
        r.write(lbn, &[off]);
    }
    r.write(5, &[0]); // the first block now has 1 invalid page: not enough
    assert_eq!(r.x("bmr_gc_sync"), 1.0);
    assert_eq!(r.x("pmr_gc_sync"), 1.0);
    r.verify();
}

/// Engine over a PMR of 10 blocks of 4 pages, async GC while free pages <= 60%.
fn engine(kv: &[(&str, &str)]) -> Engine {
    let g = geo(4, 16, 10);
    let mut all = vec![("async_free_percent", "60")];
    all.extend_from_slice(kv);
    Engine::new(
        &g,
        lat(),
        Box::new(CachFtl::new(&g, &opts(&all)).unwrap()),
        Box::new(Passthrough::default()),
        Box::new(SerialTiming::new(lat())),
        EngineConfig {
            verify: Verify::Deep { every: 25 },
            ..EngineConfig::default()
        },
    )
}

fn page_write(lpn: u64, at_us: f64) -> Request {
    Request {
        arrival: Nanos::from_us_f64(at_us),
        op: Op::Write,
        offset: lpn * 2048,
        len: 2048,
    }
}

/// A deterministic scatter of single-page writes over the first 32 logical pages.
fn lpn_at(i: u64) -> u64 {
    (i * 37 + i / 7) % 32
}

fn gc_counts(e: &Engine) -> (f64, f64, f64) {
    let x = e.outcome().ftl.extra;
    (
        x["pmr_gc_async"] + x["bmr_gc_async"],
        x["pmr_gc_sync"] + x["bmr_gc_sync"] + x["gc_finished_in_foreground"],
        x["gc_interruptions"],
    )
}

#[test]
fn async_gc_never_runs_without_an_idle_gap() {
    let mut e = engine(&[]);
    for i in 0..300 {
        e.submit(&page_write(lpn_at(i), 0.0)).unwrap();
    }
    let (asynchronous, synchronous, _) = gc_counts(&e);
    assert_eq!(asynchronous, 0.0);
    assert!(synchronous > 0.0);
    e.check_deep().unwrap();
    e.verify_readback().unwrap();
}

#[test]
fn async_gc_in_long_gaps_keeps_every_write_at_one_program() {
    let mut e = engine(&[]);
    let n = 300;
    for i in 0..n {
        e.submit(&page_write(lpn_at(i), i as f64 * 100_000.0))
            .unwrap();
    }
    let (asynchronous, synchronous, _) = gc_counts(&e);
    assert!(asynchronous > 10.0, "{asynchronous}");
    assert_eq!(synchronous, 0.0);
    let host = e.outcome().host;
    assert_eq!(host.response_sum_ns, n as u128 * lat().program.0 as u128);
    e.verify_readback().unwrap();
}

#[test]
fn interrupted_async_gc_never_delays_a_request_that_arrives_after_the_gap() {
    // Gaps of 0.9 ms after three 0.3 ms writes in four fit a few reads or programs but
    // not an erase, so jobs stop at phase boundaries; every fourth gap (20 ms) lets them
    // finish. A request that arrives after the
    // previous one completed and whose own service needed no GC must take exactly its
    // one program: the idle-time work before it never overruns its gap.
    let mut e = engine(&[]);
    let mut now = 0.0;
    let mut checked = 0;
    for i in 0..600 {
        let before = e.outcome();
        let sync_before = gc_counts(&e).1;
        let arrival = Nanos::from_us_f64(now);
        e.submit(&page_write(lpn_at(i), now)).unwrap();
        let after = e.outcome();
        if gc_counts(&e).1 == sync_before && before.host.last_completion <= arrival {
            let rt = after.host.response_sum_ns - before.host.response_sum_ns;
            assert_eq!(rt, lat().program.0 as u128, "request {i}");
            checked += 1;
        }
        now += if i % 4 == 3 { 20_000.0 } else { 1_200.0 };
    }
    let (asynchronous, _, interruptions) = gc_counts(&e);
    assert!(asynchronous > 5.0, "{asynchronous}");
    assert!(interruptions > 5.0, "{interruptions}");
    assert!(checked > 300, "{checked}");
    e.verify_readback().unwrap();
}

/// Threshold 3 on 4-page blocks: lbn 2 written whole to the BMR, then pages 1-2 to
/// the PMR, so an idle-time BMR-GC of lbn 2 reads 2 PMR + 2 BMR pages, erases, and
/// programs 4.
fn rig_for_bmr_gc() -> Rig {
    let mut r = Rig::new(
        geo(4, 16, 10),
        &[("threshold", "3"), ("async_free_percent", "100")],
    );
    r.write(2, &[0, 1, 2, 3]);
    r.write(2, &[1, 2]);
    r
}

#[test]
fn a_bmr_gc_interrupted_after_invalidation_serves_reads_from_ram_until_flushed() {
    let mut r = rig_for_bmr_gc();
    let l = lat();
    r.idle((4 * l.read.0 + l.erase.0) as f64 / 1000.0); // every phase but the program
    assert_eq!(r.x("bmr_gc_async"), 1.0);
    assert_eq!(r.x("gc_interruptions"), 1.0);
    assert!(matches!(r.ftl.job, Some(Job::Bmr { phase: 4, .. })));
    assert!((8..12).all(|l| !r.ftl.in_bmr(Lpn(l)) && r.ftl.pmr.map.get(l).is_none()));
    r.flash.reset_stats();
    for lpn in 8..12 {
        let v = r.version[lpn as usize];
        assert_eq!(r.read(lpn).map(|t| t.version), Some(v));
    }
    assert_eq!(FlashStats::total(&r.ops().page_reads), 0, "served from RAM");
    r.check();
    r.ftl.flush(&mut r.flash);
    assert!(r.ftl.job.is_none());
    assert!((8..12).all(|l| r.ftl.in_bmr(Lpn(l))));
    assert_eq!(FlashStats::total(&r.ops().programs), 4);
    r.verify();
}

#[test]
fn a_host_write_finishes_a_bmr_gc_past_invalidation_and_aborts_one_before() {
    let l = lat();
    // Past invalidation: the write of the same block waits for the job to finish.
    let mut r = rig_for_bmr_gc();
    r.idle((4 * l.read.0 + l.erase.0) as f64 / 1000.0);
    r.write(2, &[3]);
    assert!(r.ftl.job.is_none());
    assert_eq!(r.x("gc_finished_in_foreground"), 1.0);
    r.verify();
    // Before invalidation (only the PMR reads fit): the job is dropped.
    let mut r = rig_for_bmr_gc();
    r.idle((2 * l.read.0) as f64 / 1000.0);
    assert!(matches!(r.ftl.job, Some(Job::Bmr { phase: 1, .. })));
    r.check();
    r.trim(8);
    assert!(r.ftl.job.is_none());
    assert_eq!(r.x("bmr_gc_aborted"), 1.0);
    r.verify();
}

#[test]
fn a_page_overwritten_during_an_interrupted_pmr_gc_is_not_switched_back() {
    let mut r = Rig::new(geo(4, 16, 10), &[("async_free_percent", "100")]);
    for lbn in [1, 2, 3, 4] {
        r.write(lbn, &[0]);
    }
    r.write(1, &[0]); // the first PMR block (sealed) now has 1 invalid page
    let l = lat();
    r.idle((3 * l.read.0 + 3 * l.program.0) as f64 / 1000.0); // read + copy, no erase
    assert!(matches!(r.ftl.job, Some(Job::Pmr { phase: 2, .. })));
    r.check(); // the 3 copies are valid but not mapped yet
    r.write(2, &[0]); // overwrites a copied page
    r.check();
    r.idle(l.erase.0 as f64 / 1000.0);
    assert!(r.ftl.job.is_none());
    assert_eq!(r.x("pmr_gc_async"), 1.0);
    assert_eq!(
        r.ftl.stats().gc_pages_copied,
        2,
        "the overwritten copy was dropped"
    );
    r.verify();
}

#[test]
fn out_of_place_bmr_updates_erase_old_blocks_in_idle_time() {
    let mut r = Rig::new(
        geo(4, 16, 10),
        &[("threshold", "3"), ("bmr_update", "out_of_place")],
    );
    assert_eq!(
        r.x("pmr_blocks"),
        9.0,
        "one over-provisioned block is the BMR spare"
    );
    r.write(0, &[0, 1, 2, 3]);
    assert_eq!(r.ftl.bmr[0], Pbn(25));
    r.write(0, &[0, 1, 2, 3]);
    assert_eq!(r.ftl.bmr[0], Pbn(0));
    assert_eq!(
        FlashStats::total(&r.ops().erases),
        0,
        "no erase in the foreground"
    );
    r.check();
    r.idle(5_000.0);
    assert_eq!(FlashStats::total(&r.ops().erases), 1);
    assert_eq!(r.x("bmr_erases"), 1.0);
    r.write(0, &[0, 1, 2, 3]);
    r.write(0, &[0, 1, 2, 3]); // no idle: the retired block is erased on demand
    assert_eq!(FlashStats::total(&r.ops().erases), 2);
    r.verify();
}

#[test]
fn impossible_options_and_geometries_are_errors_naming_the_fix() {
    type Case<'a> = (&'a [(&'a str, &'a str)], u32, &'a str);
    let cases: &[Case] = &[
        (&[("pmr_percent", "50")], 5, "pmr_percent"),
        (&[("sync_free_blocks", "4")], 5, "sync_free_blocks"),
        (&[("sync_free_blocks", "0")], 5, "sync_free_blocks"),
        (&[("bmr_update", "sideways")], 5, "bmr_update"),
        (&[("pmr_gc_min_invalid", "0")], 5, "pmr_gc_min_invalid"),
        (&[("async_free_percent", "120")], 5, "async_free_percent"),
        (&[("threshold", "-1")], 5, "threshold"),
        (&[], 2, "--op"),
        (&[("bmr_update", "out_of_place")], 3, "--op"),
    ];
    for &(kv, extra, needle) in cases {
        let e = build(&geo(4, 16, extra), kv).err().expect("refused");
        assert!(e.to_string().contains(needle), "{kv:?}: {e}");
    }
}

#[test]
fn mapping_bytes_count_the_bmr_table_its_validity_bits_and_the_pmr_table() {
    // 1 GiB of 4 KiB pages, 64 pages per block, PMR 10% of the flash (--op 11.12).
    let g = GeometryBuilder {
        page_size: 4096,
        pages_per_block: 64,
        spare_bytes: 128,
        logical_bytes: 1 << 30,
        op_percent: 11.12,
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
        min_spare_blocks: 0,
    }
    .build()
    .unwrap();
    assert_eq!((g.logical_blocks(), g.blocks), (4096, 4552));
    let f = CachFtl::new(&g, &opts(&[])).unwrap();
    let pmr_pages = 456 * 64;
    let slots = pmr_pages + pmr_pages / 3 + 1;
    assert_eq!(f.mapping_bytes(), 4096 * 4 + 262_144 / 8 + slots as u64 * 8);
    assert_eq!(f.paper_map_bytes(), (4096 + pmr_pages as u64) * 4);
}

#[test]
fn random_groups_trims_and_idle_gaps_keep_every_write() {
    for (seed, ppb, kv) in [
        (1u64, 4u32, vec![]),
        (2, 8, vec![("async_free_percent", "70")]),
        (
            3,
            4,
            vec![("bmr_update", "out_of_place"), ("async_free_percent", "50")],
        ),
        (4, 8, vec![("threshold", "1"), ("pmr_gc_min_invalid", "3")]),
        (5, 4, vec![("async_gc", "false"), ("threshold", "0")]),
    ] {
        let mut r = Rig::new(geo(ppb, 24, 6), &kv);
        let mut rng = SplitMix64::new(seed);
        for step in 0..6000 {
            let k = rng.below(10);
            r.random_step(&mut rng, k, &format!("seed {seed} step {step}"));
            if step % 50 == 0 {
                r.check();
            }
        }
        r.verify();
        let s = r.ftl.stats();
        let pmr_used = r.x("pmr_groups") > 0.0;
        assert!(
            s.gc_invocations > 20 || !pmr_used,
            "seed {seed}: {}",
            s.gc_invocations
        );
        assert!(r.x("bmr_updates") > 20.0, "seed {seed}");
    }
}

// ----- power-loss recovery -----

#[test]
fn recovery_maps_bmr_and_pmr_copies_by_newest_version_and_never_a_filler() {
    for kv in [
        &[("threshold", "1")][..],
        &[("threshold", "1"), ("bmr_update", "out_of_place")],
    ] {
        let mut r = Rig::new(geo(4, 16, 10), kv);
        r.write(2, &[0, 1, 2, 3]); // BMR
        r.write(2, &[1]); // PMR, newer than the BMR copy
        r.write(4, &[2, 3]); // BMR, fillers at offsets 0 and 1
        r.write(6, &[0]);
        r.write(6, &[0]); // PMR twice: the newer copy wins
        r.write(2, &[2, 3]); // BMR update: rewrites the block with the PMR copy of lpn 9
        r.write(7, &[3]);
        let programmed = r.programmed();
        assert!(r.power_loss().is_empty());
        assert_eq!(r.recovery_ops(), (programmed, 0, 0), "{kv:?}");
        assert_eq!(FlashStats::total(&r.ops().page_reads), 0);
        r.verify();
        assert!(
            r.ftl.in_bmr(Lpn(9)),
            "the BMR copy wins the tie with its PMR source"
        );
        assert!(r.ftl.pmr.map.get(24).is_some() && !r.ftl.in_bmr(Lpn(24)));
        for lpn in [16, 17] {
            assert_eq!(r.read(lpn), None, "{kv:?}: filler of lpn{lpn} mapped");
        }
        // The recovered FTL goes on: BMR updates, PMR writes, GC.
        for round in 0..40 {
            r.write(round % 16, &[round % 4]);
            r.write((round * 7) % 16, &[0, 1, 2]);
        }
        r.verify();
    }
}

/// An idle gap of the serial cost of `reads`, `programs` and `erases`, in µs.
fn gap(reads: u64, programs: u64, erases: u64) -> f64 {
    let l = lat();
    (reads * l.read.0 + programs * l.program.0 + erases * l.erase.0) as f64 / 1000.0
}

/// rig_for_bmr_gc with extra options.
fn rig_for_bmr_gc_with(kv: &[(&str, &str)]) -> Rig {
    let mut all = vec![("threshold", "3"), ("async_free_percent", "100")];
    all.extend_from_slice(kv);
    let mut r = Rig::new(geo(4, 16, 10), &all);
    r.write(2, &[0, 1, 2, 3]);
    r.write(2, &[1, 2]);
    r
}

#[test]
fn a_power_loss_after_an_in_place_bmr_gc_erase_loses_the_blocks_bmr_pages_and_says_so() {
    // lbn 2's offsets 1 and 2 are in the PMR, 0 and 3 only in the BMR. The gaps stop
    // the idle-time BMR-GC after its PMR reads, after its invalidation (phase 2 costs
    // nothing) and after its erase.
    type Case<'a> = (&'a [(&'a str, &'a str)], [Option<u8>; 3]);
    let cases: [Case; 3] = [
        (&[], [Some(1), Some(3), Some(4)]),
        // Out of place, phase 3 takes the erased spare (no erase), so the last gap
        // fits the program too and the job ends.
        (&[("bmr_update", "out_of_place")], [Some(1), Some(4), None]),
        // The erase waits for a gap that also fits the program.
        (
            &[("power_safe_bmr_gc", "true")],
            [Some(1), Some(3), Some(3)],
        ),
    ];
    let gaps = [gap(2, 0, 0), gap(4, 0, 0), gap(4, 0, 1)];
    for (kv, phases) in cases {
        for (&budget, &want) in gaps.iter().zip(&phases) {
            let mut r = rig_for_bmr_gc_with(kv);
            r.idle(budget);
            let phase = match r.ftl.job {
                Some(Job::Bmr { phase, .. }) => Some(phase),
                None => None,
                other => panic!("{kv:?}: {other:?}"),
            };
            assert_eq!(phase, want, "{kv:?}");
            let lost = r.power_loss();
            if phase == Some(4) && kv.is_empty() {
                assert_eq!(lost, vec![Lpn(8), Lpn(11)], "the BMR copies were erased");
                assert_eq!(r.read(8), None);
                assert_eq!(r.read(11), None);
            } else {
                assert!(lost.is_empty(), "{kv:?} phase {phase:?}: {lost:?}");
            }
            assert!(r.ftl.job.is_none(), "pending jobs are RAM state");
            r.verify();
            r.write(2, &[0, 1, 2, 3]);
            r.write(3, &[1]);
            r.idle(100_000.0);
            r.verify();
        }
    }
}

/// Regression: after a power loss between a PMR-GC's copy and its switch, both copies
/// are on flash, recovery maps the first (the victim's), and the free pages no longer
/// cover the victim's valid pages: the next synchronous GC must not pick it (it ran
/// out of PMR blocks mid-copy) but move a group to the BMR.
#[test]
fn a_power_loss_between_a_pmr_gc_copy_and_its_switch_leaves_gc_room_to_work() {
    // A PMR of 3 blocks (16, 17, 18) and a reserve of 1 block.
    let mut r = Rig::new(geo(4, 16, 3), &[("async_free_percent", "100")]);
    for lbn in 1..=4 {
        r.write(lbn, &[0]); // block 16 full
    }
    r.write(1, &[0]); // block 16 has an invalid page
    r.write(5, &[0]);
    r.write(6, &[0]); // block 17 holds 3 pages: 5 free pages left
    r.idle(gap(3, 3, 0)); // read and copy block 16's 3 valid pages, no erase
    assert!(matches!(r.ftl.job, Some(Job::Pmr { phase: 2, .. })));
    assert!(r.power_loss().is_empty());
    assert_eq!(r.ftl.pmr.free_pages(&r.flash), 2);
    assert_eq!(r.flash.valid_count(Pbn(16)), 3, "the sources won the tie");
    r.verify();
    r.write(7, &[0]);
    assert_eq!(
        r.x("bmr_gc_sync"),
        1.0,
        "the victim did not fit: BMR-GC ran"
    );
    r.verify();
    for round in 0..60 {
        r.write(round % 16, &[round % 4]);
    }
    r.verify();
}

#[test]
fn a_power_loss_in_each_phase_of_an_idle_pmr_gc_keeps_every_write() {
    // Block 16 is sealed with 3 valid pages: the gaps stop before its reads, after
    // them, after the copies, and after the switch and erase.
    let cases = [
        (gap(1, 0, 0), None),
        (gap(3, 0, 0), Some(1)),
        (gap(3, 3, 0), Some(2)),
        (gap(3, 3, 1), None),
    ];
    for (budget, pending) in cases {
        let mut r = Rig::new(geo(4, 16, 10), &[("async_free_percent", "100")]);
        for lbn in [1, 2, 3, 4] {
            r.write(lbn, &[0]);
        }
        r.write(1, &[0]);
        r.idle(budget);
        let phase = match r.ftl.job {
            Some(Job::Pmr { phase, .. }) => Some(phase),
            None => None,
            other => panic!("{other:?}"),
        };
        assert_eq!(phase, pending);
        assert!(r.power_loss().is_empty());
        assert!(r.ftl.job.is_none());
        r.verify();
        r.write(2, &[0]);
        r.idle(100_000.0);
        r.verify();
    }
}

/// Regression for an ambiguity of out-of-place recovery: a retired block kept lpn 0,
/// trimmed before the update that made the current block; the current block holds
/// lpn 1. Neither block holds every newest copy and no tag orders them, so recovery
/// merges both into one block.
#[test]
fn out_of_place_recovery_merges_blocks_when_none_holds_every_newest_copy() {
    let kv = [("threshold", "0"), ("bmr_update", "out_of_place")];
    let mut r = Rig::new(geo(4, 16, 10), &kv);
    r.write(0, &[0]);
    r.trim(0);
    r.write(0, &[1]); // the new image: a filler at offset 0, lpn 1 at offset 1
    assert_eq!(r.ftl.retired.len(), 1, "no idle gap: the old block waits");
    assert!(r.power_loss().is_empty());
    let (spare_reads, programs, erases) = r.recovery_ops();
    assert_eq!(spare_reads, 3);
    assert_eq!(
        (programs, erases),
        (2, 1),
        "lpn 0 and lpn 1 merged into one block"
    );
    assert_eq!(r.flash.stats().page_reads[Cause::Recovery as usize], 2);
    assert_eq!(r.read(1).map(|t| t.version), Some(1));
    assert_eq!(r.read(0).map(|t| t.version), Some(1), "the trim is undone");
    r.verify();
    // When the current block holds every newest copy, it is simply adopted.
    let mut r = Rig::new(geo(4, 16, 10), &kv);
    r.write(0, &[0, 1]);
    r.write(0, &[0]);
    let retired = r.ftl.retired[0];
    let current = r.ftl.bmr[0];
    assert!(r.power_loss().is_empty());
    assert_eq!(r.recovery_ops(), (4, 0, 0));
    assert_eq!(r.ftl.bmr[0], current);
    assert_eq!(
        r.ftl.retired.iter().copied().collect::<Vec<_>>(),
        vec![retired]
    );
    r.verify();
    r.write(0, &[2]); // takes the spare, erasing nothing
    r.write(0, &[3]); // erases the retired block on demand
    r.verify();
}

#[test]
fn recovery_refuses_flash_the_scheme_cannot_have_written() {
    let g = geo(4, 16, 10);
    let tag = |lpn, version| PageTag {
        lpn: Lpn(lpn),
        version,
    };
    let cases: [&[(u32, PageTag)]; 4] = [
        &[(0, tag(1, 1))],                   // BMR block 0 holds lpn 1 at offset 0
        &[(8, tag(0, 1))],                   // BMR block 2 holds lbn 0's page
        &[(64, tag(9999, 1))],               // beyond the capacity
        &[(64, tag(5, 1)), (68, tag(6, 1))], // two partly written PMR blocks
    ];
    for case in cases {
        let mut f = Flash::new(&g);
        for &(ppn, t) in case {
            f.program(Ppn(ppn), t, Cause::Host);
        }
        f.power_cycle();
        let e = CachFtl::new(&g, &opts(&[]))
            .unwrap()
            .recover(&mut f)
            .unwrap_err();
        assert!(matches!(e, RecoverError::Failed(_)), "{case:?}: {e}");
    }
}

#[test]
fn random_power_losses_keep_every_write() {
    for (seed, ppb, kv) in [
        (11u64, 4u32, vec![]),
        (12, 8, vec![("async_free_percent", "70")]),
        (
            13,
            4,
            vec![("bmr_update", "out_of_place"), ("async_free_percent", "50")],
        ),
        (14, 8, vec![("threshold", "1"), ("pmr_gc_min_invalid", "3")]),
        (
            15,
            4,
            vec![("power_safe_bmr_gc", "true"), ("async_free_percent", "100")],
        ),
        (
            16,
            4,
            vec![
                ("threshold", "0"),
                ("bmr_update", "out_of_place"),
                ("async_gc", "false"),
            ],
        ),
    ] {
        let mut r = Rig::new(geo(ppb, 24, 6), &kv);
        let mut rng = SplitMix64::new(seed);
        let pages = r.geo.logical_pages as u64;
        let (mut losses, mut lost, mut merges) = (0, 0, 0);
        for step in 0..8000 {
            match rng.below(12) {
                0..=5 => {
                    let lbn = rng.below(pages / ppb as u64) as u32;
                    let offs: Vec<u32> = (0..ppb).filter(|_| rng.below(3) == 0).collect();
                    if !offs.is_empty() {
                        r.write(lbn, &offs);
                    }
                }
                6 => r.trim(rng.below(pages) as u32),
                7 | 8 => r.idle(rng.below(8000) as f64),
                9 => {
                    let lpn = rng.below(pages) as u32;
                    let got = r.read(lpn).map(|t| t.version);
                    assert!(
                        r.acceptable(lpn, got),
                        "seed {seed} step {step}: lpn{lpn} {got:?}"
                    );
                }
                10 => r.ftl.flush(&mut r.flash),
                _ if rng.below(8) == 0 => {
                    let programmed = r.programmed();
                    lost += r.power_loss().len();
                    losses += 1;
                    let (spare_reads, _, erases) = r.recovery_ops();
                    assert_eq!(spare_reads, programmed, "seed {seed}");
                    merges += erases;
                    r.verify();
                }
                _ => {}
            }
            if step % 50 == 0 {
                r.check();
            }
        }
        r.verify();
        assert!(losses > 50, "seed {seed}: {losses} power losses");
        let paper_window = !kv
            .iter()
            .any(|&(k, _)| k == "bmr_update" || k == "power_safe_bmr_gc");
        if !paper_window {
            assert_eq!(lost, 0, "seed {seed}: no data only in RAM");
        }
        eprintln!("seed {seed}: {losses} power losses, {lost} pages lost, {merges} merges");
        if seed == 16 {
            assert!(
                merges > 0,
                "out of place without idle GC: retired blocks are merged"
            );
        }
    }
}

/// Static levelling (`wear_leveling = "static"`, wl_threshold 4): 32 logical blocks of 8
/// pages, 8 PMR blocks, 3,000 groups of 1 to 6 pages, 95% of them into the first 4
/// logical blocks. Out of place the BMR's spread (its blocks only: the PMR is a region
/// of its own) narrows against dynamic levelling, blocks move, at a measured WAF; every
/// write reads back, before and after a power loss. In place a BMR block's address is
/// its logical block's, so only the PMR can level. Returns (BMR spread, WAF, moves).
fn levelled(kv: &[(&str, &str)]) -> (u32, f64, f64) {
    let g = geo(8, 32, 9);
    let mut r = Rig::new(g.clone(), kv);
    let mut rng = SplitMix64::new(3);
    for lbn in 0..32 {
        r.write(lbn, &(0..8).collect::<Vec<_>>());
    }
    for _ in 0..3000 {
        let lbn = if rng.below(100) < 95 {
            rng.below(4)
        } else {
            rng.below(32)
        } as u32;
        let n = 1 + rng.below(6) as u32;
        let off = rng.below((8 - n + 1) as u64) as u32;
        r.write(lbn, &(off..off + n).collect::<Vec<_>>());
    }
    r.verify();
    let s = r.flash.stats();
    let waf = FlashStats::total(&s.programs) as f64 / s.programs[Cause::Host as usize] as f64;
    let bmr: Vec<u32> = (0..g.blocks)
        .filter(|&b| !r.ftl.pmr.owns(Pbn(b)))
        .map(|b| r.flash.erase_count(Pbn(b)))
        .collect();
    let spread = bmr.iter().max().unwrap() - bmr.iter().min().unwrap();
    let moved = r.ftl.stats().extra.get("wl_migrations").unwrap_or(0.0);
    r.power_loss();
    r.verify();
    (spread, waf, moved)
}

#[test]
fn static_levelling_narrows_the_bmr_spread_out_of_place_at_a_waf_cost() {
    let oop = ("bmr_update", "out_of_place");
    let th = ("wl_threshold", "4");
    let (dynamic, waf_dyn, _) = levelled(&[oop, ("wear_leveling", "dynamic")]);
    let (statik, waf, moved) = levelled(&[oop, ("wear_leveling", "static"), th]);
    println!(
        "BMR spread dynamic {dynamic}, static {statik}; WAF {waf_dyn:.3}, {waf:.3}; moves \
         {moved}"
    );
    assert!(moved > 0.0);
    assert!(
        statik < dynamic && statik <= 4 + 2,
        "{statik} against {dynamic}"
    );
    assert!(waf < waf_dyn * 2.0, "WAF {waf:.3} against {waf_dyn:.3}");
    // In place static levelling works on too (the PMR's levelling).
    let (_, _, _) = levelled(&[("wear_leveling", "static"), th]);
}

// ----- die-aware allocation of the PMR (issue 22 item 3) -----

/// [`geo`] on 4 dies (2 channels x 2).
fn geo4(ppb: u32, logical: u32, extra: u32) -> Geometry {
    GeometryBuilder {
        channels: 2,
        dies_per_channel: 2,
        ..geo_builder(ppb, logical, extra)
    }
    .build()
    .unwrap()
}

/// The dies (`pbn % 4`) of the PMR copies of `lpns`.
fn pmr_dies(r: &Rig, lpns: &[u32]) -> Vec<u32> {
    let ppb = r.geo.pages_per_block;
    lpns.iter()
        .map(|&l| r.ftl.pmr.map.get(l).expect("in the PMR") / ppb % 4)
        .collect()
}

#[test]
fn die_alloc_deals_pmr_pages_over_the_dies() {
    // Four one-page groups (PMR writes) of four logical blocks: dealt to dies 0-3 in
    // turn, or to die LPN % 4; `single` keeps the one frontier (one die).
    let lpns = [4 * 4 + 1, 5 * 4 + 2, 6 * 4 + 3, 7 * 4];
    for (alloc, dies) in [
        ("round_robin", vec![0, 1, 2, 3]),
        ("static", lpns.iter().map(|l| l % 4).collect()),
        ("least_busy", vec![0, 1, 2, 3]), // no die clock: in turn
        ("single", vec![0, 0, 0, 0]),
    ] {
        let mut r = Rig::new(geo4(4, 16, 16), &[("die_alloc", alloc)]);
        for &l in &lpns {
            r.write(l / 4, &[l % 4]);
        }
        assert_eq!(pmr_dies(&r, &lpns), dies, "{alloc}");
        r.verify();
    }
}

#[test]
fn die_alloc_keeps_every_write_through_gc_idle_time_and_power_losses() {
    for (alloc, scope) in [
        ("round_robin", "global"),
        ("static", "global"),
        ("least_busy", "global"),
        ("round_robin", "per_die"),
        ("static", "per_die"),
    ] {
        let alloc_scope = format!("{alloc} gc_scope {scope}");
        let alloc = alloc_scope.as_str();
        for (seed, kv) in [
            (1u64, vec![]),
            (2, vec![("async_free_percent", "70")]),
            (3, vec![("bmr_update", "out_of_place")]),
            (4, vec![("threshold", "1"), ("power_safe_bmr_gc", "true")]),
            (5, vec![("async_gc", "false"), ("wear_leveling", "static")]),
        ] {
            let mut kv = kv.clone();
            kv.push(("die_alloc", alloc.split(' ').next().unwrap()));
            kv.push(("gc_scope", scope));
            let ppb = 4;
            let mut r = Rig::new(geo4(ppb, 24, 16), &kv);
            let mut rng = SplitMix64::new(seed);
            let (mut losses, mut reopened) = (0, 0);
            for step in 0..6000 {
                let k = rng.below(11);
                if k == 9 && rng.below(40) == 0 {
                    // Recovery reopens the partly written PMR blocks, one per die.
                    r.power_loss();
                    losses += 1;
                    reopened = reopened.max(r.ftl.pmr.open_blocks());
                } else {
                    r.random_step(&mut rng, k, &format!("{alloc} seed {seed} step {step}"));
                }
                if step % 50 == 0 {
                    r.check();
                }
            }
            r.verify();
            let s = r.ftl.stats();
            assert!(
                s.gc_invocations > 20,
                "{alloc} seed {seed}: {}",
                s.gc_invocations
            );
            assert!(
                losses >= 5 && reopened >= 2,
                "{alloc} seed {seed}: {losses} {reopened}"
            );
            // The PMR's pages are on every die.
            let mut on = [0u32; 4];
            for (_, ppn) in r.ftl.pmr.map.iter() {
                on[(ppn / ppb % 4) as usize] += 1;
            }
            assert!(
                r.ftl.pmr.map.len() < 8 || on.iter().filter(|&&n| n > 0).count() >= 2,
                "{alloc} seed {seed}: {on:?}"
            );
        }
    }
}

#[test]
fn die_alloc_needs_a_pmr_block_per_die_and_its_margin_and_names_it() {
    // 4 dies: 4 active blocks, 3 of margin, one for a group and one of reserve: 10.
    let e = build(&geo4(4, 16, 9), &[("die_alloc", "round_robin")])
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("at least 10 blocks") && e.contains("die_alloc"),
        "{e}"
    );
    let c = build(&geo4(4, 16, 10), &[("die_alloc", "round_robin")]).unwrap();
    assert_eq!(c.sync_free_blocks, 1);
    // Under serial timing's one die every allocation is `single`'s.
    build(&geo(4, 16, 3), &[("die_alloc", "round_robin")]).unwrap();
}

// ----- GC per die of the PMR (issue 22 item 3) -----

/// How many valid pages PMR-GC's victim under `gc_scope = "per_die"` must have,
/// computed from the flash: the fewest of the sealed PMR blocks with an invalid page
/// whose valid pages fit the free tail of their die's active block; if there is none,
/// no victim while the PMR holds pages (BMR-GC runs), else the global victim's.
fn expected_die_victim(r: &Rig) -> Option<u32> {
    let ppb = r.geo.pages_per_block;
    let sealed = (0..r.geo.blocks)
        .map(Pbn)
        .filter(|&b| r.ftl.pmr.is_sealed(b) && r.flash.valid_count(b) < ppb);
    let fitting = sealed
        .clone()
        .map(|b| r.flash.valid_count(b))
        .zip(
            sealed
                .clone()
                .map(|b| r.ftl.pmr.tail(&r.flash, (b.0 % 4) as usize)),
        )
        .filter(|&(v, tail)| v <= tail)
        .map(|(v, _)| v)
        .min();
    if fitting.is_some() || !r.ftl.pmr.map.is_empty() {
        return fitting;
    }
    sealed.map(|b| r.flash.valid_count(b)).min()
}

#[test]
fn gc_per_die_takes_victims_whose_copies_fit_their_die_and_keeps_the_copies_there() {
    // Every group goes to the PMR (threshold = pages per block) and GC runs only in the
    // foreground, so each PMR-GC is a whole collection inside a write.
    for (alloc, scope) in [
        ("round_robin", "per_die"),
        ("static", "per_die"),
        ("least_busy", "per_die"),
        ("round_robin", "global"),
    ] {
        let kv = [
            ("die_alloc", alloc),
            ("gc_scope", scope),
            ("threshold", "8"),
            ("async_gc", "false"),
        ];
        let ppb = 8;
        let mut r = Rig::new(geo4(ppb, 32, 24), &kv);
        let mut rng = SplitMix64::new(7);
        let (mut moved, mut moved_off_die) = (0u32, 0u32);
        let mut before = vec![u32::MAX; r.geo.logical_pages as usize];
        for step in 0..4000 {
            if scope == "per_die" && step % 10 == 0 {
                let got = r.ftl.pmr.victim(&r.flash, u32::MAX);
                assert_eq!(
                    got.map(|(_, v)| v),
                    expected_die_victim(&r),
                    "{alloc} step {step}"
                );
                if let Some((b, v)) = got {
                    let tail = r.ftl.pmr.tail(&r.flash, (b.0 % 4) as usize);
                    assert!(v <= tail || r.ftl.pmr.map.is_empty(), "{alloc} step {step}");
                }
                // The room filter: a victim's valid pages must fit the free pages.
                let free = r.ftl.pmr.free_pages(&r.flash);
                let got = r.ftl.pmr.victim(&r.flash, free);
                assert!(got.is_none_or(|(_, v)| v <= free));
            }
            for (l, p) in before.iter_mut().enumerate() {
                *p = r.ftl.pmr.map.get(l as u32).unwrap_or(u32::MAX);
            }
            let lbn = rng.below(32) as u32;
            let offs: Vec<u32> = (0..ppb).filter(|_| rng.below(3) == 0).collect();
            if offs.is_empty() {
                continue;
            }
            r.write(lbn, &offs);
            // Pages this write did not touch that PMR-GC moved: on the same die?
            for (l, &was) in before.iter().enumerate() {
                let l = l as u32;
                if was == u32::MAX || (l / ppb == lbn && offs.contains(&(l % ppb))) {
                    continue;
                }
                if let Some(now) = r.ftl.pmr.map.get(l) {
                    if now != was {
                        moved += 1;
                        moved_off_die += u32::from(now / ppb % 4 != was / ppb % 4);
                    }
                }
            }
        }
        r.verify();
        assert!(moved > 500, "{alloc} {scope}: {moved} GC copies");
        if scope == "per_die" {
            // Only into a block borrowed from another die when the victim's die had
            // none free.
            let borrowed = r.x("gc_copies_off_die") as u32;
            assert!(
                moved_off_die <= borrowed && borrowed * 10 < moved,
                "{alloc}: {moved_off_die} copies left their die, {borrowed} borrowed, of {moved}"
            );
        } else {
            // Dealt by the allocation, copies do change dies (the check above can fail).
            assert!(moved_off_die > moved / 4, "{moved_off_die} of {moved}");
        }
    }
}

#[test]
fn gc_per_die_needs_a_multi_die_allocation_and_names_both_options() {
    for (g, alloc) in [
        (geo4(4, 16, 16), "single"),
        (geo(4, 16, 16), "round_robin"), // one die (serial timing)
    ] {
        let e = build(&g, &[("die_alloc", alloc), ("gc_scope", "per_die")])
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.contains("gc_scope") && e.contains("die_alloc"),
            "{alloc}: {e}"
        );
    }
    build(
        &geo4(4, 16, 16),
        &[("die_alloc", "static"), ("gc_scope", "per_die")],
    )
    .unwrap();
}

/// PMR-GC's phase 1 programs a victim's copies a run per block (`Pmr::program_copies`);
/// that must leave what as many `Pmr::program` calls leave: the same pages, the
/// same blocks opened and sealed, the same flash counts. Runs of every length from 0 to
/// three blocks and a half, from every frontier offset, so runs start mid-block, end on
/// a block's last page and cross several blocks.
#[test]
fn pmr_copies_in_runs_program_what_page_by_page_copies_would() {
    let g = geo(8, 16, 12);
    let logical = g.logical_blocks();
    let new_pmr = || {
        Pmr::new(
            &g,
            Pbn(logical),
            12,
            1,
            false,
            ftlab_core::wear::Retirement::off(),
            DieAlloc::Single,
        )
    };
    let victim = Pbn(logical);
    for lead in 0..8u32 {
        for n in 0..28u32 {
            let (mut fa, mut fb) = (Flash::new(&g), Flash::new(&g));
            let (mut a, mut b) = (new_pmr(), new_pmr());
            // The frontier `lead` pages into a block.
            for l in 0..lead {
                let tag = PageTag {
                    lpn: Lpn(l),
                    version: 1,
                };
                assert_eq!(
                    a.program(&mut fa, tag, Cause::Host),
                    b.program(&mut fb, tag, Cause::Host)
                );
            }
            let tags: Vec<PageTag> = (0..n)
                .map(|i| PageTag {
                    lpn: Lpn(100 + i),
                    version: 2,
                })
                .collect();
            let one: Vec<Ppn> = tags
                .iter()
                .map(|&t| a.program(&mut fa, t, Cause::Gc))
                .collect();
            let s = b.copy_stream(victim).expect("one frontier");
            let mut runs = Vec::new();
            b.program_copies(&mut fb, s, &tags, &mut runs);
            assert_eq!(one, runs, "lead {lead}, {n} copies");
            assert_eq!(fa.stats(), fb.stats(), "lead {lead}, {n} copies");
            for pbn in (0..g.blocks).map(Pbn) {
                assert_eq!(fa.write_ptr(pbn), fb.write_ptr(pbn));
                assert_eq!(fa.valid_count(pbn), fb.valid_count(pbn));
                assert_eq!(a.is_sealed(pbn), b.is_sealed(pbn), "{pbn:?}");
                assert_eq!(a.is_active(pbn), b.is_active(pbn), "{pbn:?}");
            }
            for ppn in &one {
                assert_eq!(fa.peek_tag(*ppn), fb.peek_tag(*ppn));
            }
            assert_eq!(a.free_pages(&fa), b.free_pages(&fb));
        }
    }
}

/// PMR-GC's all-live path (every page phase 0 read is still valid: the copies go
/// without a liveness test per page) leaves what the page-by-page path leaves: the
/// same flash counts, times and pages, the same statistics and the same reads, under
/// random writes, trims, idle gaps (background PMR-GC, whose pages a host write may
/// overwrite between phases) and both BMR update modes, on one die and on four (the
/// copies page by page under a multi-die allocation, on the victim's die under GC per
/// die).
#[test]
fn pmr_gc_all_live_path_equals_the_page_by_page_path() {
    let rr = ("die_alloc", "round_robin");
    for (seed, g, kv) in [
        (11u64, geo(8, 24, 6), vec![]),
        (12, geo(4, 24, 6), vec![("async_free_percent", "70")]),
        (13, geo(8, 24, 6), vec![("bmr_update", "out_of_place")]),
        (
            14,
            geo(8, 24, 6),
            vec![("threshold", "1"), ("pmr_gc_min_invalid", "1")],
        ),
        (15, geo4(8, 32, 24), vec![rr]),
        (16, geo4(8, 32, 24), vec![rr, ("gc_scope", "per_die")]),
    ] {
        let (mut a, mut b) = (Rig::new(g.clone(), &kv), Rig::new(g, &kv));
        b.ftl.pmr_gc_by_page = true;
        let (mut ra, mut rb) = (SplitMix64::new(seed), SplitMix64::new(seed));
        for step in 0..6000 {
            let (ka, kb) = (ra.below(10), rb.below(10));
            let what = format!("seed {seed} step {step}");
            a.random_step(&mut ra, ka, &what);
            b.random_step(&mut rb, kb, &what);
            assert_eq!(a.ops(), b.ops(), "{what}");
        }
        a.verify();
        b.verify();
        assert_eq!(a.ftl.stats(), b.ftl.stats(), "seed {seed}");
        assert!(a.ftl.stats().gc_invocations > 20, "seed {seed}: PMR-GC ran");
        for p in (0..a.geo.physical_pages()).map(Ppn) {
            assert_eq!(
                a.flash.peek_tag(p),
                b.flash.peek_tag(p),
                "seed {seed} {p:?}"
            );
            assert_eq!(
                a.flash.is_valid(p),
                b.flash.is_valid(p),
                "seed {seed} {p:?}"
            );
        }
    }
}
