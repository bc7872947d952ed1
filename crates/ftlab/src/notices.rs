//! Notices a finished run adds to its report: the figures are valid, but may not mean
//! what they seem. Each has a stable `code`, the figures that triggered it and a hint;
//! docs/report-notices.md lists them with their thresholds. Thresholds are constants
//! here, so the docs, the tests and the code name the same numbers.

use crate::config::{Config, Precondition, TimingModel};
use ftlab_report::{Notice, Report};

/// `unmapped_reads` fires when at least this share of the pages read were never
/// written: the read figures then mostly measure map lookups, not flash reads.
pub const UNMAPPED_SHARE: f64 = 0.10;

/// `drained_at_end` fires when the end-of-run drain caused at least this share of the
/// run's flash programs: the buffer absorbed most of the workload.
pub const DRAINED_SHARE: f64 = 0.5;

/// `saturated`: waiting is at least this share of the total response time...
pub const SATURATED_WAIT_SHARE: f64 = 0.5;
/// ...the mean wait of the last quarter of the requests is at least this many times
/// that of the first quarter (the queue grows through the run)...
pub const SATURATED_GROWTH: f64 = 2.0;
/// ...and at least this many mean service times (a queue, not jitter)...
pub const SATURATED_SERVICE_TIMES: f64 = 10.0;
/// ...over at least this many requests.
pub const SATURATED_MIN_REQUESTS: u64 = 64;

fn pct(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// `implied_osm`: the settings [`crate::sim::imply`] filled in.
pub fn implied(cfg: &Config, keys: &[&str]) -> Vec<Notice> {
    keys.iter()
        .filter(|&&k| k == "ftl_options.osm")
        .map(|_| {
            Notice::new(
                "implied_osm",
                format!(
                    "buffer coop turned on Optimized Switch Merge in the {} FTL \
                     (ftl_options.osm = true): CO-OP is the buffer and OSM together \
                     (co-op-buffer-ftl.txt §3)",
                    cfg.ftl
                ),
                Some(
                    "set ftl_options.osm = false (--set ftl_options.osm=false) to run the \
                     buffer alone"
                        .into(),
                ),
            )
        })
        .collect()
}

/// The notices about the end of the run, unmapped reads and load, from the report's
/// own figures.
pub fn end_of_run(r: &Report, cfg: &Config) -> Vec<Notice> {
    let mut out = Vec::new();
    let h = &r.host;
    let e = &r.end_of_run;
    if e.dirty_pages > 0 && !e.drained {
        out.push(Notice::new(
            "dirty_at_end",
            format!(
                "{} dirty pages ({:.1}% of the {} pages written) were still in the write \
                 buffer at the end and never reached flash: WA, erases and flash \
                 operations leave them out",
                e.dirty_pages,
                pct(e.dirty_pages, h.pages_written),
                h.pages_written
            ),
            Some(
                "drain = true (the default; drop --no-drain) writes them to flash at the \
                 end, as a device flushes its cache on shutdown"
                    .into(),
            ),
        ));
    }
    let programs = r.flash.page_programs;
    if e.drained && programs > 0 && e.drain_programs as f64 >= DRAINED_SHARE * programs as f64 {
        out.push(Notice::new(
            "drained_at_end",
            format!(
                "{} of the {} flash programs ({:.1}%) were the end-of-run drain of {} dirty \
                 pages: the write buffer absorbed most of the workload, so response times \
                 show little of what writing to flash costs",
                e.drain_programs,
                programs,
                pct(e.drain_programs, programs),
                e.dirty_pages
            ),
            Some(
                "a longer workload (--replay N, a longer trace) or a smaller buffer \
                 (buffer_options.size) measures the buffer under load"
                    .into(),
            ),
        ));
    }
    if h.pages_read > 0 && h.unmapped_reads as f64 >= UNMAPPED_SHARE * h.pages_read as f64 {
        let hint = if cfg.precondition == Precondition::None {
            "--precondition footprint writes every page the trace touches once before \
             measuring, so reads find data (--precondition fill writes the whole device)"
        } else {
            "the device was preconditioned, so these are reads of trimmed pages"
        };
        out.push(Notice::new(
            "unmapped_reads",
            format!(
                "{} of the {} pages read ({:.1}%) were never written: the device answered \
                 them from its map without a flash read, so read latencies and \
                 differences between FTLs say little",
                h.unmapped_reads,
                h.pages_read,
                pct(h.unmapped_reads, h.pages_read)
            ),
            Some(hint.into()),
        ));
    }
    if let Some(n) = saturated(r) {
        let hint = match cfg.timing {
            TimingModel::Serial => {
                "the offered load exceeds what one serial flash chip serves: --timing \
                 parallel models 8 channels x 4 dies (--channels, --dies), or --time-scale \
                 2 replays the trace half as fast"
            }
            TimingModel::Parallel => {
                "the offered load exceeds what these channels and dies serve: more \
                 --channels or --dies, or --time-scale 2 replays the trace half as fast"
            }
        };
        out.push(Notice::new("saturated", n, Some(hint.into())));
    }
    out
}

/// The message of the `saturated` notice, if the run's queueing says so.
fn saturated(r: &Report) -> Option<String> {
    let h = &r.host;
    let w = &h.wait_ns;
    let rt = h.response_ns.mean;
    if h.requests < SATURATED_MIN_REQUESTS || rt <= 0.0 {
        return None;
    }
    let service = (rt - w.mean).max(0.0);
    let grows = w.last_quarter >= SATURATED_GROWTH * w.first_quarter;
    let queued = w.last_quarter >= SATURATED_SERVICE_TIMES * service && w.last_quarter > 0.0;
    (w.mean >= SATURATED_WAIT_SHARE * rt && grows && queued).then(|| {
        format!(
            "the device is saturated: requests spent {:.0}% of their response time waiting \
             for busy flash, and the mean wait grew from {:.1} µs in the first quarter of \
             the run to {:.1} µs in the last (mean service {:.1} µs): response times \
             measure the queue, not the FTL",
            100.0 * w.mean / rt,
            w.first_quarter / 1e3,
            w.last_quarter / 1e3,
            service / 1e3
        )
    })
}
