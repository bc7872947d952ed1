//! Statistics of a record stream, in one pass and constant memory (`ftlab trace stats`).
//!
//! Sequentiality follows cach-ftl.txt §5.2 (Table 2): "both the inter-request rate and
//! the per-page (4 KB) sequentiality are shown, the latter being more representative, as
//! it takes into account both inter- and intra-request sequentiality".
//!
//! Choices: a request is sequential when it starts at the byte where the previous
//! request *of the same device* ended (devices are separate disks; interleaving them
//! would hide their sequentiality); the per-request rate is over all requests but each
//! device's first. Per page (`page_bytes`, default 4096): a request touching `n` pages
//! contributes `n - 1` sequential page accesses, plus one if the request itself is
//! sequential; the rate is over all page accesses. The write sequentiality (c-lash.txt
//! Table 3, "Seq. write rate") applies the same per-request rule to writes only,
//! against the previous write. Trims and flushes count as requests but not in the
//! read/write ratio, the size histogram or sequentiality.

use crate::{Record, TraceError};
use ftlab_core::request::Op;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One bucket of the size histogram: requests of at most `up_to_bytes` (and more than
/// the previous bucket's bound).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeBucket {
    /// Upper bound in bytes (a power of two).
    pub up_to_bytes: u64,
    /// Requests in the bucket.
    pub requests: u64,
}

/// One device's share of a trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceRow {
    /// Device number.
    pub device: u32,
    /// Requests (all operations).
    pub requests: u64,
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Bytes read and written.
    pub bytes: u64,
    /// One past the highest byte addressed.
    pub offset_end: u64,
}

/// What `ftlab trace stats` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceStats {
    /// Records read (after the transforms).
    pub requests: u64,
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Trims.
    pub trims: u64,
    /// Flushes.
    pub flushes: u64,
    /// reads / (reads + writes), null without either.
    pub read_ratio: Option<f64>,
    /// writes / (reads + writes).
    pub write_ratio: Option<f64>,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Mean read/write request size.
    pub mean_size_bytes: Option<f64>,
    /// Read/write request sizes, power-of-two buckets, empty ones left out.
    pub size_histogram: Vec<SizeBucket>,
    /// Page size used for the per-page sequentiality.
    pub page_bytes: u64,
    /// Share of requests that start where the device's previous request ended.
    pub sequential_per_request: Option<f64>,
    /// Share of page accesses that follow the previous page accessed.
    pub sequential_per_page: Option<f64>,
    /// Share of writes that start where the device's previous write ended.
    pub sequential_writes: Option<f64>,
    /// Lowest byte addressed.
    pub offset_min: Option<u64>,
    /// One past the highest byte addressed.
    pub offset_end: Option<u64>,
    /// Earliest arrival, ns.
    pub first_arrival_ns: Option<u64>,
    /// Latest arrival, ns.
    pub last_arrival_ns: Option<u64>,
    /// Latest minus earliest arrival, ns.
    pub duration_ns: u64,
    /// Records that arrive before the record preceding them.
    pub out_of_order: u64,
    /// Requests per device.
    pub devices: BTreeMap<u32, u64>,
    /// Every device, busiest first (ties by device number).
    pub busiest_devices: Vec<DeviceRow>,
    /// Bad records skipped (with `--skip-bad`).
    pub skipped_records: u64,
}

#[derive(Default, Clone, Copy)]
struct DevState {
    end: Option<u64>,
    write_end: Option<u64>,
    reads: u64,
    writes: u64,
    bytes: u64,
    max_end: u64,
}

