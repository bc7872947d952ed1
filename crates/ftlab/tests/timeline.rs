//! The timeline (issue 21): its intervals add up to the report's totals, whatever the
//! interval, scheme, warm-up or power losses; it is deterministic; and a run without
//! one keeps the report's layout.

use ftlab::config::Config;
use ftlab::timeline::TimelineEvery;
use ftlab::{run, NoObserver, Report};
use ftlab_core::Nanos;

fn small(ftl: &str, buffer: &str) -> Config {
    let mut c = Config {
        ftl: ftl.into(),
        buffer: buffer.into(),
        capacity: "16MiB".parse().unwrap(),
        ..Config::default()
    };
    c.synthetic.count = 12_345;
    c
}

/// Every per-interval count sums to the report's total of the same figure.
fn assert_sums_equal_totals(r: &Report, what: &str) {
    let t = r.timeline.as_ref().expect("a timeline");
    let rows = &t.intervals;
    let sum = |f: fn(&ftlab_report::timeline::Interval) -> u64| rows.iter().map(f).sum::<u64>();
    let m = &r.ftl.merges;
    let pairs = [
        ("requests", sum(|i| i.requests), r.host.requests),
        ("reads", sum(|i| i.read_requests), r.host.read_requests),
        ("writes", sum(|i| i.write_requests), r.host.write_requests),
        (
            "host pages written",
            sum(|i| i.host_pages_written),
            r.host.pages_written,
        ),
        (
            "page reads",
            sum(|i| i.flash_page_reads),
            r.flash.page_reads,
        ),
        (
            "spare reads",
            sum(|i| i.flash_spare_reads),
            r.flash.spare_reads,
        ),
        ("programs", sum(|i| i.flash_programs), r.flash.page_programs),
        ("erases", sum(|i| i.flash_erases), r.flash.block_erases),
        ("gc", sum(|i| i.gc_collections), r.ftl.gc.invocations),
        ("switch", sum(|i| i.merges_switch), m.switch),
        ("partial", sum(|i| i.merges_partial), m.partial),
        ("full", sum(|i| i.merges_full), m.full),
        (
            "other merges",
            sum(|i| i.merges_other),
            m.padding_switch + m.osm + m.ba_bm,
        ),
        ("power losses", sum(|i| i.power_losses), r.power_loss.events),
    ];
    for (name, got, want) in pairs {
        assert_eq!(got, want, "{what}: sum of {name} over the timeline");
    }
    // The report's maximum comes from its histogram (3 significant digits); the
    // timeline keeps the exact one.
    let max = rows
        .iter()
        .filter_map(|i| i.latency_max_ns)
        .max()
        .unwrap_or(0);
    let want = r.host.response_ns.max;
    assert!(
        max <= want && want - max <= want / 1000,
        "{what}: latency max {max} vs {want}"
    );
    if let Some(last) = rows.last() {
        assert_eq!(
            last.waf_cumulative, r.waf,
            "{what}: cumulative WAF at the end"
        );
    }
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.index, i as u64);
        assert!(row.start_ns <= row.end_ns, "{what}: row {i}");
        if i > 0 {
            assert!(rows[i - 1].end_ns <= row.start_ns, "{what}: rows in order");
        }
    }
    let power = t.marks.iter().filter(|m| m.kind != "drain").count() as u64;
    assert_eq!(power, r.power_loss.events, "{what}: power-loss marks");
    // The end-of-run drain, when it wrote anything, is the last interval and has a mark.
    let drains: Vec<_> = t.marks.iter().filter(|m| m.kind == "drain").collect();
    if r.end_of_run.drain_programs > 0 {
        assert_eq!(drains.len(), 1, "{what}: one drain mark");
        assert_eq!(
            drains[0].interval + 1,
            rows.len() as u64,
            "{what}: drain last"
        );
        assert_eq!(
            rows.last().unwrap().requests,
            0,
            "{what}: drain has no requests"
        );
    } else {
        assert!(drains.is_empty(), "{what}: no drain, no mark");
    }
}

#[test]
fn timeline_sums_equal_the_report_totals() {
    for (ftl, buffer) in [
        ("page", "none"),
        ("dftl", "lru"),
        ("fast", "bplru"),
        ("bast", "none"),
    ] {
        for every in ["1000", "777", "5ms", "1s"] {
            let mut cfg = small(ftl, buffer);
            cfg.timeline = Some(every.parse().unwrap());
            let out = run(&cfg, &mut NoObserver).unwrap();
            assert!(out.failure.is_none());
            assert_sums_equal_totals(&out.report, &format!("{ftl}/{buffer} every {every}"));
        }
    }
}

