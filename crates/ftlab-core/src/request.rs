//! Host requests, as workloads produce them and the engine consumes them.

use crate::units::Nanos;
use serde::Serialize;

/// What a host request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// Discard `len` bytes at `offset` (whole pages only; see the engine).
    Trim,
    /// Flush the write cache (offset and length are ignored).
    Flush,
}

/// One host I/O request in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Arrival time.
    pub arrival: Nanos,
    /// Operation.
    pub op: Op,
    /// Byte offset in the logical address space.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}
