//! The conformance run of the demand-paged FTLs (`dftl`, `tpm`) with cached mapping
//! tables so small that almost every mapping lookup misses and evicts: one entry for
//! DFTL, one translation page for TPM, with translation pages small enough that every
//! profile has several of them. Every read is checked against the oracle, deep checks
//! run every 500 requests, and everything is read back at the end.

use ftlab::registry::BUFFERS;
use ftlab::testkit::{config, engine, exercise, PROFILES};

/// Mapping entries per translation page for each profile: small enough for several
/// translation pages, large enough that the over-provisioning holds them.
fn entries_per_page(profile: &str) -> u32 {
    match profile {
        "tiny" => 16,
        "small" => 64,
        _ => 256,
    }
}

#[test]
fn demand_paged_ftls_keep_every_write_with_tiny_cmts() {
    for (ftl, cmt_entries) in [("dftl", 1u32), ("dftl", 2), ("tpm", 1)] {
        for buf in BUFFERS {
            for p in PROFILES {
                let epp = entries_per_page(p.name);
                let cmt_bytes = match ftl {
                    "tpm" => cmt_entries * epp * 4,
                    _ => cmt_entries * 8,
                };
                for seed in [1u64, 2] {
                    let what = format!(
                        "{ftl} cmt {cmt_bytes} B / {} / {} / seed {seed}",
                        buf.id, p.name
                    );
                    let mut cfg = config(ftl, buf.id, p, seed);
                    cfg.ftl_options.insert(
                        "cmt_bytes".into(),
                        serde_json::Value::from(cmt_bytes as i64),
                    );
                    cfg.ftl_options.insert(
                        "entries_per_page".into(),
                        serde_json::Value::from(epp as i64),
                    );
                    let mut e = engine(&cfg).unwrap_or_else(|err| panic!("{what}: {err}"));
                    if let Err(err) = exercise(&mut e, seed, p.requests, p.max_pages) {
                        panic!("{what}: {err}");
                    }
                    let o = e.outcome();
                    let lookups = o.ftl.map_hits + o.ftl.map_misses;
                    let evictions = o.ftl.extra["cmt_evictions"];
                    // TPM's page-sized entries hit often even with one of them (big
                    // sequential requests stay in one translation page); what matters is
                    // that misses are many and every miss evicts.
                    assert!(
                        o.ftl.map_misses >= 2_000,
                        "{what}: only {} misses in {lookups} lookups",
                        o.ftl.map_misses
                    );
                    assert!(
                        evictions >= o.ftl.map_misses as f64 - cmt_entries as f64,
                        "{what}: {evictions} evictions for {} misses",
                        o.ftl.map_misses
                    );
                    assert!(o.ftl.extra["translation_writes_evict"] > 0.0, "{what}");
                    assert!(o.ftl.extra["gc_data_blocks"] > 0.0, "{what}: no data GC");
                    assert!(
                        o.ftl.extra["gc_translation_blocks"] > 0.0,
                        "{what}: no translation GC"
                    );
                }
            }
        }
    }
}

/// The report's translation counts are exactly the flash operations with cause `map`.
#[test]
fn translation_counts_match_flash_map_operations() {
    for ftl in ["dftl", "tpm"] {
        let p = &PROFILES[1];
        let mut cfg = config(ftl, "none", p, 3);
        cfg.ftl_options
            .insert("entries_per_page".into(), serde_json::Value::from(64));
        cfg.ftl_options
            .insert("cmt_bytes".into(), serde_json::Value::from(1024));
        let mut e = engine(&cfg).unwrap();
        exercise(&mut e, 3, 5_000, p.max_pages).unwrap();
        let o = e.outcome();
        let map = ftlab_core::flash::Cause::Map as usize;
        assert_eq!(o.ftl.translation_reads, o.flash.page_reads[map], "{ftl}");
        assert_eq!(o.ftl.translation_writes, o.flash.programs[map], "{ftl}");
        let x = &o.ftl.extra;
        assert_eq!(
            x["translation_reads_miss"] + x["translation_reads_evict"] + x["translation_reads_gc"],
            o.ftl.translation_reads as f64,
            "{ftl}"
        );
        assert_eq!(
            x["translation_writes_evict"] + x["translation_writes_gc"],
            o.ftl.translation_writes as f64,
            "{ftl}"
        );
    }
}
