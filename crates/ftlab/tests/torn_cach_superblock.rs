//! Torn operations (issue 25, item 3) for `cach` and `superblock`: power lost inside a
//! flash operation, on the configurations that found their recovery bugs. Each test is
//! named after what it guards; the replay points are in the comments.

use ftlab::config::{load, Config};
use ftlab::sim::{run, RunOutput};
use ftlab::testkit::{with_power_losses, PROFILES};
use ftlab::NoObserver;

/// A run on testkit profile `profile` with `torn` power losses and `opts`.
fn cfg(ftl: &str, opts: &[(&str, &str)], profile: usize, seed: u64, torn: &str) -> Config {
    let mut c = with_power_losses(ftl, "none", &PROFILES[profile], seed, 4000, &[torn]);
    for (k, v) in opts {
        c.ftl_options
            .insert(k.to_string(), ftlab_core::options::value_of_text(v));
    }
    // (Superblock's snapshot area needs more blocks than the profile leaves.)
    let mut least = c.clone();
    least.op = 0.0;
    if let Ok(op) = ftlab::sim::least_op(&least) {
        c.op = c.op.max(op);
    }
    c
}

fn passes(c: &Config, what: &str) -> RunOutput {
    let out = run(c, &mut NoObserver).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.failure.is_none(), "{what}: {}", out.failure.unwrap());
    out
}

/// What the cuts struck ("a torn erase of block 3 (merge)"), all events.
fn struck(out: &RunOutput) -> Vec<String> {
    (out.report.power_loss.per_event.iter())
        .filter_map(|e| e.torn.clone())
        .collect()
}

/// A run given as `--set` pairs (a swarm replay).
fn replay(sets: &[&str]) -> Config {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load(None, &sets, &[]).unwrap()
}

/// `cach` read the spare tags of torn pages as data ("ppn8638 holds lpn4294967280,
/// beyond the logical capacity"): its scan skips them, in place and out of place, and
/// out of place a block holding a torn page (a cut image program) is never adopted.
#[test]
fn cach_scan_skips_torn_pages() {
    for opts in [
        &[][..],
        &[("bmr_update", "out_of_place")][..],
        &[("threshold", "0"), ("bmr_update", "out_of_place")][..],
        &[("threshold", "1"), ("async_free_percent", "100")][..],
    ] {
        for profile in 0..2 {
            for seed in 1..=3 {
                let c = cfg("cach", opts, profile, seed, "torn:40");
                let out = passes(&c, &format!("cach {opts:?} profile {profile} seed {seed}"));
                assert!(out.report.power_loss.events >= 30);
            }
        }
    }
}

/// In place, a BMR update's erase leaves the block's live pages only in RAM until its
/// program reaches them; a cut inside that window must report exactly the pages not
/// yet back on flash, and not those whose version the PMR still holds (a buffer's
/// padding hands a page the version it has; swarm seed 1, run 16, reported such a page
/// lost and recovery found it: "LPN 1053: expected no data, found version 1").
#[test]
fn cach_reports_only_the_pages_its_bmr_window_loses() {
    let c = replay(&[
        "bad_blocks=true",
        "buffer=\"bplru\"",
        "buffer_options.size=131072",
        "capacity=\"8MiB\"",
        "channels=4",
        "dies=2",
        "ftl=\"cach\"",
        "mix.gap_max_us=0",
        "mix.hot_pct=80",
        "mix.hot_space_pct=17",
        "mix.max_pages=1",
        "mix.partial_pct=0",
        "mix.read_pct=10",
        "mix.requests=7257",
        "mix.seq_pct=10",
        "mix.trim_pct=8",
        "mix.write_pct=63",
        "nand=\"slc-k9wag08u1m\"",
        "nand_params.bad_block_percent=5.0",
        "nand_params.pages_per_block=64",
        "op=50.0",
        "power_loss=[\"torn:4\"]",
        "preempt_gc=true",
        "seed=1733293111455350328",
        "suspend=true",
        "timing=\"parallel\"",
        "verify=\"deep\"",
    ]);
    passes(&c, "swarm seed 1 run 16");
    // The window itself: every cut of a stretch of requests on the tiny profile, with
    // the paper's idle-time BMR-GC, loses only what the FTL reports (the oracle holds
    // every other page to its durable version) and some cut does lose pages.
    let mut lost = 0;
    for op in 1..=40u64 {
        let mut c = cfg("cach", &[("async_free_percent", "100")], 0, 2, "");
        c.power_loss = vec![format!("2500@{op}")];
        let out = passes(&c, &format!("cach 2500@{op}"));
        lost += out.report.power_loss.lost_pages;
    }
    assert!(lost > 0, "no cut fell into the BMR window");
}

/// `power_safe_bmr_gc = true`, in place: the block's live pages are staged in the PMR
/// before its erase, so no cut, inside the erase, a program or anywhere else, loses a
/// page.
#[test]
fn cach_power_safe_bmr_gc_loses_nothing_inside_requests() {
    for threshold in ["4", "1"] {
        for profile in 0..2 {
            for seed in 1..=3 {
                let opts = [
                    ("power_safe_bmr_gc", "true"),
                    ("async_free_percent", "100"),
                    ("threshold", threshold),
                ];
                let c = cfg("cach", &opts, profile, seed, "torn:40");
                let what = format!("cach {opts:?} profile {profile} seed {seed}");
                let out = passes(&c, &what);
                assert_eq!(out.report.power_loss.lost_pages, 0, "{what}");
                let staged = out.report.ftl.extra.get("bmr_staged_pages");
                assert!(staged.unwrap_or(0.0) > 0.0, "{what}: nothing staged");
            }
        }
    }
}

