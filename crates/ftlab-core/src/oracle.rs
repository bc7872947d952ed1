//! The correctness oracle: the version last written for every LPN.
//!
//! The engine stamps every host page write with the LPN's next version; FTLs carry the
//! stamp in the spare area through every copy. Every page a host read returns is
//! checked against the expected stamp, so an FTL that loses or misplaces data is caught
//! on the first read that sees it.
//!
//! A trimmed LPN keeps its last version with [`TRIMMED`] set, so the next write still
//! gets a strictly larger version and a stale pre-trim copy can never pass as current.
//!
//! Exact or wrapping versions. [`Oracle::new`] counts versions exactly (32-bit entries,
//! 30 bits of version): any stale copy fails the check. [`Oracle::wrapping`] counts them
//! in `k` bits, 1, 2, ... `2^k - 1`, then 1 again (0 stays "never written"), in entries
//! of 8, 16 or 32 bits (two of them the flags), the least that hold `k`: for the packed
//! spare tags of [`crate::flash::Flash::with_packed_tags`], which keep `32 - LPN bits`
//! bits of version (at 1 TiB of 4 KiB pages, 4 bits: 1 byte per logical page here). The
//! check is then modulo `2^k - 1`: a stale copy whose version is a multiple of
//! `2^k - 1` writes behind the current one passes (at 1 TiB, 15 writes behind; at 1 GiB,
//! 16,383). The previous version, the most likely stale copy, always fails, as do
//! another LPN's data, unmapped data and pre-trim data (the TRIMMED and LOOSE flags are
//! kept whole). Versions then do not grow without bound, so a wrapping oracle is only
//! for runs that never order versions: no power loss ([`Oracle::power_loss`] refuses).

use crate::units::{Lpn, PageTag};

/// Marks an LPN whose last operation was a trim.
pub const TRIMMED: u32 = 1 << 31;

/// Marks an LPN whose content a power loss made uncertain: a read may return no data or
/// any version up to the stored bound (data only in a volatile buffer was lost; a trim
/// not yet persisted may be undone).
pub const LOOSE: u32 = 1 << 30;

const VERSION: u32 = !(TRIMMED | LOOSE);

/// A read returned something other than the last write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The logical page.
    pub lpn: Lpn,
    /// The version expected (`None`: unmapped, never written or trimmed).
    pub expected: Option<u32>,
    /// What the read returned.
    pub found: Option<PageTag>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let exp = match self.expected {
            Some(v) => format!("version {v}"),
            None => "no data (never written or trimmed)".into(),
        };
        let found = match self.found {
            Some(t) if t.lpn == self.lpn => format!("version {}", t.version),
            Some(t) => format!("the data of LPN {} version {}", t.lpn, t.version),
            None => "no data (unmapped)".into(),
        };
        write!(f, "LPN {}: expected {exp}, found {found}", self.lpn)
    }
}

/// The entries, one per LPN, in the layout of a 32-bit entry ([`TRIMMED`], [`LOOSE`],
/// the version in the other bits) at one of three widths: a narrower entry keeps the two
/// flags in its top two bits and the version in the rest.
#[derive(Clone, Debug)]
enum Entries {
    W32(Vec<u32>),
    W16(Vec<u16>),
    W8(Vec<u8>),
}

/// A `w`-bit entry as a 32-bit one.
#[inline(always)]
fn widen(raw: u32, w: u32) -> u32 {
    (raw & ((1 << (w - 2)) - 1)) | (raw >> (w - 2)) << 30
}

/// A 32-bit entry as a `w`-bit one (its version fits `w - 2` bits).
#[inline(always)]
fn narrow(e: u32, w: u32) -> u32 {
    (e & VERSION) | (e >> 30) << (w - 2)
}

impl Entries {
    #[inline(always)]
    fn get(&self, i: usize) -> u32 {
        match self {
            Entries::W32(v) => v[i],
            Entries::W16(v) => widen(v[i] as u32, 16),
            Entries::W8(v) => widen(v[i] as u32, 8),
        }
    }

    #[inline(always)]
    fn set(&mut self, i: usize, e: u32) {
        match self {
            Entries::W32(v) => v[i] = e,
            Entries::W16(v) => v[i] = narrow(e, 16) as u16,
            Entries::W8(v) => v[i] = narrow(e, 8) as u8,
        }
    }

    fn len(&self) -> usize {
        match self {
            Entries::W32(v) => v.len(),
            Entries::W16(v) => v.len(),
            Entries::W8(v) => v.len(),
        }
    }
}

/// Expected version per LPN.
#[derive(Clone, Debug)]
pub struct Oracle {
    expected: Entries,
    /// The largest version; the next write after it gets 1 when `wraps`.
    max_version: u32,
    wraps: bool,
    reads_checked: u64,
}

impl Oracle {
    /// An oracle for `logical_pages` pages, none written, with exact versions (a
    /// 32-bit entry per page).
    pub fn new(logical_pages: u32) -> Self {
        Oracle {
            expected: Entries::W32(vec![0; logical_pages as usize]),
            max_version: VERSION,
            wraps: false,
            reads_checked: 0,
        }
    }

