//! `ftlab bench`: the fixed benchmark workloads, every FTL and a few buffers, measured
//! the way the project compares speeds: each case in its own process (so its peak RSS is
//! its own), the cases interleaved over several rounds (so a noisy moment of a shared
//! machine spreads over all of them), medians reported. Results are compared with the
//! previous run saved on the same machine and then saved in its place.
//!
//! What is timed is the measured part of a run: from the moment the counters reset
//! (after `precondition = "fill"`) to the last request. Building the device, the fill
//! and the final read-back of the oracle are not in the figures; peak RSS covers the
//! whole process.

use anyhow::{bail, Context};
use ftlab::config::{Config, Precondition};
use ftlab::{Observer, Progress, Simulation, Workload};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// How big the benchmark devices and workloads are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Size {
    /// 1 GiB at 7% over-provisioning, 4 KiB pages, 2 M requests after a fill (the
    /// workloads of issue 26 and BENCHMARKS.md).
    Full,
    /// 64 MiB and 100 k requests: seconds in all, for checking the command itself.
    Quick,
}

/// The workloads, all after `precondition = "fill"`, uniform random 4 KiB requests with no
/// idle time between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// Writes only: GC (or merges) in steady state.
    RandomWrite,
    /// Half reads, half writes.
    Mixed,
}

impl Load {
    fn id(self) -> &'static str {
        match self {
            Load::RandomWrite => "randwrite",
            Load::Mixed => "mixed",
        }
    }
}

/// One benchmark case: a workload on one FTL under one buffer.
#[derive(Clone, Debug)]
pub struct Case {
    /// `workload/ftl+buffer`.
    pub id: String,
    /// The workload.
    pub load: Load,
    /// FTL id.
    pub ftl: &'static str,
    /// Buffer id.
    pub buffer: &'static str,
}

/// Buffered cases (besides every FTL with no buffer): the block-level buffers on the
/// log-block schemes they were written for, and each buffer on page mapping, the
/// yardstick of the FTL under it ([`page_case_of`]).
const BUFFERED: [(&str, &str); 7] = [
    ("page", "lru"),
    ("page", "bplru"),
    ("bast", "bplru"),
    ("page", "fab"),
    ("fast", "fab"),
    ("page", "coop"),
    ("fast", "coop"),
];

/// Every case: each built-in FTL on both workloads with no buffer, then the buffered
/// cases on random writes.
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for load in [Load::RandomWrite, Load::Mixed] {
        for e in ftlab::registry::BUILTIN_FTLS {
            out.push(case(load, e.id, "none"));
        }
    }
    for (ftl, buffer) in BUFFERED {
        out.push(case(Load::RandomWrite, ftl, buffer));
    }
    out
}

fn case(load: Load, ftl: &'static str, buffer: &'static str) -> Case {
    Case {
        id: format!("{}/{ftl}+{buffer}", load.id()),
        load,
        ftl,
        buffer,
    }
}

/// The configuration of `case` at `size`.
pub fn config(case: &Case, size: Size) -> Config {
    let mut c = Config {
        ftl: case.ftl.into(),
        buffer: case.buffer.into(),
        nand: "mlc-k9gag08u0m".into(),
        op: 7.0,
        precondition: Precondition::Fill,
        ..Config::default()
    };
    let (capacity, count) = match size {
        Size::Full => ("1GiB", 2_000_000),
        Size::Quick => ("64MiB", 100_000),
    };
    c.capacity = capacity.parse().expect("a size");
    c.synthetic.count = count;
    c.synthetic.request_bytes = 4096;
    c.synthetic.interarrival_us = 0.0;
    c.synthetic.read_ratio = match case.load {
        Load::RandomWrite => 0.0,
        Load::Mixed => 0.5,
    };
    c
}

