//! Scheme options: the `key = value` settings of one FTL or buffer.
//!
//! Each scheme declares its options as [`OptionSpec`]s (name, default, help). Given
//! values are checked against the declaration: an unknown key is an error that lists
//! the known ones, and a value that does not parse names the key and the expected type.
//! The resolved map (defaults filled in) is echoed in every report's `config`.

use std::collections::BTreeMap;
use std::str::FromStr;
use thiserror::Error;

/// One declared option of a scheme.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// Key, e.g. `gc_threshold`.
    pub name: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// One-line help for `ftlab list`.
    pub help: &'static str,
}

/// A scheme option or scheme construction was refused.
#[derive(Debug, Error, PartialEq)]
pub enum SchemeError {
    /// A key the scheme does not declare.
    #[error("{scheme}: unknown option `{key}` (known: {known})")]
    UnknownOption {
        /// Scheme id.
        scheme: String,
        /// The key given.
        key: String,
        /// The declared keys, comma-separated.
        known: String,
    },
    /// A value that does not parse or is out of range.
    #[error("{scheme}: option `{key}` = `{value}`: {why}")]
    BadValue {
        /// Scheme id.
        scheme: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What is expected.
        why: String,
    },
    /// The scheme cannot run on this geometry.
    #[error("{scheme}: {why}")]
    Geometry {
        /// Scheme id.
        scheme: String,
        /// What is wrong and which option would fix it.
        why: String,
    },
}

/// Resolved options of one scheme instance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemeOptions {
    scheme: String,
    values: BTreeMap<String, String>,
}

impl SchemeOptions {
    /// Checks `given` against `specs` and fills in defaults.
    pub fn resolve(
        scheme: &str,
        specs: &[OptionSpec],
        given: &BTreeMap<String, String>,
    ) -> Result<Self, SchemeError> {
        for key in given.keys() {
            if !specs.iter().any(|s| s.name == key) {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(SchemeError::UnknownOption {
                    scheme: scheme.to_string(),
                    key: key.clone(),
                    known: if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    },
                });
            }
        }
        let values = specs
            .iter()
            .map(|s| {
                let v = given
                    .get(s.name)
                    .cloned()
                    .unwrap_or_else(|| s.default.into());
                (s.name.to_string(), v)
            })
            .collect();
        Ok(SchemeOptions {
            scheme: scheme.to_string(),
            values,
        })
    }

    /// The scheme these options belong to.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// A typed option value. Panics if the key was not declared (a scheme bug).
    pub fn get<T: FromStr>(&self, key: &str) -> Result<T, SchemeError> {
        let raw = self
            .values
            .get(key)
            .unwrap_or_else(|| panic!("{}: option `{key}` read but not declared", self.scheme));
        raw.trim().parse::<T>().map_err(|_| SchemeError::BadValue {
            scheme: self.scheme.clone(),
            key: key.to_string(),
            value: raw.clone(),
            why: format!("expected {}", std::any::type_name::<T>()),
        })
    }

    /// An error about option `key` (for range checks in constructors).
    pub fn bad(&self, key: &str, why: impl Into<String>) -> SchemeError {
        SchemeError::BadValue {
            scheme: self.scheme.clone(),
            key: key.into(),
            value: self.values.get(key).cloned().unwrap_or_default(),
            why: why.into(),
        }
    }

    /// An error saying the scheme cannot run on this geometry.
    pub fn geometry_error(&self, why: impl Into<String>) -> SchemeError {
        SchemeError::Geometry {
            scheme: self.scheme.clone(),
            why: why.into(),
        }
    }

    /// The resolved key/value map, defaults included.
    pub fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[OptionSpec] = &[OptionSpec {
        name: "gc_threshold",
        default: "3",
        help: "x",
    }];

    #[test]
    fn defaults_and_overrides() {
        let o = SchemeOptions::resolve("page", SPECS, &BTreeMap::new()).unwrap();
        assert_eq!(o.get::<u32>("gc_threshold").unwrap(), 3);
        let given = BTreeMap::from([("gc_threshold".to_string(), "5".to_string())]);
        let o = SchemeOptions::resolve("page", SPECS, &given).unwrap();
        assert_eq!(o.get::<u32>("gc_threshold").unwrap(), 5);
    }

    #[test]
    fn unknown_and_bad_values() {
        let given = BTreeMap::from([("gc_treshold".to_string(), "5".to_string())]);
        let e = SchemeOptions::resolve("page", SPECS, &given).unwrap_err();
        assert!(
            e.to_string().contains("unknown option `gc_treshold`"),
            "{e}"
        );
        assert!(e.to_string().contains("gc_threshold"), "{e}");
        let given = BTreeMap::from([("gc_threshold".to_string(), "many".to_string())]);
        let o = SchemeOptions::resolve("page", SPECS, &given).unwrap();
        let e = o.get::<u32>("gc_threshold").unwrap_err();
        assert!(e.to_string().contains("`many`"), "{e}");
    }
}
