//! NAND presets: page geometry and operation latencies taken from the papers' tables.
//!
//! | preset | source |
//! |---|---|
//! | `slc-k9f1g16u0m` | superblock-ftl.txt Table I |
//! | `mlc-k9gag08u0m` | superblock-ftl.txt Table I |
//! | `slc-k9wag08u1m` | co-op-buffer-ftl.txt Table 1 |
//! | `mlc-k9gag08uxm` | co-op-buffer-ftl.txt Table 1 |
//! | `micron-2k` | c-lash.txt §4.4 |
//! | `agrawal-4k` | cach-ftl.txt §5.1 |
//! | `flashsim-2k` | tpm.txt Table I |
//! | `mqsim-8k` | MQSim's default SSD (an SSD organisation, not a paper's chip) |
//!
//! `mqsim-8k` names a whole SSD: 8 channels x 4 chips x 2 dies x 2 planes, 8 KiB pages,
//! t_read 75 µs, t_prog 750 µs, t_erase 3.8 ms, 333 MB/s channels (MQSim's defaults, as
//! DESIGN.md cites them). Like the papers' presets, its read and program latencies are
//! whole-operation costs: the array time plus one page's transfer at the channel rate
//! (8 KiB at 333 MB/s = 24.6 µs), which parallel timing splits off again; under
//! `--timing parallel` it brings its organisation (8 channels x 8 dies, 317.6 MiB/s)
//! unless `--channels`, `--dies`, `--planes` or `--channel-mib-s` say otherwise. Its
//! 2 planes per die run programs, reads and erases together (multi-plane operations,
//! see [`crate::timing`]). Left open (not
//! modelled): transfers of less than a page (a 4 KiB read moves the whole 8 KiB
//! page); 256 pages per block and 448 spare bytes are this preset's choices, not
//! MQSim's figures.
//!
//! Endurance (`pe_cycles`, issue 23 item 4): the rated program/erase cycles per block.
//! None of the papers' tables gives one, and the collection holds no datasheets; the
//! figures are the usual class values (c-lash.txt §2: "the limited number of
//! write/erase cycles (from 10^4 to 10^6)"): 100,000 for the SLC parts and models,
//! 10,000 for the 2-bit MLC parts and for `mqsim-8k` (MQSim's default SSD has no
//! endurance figure). They are not used by default: every FTL's `pe_limit` (0 = off)
//! retires blocks at the limit it is given ([`crate::wear::Retirement`]), and `--until-worn-out` gives it the
//! preset's figure when it is not set.
//!
//! Initial bad blocks (`bad_block_percent`, issue 23 item 4): the share of blocks that
//! may be bad when the part ships. Not in the papers or the collection either; 2% for
//! every preset is the typical datasheet figure for SLC and MLC NAND of these parts'
//! generation (a guaranteed minimum of valid blocks of about 98%, e.g. 1,004 of 1,024
//! or 4,016 of 4,096 blocks), used as a class figure like `pe_cycles`. Runs use it
//! only when they ask for initial bad blocks (config `bad_blocks`, off by default;
//! `nand_params.bad_block_percent` overrides the figure), so no existing report changes.
//!
//! Choice left open: only the superblock paper gives a separate spare-area read latency.
//! For the other presets a spare read costs a full page read (`spare_read_us = read_us`),
//! the conservative reading; override it with `--set nand_params.spare_read_us=...`.

use crate::units::Nanos;
use serde::Serialize;

/// One NAND part as the papers describe it.
#[derive(Clone, Debug, Serialize)]
pub struct NandPreset {
    /// Name used on the command line.
    pub id: &'static str,
    /// One-line description for `ftlab list`.
    pub description: &'static str,
    /// Where the numbers come from.
    pub source: &'static str,
    /// Data bytes per page.
    pub page_size: u32,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Spare (OOB) bytes per page.
    pub spare_bytes: u32,
    /// Page read latency in µs.
    pub read_us: f64,
    /// Spare-area-only read latency in µs.
    pub spare_read_us: f64,
    /// Page program latency in µs.
    pub program_us: f64,
    /// Block erase latency in µs.
    pub erase_us: f64,
    /// The SSD organisation the preset names, used by parallel timing unless the
    /// configuration sets its own; `None` for the papers' single chips.
    pub organisation: Option<Organisation>,
    /// Rated program/erase cycles per block (module docs: class figures).
    pub pe_cycles: u32,
    /// Initial bad blocks at shipment, in percent of the blocks (module docs: a class
    /// figure). Used only when a run asks for initial bad blocks (`bad_blocks`).
    pub bad_block_percent: f64,
}

/// Channels, dies and channel rate of a preset that names a whole SSD.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Organisation {
    /// Channels.
    pub channels: u32,
    /// Dies per channel (chips x dies per chip).
    pub dies_per_channel: u32,
    /// Planes per die (multi-plane programs).
    pub planes_per_die: u32,
    /// Channel bandwidth in MiB/s.
    pub channel_mib_s: f64,
}

