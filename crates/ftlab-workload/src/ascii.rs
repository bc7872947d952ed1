//! Whitespace-separated simulator input formats:
//!
//! - MQSim / SSDsim ASCII: `arrival_ns device lba size type`, LBA and size in 512-byte
//!   sectors, type `1` = read, `0` = write (MQSim's trace format, which SSDsim shares
//!   with the ASU in the device column).
//! - DiskSim ASCII (DiskSim 3.0 reference manual, "ASCII" input format):
//!   `time_ms devno blkno size flags`, block number and size in 512-byte blocks, time in
//!   milliseconds (decimal), flags bit 0 set = read, clear = write.
//!
//! Choices: fields after the fifth are ignored; blank lines and lines starting with `#`
//! are skipped; in DiskSim flags only bit 0 is interpreted (the other bits are DiskSim's
//! time-critical / time-limited markers, which have no meaning for an FTL); MQSim type
//! values other than 0 and 1 are refused.

use crate::parse::{parse_u64, show, split_ws, Lines};
use crate::{Record, TraceError};
use ftlab_core::request::Op;
use std::io::BufRead;

/// Which of the two layouts a reader parses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsciiKind {
    /// MQSim / SSDsim: ns, device, sectors, sectors, 1 = read.
    Mqsim,
    /// DiskSim: ms, devno, blocks, blocks, flags bit 0 = read.
    Disksim,
}

/// Streams an MQSim/SSDsim or DiskSim ASCII trace.
pub struct AsciiReader<R> {
    lines: Lines<R>,
    kind: AsciiKind,
}

impl<R: BufRead> AsciiReader<R> {
    /// Reads `kind` from `input`; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>, kind: AsciiKind) -> Self {
        AsciiReader {
            lines: Lines::new(input, file),
            kind,
        }
    }

    /// The record of the current line, in layout `kind`.
    fn parse(l: &Lines<R>, kind: AsciiKind) -> Result<Record, TraceError> {
        const LAYOUT: &str = "5 whitespace-separated fields";
        let mut fields = split_ws(l.line());
        let time = l.need(fields.next(), "time", LAYOUT)?;
        let dev = l.need(fields.next(), "device", LAYOUT)?;
        let lba = l.need(fields.next(), "lba", LAYOUT)?;
        let size = l.need(fields.next(), "size", LAYOUT)?;
        let op_name = match kind {
            AsciiKind::Mqsim => "type",
            AsciiKind::Disksim => "flags",
        };
        let op = l.need(fields.next(), op_name, LAYOUT)?;
        let unit_ns = match kind {
            AsciiKind::Mqsim => 1,
            AsciiKind::Disksim => 1_000_000,
        };
        let arrival = l.time_ns(time, "time", unit_ns)?;
        let device = l.number_u32(dev, "device", "a device number")?;
        let lba = l.number(lba, "lba", "a sector number")?;
        let sectors = l.number(size, "size", "a sector count")?;
        let op = match kind {
            AsciiKind::Mqsim => match op {
                b"1" => Op::Read,
                b"0" => Op::Write,
                other => {
                    return Err(l.err(
                        "type",
                        format!("`{}` is not 1 (read) or 0 (write)", show(other)),
                    ))
                }
            },
            AsciiKind::Disksim => match parse_u64(op) {
                Some(f) if f & 1 == 1 => Op::Read,
                Some(_) => Op::Write,
                None => {
                    return Err(l.err(
                        "flags",
                        format!("`{}` is not an integer flag word", show(op)),
                    ))
                }
            },
        };
        let overflow = |f: &'static str| l.err(f, "overflows a byte offset".to_string());
        let offset = lba.checked_mul(512).ok_or_else(|| overflow("lba"))?;
        let len = sectors.checked_mul(512).ok_or_else(|| overflow("size"))?;
        Ok(l.record(arrival, op, offset, len, device))
    }
}

impl<R: BufRead> Iterator for AsciiReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let skip = |l: &[u8]| {
            let t = l.trim_ascii();
            t.is_empty() || t[0] == b'#'
        };
        let kind = self.kind;
        self.lines
            .next_parsed(skip, |l| Self::parse(l, kind).map(Some))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::Nanos;

    fn read(text: &str, kind: AsciiKind) -> Vec<Result<Record, TraceError>> {
        AsciiReader::new(text.as_bytes(), "t.trace", kind).collect()
    }

    #[test]
    fn mqsim_records() {
        let r = read(
            "11413000 0 657728 16 1\n\n938513000 4 264719034 16 0\n",
            AsciiKind::Mqsim,
        );
        let a = r[0].clone().unwrap();
        assert_eq!(a.req.arrival, Nanos(11_413_000));
        assert_eq!(
            (a.req.op, a.req.offset, a.req.len),
            (Op::Read, 657728 * 512, 8192)
        );
        let b = r[1].clone().unwrap();
        assert_eq!((b.req.op, b.device, b.line), (Op::Write, 4, 3));
    }

    #[test]
    fn disksim_records() {
        let r = read(
            "# comment\n0.500 1 100 8 1\n12.25 0 200 16 0\n13 0 8 1 6\n",
            AsciiKind::Disksim,
        );
        let a = r[0].clone().unwrap();
        assert_eq!(a.req.arrival, Nanos(500_000));
        assert_eq!(
            (a.req.op, a.device, a.req.offset, a.req.len),
            (Op::Read, 1, 51200, 4096)
        );
        let b = r[1].clone().unwrap();
        assert_eq!((b.req.arrival, b.req.op), (Nanos(12_250_000), Op::Write));
        assert_eq!(
            r[2].clone().unwrap().req.op,
            Op::Write,
            "flags 6: bit 0 clear"
        );
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let e = read("1 0 5 8 2\n", AsciiKind::Mqsim)[0]
            .clone()
            .unwrap_err();
        assert_eq!((e.line, e.field), (1, "type"));
        assert_eq!(
            e.to_string(),
            "t.trace:1: field `type`: `2` is not 1 (read) or 0 (write)"
        );
        let e = read("1 0 5\n", AsciiKind::Mqsim)[0].clone().unwrap_err();
        assert_eq!(e.field, "size");
        let e = read("x 0 5 8 1\n", AsciiKind::Disksim)[0]
            .clone()
            .unwrap_err();
        assert_eq!(e.field, "time");
        let e = read("1 0 5 8 r\n", AsciiKind::Disksim)[0]
            .clone()
            .unwrap_err();
        assert_eq!(e.field, "flags");
        let e = read("1 -1 5 8 1\n", AsciiKind::Disksim)[0]
            .clone()
            .unwrap_err();
        assert_eq!(e.field, "device");
    }
}
