//! `ftlab._ftlab`: the Rust half of the ftlab Python package.
//!
//! Everything that simulates, reads traces or checks a configuration is the `ftlab`
//! library; this crate only converts between Python values and the library's types
//! (dicts and keyword arguments into a [`Config`](ftlab::Config), numpy arrays into
//! requests, reports and statistics into JSON text and numpy arrays) and maps the
//! library's errors to Python exceptions. The Python layer (`python/ftlab`) wraps these
//! functions with docstrings, pandas/pyarrow/polars conversions and the `Report` class.
//!
//! The GIL is released while a simulation runs (`run`); an observer reattaches at most
//! every 50 ms (or at every progress callback) to let Python handle signals (Ctrl-C).
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

mod config;
mod errors;
mod info;
mod run;
mod sweep;
mod trace;

create_exception!(
    ftlab,
    ConfigError,
    PyValueError,
    "A configuration could not be loaded or is invalid; the message names the key, the \
     value and what is allowed (`.key` holds the key when one setting is at fault)."
);
create_exception!(
    ftlab,
    TraceError,
    PyValueError,
    "A trace or a workload given as arrays is unreadable or malformed; the message names \
     the file (or `workload`), the line (or row) and the field (`.file`, `.line`, `.field`)."
);
create_exception!(
    ftlab,
    DataLossError,
    PyRuntimeError,
    "The oracle found a violation (data lost, an invariant broken or a failed recovery). \
     Raised only by `run(..., check=True)`; `.report` holds the report up to the failure."
);
create_exception!(
    ftlab,
    InternalError,
    PyRuntimeError,
    "A panic inside the simulator or a scheme: a bug in ftlab, not in the input. The \
     interpreter keeps running; `.report` holds the report so far when one was built."
);

/// The extension module.
#[pymodule]
fn _ftlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("DataLossError", py.get_type::<DataLossError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "EXAMPLE_SCHEME",
        cfg!(feature = "example-scheme"), // the test-only `example` FTL is built in
    )?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(trace::generate, m)?)?;
    m.add_function(wrap_pyfunction!(trace::open_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(info::schemes, m)?)?;
    m.add_function(wrap_pyfunction!(info::config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(info::resolve, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::run_point, m)?)?;
    m.add_class::<sweep::Study>()?;
    m.add_class::<trace::TraceBatches>()?;
    Ok(())
}
