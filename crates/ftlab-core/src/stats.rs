//! The statistics sink of a scheme: named figures, each a counter or a gauge with a
//! unit, reported under `ftl.extra` and `buffer.extra`.
//!
//! Counters count events since the last reset (pages, merges, reads) and add up across
//! the scheme instances of a run: a power loss replaces the FTL and the buffer, and the
//! report must still count what the replaced instances did. Gauges are a state or a
//! setting read at the end (entries cached, log blocks in use, a ratio): the current
//! instance's value stands. A figure that is neither (a ratio of counters) is a gauge
//! over the current instance; its counters are also reported, so a reader can recompute
//! it over the whole run.
//!
//! The named counters every scheme shares (GC, merges, map cache, translation pages)
//! are fields of [`FtlStats`](crate::ftl::FtlStats) and
//! [`BufferStats`](crate::buffer::BufferStats); this sink holds what only some schemes
//! have. The JSON keeps the shape of a plain map, key to number.

use serde::ser::{Serialize, SerializeMap, Serializer};
use std::collections::BTreeMap;

/// Whether a figure adds up across scheme instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Counts events; summed across the instances of a run.
    Counter,
    /// A state, setting or ratio at the end; the current instance's value.
    Gauge,
}

/// One figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure {
    /// Counter or gauge.
    pub kind: Kind,
    /// Unit: `pages`, `blocks`, `merges`, `entries`, `bytes`, `ratio`, ...
    pub unit: &'static str,
    /// Value.
    pub value: f64,
}

/// Named figures of one scheme.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sink {
    figures: BTreeMap<&'static str, Figure>,
}

impl Sink {
    /// Records counter `key` (events since the last reset) in `unit`.
    pub fn counter(&mut self, key: &'static str, unit: &'static str, value: f64) {
        self.figures.insert(
            key,
            Figure {
                kind: Kind::Counter,
                unit,
                value,
            },
        );
    }

    /// Records gauge `key` (a value at the end) in `unit`.
    pub fn gauge(&mut self, key: &'static str, unit: &'static str, value: f64) {
        self.figures.insert(
            key,
            Figure {
                kind: Kind::Gauge,
                unit,
                value,
            },
        );
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.figures.get(key).map(|f| f.value)
    }

    /// The figure of `key`, with its kind and unit.
    pub fn figure(&self, key: &str) -> Option<&Figure> {
        self.figures.get(key)
    }

    /// Whether `key` is recorded.
    pub fn contains_key(&self, key: &str) -> bool {
        self.figures.contains_key(key)
    }

    /// Every figure, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Figure)> {
        self.figures.iter().map(|(k, f)| (*k, f))
    }

    /// Folds in the figures of an earlier instance `o` of the same run: counters add
    /// up; gauges keep this (the current) instance's value, or `o`'s if this one has
    /// none.
    pub fn add_counters(&mut self, o: &Sink) {
        for (k, f) in &o.figures {
            match self.figures.get_mut(k) {
                Some(mine) if mine.kind == Kind::Counter && f.kind == Kind::Counter => {
                    mine.value += f.value;
                }
                Some(_) => {}
                None => {
                    self.figures.insert(k, *f);
                }
            }
        }
    }
}

impl std::ops::Index<&str> for Sink {
    type Output = f64;
    fn index(&self, key: &str) -> &f64 {
        &self
            .figures
            .get(key)
            .unwrap_or_else(|| panic!("no figure `{key}` in the sink"))
            .value
    }
}

impl Serialize for Sink {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.figures.len()))?;
        for (k, f) in &self.figures {
            m.serialize_entry(k, &f.value)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_and_gauges_keep_the_current_value() {
        let mut before = Sink::default();
        before.counter("fillers", "pages", 5.0);
        before.gauge("log_blocks", "blocks", 3.0);
        before.counter("only_before", "pages", 2.0);
        let mut now = Sink::default();
        now.counter("fillers", "pages", 7.0);
        now.gauge("log_blocks", "blocks", 4.0);
        now.add_counters(&before);
        assert_eq!(now["fillers"], 12.0);
        assert_eq!(now["log_blocks"], 4.0);
        assert_eq!(now.get("only_before"), Some(2.0));
        assert_eq!(now.figure("fillers").unwrap().unit, "pages");
        assert_eq!(
            serde_json::to_string(&now).unwrap(),
            r#"{"fillers":12.0,"log_blocks":4.0,"only_before":2.0}"#
        );
    }
}
