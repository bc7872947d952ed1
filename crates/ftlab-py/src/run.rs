//! `run`: one simulation with the GIL released. The report leaves as the exact JSON
//! text `ftlab run --json -` prints (the Python side parses it), the latency
//! distribution and the optional timeline as numpy arrays.

use crate::errors::{guard, panic_message, run_error, trace_error};
use crate::{config, InternalError};
use ftlab::sim::{Failure, Observer, Progress, RunOutput, Simulation, Workload};
use ftlab_core::engine::Engine;
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::{Duration, Instant};

/// The quantiles reported in `latency`.
const QUANTILES: [f64; 9] = [0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 1.0];

/// The response-time distribution of the measured part of a run.
#[derive(Default)]
struct Latency {
    quantiles: Vec<f64>,
    quantile_ns: Vec<u64>,
    /// Histogram: the highest value equivalent to each recorded bucket, and its count.
    value_ns: Vec<u64>,
    count: Vec<u64>,
}

/// One row of the timeline (cumulative figures of the measured part, as the report
/// would give them at that point).
#[derive(Default)]
struct Timeline {
    requests: Vec<u64>,
    sim_time_ns: Vec<u64>,
    host_pages_written: Vec<u64>,
    host_pages_read: Vec<u64>,
    page_programs: Vec<u64>,
    block_erases: Vec<u64>,
    gc_invocations: Vec<u64>,
    mean_response_ns: Vec<f64>,
    p99_response_ns: Vec<u64>,
}

/// Least time between two visits to Python when there is no progress callback: the
/// observer looks at the clock every `check_every` requests (cheap), but reattaches to
/// the interpreter (which may wait for another thread to release the GIL) only this
/// often, so Ctrl-C is seen within this time plus `check_every` requests.
const CHECK_INTERVAL: Duration = Duration::from_millis(50);

struct PyObserver {
    check_every: u64,
    last_check: Instant,
    progress: Option<Py<PyAny>>,
    stopped: Option<PyErr>,
    timeline_every: Option<u64>,
    timeline: Timeline,
    latency: Latency,
}

impl Observer for PyObserver {
    fn progress_every(&self) -> u64 {
        self.check_every
    }

    fn progress(&mut self, p: &Progress) {
        if self.stopped.is_some() {
            return;
        }
        let end = p.total == Some(p.requests);
        if self.progress.is_none() && !end && self.last_check.elapsed() < CHECK_INTERVAL {
            return;
        }
        self.last_check = Instant::now();
        let cb = &self.progress;
        let r = Python::attach(|py| -> PyResult<()> {
            py.check_signals()?;
            if let Some(cb) = cb {
                cb.call1(py, (p.requests, p.total))?;
            }
            Ok(())
        });
        if let Err(e) = r {
            // Python raised (Ctrl-C, or the progress callback): the run stops at once
            // (`stop_requested`) and `run` raises this error.
            self.stopped = Some(e);
        }
    }

    fn stop_requested(&self) -> bool {
        self.stopped.is_some()
    }

    fn snapshot_every(&self) -> Option<u64> {
        self.timeline_every
    }

    fn snapshot(&mut self, p: &Progress, engine: &Engine) {
        let o = engine.outcome();
        let h = &o.host;
        // Read and write response times are kept apart; their sum is built once here.
        let hist = h.response();
        if self.timeline_every.is_some() && self.timeline.requests.last() != Some(&p.requests) {
            let t = &mut self.timeline;
            let total = ftlab_core::flash::FlashStats::total;
            t.requests.push(p.requests);
            t.sim_time_ns.push(p.sim_time.0);
            t.host_pages_written.push(h.pages_written);
            t.host_pages_read.push(h.pages_read);
            t.page_programs.push(total(&o.flash.programs));
            t.block_erases.push(total(&o.flash.erases));
            t.gc_invocations.push(o.ftl.gc_invocations);
            t.mean_response_ns.push(h.mean_response_ns());
            t.p99_response_ns.push(hist.value_at_quantile(0.99));
        }
        // The last snapshot is the end of the run: the distribution the report's
        // percentiles come from.
        let mut l = Latency {
            quantiles: QUANTILES.to_vec(),
            quantile_ns: QUANTILES
                .iter()
                .map(|&q| hist.value_at_quantile(q))
                .collect(),
            ..Latency::default()
        };
        for v in hist.iter_recorded() {
            l.value_ns
                .push(hist.highest_equivalent(v.value_iterated_to()));
            l.count.push(v.count_at_value());
        }
        self.latency = l;
    }
}