    /// An oracle for `logical_pages` pages whose versions count from 1 to `2^bits - 1`
    /// and wrap to 1 (`bits` is capped at 30), in the narrowest entries that hold them
    /// (1 byte per page for `bits <= 6`, 2 for `bits <= 14`). See the module
    /// documentation for what the check then misses.
    pub fn wrapping(logical_pages: u32, bits: u32) -> Self {
        let bits = bits.clamp(1, 30);
        let n = logical_pages as usize;
        let expected = if bits <= 6 {
            Entries::W8(vec![0; n])
        } else if bits <= 14 {
            Entries::W16(vec![0; n])
        } else {
            Entries::W32(vec![0; n])
        };
        Oracle {
            expected,
            max_version: (1 << bits) - 1,
            wraps: true,
            reads_checked: 0,
        }
    }

    /// The largest version this oracle stamps (versions wrap after it when
    /// [`Oracle::wrapping`]).
    pub fn max_version(&self) -> u32 {
        self.max_version
    }

    /// Records a write of `lpn` and returns its tag.
    #[inline]
    pub fn next_write(&mut self, lpn: Lpn) -> PageTag {
        let e = self.expected.get(lpn.idx());
        let mut version = (e & VERSION) + 1;
        if version > self.max_version {
            assert!(self.wraps, "version stamp overflow for {lpn:?}");
            version = 1;
        }
        self.expected.set(lpn.idx(), version);
        PageTag { lpn, version }
    }

    /// Records a trim of `lpn`.
    #[inline]
    pub fn trim(&mut self, lpn: Lpn) {
        let e = self.expected.get(lpn.idx());
        if e != 0 {
            self.expected.set(lpn.idx(), e | TRIMMED);
        }
    }

    /// The version a read of `lpn` must return (`None`: no data). For an LPN a power
    /// loss left uncertain, the newest version it may return.
    #[inline]
    pub fn expected(&self, lpn: Lpn) -> Option<u32> {
        let e = self.expected.get(lpn.idx());
        (e & VERSION != 0 && e & TRIMMED == 0).then_some(e & VERSION)
    }

    /// Applies a power loss: the newest data of each LPN in `lost` lived only in a
    /// volatile buffer and is gone (an older version, or none, is acceptable); trims are
    /// not durable either (the pre-trim version may come back).
    ///
    /// Panics on a [`Oracle::wrapping`] oracle: after a power loss the check compares
    /// versions by order, which wrapping versions do not keep.
    pub fn power_loss(&mut self, lost: &[Lpn]) {
        assert!(
            !self.wraps,
            "a power loss needs exact versions (Oracle::new), not wrapping ones"
        );
        for i in 0..self.expected.len() {
            let e = self.expected.get(i);
            if e & TRIMMED != 0 {
                self.expected.set(i, (e & VERSION) | LOOSE);
            }
        }
        for &lpn in lost {
            let e = self.expected.get(lpn.idx());
            let v = e & VERSION;
            assert!(v > 0, "{lpn:?} reported lost but never written");
            self.expected.set(lpn.idx(), (v - 1) | LOOSE);
        }
    }

    /// Whether `lpn` was ever written.
    #[inline]
    pub fn ever_written(&self, lpn: Lpn) -> bool {
        self.expected.get(lpn.idx()) != 0
    }

    /// Checks what a read of `lpn` returned.
    #[inline]
    pub fn check(&mut self, lpn: Lpn, found: Option<PageTag>) -> Result<(), Violation> {
        self.reads_checked += 1;
        let e = self.expected.get(lpn.idx());
        let expected = (e & VERSION != 0 && e & TRIMMED == 0).then_some(e & VERSION);
        let ok = if e & LOOSE != 0 {
            match found {
                None => true,
                Some(t) => t.lpn == lpn && expected.is_some_and(|v| t.version <= v),
            }
        } else {
            match (expected, found) {
                (None, None) => true,
                (Some(v), Some(t)) => t.lpn == lpn && t.version == v,
                _ => false,
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Violation {
                lpn,
                expected,
                found,
            })
        }
    }

    /// One page of the end-of-run read-back: when `lpn` was ever written, `read` it and
    /// check what it returns, in one look at the LPN's entry. Returns whether it was
    /// read (and checked).
    #[inline(always)]
    pub fn read_back(
        &mut self,
        lpn: Lpn,
        read: impl FnOnce() -> Option<PageTag>,
    ) -> Result<bool, Violation> {
        let e = self.expected.get(lpn.idx());
        if e == 0 {
            return Ok(false);
        }
        let found = read();
        self.reads_checked += 1;
        // The common case: exact data of a page neither trimmed nor loosened.
        if let Some(t) = found {
            if e & (TRIMMED | LOOSE) == 0 && t.lpn == lpn && t.version == e {
                return Ok(true);
            }
        }
        self.reads_checked -= 1;
        self.check(lpn, found).map(|()| true)
    }

    /// Reads checked so far.
    pub fn reads_checked(&self) -> u64 {
        self.reads_checked
    }

