//! Scheme options: the typed settings of one FTL or buffer.
//!
//! Each scheme declares its options as a struct (serde + [`JsonSchema`]) whose doc
//! comments are the help text, whose `Default` gives the defaults and whose
//! `#[schemars(range(...))]` attributes give the allowed ranges. [`resolve`] checks what
//! a user gave against it: an unknown key is an error that lists the known ones, a value
//! of the wrong type or out of range names the key, the value and what is allowed. The
//! listings (`ftlab list`, `docs/schemes.md`) and the JSON Schema are generated from the
//! same struct through [`OptionsDef`], so help, defaults and checks cannot drift.

use crate::geometry::Geometry;
use crate::nand::Latencies;
pub use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Debug;
use thiserror::Error;

/// The typed options of one scheme (any struct that derives these traits).
pub trait Options:
    Serialize + DeserializeOwned + JsonSchema + Default + Clone + Debug + 'static
{
}

impl<T> Options for T where
    T: Serialize + DeserializeOwned + JsonSchema + Default + Clone + Debug + 'static
{
}

/// Options as given by a user: key to value (from TOML, `--set` or Python).
pub type OptionMap = serde_json::Map<String, Value>;

/// What a scheme constructor gets besides its options.
#[derive(Clone, Copy)]
pub struct BuildContext<'a> {
    /// Device geometry.
    pub geo: &'a Geometry,
    /// Operation latencies.
    pub latencies: Latencies,
    /// The run's seed, for schemes that randomise.
    pub seed: u64,
}

/// The JSON Schema of an options type (doc comments, defaults, ranges).
pub fn schema_of<O: Options>() -> schemars::Schema {
    schemars::SchemaGenerator::default().into_root_schema_for::<O>()
}

/// Checks `given` against `O`: unknown keys, types, and the ranges its schema states.
/// Keys missing from `given` take their defaults.
pub fn resolve<O: Options>(scheme: &str, given: &OptionMap) -> Result<O, SchemeError> {
    let shown = |key: &str| match given.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    let parsed: O =
        serde_path_to_error::deserialize(Value::Object(given.clone())).map_err(|e| {
            let path = e.path().to_string();
            let why = e.into_inner().to_string();
            if let Some(rest) = why.strip_prefix("unknown field `") {
                let key = rest.split('`').next().unwrap_or_default().to_string();
                let known: Vec<String> = fields(&schema_of::<O>())
                    .into_iter()
                    .map(|f| f.name)
                    .collect();
                SchemeError::UnknownOption {
                    scheme: scheme.into(),
                    key,
                    known: if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    },
                }
            } else {
                let key = path.split('.').next().unwrap_or_default().to_string();
                let why = why.split(" at line ").next().unwrap_or(&why).to_string();
                SchemeError::BadValue {
                    scheme: scheme.into(),
                    value: shown(&key),
                    key,
                    why,
                }
            }
        })?;
    let resolved = serde_json::to_value(&parsed).expect("options serialise");
    for f in fields(&schema_of::<O>()) {
        let Some(x) = resolved.get(&f.name).and_then(Value::as_f64) else {
            continue;
        };
        let low = f.minimum.is_some_and(|m| x < m);
        let high = f.maximum.is_some_and(|m| x > m);
        if low || high {
            return Err(SchemeError::BadValue {
                scheme: scheme.into(),
                value: shown(&f.name),
                why: format!("must be {}", f.range().unwrap_or_default()),
                key: f.name,
            });
        }
    }
    Ok(parsed)
}

/// [`resolve`] from `key = value` text pairs (values read as TOML: `5`, `true`, `late`
/// or `"16MiB"`): the form tests and examples use.
pub fn from_pairs<O: Options>(scheme: &str, pairs: &[(&str, &str)]) -> Result<O, SchemeError> {
    let map = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), value_of_text(v)))
        .collect();
    resolve(scheme, &map)
}

