//! GC victim policies against analytic write-amplification models (issue 23 item 5).
//!
//! Setup: the `page` FTL driven directly (no engine), 128 pages per block, uniform random
//! single-page overwrites of the whole logical space. Warm-up: a sequential fill of
//! every logical page, then one device write of random overwrites (as many as there are
//! logical pages); then `MEASURED` device writes of random overwrites, over which WAF =
//! (host programs + GC copies) / host programs.
//!
//! `a` = physical / logical pages with the reserved blocks left out: the free pool
//! holds `gc_threshold` erased blocks between collections (GC runs the moment a new
//! active block takes it below the threshold and refills it at once), so
//! `a = (blocks - gc_threshold) * pages_per_block / logical_pages`. The write frontier
//! is counted in `a`: it is part of the log in the models.
//!
//! Models (Desnoyers, "Analytic models of SSD write performance", ACM TOS 10(2), 2014):
//! - FIFO: `A_fifo(a) = a / (a + W0(-a e^-a))`, W0 the principal branch of Lambert W.
//! - Greedy with `Np` pages per block: `A(a, Np) = A_fifo(k a) / k`, `k = 1 + 1/(2 Np)`.
//! - Random victims: `a / (a - 1)` (a random block holds the mean utilisation `1/a`).
//! - d-choices: between random and greedy (no closed form is checked).
//!
//! Every test runs by default (about 10 s in a debug build). The table of
//! docs/results.md is printed by
//! `cargo test -p ftlab --test gc_models -- --nocapture --test-threads 1`.

use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::Ftl;
use ftlab_core::geometry::Geometry;
use ftlab_core::victim::{GcFrontier, GcPolicy};
use ftlab_core::{Lpn, PageTag, PageWrite};
use ftlab_ftl::page::{PageFtl, PageOptions};

const PPB: u32 = 128;
const THRESHOLD: u32 = 3;

/// Principal branch of Lambert W on [-1/e, 0): Halley's iteration from a branch-point
/// series start.
fn lambert_w0(x: f64) -> f64 {
    assert!((-1.0 / std::f64::consts::E..0.0).contains(&x), "{x}");
    // Start: the series about the branch point, good near -1/e; the iteration does the rest.
    let p = (2.0 * (std::f64::consts::E * x + 1.0)).sqrt();
    let mut w = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p;
    if x > -0.25 {
        w = x; // near 0, W(x) ~ x
    }
    for _ in 0..50 {
        let e = w.exp();
        let f = w * e - x;
        let step = f / (e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        w -= step;
        if step.abs() < 1e-15 {
            break;
        }
    }
    w
}

fn a_fifo(a: f64) -> f64 {
    a / (a + lambert_w0(-a * (-a).exp()))
}

fn a_greedy(a: f64, np: u32) -> f64 {
    let k = 1.0 + 1.0 / (2.0 * np as f64);
    a_fifo(k * a) / k
}

fn a_random(a: f64) -> f64 {
    a / (a - 1.0)
}

/// A device of `logical_blocks` logical blocks at `op_pct` over-provisioning (spare
/// blocks rounded down, plus the `gc_threshold` reserve), and its `a`.
fn geometry(logical_blocks: u32, op_pct: f64) -> (Geometry, f64) {
    let spare = (logical_blocks as f64 * op_pct / 100.0).round() as u32;
    let blocks = logical_blocks + spare + THRESHOLD;
    let geo = Geometry {
        page_size: 4096,
        pages_per_block: PPB,
        spare_bytes: 128,
        blocks,
        logical_pages: logical_blocks * PPB,
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
    };
    let a = ((blocks - THRESHOLD) * PPB) as f64 / geo.logical_pages as f64;
    (geo, a)
}

/// Measured WAF of `policy` on uniform random overwrites: (fill + one device write of
/// warm-up, then `measured` device writes).
fn measure(
    policy: GcPolicy,
    logical_blocks: u32,
    op_pct: f64,
    measured: u32,
    seed: u64,
) -> (f64, f64) {
    measure_mix(policy, logical_blocks, op_pct, measured, seed, false, false).0
}

/// [`measure`], or with `hot_cold` 90% of the overwrites to the first 10% of the
/// logical pages (uniform within each part), and with `separate` GC copies on their
/// own write frontier (`gc_frontier = "separate"`; same device: the GC's open block is
/// one of its blocks, part of the log in `a` like the host's). Also returns the FTL's
/// figures at the end.
fn measure_mix(
    policy: GcPolicy,
    logical_blocks: u32,
    op_pct: f64,
    measured: u32,
    seed: u64,
    hot_cold: bool,
    separate: bool,
) -> ((f64, f64), ftlab_core::ftl::FtlStats) {
    let opts = PageOptions {
        gc_policy: policy,
        gc_frontier: if separate {
            GcFrontier::Separate
        } else {
            GcFrontier::Shared
        },
        ..PageOptions::default()
    };
    let r = run_mix(opts, logical_blocks, op_pct, measured, seed, hot_cold);
    ((r.waf, r.a), r.stats)
}

/// What [`run_mix`] measured.
struct Run {
    waf: f64,
    a: f64,
    stats: ftlab_core::ftl::FtlStats,
    /// Per-block erase counts at the end (device life).
    erases: Vec<u32>,
}

/// [`measure_mix`] with any options of the `page` FTL (`gc_threshold` is set to
/// [`THRESHOLD`]).
fn run_mix(
    opts: PageOptions,
    logical_blocks: u32,
    op_pct: f64,
    measured: u32,
    seed: u64,
    hot_cold: bool,
) -> Run {
    let (geo, a) = geometry(logical_blocks, op_pct);
    let opts = PageOptions {
        gc_threshold: THRESHOLD,
        ..opts
    };
    let mut ftl = PageFtl::new(&geo, &opts).unwrap().with_gc_seed(seed);
    let mut flash = Flash::new(&geo);
    let lpns = geo.logical_pages;
    let mut version = 0u32;
    let mut write = |ftl: &mut PageFtl, flash: &mut Flash, lpn: u32| {
        version += 1;
        let w: PageWrite = PageTag {
            lpn: Lpn(lpn),
            version,
        };
        ftl.write(flash, &[w]);
    };
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let hot = lpns / 10;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if !hot_cold {
            return (x % lpns as u64) as u32;
        }
        let r = x >> 8;
        if r % 10 < 9 {
            ((r / 10) % hot as u64) as u32
        } else {
            hot + ((r / 10) % (lpns - hot) as u64) as u32
        }
    };
    for l in 0..lpns {
        write(&mut ftl, &mut flash, l);
    }
    for _ in 0..lpns {
        let l = next();
        write(&mut ftl, &mut flash, l);
    }
    let before = flash.stats().programs;
    for _ in 0..measured as u64 * lpns as u64 {
        let l = next();
        write(&mut ftl, &mut flash, l);
    }
    let after = flash.stats().programs;
    let host = (after[Cause::Host as usize] - before[Cause::Host as usize]) as f64;
    let gc = (after[Cause::Gc as usize] - before[Cause::Gc as usize]) as f64;
    ftl.check(&flash).unwrap();
    Run {
        waf: (host + gc) / host,
        a,
        stats: ftl.stats(),
        erases: flash.erase_counts().to_vec(),
    }
}

