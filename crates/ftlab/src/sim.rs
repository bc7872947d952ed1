//! One simulation: [`Simulation::new`] resolves a [`Config`] (geometry, NAND preset,
//! schemes and their options, timing, checks) into a ready engine, and
//! [`Simulation::run`] streams a workload through it (warm-up passes first, then the
//! measured ones, with the planned power losses) and builds the report. An
//! [`Observer`] sees the run as it goes: progress, periodic snapshots of the engine and
//! power losses; progress bars, timelines, live serving and Python callbacks hang there.
//!
//! A panic inside a scheme is caught here, at the run boundary, and returned as a
//! [`Failure::Internal`] with the seed, never as an abort of the caller.

use crate::config::{Config, DeviceLayout, Precondition, TimingModel, VerifyLevel};
use crate::error::{setting, RunError};
use crate::powerloss::PowerLossPlan;
use crate::registry;
use crate::source::{check_kept, name_source, validate_workload, workload_notes, workload_stream};
use crate::timeline::Recorder;
use ftlab_core::buffer::Buffer;
use ftlab_core::engine::{Engine, EngineConfig, SimError, Verify};
use ftlab_core::ftl::{Ftl, RecoverError};
use ftlab_core::geometry::{Geometry, GeometryBuilder};
use ftlab_core::nand::{self, Latencies, NandPreset};
use ftlab_core::options::{BuildContext, SchemeError};
use ftlab_core::request::Request;
use ftlab_core::timing::{ParallelTiming, SerialTiming, Timing};
use ftlab_core::Nanos;
use ftlab_report::{EndOfRunReport, Labels, Notice, Report, WorkloadReport};
use ftlab_workload::transform::Counters;
use ftlab_workload::{Record, RecordStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

/// What stopped a run before its end, found by the run itself (not bad input).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// Data loss or a broken invariant, found by the oracle or the deep checks.
    #[error(transparent)]
    Violation(SimError),
    /// The FTL could not rebuild its state after a power loss.
    #[error(
        "recovery after the power loss {} request {request} failed: {ftl}: {why}",
        if *inside { "inside" } else { "before" }
    )]
    Recovery {
        /// FTL id.
        ftl: String,
        /// The request the power loss came before, or struck inside (1-based, over all
        /// passes).
        request: u64,
        /// Whether it struck inside the request (a torn operation).
        inside: bool,
        /// Why.
        why: RecoverError,
    },
    /// The device wore out: a scheme had too few blocks left to write on (issue 23 item
    /// 4; `ftlab_core::ftl::WornOut`). The end of the device's life, not a bug.
    #[error("the device wore out at request {request}: {message}")]
    WornOut {
        /// What the scheme said.
        message: String,
        /// Requests submitted before it.
        request: u64,
    },
    /// A panic inside the engine or a scheme: a bug in ftlab, not in the input.
    #[error("internal error (a bug in ftlab, please report it) at request {request}, seed {seed}: {message}")]
    Internal {
        /// The panic message.
        message: String,
        /// Requests submitted before it.
        request: u64,
        /// The run's seed.
        seed: u64,
    },
}

/// The result of a run that got to the end, or stopped on a [`Failure`].
pub struct RunOutput {
    /// The report (up to the failure, if any).
    pub report: Report,
    /// What stopped the run, if anything did.
    pub failure: Option<Failure>,
    /// Requests simulated (all passes).
    pub requests: u64,
}

/// Where the requests of a run come from.
pub enum Workload {
    /// The trace or generator the configuration names, through its transforms and
    /// passes (what `ftlab run` does).
    Configured,
    /// Requests made by the caller (Python arrays, a live client), submitted in order
    /// as one pass; the configuration's workload keys are ignored.
    Requests(Box<dyn Iterator<Item = Request>>),
}

/// How a run is going, passed to [`Observer::progress`].
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Requests submitted so far (all passes).
    pub requests: u64,
    /// Requests the run will submit, when known in advance.
    pub total: Option<u64>,
    /// Simulated arrival time of the last request.
    pub sim_time: Nanos,
}

/// Watches a run. Every method has a default that does nothing, so an observer
/// implements only what it needs. Calls happen between requests, never inside one.
pub trait Observer {
    /// Called every [`Observer::progress_every`] requests and once at the end.
    fn progress(&mut self, _p: &Progress) {}

    /// Requests between [`Observer::progress`] calls.
    fn progress_every(&self) -> u64 {
        4096
    }

    /// Requests between [`Observer::snapshot`] calls; `None` (the default): no
    /// snapshots.
    fn snapshot_every(&self) -> Option<u64> {
        None
    }

    /// A look at the engine (flash, FTL and buffer statistics, metrics so far) after
    /// every [`Observer::snapshot_every`] requests and at the end of the run.
    fn snapshot(&mut self, _p: &Progress, _engine: &Engine) {}

    /// The measured part of the run starts (after preconditioning and warm-up passes):
    /// the engine's counters were just reset.
    fn measuring(&mut self, _p: &Progress) {}

    /// A power loss struck before request `p.requests + 1` and the FTL recovered (or
    /// failed to: see the run's failure).
    fn power_loss(&mut self, _p: &Progress, _recovered: bool) {}

    /// Asked before every request: `true` strikes a power loss there, as a planned one
    /// (`power_loss`) does: RAM state is dropped and the FTL recovers from flash (a
    /// live server's `kill -USR1`). The default never asks for one.
    fn power_loss_now(&mut self) -> bool {
        false
    }

    /// Whether [`Observer::power_loss_now`] may ever say yes, asked once before the
    /// run: then the oracle tracks which versions reach the FTL, and holds every page
    /// to the newest of them after a power loss (as for a planned one), and the run
    /// keeps whole spare tags and exact versions (a run without power losses packs the
    /// tags and wraps versions, which a recovery cannot order). An observer that
    /// strikes without saying so here gets a recovery failure on a packed run, or the
    /// looser check: a page whose newest data a buffer lost may read as any older
    /// version. The default says no.
    fn may_lose_power(&self) -> bool {
        false
    }

