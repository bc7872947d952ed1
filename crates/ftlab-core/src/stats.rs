//! The statistics sink of a scheme: named figures, each a counter or a gauge with a
//! unit, reported under `ftl.extra` and `buffer.extra`.
//!
//! Counters count events since the last reset (pages, merges, reads) and add up across
//! the scheme instances of a run: a power loss replaces the FTL and the buffer, and the
//! report must still count what the replaced instances did. Gauges are a state or a
//! setting read at the end (entries cached, log blocks in use, a ratio): the current
//! instance's value stands. A figure that is neither (a ratio of counters) is a gauge
//! over the current instance; its counters are also reported, so a reader can recompute
//! it over the whole run.
//!
//! The named counters every scheme shares (GC, merges, map cache, translation pages)
//! are `u64` fields of [`FtlStats`](crate::ftl::FtlStats) and
//! [`BufferStats`](crate::buffer::BufferStats), so counting on the hot path is one
//! add, with no lookup by name. Both structs are declared by one macro that gives each
//! field its unit and generates the rest from that list: the sum across power losses
//! (`add_counters`), the list of keys and units (`COUNTERS`) and the whole set of
//! figures as one sink (`to_sink`: shared counters and scheme-specific figures, each
//! with its kind and unit). This sink holds what only some schemes have; its JSON keeps
//! the shape of a plain map, key to number.
//!
//! [`Pow2Histogram`] counts sizes (pages per group) in power-of-two buckets and reports
//! them as counters into a sink, under keys made by [`pow2_keys!`](crate::pow2_keys).

use serde::ser::{Serialize, SerializeMap, Serializer};
use std::collections::BTreeMap;

/// Whether a figure adds up across scheme instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Counts events; summed across the instances of a run.
    Counter,
    /// A state, setting or ratio at the end; the current instance's value.
    Gauge,
}

/// One figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure {
    /// Counter or gauge.
    pub kind: Kind,
    /// Unit: `pages`, `blocks`, `merges`, `entries`, `bytes`, `ratio`, ...
    pub unit: &'static str,
    /// Value.
    pub value: f64,
}

/// Named figures of one scheme.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sink {
    figures: BTreeMap<&'static str, Figure>,
}

impl Sink {
    /// Records counter `key` (events since the last reset) in `unit`.
    pub fn counter(&mut self, key: &'static str, unit: &'static str, value: f64) {
        self.figures.insert(
            key,
            Figure {
                kind: Kind::Counter,
                unit,
                value,
            },
        );
    }

    /// Records the per-stream figures of a scheme with a separate GC frontier
    /// (`gc_frontier = "separate"`): pages programmed and blocks opened by the host
    /// stream (`[0]`) and the GC stream (`[1]`).
    pub fn streams(&mut self, programs: [u64; 2], blocks: [u64; 2]) {
        self.counter("stream_host_programs", "pages", programs[0] as f64);
        self.counter("stream_gc_programs", "pages", programs[1] as f64);
        self.counter("stream_host_blocks", "blocks", blocks[0] as f64);
        self.counter("stream_gc_blocks", "blocks", blocks[1] as f64);
    }

    /// Records gauge `key` (a value at the end) in `unit`.
    pub fn gauge(&mut self, key: &'static str, unit: &'static str, value: f64) {
        self.figures.insert(
            key,
            Figure {
                kind: Kind::Gauge,
                unit,
                value,
            },
        );
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.figures.get(key).map(|f| f.value)
    }

    /// The figure of `key`, with its kind and unit.
    pub fn figure(&self, key: &str) -> Option<&Figure> {
        self.figures.get(key)
    }

    /// Whether `key` is recorded.
    pub fn contains_key(&self, key: &str) -> bool {
        self.figures.contains_key(key)
    }

    /// Every figure, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Figure)> {
        self.figures.iter().map(|(k, f)| (*k, f))
    }

    /// Folds in the figures of an earlier instance `o` of the same run: counters add
    /// up; gauges keep this (the current) instance's value, or `o`'s if this one has
    /// none.
    pub fn add_counters(&mut self, o: &Sink) {
        for (k, f) in &o.figures {
            match self.figures.get_mut(k) {
                Some(mine) if mine.kind == Kind::Counter && f.kind == Kind::Counter => {
                    mine.value += f.value;
                }
                Some(_) => {}
                None => {
                    self.figures.insert(k, *f);
                }
            }
        }
    }
}

impl std::ops::Index<&str> for Sink {
    type Output = f64;
    fn index(&self, key: &str) -> &f64 {
        &self
            .figures
            .get(key)
            .unwrap_or_else(|| panic!("no figure `{key}` in the sink"))
            .value
    }
}

impl Serialize for Sink {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.figures.len()))?;
        for (k, f) in &self.figures {
            m.serialize_entry(k, &f.value)?;
        }
        m.end()
    }
}

