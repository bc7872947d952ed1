//! ftlab reports: the JSON whose keys are a stable interface, and the human summary.
//!
//! Derived figures (WA, hit ratios, percentiles, throughput, merge cost) are computed
//! here, once, from the plain counters of [`Outcome`]. Keys may be added, never renamed.
//! A figure a scheme does not have is 0, or `null` where 0 would be a lie (a hit ratio
//! with no lookups, WA with no host writes).
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

use ftlab_core::engine::Outcome;
use ftlab_core::flash::{Cause, FlashStats};
use ftlab_core::nand::Latencies;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub mod timeline;
pub use timeline::{Distributions, Timeline};

/// Response-time summary in ns.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ResponseNs {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// Maximum.
    pub max: u64,
}

/// Response-time percentiles of one kind of request (reads or writes), in ns; all 0
/// with no such request.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Percentiles {
    /// Requests of this kind.
    pub requests: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// Maximum.
    pub max: u64,
}

impl Percentiles {
    fn of(h: &ftlab_core::metrics::Histogram<u64>) -> Percentiles {
        let q = |x| h.value_at_quantile(x);
        Percentiles {
            requests: h.len(),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: h.max(),
        }
    }
}

/// `host.wait_ns`: queueing, the part of the response time spent waiting for busy
/// flash, and how it evolved from the first to the last quarter of the requests.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct WaitNs {
    /// Mean over every request.
    pub mean: f64,
    /// Mean over the first quarter of the requests (in arrival order).
    pub first_quarter: f64,
    /// Mean over the last quarter.
    pub last_quarter: f64,
}

/// `host.*`
// Its first fields repeat `ftlab_core::metrics::HostStats` (with their doc lines) on
// purpose: this struct is the report's stable JSON interface (keys added, never
// renamed), the other the engine's working counters, free to change; `build` copies
// one into the other field by field.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct HostReport {
    /// Requests measured.
    pub requests: u64,
    /// Read requests.
    pub read_requests: u64,
    /// Write requests.
    pub write_requests: u64,
    /// Trim requests.
    pub trim_requests: u64,
    /// Flush-cache requests.
    pub flush_requests: u64,
    /// Pages read by the host.
    pub pages_read: u64,
    /// Pages written by the host.
    pub pages_written: u64,
    /// Pages read that were never written (or trimmed): the FTL found no mapping and
    /// the device answered without reading a data page (the lookup is all they cost;
    /// docs/report-notices.md).
    pub unmapped_reads: u64,
    /// Response times.
    pub response_ns: ResponseNs,
    /// Time requests waited for the device before their first flash operation.
    pub wait_ns: WaitNs,
    /// Host bytes (read + written) per simulated second, in KiB/s.
    pub throughput_kib_s: f64,
    /// First arrival to last completion.
    pub sim_time_ns: u64,
    /// Flash operation time: every operation of the run (all causes) at its serial
    /// latency, idle gaps excluded.
    pub busy_ns: u64,
    /// Host bytes (read + written) per second of flash operation time, in KiB/s: the
    /// throughput of co-op-buffer-ftl.txt §6.2 ("the rate of the total amount of read
    /// and written data to the overall operation time"); null with no operations.
    pub throughput_busy_kib_s: Option<f64>,
    /// Requests (all kinds) per simulated second, first arrival to last completion.
    pub iops: f64,
    /// Host bytes (read + written) per simulated second, in MB/s (10^6 bytes).
    pub mb_s: f64,
    /// Response times of the read requests alone.
    pub read_response_ns: Percentiles,
    /// Response times of the write requests alone.
    pub write_response_ns: Percentiles,
    /// Device utilisation: the time the dies spent on operations (array and transfer,
    /// waits excluded; background work included), over dies x simulated time. Under
    /// serial timing, the one chip's busy share. Null with no simulated time.
    pub utilisation: Option<f64>,
    /// Programs and erases suspended by host reads, under `suspend` (parallel timing);
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspensions: Option<u64>,
    /// Host reads that went ahead of GC operations queued on their die, under
    /// `preempt_gc` (parallel timing); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<u64>,
}

