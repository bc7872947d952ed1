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
//!
//! The parts, in the order a paper goes through them: `schema` reads the files,
//! `expand` turns them into runs, `run` makes the runs, `table` evaluates the
//! [`metric`]s over their reports, and `output` writes the CSV, the charts and the
//! [`summary`].

use ftlab::RunError;
use std::path::{Path, PathBuf};
use thiserror::Error;

mod expand;
mod metric;
mod output;
mod run;
mod schema;
mod table;

pub use metric::metric;
pub use output::summary;
pub use schema::{Axis, Best, Experiment, MetricSeries, Point};

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
    /// The worker threads could not be started.
    #[error("cannot start {threads} worker threads: {why}")]
    Threads {
        /// How many were asked for.
        threads: usize,
        /// Why.
        why: String,
    },
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
    /// The paper's values per (series, x), where it states them.
    pub paper: Vec<Vec<Option<f64>>>,
    /// Which workload each point ran (the chart's caption).
    pub caption: String,
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
    let (exps, jobs) = expand::plan(&files, opts.quick, &root)?;
    let mut results = run::run_all(&exps, &jobs, opts.jobs, progress)?;
    let out_dir = opts.out.join(paper);
    std::fs::create_dir_all(&out_dir).map_err(|e| ReproError::Io {
        path: out_dir.display().to_string(),
        why: e.to_string(),
    })?;
    let mut produced = Vec::new();
    for (ei, e) in exps.into_iter().enumerate() {
        let name = e
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let plotted = e.exp.plotted(&e.ss);
        let table = table::tabulate(ei, &e, &plotted, &mut results)?;
        output::write_experiment(&out_dir, &name, &e, &plotted, &table)?;
        let y = table.y();
        produced.push(Produced {
            name,
            xs: e.xs.iter().map(|p| p.name.clone()).collect(),
            series: plotted.into_iter().map(|(name, _)| name).collect(),
            y,
            best: table.best,
            paper: e.paper,
            caption: e.caption,
            exp: e.exp,
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
