//! ftlab workloads: streaming trace readers, composable transforms and the synthetic
//! generator.
//!
//! Every reader is an iterator of `Result<Record, TraceError>` that streams its input
//! line by line in constant memory, reusing one line buffer and parsing fields by hand
//! (gzip, zstd, bzip2 and xz inputs are decompressed on the fly, see [`input`]; the
//! binary vSCSI reader reads fixed records into one buffer, see [`vscsi`]; what the
//! first bytes say, `--format auto` included, is in [`sniff`]). A bad record is a
//! [`TraceError`] naming the file, line and field. A [`Record`] is a host
//! [`Request`] plus the device (ASU, disk) it was recorded on and its line number; the
//! [`transform`] adapters select and lay out devices, shift, fold, scale, window, sort
//! and replay records before the engine sees them as plain requests.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod ascii;
pub mod blkparse;
pub mod csv;
pub mod fs;
pub mod fuzzing;
pub mod input;
pub mod mix;
pub mod msr;
pub mod parse;
pub mod sniff;
pub mod spc;
pub mod stats;
pub mod survey;
pub mod synthetic;
pub mod transform;
pub mod vscsi;
pub mod writer;

use ftlab_core::request::Request;
use serde::{Deserialize, Serialize};
use std::io::BufRead;
use std::path::Path;
use thiserror::Error;

/// A trace record that could not be read.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{file}:{line}: field `{field}`: {why}")]
pub struct TraceError {
    /// The trace file.
    pub file: String,
    /// 1-based line number (0: not about one line).
    pub line: u64,
    /// The field that is wrong.
    pub field: &'static str,
    /// What was found and what was expected.
    pub why: String,
}

/// One request as a trace recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// The host request (arrival, op, byte offset, byte length).
    pub req: Request,
    /// The device, ASU or disk number the request was recorded on (0 when the format
    /// has none).
    pub device: u32,
    /// 1-based line number in the trace (0 for generated requests).
    pub line: u64,
    /// Which pass over the workload this is, from 0 (set by [`transform::Replay`]).
    pub pass: u32,
}

impl Record {
    /// A record of `req` on device 0, line 0, pass 0 (for generated workloads).
    pub fn generated(req: Request) -> Record {
        Record {
            req,
            device: 0,
            line: 0,
            pass: 0,
        }
    }
}

/// The `field` of a [`TraceError`] that reports an unreadable input (an I/O or
/// decompression error) rather than a bad record.
pub const INPUT_FIELD: &str = "input";

impl TraceError {
    /// Whether this is a bad record that `--skip-bad` may skip, rather than an
    /// unreadable input, a missing file or an impossible setting (which always stop).
    pub fn is_record_error(&self) -> bool {
        self.line > 0 && self.field != INPUT_FIELD
    }
}

/// A trace format ftlab reads natively.
#[derive(Clone, Copy, Debug)]
pub struct FormatInfo {
    /// Name used with `--format`.
    pub id: &'static str,
    /// One-line description for `ftlab list`.
    pub description: &'static str,
}

/// Every trace format, in the order `ftlab list` shows them.
pub const FORMATS: &[FormatInfo] = &[
    FormatInfo {
        id: "spc",
        description: "SPC/UMass CSV: ASU,LBA(512 B sectors),size(bytes),opcode r|w,timestamp(s)",
    },
    FormatInfo {
        id: "msr",
        description: "MSR Cambridge CSV: FILETIME(100 ns),host,disk,Read|Write,offset(B),size(B),\
                      response",
    },
    FormatInfo {
        id: "mqsim",
        description: "MQSim ASCII: time_ns device LBA(sectors) size(sectors) type(1 read, 0 write)",
    },
    FormatInfo {
        id: "ssdsim",
        description: "SSDsim ASCII: time_ns ASU LBA(sectors) size(sectors) op(1 read, 0 write)",
    },
    FormatInfo {
        id: "disksim",
        description: "DiskSim ASCII: time_ms devno blkno(512 B) size(blocks) flags(bit 0 = read)",
    },
    FormatInfo {
        id: "blkparse",
        description: "blkparse text: maj,min cpu seq time pid action rwbs sector + count \
                      (blkparse.event = D or Q)",
    },
    FormatInfo {
        id: "csv",
        description: "generic delimited text through a column mapping (--columns by number or \
                      header name, [csv] table)",
    },
    FormatInfo {
        id: "vscsi",
        description: "VMware vSCSI binary trace (vscsiStats, CloudPhysics/SNIA), version 1 \
                      and 2 records",
    },
    FormatInfo {
        id: "auto",
        description: "recognise spc, msr, mqsim, disksim, blkparse or vscsi from the first \
                      lines (the report says which)",
    },
];

