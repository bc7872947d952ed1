//! ftlab HTML reports (issue 21): one self-contained file for one run, or several runs
//! side by side (`ftlab compare`): the configuration, the summary, the timeline charts,
//! the latency CDF, the merge breakdown and the per-block erase-count and valid-page
//! histograms at the end of the run.
//!
//! Everything is inline (styles, a small script for the cursor readout, the data as
//! server-rendered SVG), so the file opens offline, prints, and renders the same on
//! every machine. It is a pure function of the JSON reports: the same reports give a
//! byte-identical file (no clock, no randomness). Every text from a report is escaped.
//!
//! It reads reports as JSON values rather than as `ftlab_report::Report`, so a report
//! written by another ftlab version, or a file on disk, renders the same way; a key
//! that is missing leaves its figure out.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod svg;

use serde_json::Value;
use std::fmt::Write as _;
use svg::{Bars, Frame, Line};

const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// One run to show: a label (legend and table header) and its JSON report.
pub struct Run<'a> {
    /// How the run is named in legends and tables.
    pub label: String,
    /// The report, as `ftlab run --json` writes it.
    pub report: &'a Value,
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The value at a dotted path (`host.response_ns.p99`).
fn at<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

fn num(v: &Value, path: &str) -> Option<f64> {
    at(v, path).and_then(Value::as_f64)
}

