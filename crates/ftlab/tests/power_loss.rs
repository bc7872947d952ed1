//! Power loss: every FTL that supports recovery rebuilds a map under which every
//! write it was handed reads back with its last version, at many points of a run.

use ftlab::registry::{Recovery, BUFFERS, FTLS};
use ftlab::sim::prepare;
use ftlab::sim::run;
use ftlab::testkit::{config, MixConfig, PROFILES};
use ftlab::{NoObserver, RunError};
use ftlab_core::buffer::Passthrough;
use ftlab_core::flash::Flash;
use ftlab_core::ftl::{Ftl, FtlStats, RecoverError};
use ftlab_core::request::{Op, Request};
use ftlab_core::{Lpn, Nanos, PageTag, PageWrite};
use ftlab_ftl::page::PageFtl;

fn with_power_losses(ftl: &str, profile: usize, seed: u64) -> ftlab::config::Config {
    let p = &PROFILES[profile];
    let mut cfg = config(ftl, "none", p, seed);
    cfg.mix = Some(MixConfig {
        requests: 6000,
        max_pages: p.max_pages,
        ..MixConfig::default()
    });
    cfg.power_loss = vec!["1,2,50,999,1000,1001,2500".into(), "random:6".into()];
    cfg
}

#[test]
fn page_recovers_at_many_points() {
    for profile in 0..PROFILES.len() {
        for seed in 1..=3 {
            let out = run(&with_power_losses("page", profile, seed), &mut NoObserver).unwrap();
            assert!(out.failure.is_none(), "{:?}", out.failure);
            let pl = &out.report.power_loss;
            assert_eq!(pl.events, 13);
            assert_eq!(pl.lost_pages, 0, "no buffer, nothing volatile");
            assert!(pl.recovery.spare_reads > 0);
            assert!(pl.recovery.time_ns > 0);
        }
    }
}

/// Regression: C-lash held dirty pages without reporting them, so a power loss looked
/// like data loss to the oracle (swarm seed 12, run 35). Every buffer must report what
/// a power loss takes from it.
#[test]
fn every_buffer_reports_what_a_power_loss_loses() {
    for b in BUFFERS {
        for seed in 1..=2 {
            let mut cfg = with_power_losses("page", 0, seed);
            cfg.buffer = b.id.into();
            let out = run(&cfg, &mut NoObserver).unwrap();
            assert!(out.failure.is_none(), "{}: {:?}", b.id, out.failure);
            let pl = &out.report.power_loss;
            assert_eq!(pl.events, 13, "{}", b.id);
            if b.id == "none" {
                assert_eq!(pl.lost_pages, 0);
            }
        }
    }
}

/// Every FTL recovers, except one whose registry entry says it needs an option (the
/// superblock FTL without snapshots: its PGD and block lists live only in RAM;
/// superblock-ftl.txt §4.4 recovers from the snapshots) or never recovers (the test
/// build's example FTL). Such a run is refused before it starts, naming `power_loss`
/// and the option that would make it recover.
#[test]
fn every_ftl_either_recovers_or_says_it_cannot() {
    for f in FTLS {
        let cfg = with_power_losses(f.id, 1, 7);
        match run(&cfg, &mut NoObserver) {
            Ok(out) => {
                assert!(out.failure.is_none(), "{}: {:?}", f.id, out.failure);
                assert_eq!(out.report.power_loss.events, 13, "{}", f.id);
            }
            Err(
                e @ RunError::Setting {
                    key: "power_loss", ..
                },
            ) if f.caps.recovery != Recovery::Always => {
                assert!(e.to_string().contains("cannot recover"), "{e}");
                if let Recovery::WithOption { option, value } = f.caps.recovery {
                    assert!(
                        e.to_string()
                            .contains(&format!("ftl_options.{option} = {value}")),
                        "{e}"
                    );
                    // The option resolved the other way here; the run without power
                    // losses shows it.
                    let without = ftlab::config::Config {
                        power_loss: Vec::new(),
                        ..cfg.clone()
                    };
                    let out = run(&without, &mut NoObserver).unwrap();
                    assert_eq!(out.report.ftl.extra[option], 0.0, "{}", f.id);
                }
            }
            Err(e) => panic!("{}: {e}", f.id),
        }
    }
}

