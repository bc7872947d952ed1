//! ftlab workloads: streaming trace readers and the synthetic generator.
//!
//! Every workload is an iterator of `Result<Request, TraceError>`; readers stream their
//! input line by line in constant memory. A bad record is a [`TraceError`] naming the
//! file, line and field.

#![warn(missing_docs)]

pub mod spc;
pub mod synthetic;

use thiserror::Error;

/// A trace record that could not be read.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{file}:{line}: field `{field}`: {why}")]
pub struct TraceError {
    /// The trace file.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// The field that is wrong.
    pub field: &'static str,
    /// What was found and what was expected.
    pub why: String,
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
pub const FORMATS: &[FormatInfo] = &[FormatInfo {
    id: "spc",
    description: "SPC/UMass CSV: ASU,LBA(512 B sectors),size(bytes),opcode r|w,timestamp(s)",
}];

/// A stream of host requests.
pub type RequestStream = Box<dyn Iterator<Item = Result<ftlab_core::request::Request, TraceError>>>;

/// Opens a trace file in the given format as a stream.
pub fn open_trace(path: &std::path::Path, format: &str) -> Result<RequestStream, TraceError> {
    let name = path.display().to_string();
    let err = |field: &'static str, why: String| TraceError {
        file: name.clone(),
        line: 0,
        field,
        why,
    };
    let file = std::fs::File::open(path).map_err(|e| err("path", format!("cannot open: {e}")))?;
    let input = std::io::BufReader::with_capacity(1 << 16, file);
    match format {
        "spc" => Ok(Box::new(spc::SpcReader::new(input, name))),
        other => {
            let known: Vec<&str> = FORMATS.iter().map(|f| f.id).collect();
            Err(err(
                "format",
                format!(
                    "unknown trace format `{other}` (known: {})",
                    known.join(", ")
                ),
            ))
        }
    }
}
