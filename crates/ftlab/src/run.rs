//! Runs one simulation from a [`Config`]: builds the geometry, the schemes and the
//! engine from the registry, streams the workload through its transforms and through
//! the engine (warm-up passes first, then the measured ones), and builds the report.

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
use ftlab_report::{Labels, Report, WorkloadReport};
use ftlab_workload::synthetic::Synthetic;
use ftlab_workload::transform::{
    self, Counters, DeviceLayout, FoldCompact, FoldModulo, Layout, Replay, TransformSpec,
};
use ftlab_workload::{open_records, Record, RecordStream, RequestStream, TraceError};
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
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

fn geometry(cfg: &Config, preset: &NandPreset) -> Result<Geometry, RunError> {
    let logical_bytes = parse_size(&cfg.capacity).map_err(|e| setting("capacity", e))?;
    let n = &cfg.nand_params;
    Ok(GeometryBuilder {
        page_size: n.page_size.unwrap_or(preset.page_size),
        pages_per_block: n.pages_per_block.unwrap_or(preset.pages_per_block),
        spare_bytes: n.spare_bytes.unwrap_or(preset.spare_bytes),
        logical_bytes,
        op_percent: cfg.op,
        channels: cfg.channels,
        dies_per_channel: cfg.dies,
        min_spare_blocks: 0,
    }
    .build()?)
}

/// The device geometry of a config, without building any scheme.
pub fn device_geometry(cfg: &Config) -> Result<Geometry, RunError> {
    geometry(cfg, preset_of(cfg)?)
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
    let preset = preset_of(cfg)?;
    let geo = geometry(cfg, preset)?;
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
    validate_workload(cfg, &geo)?;
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

/// The reader settings of the config.
pub fn read_options(cfg: &Config) -> ftlab_workload::ReadOptions {
    ftlab_workload::ReadOptions {
        csv: cfg.csv.clone(),
        blkparse: cfg.blkparse.clone(),
    }
}

fn seconds(key: &'static str, v: Option<f64>, per_s: f64) -> Result<Option<Nanos>, RunError> {
    match v {
        None => Ok(None),
        Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(Nanos((x * per_s).round() as u64))),
        Some(x) => Err(setting(key, format!("{x} is not a time of 0 or more"))),
    }
}

/// The per-pass transforms of the config.
pub fn transform_spec(cfg: &Config) -> Result<TransformSpec, RunError> {
    let layout = Layout::parse(&cfg.device_layout).ok_or_else(|| {
        setting(
            "device_layout",
            format!("`{}` is not shared or side_by_side", cfg.device_layout),
        )
    })?;
    let spec = TransformSpec {
        devices: cfg.devices.clone(),
        layout,
        shift_sectors: cfg.shift_sectors,
        max_gap: seconds("max_gap_ms", cfg.max_gap_ms, 1e6)?,
        time_scale: cfg.time_scale,
        window: (
            seconds("window_start_s", cfg.window_start_s, 1e9)?,
            seconds("window_end_s", cfg.window_end_s, 1e9)?,
        ),
        limit: cfg.limit,
        sort_window: cfg.sort_window as usize,
        skip_bad: cfg.skip_bad,
        flush_every: cfg.flush_every,
    };
    spec.validate().map_err(|e| setting("transforms", e))?;
    Ok(spec)
}

fn validate_workload(cfg: &Config, geo: &Geometry) -> Result<(), RunError> {
    match &cfg.trace {
        Some(_) => ftlab_workload::check_format(&cfg.format, &read_options(cfg))
            .map_err(|e| setting("format", e))?,
        None if cfg.mix.is_some() => {
            let mix = cfg.mix.as_ref().expect("checked");
            mix.validate().map_err(|e| setting("mix", e))?
        }
        None => cfg
            .synthetic
            .validate(geo.logical_bytes())
            .map_err(|e| setting("synthetic", e))?,
    }
    transform_spec(cfg)?;
    if !matches!(cfg.fold_mode.as_str(), "modulo" | "compact") {
        return Err(setting(
            "fold_mode",
            format!("`{}` is not modulo or compact", cfg.fold_mode),
        ));
    }
    if cfg.replay == 0 {
        return Err(setting("replay", "must be at least 1 measured pass"));
    }
    Ok(())
}

/// Opens one untransformed pass of the configured workload (the trace, or the
/// synthetic generator with the run's seed: every pass replays the same requests).
pub fn open_source(cfg: &Config, geo: &Geometry) -> Result<RecordStream, RunError> {
    match &cfg.trace {
        Some(path) => Ok(open_records(
            Path::new(path),
            &cfg.format,
            &read_options(cfg),
        )?),
        None if cfg.mix.is_some() => {
            let mix = cfg.mix.as_ref().expect("checked");
            let g = Mix::new(
                mix,
                cfg.seed,
                geo.logical_pages as u64,
                geo.page_size as u64,
            );
            Ok(Box::new(g.map(|r| Ok(Record::generated(r)))))
        }
        None => {
            let g = Synthetic::new(
                &cfg.synthetic,
                geo.logical_bytes(),
                geo.page_size as u64,
                cfg.seed,
            );
            Ok(Box::new(g.map(|r| Ok(Record::generated(r)))))
        }
    }
}

