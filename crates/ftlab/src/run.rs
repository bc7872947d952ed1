//! Runs one simulation from a [`Config`]: builds the geometry, the schemes and the
//! engine from the registry, streams the workload through it (warm-up passes first),
//! and builds the report.

use crate::config::{option_text, Config};
use crate::powerloss::PowerLossPlan;
use crate::registry::{self, BuildContext};
use crate::testkit::Mix;
use ftlab_core::buffer::Buffer;
use ftlab_core::engine::{Engine, EngineConfig, SimError, Verify};
use ftlab_core::ftl::Ftl;
use ftlab_core::geometry::{Geometry, GeometryBuilder, GeometryError};
use ftlab_core::nand::{self, Latencies, NandPreset};
use ftlab_core::options::{SchemeError, SchemeOptions};
use ftlab_core::request::Request;
use ftlab_core::timing::{ParallelTiming, SerialTiming, Timing};
use ftlab_core::units::parse_size;
use ftlab_core::Nanos;
use ftlab_report::{Labels, Report};
use ftlab_workload::synthetic::Synthetic;
use ftlab_workload::{open_trace, RequestStream, TraceError};
use std::collections::BTreeMap;
use std::path::Path;
use thiserror::Error;

/// Why a run could not start or could not finish.
#[derive(Debug, Error)]
pub enum RunError {
    /// A setting is invalid; names the key.
    #[error("invalid setting `{key}`: {why}")]
    Setting {
        /// Config key (and flag).
        key: &'static str,
        /// What is wrong.
        why: String,
    },
    /// Geometry refused.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// A scheme refused its options or the geometry.
    #[error(transparent)]
    Scheme(#[from] SchemeError),
    /// The trace is unreadable or malformed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The FTL cannot recover from the power loss the config asks for.
    #[error("--power-loss-at: {ftl}: {why}")]
    Recovery {
        /// FTL id.
        ftl: String,
        /// Why (unsupported, or recovery failed).
        why: ftlab_core::ftl::RecoverError,
    },
    /// The simulation stopped on bad input (a request out of range).
    #[error(transparent)]
    Input(SimError),
}

/// The result of a run that got to the end, or stopped on a correctness failure.
pub struct RunOutput {
    /// The report (up to the failure, if any).
    pub report: Report,
    /// A data-loss violation or broken invariant, if one stopped the run.
    pub failure: Option<SimError>,
    /// Requests simulated (all passes).
    pub requests: u64,
}

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

/// An error about config key `key`.
pub fn setting(key: &'static str, why: impl Into<String>) -> RunError {
    RunError::Setting {
        key,
        why: why.into(),
    }
}

fn scheme_options(
    scheme: &str,
    specs: &[ftlab_core::options::OptionSpec],
    given: &BTreeMap<String, toml::Value>,
) -> Result<SchemeOptions, SchemeError> {
    let given: BTreeMap<String, String> = given
        .iter()
        .map(|(k, v)| (k.clone(), option_text(v)))
        .collect();
    SchemeOptions::resolve(scheme, specs, &given)
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

/// Fresh FTL and buffer instances with their resolved options.
pub type Schemes = (Box<dyn Ftl>, Box<dyn Buffer>, SchemeOptions, SchemeOptions);

/// The FTL and buffer instances a config names (fresh ones, as at the start of a run
/// or after a power loss), with their resolved options.
pub fn build_schemes(
    cfg: &Config,
    geo: &Geometry,
    latencies: Latencies,
) -> Result<Schemes, RunError> {
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
    let ftl_opts = scheme_options(ftl_entry.id, ftl_entry.options, &cfg.ftl_options)?;
    let buf_opts = scheme_options(buf_entry.id, buf_entry.options, &cfg.buffer_options)?;
    let ctx = |opts| BuildContext {
        geo,
        latencies,
        seed: cfg.seed,
        opts,
    };
    let ftl = (ftl_entry.build)(&ctx(&ftl_opts))?;
    let buffer = (buf_entry.build)(&ctx(&buf_opts))?;
    Ok((ftl, buffer, ftl_opts, buf_opts))
}

/// Resolves a config into a ready engine.
pub fn prepare(cfg: &Config) -> Result<Prepared, RunError> {
    let preset = nand::preset(&cfg.nand).ok_or_else(|| {
        let ids: Vec<&str> = nand::PRESETS.iter().map(|p| p.id).collect();
        setting(
            "nand",
            format!(
                "unknown NAND preset `{}` (known: {})",
                cfg.nand,
                ids.join(", ")
            ),
        )
    })?;
    let logical_bytes = parse_size(&cfg.capacity).map_err(|e| setting("capacity", e))?;
    let n = &cfg.nand_params;
    let geo = GeometryBuilder {
        page_size: n.page_size.unwrap_or(preset.page_size),
        pages_per_block: n.pages_per_block.unwrap_or(preset.pages_per_block),
        spare_bytes: n.spare_bytes.unwrap_or(preset.spare_bytes),
        logical_bytes,
        op_percent: cfg.op,
        channels: cfg.channels,
        dies_per_channel: cfg.dies,
        min_spare_blocks: 0,
    }
    .build()?;
    let latencies = latencies(preset, cfg)?;
    let (ftl, buffer, ftl_opts, buf_opts) = build_schemes(cfg, &geo, latencies)?;
    let timing: Box<dyn Timing> = match cfg.timing.as_str() {
        "serial" => Box::new(SerialTiming::new(latencies)),
        "parallel" => {
            if !(cfg.channel_mib_s.is_finite() && cfg.channel_mib_s > 0.0) {
                return Err(setting("channel_mib_s", "must be a positive bandwidth"));
            }
            let xfer = geo.page_size as f64 / (cfg.channel_mib_s * 1048576.0) * 1e9;
            Box::new(ParallelTiming::new(
                latencies,
                geo.channels,
                geo.dies_per_channel,
                Nanos(xfer.round() as u64),
            ))
        }
        other => {
            return Err(setting(
                "timing",
                format!("unknown timing model `{other}` (known: serial, parallel)"),
            ))
        }
    };
    let verify = match cfg.verify.as_str() {
        "on" => Verify::On,
        "off" => Verify::Off,
        "deep" => Verify::Deep {
            every: cfg.deep_every.max(1),
        },
        other => {
            return Err(setting(
                "verify",
                format!("`{other}` is not on, off or deep"),
            ))
        }
    };
    if !matches!(cfg.precondition.as_str(), "none" | "fill") {
        return Err(setting(
            "precondition",
            format!("`{}` is not none or fill", cfg.precondition),
        ));
    }
    if let (None, Some(mix)) = (&cfg.trace, &cfg.mix) {
        mix.validate().map_err(|e| setting("mix", e))?;
    } else if cfg.trace.is_none() {
        cfg.synthetic
            .validate(geo.logical_bytes())
            .map_err(|e| setting("synthetic", e))?;
    }
    let engine = Engine::new(
        &geo,
        latencies,
        ftl,
        buffer,
        timing,
        EngineConfig {
            verify,
            rmw: cfg.rmw,
            idle: cfg.idle,
        },
    );
    let echo = echo(cfg, &geo, &latencies, &ftl_opts, &buf_opts);
    Ok(Prepared {
        geo,
        latencies,
        engine,
        echo,
    })
}

fn echo(
    cfg: &Config,
    geo: &Geometry,
    lat: &Latencies,
    ftl_opts: &SchemeOptions,
    buf_opts: &SchemeOptions,
) -> serde_json::Value {
    let mut v = serde_json::to_value(cfg).expect("config serialises");
    let obj = v.as_object_mut().expect("config is an object");
    obj.insert(
        "ftl_options".into(),
        serde_json::to_value(ftl_opts.values()).expect("map"),
    );
    obj.insert(
        "buffer_options".into(),
        serde_json::to_value(buf_opts.values()).expect("map"),
    );
    obj.insert(
        "device".into(),
        serde_json::json!({ "geometry": geo, "latencies_ns": lat }),
    );
    v
}

/// Opens one pass of the configured workload.
pub fn open_workload(cfg: &Config, geo: &Geometry, pass: u32) -> Result<RequestStream, RunError> {
    match &cfg.trace {
        Some(path) => Ok(open_trace(Path::new(path), &cfg.format)?),
        None if cfg.mix.is_some() => {
            let mix = cfg.mix.as_ref().expect("checked");
            let g = Mix::new(
                mix,
                cfg.seed,
                geo.logical_pages as u64,
                geo.page_size as u64,
            );
            Ok(Box::new(g.map(Ok)))
        }
        None => {
            // Every pass replays the same requests: the seed does not depend on `pass`.
            let _ = pass;
            let g = Synthetic::new(
                &cfg.synthetic,
                geo.logical_bytes(),
                geo.page_size as u64,
                cfg.seed,
            );
            Ok(Box::new(g.map(Ok)))
        }
    }
}

/// Folds a request into the capacity (modulo), keeping it whole.
pub fn fold(req: &mut Request, capacity: u64, page_size: u64) {
    if req.offset.saturating_add(req.len) <= capacity || req.len > capacity {
        return;
    }
    req.offset %= capacity;
    if req.offset + req.len > capacity {
        req.offset = (capacity - req.len) / page_size * page_size;
    }
}

/// Requests the configured workload will submit per pass, if known in advance.
pub fn requests_per_pass(cfg: &Config) -> Option<u64> {
    match (&cfg.trace, &cfg.mix) {
        (Some(_), _) => None,
        (None, Some(m)) => Some(m.requests),
        (None, None) => Some(cfg.synthetic.count),
    }
}

/// Runs the whole simulation. `progress` is called with the number of requests done
/// every 4096 requests and at the end.
pub fn run(cfg: &Config, progress: &mut dyn FnMut(u64)) -> Result<RunOutput, RunError> {
    let Prepared {
        geo,
        latencies,
        mut engine,
        echo,
    } = prepare(cfg)?;
    if cfg.precondition == "fill" {
        engine.precondition_fill();
        engine.reset_measurement();
    }
    let capacity = geo.logical_bytes();
    let mut plan = PowerLossPlan::new(cfg, &geo)?;
    let mut done = 0u64;
    let mut failure = None;
    'passes: for pass in 0..=cfg.warmup {
        if pass == cfg.warmup && pass > 0 {
            engine.reset_measurement();
        }
        for item in open_workload(cfg, &geo, pass)? {
            let mut req = item?;
            if cfg.fold {
                fold(&mut req, capacity, geo.page_size as u64);
            }
            if plan.due(done + 1, req.arrival) {
                let (ftl, buffer, _, _) = build_schemes(cfg, &geo, latencies)?;
                engine
                    .power_loss(ftl, buffer)
                    .map_err(|why| RunError::Recovery {
                        ftl: cfg.ftl.clone(),
                        why,
                    })?;
            }
            match engine.submit(&req) {
                Ok(()) => {}
                Err(e @ SimError::OutOfRange { .. }) => return Err(RunError::Input(e)),
                Err(e) => {
                    failure = Some(e);
                    break 'passes;
                }
            }
            done += 1;
            if done.is_multiple_of(4096) {
                progress(done);
            }
        }
    }
    progress(done);
    let outcome = engine.outcome();
    let mut reads_checked = outcome.reads_checked;
    if failure.is_none() {
        match engine.verify_readback() {
            Ok(n) => reads_checked += n,
            Err(e) => failure = Some(e),
        }
    }
    let mut outcome = outcome;
    outcome.reads_checked = reads_checked;
    let violations = u64::from(failure.is_some());
    let report = ftlab_report::build(
        &outcome,
        Labels {
            ftl: &cfg.ftl,
            buffer: &cfg.buffer,
            latencies,
            violations,
            config: echo,
        },
    );
    Ok(RunOutput {
        report,
        failure,
        requests: done,
    })
}
