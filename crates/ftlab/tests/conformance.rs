//! The conformance suite: every FTL under every buffer, on tiny, small and realistic
//! devices, driven by a random mix of reads, writes, trims, flushes and partial pages
//! until GC or merges have run many times, against the reference map (the oracle), with
//! deep invariant checks every 500 requests and a full read-back at the end.
//!
//! One named test case per FTL x buffer x device x seed (`page/bplru/tiny/seed1`), run in
//! parallel by libtest-mimic, so a failure names its case and `cargo test --test
//! conformance -- dftl/` runs one FTL's. The cases come from the registry: a new scheme
//! is covered with no new test code. A scheme that declares `gc_policy` also runs each
//! of its other victim policies (`-- gc_policy=fifo` runs those of FIFO), and so for
//! the other non-default values of the options in `VARIED` (issue 23:
//! `-- gc_frontier=separate`, `-- wear_leveling=static`; issue 22: `-- gc_scope=per_die`,
//! with round-robin allocation on 2 x 2 dies), and a scheme that declares
//! `pe_limit` runs with a small one (`-- pe_limit=`): blocks retire, and a device that
//! wears out ends its case there (with blocks retired or the device worn out, never
//! another panic); every scheme also runs with 5% initial bad blocks
//! (`-- bad_blocks=`). Option combinations in `COMBOS` run as their own cases too
//! (`-- map_page_home=u_block`). The schemes with die-aware allocation (`DIE_ALLOC`, issue 22
//! item 3) run each multi-die `die_alloc` under parallel timing on 2 x 2 dies
//! (`-- die_alloc=`).

