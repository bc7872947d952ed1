//! The generic reader: any delimited text trace, described by a column mapping
//! ([`CsvSpec`], config table `[csv]`, flags `--columns`, `--delimiter`, ...).
//!
//! Columns are counted from 0, or named by the header line (`by_name`, `--columns
//! time=Timestamp,...`; a name implies a header). The mapping says which column holds the time, offset,
//! size, operation and (optionally) device, the units of each, which operation values
//! mean read, write and trim, whether the first line is a header, and optionally a
//! column whose value must be one of a list for the line to be replayed (for formats
//! that mix issue and completion events, such as WiscSee's pre-parsed blktrace:
//! `filter_column = 1, filter_values = ["D"]`).
//!
//! Choices: operation values match case-insensitively after trimming; a line whose op
//! value is in none of the three lists is an error (not silently dropped); with no time
//! column every request arrives at 0 (back to back); with no device column the device
//! is 0; times are taken as given (every run rebases them to the first record unless
//! `absolute_time` is set; `rebase_time` does it here already, and is kept for old
//! configurations); blank lines and lines starting with `comment` are skipped; header
//! names match trimmed and case-insensitively, and a name the header lacks is an error
//! that lists the header's columns.

use crate::parse::{show, split_on, split_ws, Lines};
use crate::{Record, TraceError};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::BufRead;

/// The column mapping of the generic reader.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CsvSpec {
    /// Field separator: `,` (default), `;`, `tab`, `whitespace` (runs of blanks), or
    /// any single character.
    pub delimiter: String,
    /// The first non-blank line is a header and is skipped.
    pub header: bool,
    /// Lines starting with this are skipped ("" for none).
    pub comment: String,
    /// Column of the arrival time (none: every request arrives at 0).
    pub time: Option<u32>,
    /// Column of the offset.
    pub offset: Option<u32>,
    /// Column of the size.
    pub size: Option<u32>,
    /// Column of the operation.
    pub op: Option<u32>,
    /// Column of the device number (none: device 0).
    pub device: Option<u32>,
    /// Unit of the time column: `s`, `ms`, `us`, `ns` or `100ns` (Windows FILETIME).
    pub time_unit: TimeUnit,
    /// Unit of the offset column: `bytes`, `sectors` (512 B), `kib`, or a number of bytes.
    pub offset_unit: ByteUnit,
    /// Unit of the size column (as `offset_unit`).
    pub size_unit: ByteUnit,
    /// Op values meaning read.
    pub read_values: Vec<String>,
    /// Op values meaning write.
    pub write_values: Vec<String>,
    /// Op values meaning trim (discard).
    pub trim_values: Vec<String>,
    /// Column that decides whether a line is replayed (none: every line is).
    pub filter_column: Option<u32>,
    /// Values of `filter_column` that are replayed.
    pub filter_values: Vec<String>,
    /// Make times relative to the first record's (runs do this for every format unless
    /// `absolute_time` is set; kept for configurations that set it).
    pub rebase_time: bool,
    /// Columns named by the header line instead of numbered: `time`, `offset`, `size`,
    /// `op`, `device` or `filter` -> header name (implies `header`).
    pub by_name: BTreeMap<String, String>,
}

impl Default for CsvSpec {
    fn default() -> Self {
        CsvSpec {
            delimiter: ",".into(),
            header: false,
            comment: "#".into(),
            time: None,
            offset: None,
            size: None,
            op: None,
            device: None,
            time_unit: TimeUnit::S,
            offset_unit: ByteUnit::Bytes,
            size_unit: ByteUnit::Bytes,
            read_values: vec!["r".into(), "read".into()],
            write_values: vec!["w".into(), "write".into()],
            trim_values: vec!["trim".into(), "discard".into()],
            filter_column: None,
            filter_values: Vec::new(),
            rebase_time: false,
            by_name: BTreeMap::new(),
        }
    }
}

