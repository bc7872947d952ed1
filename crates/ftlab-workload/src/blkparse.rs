//! The default text output of `blkparse` (blktrace): one event per line,
//! `maj,min cpu seq time pid action rwbs [sector + count] [process]`, time in seconds
//! since the trace started, sector and count in 512-byte sectors.
//!
//! Choices (options in [`BlkparseSpec`]):
//! - One action is replayed (`event`, default `D`, the dispatch to the device; `Q`, the
//!   request as the file system queued it before merging, is the other usual choice);
//!   every other event is skipped.
//! - `rwbs`: `D` (discard) makes a trim, else `W` a write, else `R` a read; a request
//!   with no data and an `F` (a pure cache flush, e.g. `FN`) makes a flush; other no-data
//!   requests (`N`) carry nothing to simulate and are skipped. The preflush/FUA flags of
//!   a data write are ignored.
//! - Lines whose first field does not start with a digit (the per-CPU and total
//!   summary that blkparse prints at the end, messages) are skipped; a line that starts
//!   like an event but cannot be parsed is an error.
//! - The device is `major * 256 + minor` (8,16 is 2064), so `--device` can select one.
//! - Per-CPU buffers make the output not globally time-ordered (sort with the sort
//!   window transform). A timestamp more than `max_jump_s` seconds (default 3600) past
//!   the latest one accepted so far is refused as corrupt: blktrace times are relative
//!   to the start of the capture, and a jump of hours between consecutive events of a
//!   capture is a damaged record (the YCSB sample has one at 1266874889 s after 810 s).
//!   `max_jump_s = 0` turns the check off.

use crate::parse::{parse_u64, show, split_ws, Lines};
use crate::{Record, TraceError};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use serde::{Deserialize, Serialize};
use std::io::BufRead;

/// Settings of the blkparse reader (config table `[blkparse]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BlkparseSpec {
    /// The action replayed: `D` (dispatched to the device) or `Q` (queued), or any
    /// other action code.
    pub event: String,
    /// Largest jump forward in time, in seconds, before a timestamp is refused as
    /// corrupt; 0 disables the check.
    pub max_jump_s: f64,
}

impl Default for BlkparseSpec {
    fn default() -> Self {
        BlkparseSpec {
            event: "D".into(),
            max_jump_s: 3600.0,
        }
    }
}

impl BlkparseSpec {
    /// Checks the settings; the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.event.is_empty() || !self.event.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(format!(
                "blkparse.event (--blkparse-event) = `{}`: must be a blktrace action code such as D \
                 or Q",
                self.event
            ));
        }
        if !self.max_jump_s.is_finite() || self.max_jump_s < 0.0 {
            return Err(format!(
                "blkparse.max_jump_s = {}: must be 0 (off) or a positive number of seconds",
                self.max_jump_s
            ));
        }
        Ok(())
    }
}

/// Streams the chosen events of a blkparse text output.
pub struct BlkparseReader<R> {
    lines: Lines<R>,
    event: Vec<u8>,
    max_jump_ns: u64,
    latest_ns: Option<u64>,
}

impl<R: BufRead> BlkparseReader<R> {
    /// Reads from `input`; `file` names it in errors. Call [`BlkparseSpec::validate`]
    /// first.
    pub fn new(input: R, file: impl Into<String>, spec: &BlkparseSpec) -> Self {
        BlkparseReader {
            lines: Lines::new(input, file),
            event: spec.event.as_bytes().to_vec(),
            max_jump_ns: (spec.max_jump_s * 1e9).round() as u64,
            latest_ns: None,
        }
    }

