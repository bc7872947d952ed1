//! The command line as a user meets it: listings, help, reports, and bad input that must
//! produce a clear message and a non-zero exit, never a panic.

use std::process::Output;
mod common;
use common::{ftlab, stderr, stdout};

fn assert_clean_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert!(!o.status.success(), "must fail: {err}");
    assert!(!err.contains("panicked"), "must not panic: {err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks `{n}`: {err}");
    }
}

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ftlab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn list_shows_every_kind_of_thing() {
    let o = ftlab(&["list"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for needle in [
        "page",
        "none",
        "slc-k9f1g16u0m",
        "flashsim-2k",
        "serial",
        "parallel",
        "spc",
        "gc_threshold",
    ] {
        assert!(out.contains(needle), "list lacks {needle}:\n{out}");
    }
}

#[test]
fn run_help_explains_every_stable_flag() {
    let out = stdout(&ftlab(&["run", "--help"]));
    for flag in [
        "--ftl",
        "--buffer",
        "--nand",
        "--capacity",
        "--op",
        "--trace",
        "--format",
        "--config",
        "--set",
        "--seed",
        "--json",
        "--no-verify",
        "--fold",
        "--warmup",
    ] {
        assert!(out.contains(flag), "help lacks {flag}");
    }
}

#[test]
fn runs_a_trace_and_writes_json() {
    let json = temp_file("r.json", "");
    let o = ftlab(&[
        "run",
        "--ftl",
        "page",
        "--trace",
        "../../tests/data/financial1-first10k.spc",
        "--format",
        "spc",
        "--json",
        &json,
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("verify"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for key in ["host", "flash", "waf", "ftl", "buffer", "verify", "config"] {
        assert!(v.get(key).is_some(), "json lacks {key}");
    }
    assert_eq!(v["host"]["requests"], 10000);
    assert_eq!(v["config"]["seed"], 1);
    assert_eq!(v["verify"]["violations"], 0);
}

#[test]
fn json_to_stdout_replaces_the_summary() {
    let o = ftlab(&[
        "run",
        "--capacity",
        "16MiB",
        "--set",
        "synthetic.count=100",
        "--json",
        "-",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(v["host"]["requests"], 100);
}

#[test]
fn malformed_spc_line_names_file_line_and_field() {
    let t = temp_file("bad.spc", "0,100,4096,w,0.0\n0,200,4096,q,0.1\n");
    let o = ftlab(&["run", "--trace", &t, "--format", "spc", "-q"]);
    assert_clean_error(&o, &["bad.spc:2", "opcode", "`q`"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn unknown_ftl_lists_the_known_ones() {
    let o = ftlab(&["run", "--ftl", "nope", "-q"]);
    assert_clean_error(&o, &["unknown FTL `nope`", "page"]);
}

#[test]
fn unknown_option_key_is_refused() {
    let o = ftlab(&["run", "--set", "ftl_options.gc_treshold=4", "-q"]);
    assert_clean_error(&o, &["unknown option `gc_treshold`", "gc_threshold"]);
    let o = ftlab(&["run", "--set", "capacityy=1GiB", "-q"]);
    assert_clean_error(&o, &["unknown field `capacityy`"]);
}

#[test]
fn impossible_geometry_is_refused() {
    let o = ftlab(&["run", "--set", "nand_params.page_size=3000", "-q"]);
    assert_clean_error(&o, &["page_size", "power of two"]);
    let o = ftlab(&["run", "--capacity", "lots", "-q"]);
    assert_clean_error(&o, &["capacity", "not a size"]);
    let o = ftlab(&["run", "--capacity", "128KiB", "--op", "0", "-q"]);
    assert_clean_error(&o, &["raise --op"]);
}

#[test]
fn request_beyond_capacity_names_the_fixes() {
    let o = ftlab(&[
        "run",
        "--trace",
        "../../tests/data/financial1-first10k.spc",
        "--capacity",
        "64MiB",
        "-q",
    ]);
    assert_clean_error(&o, &["beyond the logical capacity", "--capacity", "--fold"]);
    let o = ftlab(&[
        "run",
        "--trace",
        "../../tests/data/financial1-first10k.spc",
        "--capacity",
        "64MiB",
        "--fold",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn missing_trace_and_config_files_are_clear() {
    let o = ftlab(&["run", "--trace", "/nonexistent/x.spc", "-q"]);
    assert_clean_error(&o, &["/nonexistent/x.spc", "cannot open"]);
    let o = ftlab(&["run", "--config", "/nonexistent/c.toml", "-q"]);
    assert_clean_error(&o, &["/nonexistent/c.toml"]);
    let bad = temp_file("bad.toml", "ftl = [\n");
    let o = ftlab(&["run", "--config", &bad, "-q"]);
    assert_clean_error(&o, &["bad.toml"]);
}

#[test]
fn config_file_and_flags_layer() {
    let c = temp_file(
        "c.toml",
        "capacity = \"16MiB\"\nseed = 5\n[synthetic]\ncount = 50\n",
    );
    let o = ftlab(&["run", "--config", &c, "--seed", "6", "--json", "-", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["seed"], 6);
    assert_eq!(v["host"]["requests"], 50);
}

#[test]
fn fuzz_runs_a_short_swarm() {
    let o = ftlab(&[
        "fuzz",
        "--seed",
        "3",
        "--runs",
        "30",
        "--max-requests",
        "2000",
        "--table",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("0 failed"), "{out}");
    let rows = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| ftl"))
        .count();
    assert!(rows >= 3, "{out}");
}

/// Exit codes, as `ftlab --help` documents them: 1 when the run finds lost data (the
/// report is still printed) and for an internal error (a panic inside a scheme, caught
/// at the run boundary, with the seed and a replay command); 2 for bad configuration.
/// The test build's `example` FTL has fault options for this.
#[test]
fn exit_codes_tell_a_found_failure_from_bad_input() {
    let help = stdout(&ftlab(&["--help"]));
    for needle in [
        "Exit codes",
        "0  the run went through",
        "1  the run found",
        "2  bad usage",
    ] {
        assert!(help.contains(needle), "--help lacks `{needle}`: {help}");
    }
    let base = [
        "run",
        "--ftl",
        "example",
        "--capacity",
        "64MiB",
        "--set",
        "synthetic.count=2000",
    ];
    let lost = ftlab(
        &[
            &base[..],
            &["--set", "ftl_options.lose_writes_after=100", "-q"],
        ]
        .concat(),
    );
    assert_eq!(lost.status.code(), Some(1), "{}", stderr(&lost));
    assert!(stdout(&lost).contains("1 violations"), "{}", stdout(&lost));
    let err = stderr(&lost);
    assert!(
        err.contains("expected version") && err.contains("replay: ftlab run --config"),
        "{err}"
    );
    // The saved configuration replays the failure.
    let saved = err
        .split("--config ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim();
    let again = ftlab(&["run", "--config", saved, "-q"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));

    let panic = ftlab(
        &[
            &base[..],
            &["--set", "ftl_options.panic_after=50", "--seed", "7", "-q"],
        ]
        .concat(),
    );
    assert_eq!(panic.status.code(), Some(1), "{}", stderr(&panic));
    let err = stderr(&panic);
    assert!(
        err.contains("internal error") && err.contains("seed 7"),
        "{err}"
    );
    assert!(err.contains("replay: ftlab run --config"), "{err}");
    assert!(
        stdout(&panic).contains("verify"),
        "the report is still printed"
    );

    let clean = ftlab(&[&base[..], &["-q"]].concat());
    assert_eq!(clean.status.code(), Some(0), "{}", stderr(&clean));
    let bad = ftlab(&["run", "--set", "timing=paralel", "-q"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_clean_error(&bad, &["`timing`", "paralel", "`serial` or `parallel`"]);
}

#[test]
fn power_loss_on_a_scheme_that_cannot_recover_is_refused_up_front() {
    let o = ftlab(&[
        "run",
        "--ftl",
        "superblock",
        "--capacity",
        "64MiB",
        "--set",
        "ftl_options.snapshots=off",
        "--power-loss-at",
        "100",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_clean_error(&o, &["power_loss", "ftl_options.snapshots = on"]);
}

#[test]
fn a_power_loss_inside_a_request_tears_an_operation_and_the_run_goes_on() {
    let base = [
        "run",
        "--ftl",
        "page",
        "--capacity",
        "16MiB",
        "--precondition",
        "fill",
        "--set",
        "synthetic.count=3000",
        "-q",
        "--json",
        "-",
    ];
    let o = ftlab(&[&base[..], &["--power-loss-at", "1000@2/30,2000@1"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ev = r["power_loss"]["per_event"].as_array().unwrap();
    assert_eq!(ev.len(), 2);
    assert!(
        ev[0]["torn"].as_str().unwrap().contains("of block"),
        "{ev:?}"
    );
    assert_eq!(ev[0]["recovery_cuts"], 1);
    for bad in ["5@0", "5@x", "0@3", "5@1/0", "torn:x"] {
        let o = ftlab(&[&base[..], &["--power-loss-at", bad]].concat());
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert_clean_error(&o, &["--power-loss-at", bad]);
    }
}

#[test]
fn config_show_prints_a_config_that_runs_and_schema_is_json() {
    let o = ftlab(&[
        "config",
        "show",
        "--ftl",
        "dftl",
        "--op",
        "12.5",
        "--set",
        "synthetic.count=300",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("ftl = \"dftl\"") && text.contains("op = 12.5"),
        "{text}"
    );
    assert!(
        text.contains("[ftl_options]") && text.contains("cmt_bytes = \"512KiB\""),
        "defaults filled in: {text}"
    );
    let f = temp_file("shown.toml", &text);
    let r = ftlab(&["run", "--config", &f, "--json", "-", "-q"]);
    assert!(r.status.success(), "{}", stderr(&r));
    let report: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(report["config"]["op"], 12.5);
    assert_eq!(report["report_version"], 6);

    let s = ftlab(&["config", "schema"]);
    assert!(s.status.success());
    let schema: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    assert!(schema["properties"]["timing"]
        .to_string()
        .contains("TimingModel"));
    assert!(schema["$defs"]["TimingModel"]
        .to_string()
        .contains("parallel"));
    assert!(
        schema.to_string().contains("cmt_bytes"),
        "each scheme's options are in it"
    );
}

/// Issue 17 (typed config) and 27 (errors name the flag): a bad csv unit is refused where
/// the configuration is read, with the allowed values and the flag that sets the key.
#[test]
fn a_bad_csv_unit_names_the_values_and_the_flag() {
    let o = ftlab(&[
        "run",
        "--trace",
        "../../tests/data/msr-hm0-sample.csv",
        "--format",
        "csv",
        "--columns",
        "time=0,offset=4,size=5,op=3",
        "--time-unit",
        "h",
    ]);
    assert_clean_error(&o, &["`csv.time_unit`", "100ns", "--time-unit"]);
    let o = ftlab(&["run", "--set", "csv.offset_unit=0"]);
    assert_clean_error(&o, &["`csv.offset_unit`", "above 0", "--offset-unit"]);
}
