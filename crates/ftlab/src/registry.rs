//! The one registry of schemes: FTLs, buffers and timing models by id, with what each
//! can do ([`Capabilities`]). The CLI, the listings, the docs, the swarm and the tests
//! all read it; no other code matches on scheme names. Adding a scheme is one file and
//! one entry here (docs/adding-a-scheme.md); the conformance suite and the swarm pick it
//! up with no new test code.

use ftlab_buffer as b;
use ftlab_core::buffer::{Buffer, Passthrough};
use ftlab_core::ftl::Ftl;
use ftlab_core::options::{resolve, BuildContext, NoOptions, OptionMap, OptionsDef, SchemeError};
use ftlab_ftl as f;

/// How a scheme comes back after a power loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// From flash alone, with any options.
    Always,
    /// Not at all: runs with power losses are refused.
    Never,
    /// Only with option `option` set to `value` (or resolving to it).
    WithOption {
        /// The option.
        option: &'static str,
        /// The value it needs.
        value: &'static str,
    },
}

/// What an FTL can do, for code that must not match on names (tests, the swarm, the
/// CLI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Maps whole logical blocks (merges, not page GC, reclaim space).
    pub block_mapped: bool,
    /// Keeps the page map in translation pages on flash, cached in RAM (DFTL, TPM).
    pub demand_paged: bool,
    /// Answers a buffer's merge queries (co-op-buffer-ftl.txt Table 3).
    pub merge_queries: bool,
    /// Power-loss recovery.
    pub recovery: Recovery,
    /// Whether the FTL lets the engine pack its spare tags into one word a page
    /// ([`ftlab_core::ftl::Ftl::packed_tags`], which this must equal): the memory
    /// estimate counts 4-byte tags and a narrow oracle for it, before it is built.
    pub packed_tags: bool,
}

impl Capabilities {
    /// The capabilities in words, as `ftlab list` and `docs/schemes.md` show them
    /// (`block-mapped, answers CO-OP merge queries, recovers from a power loss`).
    pub fn describe(&self) -> String {
        let mut v = vec![if self.block_mapped {
            "block-mapped"
        } else {
            "page-mapped"
        }
        .to_string()];
        if self.demand_paged {
            v.push("demand-paged map".into());
        }
        if self.merge_queries {
            v.push("answers CO-OP merge queries".into());
        }
        v.push(match self.recovery {
            Recovery::Always => "recovers from a power loss".into(),
            Recovery::Never => "no power-loss recovery".into(),
            Recovery::WithOption { option, value } => {
                format!("recovers from a power loss with `{option} = {value}`")
            }
        });
        v.join(", ")
    }
}

/// The smallest workable over-provisioning and geometry are not declared here: each
/// constructor refuses what it cannot run on (naming the option that would fix it), and
/// [`crate::sim::smallest_op`] finds the least over-provisioning a scheme accepts by
/// asking it, so the figure cannot drift from the code.
const PAGE_MAPPED: Capabilities = Capabilities {
    block_mapped: false,
    demand_paged: false,
    merge_queries: false,
    recovery: Recovery::Always,
    packed_tags: false,
};

/// Page mapping that programs only the tags it is handed (`page`, `dac`).
const PAGE_MAPPED_PACKED: Capabilities = Capabilities {
    packed_tags: true,
    ..PAGE_MAPPED
};

const BLOCK_MAPPED: Capabilities = Capabilities {
    block_mapped: true,
    ..PAGE_MAPPED
};

const LOG_BLOCKS: Capabilities = Capabilities {
    merge_queries: true,
    ..BLOCK_MAPPED
};

const DEMAND_PAGED: Capabilities = Capabilities {
    demand_paged: true,
    ..PAGE_MAPPED
};

