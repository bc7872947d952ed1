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
