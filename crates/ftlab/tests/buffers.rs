//! The flash-aware write buffers at small sizes, under the oracle: the conformance suite
//! runs every buffer with its default size (16 MiB), which holds the whole tiny and
//! small devices, so evictions there come only from flush-cache requests. Here each
//! buffer is squeezed to one page, one block and two and a half blocks, so victim
//! selection, padding and LRU compensation run on every few writes, above every FTL,
//! with deep checks and a full read-back.

use ftlab::registry::{BUFFERS, FTLS};
use ftlab::testkit::{config, engine, exercise, PROFILES};
use ftlab_core::flash::Cause;

/// The buffers this suite squeezes (every registered buffer with a `size` option).
fn sized_buffers() -> impl Iterator<Item = &'static ftlab::registry::BufferEntry> {
    BUFFERS
        .iter()
        .filter(|b| b.options.iter().any(|o| o.name == "size"))
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
                        .insert("size".into(), toml::Value::String(size.to_string()));
                    let what = format!("{} / {} / {} / size {size}", ftl.id, buf.id, p.name);
                    let mut e = engine(&cfg).unwrap_or_else(|err| panic!("{what}: {err}"));
                    let requests = p.requests / 4;
                    if let Err(err) = exercise(&mut e, seed, requests, p.max_pages) {
                        panic!("{what}: {err}");
                    }
                    let o = e.outcome();
                    let pad_reads = o.flash.page_reads[Cause::Padding as usize];
                    let pad_writes = o.flash.programs[Cause::Padding as usize];
                    assert_eq!(pad_reads, o.buffer.padding_reads, "{what}");
                    let extra = o.buffer.extra.get("padding_writes").copied();
                    assert_eq!(extra.unwrap_or(0.0) as u64, pad_writes, "{what}");
                    if buf.id == "bplru" {
                        assert!(pad_reads > 0, "{what}: bplru never padded");
                    }
                    if matches!(buf.id, "lru" | "fab" | "blru" | "bagc") {
                        assert_eq!(pad_reads + pad_writes, 0, "{what}: padded");
                    }
                    ran += 1;
                }
            }
        }
    }
    assert!(ran >= 18, "only {ran} runs");
}
