//! Byte-level line and field parsing shared by every reader.
//!
//! Readers keep one line buffer for the whole file and parse fields by hand from byte
//! slices: no allocation per line (an error message allocates, a good record never
//! does). Numbers are parsed exactly: a decimal time such as `0.026214` seconds becomes
//! 26 214 000 ns with no floating-point rounding.

use crate::{Record, TraceError};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use std::io::BufRead;

/// A line-at-a-time view of a text input that counts lines for error messages.
pub struct Lines<R> {
    input: R,
    buf: Vec<u8>,
    line_no: u64,
    file: String,
    failed: bool,
}

impl<R: BufRead> Lines<R> {
    /// Reads from `input`; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>) -> Self {
        Lines {
            input,
            buf: Vec::with_capacity(256),
            line_no: 0,
            file: file.into(),
            failed: false,
        }
    }

    /// Moves to the next line. `Ok(false)` at the end of the input, and after a read
    /// error (reported once, with field [`crate::INPUT_FIELD`]).
    pub fn advance(&mut self) -> Result<bool, TraceError> {
        self.buf.clear();
        if self.failed {
            return Ok(false);
        }
        self.line_no += 1;
        match self.input.read_until(b'\n', &mut self.buf) {
            Ok(0) => Ok(false),
            Ok(_) => {
                while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
                    self.buf.pop();
                }
                Ok(true)
            }
            Err(e) => {
                self.failed = true;
                Err(self.err(crate::INPUT_FIELD, format!("read error: {e}")))
            }
        }
    }

    /// Moves to the next line that `skip` does not pass over (blank lines, comments);
    /// same results as [`Lines::advance`].
    #[inline]
    pub fn advance_past(
        &mut self,
        mut skip: impl FnMut(&[u8]) -> bool,
    ) -> Result<bool, TraceError> {
        while self.advance()? {
            if !skip(self.line()) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The next item of a reader, as its `Iterator::next` returns it: moves past the
    /// lines `skip` passes over, and parses the line with `parse`, which returns
    /// `Ok(None)` for a line the reader passes over after a look at its fields (an
    /// event it does not replay). `None` at the end of the input; a read error is
    /// returned once, then `None`.
    #[inline]
    pub fn next_parsed<T>(
        &mut self,
        mut skip: impl FnMut(&[u8]) -> bool,
        mut parse: impl FnMut(&Self) -> Result<Option<T>, TraceError>,
    ) -> Option<Result<T, TraceError>> {
        loop {
            match self.advance_past(&mut skip) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
            match parse(self) {
                Ok(Some(item)) => return Some(Ok(item)),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl<R> Lines<R> {
    /// The current line without its line terminator.
    pub fn line(&self) -> &[u8] {
        &self.buf
    }

    /// 1-based number of the current line.
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// The file name used in errors.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// An error about `field` of the current line.
    pub fn err(&self, field: &'static str, why: String) -> TraceError {
        TraceError {
            file: self.file.clone(),
            line: self.line_no,
            field,
            why,
        }
    }

    /// `text`, the next field of the current line, or an error that field `name` is
    /// `missing (expected <layout>)`.
    #[inline]
    pub fn need<'a>(
        &self,
        text: Option<&'a [u8]>,
        name: &'static str,
        layout: &str,
    ) -> Result<&'a [u8], TraceError> {
        text.ok_or_else(|| self.err(name, format!("missing (expected {layout})")))
    }

    /// Field `name` of the current line as a non-negative integer, or an error that
    /// `` `text` is not <what> ``.
    #[inline]
    pub fn number(&self, text: &[u8], name: &'static str, what: &str) -> Result<u64, TraceError> {
        parse_u64(text).ok_or_else(|| self.invalid(text, name, what))
    }

    /// Field `name` of the current line as a non-negative integer below 2^32 (a device
    /// number), or an error that `` `text` is not <what> ``.
    #[inline]
    pub fn number_u32(
        &self,
        text: &[u8],
        name: &'static str,
        what: &str,
    ) -> Result<u32, TraceError> {
        parse_u64(text)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| self.invalid(text, name, what))
    }

    /// Field `name` of the current line as a time in units of `unit_ns` ns (see
    /// [`parse_time_ns`]), in whole nanoseconds, or an error saying why it is not one.
    #[inline]
    pub fn time_ns(
        &self,
        text: &[u8],
        name: &'static str,
        unit_ns: u64,
    ) -> Result<u64, TraceError> {
        parse_time_ns(text, unit_ns)
            .map_err(|e| self.err(name, format!("`{}` {}", show(text), e.why())))
    }

    /// The record of the current line: a request arriving at `arrival_ns` (every
    /// reader ends its parse here, so none builds the record by hand).
    #[inline]
    pub fn record(&self, arrival_ns: u64, op: Op, offset: u64, len: u64, device: u32) -> Record {
        Record {
            req: Request {
                arrival: Nanos(arrival_ns),
                op,
                offset,
                len,
            },
            device,
            line: self.line_no,
            pass: 0,
        }
    }

    #[cold]
    fn invalid(&self, text: &[u8], name: &'static str, what: &str) -> TraceError {
        self.err(name, format!("`{}` is not {what}", show(text)))
    }
}

/// Splits a line on one delimiter byte, trimming ASCII blanks around each field.
#[inline]
pub fn split_on(line: &[u8], delim: u8) -> impl Iterator<Item = &[u8]> {
    line.split(move |&b| b == delim).map(<[u8]>::trim_ascii)
}

/// Splits a line on runs of ASCII whitespace.
#[inline]
pub fn split_ws(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(u8::is_ascii_whitespace)
        .filter(|s| !s.is_empty())
}

/// The field as text for an error message.
pub fn show(field: &[u8]) -> String {
    String::from_utf8_lossy(field).into_owned()
}

/// A non-negative decimal integer, or `None` (empty, a non-digit, or overflow).
/// Always inlined: the readers call it several times a line, and as a call it made the
/// blkparse reader about 1% slower (callgrind, `benches/readers.rs`).
#[inline(always)]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// A decimal integer with an optional sign.
#[inline]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', rest)) => parse_u64(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        Some((b'+', rest)) => parse_u64(rest).and_then(|v| i64::try_from(v).ok()),
        _ => parse_u64(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// Why a time field was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeError {
    /// Not a number.
    NotANumber,
    /// Negative.
    Negative,
    /// Larger than about 584 years in ns.
    TooLarge,
}

impl TimeError {
    /// The reason, for a message.
    pub fn why(self) -> &'static str {
        match self {
            TimeError::NotANumber => "is not a number",
            TimeError::Negative => "is negative",
            TimeError::TooLarge => "is too large (more than 2^64 ns)",
        }
    }
}

/// A non-negative decimal number of time units (`unit_ns` nanoseconds each), such as
/// `12.5` or `0.000011950`, converted to whole nanoseconds exactly (rounded to the
/// nearest ns). Scientific notation (`7.3e-05`) is accepted through `f64`.
#[inline]
pub fn parse_time_ns(s: &[u8], unit_ns: u64) -> Result<u64, TimeError> {
    // One sign at most. (Regression: a sign was stripped recursively, so a field of
    // thousands of '-' overflowed the stack; found by cargo fuzz, read_spc.)
    match s.split_first() {
        Some((b'-', rest)) => match parse_unsigned_time_ns(rest, unit_ns)? {
            0 => Ok(0),
            _ => Err(TimeError::Negative),
        },
        Some((b'+', rest)) => parse_unsigned_time_ns(rest, unit_ns),
        _ => parse_unsigned_time_ns(s, unit_ns),
    }
}

fn parse_unsigned_time_ns(s: &[u8], unit_ns: u64) -> Result<u64, TimeError> {
    if s.iter().any(|&b| b == b'e' || b == b'E') {
        return parse_time_float(s, unit_ns);
    }
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[..0]),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(TimeError::NotANumber);
    }
    let whole = if int.is_empty() {
        0
    } else {
        parse_u64(int).ok_or(TimeError::NotANumber)?
    };
    let mut ns = (whole as u128) * (unit_ns as u128);
    if !frac.is_empty() {
        // Keep at most 18 fraction digits: beyond that a digit is worth < 1e-18 units.
        let digits = &frac[..frac.len().min(18)];
        if !frac.iter().all(u8::is_ascii_digit) {
            return Err(TimeError::NotANumber);
        }
        let f = parse_u64(digits).ok_or(TimeError::NotANumber)? as u128;
        let scale = 10u128.pow(digits.len() as u32);
        ns += (f * unit_ns as u128 + scale / 2) / scale;
    }
    u64::try_from(ns).map_err(|_| TimeError::TooLarge)
}