/// What one run of one case measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measure {
    /// The case.
    pub id: String,
    /// Measured host requests.
    pub requests: u64,
    /// Flash operations of the measured part (page and spare reads, programs, erases).
    pub flash_ops: u64,
    /// Wall time of the measured part, in seconds.
    pub seconds: f64,
    /// Peak resident set of the process, in bytes (Linux; 0 elsewhere).
    pub peak_rss: u64,
    /// Logical pages of the device.
    pub logical_pages: u64,
    /// The FTL's mapping RAM as the report states it, in bytes.
    pub mapping_bytes: u64,
    /// Write amplification (a check that the work is the same from run to run).
    pub waf: Option<f64>,
    /// In a median: the median over rounds of this case's flash operations/s relative
    /// to page mapping's on the same workload under the same buffer, run just before
    /// it ([`vs_partner`]); absent in one run's measure and in results saved before it
    /// existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_page: Option<f64>,
    /// In a median: the lowest and the highest of those ratios over the rounds
    /// ([`vs_partner_range`]), which say how far one round's ratio can be trusted on
    /// this machine; absent as `vs_page` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_page_range: Option<[f64; 2]>,
}

impl Measure {
    /// Host requests per second.
    pub fn requests_per_s(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }

    /// Flash operations per second.
    pub fn flash_ops_per_s(&self) -> f64 {
        self.flash_ops as f64 / self.seconds.max(1e-9)
    }

    /// Nanoseconds of wall time per flash operation.
    pub fn ns_per_flash_op(&self) -> f64 {
        self.seconds * 1e9 / self.flash_ops.max(1) as f64
    }
}

/// Notes when the measured part starts and when the last request was submitted.
struct Clock {
    start: Option<Instant>,
    last: Option<Instant>,
}

impl Observer for Clock {
    fn progress_every(&self) -> u64 {
        1 << 16
    }

    fn progress(&mut self, _p: &Progress) {
        self.last = Some(Instant::now());
    }

    fn measuring(&mut self, _p: &Progress) {
        self.start = Some(Instant::now());
    }
}

/// Runs `case` in this process and measures it.
pub fn measure(case: &Case, size: Size) -> anyhow::Result<Measure> {
    let cfg = config(case, size);
    let mut clock = Clock {
        start: None,
        last: None,
    };
    let sim = Simulation::new(cfg)?;
    let logical_pages = sim.geometry().logical_pages;
    let out = sim.run(Workload::Configured, &mut clock)?;
    if let Some(f) = out.failure {
        bail!("{}: the run failed: {f}", case.id);
    }
    let (Some(start), Some(last)) = (clock.start, clock.last) else {
        bail!("{}: the run never started measuring", case.id);
    };
    let r = &out.report;
    let f = &r.flash;
    Ok(Measure {
        id: case.id.clone(),
        requests: r.host.requests,
        flash_ops: f.page_reads + f.spare_reads + f.page_programs + f.block_erases,
        seconds: last.saturating_duration_since(start).as_secs_f64(),
        peak_rss: peak_rss(),
        logical_pages: logical_pages.into(),
        mapping_bytes: r.ftl.mapping_bytes,
        waf: r.waf,
        vs_page: None,
        vs_page_range: None,
    })
}

/// The process's peak resident set (`VmHWM`), in bytes; 0 where /proc is missing.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// The machine a result was measured on: results from another machine are not compared
/// silently.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Host name.
    pub host: String,
    /// CPU model (first `model name` of /proc/cpuinfo).
    pub cpu: String,
    /// Cores available to the process.
    pub cores: usize,
}