fn within(measured: f64, model: f64, tol: f64) -> bool {
    ((measured - model) / model).abs() <= tol
}

#[test]
fn lambert_w0_and_the_models_match_the_issues_figures() {
    for x in [-0.367, -0.3, -0.1, -0.01, -1e-6] {
        let w = lambert_w0(x);
        assert!((w * w.exp() - x).abs() < 1e-12, "W({x}) = {w}");
        assert!(w >= -1.0);
    }
    // Issue 23: 7.39, 3.12 and 2.44 at 7%, 20% and 28% with 128 pages per block.
    for (op, want) in [(0.07, 7.39), (0.20, 3.12), (0.28, 2.44)] {
        let got = a_greedy(1.0 + op, 128);
        assert!((got - want).abs() < 0.01, "{op}: {got}");
    }
    assert!((a_random(2.0) - 2.0).abs() < 1e-12);
    assert!(a_fifo(2.0) > a_greedy(2.0, 128));
}

/// Greedy at 7%, 28% and 100% OP, 256 logical blocks.
#[test]
fn greedy_matches_desnoyers() {
    for (op, measured) in [(7.0, 2), (28.0, 2), (100.0, 2)] {
        let (waf, a) = measure(GcPolicy::Greedy, 256, op, measured, 1);
        let model = a_greedy(a, PPB);
        assert!(
            within(waf, model, 0.05),
            "greedy at {op}% OP: measured {waf:.3}, model {model:.3} (a = {a:.4})"
        );
    }
}

#[test]
fn fifo_matches_desnoyers() {
    let (waf, a) = measure(GcPolicy::Fifo, 256, 28.0, 2, 2);
    let model = a_fifo(a);
    assert!(
        within(waf, model, 0.05),
        "fifo: measured {waf:.3}, model {model:.3}"
    );
}

#[test]
fn random_matches_a_over_a_minus_1() {
    let (waf, a) = measure(GcPolicy::Random, 256, 28.0, 2, 3);
    let model = a_random(a);
    assert!(
        within(waf, model, 0.05),
        "random: measured {waf:.3}, model {model:.3}"
    );
}

