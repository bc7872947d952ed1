//! Closed-loop replay from the command line (issue 22): `--queue-depth`, `--queues`,
//! the report's IOPS, per-kind percentiles and utilisation, `ftlab qd-curve`, and the
//! refusals of bad input (exit 2, naming the option, never a panic).

use std::process::Output;
mod common;
use common::{ftlab, stderr, stdout};

fn refused(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit 2 expected: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks `{n}`: {err}");
    }
}

/// A filled 64 MiB device read at random, closed loop at `qd`, as the JSON report.
fn reads(timing: &str, qd: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run",
        "--nand",
        "mlc-k9gag08u0m",
        "--capacity",
        "64MiB",
        "--precondition",
        "fill",
        "--set",
        "synthetic.count=4000",
        "--set",
        "synthetic.read_ratio=1",
        "--timing",
        timing,
        "--queue-depth",
        qd,
        "-q",
        "--json",
        "-",
    ];
    args.extend_from_slice(extra);
    let o = ftlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("JSON report")
}

#[test]
fn serial_chip_gains_nothing_from_depth_and_its_response_grows_with_it() {
    let r1 = reads("serial", "1", &[]);
    let r8 = reads("serial", "8", &[]);
    let (h1, h8) = (&r1["host"], &r8["host"]);
    // One chip: the same IOPS (one read of 165.6 µs at a time) at any depth...
    let iops = 1e9 / 165_600.0;
    for h in [h1, h8] {
        let x = h["iops"].as_f64().unwrap();
        assert!((x - iops).abs() / iops < 0.01, "{x} vs {iops}");
        assert!((h["utilisation"].as_f64().unwrap() - 1.0).abs() < 0.01);
    }
    // ... and depth 8 waits for 7 others: 8 reads' time (histogram precision).
    let p50 = h8["read_response_ns"]["p50"].as_f64().unwrap();
    assert!((p50 / (8.0 * 165_600.0) - 1.0).abs() < 0.01, "{p50}");
    assert_eq!(h1["read_response_ns"]["max"], h1["read_response_ns"]["p50"]);
    assert_eq!(h1["read_response_ns"]["requests"], 4000);
    assert_eq!(h1["write_response_ns"]["requests"], 0);
    assert_eq!(r8["config"]["queue_depth"], 8);
    assert_eq!(r8["report_version"], 6);
}

#[test]
fn parallel_dies_serve_random_reads_at_once() {
    let h1 = &reads("parallel", "1", &[])["host"];
    let h32 = &reads("parallel", "32", &[])["host"];
    let (x1, x32) = (h1["iops"].as_f64().unwrap(), h32["iops"].as_f64().unwrap());
    // 32 dies on 8 channels: well above one die, below 32 of them.
    assert!(x32 > 6.0 * x1 && x32 < 32.0 * x1, "{x1} {x32}");
    // Utilisation at depth 1: one of 32 dies busy.
    let u1 = h1["utilisation"].as_f64().unwrap();
    assert!((u1 - 1.0 / 32.0).abs() < 0.002, "{u1}");
    // Several submission queues run too (and are echoed).
    let r = reads("parallel", "4", &["--queues", "8"]);
    assert_eq!(r["config"]["queues"], 8);
    assert!(r["host"]["iops"].as_f64().unwrap() > 6.0 * x1);
}

#[test]
fn closed_loop_reports_are_deterministic() {
    assert_eq!(reads("parallel", "16", &[]), reads("parallel", "16", &[]));
}

