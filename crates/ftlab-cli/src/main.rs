//! The `ftlab` command line: a thin layer over the `ftlab` library. It parses
//! arguments into the library's [`Config`], runs, and prints; every flag of `run` is a
//! config key (serialized from the flag structs below, so the two cannot drift).
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
// The doc comments of the flag structs are clap's help text, written for a terminal
// (`[quick]`, `<paper>`), not markdown for rustdoc.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use ftlab_cli::{reproduce, visual};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use ftlab::config::{self, Config};
use ftlab::error::exit;
use ftlab::registry;
use ftlab::sim::{self, Failure, RunOutput, Simulation, Workload};
use ftlab::source;
use ftlab::timeline::TimelineEvery;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const EXIT_CODES: &str = "Exit codes:
  0  the run went through and found nothing wrong
  1  the run found a violation: data lost, an invariant broken, a recovery that failed,
     or an internal error (a bug in ftlab: the message gives the seed and the command
     that replays it); the report is still written where one could be built
  2  bad usage, configuration or input (nothing was simulated)";

/// ftlab, the flash translation layer laboratory: a trace-driven simulator of NAND
/// flash storage that runs page, block-mapped, demand-paged and hybrid FTLs under
/// flash-aware write buffers, and checks every read against the last write.
#[derive(Parser)]
#[command(name = "ftlab", version, max_term_width = 100, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a workload (a trace, or the synthetic default) and print a report.
    #[command(after_help = EXIT_CODES)]
    Run(Box<RunArgs>),
    /// Show the resolved configuration of a run (as TOML), or the JSON Schema of every
    /// configuration key.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// List every FTL, buffer, NAND preset, timing model and trace format.
    List(ListArgs),
    /// Swarm testing: random geometries, schemes and workload mixes under the oracle and
    /// deep checks; prints the replay command of any failure.
    Fuzz(FuzzArgs),
    /// Rerun the papers' evaluations from experiments/<paper>/*.toml: CSV, SVG and PNG
    /// per figure and a markdown summary per paper.
    Reproduce(ReproduceArgs),
    /// Run a parameter study (a base config and axes) on every core: one tidy table
    /// (CSV and Parquet) with a row per point, each point's report kept by content hash
    /// so a rerun resumes.
    #[command(long_about = ftlab_cli::sweep::ABOUT)]
    Sweep(ftlab_cli::sweep::SweepArgs),
    /// Chart a sweep table (results.parquet or .csv): --x op --y waf --color ftl, as SVG
    /// or PNG.
    #[command(long_about = ftlab_cli::plot::ABOUT)]
    Plot(ftlab_cli::plot::PlotArgs),
    /// Inspect a trace, or write a synthetic workload to a trace file.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Measure simulation speed: every FTL and a few buffers on fixed workloads, compared
    /// with the previous run on this machine.
    Bench(ftlab_cli::bench::BenchArgs),
    /// Closed-loop IOPS and p99 response time against queue depth: one run of the
    /// configured workload per depth (trace timestamps ignored), written as
    /// <OUT>.csv and <OUT>-iops / <OUT>-p99 charts (SVG and PNG).
    #[command(name = "qd-curve")]
    QdCurve(Box<QdCurveArgs>),
    /// Put the JSON reports of several runs side by side: a table of key figures, and
    /// with --html one self-contained page with the same charts, one series per run.
    Compare(CompareArgs),
    /// Serve a simulated SSD as a Network Block Device (NBD), for qemu-img, qemu-nbd,
    /// nbdcopy, fio or the kernel's nbd-client: every request drives the FTL and buffer as
    /// a replay does; the report and the recorded requests are written on exit.
    /// docs/serve.md.
    ///
    /// Signals: SIGINT (Ctrl-C) or SIGTERM ends the run, writing the report and the
    /// recorded requests; SIGUSR1 strikes a power loss before the next request (the FTL
    /// recovers while clients stay connected). Clients are served one at a time, in the
    /// order they connect. Device flags are those of `ftlab run`.
    #[command(after_help = EXIT_CODES)]
    Serve(Box<ftlab_cli::serve::ServeArgs>),
}

/// Every option of `ftlab run` sets up the device and workload; --queue-depth is set
/// by the sweep.
#[derive(Args)]
struct QdCurveArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Queue depths, comma-separated, each 1 to 65536
    #[arg(long, value_delimiter = ',', default_value = ftlab_cli::qd_curve::DEFAULT_DEPTHS)]
    depths: Vec<u32>,
    /// Output prefix: writes PREFIX.csv, PREFIX-iops.svg/.png, PREFIX-p99.svg/.png
    #[arg(long, value_name = "PREFIX", default_value = "qd-curve")]
    out: PathBuf,
}

/// Reports written by `ftlab run --json FILE` (with --timeline for the timeline charts).
#[derive(Args)]
struct CompareArgs {
    /// JSON reports (each run is labelled with its file name)
    #[arg(required = true, value_name = "REPORT.json")]
    reports: Vec<PathBuf>,
    /// Write the side-by-side HTML report to PATH
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
}