/// Declares a statistics struct of `u64` counters, each with its doc comment and unit,
/// plus `extra`, a [`Sink`] of scheme-specific figures. Generates `COUNTERS` (every
/// counter's key and unit), `add_counters` (folds in an earlier instance of the same
/// run: every counter and `extra`'s counters add up) and `to_sink` (every figure in
/// one sink). A new counter is one line here; nothing else lists the fields.
macro_rules! counters {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[doc = $doc:literal])* $field:ident: $unit:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[doc = concat!("\n\nUnit: ", $unit, ".")]
                pub $field: u64,
            )*
            /// Scheme-specific figures, reported under `extra`.
            pub extra: $crate::stats::Sink,
        }

        impl $name {
            /// Every shared counter: report key and unit.
            pub const COUNTERS: &'static [(&'static str, &'static str)] =
                &[$((stringify!($field), $unit)),*];

            /// Folds in the counters of an earlier instance `o` of the same run (a
            /// power loss replaced it): every counter and `extra`'s counters add up;
            /// `extra`'s gauges keep this instance's values.
            pub fn add_counters(&mut self, o: &Self) {
                $( self.$field += o.$field; )*
                self.extra.add_counters(&o.extra);
            }

            /// Every figure in one sink: the shared counters, then `extra`'s figures
            /// (a scheme-specific figure never reuses a shared counter's key).
            pub fn to_sink(&self) -> $crate::stats::Sink {
                let mut s = self.extra.clone();
                $(
                    debug_assert!(
                        !s.contains_key(stringify!($field)),
                        "`extra` reuses the shared key `{}`",
                        stringify!($field)
                    );
                    s.counter(stringify!($field), $unit, self.$field as f64);
                )*
                s
            }
        }
    };
}
pub(crate) use counters;

/// Buckets of a [`Pow2Histogram`]: sizes 1, 2, 3-4, 5-8, ..., 2049-4096.
pub const POW2_BUCKETS: usize = 13;

/// The [`Pow2Histogram`] bucket of size `n >= 1`: 0 for 1, 1 for 2, 2 for 3-4, 3 for
/// 5-8, ..., 12 for 2049-4096 (`ceil(log2 n)`).
#[inline]
pub fn pow2_bucket(n: u32) -> usize {
    if n <= 1 {
        0
    } else {
        (32 - (n - 1).leading_zeros()) as usize
    }
}

/// The [`POW2_BUCKETS`] keys of a [`Pow2Histogram`]: the prefix followed by `1`, `2`,
/// `3_4`, `5_8`, ..., `2049_4096`, as `&'static str` for a [`Sink`].
#[macro_export]
macro_rules! pow2_keys {
    ($prefix:literal) => {
        // Written out: `concat!` takes only literals, so the suffixes cannot be computed.
        [
            concat!($prefix, "1"),
            concat!($prefix, "2"),
            concat!($prefix, "3_4"),
            concat!($prefix, "5_8"),
            concat!($prefix, "9_16"),
            concat!($prefix, "17_32"),
            concat!($prefix, "33_64"),
            concat!($prefix, "65_128"),
            concat!($prefix, "129_256"),
            concat!($prefix, "257_512"),
            concat!($prefix, "513_1024"),
            concat!($prefix, "1025_2048"),
            concat!($prefix, "2049_4096"),
        ]
    };
}

/// Counts of sizes from 1 to 4096 (e.g. the pages of the groups a scheme handles) in
/// power-of-two buckets ([`pow2_bucket`]). Shared by the C-lash buffer and CACH-FTL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pow2Histogram([u64; POW2_BUCKETS]);

impl Pow2Histogram {
    /// Counts one size `n` (1 to 4096).
    #[inline]
    pub fn record(&mut self, n: u32) {
        self.0[pow2_bucket(n)] += 1;
    }

    /// Records the buckets up to the one of size `max` (the largest size possible, so
    /// the report lists every reachable bucket and no other) as counters `keys` in
    /// `unit`.
    pub fn report(
        &self,
        sink: &mut Sink,
        keys: &[&'static str; POW2_BUCKETS],
        max: u32,
        unit: &'static str,
    ) {
        for (key, &n) in keys.iter().zip(&self.0).take(pow2_bucket(max) + 1) {
            sink.counter(key, unit, n as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_histogram_buckets_and_reports_up_to_the_largest_size() {
        let b: Vec<usize> = [1, 2, 3, 4, 5, 8, 9, 64, 65, 4096]
            .map(pow2_bucket)
            .to_vec();
        assert_eq!(b, vec![0, 1, 2, 2, 3, 3, 4, 6, 7, 12]);
        let mut h = Pow2Histogram::default();
        for n in [1, 3, 4, 4, 64] {
            h.record(n);
        }
        let mut sink = Sink::default();
        const KEYS: [&str; POW2_BUCKETS] = crate::pow2_keys!("g_");
        h.report(&mut sink, &KEYS, 64, "groups");
        let got: Vec<(&str, f64)> = sink.iter().map(|(k, f)| (k, f.value)).collect();
        let want = [
            ("g_1", 1.0),
            ("g_17_32", 0.0),
            ("g_2", 0.0),
            ("g_33_64", 1.0),
            ("g_3_4", 3.0),
            ("g_5_8", 0.0),
            ("g_9_16", 0.0),
        ];
        assert_eq!(got, want);
        assert_eq!(KEYS[12], "g_2049_4096");
    }

    #[test]
    fn counters_add_up_and_gauges_keep_the_current_value() {
        let mut before = Sink::default();
        before.counter("fillers", "pages", 5.0);
        before.gauge("log_blocks", "blocks", 3.0);
        before.counter("only_before", "pages", 2.0);
        let mut now = Sink::default();
        now.counter("fillers", "pages", 7.0);
        now.gauge("log_blocks", "blocks", 4.0);
        now.add_counters(&before);
        assert_eq!(now["fillers"], 12.0);
        assert_eq!(now["log_blocks"], 4.0);
        assert_eq!(now.get("only_before"), Some(2.0));
        assert_eq!(now.figure("fillers").unwrap().unit, "pages");
        assert_eq!(
            serde_json::to_string(&now).unwrap(),
            r#"{"fillers":12.0,"log_blocks":4.0,"only_before":2.0}"#
        );
    }
}
