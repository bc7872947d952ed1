//! The `ftlab trace` subcommands and trace errors through the binary, as a user sees
//! them.

use std::path::PathBuf;
mod common;
use common::run as ftlab;

fn data(name: &str) -> String {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ftlab-workload/tests/data"
    ))
    .join(name)
    .display()
    .to_string()
}

fn tmp(name: &str) -> String {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ftlab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).display().to_string()
}

#[test]
fn trace_stats_json() {
    let (code, out, err) = ftlab(&[
        "trace",
        "stats",
        &data("msr-hm0-sample.csv"),
        "--format",
        "msr",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["requests"], 1000);
    assert_eq!(v["writes"], 492);
    assert!(v["sequential_per_page"].as_f64().unwrap() > 0.0);
}

#[test]
fn gen_then_stats_measures_what_was_asked() {
    let out = tmp("gen.spc.gz");
    let (code, _, err) = ftlab(&[
        "trace",
        "gen",
        "--out",
        &out,
        "--count",
        "20000",
        "--set",
        "synthetic.p_sequential=0.5",
        "--set",
        "synthetic.read_ratio=0.4",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("wrote 20000 requests"), "{err}");
    let (code, json, err) = ftlab(&["trace", "stats", &out, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["requests"], 20000);
    let seq = v["sequential_per_request"].as_f64().unwrap();
    let reads = v["read_ratio"].as_f64().unwrap();
    assert!((seq - 0.5).abs() < 0.02, "{seq}");
    assert!((reads - 0.4).abs() < 0.02, "{reads}");
}

#[test]
fn bad_record_names_file_line_field_and_suggests_skip_bad() {
    let (code, _, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("ycsb-ext4.blkparse.txt.gz"),
        "--format",
        "blkparse",
        "--capacity",
        "2GiB",
        "--fold",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("ycsb-ext4.blkparse.txt.gz:29662: field `time`"),
        "{err}"
    );
    assert!(err.contains("--skip-bad"), "{err}");
    let (code, out, err) = ftlab(&[
        "run",
        "-q",
        "--trace",
        &data("ycsb-ext4.blkparse.txt.gz"),
        "--format",
        "blkparse",
        "--capacity",
        "2GiB",
        "--fold",
        "--skip-bad",
        "--sort-window",
        "512",
        "--limit",
        "3000",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("3000 requests"), "{out}");
}

#[test]
fn generic_columns_by_flags() {
    let (code, out, err) = ftlab(&[
        "trace",
        "stats",
        &data("msr-hm0-sample.csv"),
        "--format",
        "csv",
        "--columns",
        "time=0,device=2,op=3,offset=4,size=5",
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
        &data("msr-hm0-sample.csv"),
        "--format",
        "csv",
        "--columns",
        "time=0,op=3",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("csv.offset is not set"), "{err}");
}
