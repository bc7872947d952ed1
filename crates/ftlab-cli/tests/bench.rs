//! `ftlab bench`: runs each case in a child process, compares with the previous run saved
//! on this machine and saves the new one (issue 26).

use std::process::Command;

fn ftlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ftlab"))
}

/// `ftlab bench ARGS`, which must succeed; its standard output.
fn bench(args: &[&std::ffi::OsStr]) -> String {
    let out = ftlab().arg("bench").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bench_compares_with_the_previous_run_and_saves_the_new_one() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ftlab-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("baseline.json");
    let run = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = [
            "--size",
            "quick",
            "--rounds",
            "1",
            "--only",
            "randwrite/page+none",
            "--baseline",
        ]
        .iter()
        .map(|a| a.as_ref())
        .collect();
        args.push(base.as_os_str());
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        bench(&args)
    };
    let first = run(&[]);
    assert!(first.contains("randwrite/page+none"), "{first}");
    assert!(first.contains("no earlier run on this machine"), "{first}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    assert_eq!(saved["cases"][0]["id"], "randwrite/page+none");
    assert_eq!(saved["cases"][0]["requests"], 100_000);

    let second = run(&[]);
    let row = second
        .lines()
        .find(|l| l.starts_with("randwrite/page+none"))
        .unwrap();
    let ratio: f64 = row.split_whitespace().last().unwrap().parse().unwrap();
    assert!(ratio > 0.0, "{row}");

    let json = run(&["--json", "--no-save"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let m = &v["cases"][0];
    assert!(m["flash_ops"].as_u64().unwrap() >= 100_000, "{m}");
    assert!(m["seconds"].as_f64().unwrap() > 0.0, "{m}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_refuses_a_filter_that_matches_nothing_and_names_the_cases() {
    let out = ftlab()
        .args([
            "bench",
            "--size",
            "quick",
            "--only",
            "nosuchftl",
            "--no-save",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("matches no case") && err.contains("mixed/dftl+none"),
        "{err}"
    );
}

#[test]
fn a_case_run_alone_is_still_compared_with_page_mapping_under_its_buffer() {
    let args = [
        "--size",
        "quick",
        "--rounds",
        "1",
        "--only",
        "randwrite/fast+fab",
        "--json",
        "--no-save",
    ];
    let out = bench(&args.map(std::ffi::OsStr::new));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cases = v["cases"].as_array().unwrap();
    // Only the chosen case is reported; its partner (page mapping under FAB) ran beside
    // it and gives the ratio.
    assert_eq!(cases.len(), 1, "{v}");
    assert_eq!(cases[0]["id"], "randwrite/fast+fab");
    let r = cases[0]["vs_page"].as_f64().unwrap();
    assert!(r > 0.0 && r.is_finite(), "{v}");
}
