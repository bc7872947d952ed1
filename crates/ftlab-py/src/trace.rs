//! Workloads as columns: the synthetic generator (`generate`), trace files read in
//! batches of numpy columns (`open_trace`, which the Python side turns into Arrow record
//! batches) and trace statistics (`trace_stats`). Readers, transforms and statistics are
//! the library's (`source::workload_stream`, `ftlab_workload::stats`), exactly what
//! `ftlab trace gen` and `ftlab trace stats` use.

use crate::config;
use crate::errors::{config_error, guard, run_error, trace_error};
use ftlab::config::Config;
use ftlab::{sim, source};
use ftlab_core::request::Op;
use ftlab_workload::transform::Counters;
use ftlab_workload::{Record, RecordStream};
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::rc::Rc;

/// Op codes of the `op` column, in the order of the Python side's categories
/// (`r`, `w`, `t`, `f`).
fn op_code(op: Op) -> u8 {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Trim => 2,
        Op::Flush => 3,
    }
}

/// Columns being filled.
#[derive(Default)]
struct Columns {
    time: Vec<f64>,
    op: Vec<u8>,
    offset: Vec<i64>,
    size: Vec<i64>,
    device: Vec<u32>,
}

impl Columns {
    fn with_capacity(n: usize) -> Self {
        Columns {
            time: Vec::with_capacity(n),
            op: Vec::with_capacity(n),
            offset: Vec::with_capacity(n),
            size: Vec::with_capacity(n),
            device: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, r: &Record) {
        self.time.push(r.req.arrival.0 as f64 / 1e9);
        self.op.push(op_code(r.req.op));
        // Byte offsets and sizes beyond 2^63 do not occur in traces (8 EiB); they are
        // saturated rather than wrapped into negative numbers.
        self.offset
            .push(i64::try_from(r.req.offset).unwrap_or(i64::MAX));
        self.size.push(i64::try_from(r.req.len).unwrap_or(i64::MAX));
        self.device.push(r.device);
    }

    fn into_dict(self, py: Python<'_>, with_device: bool) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("time", self.time.into_pyarray(py))?;
        d.set_item("op", self.op.into_pyarray(py))?;
        d.set_item("offset", self.offset.into_pyarray(py))?;
        d.set_item("size", self.size.into_pyarray(py))?;
        if with_device {
            d.set_item("device", self.device.into_pyarray(py))?;
        }
        Ok(d)
    }
}

/// The configured workload as one stream (one pass, no fold), as `ftlab trace stats`
/// and `ftlab trace gen` read it.
fn stream(py: Python<'_>, mut cfg: Config) -> PyResult<(Config, RecordStream, Rc<Counters>)> {
    cfg.warmup = 0;
    cfg.replay = 1;
    cfg.fold = false;
    let geo = sim::device_geometry(&cfg).map_err(|e| run_error(py, e))?;
    if cfg.trace.is_some() {
        ftlab_workload::check_format(&cfg.format, &source::read_options(&cfg)).map_err(|e| {
            config_error(py, format!("invalid setting `format`: {e}"), Some("format"))
        })?;
    } else {
        source::validate_workload(&cfg, &geo).map_err(|e| run_error(py, e))?;
    }
    let counters = Rc::new(Counters::default());
    let s = source::workload_stream(&cfg, &geo, &counters).map_err(|e| run_error(py, e))?;
    Ok((cfg, s, counters))
}

fn record_error(py: Python<'_>, e: ftlab_workload::TraceError, cfg: &Config) -> PyErr {
    let e = source::name_source(e, cfg);
    let line = Some(e.line).filter(|&l| l > 0);
    trace_error(py, e.to_string(), &e.file, line, e.field)
}

/// The synthetic workload (or the request mix) the configuration names, as columns
/// `time` (s), `op` (0 read, 1 write, 2 trim, 3 flush), `offset` and `size` (bytes).
#[pyfunction]
#[pyo3(signature = (config, overrides))]
pub fn generate<'py>(
    py: Python<'py>,
    config: Option<Bound<'py, PyAny>>,
    overrides: Vec<(String, Bound<'py, PyAny>)>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = config::build(py, config.as_ref(), &overrides)?;
    if cfg.trace.is_some() {
        return Err(config_error(
            py,
            "generate makes the synthetic workload; unset `trace` (read_trace reads one)".into(),
            Some("trace"),
        ));
    }
    guard("generate", || {
        let (cfg, s, _) = stream(py, cfg)?;
        let n = sim::requests_per_pass(&cfg).unwrap_or(0);
        let mut cols = Columns::with_capacity(usize::try_from(n).unwrap_or(0));
        for r in s {
            cols.push(&r.map_err(|e| record_error(py, e, &cfg))?);
        }
        cols.into_dict(py, false)
    })
}

/// A trace read in batches of columns (`time`, `op`, `offset`, `size`, `device`).
/// Iterating yields one dict of numpy arrays per batch of at most `batch_size`
/// records. Not shared between threads (the reader is not `Send`).
#[pyclass(unsendable, module = "ftlab._ftlab")]
pub struct TraceBatches {
    cfg: Config,
    stream: Option<RecordStream>,
    batch_size: usize,
}

#[pymethods]
impl TraceBatches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(None);
        };
        let cfg = &self.cfg;
        let batch = self.batch_size;
        let mut cols = Columns::with_capacity(batch);
        let mut failed = None;
        guard("reading a trace", || {
            for r in stream.by_ref() {
                match r {
                    Ok(r) => cols.push(&r),
                    Err(e) => {
                        failed = Some(record_error(py, e, cfg));
                        break;
                    }
                }
                if cols.op.len() >= batch {
                    break;
                }
            }
            Ok(())
        })?;
        if let Some(e) = failed {
            self.stream = None;
            return Err(e);
        }
        if cols.op.is_empty() {
            self.stream = None;
            return Ok(None);
        }
        cols.into_dict(py, true).map(Some)
    }
}