/// The unit of a time column (`csv.time_unit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum TimeUnit {
    /// Seconds.
    #[serde(rename = "s")]
    S,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Ms,
    /// Microseconds (`us` or `µs`).
    #[serde(rename = "us", alias = "µs")]
    Us,
    /// Nanoseconds.
    #[serde(rename = "ns")]
    Ns,
    /// Ticks of 100 ns (Windows FILETIME).
    #[serde(rename = "100ns")]
    Ns100,
}

impl TimeUnit {
    /// Nanoseconds per unit.
    pub fn ns(self) -> u64 {
        match self {
            TimeUnit::S => 1_000_000_000,
            TimeUnit::Ms => 1_000_000,
            TimeUnit::Us => 1_000,
            TimeUnit::Ns => 1,
            TimeUnit::Ns100 => 100,
        }
    }
}

/// The unit of an offset or size column (`csv.offset_unit`, `csv.size_unit`): `bytes`,
/// `sectors` (512 B), `kib`, or a number of bytes (an integer, or its digits as text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteUnit {
    /// Bytes (`bytes`, `byte` or `b`).
    Bytes,
    /// Sectors of 512 bytes (`sectors` or `sector`).
    Sectors,
    /// KiB (`kib`).
    Kib,
    /// Units of this many bytes (at least 1).
    Of(u64),
}

impl ByteUnit {
    /// Bytes per unit.
    pub fn bytes(self) -> u64 {
        match self {
            ByteUnit::Bytes => 1,
            ByteUnit::Sectors => 512,
            ByteUnit::Kib => 1024,
            ByteUnit::Of(n) => n,
        }
    }
}

impl std::str::FromStr for ByteUnit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.trim() {
            "bytes" | "byte" | "b" => ByteUnit::Bytes,
            "sectors" | "sector" => ByteUnit::Sectors,
            "kib" | "KiB" => ByteUnit::Kib,
            n => match n.parse::<u64>() {
                Ok(n) if n > 0 => ByteUnit::Of(n),
                _ => {
                    return Err(format!(
                        "`{n}` is not a unit: bytes, sectors (512 B), kib, or a number of \
                         bytes above 0"
                    ))
                }
            },
        })
    }
}

impl std::fmt::Display for ByteUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ByteUnit::Bytes => f.write_str("bytes"),
            ByteUnit::Sectors => f.write_str("sectors"),
            ByteUnit::Kib => f.write_str("kib"),
            ByteUnit::Of(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for ByteUnit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteUnit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ByteUnit;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes, sectors, kib, or a number of bytes above 0")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ByteUnit, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ByteUnit, E> {
                v.to_string().parse().map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ByteUnit, E> {
                v.to_string().parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for ByteUnit {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ByteUnit".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "bytes, sectors (512 B), kib, or a number of bytes above 0",
            "anyOf": [
                {"type": "string", "enum": ["bytes", "sectors", "kib"]},
                {"type": "string", "pattern": "^[1-9][0-9]*$"},
                {"type": "integer", "minimum": 1}
            ]
        })
    }
}

#[derive(Clone, Copy, Debug)]
enum Delim {
    Byte(u8),
    Whitespace,
}

/// A validated [`CsvSpec`], ready to parse.
#[derive(Clone, Debug)]
pub struct CsvFormat {
    delim: Delim,
    header: bool,
    comment: Vec<u8>,
    cols: [Option<usize>; 6],
    time_ns: u64,
    offset_bytes: u64,
    size_bytes: u64,
    values: [Vec<Vec<u8>>; 3],
    filter: Vec<Vec<u8>>,
    rebase: bool,
    names: [Option<String>; 6],
}

const TIME: usize = 0;
const OFFSET: usize = 1;
const SIZE: usize = 2;
const OP: usize = 3;
const DEVICE: usize = 4;
const FILTER: usize = 5;
const NAMES: [&str; 6] = ["time", "offset", "size", "op", "device", "filter"];

