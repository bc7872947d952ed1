//! Packed spare tags (`Ftl::packed_tags`): the registry's capability says what each
//! built FTL says (the memory estimate reads the capability before anything is built),
//! and a run of an FTL that packs gives the report it gives with whole tags and exact
//! versions, under every buffer (the choice is a table layout, not a change to what
//! the run does).

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

fn report(ftl: &str, buffer: &str, whole: bool) -> String {
    let c = with_power_losses(ftl, buffer, &PROFILES[1], 7, 30_000, &[]);
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
            let (packed, whole) = (report(e.id, b, false), report(e.id, b, true));
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
