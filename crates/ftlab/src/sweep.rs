//! Parameter studies: a base configuration and axes, expanded into a grid of points,
//! each run once on a pool of threads, and gathered into one tidy table.
//!
//! A study file ([`Study::parse`]) has a `[base]` table (any key of a `ftlab run
//! --config` file), an `[axes]` table (each key a config key, dotted for nested ones,
//! and its values: a list, or a range `{ from, to, step }`), and optional `[zip.<name>]`
//! tables whose lists advance together. The grid is the cartesian product of the axes
//! in the order the file writes them (the last varies fastest), then of the zip groups.
//!
//! Each point's resolved [`Config`] is hashed ([`point_hash`]: SHA-256 of the ftlab
//! version and the configuration as JSON, 16 hex digits) and its report is stored as
//! `<out>/points/<hash>.json` ([`run_points`]); a rerun finds it and skips the point, so
//! an interrupted study finishes only what is missing. Reports are written to a
//! temporary name and renamed, so a crash never leaves half a report behind. A point
//! that fails (a value the run refuses, data loss found by the oracle, an internal
//! error) is an [`Outcome::Failed`] with its error and the command line that reruns it;
//! failures are not stored, so the next run tries them again.
//!
//! Choices left open: the hash covers the configuration (trace *path* included, trace
//! *contents* not) and the ftlab version, so a changed trace file at the same path needs
//! `force`; a relative trace path is taken from the study file's folder and made
//! absolute (what workers of a cluster need); an axis key unknown to the configuration
//! stops the study before any point runs, while a known key with a bad value fails only
//! its points. The table ([`Table`]) has one row per point: `point`, `hash`, one
//! column per axis key, `status`, `error`, `command`, then every scalar of the report
//! (dotted paths, the `config` echo and lists left out) with a type per column (integer,
//! float, boolean or string; null where a point has no value).

use crate::config::{self, Config};
use crate::sim::{run, NoObserver};
use rayon::prelude::*;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use thiserror::Error;

/// Points a study may have before the caller must confirm (`--yes`).
pub const POINT_LIMIT: usize = 1000;