/// Per-cause operation counts.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct CauseCounts {
    /// Page reads.
    pub page_reads: u64,
    /// Spare reads.
    pub spare_reads: u64,
    /// Programs.
    pub page_programs: u64,
    /// Erases.
    pub block_erases: u64,
}

/// min/mean/max, standard deviation and histogram of per-block erase counts.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct EraseCount {
    /// Least-erased block.
    pub min: u32,
    /// Mean over blocks.
    pub mean: f64,
    /// Most-erased block.
    pub max: u32,
    /// Population standard deviation over blocks (report layout 6).
    pub stddev: f64,
    /// Blocks by erase count, `min..=max` in at most 64 bins of equal width (the
    /// binning of `distributions.erase_count`; report layout 6).
    pub histogram: Vec<timeline::Bin>,
}

impl EraseCount {
    /// The figures of per-block erase counts `counts`, with `min`, `mean` and `max` as
    /// the engine's outcome gives them.
    pub fn of(counts: &[u32], min: u32, mean: f64, max: u32) -> EraseCount {
        let n = counts.len().max(1) as f64;
        let var = counts
            .iter()
            .map(|&c| (c as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        EraseCount {
            min,
            mean: (mean * 1e6).round() / 1e6,
            max,
            stddev: (var.sqrt() * 1e6).round() / 1e6,
            histogram: if counts.is_empty() {
                Vec::new()
            } else {
                timeline::bins(counts.iter().map(|&c| c as u64), min as u64, max as u64)
            },
        }
    }
}

/// `flash.*`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FlashReport {
    /// Page reads, all causes.
    pub page_reads: u64,
    /// Spare-only reads.
    pub spare_reads: u64,
    /// Page programs.
    pub page_programs: u64,
    /// Block erases.
    pub block_erases: u64,
    /// Per-block erase counts over the device's life (preconditioning included).
    pub erase_count: EraseCount,
    /// The same operations split by cause (host, gc, merge, map, padding).
    pub by_cause: BTreeMap<&'static str, CauseCounts>,
}

/// `ftl.gc`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct GcReport {
    /// Victim blocks reclaimed.
    pub invocations: u64,
    /// Valid data pages copied.
    pub pages_copied: u64,
    /// Valid translation (map) pages moved by GC (demand-paged schemes).
    pub translation_pages_copied: u64,
    /// Time of GC operations (copies and erases) under serial costs.
    pub cost_ns: u64,
}

/// `ftl.merges`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct MergeReport {
    /// Switch merges.
    pub switch: u64,
    /// Partial merges.
    pub partial: u64,
    /// Full merges.
    pub full: u64,
    /// Switch merges of blocks a buffer padded (not in `switch`).
    pub padding_switch: u64,
    /// Optimized switch merges (not in `switch`).
    pub osm: u64,
    /// Buffer-aware full merges, BA-BM (not in `full`).
    pub ba_bm: u64,
    /// Pages copied by merges.
    pub pages_copied: u64,
    /// Merge cost: time of merge copies and erases under serial costs.
    pub cost_ns: u64,
}

/// `ftl.map_cache`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct MapCacheReport {
    /// Hits.
    pub hits: u64,
    /// Misses.
    pub misses: u64,
    /// hits / (hits + misses), null with no lookups.
    pub hit_ratio: Option<f64>,
}

/// `ftl.translation`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct TranslationReport {
    /// Translation page reads.
    pub page_reads: u64,
    /// Translation page writes.
    pub page_writes: u64,
}

/// `ftl.*`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FtlReport {
    /// Scheme id.
    pub name: String,
    /// Garbage collection.
    pub gc: GcReport,
    /// Merges.
    pub merges: MergeReport,
    /// Mapping cache.
    pub map_cache: MapCacheReport,
    /// Translation pages.
    pub translation: TranslationReport,
    /// Mapping RAM in bytes.
    pub mapping_bytes: u64,
    /// Scheme-specific figures.
    pub extra: ftlab_core::stats::Sink,
}

