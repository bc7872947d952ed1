//! Read-ahead (issue 26 item 5): the workload read on its own thread gives the same
//! report, byte for byte, as read on the simulation's thread, including runs that stop
//! before the workload ends (a worn-out device, a violation), where the reader has read
//! past the last request the simulation took. Its own test binary: read-ahead is a
//! process-wide switch.

use ftlab::config::{Config, Precondition};
use ftlab::sim::{run, RunOutput};
use ftlab::NoObserver;

/// The switch is process-wide: one test at a time sets it.
static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn report(cfg: &Config, read_ahead: bool) -> (String, RunOutput) {
    let _one = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    ftlab::readahead::set_enabled(read_ahead);
    let out = run(cfg, &mut NoObserver).expect("the run starts");
    ftlab::readahead::set_enabled(true);
    (serde_json::to_string_pretty(&out.report).unwrap(), out)
}

fn same_either_way(cfg: &Config) -> RunOutput {
    let (on, out) = report(cfg, true);
    let (off, _) = report(cfg, false);
    assert!(on == off, "read-ahead changed the report");
    out
}

#[test]
fn a_trace_with_transforms_reads_the_same() {
    let cfg = Config {
        ftl: "fast".into(),
        trace: Some("../../tests/data/financial1-first10k.spc".into()),
        format: "spc".into(),
        capacity: "32MiB".parse().unwrap(),
        fold: true,
        warmup: 1,
        replay: 2,
        shift_sectors: 3,
        precondition: Precondition::Fill,
        ..Config::default()
    };
    let out = same_either_way(&cfg);
    assert!(out.failure.is_none(), "{:?}", out.failure);
    assert!(out.requests > 10_000, "{}", out.requests);
}

#[test]
fn a_generated_workload_reads_the_same() {
    let mut cfg = Config {
        ftl: "dftl".into(),
        capacity: "16MiB".parse().unwrap(),
        ..Config::default()
    };
    cfg.synthetic.count = 30_000;
    cfg.synthetic.read_ratio = 0.3;
    let out = same_either_way(&cfg);
    assert_eq!(out.requests, 30_000);
}

/// The run ends when the device wears out, thousands of requests before the reader
/// stops: the workload's counts are those of the requests taken, not those read.
#[test]
fn a_run_that_stops_early_counts_only_what_it_took() {
    let mut cfg = Config {
        ftl: "page".into(),
        capacity: "4MiB".parse().unwrap(),
        op: 25.0,
        until_worn_out: true,
        ..Config::default()
    };
    cfg.synthetic.count = 50_000;
    cfg.synthetic.read_ratio = 0.0;
    cfg.ftl_options.insert("pe_limit".into(), 3.into());
    let out = same_either_way(&cfg);
    let e = out.report.endurance.as_ref().expect("worn out");
    assert!(e.request < 50_000, "ended in the first pass: {}", e.request);
    // The trace version: a worn-out run over a real trace, stopped in its first pass.
    let cfg = Config {
        trace: Some("../../tests/data/financial1-first10k.spc".into()),
        format: "spc".into(),
        fold: true,
        ..cfg
    };
    let out = same_either_way(&cfg);
    assert!(out.report.endurance.is_some());
}

/// A trace the reader refuses on opening is refused the same way.
#[test]
fn an_unreadable_trace_is_refused_the_same_way() {
    let cfg = Config {
        trace: Some("../../tests/data/no-such-trace.spc".into()),
        format: "spc".into(),
        ..Config::default()
    };
    let _one = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    let on = run(&cfg, &mut NoObserver)
        .err()
        .expect("refused")
        .to_string();
    ftlab::readahead::set_enabled(false);
    let off = run(&cfg, &mut NoObserver)
        .err()
        .expect("refused")
        .to_string();
    ftlab::readahead::set_enabled(true);
    assert_eq!(on, off);
    assert!(on.contains("no-such-trace"), "{on}");
}
