//! The victim indexes of GC per die (`gc_scope = "per_die"`, issue 22 item 3; not in
//! the papers, which model one chip): one [`Victims`] per die beside a scheme's global
//! index, block `b` kept as local block `b / dies` of die `b % dies` (the die parallel
//! timing places it on). Each die's policy keeps its own state (its own seal order for
//! `fifo` and `cost_benefit`, its own draws for `random` and `d_choices`), seeded from
//! the run's seed and the die. Used by `page`, `dftl` (through `demand`) and `dac`;
//! each scheme's module header says when a die collects and where the copies go.

use ftlab_core::victim::{VictimPolicy, Victims};
use ftlab_core::Pbn;

/// One victim index per die; empty (no die) under `gc_scope = "global"`.
#[derive(Clone, Debug)]
pub(crate) struct DieVictims {
    ix: Vec<Victims>,
    /// The run's seed (each die's draws are seeded from it and the die).
    seed: u64,
    blocks: u32,
    pages_per_block: u32,
    policy: VictimPolicy,
}

/// The seed of die `d`'s victim policy.
fn die_seed(seed: u64, d: usize) -> u64 {
    seed ^ (d as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl DieVictims {
    /// Indexes for `dies` dies of a device of `blocks` blocks (`dies` 0: none, GC is
    /// global).
    pub(crate) fn new(blocks: u32, pages_per_block: u32, policy: VictimPolicy, dies: u32) -> Self {
        let mut v = DieVictims {
            ix: Vec::new(),
            seed: 0,
            blocks,
            pages_per_block,
            policy,
        };
        v.ix = (0..dies as usize).map(|d| v.empty(d, dies)).collect();
        v
    }

    fn empty(&self, d: usize, dies: u32) -> Victims {
        let mut ix = Victims::new(
            self.blocks.div_ceil(dies),
            self.pages_per_block,
            self.policy,
        );
        ix.seed(die_seed(self.seed, d));
        ix
    }

    /// Whether GC is global (no per-die index).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.ix.is_empty()
    }

    /// Seeds every die's policy from the run's `seed`.
    pub(crate) fn seed(&mut self, seed: u64) {
        self.seed = seed;
        for (d, ix) in self.ix.iter_mut().enumerate() {
            ix.seed(die_seed(seed, d));
        }
    }

    /// Empties every die's index, each reseeded as new (a recovery refills them).
    pub(crate) fn clear(&mut self) {
        let dies = self.ix.len() as u32;
        self.ix = (0..dies as usize).map(|d| self.empty(d, dies)).collect();
    }

    /// Block `b`'s die and its number in that die's index.
    #[inline]
    pub(crate) fn on_die(&self, b: Pbn) -> (usize, Pbn) {
        let dies = self.ix.len() as u32;
        ((b.0 % dies) as usize, Pbn(b.0 / dies))
    }

    /// Seals `b` with `valid` valid pages.
    #[inline]
    pub(crate) fn insert(&mut self, b: Pbn, valid: u32) {
        let (d, local) = self.on_die(b);
        self.ix[d].insert(local, valid);
    }

    /// Unseals `b` (a no-op if it is not sealed).
    #[inline]
    pub(crate) fn remove(&mut self, b: Pbn) {
        let (d, local) = self.on_die(b);
        self.ix[d].remove(local);
    }

    /// One of `b`'s pages became invalid (a no-op if it is not sealed).
    #[inline]
    pub(crate) fn decrement(&mut self, b: Pbn) {
        let (d, local) = self.on_die(b);
        self.ix[d].decrement(local);
    }

    /// Whether `b` is sealed in its die's index.
    pub(crate) fn contains(&self, b: Pbn) -> bool {
        let (d, local) = self.on_die(b);
        self.ix[d].contains(local)
    }

    /// Whether every sealed block of die `d` is fully valid (or none is sealed).
    #[inline]
    pub(crate) fn stuck(&self, d: usize) -> bool {
        self.ix[d].stuck()
    }

    /// The block that is local block `local` of die `d` ([`DieVictims::on_die`]'s
    /// inverse).
    #[inline]
    fn global(&self, d: usize, local: Pbn) -> Pbn {
        Pbn(local.0 * self.ix.len() as u32 + d as u32)
    }

    /// Die `d`'s sealed block with the fewest valid pages, and that count.
    pub(crate) fn min(&self, d: usize) -> Option<(Pbn, u32)> {
        let (local, v) = self.ix[d].min()?;
        Some((self.global(d, local), v))
    }

    /// Die `d`'s victim: its policy's pick (`greedy`: the fewest valid pages
    /// whatever the policy), still sealed, with its valid pages.
    pub(crate) fn choose(&mut self, d: usize, greedy: bool) -> Option<(Pbn, u32)> {
        if greedy {
            return self.min(d);
        }
        let (local, v) = self.ix[d].choose()?;
        Some((self.global(d, local), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::victim::GcPolicy;

    #[test]
    fn blocks_go_to_their_die_and_come_back_as_global_numbers() {
        let pol = VictimPolicy {
            policy: GcPolicy::Greedy,
            d: 2,
            window: 4,
        };
        let mut v = DieVictims::new(10, 8, pol, 4);
        assert_eq!(v.on_die(Pbn(9)), (1, Pbn(2)));
        v.insert(Pbn(1), 5);
        v.insert(Pbn(5), 3);
        v.insert(Pbn(2), 1);
        assert!(v.contains(Pbn(5)) && !v.contains(Pbn(9)));
        // Die 1 holds blocks 1 and 5; greedy picks 5 (3 valid), then 1 after 5 goes.
        assert_eq!(v.choose(1, true), Some((Pbn(5), 3)));
        v.decrement(Pbn(1));
        v.decrement(Pbn(1));
        v.decrement(Pbn(1));
        assert_eq!(v.choose(1, false), Some((Pbn(1), 2)));
        v.remove(Pbn(1));
        v.remove(Pbn(5));
        assert!(v.stuck(1) && !v.stuck(2));
        assert_eq!(v.choose(2, true), Some((Pbn(2), 1)));
        v.clear();
        assert!(v.stuck(2) && !v.is_empty());
        assert!(DieVictims::new(10, 8, pol, 0).is_empty());
    }
}
