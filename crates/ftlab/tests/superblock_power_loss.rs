//! Power loss through the engine for the superblock FTL (snapshot recovery,
//! superblock-ftl.txt §4.4) and DAC (spare scan): at many points of a random mix with
//! trims, flushes and partial pages, every acknowledged write reads back, with deep checks.

use ftlab::sim::run;
use ftlab::testkit::{config, MixConfig, PROFILES};
use ftlab::NoObserver;

fn with_power_losses(ftl: &str, profile: usize, op: f64, seed: u64, options: &[(&str, &str)]) {
    let p = &PROFILES[profile];
    let mut cfg = config(ftl, "none", p, seed);
    cfg.op = op;
    for (k, v) in options {
        cfg.ftl_options
            .insert(k.to_string(), ftlab_core::options::value_of_text(v));
    }
    cfg.mix = Some(MixConfig {
        requests: 5000,
        max_pages: p.max_pages,
        ..MixConfig::default()
    });
    cfg.power_loss = vec!["1,2,50,777,1000,1001,2500".into(), "random:12".into()];
    let out = run(&cfg, &mut NoObserver).unwrap_or_else(|e| panic!("{ftl} {options:?}: {e}"));
    assert!(
        out.failure.is_none(),
        "{ftl} {options:?}: {:?}",
        out.failure
    );
    let pl = &out.report.power_loss;
    assert!(pl.events >= 18, "{ftl}: {} power losses", pl.events);
    assert!(pl.recovery.time_ns > 0, "{ftl}: recovery took no time");
}

#[test]
fn superblock_recovers_from_snapshots_at_many_points() {
    for seed in 1..=2 {
        // Tiny device with enough spare blocks for the snapshot area.
        with_power_losses("superblock", 0, 150.0, seed, &[("snapshots", "on")]);
        with_power_losses(
            "superblock",
            0,
            150.0,
            seed,
            &[("snapshots", "on"), ("placement", "ip")],
        );
        with_power_losses(
            "superblock",
            1,
            60.0,
            seed,
            &[("snapshots", "on"), ("superblock_size", "1")],
        );
        // The realistic profile has room for snapshots by default.
        with_power_losses("superblock", 2, PROFILES[2].op, seed, &[]);
    }
}

#[test]
fn dac_recovers_from_a_spare_scan_at_many_points() {
    for (profile, p) in PROFILES.iter().enumerate() {
        with_power_losses("dac", profile, p.op, 3, &[]);
    }
}
