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
//! After a power loss (issue 25, item 2) a page may read as something other than its
//! last write; what it may read as is an [`Accept`] set, kept beside `expected` (whose
//! layout this leaves alone) for the pages the power loss made uncertain ([`LOOSE`]):
//! - A page whose newest version lived only in a volatile write buffer reads as the
//!   newest version the FTL was handed before it (a version handed to the FTL is
//!   durable: [`Ftl::recover`](crate::ftl::Ftl::recover)'s contract), or as the page's
//!   state before that version if the buffer absorbed every write since; never older,
//!   never zeroes when a version reached the FTL. This needs to know which versions
//!   reached the FTL: with [`Oracle::track_handoffs`] on (the engine turns it on for a
//!   run that plans power losses), the engine reports each version the FTL is handed
//!   ([`Oracle::handed`]) and the oracle keeps, for each page whose newest version has
//!   not reached the FTL, what the page holds durably (a small map, emptied as the
//!   buffer hands pages over, hence at every flush). Without tracking (a power loss no
//!   one announced), such a page may read as zeroes or any older version.
//! - A trimmed page reads as zeroes or as its content before the trim (trims are not
//!   persisted): the last version the FTL was handed, or, for a scheme whose
//!   [`TrimRecovery`] says so, any version up to it.
//! - A page whose newest data an FTL itself held only in RAM (a documented window, such
//!   as CACH-FTL's in-place BMR-GC) reads as zeroes or any older version.
//! - A page handed to the FTL in a request that a power loss struck inside (a torn
//!   operation, [`Oracle::in_flight`]) reads as what it held durably before that
//!   request or as a version handed in it: the request never completed, so nothing it
//!   wrote is owed, but nothing older than the durable version may come back.
//! - Every other page reads exactly as last written. Versions are never given twice:
//!   a version lost with a buffer keeps its number.

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

use crate::flash::{Cause, Flash};
use crate::units::{Lpn, PageTag, Ppn};
use std::collections::HashMap;

/// Marks an LPN whose last operation was a trim.
pub const TRIMMED: u32 = 1 << 31;

/// Marks an LPN whose content a power loss made uncertain: a read may return what its
/// [`Accept`] set (kept beside, in the oracle) allows.
pub const LOOSE: u32 = 1 << 30;

const VERSION: u32 = !(TRIMMED | LOOSE);

/// What a read of a page a power loss made uncertain may return: zeroes (no data) if
/// `zeroes`, and the versions `lo..=hi` (none if `lo > hi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accept {
    /// No data is acceptable.
    pub zeroes: bool,
    /// Oldest acceptable version.
    pub lo: u32,
    /// Newest acceptable version.
    pub hi: u32,
}

impl Accept {
    /// Exactly version `v` (`0`: exactly no data).
    pub fn exact(v: u32) -> Accept {
        if v == 0 {
            Accept {
                zeroes: true,
                lo: 1,
                hi: 0,
            }
        } else {
            Accept {
                zeroes: false,
                lo: v,
                hi: v,
            }
        }
    }

    /// Zeroes or any version up to `hi`.
    pub fn up_to(hi: u32) -> Accept {
        Accept {
            zeroes: true,
            lo: 1,
            hi,
        }
    }

    /// Whether a read that found `version` (`None`: no data) is acceptable.
    pub fn allows(&self, version: Option<u32>) -> bool {
        match version {
            None => self.zeroes,
            Some(v) => self.lo <= v && v <= self.hi,
        }
    }

    /// The same, with zeroes allowed too.
    fn or_zeroes(self) -> Accept {
        Accept {
            zeroes: true,
            ..self
        }
    }
}

impl std::fmt::Display for Accept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let versions = match (self.lo, self.hi) {
            (lo, hi) if lo > hi => None,
            (lo, hi) if lo == hi => Some(format!("version {lo}")),
            (lo, hi) => Some(format!("a version from {lo} to {hi}")),
        };
        match (self.zeroes, versions) {
            (true, Some(v)) => write!(f, "no data or {v}"),
            (false, Some(v)) => write!(f, "{v}"),
            (_, None) => write!(f, "no data"),
        }
    }
}

/// What a page trimmed before a power loss may read as after recovery: no scheme here
/// persists trims, so the trimmed data may come back ([`Ftl::trim_recovery`](
/// crate::ftl::Ftl::trim_recovery); each scheme documents its answer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrimRecovery {
    /// Zeroes, or the last version the FTL was handed before the trim.
    #[default]
    LastVersion,
    /// Zeroes, or any version up to that one: GC may erase the trimmed (invalid) last
    /// version while an older stale copy survives elsewhere, and recovery, seeing no
    /// trim on flash, maps the newest copy left.
    AnyEarlier,
}

