//! Host-side measurements: request counts, pages, bytes and response times.
//!
//! Response times go into an HDR histogram (3 significant digits, allocation-free
//! recording); the mean is exact from the running sum. Percentiles are computed once,
//! in the report.

use crate::request::Op;
use crate::units::Nanos;
pub use hdrhistogram::Histogram;

/// Largest response time the histogram resolves (about 2.8 hours); larger values are
/// recorded as this.
pub const RESPONSE_NS_MAX: u64 = 10_000_000_000_000;

// Named fields rather than a map, like every settings or figures struct here: the
// report and the summary read them by name.
/// What the host saw.
#[derive(Clone, Debug)]
pub struct HostStats {
    /// All requests (reads, writes, trims, flushes).
    pub requests: u64,
    /// Read requests.
    pub read_requests: u64,
    /// Write requests.
    pub write_requests: u64,
    /// Trim requests.
    pub trim_requests: u64,
    /// Flush-cache requests.
    pub flush_requests: u64,
    /// Pages read by the host.
    pub pages_read: u64,
    /// Pages written by the host.
    pub pages_written: u64,
    /// Pages read by the host that were never written (or trimmed since): the FTL
    /// found no mapping and the device answered without reading a data page.
    pub unmapped_reads: u64,
    /// Bytes read (as requested, not rounded to pages).
    pub bytes_read: u64,
    /// Bytes written (as requested).
    pub bytes_written: u64,
    /// Sum of response times.
    pub response_sum_ns: u128,
    /// Response-time distribution of the read requests.
    pub read_response: Histogram<u64>,
    /// Response-time distribution of the write requests.
    pub write_response: Histogram<u64>,
    /// Response-time distribution of the other requests (trims, flushes). Every
    /// request is recorded once, in the histogram of its kind; [`HostStats::response`]
    /// adds them up (exactly: the histograms share their buckets).
    pub other_response: Histogram<u64>,
    /// Arrival of the first request measured.
    pub first_arrival: Option<Nanos>,
    /// Latest completion seen.
    pub last_completion: Nanos,
    /// Queueing through the run: how long requests waited before their first flash
    /// operation started, in order of arrival.
    pub load: Load,
}

/// Buckets of [`Load`]: a fixed number, so recording never allocates.
pub const LOAD_BUCKETS: usize = 64;

/// How queueing evolves through a run, in fixed memory: requests in arrival order are
/// summed into [`LOAD_BUCKETS`] consecutive buckets of `per_bucket` requests each; when
/// every bucket is full, neighbours merge pairwise and `per_bucket` doubles. The first
/// and last quarters of the run are then read off the buckets.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// Requests per bucket (a power of two).
    per_bucket: u64,
    /// Buckets in use (the last one may be partly filled).
    used: usize,
    /// Per bucket: requests, sum of waits, sum of response times (ns).
    buckets: [(u64, u128, u128); LOAD_BUCKETS],
    /// Sum of every wait, ns.
    pub wait_sum_ns: u128,
}

impl Default for Load {
    fn default() -> Self {
        Load {
            per_bucket: 1,
            used: 0,
            buckets: [(0, 0, 0); LOAD_BUCKETS],
            wait_sum_ns: 0,
        }
    }
}

impl Load {
    /// Records one request: its wait before service and its response time.
    #[inline]
    pub fn record(&mut self, wait: u64, response: u64) {
        self.wait_sum_ns += wait as u128;
        if self.used == 0 || self.buckets[self.used - 1].0 == self.per_bucket {
            if self.used == LOAD_BUCKETS {
                for i in 0..LOAD_BUCKETS / 2 {
                    let (a, b) = (self.buckets[2 * i], self.buckets[2 * i + 1]);
                    self.buckets[i] = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
                }
                self.buckets[LOAD_BUCKETS / 2..].fill((0, 0, 0));
                self.used = LOAD_BUCKETS / 2;
                self.per_bucket *= 2;
            }
            if self.used == 0 || self.buckets[self.used - 1].0 == self.per_bucket {
                self.used += 1;
            }
        }
        let b = &mut self.buckets[self.used - 1];
        b.0 += 1;
        b.1 += wait as u128;
        b.2 += response as u128;
    }

