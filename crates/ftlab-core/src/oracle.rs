//! The correctness oracle: the version last written for every LPN.
//!
//! The engine stamps every host page write with the LPN's next version; FTLs carry the
//! stamp in the spare area through every copy. Every page a host read returns is
//! checked against the expected stamp, so an FTL that loses or misplaces data is caught
//! on the first read that sees it.
//!
//! A trimmed LPN keeps its last version with [`TRIMMED`] set, so the next write still
//! gets a strictly larger version and a stale pre-trim copy can never pass as current.

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

/// Expected version per LPN.
#[derive(Clone, Debug)]
pub struct Oracle {
    expected: Vec<u32>,
    reads_checked: u64,
}

impl Oracle {
    /// An oracle for `logical_pages` pages, none written.
    pub fn new(logical_pages: u32) -> Self {
        Oracle {
            expected: vec![0; logical_pages as usize],
            reads_checked: 0,
        }
    }

    /// Records a write of `lpn` and returns its tag.
    #[inline]
    pub fn next_write(&mut self, lpn: Lpn) -> PageTag {
        let e = &mut self.expected[lpn.idx()];
        let version = (*e & VERSION) + 1;
        assert!(version < LOOSE, "version stamp overflow for {lpn:?}");
        *e = version;
        PageTag { lpn, version }
    }

    /// Records a trim of `lpn`.
    #[inline]
    pub fn trim(&mut self, lpn: Lpn) {
        let e = &mut self.expected[lpn.idx()];
        if *e != 0 {
            *e |= TRIMMED;
        }
    }

    /// The version a read of `lpn` must return (`None`: no data). For an LPN a power
    /// loss left uncertain, the newest version it may return.
    #[inline]
    pub fn expected(&self, lpn: Lpn) -> Option<u32> {
        let e = self.expected[lpn.idx()];
        (e & VERSION != 0 && e & TRIMMED == 0).then_some(e & VERSION)
    }

    /// Applies a power loss: the newest data of each LPN in `lost` lived only in a
    /// volatile buffer and is gone (an older version, or none, is acceptable); trims are
    /// not durable either (the pre-trim version may come back).
    pub fn power_loss(&mut self, lost: &[Lpn]) {
        for e in &mut self.expected {
            if *e & TRIMMED != 0 {
                *e = (*e & VERSION) | LOOSE;
            }
        }
        for &lpn in lost {
            let e = &mut self.expected[lpn.idx()];
            let v = *e & VERSION;
            assert!(v > 0, "{lpn:?} reported lost but never written");
            *e = (v - 1) | LOOSE;
        }
    }

    /// Whether `lpn` was ever written.
    #[inline]
    pub fn ever_written(&self, lpn: Lpn) -> bool {
        self.expected[lpn.idx()] != 0
    }

    /// Checks what a read of `lpn` returned.
    #[inline]
    pub fn check(&mut self, lpn: Lpn, found: Option<PageTag>) -> Result<(), Violation> {
        self.reads_checked += 1;
        let expected = self.expected(lpn);
        let ok = if self.expected[lpn.idx()] & LOOSE != 0 {
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

    /// Reads checked so far.
    pub fn reads_checked(&self) -> u64 {
        self.reads_checked
    }

    /// Logical pages tracked.
    pub fn logical_pages(&self) -> u32 {
        self.expected.len() as u32
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