/// A run's label when the caller has none: `ftl / buffer`.
pub fn default_label(report: &Value) -> String {
    let s = |p: &str| {
        at(report, p)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    format!("{} / {}", s("ftl.name"), s("buffer.name"))
}

/// The timeline charts: chart id (= interval key), caption, y label, scale.
const TIMELINE_CHARTS: &[(&str, &str, &str, f64)] = &[
    (
        "waf_cumulative",
        "Write amplification, cumulative",
        "WAF",
        1.0,
    ),
    ("waf", "Write amplification per interval", "WAF", 1.0),
    (
        "free_blocks",
        "Free (erased) blocks at the end of each interval",
        "blocks",
        1.0,
    ),
    (
        "gc_collections",
        "GC collections per interval",
        "collections",
        1.0,
    ),
    ("merges", "Merges per interval (all kinds)", "merges", 1.0),
    (
        "latency_p50_ns",
        "Median response time per interval",
        "µs",
        1e-3,
    ),
    (
        "latency_p99_ns",
        "99th percentile response time per interval",
        "µs",
        1e-3,
    ),
    (
        "latency_max_ns",
        "Largest response time per interval",
        "µs",
        1e-3,
    ),
    (
        "flash_programs",
        "Flash page programs per interval",
        "pages",
        1.0,
    ),
    (
        "flash_page_reads",
        "Flash page reads per interval",
        "pages",
        1.0,
    ),
    ("flash_erases", "Block erases per interval", "blocks", 1.0),
    ("requests", "Host requests per interval", "requests", 1.0),
    (
        "bytes_written",
        "Host writes per interval",
        "MiB",
        1.0 / 1048576.0,
    ),
    (
        "bytes_read",
        "Host reads per interval",
        "MiB",
        1.0 / 1048576.0,
    ),
    (
        "buffer_hit_ratio",
        "Buffer hit ratio per interval",
        "hits / page accesses",
        1.0,
    ),
    (
        "map_cache_hit_ratio",
        "Map-cache hit ratio per interval",
        "hits / lookups",
        1.0,
    ),
];

/// The value of a timeline chart in one interval.
fn interval_value(row: &Value, key: &str) -> Option<f64> {
    if key == "merges" {
        let keys = [
            "merges_switch",
            "merges_partial",
            "merges_full",
            "merges_other",
        ];
        return Some(keys.iter().filter_map(|k| num(row, k)).sum());
    }
    num(row, key)
}

/// A summary figure: label, dotted path in the report, scale.
type Figure = (&'static str, &'static str, f64);

/// The summary tables: a heading and its figures.
const SUMMARY: &[(&str, &[Figure])] = &[
    (
        "Host",
        &[
            ("requests", "host.requests", 1.0),
            ("read requests", "host.read_requests", 1.0),
            ("write requests", "host.write_requests", 1.0),
            ("pages written", "host.pages_written", 1.0),
            ("throughput (KiB/s)", "host.throughput_kib_s", 1.0),
            ("simulated time (s)", "host.sim_time_ns", 1e-9),
            ("power losses", "power_loss.events", 1.0),
            ("violations", "verify.violations", 1.0),
        ],
    ),
    (
        "Flash",
        &[
            ("WAF", "waf", 1.0),
            ("page programs", "flash.page_programs", 1.0),
            ("page reads", "flash.page_reads", 1.0),
            ("block erases", "flash.block_erases", 1.0),
            ("erase count min", "flash.erase_count.min", 1.0),
            ("erase count mean", "flash.erase_count.mean", 1.0),
            ("erase count max", "flash.erase_count.max", 1.0),
        ],
    ),
    (
        "FTL and buffer",
        &[
            ("GC collections", "ftl.gc.invocations", 1.0),
            ("switch merges", "ftl.merges.switch", 1.0),
            ("partial merges", "ftl.merges.partial", 1.0),
            ("full merges", "ftl.merges.full", 1.0),
            ("map-cache hit ratio", "ftl.map_cache.hit_ratio", 1.0),
            ("buffer hit ratio", "buffer.hit_ratio", 1.0),
            ("mapping RAM (bytes)", "ftl.mapping_bytes", 1.0),
        ],
    ),
    (
        "Response time (µs)",
        &[
            ("mean", "host.response_ns.mean", 1e-3),
            ("p50", "host.response_ns.p50", 1e-3),
            ("p99", "host.response_ns.p99", 1e-3),
            ("p99.9", "host.response_ns.p999", 1e-3),
            ("max", "host.response_ns.max", 1e-3),
        ],
    ),
];

/// The whole page for `runs` (one: a run's report; several: a comparison).
pub fn render(runs: &[Run<'_>]) -> String {
    let title = match runs {
        [one] => format!("ftlab report: {}", one.label),
        _ => format!(
            "ftlab compare: {}",
            runs.iter()
                .map(|r| r.label.as_str())
                .collect::<Vec<_>>()
                .join(" vs ")
        ),
    };
    let mut out = String::with_capacity(1 << 16);
    let version = runs
        .first()
        .and_then(|r| at(r.report, "ftlab_version"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"ftlab {}\">\
         <link rel=\"icon\" href=\"data:,\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n<header><h1>{}</h1>\
         <p class=\"sub\">ftlab {} · {} run{}</p></header>\n<main>\n",
        esc(version),
        esc(&title),
        esc(&title),
        esc(version),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
    );
    summary(&mut out, runs);
    timeline_charts(&mut out, runs);
    distribution_charts(&mut out, runs);
    config(&mut out, runs);
    let _ = write!(
        out,
        "</main>\n<footer>Generated by ftlab {}. Self-contained: no network access is needed \
         to view or print this file.</footer>\n<script>{SCRIPT}</script>\n</body></html>\n",
        esc(version)
    );
    out
}

/// A summary cell of `run` for the figure at `path` (scaled).
fn summary_cell(run: &Run<'_>, path: &str, scale: f64) -> String {
    match at(run.report, path) {
        Some(Value::Null) | None => "-".to_string(),
        Some(v) => v
            .as_f64()
            .map_or_else(|| v.to_string(), |x| fmt_cell(x * scale)),
    }
}

/// The summary figures of `runs` side by side, as a plain-text table (what `ftlab
/// compare` prints).
pub fn summary_text(runs: &[Run<'_>]) -> String {
    let mut rows: Vec<Vec<String>> = vec![std::iter::once("figure".to_string())
        .chain(runs.iter().map(|r| r.label.clone()))
        .collect()];
    for (group, figures) in SUMMARY {
        for (label, path, scale) in figures.iter() {
            rows.push(
                std::iter::once(format!("{group}: {label}"))
                    .chain(runs.iter().map(|r| summary_cell(r, path, *scale)))
                    .collect(),
            );
        }
    }
    let cols = runs.len() + 1;
    let width: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = width[c] - cell.chars().count();
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn summary(out: &mut String, runs: &[Run<'_>]) {
    out.push_str("<section id=\"summary\"><h2>Summary</h2><div class=\"tables\">");
    for (group, figures) in SUMMARY {
        let _ = write!(
            out,
            "<table class=\"summary\"><thead><tr><th>{}</th>",
            esc(group)
        );
        for r in runs {
            let _ = write!(out, "<th>{}</th>", esc(&r.label));
        }
        out.push_str("</tr></thead><tbody>");
        for (label, path, scale) in figures.iter() {
            let _ = write!(out, "<tr><th>{}</th>", esc(label));
            for r in runs {
                let _ = write!(out, "<td>{}</td>", esc(&summary_cell(r, path, *scale)));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</div>");
    for r in runs {
        let notices = at(r.report, "notices").and_then(Value::as_array);
        if let Some(list) = notices.filter(|l| !l.is_empty()) {
            let _ = write!(
                out,
                "<div class=\"notices\"><h3>Notices: {}</h3><ul>",
                esc(&r.label)
            );
            for n in list {
                let s = |k: &str| n.get(k).and_then(Value::as_str).unwrap_or("");
                let _ = write!(
                    out,
                    "<li><code>{}</code> {}",
                    esc(s("code")),
                    esc(s("message"))
                );
                if !s("hint").is_empty() {
                    let _ = write!(out, "<br><em>hint: {}</em>", esc(s("hint")));
                }
                out.push_str("</li>");
            }
            out.push_str("</ul></div>");
        }
    }
    out.push_str("</section>\n");
}

/// A table cell: integers in full, other numbers to 4 significant digits.
fn fmt_cell(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
        format!("{v:.digits$}")
    }
}

fn intervals<'v>(r: &Run<'v>) -> &'v [Value] {
    at(r.report, "timeline.intervals")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn timeline_charts(out: &mut String, runs: &[Run<'_>]) {
    let with: Vec<&Run<'_>> = runs.iter().filter(|r| !intervals(r).is_empty()).collect();
    out.push_str("<section id=\"timeline\"><h2>Timeline</h2>");
    if with.is_empty() {
        out.push_str(
            "<p class=\"none\">No timeline was recorded: run with <code>--timeline EVERY</code> \
             (e.g. <code>10k</code> requests or <code>1s</code> of simulated time).</p></section>\n",
        );
        return;
    }
    let every: Vec<String> = with
        .iter()
        .map(|r| {
            let e = at(r.report, "timeline.every")
                .and_then(Value::as_str)
                .unwrap_or("?");
            format!("{}: every {}", r.label, e)
        })
        .collect();
    let _ = write!(
        out,
        "<p>Intervals ({}); x is the simulated time at the end of each interval; red dashed lines are power losses, grey ones the end-of-run drain of the buffer.</p><div class=\"grid\">",
        esc(&every.join("; "))
    );
    let marks: Vec<(f64, &str)> = with
        .iter()
        .flat_map(|r| {
            at(r.report, "timeline.marks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| {
                    let kind = m
                        .get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or("power_loss");
                    Some((num(m, "time_ns")? / 1e9, kind))
                })
        })
        .collect();
    for &(key, title, unit, scale) in TIMELINE_CHARTS {
        let series: Vec<Line> = with
            .iter()
            .map(|r| Line {
                name: r.label.clone(),
                points: intervals(r)
                    .iter()
                    .map(|row| {
                        let x = num(row, "end_ns").unwrap_or(0.0) / 1e9;
                        (x, interval_value(row, key).map(|v| v * scale))
                    })
                    .collect(),
            })
            .collect();
        let drawn = series
            .iter()
            .any(|s| s.points.iter().any(|p| p.1.is_some()));
        if !drawn {
            continue;
        }
        let id = format!("timeline-{key}");
        out.push_str(&svg::lines(
            &Frame {
                id: &id,
                title,
                x_label: "simulated time (s)",
                y_label: unit,
            },
            &series,
            false,
            &marks,
        ));
    }
    out.push_str("</div></section>\n");
}

fn bins_of(r: &Run<'_>, path: &str) -> Vec<(f64, f64, f64)> {
    at(r.report, path)
        .and_then(Value::as_array)
        .map(|bins| {
            bins.iter()
                .filter_map(|b| Some((num(b, "from")?, num(b, "to")? + 1.0, num(b, "blocks")?)))
                .collect()
        })
        .unwrap_or_default()
}

fn distribution_charts(out: &mut String, runs: &[Run<'_>]) {
    out.push_str("<section id=\"distributions\"><h2>Distributions</h2><div class=\"grid\">");
    let cdf: Vec<Line> = runs
        .iter()
        .map(|r| Line {
            name: r.label.clone(),
            points: at(r.report, "distributions.response_cdf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| Some(((num(p, "ns")? / 1e3).max(1e-3), Some(num(p, "q")?))))
                .collect(),
        })
        .filter(|l| !l.points.is_empty())
        .collect();
    if !cdf.is_empty() {
        out.push_str(&svg::lines(
            &Frame {
                id: "latency-cdf",
                title: "Response time CDF (measured phase)",
                x_label: "response time (µs, log scale)",
                y_label: "fraction of requests",
            },
            &cdf,
            true,
            &[],
        ));
    }
    const MERGES: [(&str, &str); 7] = [
        ("GC", "ftl.gc.invocations"),
        ("switch", "ftl.merges.switch"),
        ("partial", "ftl.merges.partial"),
        ("full", "ftl.merges.full"),
        ("pad. switch", "ftl.merges.padding_switch"),
        ("OSM", "ftl.merges.osm"),
        ("BA-BM", "ftl.merges.ba_bm"),
    ];
    let cats: Vec<&str> = MERGES.iter().map(|m| m.0).collect();
    let merges: Vec<(String, Vec<f64>)> = runs
        .iter()
        .map(|r| {
            let v = MERGES
                .iter()
                .map(|m| num(r.report, m.1).unwrap_or(0.0))
                .collect();
            (r.label.clone(), v)
        })
        .collect();
    out.push_str(&svg::grouped_bars(
        &Frame {
            id: "merges",
            title: "GC collections and merges by kind",
            x_label: "kind",
            y_label: "count",
        },
        &cats,
        &merges,
    ));
    for (id, path, title, x_label) in [
        (
            "erase-count",
            "distributions.erase_count",
            "Blocks by erase count at the end of the run",
            "erase count",
        ),
        (
            "valid-pages",
            "distributions.valid_pages",
            "Blocks by valid pages at the end of the run",
            "valid pages in the block",
        ),
    ] {
        let series: Vec<Bars> = runs
            .iter()
            .map(|r| Bars {
                name: r.label.clone(),
                bars: bins_of(r, path),
            })
            .filter(|b| !b.bars.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        out.push_str(&svg::histograms(
            &Frame {
                id,
                title,
                x_label,
                y_label: "blocks",
            },
            &series,
        ));
    }
    out.push_str("</div></section>\n");
}

fn config(out: &mut String, runs: &[Run<'_>]) {
    out.push_str("<section id=\"config\"><h2>Configuration</h2>");
    for r in runs {
        let text = at(r.report, "config")
            .map(|c| serde_json::to_string_pretty(c).unwrap_or_default())
            .unwrap_or_default();
        let _ = write!(
            out,
            "<details{}><summary>{}</summary><pre>{}</pre></details>",
            if runs.len() == 1 { " open" } else { "" },
            esc(&r.label),
            esc(&text)
        );
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(label: &str) -> Value {
        json!({
            "ftlab_version": "0.1.0",
            "host": {"requests": 10, "response_ns": {"p99": 1500}},
            "waf": 1.25,
            "ftl": {"name": label, "gc": {"invocations": 3}, "merges": {"switch": 1}},
            "buffer": {"name": "none", "hit_ratio": null},
            "notices": [{"code": "x_y", "message": "<b>careful</b>", "hint": null}],
            "config": {"ftl": label},
            "timeline": {"every": "5", "intervals": [
                {"end_ns": 1000, "requests": 5, "waf": null, "free_blocks": 9},
                {"end_ns": 2000, "requests": 5, "waf": 1.5, "free_blocks": 8}
            ], "marks": [{"time_ns": 1500, "kind": "power_loss"}, {"time_ns": 2000, "kind": "drain"}]},
            "distributions": {
                "response_cdf": [{"q": 0.5, "ns": 1000}, {"q": 1.0, "ns": 3000}],
                "erase_count": [{"from": 0, "to": 0, "blocks": 4}, {"from": 1, "to": 1, "blocks": 6}],
                "valid_pages": [{"from": 0, "to": 63, "blocks": 10}]
            }
        })
    }

    #[test]
    fn one_page_with_every_section_and_escaped_text() {
        let r = report("page<script>");
        let html = render(&[Run {
            label: default_label(&r),
            report: &r,
        }]);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(!html.contains("page<script>"), "labels are escaped");
        assert!(html.contains("&lt;b&gt;careful&lt;/b&gt;"));
        for id in [
            "timeline-requests",
            "timeline-waf",
            "timeline-free_blocks",
            "latency-cdf",
            "merges",
            "erase-count",
            "valid-pages",
        ] {
            assert!(html.contains(&format!("data-chart=\"{id}\"")), "{id}");
        }
        assert!(
            !html.contains("data-chart=\"timeline-map_cache_hit_ratio\""),
            "no chart without data"
        );
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "no network"
        );
        assert!(html.contains("data-mark=\"power_loss\"") && html.contains("data-mark=\"drain\""));
    }

    #[test]
    fn a_comparison_has_one_series_per_run_and_is_deterministic() {
        let (a, b) = (report("page"), report("dftl"));
        let runs = [
            Run {
                label: "a".into(),
                report: &a,
            },
            Run {
                label: "b".into(),
                report: &b,
            },
        ];
        let html = render(&runs);
        assert_eq!(html, render(&runs));
        assert!(html.contains("ftlab compare: a vs b"));
        assert!(
            html.contains("data-chart=\"timeline-requests\" data-kind=\"line\" data-series=\"2\"")
        );
    }

    #[test]
    fn a_report_without_timeline_says_how_to_get_one() {
        let r = json!({"host": {"requests": 1}});
        let html = render(&[Run {
            label: "x".into(),
            report: &r,
        }]);
        assert!(html.contains("--timeline EVERY"));
    }
}