impl Machine {
    /// This machine.
    pub fn this() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Machine {
            host: read("/proc/sys/kernel/hostname").trim().to_string(),
            cpu: read("/proc/cpuinfo")
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string())
                .unwrap_or_default(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// A saved set of results: the medians of one `ftlab bench` run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Saved {
    /// `ftlab` version that measured them.
    pub version: String,
    /// Workload size.
    pub size: Size,
    /// Rounds each case ran (medians taken over them).
    pub rounds: u32,
    /// Where.
    pub machine: Machine,
    /// One median measure per case.
    pub cases: Vec<Measure>,
}

/// The median (by wall time) of several measures of one case.
pub fn median(mut runs: Vec<Measure>) -> Measure {
    assert!(!runs.is_empty(), "a median of no runs");
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let peak = runs.iter().map(|m| m.peak_rss).max().unwrap_or(0);
    let mut m = runs.swap_remove(runs.len() / 2);
    m.peak_rss = peak;
    m
}

/// The page-mapping case case `id` is measured against: page mapping on the same
/// workload under the same buffer (`randwrite/page+fab` for `randwrite/fast+fab`), so
/// the ratio compares the FTLs' own work; the buffer's cost shows as page+buffer
/// against page+none.
pub fn page_case_of(id: &str) -> String {
    let (workload, rest) = id.split_once('/').unwrap_or((id, ""));
    let buffer = rest.split_once('+').map_or("none", |(_, b)| b);
    format!("{workload}/page+{buffer}")
}

/// The median over rounds of a case's flash operations/s relative to its partner's,
/// page mapping run on the same workload under the same buffer just before it
/// (`case[round]`, `partner[round]`), or `None` without rounds. Pairing each run with
/// an adjacent page-mapping run keeps the machine's drift out of the ratio, which a
/// ratio of the two medians, or of runs half a round apart, takes in.
pub fn vs_partner(case: &[Measure], partner: &[Measure]) -> Option<f64> {
    let ratios = paired_ratios(case, partner);
    ratios.get(ratios.len() / 2).copied()
}

/// The lowest and the highest of the rounds' ratios [`vs_partner`] takes the median
/// of, or `None` without rounds.
pub fn vs_partner_range(case: &[Measure], partner: &[Measure]) -> Option<[f64; 2]> {
    let ratios = paired_ratios(case, partner);
    Some([*ratios.first()?, *ratios.last()?])
}

/// Each round's flash operations/s of the case relative to its partner's, ascending.
fn paired_ratios(case: &[Measure], partner: &[Measure]) -> Vec<f64> {
    let mut ratios: Vec<f64> = case
        .iter()
        .zip(partner)
        .map(|(m, p)| m.flash_ops_per_s() / p.flash_ops_per_s())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios
}

/// Reads a saved result, if the file exists.
pub fn load(path: &Path) -> anyhow::Result<Option<Saved>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("{}: not a saved bench result", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("{}", path.display())),
    }
}

/// The table `ftlab bench` prints: one row per case, page mapping's flash operations/s
/// under the same buffer on the same workload as the yardstick, and the ratio to the
/// baseline's requests/s.
pub fn table(now: &Saved, baseline: Option<&Saved>) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<26} {:>10} {:>12} {:>9} {:>8} {:>11} {:>9} {:>9} {:>11}",
        "case",
        "req/s",
        "flash ops/s",
        "ns/op",
        "vs page",
        "range",
        "RSS MiB",
        "B/lpage",
        "vs baseline"
    );
    for m in &now.cases {
        let page_id = page_case_of(&m.id);
        let page = now.cases.iter().find(|p| p.id == page_id);
        let vs_page = m
            .vs_page
            .or_else(|| page.map(|p| m.flash_ops_per_s() / p.flash_ops_per_s()))
            .map_or("-".to_string(), |r| format!("{r:.2}x"));
        // Only where the rounds' ratios differ: page mapping against itself, or one
        // round, has no spread to show.
        let range = m
            .vs_page_range
            .filter(|[lo, hi]| lo < hi)
            .map_or("-".to_string(), |[lo, hi]| format!("{lo:.2}-{hi:.2}"));
        let vs_base = baseline
            .and_then(|b| b.cases.iter().find(|b| b.id == m.id))
            .map_or("-".to_string(), |b| {
                format!("{:.3}", m.requests_per_s() / b.requests_per_s())
            });
        let _ = writeln!(
            s,
            "{:<26} {:>10} {:>12} {:>9.1} {:>8} {:>11} {:>9.1} {:>9.1} {:>11}",
            m.id,
            si(m.requests_per_s()),
            si(m.flash_ops_per_s()),
            m.ns_per_flash_op(),
            vs_page,
            range,
            m.peak_rss as f64 / 1048576.0,
            m.peak_rss as f64 / m.logical_pages.max(1) as f64,
            vs_base
        );
    }
    s
}

