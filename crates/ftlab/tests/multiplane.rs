//! Multi-plane reads and erases under parallel timing (issue 22, item 2), end to end on
//! the `mqsim-8k` preset (8 channels x 8 dies x 2 planes, 8 KiB pages, t_read 75 µs
//! array plus a 24.6 µs page transfer at 333 MB/s): saturated random reads share senses
//! on the two planes of a die. The hand-worked exact times are in `ftlab-core`'s timing
//! module (`reads_on_two_planes_of_a_die_share_one_sense` and the tests after it);
//! docs/timing.md has the measurements.

use ftlab::config::{Config, Precondition, TimingModel, VerifyLevel};
use ftlab::{NoObserver, Simulation, Workload};

/// One page's transfer at 333 MB/s, ns.
const XFER_NS: f64 = 8192.0 / 333e6 * 1e9;
/// Read array time, ns.
const T_READ_NS: f64 = 75_000.0;
const DIES: f64 = 64.0;
const CHANNELS: f64 = 8.0;

/// The host section of the report of random 8 KiB reads of a filled `mqsim-8k` at queue
/// depth `qd`, with `planes` planes per die and `channels` channels (64 dies in all).
fn random_reads(qd: u32, planes: u32, channels: u32) -> serde_json::Value {
    let mut c = Config {
        planes: Some(planes),
        channels: Some(channels),
        dies: Some(64 / channels),
        nand: "mqsim-8k".into(),
        timing: TimingModel::Parallel,
        capacity: "1GiB".parse().unwrap(),
        queue_depth: Some(qd),
        verify: VerifyLevel::Off,
        precondition: Precondition::Fill,
        ..Config::default()
    };
    c.synthetic.count = 20_000;
    c.synthetic.read_ratio = 1.0;
    c.synthetic.request_bytes = 8192;
    let out = Simulation::new(c)
        .unwrap()
        .run(Workload::Configured, &mut NoObserver)
        .unwrap();
    assert!(out.failure.is_none());
    serde_json::to_value(&out.report).unwrap()["host"].clone()
}

fn iops(h: &serde_json::Value) -> f64 {
    h["iops"].as_f64().unwrap()
}

/// The preset as it is: 8 channels, so the channels bind (C / t_transfer = 325 k reads
/// per second, below the dies' 642 k on one plane and 1.03 M on two). Multi-plane
/// reads raise the die bound, not that one; what they gain comes from shorter die
/// queues, which push the channels' reservations less far ahead (channel slots are
/// reserved in submission order, no backfilling).
#[test]
fn mqsim_random_reads_share_senses_but_stay_channel_bound() {
    let chan_bound = CHANNELS / (XFER_NS / 1e9);
    let die_bound = |planes: f64| DIES * planes / ((T_READ_NS + planes * XFER_NS) / 1e9);
    assert!(chan_bound < die_bound(1.0) && die_bound(1.0) < die_bound(2.0));
    let (one, two) = (random_reads(256, 1, 8), random_reads(256, 2, 8));
    let (x1, x2) = (iops(&one), iops(&two));
    assert!(x2 > 1.08 * x1, "{x2} on two planes vs {x1} on one");
    assert!(x2 <= chan_bound, "{x2} vs {chan_bound}");
    // At queue depth 1 there is never a second read to share a sense with.
    for planes in [1, 2] {
        let x = iops(&random_reads(1, planes, 8));
        assert!(
            (x * (T_READ_NS + XFER_NS) / 1e9 - 1.0).abs() < 0.01,
            "{planes} planes: {x}"
        );
    }
}

/// One channel per die (64 channels): the dies bind, D / (t_read + t_transfer) = 642 k
/// reads per second on one plane; on two, a die senses two pages at once and moves
/// both out, D x 2 / (t_read + 2 t_transfer) = 1.03 M. A closed loop of 256 random
/// reads stays below either (a die's queue is short and a read joins only the die's
/// last group, if it is on the other plane), but two planes gain a quarter.
#[test]
fn multi_plane_reads_raise_the_die_bound() {
    let die_bound = |planes: f64| DIES * planes / ((T_READ_NS + planes * XFER_NS) / 1e9);
    let (one, two) = (random_reads(256, 1, 64), random_reads(256, 2, 64));
    let (x1, x2) = (iops(&one), iops(&two));
    assert!(x1 <= die_bound(1.0) && x1 > 0.8 * die_bound(1.0), "{x1}");
    assert!(x2 > 1.2 * x1, "{x2} on two planes vs {x1} on one");
    assert!(x2 > die_bound(1.0) && x2 <= die_bound(2.0), "{x2}");
}

/// The report of a GC-heavy mix of random reads and writes on two planes per die (page
/// mapping, `die_alloc = "round_robin"`, 2 x 2 dies, 64 MiB at 20% OP, filled, 30 k
/// requests, half reads, one every 3 ms; the suspend tests' workload in
/// `timing_closed_forms.rs`), with or without suspend and preemptible GC.
fn gc_heavy_mix_on_two_planes(suspend: bool, preempt_gc: bool) -> serde_json::Value {
    let mut c = Config {
        nand: "mlc-k9gag08u0m".into(),
        timing: TimingModel::Parallel,
        channels: Some(2),
        dies: Some(2),
        planes: Some(2),
        capacity: "64MiB".parse().unwrap(),
        op: 20.0,
        precondition: Precondition::Fill,
        verify: VerifyLevel::On,
        suspend,
        preempt_gc,
        ..Config::default()
    };
    c.synthetic.count = 30_000;
    c.synthetic.read_ratio = 0.5;
    c.synthetic.interarrival_us = 3000.0;
    c.ftl_options
        .insert("die_alloc".into(), serde_json::json!("round_robin"));
    let out = Simulation::new(c)
        .unwrap()
        .run(Workload::Configured, &mut NoObserver)
        .unwrap();
    assert!(out.failure.is_none());
    serde_json::to_value(&out.report).unwrap()
}

/// Multi-plane groups with program/erase suspend and preemptible GC: a group is one
/// operation of its die's queue (a read suspends a program group only once all its data
/// is in and it programs), reads that go ahead of a group delay it and leave it open to
/// joiners. The flash work is the same either way, and both options still shorten the
/// read tail. Measured: read p90 232 ms off, 170 ms with suspend (1,615 suspensions),
/// 214 ms with preemptible GC (244 reads ahead of GC), 150 ms with both.
#[test]
fn two_planes_with_suspend_and_preemptible_gc_do_the_same_flash_work() {
    let run = gc_heavy_mix_on_two_planes;
    let (off, sus, pre, both) = (
        run(false, false),
        run(true, false),
        run(false, true),
        run(true, true),
    );
    let read = |r: &serde_json::Value, q: &str| r["host"]["read_response_ns"][q].as_f64().unwrap();
    for r in [&sus, &pre, &both] {
        assert_eq!(off["flash"]["page_programs"], r["flash"]["page_programs"]);
        assert_eq!(off["flash"]["block_erases"], r["flash"]["block_erases"]);
        for q in ["p50", "p99", "max"] {
            assert!(read(r, q) <= read(&off, q), "{q}");
        }
    }
    assert!(sus["host"]["suspensions"].as_u64().unwrap() > 100);
    assert!(pre["host"]["preemptions"].as_u64().unwrap() > 100);
    assert!(read(&sus, "p90") < 0.8 * read(&off, "p90"));
    assert!(read(&pre, "p90") < read(&off, "p90"));
    assert!(read(&both, "p90") < 0.7 * read(&off, "p90"));
}
