//! The metric expressions of experiment files (`y`, `columns`, `metrics`, `best.by`):
//! sums and products of dotted paths into a run's JSON report and numbers, with at
//! most one ratio, and the choice of the best of several reports by such a metric.

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

/// Index of the report with the lowest (or, with `max`, highest) `by` metric; reports
/// without it lose; ties go to the first.
pub(super) fn pick_best(
    reports: &[serde_json::Value],
    by: &str,
    max: bool,
) -> Result<usize, String> {
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
}
