//! Device geometry: page size, pages per block, spare bytes, physical blocks, channels
//! and dies, and the logical capacity the host sees.
//!
//! The capacity is given as a logical size plus an over-provisioning percentage: the
//! device gets `ceil(logical_blocks * (1 + op/100))` physical blocks, and never fewer
//! than `logical_blocks + min_spare_blocks` (what the FTL needs to make progress; see
//! [`GeometryBuilder::min_spare_blocks`]). Invalid combinations are a typed error, never
//! a panic.

use crate::units::{Lbn, Lpn, Pbn, Ppn};
use serde::Serialize;
use thiserror::Error;

/// Why a geometry was refused.
#[derive(Debug, Error, PartialEq)]
pub enum GeometryError {
    /// A field has an impossible value.
    #[error("invalid geometry: {field} = {value}: {why}")]
    Invalid {
        /// The config key.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is expected instead.
        why: String,
    },
}

fn invalid(field: &'static str, value: impl ToString, why: impl Into<String>) -> GeometryError {
    GeometryError::Invalid {
        field,
        value: value.to_string(),
        why: why.into(),
    }
}

/// The immutable, validated shape of a simulated device.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Geometry {
    /// Data bytes per page.
    pub page_size: u32,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Spare (OOB) bytes per page.
    pub spare_bytes: u32,
    /// Physical blocks on the device.
    pub blocks: u32,
    /// Logical pages the host can address.
    pub logical_pages: u32,
    /// Channels (parallel timing only).
    pub channels: u32,
    /// Dies per channel (parallel timing only).
    pub dies_per_channel: u32,
    /// Planes per die (parallel timing only): a die programs pages on different planes
    /// at once (multi-plane programs). Block `b` is on plane `(b / dies) % planes`.
    pub planes_per_die: u32,
}

/// Builds a [`Geometry`] from a logical size and over-provisioning.
#[derive(Clone, Debug)]
pub struct GeometryBuilder {
    /// Data bytes per page.
    pub page_size: u32,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Spare bytes per page.
    pub spare_bytes: u32,
    /// Logical capacity in bytes.
    pub logical_bytes: u64,
    /// Over-provisioning in percent of the logical capacity.
    pub op_percent: f64,
    /// Channels.
    pub channels: u32,
    /// Dies per channel.
    pub dies_per_channel: u32,
    /// Planes per die.
    pub planes_per_die: u32,
    /// Physical blocks beyond the logical ones that the device must have at least.
    pub min_spare_blocks: u32,
}

impl GeometryBuilder {
    /// Validates and produces the geometry.
    pub fn build(&self) -> Result<Geometry, GeometryError> {
        if !self.page_size.is_power_of_two() || !(512..=65536).contains(&self.page_size) {
            return Err(invalid(
                "page_size",
                self.page_size,
                "must be a power of two from 512 to 65536 bytes",
            ));
        }
        if self.pages_per_block < 2 || self.pages_per_block > 4096 {
            return Err(invalid(
                "pages_per_block",
                self.pages_per_block,
                "must be 2 to 4096",
            ));
        }
        if self.spare_bytes == 0 {
            return Err(invalid(
                "spare_bytes",
                self.spare_bytes,
                "every page needs a spare area for its LPN and version stamp",
            ));
        }
        if self.channels == 0 || self.dies_per_channel == 0 {
            return Err(invalid(
                "channels/dies",
                format!("{}x{}", self.channels, self.dies_per_channel),
                "need at least one channel and one die",
            ));
        }
        if !(1..=MAX_PLANES).contains(&self.planes_per_die) {
            return Err(invalid(
                "planes",
                self.planes_per_die,
                format!("must be 1 to {MAX_PLANES} planes per die"),
            ));
        }
        if !self.op_percent.is_finite() || !(0.0..=1000.0).contains(&self.op_percent) {
            return Err(invalid("op", self.op_percent, "must be 0 to 1000 percent"));
        }
        let block_bytes = self.page_size as u64 * self.pages_per_block as u64;
        if self.logical_bytes < block_bytes {
            return Err(invalid(
                "capacity",
                self.logical_bytes,
                format!("must hold at least one block ({block_bytes} bytes)"),
            ));
        }
        if !self.logical_bytes.is_multiple_of(self.page_size as u64) {
            return Err(invalid(
                "capacity",
                self.logical_bytes,
                format!("must be a multiple of the page size ({})", self.page_size),
            ));
        }
        let logical_pages = self.logical_bytes / self.page_size as u64;
        let logical_blocks = logical_pages.div_ceil(self.pages_per_block as u64);
        let with_op = (logical_blocks as f64 * (1.0 + self.op_percent / 100.0)).ceil() as u64;
        let blocks = with_op.max(logical_blocks + self.min_spare_blocks as u64);
        let physical_pages = blocks * self.pages_per_block as u64;
        if physical_pages >= u32::MAX as u64 {
            return Err(invalid(
                "capacity",
                self.logical_bytes,
                format!(
                    "{physical_pages} physical pages do not fit 32-bit page numbers; \
                     use a larger page size, a smaller capacity, or --fold compact to \
                     pack the blocks a trace touches into a smaller capacity"
                ),
            ));
        }
        Ok(Geometry {
            page_size: self.page_size,
            pages_per_block: self.pages_per_block,
            spare_bytes: self.spare_bytes,
            blocks: blocks as u32,
            logical_pages: logical_pages as u32,
            channels: self.channels,
            dies_per_channel: self.dies_per_channel,
            planes_per_die: self.planes_per_die,
        })
    }
}

