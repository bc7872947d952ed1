//! The run configuration: one typed [`Config`] for every setting of a run. TOML files
//! (`--config`), `--set key=value` (dotted for tables), command-line flags and the
//! Python package all deserialize into it, in layers ([`load`]); an error names the key,
//! the value and what is allowed. The resolved configuration is echoed in every report,
//! so a report says how to rerun it; `ftlab config show` prints it as TOML and `ftlab
//! config schema` prints its JSON Schema ([`schema`]).

use crate::timeline::TimelineEvery;
use ftlab_core::options::OptionMap;
use ftlab_core::units::ByteSize;
use ftlab_workload::blkparse::BlkparseSpec;
use ftlab_workload::csv::CsvSpec;
use ftlab_workload::mix::MixConfig;
use ftlab_workload::synthetic::SyntheticConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;
use thiserror::Error;

/// The timing model (`timing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimingModel {
    /// The papers' model: one flash operation at a time, requests first-come
    /// first-served.
    Serial,
    /// Channels x dies: array time on the die, page transfer on the channel; 8 channels
    /// x 4 dies unless `channels` and `dies` say otherwise.
    Parallel,
}

/// Channels of the default parallel organisation: MQSim's default SSD (8 channels of
/// 4 chips each), a common multi-die device of the last decade. Serial timing keeps
/// the papers' one chip.
pub const DEFAULT_CHANNELS: u32 = 8;

/// Dies per channel of the default parallel organisation (see [`DEFAULT_CHANNELS`]).
pub const DEFAULT_DIES: u32 = 4;

impl Config {
    /// The channels and dies per channel the device has: as set, else
    /// [`DEFAULT_CHANNELS`] x [`DEFAULT_DIES`] under parallel timing and 1 x 1 under
    /// serial timing (where they play no part).
    pub fn organisation(&self) -> (u32, u32) {
        let (c, d) = match self.timing {
            TimingModel::Serial => (1, 1),
            TimingModel::Parallel => (DEFAULT_CHANNELS, DEFAULT_DIES),
        };
        (self.channels.unwrap_or(c), self.dies.unwrap_or(d))
    }
}

/// How much the run checks (`verify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerifyLevel {
    /// Every host read checked against the last write; everything read back at the end.
    On,
    /// No checks.
    Off,
    /// As `on`, plus the deep invariant checks every `deep_every` requests.
    Deep,
}

/// What the device holds before the measured workload (`precondition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Precondition {
    /// A fresh device.
    None,
    /// Every logical page written once, then the counters reset.
    Fill,
    /// Every logical page the workload reads or writes (one pass of it, after its
    /// transforms) written once, then the counters reset: a short excerpt of a trace
    /// then reads data that exists, as it did on the traced system.
    Footprint,
}

/// How `fold` brings addresses beyond the capacity into it (`fold_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FoldMode {
    /// Wrap around.
    Modulo,
    /// Pack the distinct blocks the trace touches at the start of the space.
    Compact,
}

/// How replayed devices share the address space (`device_layout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceLayout {
    /// Overlapping: every device's offsets land in the same space.
    Shared,
    /// Each device its own region, one after the other.
    SideBySide,
}

/// How a seed is written: an integer where TOML can hold it (below 2^63), otherwise a
/// string of decimal digits, since TOML integers are signed 64-bit. Either form is
/// read back, so every seed a run or the swarm prints replays with the command it
/// prints (a swarm draws seeds from the whole 64-bit range).
pub mod seed_repr {
    use schemars::JsonSchema;
    use serde::{de, Deserializer, Serializer};

