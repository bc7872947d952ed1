//! [`AutoOr`]: an option that is either `auto` (the scheme derives the value from the
//! geometry) or a number the user gives, written as users have always written it:
//! `log_blocks = "auto"` or `log_blocks = 2`.

use ftlab_core::options::JsonSchema;
use serde::de::{self, IntoDeserializer, Unexpected, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

/// `auto` or a given value.
///
/// Serialised as the text `"auto"` or as the value itself. Read from `"auto"`, from a
/// number, or from a number written as text (`"2"`). Its schema is inlined, so a
/// `#[schemars(range(...))]` on the field bounds the given value (`auto` is not a
/// number and is never out of range).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum AutoOr<T> {
    /// The scheme derives the value (see the option's help).
    #[default]
    Auto,
    /// This value.
    Value(T),
}

impl<T> From<T> for AutoOr<T> {
    fn from(v: T) -> Self {
        AutoOr::Value(v)
    }
}

impl<T> AutoOr<T> {
    /// The given value, `None` for `auto`.
    pub fn value(self) -> Option<T> {
        match self {
            AutoOr::Auto => None,
            AutoOr::Value(v) => Some(v),
        }
    }

    /// The given value, or `auto`'s value for `auto`.
    pub fn unwrap_or(self, auto: T) -> T {
        self.value().unwrap_or(auto)
    }
}

impl<T: fmt::Display> fmt::Display for AutoOr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutoOr::Auto => f.write_str("auto"),
            AutoOr::Value(v) => v.fmt(f),
        }
    }
}

impl<T: Serialize> Serialize for AutoOr<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AutoOr::Auto => s.serialize_str("auto"),
            AutoOr::Value(v) => v.serialize(s),
        }
    }
}

impl<'de, T> Deserialize<'de> for AutoOr<T>
where
    T: Deserialize<'de> + FromStr,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + FromStr> Visitor<'de> for V<T> {
            type Value = AutoOr<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`auto` or a number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AutoOr<T>, E> {
                T::deserialize(v.into_deserializer()).map(AutoOr::Value)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AutoOr<T>, E> {
                T::deserialize(v.into_deserializer()).map(AutoOr::Value)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<AutoOr<T>, E> {
                T::deserialize(v.into_deserializer()).map(AutoOr::Value)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AutoOr<T>, E> {
                match v.trim() {
                    "auto" => Ok(AutoOr::Auto),
                    t => t
                        .parse::<T>()
                        .map(AutoOr::Value)
                        .map_err(|_| E::invalid_value(Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<T: JsonSchema> JsonSchema for AutoOr<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("AutoOr_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let inner = generator.subschema_for::<T>();
        match inner.get("type") {
            Some(t) => schemars::json_schema!({
                "type": ["string", t],
                "anyOf": [{ "const": "auto" }, inner],
            }),
            None => schemars::json_schema!({
                "anyOf": [{ "const": "auto" }, inner],
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AutoOr;
    use ftlab_core::options::{from_pairs, JsonSchema, OptionsDef};
    use serde::{Deserialize, Serialize};

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    struct Opts {
        /// Some count.
        #[schemars(range(min = 1))]
        count: AutoOr<u32>,
        /// Some share.
        share: AutoOr<f64>,
    }

    #[test]
    fn reads_auto_numbers_and_quoted_numbers() {
        let o: Opts = from_pairs("t", &[]).unwrap();
        assert_eq!(o, Opts::default());
        let o: Opts = from_pairs("t", &[("count", "2"), ("share", "2.5")]).unwrap();
        assert_eq!((o.count, o.share), (AutoOr::Value(2), AutoOr::Value(2.5)));
        let o: Opts = from_pairs("t", &[("count", "\"7\""), ("share", "auto")]).unwrap();
        assert_eq!((o.count, o.share), (AutoOr::Value(7), AutoOr::Auto));
        assert_eq!(o.count.to_string(), "7");
        assert_eq!(o.share.to_string(), "auto");
    }

    #[test]
    fn refuses_other_text_negative_numbers_and_the_range() {
        for (v, why) in [
            ("many", "`auto` or a number"),
            ("-1", "u32"),
            ("0", "at least 1"),
        ] {
            let e = from_pairs::<Opts>("t", &[("count", v)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`count` = `{v}`")) && e.contains(why),
                "{e}"
            );
        }
    }

    #[test]
    fn listing_shows_auto_as_the_default_and_the_range() {
        let f = OptionsDef::of::<Opts>().fields();
        assert_eq!(f[0].name, "count");
        assert_eq!(f[0].default, "auto");
        assert_eq!(f[0].help, "Some count.");
        assert_eq!(f[0].range().as_deref(), Some("at least 1"));
        assert_eq!(f[0].kind, "string or integer");
        assert_eq!(f[1].kind, "string or number");
    }
}
