//! What `reproduce` writes: per experiment a CSV of every plotted value and extra
//! column (through the `csv` crate), the chart as SVG and PNG, and per paper a
//! markdown summary with each figure, its table and the paper's claim.

use super::expand::Expanded;
use super::table::Table;
use super::{Produced, ReproError};
use ftlab_plot::{self as plot, Chart, Kind, Series};
use std::fmt::Write as _;
use std::path::Path;

/// Writes `<name>.csv`, `<name>.svg` and `<name>.png` of one experiment to `out_dir`.
pub(super) fn write_experiment(
    out_dir: &Path,
    name: &str,
    e: &Expanded,
    plotted: &[(String, String)],
    table: &Table,
) -> Result<(), ReproError> {
    let csv = csv(e, plotted, table).map_err(|why| ReproError::Io {
        path: out_dir.join(format!("{name}.csv")).display().to_string(),
        why,
    })?;
    let svg = plot::svg(&chart(e, plotted, table));
    let png = plot::png(&svg).map_err(|why| ReproError::Io {
        path: name.to_string(),
        why,
    })?;
    for (ext, bytes) in [
        ("csv", &csv[..]),
        ("svg", svg.as_bytes()),
        ("png", &png[..]),
    ] {
        let p = out_dir.join(format!("{name}.{ext}"));
        std::fs::write(&p, bytes).map_err(|e| ReproError::Io {
            path: p.display().to_string(),
            why: e.to_string(),
        })?;
    }
    Ok(())
}

/// The CSV: a header `x,series,y`, the experiment's columns and, when a series is the
/// best of several configurations, `best`; then one row per (plotted series, x point).
/// A missing value is an empty field.
fn csv(e: &Expanded, plotted: &[(String, String)], table: &Table) -> Result<Vec<u8>, String> {
    let any_best = e.ss.iter().any(|s| s.best.is_some());
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["x", "series", "y"];
    header.extend(e.exp.columns.iter().map(String::as_str));
    if any_best {
        header.push("best");
    }
    w.write_record(&header).map_err(|e| e.to_string())?;
    let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    for (pi, ((label, _), row)) in plotted.iter().zip(&table.cells).enumerate() {
        for (xi, (x, cell)) in e.xs.iter().zip(row).enumerate() {
            let mut record = vec![x.name.clone(), label.clone(), num(cell.y)];
            record.extend(cell.columns.iter().map(|c| num(*c)));
            if any_best {
                record.push(table.best[pi][xi].clone().unwrap_or_default());
            }
            w.write_record(&record).map_err(|e| e.to_string())?;
        }
    }
    w.into_inner().map_err(|e| e.to_string())
}

/// The chart of one experiment.
fn chart(e: &Expanded, plotted: &[(String, String)], table: &Table) -> Chart {
    Chart {
        title: e.exp.title.clone(),
        x_label: e.exp.x_label.clone(),
        y_label: e.exp.y_label.clone(),
        categories: e.xs.iter().map(|p| p.name.clone()).collect(),
        series: plotted
            .iter()
            .zip(table.y())
            .zip(&e.paper)
            .map(|(((name, _), values), paper)| Series {
                name: name.clone(),
                values,
                paper: paper.clone(),
            })
            .collect(),
        kind: match e.exp.kind.as_str() {
            "bar" => Kind::Bar,
            "stacked" => Kind::Stacked,
            _ => Kind::Line,
        },
        caption: e.caption.clone(),
    }
}

/// A value in the summary's tables: rounded by its size, `-` for none.
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
        for (name, row) in p.series.iter().zip(&p.paper) {
            if row.iter().any(Option::is_some) {
                let _ = write!(s, "| {name} (paper) |");
                for v in row {
                    let _ = write!(s, " {} |", cell_text(*v));
                }
                s.push('\n');
            }
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
        let _ = writeln!(s, "\n{}", p.caption);
        for v in &p.exp.paper {
            let _ = writeln!(
                s,
                "\nThe paper's values of {} (diamonds on the chart): {}.",
                v.series, v.source
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::schema::{Experiment, Point};
    use super::super::table::Cell;
    use super::*;

    #[test]
    fn csv_quotes_the_labels_that_need_it_and_leaves_gaps_empty() {
        let exp: Experiment = toml::from_str(
            "title = 't'\nsource = 's'\nx_label = 'x'\ny_label = 'y'\ny = 'a'\ncolumns = ['b']",
        )
        .unwrap();
        let point = |name: &str| Point {
            name: name.into(),
            set: toml::Table::new(),
            best: None,
        };
        let e = Expanded {
            path: "t.toml".into(),
            exp,
            xs: vec![point("1,5"), point("2")],
            ss: vec![point("say \"hi\"")],
            vs: vec![vec![(String::new(), toml::Table::new())]],
            paper: vec![vec![None, Some(0.75)]],
            caption: "Workload: synthetic, 10 requests.".into(),
        };
        let plotted = e.exp.plotted(&e.ss);
        let cell = |y, c| Cell {
            y,
            columns: vec![c],
        };
        let table = Table {
            cells: vec![vec![cell(Some(0.5), None), cell(None, Some(3.0))]],
            best: vec![vec![None, None]],
        };
        let text = String::from_utf8(csv(&e, &plotted, &table).unwrap()).unwrap();
        assert_eq!(
            text,
            "x,series,y,b\n\"1,5\",\"say \"\"hi\"\"\",0.5,\n2,\"say \"\"hi\"\"\",,3\n"
        );
        // The chart: our missing value is "n/a", the paper's value a diamond, and the
        // caption names the workload.
        let svg = plot::svg(&chart(&e, &plotted, &table));
        assert_eq!(svg.matches(">n/a<").count(), 1);
        assert_eq!(
            svg.matches(r#"class="paper""#).count(),
            2,
            "marker + legend"
        );
        assert!(svg.contains(">Workload: synthetic, 10 requests.<"));
    }

    #[test]
    fn summary_cells_round_by_size_and_show_zero_as_0() {
        assert_eq!(cell_text(Some(0.0)), "0", "a count of 0 is not 0.0000");
        assert_eq!(cell_text(Some(0.25)), "0.2500");
        assert_eq!(cell_text(Some(3288.0)), "3288");
        assert_eq!(cell_text(None), "-");
    }
}