/// `buffer.*`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct BufferReport {
    /// Buffer id.
    pub name: String,
    /// Read and write hits.
    pub hits: u64,
    /// hits / host page accesses, null with none.
    pub hit_ratio: Option<f64>,
    /// Read hits.
    pub read_hits: u64,
    /// Write hits.
    pub write_hits: u64,
    /// Groups handed to the FTL.
    pub flushes: u64,
    /// Pages handed to the FTL.
    pub pages_flushed: u64,
    /// Pages read to pad blocks.
    pub padding_reads: u64,
    /// Scheme-specific figures.
    pub extra: ftlab_core::stats::Sink,
}

/// `verify.*`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct VerifyReport {
    /// Whether the oracle was on.
    pub enabled: bool,
    /// Reads checked (host reads plus the final read-back).
    pub reads_checked: u64,
    /// Violations found (a violation stops the run, so 0 or 1).
    pub violations: u64,
}

/// Flash operations and time of power-loss recoveries.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RecoveryReport {
    /// Page reads.
    pub page_reads: u64,
    /// Spare reads.
    pub spare_reads: u64,
    /// Programs.
    pub page_programs: u64,
    /// Erases.
    pub block_erases: u64,
    /// Simulated time.
    pub time_ns: u64,
}

/// One power loss.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct PowerLossEvent {
    /// Requests submitted before it struck.
    pub after_request: u64,
    /// Pages whose newest data was only in volatile RAM (the buffer, or the FTL's).
    pub lost_pages: u64,
    /// What the recovery cost.
    pub recovery: RecoveryReport,
    /// The flash operation the loss struck inside ("a torn program of block 7 (gc)");
    /// absent for a loss between two requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torn: Option<String>,
    /// Losses that struck the recovery itself before one completed.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub recovery_cuts: u32,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// `power_loss.*`
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct PowerLossReport {
    /// Power losses in the measured phase.
    pub events: u64,
    /// Pages lost from volatile RAM (buffer or FTL), all events.
    pub lost_pages: u64,
    /// The first 64 lost LPNs, ascending within each event.
    pub lost_lpns: Vec<u32>,
    /// Recovery cost, all events.
    pub recovery: RecoveryReport,
    /// Each event.
    pub per_event: Vec<PowerLossEvent>,
}

fn recovery_report(f: &FlashStats, time_ns: u64) -> RecoveryReport {
    RecoveryReport {
        page_reads: FlashStats::total(&f.page_reads),
        spare_reads: FlashStats::total(&f.spare_reads),
        page_programs: FlashStats::total(&f.programs),
        block_erases: FlashStats::total(&f.erases),
        time_ns,
    }
}

fn power_loss(o: &Outcome) -> PowerLossReport {
    let mut all = FlashStats::default();
    let mut time = 0;
    let mut lost_lpns = Vec::new();
    let per_event = o
        .recoveries
        .iter()
        .map(|r| {
            all += r.flash;
            time += r.time_ns;
            for l in &r.lost_lpns {
                if lost_lpns.len() < 64 {
                    lost_lpns.push(l.0);
                }
            }
            PowerLossEvent {
                after_request: r.after_request,
                lost_pages: r.lost_lpns.len() as u64,
                recovery: recovery_report(&r.flash, r.time_ns),
                torn: r.torn.map(|c| c.describe()),
                recovery_cuts: r.recovery_cuts,
            }
        })
        .collect::<Vec<_>>();
    PowerLossReport {
        events: per_event.len() as u64,
        lost_pages: per_event.iter().map(|e| e.lost_pages).sum(),
        lost_lpns,
        recovery: recovery_report(&all, time),
        per_event,
    }
}

