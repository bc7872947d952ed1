//! Writing records in any supported format, so a generated (or transformed) workload
//! can be saved and replayed exactly (`ftlab trace gen`).
//!
//! Every writer writes what its reader reads back to the same record, within the
//! format's time resolution: SPC, DiskSim and blkparse times are written with ns
//! precision, MQSim/SSDsim times are whole ns, MSR times are 100 ns ticks (rounded to
//! the nearest tick) after a fixed FILETIME origin (2007-02-22, the MSR traces' week).
//!
//! Choices: formats that count in 512-byte sectors refuse a record whose offset or
//! length is not a whole number of sectors, rather than rounding it (a silent change);
//! formats without trims or flushes (SPC, MSR, MQSim, DiskSim) refuse them; the
//! blkparse writer writes D (dispatch) events with cpu, pid 0, process `[ftlab]` and
//! the device as `major,minor` from `major * 256 + minor`; the generic writer writes
//! the first value of each op list and a header of column names when `header` is set.

use crate::csv::CsvSpec;
use crate::Record;
use ftlab_core::request::Op;
use std::io::{self, Write};

/// FILETIME (100 ns ticks since 1601) of 2007-02-22 00:00 UTC.
pub const MSR_ORIGIN_TICKS: u64 = 128_166_336_000_000_000;

/// A record the format cannot hold, or an I/O error.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The record does not fit the format.
    #[error("record {index} cannot be written as {format}: {why}")]
    Unrepresentable {
        /// 0-based index of the record.
        index: u64,
        /// Format id.
        format: &'static str,
        /// Why.
        why: String,
    },
    /// The output failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A format writer.
pub struct TraceWriter {
    format: &'static str,
    csv: Option<CsvLayout>,
    index: u64,
}

struct CsvLayout {
    delim: u8,
    order: Vec<Option<usize>>,
    time_ns: u64,
    offset_bytes: u64,
    size_bytes: u64,
    values: [String; 3],
    header: Option<String>,
}

const CSV_SLOTS: [&str; 5] = ["time", "offset", "size", "op", "device"];

impl TraceWriter {
    /// A writer of `format` (the generic `csv` one uses `csv`'s mapping).
    pub fn new(format: &str, csv: &CsvSpec) -> Result<TraceWriter, String> {
        let id = crate::FORMATS
            .iter()
            .find(|f| f.id == format)
            .map(|f| f.id)
            .ok_or_else(|| format!("unknown trace format `{format}`"))?;
        if id == "auto" {
            return Err("`auto` recognises a format when reading; name one to write".into());
        }
        let layout = if id == "csv" {
            Some(csv_layout(csv)?)
        } else {
            None
        };
        Ok(TraceWriter {
            format: id,
            csv: layout,
            index: 0,
        })
    }

    fn bad(&self, why: impl Into<String>) -> WriteError {
        WriteError::Unrepresentable {
            index: self.index,
            format: self.format,
            why: why.into(),
        }
    }

    fn sectors(&self, bytes: u64, what: &str) -> Result<u64, WriteError> {
        if !bytes.is_multiple_of(512) {
            return Err(self.bad(format!("{what} {bytes} is not a whole number of sectors")));
        }
        Ok(bytes / 512)
    }

    fn rw(&self, op: Op) -> Result<bool, WriteError> {
        match op {
            Op::Read => Ok(true),
            Op::Write => Ok(false),
            other => Err(self.bad(format!("the format has no {other:?} requests"))),
        }
    }

    /// Writes the header, if the format has one (call once, first).
    pub fn begin(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(h) = self.csv.as_ref().and_then(|c| c.header.as_ref()) {
            writeln!(out, "{h}")?;
        }
        Ok(())
    }

