//! A minimal synthetic workload: uniform random or sequential requests of a fixed size
//! with a read ratio, a count and a seed. (The DiskSim-style generator with sequential
//! / local / random mixes, size and inter-arrival distributions, hot/cold and Zipf
//! builds on this; see the workloads issue.)
//!
//! Choices: random offsets are aligned to the request size rounded to `align` bytes
//! (the page size), so a 4 KiB request touches exactly one 4 KiB page; the sequential
//! pattern wraps at the end of the address space; inter-arrival times are exponential
//! with the given mean (0 means back to back: every request arrives at time 0 and
//! queues, a closed-loop saturation run).

use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Where the next request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Uniformly random aligned offsets.
    Random,
    /// Each request follows the previous one.
    Sequential,
}

/// Parameters of the synthetic workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticConfig {
    /// Access pattern.
    pub pattern: Pattern,
    /// Fraction of reads, 0 to 1.
    pub read_ratio: f64,
    /// Bytes per request.
    pub request_bytes: u64,
    /// Number of requests.
    pub count: u64,
    /// Mean inter-arrival time in µs (exponential); 0 for back-to-back.
    pub interarrival_us: f64,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            pattern: Pattern::Random,
            read_ratio: 0.3,
            request_bytes: 4096,
            count: 100_000,
            interarrival_us: 1000.0,
        }
    }
}

impl SyntheticConfig {
    /// Checks the parameters; the error names the key.
    pub fn validate(&self, space_bytes: u64) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.read_ratio) {
            return Err(format!(
                "synthetic.read_ratio = {}: must be from 0 to 1",
                self.read_ratio
            ));
        }
        if self.request_bytes == 0 || self.request_bytes > space_bytes {
            return Err(format!(
                "synthetic.request_bytes = {}: must be 1 to the capacity ({space_bytes})",
                self.request_bytes
            ));
        }
        if !self.interarrival_us.is_finite() || self.interarrival_us < 0.0 {
            return Err(format!(
                "synthetic.interarrival_us = {}: must be 0 or more",
                self.interarrival_us
            ));
        }
        Ok(())
    }
}

/// The generator: an endless-until-`count` iterator of requests.
pub struct Synthetic {
    cfg: SyntheticConfig,
    rng: ChaCha8Rng,
    slots: u64,
    slot_bytes: u64,
    next_seq: u64,
    now: f64,
    emitted: u64,
}

impl Synthetic {
    /// A generator over `space_bytes` of address space with `align`-byte alignment.
    /// Call [`SyntheticConfig::validate`] first.
    pub fn new(cfg: &SyntheticConfig, space_bytes: u64, align: u64, seed: u64) -> Self {
        let slot_bytes = cfg.request_bytes.div_ceil(align) * align;
        Synthetic {
            cfg: cfg.clone(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            slots: (space_bytes / slot_bytes).max(1),
            slot_bytes,
            next_seq: 0,
            now: 0.0,
            emitted: 0,
        }
    }
}

impl Iterator for Synthetic {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.emitted == self.cfg.count {
            return None;
        }
        self.emitted += 1;
        let slot = match self.cfg.pattern {
            Pattern::Random => self.rng.gen_range(0..self.slots),
            Pattern::Sequential => {
                let s = self.next_seq;
                self.next_seq = (s + 1) % self.slots;
                s
            }
        };
        let op = if self.rng.gen::<f64>() < self.cfg.read_ratio {
            Op::Read
        } else {
            Op::Write
        };
        if self.cfg.interarrival_us > 0.0 {
            let u: f64 = self.rng.gen::<f64>();
            self.now += -(1.0 - u).ln() * self.cfg.interarrival_us * 1000.0;
        }
        Some(Request {
            arrival: Nanos(self.now as u64),
            op,
            offset: slot * self.slot_bytes,
            len: self.cfg.request_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let cfg = SyntheticConfig {
            count: 1000,
            ..Default::default()
        };
        let a: Vec<_> = Synthetic::new(&cfg, 1 << 20, 4096, 7).collect();
        let b: Vec<_> = Synthetic::new(&cfg, 1 << 20, 4096, 7).collect();
        assert_eq!(a, b);
        assert_eq!(a.len(), 1000);
        assert!(a
            .iter()
            .all(|r| r.offset + r.len <= 1 << 20 && r.offset % 4096 == 0));
        let reads = a.iter().filter(|r| r.op == Op::Read).count();
        assert!((200..400).contains(&reads), "{reads}");
        assert!(a.windows(2).all(|w| w[0].arrival <= w[1].arrival));
    }

    #[test]
    fn sequential_wraps() {
        let cfg = SyntheticConfig {
            pattern: Pattern::Sequential,
            count: 5,
            request_bytes: 8192,
            ..Default::default()
        };
        let offs: Vec<u64> = Synthetic::new(&cfg, 16384, 4096, 1)
            .map(|r| r.offset)
            .collect();
        assert_eq!(offs, vec![0, 8192, 0, 8192, 0]);
    }
}
