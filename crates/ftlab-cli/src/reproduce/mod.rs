//! `ftlab reproduce`: reruns the papers' evaluations from experiment files.
//!
//! An experiment file (`experiments/<paper>/<name>.toml`) describes one figure or
//! table: a base configuration, the x axis and the series as lists of points (each a
//! label and the config keys it sets), the metric to plot (a path into the JSON report,
//! or a sum of paths), and the paper's claim. Runs are the cartesian product of x points
//! and series; they run in parallel over the machine's cores, each distinct
//! configuration once however many figures use it. Results are written as
//! CSV, SVG and PNG per experiment plus a markdown summary per paper. `--quick` applies
//! each file's `[quick]` overrides (smaller workloads) so CI can run everything in
//! minutes. A series point may stand for the best of several configurations (`best`:
//! every combination of some keys runs, and the point shows the one with the lowest or
//! highest metric), as in figures that plot each scheme at its best setting. Instead of
//! config series, an experiment may plot several metrics of one run per x point
//! (`metrics`, e.g. merges by kind as stacked bars). See `experiments/README.md` for the
//! file format.

use ftlab::config::{set_key, Config};
use ftlab::sim::{run, NoObserver};
use ftlab::RunError;
use ftlab_plot::{self as plot, Chart, Kind, Series};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use thiserror::Error;

/// An experiment could not be loaded or run.
#[derive(Debug, Error)]
pub enum ReproError {
    /// File or directory problem.
    #[error("{path}: {why}")]
    Io {
        /// Path.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// The experiment file is invalid.
    #[error("{path}: {why}")]
    Spec {
        /// Experiment file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// A run failed.
    #[error("{path}: run `{x}` / `{series}`: {source}")]
    Run {
        /// Experiment file.
        path: String,
        /// X point.
        x: String,
        /// Series.
        series: String,
        /// Why.
        source: Box<RunError>,
    },
    /// A run finished with a data-integrity failure.
    #[error("{path}: run `{x}` / `{series}` lost data: {why}")]
    Integrity {
        /// Experiment file.
        path: String,
        /// X point.
        x: String,
        /// Series.
        series: String,
        /// The violation.
        why: String,
    },
}

/// One point of an axis: a label and the config keys it sets.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Label on the axis or in the legend.
    pub name: String,
    /// Dotted config keys and their values.
    #[serde(default)]
    pub set: toml::Table,
    /// Series points only: the point is the best of several configurations.
    #[serde(default)]
    pub best: Option<Best>,
}

/// The best of several configurations: every combination of the values in `of` runs
/// (on top of the point's `set`), and the point shows the run whose `by` metric is the
/// lowest (`pick = "min"`) or highest (`"max"`); ties go to the first combination.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Best {
    /// Dotted config keys, each with the list of values it takes.
    pub of: toml::Table,
    /// Report path(s) the choice is made on (default: the experiment's `y`).
    #[serde(default)]
    pub by: Option<String>,
    /// `min` (default) or `max`.
    #[serde(default = "default_pick")]
    pub pick: String,
}

fn default_pick() -> String {
    "min".into()
}

impl Best {
    /// Every combination of the values, each as a label (`key=value, ...`) and the keys
    /// it sets, in the order the keys and values are written.
    fn variants(&self) -> Result<Vec<(String, toml::Table)>, String> {
        if !matches!(self.pick.as_str(), "min" | "max") {
            return Err(format!("best.pick = `{}`: must be min or max", self.pick));
        }
        let mut out = vec![(String::new(), toml::Table::new())];
        for (key, values) in &self.of {
            let values = match values {
                toml::Value::Array(v) if !v.is_empty() => v,
                _ => return Err(format!("best.of.{key}: must be a non-empty list of values")),
            };
            let mut next = Vec::with_capacity(out.len() * values.len());
            for (label, set) in &out {
                for v in values {
                    let shown = match v {
                        toml::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let sep = if label.is_empty() { "" } else { ", " };
                    let mut set = set.clone();
                    set.insert(key.clone(), v.clone());
                    next.push((format!("{label}{sep}{key}={shown}"), set));
                }
            }
            out = next;
        }
        Ok(out)
    }
}

/// An axis: either `key` + `values` (+ optional `labels`), or explicit `points`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// Config key the values go to.
    pub key: Option<String>,
    /// Values of `key`.
    #[serde(default)]
    pub values: Vec<toml::Value>,
    /// Labels of the values (default: the values).
    #[serde(default)]
    pub labels: Vec<String>,
    /// Explicit points.
    #[serde(default)]
    pub points: Vec<Point>,
}