/// `workload.*`: where the requests came from and what the readers and transforms did.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct WorkloadReport {
    /// `trace` or `synthetic` (empty when the report was built outside a run).
    pub source: String,
    /// The trace file, if any.
    pub path: Option<String>,
    /// The trace format, if any.
    pub format: Option<String>,
    /// Passes played before measuring (their statistics dropped).
    pub warmup_passes: u32,
    /// Passes measured.
    pub measured_passes: u32,
    /// Good records in one pass, after the transforms.
    pub records_per_pass: u64,
    /// Requests submitted to the engine, all passes.
    pub requests_submitted: u64,
    /// Bad records skipped (`--skip-bad`), counted once (not once per pass).
    pub skipped_records: u64,
    /// Records the sort window could not put in order (given the latest time so far).
    pub late_records: u64,
    /// Good records the reader delivered in the first pass, before any transform.
    pub records_read: u64,
    /// Of those, records arriving before the record preceding them, as read.
    pub out_of_order_records: u64,
    /// The first record's timestamp as stamped in the trace, ns.
    pub first_timestamp_ns: Option<u64>,
    /// Whether arrivals were made relative to the first record (the default; false with
    /// `absolute_time`).
    pub time_rebased: bool,
    /// First to last arrival of one pass after the transforms, ns.
    pub span_ns: u64,
    /// Devices in one pass after the selection.
    pub devices: u64,
    /// Requests submitted before the fold split any, all passes: the trace's records
    /// (plus the flushes `flush_every` adds); `host.requests` counts the pieces the
    /// engine got.
    pub host_records: u64,
    /// Records the fold split into pieces, all passes.
    pub split_records: u64,
}

/// `end_of_run`: what the write buffer still held when the workload ended, and what
/// became of it.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct EndOfRunReport {
    /// Dirty pages the buffer held when the workload ended.
    pub dirty_pages: u64,
    /// Whether they were written to flash before the figures were taken (`drain`,
    /// default true: a device flushes its cache on shutdown). Their operations are in
    /// `flash.*` and `waf`.
    pub drained: bool,
    /// Flash programs the drain caused (all causes).
    pub drain_programs: u64,
    /// Simulated time the drain took, after the last request (background: in no
    /// response time, not in `host.sim_time_ns`).
    pub drain_ns: u64,
}

/// Something a reader of a report must know: the run is valid, but a figure may not
/// mean what it seems (filters that kept little of a trace, dirty pages still in the
/// buffer, reads of pages never written, a saturated device). Printed as a warning by
/// the CLI and kept in the report's `notices` list.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// A stable identifier for scripts (`snake_case`, documented in
    /// docs/report-notices.md).
    pub code: &'static str,
    /// What was seen, with the figures.
    pub message: String,
    /// What to do about it (a flag, a setting), if anything.
    pub hint: Option<String>,
}

impl Notice {
    /// A notice with a hint.
    pub fn new(code: &'static str, message: impl Into<String>, hint: Option<String>) -> Self {
        Notice {
            code,
            message: message.into(),
            hint,
        }
    }
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// The layout version of [`Report`] (its `report_version` key).
pub const REPORT_VERSION: u32 = 6;

/// The whole report. Field order is the JSON key order.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Report {
    /// ftlab version that produced it.
    pub ftlab_version: &'static str,
    /// Version of this report's layout: bumped by every deliberate change of its keys
    /// or of their types (CHANGELOG.md lists them). 2: scheme options echoed as typed
    /// values (numbers, booleans) instead of text. 3: `notices`. 4: `workload` states
    /// the records read, out-of-order records, first timestamp, rebasing, span, devices,
    /// host records and split records; `end_of_run`, `host.unmapped_reads`,
    /// `host.wait_ns`, `ftl.gc.translation_pages_copied`. 5: `host.iops`, `host.mb_s`,
    /// `host.read_response_ns`, `host.write_response_ns`, `host.utilisation`,
    /// `p90` and `p9999` in `host.response_ns`; `queue_depth` and `queues` in the config.
    pub report_version: u32,
    /// Host side.
    pub host: HostReport,
    /// Flash side.
    pub flash: FlashReport,
    /// Write amplification: flash page programs / host page writes (null: no writes,
    /// or none reached flash: the pages are still buffered, `end_of_run`).
    pub waf: Option<f64>,
    /// FTL.
    pub ftl: FtlReport,
    /// Buffer.
    pub buffer: BufferReport,
    /// Oracle.
    pub verify: VerifyReport,
    /// Power losses and recoveries.
    pub power_loss: PowerLossReport,
    /// Workload (set by the run; default when built alone).
    pub workload: WorkloadReport,
    /// The buffer at the end of the run (set by the run; default when built alone).
    pub end_of_run: EndOfRunReport,
    /// What a reader must know to trust the figures (empty for a run with nothing to
    /// say), in the order the run found them.
    pub notices: Vec<Notice>,
    /// Every setting of the run, seed included.
    pub config: serde_json::Value,
    /// The measured phase interval by interval, when the run recorded a timeline
    /// (`timeline` key); absent otherwise, so reports without one keep their layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// The response-time CDF and the per-block erase-count and valid-page histograms
    /// at the end of the run, recorded with the timeline; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distributions: Option<Distributions>,
    /// How the device's life ended, under `until_worn_out` (issue 23 item 4); absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endurance: Option<EnduranceReport>,
}

