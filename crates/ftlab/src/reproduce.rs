//! `ftlab reproduce`: reruns the papers' evaluations from experiment files.
//!
//! An experiment file (`experiments/<paper>/<name>.toml`) describes one figure or
//! table: a base configuration, the x axis and the series as lists of points (each a
//! label and the config keys it sets), the metric to plot (a path into the JSON report,
//! or a sum of paths), and the paper's claim. Runs are the cartesian product of x points
//! and series; they run in parallel over the machine's cores. Results are written as
//! CSV, SVG and PNG per experiment plus a markdown summary per paper. `--quick` applies
//! each file's `[quick]` overrides (smaller workloads) so CI can run everything in
//! minutes. A series point may stand for the best of several configurations (`best`:
//! every combination of some keys runs, and the point shows the one with the lowest or
//! highest metric), as in figures that plot each scheme at its best setting. See
//! `experiments/README.md` for the file format.

use crate::config::{set_key, Config};
use crate::run::{run, RunError};
use ftlab_report::plot::{self, Chart, Kind, Series};
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
    /// `line` or `bar`.
    #[serde(default = "default_kind")]
    pub kind: String,
    /// X-axis label.
    pub x_label: String,
    /// Y-axis label.
    pub y_label: String,
    /// Report path(s) plotted, summed with `+`.
    pub y: String,
    /// Factor applied to `y` (e.g. 1e-3 for ns to µs).
    #[serde(default = "one")]
    pub y_scale: f64,
    /// Name of a series to normalise to: every series' `y` is divided by that series'
    /// `y` at the same x point (the papers' "normalized number of ..." figures); no
    /// value where the reference is 0 or missing.
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
}

fn default_kind() -> String {
    "line".into()
}

fn one() -> f64 {
    1.0
}

/// Evaluates a metric expression over the JSON report: a sum of terms (`a + b`), each a
/// dotted report path optionally multiplied by a number (`30500 * a.b`, to turn an
/// operation count into time), and optionally one ratio of two such sums (`a + b / c`,
/// for averages such as merge cost per merge). A null term, or a ratio whose
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

/// A sum of `[k *] path` terms (see [`metric`]).
fn metric_sum(report: &serde_json::Value, expr: &str) -> Result<Option<f64>, String> {
    let mut sum = 0.0;
    for term in expr.split('+') {
        let (factor, path) = match term.split_once('*') {
            None => (1.0, term.trim()),
            Some((k, path)) => {
                let k = k.trim();
                let k: f64 = k
                    .parse()
                    .map_err(|_| format!("`{}`: `{k}` is not a number", term.trim()))?;
                (k, path.trim())
            }
        };
        let mut v = report;
        for part in path.split('.') {
            v = v
                .get(part)
                .ok_or_else(|| format!("the report has no `{path}`"))?;
        }
        match v {
            serde_json::Value::Null => return Ok(None),
            other => {
                sum += factor
                    * other
                        .as_f64()
                        .ok_or_else(|| format!("`{path}` is not a number"))?
            }
        }
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
        let ss = exp.series.expand().map_err(spec_err)?;
        let vs = series_variants(&ss, &xs).map_err(spec_err)?;
        if let Some(reference) = &exp.normalize {
            if !ss.iter().any(|s| &s.name == reference) {
                return Err(spec_err(format!(
                    "normalize = `{reference}` names no series (series: {})",
                    ss.iter()
                        .map(|s| s.name.as_str())
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
    let total = jobs.len();
    let results: Mutex<Results> = Mutex::new(BTreeMap::new());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((ei, si, xi, vi, cfg)) = jobs.get(i) else {
                    break;
                };
                let (path, _, xs, ss, _) = &exps[*ei];
                let ctx = |e: RunError| ReproError::Run {
                    path: path.display().to_string(),
                    x: xs[*xi].name.clone(),
                    series: ss[*si].name.clone(),
                    source: Box::new(e),
                };
                let r = match run(cfg, &mut |_| {}) {
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
        let mut best = vec![vec![None; xs.len()]; ss.len()];
        let mut cells: Vec<Vec<Cell>> = Vec::with_capacity(ss.len());
        for (si, (s, best_row)) in ss.iter().zip(best.iter_mut()).enumerate() {
            let mut row = Vec::with_capacity(xs.len());
            for (xi, best_cell) in best_row.iter_mut().enumerate() {
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
                if s.best.is_some() {
                    *best_cell = Some(vs[si][chosen].0.clone());
                }
                let report = reports.swap_remove(chosen);
                row.push(Cell {
                    y: metric(&report, &exp.y)
                        .map_err(metric_err)?
                        .map(|v| v * exp.y_scale),
                    columns: exp
                        .columns
                        .iter()
                        .map(|c| metric(&report, c))
                        .collect::<Result<_, _>>()
                        .map_err(metric_err)?,
                });
            }
            cells.push(row);
        }
        if let Some(reference) = &exp.normalize {
            let r = ss
                .iter()
                .position(|s| &s.name == reference)
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
        for (si, (s, row)) in ss.iter().zip(&cells).enumerate() {
            for (xi, (x, cell)) in xs.iter().zip(row).enumerate() {
                let _ = write!(
                    csv,
                    "{},{},{}",
                    csv_field(&x.name),
                    csv_field(&s.name),
                    fmt(cell.y)
                );
                for c in &cell.columns {
                    let _ = write!(csv, ",{}", fmt(*c));
                }
                if any_best {
                    let _ = write!(
                        csv,
                        ",{}",
                        csv_field(best[si][xi].as_deref().unwrap_or_default())
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
            series: ss
                .iter()
                .zip(&y)
                .map(|(s, v)| Series {
                    name: s.name.clone(),
                    values: v.clone(),
                })
                .collect(),
            kind: if exp.kind == "bar" {
                Kind::Bar
            } else {
                Kind::Line
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
            series: ss.iter().map(|p| p.name.clone()).collect(),
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
}
