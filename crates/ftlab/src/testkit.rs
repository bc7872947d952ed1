//! Shared machinery for the conformance suite (and, later, swarm testing): device
//! profiles from tiny to realistic, and a seeded request mix of reads, writes, trims,
//! flushes and partial pages that drives any FTL under any buffer until GC and merges
//! run many times, with the oracle and deep checks on.

use crate::config::Config;
use crate::run::{prepare, RunError};
use ftlab_core::engine::{Engine, SimError};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use serde::{Deserialize, Serialize};

/// A device shape the conformance suite runs every scheme on.
#[derive(Clone, Copy, Debug)]
pub struct Profile {
    /// Name in test output.
    pub name: &'static str,
    /// NAND preset.
    pub nand: &'static str,
    /// Page size override (`None`: the preset's).
    pub page_size: Option<u32>,
    /// Pages per block override.
    pub pages_per_block: Option<u32>,
    /// Logical capacity.
    pub capacity: &'static str,
    /// Over-provisioning percent.
    pub op: f64,
    /// Requests to run.
    pub requests: u64,
    /// Largest request in pages.
    pub max_pages: u32,
}

/// Tiny (8 logical blocks of 4 pages), small (16 blocks of 64) and realistic (128
/// blocks of 128 4 KiB pages) devices.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "tiny",
        nand: "slc-k9f1g16u0m",
        page_size: Some(2048),
        pages_per_block: Some(4),
        capacity: "64KiB",
        op: 50.0,
        requests: 20_000,
        max_pages: 6,
    },
    Profile {
        name: "small",
        nand: "slc-k9f1g16u0m",
        page_size: None,
        pages_per_block: None,
        capacity: "2MiB",
        op: 25.0,
        requests: 20_000,
        max_pages: 80,
    },
    Profile {
        name: "realistic",
        nand: "mlc-k9gag08u0m",
        page_size: None,
        pages_per_block: None,
        capacity: "64MiB",
        op: 7.0,
        requests: 30_000,
        max_pages: 16,
    },
];

impl Profile {
    /// The over-provisioning `ftl` runs with on this profile: the profile's, except for
    /// the demand-paged FTLs on the two small profiles. Their GC reserve is an open data
    /// block and `gc_threshold` 3 blocks (tpm.txt Table I) beyond the logical and
    /// translation pages, four blocks that tiny's 8 and small's 16 logical blocks do not
    /// leave at 50% and 25%.
    pub fn op_for(&self, ftl: &str) -> f64 {
        match (ftl, self.name) {
            ("dftl" | "tpm", "tiny") => 75.0,
            ("dftl" | "tpm", "small") => 37.5,
            _ => self.op,
        }
    }
}

/// The configuration of one conformance run.
pub fn config(ftl: &str, buffer: &str, p: &Profile, seed: u64) -> Config {
    let mut c = Config {
        ftl: ftl.into(),
        buffer: buffer.into(),
        nand: p.nand.into(),
        capacity: p.capacity.into(),
        op: p.op_for(ftl),
        seed,
        verify: "deep".into(),
        deep_every: 500,
        ..Config::default()
    };
    c.nand_params.page_size = p.page_size;
    c.nand_params.pages_per_block = p.pages_per_block;
    c
}

/// Parameters of the request mix (the `[mix]` config table). Percentages are of all
/// requests; what is left after writes, reads and trims is flush-cache requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// A seeded stream of mixed requests. Uses its own SplitMix64 generator, so the mix
/// does not depend on any crate's stream stability.
pub struct Mix {
    cfg: MixConfig,
    state: u64,
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
            state: seed ^ 0x9E37_79B9_7F4A_7C15,
            now: 0,
            seq_next: 0,
            pages,
            page_size,
            emitted: 0,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
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

/// Builds the engine of a conformance run.
pub fn engine(cfg: &Config) -> Result<Engine, RunError> {
    Ok(prepare(cfg)?.engine)
}

/// Drives `engine` with `requests` requests of the mix, then reads everything back.
pub fn exercise(
    engine: &mut Engine,
    seed: u64,
    requests: u64,
    max_pages: u32,
) -> Result<(), SimError> {
    let g = engine.geometry().clone();
    let cfg = MixConfig {
        requests,
        max_pages,
        ..MixConfig::default()
    };
    for r in Mix::new(&cfg, seed, g.logical_pages as u64, g.page_size as u64) {
        engine.submit(&r)?;
    }
    engine.check_deep()?;
    engine.verify_readback()?;
    Ok(())
}