    /// Asked after every [`Observer::progress`] call during the run: `true` stops the
    /// run there with [`RunError::Cancelled`] (Ctrl-C, a callback that failed, a live
    /// client that left). The default never stops.
    fn stop_requested(&self) -> bool {
        false
    }
}

/// An observer that watches nothing.
pub struct NoObserver;

impl Observer for NoObserver {}

/// Everything resolved from a config before the engine starts.
pub struct Prepared {
    /// Geometry.
    pub geo: Geometry,
    /// Latencies.
    pub latencies: Latencies,
    /// The engine, ready for requests.
    pub engine: Engine,
    /// The echo of every setting, with scheme option defaults filled in.
    pub echo: serde_json::Value,
}

fn latencies(p: &NandPreset, cfg: &Config) -> Result<Latencies, RunError> {
    let n = &cfg.nand_params;
    let pick = |key: &'static str, v: Option<f64>, d: f64| -> Result<Nanos, RunError> {
        let us = v.unwrap_or(d);
        if !us.is_finite() || us < 0.0 {
            return Err(setting(key, format!("{us} is not a latency in µs")));
        }
        Ok(Nanos::from_us_f64(us))
    };
    Ok(Latencies {
        read: pick("nand_params.read_us", n.read_us, p.read_us)?,
        spare_read: pick(
            "nand_params.spare_read_us",
            n.spare_read_us,
            p.spare_read_us,
        )?,
        program: pick("nand_params.program_us", n.program_us, p.program_us)?,
        erase: pick("nand_params.erase_us", n.erase_us, p.erase_us)?,
    })
}

fn preset_of(cfg: &Config) -> Result<&'static NandPreset, RunError> {
    nand::preset(&cfg.nand).ok_or_else(|| {
        let ids: Vec<&str> = nand::PRESETS.iter().map(|p| p.id).collect();
        setting(
            "nand",
            format!(
                "unknown NAND preset `{}` (known: {})",
                cfg.nand,
                ids.join(", ")
            ),
        )
    })
}

/// Channel bandwidth used by parallel timing, MiB/s: as set, else the preset's
/// organisation's, else [`DEFAULT_CHANNEL_MIB_S`].
pub fn channel_mib_s(cfg: &Config, preset: &NandPreset) -> f64 {
    cfg.channel_mib_s.unwrap_or_else(|| {
        preset
            .organisation
            .map_or(DEFAULT_CHANNEL_MIB_S, |o| o.channel_mib_s)
    })
}

/// Channel bandwidth of parallel timing when neither the config nor the preset sets
/// one, MiB/s.
pub const DEFAULT_CHANNEL_MIB_S: f64 = 40.0;

/// Channels and dies per channel: as set; else, under parallel timing, the preset's
/// organisation where it names one; else [`Config::organisation`].
fn organisation(cfg: &Config, preset: &NandPreset) -> (u32, u32, u32) {
    match (cfg.timing, preset.organisation) {
        (TimingModel::Parallel, Some(o)) => (
            cfg.channels.unwrap_or(o.channels),
            cfg.dies.unwrap_or(o.dies_per_channel),
            cfg.planes.unwrap_or(o.planes_per_die),
        ),
        _ => {
            let (c, d) = cfg.organisation();
            (c, d, cfg.planes.unwrap_or(1))
        }
    }
}

/// Initial bad blocks of a device (issue 23 item 4; config `bad_blocks`): which of its
/// physical blocks are good. They are hidden below the FTL, as a controller's factory
/// bad-block table hides them: the FTL and the flash model see the good blocks only,
/// numbered densely in physical order (so no FTL can use a bad one), and parallel
/// timing places block `i` on the die of physical block `good[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct BadBlockMap {
    /// Physical blocks of the device, good and bad.
    pub physical: u32,
    /// The rate used, in percent of the physical blocks.
    pub percent: f64,
    /// The physical numbers of the good blocks, ascending.
    pub good: Vec<u32>,
}

impl BadBlockMap {
    /// Initial bad blocks.
    pub fn bad(&self) -> u32 {
        self.physical - self.good.len() as u32
    }
}

/// The bad-block map of a device of `physical` blocks under `cfg`, `None` unless
/// `bad_blocks` is set: floor(physical x percent / 100) blocks, chosen from the seed
/// (a partial Fisher-Yates shuffle, so the same seed picks the same blocks).
fn bad_block_map(
    cfg: &Config,
    preset: &NandPreset,
    physical: u32,
) -> Result<Option<BadBlockMap>, RunError> {
    if !cfg.bad_blocks {
        return Ok(None);
    }
    let percent = cfg
        .nand_params
        .bad_block_percent
        .unwrap_or(preset.bad_block_percent);
    if !(0.0..100.0).contains(&percent) {
        return Err(setting(
            "nand_params.bad_block_percent",
            format!("{percent} is not a share of bad blocks: must be at least 0 and below 100"),
        ));
    }
    let bad = (physical as f64 * percent / 100.0).floor() as u32;
    let mut blocks: Vec<u32> = (0..physical).collect();
    let mut rng = ftlab_core::rng::SplitMix64::new(cfg.seed ^ 0x6261_645F_626C_6B73);
    for i in 0..bad {
        let j = i + rng.below((physical - i) as u64) as u32;
        blocks.swap(i as usize, j as usize);
    }
    let mut good = blocks.split_off(bad as usize);
    good.sort_unstable();
    Ok(Some(BadBlockMap {
        physical,
        percent,
        good,
    }))
}

/// The initial bad blocks `cfg` asks for (`None` without `bad_blocks`).
pub fn bad_blocks(cfg: &Config) -> Result<Option<BadBlockMap>, RunError> {
    let preset = preset_of(cfg)?;
    bad_block_map(cfg, preset, physical_geometry(cfg, preset)?.blocks)
}