/// The page FTL with a recovery that rebuilds nothing: a silent total loss.
struct ForgetsEverything(PageFtl);

impl Ftl for ForgetsEverything {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        self.0.write(flash, pages)
    }
    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        self.0.read(flash, lpn)
    }
    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.0.trim(flash, lpn)
    }
    fn recover(&mut self, _flash: &mut Flash) -> Result<(), RecoverError> {
        Ok(())
    }
    fn stats(&self) -> FtlStats {
        self.0.stats()
    }
    fn reset_stats(&mut self) {
        self.0.reset_stats()
    }
    fn mapping_bytes(&self) -> u64 {
        self.0.mapping_bytes()
    }
}

#[test]
fn an_ftl_that_recovers_nothing_is_caught() {
    let cfg = config("page", "none", &PROFILES[0], 1);
    let prepared = prepare(&cfg).unwrap();
    let geo = prepared.geo.clone();
    let mut e = prepared.engine;
    let write = Request {
        arrival: Nanos(0),
        op: Op::Write,
        offset: 0,
        len: 2048,
    };
    e.submit(&write).unwrap();
    let opts = ftlab_ftl::page::PageOptions::default();
    let fresh = ForgetsEverything(PageFtl::new(&geo, &opts).unwrap());
    e.power_loss(Box::new(fresh), Box::new(Passthrough::default()))
        .unwrap();
    let err = e
        .submit(&Request {
            op: Op::Read,
            ..write
        })
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("expected version 1, found no data"),
        "{err}"
    );
}

/// Regression (issue 17): the scheme-specific counters under `ftl.extra` were taken from
/// the last instance only, so after a power loss they no longer added up to the named
/// counters, which did sum over every instance. DFTL splits its translation reads by
/// cause in `extra`; the parts must add up to the total over the whole run.
#[test]
fn extra_counters_add_up_across_power_losses() {
    for ftl in FTLS.iter().filter(|f| f.caps.demand_paged) {
        let mut cfg = with_power_losses(ftl.id, 1, 3);
        // A cache far smaller than the map, so translation pages are read all along.
        cfg.ftl_options.insert("cmt_bytes".into(), 4096.into());
        let out = run(&cfg, &mut NoObserver).unwrap();
        assert!(out.failure.is_none(), "{}: {:?}", ftl.id, out.failure);
        let r = &out.report;
        assert_eq!(r.power_loss.events, 13);
        let x = &r.ftl.extra;
        let parts =
            x["translation_reads_miss"] + x["translation_reads_evict"] + x["translation_reads_gc"];
        assert_eq!(parts, r.ftl.translation.page_reads as f64, "{}", ftl.id);
        assert_eq!(
            x.figure("cmt_evictions").map(|f| f.kind),
            Some(ftlab_core::stats::Kind::Counter)
        );
    }
}

/// Every GC victim policy of every FTL that declares `gc_policy` (issue 23), read off
/// its options: recovery at many points, on the tiny and small devices. After a power
/// loss the seal order restarts in block-number order (`ftlab_core::victim`).
#[test]
fn every_gc_policy_recovers() {
    for f in FTLS {
        let fields = f.options.fields();
        let Some(field) = fields.iter().find(|o| o.name == "gc_policy") else {
            continue;
        };
        for policy in field.kind.split(" | ") {
            for profile in 0..2 {
                let mut cfg = with_power_losses(f.id, profile, 3);
                cfg.ftl_options.insert("gc_policy".into(), policy.into());
                cfg.ftl_options.insert("gc_d".into(), 2.into());
                cfg.ftl_options.insert("gc_window".into(), 4.into());
                let out = run(&cfg, &mut NoObserver).unwrap();
                assert!(
                    out.failure.is_none(),
                    "{} {policy} profile {profile}: {:?}",
                    f.id,
                    out.failure
                );
                assert_eq!(out.report.power_loss.events, 13, "{} {policy}", f.id);
                assert!(out.report.ftl.gc.invocations > 0, "{} {policy}", f.id);
            }
        }
    }
}

