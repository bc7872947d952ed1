//! What the library knows without running: the schemes and their options (from the
//! registry), the JSON Schema of the configuration, and a configuration resolved and
//! checked in full. Each is returned as JSON text; the Python side parses it.

use crate::config;
use crate::errors::{guard, run_error};
use ftlab::registry::{self, Padding, Recovery};
use ftlab_core::options::{OptionMap, OptionsDef};
use pyo3::prelude::*;
use serde_json::{json, Value};

/// Every option of a scheme: name, typed default, help, kind, allowed values, range.
fn options(id: &str, def: &OptionsDef) -> Value {
    // The defaults as typed values: the options resolved from nothing.
    let defaults = (def.resolve)(id, &OptionMap::new()).unwrap_or(Value::Null);
    let fields: Vec<Value> = def
        .fields()
        .into_iter()
        .map(|f| {
            let allowed: Option<Vec<String>> = f.kind.contains('|').then(|| {
                f.kind
                    .split('|')
                    .map(|s| s.trim().trim_matches('"').to_string())
                    .collect()
            });
            json!({
                "name": f.name,
                "default": defaults.get(&f.name).cloned().unwrap_or(Value::Null),
                "default_text": f.default,
                "help": f.help,
                "kind": f.kind,
                "allowed": allowed,
                "minimum": f.minimum,
                "maximum": f.maximum,
                "range": f.range(),
            })
        })
        .collect();
    Value::Array(fields)
}

fn builtin(id: &str) -> bool {
    registry::BUILTIN_FTLS.iter().any(|e| e.id == id)
}

/// Every FTL and buffer with its options, as JSON text: `{"ftl": [...], "buffer": [...]}`.
#[pyfunction]
pub fn schemes() -> PyResult<String> {
    guard("schemes", || {
        let ftls: Vec<Value> = registry::FTLS
            .iter()
            .map(|e| {
                let c = &e.caps;
                let recovery = match c.recovery {
                    Recovery::Always => json!("always"),
                    Recovery::Never => json!("never"),
                    Recovery::WithOption { option, value } => {
                        json!({ "option": option, "value": value })
                    }
                };
                json!({
                    "id": e.id,
                    "description": e.description,
                    "source": e.source,
                    "builtin": builtin(e.id),
                    "block_mapped": c.block_mapped,
                    "demand_paged": c.demand_paged,
                    "merge_queries": c.merge_queries,
                    "recovery": recovery,
                    "options": options(e.id, &e.options),
                })
            })
            .collect();
        let buffers: Vec<Value> = registry::BUFFERS
            .iter()
            .map(|e| {
                json!({
                    "id": e.id,
                    "description": e.description,
                    "source": e.source,
                    "builtin": true,
                    "holds_data": e.holds_data(),
                    "padding": match e.padding {
                        Padding::Never => "never",
                        Padding::Always => "always",
                        Padding::Sometimes => "sometimes",
                    },
                    "options": options(e.id, &e.options),
                })
            })
            .collect();
        Ok(json!({ "ftl": ftls, "buffer": buffers }).to_string())
    })
}

/// The JSON Schema of the configuration, as `ftlab config schema` prints it.
#[pyfunction]
pub fn config_schema() -> PyResult<String> {
    guard("config_schema", || {
        serde_json::to_string_pretty(&ftlab::config::schema())
            .map_err(|e| crate::InternalError::new_err(e.to_string()))
    })
}

/// The configuration checked in full and resolved (scheme option defaults filled in),
/// as the JSON text of the echo a report would carry (with the device).
#[pyfunction]
#[pyo3(signature = (config, overrides))]
pub fn resolve<'py>(
    py: Python<'py>,
    config: Option<Bound<'py, PyAny>>,
    overrides: Vec<(String, Bound<'py, PyAny>)>,
) -> PyResult<String> {
    let cfg = config::build(py, config.as_ref(), &overrides)?;
    guard("resolve", || {
        let r = ftlab::sim::validate(&cfg).map_err(|e| run_error(py, e))?;
        Ok(r.echo.to_string())
    })
}