    /// The record of the current line if it is an `event` to replay (None for other
    /// lines); `latest_ns` is the latest time accepted so far (see [`check_jump`]).
    fn parse(
        l: &Lines<R>,
        event: &[u8],
        max_jump_ns: u64,
        latest_ns: &mut Option<u64>,
    ) -> Result<Option<Record>, TraceError> {
        const LAYOUT: &str = "`maj,min cpu seq time pid action rwbs ...`";
        let mut f = split_ws(l.line());
        let Some(dev) = f.next() else {
            return Ok(None);
        };
        if !dev[0].is_ascii_digit() {
            return Ok(None);
        }
        let _cpu = l.need(f.next(), "cpu", LAYOUT)?;
        let _seq = l.need(f.next(), "seq", LAYOUT)?;
        let time = l.need(f.next(), "time", LAYOUT)?;
        let _pid = l.need(f.next(), "pid", LAYOUT)?;
        let action = l.need(f.next(), "action", LAYOUT)?;
        if action != event {
            return Ok(None);
        }
        let rwbs = l.need(f.next(), "rwbs", LAYOUT)?;
        let device = parse_device(dev)
            .ok_or_else(|| l.err("device", format!("`{}` is not maj,min", show(dev))))?;
        let t = l.time_ns(time, "time", 1_000_000_000)?;
        let has = |c: u8| rwbs.contains(&c);
        let op = if has(b'D') {
            Op::Trim
        } else if has(b'W') {
            Op::Write
        } else if has(b'R') {
            Op::Read
        } else if has(b'F') {
            Op::Flush
        } else if rwbs.iter().all(u8::is_ascii_alphabetic) {
            return Ok(None);
        } else {
            return Err(l.err("rwbs", format!("`{}` is not an rwbs code", show(rwbs))));
        };
        let (offset, len) = match f.next() {
            Some(sector) if sector[0].is_ascii_digit() => {
                let sector = l.number(sector, "sector", "a sector number")?;
                if f.next() != Some(b"+") {
                    return Err(l.err("count", "missing `+ count` after the sector".into()));
                }
                let count = l.number(f.next().unwrap_or(b""), "count", "a sector count")?;
                let overflow = || l.err("sector", "overflows a byte offset".to_string());
                (
                    sector.checked_mul(512).ok_or_else(overflow)?,
                    count.checked_mul(512).ok_or_else(overflow)?,
                )
            }
            _ if op == Op::Flush => (0, 0),
            _ => return Err(l.err("sector", "missing for a data request".into())),
        };
        if op == Op::Flush && len > 0 {
            return Ok(None);
        }
        check_jump(latest_ns, max_jump_ns, l, t, time)?;
        let req = Request {
            arrival: Nanos(t),
            op,
            offset,
            len,
        };
        Ok(Some(l.record(req, device)))
    }
}

/// Refuses a time more than `max_jump_ns` past the latest accepted (0: no check).
/// Always inlined: as a call it costs the blkparse reader about 0.4% more instructions
/// per line (callgrind, `benches/readers.rs`).
#[inline(always)]
fn check_jump<R>(
    latest_ns: &mut Option<u64>,
    max_jump_ns: u64,
    l: &Lines<R>,
    t: u64,
    text: &[u8],
) -> Result<(), TraceError> {
    let latest = latest_ns.unwrap_or(0);
    if max_jump_ns > 0 && t > latest.saturating_add(max_jump_ns) {
        return Err(jump_error(l, text, t, latest, max_jump_ns));
    }
    *latest_ns = Some(latest.max(t));
    Ok(())
}

/// The error of [`check_jump`], apart so that the check inlined into the reader's
/// loop stays small.
#[cold]
fn jump_error<R>(l: &Lines<R>, text: &[u8], t: u64, latest: u64, max_jump_ns: u64) -> TraceError {
    l.err(
        "time",
        format!(
            "`{}` s jumps {:.3} s past the latest time so far ({:.6} s): a corrupt \
             timestamp (limit blkparse.max_jump_s = {} s)",
            show(text),
            (t - latest) as f64 / 1e9,
            latest as f64 / 1e9,
            max_jump_ns as f64 / 1e9
        ),
    )
}

/// `maj,min` as `major * 256 + minor`.
pub fn parse_device(text: &[u8]) -> Option<u32> {
    let comma = text.iter().position(|&b| b == b',')?;
    let major = parse_u64(&text[..comma])?;
    let minor = parse_u64(&text[comma + 1..])?;
    if major > 0xff_ffff || minor > 0xff {
        return None;
    }
    Some((major * 256 + minor) as u32)
}

