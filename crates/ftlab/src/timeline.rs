//! The timeline of a run (issue 21): the measured phase cut into intervals of a request
//! count (`timeline = "10k"`) or of simulated time (`timeline = "1s"`), each with its
//! host requests and bytes, flash operations, WAF, GC and merges, free blocks, hit
//! ratios, response-time percentiles and power losses; plus, at the end, the
//! response-time CDF and the per-block erase-count and valid-page histograms.
//!
//! The run records it itself rather than through an [`crate::Observer`]: time-based
//! intervals and per-interval percentiles need a look at every request, and observers
//! are called every `progress_every` requests by design. Per request the [`Recorder`]
//! does a compare or two and records one response time in a preallocated histogram;
//! everything else is a difference of the engine's cumulative counters, taken once per
//! interval. Nothing is allocated per request.

use ftlab_core::engine::Engine;
use ftlab_core::flash::FlashStats;
use ftlab_core::units::Pbn;
use ftlab_core::Nanos;
use ftlab_report::timeline::{
    bins, Distributions, Interval, Mark, Quantile, Timeline, CDF_QUANTILES,
};
use std::fmt;

/// How the timeline cuts the measured phase (the `timeline` key, `--timeline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineEvery {
    /// Every N requests (`10k`, `2500`, `1M`).
    Requests(u64),
    /// Every span of simulated time (`1s`, `500ms`, `250us`, `100ns`).
    Time(Nanos),
}

const TIME_UNITS: [(&str, u64); 6] = [
    ("min", 60_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("ns", 1),
    ("s", 1_000_000_000),
];

impl std::str::FromStr for TimelineEvery {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let expected = "expected a request count such as 10k, 2500 or 1M, or simulated \
                        time such as 1s, 500ms or 250us";
        let bad = || format!("`{text}` is not an interval: {expected}");
        let number = |digits: &str| -> Result<f64, String> {
            let v: f64 = digits.trim().parse().map_err(|_| bad())?;
            if !v.is_finite() || v <= 0.0 {
                return Err(format!("`{text}`: the interval must be above 0"));
            }
            Ok(v)
        };
        for (unit, ns) in TIME_UNITS {
            if let Some(digits) = t.strip_suffix(unit) {
                let total = number(digits)? * ns as f64;
                if total < 1.0 || total > u64::MAX as f64 / 2.0 {
                    return Err(format!("`{text}`: out of range (1ns up to centuries)"));
                }
                return Ok(TimelineEvery::Time(Nanos(total.round() as u64)));
            }
        }
        let (digits, scale) = match t.as_bytes().last() {
            Some(b'k' | b'K') => (&t[..t.len() - 1], 1e3),
            Some(b'M') => (&t[..t.len() - 1], 1e6),
            _ => (t, 1.0),
        };
        let n = number(digits)? * scale;
        if n.fract() != 0.0 || n > 1e18 {
            return Err(format!("`{text}`: a request count must be a whole number"));
        }
        Ok(TimelineEvery::Requests(n as u64))
    }
}

impl fmt::Display for TimelineEvery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TimelineEvery::Requests(n) if n % 1_000_000 == 0 => write!(f, "{}M", n / 1_000_000),
            TimelineEvery::Requests(n) if n % 1_000 == 0 => write!(f, "{}k", n / 1_000),
            TimelineEvery::Requests(n) => write!(f, "{n}"),
            TimelineEvery::Time(Nanos(ns)) => {
                for (unit, per) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
                    if ns % per == 0 {
                        return write!(f, "{}{unit}", ns / per);
                    }
                }
                write!(f, "{ns}ns")
            }
        }
    }
}