/// `1.23 M`, `456.7 k`.
fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Measures simulation speed: every FTL on two fixed workloads (random writes; half
/// reads, half writes; both after a fill) and a few buffers, each case in its own
/// process, interleaved over several rounds; prints medians of requests/s, flash
/// operations/s, ns per flash operation, peak RSS and bytes per logical page, and the
/// ratio to the previous run saved on this machine (then saves this run in its place).
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Workload size: full (1 GiB, 2 M requests per case) or quick (64 MiB, 100 k)
    #[arg(long, value_enum, default_value = "full")]
    pub size: Size,
    /// Rounds over all cases (medians are taken over them)
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Only the cases whose id contains this text (ids: `randwrite/dftl+none`,
    /// `mixed/page+none`, `randwrite/bast+bplru`, ...)
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// The previous run to compare with, rewritten with this run's medians
    /// [default: ~/.cache/ftlab/bench-SIZE.json]
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<std::path::PathBuf>,
    /// Compare with the baseline but do not replace it
    #[arg(long)]
    pub no_save: bool,
    /// Print the medians as JSON on stdout instead of the table
    #[arg(long)]
    pub json: bool,
    /// No progress on stderr
    #[arg(long, short)]
    pub quiet: bool,
    /// Run one case in this process and print its measure as JSON (what each round's
    /// child process does)
    #[arg(long, value_name = "CASE", hide = true)]
    pub one: Option<String>,
}

fn default_baseline(size: Size) -> std::path::PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let size = match size {
        Size::Full => "full",
        Size::Quick => "quick",
    };
    base.join("ftlab").join(format!("bench-{size}.json"))
}

