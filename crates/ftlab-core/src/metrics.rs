//! Host-side measurements: request counts, pages, bytes and response times.
//!
//! Response times go into an HDR histogram (3 significant digits, allocation-free
//! recording); the mean is exact from the running sum. Percentiles are computed once,
//! in the report.

use crate::units::Nanos;
use hdrhistogram::Histogram;

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
    /// Bytes read (as requested, not rounded to pages).
    pub bytes_read: u64,
    /// Bytes written (as requested).
    pub bytes_written: u64,
    /// Sum of response times.
    pub response_sum_ns: u128,
    /// Response-time distribution.
    pub response: Histogram<u64>,
    /// Arrival of the first request measured.
    pub first_arrival: Option<Nanos>,
    /// Latest completion seen.
    pub last_completion: Nanos,
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
            bytes_read: 0,
            bytes_written: 0,
            response_sum_ns: 0,
            response: Histogram::new_with_bounds(1, RESPONSE_NS_MAX, 3)
                .expect("bounds and 3 significant digits are valid"),
            first_arrival: None,
            last_completion: Nanos::ZERO,
        }
    }
}

impl HostStats {
    /// Records a request's response.
    #[inline]
    pub fn record(&mut self, arrival: Nanos, completion: Nanos) {
        let rt = completion.saturating_sub(arrival).0;
        self.response_sum_ns += rt as u128;
        self.response.saturating_record(rt);
        if self.first_arrival.is_none() {
            self.first_arrival = Some(arrival);
        }
        self.last_completion = self.last_completion.max(completion);
    }

    /// Simulated time from the first arrival to the last completion.
    pub fn sim_time(&self) -> Nanos {
        self.last_completion
            .saturating_sub(self.first_arrival.unwrap_or(Nanos::ZERO))
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
        h.record(Nanos(100), Nanos(300));
        h.record(Nanos(200), Nanos(1200));
        assert_eq!(h.mean_response_ns(), 600.0);
        assert_eq!(h.sim_time(), Nanos(1100));
        assert_eq!(h.response.max(), 1000);
        assert_eq!(h.response.value_at_quantile(0.5), 200);
    }
}
