//! Issue 27: real traces as users bring them, through the binary. Each behaviour is a
//! named test on the samples in `tests/data/` or on variants built here in a temp dir
//! (epoch-stamped, compressed, binary, with a header, DiskSim-shaped, empty).

use std::io::Write;
use std::path::PathBuf;
mod common;
use common::run as ftlab;

fn data(name: &str) -> String {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data"))
        .join(name)
        .display()
        .to_string()
}

fn tmp(name: &str) -> String {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ftlab-real-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).display().to_string()
}

fn json_run(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "-q", "--json", "-"];
    all.extend_from_slice(args);
    let (code, out, err) = ftlab(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn codes(report: &serde_json::Value) -> Vec<String> {
    report["notices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["code"].as_str().unwrap().to_string())
        .collect()
}

/// financial1 as a generic CSV stamped with Unix epoch seconds (1.4e9 s).
fn epoch_csv() -> String {
    let path = tmp("epoch.csv");
    let text = std::fs::read_to_string(data("financial1-first10k.spc")).unwrap();
    let mut out = String::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split(',').collect();
        let t: f64 = f[4].parse().unwrap();
        let lba: u64 = f[1].parse().unwrap();
        out.push_str(&format!(
            "{:.6},{},{},{},{}\n",
            1.4e9 + t,
            f[0],
            f[3],
            lba * 512,
            f[2]
        ));
    }
    std::fs::write(&path, out).unwrap();
    path
}

const EPOCH_COLUMNS: &str = "time=0,device=1,op=2,offset=3,size=4";

#[test]
fn epoch_stamped_csv_replayed_twice_lasts_two_spans_not_decades() {
    let path = epoch_csv();
    let r = json_run(&[
        "--trace",
        &path,
        "--format",
        "csv",
        "--columns",
        EPOCH_COLUMNS,
        "--replay",
        "2",
    ]);
    let w = &r["workload"];
    assert_eq!(w["time_rebased"], true);
    assert_eq!(w["span_ns"], 259_601_203_000u64);
    let first = w["first_timestamp_ns"].as_u64().unwrap();
    assert_eq!(first / 1_000_000_000, 1_400_000_000);
    let sim = r["host"]["sim_time_ns"].as_u64().unwrap();
    assert!(sim > 519_000_000_000 && sim < 521_000_000_000, "{sim}");
    assert!(r["host"]["throughput_kib_s"].as_f64().unwrap() > 100.0);
}

#[test]
fn absolute_time_keeps_the_stamps_and_passes_still_follow_each_other() {
    let path = epoch_csv();
    let r = json_run(&[
        "--trace",
        &path,
        "--format",
        "csv",
        "--columns",
        EPOCH_COLUMNS,
        "--replay",
        "2",
        "--absolute-time",
    ]);
    assert_eq!(r["workload"]["time_rebased"], false);
    let sim = r["host"]["sim_time_ns"].as_u64().unwrap();
    assert!(sim < 521_000_000_000, "passes follow each other: {sim}");
    // The window counts in the stamps' time with absolute times, from the first record
    // without.
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &path,
        "--format",
        "csv",
        "--columns",
        EPOCH_COLUMNS,
        "--window-start",
        "100",
        "--window-end",
        "200",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &path,
        "--format",
        "csv",
        "--columns",
        EPOCH_COLUMNS,
        "--window-start",
        "100",
        "--window-end",
        "200",
        "--absolute-time",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the workload is empty"), "{err}");
    assert!(err.contains("(absolute times)"), "{err}");
}

#[test]
fn a_window_outside_the_trace_exits_2_and_says_what_it_saw() {
    let (code, out, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("financial1-first10k.spc"),
        "--window-start",
        "300",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(out.is_empty(), "no report: {out}");
    for want in [
        "the workload is empty",
        "gave 10000 good records, and the run kept none of them through the time window [300, end) s",
        "4077 reads, 5923 writes",
        "devices (22): 19: 1435, 20: 1435",
        "timestamps: first 0.000000 s, last 259.601203 s",
        "0 lines that matched nothing",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
}

#[test]
fn a_device_absent_from_the_trace_exits_2() {
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("tpcc-small.mqsim.trace"),
        "--format",
        "mqsim",
        "--device",
        "99",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("kept none of them through --device 99"),
        "{err}"
    );
    assert!(err.contains("devices (16)"), "{err}");
}

#[test]
fn a_blkparse_event_absent_from_the_trace_exits_2_listing_the_actions() {
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("ycsb-ext4.blkparse.txt"),
        "--format",
        "blkparse",
        "--blkparse-event",
        "Q",
        "--capacity",
        "2GiB",
        "--fold",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("through --blkparse-event Q"), "{err}");
    assert!(err.contains("actions: I: 9888, C: 9887, D: 9887"), "{err}");
    assert!(err.contains("lines that matched nothing"), "{err}");
}

#[test]
fn an_empty_trace_is_an_error() {
    let path = tmp("empty.spc");
    std::fs::write(&path, "").unwrap();
    let (code, _, err) = ftlab(&["run", "-q", "--trace", &path]);
    assert_eq!(code, 2);
    assert!(err.contains("the input is empty"), "{err}");
    // Only blank lines and comments: nothing to replay either.
    std::fs::write(&path, "\n# nothing\n\n").unwrap();
    let (code, _, err) = ftlab(&["run", "-q", "--trace", &path, "--format", "mqsim", "--fold"]);
    assert_eq!(code, 2);
    assert!(err.contains("the workload is empty"), "{err}");
    assert!(err.contains("3 lines, 0 records"), "{err}");
}

#[test]
fn dropping_most_of_the_trace_exits_2_unless_allowed() {
    let fin1 = data("financial1-first10k.spc");
    let run = |extra: &[&str]| {
        let mut a = vec!["run", "-q", "--trace", fin1.as_str()];
        a.extend_from_slice(extra);
        ftlab(&a)
    };
    // A window that keeps 0.81% of the records, a device with 0.61% of them.
    let (code, _, err) = run(&["--window-start", "259"]);
    assert_eq!(code, 2);
    assert!(err.contains("drops 99.19%"), "{err}");
    assert!(err.contains("(the time window kept 81 of 10000)"), "{err}");
    assert!(
        err.contains("more than max_dropped_share = 0.99 allows"),
        "{err}"
    );
    assert!(err.contains("--max-dropped-share 1"), "{err}");
    let (code, _, err) = run(&["--device", "15"]);
    assert_eq!(code, 2);
    assert!(err.contains("(--device kept 61 of 10000)"), "{err}");
    let (code, _, err) = run(&["--window-start", "259", "--max-dropped-share", "1"]);
    assert_eq!(code, 0, "{err}");
    // --limit is what the user asked for: neither it nor the sort window's read-ahead
    // counts as dropped.
    for extra in [
        &["--limit", "10"][..],
        &["--limit", "10", "--device", "3"],
        &["--window-start", "100", "--limit", "5"],
    ] {
        let (code, _, err) = run(extra);
        assert_eq!(code, 0, "{extra:?}: {err}");
    }
}

#[test]
fn a_wrong_format_with_skip_bad_is_not_silently_empty() {
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("msr-hm0-sample.csv"),
        "--format",
        "spc",
        "--skip-bad",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--skip-bad (1000 bad records skipped)"),
        "{err}"
    );
    assert!(err.contains("first bad record"), "{err}");
}

