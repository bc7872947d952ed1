//! Benchmark: simulated host page writes per second for the `page` FTL with GC in
//! steady state — 4 GiB logical, 7% over-provisioning, 4 KiB pages (mlc-k9gag08u0m),
//! uniform random 4 KiB writes, oracle on.
//!
//! Run: `cargo bench -p ftlab --bench page_gc` (optionally `-- WRITES` to set the
//! measured writes, default 8 Mi, and `-- off` to run with the oracle off). The device is filled sequentially, then one full
//! logical capacity of random writes brings GC to steady state, then the measured writes
//! run. Only the measured phase is timed. Results go to BENCHMARKS.md by hand.

use ftlab::config::{Config, VerifyLevel};
use ftlab::sim::prepare;
use ftlab_core::flash::FlashStats;
use ftlab_core::request::{Op, Request};
use ftlab_core::rng::SplitMix64 as SplitMix;
use ftlab_core::Nanos;
use std::time::Instant;

fn main() {
    let measured: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(8 << 20);
    let verify = if std::env::args().any(|a| a == "off") {
        VerifyLevel::Off
    } else {
        VerifyLevel::On
    };
    let cfg = Config {
        ftl: "page".into(),
        nand: "mlc-k9gag08u0m".into(),
        capacity: "4GiB".parse().expect("a size"),
        op: 7.0,
        verify,
        ..Config::default()
    };
    let mut engine = prepare(&cfg).expect("valid config").engine;
    let pages = engine.geometry().logical_pages as u64;
    let t0 = Instant::now();
    engine.precondition_fill();
    let mut rng = SplitMix::new(42);
    let mut now = 0u64;
    let mut write = |engine: &mut ftlab_core::engine::Engine, rng: &mut SplitMix| {
        now += 100_000;
        let req = Request {
            arrival: Nanos(now),
            op: Op::Write,
            offset: (rng.next_u64() % pages) * 4096,
            len: 4096,
        };
        engine.submit(&req).expect("no violation");
    };
    for _ in 0..pages {
        write(&mut engine, &mut rng);
    }
    engine.reset_measurement();
    eprintln!("fill + warm-up: {:.1} s", t0.elapsed().as_secs_f64());
    let t1 = Instant::now();
    for _ in 0..measured {
        write(&mut engine, &mut rng);
    }
    let secs = t1.elapsed().as_secs_f64();
    let o = engine.outcome();
    let programs = FlashStats::total(&o.flash.programs);
    println!(
        "page_gc (verify {verify:?}): {measured} host page writes in {secs:.2} s = {:.2} M writes/s; \
         WA {:.3}, {} GC runs, {} pages copied",
        measured as f64 / secs / 1e6,
        programs as f64 / o.host.pages_written as f64,
        o.ftl.gc_invocations,
        o.ftl.gc_pages_copied
    );
}
