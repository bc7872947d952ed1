//! CACH-FTL and C-lash beyond their defaults: the conformance mix (oracle, deep checks,
//! read-back; arrivals stretched to leave idle gaps) on every profile with the options that the default run does not reach
//! (idle-time GC, out-of-place BMR, extreme thresholds, early/no merge, read-miss
//! insertion), and the report keys both schemes add, deterministically.

use ftlab::config::Config;
use ftlab::sim::run;
use ftlab::testkit::{config, engine, Mix, MixConfig, PROFILES};
use ftlab::NoObserver;
use ftlab_core::engine::{Engine, SimError};

/// The testkit's `exercise` with arrivals stretched 30 times, so the device goes idle
/// between bursts and idle-time GC gets gaps (the default mix keeps it saturated).
fn exercise_with_gaps(
    e: &mut Engine,
    seed: u64,
    requests: u64,
    max_pages: u32,
) -> Result<(), SimError> {
    let g = e.geometry().clone();
    let mix = MixConfig {
        requests,
        max_pages,
        gap_max_us: MixConfig::default().gap_max_us * 30,
        ..MixConfig::default()
    };
    for r in Mix::new(&mix, seed, g.logical_pages as u64, g.page_size as u64) {
        e.submit(&r)?;
    }
    e.check_deep()?;
    e.verify_readback()?;
    Ok(())
}

type Opts = &'static [(&'static str, &'static str)];

fn set(cfg: &mut Config, ftl: Opts, buf: Opts) {
    for (k, v) in ftl {
        cfg.ftl_options
            .insert(k.to_string(), ftlab_core::options::value_of_text(v));
    }
    for (k, v) in buf {
        cfg.buffer_options
            .insert(k.to_string(), ftlab_core::options::value_of_text(v));
    }
}

#[test]
fn cach_and_clash_variants_keep_every_write() {
    // (ftl, ftl options, buffer, buffer options)
    let variants: &[(&str, Opts, &str, Opts)] = &[
        ("cach", &[("async_free_percent", "60")], "none", &[]),
        ("cach", &[("async_free_percent", "60")], "clash", &[]),
        (
            "cach",
            &[("bmr_update", "out_of_place"), ("async_free_percent", "40")],
            "clash",
            &[("merge", "early")],
        ),
        ("cach", &[("threshold", "0")], "clash", &[("merge", "none")]),
        (
            "cach",
            &[("threshold", "1"), ("pmr_gc_min_invalid", "2")],
            "none",
            &[],
        ),
        (
            "cach",
            &[("threshold", "32"), ("async_gc", "false")],
            "none",
            &[],
        ),
        (
            "page",
            &[],
            "clash",
            &[("read_miss_insert", "true"), ("evict_with_p_space", "true")],
        ),
        (
            "cach",
            &[],
            "clash",
            &[("p_space_pages", "7"), ("b_space_blocks", "1")],
        ),
    ];
    for &(ftl, fo, buf, bo) in variants {
        let mut async_runs = 0.0;
        for p in PROFILES {
            let seed = 3;
            let mut cfg = config(ftl, buf, p, seed);
            set(&mut cfg, fo, bo);
            let what = format!("{ftl} {fo:?} / {buf} {bo:?} / {}", p.name);
            let mut e = engine(&cfg).unwrap_or_else(|err| panic!("{what}: cannot build: {err}"));
            if let Err(err) = exercise_with_gaps(&mut e, seed, p.requests, p.max_pages) {
                panic!("{what}: {err}");
            }
            let x = e.outcome().ftl.extra;
            async_runs +=
                x.get("pmr_gc_async").unwrap_or(0.0) + x.get("bmr_gc_async").unwrap_or(0.0);
        }
        if fo.contains(&("async_free_percent", "60")) {
            assert!(
                async_runs > 0.0,
                "{ftl} {fo:?} / {buf}: idle-time GC never ran"
            );
        }
    }
}

fn financial1(ftl: &str, buffer: &str) -> Config {
    Config {
        ftl: ftl.into(),
        buffer: buffer.into(),
        trace: Some("../../tests/data/financial1-first10k.spc".into()),
        format: "spc".into(),
        capacity: "64MiB".parse().unwrap(),
        fold: true,
        op: 11.12,
        nand: "agrawal-4k".into(),
        precondition: ftlab::config::Precondition::Fill,
        ..Config::default()
    }
}

#[test]
fn clash_above_cach_reports_groups_regions_and_gc_deterministically() {
    let cfg = financial1("cach", "clash");
    let a = run(&cfg, &mut NoObserver).unwrap();
    assert!(a.failure.is_none(), "{:?}", a.failure);
    let b = run(&cfg, &mut NoObserver).unwrap();
    let (ja, jb) = (
        serde_json::to_string(&a.report).unwrap(),
        serde_json::to_string(&b.report).unwrap(),
    );
    assert_eq!(ja, jb, "same config, same report");
    let r = &a.report;
    for key in [
        "switches",
        "b_evictions",
        "flush_group_pages_1",
        "flush_group_pages_33_64",
    ] {
        assert!(r.buffer.extra.contains_key(key), "buffer.extra.{key}");
    }
    let hist: f64 = r
        .buffer
        .extra
        .iter()
        .filter(|(k, _)| k.starts_with("flush_group_pages_"))
        .map(|(_, f)| f.value)
        .sum();
    assert_eq!(
        hist, r.buffer.flushes as f64,
        "every flushed group is in the histogram"
    );
    let x = &r.ftl.extra;
    let received: f64 = x
        .iter()
        .filter(|(k, _)| k.starts_with("group_pages_"))
        .map(|(_, f)| f.value)
        .sum();
    assert_eq!(
        received, r.buffer.flushes as f64,
        "cach sees every flushed group"
    );
    assert_eq!(
        x["pmr_pages_written"] + x["bmr_pages_written"],
        r.buffer.pages_flushed as f64
    );
    assert_eq!(
        x["pmr_erases"] + x["bmr_erases"],
        r.flash.block_erases as f64
    );
    assert!(r.ftl.mapping_bytes > 0 && x["map_bytes_paper"] > 0.0);
}
