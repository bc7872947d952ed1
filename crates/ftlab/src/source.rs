//! The workload of a run: the trace or generator its configuration names, every pass
//! through the per-pass transforms, then the fold.

use crate::config::{Config, DeviceLayout, FoldMode};
use crate::error::{setting, RunError};
use ftlab_core::geometry::Geometry;
use ftlab_core::Nanos;
use ftlab_workload::mix::Mix;
use ftlab_workload::synthetic::Synthetic;
use ftlab_workload::transform::{
    self, Counters, FoldCompact, FoldModulo, Layout, Replay, TransformSpec,
};
use ftlab_workload::{open_records, Record, RecordStream, TraceError};
use std::path::Path;
use std::rc::Rc;

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
    let layout = match cfg.device_layout {
        DeviceLayout::Shared => Layout::Shared,
        DeviceLayout::SideBySide => Layout::SideBySide,
    };
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

/// Checks the workload settings of `cfg` for `geo`; the error names the key.
pub fn validate_workload(cfg: &Config, geo: &Geometry) -> Result<(), RunError> {
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
            Some(transform::DeviceLayout::scan(
                raw,
                block_bytes,
                spec.skip_bad,
            )?)
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
    Ok(match (cfg.fold, cfg.fold_mode) {
        (false, _) => all,
        (true, FoldMode::Compact) => Box::new(FoldCompact::new(all, capacity, block_bytes)),
        (true, FoldMode::Modulo) => Box::new(FoldModulo::new(all, capacity, geo.page_size as u64)),
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
