//! Workloads through whole runs: the named examples, replay and warm-up passes, bad
//! records in the report, and generated workloads written and read back.

use ftlab::config::{self, Config};
use ftlab::NoObserver;
use ftlab_workload::transform::Counters;
use ftlab_workload::writer::TraceWriter;
use ftlab_workload::{open_records, Record};
use std::path::{Path, PathBuf};
use std::rc::Rc;

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn sample(name: &str) -> String {
    root()
        .join("crates/ftlab-workload/tests/data")
        .join(name)
        .display()
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ftlab-wl-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn every_example_loads_validates_and_runs() {
    let mut n = 0;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    for p in &paths {
        let text = std::fs::read_to_string(p).unwrap();
        assert!(
            text.starts_with('#') && (text.contains("Table") || text.contains("WiscSee")),
            "{}: an example opens with a comment citing its source",
            p.display()
        );
        let cfg = config::load(Some(p), &[], &[]).unwrap();
        ftlab::sim::prepare(&cfg).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if cfg.format == "csv" {
            continue;
        }
        // A short run of each: the full counts are for real experiments.
        let mut short = config::load(
            Some(p),
            &["synthetic.count=300".into(), "verify=\"deep\"".into()],
            &[],
        )
        .unwrap();
        short.warmup = short.warmup.min(1);
        let out = ftlab::sim::run(&short, &mut NoObserver).unwrap();
        assert!(out.failure.is_none(), "{}", p.display());
        assert_eq!(out.report.host.requests, 300, "{}", p.display());
        n += 1;
    }
    assert_eq!(n, 18, "clash-table1, 16 clash-table2 points, cach-table1");
}

fn spc_config(extra: &[&str]) -> Config {
    let mut sets: Vec<String> = vec![
        format!("trace={:?}", sample("financial1-first10k.spc")),
        "capacity=\"64MiB\"".into(),
        "fold=true".into(),
        "op=10".into(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    config::load(None, &sets, &[]).unwrap()
}

#[test]
fn replay_and_warmup_compose() {
    let one = ftlab::sim::run(&spc_config(&[]), &mut NoObserver)
        .unwrap()
        .report;
    let two = ftlab::sim::run(&spc_config(&["replay=2"]), &mut NoObserver)
        .unwrap()
        .report;
    let warm = ftlab::sim::run(&spc_config(&["warmup=2", "replay=2"]), &mut NoObserver)
        .unwrap()
        .report;
    assert_eq!(one.host.requests, 10_000);
    assert_eq!(two.host.requests, 20_000);
    assert_eq!(warm.host.requests, 20_000, "warm-up passes are not counted");
    assert_eq!(warm.workload.requests_submitted, 40_000);
    assert_eq!(
        (warm.workload.warmup_passes, warm.workload.measured_passes),
        (2, 2)
    );
    assert_eq!(warm.workload.records_per_pass, 10_000);
    // The warmed-up device has been written before: its measured passes erase more
    // than the same passes on a fresh device.
    assert!(warm.flash.block_erases > two.flash.block_erases);
    // Time runs on across passes: two passes take about twice as long as one.
    let ratio = two.host.sim_time_ns as f64 / one.host.sim_time_ns as f64;
    assert!((1.9..2.1).contains(&ratio), "{ratio}");
}

#[test]
fn skipped_records_reach_the_report() {
    let base = [
        format!("trace={:?}", sample("ycsb-ext4.blkparse.txt.gz")),
        "format=\"blkparse\"".to_string(),
        "capacity=\"2GiB\"".to_string(),
        "fold=true".to_string(),
        "sort_window=1024".to_string(),
    ];
    let cfg = config::load(None, &base, &[]).unwrap();
    match ftlab::sim::run(&cfg, &mut NoObserver) {
        Err(ftlab::RunError::Trace(e)) => {
            assert_eq!((e.line, e.field), (29662, "time"));
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("the corrupt timestamp must stop the run"),
    }
    let mut sets = base.to_vec();
    sets.push("skip_bad=true".into());
    let cfg = config::load(None, &sets, &[]).unwrap();
    let out = ftlab::sim::run(&cfg, &mut NoObserver).unwrap();
    assert!(out.failure.is_none());
    let w = &out.report.workload;
    assert_eq!((w.skipped_records, w.records_per_pass), (1, 9886));
    let json = serde_json::to_value(&out.report).unwrap();
    assert_eq!(json["workload"]["skipped_records"], 1);
    assert_eq!(json["workload"]["format"], "blkparse");
}

#[test]
fn devices_are_selected_or_laid_side_by_side() {
    let asu0 = ftlab::sim::run(&spc_config(&["devices=[0]"]), &mut NoObserver)
        .unwrap()
        .report;
    assert_eq!(asu0.host.requests, 1013);
    let cfg = config::load(
        None,
        &[
            format!("trace={:?}", sample("financial1-first10k.spc")),
            "capacity=\"2GiB\"".into(),
            "devices=[19, 20]".into(),
            "device_layout=\"side_by_side\"".into(),
        ],
        &[],
    )
    .unwrap();
    let geo = ftlab::sim::device_geometry(&cfg).unwrap();
    let c = Rc::new(Counters::default());
    let recs: Vec<Record> = ftlab::source::workload_stream(&cfg, &geo, &c)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(recs.len(), 2870);
    let max19 = recs
        .iter()
        .filter(|r| r.device == 19)
        .map(|r| r.req.offset + r.req.len)
        .max()
        .unwrap();
    let min20 = recs
        .iter()
        .filter(|r| r.device == 20)
        .map(|r| r.req.offset)
        .min()
        .unwrap();
    assert!(
        max19 <= min20,
        "device 20's region starts after device 19's"
    );
    let out = ftlab::sim::run(&cfg, &mut NoObserver).unwrap();
    assert_eq!(out.report.host.requests, 2870);
}

fn generated(cfg: &Config) -> Vec<Record> {
    let geo = ftlab::sim::device_geometry(cfg).unwrap();
    let c = Rc::new(Counters::default());
    ftlab::source::workload_stream(cfg, &geo, &c)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn generated_workloads_round_trip_through_every_format() {
    let cfg = config::load(
        Some(&root().join("examples/clash-table1.toml")),
        &["synthetic.count=2000".into()],
        &[],
    )
    .unwrap();
    let want = generated(&cfg);
    assert_eq!(want.len(), 2000);
    for (format, ext, quantum) in [
        ("spc", "spc.gz", 1),
        ("msr", "csv", 100),
        ("mqsim", "trace.zst", 1),
        ("disksim", "ascii", 1),
        ("blkparse", "txt", 1),
    ] {
        let path = tmp(&format!("gen.{ext}"));
        let mut w = TraceWriter::new(format, &cfg.csv).unwrap();
        let mut out = ftlab_workload::input::Output::new(
            std::fs::File::create(&path).unwrap(),
            ftlab_workload::input::compression_for(&path),
        )
        .unwrap();
        w.begin(&mut out).unwrap();
        for r in &want {
            w.write(&mut out, r).unwrap();
        }
        out.finish().unwrap();
        let got: Vec<Record> = open_records(Path::new(&path), format, &Default::default())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got.len(), want.len(), "{format}");
        for (a, b) in want.iter().zip(&got) {
            let q = |t: u64| (t + quantum / 2) / quantum * quantum;
            assert_eq!(q(a.req.arrival.0), b.req.arrival.0, "{format}");
            assert_eq!(
                (a.req.op, a.req.offset, a.req.len),
                (b.req.op, b.req.offset, b.req.len)
            );
        }
        // Replaying the file runs exactly what the generator ran (times aside for MSR).
        if quantum == 1 {
            let direct = ftlab::sim::run(&cfg, &mut NoObserver).unwrap().report;
            let mut from_file = cfg.clone();
            from_file.trace = Some(path.display().to_string());
            from_file.format = format.into();
            let replayed = ftlab::sim::run(&from_file, &mut NoObserver).unwrap().report;
            assert_eq!(direct.host, replayed.host, "{format}");
            assert_eq!(direct.flash, replayed.flash, "{format}");
        }
    }
}

/// `flush_every` (co-op-buffer-ftl.txt §6.5) issues a flush-cache command after every
/// N requests of each pass; a buffer then hands everything it holds to the FTL, so
/// frequent flushes cost write hits and raise the FTL's writes, and the oracle still
/// passes.
#[test]
fn flush_every_issues_periodic_flushes() {
    let buffered = [
        "buffer=\"blru\"",
        "buffer_options.size=\"1MiB\"",
        "replay=2",
    ];
    let plain = ftlab::sim::run(&spc_config(&buffered), &mut NoObserver).unwrap();
    let mut sets = buffered.to_vec();
    sets.push("flush_every=10");
    let every10 = ftlab::sim::run(&spc_config(&sets), &mut NoObserver).unwrap();
    assert!(plain.failure.is_none() && every10.failure.is_none());
    let (p, f) = (&plain.report, &every10.report);
    assert_eq!(p.host.flush_requests, 0);
    assert_eq!(
        f.host.flush_requests,
        2 * 10_000 / 10,
        "per pass, counted anew"
    );
    assert_eq!(f.host.requests, 20_000 + 2_000);
    // Regression: the inserted flushes were counted as records of the trace.
    assert_eq!(f.workload.records_per_pass, 10_000);
    assert_eq!(f.host.pages_written, p.host.pages_written);
    let (pb, fb) = (&p.buffer, &f.buffer);
    assert!(
        fb.write_hits < pb.write_hits,
        "{} vs {}",
        fb.write_hits,
        pb.write_hits
    );
    assert!(fb.pages_flushed > pb.pages_flushed);
    let mut bad = buffered.to_vec();
    bad.push("flush_every=0");
    let e = ftlab::sim::run(&spc_config(&bad), &mut NoObserver)
        .err()
        .unwrap();
    assert!(e.to_string().contains("flush_every"), "{e}");
}

#[test]
fn an_empty_workload_is_a_workload_error_through_the_library() {
    let cfg = Config {
        trace: Some(sample("tpcc-small.mqsim.trace")),
        format: "mqsim".into(),
        devices: vec![99],
        fold: true,
        ..Config::default()
    };
    let e = ftlab::sim::run(&cfg, &mut NoObserver)
        .err()
        .expect("refused");
    assert!(matches!(e, ftlab::RunError::Workload(_)), "{e}");
    assert_eq!(e.exit_code(), ftlab::error::exit::USAGE);
    assert!(e.to_string().contains("devices (16)"), "{e}");
}

#[test]
fn epoch_times_are_rebased_and_the_report_is_deterministic() {
    // tpcc's stamps start at 0.938513 s: rebased, the first arrival is 0.
    let cfg = Config {
        trace: Some(sample("tpcc-small.mqsim.trace")),
        format: "auto".into(),
        fold: true,
        replay: 2,
        ..Config::default()
    };
    let a = ftlab::sim::run(&cfg, &mut NoObserver).unwrap().report;
    let b = ftlab::sim::run(&cfg, &mut NoObserver).unwrap().report;
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let w = &a.workload;
    assert_eq!(
        w.format.as_deref(),
        Some("mqsim"),
        "auto resolved in the report"
    );
    assert_eq!(w.first_timestamp_ns, Some(938_513_000));
    assert!(w.time_rebased);
    assert_eq!(w.span_ns, 136_489_000);
    let codes: Vec<&str> = a.notices.iter().map(|n| n.code).collect();
    // (Other notices, such as a saturated device, may follow.)
    for want in ["format_auto", "devices_share_space"] {
        assert!(codes.contains(&want), "{codes:?}");
    }
}
