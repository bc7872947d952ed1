//! ftlab's flash translation layers. Each module opens with the paper and section it
//! implements and the choices the paper left open. Schemes are constructed through the
//! registry in the `ftlab` crate; nothing here matches on scheme names.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod auto;
pub mod bast;
pub mod block;
pub mod cach;
pub mod dac;
mod demand;
pub mod dftl;
mod dievictims;
pub mod fast;
pub(crate) mod hints;
mod logblock;
pub mod page;
mod scan;
pub mod superblock;
pub mod tpm;

#[cfg(test)]
mod testutil {
    use ftlab_core::geometry::{Geometry, GeometryBuilder};
    use ftlab_core::{Lpn, PageTag};

    /// A one-die device of `logical_pages` pages with `op` percent over-provisioning.
    pub fn geometry(page_size: u32, pages_per_block: u32, logical_pages: u64, op: f64) -> Geometry {
        builder(page_size, pages_per_block, logical_pages, op)
            .build()
            .unwrap()
    }

    fn builder(
        page_size: u32,
        pages_per_block: u32,
        logical_pages: u64,
        op: f64,
    ) -> GeometryBuilder {
        GeometryBuilder {
            page_size,
            pages_per_block,
            spare_bytes: 64,
            logical_bytes: logical_pages * page_size as u64,
            op_percent: op,
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
            min_spare_blocks: 0,
        }
    }

    /// 4 dies (2 channels x 2), 8-page blocks of 2 KiB pages, 64 logical blocks, `op`
    /// percent over-provisioning: the multi-die tests' device.
    pub fn geo4(op: f64) -> Geometry {
        GeometryBuilder {
            channels: 2,
            dies_per_channel: 2,
            ..builder(2048, 8, 64 * 8, op)
        }
        .build()
        .unwrap()
    }

    /// The tag of version `version` of `lpn`.
    pub fn tag(lpn: u32, version: u32) -> PageTag {
        PageTag {
            lpn: Lpn(lpn),
            version,
        }
    }

    /// A power loss: forgets validity and zeroes the counters, recovers `fresh` from the
    /// flash, and checks that it read each programmed spare area once (cause recovery)
    /// and that flash and FTL pass the deep checks at once.
    pub fn recover_fresh<F: ftlab_core::ftl::Ftl>(
        flash: &mut ftlab_core::flash::Flash,
        mut fresh: F,
    ) -> F {
        use ftlab_core::flash::{Cause, FlashStats};
        let g = flash.geometry().clone();
        let pages: u64 = (0..g.blocks)
            .map(|b| flash.write_ptr(ftlab_core::Pbn(b)) as u64)
            .sum();
        flash.power_cycle();
        flash.reset_stats();
        fresh.recover(flash).unwrap();
        let s = flash.stats();
        assert_eq!(s.spare_reads[Cause::Recovery as usize], pages);
        assert_eq!(FlashStats::total(&s.spare_reads), pages);
        flash.check().unwrap();
        fresh.check(flash).unwrap();
        fresh
    }

