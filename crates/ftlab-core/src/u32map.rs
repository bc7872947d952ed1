//! [`U32Map`]: a fixed-capacity hash map from `u32` keys (LPNs, LBNs) to `u32` values,
//! for schemes whose tables are sized by a region smaller than the device (a buffer's
//! pages, a page-mapped over-provisioning region) rather than by the logical space.
//!
//! Open addressing with linear probing and backward-shift deletion (no tombstones, so
//! probe lengths never degrade). The table is allocated once, for `max_len` entries at a
//! load factor of at most 3/4; inserting beyond `max_len` is a bug and panics. Lookups
//! and updates never allocate. Iteration order depends only on the operation history,
//! so it is deterministic, but schemes should not let it reach decisions anyway.

const EMPTY: u32 = u32::MAX;

/// Slots a probe compares at once ([`U32Map::slot`]): 32 bytes, half a cache line.
const WINDOW: usize = 4;

/// Bit `j` of the first mask: slot `j` of the window holds `key`; of the second: it is
/// empty. SSE2 (part of every x86-64 processor): the four keys gathered from the two
/// 16-byte halves and compared at once.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn window_masks(w: &[[u32; 2]; WINDOW], key: u32) -> (u32, u32) {
    use core::arch::x86_64::{
        __m128i, _mm_castps_si128, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128,
        _mm_movemask_ps, _mm_set1_epi32, _mm_shuffle_ps,
    };
    // SAFETY: the two unaligned loads read the 32 bytes of `w` (four `[u32; 2]` slots,
    // contiguous), and SSE2 is part of every x86-64 processor.
    unsafe {
        let p = w.as_ptr().cast::<__m128i>();
        let (a, b) = (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
        // Lanes 0 and 2 of each half are the keys: [k0, k1, k2, k3].
        let keys = _mm_castps_si128(_mm_shuffle_ps::<0b10_00_10_00>(
            _mm_castsi128_ps(a),
            _mm_castsi128_ps(b),
        ));
        let eq = |x: u32| {
            let m = _mm_cmpeq_epi32(keys, _mm_set1_epi32(x as i32));
            _mm_movemask_ps(_mm_castsi128_ps(m)) as u32
        };
        (eq(key), eq(EMPTY))
    }
}

/// [`window_masks`] without SIMD (the same masks).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn window_masks(w: &[[u32; 2]; WINDOW], key: u32) -> (u32, u32) {
    window_masks_scalar(w, key)
}

/// The masks of [`window_masks`] a slot at a time: the definition, and the probe where
/// there is no SIMD.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn window_masks_scalar(w: &[[u32; 2]; WINDOW], key: u32) -> (u32, u32) {
    let (mut hit, mut stop) = (0u32, 0u32);
    for (j, s) in w.iter().enumerate() {
        hit |= u32::from(s[0] == key) << j;
        stop |= u32::from(s[0] == EMPTY) << j;
    }
    (hit, stop)
}

/// A fixed-capacity `u32 -> u32` map. Keys must be below `u32::MAX`.
#[derive(Clone, Debug)]
pub struct U32Map {
    /// `(key, value)` slots, interleaved so that a probe that finds its key has the
    /// value in the same cache line (a GC copy's `replace` touches one line, not two).
    slots: Vec<[u32; 2]>,
    len: u32,
    max_len: u32,
}

impl U32Map {
    /// A map that holds up to `max_len` entries.
    pub fn with_max_len(max_len: u32) -> U32Map {
        let cap = (max_len as usize + max_len as usize / 3 + 1).max(2);
        U32Map {
            slots: vec![[EMPTY, 0]; cap],
            len: 0,
            max_len,
        }
    }

    #[inline]
    fn home(&self, key: u32) -> usize {
        let h = key.wrapping_mul(0x9E37_79B9) as u64;
        ((h * self.slots.len() as u64) >> 32) as usize
    }

