//! Torn operations (issue 25, item 3) in the page-mapped schemes with regions and the
//! demand-paged ones: `dac`, `dftl` and `tpm`. Each test replays a power loss the
//! first torn runs found fatal, on the device and workload that found it, and names
//! what the fix guards. `torn.rs` runs the general checks for every scheme in
//! `TORN_RECOVERY`.

use ftlab::config::Config;
use ftlab::sim::{run, smallest_op};
use ftlab::testkit::{with_power_losses, PROFILES};
use ftlab::NoObserver;

/// `ftl` on profile `profile` (tiny: 0, small: 1) with seed `seed`, 4,000 requests,
/// at the least over-provisioning it accepts, losing power at `points`.
fn cfg(ftl: &str, profile: usize, seed: u64, points: &[&str]) -> Config {
    let p = &PROFILES[profile];
    let mut c = with_power_losses(ftl, "none", p, seed, 4000, points);
    if ftl != "dac" {
        // Translation pages of 4 (tiny) or 64 (small) entries and a cache of 4 of them
        // (TPM) or as many entries (DFTL): the map lives mostly on flash, so cuts
        // strike translation writes, translation block GC and the rewrites of
        // recovery. Then the least over-provisioning that holds the translation pages.
        let epp = if profile == 0 { 4 } else { 64 };
        for (k, v) in [("entries_per_page", epp), ("cmt_bytes", 16 * epp)] {
            c.ftl_options.insert(k.into(), serde_json::json!(v));
        }
        c.op = p.op;
        c.op = smallest_op(&c).unwrap();
    }
    c
}

/// Runs `c`, fails the test with the oracle's complaint if the run failed, and
/// returns what its losses struck (`PowerCut::describe` of each, joined).
fn passes(c: &Config, what: &str) -> String {
    let out = run(c, &mut NoObserver).unwrap();
    assert!(
        out.failure.is_none(),
        "{what} ({:?}, {}, op {}, seed {}): {}",
        c.power_loss,
        c.capacity,
        c.op,
        c.seed,
        out.failure.unwrap()
    );
    assert!(out.report.power_loss.events > 0, "{what}: no loss struck");
    let ev = &out.report.power_loss.per_event;
    ev.iter()
        .filter_map(|e| e.torn.clone())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Every operation of request 3000 and the ones after it, on the tiny device, one run
/// per operation, each with a second loss inside its recovery (as `torn.rs` walks);
/// returns what they struck.
fn walk(ftl: &str, seed: u64, ops: u64) -> String {
    (1..=ops)
        .map(|op| {
            let point = format!("3000@{op}/{}", 1 + op % 7);
            passes(&cfg(ftl, 0, seed, &[&point]), ftl)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `dac` dropped a page's old copy before taking the page for the new one, which may
/// open a block and collect garbage; GC could then erase the block holding the old,
/// durable copy, and a cut before the new program lost both (`3000@34`, tiny device,
/// seed 5: the page read as zeroes).
#[test]
fn dac_keeps_the_old_copy_until_its_replacement_is_taken() {
    passes(&cfg("dac", 0, 5, &["3000@34/7"]), "dac");
    walk("dac", 5, 64);
}

/// `dftl` and `tpm` dropped the old copy before their data frontier (which may
/// collect garbage), as `dac` and `page` did: a page read back unmapped (`dftl`:
/// `torn:40`, tiny device, seed 2, request 2779; `tpm`: `3000@36/2`, seed 1).
#[test]
fn demand_writes_keep_the_old_copy_until_their_replacement_is_taken() {
    passes(&cfg("dftl", 0, 2, &["torn:40"]), "dftl");
    passes(&cfg("tpm", 0, 1, &["3000@36/2"]), "tpm");
    for ftl in ["dftl", "tpm"] {
        let mut struck = String::new();
        for seed in [1, 5] {
            struck += &walk(ftl, seed, 64);
        }
        for seed in 1..=4 {
            for profile in 0..2 {
                struck += &passes(&cfg(ftl, profile, seed, &["torn:40"]), ftl);
            }
        }
        // The walks reached host programs, GC and translation page writes.
        for what in ["torn program", "(host)", "(gc)", "(map)"] {
            assert!(struck.contains(what), "{ftl}: no cut in {what}: {struck}");
        }
    }
}

/// A block whose only programmed page was torn (a translation block's first program,
/// or a data block's) has no kind on flash: the demand-paged recovery took it for a
/// second open translation block. A torn erase leaves a block with every page torn.
/// Recovery now erases such blocks (`dftl`: `torn:40`, tiny device, seed 1, the loss
/// before request 271). Many cuts on the tiny and small devices reach both.
#[test]
fn demand_recovery_erases_blocks_with_no_readable_page() {
    for ftl in ["dftl", "tpm"] {
        let mut struck = String::new();
        for seed in 1..=3 {
            struck += &passes(&cfg(ftl, 1, seed, &["torn:40"]), ftl);
            struck += &passes(&cfg(ftl, 0, seed, &["torn:40"]), ftl);
        }
        for what in ["torn erase", "(map)"] {
            assert!(struck.contains(what), "{ftl}: no cut in {what}: {struck}");
        }
    }
}

/// `tpm` read a torn page's tag as data: its fields named a write-pointer group far
/// beyond the device ("holds pages of write pointers 2 and 2097151"). Recovery and
/// the deep check now skip torn pages when they derive a block's group.
#[test]
fn tpm_recovery_ignores_torn_pages_when_it_derives_groups() {
    // pbn6 held "pages of write pointers 0 and 134217727" before the loss before
    // request 162 (seed 1).
    for seed in 1..=4 {
        passes(&cfg("tpm", 0, seed, &["torn:40"]), "tpm");
    }
}
