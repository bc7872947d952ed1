//! The flash-aware write buffers at small sizes, under the oracle: the conformance suite
//! runs every buffer with its default size (16 MiB), which holds the whole tiny and
//! small devices, so evictions there come only from flush-cache requests. Here each
//! buffer is squeezed to one page, one block and two and a half blocks, so victim
//! selection, padding and LRU compensation run on every few writes, above every FTL,
//! with deep checks and a full read-back.

use ftlab::registry::{Padding, BUFFERS, FTLS};
use ftlab::testkit::{config, engine, exercise, PROFILES};
use ftlab_core::flash::Cause;

/// The buffers this suite squeezes (every registered buffer with a `size` option).
fn sized_buffers() -> impl Iterator<Item = &'static ftlab::registry::BufferEntry> {
    BUFFERS.iter().filter(|b| b.holds_data())
}

#[test]
fn small_buffers_keep_every_write_and_account_padding() {
    let mut ran = 0;
    for ftl in FTLS {
        for buf in sized_buffers() {
            for p in PROFILES {
                let preset = ftlab_core::nand::preset(p.nand).unwrap();
                let page = p.page_size.unwrap_or(preset.page_size) as u64;
                let ppb = p.pages_per_block.unwrap_or(preset.pages_per_block) as u64;
                for size in [page, ppb * page, ppb * page * 5 / 2] {
                    let seed = 7;
                    let mut cfg = config(ftl.id, buf.id, p, seed);
                    cfg.buffer_options
                        .insert("size".into(), serde_json::Value::String(size.to_string()));
                    let what = format!("{} / {} / {} / size {size}", ftl.id, buf.id, p.name);
                    let mut e = engine(&cfg).unwrap_or_else(|err| panic!("{what}: {err}"));
                    let requests = p.requests / 8;
                    if let Err(err) = exercise(&mut e, seed, requests, p.max_pages) {
                        panic!("{what}: {err}");
                    }
                    let o = e.outcome();
                    let pad_reads = o.flash.page_reads[Cause::Padding as usize];
                    let pad_writes = o.flash.programs[Cause::Padding as usize];
                    assert_eq!(pad_reads, o.buffer.padding_reads, "{what}");
                    // An FTL may program its own filler pages as padding too (cach).
                    let buf_writes = o.buffer.extra.get("padding_writes");
                    let buf_writes = buf_writes.unwrap_or(0.0) as u64;
                    assert!(
                        buf_writes <= pad_writes,
                        "{what}: {buf_writes} > {pad_writes}"
                    );
                    if ftl.id != "cach" {
                        assert_eq!(buf_writes, pad_writes, "{what}");
                    }
                    match buf.padding {
                        Padding::Always => assert!(pad_reads > 0, "{what}: never padded"),
                        Padding::Never => {
                            assert_eq!(pad_reads + buf_writes, 0, "{what}: padded")
                        }
                        Padding::Sometimes => {}
                    }
                    ran += 1;
                }
            }
        }
    }
    assert!(ran >= 18, "only {ran} runs");
}