impl Axis {
    fn expand(&self) -> Result<Vec<Point>, String> {
        let mut out = self.points.clone();
        if let Some(key) = &self.key {
            if !self.labels.is_empty() && self.labels.len() != self.values.len() {
                return Err(format!("axis `{key}`: labels and values differ in length"));
            }
            for (i, v) in self.values.iter().enumerate() {
                let name = self.labels.get(i).cloned().unwrap_or_else(|| match v {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                let mut set = toml::Table::new();
                set.insert(key.clone(), v.clone());
                out.push(Point {
                    name,
                    set,
                    best: None,
                });
            }
        }
        if out.is_empty() {
            out.push(Point {
                name: String::new(),
                set: toml::Table::new(),
                best: None,
            });
        }
        Ok(out)
    }
}

/// An experiment file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Figure title.
    pub title: String,
    /// Paper, section and figure.
    pub source: String,
    /// The paper's claim, quoted or paraphrased, for the summary.
    #[serde(default)]
    pub claim: String,
    /// Which workload stands in for the paper's, and why.
    #[serde(default)]
    pub workload_note: String,
    /// `line`, `bar` (grouped) or `stacked` (bars of `metrics` stacked per x point).
    #[serde(default = "default_kind")]
    pub kind: String,
    /// X-axis label.
    pub x_label: String,
    /// Y-axis label.
    pub y_label: String,
    /// Report path(s) plotted, summed with `+` (products with `*`, one ratio with `/`);
    /// unused when `metrics` is set.
    #[serde(default)]
    pub y: String,
    /// Factor applied to `y` (e.g. 1e-3 for ns to µs).
    #[serde(default = "one")]
    pub y_scale: f64,
    /// Name of a series (or, with `metrics`, of a metric) to normalise to: every
    /// series' `y` is divided by that series' `y` at the same x point (the papers'
    /// "normalized number of ..." figures); no value where the reference is 0 or
    /// missing.
    #[serde(default)]
    pub normalize: Option<String>,
    /// Extra report paths written to the CSV.
    #[serde(default)]
    pub columns: Vec<String>,
    /// Base configuration.
    #[serde(default)]
    pub base: toml::Table,
    /// Overrides under `--quick` (dotted keys).
    #[serde(default)]
    pub quick: toml::Table,
    /// X axis.
    #[serde(default)]
    pub x: Axis,
    /// Series.
    #[serde(default)]
    pub series: Axis,
    /// Series that are metrics of one run instead of configurations (a breakdown, e.g.
    /// merges by kind, best shown with `kind = "stacked"`): one run per x point, one
    /// series per entry. Excludes `series` and `y`.
    #[serde(default)]
    pub metrics: Vec<MetricSeries>,
}

/// A series read from the report of each x point's run.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MetricSeries {
    /// Legend label.
    pub name: String,
    /// Report path(s), as the experiment's `y`.
    pub y: String,
}

fn default_kind() -> String {
    "line".into()
}

fn one() -> f64 {
    1.0
}

/// Evaluates a metric expression over the JSON report: a sum of terms (`a + b`), each a
/// product (`a * b`) of dotted report paths and numbers (`30500 * a.b`, to turn an
/// operation count into time; padding reads times the read latency:
/// `flash.by_cause.padding.page_reads * config.device.latencies_ns.read`), and
/// optionally one ratio of two such sums (`a + b / c`, for averages such as merge cost
/// per merge). A null term, or a ratio whose
/// denominator is 0, gives `None` (no value: a gap in the plot, `-` in the summary).
pub fn metric(report: &serde_json::Value, expr: &str) -> Result<Option<f64>, String> {
    let mut parts = expr.split('/');
    let num = parts.next().unwrap_or_default();
    let den = parts.next();
    if parts.next().is_some() {
        return Err(format!("`{expr}`: at most one `/`"));
    }
    let Some(n) = metric_sum(report, num)? else {
        return Ok(None);
    };
    match den {
        None => Ok(Some(n)),
        Some(den) => Ok(metric_sum(report, den)?
            .filter(|d| *d != 0.0)
            .map(|d| n / d)),
    }
}