/// `superblock`'s frontier scan used a torn page's tag as an LPN ("index out of bounds:
/// the len is 128 but the index is 67108863"); it skips torn pages, a torn snapshot
/// page falls back to the previous whole one, and a block whose erase was torn is
/// erased again by recovery (never free, never data).
#[test]
fn superblock_recovery_skips_torn_pages_and_snapshots() {
    let mut all = Vec::new();
    for opts in [
        &[("snapshots", "on")][..],
        &[("snapshots", "on"), ("superblock_size", "1")][..],
    ] {
        for profile in 0..2 {
            for seed in 1..=3 {
                let c = cfg("superblock", opts, profile, seed, "torn:40");
                let out = passes(
                    &c,
                    &format!("superblock {opts:?} profile {profile} seed {seed}"),
                );
                all.extend(struck(&out));
            }
        }
    }
    let has = |what: &str| all.iter().any(|t| t.contains(what));
    assert!(has("torn program") && has("torn erase"), "{all:?}");
    assert!(has("(map)"), "no snapshot page was torn: {all:?}");
    assert!(has("(merge)"), "no merge was cut: {all:?}");
}

/// A merge cut while it copies its victim: the victim still holds live pages, so the
/// snapshot log must keep it in its superblock until its erase (it logged the detach
/// first, and a full snapshot written meanwhile listed it free: "pbn98 is not in
/// superblock 8" on replay, `--ftl superblock --capacity 16MiB --precondition fill
/// --power-loss-at torn:40`), and recovery must give the merge reserve back its block
/// (swarm seed 1, run 2635: "0 reserved blocks").
#[test]
fn superblock_merge_cut_keeps_its_victim_and_reserve() {
    let c = replay(&[
        "ftl=\"superblock\"",
        "capacity=\"16MiB\"",
        "precondition=\"fill\"",
        "synthetic.count=20000",
        "power_loss=[\"torn:40\"]",
    ]);
    passes(&c, "superblock 16MiB torn:40");
    let c = replay(&[
        "buffer=\"coop\"",
        "buffer_options.size=32768",
        "capacity=\"64KiB\"",
        "channels=2",
        "deep_every=200",
        "dies=2",
        "ftl=\"superblock\"",
        "ftl_options.wear_leveling=\"static\"",
        "ftl_options.wl_threshold=1",
        "mix.gap_max_us=100",
        "mix.hot_pct=0",
        "mix.hot_space_pct=2",
        "mix.max_pages=1",
        "mix.partial_pct=0",
        "mix.read_pct=20",
        "mix.requests=14302",
        "mix.seq_pct=40",
        "mix.trim_pct=11",
        "mix.write_pct=41",
        "nand=\"micron-2k\"",
        "nand_params.pages_per_block=4",
        "op=100.0",
        "power_loss=[\"torn:2\"]",
        "rmw=true",
        "seed=\"18048371535629108407\"",
        "verify=\"deep\"",
    ]);
    passes(&c, "swarm seed 1 run 2635");
}

/// The same cut merge leaves the superblock owning its reserved block beside the
/// victim, N + M + 1 blocks: recovery runs MergeSome until it is back at its limit
/// (swarm seed 12, run 1742: "superblock 0 owns 9 blocks").
#[test]
fn superblock_merge_cut_leaves_no_superblock_over_its_limit() {
    let c = replay(&[
        "buffer=\"lru\"",
        "buffer_options.size=262144",
        "capacity=\"4MiB\"",
        "channels=4",
        "deep_every=50",
        "dies=1",
        "ftl=\"superblock\"",
        "ftl_options.pe_limit=8",
        "ftl_options.wear_leveling=\"static\"",
        "ftl_options.wl_threshold=1",
        "mix.gap_max_us=5000",
        "mix.hot_pct=50",
        "mix.hot_space_pct=7",
        "mix.max_pages=2",
        "mix.partial_pct=30",
        "mix.read_pct=13",
        "mix.requests=17816",
        "mix.seq_pct=10",
        "mix.trim_pct=8",
        "mix.write_pct=75",
        "nand=\"micron-2k\"",
        "nand_params.pages_per_block=32",
        "op=10.0",
        "power_loss=[\"torn:2\"]",
        "seed=\"18251050597568645139\"",
        "verify=\"deep\"",
    ]);
    // (As in the swarm, a device that wears out at its pe_limit passes.)
    let out = run(&c, &mut NoObserver).unwrap();
    if let Some(f) = out.failure {
        assert!(
            f.to_string().contains("worn out"),
            "swarm seed 12 run 1742: {f}"
        );
    }
    assert!(out.report.power_loss.events >= 1);
}

/// Every operation of a stretch of requests in turn, with a second cut inside the
/// recovery, for both schemes on the tiny profile (which reaches merges, GC and
/// erases within a few dozen operations).
#[test]
fn a_cut_at_each_operation_of_cach_and_superblock() {
    for (ftl, opts) in [
        ("cach", &[][..]),
        ("cach", &[("bmr_update", "out_of_place")][..]),
        ("superblock", &[("snapshots", "on")][..]),
    ] {
        let mut all = Vec::new();
        for op in 1..=64u64 {
            let mut c = cfg(ftl, opts, 0, 7, "");
            c.power_loss = vec![format!("1500@{op}/{}", 1 + op % 5)];
            let out = passes(&c, &format!("{ftl} {opts:?} 1500@{op}"));
            all.extend(struck(&out));
        }
        assert!(
            all.iter().any(|t| t.contains("torn erase")),
            "{ftl}: {all:?}"
        );
    }
}