    /// A seeded xorshift generator: `next(n)` is a number below `n`.
    pub fn xorshift(seed: u64) -> impl FnMut(u32) -> u32 {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        move |n: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as u32
        }
    }

    /// Drives `ftl` with `ops` seeded random operations over `lpns` logical pages (70%
    /// writes, half of them to the first eighth of the space; 20% checked reads; 10%
    /// trims), then reads every page back and checks it.
    pub fn churn(
        ftl: &mut dyn ftlab_core::ftl::Ftl,
        flash: &mut ftlab_core::flash::Flash,
        lpns: u32,
        ops: u32,
        seed: u64,
    ) {
        let mut next = xorshift(seed);
        let mut version = vec![0u32; lpns as usize];
        let mut live = vec![false; lpns as usize];
        for _ in 0..ops {
            let roll = next(10);
            let lpn = if next(2) == 0 {
                next(lpns / 8)
            } else {
                next(lpns)
            };
            let l = lpn as usize;
            match roll {
                0..=6 => {
                    version[l] += 1;
                    live[l] = true;
                    ftl.write(flash, &[tag(lpn, version[l])]);
                }
                7..=8 => {
                    let want = live[l].then(|| tag(lpn, version[l]));
                    assert_eq!(ftl.read(flash, Lpn(lpn)), want, "read of lpn {lpn}");
                }
                _ => {
                    live[l] = false;
                    ftl.trim(flash, Lpn(lpn));
                }
            }
        }
        ftl.check(flash).unwrap();
        for lpn in 0..lpns {
            let want = live[lpn as usize].then(|| tag(lpn, version[lpn as usize]));
            assert_eq!(ftl.read(flash, Lpn(lpn)), want, "read-back of lpn {lpn}");
        }
    }

    /// Writes every one of `lpns` pages once, then overwrites uniformly random pages
    /// `ops` times (the device stays 100% full of valid data), then checks and reads
    /// everything back.
    pub fn full_churn(
        ftl: &mut dyn ftlab_core::ftl::Ftl,
        flash: &mut ftlab_core::flash::Flash,
        lpns: u32,
        ops: u32,
        seed: u64,
    ) {
        full_churn_with(ftl, flash, lpns, ops, seed, Overwrites::Uniform);
    }

    /// Where [`full_churn_with`] sends its overwrites.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Overwrites {
        /// Uniformly random pages.
        Uniform,
        /// 90% to the first tenth of the pages.
        Hot,
        /// Page `k * stride` for a random `k` (with `stride` the translation page's
        /// entries, every write lands in another translation page, so GC victims hold
        /// pages of as many translation pages as possible).
        Strided(u32),
        /// Runs of 1 to `max` consecutive pages at random offsets, one request each.
        Runs(u32),
        /// An adversary that reads the flash: a valid page of the full block holding
        /// the most valid pages (ties: the first from a random start), so invalid pages
        /// spread as evenly as they can over the blocks and every GC victim is as full
        /// as it can be.
        Fullest,
    }

    /// A logical page (below `lpns`) whose valid copy lies in the full block with the
    /// most valid data pages, scanning blocks from `start` (mod the block count); a
    /// random page if no full block holds one.
    fn fullest_block_page(flash: &ftlab_core::flash::Flash, lpns: u32, start: u32) -> u32 {
        let g = flash.geometry();
        let mut best: Option<(u32, ftlab_core::Pbn)> = None;
        for i in 0..g.blocks {
            let b = ftlab_core::Pbn((start % g.blocks + i) % g.blocks);
            let v = flash.valid_count(b);
            if !flash.is_full(b) || v == 0 || best.is_some_and(|(bv, _)| bv >= v) {
                continue;
            }
            let first = g.ppn(b, 0);
            if flash.peek_tag(first).is_some_and(|t| t.lpn.0 < lpns) {
                best = Some((v, b));
            }
        }
        let Some((_, b)) = best else {
            return start % lpns;
        };
        (0..g.pages_per_block)
            .map(|off| g.ppn(b, (off + start) % g.pages_per_block))
            .find(|&p| flash.is_valid(p))
            .and_then(|p| flash.peek_tag(p))
            .map_or(start % lpns, |t| t.lpn.0)
    }

    /// Writes every one of `lpns` pages once, then `ops` overwrite requests placed as
    /// `how` says (the device stays 100% full of valid data), then checks and reads
    /// everything back.
    pub fn full_churn_with(
        ftl: &mut dyn ftlab_core::ftl::Ftl,
        flash: &mut ftlab_core::flash::Flash,
        lpns: u32,
        ops: u32,
        seed: u64,
        how: Overwrites,
    ) {
        let mut next = xorshift(seed);
        let mut version = vec![1u32; lpns as usize];
        for l in 0..lpns {
            ftl.write(flash, &[tag(l, 1)]);
            flash.clear_log();
        }
        let hot_n = (lpns / 10).max(1);
        let ppb = flash.geometry().pages_per_block;
        let mut run = Vec::new();
        let mut phase = (0u32, 0u32); // (writes left, offset) of `Strided`
        for _ in 0..ops {
            let (first, n) = match how {
                Overwrites::Uniform => (next(lpns), 1),
                Overwrites::Hot if next(10) < 9 => (next(hot_n), 1),
                Overwrites::Hot => (next(lpns), 1),
                Overwrites::Strided(stride) => {
                    // A stretch of writes at one offset of random translation pages.
                    let stride = stride.clamp(1, lpns);
                    let pages = lpns.div_ceil(stride);
                    if phase.0 == 0 {
                        phase = (pages, next(stride));
                    }
                    phase.0 -= 1;
                    ((next(pages) * stride + phase.1) % lpns, 1)
                }
                Overwrites::Runs(max) => {
                    let n = 1 + next(max.clamp(1, lpns));
                    (next(lpns - n + 1), n)
                }
                Overwrites::Fullest => (fullest_block_page(flash, lpns, next(u32::MAX)), 1),
            };
            // One write per logical block the pages touch (the `Ftl::write` contract).
            let mut l = first;
            while l < first + n {
                let end = (first + n).min((l / ppb + 1) * ppb);
                run.clear();
                for p in l..end {
                    version[p as usize] += 1;
                    run.push(tag(p, version[p as usize]));
                }
                ftl.write(flash, &run);
                // The engine drains the operation log after every request; so must a
                // driver without one (a sweep's long runs otherwise fill the memory).
                flash.clear_log();
                l = end;
            }
        }
        // Regression: the log grew by every operation of a run (24 GB in a long sweep).
        // It now holds one write's operations at most (a long GC can make many).
        let st = flash.stats();
        let ops: u64 = [st.page_reads, st.spare_reads, st.programs, st.erases]
            .iter()
            .map(ftlab_core::flash::FlashStats::total)
            .sum();
        assert!(
            (flash.log_capacity() as u64) < (ops / 2).max(1 << 16),
            "the operation log is not drained: {} entries for {ops} operations",
            flash.log_capacity()
        );
        ftl.check(flash).unwrap();
        for l in 0..lpns {
            assert_eq!(
                ftl.read(flash, Lpn(l)),
                Some(tag(l, version[l as usize])),
                "lpn {l}"
            );
        }
    }
}

