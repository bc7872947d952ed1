//! ftlab workloads: streaming trace readers, composable transforms and the synthetic
//! generator.
//!
//! Every reader is an iterator of `Result<Record, TraceError>` that streams its input
//! line by line in constant memory, reusing one line buffer and parsing fields by hand
//! (gzip and zstd inputs are decompressed on the fly, see [`input`]). A bad record is a
//! [`TraceError`] naming the file, line and field. A [`Record`] is a host
//! [`Request`] plus the device (ASU, disk) it was recorded on and its line number; the
//! [`transform`] adapters select and lay out devices, shift, fold, scale, window, sort
//! and replay records before the engine sees them as plain requests.

#![warn(missing_docs)]

pub mod ascii;
pub mod blkparse;
pub mod csv;
pub mod fuzzing;
pub mod input;
pub mod mix;
pub mod msr;
pub mod parse;
pub mod spc;
pub mod stats;
pub mod synthetic;
pub mod transform;
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
        description: "generic delimited text through a column mapping (--columns, [csv] table)",
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
/// names the key.
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

/// Reads records of `format` from an already opened input; `name` names it in errors.
pub fn read_records(
    input: Box<dyn BufRead>,
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
    let name = name.to_string();
    Ok(match format {
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
                    "unknown trace format `{other}` (known: {})",
                    known_formats()
                ),
            ))
        }
    })
}

/// Opens a trace file (plain, `.gz` or `.zst`) in the given format as a record stream.
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
    let input = input::open_input(path).map_err(|e| TraceError {
        file: name.clone(),
        line: 0,
        field: "path",
        why: format!("cannot open: {e}"),
    })?;
    read_records(input, &name, format, opts)
}

/// Opens a trace file in the given format, with default reader settings, as a stream
/// of requests.
pub fn open_trace(path: &Path, format: &str) -> Result<RequestStream, TraceError> {
    let records = open_records(path, format, &ReadOptions::default())?;
    Ok(Box::new(records.map(|r| r.map(|r| r.req))))
}
