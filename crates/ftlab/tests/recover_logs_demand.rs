//! Power-loss recovery of `bast`, `fast`, `dftl` and `tpm`: power losses every few
//! hundred requests of the testkit mix and at random points, on the tiny, small and
//! realistic profiles, with default and other options (tiny CMTs, no SW log, several SW
//! logs, the CO-OP options under the buffers they are made for), under the oracle and
//! deep checks (also right after each recovery), and a recovery cost that matches the
//! flash it scanned.

use ftlab::config::Config;
use ftlab::sim::{build_schemes, prepare, run};
use ftlab::testkit::{config, Mix, MixConfig, PROFILES};
use ftlab::NoObserver;
use ftlab_core::engine::Recovery;
use ftlab_core::flash::{Cause, Flash, FlashStats};
use ftlab_core::nand::Latencies;
use ftlab_core::{Pbn, Ppn};

type Opts = &'static [(&'static str, &'static str)];

/// One option set: FTL, buffer above it, options.
struct Variant {
    ftl: &'static str,
    buffer: &'static str,
    opts: Opts,
}

const fn v(ftl: &'static str, buffer: &'static str, opts: Opts) -> Variant {
    Variant { ftl, buffer, opts }
}

/// Every option set the sweeps run. Each passes on every profile.
const VARIANTS: &[Variant] = &[
    v("bast", "none", &[]),
    v("bast", "none", &[("log_blocks", "1")]),
    v("bast", "none", &[("osm", "true")]),
    v("bast", "coop", &[("osm", "true")]),
    v("bast", "bplru", &[("osm", "true")]),
    v("bast", "bagc", &[("ba_gc", "true")]),
    v("fast", "none", &[]),
    v("fast", "none", &[("sw_logs", "0")]),
    v("fast", "none", &[("sw_logs", "2"), ("rw_adapt", "false")]),
    v("fast", "none", &[("osm", "true")]),
    v("fast", "coop", &[("osm", "true")]),
    v("fast", "bplru", &[("osm", "true")]),
    v("fast", "bagc", &[("ba_gc", "true")]),
    v("dftl", "none", &[]),
    v(
        "dftl",
        "none",
        &[("cmt_bytes", "8"), ("entries_per_page", "64")],
    ),
    v("dftl", "lru", &[("cmt_bytes", "64")]),
    v("tpm", "none", &[]),
    v(
        "tpm",
        "none",
        &[("cmt_bytes", "256"), ("entries_per_page", "64")],
    ),
    v(
        "tpm",
        "none",
        &[
            ("cmt_bytes", "256"),
            ("entries_per_page", "64"),
            ("write_pointers", "1"),
        ],
    ),
];

const REQUESTS: u64 = 6000;
const EVERY: u64 = 300;

fn cfg(var: &Variant, profile: usize, seed: u64) -> Config {
    let p = &PROFILES[profile];
    let mut cfg = config(var.ftl, var.buffer, p, seed);
    cfg.mix = Some(MixConfig {
        requests: REQUESTS,
        max_pages: p.max_pages,
        ..MixConfig::default()
    });
    for (k, v) in var.opts {
        cfg.ftl_options
            .insert(k.to_string(), ftlab_core::options::value_of_text(v));
    }
    cfg
}

fn block_mapped(ftl: &str) -> bool {
    ftlab::registry::ftl(ftl).is_some_and(|e| e.caps.block_mapped)
}

/// The serial time of a recovery's operations.
fn serial_ns(f: &FlashStats, l: &Latencies) -> u64 {
    let t = FlashStats::total;
    t(&f.page_reads) * l.read.0
        + t(&f.spare_reads) * l.spare_read.0
        + t(&f.programs) * l.program.0
        + t(&f.erases) * l.erase.0
}

fn programmed_pages(f: &Flash) -> u64 {
    let blocks = f.geometry().blocks;
    (0..blocks).map(|b| f.write_ptr(Pbn(b)) as u64).sum()
}

/// Valid translation pages (spare tag `1 << 31 | tpage`) on the device.
fn translation_pages_on_flash(f: &Flash) -> u64 {
    let pages = f.geometry().physical_pages();
    (0..pages)
        .map(Ppn)
        .filter(|&p| f.is_valid(p) && f.peek_tag(p).is_some_and(|t| t.lpn.0 & 1 << 31 != 0))
        .count() as u64
}

