//! From experiment files to runs: each axis to its points, each `best` series point to
//! its variants (every combination of the values it tries), and each (x point, series
//! point, variant) to the configuration it runs, built from the file's `base`, the
//! points' keys and, under `--quick`, its `[quick]` overrides.

use super::schema::{Axis, Best, Experiment, Point};
use super::ReproError;
use ftlab::config::{set_key, Config, Precondition};
use std::path::{Path, PathBuf};

/// The variants of each series point: one unnamed variant for a plain point.
pub(super) type Variants = Vec<Vec<(String, toml::Table)>>;

/// An experiment file, loaded and with its axes expanded.
pub(super) struct Expanded {
    /// The file.
    pub path: PathBuf,
    /// What it says.
    pub exp: Experiment,
    /// X points.
    pub xs: Vec<Point>,
    /// Series points (one unnamed point with `metrics`).
    pub ss: Vec<Point>,
    /// The variants of each series point.
    pub vs: Variants,
    /// The paper's values per plotted series and x point (`Experiment::paper`).
    pub paper: Vec<Vec<Option<f64>>>,
    /// Which workload each point ran, for the chart's caption.
    pub caption: String,
}

/// The workload a configuration runs, in a few words: the trace's file name, or the
/// synthetic generator and its request count.
fn workload_words(cfg: &Config) -> String {
    let base = match &cfg.trace {
        Some(t) => Path::new(t)
            .file_name()
            .map_or(t.clone(), |n| n.to_string_lossy().into_owned()),
        None => format!("synthetic, {} requests", cfg.synthetic.count),
    };
    // How the measured phase was reached and how long it ran: a caption that names
    // the trace alone hides whether GC had reached steady state (issue 24 item 4).
    let mut how = Vec::new();
    match cfg.precondition {
        Precondition::Fill => how.push("device filled first".to_string()),
        Precondition::Footprint => how.push("footprint written first".to_string()),
        Precondition::None => {}
    }
    if cfg.warmup > 0 {
        how.push(format!("after {} warm-up passes", cfg.warmup));
    }
    if cfg.replay > 1 {
        how.push(format!("{} measured passes", cfg.replay));
    }
    if how.is_empty() {
        base
    } else {
        format!("{base} ({})", how.join(", "))
    }
}

/// The caption naming what stood in for the paper's workload at each point: one
/// phrase when every run used the same, else by x point, by series, or by both.
fn caption(xs: &[Point], ss: &[Point], runs: &[(usize, usize, String)]) -> String {
    let first = |f: &dyn Fn(&(usize, usize, String)) -> bool| {
        runs.iter()
            .find(|r| f(r))
            .map(|r| r.2.clone())
            .unwrap_or_default()
    };
    let same = |a: &dyn Fn(&(usize, usize, String)) -> usize| {
        runs.iter()
            .all(|r| runs.iter().filter(|o| a(o) == a(r)).all(|o| o.2 == r.2))
    };
    let list = if runs.iter().all(|r| r.2 == runs[0].2) {
        return format!("Workload: {}.", runs.first().map_or("", |r| r.2.as_str()));
    } else if same(&|r| r.1) {
        xs.iter()
            .enumerate()
            .map(|(xi, x)| format!("{}: {}", x.name, first(&|r| r.1 == xi)))
            .collect::<Vec<_>>()
    } else if same(&|r| r.0) {
        ss.iter()
            .enumerate()
            .map(|(si, s)| format!("{}: {}", s.name, first(&|r| r.0 == si)))
            .collect()
    } else {
        runs.iter()
            .map(|(si, xi, w)| format!("{} at {}: {w}", ss[*si].name, xs[*xi].name))
            .collect()
    };
    format!("Workload: {}.", list.join("; "))
}

/// Which run of which experiment: indices of the experiment, series point, x point and
/// variant of a `best` series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RunKey {
    pub exp: usize,
    pub series: usize,
    pub x: usize,
    pub variant: usize,
}

/// One run to make.
pub(super) struct Job {
    /// Which run it is.
    pub key: RunKey,
    /// Its configuration.
    pub cfg: Config,
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
                    let sep = if label.is_empty() { "" } else { ", " };
                    let mut set = set.clone();
                    set.insert(key.clone(), v.clone());
                    next.push((format!("{label}{sep}{key}={}", shown(v)), set));
                }
            }
            out = next;
        }
        Ok(out)
    }
}

