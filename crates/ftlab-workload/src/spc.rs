//! The SPC (UMass Storage Repository) trace format: one request per line,
//! `ASU,LBA,size,opcode,timestamp[,...]` with LBA in 512-byte sectors, size in bytes,
//! opcode `r`/`R`/`w`/`W` and timestamp in seconds (decimal).
//!
//! Choices: the ASU becomes the record's device, so the `--asu` transform can select
//! ASUs or lay them side by side; without it all ASUs share one address space; fields
//! after the fifth are ignored (some SPC files carry extra columns); blank lines are
//! skipped; timestamps above 10^9 s (31 years) are refused as corrupt.

use crate::parse::{show, split_on, Lines};
use crate::{Record, TraceError};
use ftlab_core::request::Op;
use std::io::BufRead;

/// Largest timestamp accepted, in seconds.
pub const MAX_SECONDS: u64 = 1_000_000_000;

/// Streams an SPC trace.
pub struct SpcReader<R> {
    lines: Lines<R>,
}

impl<R: BufRead> SpcReader<R> {
    /// Reads from `input`; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>) -> Self {
        SpcReader {
            lines: Lines::new(input, file),
        }
    }

    /// The record of the current line.
    fn parse(l: &Lines<R>) -> Result<Record, TraceError> {
        const LAYOUT: &str = "5 comma-separated fields";
        let mut fields = split_on(l.line().trim_ascii(), b',');
        let asu = l.need(fields.next(), "asu", LAYOUT)?;
        let lba = l.need(fields.next(), "lba", LAYOUT)?;
        let size = l.need(fields.next(), "size", LAYOUT)?;
        let opcode = l.need(fields.next(), "opcode", LAYOUT)?;
        let ts = l.need(fields.next(), "timestamp", LAYOUT)?;
        let device = l.number_u32(asu, "asu", "a non-negative integer")?;
        let lba = l.number(lba, "lba", "a sector number")?;
        let len = l.number(size, "size", "a byte count")?;
        let op = match opcode {
            b"r" | b"R" => Op::Read,
            b"w" | b"W" => Op::Write,
            other => return Err(l.err("opcode", format!("`{}` is not r or w", show(other)))),
        };
        let arrival = l.time_ns(ts, "timestamp", 1_000_000_000)?;
        if arrival > MAX_SECONDS * 1_000_000_000 {
            return Err(l.err(
                "timestamp",
                format!("`{}` is out of range (over {MAX_SECONDS} s)", show(ts)),
            ));
        }
        let offset = lba
            .checked_mul(512)
            .ok_or_else(|| l.err("lba", format!("`{lba}` overflows a byte offset")))?;
        Ok(l.record(arrival, op, offset, len, device))
    }
}

impl<R: BufRead> Iterator for SpcReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.lines
            .next_parsed(|l| l.trim_ascii().is_empty(), |l| Self::parse(l).map(Some))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::Nanos;

    fn read(text: &str) -> Vec<Result<Record, TraceError>> {
        SpcReader::new(text.as_bytes(), "t.spc").collect()
    }

    #[test]
    fn parses_records() {
        let r = read("0,303567,3584,w,0.000000\n\n1,55596,3072,R,0.078643,extra\n");
        assert_eq!(r.len(), 2);
        let a = r[0].clone().unwrap();
        assert_eq!(a.req.op, Op::Write);
        assert_eq!(a.req.offset, 303567 * 512);
        assert_eq!(a.req.len, 3584);
        assert_eq!((a.device, a.line), (0, 1));
        let b = r[1].clone().unwrap();
        assert_eq!(b.req.op, Op::Read);
        assert_eq!(b.req.arrival, Nanos(78_643_000));
        assert_eq!((b.device, b.line), (1, 3));
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let r = read("0,1,512,w,0.0\n0,1,512,x,0.1\n");
        let e = r[1].clone().unwrap_err();
        assert_eq!((e.line, e.field), (2, "opcode"));
        assert_eq!(e.to_string(), "t.spc:2: field `opcode`: `x` is not r or w");
        let e = read("0,abc,512,w,0.0\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "lba");
        let e = read("0,1,512\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "opcode");
        let e = read("0,1,512,w,-3\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "timestamp");
        let e = read("0,1,512,w,1266874889.7\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "timestamp");
        let e = read("x,1,512,w,1\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "asu");
        let e = read("0,1,5k,w,1\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "size");
    }
}