    /// The accepted forms, for the JSON Schema.
    #[derive(JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    pub enum Repr {
        /// A seed below 2^63 (any seed, in JSON).
        Int(u64),
        /// Any seed, as decimal digits.
        Digits(String),
    }

    /// Writes `seed` as an integer below 2^63, as a string from there on.
    pub fn serialize<S: Serializer>(seed: &u64, s: S) -> Result<S::Ok, S::Error> {
        if i64::try_from(*seed).is_ok() {
            s.serialize_u64(*seed)
        } else {
            s.serialize_str(&seed.to_string())
        }
    }

    /// The seed as a TOML value (for flags built by hand).
    pub fn to_toml(seed: u64) -> toml::Value {
        match i64::try_from(seed) {
            Ok(i) => toml::Value::Integer(i),
            Err(_) => toml::Value::String(seed.to_string()),
        }
    }

    /// Reads a non-negative integer or a string of decimal digits up to 2^64-1.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_any(SeedVisitor)
    }

    struct SeedVisitor;

    impl de::Visitor<'_> for SeedVisitor {
        type Value = u64;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(
                "a seed: an integer from 0 to 18446744073709551615, or that number as a string",
            )
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("a seed cannot be negative ({v})")))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
            v.trim().parse::<u64>().map_err(|_| {
                E::custom(format!(
                    "\"{v}\" is not a seed (an integer from 0 to 18446744073709551615)"
                ))
            })
        }
    }

    /// The same for an optional seed (command-line flags).
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};

        /// Writes `Some(seed)` as [`super::serialize`] does; `None` as nothing.
        pub fn serialize<S: Serializer>(seed: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
            match seed {
                Some(v) => super::serialize(v, s),
                None => s.serialize_none(),
            }
        }

        /// Reads what [`super::deserialize`] reads.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
            #[derive(Deserialize)]
            struct W(#[serde(with = "super")] u64);
            Option::<W>::deserialize(d).map(|o| o.map(|W(v)| v))
        }
    }
}

/// A configuration could not be loaded.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The config file or a `--set` is not valid.
    #[error("{origin}: {why}")]
    Invalid {
        /// The file, or `--set`.
        origin: String,
        /// What is wrong.
        why: String,
    },
}

/// Overrides of the NAND preset's numbers (all optional).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NandParams {
    /// Data bytes per page.
    pub page_size: Option<u32>,
    /// Pages per block.
    pub pages_per_block: Option<u32>,
    /// Spare bytes per page.
    pub spare_bytes: Option<u32>,
    /// Page read latency in µs.
    pub read_us: Option<f64>,
    /// Spare read latency in µs.
    pub spare_read_us: Option<f64>,
    /// Program latency in µs.
    pub program_us: Option<f64>,
    /// Erase latency in µs.
    pub erase_us: Option<f64>,
    /// Initial bad blocks in percent of the physical blocks (used with bad_blocks).
    pub bad_block_percent: Option<f64>,
}

