//! Engine options seen end to end through `run`: read-modify-write, trims, warm-up,
//! preconditioning, idle time and the parallel timing model.

use ftlab::config::Config;
use ftlab::sim::{prepare, run};
use ftlab::NoObserver;
use ftlab_core::flash::Cause;
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;

fn small() -> Config {
    let mut c = Config {
        capacity: "16MiB".parse().unwrap(),
        ..Config::default()
    };
    c.synthetic.count = 2000;
    c
}

fn req(op: Op, offset: u64, len: u64) -> Request {
    Request {
        arrival: Nanos(0),
        op,
        offset,
        len,
    }
}

#[test]
fn partial_page_write_is_whole_page_unless_rmw() {
    for (rmw, reads) in [(false, 0), (true, 1)] {
        let cfg = Config { rmw, ..small() };
        let mut e = prepare(&cfg).unwrap().engine;
        e.submit(&req(Op::Write, 0, 2048)).unwrap();
        e.reset_measurement();
        // Sectors 1..3 of page 0: partly covered, and page 0 holds data.
        e.submit(&req(Op::Write, 512, 1024)).unwrap();
        let s = e.flash().stats();
        assert_eq!(s.page_reads[Cause::Host as usize], reads, "rmw={rmw}");
        assert_eq!(s.programs[Cause::Host as usize], 1);
    }
}

#[test]
fn trim_discards_only_whole_pages() {
    let mut e = prepare(&small()).unwrap().engine;
    e.submit(&req(Op::Write, 0, 3 * 2048)).unwrap();
    // Covers page 1 entirely and halves of pages 0 and 2.
    e.submit(&req(Op::Trim, 1024, 2 * 2048)).unwrap();
    e.submit(&req(Op::Read, 0, 3 * 2048)).unwrap();
    // The oracle agrees page 1 is gone and 0 and 2 are kept; the read-back confirms.
    assert_eq!(e.verify_readback().unwrap(), 3);
    assert_eq!(e.outcome().host.trim_requests, 1);
}

#[test]
fn warmup_passes_are_not_reported() {
    let one = run(&small(), &mut NoObserver).unwrap().report;
    let warm = run(
        &Config {
            warmup: 2,
            ..small()
        },
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(warm.requests, 6000);
    assert_eq!(warm.report.host.requests, one.host.requests);
    // The measured pass overwrites data the warm-up wrote: more flash work, same host work.
    assert_eq!(warm.report.host.pages_written, one.host.pages_written);
}

#[test]
fn precondition_fill_is_not_measured() {
    let cfg = Config {
        precondition: ftlab::config::Precondition::Fill,
        ..small()
    };
    let out = run(&cfg, &mut NoObserver).unwrap().report;
    assert_eq!(
        out.flash.page_programs,
        out.host.pages_written + out.ftl.gc.pages_copied
    );
    assert_eq!(out.verify.violations, 0);
}

#[test]
fn parallel_timing_is_never_slower_than_serial_here() {
    let serial = run(&small(), &mut NoObserver).unwrap().report;
    let parallel = run(
        &Config {
            timing: ftlab::config::TimingModel::Parallel,
            channels: Some(4),
            dies: Some(2),
            ..small()
        },
        &mut NoObserver,
    )
    .unwrap()
    .report;
    assert_eq!(
        serial.flash, parallel.flash,
        "timing must not change what happens"
    );
    assert!(parallel.host.response_ns.mean <= serial.host.response_ns.mean);
}

#[test]
fn idle_gaps_do_not_change_a_page_run() {
    // `page` does no idle work, so offering idle time must change nothing.
    let a = run(&small(), &mut NoObserver).unwrap().report;
    let b = run(
        &Config {
            idle: false,
            ..small()
        },
        &mut NoObserver,
    )
    .unwrap()
    .report;
    assert_eq!(a.host, b.host);
    assert_eq!(a.flash, b.flash);
}