#[test]
fn logs_and_demand_paging_recover_at_many_points_on_every_profile() {
    let every: Vec<String> = (1..REQUESTS / EVERY)
        .map(|k| (k * EVERY).to_string())
        .collect();
    for var in VARIANTS {
        let (ftl, opts) = (var.ftl, var.opts);
        for (profile, p) in PROFILES.iter().enumerate() {
            // Defaults with two seeds, the other option sets with one.
            let seeds = if opts.is_empty() && var.buffer == "none" {
                1..=2
            } else {
                3..=3
            };
            for seed in seeds {
                let mut c = cfg(var, profile, seed);
                c.power_loss = vec![every.join(","), "random:6".into()];
                let prepared = prepare(&c).unwrap();
                let lat = prepared.latencies;
                let physical = prepared.geo.physical_pages() as u64;
                let at = format!("{ftl} {} {opts:?} {} seed {seed}", var.buffer, p.name);
                let out = run(&c, &mut NoObserver)
                    .unwrap_or_else(|e| panic!("{at}: recovery must work: {e}"));
                assert!(out.failure.is_none(), "{at}: {:?}", out.failure);
                let pl = &out.report.power_loss;
                assert!(pl.events >= (REQUESTS / EVERY - 1), "{at}: {}", pl.events);
                if var.buffer == "none" {
                    assert_eq!(pl.lost_pages, 0, "{at}: no buffer, nothing volatile");
                }
                for e in &pl.per_event {
                    let r = &e.recovery;
                    // A buffer may still hold every page written before the loss.
                    assert!(
                        (r.spare_reads > 0 || var.buffer != "none") && r.spare_reads <= physical,
                        "{at}: {r:?}"
                    );
                    if block_mapped(ftl) {
                        assert_eq!(
                            (r.page_reads, r.page_programs, r.block_erases),
                            (0, 0, 0),
                            "{at}: a block-mapped recovery only reads spare areas"
                        );
                    } else {
                        // Translation pages on flash rewritten, plus any GC they needed.
                        assert!(r.page_programs <= r.spare_reads, "{at}: {r:?}");
                    }
                    assert_eq!(
                        r.time_ns,
                        r.page_reads * lat.read.0
                            + r.spare_reads * lat.spare_read.0
                            + r.page_programs * lat.program.0
                            + r.block_erases * lat.erase.0,
                        "{at}: serial time is the sum of the ops"
                    );
                }
            }
        }
    }
}

