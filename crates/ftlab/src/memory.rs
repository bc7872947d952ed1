//! The memory a run needs, estimated from the geometry before anything is allocated,
//! and the refusal of a run that would not fit ([`check`]).
//!
//! The tables of a run are flat arrays sized by the device: the flash's per-page spare
//! tags and validity bits, the oracle's version per logical page, and the FTL's own
//! tables (a page-level map, reverse maps, demand-paged table contents). Allocating
//! them for a capacity a user typed (a trace's 4.4 TiB address span) used to abort the
//! process with an allocation failure; now the estimate is compared, before the engine
//! is built, with the memory available (`MemAvailable` in /proc/meminfo, and the cgroup
//! limit when one is set) or with `max_memory`, and a run that would not fit is refused
//! with the estimate and the ways out.
//!
//! Choices:
//! - The FTL's tables are estimated per physical page ([`ftl_bytes_per_page`]): the
//!   figures were measured (peak virtual memory of a run on 8 GiB and 16 GiB devices,
//!   per FTL, minus the flash and oracle tables) and rounded up; a scheme not in the
//!   list is taken at 16 bytes per page. Superblock's tables include the RAM mirror of
//!   its spare map (4 bytes per logical page). A Superblock run that may meet a power
//!   loss also keeps its PMD and PT beside every page as spare words (allocated when it
//!   first writes them, so they are not in the peak measured before the run):
//!   `4 + pages_per_block / 4` words of 4 bytes at the paper's m = 2 (measured resident
//!   at 1 and 4 GiB after a fill: 99 bytes per logical page in all, against 103
//!   estimated); a run with no power loss planned keeps none
//!   (`Flash::drop_recovery_data`: 49 MB resident at 4 GiB after a fill).
//! - Page mapping and DAC (`Capabilities::packed_tags`) with no planned power loss
//!   pack each spare tag into 4 bytes and keep the oracle's versions in 1 or 2 bytes
//!   (`EngineConfig::packed_tags`; 4 bytes when more than 14 version bits remain), as
//!   the engine does; every other run, and every run `sim::prepare` builds, is taken
//!   at 8 bytes of tag and 4 of oracle per page.
//! - The footprint precondition's bitmap (1 bit per logical page), the recovery scan of
//!   a run with power losses (8 bytes per logical page) and a write buffer's pages (its
//!   `size` in pages, 96 bytes each: the page LRU allocates 24 upfront, measured with a
//!   4 GiB buffer; block buffers grow as they fill, with hash maps) are added; a fixed
//!   64 MiB covers the program, histograms and workload readers.
//! - Why an estimate and not `try_reserve` where the tables are built: on Linux, with
//!   the default overcommit, reserving 18 GiB on a 24 GiB machine succeeds, and the
//!   process is killed later (exit 137, as `--capacity 4TiB` was here) when the flash
//!   initialises its spare tags and touches the pages; only an allocation larger than
//!   memory and swap fails at once. So a failed reservation would catch only the
//!   absurd sizes the geometry already refuses, and the estimate, compared before
//!   anything is allocated, is what keeps a run from being killed.
//! - The limit is `max_memory` when set (to run anyway on a machine whose available
//!   memory is misreported, or to refuse early in tests), else what the system says is
//!   available; with neither (not Linux), nothing is refused.

use crate::config::{Config, Precondition};
use crate::error::{setting, RunError};
use ftlab_core::geometry::Geometry;
use ftlab_core::units::format_size;

/// Fixed part of a run: the program, histograms, readers.
pub const FIXED_BYTES: u64 = 64 << 20;

/// Bytes of FTL tables per physical page, measured per scheme and rounded up.
pub fn ftl_bytes_per_page(ftl: &str) -> u64 {
    match ftl {
        "block" | "bast" => 1,
        "cach" => 2,
        "fast" => 3,
        "page" | "tpm" | "dac" => 5,
        // 2 bytes of tables and the 4-byte mirror of the spare map.
        "superblock" => 6,
        "dftl" => 9,
        _ => 16,
    }
}

/// Bytes per physical page of the spare words an FTL keeps beside the tags for a
/// recovery to read (`Flash::program_with_spare`): Superblock's PMD (4 entries) and PT
/// (a quarter of a block's pages) with its map in spare areas, in a run that may meet
/// a power loss (a run without keeps none, `Flash::drop_recovery_data`).
fn spare_word_bytes_per_page(cfg: &Config, geo: &Geometry, may_pack: bool) -> u64 {
    let in_spares = cfg
        .ftl_options
        .get("mapping")
        .and_then(|v| v.as_str())
        .is_none_or(|m| m == "spare");
    let recoverable = !may_pack || !cfg.power_loss.is_empty();
    if cfg.ftl == "superblock" && in_spares && recoverable {
        4 * (4 + geo.pages_per_block as u64 / 4)
    } else {
        0
    }
}