/// `gc_frontier = "separate"` (issue 23 item 2) of every FTL that declares it, read off
/// its options: a loss may leave two partly written blocks (the host's and the GC's
/// open block) per die; both reopen, as either frontier.
#[test]
fn a_separate_gc_frontier_recovers() {
    let mut covered = 0;
    for f in FTLS {
        if !f.options.fields().iter().any(|o| o.name == "gc_frontier") {
            continue;
        }
        covered += 1;
        for policy in ["greedy", "cost_benefit"] {
            for profile in 0..2 {
                let mut cfg = with_power_losses(f.id, profile, 3);
                cfg.ftl_options
                    .insert("gc_frontier".into(), "separate".into());
                cfg.ftl_options.insert("gc_policy".into(), policy.into());
                // One more open block: the tiny device needs more spare blocks.
                cfg.op = cfg.op.max(ftlab::sim::least_op(&cfg).unwrap());
                let out = run(&cfg, &mut NoObserver).unwrap();
                assert!(
                    out.failure.is_none(),
                    "{} {policy} profile {profile}: {:?}",
                    f.id,
                    out.failure
                );
                assert_eq!(out.report.power_loss.events, 13, "{} {policy}", f.id);
                assert!(out.report.ftl.gc.invocations > 0, "{} {policy}", f.id);
                let x = &out.report.ftl.extra;
                assert!(x.contains_key("stream_gc_programs"), "{}", f.id);
            }
        }
    }
    assert!(covered > 0);
}

/// Wear levelling (issue 23 item 3) of every FTL that declares `wear_leveling`, read off
/// its options, each value with a low threshold and both GC frontiers: recovery reads
/// the erase counts back from the flash and rebuilds the least-worn-first pools.
#[test]
fn every_wear_leveling_recovers() {
    let mut covered = 0;
    for f in FTLS {
        let fields = f.options.fields();
        let Some(field) = fields.iter().find(|o| o.name == "wear_leveling") else {
            continue;
        };
        covered += 1;
        for wl in field.kind.split(" | ") {
            for frontier in ["shared", "separate"] {
                let mut cfg = with_power_losses(f.id, 1, 4);
                cfg.ftl_options.insert("wear_leveling".into(), wl.into());
                if let Recovery::WithOption { option, value } = f.caps.recovery {
                    // (`superblock` recovers with snapshots; its area needs blocks.)
                    cfg.ftl_options.insert(option.into(), value.into());
                    cfg.op = cfg.op.max(ftlab::sim::least_op(&cfg).unwrap());
                }
                if fields.iter().any(|o| o.name == "wl_threshold") {
                    cfg.ftl_options.insert("wl_threshold".into(), 2.into());
                }
                if wl == "static" && fields.iter().any(|o| o.name == "bmr_update") {
                    // `cach` levels its BMR out of place only (in place a logical
                    // block's block is fixed); its PMR alone may not reach the threshold.
                    cfg.ftl_options
                        .insert("bmr_update".into(), "out_of_place".into());
                }
                if fields.iter().any(|o| o.name == "gc_frontier") {
                    cfg.ftl_options
                        .insert("gc_frontier".into(), frontier.into());
                    cfg.op = cfg.op.max(ftlab::sim::least_op(&cfg).unwrap());
                }
                let out = run(&cfg, &mut NoObserver).unwrap();
                assert!(
                    out.failure.is_none(),
                    "{} {wl} {frontier}: {:?}",
                    f.id,
                    out.failure
                );
                assert_eq!(out.report.power_loss.events, 13, "{} {wl}", f.id);
                if wl == "static" {
                    assert!(
                        out.report.ftl.extra.get("wl_migrations").unwrap_or(0.0) > 0.0,
                        "{} {frontier}: static levelling never moved data",
                        f.id
                    );
                }
            }
        }
    }
    assert!(covered > 0);
}

