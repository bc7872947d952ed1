//! Golden reports for small traces, and determinism.
//!
//! A golden file is rewritten only on purpose: run with `FTLAB_BLESS=1` and review the
//! diff. Any other change in the numbers is a failure.

use ftlab::config::Config;
use ftlab::sim::run;
use ftlab::NoObserver;

const FIN1: &str = "../../tests/data/financial1-first10k.spc";

fn financial1_page() -> Config {
    Config {
        ftl: "page".into(),
        trace: Some(FIN1.into()),
        format: "spc".into(),
        capacity: "512MiB".parse().unwrap(),
        precondition: ftlab::config::Precondition::Fill,
        ..Config::default()
    }
}

fn report_json(cfg: &Config) -> String {
    let out = run(cfg, &mut NoObserver).expect("run succeeds");
    assert!(out.failure.is_none(), "{:?}", out.failure);
    serde_json::to_string_pretty(&out.report).unwrap() + "\n"
}

fn golden(name: &str, actual: &str) {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("FTLAB_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (run with FTLAB_BLESS=1 to create it)"));
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{name} differs from the golden report at line {}:\n  golden: {}\n  actual: {}\n\
             (rewrite on purpose with FTLAB_BLESS=1 and review the diff)",
            line + 1,
            expected.lines().nth(line).unwrap_or(""),
            actual.lines().nth(line).unwrap_or("")
        );
    }
}

/// The same trace folded into 32 MiB: steady-state GC with real copies.
fn financial1_page_folded() -> Config {
    Config {
        capacity: "32MiB".parse().unwrap(),
        fold: true,
        ..financial1_page()
    }
}

#[test]
fn golden_financial1_page() {
    golden("financial1-page.json", &report_json(&financial1_page()));
}

#[test]
fn golden_financial1_page_folded_32mib() {
    golden(
        "financial1-page-fold32m.json",
        &report_json(&financial1_page_folded()),
    );
}

#[test]
fn same_config_same_bytes() {
    let a = report_json(&financial1_page());
    let b = report_json(&financial1_page());
    assert_eq!(a, b);
    let synth = Config {
        capacity: "32MiB".parse().unwrap(),
        precondition: ftlab::config::Precondition::Fill,
        ..Config::default()
    };
    let mut s = synth.clone();
    s.synthetic.count = 20_000;
    assert_eq!(report_json(&s), report_json(&s));
}

#[test]
fn a_different_seed_changes_the_synthetic_run() {
    let mut a = Config {
        capacity: "32MiB".parse().unwrap(),
        ..Config::default()
    };
    a.synthetic.count = 5_000;
    let mut b = a.clone();
    b.seed = 2;
    assert_ne!(report_json(&a), report_json(&b));
}

#[test]
fn gc_copies_in_the_folded_financial1_setup() {
    let out = run(&financial1_page_folded(), &mut NoObserver).unwrap();
    assert!(out.report.ftl.gc.invocations > 100);
    assert!(out.report.ftl.gc.pages_copied > 1000);
    assert!(out.report.waf.unwrap() > 2.0);
}
