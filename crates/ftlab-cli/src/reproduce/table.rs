//! From the reports of one experiment's runs to its table: per plotted series and x
//! point, the chosen variant of a `best` series, the value plotted (scaled and, with
//! `normalize`, divided by the reference series) and the extra CSV columns.

use super::expand::{Expanded, RunKey};
use super::metric::{metric, pick_best};
use super::run::Results;
use super::ReproError;

/// One plotted value and its extra columns.
#[derive(Clone, Debug)]
pub(super) struct Cell {
    /// The value plotted.
    pub y: Option<f64>,
    /// The experiment's `columns`, in order.
    pub columns: Vec<Option<f64>>,
}

/// One experiment's numbers, by (plotted series, x point).
pub(super) struct Table {
    /// Values and columns.
    pub cells: Vec<Vec<Cell>>,
    /// The chosen combination of a `best` series (None for others).
    pub best: Vec<Vec<Option<String>>>,
}

impl Table {
    /// The plotted values alone.
    pub(super) fn y(&self) -> Vec<Vec<Option<f64>>> {
        self.cells
            .iter()
            .map(|row| row.iter().map(|c| c.y).collect())
            .collect()
    }
}

/// Takes the reports of experiment `ei` (`e`) out of `results` and tabulates them for
/// the `plotted` (label, metric) rows; a failed run's error is returned as it is.
pub(super) fn tabulate(
    ei: usize,
    e: &Expanded,
    plotted: &[(String, String)],
    results: &mut Results,
) -> Result<Table, ReproError> {
    let exp = &e.exp;
    let metric_err = |why: String| ReproError::Spec {
        path: e.path.display().to_string(),
        why,
    };
    // The plotted rows: one per config series, or (with `metrics`) one per metric,
    // all read from the one run of each x point.
    let mut best = vec![vec![None; e.xs.len()]; plotted.len()];
    let empty = Cell {
        y: None,
        columns: Vec::new(),
    };
    let mut cells = vec![vec![empty; e.xs.len()]; plotted.len()];
    for (si, s) in e.ss.iter().enumerate() {
        for xi in 0..e.xs.len() {
            let mut reports = Vec::with_capacity(e.vs[si].len());
            for vi in 0..e.vs[si].len() {
                let key = RunKey {
                    exp: ei,
                    series: si,
                    x: xi,
                    variant: vi,
                };
                reports.push(results.remove(&key).expect("every job has a result")?);
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
                    best[pi][xi] = Some(e.vs[si][chosen].0.clone());
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
            .ok_or_else(|| metric_err(format!("normalize = `{reference}` names no series")))?;
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
    Ok(Table { cells, best })
}
