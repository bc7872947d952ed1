//! A synthetic workload generator modelled on DiskSim's (Ganger, Worthington, Patt:
//! "The DiskSim Simulation Environment Version 3.0 Reference Manual", CMU-CS-03-102,
//! the synthetic generator that c-lash.txt §4.1 and cach-ftl.txt §5.2 drive their
//! simulators with): each request is sequential (it starts where the previous one
//! ended), local (it starts a normally distributed distance from there) or random, with
//! a read probability, a request size distribution, an inter-arrival distribution, an
//! address space, a count and a seed. Random requests can be skewed: hot/cold (x% of
//! accesses to y% of the space) or Zipf.
//!
//! With a `[synthetic.filesystem]` table the generator instead issues the writes of a
//! FAT32 or NTFS volume whose files are created, rewritten and deleted (files in
//! clusters, allocation-table and directory updates between them, reused clusters):
//! see [`crate::fs`] for the model, its options and where each figure comes from.
//!
//! Parameters are in the units the papers quote: sizes and distances in KiB, times in
//! ms (the older keys `request_bytes` and `interarrival_us` still work when the new
//! tables are absent). Distributions take DiskSim's parameters: normal (mean, variance),
//! exponential (base, mean), uniform (min, max), constant (value).
//!
//! Choices the sources leave open (each an option with a documented default):
//! - `local_mode = "all"` (default): `p_sequential`, `p_local` and the remainder
//!   (random) are exclusive, so `p_sequential + p_local <= 1`. c-lash.txt Table 2 pairs
//!   sequential and local rates of 80% and 80%, which cannot be exclusive, so
//!   `local_mode = "non_sequential"` reads `p_local` as the share of non-sequential
//!   requests that are local (P(local) = (1 - p_sequential) * p_local).
//! - A local request starts `d` bytes after the previous request's end, `d` drawn from
//!   `local_distance_kib` (default normal, mean 0, variance 4096 KiB^2, i.e. a 64 KiB
//!   standard deviation) and aligned down to `align_bytes`; a draw that would make it
//!   sequential is redrawn (at most 64 times), so the sequential rate is exactly the
//!   sequential probability; it wraps around the address space.
//! - Sizes are rounded up to whole 512-byte sectors (DiskSim sizes are in sectors), at
//!   least one sector; a normal draw at or below 0 is redrawn (at most 64 times, then one
//!   sector), so a normal's effective mean is above its nominal mean when the variance is
//!   large (c-lash.txt Table 2's nor(1 KiB, 64 KiB^2)); sizes are capped at the address
//!   space. Inter-arrival draws below 0 count as 0.
//! - Random and local offsets are multiples of `align_bytes` (default 0: the flash page
//!   size); a random request lies wholly inside the space.
//! - Hot/cold: the hot region is the first `hot_space` fraction of the space and gets
//!   `hot_access` of the random requests. Zipf: the space is cut in `align_bytes` units
//!   ranked by a Zipf law of exponent `zipf_exponent`, rank r placed at unit
//!   `(r * stride) mod units` with a stride coprime to the unit count (`zipf_scatter`,
//!   default on) so hot units are not also adjacent; skew applies to random requests
//!   only (sequential and local ones follow the previous request).
//! - A sequential request draws its read/write type and size like any other
//!   (`sequential_draw = "fresh"`, default), or keeps the previous request's
//!   (`"disksim"`: DiskSim 3.0's `synthio_generatenextio` keeps `flags & READ` and
//!   `bcount` and only moves `blkno`, so a run of sequential writes has no read in it;
//!   c-lash.txt does not say, experiments/c-lash/NOTES.md measured both).
//! - The read/write draw is independent of the address draw; before the first request
//!   the previous end is offset 0 (so a sequential stream starts at 0); one ChaCha8 stream seeded by the run seed drives everything, so a seed
//!   replays exactly.

use crate::fs::{FsConfig, FsGen};
use ftlab_core::request::{Op, Request};
use ftlab_core::units::parse_size;
use ftlab_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Where the next request goes (the older, two-valued setting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Sequential, local or random by the probabilities (uniformly random by default).
    Random,
    /// Every request follows the previous one (`p_sequential = 1`).
    Sequential,
}

