//! What a user sees of a run besides the summary (issue 21): the progress bar on
//! stderr, the timeline as CSV or Parquet (`--timeline-out`), the self-contained HTML report
//! (`--html`) and `ftlab compare`, which puts several JSON reports side by side.

use anyhow::Context;
use ftlab::sim::{Observer, Progress};
use ftlab::timeline::TimelineEvery;
use ftlab::Config;
use ftlab_core::engine::Engine;
use ftlab_core::flash::FlashStats;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// The progress bar of `ftlab run`: percent of the workload, requests per second of
/// wall-clock time, WAF so far and the time left, redrawn at most 4 times a second.
/// Hidden with `--quiet` and when stderr is not a terminal (piped, redirected, CI).
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// A bar for a run of `total` requests (a spinner when unknown, as for a trace).
    pub fn new(total: Option<u64>, quiet: bool) -> Bar {
        Bar::with_target(total, quiet || !std::io::stderr().is_terminal())
    }

    fn with_target(total: Option<u64>, hidden: bool) -> Bar {
        if hidden {
            return Bar {
                bar: ProgressBar::hidden(),
            };
        }
        // The figures first and the bar in whatever width is left, so the line fits an
        // 80-column terminal.
        let (bar, template) = match total {
            Some(n) => (
                ProgressBar::new(n),
                "{percent:>3}% {human_pos}/{human_len} requests {rate} WAF {msg} ETA {eta} \
                 [{wide_bar}]",
            ),
            None => (
                ProgressBar::new_spinner(),
                "{spinner} {human_pos} requests {rate} WAF {msg} {elapsed}",
            ),
        };
        bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("valid template")
                .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&rate(s.per_sec()));
                }),
        );
        bar.set_message("-");
        Bar { bar }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Requests per second of wall-clock time, short: `950/s`, `12k/s`, `1.25M/s`.
fn rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.2}M/s", per_sec / 1e6)
    } else if per_sec >= 1e4 {
        format!("{:.0}k/s", per_sec / 1e3)
    } else {
        format!("{per_sec:.0}/s")
    }
}

/// Write amplification so far: flash programs (all causes) / host pages written.
fn waf_so_far(engine: &Engine) -> Option<f64> {
    let written = engine.host().pages_written;
    (written > 0)
        .then(|| FlashStats::total(&engine.flash().stats().programs) as f64 / written as f64)
}

impl Observer for Bar {
    fn progress(&mut self, p: &Progress) {
        self.bar.set_position(p.requests);
    }

    fn snapshot_every(&self) -> Option<u64> {
        // Only a look at two counters; skipped entirely when the bar is hidden.
        (!self.bar.is_hidden()).then_some(4096)
    }

    fn snapshot(&mut self, _p: &Progress, engine: &Engine) {
        self.bar
            .set_message(waf_so_far(engine).map_or("-".into(), |w| format!("{w:.3}")));
    }
}

/// Requests per interval when `--html` or `--timeline-out` is given without a
/// timeline: about 200 intervals of a workload of known size, else every 10k requests.
pub fn default_timeline(total: Option<u64>) -> TimelineEvery {
    TimelineEvery::Requests(total.map_or(10_000, |n| (n / 200).max(1)))
}

/// Turns the timeline on when an output needs one and the config has none.
pub fn ensure_timeline(cfg: &mut Config, wanted: bool) {
    if wanted && cfg.timeline.is_none() {
        cfg.timeline = Some(default_timeline(ftlab::sim::total_requests(cfg)));
    }
}

/// Checks an output path before the run, so a bad one fails in a second, not after an
/// hour of simulation.
pub fn check_output(flag: &str, path: &Path, extensions: &[&str]) -> anyhow::Result<()> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !extensions.iter().any(|e| ext.eq_ignore_ascii_case(e)) {
        anyhow::bail!(
            "{flag} {}: expected a .{} file",
            path.display(),
            extensions.join(" or .")
        );
    }
    Ok(())
}

/// Writes the timeline of a report as CSV, or as Parquet when the path ends in
/// `.parquet` (one INT64 or DOUBLE column per interval key, null for an absent figure;
/// the same column names as the CSV header).
pub fn write_timeline(report: &ftlab::Report, path: &Path) -> anyhow::Result<()> {
    let t = report
        .timeline
        .as_ref()
        .context("--timeline-out: the run recorded no timeline")?;
    let context = || format!("writing --timeline-out {}", path.display());
    let parquet = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
    if parquet {
        let table = timeline_table(t).with_context(context)?;
        crate::sweep::write_parquet_named(&table, path, "timeline").with_context(context)
    } else {
        std::fs::write(path, t.to_csv()).with_context(context)
    }
}

