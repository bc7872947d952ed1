//! Address split and spare-area layout of Superblock FTL (superblock-ftl.txt §4.2.1-§4.2.3,
//! Fig. 5-7, Table III).
//!
//! A logical page splits into superblock number, PGD index (the logical block inside the
//! superblock), PMD index (high `m` bits of the page offset) and PTE index (low `t`
//! bits). The spare area of every programmed page holds DI (bad-block marker, logical
//! sector number, ECC), the PBMT (physical block numbers of the superblock, 24 bits
//! each), the PMD (`2^m` entries) and one PT (`2^t` entries); PDEs and PTEs are a block
//! index into the PBMT plus a page index. Field groups are rounded up to whole bytes as
//! Table III does.
//!
//! Choices the paper leaves open:
//! - The bad-block marker is 1 byte for `slc` (Table III's bit count is 8; its "2" bytes
//!   would make the SLC total 65, not the 64 it states) and 2 bytes for `mlc4`.
//! - ECC: `slc` is 1-bit ECC, 3 bytes per 512 data bytes plus 3 for the spare; `mlc4` is
//!   the 4-bit ECC of §4.2.3, 7 bytes per 512 data bytes plus 6 for the spare (56 + 6 for
//!   4 KiB pages). `auto` picks `slc` for pages up to 2 KiB and `mlc4` above, as Table
//!   III pairs them.
//! - The block-index width is the one that gives the most PBMT entries (the paper's 3
//!   bits for SLC, 4 for MLC); the largest index value means "the same block as the
//!   structure that holds it", so a superblock may use PBMT entries + 1 blocks (8 for
//!   SLC, 10 for MLC, as §4.3 states).
//! - `t` defaults to 4 (16 PTEs per PT, both columns of Table III) or the page-offset
//!   width if that is smaller; `m` is the rest of the page-offset bits
//!   (`2^(m+t) >= pages_per_block`).

/// The bad-block marker, LSN and ECC budget of one spare area (Table III, DI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ecc {
    /// Large-block SLC: 1-bit ECC (Table III, left).
    Slc,
    /// MLC with 4-bit ECC (Table III, right).
    Mlc4,
}

impl Ecc {
    /// Resolves `auto` by page size.
    pub fn auto(page_size: u32) -> Ecc {
        if page_size <= 2048 {
            Ecc::Slc
        } else {
            Ecc::Mlc4
        }
    }

    /// DI bytes for a page of `page_size` data bytes.
    pub fn di_bytes(self, page_size: u32) -> u32 {
        let sectors = page_size.div_ceil(512);
        match self {
            Ecc::Slc => 1 + 4 + 3 * sectors + 3,
            Ecc::Mlc4 => 2 + 4 + 7 * sectors + 6,
        }
    }
}

/// The split of a logical page address (Fig. 5 and 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressSplit {
    /// Logical blocks per superblock (N).
    pub n: u32,
    /// PMD index bits (m).
    pub m: u32,
    /// PTE index bits (t).
    pub t: u32,
    /// Pages per block.
    pub pages_per_block: u32,
    /// log2 of the pages per block and of N when both are powers of two (the usual
    /// case): [`AddressSplit::split`] shifts and masks instead of dividing.
    shifts: Option<(u32, u32)>,
}

/// Where one logical page's mapping lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// Logical block number.
    pub lbn: u32,
    /// Superblock number.
    pub superblock: u32,
    /// Index of the logical block inside its superblock (PGD index).
    pub pgd_index: u32,
    /// Which PT of the logical block (PMD index).
    pub pmd_index: u32,
    /// Entry inside that PT (PTE index).
    pub pte_index: u32,
}

impl Split {
    /// The page's offset inside its logical block.
    #[inline]
    pub fn lpn_offset(&self, t: u32) -> usize {
        ((self.pmd_index << t) | self.pte_index) as usize
    }
}

impl AddressSplit {
    /// The split for `n` logical blocks per superblock, `pages_per_block` pages and PTs
    /// of `2^t` entries (`t` is clamped to the page-offset width).
    pub fn new(n: u32, pages_per_block: u32, t: u32) -> AddressSplit {
        let bits = page_bits(pages_per_block);
        let t = t.min(bits);
        AddressSplit {
            n,
            m: bits - t,
            t,
            pages_per_block,
            shifts: (pages_per_block.is_power_of_two() && n.is_power_of_two())
                .then(|| (pages_per_block.trailing_zeros(), n.trailing_zeros())),
        }
    }

