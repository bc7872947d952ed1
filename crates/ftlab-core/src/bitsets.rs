//! [`Bitsets`]: sets of small numbers with find-first and removal of the least, as
//! 64-ary trees of bitmaps (the victim indexes' buckets, a GC's set of translation
//! pages taken in ascending order).

/// `count` sets of the numbers `0..n`, each with find-first, as 64-ary trees of bitmaps,
/// all in one flat array: set `s`'s words are `words[s * stride..][..stride]`, its level
/// `l` (0: one bit per number; the last: one word) at `off[l]` within them. A flat array
/// (not a `Vec` per level per set) makes an insertion or removal one or two word
/// updates at computed offsets; the usual one stops at the bottom level.
#[derive(Clone, Debug, Default)]
pub struct Bitsets {
    pub(crate) words: Vec<u64>,
    pub(crate) stride: usize,
    /// Offset of each level within a set's words; `off[levels]` is `stride`.
    off: [usize; MAX_LEVELS + 1],
    levels: usize,
}

/// Levels of a 64-ary tree over `u32` numbers: 64^6 > 2^32.
const MAX_LEVELS: usize = 6;

impl Bitsets {
    /// `count` empty sets of the numbers `0..n`.
    pub fn new(count: usize, n: u32) -> Self {
        let mut off = [0usize; MAX_LEVELS + 1];
        let (mut len, mut levels) = ((n as usize).div_ceil(64).max(1), 0);
        loop {
            off[levels + 1] = off[levels] + len;
            levels += 1;
            if len == 1 {
                break;
            }
            len = len.div_ceil(64);
        }
        let stride = off[levels];
        Bitsets {
            words: vec![0; count * stride],
            stride,
            off,
            levels,
        }
    }

    /// Adds `i` to `set` (again is nothing).
    #[inline]
    pub fn insert(&mut self, set: usize, i: u32) {
        self.insert_if(set, i, true);
    }

    /// Adds `i` to `set` if `yes`, without a branch on `yes` (for hot loops where it
    /// is data-dependent and would be mispredicted). Always inlined: a GC calls it once
    /// a copy, and as a call it cost more than its few instructions.
    #[inline(always)]
    pub fn insert_if(&mut self, set: usize, i: u32, yes: bool) {
        let w = &mut self.words[set * self.stride + i as usize / 64];
        let old = *w;
        let new = old | u64::from(yes) << (i % 64);
        *w = new;
        // Not `was_empty & yes`, which the compiler split into a branch on `yes`: the
        // word was empty (rare) and is not now (usual) are each predictable.
        if old == 0 && new != 0 {
            self.insert_above(set, i as usize / 64);
        }
    }

    /// Removes `i`, a member, from `set`.
    #[inline]
    pub fn remove(&mut self, set: usize, i: u32) {
        let w = &mut self.words[set * self.stride + i as usize / 64];
        *w &= !(1 << (i % 64));
        if *w == 0 {
            self.remove_above(set, i as usize / 64);
        }
    }

    /// Bottom word `i` of a set went from empty to not: its bits in the levels above.
    #[inline(never)]
    pub(crate) fn insert_above(&mut self, set: usize, mut i: usize) {
        let base = set * self.stride;
        for l in 1..self.levels {
            let w = &mut self.words[base + self.off[l] + i / 64];
            let was_empty = *w == 0;
            *w |= 1 << (i % 64);
            if !was_empty {
                break;
            }
            i /= 64;
        }
    }

    /// Bottom word `i` of a set emptied: its bits in the levels above.
    pub(crate) fn remove_above(&mut self, set: usize, mut i: usize) {
        let base = set * self.stride;
        for l in 1..self.levels {
            let w = &mut self.words[base + self.off[l] + i / 64];
            *w &= !(1 << (i % 64));
            if *w != 0 {
                break;
            }
            i /= 64;
        }
    }