impl CsvSpec {
    /// Checks the mapping; the error names the `csv.*` key.
    pub fn compile(&self) -> Result<CsvFormat, String> {
        let delim = match self.delimiter.as_str() {
            "whitespace" | "ws" | " " => Delim::Whitespace,
            "tab" | "\t" => Delim::Byte(b'\t'),
            d if d.len() == 1 => Delim::Byte(d.as_bytes()[0]),
            d => {
                return Err(format!(
                    "csv.delimiter (--delimiter) = `{d}`: must be one character, `tab` or \
                     `whitespace`"
                ))
            }
        };
        let mut names: [Option<String>; 6] = Default::default();
        for (role, name) in &self.by_name {
            let slot = NAMES.iter().position(|n| n == role).ok_or_else(|| {
                format!(
                    "csv.by_name: unknown column role `{role}` (--columns; roles: time, \
                     offset, size, op, device, filter)"
                )
            })?;
            names[slot] = Some(name.trim().to_ascii_lowercase());
        }
        let numbered = [
            self.time,
            self.offset,
            self.size,
            self.op,
            self.device,
            self.filter_column,
        ];
        for (slot, n) in names.iter().enumerate() {
            if n.is_some() && numbered[slot].is_some() {
                return Err(format!(
                    "csv.{} is set both by number and by name (csv.by_name, --columns): give \
                     one",
                    NAMES[slot]
                ));
            }
        }
        let need = |slot: usize| {
            let key = NAMES[slot];
            match (numbered[slot], &names[slot]) {
                (Some(c), _) => Ok(Some(c as usize)),
                (None, Some(_)) => Ok(None),
                (None, None) => Err(format!(
                    "csv.{key} is not set: the generic reader needs the {key} column \
                     (--columns {key}=N, columns counting from 0, or {key}=NAME of a header \
                     column; e.g. --columns time=0,offset=1,size=2,op=3)"
                )),
            }
        };
        let cols = [
            self.time.map(|c| c as usize),
            need(OFFSET)?,
            need(SIZE)?,
            need(OP)?,
            self.device.map(|c| c as usize),
            self.filter_column.map(|c| c as usize),
        ];
        if cols.iter().flatten().any(|&c| c >= 256) {
            return Err("csv columns must be below 256".into());
        }
        if (self.filter_column.is_some() || names[FILTER].is_some())
            && self.filter_values.is_empty()
        {
            return Err("csv.filter_values is empty: list the values to replay".into());
        }
        let time_ns = self.time_unit.ns();
        let lower = |v: &[String]| -> Vec<Vec<u8>> {
            v.iter()
                .map(|s| s.trim().to_ascii_lowercase().into_bytes())
                .collect()
        };
        let values = [
            lower(&self.read_values),
            lower(&self.write_values),
            lower(&self.trim_values),
        ];
        for (i, a) in values.iter().enumerate() {
            for b in values.iter().skip(i + 1) {
                if let Some(v) = a.iter().find(|v| b.contains(v)) {
                    return Err(format!(
                        "csv op value `{}` is in two of csv.read_values (--read-values), \
                         csv.write_values (--write-values), csv.trim_values",
                        show(v)
                    ));
                }
            }
        }
        if values[0].is_empty() && values[1].is_empty() {
            return Err(
                "csv.read_values (--read-values) and csv.write_values (--write-values) are both \
                 empty"
                    .into(),
            );
        }
        let any_name = names.iter().any(Option::is_some);
        Ok(CsvFormat {
            delim,
            header: self.header || any_name,
            comment: self.comment.as_bytes().to_vec(),
            cols,
            time_ns,
            offset_bytes: self.offset_unit.bytes(),
            size_bytes: self.size_unit.bytes(),
            values,
            filter: self
                .filter_values
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect(),
            rebase: self.rebase_time,
            names,
        })
    }
}

/// Streams a delimited trace through a column mapping.
pub struct CsvReader<R> {
    lines: Lines<R>,
    fmt: CsvFormat,
    header_pending: bool,
    base: Option<u64>,
}

