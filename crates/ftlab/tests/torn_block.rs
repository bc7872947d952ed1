//! Torn operations (issue 25, item 3) in the block-mapped family (`block`, `bast`,
//! `fast`): the failures the first torn runs found, each replayed where it struck.
//! (`torn.rs` runs every scheme of `TORN_RECOVERY` through many more cuts; the
//! schemes' own `torn_tests` cut every operation of a merge in turn.)

use ftlab::config::parse_str;
use ftlab::sim::{run, RunOutput};
use ftlab::testkit::{with_power_losses, PROFILES};
use ftlab::NoObserver;

/// The tiny profile (8 logical blocks of 4 pages), 4,000 requests, 40 torn points.
fn tiny_torn(ftl: &str, seed: u64) -> RunOutput {
    let cfg = with_power_losses(ftl, "none", &PROFILES[0], seed, 4000, &["torn:40"]);
    run(&cfg, &mut NoObserver).unwrap()
}

fn passes(ftl: &str, out: &RunOutput) {
    assert!(out.failure.is_none(), "{ftl}: {:?}", out.failure);
    let events = &out.report.power_loss.per_event;
    assert!(events.len() >= 30, "{ftl}: {} losses", events.len());
}

#[test]
fn block_recovery_skips_torn_pages() {
    // Was: "ppn11 holds PageTag { lpn: lpn4294967280, .. }: beyond the logical
    // capacity" after the loss before request 155 (block.rs read every tag itself).
    let out = tiny_torn("block", 1);
    passes("block", &out);
    let lost: u64 = (out.report.power_loss.per_event.iter())
        .map(|e| e.lost_pages)
        .sum();
    assert!(
        lost > 0,
        "in-place rewrites cut after their erase report their pages"
    );
}

#[test]
fn bast_resolves_a_merge_cut_half_way_instead_of_refusing() {
    // Was: "lbn2 has more than a data and a log block" after the loss before request
    // 85 (a full merge's destination partly written beside the data and log blocks).
    let out = tiny_torn("bast", 1);
    passes("bast", &out);
    assert_eq!(
        out.report
            .power_loss
            .per_event
            .iter()
            .map(|e| e.lost_pages)
            .sum::<u64>(),
        0
    );
}

#[test]
fn fast_recovery_never_takes_a_torn_tag_for_a_page() {
    // Was: a block leaked (neither data, log nor free) after request 84, or an index
    // out of bounds: a torn page's tag taken for an LPN.
    let out = tiny_torn("fast", 1);
    passes("fast", &out);
}

#[test]
fn fast_osm_cut_in_its_sw_log_leaves_no_extra_rw_log() {
    // Swarm seed 3, run 1952: the coop buffer turns OSM on; a cut while the SW log of
    // an OSM write was being filled left it beside the data block, both in place, and
    // recovery counted one RW log too many ("15 RW and 0 SW logs on flash but rw_logs
    // = 14 and sw_logs = 1").
    let cfg = parse_str(
        r#"
ftl = "fast"
buffer = "coop"
nand = "agrawal-4k"
capacity = "512KiB"
op = 100.0
seed = "11709231315736928445"
channels = 2
dies = 1
verify = "deep"
deep_every = 1000
power_loss = ["torn:4"]
[mix]
requests = 15044
max_pages = 1
write_pct = 61
read_pct = 17
trim_pct = 9
hot_pct = 20
hot_space_pct = 6
seq_pct = 40
partial_pct = 5
gap_max_us = 5000
[nand_params]
pages_per_block = 8
[ftl_options]
wear_leveling = "off"
wl_threshold = 16
[buffer_options]
size = 65536
"#,
        "torn_block.rs",
    )
    .unwrap();
    let out = run(&cfg, &mut NoObserver).unwrap();
    assert!(out.failure.is_none(), "{:?}", out.failure);
}

#[test]
fn fast_without_sw_logs_never_takes_two_blocks_with_fillers_for_one() {
    // Swarm seed 12, run 1602 (OSM under the coop buffer, so no SW log survives a
    // request): a full merge cut while filling its destination left it, with fillers,
    // beside the data block, which had fillers too ("pbn2 and pbn103 both hold fillers
    // of one logical block").
    let cfg = parse_str(
        r#"
ftl = "fast"
buffer = "coop"
capacity = "8MiB"
op = 15.0
seed = "9461418495984385976"
channels = 2
dies = 2
rmw = true
bad_blocks = true
verify = "deep"
power_loss = ["torn:1"]
[mix]
requests = 11128
max_pages = 1
write_pct = 51
read_pct = 18
trim_pct = 13
hot_pct = 20
hot_space_pct = 8
seq_pct = 40
partial_pct = 30
gap_max_us = 0
[nand_params]
pages_per_block = 16
bad_block_percent = 2.0
[ftl_options]
wear_leveling = "off"
wl_threshold = 1
[buffer_options]
size = 16777216
"#,
        "torn_block.rs",
    )
    .unwrap();
    let out = run(&cfg, &mut NoObserver).unwrap();
    assert!(out.failure.is_none(), "{:?}", out.failure);
    assert_eq!(out.report.power_loss.events, 1);
}