/// Every setting of a run. Field names are the TOML keys and `--set` keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// FTL id (`ftlab list`).
    pub ftl: String,
    /// Buffer id.
    pub buffer: String,
    /// NAND preset id.
    pub nand: String,
    /// Logical capacity, e.g. `1GiB`.
    pub capacity: ByteSize,
    /// Over-provisioning in percent of the logical capacity.
    #[schemars(range(min = 0.0))]
    pub op: f64,
    /// Memory the run may use for its tables; none: what the system says is available
    /// (/proc/meminfo, the cgroup limit). A run whose estimated tables exceed it is
    /// refused before anything is allocated.
    pub max_memory: Option<ByteSize>,
    /// Seed of every random stream in the run (0 to 2^64-1; a seed of 2^63 or more is
    /// written as a string in TOML, whose integers are signed).
    #[serde(with = "seed_repr")]
    #[schemars(with = "seed_repr::Repr")]
    pub seed: u64,
    /// Timing model.
    pub timing: TimingModel,
    /// Channels (parallel timing); none: 8 under parallel timing (the
    /// [`DEFAULT_CHANNELS`] x [`DEFAULT_DIES`] organisation), 1 under serial.
    pub channels: Option<u32>,
    /// Dies per channel (parallel timing); none: 4 under parallel timing, 1 under
    /// serial.
    pub dies: Option<u32>,
    /// Planes per die (parallel timing): programs, reads and erases on different planes
    /// of a die run together; none: the preset's (2 for `mqsim-8k`), else 1.
    pub planes: Option<u32>,
    /// Channel bandwidth in MiB/s (parallel timing: page transfer time); none: the
    /// preset's organisation's (`mqsim-8k`: 317.574, i.e. 333 MB/s), else 40.
    pub channel_mib_s: Option<f64>,
    /// Closed-loop replay: keep this many requests outstanding per submission queue,
    /// each completion admitting the next; trace timestamps are ignored. None: replay
    /// the timestamps (open loop). 1 to 65536.
    pub queue_depth: Option<u32>,
    /// Submission queues of the closed loop (`queue_depth` each; requests dealt to them
    /// round-robin in trace order). 1 to 1024; only with `queue_depth`.
    pub queues: u32,
    /// Program/erase suspend (parallel timing): a host read that finds its die running
    /// a program or an erase with more than the suspend latency left suspends it, and
    /// the operation resumes after the read (docs/timing.md). Off: reads queue behind.
    pub suspend: bool,
    /// Latency of suspending a program before the read can start, µs (MQSim's
    /// `Suspend_Program_Time`, 100 µs); only with `suspend`.
    #[schemars(range(min = 0.0))]
    pub suspend_program_us: f64,
    /// Latency of suspending an erase before the read can start, µs (MQSim's
    /// `Suspend_Erase_Time`, 700 µs); only with `suspend`.
    #[schemars(range(min = 0.0))]
    pub suspend_erase_us: f64,
    /// Preemptible GC (parallel timing): a host read goes ahead of the GC operations
    /// queued on its die that have not begun, which begin that much later
    /// (docs/timing.md). Off: GC operations queue like host ones.
    pub preempt_gc: bool,
    /// Sub-page transfers (parallel timing): a host read of part of a page (a 4 KiB
    /// read of an 8 KiB page) moves only the bytes it asks for over the channel, as
    /// MQSim times a transfer by its sectors (docs/timing.md). Off: every read moves its
    /// whole page. Programs, GC and map reads always move whole pages; serial timing
    /// takes the papers' whole-operation latencies either way.
    pub sub_page_transfers: bool,
    /// Backfilling of channel slots (parallel timing): a transfer takes the first idle
    /// gap of its channel from when it can start, even before transfers reserved
    /// earlier, as a controller arbitrating its channel among dies as their data gets
    /// ready does (docs/timing.md). Off: a channel's transfers keep the order they were
    /// reserved in (pessimistic under channel contention). With `suspend` or
    /// `preempt_gc`, a read that goes ahead of its die's queue takes a gap that holds
    /// its transfer, else moves the channel's later transfers one transfer later.
    pub channel_backfill: bool,
    /// Checking: every read against the last write (`on`), none, or `deep`.
    pub verify: VerifyLevel,
    /// Requests between deep checks under `verify = "deep"`.
    pub deep_every: u64,
    /// Read-modify-write partly covered pages instead of writing them whole.
    pub rmw: bool,
    /// Offer idle gaps to the buffer and FTL.
    pub idle: bool,
    /// `none`; `fill`: write every logical page once before measuring; `footprint`:
    /// write once every page the workload reads or writes. After either, the FTL
    /// writes back its dirty mapping entries (a device at rest) and counters reset.
    pub precondition: Precondition,
    /// At the end of the run, write the pages still dirty in the write buffer to flash
    /// (as a device flushes its cache on shutdown) before the figures are taken; their
    /// operations count in `flash.*` and WA. `false` leaves them in the buffer, out of
    /// the figures (the report still counts them in `end_of_run.dirty_pages`).
    pub drain: bool,
    /// Passes over the workload before the measured ones (not reported).
    pub warmup: u32,
    /// Measured passes over the workload (after the warm-up ones).
    pub replay: u32,
    /// Replay the workload until the device wears out (issue 23 item 4): measured
    /// passes without end; the FTL's `pe_limit` comes from the NAND preset's rated
    /// cycles unless set (every built-in FTL retires blocks). The report's `endurance` says
    /// after how many host bytes and simulated days. A workload that never writes
    /// runs until interrupted.
    pub until_worn_out: bool,
    /// Initial bad blocks (issue 23 item 4): the NAND preset's bad_block_percent (or
    /// nand_params.bad_block_percent) of the physical blocks, chosen from the seed, are
    /// bad at shipment and hidden below the FTL, which never uses them; the FTL runs on
    /// the good blocks. Off by default.
    pub bad_blocks: bool,
    /// Trace file; none runs the synthetic workload.
    pub trace: Option<String>,
    /// Trace format (`ftlab list`).
    pub format: String,
    /// Fold addresses beyond the capacity back into it.
    pub fold: bool,
    /// How `fold` folds: `modulo` (wrap around) or `compact` (pack the distinct blocks
    /// the trace touches at the start of the space).
    pub fold_mode: FoldMode,
    /// Devices (SPC ASUs, MSR disks, blkparse `maj*256+min`) replayed; empty: all.
    pub devices: Vec<u32>,
    /// How the replayed devices share the address space: `shared` (overlapping) or
    /// `side_by_side` (each its own region).
    pub device_layout: DeviceLayout,
    /// Sectors added to every offset, e.g. 1 or -63 to align a partition that starts at
    /// sector 63 (superblock-ftl.txt §5.3).
    pub shift_sectors: i64,
    /// Factor applied to arrival times (0.5 replays twice as fast).
    pub time_scale: f64,
    /// Longest gap between arrivals kept, in ms (longer idle periods are shortened).
    pub max_gap_ms: Option<f64>,
    /// Replay records arriving at or after this trace time, in s (it becomes time 0).
    pub window_start_s: Option<f64>,
    /// Stop at the first record arriving at or after this trace time, in s.
    pub window_end_s: Option<f64>,
    /// Requests per pass (none: the whole workload).
    pub limit: Option<u64>,
    /// Records held to put a trace that is not time-ordered in order (0: off). The
    /// default, 4096, orders per-CPU blktrace output and costs nothing on an ordered
    /// trace (ties keep their order); disorder wider than the window is counted and
    /// warned about. Traces only: generated workloads arrive in order.
    pub sort_window: u32,
    /// Keep arrival times as stamped instead of making them relative to the first
    /// record (the default rebases: an epoch-stamped trace starts at 0, and time
    /// windows count from the first record).
    pub absolute_time: bool,
    /// Largest share of the trace's records that the device selection, time window and
    /// skipped bad records may drop before the run is refused (exit 2) with what the
    /// trace holds; each filter's share is of the records it saw, so `limit` and the
    /// sort window's read-ahead do not count. A run that keeps no record is always
    /// refused. 1 accepts anything.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub max_dropped_share: f64,
    /// Skip bad trace records (counted in the report as `workload.skipped_records`)
    /// instead of stopping at the first one.
    pub skip_bad: bool,
    /// A flush-cache request after every N requests of each pass (co-op-buffer-ftl.txt
    /// §6.5: "flush command intervals from 10 to 640 requests"); none: only the
    /// workload's own flushes.
    pub flush_every: Option<u64>,
    /// Column mapping of the generic `csv` trace format.
    pub csv: CsvSpec,
    /// Settings of the `blkparse` trace format.
    pub blkparse: BlkparseSpec,
    /// The synthetic workload, used when no trace is given.
    pub synthetic: SyntheticConfig,
    /// The swarm-testing request mix (reads, writes, trims, flushes, partial pages),
    /// used instead of the synthetic workload when set and no trace is given.
    pub mix: Option<MixConfig>,
    /// Overrides of the preset's geometry and latencies.
    pub nand_params: NandParams,
    /// Power losses: request numbers (`5000`), simulated times (`t=2.5`, seconds) or
    /// random request numbers drawn from the seed (`random:5`).
    pub power_loss: Vec<String>,
    /// Options of the FTL (`ftlab list` shows them; the JSON Schema has each FTL's).
    pub ftl_options: OptionMap,
    /// Options of the buffer.
    pub buffer_options: OptionMap,
    /// Record a timeline of the measured phase (the report's `timeline` and
    /// `distributions`): an interval every N requests (`10k`) or every span of
    /// simulated time (`1s`, `500ms`); none: no timeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<TimelineEvery>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ftl: "page".into(),
            buffer: "none".into(),
            nand: ftlab_core::nand::DEFAULT_PRESET.into(),
            capacity: ByteSize(1 << 30),
            op: 7.0,
            max_memory: None,
            seed: 1,
            timing: TimingModel::Serial,
            channels: None,
            dies: None,
            planes: None,
            channel_mib_s: None,
            queue_depth: None,
            queues: 1,
            suspend: false,
            suspend_program_us: 100.0,
            suspend_erase_us: 700.0,
            preempt_gc: false,
            sub_page_transfers: true,
            channel_backfill: false,
            verify: VerifyLevel::On,
            deep_every: 1000,
            rmw: false,
            idle: true,
            precondition: Precondition::None,
            drain: true,
            warmup: 0,
            replay: 1,
            trace: None,
            format: "spc".into(),
            fold: false,
            fold_mode: FoldMode::Modulo,
            devices: Vec::new(),
            device_layout: DeviceLayout::Shared,
            shift_sectors: 0,
            time_scale: 1.0,
            max_gap_ms: None,
            window_start_s: None,
            window_end_s: None,
            limit: None,
            sort_window: 4096,
            absolute_time: false,
            until_worn_out: false,
            bad_blocks: false,
            max_dropped_share: 0.99,
            skip_bad: false,
            flush_every: None,
            csv: CsvSpec::default(),
            blkparse: BlkparseSpec::default(),
            synthetic: SyntheticConfig::default(),
            mix: None,
            nand_params: NandParams::default(),
            power_loss: Vec::new(),
            ftl_options: OptionMap::new(),
            buffer_options: OptionMap::new(),
            timeline: None,
        }
    }
}