/// `ftlab bench`.
pub fn command(args: &BenchArgs) -> anyhow::Result<std::process::ExitCode> {
    let all = cases();
    if let Some(id) = &args.one {
        let Some(c) = all.iter().find(|c| &c.id == id) else {
            bail!("--one: no case `{id}`");
        };
        println!("{}", serde_json::to_string(&measure(c, args.size)?)?);
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let chosen: Vec<&Case> = all
        .iter()
        .filter(|c| args.only.as_ref().is_none_or(|t| c.id.contains(t.as_str())))
        .collect();
    if chosen.is_empty() {
        bail!(
            "--only {:?} matches no case (cases: {})",
            args.only.as_deref().unwrap_or(""),
            all.iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    let exe = std::env::current_exe().context("finding the ftlab executable")?;
    let size = match args.size {
        Size::Full => "full",
        Size::Quick => "quick",
    };
    let mut runs: Vec<Vec<Measure>> = vec![Vec::new(); chosen.len()];
    // Each other case's partner: page mapping on its workload, run just before it.
    let mut partners: Vec<Vec<Measure>> = vec![Vec::new(); chosen.len()];
    let total = chosen.len() as u32 * args.rounds;
    let mut done = 0;
    let progress = !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let one = |id: &str| -> anyhow::Result<Measure> {
        let out = std::process::Command::new(&exe)
            .args(["bench", "--size", size, "--one", id])
            .stderr(std::process::Stdio::inherit())
            .output()
            .with_context(|| format!("starting {}", exe.display()))?;
        if !out.status.success() {
            bail!("{id}: the case failed ({})", out.status);
        }
        serde_json::from_slice(&out.stdout)
            .with_context(|| format!("{id}: reading the child's measure"))
    };
    for round in 1..=args.rounds {
        for (i, c) in chosen.iter().enumerate() {
            done += 1;
            if progress {
                eprint!(
                    "\rround {round}/{}: {:<28} ({done}/{total})",
                    args.rounds, c.id
                );
            }
            let page = page_case_of(&c.id);
            if c.id != page {
                partners[i].push(one(&page)?);
            }
            runs[i].push(one(&c.id)?);
        }
    }
    if progress {
        eprintln!();
    }
    // A page-mapping case is its own partner (1.00x).
    let vs_page: Vec<(Option<f64>, Option<[f64; 2]>)> = runs
        .iter()
        .zip(&partners)
        .map(|(r, p)| {
            let p = if p.is_empty() { r } else { p };
            (vs_partner(r, p), vs_partner_range(r, p))
        })
        .collect();
    let now = Saved {
        version: env!("CARGO_PKG_VERSION").into(),
        size: args.size,
        rounds: args.rounds,
        machine: Machine::this(),
        cases: runs
            .into_iter()
            .zip(vs_page)
            .map(|(r, (v, range))| Measure {
                vs_page: v,
                vs_page_range: range,
                ..median(r)
            })
            .collect(),
    };
    let path = args
        .baseline
        .clone()
        .unwrap_or_else(|| default_baseline(args.size));
    let baseline = load(&path)?;
    let baseline = baseline.filter(|b| {
        let same = b.machine == now.machine && b.size == now.size;
        if !same && !args.quiet {
            eprintln!(
                "note: {} was measured on another machine or size ({} {}); not compared",
                path.display(),
                b.machine.host,
                b.machine.cpu
            );
        }
        same
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&now)?);
    } else {
        print!("{}", table(&now, baseline.as_ref()));
        println!(
            "medians of {} round(s), {} ({} cores); vs page: flash ops/s relative to \
             page mapping on the same workload under the same buffer, run just before \
             the case, the median over the rounds; range: the lowest and highest of \
             the rounds' ratios; vs baseline: requests/s relative to {}",
            now.rounds,
            now.machine.cpu,
            now.machine.cores,
            if baseline.is_some() {
                path.display().to_string()
            } else {
                "(no earlier run on this machine)".into()
            }
        );
    }
    if !args.no_save {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
        }
        // Keep the cases of the earlier run that this one did not measure (`--only`).
        let mut saved = now;
        if let Some(b) = baseline {
            for m in b.cases {
                if !saved.cases.iter().any(|n| n.id == m.id) {
                    saved.cases.push(m);
                }
            }
        }
        std::fs::write(&path, serde_json::to_string_pretty(&saved)? + "\n")
            .with_context(|| format!("{}", path.display()))?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_ftl_has_a_case_on_both_workloads_and_ids_are_unique() {
        let all = cases();
        for e in ftlab::registry::BUILTIN_FTLS {
            for w in ["randwrite", "mixed"] {
                let id = format!("{w}/{}+none", e.id);
                assert!(all.iter().any(|c| c.id == id), "{id}");
            }
        }
        let mut ids: Vec<_> = all.iter().map(|c| &c.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
    }

    #[test]
    fn a_quick_case_measures_the_work_of_the_report() {
        let c = case(Load::Mixed, "page", "none");
        let m = measure(&c, Size::Quick).unwrap();
        assert_eq!(m.requests, 100_000);
        assert!(m.flash_ops >= m.requests, "{m:?}");
        assert!(m.seconds > 0.0);
        assert_eq!(m.logical_pages, 64 * 256);
    }

    #[test]
    fn the_median_is_by_time_and_keeps_the_highest_peak() {
        let m = |s: f64, rss: u64| Measure {
            id: "x".into(),
            requests: 1,
            flash_ops: 1,
            seconds: s,
            peak_rss: rss,
            logical_pages: 1,
            mapping_bytes: 0,
            waf: None,
            vs_page: None,
            vs_page_range: None,
        };
        let got = median(vec![m(3.0, 1), m(1.0, 5), m(2.0, 2)]);
        assert_eq!(got.seconds, 2.0);
        assert_eq!(got.peak_rss, 5);
    }

    /// A round where the machine ran slow for page mapping but not for the case: the
    /// ratio of the medians would take that in (2 / 2.2 = 0.91x); paired by round, the
    /// case runs at half page mapping's pace in two rounds of three (0.5x).
    #[test]
    fn vs_page_pairs_each_run_with_the_page_mapping_run_just_before_it() {
        let m = |s: f64| Measure {
            id: "randwrite/x+none".into(),
            requests: 10,
            flash_ops: 100,
            seconds: s,
            peak_rss: 0,
            logical_pages: 1,
            mapping_bytes: 0,
            waf: None,
            vs_page: None,
            vs_page_range: None,
        };
        // The machine halves its speed in round 2: each pair keeps the ratio 0.5, a
        // ratio of medians would not.
        let page = [m(1.0), m(3.0), m(2.0)];
        let case = [m(2.0), m(6.0), m(2.2)];
        assert_eq!(vs_partner(&case, &page), Some(0.5));
        assert_eq!(vs_partner(&page, &page), Some(1.0));
        assert_eq!(vs_partner(&[], &[]), None);
        // The spread: 0.5 in rounds 1 and 2, 2.0 / 2.2 in round 3.
        let [lo, hi] = vs_partner_range(&case, &page).expect("three rounds");
        assert_eq!(lo, 0.5);
        assert!((hi - 2.0 / 2.2).abs() < 1e-9, "{hi}");
        assert_eq!(vs_partner_range(&page, &page), Some([1.0, 1.0]));
        assert_eq!(vs_partner_range(&[], &[]), None);
        let of_medians =
            median(case.to_vec()).flash_ops_per_s() / median(page.to_vec()).flash_ops_per_s();
        assert!((of_medians - 2.0 / 2.2).abs() < 1e-9);
        assert_eq!(page_case_of("mixed/fast+none"), "mixed/page+none");
        assert_eq!(page_case_of("randwrite/fast+fab"), "randwrite/page+fab");
        assert_eq!(page_case_of("randwrite/page+lru"), "randwrite/page+lru");
        for c in cases() {
            let page = page_case_of(&c.id);
            assert!(
                cases().iter().any(|p| p.id == page),
                "{} has no {page}",
                c.id
            );
        }
    }

    /// The table shows each case's spread of paired ratios beside their median, and
    /// none where there is no spread (page mapping against itself); a result saved
    /// before the range existed still reads.
    #[test]
    fn the_table_shows_the_rounds_spread_of_the_ratio_to_page_mapping() {
        let m = |id: &str, vs: Option<f64>, range: Option<[f64; 2]>| Measure {
            id: id.into(),
            requests: 10,
            flash_ops: 100,
            seconds: 1.0,
            peak_rss: 0,
            logical_pages: 1,
            mapping_bytes: 0,
            waf: None,
            vs_page: vs,
            vs_page_range: range,
        };
        let saved = Saved {
            version: "0".into(),
            size: Size::Quick,
            rounds: 3,
            machine: Machine::this(),
            cases: vec![
                m("randwrite/page+none", Some(1.0), Some([1.0, 1.0])),
                m("randwrite/tpm+none", Some(0.81), Some([0.704, 1.0451])),
            ],
        };
        let t = table(&saved, None);
        let row = |id: &str| {
            let line = t.lines().find(|l| l.starts_with(id)).expect("a row");
            line.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert!(t
            .lines()
            .next()
            .expect("a header")
            .contains("vs page       range"));
        assert_eq!(row("randwrite/tpm+none")[4..6], ["0.81x", "0.70-1.05"]);
        assert_eq!(row("randwrite/page+none")[4..6], ["1.00x", "-"]);
        let old = r#"{"id":"x","requests":1,"flash_ops":1,"seconds":1.0,"peak_rss":0,
            "logical_pages":1,"mapping_bytes":0,"waf":null,"vs_page":0.5}"#;
        let old: Measure = serde_json::from_str(old).expect("a measure saved before ranges");
        assert_eq!((old.vs_page, old.vs_page_range), (Some(0.5), None));
    }
}