/// An FTL constructor: from the run's context and the options as given (checked
/// against the entry's options type).
pub type BuildFtl = fn(&BuildContext<'_>, &OptionMap) -> Result<Box<dyn Ftl>, SchemeError>;

/// A buffer constructor.
pub type BuildBuffer = fn(&BuildContext<'_>, &OptionMap) -> Result<Box<dyn Buffer>, SchemeError>;

/// A registered FTL.
pub struct FtlEntry {
    /// Id used with `--ftl`.
    pub id: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Paper and section.
    pub source: &'static str,
    /// What it can do.
    pub caps: Capabilities,
    /// Its options.
    pub options: OptionsDef,
    /// Constructor, from options as given (checked against [`FtlEntry::options`]).
    pub build: BuildFtl,
}

/// Whether a buffer pads the blocks it flushes with pages read from flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    /// Never: groups go to the FTL as they are.
    Never,
    /// Every victim block is completed (BPLRU).
    Always,
    /// Only some victims: dense blocks (BP-REF), or when the FTL says a full merge would
    /// follow (CO-OP).
    Sometimes,
}

/// A registered write buffer.
pub struct BufferEntry {
    /// Id used with `--buffer`.
    pub id: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Paper and section.
    pub source: &'static str,
    /// Whether it pads flushed blocks.
    pub padding: Padding,
    /// Its options.
    pub options: OptionsDef,
    /// Constructor, from options as given.
    pub build: BuildBuffer,
}

impl BufferEntry {
    /// Whether the buffer holds data (it has a `size`): everything but `none`.
    pub fn holds_data(&self) -> bool {
        self.options.fields().iter().any(|f| f.name == "size")
    }
}

/// The FTLs of the papers, followed by `$extra` entries.
macro_rules! ftls {
    ($($extra:expr),* $(,)?) => { [
    FtlEntry {
        id: f::page::ID,
        description: "ideal page mapping: L2P in RAM, one active block, greedy GC",
        source: "baseline of all papers; tpm.txt §II",
        caps: PAGE_MAPPED_PACKED,
        options: OptionsDef::of::<f::page::PageOptions>(),
        build: |c, o| Ok(Box::new(
            f::page::PageFtl::new(c.geo, &resolve(f::page::ID, o)?)?.with_gc_seed(c.seed),
        )),
    },
    FtlEntry {
        id: f::block::ID,
        description: "block mapping: fixed offsets, a block rewrite per updated group",
        source: "cach-ftl.txt §2, §4.2.3, §5",
        caps: BLOCK_MAPPED,
        options: OptionsDef::of::<f::block::BlockOptions>(),
        build: |c, o| Ok(Box::new(f::block::BlockFtl::new(c.geo, &resolve(f::block::ID, o)?)?)),
    },
    FtlEntry {
        id: f::bast::ID,
        description: "log block scheme: one log block per data block, LRU reclaim",
        source: "superblock-ftl.txt §2.3-2.4; co-op-buffer-ftl.txt §2.4.1",
        caps: LOG_BLOCKS,
        options: OptionsDef::of::<f::bast::BastOptions>(),
        build: |c, o| Ok(Box::new(f::bast::Bast::new(c.geo, &resolve(f::bast::ID, o)?)?)),
    },
    FtlEntry {
        id: f::fast::ID,
        description: "FAST: shared RW log blocks (round robin) and a sequential log",
        source: "co-op-buffer-ftl.txt §2.4.2; superblock-ftl.txt §2.4",
        caps: LOG_BLOCKS,
        options: OptionsDef::of::<f::fast::FastOptions>(),
        build: |c, o| Ok(Box::new(f::fast::Fast::new(c.geo, &resolve(f::fast::ID, o)?)?)),
    },
    FtlEntry {
        id: f::cach::ID,
        description: "CACH-FTL: groups above a threshold to a block-mapped region (in-place \
                      rewrite), smaller ones to a page-mapped over-provisioning region; \
                      sync and idle-time interruptible GC",
        source: "cach-ftl.txt §4",
        caps: BLOCK_MAPPED,
        options: OptionsDef::of::<f::cach::CachOptions>(),
        build: |c, o| Ok(Box::new(f::cach::CachFtl::new(c.geo, &resolve(f::cach::ID, o)?)?)),
    },
    FtlEntry {
        id: f::dftl::ID,
        description: "DFTL: page table in translation pages, GTD in RAM, LRU cache of single entries",
        source: "tpm.txt §II; Gupta et al. ASPLOS'09",
        caps: DEMAND_PAGED,
        options: OptionsDef::of::<f::dftl::DftlOptions>(),
        build: |c, o| Ok(Box::new(
            f::dftl::Dftl::new(c.geo, &resolve(f::dftl::ID, o)?)?.with_gc_seed(c.seed),
        )),
    },
    FtlEntry {
        id: f::tpm::ID,
        description: "TPM: DFTL with a cache of whole translation pages and one write pointer per translation page",
        source: "tpm.txt §III",
        caps: DEMAND_PAGED,
        options: OptionsDef::of::<f::tpm::TpmOptions>(),
        build: |c, o| Ok(Box::new(
            f::tpm::Tpm::new(c.geo, &resolve(f::tpm::ID, o)?)?.with_gc_seed(c.seed),
        )),
    },
    FtlEntry {
        id: f::dac::ID,
        description: "DAC: page mapping with K regions by update frequency, greedy GC",
        source: "superblock-ftl.txt §2.4 (Chiang et al. 1999)",
        caps: PAGE_MAPPED_PACKED,
        options: OptionsDef::of::<f::dac::DacOptions>(),
        build: |c, o| Ok(Box::new(
            f::dac::DacFtl::new(c.geo, &resolve(f::dac::ID, o)?)?.with_gc_seed(c.seed),
        )),
    },
    FtlEntry {
        id: f::superblock::ID,
        description: "Superblock FTL: N logical blocks share N+M physical blocks, page-mapped \
                      inside; PMD/PT in spare areas, LRU map cache, MergeSome/MergeAll",
        source: "superblock-ftl.txt §4",
        caps: Capabilities {
            recovery: Recovery::WithOption {
                option: "snapshots",
                value: "on",
            },
            ..BLOCK_MAPPED
        },
        options: OptionsDef::of::<f::superblock::SuperblockOptions>(),
        build: |c, o| {
            let opts = resolve(f::superblock::ID, o)?;
            Ok(Box::new(f::superblock::SuperblockFtl::new(c.geo, c.latencies, &opts)?))
        },
    },
    $($extra),*
    ] };
}

/// Every FTL, in the order `ftlab list` shows them (with the `example-scheme` feature,
/// which the test build turns on, the example FTL last).
#[cfg(not(feature = "example-scheme"))]
pub const FTLS: &[FtlEntry] = BUILTIN_FTLS;

/// The FTLs every build has (what `docs/schemes.md` documents).
pub const BUILTIN_FTLS: &[FtlEntry] = &ftls!();

/// Every FTL, in the order `ftlab list` shows them, and the example FTL.
#[cfg(feature = "example-scheme")]
pub const FTLS: &[FtlEntry] = &ftls!(FtlEntry {
    id: crate::example::ID,
    description: "the smallest complete FTL: page mapping, greedy GC by a scan (test build only)",
    source: "docs/adding-a-scheme.md",
    caps: Capabilities {
        recovery: Recovery::Never,
        ..PAGE_MAPPED
    },
    options: OptionsDef::of::<crate::example::ExampleOptions>(),
    build: |c, o| Ok(Box::new(crate::example::ExampleFtl::new(
        c.geo,
        &resolve(crate::example::ID, o)?
    )?)),
});

/// Every buffer, in the order `ftlab list` shows them.
pub const BUFFERS: &[BufferEntry] = &[
    BufferEntry {
        id: "none",
        description: "no buffer: host requests go straight to the FTL",
        source: "-",
        padding: Padding::Never,
        options: OptionsDef::of::<NoOptions>(),
        build: |_, o| {
            resolve::<NoOptions>("none", o)?;
            Ok(Box::new(Passthrough::default()))
        },
    },
    BufferEntry {
        id: b::lru::ID,
        description: "page LRU write buffer, evicts single pages",
        source: "superblock-ftl.txt §5.3; co-op-buffer-ftl.txt §3",
        padding: Padding::Never,
        options: OptionsDef::of::<b::lru::LruOptions>(),
        build: |c, o| Ok(Box::new(b::lru::new(c.geo, &resolve(b::lru::ID, o)?)?)),
    },
    BufferEntry {
        id: b::clash::ID,
        description: "C-lash: p-space of pages + b-space of blocks; largest group to the \
                      b-space (free block, switch, or LRU block flushed with a late merge)",
        source: "c-lash.txt §3",
        padding: Padding::Never,
        options: OptionsDef::of::<b::clash::ClashOptions>(),
        build: |c, o| Ok(Box::new(b::clash::Clash::new(c.geo, &resolve(b::clash::ID, o)?)?)),
    },
    BufferEntry {
        id: b::fab::ID,
        description: "FAB: block-level, victim = block with most pages (LRU on ties), no padding",
        source: "co-op-buffer-ftl.txt §3 (Jo et al. 2006)",
        padding: Padding::Never,
        options: OptionsDef::of::<b::fab::FabOptions>(),
        build: |c, o| Ok(Box::new(b::fab::new(c.geo, &resolve(b::fab::ID, o)?)?)),
    },
    BufferEntry {
        id: b::bplru::BPLRU_ID,
        description: "BPLRU: block LRU + LRU compensation, victims padded into complete blocks",
        source: "co-op-buffer-ftl.txt §3 (Kim and Ahn 2008)",
        padding: Padding::Always,
        options: OptionsDef::of::<b::bplru::BplruOptions>(),
        build: |c, o| Ok(Box::new(b::bplru::new_bplru(c.geo, &resolve(b::bplru::BPLRU_ID, o)?)?)),
    },
    BufferEntry {
        id: b::bplru::BLRU_ID,
        description: "BLRU: BPLRU without padding",
        source: "co-op-buffer-ftl.txt §6",
        padding: Padding::Never,
        options: OptionsDef::of::<b::bplru::BplruOptions>(),
        build: |c, o| Ok(Box::new(b::bplru::new_blru(c.geo, &resolve(b::bplru::BLRU_ID, o)?)?)),
    },
    BufferEntry {
        id: b::bpref::ID,
        description: "BP-REF: page LRU, victim window, pads dense victim blocks",
        source: "co-op-buffer-ftl.txt §3 (Seo and Shin 2008)",
        padding: Padding::Sometimes,
        options: OptionsDef::of::<b::bpref::BprefOptions>(),
        build: |c, o| Ok(Box::new(b::bpref::new(c.geo, &resolve(b::bpref::ID, o)?)?)),
    },
    BufferEntry {
        id: b::bagc::ID,
        description: "BA-GC buffer side: 3-region (hot/warm/cold) block LRU, no padding",
        source: "co-op-buffer-ftl.txt §3 (Lee, Shin and Kim 2008)",
        padding: Padding::Never,
        options: OptionsDef::of::<b::bagc::BagcOptions>(),
        build: |c, o| Ok(Box::new(b::bagc::new(c.geo, &resolve(b::bagc::ID, o)?)?)),
    },
    BufferEntry {
        id: b::coop::ID,
        description: "CO-OP: block LRU + LRU compensation, pads only when the FTL says a full merge would follow",
        source: "co-op-buffer-ftl.txt §5 (Algorithms 1 and 2)",
        padding: Padding::Sometimes,
        options: OptionsDef::of::<b::coop::CoopOptions>(),
        build: |c, o| Ok(Box::new(b::coop::new(c.geo, &resolve(b::coop::ID, o)?)?)),
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
        "channels x dies (default 8 x 4, --channels/--dies): array time on the die, page \
         transfer on the channel",
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

fn option_rows(out: &mut String, def: &OptionsDef) {
    use std::fmt::Write as _;
    let fields = def.fields();
    if fields.is_empty() {
        out.push_str("No options.\n\n");
        return;
    }
    out.push_str("| option | default | allowed | meaning |\n|---|---|---|---|\n");
    for f in fields {
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} |",
            f.name,
            f.default,
            f.allowed(),
            f.help.replace('|', "\\|")
        );
    }
    out.push('\n');
}

/// The reference of every built-in scheme and its options, in markdown: what
/// `docs/schemes.md` holds (a test keeps the file equal to this) and `ftlab list
/// --markdown` prints. Generated from the registry and the options types, so the
/// documentation cannot drift from the code.
pub fn reference_markdown() -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "# Schemes and their options\n\n\
         Generated from the registry (`ftlab list --markdown`); do not edit by hand. Set \
         an option with `--set ftl_options.KEY=VALUE` or `--set buffer_options.KEY=VALUE`, \
         or in a `[ftl_options]` / `[buffer_options]` table of a config file.\n\n## FTLs\n\n",
    );
    for e in BUILTIN_FTLS {
        let caps = e.caps.describe();
        let mut first = caps.chars();
        let caps: String = first
            .next()
            .map(|c| c.to_ascii_uppercase())
            .into_iter()
            .chain(first)
            .collect();
        let _ = write!(
            out,
            "### `{}`\n\n{}. Source: {}.\n\n{caps}.\n\n",
            e.id, e.description, e.source,
        );
        option_rows(&mut out, &e.options);
    }
    out.push_str("## Write buffers\n\n");
    for e in BUFFERS {
        let pads = match e.padding {
            Padding::Never => "never pads",
            Padding::Always => "pads every victim block",
            Padding::Sometimes => "pads some victim blocks",
        };
        let _ = write!(
            out,
            "### `{}`\n\n{}. Source: {}. It {pads}.\n\n",
            e.id, e.description, e.source
        );
        option_rows(&mut out, &e.options);
    }
    out.push_str(
        "## Shared counters\n\nEvery FTL and buffer keeps these (0 where a scheme has no \
         such event); they add up across power losses. The report groups them under \
         `ftl.gc`, `ftl.merges`, `ftl.map_cache`, `ftl.translation` and `buffer`; \
         scheme-specific figures are under `ftl.extra` and `buffer.extra`.\n\n\
         | counter | kept by | unit |\n|---|---|---|\n",
    );
    for (key, unit) in ftlab_core::ftl::FtlStats::COUNTERS {
        let _ = writeln!(out, "| `{key}` | FTL | {unit} |");
    }
    for (key, unit) in ftlab_core::buffer::BufferStats::COUNTERS {
        let _ = writeln!(out, "| `{key}` | buffer | {unit} |");
    }
    out
}