/// A text value as a typed JSON value: a number, a boolean, else the text itself.
pub fn value_of_text(text: &str) -> Value {
    let t = text.trim();
    if let Ok(b) = t.parse::<bool>() {
        return Value::Bool(b);
    }
    if let Ok(i) = t.parse::<i64>() {
        return Value::from(i);
    }
    if let Ok(u) = t.parse::<u64>() {
        return Value::from(u);
    }
    if let Some(n) = t.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
        return Value::Number(n);
    }
    Value::String(t.trim_matches('"').to_string())
}

/// One option as the listings show it, read off the schema.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionField {
    /// Key.
    pub name: String,
    /// Default, as TOML would show it.
    pub default: String,
    /// Help: the field's doc comment.
    pub help: String,
    /// Type: `integer`, `number`, `boolean`, `string`, or the allowed values `a | b`.
    pub kind: String,
    /// Smallest allowed value.
    pub minimum: Option<f64>,
    /// Largest allowed value.
    pub maximum: Option<f64>,
}

impl OptionField {
    /// What is allowed, for listings: the values of a choice (`late, early`) or the
    /// type, then the range if one is declared (`integer; at least 1`).
    pub fn allowed(&self) -> String {
        let mut parts = vec![self.kind.replace(" | ", ", ")];
        parts.extend(self.range());
        parts.join("; ")
    }

    /// Whether the option is a choice among named values.
    pub fn is_choice(&self) -> bool {
        self.kind.contains(" | ")
    }

    /// The allowed range as text (`at least 1`, `from 0 to 100`), if one is declared.
    pub fn range(&self) -> Option<String> {
        let n = |x: f64| {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{}", x as i64)
            } else {
                format!("{x}")
            }
        };
        match (self.minimum, self.maximum) {
            (Some(a), Some(b)) => Some(format!("from {} to {}", n(a), n(b))),
            (Some(a), None) => Some(format!("at least {}", n(a))),
            (None, Some(b)) => Some(format!("at most {}", n(b))),
            (None, None) => None,
        }
    }
}

fn deref<'a>(root: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix("#/")
            .map(|p| {
                p.split('/')
                    .fold(root, |node, part| node.get(part).unwrap_or(&Value::Null))
            })
            .filter(|t| !t.is_null())
            .unwrap_or(v),
        None => v,
    }
}

