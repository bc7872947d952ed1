//! Parameter studies from Python: the `ftlab::sweep` engine behind `ftlab.sweep`.
//!
//! [`Study`] parses a study and expands its points; `run_local` runs them on the
//! library's thread pool with the GIL released; [`run_point`] runs one point's
//! configuration (given as JSON), GIL released, for a task on a Dask worker; `table`
//! builds the tidy table from the outcomes, whichever way they were obtained, so every
//! backend gives the same table. Choices left open: a point's configuration travels as
//! JSON text (what a task pickles), and so does its report; an outcome is a pair
//! `(ok, text)`, the report or the error, so a failing point never raises on a worker.

use crate::errors::config_error;
use ftlab::sweep::{self, Cell, Outcome, Point, RunOptions, Table};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::path::{Path, PathBuf};

/// A parsed study and its points.
#[pyclass(frozen, module = "ftlab._ftlab")]
pub struct Study {
    study: sweep::Study,
    points: Vec<Point>,
}

/// An outcome as `(ok, text)`: the report as JSON, or the error.
type Pair = (bool, String);

fn pair(o: &Outcome) -> Pair {
    match o {
        Outcome::Report { report, .. } => (true, report.to_string()),
        Outcome::Failed(why) => (false, why.clone()),
    }
}

#[pymethods]
impl Study {
    /// Parses the study `text`; `origin` names it in errors, relative trace paths are
    /// taken from `root`. Raises ConfigError for a study that cannot run.
    #[new]
    fn new(py: Python<'_>, text: &str, origin: &str, root: &str) -> PyResult<Study> {
        let study = sweep::Study::parse(text, origin, Path::new(root))
            .map_err(|e| config_error(py, e.to_string(), None))?;
        let points = study.points();
        Ok(Study { study, points })
    }

    fn __len__(&self) -> usize {
        self.points.len()
    }

    /// Per point: its hash and its configuration as JSON (None when its values make
    /// no configuration: the point fails with `error(i)`).
    fn points(&self) -> Vec<(String, Option<String>)> {
        self.points
            .iter()
            .map(|p| {
                let cfg = p
                    .config
                    .as_ref()
                    .ok()
                    .map(|c| serde_json::to_string(c).expect("a config serialises"));
                (p.hash.clone(), cfg)
            })
            .collect()
    }

    /// Why point `i`'s values make no configuration.
    fn error(&self, i: usize) -> Option<String> {
        self.points.get(i).and_then(|p| p.config.clone().err())
    }

    /// Checks the results folder `out` can be written to; returns its `points` folder.
    fn prepare_out(&self, py: Python<'_>, out: &str) -> PyResult<String> {
        sweep::prepare_out(Path::new(out))
            .map(|d| d.display().to_string())
            .map_err(|e| config_error(py, e.to_string(), None))
    }

    /// The report of point `i` stored in `points_dir` by an earlier run, as JSON.
    fn stored(&self, points_dir: &str, i: usize) -> Option<String> {
        let p = self.points.get(i)?;
        sweep::stored_report(Path::new(points_dir), p).map(|r| r.to_string())
    }

    /// Stores report `text` (JSON) of point `i` in `points_dir`.
    fn store(&self, py: Python<'_>, points_dir: &str, i: usize, text: &str) -> PyResult<()> {
        let p = &self.points[i];
        let report: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        sweep::store_report(Path::new(points_dir), p, &report)
            .map_err(|e| config_error(py, e, None))
    }

    /// Runs every point on `jobs` threads (0: one per core) with the GIL released,
    /// storing and reusing reports in `out` when given: `(ok, text)` per point.
    #[pyo3(signature = (out=None, force=false, jobs=0))]
    fn run_local(
        &self,
        py: Python<'_>,
        out: Option<PathBuf>,
        force: bool,
        jobs: usize,
    ) -> PyResult<Vec<Pair>> {
        let opts = RunOptions { out, force, jobs };
        let outcomes = py
            .detach(|| sweep::run_points(&self.points, &opts, &|_| {}))
            .map_err(|e| config_error(py, e.to_string(), None))?;
        Ok(outcomes.iter().map(pair).collect())
    }

    /// The table of the outcomes `(ok, text)`, one per point: column names, each
    /// column's type (`int`, `float`, `bool`, `str`) and its cells (None for null).
    #[allow(clippy::type_complexity)]
    fn table<'py>(
        &self,
        py: Python<'py>,
        outcomes: Vec<Pair>,
    ) -> PyResult<(Vec<String>, Vec<&'static str>, Vec<Bound<'py, PyList>>)> {
        if outcomes.len() != self.points.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{} outcomes for {} points",
                outcomes.len(),
                self.points.len()
            )));
        }
        let mut out = Vec::with_capacity(outcomes.len());
        for (ok, text) in outcomes {
            out.push(if ok {
                let report = serde_json::from_str(&text)
                    .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
                Outcome::Report {
                    report,
                    cached: false,
                }
            } else {
                Outcome::Failed(text)
            });
        }
        let t = Table::build(&self.study, &self.points, &out);
        let mut names = Vec::new();
        let mut kinds = Vec::new();
        let mut cols = Vec::new();
        for c in t.columns {
            names.push(c.name);
            kinds.push(match c.kind {
                sweep::ColumnType::Int => "int",
                sweep::ColumnType::Float => "float",
                sweep::ColumnType::Bool => "bool",
                sweep::ColumnType::Str => "str",
            });
            let list = PyList::empty(py);
            for cell in c.cells {
                match cell {
                    Cell::Null => list.append(py.None())?,
                    Cell::Int(i) => list.append(i)?,
                    Cell::Float(f) => list.append(f)?,
                    Cell::Bool(b) => list.append(b)?,
                    Cell::Str(s) => list.append(s)?,
                }
            }
            cols.push(list);
        }
        Ok((names, kinds, cols))
    }
}

/// Runs one point's configuration (JSON, as `Study.points` gives it) with the GIL
/// released: `(True, report JSON)` or `(False, error)`; never raises for a failing
/// point, so a Dask task always returns.
#[pyfunction]
pub fn run_point(py: Python<'_>, config: &str) -> Pair {
    let cfg: ftlab::Config = match serde_json::from_str(config) {
        Ok(c) => c,
        Err(e) => return (false, format!("not a configuration: {e}")),
    };
    py.detach(|| match sweep::run_config(&cfg) {
        Ok(report) => (true, report.to_string()),
        Err(why) => (false, why.to_string()),
    })
}