#[test]
fn d_choices_lies_between_random_and_greedy() {
    let (waf, a) = measure(GcPolicy::DChoices, 256, 28.0, 2, 4);
    let (lo, hi) = (a_greedy(a, PPB), a_random(a));
    assert!(
        waf > lo && waf < hi,
        "d-choices {waf:.3} not in ({lo:.3}, {hi:.3})"
    );
}

#[test]
fn windowed_greedy_and_cost_benefit_lie_between_greedy_and_fifo() {
    for p in [GcPolicy::WindowedGreedy, GcPolicy::CostBenefit] {
        let (waf, a) = measure(p, 256, 28.0, 2, 5);
        let (lo, hi) = (a_greedy(a, PPB), a_fifo(a));
        assert!(
            waf > lo * 0.97 && waf < hi,
            "{p:?} {waf:.3} not in ({lo:.3}, {hi:.3})"
        );
    }
}

#[test]
fn same_seed_same_result() {
    for p in [GcPolicy::Random, GcPolicy::DChoices] {
        let a = measure(p, 64, 28.0, 1, 9);
        assert_eq!(a, measure(p, 64, 28.0, 1, 9));
    }
}

/// The table of docs/results.md: every policy at 7% to 100% OP, 512 logical blocks,
/// four device writes measured; greedy, FIFO and random within 5% of their models,
/// d-choices between greedy and random, windowed greedy and cost-benefit between
/// greedy and FIFO (both order blocks by age, which uniform writes do not reward).
/// About 6 s in a debug build; `-- --nocapture` prints the table.
#[test]
fn gc_model_table() {
    println!("| policy | OP | a | model | measured | error |");
    println!("|---|---|---|---|---|---|");
    for op in [7.0, 10.0, 20.0, 28.0, 50.0, 100.0] {
        let mut waf_of = std::collections::BTreeMap::new();
        for p in GcPolicy::ALL {
            let (waf, a) = measure(p, 512, op, 4, 11);
            waf_of.insert(format!("{p:?}"), (waf, a));
            let (name, model) = match p {
                GcPolicy::Greedy => ("greedy", Some(a_greedy(a, PPB))),
                GcPolicy::Fifo => ("fifo", Some(a_fifo(a))),
                GcPolicy::Random => ("random", Some(a_random(a))),
                GcPolicy::DChoices => ("d_choices (d=8)", None),
                GcPolicy::WindowedGreedy => ("windowed_greedy (w=16)", None),
                GcPolicy::CostBenefit => ("cost_benefit", None),
            };
            match model {
                Some(m) => {
                    println!(
                        "| {name} | {op}% | {a:.4} | {m:.3} | {waf:.3} | {:+.1}% |",
                        (waf - m) / m * 100.0
                    );
                    assert!(within(waf, m, 0.05), "{name} at {op}%: {waf:.3} vs {m:.3}");
                }
                None => println!("| {name} | {op}% | {a:.4} | - | {waf:.3} | - |"),
            }
        }
        let w = |p: &str| waf_of[p].0;
        assert!(
            w("DChoices") > w("Greedy") && w("DChoices") < w("Random"),
            "{op}%"
        );
        for p in ["WindowedGreedy", "CostBenefit"] {
            assert!(
                w(p) >= w("Greedy") * 0.99 && w(p) <= w("Fifo") * 1.01,
                "{p} {op}%"
            );
        }
    }
}

/// Hot/cold (90% of writes to 10% of the pages), one write frontier: cost-benefit and
/// greedy stay close (issue 23: cost-benefit pulls clearly ahead only with GC writes on
/// their own frontier, item 2: `hot_cold_separate_frontier_cost_benefit_beats_greedy`).
#[test]
fn hot_cold_one_frontier_cost_benefit_near_greedy() {
    println!("| policy | OP | mix | measured |");
    println!("|---|---|---|---|");
    for op in [10.0, 28.0] {
        let mut w = Vec::new();
        for p in GcPolicy::ALL {
            let ((waf, _), _) = measure_mix(p, 512, op, 4, 12, true, false);
            println!("| {p:?} | {op}% | 90/10 | {waf:.3} |");
            w.push((p, waf));
        }
        let get = |q| w.iter().find(|(p, _)| *p == q).unwrap().1;
        let (g, cb) = (get(GcPolicy::Greedy), get(GcPolicy::CostBenefit));
        assert!(
            ((cb - g) / g).abs() < 0.25,
            "{op}%: greedy {g:.3}, cost-benefit {cb:.3}"
        );
    }
}