fn kind_of(root: &Value, prop: &Value) -> String {
    let p = deref(root, prop);
    let consts = |list: &Value| -> Option<Vec<String>> {
        list.as_array()?
            .iter()
            .map(|x| {
                let x = deref(root, x);
                x.get("const")
                    .or_else(|| x.get("enum").and_then(|e| e.get(0)))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect()
    };
    if let Some(values) = p.get("enum").and_then(|e| {
        e.as_array().map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
    }) {
        return values.join(" | ");
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(values) = p.get(key).and_then(consts) {
            return values.join(" | ");
        }
    }
    match p.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "value".into(),
    }
}

/// The options an options schema declares, sorted by key.
pub fn fields(schema: &schemars::Schema) -> Vec<OptionField> {
    let root = schema.as_value();
    let Some(props) = root.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| {
            let default = match prop.get("default") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => "none".into(),
                Some(v) => v.to_string(),
            };
            let help = prop
                .get("description")
                .or_else(|| deref(root, prop).get("description"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            OptionField {
                name: name.clone(),
                default,
                help,
                kind: kind_of(root, prop),
                minimum: prop.get("minimum").and_then(Value::as_f64),
                maximum: prop.get("maximum").and_then(Value::as_f64),
            }
        })
        .collect()
}

/// One scheme's options type, for code that handles every scheme alike (the registry,
/// listings, the JSON Schema, the configuration echo).
#[derive(Clone, Copy)]
pub struct OptionsDef {
    /// The JSON Schema of the options.
    pub schema: fn() -> schemars::Schema,
    /// Checks given options ([`resolve`]) and returns them resolved, defaults filled in.
    pub resolve: fn(&str, &OptionMap) -> Result<Value, SchemeError>,
}

fn resolve_value<O: Options>(scheme: &str, given: &OptionMap) -> Result<Value, SchemeError> {
    Ok(serde_json::to_value(resolve::<O>(scheme, given)?).expect("options serialise"))
}

impl OptionsDef {
    /// The definition of options type `O`.
    pub const fn of<O: Options>() -> OptionsDef {
        OptionsDef {
            schema: schema_of::<O>,
            resolve: resolve_value::<O>,
        }
    }

    /// The declared options, for listings.
    pub fn fields(&self) -> Vec<OptionField> {
        fields(&(self.schema)())
    }
}

/// A scheme without options.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// An error about option `key` of `scheme` (for checks that need the geometry).
pub fn bad(
    scheme: &str,
    key: &str,
    value: impl std::fmt::Display,
    why: impl Into<String>,
) -> SchemeError {
    SchemeError::BadValue {
        scheme: scheme.into(),
        key: key.into(),
        value: value.to_string(),
        why: why.into(),
    }
}

/// An error saying `scheme` cannot run on this geometry.
pub fn geometry_error(scheme: &str, why: impl Into<String>) -> SchemeError {
    SchemeError::Geometry {
        scheme: scheme.into(),
        why: why.into(),
    }
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

#[cfg(test)]
mod typed_tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        /// Late.
        Late,
        /// Early.
        Early,
    }

    /// Options of a test scheme.
    #[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    struct Opts {
        /// GC runs while fewer than this many blocks are free.
        #[schemars(range(min = 1))]
        gc_threshold: u32,
        /// A share.
        #[schemars(range(min = 0.0, max = 1.0))]
        share: f64,
        /// How it merges.
        mode: Mode,
        /// Buffer size.
        size: crate::units::ByteSize,
    }

    impl Default for Opts {
        fn default() -> Self {
            Opts {
                gc_threshold: 3,
                share: 0.5,
                mode: Mode::Late,
                size: crate::units::ByteSize(16 << 20),
            }
        }
    }

    #[test]
    fn defaults_fill_in_and_values_override() {
        let o: Opts = from_pairs("t", &[]).unwrap();
        assert_eq!(o, Opts::default());
        let o: Opts = from_pairs(
            "t",
            &[("gc_threshold", "5"), ("mode", "early"), ("size", "1MiB")],
        )
        .unwrap();
        assert_eq!(
            (o.gc_threshold, o.mode, o.size.0),
            (5, Mode::Early, 1 << 20)
        );
    }

    #[test]
    fn errors_name_the_key_the_value_and_what_is_allowed() {
        let e = from_pairs::<Opts>("t", &[("gc_treshold", "5")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown option `gc_treshold`")
                && e.contains("gc_threshold, mode, share, size"),
            "{e}"
        );
        let e = from_pairs::<Opts>("t", &[("gc_threshold", "0")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`gc_threshold` = `0`") && e.contains("at least 1"),
            "{e}"
        );
        let e = from_pairs::<Opts>("t", &[("share", "1.5")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("from 0 to 1"), "{e}");
        let e = from_pairs::<Opts>("t", &[("mode", "sideways")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`mode` = `sideways`") && e.contains("late"),
            "{e}"
        );
        let e = from_pairs::<Opts>("t", &[("gc_threshold", "many")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`gc_threshold` = `many`"), "{e}");
    }

    #[test]
    fn listings_come_from_the_schema() {
        let f = OptionsDef::of::<Opts>().fields();
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["gc_threshold", "mode", "share", "size"]);
        assert_eq!(f[0].default, "3");
        assert_eq!(
            f[0].help,
            "GC runs while fewer than this many blocks are free."
        );
        assert_eq!(f[0].range().as_deref(), Some("at least 1"));
        assert_eq!(f[1].kind, "late | early");
        assert_eq!(f[1].default, "late");
        assert_eq!(f[3].default, "16MiB");
        let v = (OptionsDef::of::<Opts>().resolve)("t", &OptionMap::new()).unwrap();
        assert_eq!(v["size"], "16MiB");
    }
}