/// Parses a `--set` value as TOML (numbers, booleans, quoted strings), else as a bare
/// string.
fn parse_value(text: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.into())),
        Err(_) => toml::Value::String(text.into()),
    }
}

/// Most parts a dotted key may have: the deepest config key has 3 (`ftl_options.x`,
/// `synthetic.size_kib.mean`), so 8 leaves room while keeping what a key can nest
/// shallow (every later step, from deserializing to the report's echo, recurses
/// once per level; a fuzzed `--set` of a few thousand parts overflowed the stack).
pub const MAX_KEY_PARTS: usize = 8;

/// Sets a dotted key in a TOML table, creating intermediate tables. A key with an
/// empty part (`a..b`, `.a`) or more than [`MAX_KEY_PARTS`] parts is refused.
pub fn set_key(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    if parts.len() > MAX_KEY_PARTS {
        return Err(format!(
            "`{}...` has {} parts; config keys have at most {MAX_KEY_PARTS}",
            key.chars().take(40).collect::<String>(),
            parts.len()
        ));
    }
    if parts.len() > 1 && parts.iter().any(|p| p.is_empty()) {
        return Err(format!("`{key}` has an empty part"));
    }
    let last = parts.pop().filter(|s| !s.is_empty()).ok_or("empty key")?;
    let mut t = table;
    for p in parts {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{p}` is not a table, cannot set `{key}`"))?;
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// Parses a whole configuration from TOML text; `origin` names it in errors.
pub fn parse_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let table = toml::from_str::<toml::Table>(text).map_err(|e| ConfigError::Invalid {
        origin: origin.into(),
        why: e.to_string(),
    })?;
    from_table(table, origin)
}

/// Deserializes a whole TOML table; an error names the dotted key it is about.
pub fn from_table(table: toml::Table, origin: &str) -> Result<Config, ConfigError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let key = e.path().to_string();
        let why = e.into_inner().to_string();
        // The TOML deserializer appends "in `key`"; the key leads the message instead.
        let why = why
            .lines()
            .filter(|l| !l.starts_with("in `"))
            .collect::<Vec<_>>()
            .join(" ");
        let why = why.trim();
        ConfigError::Invalid {
            origin: origin.into(),
            why: if key == "." || why.starts_with("unknown field") {
                why.to_string()
            } else {
                format!("`{key}`: {why}")
            },
        }
    })
}