fn compressed(name: &str, how: &str) -> String {
    let plain = std::fs::read(data(name)).unwrap();
    let bytes = match how {
        "bz2" => {
            let mut w = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            w.write_all(&plain).unwrap();
            w.finish().unwrap()
        }
        "xz" => {
            let mut w =
                lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1))
                    .unwrap();
            w.write_all(&plain).unwrap();
            w.finish().unwrap()
        }
        _ => unreachable!(),
    };
    let path = tmp(&format!("{name}.{how}"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn bzip2_and_xz_traces_run_like_the_plain_one() {
    let plain = json_run(&[
        "--trace",
        &data("tpcc-small.mqsim.trace"),
        "--format",
        "mqsim",
        "--fold",
    ]);
    for how in ["bz2", "xz"] {
        let path = compressed("tpcc-small.mqsim.trace", how);
        let r = json_run(&["--trace", &path, "--format", "mqsim", "--fold"]);
        assert_eq!(r["host"], plain["host"], "{how}");
        assert_eq!(r["flash"], plain["flash"], "{how}");
    }
}

fn vscsi_trace(version: u8) -> String {
    let mut bytes = Vec::new();
    for i in 0..2000u64 {
        let cmd = match i % 5 {
            0 => 0x28,
            4 => 0x00, // TEST UNIT READY: no data
            _ => 0x2a,
        };
        bytes.extend(ftlab_workload::vscsi::encode(
            version,
            cmd,
            4096 * (1 + (i % 3) as u32),
            (i * 7919 % 4096) * 8,
            5_000_000 + i * 250,
        ));
    }
    let path = tmp(&format!("vm-v{version}.vscsi"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn vscsi_v1_and_v2_traces_run_natively_and_auto_recognises_them() {
    for v in [1, 2] {
        let path = vscsi_trace(v);
        let r = json_run(&["--trace", &path, "--format", "vscsi"]);
        assert_eq!(r["workload"]["records_per_pass"], 1600, "v{v}");
        assert_eq!(r["host"]["read_requests"], 400);
        // The last data command is record 1999 (record 2000 is a TEST UNIT READY).
        assert_eq!(r["workload"]["span_ns"], 1998 * 250_000);
        let r = json_run(&["--trace", &path, "--format", "auto"]);
        assert_eq!(r["workload"]["format"], "vscsi");
        assert!(codes(&r).contains(&"format_auto".to_string()), "{r}");
    }
}

#[test]
fn a_binary_file_read_as_text_is_refused_as_binary() {
    let path = vscsi_trace(2);
    let (code, _, err) = ftlab(&["run", "-q", "--trace", &path, "--format", "spc"]);
    assert_eq!(code, 2);
    assert!(err.contains("the input is binary, not spc text"), "{err}");
    assert!(err.contains("--format vscsi"), "{err}");
    let junk = tmp("junk.bin");
    std::fs::write(&junk, [0u8, 159, 146, 150, 1, 2, 3, 0, 0, 7]).unwrap();
    let (code, _, err) = ftlab(&["run", "-q", "--trace", &junk, "--format", "mqsim", "--fold"]);
    assert_eq!(code, 2);
    assert!(err.contains("binary"), "{err}");
}

#[test]
fn format_auto_says_what_it_chose() {
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("websearch-small.mqsim.trace"),
        "--format",
        "auto",
        "--fold",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: --format auto read"), "{err}");
    assert!(err.contains("as mqsim: 5 integer fields"), "{err}");
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("sqlite-wal-update.wiscsee.txt"),
        "--format",
        "auto",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--format auto cannot tell the format"),
        "{err}"
    );
}

fn msr_with_header() -> String {
    let text = std::fs::read_to_string(data("msr-hm0-sample.csv")).unwrap();
    let path = tmp("msr-header.csv");
    std::fs::write(
        &path,
        format!("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n{text}"),
    )
    .unwrap();
    path
}

#[test]
fn a_header_line_gets_the_header_hint() {
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &msr_with_header(),
        "--format",
        "msr",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains(":1: field `timestamp`"), "{err}");
    assert!(err.contains("line 1 looks like a header"), "{err}");
    assert!(!err.contains("--skip-bad"), "skipping cannot help: {err}");
}

#[test]
fn csv_columns_by_header_name() {
    let (code, out, err) = ftlab(&[
        "trace",
        "stats",
        &msr_with_header(),
        "--format",
        "csv",
        "--columns",
        "time=Timestamp,device=DiskNumber,op=type,offset=Offset,size=Size",
        "--time-unit",
        "100ns",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("requests     1000 (508 reads, 492 writes"),
        "{out}"
    );
    let (code, _, err) = ftlab(&[
        "trace",
        "stats",
        &msr_with_header(),
        "--format",
        "csv",
        "--columns",
        "time=Timestamp,op=Type,offset=Offset,size=Bytes",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("no column named `bytes`"), "{err}");
    assert!(err.contains("ResponseTime"), "{err}");
}

#[test]
fn a_disksim_trace_read_as_mqsim_is_warned_about() {
    // The SSDsim copy of financial1 rewritten as DiskSim: time in decimal ms.
    let text = std::fs::read_to_string(data("financial1-first10k.ssdsim.ascii")).unwrap();
    let mut out = String::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let ns: u64 = f[0].parse().unwrap();
        out.push_str(&format!(
            "{:.6} {} {} {} {}\n",
            ns as f64 / 1e6,
            f[1],
            f[2],
            f[3],
            f[4]
        ));
    }
    let path = tmp("financial1.disksim");
    std::fs::write(&path, out).unwrap();
    let r = json_run(&["--trace", &path, "--format", "mqsim", "--fold"]);
    assert!(
        codes(&r).contains(&"format_looks_like_disksim".to_string()),
        "{r}"
    );
    assert!(
        r["workload"]["span_ns"].as_u64().unwrap() < 1_000_000,
        "ms read as ns"
    );
    let r = json_run(&["--trace", &path, "--format", "disksim"]);
    assert!(!codes(&r).contains(&"format_looks_like_disksim".to_string()));
    assert_eq!(
        r["workload"]["span_ns"].as_u64().unwrap() / 1_000_000_000,
        259
    );
}

#[test]
fn out_of_order_records_are_counted_and_warned_about_with_the_flag() {
    let base = [
        "--trace",
        &data("ycsb-ext4.blkparse.txt"),
        "--format",
        "blkparse",
        "--skip-bad",
        "--capacity",
        "2GiB",
        "--fold",
    ];
    // Default: the sort window orders them; the report still counts them.
    let r = json_run(&base);
    let ooo = r["workload"]["out_of_order_records"].as_u64().unwrap();
    assert!(ooo > 0, "per-CPU blkparse output is not time-ordered");
    assert!(!codes(&r).contains(&"out_of_order".to_string()), "{r}");
    // Without it: a warning naming the flag.
    let mut off = base.to_vec();
    off.extend(["--sort-window", "0"]);
    let r = json_run(&off);
    assert_eq!(r["workload"]["out_of_order_records"].as_u64().unwrap(), ooo);
    let n = r["notices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["code"] == "out_of_order")
        .unwrap();
    assert!(n["hint"].as_str().unwrap().contains("--sort-window"), "{n}");
    // A window too small for the disorder: counted as late and warned about.
    let mut small = base.to_vec();
    small.extend(["--sort-window", "2"]);
    let r = json_run(&small);
    assert!(r["workload"]["late_records"].as_u64().unwrap() > 0);
    assert!(codes(&r).contains(&"out_of_order".to_string()), "{r}");
}

#[test]
fn devices_sharing_one_address_space_get_a_notice() {
    let r = json_run(&[
        "--trace",
        &data("tpcc-small.mqsim.trace"),
        "--format",
        "mqsim",
        "--fold",
    ]);
    assert_eq!(r["workload"]["devices"], 16);
    assert!(
        codes(&r).contains(&"devices_share_space".to_string()),
        "{r}"
    );
    let r = json_run(&[
        "--trace",
        &data("tpcc-small.mqsim.trace"),
        "--format",
        "mqsim",
        "--device",
        "3",
        "--fold",
    ]);
    assert!(
        !codes(&r).contains(&"devices_share_space".to_string()),
        "{r}"
    );
}

#[test]
fn side_by_side_error_states_the_capacity_it_needs() {
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("financial1-first10k.spc"),
        "--device-layout",
        "side_by_side",
        "--capacity",
        "256MiB",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("side_by_side lays 22 devices one after the other in"),
        "{err}"
    );
    assert!(err.contains("give --capacity"), "{err}");
    assert!(err.contains("(--device-layout)"), "{err}");
}

#[test]
fn trace_stats_shows_a_table_of_the_busiest_devices() {
    let (code, out, err) = ftlab(&[
        "trace",
        "stats",
        &data("financial1-first10k.spc"),
        "--top",
        "5",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("devices      22 (the 5 busiest below"),
        "{out}"
    );
    assert!(out.contains("     17 more"), "{out}");
    assert!(
        out.contains("       total       10000  100.00%        4077        5923"),
        "{out}"
    );
    assert!(out.lines().all(|l| l.len() < 100), "{out}");
}

#[test]
fn a_compact_fold_that_splits_records_counts_host_records_and_pieces() {
    let r = json_run(&[
        "--trace",
        &data("financial1-first10k.spc"),
        "--capacity",
        "512MiB",
        "--fold",
        "compact",
    ]);
    let w = &r["workload"];
    let split = w["split_records"].as_u64().unwrap();
    assert!(split > 0, "{w}");
    assert_eq!(w["host_records"], 10_000);
    assert!(r["host"]["requests"].as_u64().unwrap() > 10_000);
    assert!(codes(&r).contains(&"records_split".to_string()), "{r}");
}

#[test]
fn setting_errors_name_the_flag() {
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("financial1-first10k.spc"),
        "--window-start",
        "5",
        "--window-end",
        "1",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--window-end") && err.contains("--window-start"),
        "{err}"
    );
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("financial1-first10k.spc"),
        "--format",
        "spcc",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("(--format"), "{err}");
    let (code, _, err) = ftlab(&["run", "-q", "--max-dropped-share", "2"]);
    assert_eq!(code, 2);
    assert!(err.contains("(--max-dropped-share)"), "{err}");
}