    /// Writes one record.
    pub fn write(&mut self, out: &mut dyn Write, r: &Record) -> Result<(), WriteError> {
        let q = &r.req;
        let t = q.arrival.0;
        let (secs, frac) = (t / 1_000_000_000, t % 1_000_000_000);
        match self.format {
            "spc" => {
                let read = self.rw(q.op)?;
                let lba = self.sectors(q.offset, "offset")?;
                let op = if read { 'r' } else { 'w' };
                writeln!(out, "{},{lba},{},{op},{secs}.{frac:09}", r.device, q.len)?;
            }
            "msr" => {
                let read = self.rw(q.op)?;
                let ticks = MSR_ORIGIN_TICKS + (t + 50) / 100;
                let op = if read { "Read" } else { "Write" };
                writeln!(
                    out,
                    "{ticks},ftlab,{},{op},{},{},0",
                    r.device, q.offset, q.len
                )?;
            }
            "mqsim" | "ssdsim" => {
                let read = self.rw(q.op)?;
                let lba = self.sectors(q.offset, "offset")?;
                let n = self.sectors(q.len, "length")?;
                writeln!(out, "{t} {} {lba} {n} {}", r.device, u8::from(read))?;
            }
            "disksim" => {
                let read = self.rw(q.op)?;
                let lba = self.sectors(q.offset, "offset")?;
                let n = self.sectors(q.len, "length")?;
                let (ms, ns) = (t / 1_000_000, t % 1_000_000);
                writeln!(
                    out,
                    "{ms}.{ns:06} {} {lba} {n} {}",
                    r.device,
                    u8::from(read)
                )?;
            }
            "blkparse" => self.blkparse(out, r)?,
            "csv" => self.csv_line(out, r)?,
            "vscsi" => {
                // Version 2 records; times rounded to the µs the format keeps.
                let (cmd, lba, len) = match q.op {
                    Op::Read => (0x28, self.sectors(q.offset, "offset")?, q.len),
                    Op::Write => (0x2a, self.sectors(q.offset, "offset")?, q.len),
                    Op::Flush => (0x35, 0, 0),
                    Op::Trim => return Err(self.bad("the format has no Trim requests")),
                };
                let len = u32::try_from(len)
                    .map_err(|_| self.bad(format!("length {len} is over 2^32 bytes")))?;
                out.write_all(&crate::vscsi::encode(2, cmd, len, lba, (t + 500) / 1000))?;
            }
            other => unreachable!("format {other} checked in new"),
        }
        self.index += 1;
        Ok(())
    }

    fn blkparse(&self, out: &mut dyn Write, r: &Record) -> Result<(), WriteError> {
        let q = &r.req;
        let t = q.arrival.0;
        let (maj, min) = (r.device / 256, r.device % 256);
        let seq = self.index + 1;
        let head = format!(
            "{maj:>3},{min:<3} 0 {seq:>8} {:>5}.{:09} 0  D",
            t / 1_000_000_000,
            t % 1_000_000_000
        );
        if q.op == Op::Flush {
            writeln!(out, "{head}  FN [ftlab]")?;
            return Ok(());
        }
        let rwbs = match q.op {
            Op::Read => "R",
            Op::Write => "W",
            _ => "D",
        };
        let sector = self.sectors(q.offset, "offset")?;
        let n = self.sectors(q.len, "length")?;
        writeln!(out, "{head} {rwbs:>3} {sector} + {n} [ftlab]")?;
        Ok(())
    }

    fn csv_line(&self, out: &mut dyn Write, r: &Record) -> Result<(), WriteError> {
        let c = self.csv.as_ref().expect("csv layout");
        let q = &r.req;
        let unit = |v: u64, per: u64, what: &str| {
            if !v.is_multiple_of(per) {
                Err(self.bad(format!(
                    "{what} {v} is not a multiple of its unit ({per} bytes)"
                )))
            } else {
                Ok(v / per)
            }
        };
        let op = match q.op {
            Op::Read => &c.values[0],
            Op::Write => &c.values[1],
            Op::Trim => &c.values[2],
            Op::Flush => return Err(self.bad("the generic format has no flush requests")),
        };
        if op.is_empty() {
            return Err(self.bad(format!("no value is configured for {:?}", q.op)));
        }
        let mut first = true;
        for slot in &c.order {
            if !first {
                out.write_all(&[c.delim])?;
            }
            first = false;
            match slot {
                Some(0) => write_time(out, q.arrival.0, c.time_ns)?,
                Some(1) => write!(out, "{}", unit(q.offset, c.offset_bytes, "offset")?)?,
                Some(2) => write!(out, "{}", unit(q.len, c.size_bytes, "length")?)?,
                Some(3) => out.write_all(op.as_bytes())?,
                Some(4) => write!(out, "{}", r.device)?,
                _ => out.write_all(b"-")?,
            }
        }
        writeln!(out)?;
        Ok(())
    }
}

fn write_time(out: &mut dyn Write, ns: u64, unit_ns: u64) -> io::Result<()> {
    let whole = ns / unit_ns;
    let frac = ns % unit_ns;
    let digits = (unit_ns as f64).log10().round() as usize;
    if digits == 0 {
        write!(out, "{whole}")
    } else {
        write!(out, "{whole}.{frac:0digits$}")
    }
}

