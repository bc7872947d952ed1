//! Shared machinery for the conformance suite (and, later, swarm testing): device
//! profiles from tiny to realistic, and a seeded request mix of reads, writes, trims,
//! flushes and partial pages that drives any FTL under any buffer until GC and merges
//! run many times, with the oracle and deep checks on.

use crate::config::{Config, VerifyLevel};
use crate::error::RunError;
use crate::sim::{prepare, smallest_op};
use ftlab_core::engine::{Engine, SimError};
pub use ftlab_workload::mix::{Mix, MixConfig};

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

/// The configuration of one conformance run: the profile's over-provisioning, or the
/// least the FTL accepts on this device when that is more (the demand-paged FTLs need
/// translation blocks and a GC reserve that tiny devices do not leave at 50%). The
/// registry answers, not a list of names.
pub fn config(ftl: &str, buffer: &str, p: &Profile, seed: u64) -> Config {
    let mut c = Config {
        ftl: ftl.into(),
        buffer: buffer.into(),
        nand: p.nand.into(),
        capacity: p.capacity.parse().expect("profile capacities are sizes"),
        op: p.op,
        seed,
        verify: VerifyLevel::Deep,
        deep_every: 500,
        ..Config::default()
    };
    c.nand_params.page_size = p.page_size;
    c.nand_params.pages_per_block = p.pages_per_block;
    if let Ok(op) = smallest_op(&c) {
        c.op = op;
    }
    c
}

/// [`config`] driven by `requests` requests of the mix (up to the profile's largest
/// request), with power losses at `points` (`--power-loss-at` forms): the power-loss
/// and torn-operation tests' run.
pub fn with_power_losses(
    ftl: &str,
    buffer: &str,
    p: &Profile,
    seed: u64,
    requests: u64,
    points: &[&str],
) -> Config {
    let mut c = config(ftl, buffer, p, seed);
    c.mix = Some(MixConfig {
        requests,
        max_pages: p.max_pages,
        ..MixConfig::default()
    });
    c.power_loss = points.iter().map(|s| s.to_string()).collect();
    c
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