/// A read returned something other than the last write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The logical page.
    pub lpn: Lpn,
    /// The version expected (`None`: unmapped, never written or trimmed).
    pub expected: Option<u32>,
    /// After a power loss: everything acceptable (`expected` is then its newest version).
    pub accept: Option<Accept>,
    /// What the read returned.
    pub found: Option<PageTag>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let exp = match (self.accept, self.expected) {
            (Some(a), _) => format!("{a} (after a power loss)"),
            (None, Some(v)) => format!("version {v}"),
            (None, None) => "no data (never written or trimmed)".into(),
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

/// An entry of one of the three widths.
trait Entry: Copy {
    /// The entry in the layout of a 32-bit one (flags in the top two bits).
    fn widen(self) -> u32;
    /// A 32-bit entry at this width (its version fits the width's version bits).
    fn narrow(e: u32) -> Self;
    /// The entry's bits as they are (its version, when it has no flag).
    fn raw(self) -> u32;
    /// An entry of these bits (a version that fits, no flag).
    fn from_raw(v: u32) -> Self;
}

macro_rules! entry {
    ($t:ty, $w:expr) => {
        impl Entry for $t {
            #[inline(always)]
            fn widen(self) -> u32 {
                widen(self as u32, $w)
            }
            #[inline(always)]
            fn narrow(e: u32) -> Self {
                narrow(e, $w) as $t
            }
            #[inline(always)]
            fn raw(self) -> u32 {
                self as u32
            }
            #[inline(always)]
            fn from_raw(v: u32) -> Self {
                v as $t
            }
        }
    };
}
entry!(u32, 32);
entry!(u16, 16);
entry!(u8, 8);

/// A write's new version in `slot`: one more than the old one, wrapping to 1 past
/// `max` (an error unless versions wrap); returns the old entry, flags included (in
/// the 32-bit layout), and the version.
#[inline(always)]
fn bump<T: Entry>(slot: &mut T, max: u32, wraps: bool, lpn: Lpn) -> (u32, u32) {
    let old = slot.widen();
    let mut version = (old & VERSION) + 1;
    if version > max {
        assert!(wraps, "version stamp overflow for {lpn:?}");
        version = 1;
    }
    *slot = T::narrow(version);
    (old, version)
}

/// Bumps entries without flags (each is its version) in place: one more, 1 past
/// `max` (which fits the entry's width); returns whether any went past `max`.
#[inline(always)]
fn bump_plain<T: Entry>(entries: &mut [T], max: u32) -> bool {
    let mut over = false;
    for e in entries {
        let version = e.raw() + 1;
        over |= version > max;
        *e = T::from_raw(if version > max { 1 } else { version });
    }
    over
}

impl Entries {
    #[inline(always)]
    fn get(&self, i: usize) -> u32 {
        match self {
            Entries::W32(v) => v[i].widen(),
            Entries::W16(v) => v[i].widen(),
            Entries::W8(v) => v[i].widen(),
        }
    }

    #[inline(always)]
    fn set(&mut self, i: usize, e: u32) {
        match self {
            Entries::W32(v) => v[i] = u32::narrow(e),
            Entries::W16(v) => v[i] = u16::narrow(e),
            Entries::W8(v) => v[i] = u8::narrow(e),
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
    /// What power losses need, beside `expected`.
    pl: PowerLossState,
}

/// The oracle's power-loss bookkeeping. Empty, and never touched on the write path,
/// unless hand-offs are tracked or a power loss happened.
#[derive(Clone, Debug, Default)]
struct PowerLossState {
    /// Versions handed to the FTL are reported ([`Oracle::track_handoffs`]).
    tracking: bool,
    /// The FTL's answer for trimmed pages.
    trim_rule: TrimRecovery,
    /// Tracking: pages whose newest version has not reached the FTL, and what each
    /// holds durably (what a read may return if that version never does).
    pending: HashMap<u32, Accept>,
    /// Trimmed pages whose content before the trim is not the version in `expected`
    /// (the trim dropped a version only buffered, or followed a power loss).
    trimmed_from: HashMap<u32, Accept>,
    /// Pages a power loss made uncertain ([`LOOSE`]): what a read may return.
    loose: HashMap<u32, Accept>,
}

impl Oracle {
    /// An oracle for `logical_pages` pages, none written.
    pub fn new(logical_pages: u32) -> Self {
        Oracle {
            expected: Entries::W32(vec![0; logical_pages as usize]),
            max_version: VERSION,
            wraps: false,
            reads_checked: 0,
            pl: PowerLossState::default(),
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
            pl: PowerLossState::default(),
        }
    }

    /// The largest version this oracle stamps (versions wrap after it when
    /// [`Oracle::wrapping`]).
    pub fn max_version(&self) -> u32 {
        self.max_version
    }

    /// Tracks which versions reach the FTL, so that the checks after a power loss are
    /// strict (see the module docs); the caller then reports every version handed to
    /// the FTL with [`Oracle::handed`]. Turn on while every version written so far has
    /// reached the FTL (before the first host request; preconditioning writes straight
    /// to the FTL).
    pub fn track_handoffs(&mut self) {
        self.pl.tracking = true;
    }

    /// Whether hand-offs are tracked.
    pub fn tracks_handoffs(&self) -> bool {
        self.pl.tracking
    }

    /// What the FTL says trimmed pages read as after a power loss.
    pub fn set_trim_recovery(&mut self, rule: TrimRecovery) {
        self.pl.trim_rule = rule;
    }

    /// Fetches the entry of `lpn` into the cache ahead of its use (a hint: no state
    /// changes; an LPN past the end is ignored).
    #[inline]
    pub fn prefetch(&self, lpn: Lpn) {
        let i = lpn.idx();
        match &self.expected {
            Entries::W32(v) => v.get(i).map(crate::prefetch::read),
            Entries::W16(v) => v.get(i).map(crate::prefetch::read),
            Entries::W8(v) => v.get(i).map(crate::prefetch::read),
        };
    }

    /// Records a write of `lpn` and returns its tag.
    #[inline]
    pub fn next_write(&mut self, lpn: Lpn) -> PageTag {
        let (max, wraps, i) = (self.max_version, self.wraps, lpn.idx());
        // One match on the width and one bounds check: the entry is read and written
        // through the same slot.
        let (old, version) = match &mut self.expected {
            Entries::W32(v) => bump(&mut v[i], max, wraps, lpn),
            Entries::W16(v) => bump(&mut v[i], max, wraps, lpn),
            Entries::W8(v) => bump(&mut v[i], max, wraps, lpn),
        };
        if old & (TRIMMED | LOOSE) != 0 || self.pl.tracking {
            self.note_write(lpn, old);
        }
        PageTag { lpn, version }
    }

    /// [`Oracle::next_write`] of every page of `first..end` in order, the tags
    /// appended to `out`: a preconditioning fill's or a request's run, with the entry
    /// width chosen once per run instead of once per page. The same versions and
    /// bookkeeping as the page-by-page calls.
    #[inline]
    pub fn next_writes(&mut self, first: Lpn, end: Lpn, out: &mut Vec<PageTag>) {
        if end.idx() == first.idx() + 1 {
            // One page, the common host write: the page-by-page call itself, without
            // the run's scan for flags and its widened loops.
            out.push(self.next_write(first));
        } else {
            self.next_writes_run(first, end, out);
        }
    }

    /// [`Oracle::next_writes`] of a run that is not one page.
    #[inline(never)]
    fn next_writes_run(&mut self, first: Lpn, end: Lpn, out: &mut Vec<PageTag>) {
        let (a, b) = (first.idx(), end.idx().max(first.idx()));
        let flagged = |e: u32| e & (TRIMMED | LOOSE) != 0;
        let plain = !self.pl.tracking
            && match &self.expected {
                Entries::W32(v) => !v[a..b].iter().any(|&e| flagged(e.widen())),
                Entries::W16(v) => !v[a..b].iter().any(|&e| flagged(e.widen())),
                Entries::W8(v) => !v[a..b].iter().any(|&e| flagged(e.widen())),
            };
        if !plain {
            for l in a..b {
                out.push(self.next_write(Lpn(l as u32)));
            }
            return;
        }
        let (max, wraps) = (self.max_version, self.wraps);
        // No entry of the run has a flag, so an entry is its version at any width.
        // Two branch-free loops the compiler widens: the entries bumped in place (a
        // version past the top wraps to 1, an error only for exact versions, checked
        // after the run), then the tags read off them.
        let over = match &mut self.expected {
            Entries::W32(v) => bump_plain(&mut v[a..b], max),
            Entries::W16(v) => bump_plain(&mut v[a..b], max),
            Entries::W8(v) => bump_plain(&mut v[a..b], max),
        };
        let tags = |l: usize, version: u32| PageTag {
            lpn: Lpn(l as u32),
            version,
        };
        match &self.expected {
            Entries::W32(v) => out.extend((a..b).zip(&v[a..b]).map(|(l, &e)| tags(l, e.raw()))),
            Entries::W16(v) => out.extend((a..b).zip(&v[a..b]).map(|(l, &e)| tags(l, e.raw()))),
            Entries::W8(v) => out.extend((a..b).zip(&v[a..b]).map(|(l, &e)| tags(l, e.raw()))),
        }
        assert!(
            wraps || !over,
            "version stamp overflow in {:?}..{:?}",
            first,
            end
        );
    }

    /// A write of `lpn`, which held `old`, when there is bookkeeping to update.
    #[cold]
    fn note_write(&mut self, lpn: Lpn, old: u32) {
        let before = self.settled(lpn, old);
        if self.pl.tracking {
            self.pl.pending.entry(lpn.0).or_insert(before);
        }
    }

    /// What `lpn`, holding `old`, holds durably if its pending versions (if any) were
    /// lost, assuming its version in `old` reached the FTL; drops the side entries that
    /// `old`'s flags point to.
    fn settled(&mut self, lpn: Lpn, old: u32) -> Accept {
        if old & LOOSE != 0 {
            self.pl
                .loose
                .remove(&lpn.0)
                .unwrap_or(Accept::up_to(old & VERSION))
        } else if old & TRIMMED != 0 {
            self.trim_accept(lpn, old)
        } else {
            Accept::exact(old & VERSION)
        }
    }

    /// What a page trimmed while holding `e` may read as after a power loss.
    fn trim_accept(&mut self, lpn: Lpn, e: u32) -> Accept {
        let v = e & VERSION;
        let before = self.pl.trimmed_from.remove(&lpn.0);
        if !self.pl.tracking {
            // Which version reached the FTL is not known.
            return Accept::up_to(v);
        }
        let before = before.unwrap_or(Accept::exact(v)).or_zeroes();
        match self.pl.trim_rule {
            TrimRecovery::LastVersion => before,
            TrimRecovery::AnyEarlier => Accept::up_to(before.hi),
        }
    }

    /// The FTL was handed `tag` (tracking only): a version the FTL is handed is
    /// durable. Once the newest version of a page reaches it, nothing is pending; an
    /// older one (a buffer that writes out its old copy when the new one comes in,
    /// reported after the new version was stamped, or a padding copy) is what the page
    /// holds durably until then.
    #[inline]
    pub fn handed(&mut self, tag: PageTag) {
        if tag.lpn.idx() >= self.expected.len() {
            return;
        }
        let e = self.expected.get(tag.lpn.idx());
        if e & VERSION == tag.version && e & TRIMMED == 0 {
            self.pl.pending.remove(&tag.lpn.0);
        } else if let Some(a) = self.pl.pending.get_mut(&tag.lpn.0) {
            *a = Accept::exact(tag.version);
        }
    }

    /// The FTL was handed `tag` in a request a power cut struck inside (tracking only):
    /// the version may or may not be on flash. The page may now read as what it held
    /// durably before the request, or as this version (or another handed in the same
    /// request); [`Oracle::power_loss`] with `torn` then loosens it so.
    pub fn in_flight(&mut self, tag: PageTag) {
        if tag.lpn.idx() >= self.expected.len() {
            return;
        }
        if let Some(a) = self.pl.pending.get_mut(&tag.lpn.0) {
            let v = tag.version;
            *a = if a.lo > a.hi {
                Accept { lo: v, hi: v, ..*a }
            } else {
                Accept {
                    lo: a.lo.min(v),
                    hi: a.hi.max(v),
                    ..*a
                }
            };
        }
    }

    /// Records a trim of `lpn`.
    #[inline]
    pub fn trim(&mut self, lpn: Lpn) {
        let old = self.expected.get(lpn.idx());
        if old == 0 || old & TRIMMED != 0 {
            return;
        }
        self.expected.set(lpn.idx(), (old & VERSION) | TRIMMED);
        if old & LOOSE != 0 || self.pl.tracking {
            self.note_trim(lpn, old);
        }
    }

    /// A trim of `lpn`, which held `old`, when there is bookkeeping to update.
    #[cold]
    fn note_trim(&mut self, lpn: Lpn, old: u32) {
        // What the FTL holds: a buffered version the trim drops never reached it.
        let before = match self.pl.pending.remove(&lpn.0) {
            Some(a) => a,
            None => self.settled(lpn, old),
        };
        if before != Accept::exact(old & VERSION) {
            self.pl.trimmed_from.insert(lpn.0, before);
        }
    }

    /// The version a read of `lpn` must return (`None`: no data). For an LPN a power
    /// loss left uncertain, the newest version it may return.
    #[inline]
    pub fn expected(&self, lpn: Lpn) -> Option<u32> {
        let e = self.expected.get(lpn.idx());
        if e & LOOSE != 0 {
            return self
                .accept(lpn)
                .and_then(|a| (a.lo <= a.hi).then_some(a.hi));
        }
        (e & VERSION != 0 && e & TRIMMED == 0).then_some(e & VERSION)
    }

    /// For an LPN a power loss left uncertain, everything a read may return.
    pub fn accept(&self, lpn: Lpn) -> Option<Accept> {
        if self.expected.get(lpn.idx()) & LOOSE == 0 {
            return None;
        }
        Some(
            self.pl
                .loose
                .get(&lpn.0)
                .copied()
                .unwrap_or(Accept::up_to(self.expected.get(lpn.idx()) & VERSION)),
        )
    }

    /// Applies a power loss. `lost`: pages whose newest data lived only in a volatile
    /// buffer (the buffer's report); `ftl_lost`: pages whose newest data the FTL held
    /// only in RAM (its documented window). Trims are not durable: a trimmed page may
    /// read as its content before the trim ([`TrimRecovery`]). `torn`: the loss struck
    /// inside a request, so every page whose newest version had not durably reached the
    /// FTL (those of the request, whatever the buffer reports) reads as what it held
    /// durably or a version handed in the request ([`Oracle::in_flight`]).
    ///
    /// Panics on a [`Oracle::wrapping`] oracle: after a power loss the check compares
    /// versions by order, which wrapping versions do not keep.
    pub fn power_loss(&mut self, lost: &[Lpn], ftl_lost: &[Lpn], torn: bool) {
        assert!(
            !self.wraps,
            "a power loss needs exact versions (Oracle::new), not wrapping ones"
        );
        for i in 0..self.expected.len() {
            let e = self.expected.get(i);
            if e & TRIMMED != 0 {
                let a = self.trim_accept(Lpn(i as u32), e);
                self.loosen(Lpn(i as u32), a);
            }
        }
        for &lpn in lost {
            let e = self.expected.get(lpn.idx());
            let v = e & VERSION;
            assert!(v > 0, "{lpn:?} reported lost but never written");
            let a = if self.pl.tracking {
                match self.pl.pending.remove(&lpn.0) {
                    Some(a) => a,
                    // Its newest version reached the FTL (say, a buffer-aware GC wrote
                    // the buffer's copy): durable, whatever the buffer says.
                    None => continue,
                }
            } else if e & LOOSE != 0 {
                continue;
            } else {
                Accept::up_to(v - 1)
            };
            self.loosen(lpn, a);
        }
        for &lpn in ftl_lost {
            let v = self.expected.get(lpn.idx()) & VERSION;
            assert!(v > 0, "{lpn:?} reported lost but never written");
            self.pl.pending.remove(&lpn.0);
            self.loosen(lpn, Accept::up_to(v - 1));
        }
        if torn {
            let mut left: Vec<(u32, Accept)> = self.pl.pending.drain().collect();
            // Deterministic order (the map's is not); the result does not depend on it.
            left.sort_unstable_by_key(|&(l, _)| l);
            for (l, a) in left {
                self.loosen(Lpn(l), a);
            }
        }
        // A fresh buffer holds nothing.
        self.pl.pending.clear();
    }

    /// `lpn` may now read as anything `a` allows.
    fn loosen(&mut self, lpn: Lpn, a: Accept) {
        let e = self.expected.get(lpn.idx());
        self.expected.set(lpn.idx(), (e & VERSION) | LOOSE);
        self.pl.loose.insert(lpn.0, a);
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

    /// The end-of-run read-back of a page-mapped FTL's whole map, `l2p[lpn]` the
    /// physical page of `lpn` or `unmapped`: as [`Oracle::read_back`] of every LPN in
    /// order, reading from `flash` as the host does, and returns the pages checked.
    ///
    /// When the flash only counts ([`Flash::counts_only`]), runs of pages that read
    /// exactly as expected are sensed and compared in one tight loop, the entry width
    /// matched once per run, and their reads counted once; any other page (unmapped,
    /// trimmed, loosened by a power loss, or wrong) goes through [`Oracle::check`]
    /// with a counted read. The same counts and the same verdict as page by page.
    pub fn read_back_map(
        &mut self,
        l2p: &[u32],
        unmapped: u32,
        flash: &mut Flash,
    ) -> Result<u64, Violation> {
        assert_eq!(l2p.len(), self.expected.len(), "a map of every LPN");
        let mut checked = 0;
        if !flash.counts_only() {
            for (l, &ppn) in l2p.iter().enumerate() {
                let read = || (ppn != unmapped).then(|| flash.read(Ppn(ppn), Cause::Host));
                checked += self.read_back(Lpn(l as u32), read)? as u64;
                if l % 4096 == 0 {
                    flash.clear_log();
                }
            }
            return Ok(checked);
        }
        let mut from = 0;
        loop {
            // The version a page must read as; 0 (never written: not read) and
            // `u32::MAX` (trimmed or loosened: a full check) stop no run.
            let want = |e: u32| {
                if e & (TRIMMED | LOOSE) == 0 {
                    e
                } else {
                    u32::MAX
                }
            };
            let (stop, n) = match &self.expected {
                Entries::W32(v) => flash.sense_matching(l2p, unmapped, v, from, want),
                Entries::W16(v) => {
                    flash.sense_matching(l2p, unmapped, v, from, |e| want(widen(e as u32, 16)))
                }
                Entries::W8(v) => {
                    flash.sense_matching(l2p, unmapped, v, from, |e| want(widen(e as u32, 8)))
                }
            };
            flash.count_reads(n, Cause::Host);
            self.reads_checked += n;
            checked += n;
            let Some(&ppn) = l2p.get(stop) else {
                return Ok(checked);
            };
            let found = (ppn != unmapped).then(|| flash.read(Ppn(ppn), Cause::Host));
            self.check(Lpn(stop as u32), found)?;
            checked += 1;
            from = stop + 1;
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

    /// Bytes of the version table (for the memory figures).
    pub fn table_bytes(&self) -> u64 {
        let width = match &self.expected {
            Entries::W32(_) => 4,
            Entries::W16(_) => 2,
            Entries::W8(_) => 1,
        };
        self.expected.len() as u64 * width
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
        if e & LOOSE != 0 {
            return self.check_loose(lpn, found);
        }
        let expected = (e & VERSION != 0 && e & TRIMMED == 0).then_some(e & VERSION);
        let ok = match (expected, found) {
            (None, None) => true,
            (Some(v), Some(t)) => t.lpn == lpn && t.version == v,
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(Violation {
                lpn,
                expected,
                accept: None,
                found,
            })
        }
    }

    #[cold]
    fn check_loose(&self, lpn: Lpn, found: Option<PageTag>) -> Result<(), Violation> {
        let a = self.accept(lpn).expect("a loose page");
        let ok = match found {
            None => a.allows(None),
            Some(t) => t.lpn == lpn && a.allows(Some(t.version)),
        };
        if ok {
            Ok(())
        } else {
            Err(Violation {
                lpn,
                expected: self.expected(lpn),
                accept: Some(a),
                found,
            })
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn next_writes_stamps_what_page_by_page_writes_stamp() {
        // Every entry width, versions that wrap, trims (flagged entries: the run falls
        // back to the page-by-page path) and hand-off tracking.
        for make in [
            (|n| Oracle::new(n)) as fn(u32) -> Oracle,
            |n| Oracle::wrapping(n, 3),
            |n| Oracle::wrapping(n, 10),
            |n| {
                let mut o = Oracle::new(n);
                o.track_handoffs();
                o
            },
        ] {
            let n = 64;
            let (mut a, mut b) = (make(n), make(n));
            let mut rng = crate::rng::SplitMix64::new(3);
            for _ in 0..2000 {
                if rng.below(4) == 0 {
                    let l = Lpn(rng.below(n as u64) as u32);
                    a.trim(l);
                    b.trim(l);
                    continue;
                }
                let len = rng.below(9) as u32;
                let first = rng.below((n - len) as u64) as u32;
                let mut run = Vec::new();
                a.next_writes(Lpn(first), Lpn(first + len), &mut run);
                let one: Vec<PageTag> =
                    (first..first + len).map(|l| b.next_write(Lpn(l))).collect();
                assert_eq!(run, one);
            }
            let all =
                |o: &mut Oracle| -> Vec<PageTag> { (0..n).map(|l| o.next_write(Lpn(l))).collect() };
            assert_eq!(all(&mut a), all(&mut b));
        }
    }

    use super::*;

    #[test]
    fn read_back_map_does_what_page_by_page_read_backs_do() {
        // A small page map over flash (whole and packed tags, every entry width, with
        // and without a log, 8-page blocks and 64-page ones where whole chunks of
        // consecutive pages are checked at once, some runs filled in order first):
        // LPNs never written, rewritten, trimmed (unmapped or still mapped), loosened
        // by a power loss, and lost writes (the map left on an old version, or the
        // page never programmed: a violation). The bulk read-back and the page-by-page
        // one must give the same verdict, flash counts and reads checked.
        let geo = |ppb: u32, pages: u64| {
            crate::geometry::GeometryBuilder {
                page_size: 2048,
                pages_per_block: ppb,
                spare_bytes: 64,
                logical_bytes: pages * 2048,
                op_percent: 300.0,
                channels: 1,
                dies_per_channel: 1,
                planes_per_die: 1,
                min_spare_blocks: 0,
            }
            .build()
            .unwrap()
        };
        let (small, big) = (geo(8, 64), geo(64, 256));
        let (mut ok, mut violations) = (0, 0);
        for case in 0..1200u64 {
            let mut rng = crate::rng::SplitMix64::new(case);
            let geo = if case % 4 < 2 { &small } else { &big };
            let n = geo.logical_pages;
            let mut oracle = match case % 3 {
                0 => Oracle::new(n),
                1 => Oracle::wrapping(n, 3),
                _ => Oracle::wrapping(n, 10),
            };
            let mut flash = if case % 2 == 0 {
                Flash::new(geo)
            } else {
                Flash::with_packed_tags(geo)
            };
            flash.set_logging(case % 5 == 0);
            let mut l2p = vec![u32::MAX; n as usize];
            let mut next = 0u32;
            // After a fill, few changes, so whole chunks stay in order.
            let filled = rng.below(2) == 0;
            if filled {
                for l in 0..n {
                    flash.program(Ppn(next), oracle.next_write(Lpn(l)), Cause::Host);
                    l2p[l as usize] = next;
                    next += 1;
                }
            }
            let lose = rng.below(3) == 0;
            for _ in 0..rng.below(if filled { 12 } else { 200 }) {
                let l = Lpn(rng.below(n as u64) as u32);
                match rng.below(10) {
                    0 => {
                        oracle.trim(l);
                        // A trimmed page still mapped may read as a violation
                        // (per the trim rule): only where writes are lost too.
                        if !lose || rng.below(2) == 0 {
                            l2p[l.idx()] = u32::MAX;
                        }
                    }
                    // (Power losses need exact versions.)
                    1 if case % 3 == 0 && oracle.ever_written(l) => {
                        oracle.power_loss(&[], &[l], false)
                    }
                    // A write the FTL drops: the map stays on the old version.
                    2 if lose && (filled || rng.below(8) == 0) => {
                        oracle.next_write(l);
                    }
                    _ => {
                        let tag = oracle.next_write(l);
                        flash.program(Ppn(next), tag, Cause::Host);
                        if !(lose && rng.below(40) == 0) {
                            l2p[l.idx()] = next;
                        }
                        next += 1;
                    }
                }
            }
            flash.clear_log();
            let (mut f2, mut o2) = (flash.clone(), oracle.clone());
            let bulk = oracle.read_back_map(&l2p, u32::MAX, &mut flash);
            let mut one = Ok(0);
            for (l, &ppn) in l2p.iter().enumerate() {
                let read = || (ppn != u32::MAX).then(|| f2.read(Ppn(ppn), Cause::Host));
                match o2.read_back(Lpn(l as u32), read) {
                    Ok(r) => one = one.map(|c| c + r as u64),
                    Err(v) => {
                        one = Err(v);
                        break;
                    }
                }
            }
            assert_eq!(bulk, one, "case {case}");
            assert_eq!(flash.stats(), f2.stats(), "case {case}");
            assert_eq!(oracle.reads_checked(), o2.reads_checked(), "case {case}");
            if bulk.is_ok() {
                ok += 1;
            } else {
                violations += 1;
            }
        }
        // Both verdicts were reached often.
        assert!(
            ok > 300 && violations > 100,
            "{ok} clean, {violations} violations"
        );
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
        o.power_loss(&[], &[], false);
    }

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
        // No tracking: which versions reached the FTL is unknown.
        let mut o = Oracle::new(4);
        let a1 = o.next_write(Lpn(0));
        let a2 = o.next_write(Lpn(0)); // only in a volatile buffer
        let b1 = o.next_write(Lpn(1));
        o.trim(Lpn(1));
        let c1 = o.next_write(Lpn(2));
        o.power_loss(&[Lpn(0)], &[], false);
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
        assert_eq!(a3.version, 3, "a lost version keeps its number");
        assert!(
            o.check(Lpn(0), Some(a1)).is_err(),
            "strict again after a new write"
        );
    }

    /// Tracking: a page whose newest version was lost with the buffer reads as the
    /// newest version the FTL was handed, never older and never nothing.
    #[test]
    fn tracked_power_loss_holds_the_ftl_to_what_it_was_handed() {
        let mut o = Oracle::new(8);
        o.track_handoffs();
        let a1 = o.next_write(Lpn(0));
        o.handed(a1);
        let a2 = o.next_write(Lpn(0));
        o.handed(a2); // evicted to the FTL
        let a3 = o.next_write(Lpn(0)); // only buffered
        let _a4 = o.next_write(Lpn(0)); // absorbed by the buffer
        let b1 = o.next_write(Lpn(1)); // only buffered, never handed
        let c1 = o.next_write(Lpn(2));
        o.handed(c1);
        o.power_loss(&[Lpn(0), Lpn(1)], &[], false);
        assert!(o.check(Lpn(0), Some(a2)).is_ok());
        assert!(o.check(Lpn(0), Some(a1)).is_err(), "older than durable");
        assert!(o.check(Lpn(0), None).is_err(), "a durable version exists");
        assert!(o.check(Lpn(0), Some(a3)).is_err(), "never reached the FTL");
        assert!(o.check(Lpn(1), None).is_ok());
        assert!(o.check(Lpn(1), Some(b1)).is_err());
        assert!(o.check(Lpn(2), Some(c1)).is_ok());
        let err = o.check(Lpn(0), None).unwrap_err();
        assert!(
            err.to_string().contains("version 2 (after a power loss)"),
            "{err}"
        );
        // Lost again before anything reached the FTL: the same durable version.
        let a5 = o.next_write(Lpn(0));
        assert_eq!(a5.version, 5, "versions are never given twice");
        o.power_loss(&[Lpn(0)], &[], false);
        assert!(o.check(Lpn(0), Some(a2)).is_ok());
        assert!(o.check(Lpn(0), None).is_err());
        // A flush hands everything over: nothing pending.
        let a6 = o.next_write(Lpn(0));
        o.handed(a6);
        o.power_loss(&[], &[], false);
        assert!(o.check(Lpn(0), Some(a6)).is_ok());
        assert!(o.check(Lpn(0), Some(a2)).is_err());
    }

    /// Regression (found by the model test while building this): a buffer may write out
    /// its old copy of a page when the new one comes in, so the engine reports the old
    /// version handed after the new one was stamped; it is what the page holds durably.
    #[test]
    fn an_older_version_handed_late_is_the_durable_one() {
        let mut o = Oracle::new(2);
        o.track_handoffs();
        let a1 = o.next_write(Lpn(0)); // buffered
        let _a2 = o.next_write(Lpn(0)); // the buffer writes a1 out as a2 comes in
        o.handed(a1);
        o.power_loss(&[Lpn(0)], &[], false);
        assert!(o.check(Lpn(0), Some(a1)).is_ok());
        assert!(o.check(Lpn(0), None).is_err());
    }

    #[test]
    fn tracked_trims_read_as_zeroes_or_what_the_ftl_held() {
        let mut o = Oracle::new(8);
        o.track_handoffs();
        // Page 0: v1, v2 handed, trimmed.
        for _ in 0..2 {
            let t = o.next_write(Lpn(0));
            o.handed(t);
        }
        o.trim(Lpn(0));
        // Page 1: v1 handed, v2 buffered, trimmed (the buffer drops v2).
        let b1 = o.next_write(Lpn(1));
        o.handed(b1);
        let b2 = o.next_write(Lpn(1));
        o.trim(Lpn(1));
        // Page 2: v1 handed, trimmed, v2 buffered and lost.
        let c1 = o.next_write(Lpn(2));
        o.handed(c1);
        o.trim(Lpn(2));
        let c2 = o.next_write(Lpn(2));
        let mut any = o.clone();
        any.set_trim_recovery(TrimRecovery::AnyEarlier);
        o.power_loss(&[Lpn(2)], &[], false);
        let v = |lpn, version| Some(PageTag { lpn, version });
        assert!(o.check(Lpn(0), None).is_ok());
        assert!(o.check(Lpn(0), v(Lpn(0), 2)).is_ok());
        assert!(
            o.check(Lpn(0), v(Lpn(0), 1)).is_err(),
            "the last version only"
        );
        assert!(o.check(Lpn(1), v(Lpn(1), 1)).is_ok());
        assert!(o.check(Lpn(1), Some(b2)).is_err(), "never reached the FTL");
        assert!(o.check(Lpn(2), None).is_ok());
        assert!(o.check(Lpn(2), Some(c1)).is_ok());
        assert!(o.check(Lpn(2), Some(c2)).is_err());
        any.power_loss(&[Lpn(2)], &[], false);
        assert!(
            any.check(Lpn(0), v(Lpn(0), 1)).is_ok(),
            "an earlier version"
        );
        assert!(any.check(Lpn(0), v(Lpn(0), 3)).is_err());
        // Still uncertain at the next power loss (the trim was never persisted).
        o.power_loss(&[], &[], false);
        assert!(o.check(Lpn(0), v(Lpn(0), 2)).is_ok());
        assert!(o.check(Lpn(0), None).is_ok());
    }

    #[test]
    fn ftl_ram_losses_read_as_zeroes_or_older() {
        let mut o = Oracle::new(2);
        o.track_handoffs();
        for _ in 0..3 {
            let t = o.next_write(Lpn(0));
            o.handed(t);
        }
        o.power_loss(&[], &[Lpn(0)], false);
        let v = |version| {
            Some(PageTag {
                lpn: Lpn(0),
                version,
            })
        };
        assert!(o.check(Lpn(0), None).is_ok());
        assert!(o.check(Lpn(0), v(1)).is_ok());
        assert!(o.check(Lpn(0), v(3)).is_err());
    }
}