/// Opens one pass of the configured workload as plain requests, untransformed.
pub fn open_workload(cfg: &Config, geo: &Geometry, pass: u32) -> Result<RequestStream, RunError> {
    let _ = pass;
    Ok(Box::new(open_source(cfg, geo)?.map(|r| r.map(|r| r.req))))
}

/// The whole workload as the engine sees it: every pass (warm-up ones first, numbered
/// in [`Record::pass`]) through the per-pass transforms, then the fold. `counters`
/// collects what the report says about the workload.
pub fn workload_stream(
    cfg: &Config,
    geo: &Geometry,
    counters: &Rc<Counters>,
) -> Result<RecordStream, RunError> {
    let spec = transform_spec(cfg)?;
    let block_bytes = geo.page_size as u64 * geo.pages_per_block as u64;
    let layout = match spec.layout {
        Layout::Shared => None,
        Layout::SideBySide => {
            let mut raw = open_source(cfg, geo)?;
            if !spec.devices.is_empty() {
                raw = Box::new(transform::SelectDevices::new(raw, &spec.devices));
            }
            Some(DeviceLayout::scan(raw, block_bytes, spec.skip_bad)?)
        }
    };
    let (cfg_pass, geo_pass, counters_pass) = (cfg.clone(), geo.clone(), counters.clone());
    let open: transform::OpenPass = Box::new(move |pass| {
        let raw = open_source(&cfg_pass, &geo_pass).map_err(|e| match e {
            RunError::Trace(t) => t,
            other => TraceError {
                file: cfg_pass.trace.clone().unwrap_or_default(),
                line: 0,
                field: "workload",
                why: other.to_string(),
            },
        })?;
        Ok(transform::per_pass(
            raw,
            &spec,
            layout.as_ref(),
            &counters_pass,
            pass == 0,
        ))
    });
    let passes = cfg.warmup.saturating_add(cfg.replay);
    let all: RecordStream = Box::new(Replay::new(open, passes));
    let capacity = geo.logical_bytes();
    Ok(match (cfg.fold, cfg.fold_mode.as_str()) {
        (false, _) => all,
        (true, "compact") => Box::new(FoldCompact::new(all, capacity, block_bytes)),
        (true, _) => Box::new(FoldModulo::new(all, capacity, geo.page_size as u64)),
    })
}

/// Errors raised by a transform name the transform in place of a file; prefix the
/// trace they came from.
pub fn name_source(mut e: TraceError, cfg: &Config) -> TraceError {
    if e.file.starts_with('(') {
        let src = cfg.trace.as_deref().unwrap_or("synthetic workload");
        e.file = format!("{src} {}", e.file);
    }
    e
}

/// Folds a request into the capacity (modulo), keeping it whole.
pub fn fold(req: &mut Request, capacity: u64, page_size: u64) {
    transform::fold_modulo(req, capacity, page_size);
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
    let counters = Rc::new(Counters::default());
    let mut plan = PowerLossPlan::new(cfg, &geo)?;
    let mut done = 0u64;
    let mut failure = None;
    let mut measuring = cfg.warmup == 0;
    for item in workload_stream(cfg, &geo, &counters)? {
        let rec = item.map_err(|e| name_source(e, cfg))?;
        if !measuring && rec.pass >= cfg.warmup {
            engine.reset_measurement();
            measuring = true;
        }
        if plan.due(done + 1, rec.req.arrival) {
            let (ftl, buffer, _, _) = build_schemes(cfg, &geo, latencies)?;
            engine
                .power_loss(ftl, buffer)
                .map_err(|why| RunError::Recovery {
                    ftl: cfg.ftl.clone(),
                    why,
                })?;
            // Under deep verification the rebuilt state must be consistent at once.
            if cfg.verify == "deep" {
                if let Err(e) = engine.check_deep() {
                    failure = Some(e);
                    break;
                }
            }
        }
        match engine.submit(&rec.req) {
            Ok(()) => {}
            Err(e @ SimError::OutOfRange { .. }) => return Err(RunError::Input(e)),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        done += 1;
        if done.is_multiple_of(4096) {
            progress(done);
        }
    }
    if !measuring && failure.is_none() {
        engine.reset_measurement();
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
    let mut report = ftlab_report::build(
        &outcome,
        Labels {
            ftl: &cfg.ftl,
            buffer: &cfg.buffer,
            latencies,
            violations,
            config: echo,
        },
    );
    report.workload = WorkloadReport {
        source: if cfg.trace.is_some() {
            "trace"
        } else {
            "synthetic"
        }
        .into(),
        path: cfg.trace.clone(),
        format: cfg.trace.as_ref().map(|_| cfg.format.clone()),
        warmup_passes: cfg.warmup,
        measured_passes: cfg.replay,
        records_per_pass: counters.records_first_pass.get(),
        requests_submitted: done,
        skipped_records: counters.skipped_records.get(),
        late_records: counters.late_records.get(),
    };
    Ok(RunOutput {
        report,
        failure,
        requests: done,
    })
}
