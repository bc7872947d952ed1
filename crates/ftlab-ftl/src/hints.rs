//! The prefetch hints of [`Ftl::prefetch`] as the mapping schemes use them (issue 26;
//! docs/performance.md section 12): a random host write's memory is a chain of
//! dependent cache misses (the map entry gives the old copy; the old copy gives its
//! valid bit, its block's valid count and its block's entry in the victim index; that
//! entry gives the two victim-set words the write's decrement moves). Each hint starts
//! the chain for an LPN a few requests ahead, one link every [`STEP`] hints, so each
//! load finds the line the link before fetched.
//!
//! Hints are advice: a scheme reads through them but changes nothing a result depends
//! on, and a wrong or stale hint costs a wasted line fill.
//!
//! [`Ftl::prefetch`]: ftlab_core::ftl::Ftl::prefetch

use ftlab_core::flash::Flash;
use ftlab_core::victim::Victims;
use ftlab_core::{Lpn, Ppn};

/// Hints between one link of the chain and the next for the same LPN: long enough for
/// the line the link before fetched to be in the cache.
pub(crate) const STEP: usize = 4;
const LAG: usize = 2 * STEP;

/// The LPNs of the last [`LAG`] hints, in a ring.
#[derive(Clone, Debug)]
pub(crate) struct Hints {
    lpns: [u32; LAG],
    /// The oldest (two steps old); the one [`STEP`] after it is one step old.
    at: usize,
}

impl Hints {
    pub(crate) fn new() -> Hints {
        Hints {
            lpns: [u32::MAX; LAG],
            at: 0,
        }
    }

    /// Records a hint for `lpn` and returns the LPNs hinted one and two steps ago
    /// (`u32::MAX`, past every device, before there were any).
    #[inline]
    pub(crate) fn push(&mut self, lpn: u32) -> (u32, u32) {
        let at = self.at;
        let one = self.lpns[(at + STEP) % LAG];
        let two = std::mem::replace(&mut self.lpns[at], lpn);
        self.at = (at + 1) % LAG;
        (one, two)
    }
}

/// The whole chain for a scheme whose map is one flat table from LPN to PPN (`map`,
/// `none` where unmapped): the entry of `lpn` now, the old copy of the LPN hinted a step
/// ago, the victim-set words of the one two steps ago.
#[inline]
pub(crate) fn flat_map(
    flash: &Flash,
    index: &Victims,
    hints: &mut Hints,
    map: &[u32],
    none: u32,
    lpn: Lpn,
) {
    if let Some(e) = map.get(lpn.idx()) {
        ftlab_core::prefetch::read(e);
    }
    let (one, two) = hints.push(lpn.0);
    let old_copy = |lpn: u32| match map.get(lpn as usize) {
        Some(&p) if p != none => Some(Ppn(p)),
        _ => None,
    };
    if let Some(old) = old_copy(one) {
        self::old_copy(flash, index, old);
    }
    if let Some(old) = old_copy(two) {
        old_copy_words(flash, index, old);
    }
}

/// The second link, once the map entry giving `old` is cached: the old copy's valid bit
/// and block count and its block's victim-index entry.
#[inline]
pub(crate) fn old_copy(flash: &Flash, index: &Victims, old: Ppn) {
    flash.prefetch_invalidate(old);
    index.prefetch_member(flash.block_of(old));
}

/// The third link: the victim-set words a decrement of `old`'s block moves.
#[inline]
pub(crate) fn old_copy_words(flash: &Flash, index: &Victims, old: Ppn) {
    index.prefetch_words(flash.block_of(old));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::geometry;
    use ftlab_core::ftl::Ftl;
    use ftlab_core::{Lpn, PageWrite};

    /// Random writes with GC, once plain and once each after a hint (the LPN written 12
    /// later, one past the end, `u32::MAX`, a wrong one): the same counters, the same
    /// flash, the same data.
    fn hints_change_nothing(build: impl Fn() -> Box<dyn Ftl>) {
        let geo = geometry(2048, 16, 1024, 15.0);
        let n = geo.logical_pages;
        let mut rng = ftlab_core::rng::SplitMix64::new(7);
        let lpns: Vec<u32> = (0..n)
            .chain((0..20 * n).map(|_| rng.below(n as u64) as u32))
            .collect();
        let run = |hinted: bool| {
            let (mut f, mut flash) = (build(), Flash::new(&geo));
            let mut version = vec![0u32; n as usize];
            for (i, &l) in lpns.iter().enumerate() {
                if hinted {
                    let hint = match i % 4 {
                        0 => lpns.get(i + 12).copied().unwrap_or(n),
                        1 => n + i as u32,
                        2 => u32::MAX,
                        _ => (l + 1) % n,
                    };
                    f.prefetch(&flash, Lpn(hint));
                }
                version[l as usize] += 1;
                let tag = PageWrite {
                    lpn: Lpn(l),
                    version: version[l as usize],
                };
                f.write(&mut flash, &[tag]);
            }
            let (stats, flash_stats) = (f.stats(), *flash.stats());
            let data: Vec<_> = (0..n).map(|l| f.read(&mut flash, Lpn(l))).collect();
            (stats, flash_stats, data)
        };
        let (plain, hinted) = (run(false), run(true));
        assert!(plain.1.erases.iter().sum::<u64>() > 0, "GC must have run");
        assert_eq!(hinted, plain);
    }

    #[test]
    fn hints_change_nothing_under_page_mapping() {
        hints_change_nothing(|| {
            let geo = geometry(2048, 16, 1024, 15.0);
            Box::new(crate::page::PageFtl::new(&geo, &Default::default()).unwrap())
        });
    }

    #[test]
    fn hints_change_nothing_under_dftl() {
        hints_change_nothing(|| {
            let geo = geometry(2048, 16, 1024, 15.0);
            let opts = ftlab_core::options::from_pairs("dftl", &[("cmt_bytes", "1024")]).unwrap();
            Box::new(crate::dftl::Dftl::new(&geo, &opts).unwrap())
        });
    }

    #[test]
    fn hints_change_nothing_under_tpm() {
        hints_change_nothing(|| {
            let geo = geometry(2048, 16, 1024, 15.0);
            let opts = ftlab_core::options::from_pairs("tpm", &[("cmt_bytes", "2048")]).unwrap();
            Box::new(crate::tpm::Tpm::new(&geo, &opts).unwrap())
        });
    }

    #[test]
    fn hints_change_nothing_under_dac() {
        hints_change_nothing(|| {
            let geo = geometry(2048, 16, 1024, 15.0);
            Box::new(crate::dac::DacFtl::new(&geo, &Default::default()).unwrap())
        });
    }

    #[test]
    fn push_returns_the_lpns_one_and_two_steps_old() {
        let mut h = Hints::new();
        for i in 0..(3 * LAG) as u32 {
            let (one, two) = h.push(i);
            let ago = |k: usize| i.checked_sub(k as u32).unwrap_or(u32::MAX);
            assert_eq!((one, two), (ago(STEP), ago(2 * STEP)), "hint {i}");
        }
    }
}