/// Hot/cold (90% of writes to 10% of the pages), GC copies on their own write frontier
/// (`gc_frontier = "separate"`, issue 23 item 2): cost-benefit beats greedy clearly
/// (issue 23 quotes an independent model: 3.4 against 6.3 at 10% OP), by at least 20%
/// at 10% OP; at 28% OP the gap is printed, not asserted. Same device for both
/// frontiers. `-- --nocapture` prints the table of docs/results.md.
#[test]
fn hot_cold_separate_frontier_cost_benefit_beats_greedy() {
    println!(
        "| policy | OP | shared | separate | victims from the GC stream | their valid share |"
    );
    println!("|---|---|---|---|---|---|");
    for op in [10.0, 28.0] {
        let mut w = Vec::new();
        for p in [GcPolicy::Greedy, GcPolicy::CostBenefit] {
            let ((one, _), _) = measure_mix(p, 512, op, 4, 12, true, false);
            let ((two, _), st) = measure_mix(p, 512, op, 4, 12, true, true);
            let victims = st.extra["stream_host_victims"] + st.extra["stream_gc_victims"];
            let gc_share = st.extra["stream_gc_victims"] / victims;
            let gc_valid = st.extra["stream_gc_victim_valid"]
                / (st.extra["stream_gc_victims"] * PPB as f64).max(1.0);
            println!(
                "| {p:?} | {op}% | {one:.3} | {two:.3} | {:.1}% | {:.3} |",
                gc_share * 100.0,
                gc_valid
            );
            w.push((p, two));
        }
        let (g, cb) = (w[0].1, w[1].1);
        if op == 10.0 {
            assert!(
                cb < g * 0.8,
                "{op}%: separate frontier, greedy {g:.3}, cost-benefit {cb:.3}"
            );
        }
    }
}

/// (min, max, standard deviation) of per-block erase counts.
fn wear(erases: &[u32]) -> (u32, u32, f64) {
    let n = erases.len() as f64;
    let mean = erases.iter().map(|&e| e as f64).sum::<f64>() / n;
    let var = erases
        .iter()
        .map(|&e| (e as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    (
        *erases.iter().min().unwrap(),
        *erases.iter().max().unwrap(),
        var.sqrt(),
    )
}

/// Wear levelling (issue 23 item 3) on the 90/10 hot/cold mix, 256 logical blocks at
/// 28% OP, greedy GC, 16 device writes measured after the warm-up (seed 21): static
/// levelling keeps the erase-count spread (max - min) within two of its threshold, at a
/// measured WAF (asserted within 35% of no levelling). `-- --nocapture` prints the table of
/// docs/results.md.
#[test]
fn static_wear_levelling_narrows_the_spread_at_a_waf_cost() {
    use ftlab_core::wear::WearLeveling;
    println!("| wear_leveling | wl_threshold | WAF | erases min | max | spread | std dev | blocks moved | pages moved |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for (wl, th) in [
        (WearLeveling::Off, 16),
        (WearLeveling::Dynamic, 16),
        (WearLeveling::Static, 16),
        (WearLeveling::Static, 4),
    ] {
        let opts = PageOptions {
            wear_leveling: wl,
            wl_threshold: th,
            ..PageOptions::default()
        };
        let r = run_mix(opts, 256, 28.0, 16, 21, true);
        let (min, max, sd) = wear(&r.erases);
        let x = |k: &str| r.stats.extra.get(k).unwrap_or(0.0);
        println!(
            "| {wl:?} | {th} | {:.3} | {min} | {max} | {} | {sd:.2} | {} | {} |",
            r.waf,
            max - min,
            x("wl_migrations"),
            x("wl_pages_copied")
        );
        rows.push((wl, th, r.waf, max - min, sd));
    }
    // Off and dynamic leave the spread where the mix puts it; static keeps it within
    // two erases of its threshold, narrower the lower the threshold. Its WAF is
    // measured, not a cost by construction: the moves are GC programs, but since the
    // moved cold data park on a levelling frontier of their own (cold with cold, on the
    // most-worn free block) they also separate hot from cold, which on this mix saves
    // more than the moves copy (3.022 / 2.237 against 3.153; it was +10% / +19% when
    // the cold data joined the host's open block). Asserted: within 35% of `off`.
    let (off, s16, s4) = (rows[0], rows[2], rows[3]);
    assert!(
        s16.3 <= 16 + 2 && s4.3 <= 4 + 2,
        "spread {} {}",
        s16.3,
        s4.3
    );
    assert!(off.3 > s16.3 && s16.3 > s4.3, "spread off {}", off.3);
    assert!(
        s4.4 < off.4 / 4.0,
        "std dev: off {}, static {}",
        off.4,
        s4.4
    );
    assert!(
        [s16.2, s4.2]
            .iter()
            .all(|&w| w > off.2 * 0.65 && w < off.2 * 1.35),
        "WAF: off {:.3}, static {:.3} / {:.3}",
        off.2,
        s16.2,
        s4.2
    );
}