/// How random requests spread over the space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Address {
    /// Uniform.
    Uniform,
    /// `hot_access` of them in the first `hot_space` of the space.
    HotCold,
    /// Zipf over `align_bytes` units.
    Zipf,
}

/// How `p_local` combines with `p_sequential`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LocalMode {
    /// Exclusive probabilities (sum at most 1).
    All,
    /// Share of the non-sequential requests.
    NonSequential,
}

/// What a sequential request draws (`sequential_draw`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SequentialDraw {
    /// Its read/write type and size, like any request.
    #[default]
    Fresh,
    /// Nothing: it keeps the previous request's type and size, as DiskSim 3.0's
    /// generator does (`synthio_generatenextio`), so runs of writes have no read holes.
    Disksim,
}

impl SequentialDraw {
    fn is_fresh(&self) -> bool {
        *self == SequentialDraw::Fresh
    }
}

/// A distribution with DiskSim's parameters, in the unit its key names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Dist {
    /// Always `value`.
    Constant {
        /// The value.
        value: f64,
    },
    /// Uniform in `[min, max]`.
    Uniform {
        /// Low end.
        min: f64,
        /// High end.
        max: f64,
    },
    /// Normal with a mean and a variance (not a standard deviation).
    Normal {
        /// Mean.
        mean: f64,
        /// Variance, in the unit squared.
        variance: f64,
    },
    /// `base` plus an exponential with the given mean.
    Exponential {
        /// Offset added to every draw.
        #[serde(default)]
        base: f64,
        /// Mean of the exponential part.
        mean: f64,
    },
    /// Always 0 (back-to-back arrivals).
    Zero,
}

impl Dist {
    pub(crate) fn check(&self, key: &str) -> Result<(), String> {
        let finite = |v: f64, what: &str| {
            if v.is_finite() {
                Ok(())
            } else {
                Err(format!(
                    "synthetic.{key}.{what} = {v}: must be a finite number"
                ))
            }
        };
        match *self {
            Dist::Constant { value } => finite(value, "value"),
            Dist::Uniform { min, max } => {
                finite(min, "min")?;
                finite(max, "max")?;
                if max < min {
                    return Err(format!("synthetic.{key}: max ({max}) is below min ({min})"));
                }
                Ok(())
            }
            Dist::Normal { mean, variance } => {
                finite(mean, "mean")?;
                finite(variance, "variance")?;
                if variance < 0.0 {
                    return Err(format!(
                        "synthetic.{key}.variance = {variance}: must be >= 0"
                    ));
                }
                Ok(())
            }
            Dist::Exponential { base, mean } => {
                finite(base, "base")?;
                finite(mean, "mean")?;
                if mean < 0.0 {
                    return Err(format!("synthetic.{key}.mean = {mean}: must be >= 0"));
                }
                Ok(())
            }
            Dist::Zero => Ok(()),
        }
    }

    /// One draw.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match *self {
            Dist::Constant { value } => value,
            Dist::Uniform { min, max } => min + (max - min) * rng.gen::<f64>(),
            Dist::Normal { mean, variance } => mean + variance.sqrt() * std_normal(rng),
            Dist::Exponential { base, mean } => base - mean * (1.0 - rng.gen::<f64>()).ln(),
            Dist::Zero => 0.0,
        }
    }

    /// The mean of the distribution (before any redraw or rounding).
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Constant { value } => value,
            Dist::Uniform { min, max } => (min + max) / 2.0,
            Dist::Normal { mean, .. } => mean,
            Dist::Exponential { base, mean } => base + mean,
            Dist::Zero => 0.0,
        }
    }
}