#[test]
fn bad_queue_settings_are_refused_naming_the_option() {
    let base = ["run", "--set", "synthetic.count=10", "-q"];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        ftlab(&a)
    };
    refused(
        &with(&["--queue-depth", "0"]),
        &["--queue-depth", "1 to 65536"],
    );
    refused(
        &with(&["--queue-depth", "4", "--queues", "0"]),
        &["--queues", "1 to 1024"],
    );
    refused(&with(&["--queues", "2"]), &["--queues", "--queue-depth"]);
    refused(
        &with(&[
            "--timing",
            "parallel",
            "--channels",
            "64",
            "--dies",
            "64",
            "--capacity",
            "1MiB",
        ]),
        &["--dies", "4096 dies", "blocks"],
    );
    // A preset whose read (25 µs) is shorter than a 4 KiB page's transfer at the
    // default 40 MiB/s has no array time to model under parallel timing.
    refused(
        &with(&["--timing", "parallel", "--nand", "agrawal-4k"]),
        &[
            "--channel-mib-s",
            "agrawal-4k",
            "no parallel timings",
            "above 157",
        ],
    );
    let o = with(&[
        "--timing",
        "parallel",
        "--nand",
        "agrawal-4k",
        "--channel-mib-s",
        "160",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    refused(
        &ftlab(&["qd-curve", "--depths", "1,0", "-q"]),
        &["--depths", "0"],
    );
}

#[test]
fn qd_curve_writes_csv_and_charts() {
    let dir = std::env::temp_dir().join(format!("ftlab-qd-curve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("qd");
    let o = ftlab(&[
        "qd-curve",
        "--timing",
        "parallel",
        "--nand",
        "mlc-k9gag08u0m",
        "--capacity",
        "32MiB",
        "--precondition",
        "fill",
        "--set",
        "synthetic.count=2000",
        "--set",
        "synthetic.read_ratio=1",
        "--depths",
        "1,4,16",
        "-q",
        "--out",
        prefix.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(dir.join("qd.csv")).unwrap();
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(
        rows.iter().map(|r| r[0]).collect::<Vec<_>>(),
        [1.0, 4.0, 16.0]
    );
    // IOPS grow with depth; so does the p99.
    assert!(rows[0][1] < rows[1][1] && rows[1][1] < rows[2][1], "{csv}");
    assert!(rows[0][3] <= rows[2][3], "{csv}");
    for f in ["qd-iops.svg", "qd-iops.png", "qd-p99.svg", "qd-p99.png"] {
        assert!(std::fs::metadata(dir.join(f)).unwrap().len() > 100, "{f}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs a GC-heavy mix (2 x 2 dies, 64 MiB at 20% OP, filled, 6,000 requests, half reads,
/// one every 3 ms) with `flag`: the summary line containing `says` starts with a count,
/// which the JSON report has under `host.<key>`, and the config echoes `<config>`.
fn counted_in_summary_and_report(flag: &str, says: &str, key: &str, config: &str) {
    refused(&ftlab(&["run", flag, "-q"]), &[flag, "--timing parallel"]);
    let args = [
        "run",
        "--nand",
        "mlc-k9gag08u0m",
        "--capacity",
        "64MiB",
        "--op",
        "20",
        "--precondition",
        "fill",
        "--timing",
        "parallel",
        "--channels",
        "2",
        "--dies",
        "2",
        flag,
        "--set",
        "ftl_options.die_alloc=round_robin",
        "--set",
        "synthetic.count=6000",
        "--set",
        "synthetic.read_ratio=0.5",
        "--set",
        "synthetic.interarrival_us=3000",
    ];
    let o = ftlab(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.contains(says))
        .unwrap_or_else(|| panic!("no line saying {says:?} in: {out}"));
    let n: u64 = line.split_whitespace().next().unwrap().parse().unwrap();
    assert!(n > 0, "{line}");
    let mut json = args.to_vec();
    json.extend_from_slice(&["-q", "--json", "-"]);
    let r: serde_json::Value = serde_json::from_str(&stdout(&ftlab(&json))).unwrap();
    assert_eq!(r["host"][key].as_u64(), Some(n));
    assert_eq!(r["config"][config], true);
}

/// `--suspend` (issue 22): refused without parallel timing (exit 2, naming the flag);
/// under it, the summary says how many programs and erases host reads suspended, and
/// the JSON report counts them.
#[test]
fn suspend_is_counted_in_summary_and_report_and_needs_parallel_timing() {
    counted_in_summary_and_report(
        "--suspend",
        "suspended by host reads",
        "suspensions",
        "suspend",
    );
}

/// `--preempt-gc` (issue 22): refused without parallel timing (exit 2, naming the flag);
/// under it, the summary says how many host reads went ahead of queued GC, and the JSON
/// report counts them.
#[test]
fn preempt_gc_is_counted_in_summary_and_report_and_needs_parallel_timing() {
    counted_in_summary_and_report(
        "--preempt-gc",
        "went ahead of queued GC",
        "preemptions",
        "preempt_gc",
    );
}