/// The FTL options of the co-optimised schemes (OSM, BA-GC, a fixed RW threshold),
/// which the conformance suite does not reach (it runs defaults), under every buffer.
#[test]
fn coop_ftl_options_keep_every_write_under_every_buffer() {
    let variants: &[(&str, &[(&str, bool)])] = &[
        ("bast", &[("osm", true)]),
        ("bast", &[("ba_gc", true)]),
        ("bast", &[("osm", true), ("ba_gc", true)]),
        ("fast", &[("osm", true)]),
        ("fast", &[("ba_gc", true)]),
        (
            "fast",
            &[("osm", true), ("ba_gc", true), ("rw_adapt", false)],
        ),
    ];
    for (ftl, opts) in variants {
        let (mut osm, mut ba_bm, mut psm) = (0, 0, 0);
        for buf in BUFFERS {
            for p in PROFILES {
                let preset = ftlab_core::nand::preset(p.nand).unwrap();
                let page = p.page_size.unwrap_or(preset.page_size) as u64;
                let ppb = p.pages_per_block.unwrap_or(preset.pages_per_block) as u64;
                let seed = 11;
                let mut cfg = config(ftl, buf.id, p, seed);
                for (k, v) in opts.iter() {
                    cfg.ftl_options
                        .insert(k.to_string(), serde_json::Value::Bool(*v));
                }
                if buf.holds_data() {
                    cfg.buffer_options
                        .insert("size".into(), serde_json::Value::from(ppb * page * 5 / 2));
                }
                let what = format!("{ftl} {opts:?} / {} / {}", buf.id, p.name);
                let mut e = engine(&cfg).unwrap_or_else(|err| panic!("{what}: {err}"));
                if let Err(err) = exercise(&mut e, seed, p.requests / 8, p.max_pages) {
                    panic!("{what}: {err}");
                }
                let s = e.outcome().ftl;
                osm += s.merges_osm;
                ba_bm += s.merges_ba_bm;
                psm += s.merges_padding_switch;
            }
        }
        let has = |k: &str| opts.iter().any(|(o, v)| *o == k && *v);
        assert_eq!(osm > 0, has("osm"), "{ftl} {opts:?}: {osm} OSMs");
        assert_eq!(ba_bm > 0, has("ba_gc"), "{ftl} {opts:?}: {ba_bm} BA-BMs");
        if !has("osm") {
            assert!(psm > 0, "{ftl} {opts:?}: padded buffers made no PSM");
        }
    }
}

/// `--buffer coop` above BAST or FAST turns OSM on unless the user set it
/// (co-op-buffer-ftl.txt §3: CO-OP is the buffer and OSM together), echoes it in the
/// config and says so in a notice; an explicit `osm = false` runs the buffer alone.
#[test]
fn coop_buffer_turns_osm_on_unless_set() {
    for ftl in ["bast", "fast"] {
        let run = |extra: &[&str]| {
            let mut sets: Vec<String> = [
                format!("ftl={ftl}"),
                "buffer=coop".into(),
                "capacity=\"8MiB\"".into(),
                "synthetic.count=6000".into(),
                "synthetic.read_ratio=0".into(),
                "synthetic.p_sequential=0.8".into(),
                "synthetic.request_bytes=65536".into(),
                "buffer_options.size=262144".into(),
            ]
            .into();
            sets.extend(extra.iter().map(|s| s.to_string()));
            let cfg = ftlab::config::load(None, &sets, &[]).unwrap();
            let out = ftlab::sim::run(&cfg, &mut ftlab::NoObserver).unwrap();
            assert!(out.failure.is_none(), "{ftl}: {:?}", out.failure);
            serde_json::to_value(&out.report).unwrap()
        };
        let implied = run(&[]);
        assert_eq!(implied["config"]["ftl_options"]["osm"], true, "{ftl}");
        let codes: Vec<&str> = implied["notices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["code"].as_str().unwrap())
            .collect();
        assert!(codes.contains(&"implied_osm"), "{ftl}: {codes:?}");
        assert!(
            implied["ftl"]["merges"]["osm"].as_u64().unwrap() > 0,
            "{ftl}: no OSM with osm implied"
        );
        let alone = run(&["ftl_options.osm=false"]);
        assert_eq!(alone["config"]["ftl_options"]["osm"], false, "{ftl}");
        assert_eq!(alone["ftl"]["merges"]["osm"], 0, "{ftl}");
        assert!(
            !alone["notices"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n["code"] == "implied_osm"),
            "{ftl}: an explicit setting is not a notice"
        );
        // Other buffers are left alone.
        let blru = run(&["buffer=blru"]);
        assert_eq!(blru["config"]["ftl_options"]["osm"], false, "{ftl}");
    }
}