    /// The slot of `key` (`Ok`), or the empty slot that ends its probe path (`Err`).
    ///
    /// The probe looks at [`WINDOW`] slots at once: their keys are compared without a
    /// branch per slot ([`window_masks`]), and the first slot holding `key` or empty is
    /// the answer the slot-by-slot probe would give. Under cach's PMR-GC, which
    /// replaces the entry of every page it copies at a load near 3/4, a probe's length
    /// varies from one slot to several and the branch per slot was mispredicted about
    /// once a probe; a window ends in one predictable branch. Near the end of the table
    /// (where a window would wrap) the probe goes slot by slot.
    #[inline(always)]
    fn slot(&self, key: u32) -> Result<usize, usize> {
        let mut i = self.home(key);
        while let Some(w) = self.slots[i..].first_chunk::<WINDOW>() {
            let (hit, stop) = window_masks(w, key);
            let first = hit | stop;
            if first != 0 {
                let j = first.trailing_zeros();
                return if hit >> j & 1 != 0 {
                    Ok(i + j as usize)
                } else {
                    Err(i + j as usize)
                };
            }
            i += WINDOW;
        }
        self.slot_by_slot(key, i)
    }

    /// The probe of [`U32Map::slot`] from slot `i` on, one slot at a time.
    #[inline(never)]
    fn slot_by_slot(&self, key: u32, mut i: usize) -> Result<usize, usize> {
        let cap = self.slots.len();
        loop {
            if i >= cap {
                i -= cap;
            }
            match self.slots[i][0] {
                k if k == key => return Ok(i),
                EMPTY => return Err(i),
                _ => i += 1,
            }
        }
    }

    /// The value of `key`, if present.
    #[inline]
    pub fn get(&self, key: u32) -> Option<u32> {
        self.slot(key).ok().map(|i| self.slots[i][1])
    }

    /// Whether `key` is present.
    #[inline]
    pub fn contains(&self, key: u32) -> bool {
        self.slot(key).is_ok()
    }

    /// Sets `key` to `val`; returns the previous value. Panics if the map would exceed
    /// its `max_len` (a sizing bug) or if `key` is `u32::MAX`.
    #[inline]
    pub fn insert(&mut self, key: u32, val: u32) -> Option<u32> {
        assert!(key != EMPTY, "U32Map: key u32::MAX is reserved");
        match self.slot(key) {
            Ok(i) => Some(std::mem::replace(&mut self.slots[i][1], val)),
            Err(i) => {
                assert!(
                    self.len < self.max_len,
                    "U32Map: more than {} entries",
                    self.max_len
                );
                self.slots[i] = [key, val];
                self.len += 1;
                None
            }
        }
    }

    /// Sets the value of a `key` already present and returns the old one; `None` (and no
    /// change) if it is absent. One probe and none of [`U32Map::insert`]'s capacity
    /// checks, for hot paths that move an entry (GC copies).
    #[inline]
    pub fn replace(&mut self, key: u32, val: u32) -> Option<u32> {
        let i = self.slot(key).ok()?;
        Some(std::mem::replace(&mut self.slots[i][1], val))
    }

    /// Removes `key`; returns its value.
    #[inline]
    pub fn remove(&mut self, key: u32) -> Option<u32> {
        let mut hole = self.slot(key).ok()?;
        let val = self.slots[hole][1];
        let cap = self.slots.len();
        let mut j = hole;
        loop {
            j = if j + 1 == cap { 0 } else { j + 1 };
            let k = self.slots[j][0];
            if k == EMPTY {
                break;
            }
            // Move k back into the hole if the hole lies on its probe path.
            let h = self.home(k);
            let dist_home = (j + cap - h) % cap;
            let dist_hole = (j + cap - hole) % cap;
            if dist_home >= dist_hole {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
        }
        self.slots[hole][0] = EMPTY;
        self.len -= 1;
        Some(val)
    }

    /// Entries held.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the map is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most entries it may hold.
    pub fn max_len(&self) -> u32 {
        self.max_len
    }

    /// Every `(key, value)`, in table order (for checks and reports, not decisions).
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.slots
            .iter()
            .filter(|s| s[0] != EMPTY)
            .map(|&[k, v]| (k, v))
    }

