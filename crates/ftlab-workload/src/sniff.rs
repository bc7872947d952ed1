//! What the first bytes of a trace say about it: binary or text, a header line, and
//! which format it is in (`--format auto`), or whether it looks like another format
//! than the one given.
//!
//! Choices: only the first [`SNIFF_BYTES`] of the (decompressed) input are looked at,
//! at most [`SNIFF_LINES`] data lines of them; `auto` needs every sampled line to fit
//! one format, and tells MQSim (integer nanoseconds, type 0 or 1) from DiskSim (decimal
//! milliseconds, or flags other than 0 and 1) by the time and op fields; an input with
//! a NUL byte, or with more than 10% control bytes, in its first bytes is binary.

use crate::parse::{parse_u64, split_on, split_ws};

/// Bytes of the input looked at.
pub const SNIFF_BYTES: usize = 64 * 1024;
/// Data lines looked at.
pub const SNIFF_LINES: usize = 32;

/// Something a run should tell its user about the workload (the report turns it into
/// a notice).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// Stable identifier (`snake_case`).
    pub code: &'static str,
    /// What was seen.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

/// Whether `head` (the first bytes of a decompressed input) is binary rather than text.
pub fn looks_binary(head: &[u8]) -> bool {
    let head = &head[..head.len().min(SNIFF_BYTES)];
    if head.contains(&0) {
        return true;
    }
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c))
        .count();
    control * 10 > head.len()
}

/// The complete lines of `head` (a last line cut by the end of `head` is left out
/// unless `head` is the whole input or holds no line end at all), without terminators.
fn lines(head: &[u8], whole: bool) -> impl Iterator<Item = &[u8]> {
    let cut = match head.iter().rposition(|&b| b == b'\n') {
        Some(i) if !whole => i + 1,
        _ => head.len(),
    };
    head[..cut]
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// The first line that is not blank and not a `#` comment.
pub fn first_line(head: &[u8], whole: bool) -> Option<&[u8]> {
    lines(head, whole).find(|l| !is_blank_or_comment(l))
}

fn is_blank_or_comment(l: &[u8]) -> bool {
    let t = l.trim_ascii();
    t.is_empty() || t[0] == b'#'
}

fn is_number(f: &[u8]) -> bool {
    !f.is_empty()
        && std::str::from_utf8(f).is_ok_and(|s| s.parse::<f64>().is_ok_and(f64::is_finite))
}

fn fields_of(line: &[u8]) -> Vec<&[u8]> {
    let t = line.trim_ascii();
    for d in [b',', b';', b'\t'] {
        if t.contains(&d) {
            return split_on(t, d).collect();
        }
    }
    split_ws(t).collect()
}

/// Whether `line` looks like a header: two fields or more, none of them a number, and
/// at least half of them with a letter in.
pub fn looks_like_header(line: &[u8]) -> bool {
    let f = fields_of(line);
    f.len() >= 2
        && f.iter().all(|x| !is_number(x))
        && f.iter()
            .filter(|x| x.iter().any(u8::is_ascii_alphabetic))
            .count()
            * 2
            >= f.len()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    Spc,
    Msr,
    Blkparse,
    Mqsim,
    Disksim,
}

/// The shape of one data line, if it fits a format.
fn shape(line: &[u8]) -> Option<Shape> {
    let t = line.trim_ascii();
    let f: Vec<&[u8]> = split_ws(t).collect();
    if f.len() >= 7 {
        let dev = f[0];
        let comma = dev.iter().position(|&b| b == b',');
        if let Some(c) = comma {
            if parse_u64(&dev[..c]).is_some()
                && parse_u64(&dev[c + 1..]).is_some()
                && is_number(f[3])
                && f[5].iter().all(u8::is_ascii_alphabetic)
            {
                return Some(Shape::Blkparse);
            }
        }
    }
    if t.contains(&b',') {
        let f: Vec<&[u8]> = split_on(t, b',').collect();
        let int = |i: usize| f.get(i).is_some_and(|x| parse_u64(x).is_some());
        if f.len() >= 7
            && int(0)
            && (f[3].eq_ignore_ascii_case(b"read") || f[3].eq_ignore_ascii_case(b"write"))
        {
            return Some(Shape::Msr);
        }
        if f.len() >= 5
            && int(0)
            && int(1)
            && int(2)
            && matches!(f[3], b"r" | b"w" | b"R" | b"W")
            && is_number(f[4])
        {
            return Some(Shape::Spc);
        }
        return None;
    }
    if f.len() >= 5
        && f[..5].iter().all(|x| is_number(x))
        && (1..5).all(|i| parse_u64(f[i]).is_some())
    {
        let decimal = f[0].contains(&b'.');
        let op = parse_u64(f[4]).unwrap_or(0);
        return Some(if decimal || op > 1 {
            Shape::Disksim
        } else {
            Shape::Mqsim
        });
    }
    None
}

fn data_lines(head: &[u8], whole: bool) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = lines(head, whole)
        .filter(|l| !is_blank_or_comment(l))
        .take(SNIFF_LINES)
        .collect();
    if out.first().is_some_and(|l| looks_like_header(l)) {
        out.remove(0);
    }
    out
}

fn show_line(l: &[u8]) -> String {
    let s = String::from_utf8_lossy(&l[..l.len().min(80)]).into_owned();
    if l.len() > 80 {
        format!("{s}...")
    } else {
        s
    }
}

