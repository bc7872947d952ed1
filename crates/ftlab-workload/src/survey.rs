//! What a trace holds, said to a user whose run kept nothing (or too little) of it: a
//! second read of the trace, only on that error path, with the reader's own filters
//! (the blkparse event, the csv filter column) lifted.
//!
//! Choices: at most [`MAX_LINES`] lines are read (the description then says so); a
//! line "matched nothing" when it is not blank, not a comment, not a record and not a
//! bad record (a blkparse event of another action, a summary line, a csv line whose
//! filter value is not listed, a vSCSI command that moves no data); the values shown
//! (devices, actions) are the eight most frequent.

use crate::parse::{split_on, split_ws};
use crate::{input, open_records, ReadOptions, TraceError};
use ftlab_core::request::Op;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

/// Lines read at most.
pub const MAX_LINES: u64 = 20_000_000;

/// What a trace holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Survey {
    /// The format it was read in.
    pub format: String,
    /// Lines read (records, for a binary format).
    pub lines: u64,
    /// Blank and comment lines.
    pub blank: u64,
    /// Good records the reader made (before any transform; reader filters lifted).
    pub records: u64,
    /// Bad records, and the first one's error.
    pub bad: u64,
    /// The first bad record's error.
    pub first_bad: Option<String>,
    /// Records by operation: reads, writes, trims, flushes.
    pub ops: [u64; 4],
    /// Records per device.
    pub devices: BTreeMap<u32, u64>,
    /// Earliest and latest arrival as stamped, ns.
    pub first_ns: Option<u64>,
    /// Latest arrival as stamped, ns.
    pub last_ns: Option<u64>,
    /// blkparse: events per action; csv with a filter column: lines per value.
    pub actions: BTreeMap<String, u64>,
    /// What `actions` counts (`actions`, or the filter column).
    pub actions_of: &'static str,
    /// The read stopped at [`MAX_LINES`].
    pub truncated: bool,
}

impl Survey {
    /// Lines that were neither blank, comments, records nor bad records.
    pub fn matched_nothing(&self) -> u64 {
        self.lines
            .saturating_sub(self.blank + self.records + self.bad)
    }

    /// The survey as indented lines for an error message.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let top = |m: &BTreeMap<String, u64>| {
            let mut v: Vec<(&String, &u64)> = m.iter().collect();
            v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let shown: Vec<String> = v.iter().take(8).map(|(k, n)| format!("{k}: {n}")).collect();
            let more = v.len().saturating_sub(8);
            format!(
                "{}{}",
                shown.join(", "),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                }
            )
        };
        let cut = if self.truncated {
            format!(" (the first {MAX_LINES} lines)")
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  the trace holds{cut}: {} lines, {} records as {} ({} reads, {} writes, {} trims, \
             {} flushes), {} bad, {} blank or comments, {} lines that matched nothing",
            self.lines,
            self.records,
            self.format,
            self.ops[0],
            self.ops[1],
            self.ops[2],
            self.ops[3],
            self.bad,
            self.blank,
            self.matched_nothing()
        );
        if !self.actions.is_empty() {
            let _ = writeln!(s, "  {}: {}", self.actions_of, top(&self.actions));
        }
        if !self.devices.is_empty() {
            let m: BTreeMap<String, u64> = self
                .devices
                .iter()
                .map(|(d, n)| (d.to_string(), *n))
                .collect();
            let _ = writeln!(s, "  devices ({}): {}", self.devices.len(), top(&m));
        }
        if let (Some(a), Some(b)) = (self.first_ns, self.last_ns) {
            let _ = writeln!(
                s,
                "  timestamps: first {:.6} s, last {:.6} s as stamped (span {:.6} s)",
                a as f64 / 1e9,
                b as f64 / 1e9,
                (b - a) as f64 / 1e9
            );
        }
        if let Some(e) = &self.first_bad {
            let _ = writeln!(s, "  first bad record: {e}");
        }
        s
    }
}

fn op_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Trim => 2,
        Op::Flush => 3,
    }
}

/// Reads the trace at `path` once more to say what it holds (see the module docs).
pub fn survey(path: &Path, format: &str, opts: &ReadOptions) -> Result<Survey, TraceError> {
    let seen = crate::inspect(path, format)?;
    let format = seen.format;
    let mut s = Survey {
        format: format.clone(),
        ..Survey::default()
    };
    let mut relaxed = opts.clone();
    let filter_col = relaxed.csv.filter_column.take();
    relaxed.csv.filter_values.clear();
    let binary = format == "vscsi";
    let mut stream = open_records(path, &format, &relaxed)?;
    let mut limit = MAX_LINES;
    for item in stream.by_ref() {
        limit -= 1;
        if limit == 0 {
            s.truncated = true;
            break;
        }
        match item {
            Ok(r) => {
                s.records += 1;
                s.ops[op_index(r.req.op)] += 1;
                *s.devices.entry(r.device).or_insert(0) += 1;
                let t = r.req.arrival.0;
                s.first_ns = Some(s.first_ns.map_or(t, |f| f.min(t)));
                s.last_ns = Some(s.last_ns.map_or(t, |l| l.max(t)));
                if binary {
                    s.lines = r.line;
                }
            }
            Err(e) if e.is_record_error() => {
                s.bad += 1;
                if s.first_bad.is_none() {
                    s.first_bad = Some(e.to_string());
                }
            }
            Err(e) => return Err(e),
        }
    }
    if binary {
        return Ok(s);
    }
    // The lines themselves: count, blank or comment, and the action or filter values.
    let name = path.display().to_string();
    let mut input = input::open_input(path).map_err(|e| TraceError {
        file: name.clone(),
        line: 0,
        field: "path",
        why: format!("cannot open: {e}"),
    })?;
    let comment = if format == "csv" {
        opts.csv.comment.as_bytes().to_vec()
    } else {
        b"#".to_vec()
    };
    let delim = match opts.csv.delimiter.as_str() {
        "tab" => Some(b'\t'),
        d if d.len() == 1 && d != " " => Some(d.as_bytes()[0]),
        _ => None,
    };
    s.actions_of = if format == "blkparse" {
        "actions"
    } else {
        "values of the filter column"
    };
    let mut buf = Vec::with_capacity(256);
    let mut n = 0u64;
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => break,
        }
        n += 1;
        if n > MAX_LINES {
            s.truncated = true;
            n -= 1;
            break;
        }
        let t = buf.trim_ascii();
        if t.is_empty() || (!comment.is_empty() && t.starts_with(&comment)) {
            s.blank += 1;
            continue;
        }
        let value = if format == "blkparse" {
            let mut f = split_ws(t);
            match f.next() {
                Some(d) if d[0].is_ascii_digit() => f.nth(4),
                _ => None,
            }
        } else if let (true, Some(c)) = (format == "csv", filter_col) {
            match delim {
                Some(d) => split_on(t, d).nth(c as usize),
                None => split_ws(t).nth(c as usize),
            }
        } else {
            None
        };
        if let Some(v) = value {
            let k = String::from_utf8_lossy(v).into_owned();
            *s.actions.entry(k).or_insert(0) += 1;
        }
    }
    s.lines = n;
    if format == "csv" && (opts.csv.header || !opts.csv.by_name.is_empty()) {
        s.blank += 1; // the header line
    }
    Ok(s)
}
