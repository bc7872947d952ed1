//! The report's optional `timeline` and `distributions` sections (issue 21): how a run
//! went interval by interval, and the shape of the device at its end.
//!
//! Each interval column is declared once, with its unit and help, in one macro (`columns!`): the
//! [`Interval`] struct (the JSON keys), [`COLUMNS`] (the CSV header and the docs) and
//! the CSV row writer are generated from that one list, so they cannot drift.

use serde::Serialize;
use std::fmt::Write as _;

/// One cell of a CSV row: numbers as Rust prints them (shortest round-trip form, so
/// byte-identical across runs), an absent figure as an empty cell.
trait Cell {
    /// Whether the column holds fractions (Parquet DOUBLE) rather than counts (INT64).
    const FLOAT: bool = false;
    fn cell(&self, out: &mut String);
}

impl Cell for u64 {
    fn cell(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl Cell for Option<u64> {
    fn cell(&self, out: &mut String) {
        if let Some(v) = self {
            v.cell(out);
        }
    }
}

impl Cell for Option<f64> {
    const FLOAT: bool = true;
    fn cell(&self, out: &mut String) {
        if let Some(v) = self {
            let _ = write!(out, "{v}");
        }
    }
}

/// A timeline column: its key (JSON and CSV), unit and meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// JSON key and CSV header.
    pub key: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// What it counts (the field's doc comment, lines joined; [`Column::help`] trims it).
    pub help_raw: &'static str,
    /// A fraction (ratios: `f64`) rather than a count (`u64`).
    pub float: bool,
}

impl Column {
    /// What it counts, in one line.
    pub fn help(&self) -> &'static str {
        self.help_raw.trim()
    }
}