#[test]
fn request_intervals_hold_exactly_n_requests_but_the_last() {
    let mut cfg = small("page", "none");
    cfg.timeline = Some(TimelineEvery::Requests(1000));
    let r = run(&cfg, &mut NoObserver).unwrap().report;
    let rows = &r.timeline.as_ref().unwrap().intervals;
    assert_eq!(rows.len(), 13);
    assert!(rows[..12].iter().all(|i| i.requests == 1000));
    assert_eq!(rows[12].requests, 345);
    assert_eq!(r.timeline.as_ref().unwrap().every, "1k");
    let d = r.distributions.as_ref().unwrap();
    assert_eq!(d.response_cdf.last().unwrap().ns, r.host.response_ns.max);
    let blocks: u64 = d.erase_count.iter().map(|b| b.blocks).sum();
    assert_eq!(blocks, d.valid_pages.iter().map(|b| b.blocks).sum::<u64>());
    assert!(blocks > 0);
}

#[test]
fn time_intervals_are_aligned_and_idle_gaps_are_one_row() {
    let mut cfg = small("page", "none");
    cfg.timeline = Some(TimelineEvery::Time(Nanos(1_000_000)));
    let r = run(&cfg, &mut NoObserver).unwrap().report;
    let rows = &r.timeline.as_ref().unwrap().intervals;
    assert!(rows.len() > 2);
    for row in rows {
        assert_eq!(row.start_ns % 1_000_000, 0, "{row:?}");
        assert_eq!(row.end_ns % 1_000_000, 0, "{row:?}");
        if row.requests > 0 {
            assert_eq!(row.end_ns - row.start_ns, 1_000_000, "{row:?}");
        }
    }
}

#[test]
fn warm_up_and_power_losses_are_placed_on_the_measured_timeline() {
    let mut cfg = small("page", "lru");
    cfg.warmup = 1;
    cfg.power_loss = vec!["15000".into(), "20000".into()];
    cfg.timeline = Some("2k".parse().unwrap());
    let r = run(&cfg, &mut NoObserver).unwrap().report;
    assert_eq!(r.power_loss.events, 2);
    assert_sums_equal_totals(&r, "warm-up + power losses");
    let t = r.timeline.as_ref().unwrap();
    assert_eq!(t.marks[0].after_request, 15_000 - 12_345 - 1);
    assert_eq!(t.marks[0].kind, "power_loss");
    assert_eq!(t.marks[0].interval, 1);
}

#[test]
fn the_same_config_gives_the_same_timeline_and_none_gives_no_section() {
    let mut cfg = small("dftl", "lru");
    cfg.timeline = Some("500".parse().unwrap());
    let a = serde_json::to_string(&run(&cfg, &mut NoObserver).unwrap().report).unwrap();
    let b = serde_json::to_string(&run(&cfg, &mut NoObserver).unwrap().report).unwrap();
    assert_eq!(a, b);
    assert!(a.contains("\"timeline\":{\"every\":\"500\""));
    cfg.timeline = None;
    let plain = serde_json::to_string(&run(&cfg, &mut NoObserver).unwrap().report).unwrap();
    assert!(!plain.contains("\"timeline\"") && !plain.contains("\"distributions\""));
}

#[test]
fn the_timeline_key_is_checked_and_names_itself() {
    for bad in ["0", "abc", "-1", "1.5"] {
        let e = ftlab::config::load(None, &[format!("timeline={bad}")], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`timeline`"), "{bad}: {e}");
    }
    let c = ftlab::config::load(None, &["timeline=\"250ms\"".into()], &[]).unwrap();
    assert_eq!(c.timeline, Some(TimelineEvery::Time(Nanos(250_000_000))));
    assert!(c.to_toml().unwrap().contains("timeline = \"250ms\""));
}

#[test]
fn docs_report_md_lists_every_timeline_column() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/report.md");
    let doc = std::fs::read_to_string(path).unwrap();
    for c in ftlab_report::timeline::COLUMNS {
        let row = format!("| `{}` | {} |", c.key, c.unit);
        assert!(doc.contains(&row), "docs/report.md lacks the row `{row}`");
    }
}
