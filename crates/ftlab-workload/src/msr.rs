//! The MSR Cambridge trace format (SNIA IOTTA), CSV without a header:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` with the timestamp in
//! Windows FILETIME units (100 ns since 1601), `Type` `Read` or `Write`, offset and size
//! in bytes, and the recorded response time in 100 ns units.
//!
//! Choices: arrival times are relative to the first record's timestamp (FILETIME values
//! are about 1.3e17 and would make simulated time meaningless); a record earlier than the
//! first is refused as out of order (MSR files are sorted by time); the disk number is the
//! record's device (`--device` selects or lays out disks); the host name and the recorded
//! response time are ignored; `Type` is matched case-insensitively.

use crate::parse::{show, split_on, Lines};
use crate::{Record, TraceError};
use ftlab_core::request::Op;
use std::io::BufRead;

/// Streams an MSR Cambridge trace.
pub struct MsrReader<R> {
    lines: Lines<R>,
    base: Option<u64>,
}

impl<R: BufRead> MsrReader<R> {
    /// Reads from `input`; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>) -> Self {
        MsrReader {
            lines: Lines::new(input, file),
            base: None,
        }
    }

    /// The record of the current line; `base` is the first record's timestamp (the
    /// first record sets it).
    fn parse(l: &Lines<R>, base: &mut Option<u64>) -> Result<Record, TraceError> {
        const LAYOUT: &str = "7 comma-separated fields";
        let mut fields = split_on(l.line().trim_ascii(), b',');
        let ts = l.need(fields.next(), "timestamp", LAYOUT)?;
        let _host = l.need(fields.next(), "hostname", LAYOUT)?;
        let disk = l.need(fields.next(), "disk", LAYOUT)?;
        let kind = l.need(fields.next(), "type", LAYOUT)?;
        let offset = l.need(fields.next(), "offset", LAYOUT)?;
        let size = l.need(fields.next(), "size", LAYOUT)?;
        let ticks = l.number(ts, "timestamp", "a FILETIME (100 ns ticks)")?;
        let device = l.number_u32(disk, "disk", "a disk number")?;
        let op = if kind.eq_ignore_ascii_case(b"read") {
            Op::Read
        } else if kind.eq_ignore_ascii_case(b"write") {
            Op::Write
        } else {
            return Err(l.err("type", format!("`{}` is not Read or Write", show(kind))));
        };
        let offset = l.number(offset, "offset", "a byte offset")?;
        let len = l.number(size, "size", "a byte count")?;
        let base = *base.get_or_insert(ticks);
        let rel = ticks.checked_sub(base).ok_or_else(|| {
            l.err(
                "timestamp",
                format!("{ticks} is earlier than the first record's {base} (not in time order)"),
            )
        })?;
        let arrival = rel.checked_mul(100).ok_or_else(|| {
            l.err(
                "timestamp",
                format!("{ticks} is too far after the first record"),
            )
        })?;
        Ok(l.record(arrival, op, offset, len, device))
    }
}

impl<R: BufRead> Iterator for MsrReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let base = &mut self.base;
        self.lines.next_parsed(
            |l| l.trim_ascii().is_empty(),
            |l| Self::parse(l, base).map(Some),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::Nanos;

    fn read(text: &str) -> Vec<Result<Record, TraceError>> {
        MsrReader::new(text.as_bytes(), "t.csv").collect()
    }

    #[test]
    fn parses_records_relative_to_the_first() {
        let r = read(
            "128166385295514663,hm,0,Write,9056014336,2048,2833\n\
             128166385295514878,hm,1,read,512,4096,2617\n",
        );
        let a = r[0].clone().unwrap();
        assert_eq!(a.req.arrival, Nanos(0));
        assert_eq!(
            (a.req.op, a.req.offset, a.req.len),
            (Op::Write, 9056014336, 2048)
        );
        let b = r[1].clone().unwrap();
        assert_eq!(b.req.arrival, Nanos(215 * 100));
        assert_eq!((b.req.op, b.device, b.line), (Op::Read, 1, 2));
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let first = "128166385295514663,hm,0,Write,0,512,1\n";
        let e = read(&format!("{first}128166385295514664,hm,0,Trim,0,512,1\n"))[1]
            .clone()
            .unwrap_err();
        assert_eq!((e.line, e.field), (2, "type"));
        assert_eq!(
            e.to_string(),
            "t.csv:2: field `type`: `Trim` is not Read or Write"
        );
        let e = read(&format!("{first}128166385295514000,hm,0,Write,0,512,1\n"))[1]
            .clone()
            .unwrap_err();
        assert_eq!(e.field, "timestamp");
        let e = read("1,hm,0,Write,0\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "size");
        let e = read("1,hm,x,Write,0,1,1\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "disk");
        let e = read("1.5,hm,0,Write,0,1,1\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "timestamp");
        let e = read("1,hm,0,Write,-4,1,1\n")[0].clone().unwrap_err();
        assert_eq!(e.field, "offset");
    }
}
