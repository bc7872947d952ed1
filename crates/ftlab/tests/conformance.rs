//! The conformance suite: every FTL under every buffer, on tiny, small and realistic
//! devices, driven by a random mix of reads, writes, trims, flushes and partial pages
//! until GC or merges have run many times, against the reference map (the oracle), with
//! deep invariant checks every 500 requests and a full read-back at the end.
//!
//! One named test case per FTL x buffer x device x seed (`page/bplru/tiny/seed1`), run in
//! parallel by libtest-mimic, so a failure names its case and `cargo test --test
//! conformance -- dftl/` runs one FTL's. The cases come from the registry: a new scheme
//! is covered with no new test code.

use ftlab::registry::{BUFFERS, FTLS};
use ftlab::testkit::{config, engine, exercise, PROFILES};
use ftlab_core::flash::FlashStats;
use libtest_mimic::{Arguments, Failed, Trial};

fn case(ftl: &'static str, buf: &'static str, p: usize, seed: u64) -> Result<(), Failed> {
    let p = &PROFILES[p];
    let cfg = config(ftl, buf, p, seed);
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
                    trials.push(Trial::test(name, move || case(f, b, pi, seed)));
                }
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
