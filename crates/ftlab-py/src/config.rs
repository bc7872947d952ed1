//! Python values into a [`Config`]: a dict (the TOML file's keys, nested dicts for
//! tables), a path to a TOML file, or None, then keyword overrides keyed like `--set`
//! (dotted keys allowed). The layering, the deserialization and every check are the
//! library's (`config::load`); this module only turns Python values into TOML values.

use crate::errors::config_error;
use ftlab::config::{self, Config};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};
use std::path::PathBuf;

/// A Python value as TOML; `None` for Python's None (the key is left unset, so its
/// default applies). `key` names the value in errors.
pub fn to_toml(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>) -> PyResult<Option<toml::Value>> {
    use toml::Value as T;
    if v.is_none() {
        return Ok(None);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Some(T::Boolean(b.is_true())));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Some(T::String(s.to_cow()?.into_owned())));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, item) in d.iter() {
            let k: String = k.extract().map_err(|_| {
                config_error(
                    py,
                    format!("configuration: `{key}`: table keys must be strings"),
                    Some(key),
                )
            })?;
            let sub = format!("{key}.{k}");
            if let Some(val) = to_toml(py, &sub, &item)? {
                t.insert(k, val);
            }
        }
        return Ok(Some(T::Table(t)));
    }
    if v.cast::<PyList>().is_ok() || v.cast::<PyTuple>().is_ok() {
        let mut out = Vec::new();
        for (i, item) in v.try_iter()?.enumerate() {
            let sub = format!("{key}[{i}]");
            match to_toml(py, &sub, &item?)? {
                Some(val) => out.push(val),
                None => {
                    return Err(config_error(
                        py,
                        format!("configuration: `{sub}`: None is not allowed in a list"),
                        Some(key),
                    ))
                }
            }
        }
        return Ok(Some(T::Array(out)));
    }
    if v.cast::<PyFloat>().is_ok() {
        return Ok(Some(T::Float(v.extract::<f64>()?)));
    }
    // Python ints and anything with __index__ (numpy integers).
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Some(T::Integer(i)));
    }
    if v.hasattr("__index__")? {
        return Err(config_error(
            py,
            format!("configuration: `{key}`: {v} does not fit in a 64-bit integer"),
            Some(key),
        ));
    }
    // numpy floats and booleans, and other number-likes.
    let type_name = v.get_type().name()?.to_string();
    if type_name == "bool_" || type_name == "bool" {
        return Ok(Some(T::Boolean(v.is_truthy()?)));
    }
    if v.hasattr("__float__")? {
        return Ok(Some(T::Float(v.extract::<f64>()?)));
    }
    // Paths (os.PathLike).
    if let Ok(p) = v.extract::<PathBuf>() {
        return Ok(Some(T::String(p.display().to_string())));
    }
    Err(config_error(
        py,
        format!(
            "configuration: `{key}`: a value of type `{type_name}` is not a configuration \
             value (use str, int, float, bool, list, dict or a path)"
        ),
        Some(key),
    ))
}

/// Builds the configuration: `config` (None, a dict, or a path to a TOML file), then
/// `overrides` in order (keys as `--set` takes them, dotted for tables).
pub fn build(
    py: Python<'_>,
    config: Option<&Bound<'_, PyAny>>,
    overrides: &[(String, Bound<'_, PyAny>)],
) -> PyResult<Config> {
    let mut flags: Vec<(String, toml::Value)> = Vec::new();
    let mut file: Option<PathBuf> = None;
    match config {
        None => {}
        Some(c) if c.is_none() => {}
        Some(c) => {
            if let Ok(d) = c.cast::<PyDict>() {
                for (k, v) in d.iter() {
                    let k: String = k.extract().map_err(|_| {
                        config_error(py, "configuration: keys must be strings".to_string(), None)
                    })?;
                    if let Some(val) = to_toml(py, &k, &v)? {
                        flags.push((k, val));
                    }
                }
            } else if let Ok(p) = c.extract::<PathBuf>() {
                file = Some(p);
            } else {
                return Err(config_error(
                    py,
                    format!(
                        "config must be a dict, a path to a TOML file or None, not `{}`",
                        c.get_type().name()?
                    ),
                    None,
                ));
            }
        }
    }
    for (k, v) in overrides {
        if let Some(val) = to_toml(py, k, v)? {
            flags.push((k.clone(), val));
        }
    }
    config::load(file.as_deref(), &[], &flags).map_err(|e| config_error(py, e.to_string(), None))
}
