//! The workload of a run: the trace or generator its configuration names, every pass
//! through the per-pass transforms, then the fold; and what the run must tell about it
//! (notices: the format `auto` chose, records out of time order, devices sharing one
//! address space, records split by the fold) or refuse (a workload that kept nothing, or
//! too little, of the trace).

use crate::config::{Config, DeviceLayout, FoldMode};
use crate::error::{setting, RunError};
use ftlab_core::geometry::Geometry;
use ftlab_core::Nanos;
use ftlab_workload::mix::Mix;
use ftlab_workload::sniff::Note;
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
        // Generated workloads arrive in order: the window would only cost time.
        sort_window: if cfg.trace.is_some() {
            cfg.sort_window as usize
        } else {
            0
        },
        skip_bad: cfg.skip_bad,
        flush_every: cfg.flush_every,
        // Generated workloads start at time 0 already: rebasing them would only cost
        // time (a boxed layer per request, measured at +6% instructions on page mapping).
        rebase: !cfg.absolute_time && cfg.trace.is_some(),
    };
    spec.validate().map_err(|e| setting("transforms", e))?;
    Ok(spec)
}

/// Checks the workload settings of `cfg` for `geo`; the error names the key.
pub fn validate_workload(cfg: &Config, geo: &Geometry) -> Result<(), RunError> {
    match &cfg.trace {
        Some(_) => ftlab_workload::check_format(&cfg.format, &read_options(cfg)).map_err(|e| {
            // A reader setting names its own key and flag; the format itself is `format`.
            if e.starts_with("csv") {
                setting("csv", e)
            } else if e.starts_with("blkparse") {
                setting("blkparse", e)
            } else {
                setting("format", e)
            }
        })?,
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
    if !(0.0..=1.0).contains(&cfg.max_dropped_share) {
        return Err(setting(
            "max_dropped_share",
            format!("{} is not a share between 0 and 1", cfg.max_dropped_share),
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
    open_in(cfg, geo, &cfg.format)
}

/// One pass of the configured workload, read ahead on its own thread
/// ([`crate::readahead`]) unless read-ahead is off.
fn open_in(cfg: &Config, geo: &Geometry, format: &str) -> Result<RecordStream, RunError> {
    let (cfg, geo, format) = (cfg.clone(), geo.clone(), format.to_string());
    crate::readahead::open(move || open_here(&cfg, &geo, &format))
}

fn open_here(cfg: &Config, geo: &Geometry, format: &str) -> Result<RecordStream, RunError> {
    match &cfg.trace {
        Some(path) => Ok(open_records(Path::new(path), format, &read_options(cfg))?),
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
    // The format (`auto` resolved once) and what the first bytes say.
    let format = match &cfg.trace {
        Some(path) => {
            let seen = ftlab_workload::inspect(Path::new(path), &cfg.format)?;
            counters.notes.borrow_mut().extend(seen.notes);
            seen.format
        }
        None => cfg.format.clone(),
    };
    *counters.format.borrow_mut() = Some(format.clone());
    let layout = match spec.layout {
        Layout::Shared => None,
        Layout::SideBySide => {
            let mut raw = open_in(cfg, geo, &format)?;
            if !spec.devices.is_empty() {
                raw = Box::new(transform::SelectDevices::new(raw, &spec.devices));
            }
            let layout = transform::DeviceLayout::scan(raw, block_bytes, spec.skip_bad)?;
            let need = layout.total_bytes();
            if !cfg.fold && need > geo.logical_bytes() {
                let largest = layout.regions.values().map(|r| r.1).max().unwrap_or(0);
                return Err(setting(
                    "device_layout",
                    format!(
                        "side_by_side lays {} devices one after the other in {} ({} bytes; the \
                         largest device spans {}), more than the capacity of {}: give \
                         --capacity {}MiB or more, --fold to fold the regions into the \
                         capacity, or --device to replay fewer devices",
                        layout.regions.len(),
                        ftlab_core::units::format_size(need),
                        need,
                        ftlab_core::units::format_size(largest),
                        ftlab_core::units::format_size(geo.logical_bytes()),
                        need.div_ceil(1 << 20),
                    ),
                ));
            }
            Some(layout)
        }
    };
    let (cfg_pass, geo_pass, counters_pass) = (cfg.clone(), geo.clone(), counters.clone());
    let open: transform::OpenPass = Box::new(move |pass| {
        let raw = open_in(&cfg_pass, &geo_pass, &format).map_err(|e| match e {
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
    let passes = if cfg.until_worn_out {
        u32::MAX
    } else {
        cfg.warmup.saturating_add(cfg.replay)
    };
    let all: RecordStream = Box::new(Replay::new(open, passes));
    let capacity = geo.logical_bytes();
    Ok(match (cfg.fold, cfg.fold_mode) {
        (false, _) => all,
        (true, FoldMode::Compact) => {
            Box::new(FoldCompact::new(all, capacity, block_bytes).counting(counters.clone()))
        }
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

/// What the run must tell about its workload, from what the transforms counted: the
/// opener's notes (the format `auto` chose, a shape that does not fit the format),
/// records out of time order, several devices in one address space, records the fold
/// split.
pub fn workload_notes(cfg: &Config, counters: &Counters) -> Vec<Note> {
    let mut out: Vec<Note> = counters.notes.borrow().clone();
    let ooo = counters.out_of_order.get();
    let late = counters.late_records.get();
    if ooo > 0 && cfg.sort_window <= 1 {
        out.push(Note {
            code: "out_of_order",
            message: format!(
                "{ooo} of {} records arrive before the record preceding them and were \
                 replayed as stamped (time steps back; the sort window is off)",
                counters.records_read.get()
            ),
            hint: Some("--sort-window 4096 (the default) replays them in time order".into()),
        });
    } else if late > 0 {
        out.push(Note {
            code: "out_of_order",
            message: format!(
                "{late} records left the sort window of {} records after a later one had \
                 (the trace has {ooo} records out of order, some by more than the window) \
                 and were replayed at the time of the record before them",
                cfg.sort_window
            ),
            hint: Some(format!(
                "a larger --sort-window (e.g. {}) puts them in order",
                (cfg.sort_window as u64 * 16).min(1 << 24)
            )),
        });
    }
    let devices = counters.devices.borrow();
    if cfg.trace.is_some() && devices.len() > 1 && cfg.device_layout == DeviceLayout::Shared {
        let mut busiest: Vec<(&u32, &u64)> = devices.iter().collect();
        busiest.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = busiest
            .iter()
            .take(3)
            .map(|(d, n)| format!("{d}: {n}"))
            .collect();
        out.push(Note {
            code: "devices_share_space",
            message: format!(
                "{} devices of the trace share one address space (device_layout = shared): \
                 their offsets overlap as if they were one disk (busiest {})",
                devices.len(),
                top.join(", ")
            ),
            hint: Some(
                "--device-layout side_by_side gives each device its own region; --device N \
                 replays one"
                    .into(),
            ),
        });
    }
    let split = counters.split_records.get();
    if split > 0 {
        out.push(Note {
            code: "records_split",
            message: format!(
                "the compact fold split {split} of the trace's records into {} pieces, so the \
                 engine got {} more requests than the trace has records: host.requests counts \
                 the pieces, workload.host_records the records",
                split + counters.extra_pieces.get(),
                counters.extra_pieces.get()
            ),
            hint: None,
        });
    }
    out
}

/// Refuses a run that kept no record of the trace, or dropped more than
/// `max_dropped_share` of its records through the device selection, the time window and
/// skipped bad records, with what the trace holds (a second read, on this error path
/// only).
pub fn check_kept(cfg: &Config, counters: &Counters) -> Result<(), RunError> {
    let Some(path) = &cfg.trace else {
        return Ok(());
    };
    let kept = counters.records_first_pass.get();
    let skipped = counters.skipped_records.get();
    // Each filter's keep ratio over the records it saw itself, so neither --limit nor
    // the sort window's read-ahead changes the share.
    let ratio = |(seen, kept): (u64, u64)| {
        if seen == 0 {
            1.0
        } else {
            kept as f64 / seen as f64
        }
    };
    let good = counters.records_read.get();
    // A window cut short by --limit saw all it drops (the records before it) but only
    // part of what it keeps: its ratio would overstate the drop.
    let limited = cfg.limit.is_some_and(|l| kept >= l);
    let window = if limited {
        (0, 0)
    } else {
        counters.window_filter.get()
    };
    let stages = [
        ("bad records", (good + counters.errors_read.get(), good)),
        ("--device", counters.device_filter.get()),
        ("the time window", window),
    ];
    let keep: f64 = stages.iter().map(|(_, s)| ratio(*s)).product();
    let share = 1.0 - keep;
    if kept > 0 && share <= cfg.max_dropped_share {
        return Ok(());
    }
    let kept_by: Vec<String> = stages
        .iter()
        .filter(|(_, (seen, kept))| seen > kept)
        .map(|(what, (seen, kept))| match *what {
            "bad records" => format!("{} of {seen} records were bad", seen - kept),
            _ => format!("{what} kept {kept} of {seen}"),
        })
        .collect();
    let format = counters
        .format
        .borrow()
        .clone()
        .unwrap_or_else(|| cfg.format.clone());
    let mut what = Vec::new();
    if !cfg.devices.is_empty() {
        what.push(format!(
            "--device {}",
            cfg.devices
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    if cfg.window_start_s.is_some() || cfg.window_end_s.is_some() {
        what.push(format!(
            "the time window [{}, {}) s{}",
            cfg.window_start_s.map_or("0".into(), |s| s.to_string()),
            cfg.window_end_s.map_or("end".into(), |s| s.to_string()),
            if cfg.absolute_time {
                " (absolute times)"
            } else {
                " (from the first record)"
            }
        ));
    }
    if format == "blkparse" {
        what.push(format!("--blkparse-event {}", cfg.blkparse.event));
    }
    if format == "csv" && cfg.csv.filter_column.is_some() {
        what.push(format!("csv.filter_values {:?}", cfg.csv.filter_values));
    }
    if skipped > 0 {
        what.push(format!("--skip-bad ({skipped} bad records skipped)"));
    }
    let filters = if what.is_empty() {
        String::new()
    } else {
        format!(" through {}", what.join(", "))
    };
    let read = counters.records_read.get();
    let bad = if skipped > 0 {
        format!(" and {skipped} bad ones")
    } else {
        String::new()
    };
    let head = if kept == 0 {
        format!(
            "the workload is empty: {path} read as {format} gave {read} good records{bad}, \
             and the run kept none of them{filters}"
        )
    } else {
        format!(
            "the workload drops {:.2}% of the records of {path} ({}), more than \
             max_dropped_share = {} allows",
            share * 100.0,
            kept_by.join("; "),
            cfg.max_dropped_share
        )
    };
    let survey = ftlab_workload::survey::survey(Path::new(path), &format, &read_options(cfg))
        .map(|s| s.describe())
        .unwrap_or_else(|e| format!("  (reading it again failed: {e})\n"));
    let hint = if kept == 0 {
        format!(
            "hint: check --format (--format auto recognises the native ones), --device, \
             --window-start/--window-end ({}) and --blkparse-event",
            if cfg.absolute_time {
                "seconds as stamped, with --absolute-time"
            } else {
                "seconds from the first record"
            }
        )
    } else {
        "hint: --max-dropped-share 1 accepts it".to_string()
    };
    Err(RunError::Workload(format!("{head}\n{survey}{hint}")))
}

/// The span of one pass after the transforms, for the report.
pub fn pass_span_ns(counters: &Counters) -> u64 {
    counters.span_ns.get().map_or(0, |(a, b)| b - a)
}

/// The statistics of a trace (`ftlab trace stats`, the Python `trace_stats`): `builder`
/// fed every record of [`workload_stream`], with the disorder counted as the trace has it
/// (before the sort window repaired it) and the bad records skipped.
pub fn finish_stats(
    builder: ftlab_workload::stats::StatsBuilder,
    counters: &Counters,
) -> ftlab_workload::stats::TraceStats {
    let mut stats = builder.finish(counters.skipped_records.get());
    stats.out_of_order = counters.out_of_order.get();
    stats
}