    /// Mean wait (ns) of the first and of the last quarter of the requests (at least
    /// one bucket each; the same bucket when fewer than four are in use), or `None`
    /// with no requests.
    pub fn quarters(&self) -> Option<(f64, f64)> {
        if self.used == 0 {
            return None;
        }
        let q = (self.used / 4).max(1);
        let mean = |bs: &[(u64, u128, u128)]| {
            let n: u64 = bs.iter().map(|b| b.0).sum();
            let w: u128 = bs.iter().map(|b| b.1).sum();
            w as f64 / n.max(1) as f64
        };
        Some((
            mean(&self.buckets[..q]),
            mean(&self.buckets[self.used - q..self.used]),
        ))
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, RESPONSE_NS_MAX, 3)
        .expect("bounds and 3 significant digits are valid")
}

impl Default for HostStats {
    fn default() -> Self {
        HostStats {
            requests: 0,
            read_requests: 0,
            write_requests: 0,
            trim_requests: 0,
            flush_requests: 0,
            pages_read: 0,
            pages_written: 0,
            unmapped_reads: 0,
            bytes_read: 0,
            bytes_written: 0,
            response_sum_ns: 0,
            read_response: histogram(),
            write_response: histogram(),
            other_response: histogram(),
            first_arrival: None,
            last_completion: Nanos::ZERO,
            load: Load::default(),
        }
    }
}

impl HostStats {
    /// Records a request's response; `wait` is how long it waited for the device
    /// before its first flash operation started (0 if it needed none).
    #[inline]
    pub fn record(&mut self, op: Op, arrival: Nanos, completion: Nanos, wait: Nanos) {
        let rt = completion.saturating_sub(arrival).0;
        self.load.record(wait.0.min(rt), rt);
        self.response_sum_ns += rt as u128;
        match op {
            Op::Read => self.read_response.saturating_record(rt),
            Op::Write => self.write_response.saturating_record(rt),
            Op::Trim | Op::Flush => self.other_response.saturating_record(rt),
        }
        if self.first_arrival.is_none() {
            self.first_arrival = Some(arrival);
        }
        self.last_completion = self.last_completion.max(completion);
    }

    /// Response-time distribution of every request: the histograms of each kind added
    /// up (allocates; for the report and snapshots, not per request).
    pub fn response(&self) -> Histogram<u64> {
        let mut h = self.read_response.clone();
        h.add(&self.write_response)
            .expect("histograms of the same bounds add");
        h.add(&self.other_response)
            .expect("histograms of the same bounds add");
        h
    }

    /// Simulated time from the first arrival to the last completion.
    pub fn sim_time(&self) -> Nanos {
        self.last_completion
            .saturating_sub(self.first_arrival.unwrap_or(Nanos::ZERO))
    }

    /// Mean wait before service in ns (0 with no requests).
    pub fn mean_wait_ns(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.load.wait_sum_ns as f64 / self.requests as f64
        }
    }

    /// Mean response time in ns (0 with no requests).
    pub fn mean_response_ns(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.response_sum_ns as f64 / self.requests as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records() {
        let mut h = HostStats {
            requests: 2,
            ..Default::default()
        };
        h.record(Op::Read, Nanos(100), Nanos(300), Nanos(0));
        h.record(Op::Write, Nanos(200), Nanos(1200), Nanos(100));
        assert_eq!(h.mean_response_ns(), 600.0);
        assert_eq!(h.sim_time(), Nanos(1100));
        assert_eq!(h.response().max(), 1000);
        assert_eq!(h.response().value_at_quantile(0.5), 200);
        assert_eq!(h.mean_wait_ns(), 50.0);
        assert_eq!(h.read_response.max(), 200);
        assert_eq!(h.write_response.max(), 1000);
        assert_eq!(h.write_response.len(), 1);
    }

    #[test]
    fn load_quarters_track_a_growing_queue_in_fixed_memory() {
        let mut l = Load::default();
        assert_eq!(l.quarters(), None);
        // 10,000 requests whose wait grows linearly: 0, 1, 2, ... ns.
        for i in 0..10_000u64 {
            l.record(i, i + 10);
        }
        let (first, last) = l.quarters().unwrap();
        assert!(l.used <= LOAD_BUCKETS && l.per_bucket.is_power_of_two());
        assert!(first < 2_000.0 && last > 8_000.0, "{first} {last}");
        // A flat queue: both quarters alike.
        let mut l = Load::default();
        for _ in 0..1000 {
            l.record(5, 10);
        }
        assert_eq!(l.quarters(), Some((5.0, 5.0)));
    }
}