/// The geometry the FTL and the flash model see: the device's, less its initial bad
/// blocks ([`BadBlockMap`]).
fn geometry(cfg: &Config, preset: &NandPreset) -> Result<Geometry, RunError> {
    let mut geo = physical_geometry(cfg, preset)?;
    if let Some(map) = bad_block_map(cfg, preset, geo.blocks)? {
        let good = map.good.len() as u32;
        if good < geo.logical_blocks() {
            return Err(setting(
                "bad_blocks",
                format!(
                    "{} of the device's {} blocks are initial bad blocks \
                     (nand_params.bad_block_percent = {}): the {good} good blocks do not \
                     hold the {} logical ones; raise --op or lower the rate",
                    map.bad(),
                    map.physical,
                    map.percent,
                    geo.logical_blocks()
                ),
            ));
        }
        geo.blocks = good;
    }
    Ok(geo)
}

/// The device's geometry, bad blocks included.
fn physical_geometry(cfg: &Config, preset: &NandPreset) -> Result<Geometry, RunError> {
    let n = &cfg.nand_params;
    Ok(GeometryBuilder {
        page_size: n.page_size.unwrap_or(preset.page_size),
        pages_per_block: n.pages_per_block.unwrap_or(preset.pages_per_block),
        spare_bytes: n.spare_bytes.unwrap_or(preset.spare_bytes),
        logical_bytes: cfg.capacity.0,
        op_percent: cfg.op,
        channels: organisation(cfg, preset).0,
        dies_per_channel: organisation(cfg, preset).1,
        planes_per_die: organisation(cfg, preset).2,
        min_spare_blocks: 0,
    }
    .build()?)
}

/// The device geometry of a config, without building any scheme.
pub fn device_geometry(cfg: &Config) -> Result<Geometry, RunError> {
    geometry(cfg, preset_of(cfg)?)
}

/// Fresh FTL and buffer instances (their resolved options are in [`Resolved`]).
pub struct Schemes {
    /// The FTL.
    pub ftl: Box<dyn Ftl>,
    /// The buffer.
    pub buffer: Box<dyn Buffer>,
}

/// The registry entries of the FTL and buffer a config names.
fn entries(
    cfg: &Config,
) -> Result<(&'static registry::FtlEntry, &'static registry::BufferEntry), RunError> {
    let ftl_entry = registry::ftl(&cfg.ftl).ok_or_else(|| {
        setting(
            "ftl",
            format!("unknown FTL `{}` (known: {})", cfg.ftl, registry::ftl_ids()),
        )
    })?;
    let buf_entry = registry::buffer(&cfg.buffer).ok_or_else(|| {
        setting(
            "buffer",
            format!(
                "unknown buffer `{}` (known: {})",
                cfg.buffer,
                registry::buffer_ids()
            ),
        )
    })?;
    Ok((ftl_entry, buf_entry))
}

/// The FTL and buffer instances a config names (fresh ones, as at the start of a run
/// or after a power loss).
pub fn build_schemes(
    cfg: &Config,
    geo: &Geometry,
    latencies: Latencies,
) -> Result<Schemes, RunError> {
    let (ftl_entry, buf_entry) = entries(cfg)?;
    let ctx = BuildContext {
        geo,
        latencies,
        seed: cfg.seed,
    };
    let ftl = (ftl_entry.build)(&ctx, &cfg.ftl_options)?;
    let buffer = (buf_entry.build)(&ctx, &cfg.buffer_options)?;
    Ok(Schemes { ftl, buffer })
}

/// A configuration checked in full, without building anything sized by the device.
pub struct Resolved {
    /// Geometry.
    pub geo: Geometry,
    /// Latencies.
    pub latencies: Latencies,
    /// The configuration with the schemes' options resolved (defaults filled in).
    pub config: Config,
    /// The report's echo of it (with the device).
    pub echo: serde_json::Value,
}

