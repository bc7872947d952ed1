//! `ftlab sweep`: the table, failures that do not stop the rest, resuming, and the bad
//! studies refused before any point runs.

mod common;
use common::{ftlab, stderr};
use std::path::{Path, PathBuf};

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ftlab-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_study(dir: &Path, text: &str) -> String {
    let p = dir.join("study.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The CSV table: header and rows.
fn table(out: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|x| x.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column `{name}` in {header:?}"))
}

const GRID: &str = r#"
[base]
capacity = "16MiB"
precondition = "fill"
synthetic.count = 2000
synthetic.read_ratio = 0.0
[axes]
ftl = ["page", "dftl"]
op = { from = 5, to = 25, step = 10 }
"#;

/// Every point is a row with its axis values and metrics; the values match a plain
/// `ftlab run` of the same configuration, and more spare space means less GC.
#[test]
fn the_table_has_a_row_per_point_with_axes_and_metrics() {
    let dir = scratch("table");
    let study = write_study(&dir, GRID);
    let out = dir.join("out");
    let o = ftlab(&["sweep", &study, "-o", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (h, rows) = table(&out);
    assert_eq!(
        &h[..7],
        ["point", "hash", "ftl", "op", "status", "error", "command"]
    );
    assert_eq!(rows.len(), 6);
    let (ftl, op, waf) = (col(&h, "ftl"), col(&h, "op"), col(&h, "waf"));
    let got: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[ftl].as_str(), r[op].as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("page", "5"),
            ("page", "15"),
            ("page", "25"),
            ("dftl", "5"),
            ("dftl", "15"),
            ("dftl", "25")
        ]
    );
    let wafs: Vec<f64> = rows.iter().map(|r| r[waf].parse().unwrap()).collect();
    assert!(wafs[0] > wafs[2], "page: WAF falls with OP: {wafs:?}");
    // The same point through `ftlab run`.
    let report = dir.join("one.json");
    let one = ftlab(&[
        "run",
        "--ftl",
        "dftl",
        "--op",
        "15",
        "--capacity",
        "16MiB",
        "--precondition",
        "fill",
        "--set",
        "synthetic.count=2000",
        "--set",
        "synthetic.read_ratio=0.0",
        "-q",
        "--json",
        report.to_str().unwrap(),
    ]);
    assert_eq!(one.status.code(), Some(0), "{}", stderr(&one));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["waf"].as_f64().unwrap(), wafs[4]);
    let erases = col(&h, "flash.block_erases");
    assert_eq!(rows[4][erases], r["flash"]["block_erases"].to_string());
    // Each point's report is kept under its hash; the Parquet table is there too.
    let hash = &rows[4][col(&h, "hash")];
    assert!(out.join("points").join(format!("{hash}.json")).is_file());
    assert!(
        std::fs::metadata(out.join("results.parquet"))
            .unwrap()
            .len()
            > 1000
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Lost data and an internal error fail their points only: each is a row with its
/// error and a command line that reruns it alone (and fails the same way); the exit
/// code is 1. (The test build's `example` FTL has fault options.)
#[test]
fn failing_points_are_recorded_and_the_rest_go_on() {
    let dir = scratch("fail");
    let study = write_study(
        &dir,
        r#"
[base]
ftl = "example"
capacity = "16MiB"
synthetic.count = 2000
[zip.fault]
"ftl_options.lose_writes_after" = [1000000, 100, 1000000]
"ftl_options.panic_after" = [1000000, 1000000, 50]
"#,
    );
    let out = dir.join("out");
    let o = ftlab(&["sweep", &study, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("3 points") && err.contains("2 failed"),
        "{err}"
    );
    let (h, rows) = table(&out);
    let (status, error, command) = (col(&h, "status"), col(&h, "error"), col(&h, "command"));
    assert_eq!(rows[0][status], "ok");
    assert_eq!(rows[0][error], "");
    assert_eq!(rows[1][status], "failed");
    assert!(rows[1][error].contains("expected version"), "{:?}", rows[1]);
    assert!(rows[2][error].contains("internal error"), "{:?}", rows[2]);
    assert_eq!(rows[1][col(&h, "waf")], "", "a failed point has no metrics");
    // The command line reruns the point alone, and it fails the same way.
    let cmd = &rows[1][command];
    assert!(cmd.starts_with("ftlab run "), "{cmd}");
    let mut args = vec!["run".to_string(), "-q".to_string()];
    for set in cmd.split(" --set ").skip(1) {
        args.push("--set".into());
        args.push(set.trim_matches('\'').to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let again = ftlab(&args);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert!(stderr(&again).contains("expected version"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rerun runs only the points without a stored report (a deleted one, or new axis
/// values), gives the same table byte for byte, and `--force` runs everything again.
#[test]
fn a_rerun_resumes_and_force_redoes() {
    let dir = scratch("resume");
    let study = write_study(&dir, GRID);
    let out = dir.join("out");
    let o_arg = out.to_str().unwrap();
    let first = ftlab(&["sweep", &study, "-o", o_arg]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("6 run, 0 from earlier runs"),
        "{}",
        stderr(&first)
    );
    let csv1 = std::fs::read(out.join("results.csv")).unwrap();
    let pq1 = std::fs::read(out.join("results.parquet")).unwrap();
    // An interrupted study: one report missing.
    let (h, rows) = table(&out);
    let gone = out
        .join("points")
        .join(format!("{}.json", rows[3][col(&h, "hash")]));
    std::fs::remove_file(gone).unwrap();
    let second = ftlab(&["sweep", &study, "-o", o_arg]);
    assert!(
        stderr(&second).contains("1 run, 5 from earlier runs"),
        "{}",
        stderr(&second)
    );
    assert_eq!(std::fs::read(out.join("results.csv")).unwrap(), csv1);
    assert_eq!(std::fs::read(out.join("results.parquet")).unwrap(), pq1);
    // A wider axis runs only its new points.
    write_study(&dir, &GRID.replace("to = 25", "to = 35"));
    let wider = ftlab(&["sweep", &study, "-o", o_arg]);
    assert!(
        stderr(&wider).contains("2 run, 6 from earlier runs"),
        "{}",
        stderr(&wider)
    );
    let forced = ftlab(&["sweep", &study, "-o", o_arg, "--force"]);
    assert!(
        stderr(&forced).contains("8 run, 0 from earlier runs"),
        "{}",
        stderr(&forced)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bad studies are refused with exit 2 and a message naming the problem, before any
/// point runs (no results folder is made).
#[test]
fn bad_studies_are_refused_before_anything_runs() {
    let dir = scratch("bad");
    let out = dir.join("out");
    let o_arg = out.to_str().unwrap().to_string();
    let cases = [
        (
            "[axes]\nopp = [1, 2]",
            "axis `opp` is not a configuration key",
        ),
        ("[axes]\nop = []", "axes.op: empty axis"),
        (
            "[axes]\nseed = { from = 1, to = 1001 }",
            "1001 points, more than 1000: pass --yes",
        ),
        ("[base]\nftl = 3\n[axes]\nop = [1]", "[base]: `ftl`"),
        ("[axes]\nop = [1, 2\n", "study.toml"),
    ];
    for (text, needle) in cases {
        let study = write_study(&dir, text);
        let o = ftlab(&["sweep", &study, "-o", &o_arg]);
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{text}: {}", stderr(&o));
        assert!(!out.exists(), "{text}: nothing is written");
    }
    // An output folder that cannot be made: under a file.
    let study = write_study(&dir, "[axes]\nop = [7]");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = ftlab(&["sweep", &study, "-o", file.join("out").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write the results folder"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The example study of docs/sweep.md runs, every point ok.
#[test]
fn the_example_study_runs() {
    let dir = scratch("example");
    let out = dir.join("out");
    let o = ftlab(&[
        "sweep",
        "../../examples/studies/ftl-op.toml",
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (h, rows) = table(&out);
    assert_eq!(rows.len(), 16);
    assert!(rows.iter().all(|r| r[col(&h, "status")] == "ok"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `ftlab plot` charts a sweep table: the same figure from the Parquet and the CSV
/// table, a chart per facet, PNG or SVG by the file name, and clear errors.
#[test]
fn plot_charts_the_table() {
    let dir = scratch("plot");
    let study = write_study(&dir, GRID);
    let out = dir.join("out");
    let o = ftlab(&["sweep", &study, "-o", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pq = out.join("results.parquet").display().to_string();
    let csv = out.join("results.csv").display().to_string();
    let img = |name: &str| dir.join(name).display().to_string();
    let plot_y = |table: &str, y: &str, extra: &[&str], to: &str| {
        let args = [
            &["plot", table, "--x", "op", "--y", y][..],
            extra,
            &["-o", to],
        ]
        .concat();
        ftlab(&args)
    };
    let plot = |table: &str, extra: &[&str], to: &str| plot_y(table, "waf", extra, to);
    let a = plot(&pq, &["--color", "ftl"], &img("a.svg"));
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    let b = plot(&csv, &["--color", "ftl"], &img("b.svg"));
    assert_eq!(b.status.code(), Some(0), "{}", stderr(&b));
    let svg = std::fs::read_to_string(img("a.svg")).unwrap();
    assert_eq!(svg, std::fs::read_to_string(img("b.svg")).unwrap());
    assert!(svg.contains(">page<") && svg.contains(">dftl<") && svg.contains(">waf by op<"));
    assert!(svg.contains(">5<") && svg.contains(">15<") && svg.contains(">25<"));
    let f = plot(
        &pq,
        &["--facet", "ftl", "--kind", "grouped-bar"],
        &img("f.png"),
    );
    assert_eq!(f.status.code(), Some(0), "{}", stderr(&f));
    let png = std::fs::read(img("f.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let f = plot(&pq, &["--facet", "ftl", "--kind", "bar"], &img("f.svg"));
    assert_eq!(f.status.code(), Some(0), "{}", stderr(&f));
    let svg = std::fs::read_to_string(img("f.svg")).unwrap();
    assert!(svg.contains("waf by op: ftl = page") && svg.contains("waf by op: ftl = dftl"));
    for (extra, to, needle) in [
        (
            &["--color", "flt"][..],
            "x.svg",
            "--color flt: no such column",
        ),
        (&["--facet", "hash"][..], "x.svg", "--y ftl: not a number"),
        (&[][..], "x.jpg", "must end in .svg or .png"),
    ] {
        let y = if needle.starts_with("--y") {
            "ftl"
        } else {
            "waf"
        };
        let o = plot_y(&pq, y, extra, &img(to));
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{}", stderr(&o));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