    /// The split's shifts when pages per block and N are powers of two (every preset,
    /// N = 4): the bits of a page offset, of a PGD index and of a PTE index (`t`).
    #[inline]
    pub fn shifts(&self) -> Option<(u32, u32, u32)> {
        self.shifts.map(|(p, n)| (p, n, self.t))
    }

    /// PMD entries (PTs per logical block).
    #[inline]
    pub fn pmd_len(&self) -> usize {
        1 << self.m
    }

    /// PTEs per PT.
    #[inline]
    pub fn pt_len(&self) -> usize {
        1 << self.t
    }

    /// Splits logical page `lpn`.
    #[inline]
    pub fn split(&self, lpn: u32) -> Split {
        let (lbn, page, superblock, pgd_index) = match self.shifts {
            Some((p, n)) => {
                let lbn = lpn >> p;
                (lbn, lpn & ((1 << p) - 1), lbn >> n, lbn & ((1 << n) - 1))
            }
            None => {
                let lbn = lpn / self.pages_per_block;
                (lbn, lpn % self.pages_per_block, lbn / self.n, lbn % self.n)
            }
        };
        Split {
            lbn,
            superblock,
            pgd_index,
            pmd_index: page >> self.t,
            pte_index: page & ((1 << self.t) - 1),
        }
    }
}

/// Bits needed for a page offset inside a block.
pub fn page_bits(pages_per_block: u32) -> u32 {
    32 - (pages_per_block - 1).leading_zeros()
}

/// The spare-area format of SB-S (Table III), computed for a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpareLayout {
    /// Spare bytes per page.
    pub spare_bytes: u32,
    /// DI bytes (bad-block marker, LSN, ECC).
    pub di_bytes: u32,
    /// Bits of a block index in a PDE or PTE.
    pub block_index_bits: u32,
    /// Bits of a page index in a PDE or PTE.
    pub page_index_bits: u32,
    /// PMD entries (2^m).
    pub pmd_entries: u32,
    /// PTEs per PT (2^t).
    pub pt_entries: u32,
    /// Bytes of the PMD (block indexes + page indexes, each group byte-rounded).
    pub pmd_bytes: u32,
    /// Bytes of one PT.
    pub pt_bytes: u32,
    /// PBMT entries (24-bit physical block numbers).
    pub pbmt_entries: u32,
    /// Bytes used by DI + PBMT + PMD + PT.
    pub used_bytes: u32,
}

impl SpareLayout {
    /// Physical blocks a superblock may use: the PBMT entries plus the block the spare
    /// itself is in (block index "same block").
    pub fn blocks_per_superblock(&self) -> u32 {
        self.pbmt_entries + 1
    }

