//! `ftlab plot`: a chart of a sweep table (`results.parquet` or `results.csv`), so a
//! figure of a paper is one command: `--x op --y waf --color ftl [--facet trace]`.
//!
//! The x axis is categorical (a sweep's axis values), in numeric order when every value
//! is a number, else in the order of the table. Rows that share a facet, colour and x
//! (an axis left out of the figure, e.g. seeds) are averaged; failed points and rows
//! without a y value are left out (a gap in a line). Choices left open: `bar` draws one
//! bar per x, its colours stacked when `--color` is given, `grouped-bar` puts them side
//! by side; facets are separate charts of one image, `--columns` to a row.

use anyhow::{bail, Context};
use ftlab_plot::{Chart, Kind, Series};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The chart kinds of `--kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PlotKind {
    /// One line per colour.
    Line,
    /// One bar per x; with --color, its colours stacked.
    Bar,
    /// One bar per colour in each x, side by side.
    GroupedBar,
}

/// The long help of `ftlab plot`.
pub const ABOUT: &str =
    "Draws a chart of a sweep table (`ftlab sweep`'s results.parquet or results.csv):
one column on x, one on y, optionally one per colour (a line or a bar each) and one
per facet (a chart each, side by side in one image). Rows sharing facet, colour and x
are averaged (e.g. over seeds); failed points are left out.

  ftlab plot out/results.parquet --x op --y waf --color ftl -o waf.svg
  ftlab plot out/results.csv --x ftl --y host.response_ns.p99 --kind bar -o p99.png

Kinds: line (one line per colour), bar (one bar per x, colours stacked), grouped-bar
(colours side by side). See docs/sweep.md.";

/// Options of `ftlab plot`.
#[derive(clap::Args)]
pub struct PlotArgs {
    /// The table: a .parquet or .csv file written by `ftlab sweep`
    pub table: PathBuf,
    /// Column along x (an axis of the study, e.g. op)
    #[arg(long)]
    pub x: String,
    /// Column on y (a metric, e.g. waf, host.response_ns.p99, flash.block_erases)
    #[arg(long)]
    pub y: String,
    /// Column whose values are the series: one line or bar colour each (e.g. ftl)
    #[arg(long)]
    pub color: Option<String>,
    /// Column whose values each get their own chart (e.g. trace)
    #[arg(long)]
    pub facet: Option<String>,
    /// Chart kind
    #[arg(long, value_enum, default_value = "line")]
    pub kind: PlotKind,
    /// Output image: .svg or .png
    #[arg(long, short)]
    pub output: PathBuf,
    /// Title [default: "Y by X"]
    #[arg(long)]
    pub title: Option<String>,
    /// Facet charts per row
    #[arg(long, default_value_t = 2)]
    pub columns: usize,
}

/// A cell: its text (None for null) and its value when it is a number.
#[derive(Clone, Debug, PartialEq)]
struct Val {
    text: Option<String>,
    num: Option<f64>,
}

/// A table read back: column names and rows.
struct Read {
    names: Vec<String>,
    rows: Vec<Vec<Val>>,
}

fn read_parquet(path: &Path) -> anyhow::Result<Read> {
    let at = || path.display().to_string();
    let file = std::fs::File::open(path).with_context(at)?;
    let reader = SerializedFileReader::new(file).with_context(at)?;
    let names: Vec<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let mut rows = Vec::new();
    for row in reader.get_row_iter(None).with_context(at)? {
        let row = row.with_context(at)?;
        rows.push(
            row.get_column_iter()
                .map(|(_, f)| match f {
                    Field::Null => Val {
                        text: None,
                        num: None,
                    },
                    Field::Bool(b) => Val {
                        text: Some(b.to_string()),
                        num: None,
                    },
                    Field::Long(i) => Val {
                        text: Some(i.to_string()),
                        num: Some(*i as f64),
                    },
                    Field::Int(i) => Val {
                        text: Some(i.to_string()),
                        num: Some(f64::from(*i)),
                    },
                    Field::Double(d) => Val {
                        text: Some(format!("{d}")),
                        num: Some(*d),
                    },
                    Field::Float(d) => Val {
                        text: Some(format!("{d}")),
                        num: Some(f64::from(*d)),
                    },
                    Field::Str(s) => Val {
                        text: Some(s.clone()),
                        num: None,
                    },
                    other => Val {
                        text: Some(other.to_string()),
                        num: None,
                    },
                })
                .collect(),
        );
    }
    Ok(Read { names, rows })
}

fn read_csv(path: &Path) -> anyhow::Result<Read> {
    let at = || path.display().to_string();
    let mut r = csv::Reader::from_path(path).with_context(at)?;
    let names = r
        .headers()
        .with_context(at)?
        .iter()
        .map(String::from)
        .collect();
    let mut rows = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let rec = rec.with_context(|| format!("{}: row {}", at(), i + 2))?;
        rows.push(
            rec.iter()
                .map(|s| Val {
                    text: (!s.is_empty()).then(|| s.to_string()),
                    num: s.parse::<f64>().ok(),
                })
                .collect(),
        );
    }
    Ok(Read { names, rows })
}

/// Distinct texts of a column in order: numeric order when all are numbers, else the
/// order they first appear in.
fn categories(rows: &[&Vec<Val>], col: usize) -> Vec<String> {
    let mut seen: Vec<(String, Option<f64>)> = Vec::new();
    for r in rows {
        let v = &r[col];
        let t = v.text.clone().unwrap_or_default();
        if !seen.iter().any(|(s, _)| *s == t) {
            seen.push((t, v.num));
        }
    }
    if seen.iter().all(|(_, n)| n.is_some()) {
        seen.sort_by(|a, b| a.1.unwrap_or(0.0).total_cmp(&b.1.unwrap_or(0.0)));
    }
    seen.into_iter().map(|(s, _)| s).collect()
}

/// Runs `ftlab plot`.
pub fn command(args: &PlotArgs) -> anyhow::Result<ExitCode> {
    let ext = args
        .output
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase());
    let png = match ext.as_deref() {
        Some("svg") => false,
        Some("png") => true,
        _ => bail!(
            "--output {}: the image must end in .svg or .png",
            args.output.display()
        ),
    };
    let table = match args.table.extension().and_then(|e| e.to_str()) {
        Some("parquet") => read_parquet(&args.table)?,
        Some("csv") => read_csv(&args.table)?,
        _ => bail!(
            "{}: a table is a .parquet or .csv file (ftlab sweep writes both)",
            args.table.display()
        ),
    };
    let col = |flag: &str, name: &str| -> anyhow::Result<usize> {
        table.names.iter().position(|n| n == name).with_context(|| {
            format!(
                "--{flag} {name}: no such column in {} (columns: {})",
                args.table.display(),
                table.names.join(", ")
            )
        })
    };
    let xi = col("x", &args.x)?;
    let yi = col("y", &args.y)?;
    let ci = args.color.as_deref().map(|c| col("color", c)).transpose()?;
    let fi = args.facet.as_deref().map(|f| col("facet", f)).transpose()?;
    let status = table.names.iter().position(|n| n == "status");
    let rows: Vec<&Vec<Val>> = table
        .rows
        .iter()
        .filter(|r| status.is_none_or(|s| r[s].text.as_deref() != Some("failed")))
        .filter(|r| r[yi].text.is_some())
        .collect();
    if let Some(r) = rows.iter().find(|r| r[yi].num.is_none()) {
        bail!(
            "--y {}: not a number (`{}`); y must be a numeric column such as waf",
            args.y,
            r[yi].text.as_deref().unwrap_or_default()
        );
    }
    if rows.is_empty() {
        bail!(
            "{}: no row has a value of `{}` (every point failed?)",
            args.table.display(),
            args.y
        );
    }
    let facets = match fi {
        Some(f) => categories(&rows, f),
        None => vec![String::new()],
    };
    let mut charts = Vec::new();
    for facet in &facets {
        let in_facet: Vec<&Vec<Val>> = rows
            .iter()
            .copied()
            .filter(|r| fi.is_none_or(|f| r[f].text.as_deref().unwrap_or_default() == facet))
            .collect();
        let xs = categories(&in_facet, xi);
        let colors = match ci {
            Some(c) => categories(&in_facet, c),
            None => vec![args.y.clone()],
        };
        let mut sums: HashMap<(String, String), (f64, usize)> = HashMap::new();
        for r in &in_facet {
            let x = r[xi].text.clone().unwrap_or_default();
            let c = match ci {
                Some(c) => r[c].text.clone().unwrap_or_default(),
                None => args.y.clone(),
            };
            let e = sums.entry((c, x)).or_insert((0.0, 0));
            e.0 += r[yi].num.unwrap_or(0.0);
            e.1 += 1;
        }
        let series = colors
            .iter()
            .map(|c| Series {
                name: c.clone(),
                values: xs
                    .iter()
                    .map(|x| {
                        sums.get(&(c.clone(), x.clone()))
                            .map(|(s, n)| s / *n as f64)
                    })
                    .collect(),
                paper: Vec::new(),
            })
            .collect();
        let mut title = args
            .title
            .clone()
            .unwrap_or_else(|| format!("{} by {}", args.y, args.x));
        if let Some(f) = &args.facet {
            title = format!("{title}: {f} = {facet}");
        }
        let kind = match (args.kind, ci) {
            (PlotKind::Line, _) => Kind::Line,
            (PlotKind::GroupedBar, _) | (PlotKind::Bar, None) => Kind::Bar,
            (PlotKind::Bar, Some(_)) => Kind::Stacked,
        };
        charts.push(ftlab_plot::svg(&Chart {
            title,
            x_label: args.x.clone(),
            y_label: args.y.clone(),
            categories: xs,
            series,
            kind,
            caption: String::new(),
        }));
    }
    let svg = if charts.len() == 1 {
        charts.remove(0)
    } else {
        ftlab_plot::grid(&charts, args.columns)
    };
    let bytes = if png {
        ftlab_plot::png(&svg).map_err(|e| anyhow::anyhow!("{}: {e}", args.output.display()))?
    } else {
        svg.into_bytes()
    };
    std::fs::write(&args.output, bytes).with_context(|| args.output.display().to_string())?;
    println!("{}", args.output.display());
    Ok(ExitCode::SUCCESS)
}