/// A standard normal draw (Box-Muller; one of the pair is used so the stream position
/// does not depend on earlier draws).
fn std_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1 = 1.0 - rng.gen::<f64>();
    let u2 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Parameters of the synthetic workload (config table `[synthetic]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticConfig {
    /// `random` (use the probabilities) or `sequential` (every request sequential).
    pub pattern: Pattern,
    /// Probability that a request is a read, 0 to 1.
    pub read_ratio: f64,
    /// Bytes per request when `size_kib` is not set.
    pub request_bytes: u64,
    /// Number of requests.
    pub count: u64,
    /// Mean exponential inter-arrival in µs when `interarrival_ms` is not set; 0 for
    /// back-to-back.
    pub interarrival_us: f64,
    /// Probability that a request starts where the previous one ended.
    pub p_sequential: f64,
    /// Probability that a request is local (see `local_mode`).
    pub p_local: f64,
    /// `all` (exclusive probabilities) or `non_sequential` (share of the rest).
    pub local_mode: LocalMode,
    /// Distance of a local request from the previous request's end, in KiB.
    pub local_distance_kib: Dist,
    /// Request size distribution in KiB (overrides `request_bytes`).
    pub size_kib: Option<Dist>,
    /// Inter-arrival distribution in ms (overrides `interarrival_us`).
    pub interarrival_ms: Option<Dist>,
    /// Bytes of address space used, from offset 0 (e.g. `1GiB`); default: the capacity.
    pub address_space: Option<String>,
    /// How random requests spread: `uniform`, `hot_cold` or `zipf`.
    pub address: Address,
    /// Hot/cold: fraction of random requests that go to the hot region.
    pub hot_access: f64,
    /// Hot/cold: fraction of the space that is hot.
    pub hot_space: f64,
    /// Zipf exponent (> 0; 1 is the classic law).
    pub zipf_exponent: f64,
    /// Zipf: scatter ranks over the space instead of placing them in order.
    pub zipf_scatter: bool,
    /// Alignment of random and local offsets in bytes (0: the page size).
    pub align_bytes: u64,
    /// What a sequential request draws: `fresh` (its type and size, like any request)
    /// or `disksim` (nothing: the previous request's type and size, as DiskSim 3.0's
    /// generator). Left out of reports and shown configs at its default.
    #[serde(skip_serializing_if = "SequentialDraw::is_fresh")]
    pub sequential_draw: SequentialDraw,
    /// A file-system workload instead of the request-level draws (see [`crate::fs`]):
    /// files in clusters, allocation-table and directory updates, deletions. Only
    /// `count`, the inter-arrival keys and `address_space` apply with it. Left out of
    /// reports and shown configs when unset, so those of other workloads are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FsConfig>,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            pattern: Pattern::Random,
            read_ratio: 0.3,
            request_bytes: 4096,
            count: 100_000,
            interarrival_us: 1000.0,
            p_sequential: 0.0,
            p_local: 0.0,
            local_mode: LocalMode::All,
            local_distance_kib: Dist::Normal {
                mean: 0.0,
                variance: 4096.0,
            },
            size_kib: None,
            interarrival_ms: None,
            address_space: None,
            address: Address::Uniform,
            hot_access: 0.8,
            hot_space: 0.2,
            zipf_exponent: 1.0,
            zipf_scatter: true,
            align_bytes: 0,
            sequential_draw: SequentialDraw::Fresh,
            filesystem: None,
        }
    }
}

fn probability(v: f64, key: &str) -> Result<(), String> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(format!("synthetic.{key} = {v}: must be from 0 to 1"))
    }
}

impl SyntheticConfig {
    /// The address space in bytes for a device of `capacity` bytes.
    pub fn space_bytes(&self, capacity: u64) -> Result<u64, String> {
        match &self.address_space {
            None => Ok(capacity),
            Some(text) => {
                let v = parse_size(text)
                    .map_err(|e| format!("synthetic.address_space = `{text}`: {e}"))?;
                if v == 0 || v > capacity {
                    return Err(format!(
                        "synthetic.address_space = `{text}` ({v} bytes): must be 1 byte to the \
                         capacity ({capacity} bytes); raise --capacity"
                    ));
                }
                Ok(v)
            }
        }
    }

    /// The probabilities of (sequential, local) after `pattern` and `local_mode`.
    pub fn effective_probabilities(&self) -> (f64, f64) {
        let seq = match self.pattern {
            Pattern::Sequential => 1.0,
            Pattern::Random => self.p_sequential,
        };
        let local = match self.local_mode {
            LocalMode::All => self.p_local,
            LocalMode::NonSequential => (1.0 - seq) * self.p_local,
        };
        (seq, local.min(1.0 - seq))
    }

    /// Checks the parameters against a device of `capacity` bytes; the error names the
    /// key.
    pub fn validate(&self, capacity: u64) -> Result<(), String> {
        probability(self.read_ratio, "read_ratio")?;
        probability(self.p_sequential, "p_sequential")?;
        probability(self.p_local, "p_local")?;
        probability(self.hot_access, "hot_access")?;
        probability(self.hot_space, "hot_space")?;
        if self.local_mode == LocalMode::All && self.p_sequential + self.p_local > 1.0 + 1e-12 {
            return Err(format!(
                "synthetic.p_sequential + synthetic.p_local = {}: above 1 with local_mode = \
                 \"all\"; lower them, or set local_mode = \"non_sequential\" to read p_local as \
                 the share of non-sequential requests",
                self.p_sequential + self.p_local
            ));
        }
        let space = self.space_bytes(capacity)?;
        if self.size_kib.is_none() && (self.request_bytes == 0 || self.request_bytes > space) {
            return Err(format!(
                "synthetic.request_bytes = {}: must be 1 to the address space ({space})",
                self.request_bytes
            ));
        }
        if !self.interarrival_us.is_finite() || self.interarrival_us < 0.0 {
            return Err(format!(
                "synthetic.interarrival_us = {}: must be 0 or more",
                self.interarrival_us
            ));
        }
        self.local_distance_kib.check("local_distance_kib")?;
        if let Some(d) = &self.size_kib {
            d.check("size_kib")?;
        }
        if let Some(d) = &self.interarrival_ms {
            d.check("interarrival_ms")?;
        }
        if !(self.zipf_exponent.is_finite() && self.zipf_exponent > 0.0) {
            return Err(format!(
                "synthetic.zipf_exponent = {}: must be above 0",
                self.zipf_exponent
            ));
        }
        if self.align_bytes > space {
            return Err(format!(
                "synthetic.align_bytes = {}: larger than the address space",
                self.align_bytes
            ));
        }
        if self.address == Address::HotCold && (self.hot_space == 0.0 || self.hot_space == 1.0) {
            return Err(format!(
                "synthetic.hot_space = {}: hot_cold needs a hot region strictly inside the space",
                self.hot_space
            ));
        }
        if let Some(fs) = &self.filesystem {
            fs.validate(space)?;
        }
        Ok(())
    }
}

/// Zipf ranks `1..=n` with exponent `s` by rejection-inversion (Hörmann and Derflinger,
/// "Rejection-inversion to generate variates from monotone discrete distributions",
/// 1996): O(1) time and memory per draw, whatever `n`.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    /// Ranks `1..=n` (n >= 1), exponent `s > 0`.
    pub fn new(n: u64, s: f64) -> Zipf {
        assert!(n >= 1 && s > 0.0);
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.cut = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// Integral of x^-s, shifted so that it is well behaved at s = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }

    fn h_integral_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        (helper1(t) * y).exp()
    }

    /// One rank in `1..=n`.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> u64 {
        loop {
            let u = self.h_n + rng.gen::<f64>() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// ln(1 + x) / x, continuous at 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, continuous at 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// What kind of request the generator drew (for tests and statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Starts at the previous end.
    Sequential,
    /// Near the previous end.
    Local,
    /// Anywhere (skewed or not).
    Random,
}

/// The generator: an iterator of `count` requests.
pub struct Synthetic {
    cfg: SyntheticConfig,
    rng: ChaCha8Rng,
    space: u64,
    align: u64,
    p_seq: f64,
    p_local: f64,
    zipf: Option<(Zipf, u64, u64)>,
    prev_end: u64,
    /// The previous request's type and length (`sequential_draw = "disksim"`).
    prev: Option<(Op, u64)>,
    now_ns: f64,
    emitted: u64,
    last_kind: Kind,
    fs: Option<FsGen>,
}

impl Synthetic {
    /// A generator for a device of `capacity` bytes whose pages are `page_size` bytes.
    /// Call [`SyntheticConfig::validate`] first.
    pub fn new(cfg: &SyntheticConfig, capacity: u64, page_size: u64, seed: u64) -> Self {
        let align = if cfg.align_bytes == 0 {
            page_size
        } else {
            cfg.align_bytes
        }
        .max(1);
        let space = cfg.space_bytes(capacity).unwrap_or(capacity);
        let space = (space / align * align).max(align);
        let (p_seq, p_local) = cfg.effective_probabilities();
        let zipf = (cfg.address == Address::Zipf).then(|| {
            let units = space / align;
            let stride = if cfg.zipf_scatter && units > 2 {
                let mut a = ((units as f64) * 0.618_033_988_75) as u64 | 1;
                while gcd(a, units) != 1 {
                    a += 2;
                }
                a % units
            } else {
                1
            };
            (Zipf::new(units, cfg.zipf_exponent), units, stride.max(1))
        });
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let fs = cfg
            .filesystem
            .as_ref()
            .map(|f| FsGen::new(f, space, &mut rng));
        Synthetic {
            cfg: cfg.clone(),
            rng,
            space,
            align,
            p_seq,
            p_local,
            zipf,
            prev_end: 0,
            prev: None,
            now_ns: 0.0,
            emitted: 0,
            last_kind: Kind::Random,
            fs,
        }
    }

    /// The file-system workload's state, when `filesystem` is set.
    pub fn filesystem(&self) -> Option<&FsGen> {
        self.fs.as_ref()
    }

    /// The kind of the request returned last.
    pub fn last_kind(&self) -> Kind {
        self.last_kind
    }

    /// The address space in bytes the generator uses.
    pub fn space_bytes(&self) -> u64 {
        self.space
    }

    fn size(&mut self) -> u64 {
        let bytes = match &self.cfg.size_kib {
            None => return self.cfg.request_bytes.min(self.space),
            Some(d) => {
                let mut v = d.sample(&mut self.rng);
                let mut tries = 0;
                while v <= 0.0 && tries < 64 {
                    v = d.sample(&mut self.rng);
                    tries += 1;
                }
                v * 1024.0
            }
        };
        let sectors = (bytes / 512.0).ceil().max(1.0);
        ((sectors as u64).saturating_mul(512)).min(self.space / 512 * 512)
    }

    fn gap_ns(&mut self) -> f64 {
        let ms = match &self.cfg.interarrival_ms {
            Some(d) => d.sample(&mut self.rng),
            None if self.cfg.interarrival_us > 0.0 => {
                -(1.0 - self.rng.gen::<f64>()).ln() * self.cfg.interarrival_us / 1000.0
            }
            None => 0.0,
        };
        ms.max(0.0) * 1e6
    }

    fn random_offset(&mut self, len: u64) -> u64 {
        let a = self.align;
        let last_slot = self.space.saturating_sub(len) / a;
        let slot = match self.cfg.address {
            Address::Uniform => self.rng.gen_range(0..=last_slot),
            Address::HotCold => {
                let hot_end = ((self.space as f64 * self.cfg.hot_space) as u64 / a).max(1);
                if self.rng.gen::<f64>() < self.cfg.hot_access || hot_end > last_slot {
                    self.rng.gen_range(0..hot_end.min(last_slot + 1))
                } else {
                    self.rng.gen_range(hot_end..=last_slot)
                }
            }
            Address::Zipf => {
                let (z, units, stride) = self.zipf.as_ref().expect("built for zipf");
                let rank = z.sample(&mut self.rng) - 1;
                let unit = ((rank as u128 * *stride as u128) % *units as u128) as u64;
                unit.min(last_slot)
            }
        };
        slot * a
    }

    fn local_offset(&mut self, prev_end: u64, len: u64) -> u64 {
        let a = self.align as i128;
        let space = self.space as i128;
        let mut off = prev_end as i128;
        for _ in 0..64 {
            let d = self.cfg.local_distance_kib.sample(&mut self.rng) * 1024.0;
            let target = (prev_end as i128 + d.round() as i128).rem_euclid(space);
            off = target - target.rem_euclid(a);
            if off != prev_end as i128 {
                break;
            }
        }
        if off == prev_end as i128 {
            off = (off + a).rem_euclid(space);
        }
        if off + len as i128 > space {
            off = (space - len as i128).max(0) / a * a;
        }
        off as u64
    }
}

impl Iterator for Synthetic {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.emitted == self.cfg.count {
            return None;
        }
        self.emitted += 1;
        if self.fs.is_some() {
            let fs = self.fs.as_mut().expect("checked");
            let (offset, len) = fs.next_write(&mut self.rng);
            if self.emitted > 1 {
                self.now_ns += self.gap_ns();
            }
            return Some(Request {
                arrival: Nanos(self.now_ns as u64),
                op: Op::Write,
                offset,
                len,
            });
        }
        let u: f64 = self.rng.gen();
        let kept = match (self.cfg.sequential_draw, self.prev) {
            (SequentialDraw::Disksim, Some(prev)) if u < self.p_seq => Some(prev),
            _ => None,
        };
        let (op, len) = match kept {
            Some(prev) => prev,
            None => {
                let op = if self.rng.gen::<f64>() < self.cfg.read_ratio {
                    Op::Read
                } else {
                    Op::Write
                };
                (op, self.size())
            }
        };
        self.prev = Some((op, len));
        let p = self.prev_end;
        let (kind, offset) = if u < self.p_seq {
            let o = if p + len > self.space { 0 } else { p };
            (Kind::Sequential, o)
        } else if u < self.p_seq + self.p_local {
            (Kind::Local, self.local_offset(p, len))
        } else {
            (Kind::Random, self.random_offset(len))
        };
        self.last_kind = kind;
        self.prev_end = offset + len;
        if self.emitted > 1 {
            self.now_ns += self.gap_ns();
        }
        Some(Request {
            arrival: Nanos(self.now_ns as u64),
            op,
            offset,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn deterministic_and_in_range() {
        let cfg = SyntheticConfig {
            count: 1000,
            ..Default::default()
        };
        cfg.validate(1 << 20).unwrap();
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
        let c: Vec<_> = Synthetic::new(&cfg, 1 << 20, 4096, 8).collect();
        assert_ne!(a, c, "another seed, another workload");
    }

    #[test]
    fn disksim_sequential_requests_keep_the_previous_type_and_size() {
        let cfg = SyntheticConfig {
            count: 5000,
            p_sequential: 0.6,
            read_ratio: 0.5,
            size_kib: Some(Dist::Uniform {
                min: 1.0,
                max: 64.0,
            }),
            sequential_draw: SequentialDraw::Disksim,
            ..Default::default()
        };
        cfg.validate(GIB).unwrap();
        let mut g = Synthetic::new(&cfg, GIB, 4096, 3);
        let (mut prev, mut seq, mut kept) = (None::<Request>, 0, 0);
        while let Some(r) = g.next() {
            if let (Some(p), Kind::Sequential) = (prev, g.last_kind()) {
                seq += 1;
                kept += (r.op == p.op && r.len == p.len) as u32;
            }
            prev = Some(r);
        }
        assert!(seq > 2500, "{seq}");
        assert_eq!(kept, seq, "every sequential request keeps both");
        // The default draws them anew: sizes from 1 to 64 KiB rarely repeat.
        let fresh = SyntheticConfig {
            sequential_draw: SequentialDraw::Fresh,
            ..cfg
        };
        let mut g = Synthetic::new(&fresh, GIB, 4096, 3);
        let (mut prev, mut same) = (None::<Request>, 0);
        while let Some(r) = g.next() {
            if let (Some(p), Kind::Sequential) = (prev, g.last_kind()) {
                same += (r.op == p.op && r.len == p.len) as u32;
            }
            prev = Some(r);
        }
        assert!(same < 200, "{same}");
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

    /// Measured (sequential, local, read) shares of a generated stream: a request is
    /// sequential if it starts at the previous end, local if it starts within `near`
    /// bytes of it otherwise.
    fn measure(reqs: &[Request], near: u64) -> (f64, f64, f64) {
        let (mut seq, mut local) = (0, 0);
        for w in reqs.windows(2) {
            let end = w[0].offset + w[0].len;
            if w[1].offset == end {
                seq += 1;
            } else if w[1].offset.abs_diff(end) <= near {
                local += 1;
            }
        }
        let n = (reqs.len() - 1) as f64;
        let reads = reqs.iter().filter(|r| r.op == Op::Read).count() as f64;
        (seq as f64 / n, local as f64 / n, reads / reqs.len() as f64)
    }

    #[test]
    fn measured_ratios_match_the_requested_ones() {
        let cfg = SyntheticConfig {
            count: 200_000,
            read_ratio: 0.25,
            p_sequential: 0.4,
            p_local: 0.3,
            size_kib: Some(Dist::Normal {
                mean: 8.0,
                variance: 4.0,
            }),
            ..Default::default()
        };
        cfg.validate(GIB).unwrap();
        let reqs: Vec<Request> = Synthetic::new(&cfg, GIB, 4096, 11).collect();
        // 64 KiB standard deviation: 6 sigma covers the local requests.
        let (seq, local, reads) = measure(&reqs, 6 * 64 * 1024);
        assert!((seq - 0.4).abs() < 0.01, "sequential {seq}");
        assert!((local - 0.3).abs() < 0.01, "local {local}");
        assert!((reads - 0.25).abs() < 0.01, "reads {reads}");
        assert!(reqs
            .iter()
            .all(|r| r.offset + r.len <= GIB && r.len % 512 == 0));
        let mean_kib = reqs.iter().map(|r| r.len as f64).sum::<f64>() / reqs.len() as f64 / 1024.0;
        // Rounding up to sectors adds 0.25 KiB on average.
        assert!((mean_kib - 8.25).abs() < 0.1, "mean size {mean_kib} KiB");
    }

    #[test]
    fn non_sequential_local_mode_scales_p_local() {
        let cfg = SyntheticConfig {
            count: 100_000,
            p_sequential: 0.8,
            p_local: 0.8,
            local_mode: LocalMode::NonSequential,
            ..Default::default()
        };
        cfg.validate(GIB).unwrap();
        let reqs: Vec<Request> = Synthetic::new(&cfg, GIB, 4096, 3).collect();
        let (seq, local, _) = measure(&reqs, 6 * 64 * 1024);
        assert!((seq - 0.8).abs() < 0.01, "sequential {seq}");
        assert!((local - 0.16).abs() < 0.01, "local {local}");
        let exclusive = SyntheticConfig {
            local_mode: LocalMode::All,
            ..cfg
        };
        let e = exclusive.validate(GIB).unwrap_err();
        assert!(e.contains("non_sequential"), "{e}");
    }

    #[test]
    fn interarrival_distributions() {
        let exp = SyntheticConfig {
            count: 50_000,
            interarrival_ms: Some(Dist::Exponential {
                base: 0.0,
                mean: 200.0,
            }),
            ..Default::default()
        };
        let r: Vec<Request> = Synthetic::new(&exp, GIB, 4096, 5).collect();
        let mean_ms = r.last().unwrap().arrival.0 as f64 / 1e6 / (r.len() - 1) as f64;
        assert!((mean_ms - 200.0).abs() < 4.0, "mean gap {mean_ms} ms");
        let zero = SyntheticConfig {
            count: 10,
            interarrival_ms: Some(Dist::Zero),
            ..Default::default()
        };
        assert!(Synthetic::new(&zero, GIB, 4096, 5).all(|r| r.arrival == Nanos(0)));
        let constant = SyntheticConfig {
            count: 4,
            interarrival_ms: Some(Dist::Constant { value: 2.5 }),
            ..Default::default()
        };
        let t: Vec<u64> = Synthetic::new(&constant, GIB, 4096, 5)
            .map(|r| r.arrival.0)
            .collect();
        assert_eq!(t, vec![0, 2_500_000, 5_000_000, 7_500_000]);
    }

    #[test]
    fn size_distributions() {
        let gen = |d: Dist| {
            let cfg = SyntheticConfig {
                count: 20_000,
                size_kib: Some(d),
                ..Default::default()
            };
            cfg.validate(GIB).unwrap();
            Synthetic::new(&cfg, GIB, 4096, 9).collect::<Vec<_>>()
        };
        let u = gen(Dist::Uniform {
            min: 1.0,
            max: 16.0,
        });
        assert!(u.iter().all(|r| (1024..=16384).contains(&r.len)));
        let e = gen(Dist::Exponential {
            base: 0.0,
            mean: 4.0,
        });
        let mean = e.iter().map(|r| r.len as f64).sum::<f64>() / e.len() as f64 / 1024.0;
        assert!((mean - 4.25).abs() < 0.2, "exponential mean {mean} KiB");
        let c = gen(Dist::Constant { value: 2.0 });
        assert!(c.iter().all(|r| r.len == 2048));
    }

    #[test]
    fn hot_cold_skew() {
        let cfg = SyntheticConfig {
            count: 50_000,
            address: Address::HotCold,
            hot_access: 0.8,
            hot_space: 0.2,
            ..Default::default()
        };
        cfg.validate(GIB).unwrap();
        let r: Vec<Request> = Synthetic::new(&cfg, GIB, 4096, 2).collect();
        let hot = r.iter().filter(|r| r.offset < GIB / 5).count() as f64 / r.len() as f64;
        assert!((hot - 0.8).abs() < 0.01, "hot share {hot}");
    }

    #[test]
    fn zipf_matches_its_law() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for s in [0.8, 1.0, 1.3] {
            let z = Zipf::new(10, s);
            let mut counts = [0u32; 10];
            let n = 200_000;
            for _ in 0..n {
                counts[(z.sample(&mut rng) - 1) as usize] += 1;
            }
            let norm: f64 = (1..=10).map(|k| (k as f64).powf(-s)).sum();
            for (i, &c) in counts.iter().enumerate() {
                let want = ((i + 1) as f64).powf(-s) / norm;
                let got = c as f64 / n as f64;
                assert!(
                    (got - want).abs() < 0.006,
                    "s={s} rank {}: {got} vs {want}",
                    i + 1
                );
            }
        }
        let big = Zipf::new(1 << 40, 1.0);
        assert!((0..1000).all(|_| (1..=1 << 40).contains(&big.sample(&mut rng))));
    }

    #[test]
    fn zipf_addresses_are_skewed_and_scattered() {
        let cfg = SyntheticConfig {
            count: 20_000,
            address: Address::Zipf,
            zipf_exponent: 1.2,
            ..Default::default()
        };
        cfg.validate(GIB).unwrap();
        let r: Vec<Request> = Synthetic::new(&cfg, GIB, 4096, 4).collect();
        let mut offs: Vec<u64> = r.iter().map(|r| r.offset).collect();
        offs.sort_unstable();
        offs.dedup();
        assert!(offs.len() < r.len() / 2, "Zipf repeats the hot units");
        assert!(r.iter().all(|r| r.offset + r.len <= GIB));
        let top = r.iter().filter(|x| x.offset == r[0].offset).count();
        assert!(top > 1);
    }

    #[test]
    fn validation_names_keys() {
        let bad = |c: SyntheticConfig| c.validate(GIB).unwrap_err();
        let d = SyntheticConfig::default;
        assert!(bad(SyntheticConfig {
            read_ratio: 1.5,
            ..d()
        })
        .starts_with("synthetic.read_ratio"));
        assert!(bad(SyntheticConfig {
            address_space: Some("2GiB".into()),
            ..d()
        })
        .starts_with("synthetic.address_space"));
        assert!(bad(SyntheticConfig {
            size_kib: Some(Dist::Uniform { min: 4.0, max: 1.0 }),
            ..d()
        })
        .starts_with("synthetic.size_kib"));
        assert!(bad(SyntheticConfig {
            zipf_exponent: 0.0,
            ..d()
        })
        .starts_with("synthetic.zipf_exponent"));
    }

    #[test]
    fn address_space_limits_offsets() {
        let cfg = SyntheticConfig {
            count: 5000,
            address_space: Some("1MiB".into()),
            p_sequential: 0.3,
            p_local: 0.3,
            ..Default::default()
        };
        cfg.validate(GIB).unwrap();
        assert!(Synthetic::new(&cfg, GIB, 4096, 1).all(|r| r.offset + r.len <= 1 << 20));
    }
}
