//! The options of the Superblock FTL ([`SuperblockOptions`]) and the value types of
//! those that take a word.

use super::layout::Ecc;
use crate::auto::AutoOr;
use ftlab_core::options::JsonSchema;
use ftlab_core::wear::{self, WearLeveling};
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Options of the `superblock` FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SuperblockOptions {
    /// Logical blocks per superblock, N (superblock-ftl.txt §5.1: 4); at most the
    /// logical blocks.
    #[schemars(range(min = 1))]
    pub superblock_size: u32,
    /// Most U-blocks a superblock may own, M (auto: the spare layout's block limit - N;
    /// N with map pages).
    #[schemars(range(min = 1))]
    pub max_u_blocks: AutoOr<u32>,
    /// Page-level map in spare areas (spare: SB-S, §4.2.2), in map pages (map_page:
    /// SB-P, §4.2.3) or held in RAM (ram: §5.6's simulation device for superblocks of
    /// more than 8 blocks; no map traffic, no block limit but N + M).
    pub mapping: Mapping,
    /// With map pages: where they are written, a pool carved out of the extra blocks
    /// (pool, §5.8) or the superblock's own U-block (u_block).
    pub map_page_home: MapPageHome,
    /// With map pages: superblocks whose maps share a map page, k (auto: as many as the
    /// page holds, §4.2.3's k = 6 for N = M = 4 on 4 KiB pages; u_block: 1).
    #[schemars(range(min = 1))]
    pub superblocks_per_map_page: AutoOr<u32>,
    /// With map_page_home = pool: blocks of the map-page pool (auto: twice the blocks
    /// the live map pages fill, plus one).
    #[schemars(range(min = 2))]
    pub map_pool_blocks: AutoOr<u32>,
    /// D-blocks out-of-place (oop) or in-place (ip): the SB-n-OOP / SB-n-IP variants of
    /// Table VI.
    pub placement: Placement,
    /// MergeAll compacts hot blocks before cold ones (Fig. 11); off: allocation order.
    pub hot_cold: OnOff,
    /// PMD+PT entries in the LRU map cache (superblock-ftl.txt §5.1: 16).
    #[schemars(range(min = 1, max = 1_048_576))]
    pub map_cache_entries: u32,
    /// Spare-area ECC budget of Table III: slc, mlc4, or auto (slc up to 2 KiB pages).
    pub ecc: EccOption,
    /// Full + partial snapshots for power-loss recovery (§4.4): on, off, or auto (on when
    /// the spare blocks hold the snapshot area and 2 more blocks).
    pub snapshots: Snapshots,
    /// Merge the LRU superblock in idle time while free blocks are below
    /// background_free_blocks (§4.3; off as in the paper's evaluation).
    pub background_merge: OnOff,
    /// Free blocks background merges aim to keep.
    pub background_free_blocks: u32,
    /// t: a PT holds 2^t entries (Table III: 4); clamped to the page-offset bits.
    #[schemars(range(min = 1, max = 12))]
    pub pt_bits: u32,
    /// Erases after which a block retires (never written again); 0: blocks never
    /// retire. The NAND presets' rated cycles are in ftlab_core::nand (pe_cycles).
    pub pe_limit: u32,
    /// Wear levelling (ftlab_core::wear): off (free blocks first-in first-out), dynamic
    /// (a new U-block is the least-erased free block) or static (dynamic, and when max -
    /// min erase count exceeds wl_threshold the least-erased block in use is compacted
    /// into the most-erased free block; placement = oop and mapping = spare only).
    pub wear_leveling: WearLeveling,
    /// Erase-count spread (max - min) above which wear_leveling = static moves data.
    #[schemars(range(min = 1))]
    pub wl_threshold: u32,
}

impl Default for SuperblockOptions {
    fn default() -> Self {
        SuperblockOptions {
            superblock_size: 4,
            max_u_blocks: AutoOr::Auto,
            mapping: Mapping::Spare,
            map_page_home: MapPageHome::Pool,
            superblocks_per_map_page: AutoOr::Auto,
            map_pool_blocks: AutoOr::Auto,
            placement: Placement::Oop,
            hot_cold: OnOff::On,
            map_cache_entries: 16,
            ecc: EccOption::Auto,
            snapshots: Snapshots::Auto,
            background_merge: OnOff::Off,
            background_free_blocks: 2,
            pt_bits: 4,
            pe_limit: 0,
            wear_leveling: WearLeveling::Off,
            wl_threshold: wear::DEFAULT_WL_THRESHOLD,
        }
    }
}

/// Where the Superblock FTL keeps its page-level map (option `mapping`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mapping {
    /// In the spare areas of the data pages (SB-S, §4.2.2).
    Spare,
    /// In map pages (SB-P, §4.2.3).
    MapPage,
    /// In RAM, never written (§5.6).
    Ram,
}

impl fmt::Display for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mapping::Spare => "spare",
            Mapping::MapPage => "map_page",
            Mapping::Ram => "ram",
        })
    }
}