/// `endurance`: the end of a run replayed until the device wore out.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct EnduranceReport {
    /// Which limit ended it: `pe_limit` (blocks retired at the FTL's P/E limit until
    /// too few were left).
    pub ended_by: &'static str,
    /// What the FTL said.
    pub message: String,
    /// Requests submitted before the device wore out.
    pub request: u64,
    /// Host bytes written in the measured passes (the warm-up passes and the
    /// preconditioning wrote more).
    pub host_bytes_written: u64,
    /// The same in terabytes (10^12 bytes): the TBW the device reached.
    pub tbw: f64,
    /// Simulated days the measured passes took at the workload's rate.
    pub days: f64,
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

fn cost_ns(f: &FlashStats, c: Cause, lat: &Latencies) -> u64 {
    let i = c as usize;
    f.page_reads[i] * lat.read.0
        + f.spare_reads[i] * lat.spare_read.0
        + f.programs[i] * lat.program.0
        + f.erases[i] * lat.erase.0
}

/// Names and settings the outcome alone does not carry.
pub struct Labels<'a> {
    /// FTL id.
    pub ftl: &'a str,
    /// Buffer id.
    pub buffer: &'a str,
    /// Latencies used (for merge and GC cost).
    pub latencies: Latencies,
    /// Violations found.
    pub violations: u64,
    /// The resolved configuration to echo.
    pub config: serde_json::Value,
    /// Per-block erase counts at the end (for `flash.erase_count`'s deviation and
    /// histogram).
    pub erase_counts: &'a [u32],
}