/// The one validation pass: preset, geometry, latencies, the schemes and their options
/// (types and ranges), timing and the workload settings. Errors name the key, the value
/// and what is allowed. Builds no scheme (a 1 TiB device costs nothing here); checks
/// that need a built scheme (its geometry limits, recovery) happen in
/// [`Simulation::new`].
pub fn validate(cfg: &Config) -> Result<Resolved, RunError> {
    let preset = preset_of(cfg)?;
    let geo = geometry(cfg, preset)?;
    let latencies = latencies(preset, cfg)?;
    let (ftl, buf) = entries(cfg)?;
    let mut resolved = cfg.clone();
    // The echo states the organisation the run used, defaults filled in.
    resolved.channels = Some(geo.channels);
    resolved.dies = Some(geo.dies_per_channel);
    resolved.planes = Some(geo.planes_per_die);
    let rate = channel_mib_s(cfg, preset);
    resolved.channel_mib_s = Some(rate);
    for (opts, value) in [
        (
            &mut resolved.ftl_options,
            (ftl.options.resolve)(ftl.id, &cfg.ftl_options)?,
        ),
        (
            &mut resolved.buffer_options,
            (buf.options.resolve)(buf.id, &cfg.buffer_options)?,
        ),
    ] {
        if let serde_json::Value::Object(map) = value {
            *opts = map;
        }
    }
    if cfg.timing == TimingModel::Parallel && !(rate.is_finite() && rate > 0.0) {
        return Err(setting("channel_mib_s", "must be a positive bandwidth"));
    }
    if cfg.timing == TimingModel::Parallel {
        // Parallel timing splits a page's channel transfer off the preset's read and
        // program latencies (whole-operation costs, as the papers give them); a preset
        // whose latencies are shorter than the transfer has no array time to keep.
        let xfer_us = geo.page_size as f64 / (rate * 1048576.0) * 1e6;
        let shortest = latencies.read.min(latencies.program).0 as f64 / 1e3;
        if shortest <= xfer_us {
            let need = geo.page_size as f64 / 1048576.0 / (shortest / 1e6);
            return Err(setting(
                "channel_mib_s",
                format!(
                    "--timing parallel: preset `{}` has no parallel timings at {} MiB/s: \
                     its read or program ({shortest:.1} µs) is not longer than a page's \
                     transfer over the channel ({xfer_us:.1} µs), so no array time is \
                     left; raise --channel-mib-s above {:.0} or use --timing serial",
                    cfg.nand,
                    rate,
                    need.ceil()
                ),
            ));
        }
    }
    if let Some(qd) = cfg.queue_depth {
        if !(1..=65536).contains(&qd) {
            return Err(setting(
                "queue_depth",
                format!("{qd} requests outstanding: must be 1 to 65536"),
            ));
        }
    }
    if !(1..=1024).contains(&cfg.queues) {
        return Err(setting(
            "queues",
            format!("{} submission queues: must be 1 to 1024", cfg.queues),
        ));
    }
    if cfg.suspend && cfg.timing != TimingModel::Parallel {
        return Err(setting(
            "suspend",
            "program/erase suspend lets a read overtake a die's program or erase, which \
             only the parallel model times per die: add --timing parallel",
        ));
    }
    if cfg.preempt_gc && cfg.timing != TimingModel::Parallel {
        return Err(setting(
            "preempt_gc",
            "preemptible GC lets a host read go ahead of the GC operations queued on its \
             die, and only the parallel model has per-die queues: add --timing parallel",
        ));
    }
    if cfg.channel_backfill && cfg.timing != TimingModel::Parallel {
        return Err(setting(
            "channel_backfill",
            "backfilling places transfers in the idle gaps of a channel, and only the \
             parallel model has channels: add --timing parallel",
        ));
    }
    for (key, us) in [
        ("suspend_program_us", cfg.suspend_program_us),
        ("suspend_erase_us", cfg.suspend_erase_us),
    ] {
        if !us.is_finite() || us < 0.0 {
            return Err(setting(key, format!("{us} is not a latency in µs")));
        }
    }
    if cfg.queues > 1 && cfg.queue_depth.is_none() {
        return Err(setting(
            "queues",
            "submission queues belong to closed-loop replay: set --queue-depth too",
        ));
    }
    let dies = geo.channels as u64 * geo.dies_per_channel as u64;
    if dies > geo.blocks as u64 {
        return Err(setting(
            "dies",
            format!(
                "{} channels x {} dies = {dies} dies, more than the device's {} blocks: \
                 every die needs a block; lower --channels/--dies or raise --capacity",
                geo.channels, geo.dies_per_channel, geo.blocks
            ),
        ));
    }
    validate_workload(cfg, &geo)?;
    let mut echo = serde_json::to_value(&resolved).expect("config serialises");
    let mut device = serde_json::json!({ "geometry": geo, "latencies_ns": latencies });
    // Only with bad blocks, so other reports keep their keys.
    if let Some(map) = bad_blocks(cfg)? {
        device["bad_blocks"] = serde_json::json!({
            "count": map.bad(),
            "physical_blocks": map.physical,
            "percent": map.percent,
        });
    }
    echo.as_object_mut()
        .expect("config is an object")
        .insert("device".into(), device);
    Ok(Resolved {
        geo,
        latencies,
        config: resolved,
        echo,
    })
}

/// Resolves a config into a ready engine, with whole spare tags and exact versions, so
/// the caller may strike a power loss ([`Engine::power_loss`]) at any time.
/// [`Simulation::new`] packs the tags of a run without planned power losses instead
/// (`EngineConfig::packed_tags`).
pub fn prepare(cfg: &Config) -> Result<Prepared, RunError> {
    prepare_with(cfg, false)
}

/// [`prepare`], packing the spare tags when `packed` and the FTL allows it.
fn prepare_with(cfg: &Config, packed: bool) -> Result<Prepared, RunError> {
    if cfg.until_worn_out
        && !registry::ftl(&cfg.ftl)
            .is_some_and(|e| e.options.fields().iter().any(|f| f.name == "pe_limit"))
    {
        return Err(setting(
            "until_worn_out",
            format!(
                "`{}` has no endurance model (no pe_limit option); every built-in FTL \
                 has one",
                cfg.ftl
            ),
        ));
    }
    let Resolved {
        geo,
        latencies,
        echo,
        ..
    } = validate(cfg)?;
    // Before any table is allocated: refuse a device whose tables would not fit.
    crate::memory::check(cfg, &geo, packed)?;
    let schemes = match build_schemes(cfg, &geo, latencies) {
        Err(RunError::Scheme(SchemeError::Geometry { scheme, why })) => {
            // Say what works: the least over-provisioning for this device and these options.
            let hint = match least_op(cfg) {
                Ok(op) if op > cfg.op && !why.contains(&format!("{op:.2}")) => {
                    format!(" (the smallest --op that works here: {op:.2})")
                }
                _ => String::new(),
            };
            // Say when initial bad blocks took the blocks that are missing.
            let bad = match bad_blocks(cfg)? {
                Some(map) if map.bad() > 0 => format!(
                    "; {} of the device's {} blocks are initial bad blocks (bad_blocks, \
                     nand_params.bad_block_percent = {}), {} good blocks are left",
                    map.bad(),
                    map.physical,
                    map.percent,
                    map.good.len()
                ),
                _ => String::new(),
            };
            return Err(RunError::Scheme(SchemeError::Geometry {
                scheme,
                why: why + &bad + &hint,
            }));
        }
        r => r?,
    };
    if !cfg.power_loss.is_empty() && !schemes.ftl.recovers() {
        let how = match registry::ftl(&cfg.ftl).map(|e| e.caps.recovery) {
            Some(registry::Recovery::WithOption { option, value }) => {
                format!("; it recovers with ftl_options.{option} = {value}")
            }
            Some(registry::Recovery::Never) => "; it has no recovery procedure".into(),
            _ => String::new(),
        };
        return Err(setting(
            "power_loss",
            format!(
                "the {} FTL cannot recover from a power loss with these options{how}",
                cfg.ftl
            ),
        ));
    }
    let timing: Box<dyn Timing> = match cfg.timing {
        TimingModel::Serial => Box::new(SerialTiming::new(latencies)),
        TimingModel::Parallel => {
            let xfer =
                geo.page_size as f64 / (channel_mib_s(cfg, preset_of(cfg)?) * 1048576.0) * 1e9;
            let model = ParallelTiming::new(
                latencies,
                geo.channels,
                geo.dies_per_channel,
                geo.blocks,
                Nanos(xfer.round() as u64),
            )
            .with_planes(geo.planes_per_die);
            let model = if cfg.channel_backfill {
                model.with_channel_backfill()
            } else {
                model
            };
            let model = if cfg.sub_page_transfers {
                model.with_sub_page_transfers(geo.page_size)
            } else {
                model
            };
            let model = match bad_blocks(cfg)? {
                Some(map) => model.with_block_map(&map.good),
                None => model,
            };
            let model = if cfg.suspend {
                model.with_suspend(
                    Nanos::from_us_f64(cfg.suspend_program_us),
                    Nanos::from_us_f64(cfg.suspend_erase_us),
                )
            } else {
                model
            };
            if cfg.preempt_gc {
                Box::new(model.with_preemptible_gc())
            } else {
                Box::new(model)
            }
        }
    };
    let verify = match cfg.verify {
        VerifyLevel::On => Verify::On,
        VerifyLevel::Off => Verify::Off,
        VerifyLevel::Deep => Verify::Deep {
            every: cfg.deep_every.max(1),
        },
    };
    let engine = Engine::new(
        &geo,
        latencies,
        schemes.ftl,
        schemes.buffer,
        timing,
        EngineConfig {
            verify,
            rmw: cfg.rmw,
            idle: cfg.idle,
            closed_loop: cfg.queue_depth.map(|d| (cfg.queues, d)),
            packed_tags: packed,
        },
    );
    Ok(Prepared {
        geo,
        latencies,
        engine,
        echo,
    })
}