/// The fields the mapping needs, by slot, and the number of fields on the line.
fn fields<'a>(line: &'a [u8], fmt: &CsvFormat) -> ([&'a [u8]; 6], usize) {
    let mut got: [&[u8]; 6] = [&[]; 6];
    let mut n = 0;
    let mut put = |i: usize, f: &'a [u8]| {
        for (slot, col) in fmt.cols.iter().enumerate() {
            if *col == Some(i) {
                got[slot] = f;
            }
        }
        n = i + 1;
    };
    match fmt.delim {
        Delim::Byte(d) => split_on(line, d).enumerate().for_each(|(i, f)| put(i, f)),
        Delim::Whitespace => split_ws(line).enumerate().for_each(|(i, f)| put(i, f)),
    }
    (got, n)
}

impl<R: BufRead> CsvReader<R> {
    /// Reads from `input` with a compiled mapping; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>, fmt: CsvFormat) -> Self {
        CsvReader {
            lines: Lines::new(input, file),
            header_pending: fmt.header,
            fmt,
            base: None,
        }
    }

    /// The record of the current line through the mapping `fmt` if the filter column
    /// lets it through (None if not); `base` is the first record's time, for
    /// `rebase_time` (the first record sets it).
    fn parse(
        l: &Lines<R>,
        fmt: &CsvFormat,
        base: &mut Option<u64>,
    ) -> Result<Option<Record>, TraceError> {
        let (got, n) = fields(l.line(), fmt);
        for (slot, col) in fmt.cols.iter().enumerate() {
            if let Some(c) = col {
                if *c >= n {
                    return Err(l.err(
                        NAMES[slot],
                        format!("missing: the line has {n} fields, column {c} is needed"),
                    ));
                }
            }
        }
        if fmt.cols[FILTER].is_some() && !fmt.filter.iter().any(|v| v == got[FILTER]) {
            return Ok(None);
        }
        let op_text = got[OP];
        let lower_eq = |v: &Vec<u8>| v.eq_ignore_ascii_case(op_text);
        let op = if fmt.values[0].iter().any(lower_eq) {
            Op::Read
        } else if fmt.values[1].iter().any(lower_eq) {
            Op::Write
        } else if fmt.values[2].iter().any(lower_eq) {
            Op::Trim
        } else {
            return Err(l.err(
                "op",
                format!(
                    "`{}` is not a read, write or trim value (see csv.read_values, \
                     csv.write_values, csv.trim_values)",
                    show(op_text)
                ),
            ));
        };
        let num = |slot: usize, what: &str| l.number(got[slot], NAMES[slot], what);
        let offset = num(OFFSET, "a non-negative integer")?;
        let size = num(SIZE, "a non-negative integer")?;
        let device = match fmt.cols[DEVICE] {
            Some(_) => u32::try_from(num(DEVICE, "a device number")?)
                .map_err(|_| l.err("device", "is over 2^32".into()))?,
            None => 0,
        };
        let overflow = |f: &'static str| l.err(f, "overflows a byte count".to_string());
        let offset = offset
            .checked_mul(fmt.offset_bytes)
            .ok_or_else(|| overflow("offset"))?;
        let len = size
            .checked_mul(fmt.size_bytes)
            .ok_or_else(|| overflow("size"))?;
        let mut t = match fmt.cols[TIME] {
            Some(_) => l.time_ns(got[TIME], "time", fmt.time_ns)?,
            None => 0,
        };
        if fmt.rebase {
            let base = *base.get_or_insert(t);
            t = t.checked_sub(base).ok_or_else(|| {
                l.err(
                    "time",
                    format!(
                        "`{}` is earlier than the first record (rebase_time needs time order)",
                        show(got[TIME])
                    ),
                )
            })?;
        }
        let req = Request {
            arrival: Nanos(t),
            op,
            offset,
            len,
        };
        Ok(Some(l.record(req, device)))
    }
}

