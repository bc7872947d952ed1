//! Shared machinery for the conformance suite (and, later, swarm testing): device
//! profiles from tiny to realistic, and a seeded request mix of reads, writes, trims,
//! flushes and partial pages that drives any FTL under any buffer until GC and merges
//! run many times, with the oracle and deep checks on.

use crate::config::Config;
use crate::run::{prepare, RunError};
use ftlab_core::engine::{Engine, SimError};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;

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

/// The configuration of one conformance run.
pub fn config(ftl: &str, buffer: &str, p: &Profile, seed: u64) -> Config {
    let mut c = Config {
        ftl: ftl.into(),
        buffer: buffer.into(),
        nand: p.nand.into(),
        capacity: p.capacity.into(),
        op: p.op,
        seed,
        verify: "deep".into(),
        deep_every: 500,
        ..Config::default()
    };
    c.nand_params.page_size = p.page_size;
    c.nand_params.pages_per_block = p.pages_per_block;
    c
}

/// A small deterministic generator (SplitMix64), so the mix does not depend on any
/// crate's stream stability.
pub struct Mix {
    state: u64,
    now: u64,
    seq_next: u64,
}

impl Mix {
    /// A mix seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Mix {
            state: seed ^ 0x9E37_79B9_7F4A_7C15,
            now: 0,
            seq_next: 0,
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

    /// The next request for a device of `pages` logical pages of `page_size` bytes.
    pub fn request(&mut self, pages: u64, page_size: u64, max_pages: u32) -> Request {
        self.now += self.below(2_000_000);
        let roll = self.below(100);
        let op = match roll {
            0..=49 => Op::Write,
            50..=84 => Op::Read,
            85..=95 => Op::Trim,
            _ => Op::Flush,
        };
        let n = 1 + self.below(max_pages as u64);
        let n = n.min(pages);
        let start = match self.below(10) {
            // Hot tenth of the space.
            0..=3 => self.below((pages / 10).max(1)),
            // Sequential continuation.
            4..=5 => self.seq_next,
            _ => self.below(pages),
        };
        let start = start.min(pages - n);
        self.seq_next = (start + n) % pages;
        let mut offset = start * page_size;
        let mut len = n * page_size;
        if self.below(8) == 0 {
            // Partial pages: shift inside the first page and trim the tail.
            offset += self.below(page_size / 512) * 512;
            len = (len - (offset - start * page_size)).max(512);
        }
        Request {
            arrival: Nanos(self.now),
            op,
            offset,
            len,
        }
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
    let mut mix = Mix::new(seed);
    for _ in 0..requests {
        let r = mix.request(g.logical_pages as u64, g.page_size as u64, max_pages);
        engine.submit(&r)?;
    }
    engine.check_deep()?;
    engine.verify_readback()?;
    Ok(())
}