/// The least over-provisioning, from `cfg.op` up in steps of 12.5 percentage points,
/// with which the configured FTL and buffer accept the device: `cfg.op` itself when
/// they do. Schemes refuse what they cannot run on, so asking them is the one source
/// of this figure. Errors that more space does not cure are returned as they are.
pub fn smallest_op(cfg: &Config) -> Result<f64, RunError> {
    let mut c = cfg.clone();
    let mut last = None;
    for step in 0..=32 {
        c.op = cfg.op + 12.5 * step as f64;
        match builds(&c) {
            Ok(()) => return Ok(c.op),
            Err(e @ (RunError::Scheme(_) | RunError::Geometry(_))) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("at least one try"))
}

/// The least over-provisioning, to 0.01 percentage points, at or above `cfg.op` at which
/// the schemes build on the configured device (bisection below [`smallest_op`], on the
/// assumption that more spare blocks never hurt a scheme). For the refusal message.
pub fn least_op(cfg: &Config) -> Result<f64, RunError> {
    let mut hi = smallest_op(cfg)?;
    if hi <= cfg.op {
        return Ok(hi);
    }
    let mut lo = (hi - 12.5).max(cfg.op);
    let mut c = cfg.clone();
    while hi - lo > 0.005 {
        c.op = (lo + hi) / 2.0;
        if builds(&c).is_ok() {
            hi = c.op;
        } else {
            lo = c.op;
        }
    }
    // Two decimals: the hundredth at or below `hi` if it works (the threshold may lie
    // just below it), else the one above, which does (more spare blocks never hurt).
    c.op = (hi * 100.0).floor() / 100.0;
    if c.op >= cfg.op && builds(&c).is_ok() {
        return Ok(c.op);
    }
    c.op = (hi * 100.0).ceil() / 100.0;
    Ok(if builds(&c).is_ok() { c.op } else { hi })
}

/// Whether the device and the schemes of `c` build.
fn builds(c: &Config) -> Result<(), RunError> {
    let preset = preset_of(c)?;
    let geo = geometry(c, preset)?;
    build_schemes(c, &geo, latencies(preset, c)?)?;
    Ok(())
}

/// Requests the configured workload will submit in all (warm-up and measured passes),
/// if known in advance.
pub fn total_requests(cfg: &Config) -> Option<u64> {
    if cfg.until_worn_out {
        return None;
    }
    requests_per_pass(cfg).map(|n| n * (cfg.warmup as u64 + cfg.replay as u64))
}

/// Requests the configured workload will submit per pass, if known in advance.
pub fn requests_per_pass(cfg: &Config) -> Option<u64> {
    let n = match (&cfg.trace, &cfg.mix) {
        (Some(_), _) => return None,
        (None, Some(m)) => m.requests,
        (None, None) => cfg.synthetic.count,
    };
    Some(cfg.limit.map_or(n, |l| l.min(n)))
}

/// Installs (once per process) a panic hook that stays silent for
/// Runs an end-of-run step (a drain, the read-back) that may make the FTL collect
/// garbage: a device that wears out on the way gives the worn-out message; any other
/// panic goes on unwinding.
fn until_worn_out<T>(step: impl FnOnce() -> T) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(step)) {
        Ok(v) => Ok(v),
        Err(p) => match p.downcast_ref::<ftlab_core::ftl::WornOut>() {
            Some(w) => Err(w.0.clone()),
            None => std::panic::resume_unwind(p),
        },
    }
}

/// [`ftlab_core::ftl::WornOut`], the expected end of a device's life (the run reports
/// it), and hands every other panic to the hook that was there before.
fn quiet_worn_out() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info
                .payload()
                .downcast_ref::<ftlab_core::ftl::WornOut>()
                .is_none()
            {
                previous(info);
            }
        }));
    });
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// A simulation, resolved from its configuration and ready to run.
pub struct Simulation {
    cfg: Config,
    prepared: Prepared,
    /// Settings [`imply`] filled in, for the report's notice.
    implied: Vec<&'static str>,
}