macro_rules! columns {
    ($($(#[doc = $help:literal])+ $key:ident: $ty:ty, $unit:literal;)*) => {
        /// One interval of a timeline. Counts are of the interval alone unless the key
        /// says `cumulative`; ratios are `null` (an empty CSV cell) when their
        /// denominator is 0 in the interval.
        #[derive(Serialize, Debug, Clone, PartialEq, Default)]
        pub struct Interval {
            $($(#[doc = $help])+ pub $key: $ty,)*
        }

        /// Every column of [`Interval`], in order.
        pub const COLUMNS: &[Column] = &[
            $(Column {
                key: stringify!($key),
                unit: $unit,
                help_raw: concat!($($help),+),
                float: <$ty as Cell>::FLOAT,
            },)*
        ];

        impl Interval {
            fn csv_row(&self, out: &mut String) {
                let mut first = true;
                $(
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    Cell::cell(&self.$key, out);
                )*
                let _ = first;
                out.push('\n');
            }
        }
    };
}

columns! {
    /// Interval number, from 0.
    index: u64, "";
    /// Start: the interval's lower bound (time-based intervals), or the end of the
    /// previous interval (request-count intervals; the first starts at the arrival of
    /// its first request), in simulated time.
    start_ns: u64, "ns";
    /// End: the interval's upper bound (time-based) or the arrival of its last request
    /// (request-count). A run of empty time intervals is one row spanning them.
    end_ns: u64, "ns";
    /// Host requests that arrived in the interval (all kinds).
    requests: u64, "requests";
    /// Host read requests.
    read_requests: u64, "requests";
    /// Host write requests.
    write_requests: u64, "requests";
    /// Bytes the host read (as requested).
    bytes_read: u64, "bytes";
    /// Bytes the host wrote (as requested).
    bytes_written: u64, "bytes";
    /// Pages the host wrote (the denominator of WAF).
    host_pages_written: u64, "pages";
    /// Flash page reads, all causes.
    flash_page_reads: u64, "pages";
    /// Flash spare-only reads, all causes.
    flash_spare_reads: u64, "reads";
    /// Flash page programs, all causes.
    flash_programs: u64, "pages";
    /// Flash block erases, all causes.
    flash_erases: u64, "blocks";
    /// Write amplification of the interval: flash programs / host pages written.
    waf: Option<f64>, "ratio";
    /// Write amplification from the start of the measured phase to the interval's end.
    waf_cumulative: Option<f64>, "ratio";
    /// Garbage collections (victim blocks reclaimed).
    gc_collections: u64, "collections";
    /// Switch merges.
    merges_switch: u64, "merges";
    /// Partial merges.
    merges_partial: u64, "merges";
    /// Full merges.
    merges_full: u64, "merges";
    /// Other merges: padding switch, optimized switch and buffer-aware (BA-BM) merges.
    merges_other: u64, "merges";
    /// Erased blocks (no page programmed) at the interval's end.
    free_blocks: u64, "blocks";
    /// Buffer hits / host page accesses in the interval.
    buffer_hit_ratio: Option<f64>, "ratio";
    /// Mapping-cache hits / lookups in the interval.
    map_cache_hit_ratio: Option<f64>, "ratio";
    /// Median response time of the interval's requests.
    latency_p50_ns: Option<u64>, "ns";
    /// 99th percentile response time of the interval's requests.
    latency_p99_ns: Option<u64>, "ns";
    /// Largest response time of the interval's requests.
    latency_max_ns: Option<u64>, "ns";
    /// Power losses that struck in the interval (before one of its requests).
    power_losses: u64, "events";
}

/// A power loss, placed on the timeline.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Mark {
    /// `power_loss` (the FTL recovered) or `power_loss_unrecovered` (the run stopped).
    pub kind: &'static str,
    /// Measured requests submitted before it struck.
    pub after_request: u64,
    /// Simulated time of the last request before it.
    pub time_ns: u64,
    /// The interval it falls in.
    pub interval: u64,
}

/// `timeline`: the measured phase cut into intervals.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The interval as configured (`10k`: requests, `1s`: simulated time).
    pub every: String,
    /// `requests` or `time`.
    pub unit: &'static str,
    /// The intervals, in order; the last one may be partial. In JSON each interval is
    /// one line of the otherwise pretty-printed report (the private `one_line_each`).
    #[serde(serialize_with = "one_line_each")]
    pub intervals: Vec<Interval>,
    /// Power losses, in order.
    pub marks: Vec<Mark>,
}

/// Serializes each interval as compact JSON embedded verbatim, so a pretty-printed
/// report gives one line per interval instead of one per figure: the same keys and
/// values, easier to scan by eye, and about half the serialization work (a pretty
/// printer indents every key; at 1,000 intervals that was a third of the timeline's
/// cost). Other serializers see the same values (serde_json's `Value` parses the
/// embedded text back).
fn one_line_each<S: serde::Serializer>(rows: &[Interval], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::{Error, SerializeSeq};
    let mut seq = s.serialize_seq(Some(rows.len()))?;
    for row in rows {
        seq.serialize_element(&serde_json::value::to_raw_value(row).map_err(S::Error::custom)?)?;
    }
    seq.end()
}

impl Timeline {
    /// The timeline as CSV: a header of [`COLUMNS`] keys, one row per interval.
    pub fn to_csv(&self) -> String {
        let mut out = String::with_capacity(64 * (self.intervals.len() + 1));
        let header: Vec<&str> = COLUMNS.iter().map(|c| c.key).collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for row in &self.intervals {
            row.csv_row(&mut out);
        }
        out
    }
}

/// One bin of a histogram over blocks: values in `from..=to`, and how many blocks.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Bin {
    /// Lowest value in the bin.
    pub from: u64,
    /// Highest value in the bin.
    pub to: u64,
    /// Blocks whose value falls in it.
    pub blocks: u64,
}

/// One point of the response-time distribution.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Quantile {
    /// Fraction of requests, 0 to 1.
    pub q: f64,
    /// Response time at or below which that fraction completed.
    pub ns: u64,
}

/// `distributions`: the shape of the measured phase and of the device at the end of
/// the run (recorded with the timeline).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Distributions {
    /// The response-time distribution at fixed quantiles (a CDF).
    pub response_cdf: Vec<Quantile>,
    /// Blocks by erase count (device life, preconditioning included), at most
    /// [`MAX_BINS`] bins of equal width.
    pub erase_count: Vec<Bin>,
    /// Blocks by valid pages at the end of the run, at most [`MAX_BINS`] bins.
    pub valid_pages: Vec<Bin>,
}

