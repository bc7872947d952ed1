//! Torn operations (issue 25, item 3) in the block-mapped family (`block`, `bast`,
//! `fast`): the bugs the first torn runs found, each replayed at its cut.

use ftlab::sim::run;
use ftlab::testkit::{config, MixConfig, PROFILES};
use ftlab::NoObserver;

fn torn_cfg(ftl: &str, profile: usize, seed: u64, points: &[&str]) -> ftlab::config::Config {
    let p = &PROFILES[profile];
    let mut cfg = config(ftl, "none", p, seed);
    cfg.mix = Some(MixConfig {
        requests: 4000,
        max_pages: p.max_pages,
        ..MixConfig::default()
    });
    cfg.power_loss = points.iter().map(|s| s.to_string()).collect();
    cfg
}

#[test]
#[ignore]
fn debug() {
    let ftl = std::env::var("FTL").unwrap();
    let seed: u64 = std::env::var("SEED").unwrap().parse().unwrap();
    let profile: usize = std::env::var("PROFILE").unwrap().parse().unwrap();
    let point = std::env::var("POINT").unwrap_or("torn:40".into());
    let cfg = torn_cfg(&ftl, profile, seed, &[&point]);
    let out = run(&cfg, &mut NoObserver).unwrap();
    for e in &out.report.power_loss.per_event {
        println!("{e:?}");
    }
    println!("{:?}", out.failure);
}