/// Settings of the readers that have any (config tables `[csv]` and `[blkparse]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReadOptions {
    /// The generic reader's column mapping.
    pub csv: csv::CsvSpec,
    /// The blkparse reader's settings.
    pub blkparse: blkparse::BlkparseSpec,
}

/// A stream of trace records.
pub type RecordStream = Box<dyn Iterator<Item = Result<Record, TraceError>>>;

/// A stream of host requests.
pub type RequestStream = Box<dyn Iterator<Item = Result<Request, TraceError>>>;

fn known_formats() -> String {
    FORMATS.iter().map(|f| f.id).collect::<Vec<_>>().join(", ")
}

/// Checks a format name and its reader settings without opening anything; the error
/// names the key and its flag.
pub fn check_format(format: &str, opts: &ReadOptions) -> Result<(), String> {
    match format {
        "csv" => opts.csv.compile().map(|_| ()),
        "blkparse" => opts.blkparse.validate(),
        f if FORMATS.iter().any(|k| k.id == f) => Ok(()),
        other => Err(format!(
            "unknown trace format `{other}` (known: {})",
            known_formats()
        )),
    }
}

/// What the first bytes of a trace say: the format (`auto` resolved) and anything the
/// user should know (the format chosen, a shape that does not fit the format given).
#[derive(Clone, Debug, PartialEq)]
pub struct Inspection {
    /// The format the trace is read in.
    pub format: String,
    /// Notes for the report.
    pub notes: Vec<sniff::Note>,
}

/// Resolves `auto` and checks the input against `format` from the first bytes of
/// `input` (which stay in its buffer). Refuses an empty input, and a binary input read
/// as text.
fn look(input: &mut dyn BufRead, name: &str, format: &str) -> Result<Inspection, TraceError> {
    let err = |field: &'static str, why: String| TraceError {
        file: name.to_string(),
        line: 0,
        field,
        why,
    };
    let head = input
        .fill_buf()
        .map_err(|e| err(INPUT_FIELD, format!("read error: {e}")))?;
    if head.is_empty() {
        return Err(err(
            INPUT_FIELD,
            "the input is empty: there is nothing to replay".into(),
        ));
    }
    let whole = false;
    let mut notes = Vec::new();
    let format = if format == "auto" {
        let (f, why) = sniff::guess_format(head, whole).map_err(|why| {
            err(
                "format",
                format!(
                    "--format auto cannot tell the format: {why}; give --format (known: {})",
                    known_formats()
                ),
            )
        })?;
        notes.push(sniff::Note {
            code: "format_auto",
            message: format!("--format auto read {name} as {f}: {why}"),
            hint: Some(format!("--format {f} says so and skips the guess")),
        });
        f.to_string()
    } else {
        format.to_string()
    };
    if format != "vscsi" && sniff::looks_binary(head) {
        let hint = match vscsi::version(head) {
            Some(v) => format!(
                "; it looks like a VMware vSCSI trace (version {v} records): --format vscsi"
            ),
            None => String::new(),
        };
        return Err(err(
            INPUT_FIELD,
            format!(
                "the input is binary, not {format} text (NUL or control bytes in its first \
                 {} bytes){hint}; compressed input is recognised when it is gzip, zstd, bzip2 \
                 or xz",
                head.len().min(sniff::SNIFF_BYTES)
            ),
        ));
    }
    if format == "vscsi" && vscsi::version(head).is_none() {
        return Err(err(
            "format",
            "--format vscsi: the first record has neither a version 1 nor a version 2 \
             vSCSI layout"
                .into(),
        ));
    }
    notes.extend(sniff::check_format(&format, head, whole));
    Ok(Inspection { format, notes })
}

/// Opens `path` and looks at its first bytes: the format (`auto` resolved) and notes for
/// the report. Errors as [`open_records`].
pub fn inspect(path: &Path, format: &str) -> Result<Inspection, TraceError> {
    let mut input = open_trace_input(path)?;
    look(&mut input, &path.display().to_string(), format)
}

/// Opens a trace file, decompressing it as its magic bytes say; an error names the file
/// and the field `path`.
pub(crate) fn open_trace_input(path: &Path) -> Result<Box<dyn std::io::BufRead>, TraceError> {
    input::open_input(path).map_err(|e| TraceError {
        file: path.display().to_string(),
        line: 0,
        field: "path",
        why: format!("cannot open: {e}"),
    })
}

/// Adds a hint to the error of the first data line: that it looks like a header, or
/// like another format than the one given.
struct FirstLineHint {
    inner: RecordStream,
    hint: Option<(u64, String)>,
}