    /// Lays out a spare area of `spare_bytes` for `split` and the given DI budget, or
    /// explains why it does not fit. `blocks` is the device's block count (a PBMT entry
    /// is 24 bits).
    pub fn compute(
        spare_bytes: u32,
        page_size: u32,
        split: &AddressSplit,
        ecc: Ecc,
        blocks: u32,
    ) -> Result<SpareLayout, String> {
        if blocks >= 1 << 24 {
            return Err(format!(
                "{blocks} physical blocks do not fit the 24-bit PBMT entries of Table III"
            ));
        }
        let di = ecc.di_bytes(page_size);
        let p = page_bits(split.pages_per_block);
        let (pmd_n, pt_n) = (split.pmd_len() as u32, split.pt_len() as u32);
        let mut best: Option<SpareLayout> = None;
        for b in 1..=8u32 {
            let pmd_bytes = (pmd_n * b).div_ceil(8) + (pmd_n * p).div_ceil(8);
            let pt_bytes = (pt_n * b).div_ceil(8) + (pt_n * p).div_ceil(8);
            let fixed = di + pmd_bytes + pt_bytes;
            if fixed > spare_bytes {
                continue;
            }
            let pbmt = ((spare_bytes - fixed) / 3).min((1 << b) - 1);
            if best.is_none_or(|l| pbmt > l.pbmt_entries) {
                best = Some(SpareLayout {
                    spare_bytes,
                    di_bytes: di,
                    block_index_bits: b,
                    page_index_bits: p,
                    pmd_entries: pmd_n,
                    pt_entries: pt_n,
                    pmd_bytes,
                    pt_bytes,
                    pbmt_entries: pbmt,
                    used_bytes: fixed + 3 * pbmt,
                });
            }
        }
        match best {
            Some(l) if l.pbmt_entries >= 1 => Ok(l),
            _ => {
                let min_fields = (pmd_n + pt_n) * (1 + p) / 8;
                Err(format!(
                    "a spare area of {spare_bytes} bytes cannot hold DI ({di} bytes), a PMD of \
                     {pmd_n} and a PT of {pt_n} entries (at least {min_fields} bytes) and one \
                     PBMT entry (3 bytes)"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_5_address_split() {
        // superblock-ftl.txt §4.2.2, Fig. 6: 64 pages per block, m = 2, t = 4,
        // superblock size 4: logical block 17, page 12.
        let s = AddressSplit::new(4, 64, 4);
        assert_eq!((s.m, s.t), (2, 4));
        let x = s.split(17 * 64 + 12);
        assert_eq!(x.lbn, 17);
        assert_eq!(x.superblock, 4);
        assert_eq!(x.pgd_index, 1);
        assert_eq!(x.pmd_index, 0);
        assert_eq!(x.pte_index, 12);
        // The last page of the block is in the last PT.
        let y = s.split(17 * 64 + 63);
        assert_eq!((y.pmd_index, y.pte_index), (3, 15));
    }

    #[test]
    fn split_by_shifts_equals_split_by_division() {
        // Powers of two take the shifts; any other block size or N divides. Both must
        // name the same place for every page.
        for (n, ppb, t) in [
            (4, 64, 4),
            (4, 128, 4),
            (8, 256, 3),
            (1, 32, 5),
            (3, 64, 4),
            (4, 96, 4),
            (5, 192, 2),
        ] {
            let s = AddressSplit::new(n, ppb, t);
            assert_eq!(
                s.shifts.is_some(),
                n.is_power_of_two() && ppb.is_power_of_two()
            );
            let by_division = AddressSplit { shifts: None, ..s };
            for lpn in (0..5000).chain([u32::MAX / 2, u32::MAX]) {
                assert_eq!(s.split(lpn), by_division.split(lpn), "{n} {ppb} {t} {lpn}");
            }
        }
    }

    #[test]
    fn table_iii_slc_layout() {
        let s = AddressSplit::new(4, 64, 4);
        let l = SpareLayout::compute(64, 2048, &s, Ecc::auto(2048), 8192).unwrap();
        assert_eq!(l.di_bytes, 20);
        assert_eq!((l.block_index_bits, l.page_index_bits), (3, 6));
        assert_eq!((l.pmd_bytes, l.pt_bytes), (2 + 3, 6 + 12));
        assert_eq!(l.pbmt_entries, 7);
        assert_eq!(l.used_bytes, 64);
        assert_eq!(l.blocks_per_superblock(), 8);
    }

    #[test]
    fn table_iii_mlc_layout() {
        let s = AddressSplit::new(4, 128, 4);
        assert_eq!((s.m, s.t), (3, 4));
        let l = SpareLayout::compute(128, 4096, &s, Ecc::auto(4096), 8192).unwrap();
        assert_eq!(l.di_bytes, 68);
        assert_eq!((l.block_index_bits, l.page_index_bits), (4, 7));
        assert_eq!((l.pmd_bytes, l.pt_bytes), (4 + 7, 8 + 14));
        assert_eq!(l.pbmt_entries, 9);
        assert_eq!(l.used_bytes, 128);
        assert_eq!(l.blocks_per_superblock(), 10);
    }

    #[test]
    fn a_spare_area_that_is_too_small_is_refused() {
        let s = AddressSplit::new(4, 64, 4);
        let e = SpareLayout::compute(32, 2048, &s, Ecc::Slc, 8192).unwrap_err();
        assert!(e.contains("32 bytes"), "{e}");
        // MLC pages with the SLC budget of 64 spare bytes: DI alone is 68 bytes.
        let s = AddressSplit::new(4, 128, 4);
        assert!(SpareLayout::compute(64, 4096, &s, Ecc::Mlc4, 8192).is_err());
        // Too many blocks for 24-bit PBMT entries.
        assert!(SpareLayout::compute(64, 2048, &s, Ecc::Slc, 1 << 24).is_err());
    }

    #[test]
    fn tiny_blocks_use_short_tables() {
        let s = AddressSplit::new(4, 4, 4);
        assert_eq!((s.m, s.t), (0, 2));
        assert_eq!(s.split(17 * 4 + 3).pte_index, 3);
        let l = SpareLayout::compute(64, 2048, &s, Ecc::Slc, 12).unwrap();
        assert!(l.used_bytes <= 64);
        assert!(l.pbmt_entries >= 7);
    }
}
