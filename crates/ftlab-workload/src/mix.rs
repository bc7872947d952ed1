//! The swarm-testing request mix: a seeded stream of reads, writes, trims, flushes and
//! partial pages over the whole logical space, with a hot region and sequential runs,
//! that drives any FTL under any buffer until GC and merges run many times. The
//! conformance suite and the swarm use it; `mix` in a run's configuration selects it.

use ftlab_core::request::{Op, Request};
use ftlab_core::rng::SplitMix64;
use ftlab_core::Nanos;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of the request mix (the `[mix]` config table). Percentages are of all
/// requests; what is left after writes, reads and trims is flush-cache requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MixConfig {
    /// Requests to generate.
    pub requests: u64,
    /// Largest request in pages.
    pub max_pages: u32,
    /// Percent writes.
    pub write_pct: u32,
    /// Percent reads.
    pub read_pct: u32,
    /// Percent trims.
    pub trim_pct: u32,
    /// Percent of requests aimed at the hot region.
    pub hot_pct: u32,
    /// Size of the hot region in percent of the space.
    pub hot_space_pct: u32,
    /// Percent of requests continuing the previous one sequentially.
    pub seq_pct: u32,
    /// Percent of requests not aligned to pages (partial first and last pages).
    pub partial_pct: u32,
    /// Largest gap between arrivals in µs (uniform from 0).
    pub gap_max_us: u64,
}

impl Default for MixConfig {
    fn default() -> Self {
        MixConfig {
            requests: 20_000,
            max_pages: 16,
            write_pct: 50,
            read_pct: 35,
            trim_pct: 11,
            hot_pct: 40,
            hot_space_pct: 10,
            seq_pct: 20,
            partial_pct: 12,
            gap_max_us: 2000,
        }
    }
}

impl MixConfig {
    /// Checks the percentages; the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.write_pct + self.read_pct + self.trim_pct > 100 {
            return Err("mix.write_pct + read_pct + trim_pct must not exceed 100".into());
        }
        for (k, v) in [
            ("hot_pct", self.hot_pct),
            ("hot_space_pct", self.hot_space_pct),
            ("seq_pct", self.seq_pct),
            ("partial_pct", self.partial_pct),
        ] {
            if v > 100 {
                return Err(format!("mix.{k} = {v}: must be 0 to 100"));
            }
        }
        if self.hot_pct + self.seq_pct > 100 {
            return Err("mix.hot_pct + seq_pct must not exceed 100".into());
        }
        if self.max_pages == 0 {
            return Err("mix.max_pages must be at least 1".into());
        }
        Ok(())
    }
}

/// A seeded stream of mixed requests. Draws from SplitMix64, so the mix does not
/// depend on any crate's stream stability.
pub struct Mix {
    cfg: MixConfig,
    rng: SplitMix64,
    now: u64,
    seq_next: u64,
    pages: u64,
    page_size: u64,
    emitted: u64,
}

impl Mix {
    /// A mix over `pages` logical pages of `page_size` bytes.
    pub fn new(cfg: &MixConfig, seed: u64, pages: u64, page_size: u64) -> Self {
        Mix {
            cfg: cfg.clone(),
            rng: SplitMix64::new(seed ^ 0x9E37_79B9_7F4A_7C15),
            now: 0,
            seq_next: 0,
            pages,
            page_size,
            emitted: 0,
        }
    }

    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    /// The next request.
    pub fn request(&mut self) -> Request {
        let c = &self.cfg;
        let (w, r, t) = (c.write_pct as u64, c.read_pct as u64, c.trim_pct as u64);
        let (hot, hot_space, seq) = (c.hot_pct as u64, c.hot_space_pct as u64, c.seq_pct as u64);
        let (partial, max_pages, gap) = (c.partial_pct as u64, c.max_pages as u64, c.gap_max_us);
        let pages = self.pages;
        self.now += self.below(gap * 1000 + 1);
        let roll = self.below(100);
        let op = if roll < w {
            Op::Write
        } else if roll < w + r {
            Op::Read
        } else if roll < w + r + t {
            Op::Trim
        } else {
            Op::Flush
        };
        let n = (1 + self.below(max_pages)).min(pages);
        let place = self.below(100);
        let start = if place < hot {
            self.below((pages * hot_space / 100).max(1))
        } else if place < hot + seq {
            self.seq_next
        } else {
            self.below(pages)
        };
        let start = start.min(pages - n);
        self.seq_next = (start + n) % pages;
        let ps = self.page_size;
        let mut offset = start * ps;
        let mut len = n * ps;
        if self.below(100) < partial {
            // Partial pages: shift inside the first page and cut the tail.
            let shift = self.below(ps / 512) * 512;
            offset += shift;
            let cut = self.below(ps / 512) * 512;
            len = (len - shift).saturating_sub(cut).max(512);
        }
        Request {
            arrival: Nanos(self.now),
            op,
            offset,
            len,
        }
    }
}

impl Iterator for Mix {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.emitted == self.cfg.requests {
            return None;
        }
        self.emitted += 1;
        Some(self.request())
    }
}