/// What a finished run hands back across the GIL boundary (all `Send`).
struct Finished {
    json: String,
    text: String,
    failure: Option<(&'static str, String)>,
    requests: u64,
}

/// Requests from numpy columns: op codes (0 read, 1 write, 2 trim, 3 flush), byte
/// offsets and sizes, arrival times in seconds (optional). Errors name the row.
fn requests(
    py: Python<'_>,
    op: &[u8],
    offset: &[i64],
    size: &[i64],
    time: Option<&[f64]>,
) -> PyResult<Vec<Request>> {
    let n = op.len();
    let bad = |row: Option<u64>, field: &str, why: String| {
        let at = row.map_or(String::new(), |r| format!(" row {r}"));
        trace_error(
            py,
            format!("workload{at}: `{field}`: {why}"),
            "workload",
            row,
            field,
        )
    };
    for (name, len) in [
        ("offset", offset.len()),
        ("size", size.len()),
        ("time", time.map_or(n, <[f64]>::len)),
    ] {
        if len != n {
            return Err(bad(
                None,
                name,
                format!("{len} values, but `op` has {n}: every column needs one value per request"),
            ));
        }
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let row = Some(i as u64);
        let op = match op[i] {
            0 => Op::Read,
            1 => Op::Write,
            2 => Op::Trim,
            3 => Op::Flush,
            other => {
                return Err(bad(
                    row,
                    "op",
                    format!("{other} is not an op (0 read, 1 write, 2 trim, 3 flush)"),
                ))
            }
        };
        if offset[i] < 0 {
            return Err(bad(row, "offset", format!("{} is negative", offset[i])));
        }
        if size[i] < 0 {
            return Err(bad(row, "size", format!("{} is negative", size[i])));
        }
        let arrival = match time {
            None => Nanos(0),
            Some(t) => {
                let s = t[i];
                if !(s.is_finite() && s >= 0.0) {
                    return Err(bad(
                        row,
                        "time",
                        format!("{s} is not a time of 0 s or more"),
                    ));
                }
                Nanos((s * 1e9).round() as u64)
            }
        };
        out.push(Request {
            arrival,
            op,
            offset: offset[i] as u64,
            len: size[i] as u64,
        });
    }
    Ok(out)
}

/// Runs one simulation (see `ftlab.run` in the Python package). Returns a dict with the
/// report's JSON text (byte-identical to `ftlab run --json -`), the text summary, the
/// failure (kind and message) if any, the latency distribution and the timeline.
#[pyfunction]
#[pyo3(signature = (config, overrides, workload=None, check_every=1024, progress=None, timeline_every=None))]
#[allow(clippy::type_complexity)]
pub fn run<'py>(
    py: Python<'py>,
    config: Option<Bound<'py, PyAny>>,
    overrides: Vec<(String, Bound<'py, PyAny>)>,
    workload: Option<(
        PyReadonlyArray1<'py, u8>,
        PyReadonlyArray1<'py, i64>,
        PyReadonlyArray1<'py, i64>,
        Option<PyReadonlyArray1<'py, f64>>,
    )>,
    check_every: u64,
    progress: Option<Py<PyAny>>,
    timeline_every: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = config::build(py, config.as_ref(), &overrides)?;
    let reqs = match &workload {
        None => None,
        Some((op, offset, size, time)) => {
            let t = match time {
                Some(t) => Some(t.as_slice()?),
                None => None,
            };
            Some(requests(
                py,
                op.as_slice()?,
                offset.as_slice()?,
                size.as_slice()?,
                t,
            )?)
        }
    };
    drop(workload);
    let mut obs = PyObserver {
        check_every: check_every.max(1),
        last_check: Instant::now(),
        progress,
        stopped: None,
        timeline_every: timeline_every.filter(|&n| n > 0),
        timeline: Timeline::default(),
        latency: Latency::default(),
    };
    let seed = cfg.seed;
    let outcome = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let sim = Simulation::new(cfg)?;
            let wl = match reqs {
                None => Workload::Configured,
                Some(v) => Workload::Requests(Box::new(v.into_iter())),
            };
            let RunOutput {
                report,
                failure,
                requests,
            } = sim.run(wl, &mut obs)?;
            let json =
                serde_json::to_string_pretty(&report).map_err(|e| ftlab::RunError::Internal {
                    message: format!("the report does not serialize: {e}"),
                    seed,
                })? + "\n";
            let failure = failure.map(|f| {
                let kind = match f {
                    Failure::Violation(_) => "violation",
                    Failure::Recovery { .. } => "recovery",
                    Failure::Internal { .. } => "internal",
                    Failure::WornOut { .. } => "worn_out",
                };
                (kind, f.to_string())
            });
            Ok::<_, ftlab::RunError>(Finished {
                text: ftlab_report::summary(&report),
                json,
                failure,
                requests,
            })
        }))
    });
    // Python's own error (Ctrl-C, a failing progress callback) comes first: the run was
    // stopped for it, whatever the run made of the stop.
    if let Some(e) = obs.stopped.take() {
        return Err(e);
    }
    let fin = match outcome {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => return Err(run_error(py, e)),
        Err(p) => {
            return Err(InternalError::new_err(format!(
                "internal error (a bug in ftlab, please report it), seed {seed}: {}",
                panic_message(p.as_ref())
            )))
        }
    };
    guard("converting the report", || {
        let d = PyDict::new(py);
        d.set_item("json", fin.json)?;
        d.set_item("text", fin.text)?;
        d.set_item("requests", fin.requests)?;
        match fin.failure {
            Some((kind, msg)) => {
                d.set_item("failure_kind", kind)?;
                d.set_item("failure", msg)?;
            }
            None => {
                d.set_item("failure_kind", py.None())?;
                d.set_item("failure", py.None())?;
            }
        }
        let l = obs.latency;
        let lat = PyDict::new(py);
        lat.set_item("quantile", l.quantiles.into_pyarray(py))?;
        lat.set_item("quantile_ns", l.quantile_ns.into_pyarray(py))?;
        lat.set_item("value_ns", l.value_ns.into_pyarray(py))?;
        lat.set_item("count", l.count.into_pyarray(py))?;
        d.set_item("latency", lat)?;
        if obs.timeline_every.is_some() {
            let t = obs.timeline;
            let tl = PyDict::new(py);
            tl.set_item("requests", t.requests.into_pyarray(py))?;
            tl.set_item("sim_time_ns", t.sim_time_ns.into_pyarray(py))?;
            tl.set_item("host_pages_read", t.host_pages_read.into_pyarray(py))?;
            tl.set_item("host_pages_written", t.host_pages_written.into_pyarray(py))?;
            tl.set_item("page_programs", t.page_programs.into_pyarray(py))?;
            tl.set_item("block_erases", t.block_erases.into_pyarray(py))?;
            tl.set_item("gc_invocations", t.gc_invocations.into_pyarray(py))?;
            tl.set_item("mean_response_ns", t.mean_response_ns.into_pyarray(py))?;
            tl.set_item("p99_response_ns", t.p99_response_ns.into_pyarray(py))?;
            d.set_item("timeline", tl)?;
        } else {
            d.set_item("timeline", py.None())?;
        }
        Ok(d)
    })
}