    /// Bytes of the table (keys and values of every slot).
    pub fn bytes(&self) -> u64 {
        self.slots.len() as u64 * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn matches_a_btreemap_under_a_random_walk() {
        let mut m = U32Map::with_max_len(200);
        let mut r = BTreeMap::new();
        let mut x: u64 = 99;
        for step in 0..100_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = ((x >> 33) % 400) as u32 * 7;
            if (x >> 20).is_multiple_of(2) && (r.len() < 200 || r.contains_key(&key)) {
                assert_eq!(m.insert(key, step), r.insert(key, step));
            } else {
                assert_eq!(m.remove(key), r.remove(&key));
            }
            assert_eq!(m.len() as usize, r.len());
            if step % 997 == 0 {
                for k in 0..3000 {
                    assert_eq!(m.get(k), r.get(&k).copied(), "key {k}");
                }
                let mut all: Vec<_> = m.iter().collect();
                all.sort_unstable();
                assert_eq!(all, r.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn the_windowed_probe_answers_what_the_slot_by_slot_probe_does() {
        // Small tables, so windows straddle the end and clusters run past it.
        for max_len in [1u32, 5, 7, 12, 40, 200] {
            let mut m = U32Map::with_max_len(max_len);
            let mut x: u64 = 7 + u64::from(max_len);
            for _ in 0..5_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let key = ((x >> 33) % (4 * u64::from(max_len))) as u32;
                if (x >> 20).is_multiple_of(2) && (m.len() < max_len || m.contains(key)) {
                    m.insert(key, 1);
                } else {
                    m.remove(key);
                }
                for k in 0..4 * max_len + 8 {
                    assert_eq!(m.slot(k), m.slot_by_slot(k, m.home(k)), "key {k}");
                }
            }
        }
    }

    #[test]
    fn window_masks_match_a_slot_by_slot_comparison() {
        let mut x: u64 = 5;
        for _ in 0..20_000 {
            let mut w = [[0u32; 2]; WINDOW];
            for s in &mut w {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Keys from a small range (so they repeat the key), empty, or the key
                // in the value (which must not count).
                s[0] = match x >> 61 {
                    0 | 1 => EMPTY,
                    _ => (x >> 33) as u32 % 6,
                };
                s[1] = (x >> 20) as u32 % 6;
            }
            let key = (x >> 40) as u32 % 6;
            assert_eq!(
                window_masks(&w, key),
                window_masks_scalar(&w, key),
                "{w:?} {key}"
            );
        }
    }

    #[test]
    fn holds_exactly_max_len_with_clustered_keys() {
        let mut m = U32Map::with_max_len(64);
        for k in 0..64 {
            assert_eq!(m.insert(k, k + 1), None);
        }
        for k in 0..64 {
            assert_eq!(m.get(k), Some(k + 1));
        }
        for k in (0..64).step_by(2) {
            assert_eq!(m.remove(k), Some(k + 1));
        }
        for k in 0..64 {
            assert_eq!(m.get(k), (k % 2 == 1).then_some(k + 1));
        }
        assert!(m.bytes() <= 8 * 86);
    }

    #[test]
    fn replace_changes_only_present_keys() {
        let mut m = U32Map::with_max_len(4);
        m.insert(5, 50);
        assert_eq!(m.replace(5, 51), Some(50));
        assert_eq!(m.replace(6, 60), None);
        assert_eq!((m.get(5), m.get(6), m.len()), (Some(51), None, 1));
    }

    #[test]
    #[should_panic(expected = "more than 2 entries")]
    fn refuses_to_grow() {
        let mut m = U32Map::with_max_len(2);
        m.insert(1, 1);
        m.insert(2, 2);
        m.insert(3, 3);
    }
}
