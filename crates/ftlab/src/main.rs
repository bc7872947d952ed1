//! The `ftlab` command line: a thin layer over the `ftlab` library.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use ftlab::config::{self, Config};
use ftlab::registry;
use ftlab::run::{self, RunOutput};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// ftlab, the flash translation layer laboratory: a trace-driven simulator of NAND
/// flash storage that runs page, block-mapped, demand-paged and hybrid FTLs under
/// flash-aware write buffers, and checks every read against the last write.
#[derive(Parser)]
#[command(name = "ftlab", version, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a workload (a trace, or the synthetic default) and print a report.
    Run(Box<RunArgs>),
    /// List every FTL, buffer, NAND preset, timing model and trace format.
    List,
    /// Swarm testing: random geometries, schemes and workload mixes under the oracle and
    /// deep checks; prints the replay command of any failure.
    Fuzz(FuzzArgs),
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
    /// No progress bar
    #[arg(long, short)]
    quiet: bool,
}

/// Every option can also be set in a TOML file (--config) or with --set KEY=VALUE;
/// flags override --set, which overrides the file.
#[derive(Args)]
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
    /// Trace file to replay; without one, the synthetic workload runs
    #[arg(long, value_name = "PATH")]
    trace: Option<PathBuf>,
    /// Trace format (see `ftlab list`) [default: spc]
    #[arg(long, value_name = "FMT")]
    format: Option<String>,
    /// Fold addresses beyond the capacity back into it (modulo)
    #[arg(long)]
    fold: bool,
    /// Seed of every random stream [default: 1]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Timing model: serial (the papers') or parallel (channels x dies) [default: serial]
    #[arg(long, value_name = "MODEL")]
    timing: Option<String>,
    /// Write every logical page once before measuring (fill), or not (none) [default: none]
    #[arg(long, value_name = "MODE")]
    precondition: Option<String>,
    /// Passes over the workload before the measured one; their statistics are dropped
    #[arg(long, value_name = "N")]
    warmup: Option<u32>,
    /// Checking: on (every read checked, all data read back at the end), off, or deep
    /// (plus invariant checks every deep_every requests) [default: on]
    #[arg(long, value_name = "LEVEL")]
    verify: Option<String>,
    /// Turn the read oracle off (same as --verify off)
    #[arg(long, conflicts_with = "verify")]
    no_verify: bool,
    /// Power loss before request N, at simulated time t=SECONDS, or at random:K points
    /// drawn from the seed; RAM state (and unflushed buffer data) is dropped and the FTL
    /// recovers from flash (repeatable, comma-separated)
    #[arg(long = "power-loss-at", value_name = "WHEN")]
    power_loss_at: Vec<String>,
    /// TOML config file with any of these settings
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Set any config key, e.g. ftl_options.gc_threshold=5 or synthetic.count=1000
    /// (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Write the JSON report to PATH (- for stdout, replacing the summary)
    #[arg(long, value_name = "PATH")]
    json: Option<String>,
    /// No progress bar and no speed line on stderr
    #[arg(long, short)]
    quiet: bool,
}

impl RunArgs {
    fn flags(&self) -> Vec<(&'static str, toml::Value)> {
        use toml::Value::{Boolean, Float, Integer, String as S};
        let mut f = Vec::new();
        let mut s = |k, v: &Option<String>| {
            if let Some(v) = v {
                f.push((k, S(v.clone())));
            }
        };
        s("ftl", &self.ftl);
        s("buffer", &self.buffer);
        s("nand", &self.nand);
        s("capacity", &self.capacity);
        s("format", &self.format);
        s("timing", &self.timing);
        s("precondition", &self.precondition);
        s("verify", &self.verify);
        if let Some(t) = &self.trace {
            f.push(("trace", S(t.display().to_string())));
        }
        if let Some(v) = self.op {
            f.push(("op", Float(v)));
        }
        if let Some(v) = self.seed {
            f.push(("seed", Integer(v as i64)));
        }
        if let Some(v) = self.warmup {
            f.push(("warmup", Integer(v as i64)));
        }
        if self.fold {
            f.push(("fold", Boolean(true)));
        }
        if !self.power_loss_at.is_empty() {
            let v = self.power_loss_at.iter().cloned().map(S).collect();
            f.push(("power_loss", toml::Value::Array(v)));
        }
        if self.no_verify {
            f.push(("verify", S("off".into())));
        }
        f
    }
}

fn list() {
    let mut out = String::new();
    let w = &mut out;
    use std::fmt::Write as _;
    let _ = writeln!(w, "FTLs (--ftl):");
    for e in registry::FTLS {
        let _ = writeln!(w, "  {:<12} {}  [{}]", e.id, e.description, e.source);
        for o in e.options {
            let _ = writeln!(w, "      {} = {}  {}", o.name, o.default, o.help);
        }
    }
    let _ = writeln!(w, "\nWrite buffers (--buffer):");
    for e in registry::BUFFERS {
        let _ = writeln!(w, "  {:<12} {}  [{}]", e.id, e.description, e.source);
        for o in e.options {
            let _ = writeln!(w, "      {} = {}  {}", o.name, o.default, o.help);
        }
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

fn run_cmd(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let cfg: Config = config::load(args.config.as_deref(), &args.sets, &args.flags())?;
    let total = run::requests_per_pass(&cfg).map(|n| n * (cfg.warmup as u64 + 1));
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        let b = match total {
            Some(n) => indicatif::ProgressBar::new(n),
            None => indicatif::ProgressBar::new_spinner(),
        };
        b.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {elapsed_precise} {human_pos}{msg} requests {wide_bar} {per_sec}",
            )
            .expect("valid template"),
        );
        b
    };
    let start = Instant::now();
    let RunOutput {
        report,
        failure,
        requests,
    } = run::run(&cfg, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
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
    if let Some(f) = failure {
        eprintln!("error: {f}");
        eprintln!(
            "replay: ftlab run --config <the echoed config> --seed {} (the report's `config` \
             holds every setting)",
            cfg.seed
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn fuzz_cmd(args: &FuzzArgs) -> ExitCode {
    use ftlab::swarm::{case_seed, draw, replay_command, run_case, Tally, Verdict};
    let start = Instant::now();
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(args.runs)
    };
    let mut tally = Tally::default();
    let (mut passed, mut skipped) = (0u64, 0u64);
    for i in 0..args.runs {
        if args.minutes > 0.0 && start.elapsed().as_secs_f64() > args.minutes * 60.0 {
            break;
        }
        let seed = case_seed(args.seed, i);
        let cfg = draw(seed, args.max_requests);
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
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::List => {
            list();
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => run_cmd(args),
        Command::Fuzz(args) => Ok(fuzz_cmd(args)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