/// The name of the write buffer's part of an [`Estimate`].
const BUFFER_PART: &str = "write buffer";

/// What a run's tables need, part by part.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Each part: what it is and its bytes.
    pub parts: Vec<(&'static str, u64)>,
}

impl Estimate {
    /// The whole estimate in bytes.
    pub fn total(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |a, (_, b)| a.saturating_add(*b))
    }
}

/// Bytes of the oracle's entry per logical page when a run packs its spare tags (an FTL
/// whose capabilities say it allows it, `page` and `dac`, with no planned power loss,
/// `EngineConfig::packed_tags`): the versions left
/// beside the LPN in a 32-bit tag, in 1, 2 or 4 bytes (`Oracle::wrapping`); `None`
/// when the run keeps whole 8-byte tags and 4-byte entries.
fn packed_oracle_bytes(cfg: &Config, geo: &Geometry, may_pack: bool) -> Option<u64> {
    let packs = crate::registry::ftl(&cfg.ftl).is_some_and(|e| e.caps.packed_tags);
    if !may_pack || !packs || !cfg.power_loss.is_empty() {
        return None;
    }
    match 32 - geo.lpn_bits() {
        0..=3 => None,
        4..=6 => Some(1),
        7..=14 => Some(2),
        _ => Some(4),
    }
}

/// The memory `cfg` needs on `geo`, from the geometry alone, for a run as
/// [`crate::Simulation`] makes it (packing the tags where the FTL allows it).
pub fn estimate(cfg: &Config, geo: &Geometry) -> Estimate {
    estimate_as(cfg, geo, true)
}

/// [`estimate`], for tables packed only if `may_pack` (`sim::prepare` keeps whole
/// tags so that its caller may strike a power loss).
fn estimate_as(cfg: &Config, geo: &Geometry, may_pack: bool) -> Estimate {
    let phys = geo.blocks as u64 * geo.pages_per_block as u64;
    let logical = geo.logical_pages as u64;
    let blocks = geo.blocks as u64;
    let packed = packed_oracle_bytes(cfg, geo, may_pack);
    let (tag_bytes, oracle_bytes) = packed.map_or((8, 4), |o| (4, o));
    let mut parts = vec![
        (
            "flash (spare tags, validity)",
            phys * tag_bytes + phys.div_ceil(8) + blocks * 12,
        ),
        (
            "oracle (a version per logical page)",
            logical * oracle_bytes,
        ),
        (
            "FTL tables",
            phys.saturating_mul(ftl_bytes_per_page(&cfg.ftl)),
        ),
        ("program, histograms, readers", FIXED_BYTES),
    ];
    let spare = spare_word_bytes_per_page(cfg, geo, may_pack);
    if spare > 0 {
        parts.push((
            "spare words kept for a recovery",
            phys.saturating_mul(spare),
        ));
    }
    if cfg.precondition == Precondition::Footprint {
        parts.push(("footprint bitmap", logical.div_ceil(8)));
    }
    if !cfg.power_loss.is_empty() {
        parts.push(("recovery scan", logical * 8));
    }
    if let Some(size) = cfg
        .buffer_options
        .get("size")
        .and_then(|v| v.as_str())
        .and_then(|s| s.parse::<ftlab_core::units::ByteSize>().ok())
    {
        let pages = size.0 / geo.page_size as u64;
        parts.push((BUFFER_PART, pages.saturating_mul(96)));
    }
    Estimate { parts }
}

/// Memory available to this process, in bytes, and where the figure comes from:
/// `MemAvailable` of /proc/meminfo, or the cgroup's limit minus its usage when lower.
pub fn available() -> Option<(u64, &'static str)> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let mem = meminfo.as_deref().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| (kib * 1024, "MemAvailable in /proc/meminfo"))
    });
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let cgroup = read("/sys/fs/cgroup/memory.max")
        .and_then(|m| m.trim().parse::<u64>().ok())
        .map(|max| {
            let used = read("/sys/fs/cgroup/memory.current")
                .and_then(|c| c.trim().parse::<u64>().ok())
                .unwrap_or(0);
            (max.saturating_sub(used), "the cgroup's memory.max")
        });
    match (mem, cgroup) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Refuses a run whose tables would not fit: the estimate against `max_memory`, or