/// Fills in settings that another choice implies when the user left them unset, and
/// returns the keys it set (in `key` form, e.g. `ftl_options.osm`).
///
/// - `buffer = "coop"` above `bast` or `fast` turns on `ftl_options.osm`: CO-OP is the
///   buffer *and* the FTL's Optimized Switch Merge ("the proposed scheme consists of a
///   buffer management ... and a modified FTL", co-op-buffer-ftl.txt §3, §5.1.2,
///   §5.2.2); without it the buffer's padded complete-block flushes go through the
///   FTL's ordinary merges. `ftl_options.osm = false` runs the buffer alone.
pub fn imply(cfg: &mut Config) -> Vec<&'static str> {
    let mut set = Vec::new();
    if cfg.buffer == "coop"
        && matches!(cfg.ftl.as_str(), "bast" | "fast")
        && !cfg.ftl_options.contains_key("osm")
    {
        cfg.ftl_options
            .insert("osm".into(), serde_json::Value::Bool(true));
        set.push("ftl_options.osm");
    }
    // Until worn out: the FTL's P/E limit is the preset's rated cycles unless set.
    let declares_limit = registry::ftl(&cfg.ftl)
        .is_some_and(|e| e.options.fields().iter().any(|f| f.name == "pe_limit"));
    let limit_set = cfg
        .ftl_options
        .get("pe_limit")
        .is_some_and(|v| v.as_u64() != Some(0));
    if cfg.until_worn_out && declares_limit && !limit_set {
        if let Some(p) = nand::preset(&cfg.nand) {
            cfg.ftl_options
                .insert("pe_limit".into(), serde_json::Value::from(p.pe_cycles));
            set.push("ftl_options.pe_limit");
        }
    }
    set
}

