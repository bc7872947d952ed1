//! The block-mapped family under its non-default options: the conformance suite runs
//! every scheme with its defaults; these runs cover the other variants (naive and
//! out-of-place block mapping, a single BAST log block, FAST with no or several
//! sequential logs and a single RW log) on the tiny and small profiles, with the oracle
//! and frequent deep checks.

use ftlab::testkit::{config, engine, exercise, PROFILES};
use ftlab_core::flash::FlashStats;

const VARIANTS: &[(&str, &[(&str, &str)])] = &[
    ("block", &[("grouped", "false")]),
    ("block", &[("update", "out_of_place")]),
    ("block", &[("grouped", "false"), ("update", "out_of_place")]),
    ("bast", &[("log_blocks", "1")]),
    ("fast", &[("sw_logs", "0")]),
    ("fast", &[("sw_logs", "2"), ("rw_logs", "1")]),
    ("fast", &[("sw_logs", "0"), ("rw_logs", "1")]),
];

#[test]
fn option_variants_keep_every_write() {
    for &(ftl, opts) in VARIANTS {
        for p in &PROFILES[..2] {
            for seed in [3u64, 4, 5] {
                let mut cfg = config(ftl, "none", p, seed);
                cfg.deep_every = 50;
                for (k, v) in opts {
                    cfg.ftl_options
                        .insert(k.to_string(), ftlab_core::options::value_of_text(v));
                }
                let what = format!("{ftl} {opts:?} / {} / seed {seed}", p.name);
                let mut e = engine(&cfg).unwrap_or_else(|err| panic!("{what}: {err}"));
                if let Err(err) = exercise(&mut e, seed, 4000, p.max_pages) {
                    panic!("{what}: {err}");
                }
                let erases = FlashStats::total(&e.flash().stats().erases);
                assert!(erases >= 20, "{what}: only {erases} erases");
            }
        }
    }
}