/// The timeline as a typed table (for Parquet): one column per
/// [`ftlab_report::timeline::COLUMNS`] entry, in order.
fn timeline_table(t: &ftlab_report::timeline::Timeline) -> anyhow::Result<ftlab::sweep::Table> {
    use ftlab::sweep::{Cell, Column, ColumnType, Table};
    let rows = t
        .intervals
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()?;
    let columns = ftlab_report::timeline::COLUMNS
        .iter()
        .map(|c| Column {
            name: c.key.to_string(),
            kind: if c.float {
                ColumnType::Float
            } else {
                ColumnType::Int
            },
            cells: rows
                .iter()
                .map(|r| match &r[c.key] {
                    serde_json::Value::Null => Cell::Null,
                    v if c.float => v.as_f64().map_or(Cell::Null, Cell::Float),
                    v => v.as_u64().map_or(Cell::Null, |n| {
                        Cell::Int(i64::try_from(n).unwrap_or(i64::MAX))
                    }),
                })
                .collect(),
        })
        .collect();
    Ok(Table { columns })
}

/// Writes the HTML report of one run.
pub fn write_html(report: &ftlab::Report, path: &Path) -> anyhow::Result<()> {
    let value = serde_json::to_value(report)?;
    let html = ftlab_html::render(&[ftlab_html::Run {
        label: ftlab_html::default_label(&value),
        report: &value,
    }]);
    std::fs::write(path, html).with_context(|| format!("writing --html {}", path.display()))
}

/// Labels for reports read from `paths`: file stems, or whole paths when two stems
/// are the same.
pub fn labels(paths: &[PathBuf]) -> Vec<String> {
    let stems: Vec<String> = paths
        .iter()
        .map(|p| {
            p.file_stem().map_or_else(
                || p.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let unique = stems
        .iter()
        .enumerate()
        .all(|(i, s)| !stems[..i].contains(s));
    if unique {
        stems
    } else {
        paths.iter().map(|p| p.display().to_string()).collect()
    }
}

/// `ftlab compare`: reads JSON reports, prints their key figures side by side and, with
/// `html`, writes the side-by-side HTML report.
pub fn compare(paths: &[PathBuf], html: Option<&Path>) -> anyhow::Result<String> {
    if let Some(p) = html {
        check_output("--html", p, &["html", "htm"])?;
    }
    let mut reports = Vec::with_capacity(paths.len());
    for p in paths {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a JSON report", p.display()))?;
        anyhow::ensure!(
            v.get("report_version").is_some() && v.get("host").is_some(),
            "{}: not an ftlab report (no `report_version` or `host`; write one with \
             `ftlab run --json FILE`)",
            p.display()
        );
        reports.push(v);
    }
    let runs: Vec<ftlab_html::Run<'_>> = labels(paths)
        .into_iter()
        .zip(&reports)
        .map(|(label, report)| ftlab_html::Run { label, report })
        .collect();
    if let Some(p) = html {
        std::fs::write(p, ftlab_html::render(&runs))
            .with_context(|| format!("writing --html {}", p.display()))?;
    }
    Ok(ftlab_html::summary_text(&runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_stems_unless_two_are_the_same() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(labels(&[p("a/x.json"), p("b/y.json")]), ["x", "y"]);
        assert_eq!(
            labels(&[p("a/x.json"), p("b/x.json")]),
            ["a/x.json", "b/x.json"]
        );
    }

    #[test]
    fn outputs_are_checked_by_extension() {
        assert!(check_output("--html", Path::new("r.html"), &["html"]).is_ok());
        assert!(check_output(
            "--timeline-out",
            Path::new("t.PARQUET"),
            &["csv", "parquet"]
        )
        .is_ok());
        let e =
            check_output("--timeline-out", Path::new("t.xlsx"), &["csv", "parquet"]).unwrap_err();
        assert!(
            e.to_string().contains("expected a .csv or .parquet file"),
            "{e}"
        );
        let e = check_output("--html", Path::new("r.txt"), &["html"]).unwrap_err();
        assert!(e.to_string().contains("--html"), "{e}");
    }

    #[test]
    fn the_default_timeline_has_about_200_intervals() {
        assert_eq!(
            default_timeline(Some(1_000_000)),
            TimelineEvery::Requests(5000)
        );
        assert_eq!(default_timeline(Some(50)), TimelineEvery::Requests(1));
        assert_eq!(default_timeline(None), TimelineEvery::Requests(10_000));
    }

    #[test]
    fn rates_are_short() {
        assert_eq!(rate(950.4), "950/s");
        assert_eq!(rate(12_345.0), "12k/s");
        assert_eq!(rate(1_254_000.0), "1.25M/s");
    }

    #[test]
    fn a_hidden_bar_asks_for_no_snapshots() {
        assert_eq!(Bar::with_target(Some(10), true).snapshot_every(), None);
    }
}