/// against [`available`] memory. The error names the estimate, the limit and the ways
/// out. `may_pack`: whether the run packs its tags where the FTL allows it
/// ([`estimate`] assumes it does; `sim::prepare` does not).
pub fn check(cfg: &Config, geo: &Geometry, may_pack: bool) -> Result<(), RunError> {
    let (limit, source) = match cfg.max_memory {
        Some(m) => (m.0, "max_memory"),
        None => match available() {
            Some(a) => a,
            None => return Ok(()),
        },
    };
    let est = estimate_as(cfg, geo, may_pack);
    let need = est.total();
    if need <= limit {
        return Ok(());
    }
    let parts: Vec<String> = est
        .parts
        .iter()
        .filter(|(_, b)| *b >= 1 << 20)
        .map(|(what, b)| format!("{what} {}", format_size(*b)))
        .collect();
    let buffer = est
        .parts
        .iter()
        .find(|(what, _)| *what == BUFFER_PART)
        .map_or(0, |(_, b)| *b);
    if buffer > need / 2 {
        return Err(setting(
            "buffer_options.size",
            format!(
                "a {} write buffer needs about {} of memory ({} for the whole run: {}), \
                 more than the {} available ({source}); nothing was allocated. Ways out: \
                 a smaller buffer_options.size; --max-memory SIZE overrides the limit",
                format_size(buffer / 96 * geo.page_size as u64),
                format_size(buffer),
                format_size(need),
                parts.join(", "),
                format_size(limit),
            ),
        ));
    }
    let fit = format_size(fitting_bytes(geo, limit, need));
    Err(setting(
        "capacity",
        format!(
            "a {} device needs about {} of memory for its tables ({}), more than the {} \
             available ({source}); nothing was allocated. Ways out: --fold compact packs \
             the blocks a trace touches into a smaller --capacity; a smaller --capacity \
             (about {fit} fits); a larger page size (--nand or nand_params.page_size) \
             halves the tables per doubling; --max-memory SIZE overrides the limit",
            format_size(geo.logical_bytes()),
            format_size(need),
            parts.join(", "),
            format_size(limit),
        ),
    ))
}