/// Drives the engine directly: after each power loss the deep checks run at once, the
/// recovery read every programmed spare area exactly once and took its serial time;
/// block-mapped schemes do nothing else, demand-paged ones write each translation page
/// that was on flash once (GC may write some first), and none at all when the CMT
/// covers the device (the defaults on the tiny and small profiles).
#[test]
fn recovery_reads_each_programmed_spare_once_and_is_consistent_at_once() {
    for var in VARIANTS.iter().filter(|v| v.buffer == "none") {
        let (ftl, opts) = (var.ftl, var.opts);
        for profile in 0..2 {
            let c = cfg(var, profile, 5);
            let prepared = prepare(&c).unwrap();
            let (geo, lat) = (prepared.geo.clone(), prepared.latencies);
            let mut e = prepared.engine;
            let mix = c.mix.clone().unwrap();
            let mut rewrites = 0;
            for (i, r) in
                Mix::new(&mix, 5, geo.logical_pages as u64, geo.page_size as u64).enumerate()
            {
                if i > 0 && i % 250 == 0 {
                    let programmed = programmed_pages(e.flash());
                    let tpages_on_flash = translation_pages_on_flash(e.flash());
                    let s = build_schemes(&c, &geo, lat).unwrap();
                    let (f, b) = (s.ftl, s.buffer);
                    let rec: Recovery = e.power_loss(f, b).unwrap().clone();
                    let at = format!("{ftl} {opts:?} profile {profile} request {i}");
                    e.check_deep().unwrap_or_else(|err| panic!("{at}: {err}"));
                    let s = &rec.flash;
                    assert_eq!(s.spare_reads[Cause::Recovery as usize], programmed, "{at}");
                    assert_eq!(FlashStats::total(&s.spare_reads), programmed, "{at}");
                    assert_eq!(rec.time_ns, serial_ns(s, &lat), "{at}");
                    assert!(rec.lost_lpns.is_empty(), "{at}");
                    let extra = &e.outcome().ftl.extra;
                    if block_mapped(ftl) {
                        assert_eq!(FlashStats::total(&s.programs), 0, "{at}");
                        assert_eq!(FlashStats::total(&s.page_reads), 0, "{at}");
                    } else {
                        // A translation page GC wrote during the rewrite (cause map)
                        // is not written again.
                        let written = s.programs[Cause::Recovery as usize];
                        let by_gc = s.programs[Cause::Map as usize];
                        assert!(written <= tpages_on_flash, "{at}: {written}");
                        assert!(written + by_gc >= tpages_on_flash, "{at}: {written}");
                        // Counters add up over the run's recoveries (issue 17).
                        rewrites += written;
                        assert_eq!(
                            extra["translation_writes_recovery"] as u64, rewrites,
                            "{at}"
                        );
                    }
                    if ftl == "fast" && !opts.contains(&("rw_adapt", "false")) {
                        let initial = (geo.pages_per_block as f64 * 70.0 / 128.0).round();
                        assert_eq!(extra["rw_threshold"], initial.max(1.0), "{at}");
                    }
                }
                e.submit(&r)
                    .unwrap_or_else(|err| panic!("{ftl} {opts:?}: {err}"));
            }
            e.check_deep().unwrap();
            e.verify_readback().unwrap();
            if !block_mapped(ftl) && opts.is_empty() {
                assert_eq!(rewrites, 0, "{ftl}: the default CMT holds the device");
            } else if !block_mapped(ftl) && profile == 1 {
                // The small profile has 16 translation pages of 64 entries; the tiny
                // one only one, which the tiny CMT always holds.
                assert!(rewrites > 0, "{ftl} {opts:?}: tiny CMTs write pages back");
            }
        }
    }
}

/// The CO-OP options keep working on the recovered state: after a power loss, OSM still
/// writes complete groups from the coop buffer to free blocks (BAST) or SW logs
/// (FAST), and BA-GC still takes dirty pages from the bagc buffer into its merges.
#[test]
fn coop_options_keep_working_after_recovery() {
    let cases = [
        ("bast", "coop", ("osm", "true"), "merges_osm"),
        ("fast", "coop", ("osm", "true"), "merges_osm"),
        ("bast", "bagc", ("ba_gc", "true"), "merges_ba_bm"),
        ("fast", "bagc", ("ba_gc", "true"), "merges_ba_bm"),
    ];
    for (ftl, buffer, opt, counter) in cases {
        for profile in 0..2 {
            let var = Variant {
                ftl,
                buffer,
                opts: &[],
            };
            let mut c = cfg(&var, profile, 7);
            c.ftl_options
                .insert(opt.0.into(), ftlab_core::options::value_of_text(opt.1));
            let prepared = prepare(&c).unwrap();
            let (geo, lat) = (prepared.geo.clone(), prepared.latencies);
            let mut e = prepared.engine;
            let mix = c.mix.clone().unwrap();
            let merges = |e: &ftlab_core::engine::Engine| {
                let s = e.outcome().ftl;
                match counter {
                    "merges_osm" => s.merges_osm,
                    _ => s.merges_ba_bm,
                }
            };
            let (mut before, mut after_recovery) = (0, None);
            for (i, r) in
                Mix::new(&mix, 7, geo.logical_pages as u64, geo.page_size as u64).enumerate()
            {
                if i == 3000 {
                    before = merges(&e);
                    let s = build_schemes(&c, &geo, lat).unwrap();
                    let (f, b) = (s.ftl, s.buffer);
                    e.power_loss(f, b).unwrap();
                    e.check_deep().unwrap();
                    after_recovery = Some(merges(&e));
                }
                e.submit(&r).unwrap();
            }
            e.check_deep().unwrap();
            e.verify_readback().unwrap();
            let at = format!("{ftl} {buffer} {opt:?} profile {profile}");
            assert!(before > 0, "{at}: the option worked before the power loss");
            // Regression: the engine carried the counters of the instance a power loss
            // replaced without these three, so the report lost them.
            assert_eq!(after_recovery, Some(before), "{at}: counts carried over");
            assert!(merges(&e) > before, "{at}: and the option works after it");
        }
    }
}