/// A sum of products of paths and numbers (see [`metric`]).
fn metric_sum(report: &serde_json::Value, expr: &str) -> Result<Option<f64>, String> {
    let mut sum = 0.0;
    for term in expr.split('+') {
        let mut product = 1.0;
        let factors: Vec<&str> = term.split('*').map(str::trim).collect();
        for &factor in &factors {
            if let Ok(number) = factor.parse::<f64>() {
                product *= number;
                continue;
            }
            let mut v = report;
            for part in factor.split('.') {
                v = v.get(part).ok_or_else(|| {
                    if factors.len() > 1 {
                        format!("the report has no `{factor}`, and `{factor}` is not a number")
                    } else {
                        format!("the report has no `{factor}`")
                    }
                })?;
            }
            match v {
                serde_json::Value::Null => return Ok(None),
                other => {
                    product *= other
                        .as_f64()
                        .ok_or_else(|| format!("`{factor}` is not a number"))?
                }
            }
        }
        sum += product;
    }
    Ok(Some(sum))
}

/// One finished run.
#[derive(Clone, Debug)]
struct Cell {
    y: Option<f64>,
    columns: Vec<Option<f64>>,
}

fn flatten_into(table: &mut toml::Table, set: &toml::Table) -> Result<(), String> {
    for (k, v) in set {
        set_key(table, k, v.clone())?;
    }
    Ok(())
}

impl Experiment {
    /// The series (config points) and, with `metrics`, the one run per x point they
    /// share; checks that `y`, `series` and `metrics` are not mixed.
    fn series_points(&self) -> Result<Vec<Point>, String> {
        if !matches!(self.kind.as_str(), "line" | "bar" | "stacked") {
            return Err(format!(
                "kind = `{}`: must be line, bar or stacked",
                self.kind
            ));
        }
        let ss = self.series.expand()?;
        if self.metrics.is_empty() {
            if self.y.trim().is_empty() {
                return Err("`y` (the report path plotted) is missing".into());
            }
            return Ok(ss);
        }
        if !self.y.trim().is_empty() {
            return Err("`y` and `metrics` exclude each other: each metric has its y".into());
        }
        if ss.len() != 1 || !ss[0].set.is_empty() || ss[0].best.is_some() {
            return Err(
                "`series` and `metrics` exclude each other: with `metrics`, the \
                        series are the metrics of one run per x point"
                    .into(),
            );
        }
        Ok(ss)
    }

    /// The (label, report path) plotted per series: the metrics, or `y` for every
    /// config series.
    fn plotted(&self, ss: &[Point]) -> Vec<(String, String)> {
        if self.metrics.is_empty() {
            ss.iter()
                .map(|s| (s.name.clone(), self.y.clone()))
                .collect()
        } else {
            self.metrics
                .iter()
                .map(|m| (m.name.clone(), m.y.clone()))
                .collect()
        }
    }