/// Accumulates [`TraceStats`].
pub struct StatsBuilder {
    s: TraceStats,
    hist: [u64; 65],
    dev: BTreeMap<u32, DevState>,
    prev_arrival: Option<u64>,
    seq_req: u64,
    seq_req_den: u64,
    seq_pages: u64,
    pages: u64,
    seq_w: u64,
    seq_w_den: u64,
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

impl StatsBuilder {
    /// Per-page sequentiality over pages of `page_bytes`.
    pub fn new(page_bytes: u64) -> Self {
        assert!(page_bytes > 0);
        StatsBuilder {
            s: TraceStats {
                requests: 0,
                reads: 0,
                writes: 0,
                trims: 0,
                flushes: 0,
                read_ratio: None,
                write_ratio: None,
                bytes_read: 0,
                bytes_written: 0,
                mean_size_bytes: None,
                size_histogram: Vec::new(),
                page_bytes,
                sequential_per_request: None,
                sequential_per_page: None,
                sequential_writes: None,
                offset_min: None,
                offset_end: None,
                first_arrival_ns: None,
                last_arrival_ns: None,
                duration_ns: 0,
                out_of_order: 0,
                devices: BTreeMap::new(),
                busiest_devices: Vec::new(),
                skipped_records: 0,
            },
            hist: [0; 65],
            dev: BTreeMap::new(),
            prev_arrival: None,
            seq_req: 0,
            seq_req_den: 0,
            seq_pages: 0,
            pages: 0,
            seq_w: 0,
            seq_w_den: 0,
        }
    }

    /// Counts one record.
    pub fn add(&mut self, r: &Record) {
        let s = &mut self.s;
        let q = &r.req;
        let t = q.arrival.0;
        s.requests += 1;
        *s.devices.entry(r.device).or_insert(0) += 1;
        if self.prev_arrival.is_some_and(|p| t < p) {
            s.out_of_order += 1;
        }
        self.prev_arrival = Some(t);
        s.first_arrival_ns = Some(s.first_arrival_ns.map_or(t, |f| f.min(t)));
        s.last_arrival_ns = Some(s.last_arrival_ns.map_or(t, |l| l.max(t)));
        match q.op {
            Op::Read => {
                s.reads += 1;
                s.bytes_read += q.len;
            }
            Op::Write => {
                s.writes += 1;
                s.bytes_written += q.len;
            }
            Op::Trim => s.trims += 1,
            Op::Flush => s.flushes += 1,
        }
        if !matches!(q.op, Op::Read | Op::Write) {
            return;
        }
        let end = q.offset.saturating_add(q.len);
        s.offset_min = Some(s.offset_min.map_or(q.offset, |m| m.min(q.offset)));
        s.offset_end = Some(s.offset_end.map_or(end, |m| m.max(end)));
        let bucket = if q.len <= 1 {
            0
        } else {
            64 - (q.len - 1).leading_zeros() as usize
        };
        self.hist[bucket] += 1;
        let d = self.dev.entry(r.device).or_default();
        if q.op == Op::Read {
            d.reads += 1;
        } else {
            d.writes += 1;
        }
        d.bytes += q.len;
        d.max_end = d.max_end.max(end);
        let sequential = d.end == Some(q.offset);
        if d.end.is_some() {
            self.seq_req_den += 1;
            self.seq_req += u64::from(sequential);
        }
        d.end = Some(end);
        let pb = s.page_bytes;
        let n_pages = if q.len == 0 {
            0
        } else {
            (end - 1) / pb - q.offset / pb + 1
        };
        self.pages += n_pages;
        self.seq_pages += n_pages.saturating_sub(1) + u64::from(sequential && n_pages > 0);
        if q.op == Op::Write {
            if d.write_end.is_some() {
                self.seq_w_den += 1;
                self.seq_w += u64::from(d.write_end == Some(q.offset));
            }
            d.write_end = Some(end);
        }
    }

    /// The statistics; `skipped` bad records are reported as such.
    pub fn finish(mut self, skipped: u64) -> TraceStats {
        let s = &mut self.s;
        let rw = s.reads + s.writes;
        s.read_ratio = ratio(s.reads, rw);
        s.write_ratio = ratio(s.writes, rw);
        s.mean_size_bytes = (rw > 0).then(|| (s.bytes_read + s.bytes_written) as f64 / rw as f64);
        s.size_histogram = self
            .hist
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| SizeBucket {
                up_to_bytes: if i == 64 { u64::MAX } else { 1u64 << i },
                requests: c,
            })
            .collect();
        s.sequential_per_request = ratio(self.seq_req, self.seq_req_den);
        s.sequential_per_page = ratio(self.seq_pages, self.pages);
        s.sequential_writes = ratio(self.seq_w, self.seq_w_den);
        s.duration_ns = match (s.first_arrival_ns, s.last_arrival_ns) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        };
        s.skipped_records = skipped;
        let mut rows: Vec<DeviceRow> = s
            .devices
            .iter()
            .map(|(&device, &requests)| {
                let d = self.dev.get(&device).copied().unwrap_or_default();
                DeviceRow {
                    device,
                    requests,
                    reads: d.reads,
                    writes: d.writes,
                    bytes: d.bytes,
                    offset_end: d.max_end,
                }
            })
            .collect();
        rows.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.device.cmp(&b.device)));
        s.busiest_devices = rows;
        self.s
    }
}