/// Builds a configuration in layers: `file` (if any), then each `KEY=VALUE` of
/// `sets`, then `flags` (already typed TOML values keyed by config key).
pub fn load(
    file: Option<&Path>,
    sets: &[String],
    flags: &[(String, toml::Value)],
) -> Result<Config, ConfigError> {
    let mut table = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
                path: path.display().to_string(),
                source,
            })?;
            toml::from_str::<toml::Table>(&text).map_err(|e| ConfigError::Invalid {
                origin: path.display().to_string(),
                why: e.to_string(),
            })?
        }
        None => toml::Table::new(),
    };
    for s in sets {
        let (k, v) = s.split_once('=').ok_or_else(|| ConfigError::Invalid {
            origin: "--set".into(),
            why: format!("`{s}` is not KEY=VALUE"),
        })?;
        set_key(&mut table, k.trim(), parse_value(v.trim())).map_err(|why| {
            ConfigError::Invalid {
                origin: "--set".into(),
                why,
            }
        })?;
    }
    for (k, v) in flags {
        set_key(&mut table, k, v.clone()).map_err(|why| ConfigError::Invalid {
            origin: "flags".into(),
            why,
        })?;
    }
    let origin = match file {
        Some(p) => p.display().to_string(),
        None => "configuration".into(),
    };
    from_table(table, &origin)
}