    /// Logical pages tracked.
    pub fn logical_pages(&self) -> u32 {
        self.expected.len() as u32
    }

    /// Bytes of the version table (for the memory figures).
    pub fn table_bytes(&self) -> u64 {
        let width = match &self.expected {
            Entries::W32(_) => 4,
            Entries::W16(_) => 2,
            Entries::W8(_) => 1,
        };
        self.expected.len() as u64 * width
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_trim() {
        let mut o = Oracle::new(4);
        assert!(o.check(Lpn(0), None).is_ok());
        let t1 = o.next_write(Lpn(0));
        assert_eq!(t1.version, 1);
        assert!(o.check(Lpn(0), Some(t1)).is_ok());
        assert!(o.check(Lpn(0), None).is_err());
        let t2 = o.next_write(Lpn(0));
        assert!(
            o.check(Lpn(0), Some(t1)).is_err(),
            "stale version must fail"
        );
        o.trim(Lpn(0));
        assert!(o.check(Lpn(0), None).is_ok());
        assert!(
            o.check(Lpn(0), Some(t2)).is_err(),
            "pre-trim data must fail"
        );
        assert_eq!(o.next_write(Lpn(0)).version, 3);
        // Someone else's data under our LPN.
        let other = o.next_write(Lpn(1));
        let err = o.check(Lpn(0), Some(other)).unwrap_err();
        assert!(err.to_string().contains("the data of LPN 1"), "{err}");
        assert_eq!(o.reads_checked(), 7);
    }

    #[test]
    fn wrapping_versions_count_modulo_and_keep_the_flags() {
        for (bits, width) in [(4, 1), (6, 1), (7, 2), (14, 2), (15, 4), (30, 4)] {
            let mut o = Oracle::wrapping(4, bits);
            assert_eq!(o.table_bytes(), 4 * width, "{bits} bits");
            let max = (1u32 << bits) - 1;
            assert_eq!(o.max_version(), max);
            assert!(!o.ever_written(Lpn(0)));
            if bits <= 14 {
                // Every version up to the top, then 1 again, never 0.
                for v in 1..=max {
                    assert_eq!(o.next_write(Lpn(0)).version, v);
                }
                let t = o.next_write(Lpn(0));
                assert_eq!(t.version, 1, "{bits} bits: wraps to 1");
                assert!(o.check(Lpn(0), Some(t)).is_ok());
                assert!(o.ever_written(Lpn(0)));
                let stale = PageTag {
                    lpn: Lpn(0),
                    version: max,
                };
                assert!(
                    o.check(Lpn(0), Some(stale)).is_err(),
                    "the previous version"
                );
            }
            let t = o.next_write(Lpn(1));
            assert!(o.check(Lpn(1), Some(t)).is_ok());
            o.trim(Lpn(1));
            assert_eq!(o.expected(Lpn(1)), None);
            assert!(o.check(Lpn(1), None).is_ok());
            assert!(o.check(Lpn(1), Some(t)).is_err(), "pre-trim data");
            assert!(o.ever_written(Lpn(1)));
            assert_eq!(o.next_write(Lpn(1)).version, 2, "a trim keeps the version");
            assert!(o.check(Lpn(2), Some(t)).is_err(), "another LPN's data");
        }
        // Exact versions never wrap.
        assert_eq!(Oracle::new(1).max_version(), VERSION);
    }

    #[test]
    fn narrow_entries_keep_both_flags() {
        for w in [8, 16] {
            for e in [0, 1, TRIMMED | 5, LOOSE | 3, TRIMMED | LOOSE | 1] {
                assert_eq!(widen(narrow(e, w), w), e, "{w} bits, {e:#x}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "exact versions")]
    fn wrapping_versions_refuse_a_power_loss() {
        let mut o = Oracle::wrapping(4, 4);
        o.next_write(Lpn(0));
        o.power_loss(&[]);
    }

    #[test]
    fn power_loss_loosens_lost_and_trimmed_pages() {
        let mut o = Oracle::new(4);
        let a1 = o.next_write(Lpn(0));
        let a2 = o.next_write(Lpn(0)); // only in a volatile buffer
        let b1 = o.next_write(Lpn(1));
        o.trim(Lpn(1));
        let c1 = o.next_write(Lpn(2));
        o.power_loss(&[Lpn(0)]);
        assert!(o.check(Lpn(0), Some(a1)).is_ok());
        assert!(o.check(Lpn(0), None).is_ok());
        assert!(
            o.check(Lpn(0), Some(a2)).is_err(),
            "the lost version cannot exist"
        );
        assert!(o.check(Lpn(1), Some(b1)).is_ok(), "a trim may be undone");
        assert!(o.check(Lpn(1), None).is_ok());
        assert!(o.check(Lpn(2), Some(c1)).is_ok());
        assert!(o.check(Lpn(2), None).is_err(), "durable data must survive");
        let a3 = o.next_write(Lpn(0));
        assert_eq!(
            a3.version, 2,
            "the lost version number is reused: it never reached flash"
        );
        assert!(
            o.check(Lpn(0), Some(a1)).is_err(),
            "strict again after a new write"
        );
    }
}