impl Iterator for FirstLineHint {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut item = self.inner.next()?;
        if let Some((line, hint)) = self.hint.take() {
            if let Err(e) = &mut item {
                if e.line == line && e.is_record_error() {
                    e.why.push_str(&hint);
                }
            }
        }
        Some(item)
    }
}

/// The 1-based number of the first data line of `head` and the hint for an error on it:
/// a header, or the shape of another native format than `format`.
fn first_line_hint(head: &[u8], format: &str, opts: &ReadOptions) -> Option<(u64, String)> {
    let first = sniff::first_line(head, false)?;
    let at = first.as_ptr() as usize - head.as_ptr() as usize;
    let line = head[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let header_skipped = format == "csv" && (opts.csv.header || !opts.csv.by_name.is_empty());
    if sniff::looks_like_header(first) && !header_skipped && format != "blkparse" {
        let text = String::from_utf8_lossy(&first[..first.len().min(80)]).into_owned();
        return Some((
            line,
            format!(
                "; line {line} looks like a header (`{text}`): --header skips it (--format \
                 csv, where --columns can name header columns), or delete it"
            ),
        ));
    }
    // The generic reader takes any shape through its mapping: no guess against it.
    if format == "csv" {
        return None;
    }
    match sniff::guess_format(head, false) {
        Ok((g, _)) if g != format && !(g == "mqsim" && format == "ssdsim") => Some((
            line,
            format!("; the first lines look like {g}, not {format}: --format {g} (or auto)"),
        )),
        _ => None,
    }
}

/// Reads records of `format` (`auto`: recognised from the first lines) from an already
/// opened input; `name` names it in errors. An empty input, and a binary one read as
/// text, are errors; the error of a first line that looks like a header says so.
pub fn read_records(
    mut input: Box<dyn BufRead>,
    name: &str,
    format: &str,
    opts: &ReadOptions,
) -> Result<RecordStream, TraceError> {
    let err = |field: &'static str, why: String| TraceError {
        file: name.to_string(),
        line: 0,
        field,
        why,
    };
    let seen = look(&mut input, name, format)?;
    let hint = match seen.format.as_str() {
        "vscsi" => None,
        f => input
            .fill_buf()
            .ok()
            .and_then(|head| first_line_hint(head, f, opts)),
    };
    let stream = open_format(input, name, &seen.format, opts, err)?;
    Ok(match hint {
        Some(h) => Box::new(FirstLineHint {
            inner: stream,
            hint: Some(h),
        }),
        None => stream,
    })
}

fn open_format(
    input: Box<dyn BufRead>,
    name: &str,
    format: &str,
    opts: &ReadOptions,
    err: impl Fn(&'static str, String) -> TraceError,
) -> Result<RecordStream, TraceError> {
    let name = name.to_string();
    Ok(match format {
        "vscsi" => Box::new(vscsi::VscsiReader::new(input, name)),
        "spc" => Box::new(spc::SpcReader::new(input, name)),
        "msr" => Box::new(msr::MsrReader::new(input, name)),
        "mqsim" | "ssdsim" => Box::new(ascii::AsciiReader::new(
            input,
            name,
            ascii::AsciiKind::Mqsim,
        )),
        "disksim" => Box::new(ascii::AsciiReader::new(
            input,
            name,
            ascii::AsciiKind::Disksim,
        )),
        "blkparse" => {
            opts.blkparse.validate().map_err(|e| err("blkparse", e))?;
            Box::new(blkparse::BlkparseReader::new(input, name, &opts.blkparse))
        }
        "csv" => {
            let fmt = opts.csv.compile().map_err(|e| err("csv", e))?;
            Box::new(csv::CsvReader::new(input, name, fmt))
        }
        other => {
            return Err(err(
                "format",
                format!(
                    "unknown trace format `{other}` (--format; known: {})",
                    known_formats()
                ),
            ))
        }
    })
}

/// Opens a trace file (plain, gzip, zstd, bzip2 or xz, recognised by content) in the
/// given format as a record stream.
pub fn open_records(
    path: &Path,
    format: &str,
    opts: &ReadOptions,
) -> Result<RecordStream, TraceError> {
    let name = path.display().to_string();
    check_format(format, opts).map_err(|why| TraceError {
        file: name.clone(),
        line: 0,
        field: "format",
        why,
    })?;
    let input = open_trace_input(path)?;
    read_records(input, &name, format, opts)
}

/// Opens a trace file in the given format, with default reader settings, as a stream
/// of requests.
pub fn open_trace(path: &Path, format: &str) -> Result<RequestStream, TraceError> {
    let records = open_records(path, format, &ReadOptions::default())?;
    Ok(Box::new(records.map(|r| r.map(|r| r.req))))
}