/// The logical bytes whose tables fit `limit` when `geo`'s need `need` (the fixed part
/// does not shrink with the device), rounded down to whole GiB, or whole MiB below 1 GiB.
fn fitting_bytes(geo: &Geometry, limit: u64, need: u64) -> u64 {
    let room = limit.saturating_sub(FIXED_BYTES) as f64;
    let tables = need.saturating_sub(FIXED_BYTES).max(1) as f64;
    let bytes = (room / tables * geo.logical_bytes() as f64) as u64;
    let unit: u64 = if bytes >= 1 << 30 { 1 << 30 } else { 1 << 20 };
    bytes - bytes % unit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The capacity a refusal suggests fits the limit (regression: it divided by the
    /// need with the fixed part and rounded to whole GiB, so a 1 GiB device over a
    /// 100 MiB limit was told that 0 B fits).
    #[test]
    fn the_suggested_capacity_fits() {
        for (capacity, limit) in [("1GiB", "100MiB"), ("64GiB", "1GiB"), ("8GiB", "200MiB")] {
            let cfg = Config {
                ftl: "superblock".into(),
                capacity: capacity.parse().unwrap(),
                max_memory: Some(limit.parse().unwrap()),
                ..Config::default()
            };
            let geo = crate::sim::device_geometry(&cfg).unwrap();
            let need = estimate_as(&cfg, &geo, false).total();
            let fit = fitting_bytes(&geo, cfg.max_memory.unwrap().0, need);
            assert!(fit >= 1 << 20, "{capacity} over {limit}: {fit}");
            let smaller = Config {
                capacity: ftlab_core::units::ByteSize(fit),
                ..cfg.clone()
            };
            check(
                &smaller,
                &crate::sim::device_geometry(&smaller).unwrap(),
                false,
            )
            .unwrap_or_else(|e| panic!("{capacity} over {limit}: {fit} B: {e}"));
        }
    }

    #[test]
    fn the_estimate_grows_with_the_device_and_names_its_parts() {
        let small = Config::default();
        let big = Config {
            capacity: "64GiB".parse().unwrap(),
            ..Config::default()
        };
        let g = |c: &Config| crate::sim::device_geometry(c).unwrap();
        let (a, b) = (estimate(&small, &g(&small)), estimate(&big, &g(&big)));
        assert!(b.total() > 50 * (a.total() - FIXED_BYTES), "{a:?} {b:?}");
        // 64 GiB of 2 KiB pages with the page FTL: packed 4-byte tags and 2-byte
        // versions (25 LPN bits leave 7), about 11.9 bytes per logical page.
        let per_page = (b.total() - FIXED_BYTES) as f64 / (32u64 << 20) as f64;
        assert!((11.0..13.0).contains(&per_page), "{per_page}");
        // With a power loss planned the tags stay whole and the versions exact: about
        // 17.5 bytes, and the recovery scan's 8 more.
        let lossy = Config {
            power_loss: big_power_loss(),
            ..big.clone()
        };
        let e = estimate(&lossy, &g(&lossy));
        let per_page = (e.total() - FIXED_BYTES) as f64 / (32u64 << 20) as f64;
        assert!((24.0..28.0).contains(&per_page), "{per_page}");
        // DAC packs as page mapping does; the other FTLs never pack, nor does a run
        // `sim::prepare` builds.
        let dftl = Config {
            ftl: "dftl".into(),
            ..big.clone()
        };
        let dac = Config {
            ftl: "dac".into(),
            ..big.clone()
        };
        let oracle = |e: &Estimate| {
            e.parts
                .iter()
                .find(|p| p.0.starts_with("oracle"))
                .unwrap()
                .1
        };
        assert_eq!(oracle(&estimate(&dftl, &g(&dftl))), (32u64 << 20) * 4);
        assert_eq!(oracle(&b), (32u64 << 20) * 2);
        assert_eq!(oracle(&estimate(&dac, &g(&dac))), (32u64 << 20) * 2);
        assert_eq!(
            oracle(&estimate_as(&big, &g(&big), false)),
            (32u64 << 20) * 4
        );
    }

    /// Superblock's spare words are counted only in a run that keeps them: one that
    /// may meet a power loss, with the map in spare areas.
    #[test]
    fn superblock_s_spare_words_are_counted_only_when_kept() {
        let sb = Config {
            ftl: "superblock".into(),
            capacity: "8GiB".parse().unwrap(),
            ..Config::default()
        };
        let geo = crate::sim::device_geometry(&sb).unwrap();
        let spare = |c: &Config, may_pack: bool| {
            estimate_as(c, &geo, may_pack)
                .parts
                .iter()
                .find(|p| p.0.starts_with("spare words"))
                .map(|p| p.1)
        };
        let per_page = 4 * (4 + geo.pages_per_block as u64 / 4);
        let phys = geo.blocks as u64 * geo.pages_per_block as u64;
        assert_eq!(spare(&sb, true), None, "no power loss planned");
        assert_eq!(spare(&sb, false), Some(phys * per_page), "sim::prepare");
        let lossy = Config {
            power_loss: big_power_loss(),
            ..sb.clone()
        };
        assert_eq!(spare(&lossy, true), Some(phys * per_page));
        let mut map_pages = lossy.clone();
        map_pages
            .ftl_options
            .insert("mapping".into(), serde_json::Value::from("map_page"));
        assert_eq!(spare(&map_pages, true), None, "the map in map pages");
        let page = Config {
            power_loss: big_power_loss(),
            ..Config::default()
        };
        assert_eq!(spare(&page, false), None);
    }

    fn big_power_loss() -> Vec<String> {
        vec!["1000".into()]
    }

    #[test]
    fn a_device_beyond_the_limit_is_refused_with_the_estimate_and_the_ways_out() {
        let cfg = Config {
            capacity: "64GiB".parse().unwrap(),
            max_memory: Some("256MiB".parse().unwrap()),
            ..Config::default()
        };
        let e = check(&cfg, &crate::sim::device_geometry(&cfg).unwrap(), true)
            .unwrap_err()
            .to_string();
        for needle in ["`capacity`", "needs about", "--fold compact", "max_memory"] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let ok = Config {
            max_memory: Some("2GiB".parse().unwrap()),
            ..Config::default()
        };
        check(&ok, &crate::sim::device_geometry(&ok).unwrap(), true).unwrap();
        // A huge write buffer is named as the culprit, not the capacity.
        let mut buf = Config {
            buffer: "lru".into(),
            max_memory: Some("4GiB".parse().unwrap()),
            ..Config::default()
        };
        buf.buffer_options
            .insert("size".into(), serde_json::Value::String("1TiB".into()));
        let e = check(&buf, &crate::sim::device_geometry(&buf).unwrap(), true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`buffer_options.size`") && e.contains("1 TiB write buffer"),
            "{e}"
        );
    }
}
