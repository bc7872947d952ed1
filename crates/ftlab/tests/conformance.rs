//! The conformance suite: every FTL under every buffer, on tiny, small and realistic
//! devices, driven by a random mix of reads, writes, trims, flushes and partial pages
//! until GC or merges have run many times, against the reference map (the oracle), with
//! deep invariant checks every 500 requests and a full read-back at the end.

use ftlab::registry::{BUFFERS, FTLS};
use ftlab::testkit::{config, engine, exercise, PROFILES};
use ftlab_core::flash::FlashStats;

#[test]
fn every_ftl_under_every_buffer_keeps_every_write() {
    for ftl in FTLS {
        for buf in BUFFERS {
            for p in PROFILES {
                for seed in [1u64, 2] {
                    let cfg = config(ftl.id, buf.id, p, seed);
                    let mut e = engine(&cfg).unwrap_or_else(|err| {
                        panic!("{} / {} / {}: cannot build: {err}", ftl.id, buf.id, p.name)
                    });
                    if let Err(err) = exercise(&mut e, seed, p.requests, p.max_pages) {
                        panic!("{} / {} / {} / seed {seed}: {err}", ftl.id, buf.id, p.name);
                    }
                    let erases = FlashStats::total(&e.flash().stats().erases);
                    assert!(
                        erases >= 20,
                        "{} / {} / {}: only {erases} erases; the mix must drive GC hard",
                        ftl.id,
                        buf.id,
                        p.name
                    );
                }
            }
        }
    }
}