impl Simulation {
    /// Resolves `cfg`: geometry, preset, schemes and their options, timing, checks and
    /// the workload settings. Every error names the key it is about.
    /// Settings that another choice implies are filled in first ([`imply`]); the
    /// report says which.
    pub fn new(mut cfg: Config) -> Result<Simulation, RunError> {
        let implied = imply(&mut cfg);
        let prepared = prepare_with(&cfg, cfg.power_loss.is_empty())?;
        Ok(Simulation {
            cfg,
            prepared,
            implied,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The device geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.prepared.geo
    }

    /// The resolved configuration as the report echoes it (scheme option defaults and
    /// the device filled in).
    pub fn echo(&self) -> &serde_json::Value {
        &self.prepared.echo
    }

    /// Runs `workload` to its end (or to the first failure) and builds the report.
    /// `Err` only for bad input found on the way (a malformed trace record, a request
    /// beyond the device); what the run finds wrong is in [`RunOutput::failure`].
    pub fn run(
        self,
        workload: Workload,
        observer: &mut dyn Observer,
    ) -> Result<RunOutput, RunError> {
        let Simulation {
            cfg,
            prepared,
            implied,
        } = self;
        let Prepared {
            geo,
            latencies,
            mut engine,
            echo,
        } = prepared;
        let counters = Rc::new(Counters::default());
        let (stream, total, configured): (RecordStream, _, _) = match workload {
            Workload::Configured => (
                workload_stream(&cfg, &geo, &counters)?,
                total_requests(&cfg),
                true,
            ),
            Workload::Requests(it) => (Box::new(it.map(|r| Ok(Record::generated(r)))), None, false),
        };
        if !configured && cfg.precondition == Precondition::Footprint {
            return Err(setting(
                "precondition",
                "`footprint` needs the configured workload (a trace or the generator), \
                 read twice; requests given by the caller are read once",
            ));
        }
        let warmup = if configured { cfg.warmup } else { 0 };
        let mut plan = PowerLossPlan::new(&cfg, &geo)?;
        if !plan.is_empty() || observer.may_lose_power() {
            // Whole tags and exact versions (a planned loss already has them), then
            // the hand-off tracking the stricter checks after a loss need.
            engine.exact_versions();
            engine.track_power_loss();
        }
        let mut st = Loop {
            done: 0,
            sim_time: Nanos(0),
            failure: None,
            total,
            notices: Vec::new(),
            timeline: cfg.timeline.map(Recorder::new),
        };
        quiet_worn_out();
        let looped = catch_unwind(AssertUnwindSafe(|| {
            drive(
                &cfg,
                &geo,
                latencies,
                &mut engine,
                stream,
                warmup,
                &mut plan,
                observer,
                &mut st,
            )
        }));
        let input_error = match looped {
            Ok(r) => r.err(),
            Err(p) => {
                st.failure = Some(match p.downcast_ref::<ftlab_core::ftl::WornOut>() {
                    Some(w) => Failure::WornOut {
                        message: w.0.clone(),
                        request: st.done,
                    },
                    None => Failure::Internal {
                        message: panic_message(p.as_ref()),
                        request: st.done,
                        seed: cfg.seed,
                    },
                });
                None
            }
        };
        if let Some(e) = input_error {
            return Err(e);
        }
        if configured && st.failure.is_none() {
            check_kept(&cfg, &counters)?;
        }
        let requests = st.done;
        let progress = st.progress();
        let mut failure = st.failure;
        let mut notices = st.notices;
        if configured {
            notices.extend(
                workload_notes(&cfg, &counters)
                    .into_iter()
                    .map(|n| Notice::new(n.code, n.message, n.hint)),
            );
        }
        let mut timeline = st.timeline;
        // The report: after a panic the engine may be half-way through a request, so
        // building it is guarded too.
        let built = catch_unwind(AssertUnwindSafe(|| {
            // End of run: the buffer's dirty pages are drained (a device flushes its
            // cache on shutdown) unless `drain = false`; counted either way.
            // The drain and the read-back may make the FTL collect garbage, and so wear
            // the device out (issue 23 item 4): that ends the run as during the workload.
            let drained = if failure.is_none() && cfg.drain {
                if let Some(t) = &mut timeline {
                    t.close_workload(&engine);
                }
                match until_worn_out(|| engine.drain()) {
                    Ok(d) => Some(d),
                    Err(message) => {
                        failure = Some(Failure::WornOut {
                            message,
                            request: requests,
                        });
                        None
                    }
                }
            } else {
                None
            };
            let end = if let Some(d) = drained {
                if let Some(t) = &mut timeline {
                    t.drained(&engine, d.time_ns);
                }
                EndOfRunReport {
                    dirty_pages: d.dirty_pages,
                    drained: true,
                    drain_programs: d.programs,
                    drain_ns: d.time_ns,
                }
            } else {
                EndOfRunReport {
                    dirty_pages: engine.dirty_pages(),
                    ..Default::default()
                }
            };
            observer.progress(&progress);
            observer.snapshot(&progress, &engine);
            let recorded = timeline.map(|t| t.finish(&engine));
            let mut outcome = engine.outcome();
            // Taken with the outcome: the read-back below may still erase (a
            // demand-paged FTL's map writes can collect garbage).
            let erase_counts = engine.flash().erase_counts().to_vec();
            if failure.is_none() {
                match until_worn_out(|| engine.verify_readback()) {
                    Ok(Ok(n)) => outcome.reads_checked += n,
                    Ok(Err(e)) => failure = Some(Failure::Violation(e)),
                    Err(message) => {
                        failure = Some(Failure::WornOut {
                            message,
                            request: requests,
                        })
                    }
                }
            }
            // Until worn out, wearing out is the end the run asked for, not a failure.
            let endurance = match failure.take() {
                Some(Failure::WornOut { message, request }) if cfg.until_worn_out => {
                    let h = &outcome.host;
                    Some(ftlab_report::EnduranceReport {
                        ended_by: "pe_limit",
                        message,
                        request,
                        host_bytes_written: h.bytes_written,
                        tbw: h.bytes_written as f64 / 1e12,
                        days: h.sim_time().0 as f64 / 86_400e9,
                    })
                }
                f => {
                    failure = f;
                    None
                }
            };
            let violations = u64::from(failure.is_some());
            let mut report = ftlab_report::build(
                &outcome,
                Labels {
                    ftl: &cfg.ftl,
                    buffer: &cfg.buffer,
                    latencies,
                    violations,
                    config: echo,
                    erase_counts: &erase_counts,
                },
            );
            report.workload = WorkloadReport {
                source: match (configured, &cfg.trace) {
                    (false, _) => "requests",
                    (true, Some(_)) => "trace",
                    (true, None) => "synthetic",
                }
                .into(),
                path: cfg.trace.clone().filter(|_| configured),
                format: cfg.trace.as_ref().filter(|_| configured).map(|_| {
                    counters
                        .format
                        .borrow()
                        .clone()
                        .unwrap_or_else(|| cfg.format.clone())
                }),
                warmup_passes: warmup,
                measured_passes: if configured { cfg.replay } else { 1 },
                records_per_pass: if configured {
                    counters.records_first_pass.get()
                } else {
                    requests
                },
                requests_submitted: requests,
                skipped_records: counters.skipped_records.get(),
                late_records: counters.late_records.get(),
                records_read: counters.records_read.get(),
                out_of_order_records: counters.out_of_order.get(),
                first_timestamp_ns: counters.first_stamp_ns.get(),
                time_rebased: configured && !cfg.absolute_time,
                span_ns: crate::source::pass_span_ns(&counters),
                devices: counters.devices.borrow().len() as u64,
                host_records: requests.saturating_sub(counters.extra_pieces.get()),
                split_records: counters.split_records.get(),
            };
            report.end_of_run = end;
            report.endurance = endurance;
            report.notices = notices;
            if let Some((timeline, distributions)) = recorded {
                report.timeline = Some(timeline);
                report.distributions = Some(distributions);
            }
            report
                .notices
                .extend(crate::notices::implied(&cfg, &implied));
            report
                .notices
                .extend(crate::notices::end_of_run(&report, &cfg));
            report
        }));
        let report = match built {
            Ok(r) => r,
            Err(p) => {
                let first = failure.map_or(String::new(), |f| format!("{f}; then "));
                return Err(RunError::Internal {
                    message: format!(
                        "{first}building the report panicked: {}",
                        panic_message(p.as_ref())
                    ),
                    seed: cfg.seed,
                });
            }
        };
        Ok(RunOutput {
            report,
            failure,
            requests,
        })
    }
}

struct Loop {
    done: u64,
    sim_time: Nanos,
    failure: Option<Failure>,
    total: Option<u64>,
    /// What the run found that a reader of the report must know, in order.
    notices: Vec<Notice>,
    /// The timeline, when the config asks for one.
    timeline: Option<Recorder>,
}

impl Loop {
    /// The measured phase starts: the engine's counters were just reset.
    fn measuring(&mut self, engine: &Engine, observer: &mut dyn Observer) {
        if let Some(t) = &mut self.timeline {
            t.start(engine);
        }
        observer.measuring(&self.progress());
    }
}

impl Loop {
    fn progress(&self) -> Progress {
        Progress {
            requests: self.done,
            total: self.total,
            sim_time: self.sim_time,
        }
    }
}

/// The request loop. Returns `Err` for bad input only; failures go to `st.failure`.
#[allow(clippy::too_many_arguments)]
fn drive(
    cfg: &Config,
    geo: &Geometry,
    latencies: Latencies,
    engine: &mut Engine,
    stream: RecordStream,
    warmup: u32,
    plan: &mut PowerLossPlan,
    observer: &mut dyn Observer,
    st: &mut Loop,
) -> Result<(), RunError> {
    match cfg.precondition {
        Precondition::None => {}
        Precondition::Fill => engine.precondition_fill(),
        Precondition::Footprint => {
            engine.precondition_pages(&footprint(cfg, geo)?);
        }
    }
    if cfg.precondition != Precondition::None {
        // A device at rest has written back its dirty mapping entries.
        engine.settle();
        engine.reset_measurement();
    }
    let progress_every = observer.progress_every().max(1);
    let snapshot_every = observer.snapshot_every().unwrap_or(u64::MAX).max(1);
    // The next request counts at which the observer hears of progress and gets a
    // snapshot (every multiple of its interval): compared, not divided, per request.
    let next_multiple =
        |done: u64, every: u64| (done / every).saturating_add(1).saturating_mul(every);
    let mut next_progress = next_multiple(st.done, progress_every);
    let mut next_snapshot = next_multiple(st.done, snapshot_every);
    let mut measuring = warmup == 0;
    if measuring {
        st.measuring(engine, observer);
    }
    // Where the armed power cut's second loss strikes in its recovery, if planned.
    let mut recovery_cut = None;
    // Prefetch hints from the read-ahead (the record a few ahead): worth asking only
    // where the engine sees the reader's offsets, unmoved by a layout, shift or fold.
    let hints = cfg.device_layout == DeviceLayout::Shared && cfg.shift_sectors == 0 && !cfg.fold;
    for item in stream {
        let mut rec = item.map_err(|e| name_source(e, cfg))?;
        if hints {
            engine.prefetch(crate::readahead::hint());
        }
        // Closed-loop replay replaces the trace's timestamp by the admission time.
        rec.req.arrival = engine.admit(rec.req.arrival);
        if !measuring && rec.pass >= warmup {
            engine.reset_measurement();
            measuring = true;
            st.measuring(engine, observer);
        }
        if let Some(t) = &mut st.timeline {
            t.before_request(engine, rec.req.arrival);
        }
        // Both asked: the plan advances its time points whatever the observer says.
        let strike = plan.due(st.done + 1, rec.req.arrival);
        let asked = observer.power_loss_now();
        let before = asked || strike.is_some_and(|s| s.inside.is_none());
        if before && !lose_power(cfg, geo, latencies, engine, None, false, observer, st)? {
            break;
        }
        if let Some(k) = strike.and_then(|s| s.inside) {
            engine
                .arm_power_cut(k)
                .map_err(|e| setting("power_loss", e.to_string()))?;
            recovery_cut = strike.and_then(|s| s.recovery);
        }
        st.sim_time = rec.req.arrival;
        match engine.submit(&rec.req) {
            Ok(()) => {}
            Err(SimError::PowerCut { .. }) => {
                let again = recovery_cut.take();
                if !lose_power(cfg, geo, latencies, engine, again, true, observer, st)? {
                    break;
                }
            }
            Err(e @ SimError::OutOfRange { .. }) => return Err(RunError::Input(e)),
            Err(e) => {
                st.failure = Some(Failure::Violation(e));
                break;
            }
        }
        st.done += 1;
        if let Some(t) = &mut st.timeline {
            t.after_request(engine, rec.req.arrival);
        }
        if st.done == next_progress {
            next_progress = next_progress.saturating_add(progress_every);
            observer.progress(&st.progress());
            if observer.stop_requested() {
                return Err(RunError::Cancelled { requests: st.done });
            }
        }
        if st.done == next_snapshot {
            next_snapshot = next_snapshot.saturating_add(snapshot_every);
            observer.snapshot(&st.progress(), engine);
        }
    }
    // A planned cut the run ended before (the drain and read-back are not cut).
    engine.disarm_power_cut();
    if !measuring && st.failure.is_none() {
        engine.reset_measurement();
        st.measuring(engine, observer);
    }
    Ok(())
}

/// A power loss now (`inside` the request `st.done + 1`, or before it): fresh FTL and
/// buffer instances recover from flash (again, as often as a power cut armed at
/// `recovery`, the flash operation of the recovery it strikes inside, cuts it short).
/// Returns whether the run goes on: a failed recovery or a broken invariant right after
/// it is recorded in `st.failure`.
#[allow(clippy::too_many_arguments)]
fn lose_power(
    cfg: &Config,
    geo: &Geometry,
    latencies: Latencies,
    engine: &mut Engine,
    recovery: Option<u64>,
    inside: bool,
    observer: &mut dyn Observer,
    st: &mut Loop,
) -> Result<bool, RunError> {
    if let Some(k) = recovery {
        engine
            .arm_power_cut(k)
            .map_err(|e| setting("power_loss", e.to_string()))?;
    }
    loop {
        let s = build_schemes(cfg, geo, latencies)?;
        match engine.power_loss(s.ftl, s.buffer) {
            Ok(_) => break,
            // The power failed again inside the recovery: recover once more.
            Err(RecoverError::PowerCut(_)) => continue,
            Err(why) => {
                st.failure = Some(Failure::Recovery {
                    ftl: cfg.ftl.clone(),
                    request: st.done + 1,
                    inside,
                    why,
                });
                if let Some(t) = &mut st.timeline {
                    t.power_loss(engine, st.sim_time, false);
                }
                observer.power_loss(&st.progress(), false);
                return Ok(false);
            }
        }
    }
    if let Some(t) = &mut st.timeline {
        t.power_loss(engine, st.sim_time, true);
    }
    observer.power_loss(&st.progress(), true);
    // Under deep verification the rebuilt state must be consistent at once.
    if cfg.verify == VerifyLevel::Deep {
        if let Err(e) = engine.check_deep() {
            st.failure = Some(Failure::Violation(e));
            return Ok(false);
        }
    }
    Ok(true)
}

/// The pages one pass of the configured workload reads or writes, one bit per logical
/// page (LPN `n` at bit `n % 64` of word `n / 64`), for `precondition = "footprint"`.
/// Reads the workload once more, through the same transforms; requests beyond the
/// capacity are left to the run to refuse.
fn footprint(cfg: &Config, geo: &Geometry) -> Result<Vec<u64>, RunError> {
    use ftlab_core::request::Op;
    let one = Config {
        warmup: 0,
        replay: 1,
        ..cfg.clone()
    };
    let counters = Rc::new(Counters::default());
    let n = geo.logical_pages as u64;
    let ps = geo.page_size as u64;
    let mut bits = vec![0u64; n.div_ceil(64) as usize];
    for item in workload_stream(&one, geo, &counters)? {
        let rec = item.map_err(|e| name_source(e, cfg))?;
        let r = &rec.req;
        if !matches!(r.op, Op::Read | Op::Write) || r.len == 0 {
            continue;
        }
        let first = r.offset / ps;
        let end = r.offset.saturating_add(r.len).div_ceil(ps).min(n);
        for l in first..end {
            bits[(l / 64) as usize] |= 1 << (l % 64);
        }
    }
    Ok(bits)
}

/// Runs `cfg` with its configured workload: [`Simulation::new`] then
/// [`Simulation::run`].
pub fn run(cfg: &Config, observer: &mut dyn Observer) -> Result<RunOutput, RunError> {
    Simulation::new(cfg.clone())?.run(Workload::Configured, observer)
}