/// Where map pages are written (option `map_page_home`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MapPageHome {
    /// A pool of blocks carved out of the extra blocks (§5.8).
    Pool,
    /// The superblock's own current U-block.
    UBlock,
}

impl fmt::Display for MapPageHome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MapPageHome::Pool => "pool",
            MapPageHome::UBlock => "u_block",
        })
    }
}

/// Where D-blocks are written (option `placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Out of place (SB-n-OOP).
    Oop,
    /// In place (SB-n-IP).
    Ip,
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Placement::Oop => "oop",
            Placement::Ip => "ip",
        })
    }
}

/// The spare-area ECC budget (option `ecc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EccOption {
    /// `slc` up to 2 KiB pages, `mlc4` above.
    Auto,
    /// Large-block SLC: 1-bit ECC (Table III, left).
    Slc,
    /// MLC with 4-bit ECC (Table III, right).
    Mlc4,
}

impl EccOption {
    /// The budget for pages of `page_size` bytes.
    pub fn resolve(self, page_size: u32) -> Ecc {
        match self {
            EccOption::Auto => Ecc::auto(page_size),
            EccOption::Slc => Ecc::Slc,
            EccOption::Mlc4 => Ecc::Mlc4,
        }
    }
}

/// A switch: `on` or `off` (`true` and `false` are read as `on` and `off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnOff {
    /// Switched on.
    On,
    /// Switched off.
    Off,
}

impl OnOff {
    /// Whether it is on.
    pub fn is_on(self) -> bool {
        self == OnOff::On
    }

    fn parse(word: &str) -> Option<OnOff> {
        match word {
            "on" | "true" => Some(OnOff::On),
            "off" | "false" => Some(OnOff::Off),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for OnOff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Word {
            parse: OnOff::parse,
            expecting: "on or off",
        })
    }
}

/// Whether snapshots are taken (option `snapshots`; `true` and `false` are read as `on`
/// and `off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Snapshots {
    /// On when the spare blocks hold the snapshot area and 2 more blocks (and the map
    /// is in spare areas).
    Auto,
    /// Always (refused if the geometry cannot hold the snapshot area).
    On,
    /// Never.
    Off,
}

impl Snapshots {
    fn parse(word: &str) -> Option<Snapshots> {
        match word {
            "auto" => Some(Snapshots::Auto),
            w => OnOff::parse(w).map(|s| match s {
                OnOff::On => Snapshots::On,
                OnOff::Off => Snapshots::Off,
            }),
        }
    }
}

impl fmt::Display for Snapshots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Snapshots::Auto => "auto",
            Snapshots::On => "on",
            Snapshots::Off => "off",
        })
    }
}

impl<'de> Deserialize<'de> for Snapshots {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Word {
            parse: Snapshots::parse,
            expecting: "auto, on or off",
        })
    }
}

/// Reads a word option that also takes a boolean (`true` as `on`, `false` as `off`),
/// as the string options did.
struct Word<T> {
    parse: fn(&str) -> Option<T>,
    expecting: &'static str,
}

impl<T> Visitor<'_> for Word<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        (self.parse)(if v { "on" } else { "off" })
            .ok_or_else(|| E::invalid_type(Unexpected::Bool(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v.trim()).ok_or_else(|| E::invalid_value(Unexpected::Str(v), &self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::options::{from_pairs, OptionsDef};

    const ID: &str = super::super::ID;

    #[test]
    fn switches_read_on_off_and_booleans_and_write_on_off() {
        for (text, want) in [("on", OnOff::On), ("true", OnOff::On), ("off", OnOff::Off)] {
            let o: SuperblockOptions = from_pairs(ID, &[("hot_cold", text)]).unwrap();
            assert_eq!(o.hot_cold, want, "{text}");
        }
        let o: SuperblockOptions = from_pairs(ID, &[("snapshots", "false")]).unwrap();
        assert_eq!(o.snapshots, Snapshots::Off);
        let f = OptionsDef::of::<SuperblockOptions>().fields();
        let field = |name: &str| f.iter().find(|f| f.name == name).unwrap().clone();
        assert_eq!(field("hot_cold").default, "on");
        assert_eq!(field("hot_cold").kind, "on | off");
        assert_eq!(field("snapshots").kind, "auto | on | off");
        assert_eq!(field("ecc").kind, "auto | slc | mlc4");
        assert_eq!(field("max_u_blocks").default, "auto");
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (key, value, why) in [
            ("hot_cold", "maybe", "on or off"),
            ("snapshots", "sometimes", "auto, on or off"),
            ("mapping", "maps", "map_page"),
            ("placement", "beside", "oop"),
            ("ecc", "mlc8", "mlc4"),
            ("pt_bits", "13", "from 1 to 12"),
            ("pt_bits", "0", "from 1 to 12"),
            ("map_cache_entries", "0", "from 1 to 1048576"),
            ("superblock_size", "0", "at least 1"),
            ("max_u_blocks", "0", "at least 1"),
        ] {
            let e = from_pairs::<SuperblockOptions>(ID, &[(key, value)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`{key}` = `{value}`")) && e.contains(why),
                "{e}"
            );
        }
    }
}
