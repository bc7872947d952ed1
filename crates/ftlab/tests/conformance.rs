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
//! `-- gc_frontier=separate`, `-- wear_leveling=static`).

use ftlab::registry::{BUFFERS, FTLS};
use ftlab::testkit::{config, engine, exercise, PROFILES};
use ftlab_core::flash::FlashStats;
use libtest_mimic::{Arguments, Failed, Trial};

/// Scheme options whose every non-default value gets its own cases (read off each
/// scheme's options schema; a scheme that does not declare one is not affected).
const VARIED: [&str; 3] = ["gc_policy", "gc_frontier", "wear_leveling"];

fn case(
    ftl: &'static str,
    buf: &'static str,
    p: usize,
    seed: u64,
    option: Option<(&'static str, &'static str)>,
) -> Result<(), Failed> {
    let p = &PROFILES[p];
    let mut cfg = config(ftl, buf, p, seed);
    if let Some((k, v)) = option {
        cfg.ftl_options.insert(k.into(), v.into());
        if k == "gc_policy" {
            // Small d and window, so the policies differ from greedy on small devices.
            cfg.ftl_options.insert("gc_d".into(), 2.into());
            cfg.ftl_options.insert("gc_window".into(), 4.into());
        }
        if v == "static" {
            // A low threshold, so static levelling moves data on small devices.
            cfg.ftl_options.insert("wl_threshold".into(), 2.into());
        }
        // An option that needs more blocks (an open GC block) raises the device's
        // over-provisioning to the least the scheme then builds on.
        if let Ok(op) = ftlab::sim::least_op(&cfg) {
            cfg.op = cfg.op.max(op);
        }
    }
    let mut e = engine(&cfg).map_err(|err| format!("cannot build: {err}"))?;
    exercise(&mut e, seed, p.requests, p.max_pages).map_err(|err| err.to_string())?;
    let erases = FlashStats::total(&e.flash().stats().erases);
    if erases < 20 {
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
                    trials.push(Trial::test(name, move || case(f, b, pi, seed, None)));
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
                        trials.push(Trial::test(name, move || case(f, b, pi, 1, opt)));
                    }
                }
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