#[cfg(test)]
mod options_tests {
    use ftlab_core::options::{from_pairs, resolve, Options, OptionsDef};

    /// Defaults resolve from no input, read back from their own serialised form (what
    /// the configuration echo shows), and every option has help and a shown default.
    fn check<O: Options + PartialEq>(id: &str) {
        let def = OptionsDef::of::<O>();
        assert_eq!(from_pairs::<O>(id, &[]).unwrap(), O::default(), "{id}");
        let shown = (def.resolve)(id, &Default::default()).unwrap();
        let map = shown.as_object().expect("an object").clone();
        assert_eq!(resolve::<O>(id, &map).unwrap(), O::default(), "{id}");
        for f in def.fields() {
            assert!(!f.help.is_empty(), "{id}.{}: no help", f.name);
            assert_ne!(f.default, "none", "{id}.{}: no default", f.name);
        }
    }

    #[test]
    fn every_scheme_lists_its_options_with_help_and_defaults() {
        check::<crate::page::PageOptions>(crate::page::ID);
        check::<crate::block::BlockOptions>(crate::block::ID);
        check::<crate::bast::BastOptions>(crate::bast::ID);
        check::<crate::fast::FastOptions>(crate::fast::ID);
        check::<crate::cach::CachOptions>(crate::cach::ID);
        check::<crate::dftl::DftlOptions>(crate::dftl::ID);
        check::<crate::tpm::TpmOptions>(crate::tpm::ID);
        check::<crate::dac::DacOptions>(crate::dac::ID);
        check::<crate::superblock::SuperblockOptions>(crate::superblock::ID);
    }
}
