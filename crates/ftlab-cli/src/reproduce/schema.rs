//! The experiment file: what one figure or table runs and plots, as `serde` reads it
//! from `experiments/<paper>/<name>.toml`, and the checks that need more than one field
//! (`y`, `series` and `metrics` do not mix; `kind` is known).

use super::ReproError;
use serde::Deserialize;
use std::path::Path;

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
    /// Values the paper states for plotted series, drawn as markers beside ours.
    #[serde(default)]
    pub paper: Vec<PaperValues>,
}

/// What the paper states for one plotted series: a value per x point, in the plotted
/// unit (after `y_scale` and `normalize`), drawn as a hollow diamond beside our value.
/// Only numbers the paper's text or tables give belong here, never values read off its
/// figures.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PaperValues {
    /// The plotted series (legend label) they belong to.
    pub series: String,
    /// X point name to the paper's value.
    pub values: toml::Table,
    /// Where the paper gives them (section, table or sentence).
    pub source: String,
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

    /// The series (config points) and, with `metrics`, the one run per x point they
    /// share; checks that `y`, `series` and `metrics` are not mixed.
    pub(super) fn series_points(&self) -> Result<Vec<Point>, String> {
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
    /// The paper's values of each plotted series (`plotted`), one per x point of `xs`;
    /// an error names a series or x point the file does not have, or a value that is
    /// not a number.
    pub(super) fn paper_values(
        &self,
        plotted: &[(String, String)],
        xs: &[Point],
    ) -> Result<Vec<Vec<Option<f64>>>, String> {
        let mut out = vec![vec![None; xs.len()]; plotted.len()];
        for p in &self.paper {
            let si = plotted
                .iter()
                .position(|(name, _)| *name == p.series)
                .ok_or_else(|| format!("paper.series = `{}` names no plotted series", p.series))?;
            for (x, v) in &p.values {
                let xi = xs.iter().position(|pt| pt.name == *x).ok_or_else(|| {
                    format!("paper values of `{}`: `{x}` is no x point", p.series)
                })?;
                let v = match v {
                    toml::Value::Integer(i) => *i as f64,
                    toml::Value::Float(f) => *f,
                    other => {
                        return Err(format!(
                            "paper values of `{}` at `{x}`: `{other}` is not a number",
                            p.series
                        ))
                    }
                };
                out[si][xi] = Some(v);
            }
        }
        Ok(out)
    }

    pub(super) fn plotted(&self, ss: &[Point]) -> Vec<(String, String)> {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(text: &str) -> Experiment {
        let head = "title = \"t\"\nsource = \"s\"\nx_label = \"x\"\ny_label = \"y\"\n";
        toml::from_str(&format!("{head}{text}")).unwrap()
    }

    #[test]
    fn paper_values_land_on_their_series_and_x_point_and_bad_ones_are_named() {
        let e = exp(concat!(
            "y = \"a\"\n[x]\nkey = \"op\"\nvalues = [7, 25]\n",
            "[[series.points]]\nname = \"dftl\"\n[[series.points]]\nname = \"tpm\"\n",
            "[[paper]]\nseries = \"tpm\"\nvalues = { \"25\" = 89.27 }\nsource = \"tpm.txt\"\n",
        ));
        let xs = e.x.expand().unwrap();
        let ss = e.series_points().unwrap();
        let plotted = e.plotted(&ss);
        assert_eq!(
            e.paper_values(&plotted, &xs).unwrap(),
            vec![vec![None, None], vec![None, Some(89.27)]]
        );
        for (bad, needle) in [
            (
                "series = \"fast\"\nvalues = {}",
                "`fast` names no plotted series",
            ),
            (
                "series = \"tpm\"\nvalues = { \"9\" = 1 }",
                "`9` is no x point",
            ),
            (
                "series = \"tpm\"\nvalues = { \"7\" = \"high\" }",
                "is not a number",
            ),
        ] {
            let mut e = e.clone();
            e.paper = vec![toml::from_str(&format!("{bad}\nsource = \"s\"")).unwrap()];
            let err = e.paper_values(&plotted, &xs).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
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
}
