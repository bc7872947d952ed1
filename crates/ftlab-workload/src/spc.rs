//! The SPC (UMass Storage Repository) trace format: one request per line,
//! `ASU,LBA,size,opcode,timestamp[,...]` with LBA in 512-byte sectors, size in bytes,
//! opcode `r`/`R`/`w`/`W` and timestamp in seconds (decimal).
//!
//! Choices: ASUs share one address space unless a transform selects or lays them out;
//! fields after the fifth are ignored (some SPC files carry extra columns); blank lines
//! are skipped.

use crate::TraceError;
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use std::io::BufRead;

/// Streams an SPC trace.
pub struct SpcReader<R> {
    input: R,
    file: String,
    line_no: u64,
    line: String,
}

impl<R: BufRead> SpcReader<R> {
    /// Reads from `input`; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>) -> Self {
        SpcReader {
            input,
            file: file.into(),
            line_no: 0,
            line: String::with_capacity(128),
        }
    }

    fn err(&self, field: &'static str, why: String) -> TraceError {
        TraceError {
            file: self.file.clone(),
            line: self.line_no,
            field,
            why,
        }
    }

    fn parse(&self) -> Result<Request, TraceError> {
        let mut fields = self.line.trim().split(',').map(str::trim);
        let mut next = |name: &'static str| {
            fields
                .next()
                .ok_or_else(|| self.err(name, "missing (expected 5 comma-separated fields)".into()))
        };
        let asu = next("asu")?;
        let lba = next("lba")?;
        let size = next("size")?;
        let opcode = next("opcode")?;
        let ts = next("timestamp")?;
        asu.parse::<u32>()
            .map_err(|_| self.err("asu", format!("`{asu}` is not a non-negative integer")))?;
        let lba: u64 = lba
            .parse()
            .map_err(|_| self.err("lba", format!("`{lba}` is not a sector number")))?;
        let size: u64 = size
            .parse()
            .map_err(|_| self.err("size", format!("`{size}` is not a byte count")))?;
        let op = match opcode {
            "r" | "R" => Op::Read,
            "w" | "W" => Op::Write,
            other => return Err(self.err("opcode", format!("`{other}` is not r or w"))),
        };
        let secs: f64 = ts
            .parse()
            .map_err(|_| self.err("timestamp", format!("`{ts}` is not a number of seconds")))?;
        if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
            return Err(self.err("timestamp", format!("`{ts}` is out of range")));
        }
        let offset = lba
            .checked_mul(512)
            .ok_or_else(|| self.err("lba", format!("`{lba}` overflows a byte offset")))?;
        Ok(Request {
            arrival: Nanos((secs * 1e9).round() as u64),
            op,
            offset,
            len: size,
        })
    }
}

impl<R: BufRead> Iterator for SpcReader<R> {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.line.clear();
            self.line_no += 1;
            match self.input.read_line(&mut self.line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(self.err("line", format!("read error: {e}")))),
            }
            if self.line.trim().is_empty() {
                continue;
            }
            return Some(self.parse());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<Result<Request, TraceError>> {
        SpcReader::new(text.as_bytes(), "t.spc").collect()
    }

    #[test]
    fn parses_records() {
        let r = read("0,303567,3584,w,0.000000\n\n1,55596,3072,R,0.078643,extra\n");
        assert_eq!(r.len(), 2);
        let a = r[0].clone().unwrap();
        assert_eq!(a.op, Op::Write);
        assert_eq!(a.offset, 303567 * 512);
        assert_eq!(a.len, 3584);
        let b = r[1].clone().unwrap();
        assert_eq!(b.op, Op::Read);
        assert_eq!(b.arrival, Nanos(78_643_000));
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
    }
}
