//! `ftlab sweep`: runs a parameter study (`ftlab::sweep`) with a progress bar and writes
//! its table as CSV and Parquet next to the stored reports.
//!
//! The results folder holds `points/<hash>.json` (each point's report, found again by
//! a rerun), `results.csv`, `results.parquet` and a copy of the study (`study.toml`).
//! Choices left open: the Parquet file is written with the `parquet` crate's column
//! writers, uncompressed, one row group (a study's table is small), every column
//! optional (a failed point has no metrics); CSV writes a null as an empty field and a
//! float in its shortest form that reads back to the same number.

// The doc comments of the flag struct are clap's help text, written for a terminal
// (`[base]`, `<name>`), not markdown for rustdoc.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use anyhow::Context;
use ftlab::sweep::{self, Cell, ColumnType, Outcome, RunOptions, Study, Table, Tally};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// The long help of `ftlab sweep`.
pub const ABOUT: &str =
    "Run a parameter study (a base config and axes) on every core: one tidy table
(CSV and Parquet) with a row per point, each point's report kept by content hash so a
rerun resumes.

A study file has a `[base]` configuration (any key of a `ftlab run --config` file),
`[axes]` whose cartesian product is the grid, and `[zip.<name>]` groups of lists
that advance together:

  [base]
  capacity = \"256MiB\"
  synthetic.count = 50000
  [axes]
  ftl = [\"page\", \"dftl\", \"fast\"]
  op = [3, 5, 7, 10]                  # a list
  seed = { from = 1, to = 3 }         # a range (step 1 unless `step` is given)
  [zip.geometry]
  \"nand_params.page_size\" = [2048, 4096]
  \"nand_params.pages_per_block\" = [64, 128]

Every point runs once, on every core, and its report is kept in
OUT/points/<hash>.json, the hash being that of the point's whole configuration: a
rerun (after Ctrl-C, a crash, or with more axis values) runs only the points that
have no report yet. A point that fails (a bad value, data loss found by the oracle,
an internal error) is recorded in the table with its error and the `ftlab run`
command that reruns it; the others go on. The table (OUT/results.csv and
OUT/results.parquet) has one row per point: point, hash, one column per axis key,
status, error, command, then every number of the report by its dotted path (waf,
host.response_ns.p99, flash.block_erases, ...). See docs/sweep.md.";

/// Options of `ftlab sweep`.
#[derive(clap::Args)]
#[command(after_help = "Exit codes:
  0  every point ran and found nothing wrong
  1  at least one point failed (the table says which, why, and how to rerun it)
  2  bad study or options: nothing was run")]
pub struct SweepArgs {
    /// The study file (TOML: [base], [axes], [zip.<name>])
    pub study: PathBuf,
    /// Results folder [default: <study>-results next to the study file]
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Points run at once [default: the number of cores]
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// Rerun every point, even those whose report is already in the results folder
    #[arg(long)]
    pub force: bool,
    /// Run a grid of more than 1000 points
    #[arg(long, short)]
    pub yes: bool,
    /// No progress bar and no summary on stderr
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `ftlab sweep`.
pub fn command(args: &SweepArgs) -> anyhow::Result<ExitCode> {
    let study = Study::load(&args.study)?;
    let total = study.len();
    anyhow::ensure!(
        total <= sweep::POINT_LIMIT || args.yes,
        "{}: the grid has {total} points, more than {}: pass --yes to run them all",
        args.study.display(),
        sweep::POINT_LIMIT
    );
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.study));
    sweep::prepare_out(&out)?;
    std::fs::copy(&args.study, out.join("study.toml"))
        .with_context(|| format!("cannot copy the study into {}", out.display()))?;
    let points = study.points();
    let bar = if args.quiet || !std::io::stderr().is_terminal() {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(total as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{wide_bar}] {pos}/{len} points, {msg}, ETA {eta}",
            )
            .expect("valid template"),
        );
        b.set_message("0 failed");
        b
    };
    let start = Instant::now();
    let opts = RunOptions {
        out: Some(out.clone()),
        force: args.force,
        jobs: args.jobs.unwrap_or(0),
    };
    let outcomes = sweep::run_points(&points, &opts, &|t: Tally| {
        bar.set_position(t.done as u64);
        bar.set_message(format!("{} failed", t.failed));
    })?;
    bar.finish_and_clear();
    let table = Table::build(&study, &points, &outcomes);
    let csv_path = out.join("results.csv");
    write_csv(&table, &csv_path)?;
    let pq_path = out.join("results.parquet");
    write_parquet(&table, &pq_path)?;
    let cached = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Report { cached: true, .. }))
        .count();
    let failed: Vec<usize> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
        .map(|(i, _)| i)
        .collect();
    if !args.quiet {
        for &i in &failed {
            if let Outcome::Failed(why) = &outcomes[i] {
                eprintln!("point {i} ({}) failed: {why}", describe(&study, &points[i]));
                if !points[i].command.is_empty() {
                    eprintln!("  rerun it alone: {}", points[i].command);
                }
            }
        }
        eprintln!(
            "{total} points in {:.1} s: {} run, {cached} from earlier runs, {} failed",
            start.elapsed().as_secs_f64(),
            total - cached,
            failed.len()
        );
    }
    println!("{}", csv_path.display());
    println!("{}", pq_path.display());
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `key=value, ...` of a point's axis values.
fn describe(study: &Study, p: &sweep::Point) -> String {
    study
        .axis_keys()
        .iter()
        .zip(&p.values)
        .map(|(k, v)| match v {
            toml::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `<dir>/<stem>-results` for `<dir>/<stem>.toml`.
fn default_out(study: &Path) -> PathBuf {
    let stem = study
        .file_stem()
        .map_or("study".into(), |s| s.to_string_lossy().into_owned());
    study.with_file_name(format!("{stem}-results"))
}

/// A cell as CSV text: empty for null.
fn cell_text(c: &Cell) -> String {
    match c {
        Cell::Null => String::new(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) => format!("{f:?}"),
        Cell::Bool(b) => b.to_string(),
        Cell::Str(s) => s.clone(),
    }
}

/// Writes the table as CSV, a header line of column names first.
pub fn write_csv(table: &Table, path: &Path) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| path.display().to_string())?;
    w.write_record(table.columns.iter().map(|c| c.name.as_str()))?;
    for r in 0..table.rows() {
        w.write_record(table.columns.iter().map(|c| cell_text(&c.cells[r])))?;
    }
    w.flush().with_context(|| path.display().to_string())?;
    Ok(())
}

/// Writes the table as Parquet: one optional column per table column, of its type
/// (INT64, DOUBLE, BOOLEAN, or UTF-8 strings).
pub fn write_parquet(table: &Table, path: &Path) -> anyhow::Result<()> {
    write_parquet_named(table, path, "sweep")
}

/// [`write_parquet`] with the schema's name (`sweep`, `timeline`).
pub fn write_parquet_named(table: &Table, path: &Path, name: &str) -> anyhow::Result<()> {
    let at = || path.display().to_string();
    let mut fields = Vec::new();
    for c in &table.columns {
        let (physical, logical) = match c.kind {
            ColumnType::Int => (Physical::INT64, None),
            ColumnType::Float => (Physical::DOUBLE, None),
            ColumnType::Bool => (Physical::BOOLEAN, None),
            ColumnType::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
        };
        let field = Type::primitive_type_builder(&c.name, physical)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(logical)
            .build()
            .with_context(at)?;
        fields.push(Arc::new(field));
    }
    let schema = Type::group_type_builder(name)
        .with_fields(fields)
        .build()
        .with_context(at)?;
    let file = std::fs::File::create(path).with_context(at)?;
    let props = Arc::new(WriterProperties::builder().build());
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), props).with_context(at)?;
    let mut group = writer.next_row_group().with_context(at)?;
    let mut columns = table.columns.iter();
    while let Some(mut col) = group.next_column().with_context(at)? {
        let c = columns.next().expect("one writer per column");
        let defs: Vec<i16> = c
            .cells
            .iter()
            .map(|x| i16::from(*x != Cell::Null))
            .collect();
        match c.kind {
            ColumnType::Int => {
                let v: Vec<i64> = c
                    .cells
                    .iter()
                    .filter_map(|x| match x {
                        Cell::Int(i) => Some(*i),
                        _ => None,
                    })
                    .collect();
                col.typed::<Int64Type>()
                    .write_batch(&v, Some(&defs), None)
                    .with_context(at)?;
            }
            ColumnType::Float => {
                let v: Vec<f64> = c
                    .cells
                    .iter()
                    .filter_map(|x| match x {
                        Cell::Float(f) => Some(*f),
                        _ => None,
                    })
                    .collect();
                col.typed::<DoubleType>()
                    .write_batch(&v, Some(&defs), None)
                    .with_context(at)?;
            }
            ColumnType::Bool => {
                let v: Vec<bool> = c
                    .cells
                    .iter()
                    .filter_map(|x| match x {
                        Cell::Bool(b) => Some(*b),
                        _ => None,
                    })
                    .collect();
                col.typed::<BoolType>()
                    .write_batch(&v, Some(&defs), None)
                    .with_context(at)?;
            }
            ColumnType::Str => {
                let v: Vec<ByteArray> = c
                    .cells
                    .iter()
                    .filter_map(|x| match x {
                        Cell::Str(s) => Some(ByteArray::from(s.as_str())),
                        _ => None,
                    })
                    .collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&v, Some(&defs), None)
                    .with_context(at)?;
            }
        }
        col.close().with_context(at)?;
    }
    group.close().with_context(at)?;
    writer.close().with_context(at)?;
    Ok(())
}