    /// Loads an experiment file.
    pub fn load(path: &Path) -> Result<Experiment, ReproError> {
        let text = std::fs::read_to_string(path).map_err(|e| ReproError::Io {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        toml::from_str(&text).map_err(|e| ReproError::Spec {
            path: path.display().to_string(),
            why: e.to_string().trim().to_string(),
        })
    }

    /// The configuration of run (x point, series point, variant keys of a `best`
    /// series); relative trace paths are taken from `root`.
    fn config(
        &self,
        x: &Point,
        s: &Point,
        variant: &toml::Table,
        quick: bool,
        root: &Path,
    ) -> Result<Config, String> {
        let mut t = toml::Table::new();
        flatten_into(&mut t, &self.base)?;
        flatten_into(&mut t, &x.set)?;
        flatten_into(&mut t, &s.set)?;
        flatten_into(&mut t, variant)?;
        if quick {
            flatten_into(&mut t, &self.quick)?;
        }
        let mut cfg: Config = toml::Value::Table(t)
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string().trim().to_string())?;
        if let Some(trace) = &cfg.trace {
            let p = Path::new(trace);
            if p.is_relative() {
                cfg.trace = Some(root.join(p).display().to_string());
            }
        }
        Ok(cfg)
    }
}

/// What `reproduce` produced for one experiment.
#[derive(Clone, Debug)]
pub struct Produced {
    /// Experiment name (file stem).
    pub name: String,
    /// The experiment.
    pub exp: Experiment,
    /// X labels.
    pub xs: Vec<String>,
    /// Series labels.
    pub series: Vec<String>,
    /// y per (series, x).
    pub y: Vec<Vec<Option<f64>>>,
    /// Per (series, x): the chosen combination of a `best` series (None for others).
    pub best: Vec<Vec<Option<String>>>,
}

/// Options of a reproduce run.
pub struct Options {
    /// Directory holding `<paper>/<name>.toml`.
    pub experiments: PathBuf,
    /// Output directory.
    pub out: PathBuf,
    /// Apply `[quick]` overrides.
    pub quick: bool,
    /// Worker threads.
    pub jobs: usize,
}

/// Papers (subdirectories) available.
pub fn papers(dir: &Path) -> Result<Vec<String>, ReproError> {
    let rd = std::fs::read_dir(dir).map_err(|e| ReproError::Io {
        path: dir.display().to_string(),
        why: e.to_string(),
    })?;
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Ok(v)
}

/// Experiment files of one paper, sorted.
pub fn experiment_files(dir: &Path, paper: &str) -> Result<Vec<PathBuf>, ReproError> {
    let d = dir.join(paper);
    let rd = std::fs::read_dir(&d).map_err(|e| ReproError::Io {
        path: d.display().to_string(),
        why: format!(
            "{e} (known papers: {})",
            papers(dir).unwrap_or_default().join(", ")
        ),
    })?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    Ok(v)
}

/// (experiment, series, x, variant of a `best` series, configuration).
type Job = (usize, usize, usize, usize, Config);

/// Reports (or errors) by (experiment, series, x, variant).
type Results = BTreeMap<(usize, usize, usize, usize), Result<serde_json::Value, ReproError>>;

/// The variants of each series point: one unnamed variant for a plain point.
type Variants = Vec<Vec<(String, toml::Table)>>;

fn series_variants(ss: &[Point], xs: &[Point]) -> Result<Variants, String> {
    if let Some(x) = xs.iter().find(|x| x.best.is_some()) {
        return Err(format!("x point `{}`: `best` is for series points", x.name));
    }
    ss.iter()
        .map(|s| match &s.best {
            None => Ok(vec![(String::new(), toml::Table::new())]),
            Some(b) => b
                .variants()
                .map_err(|e| format!("series `{}`: {e}", s.name)),
        })
        .collect()
}

/// Runs every experiment of `paper`, writing CSV, SVG, PNG and `summary.md` under
/// `opts.out/<paper>/`. `progress(done, total)` is called as runs finish.
pub fn reproduce_paper(
    paper: &str,
    opts: &Options,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Produced>, ReproError> {
    let root = opts
        .experiments
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let files = experiment_files(&opts.experiments, paper)?;
    let mut exps = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    for (ei, f) in files.iter().enumerate() {
        let exp = Experiment::load(f)?;
        let spec_err = |why: String| ReproError::Spec {
            path: f.display().to_string(),
            why,
        };
        let xs = exp.x.expand().map_err(spec_err)?;
        let ss = exp.series_points().map_err(spec_err)?;
        let vs = series_variants(&ss, &xs).map_err(spec_err)?;
        if let Some(reference) = &exp.normalize {
            let plotted = exp.plotted(&ss);
            if !plotted.iter().any(|(name, _)| name == reference) {
                return Err(spec_err(format!(
                    "normalize = `{reference}` names no series (series: {})",
                    plotted
                        .iter()
                        .map(|(name, _)| name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        for (si, s) in ss.iter().enumerate() {
            for (xi, x) in xs.iter().enumerate() {
                for (vi, (_, set)) in vs[si].iter().enumerate() {
                    let cfg = exp.config(x, s, set, opts.quick, &root).map_err(spec_err)?;
                    jobs.push((ei, si, xi, vi, cfg));
                }
            }
        }
        exps.push((f.clone(), exp, xs, ss, vs));
    }
    // A configuration that several figures share (e.g. a breakdown at one x point of
    // another figure) runs once; `same[j]` is the job whose report job `j` takes. The
    // key is the whole configuration, `best` variant keys included, so two variants
    // of a `best` series share a run only when they configure the same run.
    let same = first_of_same(&jobs);
    let unique: Vec<usize> = (0..jobs.len()).filter(|&j| same[j] == j).collect();
    let total = unique.len();
    let results: Mutex<Results> = Mutex::new(BTreeMap::new());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((ei, si, xi, vi, cfg)) = unique.get(i).map(|&j| &jobs[j]) else {
                    break;
                };
                let (path, _, xs, ss, _) = &exps[*ei];
                let ctx = |e: RunError| ReproError::Run {
                    path: path.display().to_string(),
                    x: xs[*xi].name.clone(),
                    series: ss[*si].name.clone(),
                    source: Box::new(e),
                };
                let r = match run(cfg, &mut NoObserver) {
                    Err(e) => Err(ctx(e)),
                    Ok(out) => match out.failure {
                        Some(f) => Err(ReproError::Integrity {
                            path: path.display().to_string(),
                            x: xs[*xi].name.clone(),
                            series: ss[*si].name.clone(),
                            why: f.to_string(),
                        }),
                        None => Ok(serde_json::to_value(&out.report).expect("report serialises")),
                    },
                };
                results
                    .lock()
                    .expect("no worker panicked")
                    .insert((*ei, *si, *xi, *vi), r);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            });
        }
    });
    let mut results = results.into_inner().expect("no worker panicked");
    for (j, &first) in same.iter().enumerate() {
        if first != j {
            let (ei, si, xi, vi, _) = &jobs[first];
            let copy = match &results[&(*ei, *si, *xi, *vi)] {
                Ok(report) => Ok(report.clone()),
                Err(e) => Err(ReproError::Spec {
                    path: exps[jobs[j].0].0.display().to_string(),
                    why: format!("a run is the same as one that failed: {e}"),
                }),
            };
            let (ei, si, xi, vi, _) = &jobs[j];
            results.insert((*ei, *si, *xi, *vi), copy);
        }
    }
    let out_dir = opts.out.join(paper);
    std::fs::create_dir_all(&out_dir).map_err(|e| ReproError::Io {
        path: out_dir.display().to_string(),
        why: e.to_string(),
    })?;
    let mut produced = Vec::new();
    for (ei, (path, exp, xs, ss, vs)) in exps.into_iter().enumerate() {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let any_best = ss.iter().any(|s| s.best.is_some());
        let metric_err = |why: String| ReproError::Spec {
            path: path.display().to_string(),
            why,
        };
        // The plotted rows: one per config series, or (with `metrics`) one per metric,
        // all read from the one run of each x point.
        let plotted = exp.plotted(&ss);
        let mut best = vec![vec![None; xs.len()]; plotted.len()];
        let empty = Cell {
            y: None,
            columns: Vec::new(),
        };
        let mut cells = vec![vec![empty; xs.len()]; plotted.len()];
        for (si, s) in ss.iter().enumerate() {
            for xi in 0..xs.len() {
                let mut reports = Vec::with_capacity(vs[si].len());
                for vi in 0..vs[si].len() {
                    reports.push(
                        results
                            .remove(&(ei, si, xi, vi))
                            .expect("every job has a result")?,
                    );
                }
                let chosen = match &s.best {
                    None => 0,
                    Some(b) => {
                        let by = b.by.as_deref().unwrap_or(&exp.y);
                        pick_best(&reports, by, b.pick == "max").map_err(metric_err)?
                    }
                };
                let report = reports.swap_remove(chosen);
                let columns: Vec<Option<f64>> = exp
                    .columns
                    .iter()
                    .map(|c| metric(&report, c))
                    .collect::<Result<_, _>>()
                    .map_err(metric_err)?;
                // The plotted rows this run fills: its own series, or every metric.
                let rows = if exp.metrics.is_empty() {
                    si..si + 1
                } else {
                    0..plotted.len()
                };
                for pi in rows {
                    if s.best.is_some() {
                        best[pi][xi] = Some(vs[si][chosen].0.clone());
                    }
                    cells[pi][xi] = Cell {
                        y: metric(&report, &plotted[pi].1)
                            .map_err(metric_err)?
                            .map(|v| v * exp.y_scale),
                        columns: columns.clone(),
                    };
                }
            }
        }
        if let Some(reference) = &exp.normalize {
            let r = plotted
                .iter()
                .position(|(name, _)| name == reference)
                .expect("checked when the experiment was loaded");
            let base: Vec<Option<f64>> = cells[r].iter().map(|c| c.y).collect();
            for row in &mut cells {
                for (c, b) in row.iter_mut().zip(&base) {
                    c.y = match (c.y, *b) {
                        (Some(v), Some(b)) if b != 0.0 => Some(v / b),
                        _ => None,
                    };
                }
            }
        }
        let mut csv = String::from("x,series,y");
        for c in &exp.columns {
            let _ = write!(csv, ",{c}");
        }
        if any_best {
            csv.push_str(",best");
        }
        csv.push('\n');
        let fmt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        for (pi, ((label, _), row)) in plotted.iter().zip(&cells).enumerate() {
            for (xi, (x, cell)) in xs.iter().zip(row).enumerate() {
                let _ = write!(
                    csv,
                    "{},{},{}",
                    csv_field(&x.name),
                    csv_field(label),
                    fmt(cell.y)
                );
                for c in &cell.columns {
                    let _ = write!(csv, ",{}", fmt(*c));
                }
                if any_best {
                    let _ = write!(
                        csv,
                        ",{}",
                        csv_field(best[pi][xi].as_deref().unwrap_or_default())
                    );
                }
                csv.push('\n');
            }
        }
        let y: Vec<Vec<Option<f64>>> = cells
            .iter()
            .map(|row| row.iter().map(|c| c.y).collect())
            .collect();
        let chart = Chart {
            title: exp.title.clone(),
            x_label: exp.x_label.clone(),
            y_label: exp.y_label.clone(),
            categories: xs.iter().map(|p| p.name.clone()).collect(),
            series: plotted
                .iter()
                .zip(&y)
                .map(|((name, _), v)| Series {
                    name: name.clone(),
                    values: v.clone(),
                })
                .collect(),
            kind: match exp.kind.as_str() {
                "bar" => Kind::Bar,
                "stacked" => Kind::Stacked,
                _ => Kind::Line,
            },
        };
        let svg = plot::svg(&chart);
        let png = plot::png(&svg).map_err(|why| ReproError::Io {
            path: name.clone(),
            why,
        })?;
        for (ext, bytes) in [
            ("csv", csv.as_bytes()),
            ("svg", svg.as_bytes()),
            ("png", &png[..]),
        ] {
            let p = out_dir.join(format!("{name}.{ext}"));
            std::fs::write(&p, bytes).map_err(|e| ReproError::Io {
                path: p.display().to_string(),
                why: e.to_string(),
            })?;
        }
        produced.push(Produced {
            name,
            exp,
            xs: xs.iter().map(|p| p.name.clone()).collect(),
            series: plotted.into_iter().map(|(name, _)| name).collect(),
            y,
            best,
        });
    }
    let summary = summary(paper, &produced, opts.quick);
    let p = out_dir.join("summary.md");
    std::fs::write(&p, summary).map_err(|e| ReproError::Io {
        path: p.display().to_string(),
        why: e.to_string(),
    })?;
    Ok(produced)
}

/// For each job, the first job with the same configuration (itself if none before):
/// the whole `Config`, so `best` variants that set different keys stay apart.
fn first_of_same(jobs: &[Job]) -> Vec<usize> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    jobs.iter()
        .enumerate()
        .map(|(j, (_, _, _, _, cfg))| {
            let key = serde_json::to_string(cfg).expect("a config serialises");
            *seen.entry(key).or_insert(j)
        })
        .collect()
}

/// Index of the report with the lowest (or, with `max`, highest) `by` metric; reports
/// without it lose; ties go to the first.
fn pick_best(reports: &[serde_json::Value], by: &str, max: bool) -> Result<usize, String> {
    let mut chosen: Option<(usize, f64)> = None;
    for (i, r) in reports.iter().enumerate() {
        let Some(v) = metric(r, by)? else {
            continue;
        };
        let better = match chosen {
            None => true,
            Some((_, c)) if max => v > c,
            Some((_, c)) => v < c,
        };
        if better {
            chosen = Some((i, v));
        }
    }
    Ok(chosen.map_or(0, |(i, _)| i))
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn cell_text(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.4}"),
    }
}

/// The markdown summary of one paper's experiments.
pub fn summary(paper: &str, produced: &[Produced], quick: bool) -> String {
    let mut s = format!(
        "# {paper}: reproduced figures{}\n\nMade by `ftlab reproduce {paper}{}`.\n",
        if quick { " (quick)" } else { "" },
        if quick { " --quick" } else { "" }
    );
    for p in produced {
        let _ = write!(s, "\n## {}\n\nSource: {}.\n\n", p.exp.title, p.exp.source);
        if !p.exp.claim.is_empty() {
            let _ = writeln!(s, "Paper's claim: {}\n", p.exp.claim);
        }
        if !p.exp.workload_note.is_empty() {
            let _ = writeln!(s, "Workload: {}\n", p.exp.workload_note);
        }
        let _ = writeln!(s, "![{}]({}.png)\n", p.exp.title, p.name);
        let _ = write!(s, "| {} |", p.exp.x_label);
        for x in &p.xs {
            let _ = write!(s, " {x} |");
        }
        let _ = write!(s, "\n|---|");
        for _ in &p.xs {
            s.push_str("---|");
        }
        s.push('\n');
        for (name, row) in p.series.iter().zip(&p.y) {
            let _ = write!(
                s,
                "| {} |",
                if name.is_empty() {
                    &p.exp.y_label
                } else {
                    name
                }
            );
            for v in row {
                let _ = write!(s, " {} |", cell_text(*v));
            }
            s.push('\n');
        }
        match &p.exp.normalize {
            Some(r) => {
                let _ = writeln!(
                    s,
                    "\n({}, normalised to {r} at each point; raw numbers in `{}.csv`.)",
                    p.exp.y_label, p.name
                );
            }
            None => {
                let _ = writeln!(s, "\n({}; raw numbers in `{}.csv`.)", p.exp.y_label, p.name);
            }
        }
        let chosen: Vec<String> = p
            .series
            .iter()
            .zip(&p.best)
            .flat_map(|(name, row)| {
                p.xs.iter()
                    .zip(row)
                    .filter_map(move |(x, b)| b.as_ref().map(|b| format!("- {name}, {x}: {b}")))
            })
            .collect();
        if !chosen.is_empty() {
            let _ = writeln!(s, "\nBest configurations:\n\n{}", chosen.join("\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_factors_and_ratios() {
        let r = serde_json::json!({"a": {"b": 2, "c": 3.5, "z": 0}, "n": null});
        assert_eq!(metric(&r, "10 * a.b + a.c").unwrap(), Some(23.5));
        assert_eq!(metric(&r, "0.5*a.b").unwrap(), Some(1.0));
        assert_eq!(metric(&r, "a.c + a.b / a.b").unwrap(), Some(2.75));
        assert_eq!(metric(&r, "a.c / 2 * a.b").unwrap(), Some(0.875));
        // Nothing to divide by, or a null numerator: no value rather than inf or 0.
        assert_eq!(metric(&r, "a.b / a.z").unwrap(), None);
        assert_eq!(metric(&r, "n / a.b").unwrap(), None);
        assert!(metric(&r, "a.b / a.c / a.b")
            .unwrap_err()
            .contains("at most one"));
        assert!(metric(&r, "x * a.b")
            .unwrap_err()
            .contains("`x` is not a number"));
    }

    #[test]
    fn metric_paths_and_sums() {
        let r = serde_json::json!({"a": {"b": 2, "c": 3.5}, "n": null});
        assert_eq!(metric(&r, "a.b").unwrap(), Some(2.0));
        assert_eq!(metric(&r, "a.b + a.c").unwrap(), Some(5.5));
        assert_eq!(metric(&r, "n").unwrap(), None);
        assert!(metric(&r, "a.x").unwrap_err().contains("no `a.x`"));
    }

    #[test]
    fn axes_expand() {
        let a = Axis {
            key: Some("op".into()),
            values: vec![toml::Value::Integer(7), toml::Value::Integer(25)],
            labels: vec![],
            points: vec![],
        };
        let p = a.expand().unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].name, "25");
        assert_eq!(Axis::default().expand().unwrap().len(), 1);
    }

    #[test]
    fn best_expands_every_combination_in_order() {
        let b: Best = toml::from_str(
            r#"
            of = { "ftl_options.threshold" = [1, 32], op = [5.27, 11.12, 17.65] }
            "#,
        )
        .unwrap();
        let v = b.variants().unwrap();
        assert_eq!(v.len(), 6);
        assert_eq!(v[0].0, "ftl_options.threshold=1, op=5.27");
        assert_eq!(v[5].0, "ftl_options.threshold=32, op=17.65");
        assert_eq!(v[5].1["op"], toml::Value::Float(17.65));
        let bad: Best = toml::from_str("of = { op = 5 }").unwrap();
        assert!(bad.variants().unwrap_err().contains("best.of.op"));
        let bad: Best = toml::from_str("of = { op = [5] }\npick = \"median\"").unwrap();
        assert!(bad.variants().unwrap_err().contains("min or max"));
    }

    #[test]
    fn pick_best_takes_the_lowest_or_highest_first_on_ties() {
        let r = |v: Option<f64>| serde_json::json!({ "m": v });
        let reports = [
            r(Some(3.0)),
            r(None),
            r(Some(1.0)),
            r(Some(1.0)),
            r(Some(7.0)),
        ];
        assert_eq!(pick_best(&reports, "m", false).unwrap(), 2);
        assert_eq!(pick_best(&reports, "m", true).unwrap(), 4);
        assert_eq!(pick_best(&[r(None)], "m", false).unwrap(), 0);
        assert!(pick_best(&reports, "nope", false).is_err());
    }

    #[test]
    fn best_belongs_to_series_points() {
        let p: Point = toml::from_str("name = \"a\"\nbest = { of = { op = [1] } }").unwrap();
        let e = series_variants(&[], std::slice::from_ref(&p)).unwrap_err();
        assert!(e.contains("x point `a`"), "{e}");
        let v = series_variants(std::slice::from_ref(&p), &[]).unwrap();
        assert_eq!(v[0].len(), 1);
    }
    #[test]
    fn metric_products_of_paths_and_numbers() {
        let r = serde_json::json!({"n": {"reads": 3, "lat": 100.0}, "cost": 50, "z": null});
        assert_eq!(metric(&r, "n.reads * n.lat").unwrap(), Some(300.0));
        assert_eq!(metric(&r, "cost + n.reads * n.lat").unwrap(), Some(350.0));
        assert_eq!(metric(&r, "2 * cost + 0.5*n.reads").unwrap(), Some(101.5));
        assert_eq!(metric(&r, "cost * z").unwrap(), None);
        assert!(metric(&r, "cost * n.x").unwrap_err().contains("no `n.x`"));
        // Products and a ratio together: (3 * 100) / (2 * 50).
        assert_eq!(metric(&r, "n.reads * n.lat / 2 * cost").unwrap(), Some(3.0));
    }

    fn exp(text: &str) -> Experiment {
        let head = "title = \"t\"\nsource = \"s\"\nx_label = \"x\"\ny_label = \"y\"\n";
        toml::from_str(&format!("{head}{text}")).unwrap()
    }

    #[test]
    fn metrics_replace_series_and_y() {
        let e = exp("kind = \"stacked\"\n[[metrics]]\nname = \"a\"\ny = \"p.a\"\n[[metrics]]\nname = \"b\"\ny = \"p.b\"\n");
        let ss = e.series_points().unwrap();
        assert_eq!(ss.len(), 1, "one run per x point");
        let plotted = e.plotted(&ss);
        assert_eq!(plotted[1], ("b".to_string(), "p.b".to_string()));
        let both = exp("y = \"p.a\"\n[[metrics]]\nname = \"a\"\ny = \"p.a\"\n");
        assert!(both.series_points().unwrap_err().contains("exclude"));
        let with_series = exp(
            "[[metrics]]\nname = \"a\"\ny = \"p.a\"\n[[series.points]]\nname = \"s\"\nset = { ftl = \"bast\" }\n",
        );
        assert!(with_series.series_points().unwrap_err().contains("exclude"));
        assert!(exp("").series_points().unwrap_err().contains("`y`"));
        let bad_kind = exp("y = \"p.a\"\nkind = \"pie\"\n");
        assert!(bad_kind
            .series_points()
            .unwrap_err()
            .contains("kind = `pie`"));
    }

    #[test]
    fn same_configurations_share_a_run_but_best_variants_do_not() {
        let cfg = |op: f64| ftlab::config::parse_str(&format!("op = {op:?}"), "test").unwrap();
        let (a, b) = (cfg(7.0), cfg(25.0));
        // Two variants of one series point (different op), and a second figure
        // (experiment 1) whose plain point configures the same run as variant 1.
        let jobs: Vec<Job> = vec![
            (0, 0, 0, 0, a.clone()),
            (0, 0, 0, 1, b.clone()),
            (1, 0, 0, 0, b),
            (1, 1, 0, 0, a),
        ];
        assert_eq!(first_of_same(&jobs), [0, 1, 1, 0]);
    }

    #[test]
    fn summary_cells_round_by_size_and_show_zero_as_0() {
        assert_eq!(cell_text(Some(0.0)), "0", "a count of 0 is not 0.0000");
        assert_eq!(cell_text(Some(0.25)), "0.2500");
        assert_eq!(cell_text(Some(3288.0)), "3288");
        assert_eq!(cell_text(None), "-");
    }
}