fn parse_time_float(s: &[u8], unit_ns: u64) -> Result<u64, TimeError> {
    let text = std::str::from_utf8(s).map_err(|_| TimeError::NotANumber)?;
    let v: f64 = text.parse().map_err(|_| TimeError::NotANumber)?;
    if !v.is_finite() {
        return Err(TimeError::NotANumber);
    }
    if v < 0.0 {
        return Err(TimeError::Negative);
    }
    let ns = (v * unit_ns as f64).round();
    if ns >= u64::MAX as f64 {
        return Err(TimeError::TooLarge);
    }
    Ok(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_of_signs_is_an_error_not_a_stack_overflow() {
        let many = vec![b'-'; 200_000];
        assert_eq!(parse_time_ns(&many, 1), Err(TimeError::NotANumber));
        assert_eq!(parse_time_ns(b"-0", 1), Ok(0));
        assert_eq!(parse_time_ns(b"-1", 1), Err(TimeError::Negative));
        assert_eq!(parse_time_ns(b"--1", 1), Err(TimeError::NotANumber));
        assert_eq!(parse_time_ns(b"+2.5", 10), Ok(25));
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_i64(b"-63"), Some(-63));
        assert_eq!(parse_i64(b"+5"), Some(5));
        assert_eq!(parse_i64(b"x"), None);
    }

    #[test]
    fn decimal_times_are_exact() {
        let s = 1_000_000_000;
        assert_eq!(parse_time_ns(b"0.026214", s), Ok(26_214_000));
        assert_eq!(parse_time_ns(b"810.379310838", s), Ok(810_379_310_838));
        assert_eq!(parse_time_ns(b"12", 1_000_000), Ok(12_000_000));
        assert_eq!(parse_time_ns(b"0.5", 100), Ok(50));
        assert_eq!(parse_time_ns(b".25", 1000), Ok(250));
        assert_eq!(parse_time_ns(b"3.", 1000), Ok(3000));
        assert_eq!(parse_time_ns(b"7.3902e-05", s), Ok(73_902));
        assert_eq!(parse_time_ns(b"-0", s), Ok(0));
        assert_eq!(parse_time_ns(b"-1.5", s), Err(TimeError::Negative));
        assert_eq!(parse_time_ns(b"1.2.3", s), Err(TimeError::NotANumber));
        assert_eq!(parse_time_ns(b".", s), Err(TimeError::NotANumber));
        assert_eq!(parse_time_ns(b"", s), Err(TimeError::NotANumber));
        assert_eq!(
            parse_time_ns(b"99999999999999999999", s),
            Err(TimeError::NotANumber)
        );
        assert_eq!(parse_time_ns(b"99999999999", s), Err(TimeError::TooLarge));
    }

    #[test]
    fn lines_strip_terminators_and_count() {
        let mut l = Lines::new(&b"a,b\r\n\nlast"[..], "f");
        assert!(l.advance().unwrap());
        assert_eq!(l.line(), b"a,b");
        assert!(l.advance().unwrap());
        assert_eq!(l.line(), b"");
        assert!(l.advance().unwrap());
        assert_eq!((l.line(), l.line_no()), (&b"last"[..], 3));
        assert!(!l.advance().unwrap());
        let f: Vec<&[u8]> = split_on(b" 1 , x,", b',').collect();
        assert_eq!(f, vec![&b"1"[..], b"x", b""]);
        let f: Vec<&[u8]> = split_ws(b"  8,16   3  D ").collect();
        assert_eq!(f, vec![&b"8,16"[..], b"3", b"D"]);
    }
}