/// The format of a trace from its first bytes (`whole`: `head` is the whole input),
/// with the reason; `Err` says why none could be chosen.
pub fn guess_format(head: &[u8], whole: bool) -> Result<(&'static str, String), String> {
    if looks_binary(head) {
        return match crate::vscsi::version(head) {
            Some(v) => Ok(("vscsi", format!("binary, with version {v} vSCSI records"))),
            None => Err("the file is binary and not a vSCSI trace".into()),
        };
    }
    let sample = data_lines(head, whole);
    let Some(first) = sample.first() else {
        return Err("no data line in the first bytes".into());
    };
    let shapes: Vec<Option<Shape>> = sample.iter().map(|l| shape(l)).collect();
    let n = sample.len();
    let all = |s: Shape| shapes.iter().all(|x| *x == Some(s));
    let why = |what: &str| format!("{what} ({n} lines sampled)");
    if all(Shape::Spc) {
        return Ok(("spc", why("5+ comma-separated fields, opcode r/w")));
    }
    if all(Shape::Msr) {
        return Ok((
            "msr",
            why("7 comma-separated fields, Read/Write in the 4th"),
        ));
    }
    if all(Shape::Blkparse) {
        return Ok((
            "blkparse",
            why("`maj,min cpu seq time pid action rwbs` events"),
        ));
    }
    let ascii = shapes
        .iter()
        .all(|x| matches!(x, Some(Shape::Mqsim | Shape::Disksim)));
    if ascii {
        return Ok(if shapes.contains(&Some(Shape::Disksim)) {
            (
                "disksim",
                why("5 numeric fields with decimal times or flag words: DiskSim, time in ms"),
            )
        } else {
            (
                "mqsim",
                why("5 integer fields, type 0/1: MQSim/SSDsim, time in ns"),
            )
        });
    }
    let bad = sample
        .iter()
        .zip(&shapes)
        .find(|(_, s)| s.is_none())
        .map_or(*first, |(l, _)| *l);
    Err(format!("no native format fits line `{}`", show_line(bad)))
}

/// What the first lines say against the format given, if anything: an MQSim/SSDsim
/// trace whose times have decimal points or whose op field holds flag words is the
/// shape of a DiskSim trace (time in ms), which MQSim's reader would take as ns.
pub fn check_format(format: &str, head: &[u8], whole: bool) -> Option<Note> {
    if looks_binary(head) {
        return None;
    }
    if !matches!(format, "mqsim" | "ssdsim") {
        return None;
    }
    let sample = data_lines(head, whole);
    let decimal = sample.iter().find(|l| shape(l) == Some(Shape::Disksim))?;
    Some(Note {
        code: "format_looks_like_disksim",
        message: format!(
            "--format {format} reads the first field as integer nanoseconds, but line `{}` \
             has a decimal time or a flag word: that is the shape of a DiskSim trace, whose \
             times are milliseconds (read as ns they compress the trace a million times)",
            show_line(decimal)
        ),
        hint: Some("--format disksim reads time in ms and flags bit 0 = read".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_every_text_format_from_its_first_lines() {
        let g = |t: &str| guess_format(t.as_bytes(), true).map(|(f, _)| f);
        assert_eq!(
            g("0,303567,3584,w,0.000000\n1,55590,3072,r,0.02\n"),
            Ok("spc")
        );
        assert_eq!(
            g("128166372003061629,hm,0,Write,3216171008,4096,1331\n"),
            Ok("msr")
        );
        assert_eq!(
            g("  8,16   1  1  0.000000000  3795  Q  WS 12345 + 8 [kworker]\n"),
            Ok("blkparse")
        );
        assert_eq!(
            g("11413000 0 657728 16 1\n938513000 4 264719034 16 0\n"),
            Ok("mqsim")
        );
        assert_eq!(g("0.523 0 100 8 1\n1.25 0 200 8 0\n"), Ok("disksim"));
        assert_eq!(g("12 0 100 8 6\n"), Ok("disksim"), "a flag word");
        assert_eq!(
            g("Timestamp,Hostname\n# c\n0,303567,3584,w,0.0\n"),
            Ok("spc"),
            "a header is passed over"
        );
        let e = g("39949 D read 299008 4096 5.000000000 0 False\n").unwrap_err();
        assert!(e.contains("no native format fits"), "{e}");
        assert!(g("").is_err());
    }

    #[test]
    fn binary_and_headers() {
        assert!(looks_binary(b"\x00\x01\x02abc"));
        assert!(!looks_binary(b"0,1,2,w,0.5\r\n"));
        assert!(looks_like_header(
            b"Timestamp,Hostname,DiskNumber,Type,Offset,Size"
        ));
        assert!(looks_like_header(b"time offset size op"));
        assert!(!looks_like_header(b"0,303567,3584,w,0.0"));
        assert!(!looks_like_header(b"write"));
    }

    #[test]
    fn disksim_read_as_mqsim_is_noticed() {
        let n = check_format("mqsim", b"0.523 0 100 8 1\n", true).unwrap();
        assert_eq!(n.code, "format_looks_like_disksim");
        assert!(check_format("mqsim", b"523 0 100 8 1\n", true).is_none());
        assert!(check_format("disksim", b"0.523 0 100 8 1\n", true).is_none());
    }
}