impl Geometry {
    /// Physical pages on the device.
    #[inline]
    pub fn physical_pages(&self) -> u32 {
        self.blocks * self.pages_per_block
    }

    /// Logical blocks (the last may be partly addressable).
    #[inline]
    pub fn logical_blocks(&self) -> u32 {
        self.logical_pages.div_ceil(self.pages_per_block)
    }

    /// Bits an LPN needs on this device: enough for every logical page (at least 1).
    /// A packed spare tag keeps the version in the other `32 - lpn_bits` bits.
    pub fn lpn_bits(&self) -> u32 {
        (32 - self.logical_pages.saturating_sub(1).leading_zeros()).max(1)
    }

    /// Logical capacity in bytes.
    pub fn logical_bytes(&self) -> u64 {
        self.logical_pages as u64 * self.page_size as u64
    }

    /// Over-provisioned blocks (physical minus logical).
    pub fn spare_blocks(&self) -> u32 {
        self.blocks - self.logical_blocks()
    }

    /// The block holding a physical page.
    #[inline]
    pub fn block_of(&self, ppn: Ppn) -> Pbn {
        Pbn(ppn.0 / self.pages_per_block)
    }

    /// The offset of a physical page inside its block.
    #[inline]
    pub fn offset_of(&self, ppn: Ppn) -> u32 {
        ppn.0 % self.pages_per_block
    }

    /// The physical page at `offset` of `pbn`.
    #[inline]
    pub fn ppn(&self, pbn: Pbn, offset: u32) -> Ppn {
        debug_assert!(offset < self.pages_per_block);
        Ppn(pbn.0 * self.pages_per_block + offset)
    }

    /// The logical block of a logical page.
    #[inline]
    pub fn lbn_of(&self, lpn: Lpn) -> Lbn {
        Lbn(lpn.0 / self.pages_per_block)
    }

    /// The offset of a logical page inside its logical block.
    #[inline]
    pub fn lpn_offset(&self, lpn: Lpn) -> u32 {
        lpn.0 % self.pages_per_block
    }

    /// Total dies (channels x dies per channel).
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }

    /// Total planes (dies x planes per die): the units die-aware allocation deals
    /// writes to. Block `b` is on die `b % dies` and on the plane numbered `b % planes`
    /// over the device (plane `(b / dies) % planes_per_die` of its die).
    pub fn planes(&self) -> u32 {
        self.dies() * self.planes_per_die
    }
}

/// The most planes per die a geometry may have.
pub const MAX_PLANES: u32 = 16;

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> GeometryBuilder {
        GeometryBuilder {
            page_size: 2048,
            pages_per_block: 64,
            spare_bytes: 64,
            logical_bytes: 64 << 20,
            op_percent: 7.0,
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
            min_spare_blocks: 4,
        }
    }

    #[test]
    fn op_adds_blocks() {
        let g = builder().build().unwrap();
        assert_eq!(g.logical_pages, 32768);
        assert_eq!(g.logical_blocks(), 512);
        assert_eq!(g.blocks, (512.0f64 * 1.07).ceil() as u32);
    }

    #[test]
    fn min_spare_blocks_win_over_small_op() {
        let g = GeometryBuilder {
            op_percent: 0.0,
            ..builder()
        }
        .build()
        .unwrap();
        assert_eq!(g.blocks, 516);
    }

    #[test]
    fn impossible_geometries_are_errors() {
        let bad = [
            GeometryBuilder {
                page_size: 3000,
                ..builder()
            },
            GeometryBuilder {
                pages_per_block: 1,
                ..builder()
            },
            GeometryBuilder {
                logical_bytes: 100,
                ..builder()
            },
            GeometryBuilder {
                spare_bytes: 0,
                ..builder()
            },
            GeometryBuilder {
                op_percent: -1.0,
                ..builder()
            },
            GeometryBuilder {
                logical_bytes: 64 << 40,
                ..builder()
            },
        ];
        for b in bad {
            assert!(b.build().is_err(), "{b:?}");
        }
    }

    #[test]
    fn address_arithmetic() {
        let g = builder().build().unwrap();
        let p = g.ppn(Pbn(3), 5);
        assert_eq!(g.block_of(p), Pbn(3));
        assert_eq!(g.offset_of(p), 5);
        assert_eq!(g.lbn_of(Lpn(130)), Lbn(2));
        assert_eq!(g.lpn_offset(Lpn(130)), 2);
    }
}