use ftlab::registry::{BUFFERS, FTLS};
use ftlab::testkit::{config, engine, exercise, PROFILES};
use ftlab_core::flash::FlashStats;
use ftlab_core::ftl::WornOut;
use libtest_mimic::{Arguments, Failed, Trial};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Scheme options whose every non-default value gets its own cases (read off each
/// scheme's options schema; a scheme that does not declare one is not affected).
const VARIED: [&str; 5] = [
    "gc_policy",
    "gc_frontier",
    "wear_leveling",
    "gc_scope",
    "mapping",
];

/// Option combinations a single varied option cannot reach (an option that applies only
/// with another one's non-default value), per scheme: each runs as its own cases.
/// A scheme, the case label and the options it sets.
type Combo = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const COMBOS: [Combo; 1] = [(
    "superblock",
    "map_page_home=u_block",
    &[("mapping", "map_page"), ("map_page_home", "u_block")],
)];

/// Schemes whose `die_alloc` takes a multi-die value, and those values.
const DIE_ALLOC: [&str; 5] = ["page", "dftl", "tpm", "dac", "cach"];
const DIE_ALLOC_VALUES: [&str; 3] = ["round_robin", "static", "least_busy"];

/// The small P/E limit of the retirement cases.
const PE_LIMIT: u32 = 3;
const PE_LIMIT_STR: &str = "3";

fn case(
    ftl: &'static str,
    buf: &'static str,
    p: usize,
    seed: u64,
    option: Option<(&'static str, &'static str)>,
    combo: &'static [(&'static str, &'static str)],
) -> Result<(), Failed> {
    let p = &PROFILES[p];
    let mut cfg = config(ftl, buf, p, seed);
    for &(k, v) in combo {
        cfg.ftl_options.insert(k.into(), v.into());
    }
    if !combo.is_empty() {
        if let Ok(op) = ftlab::sim::least_op(&cfg) {
            cfg.op = cfg.op.max(op);
        }
    }
    if let Some((k, v)) = option {
        if k != "bad_blocks" {
            cfg.ftl_options.insert(k.into(), v.into());
        }
        if k == "gc_policy" {
            // Small d and window, so the policies differ from greedy on small devices.
            cfg.ftl_options.insert("gc_d".into(), 2.into());
            cfg.ftl_options.insert("gc_window".into(), 4.into());
        }
        if v == "static" {
            // A low threshold, so static levelling moves data on small devices.
            cfg.ftl_options.insert("wl_threshold".into(), 2.into());
        }
        if k == "bad_blocks" {
            // Initial bad blocks at `v` percent, hidden below the FTL.
            cfg.bad_blocks = true;
            cfg.nand_params.bad_block_percent = Some(v.parse::<f64>()?);
        }
        if k == "gc_scope" {
            // GC per die needs dies and one open block on each.
            cfg.ftl_options
                .insert("die_alloc".into(), "round_robin".into());
        }
        if k == "die_alloc" || k == "gc_scope" {
            // Parallel timing on 2 channels x 2 dies: four die streams.
            cfg.timing = ftlab::config::TimingModel::Parallel;
            cfg.channels = Some(2);
            cfg.dies = Some(2);
        }
        if k == "pe_limit" {
            cfg.ftl_options.insert(k.into(), v.parse::<u32>()?.into());
            // Blocks to retire before the device wears out.
            cfg.op += 100.0;
        }
        // An option that needs more blocks (an open GC block) raises the device's
        // over-provisioning to the least the scheme then builds on.
        if let Ok(op) = ftlab::sim::least_op(&cfg) {
            cfg.op = cfg.op.max(op);
        }
    }
    let mut e = engine(&cfg).map_err(|err| format!("cannot build: {err}"))?;
    let ran = catch_unwind(AssertUnwindSafe(|| {
        exercise(&mut e, seed, p.requests, p.max_pages)
    }));
    let worn_out = match ran {
        Ok(r) => {
            r.map_err(|err| err.to_string())?;
            false
        }
        Err(p)
            if p.downcast_ref::<WornOut>().is_some()
                && option.is_some_and(|o| o.0 == "pe_limit") =>
        {
            true
        }
        Err(p) => resume_unwind(p),
    };
    if option.is_some_and(|o| o.0 == "pe_limit") {
        let retired = e.ftl_stats().extra.get("retired_blocks").unwrap_or(0.0);
        if retired == 0.0 && !worn_out {
            return Err("pe_limit: no block retired and the device did not wear out".into());
        }
        if e.flash().erase_counts().iter().any(|&n| n > PE_LIMIT) {
            return Err(format!("a block was erased past pe_limit {PE_LIMIT}").into());
        }
    }
    let erases = FlashStats::total(&e.flash().stats().erases);
    // (A device worn out early has ended its case.)
    if erases < 20 && !worn_out {
        return Err(format!("only {erases} erases; the mix must drive GC hard").into());
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for ftl in FTLS {
        for buf in BUFFERS {
            for (pi, p) in PROFILES.iter().enumerate() {
                for seed in [1u64, 2] {
                    let (f, b) = (ftl.id, buf.id);
                    let name = format!("{f}/{b}/{}/seed{seed}", p.name);
                    trials.push(Trial::test(name, move || case(f, b, pi, seed, None, &[])));
                }
            }
        }
        // Every GC victim policy of a scheme that declares `gc_policy` and every other
        // option of `VARIED` it declares (issue 23), read off its options: the default
        // already ran above; the others without a buffer and with one that pads
        // (`bplru`), on every device, seed 1.
        let fields = ftl.options.fields();
        for key in VARIED {
            let Some(field) = fields.iter().find(|f| f.name == key) else {
                continue;
            };
            let values: Vec<&'static str> = field
                .kind
                .split(" | ")
                .filter(|v| *v != field.default)
                .map(|v| &*v.to_string().leak())
                .collect();
            for value in values {
                for b in ["none", "bplru"] {
                    for (pi, p) in PROFILES.iter().enumerate() {
                        let f = ftl.id;
                        let name = format!("{f}/{b}/{}/seed1/{key}={value}", p.name);
                        let opt = Some((key, value));
                        trials.push(Trial::test(name, move || case(f, b, pi, 1, opt, &[])));
                    }
                }
            }
        }
        // Option combinations (`COMBOS`), without a buffer and with `bplru`.
        for &(scheme, label, pairs) in COMBOS.iter().filter(|c| c.0 == ftl.id) {
            for b in ["none", "bplru"] {
                for (pi, p) in PROFILES.iter().enumerate() {
                    let name = format!("{scheme}/{b}/{}/seed1/{label}", p.name);
                    trials.push(Trial::test(name, move || {
                        case(scheme, b, pi, 1, None, pairs)
                    }));
                }
            }
        }
        // Initial bad blocks (issue 23 item 4), every scheme: 5% of the blocks.
        for b in ["none", "bplru"] {
            for (pi, p) in PROFILES.iter().enumerate() {
                let f = ftl.id;
                let name = format!("{f}/{b}/{}/seed1/bad_blocks=5", p.name);
                let opt = Some(("bad_blocks", "5"));
                trials.push(Trial::test(name, move || case(f, b, pi, 1, opt, &[])));
            }
        }
        // Die-aware allocation (issue 22 item 3): every multi-die value, with and
        // without a buffer, on every device, seed 1.
        if DIE_ALLOC.contains(&ftl.id) {
            for value in DIE_ALLOC_VALUES {
                for b in ["none", "bplru"] {
                    for (pi, p) in PROFILES.iter().enumerate() {
                        let f = ftl.id;
                        let name = format!("{f}/{b}/{}/seed1/die_alloc={value}", p.name);
                        let opt = Some(("die_alloc", value));
                        trials.push(Trial::test(name, move || case(f, b, pi, 1, opt, &[])));
                    }
                }
            }
        }
        // Retirement (issue 23 item 4), where the scheme declares `pe_limit`.
        if fields.iter().any(|f| f.name == "pe_limit") {
            for b in ["none", "bplru"] {
                for (pi, p) in PROFILES.iter().enumerate() {
                    let f = ftl.id;
                    let name = format!("{f}/{b}/{}/seed1/pe_limit={PE_LIMIT}", p.name);
                    let opt = Some(("pe_limit", PE_LIMIT_STR));
                    trials.push(Trial::test(name, move || case(f, b, pi, 1, opt, &[])));
                }
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
