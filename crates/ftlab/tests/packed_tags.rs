//! Packed spare tags (`Ftl::packed_tags`): the registry's capability says what each
//! built FTL says (the memory estimate reads the capability before anything is built),
//! and a run of an FTL that packs gives the report it gives with whole tags and exact
//! versions, under every buffer (the choice is a table layout, not a change to what
//! the run does).

use ftlab::config::TimingModel;
use ftlab::registry::{self, FTLS};
use ftlab::testkit::{config, with_power_losses, PROFILES};
use ftlab::{Observer, Simulation, Workload};
use ftlab_core::options::{BuildContext, OptionMap};

#[test]
fn every_ftl_s_capability_says_what_the_built_ftl_says() {
    for e in FTLS {
        let prepared = ftlab::sim::prepare(&config(e.id, "none", &PROFILES[1], 1)).unwrap();
        let ctx = BuildContext {
            geo: &prepared.geo,
            latencies: prepared.latencies,
            seed: 1,
        };
        let ftl = (e.build)(&ctx, &OptionMap::new()).unwrap();
        assert_eq!(ftl.packed_tags(), e.caps.packed_tags, "{}", e.id);
    }
    let packing: Vec<&str> = FTLS
        .iter()
        .filter(|e| e.caps.packed_tags)
        .map(|e| e.id)
        .collect();
    assert_eq!(packing, ["page", "dac"]);
}

/// Says a power loss may come (none does): the run keeps whole tags and exact
/// versions, as `ftlab serve` does.
struct MayLosePower;

impl Observer for MayLosePower {
    fn may_lose_power(&self) -> bool {
        true
    }
}

fn report(ftl: &str, buffer: &str, opts: &[(&str, &str)], whole: bool) -> String {
    let mut c = with_power_losses(ftl, buffer, &PROFILES[1], 7, 15_000, &[]);
    for &(k, v) in opts {
        let v = match v.parse::<u64>() {
            Ok(n) => serde_json::Value::from(n),
            Err(_) => serde_json::Value::from(v),
        };
        c.ftl_options.insert(k.into(), v);
    }
    if opts.iter().any(|(k, _)| *k == "die_alloc") {
        c.timing = TimingModel::Parallel;
        c.channels = Some(2);
        c.dies = Some(2);
        // An open block per region and die, and the GC reserve of four dies.
        c.op = c.op.max(60.0);
    }
    if ftl == "superblock" {
        // The snapshot area's blocks beside the merge reserve.
        c.op = c.op.max(60.0);
    }
    let sim = Simulation::new(c).unwrap();
    let out = if whole {
        sim.run(Workload::Configured, &mut MayLosePower)
    } else {
        sim.run(Workload::Configured, &mut ftlab::NoObserver)
    }
    .unwrap();
    assert!(out.failure.is_none(), "{ftl}+{buffer}: {:?}", out.failure);
    serde_json::to_string_pretty(&out.report).unwrap()
}

#[test]
fn packed_tags_give_the_report_of_whole_tags() {
    for e in FTLS.iter().filter(|e| e.caps.packed_tags) {
        for b in ["none", "lru", "bplru"] {
            let (packed, whole) = (report(e.id, b, &[], false), report(e.id, b, &[], true));
            let v: serde_json::Value = serde_json::from_str(&packed).unwrap();
            assert!(
                v["ftl"]["gc"]["invocations"].as_u64().unwrap() > 100,
                "{packed}"
            );
            assert_eq!(packed, whole, "{}+{b}", e.id);
        }
    }
    assert!(registry::ftl("dac").unwrap().caps.packed_tags);
}

/// DAC's paths page mapping does not share: several dies (GC per die, static
/// allocation, which reads a copy's tag), static wear levelling, a separate GC
/// frontier.
#[test]
fn dac_s_other_paths_give_the_same_report_packed() {
    let sets: [&[(&str, &str)]; 4] = [
        &[("die_alloc", "round_robin"), ("gc_scope", "per_die")],
        &[("die_alloc", "static")],
        &[("wear_leveling", "static"), ("wl_threshold", "2")],
        &[("gc_frontier", "separate")],
    ];
    for opts in sets {
        let (packed, whole) = (
            report("dac", "none", opts, false),
            report("dac", "none", opts, true),
        );
        let v: serde_json::Value = serde_json::from_str(&packed).unwrap();
        assert!(
            v["ftl"]["gc"]["invocations"].as_u64().unwrap() > 100,
            "{opts:?}"
        );
        assert_eq!(packed, whole, "{opts:?}");
    }
}

/// Superblock keeps its map beside every page as spare words, and writes snapshots,
/// which only a recovery (and a deep check) reads. A run with no power loss planned
/// does not store them (`Flash::drop_recovery_data`), and gives the report of a run
/// that does, under every buffer and with the options that take other paths
/// (placement in place, background merges, the map in map pages, which keeps the map
/// pages' contents: they are read in normal operation).
#[test]
fn superblock_gives_the_same_report_without_recovery_data() {
    let sets: [&[(&str, &str)]; 4] = [
        &[("snapshots", "on")],
        &[("snapshots", "on"), ("placement", "ip")],
        &[("snapshots", "on"), ("background_merge", "on")],
        &[("mapping", "map_page")],
    ];
    for (n, opts) in sets.into_iter().enumerate() {
        let buffers: &[&str] = if n == 0 {
            &["none", "lru", "bplru"]
        } else {
            &["none"]
        };
        for &b in buffers {
            let (lean, kept) = (
                report("superblock", b, opts, false),
                report("superblock", b, opts, true),
            );
            let v: serde_json::Value = serde_json::from_str(&lean).unwrap();
            let merges = &v["ftl"]["merges"];
            assert!(
                merges["partial"].as_u64().unwrap() + merges["full"].as_u64().unwrap() > 100,
                "{opts:?}+{b}: {merges}"
            );
            if n < 3 {
                assert!(
                    v["ftl"]["extra"]["snapshot_pages"].as_f64().unwrap() > 0.0,
                    "{opts:?}+{b}"
                );
            }
            assert_eq!(lean, kept, "{opts:?}+{b}");
        }
    }
}

/// Strikes a power loss before request 2,000 without saying one may come
/// ([`Observer::may_lose_power`] is left at no).
struct UnannouncedLoss(u32);

impl Observer for UnannouncedLoss {
    fn power_loss_now(&mut self) -> bool {
        self.0 += 1;
        self.0 == 2_000
    }
}

/// A power loss a run did not plan, on a flash that kept nothing for a recovery to
/// read, ends the run with a recovery failure that says how to plan it, not with a
/// panic; an FTL that stores no recovery data recovers as before.
#[test]
fn an_unplanned_power_loss_without_recovery_data_fails_with_a_reason() {
    let c = with_power_losses("superblock", "none", &PROFILES[1], 7, 5_000, &[]);
    let out = Simulation::new(c)
        .unwrap()
        .run(Workload::Configured, &mut UnannouncedLoss(0))
        .unwrap();
    let failure = out.failure.expect("the recovery cannot run").to_string();
    assert!(
        failure.contains("no power loss was planned") && failure.contains("--power-loss-at"),
        "{failure}"
    );
    let c = with_power_losses("dftl", "none", &PROFILES[1], 7, 5_000, &[]);
    let out = Simulation::new(c)
        .unwrap()
        .run(Workload::Configured, &mut UnannouncedLoss(0))
        .unwrap();
    assert!(out.failure.is_none(), "{:?}", out.failure);
    assert_eq!(out.report.power_loss.events, 1);
}
