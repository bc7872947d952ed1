//! The library's errors as Python exceptions.

use crate::{ConfigError, InternalError, TraceError};
use ftlab::RunError;
use pyo3::prelude::*;

/// A [`ConfigError`] with `.key` set (None when no one key is at fault).
pub fn config_error(py: Python<'_>, msg: String, key: Option<&str>) -> PyErr {
    let err = ConfigError::new_err(msg);
    // Setting an attribute on a fresh exception object cannot fail in practice; if it
    // does, the exception is still raised without it.
    let _ = err.value(py).setattr("key", key);
    err
}

/// A [`TraceError`] with `.file`, `.line` (None when not about one line) and `.field`.
pub fn trace_error(
    py: Python<'_>,
    msg: String,
    file: &str,
    line: Option<u64>,
    field: &str,
) -> PyErr {
    let err = TraceError::new_err(msg);
    let v = err.value(py);
    let _ = v.setattr("file", file);
    let _ = v.setattr("line", line);
    let _ = v.setattr("field", field);
    err
}

/// The Python exception for a [`RunError`]: bad configuration is a `ConfigError`, a
/// bad trace record or request a `TraceError`, a panic an `InternalError`.
pub fn run_error(py: Python<'_>, e: RunError) -> PyErr {
    let msg = e.to_string();
    match e {
        RunError::Config(_) | RunError::Geometry(_) | RunError::Scheme(_) => {
            config_error(py, msg, None)
        }
        RunError::Setting { key, .. } => config_error(py, msg, Some(key)),
        RunError::Trace(t) => {
            trace_error(py, msg, &t.file, Some(t.line).filter(|&l| l > 0), t.field)
        }
        RunError::Input(sim) => {
            let request = match sim {
                ftlab_core::engine::SimError::OutOfRange { request, .. } => Some(request),
                _ => None,
            };
            trace_error(py, msg, "workload", request, "offset")
        }
        // The workload kept nothing (or too little) of the trace: a trace problem.
        RunError::Workload(_) => trace_error(py, msg, "workload", None, "workload"),
        RunError::Internal { .. } => InternalError::new_err(msg),
        // `run` raises the Python error that asked for the stop before it gets here;
        // a stop with no such error is a keyboard interrupt.
        RunError::Cancelled { .. } => pyo3::exceptions::PyKeyboardInterrupt::new_err(msg),
    }
}

/// The text of a panic payload.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `f`, turning a panic into an [`InternalError`] instead of unwinding into
/// Python (PyO3 would raise its `PanicException`, which is not an `Exception`).
pub fn guard<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(InternalError::new_err(format!(
            "internal error in {what} (a bug in ftlab, please report it): {}",
            panic_message(p.as_ref())
        ))),
    }
}