/// `cach` with `bmr_update = "out_of_place"` and a PMR of a quarter of the blocks: in
/// place a logical block's block is fixed, and under `pmr_percent = auto` the BMR has
/// one spare, so the first BMR block at the limit ends the device's life (too soon for
/// a power loss after a retirement); with spares the BMR's blocks retire as the PMR's.
fn out_of_place_bmr(cfg: &mut ftlab::config::Config) {
    if cfg.ftl == "cach" {
        cfg.ftl_options
            .insert("bmr_update".into(), "out_of_place".into());
        cfg.ftl_options.insert("pmr_percent".into(), 25.into());
    }
}

/// Issue 23 items 4 and 6: every FTL that declares `pe_limit` (read off its options),
/// through many power losses with spare blocks to retire (so blocks retire well before
/// the device wears out): the run ends at its end or with the device worn out, never
/// with a violation or a failed recovery, and no block is erased past the limit.
/// (Whether a loss falls between the first retirement and the wear-out depends on the
/// run; `every_pe_limit_recovers_with_retired_blocks` makes sure it does.)
#[test]
fn power_loss_with_retired_blocks_recovers() {
    let mut covered = 0;
    for f in FTLS {
        if !f.options.fields().iter().any(|o| o.name == "pe_limit") {
            continue;
        }
        covered += 1;
        for (profile, limit) in [(0, 30), (0, 60), (1, 8), (1, 16)] {
            let mut cfg = with_power_losses(f.id, profile, 5);
            // Spare blocks to retire: the profiles are near the least the scheme takes.
            cfg.op += 100.0;
            cfg.ftl_options.insert("pe_limit".into(), limit.into());
            out_of_place_bmr(&mut cfg);
            let out = run(&cfg, &mut NoObserver).unwrap();
            let id = f.id;
            match &out.failure {
                None | Some(ftlab::Failure::WornOut { .. }) => {}
                Some(f) => panic!("{id} profile {profile}, pe_limit {limit}: {f}"),
            }
            assert!(out.report.flash.erase_count.max <= limit, "{id} {limit}");
            assert!(
                out.report.ftl.extra.get("retired_blocks").is_some(),
                "{id} reports retired_blocks"
            );
            assert!(
                out.report.power_loss.events > 2,
                "{id} profile {profile}, pe_limit {limit}"
            );
        }
    }
    assert!(covered >= 9, "{covered} FTLs declare pe_limit");
}

/// Retirement through recovery, for every FTL that declares `pe_limit`: a power loss
/// struck after the first block has retired (found by a first run), and the run goes on
/// to its end or to a worn-out device with retired blocks still retired.
#[test]
fn every_pe_limit_recovers_with_retired_blocks() {
    for f in FTLS {
        if !f.options.fields().iter().any(|o| o.name == "pe_limit") {
            continue;
        }
        let id = f.id;
        let mut cfg = with_power_losses(id, 1, 7);
        cfg.op += 100.0;
        cfg.ftl_options.insert("pe_limit".into(), 6.into());
        out_of_place_bmr(&mut cfg);
        // Power losses every 25 requests: some fall after the first retirement.
        cfg.power_loss = vec![(1..240)
            .map(|i| (i * 25).to_string())
            .collect::<Vec<_>>()
            .join(",")];
        let out = run(&cfg, &mut NoObserver).unwrap();
        match &out.failure {
            None | Some(ftlab::Failure::WornOut { .. }) => {}
            Some(f) => panic!("{id}: {f}"),
        }
        let retired = out.report.ftl.extra.get("retired_blocks").unwrap_or(0.0);
        assert!(retired > 0.0, "{id}: no block retired");
        assert!(
            out.report.flash.erase_count.max <= 6,
            "{id}: {} erases, {retired} retired, {:?}",
            out.report.flash.erase_count.max,
            out.failure
        );
        assert!(
            out.report.power_loss.events > 2,
            "{id}: {} events, {retired} retired, {:?}",
            out.report.power_loss.events,
            out.failure
        );
    }
}
