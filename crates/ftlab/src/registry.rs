//! The one registry of schemes: FTLs, buffers and timing models by id. The CLI, the
//! listings, the docs and the tests all read it; no other code matches on scheme names.

use ftlab_core::buffer::{Buffer, Passthrough};
use ftlab_core::ftl::Ftl;
use ftlab_core::geometry::Geometry;
use ftlab_core::nand::Latencies;
use ftlab_core::options::{OptionSpec, SchemeError, SchemeOptions};

/// What a constructor gets.
pub struct BuildContext<'a> {
    /// Device geometry.
    pub geo: &'a Geometry,
    /// Operation latencies.
    pub latencies: Latencies,
    /// The run's seed, for schemes that randomise.
    pub seed: u64,
    /// The scheme's resolved options.
    pub opts: &'a SchemeOptions,
}

/// A registered FTL.
pub struct FtlEntry {
    /// Id used with `--ftl`.
    pub id: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Paper and section.
    pub source: &'static str,
    /// Declared options.
    pub options: &'static [OptionSpec],
    /// Constructor.
    pub build: fn(&BuildContext<'_>) -> Result<Box<dyn Ftl>, SchemeError>,
}

/// A registered write buffer.
pub struct BufferEntry {
    /// Id used with `--buffer`.
    pub id: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Paper and section.
    pub source: &'static str,
    /// Declared options.
    pub options: &'static [OptionSpec],
    /// Constructor.
    pub build: fn(&BuildContext<'_>) -> Result<Box<dyn Buffer>, SchemeError>,
}

/// Every FTL, in the order `ftlab list` shows them.
pub const FTLS: &[FtlEntry] = &[
    FtlEntry {
        id: "page",
        description: "ideal page mapping: L2P in RAM, one active block, greedy GC",
        source: "baseline of all papers; tpm.txt §II",
        options: &[OptionSpec {
            name: "gc_threshold",
            default: "3",
            help: "GC runs while fewer than this many blocks are free (tpm.txt Table I: 3)",
        }],
        build: |c| {
            let o = legacy::<ftlab_ftl::page::PageOptions>(c.opts)?;
            Ok(Box::new(ftlab_ftl::page::PageFtl::new(c.geo, &o)?))
        },
    },
    FtlEntry {
        id: "block",
        description: "block mapping: fixed offsets, a block rewrite per updated group",
        source: "cach-ftl.txt §2, §4.2.3, §5",
        options: ftlab_ftl::block::OPTIONS,
        build: |c| Ok(Box::new(ftlab_ftl::block::BlockFtl::new(c.geo, c.opts)?)),
    },
    FtlEntry {
        id: "bast",
        description: "log block scheme: one log block per data block, LRU reclaim",
        source: "superblock-ftl.txt §2.3-2.4; co-op-buffer-ftl.txt §2.4.1",
        options: ftlab_ftl::bast::OPTIONS,
        build: |c| Ok(Box::new(ftlab_ftl::bast::Bast::new(c.geo, c.opts)?)),
    },
    FtlEntry {
        id: "fast",
        description: "FAST: shared RW log blocks (round robin) and a sequential log",
        source: "co-op-buffer-ftl.txt §2.4.2; superblock-ftl.txt §2.4",
        options: ftlab_ftl::fast::OPTIONS,
        build: |c| Ok(Box::new(ftlab_ftl::fast::Fast::new(c.geo, c.opts)?)),
    },
    FtlEntry {
        id: "cach",
        description: "CACH-FTL: groups above a threshold to a block-mapped region (in-place \
                      rewrite), smaller ones to a page-mapped over-provisioning region; \
                      sync and idle-time interruptible GC",
        source: "cach-ftl.txt §4",
        options: ftlab_ftl::cach::OPTIONS,
        build: |c| Ok(Box::new(ftlab_ftl::cach::CachFtl::new(c.geo, c.opts)?)),
    },
    FtlEntry {
        id: "dftl",
        description: "DFTL: page table in translation pages, GTD in RAM, LRU cache of single entries",
        source: "tpm.txt §II; Gupta et al. ASPLOS'09",
        options: ftlab_ftl::dftl::OPTIONS,
        build: |c| Ok(Box::new(ftlab_ftl::dftl::Dftl::new(c.geo, c.opts)?)),
    },
    FtlEntry {
        id: "tpm",
        description: "TPM: DFTL with a cache of whole translation pages and one write pointer per translation page",
        source: "tpm.txt §III",
        options: ftlab_ftl::tpm::OPTIONS,
        build: |c| Ok(Box::new(ftlab_ftl::tpm::Tpm::new(c.geo, c.opts)?)),
    },
    FtlEntry {
        id: "dac",
        description: "DAC: page mapping with K regions by update frequency, greedy GC",
        source: "superblock-ftl.txt §2.4 (Chiang et al. 1999)",
        options: ftlab_ftl::dac::OPTIONS,
        build: |c| Ok(Box::new(ftlab_ftl::dac::DacFtl::new(c.geo, c.opts)?)),
    },
    FtlEntry {
        id: "superblock",
        description: "Superblock FTL: N logical blocks share N+M physical blocks, page-mapped \
                      inside; PMD/PT in spare areas, LRU map cache, MergeSome/MergeAll",
        source: "superblock-ftl.txt §4",
        options: ftlab_ftl::superblock::OPTIONS,
        build: |c| {
            Ok(Box::new(ftlab_ftl::superblock::SuperblockFtl::new(
                c.geo,
                c.latencies,
                c.opts,
            )?))
        },
    },
];

/// Every buffer, in the order `ftlab list` shows them.
pub const BUFFERS: &[BufferEntry] = &[
    BufferEntry {
        id: "none",
        description: "no buffer: host requests go straight to the FTL",
        source: "-",
        options: &[],
        build: |_| Ok(Box::new(Passthrough::default())),
    },
    BufferEntry {
        id: "lru",
        description: "page LRU write buffer, evicts single pages",
        source: "superblock-ftl.txt §5.3; co-op-buffer-ftl.txt §3",
        options: ftlab_buffer::lru::OPTIONS,
        build: |c| Ok(Box::new(ftlab_buffer::lru::new(c.geo, c.opts)?)),
    },
    BufferEntry {
        id: "clash",
        description: "C-lash: p-space of pages + b-space of blocks; largest group to the \
                      b-space (free block, switch, or LRU block flushed with a late merge)",
        source: "c-lash.txt §3",
        options: ftlab_buffer::clash::OPTIONS,
        build: |c| Ok(Box::new(ftlab_buffer::clash::Clash::new(c.geo, c.opts)?)),
    },
    BufferEntry {
        id: "fab",
        description: "FAB: block-level, victim = block with most pages (LRU on ties), no padding",
        source: "co-op-buffer-ftl.txt §3 (Jo et al. 2006)",
        options: ftlab_buffer::fab::OPTIONS,
        build: |c| Ok(Box::new(ftlab_buffer::fab::new(c.geo, c.opts)?)),
    },
    BufferEntry {
        id: "bplru",
        description: "BPLRU: block LRU + LRU compensation, victims padded into complete blocks",
        source: "co-op-buffer-ftl.txt §3 (Kim and Ahn 2008)",
        options: ftlab_buffer::bplru::OPTIONS,
        build: |c| Ok(Box::new(ftlab_buffer::bplru::new_bplru(c.geo, c.opts)?)),
    },
    BufferEntry {
        id: "blru",
        description: "BLRU: BPLRU without padding",
        source: "co-op-buffer-ftl.txt §6",
        options: ftlab_buffer::bplru::OPTIONS,
        build: |c| Ok(Box::new(ftlab_buffer::bplru::new_blru(c.geo, c.opts)?)),
    },
    BufferEntry {
        id: "bpref",
        description: "BP-REF: page LRU, victim window, pads dense victim blocks",
        source: "co-op-buffer-ftl.txt §3 (Seo and Shin 2008)",
        options: ftlab_buffer::bpref::OPTIONS,
        build: |c| Ok(Box::new(ftlab_buffer::bpref::new(c.geo, c.opts)?)),
    },
    BufferEntry {
        id: "bagc",
        description: "BA-GC buffer side: 3-region (hot/warm/cold) block LRU, no padding",
        source: "co-op-buffer-ftl.txt §3 (Lee, Shin and Kim 2008)",
        options: ftlab_buffer::bagc::OPTIONS,
        build: |c| Ok(Box::new(ftlab_buffer::bagc::new(c.geo, c.opts)?)),
    },
    BufferEntry {
        id: "coop",
        description: "CO-OP: block LRU + LRU compensation, pads only when the FTL says a full merge would follow",
        source: "co-op-buffer-ftl.txt §5 (Algorithms 1 and 2)",
        options: ftlab_buffer::coop::OPTIONS,
        build: |c| Ok(Box::new(ftlab_buffer::coop::new(c.geo, c.opts)?)),
    },
];

/// Timing models: id and description.
pub const TIMINGS: &[(&str, &str)] = &[
    (
        "serial",
        "the papers' model: one flash operation at a time, requests first-come first-served",
    ),
    (
        "parallel",
        "channels x dies: array time on the die, page transfer on the channel",
    ),
];

/// Looks up an FTL.
pub fn ftl(id: &str) -> Option<&'static FtlEntry> {
    FTLS.iter().find(|e| e.id == id)
}

/// Looks up a buffer.
pub fn buffer(id: &str) -> Option<&'static BufferEntry> {
    BUFFERS.iter().find(|e| e.id == id)
}

/// Ids of all FTLs, comma-separated (for error messages).
pub fn ftl_ids() -> String {
    FTLS.iter().map(|e| e.id).collect::<Vec<_>>().join(", ")
}

/// Ids of all buffers, comma-separated.
pub fn buffer_ids() -> String {
    BUFFERS.iter().map(|e| e.id).collect::<Vec<_>>().join(", ")
}

/// Transitional: typed options from the string options the registry still resolves.
fn legacy<O: ftlab_core::options::Options>(o: &SchemeOptions) -> Result<O, SchemeError> {
    let map = o
        .values()
        .iter()
        .map(|(k, v)| (k.clone(), ftlab_core::options::value_of_text(v)))
        .collect();
    ftlab_core::options::resolve(o.scheme(), &map)
}