impl Config {
    /// The configuration as a TOML document (what `ftlab config show` prints; loading
    /// it back gives the same configuration). Fails for values TOML cannot hold (a
    /// seed of 2^63 or more, set from Rust or Python).
    pub fn to_toml(&self) -> Result<String, ConfigError> {
        toml::to_string(self).map_err(|e| ConfigError::Invalid {
            origin: "configuration".into(),
            why: e.to_string(),
        })
    }
}

/// The JSON Schema of [`Config`], with each scheme's options: `ftl_options` and
/// `buffer_options` are checked against the options of the scheme `ftl` and `buffer`
/// name (for editors, and for the Python package).
pub fn schema() -> serde_json::Value {
    let mut root = schemars::schema_for!(Config).to_value();
    let mut conditions = Vec::new();
    for (key, opts_key, ids) in [
        (
            "ftl",
            "ftl_options",
            crate::registry::FTLS
                .iter()
                .map(|e| (e.id, (e.options.schema)()))
                .collect::<Vec<_>>(),
        ),
        (
            "buffer",
            "buffer_options",
            crate::registry::BUFFERS
                .iter()
                .map(|e| (e.id, (e.options.schema)()))
                .collect(),
        ),
    ] {
        let names: Vec<&str> = ids.iter().map(|(id, _)| *id).collect();
        root["properties"][key]["enum"] = serde_json::json!(names);
        for (id, s) in ids {
            let mut s = s.to_value();
            if let Some(o) = s.as_object_mut() {
                o.remove("$schema");
                o.remove("title");
            }
            conditions.push(serde_json::json!({
                "if": { "properties": { key: { "const": id } } },
                "then": { "properties": { opts_key: s } },
            }));
        }
    }
    root["allOf"] = serde_json::Value::Array(conditions);
    // The other registries' ids, so editors offer and check them too.
    let formats: Vec<&str> = ftlab_workload::FORMATS.iter().map(|f| f.id).collect();
    root["properties"]["format"]["enum"] = serde_json::json!(formats);
    let presets: Vec<&str> = ftlab_core::nand::PRESETS.iter().map(|p| p.id).collect();
    root["properties"]["nand"]["enum"] = serde_json::json!(presets);
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (found by the `set` fuzz target): a `--set` key of thousands of dots
    /// nested tables so deep that resolving them overflowed the stack.
    #[test]
    fn deep_or_empty_key_parts_are_refused() {
        let deep = format!("ftl_options{}=1", ".x".repeat(3000));
        let e = load(None, &[deep], &[]).unwrap_err().to_string();
        assert!(e.contains("at most 8"), "{e}");
        let e = load(None, &["ftl_options..x=1".into()], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty part"), "{e}");
        assert!(load(None, &["synthetic.count=7".into()], &[]).is_ok());
    }

    #[test]
    fn layers_override_in_order() {
        let dir = std::env::temp_dir().join(format!("ftlab-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("c.toml");
        std::fs::write(
            &f,
            "ftl = \"page\"\nop = 10\n[ftl_options]\ngc_threshold = 5\n",
        )
        .unwrap();
        let c = load(
            Some(&f),
            &["op=12.5".into(), "synthetic.count=7".into()],
            &[("seed".into(), toml::Value::Integer(9))],
        )
        .unwrap();
        assert_eq!(c.op, 12.5);
        assert_eq!(c.seed, 9);
        assert_eq!(c.synthetic.count, 7);
        assert_eq!(c.ftl_options["gc_threshold"], 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_u64_seed_round_trips_through_toml_set_and_json() {
        for seed in [0, 1, i64::MAX as u64, i64::MAX as u64 + 1, u64::MAX] {
            let c = Config {
                seed,
                ..Config::default()
            };
            let text = c.to_toml().unwrap();
            let file = toml::from_str::<Config>(&text).unwrap();
            assert_eq!(file.seed, seed, "{text}");
            let set = load(None, &[format!("seed={seed}")], &[]).unwrap();
            assert_eq!(set.seed, seed);
            let flag = load(None, &[], &[("seed".into(), seed_repr::to_toml(seed))]).unwrap();
            assert_eq!(flag.seed, seed);
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Config>(&json).unwrap().seed, seed);
        }
        for bad in ["seed=-1", "seed=\"x1\"", "seed=18446744073709551616"] {
            let e = load(None, &[bad.into()], &[]).unwrap_err().to_string();
            assert!(e.contains("seed"), "{bad}: {e}");
        }
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e = load(None, &["fo=1".into()], &[]).unwrap_err();
        assert!(e.to_string().contains("unknown field `fo`"), "{e}");
        let e = load(None, &["novalue".into()], &[]).unwrap_err();
        assert!(e.to_string().contains("KEY=VALUE"), "{e}");
    }

    #[test]
    fn errors_name_the_key_the_value_and_what_is_allowed() {
        let e = load(None, &["timing=paralel".into()], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`timing`") && e.contains("paralel") && e.contains("parallel"),
            "{e}"
        );
        let e = load(None, &["synthetic.count=lots".into()], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`synthetic.count`") && e.contains("lots"), "{e}");
        let e = load(None, &["capacity=12 parsecs".into()], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`capacity`") && e.contains("parsecs"), "{e}");
    }

    #[test]
    fn show_prints_toml_that_loads_back() {
        let mut c = Config {
            op: 12.5,
            timing: TimingModel::Parallel,
            ..Config::default()
        };
        c.ftl_options.insert("gc_threshold".into(), 5.into());
        let text = c.to_toml().unwrap();
        assert!(
            text.contains("timing = \"parallel\"") && text.contains("capacity = \"1GiB\""),
            "{text}"
        );
        assert_eq!(parse_str(&text, "shown").unwrap(), c);
    }

    #[test]
    fn the_schema_knows_every_key_and_every_schemes_options() {
        let s = schema();
        let props = s["properties"].as_object().unwrap();
        for key in [
            "ftl",
            "buffer",
            "capacity",
            "timing",
            "verify",
            "synthetic",
            "ftl_options",
        ] {
            assert!(props.contains_key(key), "{key}");
        }
        for (key, id) in [
            ("format", "auto"),
            ("format", "vscsi"),
            ("nand", "slc-k9f1g16u0m"),
        ] {
            let ids = s["properties"][key]["enum"].as_array().unwrap();
            assert!(ids.iter().any(|v| v == id), "{key}: {id}");
        }
        assert!(s["properties"]["ftl"]["enum"]
            .as_array()
            .unwrap()
            .contains(&"dftl".into()));
        let text = s.to_string();
        assert!(
            text.contains("gc_threshold") && text.contains("\"if\""),
            "{text}"
        );
    }
}