impl<R: BufRead> Iterator for BlkparseReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (event, max_jump_ns, latest_ns) = (&self.event, self.max_jump_ns, &mut self.latest_ns);
        self.lines
            .next_parsed(|_| false, |l| Self::parse(l, event, max_jump_ns, latest_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, event: &str) -> Vec<Result<Record, TraceError>> {
        let spec = BlkparseSpec {
            event: event.into(),
            ..Default::default()
        };
        BlkparseReader::new(text.as_bytes(), "t.blk", &spec).collect()
    }

    const SAMPLE: &str = "  8,16   3        4     0.000011950  3645  I   R 4938888 + 256 [java]
  8,16   3        5     0.000026421  3645  D   R 4938888 + 256 [java]
  8,16   3        7     0.001795683  3557  C   R 4938888 + 256 [0]
  8,16   2        4     0.002025461  3643  Q  WS 16 + 8 [jbd2]
  8,16   2        5     0.002036907  3643  D  WS 16 + 8 [jbd2]
  8,16   2        6     0.003000000  3643  D  FN [jbd2]
  8,16   2        7     0.004000000  3643  D   N 0 [jbd2]
  8,16   2        8     0.005000000  3643  D   D 64 + 8 [fstrim]
CPU0 (8,16):
 Reads Queued:           0,        0KiB\t Writes Queued:           0,        0KiB
";

    #[test]
    fn dispatch_events() {
        let r: Vec<Record> = read(SAMPLE, "D").into_iter().map(Result::unwrap).collect();
        let ops: Vec<Op> = r.iter().map(|r| r.req.op).collect();
        assert_eq!(ops, vec![Op::Read, Op::Write, Op::Flush, Op::Trim]);
        assert_eq!(r[0].req.arrival, Nanos(26_421));
        assert_eq!((r[0].req.offset, r[0].req.len), (4938888 * 512, 256 * 512));
        assert_eq!((r[0].device, r[0].line), (8 * 256 + 16, 2));
        assert_eq!((r[1].req.offset, r[1].req.len), (16 * 512, 8 * 512));
    }

    #[test]
    fn queue_events() {
        let r: Vec<Record> = read(SAMPLE, "Q").into_iter().map(Result::unwrap).collect();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].req.op, r[0].line), (Op::Write, 4));
    }

    #[test]
    fn corrupt_timestamp_is_refused() {
        let text = "  8,16 2 1 810.379717232 3961 D WM 16 + 8 [k]\n  \
                    8,16 1 6 1266874889.708668759 3646 D R 5632664 + 256 [java]\n  \
                    8,16 1 7 810.5 3646 D R 5632664 + 256 [java]\n";
        let r = read(text, "D");
        assert!(r[0].is_ok() && r[2].is_ok());
        let e = r[1].clone().unwrap_err();
        assert_eq!((e.line, e.field), (2, "time"));
        assert!(e.to_string().contains("corrupt timestamp"), "{e}");
        let off = BlkparseSpec {
            max_jump_s: 0.0,
            ..Default::default()
        };
        assert!(BlkparseReader::new(text.as_bytes(), "t", &off).all(|r| r.is_ok()));
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let e = read("  8,16 3 5 0.1 3645 D R 49x8 + 256 [java]\n", "D")[0]
            .clone()
            .unwrap_err();
        assert_eq!((e.line, e.field), (1, "sector"));
        assert_eq!(
            e.to_string(),
            "t.blk:1: field `sector`: `49x8` is not a sector number"
        );
        let e = read("  8,16 3 5 0.1x 3645 D R 1 + 256 [java]\n", "D")[0]
            .clone()
            .unwrap_err();
        assert_eq!(e.field, "time");
        let e = read("  8,16 3 5 0.1 3645 D R 1 256\n", "D")[0]
            .clone()
            .unwrap_err();
        assert_eq!(e.field, "count");
        let e = read("  8 3 5 0.1 3645 D R 1 + 8\n", "D")[0]
            .clone()
            .unwrap_err();
        assert_eq!(e.field, "device");
        let e = read("  8,16 3 5\n", "D")[0].clone().unwrap_err();
        assert_eq!(e.field, "time");
        let e = read("  8,16 3 5 0.1 3645 D R\n", "D")[0]
            .clone()
            .unwrap_err();
        assert_eq!(e.field, "sector");
    }

    #[test]
    fn spec_validation_names_the_key() {
        let bad = BlkparseSpec {
            event: "D1".into(),
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().starts_with("blkparse.event"));
        let bad = BlkparseSpec {
            max_jump_s: -1.0,
            ..Default::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .starts_with("blkparse.max_jump_s"));
    }
}