impl<R: BufRead> CsvReader<R> {
    /// Reads the header line (the current line): resolves the columns named in it.
    fn header(&mut self) -> Result<(), TraceError> {
        let fmt = &mut self.fmt;
        if fmt.names.iter().all(Option::is_none) {
            return Ok(());
        }
        let line = self.lines.line();
        let fields: Vec<String> = match fmt.delim {
            Delim::Byte(d) => split_on(line, d).map(show).collect(),
            Delim::Whitespace => split_ws(line).map(show).collect(),
        };
        for (slot, name) in fmt.names.iter().enumerate() {
            let Some(name) = name else {
                continue;
            };
            match fields
                .iter()
                .position(|f| f.trim().eq_ignore_ascii_case(name))
            {
                Some(i) => fmt.cols[slot] = Some(i),
                None => {
                    return Err(self.lines.err(
                        NAMES[slot],
                        format!(
                            "the header has no column named `{name}` (--columns {}={name}); its \
                             columns: {}",
                            NAMES[slot],
                            fields.join(", ")
                        ),
                    ))
                }
            }
        }
        Ok(())
    }
}

impl<R: BufRead> Iterator for CsvReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Blank lines and comments are passed over; the first other line may be the
        // header.
        fn skip(comment: &[u8], line: &[u8]) -> bool {
            let t = line.trim_ascii();
            t.is_empty() || (!comment.is_empty() && t.starts_with(comment))
        }
        if self.header_pending {
            self.header_pending = false;
            let comment = &self.fmt.comment;
            match self.lines.advance_past(|l| skip(comment, l)) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
            if let Err(e) = self.header() {
                return Some(Err(e));
            }
        }
        let (fmt, base) = (&self.fmt, &mut self.base);
        self.lines
            .next_parsed(|l| skip(&fmt.comment, l), |l| Self::parse(l, fmt, base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> CsvSpec {
        CsvSpec {
            time: Some(0),
            device: Some(1),
            op: Some(2),
            offset: Some(3),
            size: Some(4),
            ..Default::default()
        }
    }

    fn read(text: &str, s: &CsvSpec) -> Vec<Result<Record, TraceError>> {
        CsvReader::new(text.as_bytes(), "t.csv", s.compile().unwrap()).collect()
    }

    #[test]
    fn maps_columns_units_and_values() {
        let s = CsvSpec {
            header: true,
            time_unit: TimeUnit::Ms,
            offset_unit: ByteUnit::Sectors,
            size_unit: ByteUnit::Kib,
            ..spec()
        };
        let r = read(
            "time,dev,op,lba,kib\n# c\n1.5,2,READ,8,4\n\n3,0,w,0,1\n4,0,Discard,1,1\n",
            &s,
        );
        let r: Vec<Record> = r.into_iter().map(Result::unwrap).collect();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].req.arrival, Nanos(1_500_000));
        assert_eq!((r[0].req.op, r[0].device), (Op::Read, 2));
        assert_eq!((r[0].req.offset, r[0].req.len, r[0].line), (4096, 4096, 3));
        assert_eq!((r[1].req.op, r[2].req.op), (Op::Write, Op::Trim));
    }

    #[test]
    fn whitespace_filter_and_rebase() {
        // WiscSee's pre-parsed blktrace: pid action op offset size time delta sync
        let s = CsvSpec {
            delimiter: "whitespace".into(),
            time: Some(5),
            op: Some(2),
            offset: Some(3),
            size: Some(4),
            filter_column: Some(1),
            filter_values: vec!["D".into()],
            rebase_time: true,
            ..Default::default()
        };
        let text = "39949 D read 299008 4096 5.000000000 0 False\n\
                    0 C read 299008 4096 5.000122793 0.000122793 False\n\
                    39949 D write 331776 4096 5.000196695 7.3902e-05 False\n";
        let r: Vec<Record> = read(text, &s).into_iter().map(Result::unwrap).collect();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].req.arrival, Nanos(0));
        assert_eq!(
            (r[1].req.arrival, r[1].req.op, r[1].line),
            (Nanos(196_695), Op::Write, 3)
        );
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let s = spec();
        let e = read("1,0,x,0,1\n", &s)[0].clone().unwrap_err();
        assert_eq!((e.line, e.field), (1, "op"));
        assert!(
            e.to_string()
                .starts_with("t.csv:1: field `op`: `x` is not a read"),
            "{e}"
        );
        let e = read("1,0,r,0\n", &s)[0].clone().unwrap_err();
        assert_eq!(e.field, "size");
        assert!(e.why.contains("4 fields"), "{e}");
        let e = read("1,0,r,-1,1\n", &s)[0].clone().unwrap_err();
        assert_eq!(e.field, "offset");
        let e = read("t,0,r,0,1\n", &s)[0].clone().unwrap_err();
        assert_eq!(e.field, "time");
        let e = read("1,z,r,0,1\n", &s)[0].clone().unwrap_err();
        assert_eq!(e.field, "device");
    }

    #[test]
    fn csv_columns_by_header_name() {
        let mut s = CsvSpec::default();
        for (role, name) in [
            ("time", "Timestamp"),
            ("device", "disk"),
            ("op", "TYPE"),
            ("offset", "Offset"),
            ("size", "Size"),
        ] {
            s.by_name.insert(role.into(), name.into());
        }
        s.time_unit = TimeUnit::Ns100;
        let text = "# exported\nTimestamp, Hostname, Disk, Type, Offset, Size\n\
                    100,hm,1,Read,4096,512\n300,hm,0,Write,0,4096\n";
        let r: Vec<Record> = read(text, &s).into_iter().map(Result::unwrap).collect();
        assert_eq!(r.len(), 2);
        assert_eq!(
            (
                r[0].req.arrival,
                r[0].device,
                r[0].req.op,
                r[0].req.offset,
                r[0].line
            ),
            (Nanos(10_000), 1, Op::Read, 4096, 3)
        );
        s.by_name.insert("size".into(), "Length".into());
        let e = read(text, &s)[0].clone().unwrap_err();
        assert_eq!((e.line, e.field), (2, "size"));
        assert!(
            e.why.contains("no column named `length`") && e.why.contains("Hostname"),
            "{e}"
        );
        s.size = Some(5);
        assert!(s
            .compile()
            .unwrap_err()
            .contains("both by number and by name"));
    }

    #[test]
    fn bad_mappings_name_the_key() {
        let e = CsvSpec::default().compile().unwrap_err();
        assert!(e.starts_with("csv.offset is not set"), "{e}");
        assert!(e.contains("--columns offset=N"), "{e}");
        let e = CsvSpec {
            delimiter: "::".into(),
            ..spec()
        }
        .compile()
        .unwrap_err();
        assert!(e.starts_with("csv.delimiter"), "{e}");
        let e = CsvSpec {
            write_values: vec!["R".into()],
            ..spec()
        }
        .compile()
        .unwrap_err();
        assert!(e.contains("two of"), "{e}");
        // Units are typed: a bad one is refused where the configuration is read.
        for (bad, why) in [("0", "above 0"), ("furlongs", "not a unit")] {
            let e = serde_json::from_str::<ByteUnit>(&format!("\"{bad}\"")).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
        }
        assert!(serde_json::from_str::<TimeUnit>("\"h\"").is_err());
        assert_eq!(
            serde_json::from_str::<TimeUnit>("\"µs\"").unwrap(),
            TimeUnit::Us
        );
        assert_eq!(
            serde_json::from_str::<ByteUnit>("4096").unwrap(),
            ByteUnit::Of(4096)
        );
        assert_eq!(
            serde_json::to_string(&ByteUnit::Of(4096)).unwrap(),
            "\"4096\""
        );
    }
}