/// Runs every experiment of a paper (or of all papers) in parallel over the machine's
/// cores and writes <out>/<paper>/<figure>.{csv,svg,png} and <out>/<paper>/summary.md.
#[derive(Args)]
struct ReproduceArgs {
    /// Paper (a directory under --experiments, e.g. tpm) or `all`
    paper: String,
    /// Small workloads (each file's [quick] overrides): minutes instead of hours
    #[arg(long)]
    quick: bool,
    /// Directory of experiment files
    #[arg(long, default_value = "experiments")]
    experiments: PathBuf,
    /// Output directory
    #[arg(long, default_value = "out/reproduce")]
    out: PathBuf,
    /// Parallel runs [default: the number of cores]
    #[arg(long)]
    jobs: Option<usize>,
    /// No progress bar
    #[arg(long, short)]
    quiet: bool,
}

/// Each run draws a device, FTL, buffer, timing model and workload mix from its seed
/// (derived from --seed and the run number) and runs with `--verify deep`. The first
/// failure stops the swarm with its seed and the exact `ftlab run` command replaying it.
#[derive(Args)]
struct FuzzArgs {
    /// Seed of the swarm
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of runs (stops earlier if --minutes runs out)
    #[arg(long, default_value_t = 100)]
    runs: u64,
    /// Wall-clock budget in minutes (0: no limit)
    #[arg(long, default_value_t = 0.0)]
    minutes: f64,
    /// Longest run, in requests
    #[arg(long, default_value_t = 20_000)]
    max_requests: u64,
    /// Print the per-FTL x buffer totals as a markdown table
    #[arg(long)]
    table: bool,
    /// Print per FTL x buffer how many passed runs reached GC, each merge kind, a
    /// translation-page read, a power loss, trims, flushes, the least over-provisioning, a
    /// buffer larger than the device, a retired block and an end of device life reached
    /// by --until-worn-out (a 0 is a blind spot)
    #[arg(long)]
    coverage: bool,
    /// Add this swarm's totals (runs, requests, reads checked, power losses per FTL x
    /// buffer) to the cumulative ledger FILE (JSON, created when missing) and print the
    /// totals so far
    #[arg(long, value_name = "FILE")]
    ledger: Option<PathBuf>,
    /// Run only the drawn cases of this FTL (repeatable; the others are drawn and
    /// passed over, so a case keeps its seed and replay command)
    #[arg(long, value_name = "NAME")]
    ftl: Vec<String>,
    /// No progress bar
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct ListArgs {
    /// Print the schemes and their options as the markdown of docs/schemes.md
    #[arg(long)]
    markdown: bool,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the configuration a `run` with the same flags would use, as TOML: every
    /// key, with the schemes' option defaults filled in (`ftlab run --config` reads it)
    Show(Box<RunArgs>),
    /// Print the JSON Schema of the configuration: every key with its type, default,
    /// range and help, and each scheme's options (for editors and the Python package)
    Schema,
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Request count, read/write ratio, size histogram, sequentiality (per request and
    /// per page, as cach-ftl.txt Table 2), address span, duration and devices of a trace,
    /// after the same transforms `ftlab run` applies.
    Stats(Box<StatsArgs>),
    /// Write the configured synthetic workload (see [synthetic] in a --config file) to a
    /// trace file in any format, so others can replay exactly what was simulated.
    Gen(Box<GenArgs>),
}

/// Flags that choose and transform the workload; each sets the config key of the same
/// name (dashes as underscores) and can also be set in a --config file.
#[derive(Args, Default, Serialize)]
struct WorkloadArgs {
    /// SPC ASUs to replay, e.g. 0,2-4 (same as --device)
    #[arg(long, value_name = "LIST", conflicts_with = "device")]
    #[serde(skip)]
    asu: Option<String>,
    /// Devices (MSR disks, MQSim devices, blkparse MAJ:MIN) to replay, e.g. 0,1 or 8:16
    #[arg(long, value_name = "LIST")]
    #[serde(skip)]
    device: Option<String>,
    /// How the replayed devices share the address space: shared (overlapping) or
    /// side_by_side (each device its own region) [default: shared]
    #[arg(long, value_name = "MODE")]
    device_layout: Option<String>,
    /// Add N 512-byte sectors to every offset (negative moves down), e.g. to align a
    /// partition that starts at sector 63
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    shift_sectors: Option<i64>,
    /// Replay at most N requests per pass
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// Multiply arrival times by F (0.5 replays twice as fast) [default: 1]
    #[arg(long, value_name = "F")]
    time_scale: Option<f64>,
    /// Shorten gaps between arrivals longer than MS milliseconds to MS
    #[arg(long, value_name = "MS")]
    max_gap_ms: Option<f64>,
    /// Replay records arriving at or after S seconds of trace time (S becomes time 0)
    #[arg(long, value_name = "S")]
    #[serde(rename = "window_start_s")]
    window_start: Option<f64>,
    /// Stop at the first record arriving at or after S seconds of trace time
    #[arg(long, value_name = "S")]
    #[serde(rename = "window_end_s")]
    window_end: Option<f64>,
    /// Hold N records to put a trace that is not time-ordered (blkparse) in order; 0 turns
    /// it off [default: 4096]
    #[arg(long, value_name = "N")]
    sort_window: Option<u32>,
    /// Keep arrival times as stamped instead of relative to the first record (windows
    /// then count from time 0 of the stamps)
    #[arg(long)]
    #[serde(skip_serializing_if = "is_false")]
    absolute_time: bool,
    /// Refuse the run (exit 2) when the device selection, time window and skipped bad
    /// records drop more than this share of the trace's records; 1 accepts anything
    /// [default: 0.99]
    #[arg(long, value_name = "SHARE")]
    max_dropped_share: Option<f64>,
    /// Skip bad records and count them (workload.skipped_records) instead of stopping
    #[arg(long)]
    #[serde(skip_serializing_if = "is_false")]
    skip_bad: bool,
    /// Issue a flush-cache command after every N requests of each pass, as a host that
    /// bounds what a power loss can take does (co-op-buffer-ftl.txt §6.5)
    #[arg(long, value_name = "N")]
    flush_every: Option<u64>,
    /// Generic csv format: columns as time=N,offset=N,size=N,op=N[,device=N], counting
    /// from 0, or by header name (time=Timestamp,...; implies --header)
    #[arg(long, value_name = "MAP")]
    #[serde(skip)]
    columns: Option<String>,
    /// Generic csv format: field separator: a character, tab or whitespace [default: ,]
    #[arg(long, value_name = "SEP")]
    #[serde(rename = "csv.delimiter")]
    delimiter: Option<String>,
    /// Generic csv format: the first line is a header
    #[arg(long)]
    #[serde(rename = "csv.header", skip_serializing_if = "is_false")]
    header: bool,
    /// Generic csv format: unit of the time column: s, ms, us, ns or 100ns [default: s]
    #[arg(long, value_name = "UNIT")]
    #[serde(rename = "csv.time_unit")]
    time_unit: Option<String>,
    /// Generic csv format: unit of the offset column: bytes, sectors, kib or N bytes
    #[arg(long, value_name = "UNIT")]
    #[serde(rename = "csv.offset_unit")]
    offset_unit: Option<String>,
    /// Generic csv format: unit of the size column (as --offset-unit)
    #[arg(long, value_name = "UNIT")]
    #[serde(rename = "csv.size_unit")]
    size_unit: Option<String>,
    /// Generic csv format: op values that mean read, e.g. R,Read,1 [default: r,read]
    #[arg(long, value_name = "LIST")]
    #[serde(skip)]
    read_values: Option<String>,
    /// Generic csv format: op values that mean write [default: w,write]
    #[arg(long, value_name = "LIST")]
    #[serde(skip)]
    write_values: Option<String>,
    /// blkparse format: the action replayed, D (dispatch) or Q (queue) [default: D]
    #[arg(long, value_name = "ACTION")]
    #[serde(rename = "blkparse.event")]
    blkparse_event: Option<String>,
}

/// Parses `0,2-4,8:16` into device numbers (`MAJ:MIN` is `MAJ * 256 + MIN`).
fn parse_devices(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{t}` in the device list is not a number"))
        };
        if let Some((maj, min)) = part.split_once(':') {
            let (maj, min) = (num(maj)?, num(min)?);
            if min > 255 {
                return Err(format!("`{part}`: minor numbers go up to 255"));
            }
            out.push(maj * 256 + min);
        } else if let Some((a, b)) = part.split_once('-') {
            let (a, b) = (num(a)?, num(b)?);
            if b < a || b - a > 1 << 16 {
                return Err(format!("`{part}` is not a range low-high"));
            }
            out.extend(a..=b);
        } else {
            out.push(num(part)?);
        }
    }
    if out.is_empty() {
        return Err("the device list is empty".into());
    }
    Ok(out)
}

fn list_value(text: &str) -> toml::Value {
    toml::Value::Array(
        text.split(',')
            .map(|v| toml::Value::String(v.trim().to_string()))
            .collect(),
    )
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Flags as `(config key, value)` pairs, in the order given: the flag structs serialize
/// into config keys (`None` flags are left out), so a flag and its key cannot drift.
type Flags = Vec<(String, toml::Value)>;

fn serialized_flags<T: Serialize>(args: &T, f: &mut Flags) -> anyhow::Result<()> {
    if let toml::Value::Table(t) = toml::Value::try_from(args)? {
        f.extend(t);
    }
    Ok(())
}

impl WorkloadArgs {
    fn flags(&self, f: &mut Flags) -> anyhow::Result<()> {
        use toml::Value::{Array, Integer};
        serialized_flags(self, f)?;
        if let Some(list) = self.asu.as_ref().or(self.device.as_ref()) {
            let devs = parse_devices(list).map_err(|e| anyhow::anyhow!("--asu/--device: {e}"))?;
            let arr = devs.into_iter().map(|d| Integer(d as i64)).collect();
            f.push(("devices".into(), Array(arr)));
        }
        if let Some(v) = &self.read_values {
            f.push(("csv.read_values".into(), list_value(v)));
        }
        if let Some(v) = &self.write_values {
            f.push(("csv.write_values".into(), list_value(v)));
        }
        if let Some(map) = &self.columns {
            for part in map.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (k, v) = part
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("--columns: `{part}` is not NAME=COLUMN"))?;
                let role = match k.trim() {
                    name @ ("time" | "offset" | "size" | "op" | "device") => name,
                    other => anyhow::bail!(
                        "--columns: unknown column name `{other}` (time, offset, size, op, device)"
                    ),
                };
                match v.trim().parse::<u32>() {
                    Ok(col) => f.push((format!("csv.{role}"), Integer(col as i64))),
                    Err(_) if !v.trim().is_empty() => f.push((
                        format!("csv.by_name.{role}"),
                        toml::Value::String(v.trim().to_string()),
                    )),
                    Err(_) => anyhow::bail!("--columns: `{part}` names no column"),
                }
            }
        }
        Ok(())
    }
}

#[derive(Args)]
struct StatsArgs {
    /// The trace file (plain, or gzip, zstd, bzip2 or xz compressed)
    file: PathBuf,
    /// Trace format (see `ftlab list`; auto recognises the native ones) [default: spc]
    #[arg(long, value_name = "FMT")]
    format: Option<String>,
    /// Devices shown in the per-device table (the busiest first)
    #[arg(long, value_name = "N", default_value_t = 10)]
    top: usize,
    /// Print the statistics as JSON
    #[arg(long)]
    json: bool,
    /// Page size for the per-page sequentiality, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 4096)]
    page_bytes: u64,
    #[command(flatten)]
    workload: WorkloadArgs,
    /// TOML config file (its [csv], [blkparse] and transform keys apply)
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Set any config key (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Args)]
struct GenArgs {
    /// Output file; .gz, .zst or .bz2 compresses it
    #[arg(long, short, value_name = "FILE")]
    out: PathBuf,
    /// Output format (see `ftlab list`) [default: spc]
    #[arg(long, value_name = "FMT")]
    format: Option<String>,
    /// Requests to generate (synthetic.count)
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Seed [default: 1]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Logical capacity the addresses fall in [default: 1GiB]
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
    /// TOML config file (its [synthetic] table and transform keys apply)
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Set any config key, e.g. synthetic.p_sequential=0.4 (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    #[command(flatten)]
    workload: WorkloadArgs,
}

/// Every option can also be set in a TOML file (--config) or with --set KEY=VALUE;
/// flags override --set, which overrides the file. `ftlab config show` prints the result.
#[derive(Args, Serialize)]
struct RunArgs {
    /// FTL id (see `ftlab list`) [default: page]
    #[arg(long, value_name = "ID")]
    ftl: Option<String>,
    /// Write buffer id [default: none]
    #[arg(long, value_name = "ID")]
    buffer: Option<String>,
    /// NAND preset id [default: slc-k9f1g16u0m]
    #[arg(long, value_name = "PRESET")]
    nand: Option<String>,
    /// Logical capacity the host sees, e.g. 64MiB, 1GiB, 1TiB [default: 1GiB]
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
    /// Over-provisioning in percent of the logical capacity [default: 7]
    #[arg(long, value_name = "PCT")]
    op: Option<f64>,
    /// Memory the run may use for its tables, e.g. 8GiB; a run whose estimated tables
    /// exceed it is refused before anything is allocated [default: the memory available]
    #[arg(long, value_name = "SIZE")]
    max_memory: Option<String>,
    /// Trace file to replay; without one, the synthetic workload runs
    #[arg(long, value_name = "PATH")]
    trace: Option<PathBuf>,
    /// Trace format (see `ftlab list`; auto recognises spc, msr, mqsim, disksim, blkparse
    /// and vscsi and says which it chose) [default: spc]
    #[arg(long, value_name = "FMT")]
    format: Option<String>,
    /// Fold addresses beyond the capacity into it: modulo (wrap around, the default) or
    /// compact (pack the distinct blocks the trace touches)
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "modulo")]
    #[serde(skip)]
    fold: Option<String>,
    /// Seed of every random stream, 0 to 2^64-1 [default: 1]
    #[arg(long, value_name = "N")]
    #[serde(with = "ftlab::config::seed_repr::option")]
    seed: Option<u64>,
    /// Timing model: serial (the papers' one chip) or parallel (channels x dies, 8 x 4
    /// unless --channels/--dies say otherwise) [default: serial]
    #[arg(long, value_name = "MODEL")]
    timing: Option<String>,
    /// Channels of --timing parallel [default: 8]
    #[arg(long, value_name = "N")]
    channels: Option<u32>,
    /// Dies per channel of --timing parallel [default: 4]
    #[arg(long, value_name = "N")]
    dies: Option<u32>,
    /// Planes per die of --timing parallel: programs, reads and erases on different
    /// planes of a die run together, up to this many (multi-plane operations;
    /// die-aware allocation deals writes over the planes) [default: the preset's, 2 for mqsim-8k, else 1]
    #[arg(long, value_name = "N")]
    planes: Option<u32>,
    /// Channel bandwidth of --timing parallel in MiB/s (a page's transfer time)
    /// [default: 40]
    #[arg(long, value_name = "MIB_S")]
    channel_mib_s: Option<f64>,
    /// Closed-loop replay: keep N requests outstanding (per submission queue), each
    /// completion admitting the next; trace timestamps are ignored. The report gives
    /// IOPS, MB/s, read and write latency percentiles and utilisation [default: open
    /// loop, timestamps replayed]
    #[arg(long, value_name = "N")]
    queue_depth: Option<u32>,
    /// Submission queues of --queue-depth, requests dealt to them round-robin
    /// [default: 1]
    #[arg(long, value_name = "N")]
    queues: Option<u32>,
    /// Program/erase suspend under --timing parallel: a host read that finds its die
    /// programming or erasing suspends the operation (after 100 µs for a program, 700 µs
    /// for an erase: suspend_program_us, suspend_erase_us) and the operation resumes
    /// after the read; the report counts host.suspensions
    #[arg(long)]
    #[serde(skip_serializing_if = "is_false")]
    suspend: bool,
    /// Preemptible GC under --timing parallel: a host read goes ahead of the GC
    /// operations queued on its die that have not begun (they begin that much later);
    /// the report counts host.preemptions
    #[arg(long)]
    #[serde(skip_serializing_if = "is_false")]
    preempt_gc: bool,
    /// Before measuring: write every logical page once (fill), every page the workload
    /// reads or writes (footprint: short trace excerpts then read real data), or
    /// nothing (none) [default: none]
    #[arg(long, value_name = "MODE")]
    precondition: Option<String>,
    /// Leave the pages still dirty in the write buffer at the end out of the figures,
    /// instead of writing them to flash as a device does on shutdown (the default)
    #[arg(long)]
    #[serde(skip)]
    no_drain: bool,
    /// Passes over the workload before the measured ones; their statistics are dropped
    /// (cach-ftl.txt §5.1 plays a trace twice first)
    #[arg(long, value_name = "N")]
    warmup: Option<u32>,
    /// Measured passes over the workload (after the warm-up ones) [default: 1]
    #[arg(long, value_name = "N")]
    replay: Option<u32>,
    /// Replay the workload until the device wears out (the FTL's pe_limit, from the NAND
    /// preset's rated cycles unless set; every built-in FTL); the report's `endurance` says
    /// after how many host bytes and simulated days
    #[arg(long)]
    #[serde(skip_serializing_if = "is_false")]
    until_worn_out: bool,
    /// Initial bad blocks: the NAND preset's bad_block_percent (2%; or
    /// nand_params.bad_block_percent) of the blocks, chosen from the seed, are never used
    #[arg(long)]
    #[serde(skip_serializing_if = "is_false")]
    bad_blocks: bool,
    #[serde(skip)]
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Checking: on (every read checked, all data read back at the end), off, or deep
    /// (plus invariant checks every deep_every requests) [default: on]
    #[arg(long, value_name = "LEVEL")]
    verify: Option<String>,
    /// Turn the read oracle off (same as --verify off)
    #[arg(long, conflicts_with = "verify")]
    #[serde(skip)]
    no_verify: bool,
    /// Power loss before request N, at simulated time t=SECONDS, or at random:K points
    /// drawn from the seed; RAM state (and unflushed buffer data) is dropped and the FTL
    /// recovers from flash. N@K strikes inside the K-th flash operation counted from the
    /// start of request N, which is torn (a page half programmed, a block half erased,
    /// GC or a merge stopped half way); N@K/R strikes again inside the R-th operation
    /// of the recovery; torn:K draws K such points (repeatable, comma-separated)
    #[arg(long = "power-loss-at", value_name = "WHEN")]
    #[serde(rename = "power_loss", skip_serializing_if = "Vec::is_empty")]
    power_loss_at: Vec<String>,
    /// TOML config file with any of these settings
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    config: Option<PathBuf>,
    /// Set any config key, e.g. ftl_options.gc_threshold=5 or synthetic.count=1000
    /// (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    #[serde(skip)]
    sets: Vec<String>,
    /// Write the JSON report to PATH (- for stdout, replacing the summary)
    #[arg(long, value_name = "PATH")]
    #[serde(skip)]
    json: Option<String>,
    /// No progress bar and no speed line on stderr
    #[arg(long, short)]
    #[serde(skip)]
    quiet: bool,
    /// Read the trace (or generate the workload) on the simulation's own thread instead
    /// of a reader thread that runs ahead of it; the report is the same either way
    #[arg(long)]
    #[serde(skip)]
    no_read_ahead: bool,
    /// Record a timeline of the measured phase: an interval every N requests (10k) or
    /// every span of simulated time (1s, 500ms); in the JSON report and --timeline-out
    #[arg(long, value_name = "EVERY", allow_negative_numbers = true)]
    timeline: Option<TimelineEvery>,
    /// Write the timeline to PATH: CSV, or Parquet if PATH ends in .parquet (one row per
    /// interval; records a timeline of about 200 intervals if --timeline is not given)
    #[arg(long, value_name = "PATH")]
    #[serde(skip)]
    timeline_out: Option<PathBuf>,
    /// Write a self-contained HTML report to PATH: summary, timeline charts, latency
    /// CDF, merges, erase-count and valid-page histograms (records a timeline as
    /// --timeline-out does)
    #[arg(long, value_name = "PATH")]
    #[serde(skip)]
    html: Option<PathBuf>,
}

impl RunArgs {
    fn flags(&self) -> anyhow::Result<Flags> {
        use toml::Value::{Boolean, String as S};
        let mut f = Vec::new();
        serialized_flags(self, &mut f)?;
        if let Some(mode) = &self.fold {
            f.push(("fold".into(), Boolean(true)));
            f.push(("fold_mode".into(), S(mode.clone())));
        }
        if self.no_verify {
            f.push(("verify".into(), S("off".into())));
        }
        if self.no_drain {
            f.push(("drain".into(), Boolean(false)));
        }
        self.workload.flags(&mut f)?;
        Ok(f)
    }

    fn config(&self) -> anyhow::Result<Config> {
        Ok(config::load(
            self.config.as_deref(),
            &self.sets,
            &self.flags()?,
        )?)
    }
}

/// One line per option: key, default, help, and what is allowed (from the options'
/// schema, the same one that checks them).
fn list_options(w: &mut String, def: &ftlab_core::options::OptionsDef) {
    use std::fmt::Write as _;
    for o in def.fields() {
        let allowed = if o.is_choice() || o.range().is_some() {
            format!(" [{}]", o.allowed())
        } else {
            String::new()
        };
        let _ = writeln!(w, "      {} = {}  {}{allowed}", o.name, o.default, o.help);
    }
}

fn list() {
    let mut out = String::new();
    let w = &mut out;
    use std::fmt::Write as _;
    let _ = writeln!(w, "FTLs (--ftl):");
    for e in registry::FTLS {
        let _ = writeln!(w, "  {:<12} {}  [{}]", e.id, e.description, e.source);
        let _ = writeln!(w, "      ({})", e.caps.describe());
        list_options(w, &e.options);
    }
    let _ = writeln!(w, "\nWrite buffers (--buffer):");
    for e in registry::BUFFERS {
        let _ = writeln!(w, "  {:<12} {}  [{}]", e.id, e.description, e.source);
        list_options(w, &e.options);
    }
    let _ = writeln!(w, "\nNAND presets (--nand):");
    for p in ftlab_core::nand::PRESETS {
        let _ = writeln!(
            w,
            "  {:<16} {}; read {} µs, program {} µs, erase {} µs  [{}]",
            p.id, p.description, p.read_us, p.program_us, p.erase_us, p.source
        );
    }
    let _ = writeln!(w, "\nTiming models (--timing):");
    for (id, d) in registry::TIMINGS {
        let _ = writeln!(w, "  {id:<12} {d}");
    }
    let _ = writeln!(w, "\nTrace formats (--format):");
    for f in ftlab_workload::FORMATS {
        let _ = writeln!(w, "  {:<12} {}", f.id, f.description);
    }
    print!("{out}");
}

fn qd_curve_cmd(args: &QdCurveArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.run.config()?;
    if args.depths.is_empty() {
        anyhow::bail!("--depths: give at least one queue depth");
    }
    // Validate each depth up front, naming the option, before any run.
    for &d in &args.depths {
        if !(1..=65536).contains(&d) {
            anyhow::bail!("--depths: queue depth {d} is outside 1 to 65536");
        }
    }
    let quiet = args.run.quiet;
    let points = ftlab_cli::qd_curve::sweep(&cfg, &args.depths, |p| {
        if !quiet {
            eprintln!(
                "queue depth {:>5}: {:>12.0} IOPS  p99 {:>10.1} µs",
                p.depth,
                p.iops,
                p.p99_ns as f64 / 1e3
            );
        }
    })?;
    let timing = match cfg.timing {
        ftlab::config::TimingModel::Serial => "serial",
        ftlab::config::TimingModel::Parallel => "parallel",
    };
    let title = format!("{}, {}, {timing} timing", cfg.ftl, cfg.nand);
    for f in ftlab_cli::qd_curve::write(&points, &title, &args.out)? {
        println!("wrote {f}");
    }
    Ok(ExitCode::SUCCESS)
}

fn run_cmd(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mut cfg = args.config()?;
    if let Some(p) = &args.timeline_out {
        visual::check_output("--timeline-out", p, &["csv", "parquet"])?;
    }
    if let Some(p) = &args.html {
        visual::check_output("--html", p, &["html", "htm"])?;
    }
    visual::ensure_timeline(&mut cfg, args.timeline_out.is_some() || args.html.is_some());
    ftlab::readahead::set_enabled(!args.no_read_ahead);
    let total = sim::total_requests(&cfg);
    let start = Instant::now();
    let mut observer = visual::Bar::new(total, args.quiet);
    let RunOutput {
        report,
        failure,
        requests,
    } = Simulation::new(cfg.clone())?.run(Workload::Configured, &mut observer)?;
    observer.finish();
    let secs = start.elapsed().as_secs_f64();
    if !args.quiet {
        eprintln!(
            "simulated {requests} requests in {secs:.2} s ({:.0} requests/s wall clock)",
            requests as f64 / secs.max(1e-9)
        );
    }
    let json = serde_json::to_string_pretty(&report)? + "\n";
    match args.json.as_deref() {
        Some("-") => print!("{json}"),
        Some(path) => {
            std::fs::write(path, &json).with_context(|| format!("writing --json {path}"))?;
            print!("{}", ftlab_report::summary(&report));
        }
        None => print!("{}", ftlab_report::summary(&report)),
    }
    std::io::stdout().flush()?;
    if let Some(p) = &args.timeline_out {
        visual::write_timeline(&report, p)?;
    }
    if let Some(p) = &args.html {
        visual::write_html(&report, p)?;
    }
    for n in &report.notices {
        eprintln!("warning: {n}");
    }
    if let Some(f) = failure {
        eprintln!("error: {f}");
        let saved = std::env::temp_dir().join(format!("ftlab-failed-seed-{}.toml", cfg.seed));
        let written = cfg
            .to_toml()
            .map_err(|e| e.to_string())
            .and_then(|t| std::fs::write(&saved, t).map_err(|e| e.to_string()));
        match written {
            Ok(()) => eprintln!("replay: ftlab run --config {}", saved.display()),
            Err(_) => eprintln!(
                "replay: ftlab run --config <the report's `config`, as TOML> (seed {})",
                cfg.seed
            ),
        }
        if matches!(f, Failure::Internal { .. }) {
            eprintln!("this is a bug in ftlab: please report it with the replay command");
        }
        return Ok(ExitCode::from(exit::FAILED));
    }
    Ok(ExitCode::from(exit::CLEAN))
}

fn config_cmd(cmd: &ConfigCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ConfigCommand::Show(args) => {
            // One validation pass: every key checked, the schemes' option defaults
            // filled in, nothing built (a 1 TiB device costs nothing here).
            let resolved = sim::validate(&args.config()?)?;
            print!("{}", resolved.config.to_toml()?);
        }
        ConfigCommand::Schema => {
            println!("{}", serde_json::to_string_pretty(&config::schema())?);
        }
    }
    Ok(ExitCode::from(exit::CLEAN))
}

fn fuzz_cmd(args: &FuzzArgs) -> ExitCode {
    use ftlab::swarm::{case_seed, draw, replay_command, run_case, Tally, Verdict};
    let start = Instant::now();
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(args.runs)
    };
    for name in &args.ftl {
        if !ftlab::registry::FTLS.iter().any(|f| f.id == name) {
            let known: Vec<&str> = ftlab::registry::FTLS.iter().map(|f| f.id).collect();
            eprintln!(
                "error: --ftl: unknown FTL `{name}` (known: {})",
                known.join(", ")
            );
            return ExitCode::from(ftlab::error::exit::USAGE);
        }
    }
    let mut tally = Tally::default();
    let (mut passed, mut skipped) = (0u64, 0u64);
    for i in 0..args.runs {
        if args.minutes > 0.0 && start.elapsed().as_secs_f64() > args.minutes * 60.0 {
            break;
        }
        let seed = case_seed(args.seed, i);
        let cfg = draw(seed, args.max_requests);
        if !args.ftl.is_empty() && !args.ftl.contains(&cfg.ftl) {
            bar.inc(1);
            continue;
        }
        bar.set_message(format!("{} / {}", cfg.ftl, cfg.buffer));
        let verdict = run_case(&cfg);
        tally.add(&cfg, &verdict);
        match &verdict {
            Verdict::Passed { .. } => passed += 1,
            Verdict::Skipped(_) => skipped += 1,
            Verdict::Failed(why) => {
                bar.finish_and_clear();
                eprintln!("FAILED run {i} (case seed {seed}): {why}");
                eprintln!("replay: {}", replay_command(&cfg));
                return ExitCode::from(1);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "swarm seed {}: {passed} runs passed, {skipped} skipped (scheme refused the drawn \
         geometry), 0 failed, in {:.1} s",
        args.seed,
        start.elapsed().as_secs_f64()
    );
    if args.table {
        print!("{}", tally.table());
    }
    if args.coverage {
        print!("{}", tally.coverage_table());
    }
    if let Some(path) = &args.ledger {
        match tally.add_to_ledger(path) {
            Ok(l) => {
                let t = l.totals();
                println!(
                    "ledger {}: {} swarms, {} runs, {} requests, {} reads checked, {} power \
                     losses over {} FTL x buffer pairs",
                    path.display(),
                    l.swarms,
                    t.runs,
                    t.requests,
                    t.reads_checked,
                    t.power_losses,
                    l.pairs.len()
                );
            }
            Err(e) => {
                eprintln!("error: --ledger {e}");
                return ExitCode::from(ftlab::error::exit::USAGE);
            }
        }
    }
    ExitCode::SUCCESS
}

fn reproduce_cmd(args: &ReproduceArgs) -> anyhow::Result<ExitCode> {
    use reproduce::{papers, reproduce_paper, Options};
    let list = if args.paper == "all" {
        papers(&args.experiments)?
    } else {
        vec![args.paper.clone()]
    };
    let opts = Options {
        experiments: args.experiments.clone(),
        out: args.out.clone(),
        quick: args.quick,
        jobs: args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    };
    let start = Instant::now();
    for paper in &list {
        let bar = if args.quiet {
            indicatif::ProgressBar::hidden()
        } else {
            let b = indicatif::ProgressBar::new(0);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg:>12} {elapsed_precise} [{wide_bar}] {pos}/{len} runs",
                )
                .expect("valid template"),
            );
            b.set_message(paper.clone());
            b
        };
        let produced = reproduce_paper(paper, &opts, &|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
        bar.finish_and_clear();
        println!(
            "{paper}: {} figures -> {}",
            produced.len(),
            opts.out.join(paper).join("summary.md").display()
        );
    }
    if !args.quiet {
        eprintln!("reproduce took {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(ExitCode::SUCCESS)
}

fn stats_cmd(args: &StatsArgs) -> anyhow::Result<ExitCode> {
    use toml::Value::String as S;
    anyhow::ensure!(args.page_bytes > 0, "--page-bytes must be above 0");
    let mut flags: Flags = vec![("trace".into(), S(args.file.display().to_string()))];
    if let Some(f) = &args.format {
        flags.push(("format".into(), S(f.clone())));
    }
    args.workload.flags(&mut flags)?;
    let mut cfg: Config = config::load(args.config.as_deref(), &args.sets, &flags)?;
    cfg.warmup = 0;
    cfg.replay = 1;
    cfg.fold = false;
    // Statistics of a selection are what it is for: only an empty one is refused.
    cfg.max_dropped_share = 1.0;
    let geo = sim::device_geometry(&cfg)?;
    ftlab_workload::check_format(&cfg.format, &source::read_options(&cfg))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let counters = std::rc::Rc::new(ftlab_workload::transform::Counters::default());
    let mut b = ftlab_workload::stats::StatsBuilder::new(args.page_bytes);
    for r in source::workload_stream(&cfg, &geo, &counters)? {
        b.add(&r.map_err(|e| source::name_source(e, &cfg))?);
    }
    source::check_kept(&cfg, &counters)?;
    let stats = source::finish_stats(b, &counters);
    let format = counters
        .format
        .borrow()
        .clone()
        .unwrap_or(cfg.format.clone());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
    } else {
        println!("{} ({format})", args.file.display());
        print!("{}", stats.human_top(args.top));
    }
    for n in source::workload_notes(&cfg, &counters)
        .into_iter()
        .filter(|n| n.code != "devices_share_space")
    {
        eprintln!(
            "warning: {}",
            ftlab_report::Notice::new(n.code, n.message, n.hint)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn gen_cmd(args: &GenArgs) -> anyhow::Result<ExitCode> {
    use toml::Value::{Integer, String as S};
    let mut flags: Flags = Vec::new();
    if let Some(f) = &args.format {
        flags.push(("format".into(), S(f.clone())));
    }
    if let Some(n) = args.count {
        flags.push(("synthetic.count".into(), Integer(n as i64)));
    }
    if let Some(n) = args.seed {
        flags.push(("seed".into(), config::seed_repr::to_toml(n)));
    }
    if let Some(c) = &args.capacity {
        flags.push(("capacity".into(), S(c.clone())));
    }
    args.workload.flags(&mut flags)?;
    let mut cfg: Config = config::load(args.config.as_deref(), &args.sets, &flags)?;
    anyhow::ensure!(
        cfg.trace.is_none(),
        "trace gen writes the synthetic workload; unset `trace` (use `trace stats` to read one)"
    );
    cfg.warmup = 0;
    cfg.replay = 1;
    let geo = sim::device_geometry(&cfg)?;
    cfg.synthetic
        .validate(geo.logical_bytes())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut writer = ftlab_workload::writer::TraceWriter::new(&cfg.format, &cfg.csv)
        .map_err(|e| anyhow::anyhow!("--format: {e}"))?;
    let file = std::fs::File::create(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut out = ftlab_workload::input::Output::new(
        file,
        ftlab_workload::input::compression_for(&args.out),
    )?;
    writer.begin(&mut out)?;
    let counters = std::rc::Rc::new(ftlab_workload::transform::Counters::default());
    let mut n = 0u64;
    for r in source::workload_stream(&cfg, &geo, &counters)? {
        writer.write(&mut out, &r?)?;
        n += 1;
    }
    out.finish()
        .with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!(
        "wrote {n} requests to {} ({}, seed {})",
        args.out.display(),
        cfg.format,
        cfg.seed
    );
    Ok(ExitCode::SUCCESS)
}

/// The `ftlab run` flag of the config key a configuration error names (`` `csv.time_unit`:
/// ... `` -> `--time-unit`), looked up in the command line's own definition so it cannot
/// drift: a flag whose long name is the key's last part with `-` for `_`.
fn flag_of_config_error(e: &config::ConfigError) -> Option<String> {
    use clap::CommandFactory;
    let config::ConfigError::Invalid { why, .. } = e else {
        return None;
    };
    let key = why.strip_prefix('`')?.split('`').next()?;
    let long = key.rsplit('.').next()?.replace('_', "-");
    let cmd = Cli::command();
    let found = cmd
        .find_subcommand("run")?
        .get_arguments()
        .any(|a| a.get_long() == Some(long.as_str()));
    found.then(|| format!("--{long}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::List(a) if a.markdown => {
            print!("{}", registry::reference_markdown());
            Ok(ExitCode::SUCCESS)
        }
        Command::List(_) => {
            list();
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => run_cmd(args),
        Command::Config(cmd) => config_cmd(cmd),
        Command::Fuzz(args) => Ok(fuzz_cmd(args)),
        Command::Reproduce(args) => reproduce_cmd(args),
        Command::Sweep(args) => ftlab_cli::sweep::command(args),
        Command::Plot(args) => ftlab_cli::plot::command(args),
        Command::Trace(TraceCommand::Stats(args)) => stats_cmd(args),
        Command::Trace(TraceCommand::Gen(args)) => gen_cmd(args),
        Command::Bench(args) => ftlab_cli::bench::command(args),
        Command::Serve(args) => ftlab_cli::serve::command(args),
        Command::QdCurve(args) => qd_curve_cmd(args),
        Command::Compare(args) => visual::compare(&args.reports, args.html.as_deref()).map(|t| {
            print!("{t}");
            ExitCode::SUCCESS
        }),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            let bad_record = e
                .chain()
                .filter_map(|c| c.downcast_ref::<ftlab_workload::TraceError>())
                .chain(
                    e.chain()
                        .filter_map(|c| match c.downcast_ref::<ftlab::RunError>() {
                            Some(ftlab::RunError::Trace(t)) => Some(t),
                            _ => None,
                        }),
                )
                .any(|t| {
                    // Not for a record that shows the whole file is misread (a header, another
                    // format, a csv header without the named column): skipping cannot help.
                    t.is_record_error()
                        && !t.file.ends_with("(fold compact)")
                        && !t.why.contains("looks like a header")
                        && !t.why.contains("the first lines look like")
                        && !t.why.contains("the header has no column")
                });
            if bad_record {
                eprintln!("hint: --skip-bad skips bad records and counts them in the report");
            }
            if let Some(flag) = e
                .chain()
                .find_map(|c| c.downcast_ref::<config::ConfigError>())
                .and_then(flag_of_config_error)
            {
                eprintln!("hint: on the command line this key is {flag}");
            }
            let code = e
                .chain()
                .find_map(|c| c.downcast_ref::<ftlab::RunError>())
                .map_or(exit::USAGE, ftlab::RunError::exit_code);
            ExitCode::from(code)
        }
    }
}