/// Statistics of a whole stream; the first error stops it.
pub fn collect(
    stream: impl Iterator<Item = Result<Record, TraceError>>,
    page_bytes: u64,
) -> Result<TraceStats, TraceError> {
    let mut b = StatsBuilder::new(page_bytes);
    for r in stream {
        b.add(&r?);
    }
    Ok(b.finish(0))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.2}%", v * 100.0))
}

fn size(b: u64) -> String {
    ftlab_core::units::format_size(b)
}

impl TraceStats {
    /// A human-readable summary, with the ten busiest devices.
    pub fn human(&self) -> String {
        self.human_top(10)
    }

    /// A human-readable summary, with the `top` busiest devices in a table.
    pub fn human_top(&self, top: usize) -> String {
        let mut o = String::new();
        let w = &mut o;
        let _ = writeln!(
            w,
            "requests     {} ({} reads, {} writes, {} trims, {} flushes){}",
            self.requests,
            self.reads,
            self.writes,
            self.trims,
            self.flushes,
            if self.skipped_records > 0 {
                format!("; {} bad records skipped", self.skipped_records)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            w,
            "read/write   {} / {}; {} read, {} written; mean size {}",
            pct(self.read_ratio),
            pct(self.write_ratio),
            size(self.bytes_read),
            size(self.bytes_written),
            self.mean_size_bytes
                .map_or("-".into(), |m| format!("{:.1} KiB", m / 1024.0))
        );
        let _ = writeln!(
            w,
            "sequential   {} per request, {} per {} page, {} of writes",
            pct(self.sequential_per_request),
            pct(self.sequential_per_page),
            size(self.page_bytes),
            pct(self.sequential_writes)
        );
        if let (Some(a), Some(b)) = (self.offset_min, self.offset_end) {
            let _ = writeln!(w, "addresses    {a} .. {b} bytes (span {})", size(b - a));
        }
        let _ = writeln!(
            w,
            "time         {:.6} s ({} records out of time order)",
            self.duration_ns as f64 / 1e9,
            self.out_of_order
        );
        let n = self.busiest_devices.len();
        let shown = n.min(top.max(1));
        let _ = writeln!(
            w,
            "devices      {n}{}",
            if n > shown {
                format!(" (the {shown} busiest below; --top N shows more)")
            } else {
                String::new()
            }
        );
        if n > 0 {
            let share = |r: u64| r as f64 * 100.0 / self.requests.max(1) as f64;
            let _ = writeln!(
                w,
                "  {:>10}  {:>10}  {:>7}  {:>10}  {:>10}  {:>10}  {:>10}",
                "device", "requests", "share", "reads", "writes", "bytes", "ends at"
            );
            let row = |w: &mut String, label: String, r: &DeviceRow| {
                let _ = writeln!(
                    w,
                    "  {label:>10}  {:>10}  {:>6.2}%  {:>10}  {:>10}  {:>10}  {:>10}",
                    r.requests,
                    share(r.requests),
                    r.reads,
                    r.writes,
                    size(r.bytes),
                    size(r.offset_end)
                );
            };
            for r in &self.busiest_devices[..shown] {
                row(w, r.device.to_string(), r);
            }
            let sum = |rows: &[DeviceRow], label: u32| DeviceRow {
                device: label,
                requests: rows.iter().map(|r| r.requests).sum(),
                reads: rows.iter().map(|r| r.reads).sum(),
                writes: rows.iter().map(|r| r.writes).sum(),
                bytes: rows.iter().map(|r| r.bytes).sum(),
                offset_end: rows.iter().map(|r| r.offset_end).max().unwrap_or(0),
            };
            if n > shown {
                let rest = &self.busiest_devices[shown..];
                row(w, format!("{} more", rest.len()), &sum(rest, 0));
            }
            row(w, "total".into(), &sum(&self.busiest_devices, 0));
        }
        let _ = writeln!(w, "sizes");
        for b in &self.size_histogram {
            let label = if b.up_to_bytes == u64::MAX {
                "larger".to_string()
            } else {
                format!("<= {}", size(b.up_to_bytes))
            };
            let _ = writeln!(
                w,
                "  {label:>12}  {:>10}  {:>6.2}%",
                b.requests,
                b.requests as f64 * 100.0 / (self.reads + self.writes).max(1) as f64
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::request::Request;
    use ftlab_core::Nanos;

    fn rec(t: u64, op: Op, dev: u32, off: u64, len: u64) -> Record {
        Record {
            req: Request {
                arrival: Nanos(t),
                op,
                offset: off,
                len,
            },
            device: dev,
            line: 0,
            pass: 0,
        }
    }

    #[test]
    fn sequentiality_per_request_and_per_page() {
        let k = 4096;
        let v = vec![
            rec(10, Op::Write, 0, 0, 2 * k),     // 2 pages, 1 intra
            rec(20, Op::Write, 1, 100 * k, k),   // other device: its first
            rec(30, Op::Write, 0, 2 * k, 3 * k), // sequential on device 0: 3 pages all seq
            rec(5, Op::Read, 0, 9 * k, k),       // not sequential, out of order
            rec(40, Op::Write, 0, 10 * k, 512),  // follows the read: sequential
            rec(50, Op::Trim, 0, 0, k),
        ];
        let s = collect(v.into_iter().map(Ok), k).unwrap();
        assert_eq!((s.requests, s.reads, s.writes, s.trims), (6, 1, 4, 1));
        // Per request: device 0 has 3 non-first rw requests, 2 sequential.
        assert_eq!(s.sequential_per_request, Some(2.0 / 3.0));
        // Pages: 2 + 1 + 3 + 1 + 1 = 8; sequential: 1 + 0 + 3 + 0 + 1 = 5.
        assert_eq!(s.sequential_per_page, Some(5.0 / 8.0));
        // Writes of device 0: second follows the first; third (at 10k) does not.
        assert_eq!(s.sequential_writes, Some(0.5));
        assert_eq!(s.out_of_order, 1);
        assert_eq!(
            (s.first_arrival_ns, s.last_arrival_ns, s.duration_ns),
            (Some(5), Some(50), 45)
        );
        assert_eq!((s.offset_min, s.offset_end), (Some(0), Some(101 * k)));
        assert_eq!(s.devices, BTreeMap::from([(0, 5), (1, 1)]));
        let h: Vec<(u64, u64)> = s
            .size_histogram
            .iter()
            .map(|b| (b.up_to_bytes, b.requests))
            .collect();
        assert_eq!(h, vec![(512, 1), (4096, 2), (8192, 1), (16384, 1)]);
        assert_eq!(s.read_ratio, Some(0.2));
        assert!(s.human().contains("66.67% per request"), "{}", s.human());
        assert_eq!(s.busiest_devices[0].device, 0);
        assert_eq!(
            (s.busiest_devices[0].reads, s.busiest_devices[0].writes),
            (1, 3)
        );
    }

    #[test]
    fn trace_stats_device_table_shows_the_busiest_and_a_total() {
        let v: Vec<Record> = (0..100u64)
            .map(|i| {
                let dev = match i {
                    0..50 => 0,
                    50..80 => 1,
                    80..90 => 2,
                    _ => i as u32 - 87,
                };
                rec(i, Op::Write, dev, i * 4096, 4096)
            })
            .collect();
        let s = collect(v.into_iter().map(Ok), 4096).unwrap();
        let text = s.human_top(3);
        assert!(
            text.contains("devices      13 (the 3 busiest below"),
            "{text}"
        );
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.contains("device  ")).unwrap();
        assert!(lines[at + 1].trim_start().starts_with("0 "), "{text}");
        assert!(lines[at + 4].trim_start().starts_with("10 more"), "{text}");
        assert!(
            lines[at + 5].trim_start().starts_with("total         100"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.len() < 120), "{text}");
    }
}