/// Builds the report.
pub fn build(o: &Outcome, labels: Labels<'_>) -> Report {
    let h = &o.host;
    let sim = h.sim_time().0;
    let bytes = h.bytes_read + h.bytes_written;
    let throughput = if sim > 0 {
        bytes as f64 / 1024.0 / (sim as f64 / 1e9)
    } else {
        0.0
    };
    let f = &o.flash;
    let total = FlashStats::total;
    let by_cause = Cause::ALL
        .iter()
        .map(|&c| {
            let i = c as usize;
            (
                c.name(),
                CauseCounts {
                    page_reads: f.page_reads[i],
                    spare_reads: f.spare_reads[i],
                    page_programs: f.programs[i],
                    block_erases: f.erases[i],
                },
            )
        })
        .collect();
    let programs = total(&f.programs);
    let busy: u64 = Cause::ALL
        .iter()
        .map(|&c| cost_ns(f, c, &labels.latencies))
        .sum();
    let busy_throughput =
        (busy > 0).then(|| (bytes as f64 / 1024.0 / (busy as f64 / 1e9) * 1000.0).round() / 1000.0);
    let b = &o.buffer;
    let hits = b.read_hits + b.write_hits;
    Report {
        ftlab_version: env!("CARGO_PKG_VERSION"),
        report_version: REPORT_VERSION,
        host: HostReport {
            requests: h.requests,
            read_requests: h.read_requests,
            write_requests: h.write_requests,
            trim_requests: h.trim_requests,
            flush_requests: h.flush_requests,
            pages_read: h.pages_read,
            pages_written: h.pages_written,
            unmapped_reads: h.unmapped_reads,
            response_ns: {
                let response = h.response();
                ResponseNs {
                    mean: (h.mean_response_ns() * 1000.0).round() / 1000.0,
                    p50: response.value_at_quantile(0.5),
                    p90: response.value_at_quantile(0.9),
                    p99: response.value_at_quantile(0.99),
                    p999: response.value_at_quantile(0.999),
                    p9999: response.value_at_quantile(0.9999),
                    max: response.max(),
                }
            },
            wait_ns: {
                let (first, last) = h.load.quarters().unwrap_or((0.0, 0.0));
                let r = |x: f64| (x * 1000.0).round() / 1000.0;
                WaitNs {
                    mean: r(h.mean_wait_ns()),
                    first_quarter: r(first),
                    last_quarter: r(last),
                }
            },
            throughput_kib_s: (throughput * 1000.0).round() / 1000.0,
            sim_time_ns: sim,
            busy_ns: busy,
            throughput_busy_kib_s: busy_throughput,
            iops: if sim > 0 {
                (h.requests as f64 / (sim as f64 / 1e9) * 1000.0).round() / 1000.0
            } else {
                0.0
            },
            mb_s: if sim > 0 {
                (bytes as f64 / 1e6 / (sim as f64 / 1e9) * 1e6).round() / 1e6
            } else {
                0.0
            },
            read_response_ns: Percentiles::of(&h.read_response),
            write_response_ns: Percentiles::of(&h.write_response),
            utilisation: {
                let (busy, dies) = o.device_busy;
                (sim > 0)
                    .then(|| (busy as f64 / (dies.max(1) as f64 * sim as f64) * 1e6).round() / 1e6)
            },
            suspensions: o.suspensions,
            preemptions: o.preemptions,
        },
        flash: FlashReport {
            page_reads: total(&f.page_reads),
            spare_reads: total(&f.spare_reads),
            page_programs: programs,
            block_erases: total(&f.erases),
            erase_count: EraseCount::of(
                labels.erase_counts,
                o.erase_count.0,
                o.erase_count.1,
                o.erase_count.2,
            ),
            by_cause,
        },
        waf: ratio(programs, h.pages_written).filter(|_| programs > 0),
        ftl: FtlReport {
            name: labels.ftl.to_string(),
            gc: GcReport {
                invocations: o.ftl.gc_invocations,
                pages_copied: o.ftl.gc_pages_copied,
                translation_pages_copied: o.ftl.gc_translation_pages_copied,
                cost_ns: cost_ns(f, Cause::Gc, &labels.latencies),
            },
            merges: MergeReport {
                switch: o.ftl.merges_switch,
                partial: o.ftl.merges_partial,
                full: o.ftl.merges_full,
                padding_switch: o.ftl.merges_padding_switch,
                osm: o.ftl.merges_osm,
                ba_bm: o.ftl.merges_ba_bm,
                pages_copied: o.ftl.merge_pages_copied,
                cost_ns: cost_ns(f, Cause::Merge, &labels.latencies),
            },
            map_cache: MapCacheReport {
                hits: o.ftl.map_hits,
                misses: o.ftl.map_misses,
                hit_ratio: ratio(o.ftl.map_hits, o.ftl.map_hits + o.ftl.map_misses),
            },
            translation: TranslationReport {
                page_reads: o.ftl.translation_reads,
                page_writes: o.ftl.translation_writes,
            },
            mapping_bytes: o.mapping_bytes,
            extra: o.ftl.extra.clone(),
        },
        buffer: BufferReport {
            name: labels.buffer.to_string(),
            hits,
            hit_ratio: ratio(hits, h.pages_read + h.pages_written),
            read_hits: b.read_hits,
            write_hits: b.write_hits,
            flushes: b.flushes,
            pages_flushed: b.pages_flushed,
            padding_reads: b.padding_reads,
            extra: b.extra.clone(),
        },
        verify: VerifyReport {
            enabled: o.verified,
            reads_checked: o.reads_checked,
            violations: labels.violations,
        },
        power_loss: power_loss(o),
        workload: WorkloadReport::default(),
        end_of_run: EndOfRunReport::default(),
        notices: Vec::new(),
        config: labels.config,
        timeline: None,
        distributions: None,
        endurance: None,
    }
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1000.0)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The human summary printed on stdout.
pub fn summary(r: &Report) -> String {
    let mut s = String::new();
    let h = &r.host;
    let f = &r.flash;
    let t = &r.ftl;
    let _ = writeln!(s, "ftlab: ftl={} buffer={}", t.name, r.buffer.name);
    let _ = writeln!(
        s,
        "  host      {} requests ({} reads, {} writes, {} trims, {} flushes)",
        h.requests, h.read_requests, h.write_requests, h.trim_requests, h.flush_requests
    );
    let _ = writeln!(
        s,
        "            {} pages read, {} pages written, {:.3} s simulated, {:.1} KiB/s",
        h.pages_read,
        h.pages_written,
        h.sim_time_ns as f64 / 1e9,
        h.throughput_kib_s
    );
    let rt = &h.response_ns;
    if let Some(t) = h.throughput_busy_kib_s {
        let _ = writeln!(
            s,
            "            {:.3} s of flash operations, {t:.1} KiB/s over operation time",
            h.busy_ns as f64 / 1e9
        );
    }
    let _ = writeln!(
        s,
        "  response  mean {}  p50 {}  p99 {}  p99.9 {}  max {}",
        us(rt.mean),
        us(rt.p50 as f64),
        us(rt.p99 as f64),
        us(rt.p999 as f64),
        us(rt.max as f64)
    );
    if !r.config["queue_depth"].is_null() {
        let _ = writeln!(
            s,
            "  closed loop {} x {} outstanding: {:.0} IOPS, {:.2} MB/s, utilisation {}",
            r.config["queues"],
            r.config["queue_depth"],
            h.iops,
            h.mb_s,
            h.utilisation
                .map_or("-".into(), |u| format!("{:.1}%", u * 100.0))
        );
        for (what, p) in [
            ("reads", &h.read_response_ns),
            ("writes", &h.write_response_ns),
        ] {
            if p.requests > 0 {
                let _ = writeln!(
                    s,
                    "            {what}: p50 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}",
                    us(p.p50 as f64),
                    us(p.p90 as f64),
                    us(p.p99 as f64),
                    us(p.p999 as f64),
                    us(p.p9999 as f64),
                    us(p.max as f64)
                );
            }
        }
    }
    if h.wait_ns.mean > 0.0 {
        let _ = writeln!(
            s,
            "            waiting for busy flash: mean {} (first quarter {}, last quarter {})",
            us(h.wait_ns.mean),
            us(h.wait_ns.first_quarter),
            us(h.wait_ns.last_quarter)
        );
    }
    if let Some(n) = h.suspensions {
        let _ = writeln!(
            s,
            "            {n} programs and erases suspended by host reads (--suspend)"
        );
    }
    if let Some(n) = h.preemptions {
        let _ = writeln!(
            s,
            "            {n} host reads went ahead of queued GC operations (--preempt-gc)"
        );
    }
    let e = &r.end_of_run;
    // WA is never printed as 0 for a run that wrote: null then means nothing reached
    // flash, and the summary says where the pages are.
    let wa = match r.waf {
        Some(w) => format!("{w:.3}"),
        None if h.pages_written > 0 => format!(
            "- (none of the {} pages written reached flash; {} dirty pages still buffered)",
            h.pages_written, e.dirty_pages
        ),
        None => "-".into(),
    };
    let _ = writeln!(
        s,
        "  flash     {} reads, {} spare reads, {} programs, {} erases; WA {wa}",
        f.page_reads, f.spare_reads, f.page_programs, f.block_erases,
    );
    let _ = writeln!(
        s,
        "            erase count per block min {} / mean {:.2} / max {}",
        f.erase_count.min, f.erase_count.mean, f.erase_count.max
    );
    // Translation pages moved by GC are copies too: "0 pages copied" beside 326 GC
    // runs that moved translation pages read as if GC had been free.
    let copied = if t.gc.translation_pages_copied > 0 {
        format!(
            "{} pages copied ({} data, {} translation)",
            t.gc.pages_copied + t.gc.translation_pages_copied,
            t.gc.pages_copied,
            t.gc.translation_pages_copied
        )
    } else {
        format!("{} pages copied", t.gc.pages_copied)
    };
    let _ = writeln!(
        s,
        "  ftl       GC {} runs, {copied}; merges {} switch / {} partial / {} full ({} copied)",
        t.gc.invocations, t.merges.switch, t.merges.partial, t.merges.full, t.merges.pages_copied
    );
    if t.merges.padding_switch + t.merges.osm + t.merges.ba_bm > 0 {
        let _ = writeln!(
            s,
            "            merges {} padding switch / {} OSM / {} BA-BM",
            t.merges.padding_switch, t.merges.osm, t.merges.ba_bm
        );
    }
    let _ = writeln!(
        s,
        "            map cache hit ratio {}; translation {} reads / {} writes; mapping RAM {} B",
        opt(t.map_cache.hit_ratio, 4),
        t.translation.page_reads,
        t.translation.page_writes,
        t.mapping_bytes
    );
    let b = &r.buffer;
    let _ = writeln!(
        s,
        "  buffer    hit ratio {}; {} flushes, {} padding reads, {} padding writes",
        opt(b.hit_ratio, 4),
        b.flushes,
        b.padding_reads,
        f.by_cause.get("padding").map_or(0, |c| c.page_programs)
    );
    if e.dirty_pages > 0 {
        let _ = writeln!(
            s,
            "  end       {} dirty pages buffered at the end; {}",
            e.dirty_pages,
            if e.drained {
                format!(
                    "drained: {} programs, {:.1} ms after the last request",
                    e.drain_programs,
                    e.drain_ns as f64 / 1e6
                )
            } else {
                "not drained (drain = false): not in the flash figures".into()
            }
        );
    }
    if h.unmapped_reads > 0 {
        let _ = writeln!(
            s,
            "  unmapped  {} of {} pages read were never written: answered from the map, no flash read",
            h.unmapped_reads, h.pages_read
        );
    }
    let p = &r.power_loss;
    if p.events > 0 {
        let _ = writeln!(
            s,
            "  power     {} losses, {} buffered pages lost; recovery {} spare reads, {} reads, {:.1} ms",
            p.events,
            p.lost_pages,
            p.recovery.spare_reads,
            p.recovery.page_reads,
            p.recovery.time_ns as f64 / 1e6
        );
    }
    let wl = &r.workload;
    if !wl.source.is_empty() {
        let what = match (&wl.path, &wl.format) {
            (Some(p), Some(f)) => format!("{p} ({f})"),
            _ => wl.source.clone(),
        };
        let _ = writeln!(
            s,
            "  workload  {what}: {} records per pass, {} measured + {} warm-up passes; {} bad \
             records skipped",
            wl.records_per_pass, wl.measured_passes, wl.warmup_passes, wl.skipped_records
        );
        if wl.source == "trace" {
            let _ = writeln!(
                s,
                "            span {:.6} s per pass{}; {} device{}; {} records out of time order",
                wl.span_ns as f64 / 1e9,
                match (wl.time_rebased, wl.first_timestamp_ns) {
                    (true, Some(t)) if t > 0 => {
                        format!(" (rebased: first stamp {:.6} s)", t as f64 / 1e9)
                    }
                    (false, _) => " (absolute times)".into(),
                    _ => String::new(),
                },
                wl.devices,
                if wl.devices == 1 { "" } else { "s" },
                wl.out_of_order_records
            );
        }
        if wl.split_records > 0 {
            let _ = writeln!(
                s,
                "            {} host requests of the trace became {} requests: the fold split {}",
                wl.host_records, wl.requests_submitted, wl.split_records
            );
        }
    }
    let v = &r.verify;
    let _ = writeln!(
        s,
        "  verify    {}",
        if v.enabled {
            format!(
                "{} reads checked, {} violations",
                v.reads_checked, v.violations
            )
        } else {
            "off".into()
        }
    );
    s
}

#[cfg(test)]
mod notice_tests {
    use super::Notice;

    #[test]
    fn a_notice_prints_its_hint_on_its_own_line_and_serializes_every_field() {
        let n = Notice::new("dirty_at_end", "4 dirty pages", Some("--drain".into()));
        assert_eq!(n.to_string(), "4 dirty pages\n  hint: --drain");
        assert_eq!(Notice::new("x", "m", None).to_string(), "m");
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#"{"code":"dirty_at_end","message":"4 dirty pages","hint":"--drain"}"#
        );
    }
}