    /// Empties every set.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// The members of a set in ascending order (a walk of its bottom level's words).
    pub fn iter(&self, set: usize) -> impl Iterator<Item = u32> + '_ {
        let base = set * self.stride;
        self.words[base..base + self.off[1]]
            .iter()
            .enumerate()
            .flat_map(|(w, &word)| {
                let mut bits = word;
                std::iter::from_fn(move || {
                    (bits != 0).then(|| {
                        let b = bits.trailing_zeros();
                        bits &= bits - 1;
                        (w * 64) as u32 + b
                    })
                })
            })
    }

    /// The least member of a set.
    #[inline]
    pub fn first(&self, set: usize) -> Option<u32> {
        let base = set * self.stride;
        if self.words[base + self.off[self.levels - 1]] == 0 {
            return None;
        }
        let mut i = 0usize;
        for l in (0..self.levels).rev() {
            let word = self.words[base + self.off[l] + i];
            debug_assert!(word != 0);
            i = i * 64 + word.trailing_zeros() as usize;
        }
        Some(i as u32)
    }

    /// Removes and returns the least member of a set: emptying a set this way hands
    /// out its members in ascending order, at a cost per member (a walk down the
    /// levels), not per number below `n`.
    #[inline]
    pub fn pop_first(&mut self, set: usize) -> Option<u32> {
        let i = self.first(set)?;
        self.remove(set, i);
        Some(i)
    }

    /// Appends the members of `set` to `out` in ascending order and empties the set:
    /// one walk down the tree from its top word, clearing each word once it is read.
    /// The same order as [`Bitsets::pop_first`] until empty, without a walk down and
    /// back up the levels per member (a DFTL GC empties its set of translation pages
    /// this way once a victim).
    pub fn drain(&mut self, set: usize, out: &mut Vec<u32>) {
        let top = self.levels - 1;
        self.drain_word(set * self.stride, top, 0, out);
    }

    /// [`Bitsets::drain`] of the subtree under word `i` of level `l`.
    fn drain_word(&mut self, base: usize, l: usize, i: usize, out: &mut Vec<u32>) {
        let at = base + self.off[l] + i;
        let mut bits = std::mem::take(&mut self.words[at]);
        while bits != 0 {
            let child = i * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if l == 0 {
                out.push(child as u32);
            } else {
                self.drain_word(base, l - 1, child, out);
            }
        }
    }

    /// Bytes of the words.
    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// Panics unless every bit above the bottom level says whether the word below it
    /// is non-empty (no stale or missing summary bit), in every set.
    #[cfg(test)]
    pub(crate) fn check(&self) {
        for set in 0..self.words.len() / self.stride.max(1) {
            let base = set * self.stride;
            for l in 1..self.levels {
                for child in 0..self.off[l] - self.off[l - 1] {
                    let below = self.words[base + self.off[l - 1] + child] != 0;
                    let bit = self.words[base + self.off[l] + child / 64] >> (child % 64) & 1;
                    assert_eq!(bit == 1, below, "set {set} level {l} child {child}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flat bitsets against a `BTreeSet` per set: small sets (removals a little
    /// likelier than insertions) so words and whole subtrees empty and fill again, at
    /// sizes of one to four levels.
    #[test]
    fn bitsets_match_ordered_sets() {
        use std::collections::BTreeSet;
        for n in [1u32, 63, 64, 65, 4096, 4097, 5_000, 300_000] {
            let mut b = Bitsets::new(3, n);
            let mut model = vec![BTreeSet::new(); 3];
            let mut x: u64 = n as u64;
            for step in 0..4_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let set = ((x >> 60) % 3) as usize;
                let m = &mut model[set];
                if (x >> 20) % 10 < 4 || m.is_empty() {
                    let i = ((x >> 30) % n as u64) as u32;
                    if m.insert(i) {
                        b.insert(set, i);
                    }
                } else {
                    let k = ((x >> 30) % m.len() as u64) as usize;
                    let i = *m.iter().nth(k).expect("k < len");
                    m.remove(&i);
                    b.remove(set, i);
                }
                for (s, m) in model.iter().enumerate() {
                    assert_eq!(b.first(s), m.first().copied(), "n {n} step {step} set {s}");
                }
                if step % 50 == 0 {
                    b.check();
                    let got: Vec<u32> = b.iter(set).collect();
                    assert_eq!(got, model[set].iter().copied().collect::<Vec<_>>());
                }
            }
        }
    }

    /// `drain` hands out what emptying the set with `pop_first` would, in the same
    /// order, leaves the set empty (every level: `check`), and the other sets as they
    /// were; at one to four levels.
    #[test]
    fn drain_equals_pop_first_until_empty() {
        let mut rng = crate::rng::SplitMix64::new(5);
        for n in [1u32, 63, 64, 65, 256, 4095, 4096, 4097, 262_144, 300_000] {
            let (mut a, mut b) = (Bitsets::new(2, n), Bitsets::new(2, n));
            for round in 0..20 {
                let count = rng.below(400) as usize;
                for _ in 0..count {
                    let (set, x) = (rng.below(2) as usize, rng.below(n as u64) as u32);
                    a.insert(set, x);
                    b.insert(set, x);
                }
                let set = rng.below(2) as usize;
                let want: Vec<u32> = std::iter::from_fn(|| a.pop_first(set)).collect();
                let mut got = vec![7];
                b.drain(set, &mut got);
                assert_eq!(got[0], 7, "n {n}: drain appends");
                assert_eq!(&got[1..], &want[..], "n {n}, round {round}");
                assert_eq!(b.first(set), None, "n {n}: drained");
                assert_eq!(a.words, b.words, "n {n}, round {round}: the other set kept");
                b.check();
            }
        }
    }

    /// Emptying a set with `pop_first` hands out each member once, in ascending order.
    #[test]
    fn pop_first_empties_a_set_in_ascending_order() {
        let mut rng = crate::rng::SplitMix64::new(3);
        for n in [1u32, 63, 64, 65, 256, 4095, 4096, 4097, 262_144] {
            let mut set = Bitsets::new(1, n);
            for round in 0..20 {
                let count = rng.below(300) as usize;
                let xs: Vec<u32> = (0..count).map(|_| rng.below(n as u64) as u32).collect();
                for &x in &xs {
                    set.insert(0, x);
                }
                let mut want = xs.clone();
                want.sort_unstable();
                want.dedup();
                let got: Vec<u32> = std::iter::from_fn(|| set.pop_first(0)).collect();
                assert_eq!(got, want, "n {n}, round {round}");
                assert_eq!(set.first(0), None, "n {n}: emptied");
                set.check();
            }
        }
    }

    #[test]
    fn insert_if_inserts_only_when_asked_and_keeps_the_levels_above_right() {
        let mut rng = crate::rng::SplitMix64::new(11);
        for n in [1u32, 64, 65, 4097, 262_144] {
            let (mut set, mut want) = (Bitsets::new(2, n), Bitsets::new(2, n));
            for _ in 0..2_000 {
                let x = rng.below(n as u64) as u32;
                let yes = rng.below(3) == 0;
                set.insert_if(1, x, yes);
                if yes {
                    want.insert(1, x);
                }
            }
            set.check();
            assert_eq!(set.first(0), None, "n {n}: the other set untouched");
            let got: Vec<u32> = std::iter::from_fn(|| set.pop_first(1)).collect();
            let exp: Vec<u32> = std::iter::from_fn(|| want.pop_first(1)).collect();
            assert!(!exp.is_empty());
            assert_eq!(got, exp, "n {n}");
        }
    }
}