fn csv_layout(spec: &CsvSpec) -> Result<CsvLayout, String> {
    spec.compile()?;
    if spec.filter_column.is_some() {
        return Err(
            "the generic writer cannot write a filter column; unset csv.filter_column".into(),
        );
    }
    let delim = match spec.delimiter.as_str() {
        "whitespace" | "ws" | " " => b' ',
        "tab" | "\t" => b'\t',
        d => d.as_bytes()[0],
    };
    let cols = [spec.time, spec.offset, spec.size, spec.op, spec.device];
    let width = cols
        .iter()
        .flatten()
        .map(|&c| c as usize + 1)
        .max()
        .unwrap_or(0);
    let mut order = vec![None; width];
    for (slot, col) in cols.iter().enumerate() {
        if let Some(c) = col {
            if order[*c as usize].is_some() {
                return Err(format!("csv column {c} is mapped twice"));
            }
            order[*c as usize] = Some(slot);
        }
    }
    let first = |v: &[String]| v.first().cloned().unwrap_or_default();
    let header = spec.header.then(|| {
        order
            .iter()
            .map(|s| s.map_or("unused", |i| CSV_SLOTS[i]))
            .collect::<Vec<_>>()
            .join(&(delim as char).to_string())
    });
    Ok(CsvLayout {
        delim,
        order,
        time_ns: spec.time_unit.ns(),
        offset_bytes: spec.offset_unit.bytes(),
        size_bytes: spec.size_unit.bytes(),
        values: [
            first(&spec.read_values),
            first(&spec.write_values),
            first(&spec.trim_values),
        ],
        header,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_records, ReadOptions};
    use ftlab_core::request::Request;
    use ftlab_core::Nanos;

    fn records() -> Vec<Record> {
        let mk = |t: u64, op: Op, dev: u32, off: u64, len: u64| Record {
            req: Request {
                arrival: Nanos(t),
                op,
                offset: off,
                len,
            },
            device: dev,
            line: 0,
            pass: 0,
        };
        vec![
            mk(0, Op::Write, 0, 303567 * 512, 3584),
            mk(26_214_123, Op::Read, 3, 0, 512),
            mk(1_500_000_000_001, Op::Write, 21, 1 << 40, 65536),
        ]
    }

    fn roundtrip(format: &str, opts: &ReadOptions, time_quantum: u64) {
        let mut w = TraceWriter::new(format, &opts.csv).unwrap();
        let mut buf = Vec::new();
        w.begin(&mut buf).unwrap();
        for r in &records() {
            w.write(&mut buf, r).unwrap();
        }
        let back: Vec<Record> = read_records(Box::new(io::Cursor::new(buf)), "t", format, opts)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(back.len(), 3, "{format}");
        for (a, b) in records().iter().zip(&back) {
            let q = |t: u64| (t + time_quantum / 2) / time_quantum * time_quantum;
            assert_eq!(q(a.req.arrival.0), b.req.arrival.0, "{format} time");
            assert_eq!(
                (a.req.op, a.req.offset, a.req.len, a.device),
                (b.req.op, b.req.offset, b.req.len, b.device),
                "{format}"
            );
        }
    }

    #[test]
    fn every_format_round_trips() {
        let o = ReadOptions::default();
        for f in ["spc", "mqsim", "ssdsim", "disksim", "blkparse"] {
            roundtrip(f, &o, 1);
        }
        roundtrip("msr", &o, 100);
        let csv = ReadOptions {
            csv: CsvSpec {
                delimiter: ";".into(),
                header: true,
                time: Some(4),
                op: Some(0),
                offset: Some(1),
                size: Some(2),
                device: Some(5),
                time_unit: crate::csv::TimeUnit::Us,
                offset_unit: crate::csv::ByteUnit::Sectors,
                ..Default::default()
            },
            ..Default::default()
        };
        roundtrip("csv", &csv, 1);
    }

    #[test]
    fn vscsi_round_trips_but_for_devices() {
        let mut w = TraceWriter::new("vscsi", &CsvSpec::default()).unwrap();
        let mut buf = Vec::new();
        for r in &records() {
            w.write(&mut buf, r).unwrap();
        }
        assert_eq!(buf.len(), 3 * crate::vscsi::V2_BYTES);
        let back: Vec<Record> = read_records(
            Box::new(io::Cursor::new(buf)),
            "t",
            "vscsi",
            &ReadOptions::default(),
        )
        .unwrap()
        .map(Result::unwrap)
        .collect();
        for (a, b) in records().iter().zip(&back) {
            assert_eq!((a.req.arrival.0 + 500) / 1000 * 1000, b.req.arrival.0);
            assert_eq!(
                (a.req.op, a.req.offset, a.req.len, b.device),
                (b.req.op, b.req.offset, b.req.len, 0)
            );
        }
        assert!(TraceWriter::new("auto", &CsvSpec::default()).is_err());
    }

    #[test]
    fn refuses_what_the_format_cannot_hold() {
        let mut w = TraceWriter::new("mqsim", &CsvSpec::default()).unwrap();
        let mut r = records()[0];
        r.req.offset = 100;
        let e = w.write(&mut Vec::new(), &r).unwrap_err();
        assert!(
            e.to_string().contains("not a whole number of sectors"),
            "{e}"
        );
        r.req.offset = 0;
        r.req.op = Op::Trim;
        let mut s = TraceWriter::new("spc", &CsvSpec::default()).unwrap();
        assert!(s.write(&mut Vec::new(), &r).is_err());
        assert!(TraceWriter::new("nope", &CsvSpec::default()).is_err());
    }
}