/// Most bins a block histogram has.
pub const MAX_BINS: u64 = 64;

/// The quantiles of [`Distributions::response_cdf`].
pub const CDF_QUANTILES: &[f64] = &[
    0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999,
    0.9995, 0.9999, 1.0,
];

/// A histogram of `values` over `lo..=hi` in at most [`MAX_BINS`] bins of equal width
/// (empty for no values).
pub fn bins(values: impl Iterator<Item = u64> + Clone, lo: u64, hi: u64) -> Vec<Bin> {
    if hi < lo {
        return Vec::new();
    }
    let span = hi - lo + 1;
    let width = span.div_ceil(MAX_BINS).max(1);
    let n = span.div_ceil(width);
    let mut out: Vec<Bin> = (0..n)
        .map(|i| Bin {
            from: lo + i * width,
            to: (lo + (i + 1) * width - 1).min(hi),
            blocks: 0,
        })
        .collect();
    for v in values {
        debug_assert!((lo..=hi).contains(&v));
        out[((v - lo) / width) as usize].blocks += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_a_header_of_every_column_and_empty_cells_for_absent_figures() {
        let t = Timeline {
            every: "2".into(),
            unit: "requests",
            intervals: vec![Interval {
                index: 0,
                requests: 2,
                waf: Some(1.5),
                latency_p50_ns: None,
                ..Default::default()
            }],
            marks: vec![],
        };
        let csv = t.to_csv();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header.len(), COLUMNS.len());
        assert_eq!(header[0], "index");
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(row.len(), COLUMNS.len());
        let col = |k: &str| header.iter().position(|h| *h == k).unwrap();
        assert_eq!(row[col("requests")], "2");
        assert_eq!(row[col("waf")], "1.5");
        assert_eq!(row[col("latency_p50_ns")], "");
        assert_eq!(row[col("buffer_hit_ratio")], "");
    }

    #[test]
    fn each_interval_is_one_line_of_pretty_json_with_every_key() {
        let row = |index| Interval {
            index,
            requests: 2,
            waf: Some(1.5),
            ..Default::default()
        };
        let t = Timeline {
            every: "2".into(),
            unit: "requests",
            intervals: vec![row(0), row(1)],
            marks: vec![],
        };
        let pretty = serde_json::to_string_pretty(&t).unwrap();
        let lines: Vec<&str> = pretty.lines().filter(|l| l.contains("\"index\"")).collect();
        assert_eq!(lines.len(), 2, "{pretty}");
        for (i, line) in lines.iter().enumerate() {
            assert!(line.trim_start().starts_with(&format!("{{\"index\":{i},")));
            assert_eq!(line.matches("\":").count(), COLUMNS.len(), "{line}");
        }
        // The same values through serde_json's `Value`, and through a compact writer.
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["intervals"][1]["index"], 1);
        assert_eq!(v["intervals"][0]["waf"], 1.5);
        assert_eq!(v["intervals"][0]["latency_p50_ns"], serde_json::Value::Null);
        let compact: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(compact, v);
    }

    #[test]
    fn bins_cover_the_range_in_at_most_max_bins() {
        let b = bins([0u64, 1, 1, 3].into_iter(), 0, 3);
        assert_eq!(b.len(), 4);
        assert_eq!(
            b.iter().map(|b| b.blocks).collect::<Vec<_>>(),
            vec![1, 2, 0, 1]
        );
        let many = bins(0..1000u64, 0, 999);
        assert!(many.len() as u64 <= MAX_BINS);
        assert_eq!(many.iter().map(|b| b.blocks).sum::<u64>(), 1000);
        assert_eq!(many.last().unwrap().to, 999);
        assert!(bins(std::iter::empty(), 1, 0).is_empty());
    }

    #[test]
    fn every_column_has_a_unit_entry_and_help() {
        for c in COLUMNS {
            assert!(!c.help().is_empty(), "{}", c.key);
        }
        assert!(COLUMNS.iter().any(|c| c.key == "waf_cumulative"));
    }
}