/// A value as a label: strings without their quotes.
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Axis {
    /// The points: the explicit ones, then one per value of `key`; one unnamed point
    /// that sets nothing when there are none.
    pub(super) fn expand(&self) -> Result<Vec<Point>, String> {
        let mut out = self.points.clone();
        if let Some(key) = &self.key {
            if !self.labels.is_empty() && self.labels.len() != self.values.len() {
                return Err(format!("axis `{key}`: labels and values differ in length"));
            }
            for (i, v) in self.values.iter().enumerate() {
                let name = self.labels.get(i).cloned().unwrap_or_else(|| shown(v));
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

fn flatten_into(table: &mut toml::Table, set: &toml::Table) -> Result<(), String> {
    for (k, v) in set {
        set_key(table, k, v.clone())?;
    }
    Ok(())
}

impl Experiment {
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

/// The variants of each series point; `best` on an x point is an error.
pub(super) fn series_variants(ss: &[Point], xs: &[Point]) -> Result<Variants, String> {
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

/// Loads and expands every experiment file, and lists the runs of each: every
/// (series point, x point, variant), in that order. `quick` applies the files'
/// `[quick]` overrides; relative trace paths are taken from `root`.
pub(super) fn plan(
    files: &[PathBuf],
    quick: bool,
    root: &Path,
) -> Result<(Vec<Expanded>, Vec<Job>), ReproError> {
    let mut exps = Vec::new();
    let mut jobs = Vec::new();
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
        let paper = exp.paper_values(&exp.plotted(&ss), &xs).map_err(spec_err)?;
        let mut runs = Vec::new();
        for (si, s) in ss.iter().enumerate() {
            for (xi, x) in xs.iter().enumerate() {
                for (vi, (_, set)) in vs[si].iter().enumerate() {
                    let cfg = exp.config(x, s, set, quick, root).map_err(spec_err)?;
                    if vi == 0 {
                        runs.push((si, xi, workload_words(&cfg)));
                    }
                    let key = RunKey {
                        exp: ei,
                        series: si,
                        x: xi,
                        variant: vi,
                    };
                    jobs.push(Job { key, cfg });
                }
            }
        }
        let caption = caption(&xs, &ss, &runs);
        exps.push(Expanded {
            path: f.clone(),
            exp,
            xs,
            ss,
            vs,
            paper,
            caption,
        });
    }
    Ok((exps, jobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caption_names_the_workload_once_or_per_point() {
        let pts = |names: &[&str]| -> Vec<Point> {
            names
                .iter()
                .map(|n| Point {
                    name: n.to_string(),
                    set: toml::Table::new(),
                    best: None,
                })
                .collect()
        };
        let (xs, ss) = (pts(&["A", "B"]), pts(&["dftl", "tpm"]));
        let run = |s, x, w: &str| (s, x, w.to_string());
        let same = [
            run(0, 0, "t"),
            run(0, 1, "t"),
            run(1, 0, "t"),
            run(1, 1, "t"),
        ];
        assert_eq!(caption(&xs, &ss, &same), "Workload: t.");
        let by_x = [
            run(0, 0, "a"),
            run(0, 1, "b"),
            run(1, 0, "a"),
            run(1, 1, "b"),
        ];
        assert_eq!(caption(&xs, &ss, &by_x), "Workload: A: a; B: b.");
        let by_s = [
            run(0, 0, "a"),
            run(0, 1, "a"),
            run(1, 0, "b"),
            run(1, 1, "b"),
        ];
        assert_eq!(caption(&xs, &ss, &by_s), "Workload: dftl: a; tpm: b.");
        let both = [
            run(0, 0, "a"),
            run(0, 1, "b"),
            run(1, 0, "c"),
            run(1, 1, "a"),
        ];
        assert_eq!(
            caption(&xs, &ss, &both),
            "Workload: dftl at A: a; dftl at B: b; tpm at A: c; tpm at B: a."
        );
    }

    #[test]
    fn workload_words_name_the_trace_file_or_the_generator() {
        let mut cfg = Config::default();
        cfg.synthetic.count = 1234;
        assert_eq!(workload_words(&cfg), "synthetic, 1234 requests");
        cfg.trace = Some("/x/tests/data/financial1-first10k.spc".into());
        assert_eq!(workload_words(&cfg), "financial1-first10k.spc");
        cfg.warmup = 2;
        assert_eq!(
            workload_words(&cfg),
            "financial1-first10k.spc (after 2 warm-up passes)"
        );
        // The fill and the measured passes are named too.
        cfg.precondition = Precondition::Fill;
        cfg.replay = 60;
        assert_eq!(
            workload_words(&cfg),
            "financial1-first10k.spc (device filled first, after 2 warm-up passes, 60 \
             measured passes)"
        );
        cfg.trace = None;
        cfg.warmup = 0;
        cfg.replay = 1;
        assert_eq!(
            workload_words(&cfg),
            "synthetic, 1234 requests (device filled first)"
        );
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
    fn best_belongs_to_series_points() {
        let p: Point = toml::from_str("name = \"a\"\nbest = { of = { op = [1] } }").unwrap();
        let e = series_variants(&[], std::slice::from_ref(&p)).unwrap_err();
        assert!(e.contains("x point `a`"), "{e}");
        let v = series_variants(std::slice::from_ref(&p), &[]).unwrap();
        assert_eq!(v[0].len(), 1);
    }
}