/// A study that cannot run: everything here is found before any point runs.
#[derive(Debug, Error)]
pub enum SweepError {
    /// The study file or the output folder.
    #[error("{path}: {why}")]
    Io {
        /// File or folder.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// The study is not valid.
    #[error("{origin}: {why}")]
    Invalid {
        /// The study file.
        origin: String,
        /// What is wrong, naming the table and key.
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

/// One factor of the grid: a single axis, or a zip group (several keys whose values
/// advance together).
#[derive(Clone, Debug, PartialEq)]
pub struct Factor {
    /// The config keys it sets (one for an axis).
    pub keys: Vec<String>,
    /// Its steps: one value per key each.
    pub steps: Vec<Vec<toml::Value>>,
}

/// A parsed study: base configuration and the factors of the grid.
#[derive(Clone, Debug)]
pub struct Study {
    /// Where it came from (errors name it).
    pub origin: String,
    /// Folder relative trace paths are taken from.
    pub root: PathBuf,
    /// The base configuration, as TOML.
    pub base: toml::Table,
    /// The factors, in the order of the product (the last varies fastest).
    pub factors: Vec<Factor>,
}

/// One point of the grid.
#[derive(Clone, Debug)]
pub struct Point {
    /// Its place in the grid, from 0.
    pub index: usize,
    /// The value of each axis key, in the order of [`Study::axis_keys`].
    pub values: Vec<toml::Value>,
    /// Its configuration, or why the values do not make one.
    pub config: Result<Config, String>,
    /// Content hash of the configuration ([`point_hash`]).
    pub hash: String,
    /// The command line that runs this point alone.
    pub command: String,
}

/// What running a point gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The report, as JSON; `cached` when it was found in the results folder.
    Report {
        /// The report.
        report: Json,
        /// Found in the results folder rather than run.
        cached: bool,
    },
    /// The point failed: why.
    Failed(String),
}

impl Study {
    /// Reads a study file; relative trace paths are taken from its folder.
    pub fn load(path: &Path) -> Result<Study, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|e| SweepError::Io {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        // `study.toml` has the parent "": the current folder.
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let root = parent
            .canonicalize()
            .unwrap_or_else(|_| parent.to_path_buf());
        Study::parse(&text, &path.display().to_string(), &root)
    }

    /// Parses a study from TOML text; `origin` names it in errors and `root` is the
    /// folder relative trace paths are taken from.
    pub fn parse(text: &str, origin: &str, root: &Path) -> Result<Study, SweepError> {
        let invalid = |why: String| SweepError::Invalid {
            origin: origin.to_string(),
            why,
        };
        let doc: toml::Table = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        // The order of keys as written (toml::Table sorts them).
        let ordered: toml_edit::DocumentMut = text
            .parse()
            .map_err(|e: toml_edit::TomlError| invalid(e.to_string()))?;
        for key in doc.keys() {
            if !matches!(key.as_str(), "base" | "axes" | "zip") {
                return Err(invalid(format!(
                    "unknown table `{key}` (a study has [base], [axes] and [zip.<name>])"
                )));
            }
        }
        let table = |name: &str| -> Result<toml::Table, SweepError> {
            match doc.get(name) {
                None => Ok(toml::Table::new()),
                Some(toml::Value::Table(t)) => Ok(t.clone()),
                Some(_) => Err(invalid(format!("`{name}` must be a table"))),
            }
        };
        let order = |path: &[&str]| -> Vec<String> {
            let mut item = ordered.as_item();
            for p in path {
                match item.get(p) {
                    Some(i) => item = i,
                    None => return Vec::new(),
                }
            }
            item.as_table_like()
                .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
                .unwrap_or_default()
        };
        let base = table("base")?;
        let axes = flatten_keys(&table("axes")?);
        let mut factors = Vec::new();
        for key in ordered_keys(&axes, &order(&["axes"])) {
            let steps =
                axis_values(&axes[&key]).map_err(|why| invalid(format!("axes.{key}: {why}")))?;
            factors.push(Factor {
                keys: vec![key],
                steps: steps.into_iter().map(|v| vec![v]).collect(),
            });
        }
        let zips = table("zip")?;
        for name in order(&["zip"]) {
            let group = match zips.get(&name) {
                Some(toml::Value::Table(t)) => flatten_keys(t),
                _ => return Err(invalid(format!("zip.{name} must be a table of lists"))),
            };
            let keys = ordered_keys(&group, &order(&["zip", &name]));
            let mut columns = Vec::new();
            for key in &keys {
                let v = axis_values(&group[key])
                    .map_err(|why| invalid(format!("zip.{name}.{key}: {why}")))?;
                columns.push(v);
            }
            let len = columns.first().map_or(0, Vec::len);
            if len == 0 {
                return Err(invalid(format!("zip.{name}: empty group")));
            }
            if let Some(i) = columns.iter().position(|c| c.len() != len) {
                return Err(invalid(format!(
                    "zip.{name}: `{}` has {} values, `{}` has {}: lists of a zip group \
                     advance together and must have the same length",
                    keys[0],
                    len,
                    keys[i],
                    columns[i].len()
                )));
            }
            let steps = (0..len)
                .map(|s| columns.iter().map(|c| c[s].clone()).collect())
                .collect();
            factors.push(Factor { keys, steps });
        }
        let mut seen = std::collections::BTreeSet::new();
        for key in factors.iter().flat_map(|f| &f.keys) {
            if !seen.insert(key.clone()) {
                return Err(invalid(format!("`{key}` is on more than one axis")));
            }
        }
        let study = Study {
            origin: origin.to_string(),
            root: root.to_path_buf(),
            base,
            factors,
        };
        study.check_keys()?;
        Ok(study)
    }

    /// The axis keys, one table column each, in grid order.
    pub fn axis_keys(&self) -> Vec<String> {
        self.factors.iter().flat_map(|f| f.keys.clone()).collect()
    }

    /// How many points the grid has.
    pub fn len(&self) -> usize {
        self.factors.iter().map(|f| f.steps.len()).product()
    }

    /// Whether the grid has no point (never: an empty axis is refused).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Refuses a base that is not a configuration, and an axis key that names nothing
    /// in it (an unknown key is a typo: every point would fail the same way).
    fn check_keys(&self) -> Result<(), SweepError> {
        let invalid = |why: String| SweepError::Invalid {
            origin: self.origin.clone(),
            why,
        };
        config::from_table(self.base.clone(), "[base]").map_err(|e| invalid(e.to_string()))?;
        for f in &self.factors {
            for (k, key) in f.keys.iter().enumerate() {
                let mut t = self.base.clone();
                config::set_key(&mut t, key, f.steps[0][k].clone())
                    .map_err(|why| invalid(format!("axis `{key}`: {why}")))?;
                if let Err(e) = config::from_table(t, "axis") {
                    let why = e.to_string();
                    if why.contains("unknown field") {
                        return Err(invalid(format!(
                            "axis `{key}` is not a configuration key ({})",
                            why.trim_start_matches("axis: ")
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Every point of the grid, in order: the configuration each resolves to (or why
    /// it does not), its hash and the command that runs it alone.
    pub fn points(&self) -> Vec<Point> {
        let total = self.len();
        let mut out = Vec::with_capacity(total);
        for index in 0..total {
            // Mixed radix, the last factor fastest.
            let mut rest = index;
            let mut picks = vec![0; self.factors.len()];
            for (i, f) in self.factors.iter().enumerate().rev() {
                picks[i] = rest % f.steps.len();
                rest /= f.steps.len();
            }
            let mut table = self.base.clone();
            let mut values = Vec::new();
            let mut set = Ok(());
            for (f, &p) in self.factors.iter().zip(&picks) {
                for (key, v) in f.keys.iter().zip(&f.steps[p]) {
                    values.push(v.clone());
                    if set.is_ok() {
                        set = config::set_key(&mut table, key, v.clone());
                    }
                }
            }
            let raw = serde_json::to_string(&table).unwrap_or_default();
            let config = set.and_then(|()| {
                let mut cfg = config::from_table(table, "point")
                    .map_err(|e| e.to_string().trim_start_matches("point: ").to_string())?;
                if let Some(trace) = &cfg.trace {
                    let p = Path::new(trace);
                    if p.is_relative() {
                        let joined = self.root.join(p);
                        let joined = joined.canonicalize().unwrap_or(joined);
                        cfg.trace = Some(joined.display().to_string());
                    }
                }
                Ok(cfg)
            });
            let (hash, command) = match &config {
                Ok(cfg) => (point_hash(cfg), command_line(cfg)),
                Err(_) => (hash_text(&raw), String::new()),
            };
            out.push(Point {
                index,
                values,
                config,
                hash,
                command,
            });
        }
        out
    }
}

/// Dotted keys of nested tables (`[axes.nand_params]` `page_size = [..]` is the axis
/// `nand_params.page_size`), as written; lists and ranges are leaves.
fn flatten_keys(t: &toml::Table) -> toml::Table {
    let mut out = toml::Table::new();
    for (k, v) in t {
        match v {
            toml::Value::Table(inner) if !is_range(inner) => {
                for (ik, iv) in flatten_keys(inner) {
                    out.insert(format!("{k}.{ik}"), iv);
                }
            }
            other => {
                out.insert(k.clone(), other.clone());
            }
        }
    }
    out
}

fn is_range(t: &toml::Table) -> bool {
    t.contains_key("from") || t.contains_key("to") || t.contains_key("step")
}

/// The keys of `t` in the order the file writes them (`written` lists the top-level
/// names in order; nested keys follow their parent's place).
fn ordered_keys(t: &toml::Table, written: &[String]) -> Vec<String> {
    let mut keys: Vec<String> = t.keys().cloned().collect();
    let place = |k: &String| {
        let head = k.split('.').next().unwrap_or(k);
        written
            .iter()
            .position(|w| w == k || w == head)
            .unwrap_or(usize::MAX)
    };
    keys.sort_by_key(|k| place(k));
    keys
}

/// The values of an axis: a non-empty list, or a range `{ from, to, step }` (step 1
/// when left out; `to` included when a step lands on it).
fn axis_values(v: &toml::Value) -> Result<Vec<toml::Value>, String> {
    match v {
        toml::Value::Array(a) if a.is_empty() => Err("empty axis: give at least one value".into()),
        toml::Value::Array(a) => Ok(a.clone()),
        toml::Value::Table(t) => range(t),
        other => Err(format!(
            "`{other}` is not a list of values or a range {{ from, to, step }}"
        )),
    }
}

fn range(t: &toml::Table) -> Result<Vec<toml::Value>, String> {
    if let Some(k) = t
        .keys()
        .find(|k| !matches!(k.as_str(), "from" | "to" | "step"))
    {
        return Err(format!(
            "unknown range key `{k}` (a range has from, to and step)"
        ));
    }
    let get = |k: &str| -> Result<Option<toml::Value>, String> {
        match t.get(k) {
            None => Ok(None),
            Some(v @ (toml::Value::Integer(_) | toml::Value::Float(_))) => Ok(Some(v.clone())),
            Some(v) => Err(format!("range `{k}` = {v}: must be a number")),
        }
    };
    let (from, to) = match (get("from")?, get("to")?) {
        (Some(f), Some(t)) => (f, t),
        _ => return Err("a range needs `from` and `to`".into()),
    };
    let step = get("step")?.unwrap_or(toml::Value::Integer(1));
    let num = |v: &toml::Value| {
        v.as_float()
            .or(v.as_integer().map(|i| i as f64))
            .unwrap_or(0.0)
    };
    let (f, e, s) = (num(&from), num(&to), num(&step));
    if s <= 0.0 || !s.is_finite() {
        return Err(format!("range step {s}: must be positive"));
    }
    if e < f {
        return Err(format!("range from {f} to {e}: `to` is below `from`"));
    }
    let n = ((e - f) / s + 1e-9).floor() as usize + 1;
    if n > 1_000_000 {
        return Err(format!("range of {n} values: too many"));
    }
    if let (Some(f), Some(s)) = (from.as_integer(), step.as_integer()) {
        if to.as_integer().is_some() {
            return Ok((0..n as i64)
                .map(|i| toml::Value::Integer(f + i * s))
                .collect());
        }
    }
    // Floats, rounded to the decimals `from` and `step` are written with, so 0.1 + 0.2
    // is 0.3.
    let decimals = |x: f64| {
        let s = format!("{x}");
        s.split_once('.').map_or(0, |(_, d)| d.len())
    };
    let d = decimals(f).max(decimals(s));
    Ok((0..n)
        .map(|i| {
            let v = f + i as f64 * s;
            toml::Value::Float(format!("{v:.d$}").parse().unwrap_or(v))
        })
        .collect())
}

/// The content hash of a configuration: SHA-256 of the ftlab version and the
/// configuration as JSON, as 16 hex digits.
pub fn point_hash(cfg: &Config) -> String {
    hash_text(&serde_json::to_string(cfg).expect("a config serialises"))
}

fn hash_text(text: &str) -> String {
    let mut h = Sha256::new();
    h.update(concat!("ftlab ", env!("CARGO_PKG_VERSION"), "\n"));
    h.update(text.as_bytes());
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `ftlab run` with a `--set` for every key where `cfg` differs from the defaults:
/// the command that runs this configuration alone.
pub fn command_line(cfg: &Config) -> String {
    let flat = |c: &Config| {
        let mut out = Vec::new();
        if let Ok(j) = serde_json::to_value(c) {
            flatten_json("", &j, &mut out);
        }
        out
    };
    let defaults: std::collections::BTreeMap<String, Json> =
        flat(&Config::default()).into_iter().collect();
    let mut cmd = String::from("ftlab run");
    for (key, v) in flat(cfg) {
        if defaults.get(&key) == Some(&v) || v.is_null() {
            continue;
        }
        let text = match &v {
            Json::String(s) => toml::Value::String(s.clone()).to_string(),
            other => other.to_string(),
        };
        cmd.push_str(&format!(" --set {}", shell_quote(&format!("{key}={text}"))));
    }
    cmd
}

/// Leaves of a JSON value by dotted path (lists and empty objects are leaves).
fn flatten_json(prefix: &str, v: &Json, out: &mut Vec<(String, Json)>) {
    match v {
        Json::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_json(&key, x, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.=,/:+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Why a configuration gave no report.
#[derive(Debug, Error)]
pub enum PointError {
    /// The run refused the configuration or its input (bad value, unreadable trace).
    #[error(transparent)]
    Refused(#[from] crate::RunError),
    /// The run found a failure: data lost, an invariant broken, a failed recovery, or
    /// an internal error the engine caught.
    #[error("{0}")]
    Found(crate::sim::Failure),
    /// A panic outside the engine's own guard.
    #[error("internal error (a bug in ftlab, please report it): {0}")]
    Panicked(String),
}

/// Runs one configuration: its report as JSON, or why there is none.
pub fn run_config(cfg: &Config) -> Result<Json, PointError> {
    let out = catch_unwind(AssertUnwindSafe(|| run(cfg, &mut NoObserver))).map_err(|p| {
        PointError::Panicked(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        )
    })??;
    match out.failure {
        Some(f) => Err(PointError::Found(f)),
        None => Ok(serde_json::to_value(&out.report).expect("a report serialises")),
    }
}

/// Runs one point: [`run_config`], its failure with the command that reruns it.
pub fn run_point(p: &Point) -> Outcome {
    match &p.config {
        Err(why) => Outcome::Failed(why.clone()),
        Ok(cfg) => match run_config(cfg) {
            Ok(report) => Outcome::Report {
                report,
                cached: false,
            },
            Err(why) => Outcome::Failed(why.to_string()),
        },
    }
}

/// Where and how [`run_points`] runs.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The results folder: reports are stored as `points/<hash>.json` and found there
    /// by a rerun. None: nothing is stored.
    pub out: Option<PathBuf>,
    /// Run every point, even those with a stored report.
    pub force: bool,
    /// Worker threads; 0: one per core.
    pub jobs: usize,
}

/// How far a study has got: points finished (run or found) and failed, of `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// Points finished.
    pub done: usize,
    /// Of which failed.
    pub failed: usize,
    /// Points in the study.
    pub total: usize,
}

/// Checks that `out/points` can be created and written to.
pub fn prepare_out(out: &Path) -> Result<PathBuf, SweepError> {
    let dir = out.join("points");
    let io = |why: String| SweepError::Io {
        path: dir.display().to_string(),
        why: format!("cannot write the results folder: {why}"),
    };
    std::fs::create_dir_all(&dir).map_err(|e| io(e.to_string()))?;
    let probe = dir.join(".write-test");
    std::fs::write(&probe, b"").map_err(|e| io(e.to_string()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(dir)
}

/// Runs every point on `opts.jobs` threads, one point per task (points differ in
/// length by orders of magnitude), and returns their outcomes in grid order.
/// `progress` is called as points finish. A stored report with the point's hash is
/// taken instead of running unless `opts.force`; a fresh report is stored under a
/// temporary name and renamed.
pub fn run_points(
    points: &[Point],
    opts: &RunOptions,
    progress: &(dyn Fn(Tally) + Sync),
) -> Result<Vec<Outcome>, SweepError> {
    let dir = match &opts.out {
        Some(out) => Some(prepare_out(out)?),
        None => None,
    };
    let failed = AtomicUsize::new(0);
    let force = opts.force;
    run_on_pool(
        points,
        opts.jobs,
        |p| point_outcome(p, dir.as_deref(), force),
        |o, done| {
            if matches!(o, Outcome::Failed(_)) {
                failed.fetch_add(1, Ordering::Relaxed);
            }
            progress(Tally {
                done,
                failed: failed.load(Ordering::Relaxed),
                total: points.len(),
            });
        },
    )
}

/// The one way ftlab runs many points (`sweep`, `reproduce`): `work` on each item on a
/// pool of `jobs` threads (0: one per core), one item per task (runs differ in length
/// by orders of magnitude, so idle threads take them one at a time), the results in
/// the order of `items` whatever order they finish in. `finished(result, done)` is
/// called as each finishes, `done` counting the finished ones.
pub fn run_on_pool<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
    finished: impl Fn(&R, usize) + Sync,
) -> Result<Vec<R>, SweepError> {
    let threads = if jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        jobs
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("ftlab-run-{i}"))
        .build()
        .map_err(|e| SweepError::Threads {
            threads,
            why: e.to_string(),
        })?;
    let done = AtomicUsize::new(0);
    // A run per core already keeps every core busy: their reader threads would only
    // take turns with them (crate::readahead; reports are the same either way).
    let read_ahead = crate::readahead::enabled();
    if threads > 1 {
        crate::readahead::set_enabled(false);
    }
    let results = pool.install(|| {
        items
            .par_iter()
            .with_max_len(1)
            .map(|item| {
                let r = work(item);
                finished(&r, done.fetch_add(1, Ordering::Relaxed) + 1);
                r
            })
            .collect()
    });
    crate::readahead::set_enabled(read_ahead);
    Ok(results)
}

fn point_outcome(p: &Point, dir: Option<&Path>, force: bool) -> Outcome {
    let Some(dir) = dir else {
        return run_point(p);
    };
    if !force {
        if let Some(report) = stored_report(dir, p) {
            return Outcome::Report {
                report,
                cached: true,
            };
        }
    }
    let o = run_point(p);
    if let Outcome::Report { report, .. } = &o {
        if let Err(why) = store_report(dir, p, report) {
            return Outcome::Failed(why);
        }
    }
    o
}

/// The report of point `p` stored in `dir` (the `points` folder of a results folder)
/// by an earlier run, if there is one that reads as JSON.
pub fn stored_report(dir: &Path, p: &Point) -> Option<Json> {
    if p.config.is_err() {
        return None;
    }
    let text = std::fs::read_to_string(dir.join(format!("{}.json", p.hash))).ok()?;
    serde_json::from_str(&text).ok()
}

/// Stores the report of point `p` in `dir` as `<hash>.json`: written to a temporary
/// name and renamed, so a crash never leaves half a report.
pub fn store_report(dir: &Path, p: &Point, report: &Json) -> Result<(), String> {
    let path = dir.join(format!("{}.json", p.hash));
    let tmp = dir.join(format!(".{}.json.tmp", p.hash));
    let text = serde_json::to_string_pretty(report).expect("a report serialises");
    std::fs::write(&tmp, text + "\n")
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("cannot store the report {}: {e}", path.display()))
}

/// A cell of the table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// No value.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// Text.
    Str(String),
}

/// The type of a column: the narrowest that holds every non-null cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// 64-bit signed integers.
    Int,
    /// 64-bit floats (integers among them converted).
    Float,
    /// Booleans.
    Bool,
    /// Text (any other mix, each cell as written).
    Str,
}

/// One column of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// Its name: `point`, `hash`, an axis key, `status`, `error`, `command`, or the
    /// dotted path of a report value.
    pub name: String,
    /// Its type.
    pub kind: ColumnType,
    /// One cell per row, converted to `kind` (or null).
    pub cells: Vec<Cell>,
}

/// The tidy table of a study: one row per point.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The columns, in order.
    pub columns: Vec<Column>,
}

impl Table {
    /// The table of `points` (of `study`) and their `outcomes`.
    pub fn build(study: &Study, points: &[Point], outcomes: &[Outcome]) -> Table {
        let mut columns = Vec::new();
        let mut push = |name: &str, cells: Vec<Cell>| columns.push(typed(name, cells));
        push(
            "point",
            points.iter().map(|p| Cell::Int(p.index as i64)).collect(),
        );
        push(
            "hash",
            points.iter().map(|p| Cell::Str(p.hash.clone())).collect(),
        );
        for (k, key) in study.axis_keys().iter().enumerate() {
            push(
                key,
                points.iter().map(|p| toml_cell(&p.values[k])).collect(),
            );
        }
        let failed = |o: &Outcome| matches!(o, Outcome::Failed(_));
        push(
            "status",
            outcomes
                .iter()
                .map(|o| Cell::Str(if failed(o) { "failed" } else { "ok" }.into()))
                .collect(),
        );
        push(
            "error",
            outcomes
                .iter()
                .map(|o| match o {
                    Outcome::Failed(why) => Cell::Str(why.clone()),
                    _ => Cell::Null,
                })
                .collect(),
        );
        push(
            "command",
            points
                .iter()
                .zip(outcomes)
                .map(|(p, o)| {
                    if failed(o) && !p.command.is_empty() {
                        Cell::Str(p.command.clone())
                    } else {
                        Cell::Null
                    }
                })
                .collect(),
        );
        // Metrics: every scalar of the reports, in the order of the first report.
        let mut names: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut rows: Vec<std::collections::HashMap<String, Json>> = Vec::new();
        for o in outcomes {
            let mut row = std::collections::HashMap::new();
            if let Outcome::Report { report, .. } = o {
                let mut leaves = Vec::new();
                if let Json::Object(m) = report {
                    for (k, v) in m.iter().filter(|(k, _)| k.as_str() != "config") {
                        flatten_json(k, v, &mut leaves);
                    }
                }
                for (k, v) in leaves {
                    if v.is_array() || v.is_object() {
                        continue;
                    }
                    if seen.insert(k.clone()) {
                        names.push(k.clone());
                    }
                    row.insert(k, v);
                }
            }
            rows.push(row);
        }
        for name in names {
            let cells = rows
                .iter()
                .map(|r| r.get(&name).map_or(Cell::Null, json_cell))
                .collect();
            push(&name, cells);
        }
        Table { columns }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.cells.len())
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

fn toml_cell(v: &toml::Value) -> Cell {
    match v {
        toml::Value::Integer(i) => Cell::Int(*i),
        toml::Value::Float(f) => Cell::Float(*f),
        toml::Value::Boolean(b) => Cell::Bool(*b),
        toml::Value::String(s) => Cell::Str(s.clone()),
        other => Cell::Str(other.to_string()),
    }
}

fn json_cell(v: &Json) -> Cell {
    match v {
        Json::Null => Cell::Null,
        Json::Bool(b) => Cell::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => n.as_f64().map_or(Cell::Null, Cell::Float),
        },
        Json::String(s) => Cell::Str(s.clone()),
        other => Cell::Str(other.to_string()),
    }
}

/// A column of `cells` in the narrowest type that holds them all.
fn typed(name: &str, cells: Vec<Cell>) -> Column {
    let mut kinds = cells.iter().filter_map(|c| match c {
        Cell::Null => None,
        Cell::Int(_) => Some(ColumnType::Int),
        Cell::Float(_) => Some(ColumnType::Float),
        Cell::Bool(_) => Some(ColumnType::Bool),
        Cell::Str(_) => Some(ColumnType::Str),
    });
    let first = kinds.next().unwrap_or(ColumnType::Str);
    let kind = kinds.fold(first, |a, b| match (a, b) {
        (a, b) if a == b => a,
        (ColumnType::Int, ColumnType::Float) | (ColumnType::Float, ColumnType::Int) => {
            ColumnType::Float
        }
        _ => ColumnType::Str,
    });
    let cells = cells
        .into_iter()
        .map(|c| match (kind, c) {
            (_, Cell::Null) => Cell::Null,
            (ColumnType::Float, Cell::Int(i)) => Cell::Float(i as f64),
            (ColumnType::Str, Cell::Int(i)) => Cell::Str(i.to_string()),
            (ColumnType::Str, Cell::Float(f)) => Cell::Str(f.to_string()),
            (ColumnType::Str, Cell::Bool(b)) => Cell::Str(b.to_string()),
            (_, c) => c,
        })
        .collect();
    Column {
        name: name.to_string(),
        kind,
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study(text: &str) -> Result<Study, SweepError> {
        Study::parse(text, "study.toml", Path::new("/data"))
    }

    #[test]
    fn axes_multiply_in_written_order_and_zips_advance_together() {
        let s = study(
            r#"
            [base]
            capacity = "64MiB"
            [axes]
            op = [5, 7]
            ftl = ["page", "dftl", "fast"]
            [zip.geo]
            "nand_params.page_size" = [2048, 4096]
            "nand_params.pages_per_block" = [64, 128]
            "#,
        )
        .unwrap();
        assert_eq!(
            s.axis_keys(),
            [
                "op",
                "ftl",
                "nand_params.page_size",
                "nand_params.pages_per_block"
            ]
        );
        let p = s.points();
        assert_eq!(p.len(), 12);
        assert_eq!(p[0].values[1], toml::Value::String("page".into()));
        assert_eq!(p[1].values[2], toml::Value::Integer(4096));
        assert_eq!(p[1].values[3], toml::Value::Integer(128));
        assert_eq!(p[2].values[1], toml::Value::String("dftl".into()));
        assert_eq!(p[6].values[0], toml::Value::Integer(7));
        let cfg = p[11].config.as_ref().unwrap();
        assert_eq!((cfg.op, cfg.ftl.as_str()), (7.0, "fast"));
        assert_eq!(cfg.nand_params.pages_per_block, Some(128));
        let hashes: std::collections::HashSet<_> = p.iter().map(|p| &p.hash).collect();
        assert_eq!(hashes.len(), 12, "every point has its own hash");
        assert_eq!(p[3].hash, study_again_hash(&s, 3));
    }

    fn study_again_hash(s: &Study, i: usize) -> String {
        s.points()[i].hash.clone()
    }

    #[test]
    fn ranges_include_their_end_and_round_floats() {
        let s = study("[axes]\nop = { from = 3, to = 9, step = 2 }\nseed = { from = 1, to = 3 }")
            .unwrap();
        assert_eq!(s.factors[0].steps.len(), 4);
        assert_eq!(s.factors[1].steps[2][0], toml::Value::Integer(3));
        let s = study("[axes]\n\"synthetic.read_ratio\" = { from = 0.1, to = 0.3, step = 0.1 }")
            .unwrap();
        let v: Vec<_> = s.factors[0].steps.iter().map(|s| s[0].clone()).collect();
        assert_eq!(
            v,
            [0.1, 0.2, 0.3].map(toml::Value::Float).to_vec(),
            "0.1 + 2 x 0.1 is 0.3, and 0.3 is in"
        );
    }

    #[test]
    fn bad_studies_are_refused_before_any_point() {
        let err = |t: &str| study(t).unwrap_err().to_string();
        assert!(err("[axes]\nop = []").contains("axes.op: empty axis"));
        assert!(err("[axes]\nopp = [1, 2]").contains("axis `opp` is not a configuration key"));
        assert!(err("[axes]\n\"synthetic.cnt\" = [1]").contains("`synthetic.cnt`"));
        assert!(err("[base]\nftl = 3").contains("[base]"));
        assert!(err("[axis]\nop = [1]").contains("unknown table `axis`"));
        assert!(err("[axes]\nop = { from = 5, to = 1 }").contains("below"));
        assert!(err("[axes]\nop = 5").contains("not a list"));
        assert!(err("[zip.g]\nop = [1, 2]\nseed = [1]").contains("same length"));
        assert!(err("[axes]\nop = [1]\n[zip.g]\nop = [2]").contains("more than one axis"));
    }

    #[test]
    fn a_bad_value_fails_its_point_only() {
        let s = study("[axes]\nop = [7, \"lots\"]").unwrap();
        let p = s.points();
        assert!(p[0].config.is_ok());
        let why = p[1].config.as_ref().unwrap_err();
        assert!(why.contains("`op`"), "{why}");
    }

    #[test]
    fn relative_traces_are_taken_from_the_study_folder() {
        let s = study("[base]\ntrace = \"t.spc\"\n[axes]\nop = [7]").unwrap();
        let p = s.points();
        assert_eq!(
            p[0].config.as_ref().unwrap().trace.as_deref(),
            Some("/data/t.spc")
        );
    }

    #[test]
    fn the_command_line_rebuilds_the_configuration() {
        let mut cfg = Config {
            ftl: "dftl".into(),
            op: 12.5,
            ..Config::default()
        };
        cfg.synthetic.count = 1234;
        let cmd = command_line(&cfg);
        assert_eq!(
            cmd,
            "ftlab run --set 'ftl=\"dftl\"' --set op=12.5 --set synthetic.count=1234"
        );
        // Each --set, through the same loader as `ftlab run`, gives `cfg` back.
        let sets: Vec<String> = cmd
            .split(" --set ")
            .skip(1)
            .map(|s| s.trim_matches('\'').to_string())
            .collect();
        assert_eq!(config::load(None, &sets, &[]).unwrap(), cfg);
    }

    #[test]
    fn columns_take_the_narrowest_type() {
        let c = typed("x", vec![Cell::Int(1), Cell::Null, Cell::Float(2.5)]);
        assert_eq!(c.kind, ColumnType::Float);
        assert_eq!(c.cells[0], Cell::Float(1.0));
        let c = typed("x", vec![Cell::Int(1), Cell::Str("a".into())]);
        assert_eq!(
            (c.kind, &c.cells[0]),
            (ColumnType::Str, &Cell::Str("1".into()))
        );
    }

    #[test]
    fn points_run_store_and_resume_and_failures_go_on() {
        let dir = std::env::temp_dir().join(format!("ftlab-sweep-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = study(
            "[base]\ncapacity = \"16MiB\"\nsynthetic.count = 300\n[axes]\nftl = [\"page\", \"nosuch\", \"dftl\"]",
        )
        .unwrap();
        let points = s.points();
        let opts = RunOptions {
            out: Some(dir.clone()),
            force: false,
            jobs: 2,
        };
        let calls = AtomicUsize::new(0);
        let first = run_points(&points, &opts, &|_| {
            calls.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        assert!(matches!(first[0], Outcome::Report { cached: false, .. }));
        match &first[1] {
            Outcome::Failed(why) => assert!(why.contains("nosuch"), "{why}"),
            o => panic!("{o:?}"),
        }
        let again = run_points(&points, &opts, &|_| {}).unwrap();
        assert!(matches!(again[2], Outcome::Report { cached: true, .. }));
        let t1 = Table::build(&s, &points, &first);
        let t2 = Table::build(&s, &points, &again);
        assert_eq!(t1, t2, "a stored report gives the same row as a fresh run");
        assert_eq!(t1.rows(), 3);
        let waf = t1.column("waf").unwrap();
        assert_eq!(waf.kind, ColumnType::Float);
        assert_eq!(waf.cells[1], Cell::Null);
        let cmd = t1.column("command").unwrap();
        assert!(matches!(&cmd.cells[1], Cell::Str(c) if c.contains("nosuch")));
        assert_eq!(cmd.cells[0], Cell::Null);
        let forced = RunOptions {
            force: true,
            ..opts
        };
        let redone = run_points(&points, &forced, &|_| {}).unwrap();
        assert!(matches!(redone[0], Outcome::Report { cached: false, .. }));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