/// Every preset of SCHEMES.md, in the order `ftlab list` shows them.
pub const PRESETS: &[NandPreset] = &[
    NandPreset {
        id: "slc-k9f1g16u0m",
        description: "Samsung SLC K9F1G16U0M, 2 KiB pages, 64 pages/block",
        source: "superblock-ftl.txt Table I",
        page_size: 2048,
        pages_per_block: 64,
        spare_bytes: 64,
        read_us: 129.7,
        spare_read_us: 30.5,
        program_us: 298.9,
        erase_us: 1998.7,
        organisation: None,
        pe_cycles: 100_000,
        bad_block_percent: 2.0,
    },
    NandPreset {
        id: "mlc-k9gag08u0m",
        description: "Samsung MLC K9GAG08U0M, 4 KiB pages, 128 pages/block",
        source: "superblock-ftl.txt Table I",
        page_size: 4096,
        pages_per_block: 128,
        spare_bytes: 128,
        read_us: 165.6,
        spare_read_us: 63.2,
        program_us: 905.8,
        erase_us: 1500.0,
        organisation: None,
        pe_cycles: 10_000,
        bad_block_percent: 2.0,
    },
    NandPreset {
        id: "slc-k9wag08u1m",
        description: "Samsung SLC K9WAG08U1M, 2 KiB pages, 64 pages/block",
        source: "co-op-buffer-ftl.txt Table 1",
        page_size: 2048,
        pages_per_block: 64,
        spare_bytes: 64,
        read_us: 72.8,
        spare_read_us: 72.8,
        program_us: 252.8,
        erase_us: 1500.0,
        organisation: None,
        pe_cycles: 100_000,
        bad_block_percent: 2.0,
    },
    NandPreset {
        id: "mlc-k9gag08uxm",
        description: "Samsung MLC K9GAG08UXM, 4 KiB pages, 128 pages/block",
        source: "co-op-buffer-ftl.txt Table 1",
        page_size: 4096,
        pages_per_block: 128,
        spare_bytes: 128,
        read_us: 165.6,
        spare_read_us: 165.6,
        program_us: 905.6,
        erase_us: 1500.0,
        organisation: None,
        pe_cycles: 10_000,
        bad_block_percent: 2.0,
    },
    NandPreset {
        id: "micron-2k",
        description: "Micron SLC as used by C-lash, 2 KiB pages, 64 pages/block",
        source: "c-lash.txt §4.4",
        page_size: 2048,
        pages_per_block: 64,
        spare_bytes: 64,
        read_us: 130.9,
        spare_read_us: 130.9,
        program_us: 405.9,
        erase_us: 2000.0,
        organisation: None,
        pe_cycles: 100_000,
        bad_block_percent: 2.0,
    },
    NandPreset {
        id: "agrawal-4k",
        description: "Agrawal et al. SSD model as used by CACH-FTL, 4 KiB pages, 64 pages/block",
        source: "cach-ftl.txt §5.1",
        page_size: 4096,
        pages_per_block: 64,
        spare_bytes: 128,
        read_us: 25.0,
        spare_read_us: 25.0,
        program_us: 200.0,
        erase_us: 1500.0,
        organisation: None,
        pe_cycles: 100_000,
        bad_block_percent: 2.0,
    },
    NandPreset {
        id: "flashsim-2k",
        description: "FlashSim defaults as used by TPM and DFTL, 2 KiB pages, 64 pages/block",
        source: "tpm.txt Table I",
        page_size: 2048,
        pages_per_block: 64,
        spare_bytes: 64,
        read_us: 29.0,
        spare_read_us: 29.0,
        program_us: 205.9,
        erase_us: 1500.0,
        organisation: None,
        pe_cycles: 100_000,
        bad_block_percent: 2.0,
    },
    NandPreset {
        id: "mqsim-8k",
        description: "MQSim's default SSD: 8 channels x 4 chips x 2 dies, 8 KiB pages, \
                      256 pages/block, 333 MB/s channels",
        source: "MQSim defaults (DESIGN.md); array + 8 KiB transfer at 333 MB/s",
        page_size: 8192,
        pages_per_block: 256,
        spare_bytes: 448,
        // 75 µs array + 24.6 µs transfer (8192 B / 333e6 B/s).
        read_us: 99.6,
        spare_read_us: 99.6,
        // 750 µs array + 24.6 µs transfer.
        program_us: 774.6,
        erase_us: 3800.0,
        organisation: Some(Organisation {
            channels: 8,
            dies_per_channel: 8,
            planes_per_die: 2,
            // 333 MB/s = 333e6 / 2^20 MiB/s.
            channel_mib_s: 317.574,
        }),
        pe_cycles: 10_000,
        bad_block_percent: 2.0,
    },
];

/// The preset used when none is named: the superblock paper's SLC part, the one with
/// the most complete timing (it has a spare-read latency).
pub const DEFAULT_PRESET: &str = "slc-k9f1g16u0m";

/// Looks a preset up by id.
pub fn preset(id: &str) -> Option<&'static NandPreset> {
    PRESETS.iter().find(|p| p.id == id)
}

/// Operation latencies in nanoseconds, resolved from a preset and overrides.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Latencies {
    /// Page read.
    pub read: Nanos,
    /// Spare-area read.
    pub spare_read: Nanos,
    /// Page program.
    pub program: Nanos,
    /// Block erase.
    pub erase: Nanos,
}

impl NandPreset {
    /// The preset's latencies in nanoseconds.
    pub fn latencies(&self) -> Latencies {
        Latencies {
            read: Nanos::from_us_f64(self.read_us),
            spare_read: Nanos::from_us_f64(self.spare_read_us),
            program: Nanos::from_us_f64(self.program_us),
            erase: Nanos::from_us_f64(self.erase_us),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_presets_with_unique_ids() {
        assert_eq!(PRESETS.len(), 8);
        for (i, p) in PRESETS.iter().enumerate() {
            assert!(PRESETS[i + 1..].iter().all(|q| q.id != p.id), "{}", p.id);
            assert!(p.page_size.is_power_of_two());
            assert!(p.spare_read_us <= p.read_us);
            assert!(p.pe_cycles >= 1_000, "{}", p.id);
        }
        assert!(preset(DEFAULT_PRESET).is_some());
    }
}