/// Opens a trace for reading in batches; the configuration supplies the format's
/// settings (`csv`, `blkparse`) and the transforms (`devices`, `limit`, windows...).
#[pyfunction]
#[pyo3(signature = (config, overrides, batch_size=1 << 20))]
pub fn open_trace<'py>(
    py: Python<'py>,
    config: Option<Bound<'py, PyAny>>,
    overrides: Vec<(String, Bound<'py, PyAny>)>,
    batch_size: usize,
) -> PyResult<TraceBatches> {
    let cfg = config::build(py, config.as_ref(), &overrides)?;
    if cfg.trace.is_none() {
        return Err(config_error(py, "no trace given".into(), Some("trace")));
    }
    let (cfg, s, _) = guard("opening a trace", || stream(py, cfg))?;
    Ok(TraceBatches {
        cfg,
        stream: Some(s),
        batch_size: batch_size.max(1),
    })
}

/// Statistics of a trace after the transforms, as the JSON text `ftlab trace stats
/// --json` prints.
#[pyfunction]
#[pyo3(signature = (config, overrides, page_bytes=4096))]
pub fn trace_stats<'py>(
    py: Python<'py>,
    config: Option<Bound<'py, PyAny>>,
    overrides: Vec<(String, Bound<'py, PyAny>)>,
    page_bytes: u64,
) -> PyResult<String> {
    if page_bytes == 0 {
        return Err(config_error(py, "page_bytes must be above 0".into(), None));
    }
    let cfg = config::build(py, config.as_ref(), &overrides)?;
    if cfg.trace.is_none() {
        return Err(config_error(py, "no trace given".into(), Some("trace")));
    }
    guard("trace statistics", || {
        let (mut cfg, s, counters) = stream(py, cfg)?;
        let mut b = ftlab_workload::stats::StatsBuilder::new(page_bytes);
        for r in s {
            b.add(&r.map_err(|e| record_error(py, e, &cfg))?);
        }
        // As `ftlab trace stats`: only an empty selection is refused.
        cfg.max_dropped_share = 1.0;
        source::check_kept(&cfg, &counters).map_err(|e| run_error(py, e))?;
        let stats = source::finish_stats(b, &counters);
        serde_json::to_string_pretty(&stats)
            .map_err(|e| crate::InternalError::new_err(format!("stats do not serialize: {e}")))
    })
}
