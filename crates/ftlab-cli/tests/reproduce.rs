//! `ftlab reproduce` on a small experiment directory made here.

use ftlab_cli::reproduce::{reproduce_paper, Options};

const EXP: &str = r#"
title = "WA of page mapping vs over-provisioning"
source = "test"
claim = "more spare space, less GC"
x_label = "OP (%)"
y_label = "write amplification"
y = "waf"
columns = ["flash.block_erases", "ftl.gc.pages_copied + host.pages_written"]
[base]
capacity = "8MiB"
precondition = "fill"
synthetic.count = 4000
synthetic.read_ratio = 0.0
[quick]
"synthetic.count" = 3000
[x]
key = "op"
values = [15, 25, 50]
[[series.points]]
name = "page"
set = { ftl = "page" }
[[series.points]]
name = "page gc_threshold=5"
set = { ftl = "page", "ftl_options.gc_threshold" = 5 }
"#;

#[test]
fn reproduces_a_small_experiment() {
    let root = std::env::temp_dir().join(format!("ftlab-repro-{}", std::process::id()));
    let exps = root.join("experiments");
    std::fs::create_dir_all(exps.join("demo")).unwrap();
    std::fs::write(exps.join("demo/wa-vs-op.toml"), EXP).unwrap();
    let opts = Options {
        experiments: exps,
        out: root.join("out"),
        quick: true,
        jobs: 2,
    };
    let calls = std::sync::Mutex::new(Vec::new());
    let produced = reproduce_paper("demo", &opts, &|done, total| {
        calls.lock().unwrap().push((done, total))
    })
    .unwrap();
    assert_eq!(produced.len(), 1);
    // Progress: once per run (3 x points, 2 series), counting up to the total.
    let mut calls = calls.into_inner().unwrap();
    calls.sort();
    assert_eq!(calls, (1..=6).map(|d| (d, 6)).collect::<Vec<_>>());
    let p = &produced[0];
    assert_eq!(p.xs, ["15", "25", "50"]);
    assert_eq!(p.series.len(), 2);
    // More over-provisioning, less write amplification.
    let wa = &p.y[0];
    assert!(
        wa[0].unwrap() > wa[1].unwrap() && wa[1].unwrap() > wa[2].unwrap(),
        "{wa:?}"
    );
    let dir = root.join("out/demo");
    let csv = std::fs::read_to_string(dir.join("wa-vs-op.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    assert!(csv.starts_with("x,series,y,flash.block_erases,"));
    assert!(std::fs::read(dir.join("wa-vs-op.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("more spare space") && md.contains("wa-vs-op.png"),
        "{md}"
    );
    // Same inputs, same bytes.
    reproduce_paper("demo", &opts, &|_, _| {}).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("wa-vs-op.csv")).unwrap(),
        csv
    );
}

#[test]
fn a_bad_experiment_names_the_file() {
    let root = std::env::temp_dir().join(format!("ftlab-repro-bad-{}", std::process::id()));
    let exps = root.join("experiments");
    std::fs::create_dir_all(exps.join("bad")).unwrap();
    std::fs::write(exps.join("bad/x.toml"), "title = 1\n").unwrap();
    let opts = Options {
        experiments: exps,
        out: root.join("out"),
        quick: true,
        jobs: 1,
    };
    let e = reproduce_paper("bad", &opts, &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("x.toml"), "{e}");
    let e = reproduce_paper("nope", &opts, &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("known papers: bad"), "{e}");
}

const BEST: &str = r#"
title = "best of"
source = "test"
x_label = "OP (%)"
y_label = "write amplification"
y = "waf"
columns = ["flash.block_erases"]
[base]
capacity = "8MiB"
precondition = "fill"
synthetic.count = 3000
synthetic.read_ratio = 0.0
[quick]
"synthetic.count" = 2000
[x]
key = "op"
values = [15, 50]
[[series.points]]
name = "gc 3"
set = { ftl = "page", "ftl_options.gc_threshold" = 3 }
[[series.points]]
name = "gc 8"
set = { ftl = "page", "ftl_options.gc_threshold" = 8 }
[[series.points]]
name = "lowest"
set = { ftl = "page" }
best = { of = { "ftl_options.gc_threshold" = [3, 8] }, by = "flash.block_erases" }
[[series.points]]
name = "highest"
set = { ftl = "page" }
best = { of = { "ftl_options.gc_threshold" = [3, 8] }, pick = "max" }
"#;

#[test]
fn a_best_series_shows_the_chosen_configuration() {
    let root = std::env::temp_dir().join(format!("ftlab-repro-best-{}", std::process::id()));
    let exps = root.join("experiments");
    std::fs::create_dir_all(exps.join("demo")).unwrap();
    std::fs::write(exps.join("demo/best.toml"), BEST).unwrap();
    let opts = Options {
        experiments: exps,
        out: root.join("out"),
        quick: true,
        jobs: 2,
    };
    let p = &reproduce_paper("demo", &opts, &|_, _| {}).unwrap()[0];
    let csv = std::fs::read_to_string(root.join("out/demo/best.csv")).unwrap();
    assert!(
        csv.starts_with("x,series,y,flash.block_erases,best\n"),
        "{csv}"
    );
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let erases = |series: &str, x: &str| -> f64 {
        rows.iter().find(|r| r[1] == series && r[0] == x).unwrap()[3]
            .parse()
            .unwrap()
    };
    for (xi, x) in ["15", "50"].iter().enumerate() {
        let (wa3, wa8) = (p.y[0][xi].unwrap(), p.y[1][xi].unwrap());
        let (e3, e8) = (erases("gc 3", x), erases("gc 8", x));
        // `lowest` picks by erases (first on ties), `highest` by the plotted WA.
        let low = if e8 < e3 { (8, wa8) } else { (3, wa3) };
        let high = if wa8 > wa3 { (8, wa8) } else { (3, wa3) };
        assert_eq!(p.y[2][xi], Some(low.1), "{csv}");
        assert_eq!(p.y[3][xi], Some(high.1), "{csv}");
        let label = |t: i32| Some(format!("ftl_options.gc_threshold={t}"));
        assert_eq!(p.best[2][xi], label(low.0));
        assert_eq!(p.best[3][xi], label(high.0));
        assert_eq!(p.best[0][xi], None);
    }
    let md = std::fs::read_to_string(root.join("out/demo/summary.md")).unwrap();
    assert!(md.contains("Best configurations:"), "{md}");
    assert!(
        md.contains("- lowest, 15: ftl_options.gc_threshold="),
        "{md}"
    );
}

#[test]
fn normalises_to_a_series() {
    let root = std::env::temp_dir().join(format!("ftlab-repro-norm-{}", std::process::id()));
    let exps = root.join("experiments");
    std::fs::create_dir_all(exps.join("norm")).unwrap();
    // Erases relative to page mapping with GC threshold 3, plus a ratio with a factor.
    let exp = EXP
        .replace(
            "y = \"waf\"",
            "y = \"flash.block_erases\"\nnormalize = \"page\"",
        )
        .replace(
            "columns = [",
            "columns = [\"2 * flash.page_programs / host.pages_written\", ",
        );
    std::fs::write(exps.join("norm/erases.toml"), exp).unwrap();
    let opts = Options {
        experiments: exps.clone(),
        out: root.join("out"),
        quick: true,
        jobs: 2,
    };
    let produced = reproduce_paper("norm", &opts, &|_, _| {}).unwrap();
    let p = &produced[0];
    assert!(p.y[0].iter().all(|v| *v == Some(1.0)), "{:?}", p.y);
    // A higher GC threshold keeps more blocks free, so it erases at least as much.
    assert!(p.y[1].iter().all(|v| v.unwrap() >= 1.0), "{:?}", p.y);
    let csv = std::fs::read_to_string(root.join("out/norm/erases.csv")).unwrap();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    // x, series, y, 2 * WA, ...: twice the write amplification is above 2.
    assert_eq!(row[..3], ["15", "page", "1"]);
    assert!(row[3].parse::<f64>().unwrap() > 2.0, "{csv}");
    let md = std::fs::read_to_string(root.join("out/norm/summary.md")).unwrap();
    assert!(md.contains("normalised to page"), "{md}");

    std::fs::write(
        exps.join("norm/erases.toml"),
        EXP.replace("y = \"waf\"", "y = \"waf\"\nnormalize = \"dftl\""),
    )
    .unwrap();
    let e = reproduce_paper("norm", &opts, &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("erases.toml") && e.contains("names no series"),
        "{e}"
    );
}

const BREAKDOWN: &str = r#"
title = "programs of page mapping by cause"
source = "test"
kind = "stacked"
x_label = "OP (%)"
y_label = "pages programmed"
[base]
capacity = "8MiB"
precondition = "fill"
synthetic.count = 3000
synthetic.read_ratio = 0.0
[x]
key = "op"
values = [15, 50]
[[metrics]]
name = "host"
y = "flash.by_cause.host.page_programs"
[[metrics]]
name = "GC copies"
y = "flash.by_cause.gc.page_programs"
[[metrics]]
name = "GC time (ms)"
y = "flash.by_cause.gc.page_programs * config.device.latencies_ns.program * 0.000001"
"#;

#[test]
fn metrics_of_one_run_make_the_series() {
    let root = std::env::temp_dir().join(format!("ftlab-repro-metrics-{}", std::process::id()));
    let exps = root.join("experiments");
    std::fs::create_dir_all(exps.join("demo")).unwrap();
    std::fs::write(exps.join("demo/breakdown.toml"), BREAKDOWN).unwrap();
    // A second figure with one of the same runs (OP 15%) and one more (OP 25%).
    let shared = BREAKDOWN
        .replace("values = [15, 50]", "values = [15, 25]")
        .replace("kind = \"stacked\"", "y = \"host.pages_written\"")
        .split("[[metrics]]")
        .next()
        .unwrap()
        .to_string();
    std::fs::write(exps.join("demo/shared.toml"), shared).unwrap();
    let opts = Options {
        experiments: exps,
        out: root.join("out"),
        quick: false,
        jobs: 2,
    };
    let runs = std::sync::atomic::AtomicUsize::new(0);
    let produced = reproduce_paper("demo", &opts, &|_, total| {
        runs.store(total, std::sync::atomic::Ordering::Relaxed)
    })
    .unwrap();
    assert_eq!(
        runs.into_inner(),
        3,
        "one run per x point, not per metric, and the run both figures share once"
    );
    assert_eq!(produced[1].y[0], [Some(6000.0), Some(6000.0)]);
    let p = &produced[0];
    assert_eq!(p.series, ["host", "GC copies", "GC time (ms)"]);
    let (host, gc, gc_ms) = (&p.y[0], &p.y[1], &p.y[2]);
    assert_eq!(host[0], host[1], "the same host writes at both OPs");
    assert!(gc[0].unwrap() > gc[1].unwrap(), "less OP, more GC: {gc:?}");
    // 3000 writes of 4 KiB on 2 KiB pages (the default SLC preset) program 6000 host
    // pages; the product term scales GC copies by its program latency, 298.9 µs.
    assert_eq!(host[0], Some(6000.0));
    let ms = gc[0].unwrap() * 0.2989;
    assert!((gc_ms[0].unwrap() - ms).abs() < 1e-6 * ms, "{gc_ms:?}");
    let csv = std::fs::read_to_string(root.join("out/demo/breakdown.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 3, "{csv}");
    assert!(csv.contains("\n15,GC copies,"), "{csv}");
}
