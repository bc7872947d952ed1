//! `--timeline`, `--timeline-out`, `--html`, `ftlab compare` and the progress bar as a
//! user meets them (issue 21): files that agree with the JSON report, byte-identical
//! reruns, and bad input that gives a clear message and a non-zero exit, never a panic.

use std::path::PathBuf;
use std::process::Output;
mod common;
use common::{ftlab, stderr};

fn dir(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ftlab-cli-tl-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn assert_clean_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "bad input exits 2: {err}");
    assert!(!err.contains("panicked"), "must not panic: {err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks `{n}`: {err}");
    }
}

const SMALL: [&str; 4] = ["--capacity", "16MiB", "--set", "synthetic.count=5000"];

#[test]
fn bad_timeline_values_name_the_flag_or_key() {
    for bad in ["0", "abc", "-3", "1.5", "10x"] {
        let o = ftlab(&["run", "-q", "--timeline", bad]);
        assert_clean_error(&o, &["--timeline", bad]);
    }
    let o = ftlab(&["run", "-q", "--set", "timeline=0"]);
    assert_clean_error(&o, &["`timeline`", "above 0"]);
    let o = ftlab(&["run", "-q", "--timeline-out", "t.xlsx"]);
    assert_clean_error(&o, &["--timeline-out", "expected a .csv or .parquet file"]);
    let o = ftlab(&["run", "-q", "--html", "r.pdf"]);
    assert_clean_error(&o, &["--html", ".html"]);
}

fn run_with_outputs(d: &std::path::Path, tag: &str) -> (String, String, String) {
    let (csv, html, json) = (
        d.join(format!("{tag}.csv")),
        d.join(format!("{tag}.html")),
        d.join(format!("{tag}.json")),
    );
    let mut args = vec![
        "run",
        "-q",
        "--ftl",
        "dftl",
        "--buffer",
        "lru",
        "--timeline",
        "1k",
    ];
    args.extend(SMALL);
    let (c, h, j) = (
        csv.display().to_string(),
        html.display().to_string(),
        json.display().to_string(),
    );
    args.extend(["--timeline-out", &c, "--html", &h, "--json", &j]);
    let o = ftlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    (
        std::fs::read_to_string(csv).unwrap(),
        std::fs::read_to_string(html).unwrap(),
        std::fs::read_to_string(json).unwrap(),
    )
}

#[test]
fn timeline_csv_html_and_json_agree_and_are_byte_identical_on_rerun() {
    let d = dir("outputs");
    let (csv, html, json) = run_with_outputs(&d, "a");
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = report["timeline"]["intervals"].as_array().unwrap();
    // Five intervals of 1k requests, then the end-of-run drain of the buffer's dirty
    // pages in an interval of its own (no requests), marked `drain`.
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[5]["requests"], 0);
    assert!(rows[5]["flash_programs"].as_u64().unwrap() > 0);
    let marks = report["timeline"]["marks"].as_array().unwrap();
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0]["kind"], "drain");
    assert_eq!(marks[0]["interval"], 5);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let keys: Vec<&str> = ftlab_report::timeline::COLUMNS
        .iter()
        .map(|c| c.key)
        .collect();
    assert_eq!(header, keys);
    let req = header.iter().position(|h| *h == "requests").unwrap();
    let total: u64 = lines
        .map(|l| l.split(',').nth(req).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, report["host"]["requests"].as_u64().unwrap());
    assert!(html.contains("data-chart=\"timeline-requests\""));
    assert!(html.contains("data-chart=\"latency-cdf\""));
    assert_eq!(report["config"]["timeline"], "1k");
    let again = run_with_outputs(&d, "b");
    assert_eq!((csv, html, json), again, "same config and seed: same files");
}

#[test]
fn timeline_parquet_holds_the_csv_values_typed() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let d = dir("parquet");
    let (csv, pq) = (d.join("t.csv"), d.join("t.parquet"));
    let run = |out: &std::path::Path| {
        let out = out.display().to_string();
        let mut args = vec!["run", "-q", "--ftl", "dftl", "--timeline", "1k"];
        args.extend(SMALL);
        args.extend(["--timeline-out", out.as_str()]);
        let o = ftlab(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run(&csv);
    run(&pq);
    let csv = std::fs::read_to_string(&csv).unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    let schema = reader.metadata().file_metadata().schema_descr();
    let names: Vec<&str> = schema.columns().iter().map(|c| c.name()).collect();
    let mut lines = csv.lines();
    assert_eq!(names, lines.next().unwrap().split(',').collect::<Vec<_>>());
    let mut n = 0;
    for (row, line) in reader.get_row_iter(None).unwrap().zip(lines) {
        let row = row.unwrap();
        let cells: Vec<&str> = line.split(',').collect();
        for ((name, field), cell) in row.get_column_iter().zip(&cells) {
            let text = match field {
                Field::Null => String::new(),
                Field::Long(v) => v.to_string(),
                Field::Double(v) => v.to_string(),
                other => panic!("{name}: unexpected {other:?}"),
            };
            assert_eq!(&text, cell, "{name} in row {n}");
        }
        n += 1;
    }
    assert_eq!(n, csv.lines().count() - 1);
    assert!(n >= 5);
}

#[test]
fn html_alone_records_a_default_timeline() {
    let d = dir("default");
    let html = d.join("r.html").display().to_string();
    let json = d.join("r.json").display().to_string();
    let mut args = vec!["run", "-q", "--html", &html, "--json", &json];
    args.extend(SMALL);
    let o = ftlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["timeline"]["every"], "25", "5000 requests / 200");
    assert_eq!(
        report["timeline"]["intervals"].as_array().unwrap().len(),
        200
    );
}

#[test]
fn compare_prints_runs_side_by_side_and_refuses_what_is_not_a_report() {
    let d = dir("compare");
    let mut paths = Vec::new();
    for ftl in ["page", "fast"] {
        let p = d.join(format!("{ftl}.json")).display().to_string();
        let mut args = vec!["run", "-q", "--ftl", ftl, "--timeline", "1k", "--json", &p];
        args.extend(SMALL);
        assert!(ftlab(&args).status.success());
        paths.push(p);
    }
    let html = d.join("c.html").display().to_string();
    let o = ftlab(&["compare", &paths[0], &paths[1], "--html", &html]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.lines().next().unwrap().contains("page"), "{table}");
    assert!(table.contains("WAF"), "{table}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("ftlab compare: page vs fast"));
    assert!(page.contains("data-chart=\"timeline-waf\" data-kind=\"line\" data-series=\"2\""));

    let not_report = d.join("x.json");
    std::fs::write(&not_report, "{\"a\": 1}").unwrap();
    let o = ftlab(&["compare", &paths[0], &not_report.display().to_string()]);
    assert_clean_error(&o, &["not an ftlab report"]);
    let o = ftlab(&["compare", &paths[0], "/nonexistent/r.json"]);
    assert_clean_error(&o, &["/nonexistent/r.json"]);
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let mut args = vec!["run"];
    args.extend(SMALL);
    let o = ftlab(&args);
    assert!(o.status.success());
    let err = stderr(&o);
    assert!(!err.contains("ETA") && !err.contains('\r'), "{err}");
    assert!(err.contains("simulated 5000 requests"), "{err}");
}