impl serde::Serialize for TimelineEvery {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for TimelineEvery {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = TimelineEvery;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a request count such as 10k, or simulated time such as 1s or 500ms")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<TimelineEvery, E> {
                if v == 0 {
                    return Err(E::custom("the interval must be above 0"));
                }
                Ok(TimelineEvery::Requests(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<TimelineEvery, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!("{v}: the interval must be above 0"))),
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TimelineEvery, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for TimelineEvery {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TimelineEvery".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["string", "integer"],
            "description": "a request count (10k, 2500, 1M) or simulated time (1s, 500ms, 250us, 100ns)",
            "pattern": "^ *[0-9.]+ *(k|K|M|min|ms|us|µs|ns|s)? *$",
        })
    }
}

/// The engine's cumulative counters of the measured phase that intervals difference.
#[derive(Clone, Debug, Default)]
struct Totals {
    requests: u64,
    read_requests: u64,
    write_requests: u64,
    bytes_read: u64,
    bytes_written: u64,
    pages_read: u64,
    pages_written: u64,
    flash: FlashStats,
    gc: u64,
    switch: u64,
    partial: u64,
    full: u64,
    other: u64,
    map_hits: u64,
    map_lookups: u64,
    buffer_hits: u64,
}

impl Totals {
    fn of(engine: &Engine) -> Totals {
        let h = engine.host();
        let f = engine.ftl_stats();
        let b = engine.buffer_stats();
        Totals {
            requests: h.requests,
            read_requests: h.read_requests,
            write_requests: h.write_requests,
            bytes_read: h.bytes_read,
            bytes_written: h.bytes_written,
            pages_read: h.pages_read,
            pages_written: h.pages_written,
            flash: *engine.flash().stats(),
            gc: f.gc_invocations,
            switch: f.merges_switch,
            partial: f.merges_partial,
            full: f.merges_full,
            other: f.merges_padding_switch + f.merges_osm + f.merges_ba_bm,
            map_hits: f.map_hits,
            map_lookups: f.map_hits + f.map_misses,
            buffer_hits: b.read_hits + b.write_hits,
        }
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Sub-buckets per power of two in [`Latencies`]: values are kept within 1/32 (3.1%),
/// plenty for a chart, and half the buckets an interval's reset and quantiles walk.
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
/// Buckets: exact below `2 * SUB`, then `SUB` per power of two up to 2^64.
const BUCKETS: usize = (64 - SUB_BITS as usize) * SUB + SUB;
/// The table's size: a power of two above [`BUCKETS`], so an index masked with
/// `TABLE - 1` needs no bounds check on the hot path.
const TABLE: usize = BUCKETS.next_power_of_two();

/// The response times of one interval: a log-linear histogram (exact below 64 ns,
/// within 3.1% above). Recording is an index, an increment and a running maximum; the
/// interval's request count comes from the engine's counters, and the highest bucket
/// from the maximum, so nothing else is kept per request. Closing an interval walks
/// the buckets once, up to the maximum's, finding both quantiles and zeroing each
/// bucket as it passes (no separate reset).
struct Latencies {
    counts: Box<[u64; TABLE]>,
    max: u64,
}

impl Latencies {
    fn new() -> Latencies {
        Latencies {
            counts: Box::new([0; TABLE]),
            max: 0,
        }
    }

    /// Bucket of `v`, without a branch: below `2 * SUB` the shift is 0 and the bucket
    /// is `v`; above, `SUB` buckets per power of two.
    #[inline]
    fn index(v: u64) -> usize {
        let e = 63 - (v | (2 * SUB as u64 - 1)).leading_zeros();
        let shift = e - SUB_BITS;
        shift as usize * SUB + (v >> shift) as usize
    }

    /// The largest value of bucket `i`.
    fn upper(i: usize) -> u64 {
        if i < 2 * SUB {
            return i as u64;
        }
        let shift = (i / SUB - 1) as u32;
        let m = (i % SUB + SUB) as u64;
        ((m + 1) << shift).wrapping_sub(1).max(m << shift)
    }

    #[inline]
    fn record(&mut self, v: u64) {
        self.counts[Latencies::index(v) & (TABLE - 1)] += 1;
        self.max = self.max.max(v);
    }

    /// The values at the median and the 99th percentile of the `n` values recorded
    /// since the last call (the largest value of the bucket where the cumulative count
    /// reaches `ceil(q * n)`, at most the exact maximum; `None` with `n = 0`), and the
    /// maximum; empties the histogram. One pass up to the maximum's bucket finds both
    /// quantiles and zeroes what it passes. Should fewer than `n` values have been
    /// recorded (a run that failed inside a request, which the engine counted), an
    /// unreached quantile is the maximum.
    fn take(&mut self, n: u64) -> (Option<u64>, Option<u64>, Option<u64>) {
        let max = std::mem::take(&mut self.max);
        let hi = Latencies::index(max);
        let target = |q: f64| ((q * n as f64).ceil() as u64).max(1);
        let (t50, t99) = (target(0.5), target(0.99));
        let (mut i50, mut i99) = (hi, hi);
        let mut next = t50;
        let mut found50 = false;
        let mut cum = 0;
        for (i, c) in self.counts[..=hi].iter_mut().enumerate() {
            cum += std::mem::take(c);
            if cum >= next {
                if !found50 {
                    found50 = true;
                    i50 = i;
                    next = t99;
                }
                if cum >= t99 && next != u64::MAX {
                    i99 = i;
                    next = u64::MAX;
                }
            }
        }
        if n == 0 {
            return (None, None, None);
        }
        let value = |i: usize| Some(Latencies::upper(i).min(max));
        (value(i50), value(i99), Some(max))
    }
}

/// Records a timeline during a run; see the module documentation.
pub struct Recorder {
    every: TimelineEvery,
    /// Recording: the measured phase has started.
    active: bool,
    /// Time-based: the current interval has bounds.
    open: bool,
    start_ns: u64,
    /// Time-based: the current interval's upper bound. 0 when the measured phase
    /// starts, so its first request opens the first interval; `u64::MAX` after that
    /// for request-count intervals, and before the measured phase. A request arriving
    /// at or after it takes the cold path: the only per-request test before a request.
    bound_ns: u64,
    /// Request-count: the engine's request count at which the current interval
    /// closes; `u64::MAX` otherwise, and before the measured phase.
    close_at: u64,
    last_arrival_ns: u64,
    power_losses: u64,
    latency: Latencies,
    base: Totals,
    rows: Vec<Interval>,
    marks: Vec<Mark>,
}

impl Recorder {
    /// A recorder cutting intervals `every`; idle until [`Recorder::start`].
    pub fn new(every: TimelineEvery) -> Recorder {
        Recorder {
            every,
            active: false,
            open: false,
            start_ns: 0,
            bound_ns: u64::MAX,
            close_at: u64::MAX,
            last_arrival_ns: 0,
            power_losses: 0,
            latency: Latencies::new(),
            base: Totals::default(),
            rows: Vec::with_capacity(1024),
            marks: Vec::new(),
        }
    }

    /// The measured phase starts (the engine's counters were just reset): anything
    /// recorded before is dropped.
    pub fn start(&mut self, engine: &Engine) {
        self.active = true;
        self.open = false;
        self.start_ns = 0;
        self.bound_ns = 0;
        self.base = Totals::of(engine);
        self.close_at = match self.every {
            TimelineEvery::Time(_) => u64::MAX,
            TimelineEvery::Requests(n) => self.base.requests.saturating_add(n),
        };
        self.last_arrival_ns = 0;
        self.power_losses = 0;
        self.latency.take(0);
        self.rows.clear();
        self.marks.clear();
    }

    /// Before a request arriving at `arrival` (and before any power loss that strikes
    /// before it): closes the time intervals that ended before it.
    #[inline]
    pub fn before_request(&mut self, engine: &Engine, arrival: Nanos) {
        if arrival.0 >= self.bound_ns {
            self.time_boundary(engine, arrival.0);
        }
    }

    fn open_at(&mut self, start: u64, span: u64) {
        self.open = true;
        self.start_ns = start;
        self.bound_ns = start.saturating_add(span);
    }

    #[cold]
    fn time_boundary(&mut self, engine: &Engine, t: u64) {
        let TimelineEvery::Time(Nanos(span)) = self.every else {
            // The first request of a request-count timeline.
            self.start_ns = t;
            self.bound_ns = u64::MAX;
            return;
        };
        if !self.open {
            self.open_at(t - t % span, span);
            return;
        }
        let bound = self.bound_ns;
        self.close(engine, bound);
        let next = t - t % span;
        if next > bound {
            // Idle: one empty row spans every empty interval.
            self.start_ns = bound;
            self.close(engine, next);
        }
        self.open_at(next, span);
    }

    /// After a request arriving at `arrival` was served.
    /// Before the measured phase it records into the histogram that
    /// [`Recorder::start`] clears, which costs less than a test per request.
    #[inline]
    pub fn after_request(&mut self, engine: &Engine, arrival: Nanos) {
        self.latency.record(engine.last_response().0);
        self.last_arrival_ns = arrival.0;
        if engine.host().requests >= self.close_at {
            self.close(engine, arrival.0);
        }
    }

    /// A power loss struck before the next request; `sim_time` is the arrival of the
    /// last request before it.
    pub fn power_loss(&mut self, engine: &Engine, sim_time: Nanos, recovered: bool) {
        if !self.active {
            return;
        }
        self.power_losses += 1;
        self.marks.push(Mark {
            kind: if recovered {
                "power_loss"
            } else {
                "power_loss_unrecovered"
            },
            after_request: engine.host().requests,
            time_ns: sim_time.0,
            interval: self.rows.len() as u64,
        });
    }

    /// Closes the current interval at `end_ns` into a row.
    fn close(&mut self, engine: &Engine, end_ns: u64) {
        let now = Totals::of(engine);
        let b = &self.base;
        let total = FlashStats::total;
        let programs = total(&now.flash.programs) - total(&b.flash.programs);
        let pages_written = now.pages_written - b.pages_written;
        let host_pages = now.pages_read + now.pages_written - b.pages_read - b.pages_written;
        let requests = now.requests - b.requests;
        let (p50, p99, max) = self.latency.take(requests);
        let free_blocks = engine.flash().erased_blocks() as u64;
        self.rows.push(Interval {
            index: self.rows.len() as u64,
            start_ns: self.start_ns,
            end_ns,
            requests,
            read_requests: now.read_requests - b.read_requests,
            write_requests: now.write_requests - b.write_requests,
            bytes_read: now.bytes_read - b.bytes_read,
            bytes_written: now.bytes_written - b.bytes_written,
            host_pages_written: pages_written,
            flash_page_reads: total(&now.flash.page_reads) - total(&b.flash.page_reads),
            flash_spare_reads: total(&now.flash.spare_reads) - total(&b.flash.spare_reads),
            flash_programs: programs,
            flash_erases: total(&now.flash.erases) - total(&b.flash.erases),
            waf: ratio(programs, pages_written),
            waf_cumulative: ratio(total(&now.flash.programs), now.pages_written),
            gc_collections: now.gc - b.gc,
            merges_switch: now.switch - b.switch,
            merges_partial: now.partial - b.partial,
            merges_full: now.full - b.full,
            merges_other: now.other - b.other,
            free_blocks,
            buffer_hit_ratio: ratio(now.buffer_hits - b.buffer_hits, host_pages),
            map_cache_hit_ratio: ratio(now.map_hits - b.map_hits, now.map_lookups - b.map_lookups),
            latency_p50_ns: p50,
            latency_p99_ns: p99,
            latency_max_ns: max,
            power_losses: self.power_losses,
        });
        if let TimelineEvery::Requests(n) = self.every {
            self.close_at = now.requests.saturating_add(n);
        }
        self.base = now;
        self.power_losses = 0;
        self.start_ns = end_ns;
    }

    /// Closes the open interval if anything happened in it: the workload ended (called
    /// before the end-of-run drain, and by [`Recorder::finish`]).
    pub fn close_workload(&mut self, engine: &Engine) {
        if !self.active {
            return;
        }
        let pending = engine.host().requests != self.base.requests
            || self.power_losses > 0
            || Totals::of(engine).flash != self.base.flash;
        if pending {
            let end = match self.every {
                TimelineEvery::Time(_) if self.open => self.bound_ns,
                _ => self.last_arrival_ns.max(self.start_ns),
            };
            self.close(engine, end);
            self.open = false;
        }
    }

    /// The write buffer's dirty pages were drained after the last request (the
    /// end-of-run drain, `drain = true`), taking `drain_ns` of simulated time; the
    /// workload's last interval was closed before it ([`Recorder::close_workload`]).
    /// The drain gets an interval of its own, with no requests, marked `drain`, so the timeline's sums still equal the
    /// report's totals and the drain's programs are not mistaken for the workload's.
    pub fn drained(&mut self, engine: &Engine, drain_ns: u64) {
        if !self.active || Totals::of(engine).flash == self.base.flash {
            return;
        }
        let start = self
            .rows
            .last()
            .map_or(self.last_arrival_ns, |r| r.end_ns)
            .max(self.last_arrival_ns);
        self.start_ns = start;
        self.marks.push(Mark {
            kind: "drain",
            after_request: engine.host().requests,
            time_ns: start,
            interval: self.rows.len() as u64,
        });
        self.close(engine, start.saturating_add(drain_ns));
    }

    /// Ends the timeline (before the engine's outcome is taken, so whatever the run did
    /// after its last request lands in the last interval) and takes the end-of-run
    /// distributions.
    pub fn finish(mut self, engine: &Engine) -> (Timeline, Distributions) {
        self.close_workload(engine);
        let unit = match self.every {
            TimelineEvery::Requests(_) => "requests",
            TimelineEvery::Time(_) => "time",
        };
        let timeline = Timeline {
            every: self.every.to_string(),
            unit,
            intervals: self.rows,
            marks: self.marks,
        };
        (timeline, distributions(engine))
    }
}

/// The response-time CDF and the block histograms at the end of the run.
pub fn distributions(engine: &Engine) -> Distributions {
    let h = &engine.host().response();
    let response_cdf = if h.is_empty() {
        Vec::new()
    } else {
        CDF_QUANTILES
            .iter()
            .map(|&q| Quantile {
                q,
                ns: if q >= 1.0 {
                    h.max()
                } else {
                    h.value_at_quantile(q)
                },
            })
            .collect()
    };
    let flash = engine.flash();
    let ec = flash.erase_counts();
    let (lo, hi) = (
        ec.iter().copied().min().unwrap_or(0),
        ec.iter().copied().max().unwrap_or(0),
    );
    let geo = engine.geometry();
    let valid = (0..geo.blocks).map(|b| flash.valid_count(Pbn(b)) as u64);
    Distributions {
        response_cdf,
        erase_count: bins(ec.iter().map(|&c| c as u64), lo as u64, hi as u64),
        valid_pages: bins(valid, 0, geo.pages_per_block as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_are_exact_below_64_and_within_4_percent_above() {
        let mut last = 0;
        for v in (0..5000u64).chain([1 << 20, 123_456_789, u64::MAX / 3, u64::MAX]) {
            let i = Latencies::index(v);
            assert!(i < BUCKETS, "{v}");
            assert!(i >= last, "monotonic at {v}");
            last = i;
            let up = Latencies::upper(i);
            assert!(up >= v, "{v}: bucket {i} ends at {up}");
            assert!((up - v) as f64 <= v as f64 / 32.0 + 0.5, "{v} -> {up}");
            if v < 64 {
                assert_eq!(up, v);
            }
        }
    }

    /// The value at quantile `q` of a sorted list, as the histogram defines it.
    fn exact(sorted: &[u64], q: f64) -> u64 {
        let t = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[t - 1]
    }

    #[test]
    fn latency_quantiles_match_a_sorted_list_within_the_bucket_width() {
        let mut h = Latencies::new();
        assert_eq!(h.take(0), (None, None, None));
        for values in [
            (1..=1000u64).map(|i| i * i * 37).collect::<Vec<_>>(),
            vec![5; 10],
            vec![7],
            (0..300u64).map(|i| (i % 17) * 1_000_000 + i).collect(),
            [vec![10; 990], vec![1_000_000; 10]].concat(),
            [vec![10; 989], vec![1_000_000; 11]].concat(),
            // The median and the 99th percentile in one bucket.
            [vec![3; 5], vec![1 << 30; 995]].concat(),
        ] {
            for &v in values.iter().rev() {
                h.record(v);
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let (p50, p99, max) = h.take(values.len() as u64);
            for (got, want) in [(p50, exact(&sorted, 0.5)), (p99, exact(&sorted, 0.99))] {
                let got = got.unwrap();
                assert!(
                    got >= want && got - want <= want / 32,
                    "{got} vs {want}: {values:?}"
                );
            }
            assert_eq!(max, sorted.last().copied());
            // Taking empties the histogram: the next interval starts from nothing.
            assert!(h.counts.iter().all(|&c| c == 0), "{values:?}");
            assert_eq!(h.max, 0);
        }
        assert_eq!(h.take(0), (None, None, None));
        h.record(0);
        assert_eq!(h.take(1), (Some(0), Some(0), Some(0)));
        // Fewer values than the engine counted (a run that failed inside a request):
        // an unreached quantile is the maximum.
        h.record(100);
        h.record(200);
        let (_, p99, max) = h.take(5);
        assert_eq!((p99, max), (Some(200), Some(200)));
        // Values recorded before the measured phase are dropped by a take of none.
        h.record(5_000);
        assert_eq!(h.take(0), (None, None, None));
        assert!(h.counts.iter().all(|&c| c == 0));
    }

    #[test]
    fn parses_counts_and_times_and_shows_them_back() {
        for (text, every, shown) in [
            ("10k", TimelineEvery::Requests(10_000), "10k"),
            ("2500", TimelineEvery::Requests(2500), "2500"),
            ("1M", TimelineEvery::Requests(1_000_000), "1M"),
            ("1.5k", TimelineEvery::Requests(1500), "1500"),
            ("1s", TimelineEvery::Time(Nanos(1_000_000_000)), "1s"),
            ("500ms", TimelineEvery::Time(Nanos(500_000_000)), "500ms"),
            ("250us", TimelineEvery::Time(Nanos(250_000)), "250us"),
            ("0.5s", TimelineEvery::Time(Nanos(500_000_000)), "500ms"),
            ("2min", TimelineEvery::Time(Nanos(120_000_000_000)), "120s"),
            ("100ns", TimelineEvery::Time(Nanos(100)), "100ns"),
        ] {
            let e: TimelineEvery = text.parse().unwrap();
            assert_eq!(e, every, "{text}");
            assert_eq!(e.to_string(), shown);
            assert_eq!(shown.parse::<TimelineEvery>().unwrap(), e);
        }
    }

    #[test]
    fn refuses_zero_negative_fractions_and_words() {
        for text in ["0", "0s", "-5", "abc", "1.5", "", "10x", "k", "0.1ns"] {
            let e = text.parse::<TimelineEvery>().unwrap_err();
            assert!(e.contains(&format!("`{text}`")), "{text}: {e}");
        }
        assert!(serde_json::from_str::<TimelineEvery>("0").is_err());
        assert_eq!(
            serde_json::from_str::<TimelineEvery>("300").unwrap(),
            TimelineEvery::Requests(300)
        );
    }
}
