//! `Flash`: the one functional NAND model every FTL goes through.
//!
//! It keeps, per physical page, the spare-area tag (LPN + version stamp) and a valid bit;
//! per block, the write pointer, the valid-page count and the erase count. It refuses
//! what real NAND refuses, with an assertion (these are FTL bugs, not input errors):
//!
//! - programming a page that is not free, or out of order inside its block (large-block
//!   NAND programs pages in ascending order; ftlab enforces it for every part);
//! - reading a page (or its spare area) that was never programmed since the last erase;
//! - erasing less than a block: the only erase operation takes a [`Pbn`], so it cannot
//!   even be expressed;
//! - erasing a block that still holds valid pages: an FTL must move or drop (invalidate)
//!   its data first, otherwise the erase silently destroys live data.
//!
//! Every operation is counted once, here, by its [`Cause`], and appended to an operation
//! log that the engine drains after each request to time it (the FTL decides *which*
//! operations happen; the timing model decides *when* they finish).
//!
//! Spare tags are stored in one of two ways ([`Flash::new`], [`Flash::with_packed_tags`]):
//! whole (the LPN and a 32-bit version, 8 bytes a page), or packed into one 32-bit word
//! a page, the LPN in the low bits (as many as the geometry's logical pages need) and the
//! version in the rest ([`Flash::version_bits`]). Packed tags halve the largest table of
//! a run (1 TiB at 4 KiB pages: 2.2 GiB instead of 4.5 GiB) but hold only versions below
//! `2^version_bits` and LPNs of the logical space, so the engine packs them only for an
//! FTL that writes no tag of its own and never orders versions (page mapping and DAC
//! without power losses, [`crate::ftl::Ftl::packed_tags`]), and the oracle then counts versions
//! modulo the same width ([`crate::oracle::Oracle::wrapping`]).
//!
//! "Valid" is the FTL's statement that a page holds the live copy of its LPN: the FTL
//! sets it by programming and clears it with [`Flash::invalidate`], which is bookkeeping
//! and costs no flash operation.
//!
//! Beyond the tag, an FTL may store what it writes into pages for its own metadata, so
//! that it survives a power loss with the NAND: a fixed number of extra spare-area words
//! per page ([`Flash::program_with_spare`], e.g. the PMD and PT Superblock FTL keeps in
//! every spare area) and the data-area contents of its metadata pages
//! ([`Flash::program_payload`], e.g. snapshots). Both are cleared by an erase and read
//! back without an operation ([`Flash::spare_words`], [`Flash::payload`]); the FTL
//! accounts the read ([`Flash::read_spare`], [`Flash::read`]) that fetches them. A run
//! with no power loss planned keeps neither the spare words nor the payloads only a
//! recovery reads ([`Flash::program_recovery_payload_parts`], snapshots): it programs
//! the same pages, and only the contents nobody will read are not stored
//! ([`Flash::drop_recovery_data`]; issue 26, item 2).
//!
//! Torn operations (issue 25, item 3). [`Flash::arm_power_cut`] plans a power loss
//! *inside* the n-th flash operation from now. When it comes, the operation is cut
//! short, its effect left as NAND leaves it, and the call unwinds with a [`PowerCut`]
//! payload (`std::panic::resume_unwind`, which prints nothing): the firmware stops at
//! that instruction, whatever it was doing (a host write, GC, a merge, a map flush, a
//! snapshot, a recovery). The engine catches it at the request's boundary and rebuilds
//! the FTL from flash. What each operation leaves:
//! - a program: the page counts as programmed (the block's write pointer moved past
//!   it, it cannot be programmed again before an erase) but reads back as
//!   [`PageTag::UNCORRECTABLE`], with no spare words and no payload;
//! - an erase: the block is neither erased nor readable: every page of it reads as
//!   [`PageTag::UNCORRECTABLE`] and its write pointer is at the end (it must be erased
//!   again before use); the erase counts towards its wear;
//! - a copy (a read then a program, one operation for the countdown): the destination
//!   is torn, the source untouched;
//! - a read or spare read: the power fails as it ends, which changes nothing on flash.
//!
//! An unarmed run pays nothing for this: an armed cut switches the operations' recording
//! to a mode off the hot path, which counts them down.

use crate::geometry::Geometry;
use crate::timing::{DieClock, Served};
use crate::units::{Lpn, Nanos, PageTag, Pbn, Ppn};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

mod journal;
use journal::Journals;
pub use journal::{JournaledRun, SpareDecode, SpareJournal};

/// Number of [`Cause`]s.
pub const CAUSES: usize = 6;

/// Why a flash operation happened. Every operation is counted under exactly one cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Serving a host read or write (including buffer flushes of host data).
    Host,
    /// Garbage collection of a page-mapped area.
    Gc,
    /// A merge of block-mapped data (switch, partial, full) or a superblock merge.
    Merge,
    /// Mapping metadata: translation pages, map pages, snapshots, spare reads for lookups.
    Map,
    /// Reads and writes a buffer adds to complete a block (padding).
    Padding,
    /// Rebuilding RAM state from flash after a power loss (spare scans, checkpoints).
    Recovery,
}

impl Cause {
    /// All causes, in report order.
    pub const ALL: [Cause; 5] = [
        Cause::Host,
        Cause::Gc,
        Cause::Merge,
        Cause::Map,
        Cause::Padding,
    ];

    /// Stable lower-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Host => "host",
            Cause::Gc => "gc",
            Cause::Merge => "merge",
            Cause::Map => "map",
            Cause::Padding => "padding",
            Cause::Recovery => "recovery",
        }
    }
}

/// The kind of a flash operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Full page read (data and spare).
    Read,
    /// Spare-area-only read.
    SpareRead,
    /// Page program.
    Program,
    /// Block erase.
    Erase,
}

/// One logged flash operation, for the timing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlashOp {
    /// What was done.
    pub kind: OpKind,
    /// The block it touched (selects the die under parallel timing).
    pub block: Pbn,
    /// Why.
    pub cause: Cause,
}

/// The flash operations of one request (or of one piece of background work), as the
/// timing model receives them ([`Flash::batch`]).
#[derive(Clone, Copy, Debug)]
pub struct OpBatch<'a> {
    /// Operations by kind, indexed by `OpKind as usize`.
    pub counts: [u64; 4],
    /// Each operation in issue order; empty when logging is off
    /// ([`Flash::set_logging`]).
    pub ops: &'a [FlashOp],
}

impl OpBatch<'_> {
    /// A batch of no operation.
    pub const EMPTY: OpBatch<'static> = OpBatch {
        counts: [0; 4],
        ops: &[],
    };

    /// Whether no operation happened (the counts read 8 bytes at a time, as
    /// [`crate::flash::Flash::batch`] writes them).
    #[inline]
    pub fn is_empty(&self) -> bool {
        let c = &self.counts;
        c[0] | c[1] | c[2] | c[3] == 0
    }
}

/// Operation counters by cause. Plain data, merged with `+=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlashStats {
    /// Full page reads, indexed by `Cause as usize`.
    pub page_reads: [u64; CAUSES],
    /// Spare-only reads.
    pub spare_reads: [u64; CAUSES],
    /// Page programs.
    pub programs: [u64; CAUSES],
    /// Block erases.
    pub erases: [u64; CAUSES],
}

impl FlashStats {
    /// Sum over causes.
    pub fn total(counts: &[u64; CAUSES]) -> u64 {
        counts.iter().sum()
    }
}

impl std::ops::Sub for FlashStats {
    type Output = FlashStats;
    fn sub(self, o: FlashStats) -> FlashStats {
        let mut d = self;
        for i in 0..CAUSES {
            d.page_reads[i] -= o.page_reads[i];
            d.spare_reads[i] -= o.spare_reads[i];
            d.programs[i] -= o.programs[i];
            d.erases[i] -= o.erases[i];
        }
        d
    }
}

impl std::ops::AddAssign for FlashStats {
    fn add_assign(&mut self, o: FlashStats) {
        for i in 0..CAUSES {
            self.page_reads[i] += o.page_reads[i];
            self.spare_reads[i] += o.spare_reads[i];
            self.programs[i] += o.programs[i];
            self.erases[i] += o.erases[i];
        }
    }
}

/// State of one physical page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    /// Erased and not yet programmed.
    Free,
    /// Programmed and holding the live copy of its LPN.
    Valid,
    /// Programmed but superseded (or dropped by the FTL).
    Invalid,
}

const NO_LPN: Lpn = Lpn(u32::MAX);

/// The spare tags of every physical page.
#[derive(Clone)]
enum Tags {
    /// LPN and version whole, 8 bytes a page; erased pages hold `NO_LPN`, version 0.
    Wide(Vec<PageTag>),
    /// One word a page: the LPN in the low `lpn_bits`, the version above. Erased pages
    /// are not cleared (nothing reads a page that is not programmed), so the table is
    /// left to the allocator's zeroed pages until the pages are programmed.
    Packed {
        words: Vec<u32>,
        lpn_bits: u32,
        /// `2^lpn_bits` and `2^(32 - lpn_bits)`: a tag fits when below both.
        lpn_end: u64,
        version_end: u64,
    },
}

/// Pages [`Flash::sense_matching`] checks at once when their LPNs map to consecutive
/// pages of one block.
const CHUNK: usize = 32;

/// [`Flash::sense_matching`]'s loop for one tag layout: `holds(ppn, lpn, version)` for
/// one page, `run_holds(p0, l0, versions)` for a chunk of `CHUNK` LPNs from `l0` mapped
/// to pages `p0..` (false when they are not all in one block and programmed, or any
/// holds another tag: the chunk then goes page by page).
#[inline(always)]
fn scan<T: Copy>(
    l2p: &[u32],
    unmapped: u32,
    expected: &[T],
    from: usize,
    want: impl Fn(T) -> u32,
    holds: impl Fn(u32, u32, u32) -> bool,
    run_holds: impl Fn(u32, u32, &[u32; CHUNK]) -> bool,
) -> (usize, u64) {
    let (len, mut n, mut l) = (l2p.len(), 0, from);
    while l < len {
        let end = (l + CHUNK).min(len);
        // A plain chunk: consecutive pages, every version exact (neither 0 nor a full
        // check), so no page needs a branch of its own.
        if let (Some(ps), Some(es)) = (
            l2p[l..].first_chunk::<CHUNK>(),
            expected[l..].first_chunk::<CHUNK>(),
        ) {
            let p0 = ps[0];
            let mut vs = [0u32; CHUNK];
            let mut plain = p0 <= u32::MAX - CHUNK as u32;
            for i in 0..CHUNK {
                vs[i] = want(es[i]);
                plain &=
                    (ps[i] == p0.wrapping_add(i as u32)) & (vs[i].wrapping_sub(1) < u32::MAX - 1);
            }
            if plain && run_holds(p0, l as u32, &vs) {
                n += CHUNK as u64;
                l = end;
                continue;
            }
        }
        for (i, (&ppn, &e)) in l2p[l..end].iter().zip(&expected[l..end]).enumerate() {
            let v = want(e);
            if v == 0 {
                continue;
            }
            let lpn = l + i;
            if ppn == unmapped || v == u32::MAX || !holds(ppn, lpn as u32, v) {
                return (lpn, n);
            }
            n += 1;
        }
        l = end;
    }
    (len, n)
}

/// Sets bits `from..to` of a bitmap (bit `i` at bit `i % 64` of word `i / 64`), a
/// word at a time.
#[inline]
fn set_bits(words: &mut [u64], from: usize, to: usize) {
    each_word_mask(from, to, |w, mask| words[w] |= mask);
}

/// Clears bits `from..to` of `words`.
#[inline]
fn clear_bits(words: &mut [u64], from: usize, to: usize) {
    each_word_mask(from, to, |w, mask| words[w] &= !mask);
}

/// Calls `f(w, mask)` for each word `w` that bits `from..to` touch, `mask` the bits of
/// the range in that word.
#[inline(always)]
fn each_word_mask(from: usize, to: usize, mut f: impl FnMut(usize, u64)) {
    let mut i = from;
    while i < to {
        let (w, b) = (i / 64, i % 64);
        let n = (to - i).min(64 - b);
        f(w, (u64::MAX >> (64 - n)) << b);
        i += n;
    }
}

/// Calls `f(k, i)` for the first `max` set bits `i` of `words` in `from..to`, in order,
/// `k` counting from 0, a word at a time. Returns where the scan stopped (just past the
/// `max`-th bit, else `to`; `from` when `max` is 0) and how many bits it visited.
#[inline(always)]
fn each_set_bit(
    words: &[u64],
    from: usize,
    to: usize,
    max: usize,
    mut f: impl FnMut(usize, usize),
) -> (usize, usize) {
    if max == 0 || from >= to {
        return (from, 0);
    }
    let (mut w, mut n) = (from / 64, 0);
    let mut bits = words[w] & (u64::MAX << (from % 64));
    loop {
        let base = w * 64;
        if to - base < 64 {
            bits &= (1u64 << (to - base)) - 1;
        }
        while bits != 0 {
            let i = base + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            f(n, i);
            n += 1;
            if n == max {
                return (i + 1, n);
            }
        }
        w += 1;
        if w * 64 >= to {
            return (to, n);
        }
        bits = words[w];
    }
}

/// A run of moves ([`Flash::run_span`]): the source block's first page `s0`, the first
/// destination page `d0`, the source pages `lo..to` looked at, and the destination's
/// free pages `room`.
struct RunSpan {
    s0: usize,
    d0: usize,
    lo: usize,
    to: usize,
    room: usize,
}

/// How many copies ahead [`Flash::move_valid_with_spare`] asks for a copy's spare
/// words: far enough for the line to arrive before the copy writes it.
const SPARE_AHEAD: usize = 8;

/// A run of moves with spare words (`words` a page, `spare` the destination's) fetches
/// the spare words of copy `k + SPARE_AHEAD` while it does copy `k`: the words are
/// written, never read, so each line is a store miss the copy would otherwise wait on.
#[inline(always)]
fn prefetch_spare(spare: &[u32], k: usize, words: usize) {
    if words > 0 {
        // The first and the last word: a page's words may straddle two lines.
        let at = (k + SPARE_AHEAD) * words;
        if let Some(w) = spare.get(at) {
            crate::prefetch::read(w);
            crate::prefetch::read(&spare[(at + words).min(spare.len()) - 1]);
        }
    }
}

/// A tag as one packed word: the LPN in the low `lpn_bits`, the version above; panics
/// if either does not fit (below `lpn_end`, `version_end`).
#[inline(always)]
fn pack(tag: PageTag, lpn_bits: u32, lpn_end: u64, version_end: u64) -> u32 {
    assert!(
        (tag.lpn.0 as u64) < lpn_end && (tag.version as u64) < version_end,
        "packed spare tag: {tag:?} does not fit {lpn_bits} LPN bits and {} version bits",
        32 - lpn_bits
    );
    tag.lpn.0 | tag.version << lpn_bits
}

impl Tags {
    /// Prefetch hints for the tags of pages `[from, to)` (one per cache line).
    #[inline]
    fn prefetch(&self, from: usize, to: usize) {
        match self {
            // A line's worth apart from `from`, then the last page: a `from` in the
            // middle of a line would otherwise leave the last line out.
            Tags::Wide(t) => {
                let to = to.min(t.len());
                for i in (from..to).step_by(64 / std::mem::size_of::<PageTag>()) {
                    crate::prefetch::read(&t[i]);
                }
                if from < to {
                    crate::prefetch::read(&t[to - 1]);
                }
            }
            Tags::Packed { words, .. } => {
                let to = to.min(words.len());
                for i in (from..to).step_by(16) {
                    crate::prefetch::read(&words[i]);
                }
                if from < to {
                    crate::prefetch::read(&words[to - 1]);
                }
            }
        }
    }

    #[inline(always)]
    fn get(&self, i: usize) -> PageTag {
        match self {
            Tags::Wide(t) => t[i],
            Tags::Packed {
                words, lpn_bits, ..
            } => {
                let w = words[i];
                PageTag {
                    lpn: Lpn(w & ((1u32 << lpn_bits) - 1)),
                    version: w >> lpn_bits,
                }
            }
        }
    }

    #[inline(always)]
    fn set(&mut self, i: usize, tag: PageTag) {
        match self {
            Tags::Wide(t) => t[i] = tag,
            Tags::Packed {
                words,
                lpn_bits,
                lpn_end,
                version_end,
            } => words[i] = pack(tag, *lpn_bits, *lpn_end, *version_end),
        }
    }

    /// [`Tags::set`] of pages `first..` to `tags`, the representation matched once.
    #[inline]
    fn set_run(&mut self, first: usize, tags: &[PageTag]) {
        match self {
            Tags::Wide(t) => t[first..first + tags.len()].copy_from_slice(tags),
            Tags::Packed {
                words,
                lpn_bits,
                lpn_end,
                version_end,
            } => {
                let (bits, lpn_end, version_end) = (*lpn_bits, *lpn_end, *version_end);
                // Packed with no branch per tag; whether every tag fits (its LPN below
                // 2^bits, its version below 2^(32 - bits): nothing left after the
                // shifts) is checked once for the run, and `pack` names the first that
                // does not.
                let mut spill = 0u64;
                for (w, &tag) in words[first..first + tags.len()].iter_mut().zip(tags) {
                    spill |= (tag.lpn.0 as u64 >> bits) | (tag.version as u64 >> (32 - bits));
                    *w = tag.lpn.0 | tag.version.wrapping_shl(bits);
                }
                if spill != 0 {
                    let bad = tags
                        .iter()
                        .find(|t| (t.lpn.0 as u64) >= lpn_end || (t.version as u64) >= version_end);
                    pack(
                        *bad.expect("a tag that does not fit"),
                        bits,
                        lpn_end,
                        version_end,
                    );
                }
            }
        }
    }

    /// Page `i`'s tag, which was programmed, as page `j`'s (a copy: it fits).
    #[inline(always)]
    fn copy(&mut self, i: usize, j: usize) {
        match self {
            Tags::Wide(t) => t[j] = t[i],
            Tags::Packed { words, .. } => words[j] = words[i],
        }
    }

    /// [`Tags::copy`] of pages `i..i + n` to `j..j + n` (the two runs do not overlap).
    #[inline]
    fn copy_run(&mut self, i: usize, j: usize, n: usize) {
        match self {
            Tags::Wide(t) => t.copy_within(i..i + n, j),
            Tags::Packed { words, .. } => words.copy_within(i..i + n, j),
        }
    }
}

/// What an operation records beyond the tally by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    Count,
    Log,
    Clock,
    /// [`Record::Clock`] with exponential array times or program/erase suspend
    /// ([`DieClock::op_caused`]).
    ClockCaused,
    /// A power cut is armed ([`Flash::arm_power_cut`]): each operation is recorded as
    /// `base_record` says, then counted down. Out of the hot path: an unarmed run
    /// pays nothing for the countdown.
    Armed,
}

/// The payload a flash operation unwinds with when a planned power cut strikes inside
/// it ([`Flash::arm_power_cut`]); the engine catches it ([`crate::engine::Engine`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerCut {
    /// The operation the power loss struck (a copy's is its program).
    pub kind: OpKind,
    /// Why the FTL issued it.
    pub cause: Cause,
    /// Its block.
    pub block: Pbn,
}

impl PowerCut {
    /// What the cut left on flash, in a few words ("a torn program of block 7 (gc)").
    pub fn describe(&self) -> String {
        let what = match self.kind {
            OpKind::Read => "before a page read",
            OpKind::SpareRead => "before a spare read",
            OpKind::Program => "a torn program",
            OpKind::Erase => "a torn erase",
        };
        format!("{what} of block {} ({})", self.block.0, self.cause.name())
    }
}

/// [`Flash`]'s countdown value when no power cut is armed.
const FUSE_OFF: u64 = u64::MAX;

/// The data areas of metadata pages ([`Flash::program_payload`]), by page number.
/// The buffers of erased pages are kept for the next payloads, so that metadata writes
/// (under Superblock FTL a snapshot log page every two host writes or so) allocate
/// nothing once the metadata area has been written; and a block that holds none is
/// erased without a look in the map.
#[derive(Clone, Debug)]
struct Payloads {
    pages: BTreeMap<u32, Vec<u32>>,
    /// Pages with a payload, per block.
    per_block: Vec<u32>,
    /// Buffers of dropped payloads, reused.
    free: Vec<Vec<u32>>,
}

impl Payloads {
    fn new(blocks: usize) -> Payloads {
        Payloads {
            pages: BTreeMap::new(),
            per_block: vec![0; blocks],
            free: Vec::new(),
        }
    }

    /// Stores `head` then `tail` as the payload of `ppn`, a page of `block`.
    fn insert(&mut self, ppn: Ppn, block: Pbn, head: &[u32], tail: &[u32]) {
        let mut buf = self.free.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(head);
        buf.extend_from_slice(tail);
        match self.pages.insert(ppn.0, buf) {
            Some(old) => self.free.push(old),
            None => self.per_block[block.idx()] += 1,
        }
    }

    fn get(&self, ppn: Ppn) -> Option<&[u32]> {
        self.pages.get(&ppn.0).map(|p| &p[..])
    }

    /// Drops the payloads of pages `[first, end)` of `block`.
    #[inline]
    fn drop_pages(&mut self, block: Pbn, first: u32, end: u32) {
        if self.per_block[block.idx()] == 0 {
            return;
        }
        while let Some((&p, _)) = self.pages.range(first..end).next() {
            let buf = self.pages.remove(&p).expect("a page just listed");
            self.free.push(buf);
            self.per_block[block.idx()] -= 1;
        }
    }
}

/// The NAND array. See the module documentation for the rules it enforces.
#[derive(Clone)]
pub struct Flash {
    geo: Geometry,
    /// log2 of the pages per block when a power of two, else 32 ([`Flash::split`]).
    ppb_shift: u32,
    tags: Tags,
    valid: Vec<u64>,
    write_ptr: Vec<u32>,
    valid_count: Vec<u32>,
    erase_count: Vec<u32>,
    /// Blocks with no page programmed (kept as pages are programmed and blocks erased,
    /// so reading it costs nothing on a device of millions of blocks).
    erased_blocks: u32,
    stats: FlashStats,
    /// Operations since the last [`Flash::clear_log`], by kind (`OpKind as usize`).
    tally: [u64; 4],
    /// Whether each operation is also logged (a timing model that needs each one's die).
    logging: bool,
    log: Vec<FlashOp>,
    /// What each operation does beyond the tally: nothing, a log entry, or a step of
    /// the die clock (inside [`Flash::clock_begin`] .. [`Flash::clock_end`]).
    record: Record,
    /// The parallel timing model's state, when the engine moved it here
    /// ([`Flash::install_clock`], `has_clock`); operations outside a clock batch are
    /// untimed.
    clock: DieClock,
    has_clock: bool,
    /// Extra spare words per page (0 until an FTL first stores some).
    spare_words_per_page: usize,
    spare_words: Vec<u32>,
    /// Spare words kept as journals ([`Flash::move_valid_journaled`]).
    journals: Journals,
    /// Data-area contents of metadata pages.
    payloads: Payloads,
    /// Whether spare words and recovery payloads are stored
    /// ([`Flash::drop_recovery_data`]).
    keeps_recovery: bool,
    /// Whether a spare word or recovery payload was dropped since.
    dropped_recovery: bool,
    /// Operations left until a planned power cut (it strikes inside the operation that
    /// brings it to 0; [`FUSE_OFF`]: none armed). Counted only while `record` is
    /// [`Record::Armed`].
    fuse: u64,
    /// What `record` would be if no cut were armed.
    base_record: Record,
}

impl Flash {
    /// A fully erased device of the given geometry, with whole spare tags (any LPN,
    /// any 32-bit version). Tables are sized here, once.
    pub fn new(geo: &Geometry) -> Flash {
        let pages = geo.physical_pages() as usize;
        Flash::with_tags(
            geo,
            Tags::Wide(vec![
                PageTag {
                    lpn: NO_LPN,
                    version: 0
                };
                pages
            ]),
        )
    }

    /// A fully erased device whose spare tags are packed into one word a page: the LPN
    /// (below the geometry's logical pages) in the low bits, the version in the other
    /// [`Flash::version_bits`]. Programming a tag that does not fit panics.
    pub fn with_packed_tags(geo: &Geometry) -> Flash {
        let pages = geo.physical_pages() as usize;
        Flash::with_tags(
            geo,
            Tags::Packed {
                words: vec![0; pages],
                lpn_bits: geo.lpn_bits(),
                lpn_end: 1 << geo.lpn_bits(),
                version_end: 1 << (32 - geo.lpn_bits()),
            },
        )
    }

    /// Bits of version a spare tag holds: `None` for whole tags (32), `Some(k)` for
    /// packed ones, which hold versions below `2^k`.
    pub fn version_bits(&self) -> Option<u32> {
        match &self.tags {
            Tags::Wide(_) => None,
            Tags::Packed { lpn_bits, .. } => Some(32 - lpn_bits),
        }
    }

    fn with_tags(geo: &Geometry, tags: Tags) -> Flash {
        let pages = geo.physical_pages() as usize;
        let blocks = geo.blocks as usize;
        let ppb = geo.pages_per_block;
        Flash {
            geo: geo.clone(),
            ppb_shift: if ppb.is_power_of_two() {
                ppb.trailing_zeros()
            } else {
                32
            },
            tags,
            valid: vec![0; pages.div_ceil(64)],
            write_ptr: vec![0; blocks],
            valid_count: vec![0; blocks],
            erase_count: vec![0; blocks],
            erased_blocks: geo.blocks,
            stats: FlashStats::default(),
            tally: [0; 4],
            logging: true,
            log: Vec::with_capacity(4096),
            record: Record::Log,
            clock: DieClock::default(),
            has_clock: false,
            spare_words_per_page: 0,
            spare_words: Vec::new(),
            journals: Journals::default(),
            payloads: Payloads::new(blocks),
            keeps_recovery: true,
            dropped_recovery: false,
            fuse: FUSE_OFF,
            base_record: Record::Log,
        }
    }

    /// The geometry this device was built with.
    #[inline]
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    #[inline(always)]
    fn log(&mut self, kind: OpKind, block: Pbn, cause: Cause) {
        self.tally[kind as usize] += 1;
        if self.record != Record::Count {
            if self.record == Record::Clock {
                self.clock.op::<false>(kind, block);
            } else {
                self.record_rest(kind, block, cause);
            }
        }
    }

    /// [`Flash::log`]'s less frequent cases, out of line: the log (a model that needs
    /// each operation after the fact, tests), exponential array times and program/erase
    /// suspend.
    #[inline(never)]
    fn record_rest(&mut self, kind: OpKind, block: Pbn, cause: Cause) {
        match self.record {
            Record::Armed => {
                self.record_as(self.base_record, kind, block, cause);
                self.count_down(kind, block, cause);
            }
            r => self.record_as(r, kind, block, cause),
        }
    }

    /// Records an operation as `record` says (never [`Record::Armed`]).
    fn record_as(&mut self, record: Record, kind: OpKind, block: Pbn, cause: Cause) {
        match record {
            Record::Log => self.log.push(FlashOp { kind, block, cause }),
            Record::ClockCaused => self.clock.op_caused(kind, block, cause),
            Record::Clock => {
                self.clock.op::<false>(kind, block);
            }
            Record::Count | Record::Armed => {}
        }
    }

    /// Sets what each operation records beyond the tally (under an armed cut, what it
    /// records once the cut struck or was taken back).
    fn set_record(&mut self, record: Record) {
        if self.record == Record::Armed {
            self.base_record = record;
        } else {
            self.record = record;
        }
    }

    /// A page's block and offset: a shift and a mask when pages per block are a power
    /// of two (every preset), else the geometry's division.
    #[inline(always)]
    fn split(&self, ppn: Ppn) -> (Pbn, u32) {
        if self.ppb_shift < 32 {
            (
                Pbn(ppn.0 >> self.ppb_shift),
                ppn.0 & ((1 << self.ppb_shift) - 1),
            )
        } else {
            (self.geo.block_of(ppn), self.geo.offset_of(ppn))
        }
    }

    #[inline]
    fn is_programmed(&self, ppn: Ppn) -> bool {
        let (pbn, offset) = self.split(ppn);
        offset < self.write_ptr[pbn.idx()]
    }

    /// Whether operations are only counted (no log, no clock, no armed power cut):
    /// outside a timed batch of a run that keeps no log. Then a caller reading many
    /// pages may sense them with [`Flash::sensed_tag`] and count them once with
    /// [`Flash::count_reads`], which does what as many [`Flash::read`] calls do.
    #[inline]
    pub fn counts_only(&self) -> bool {
        self.record == Record::Count
    }

    /// The spare tag a [`Flash::read`] of `ppn` returns, not counted: the caller counts
    /// its reads with [`Flash::count_reads`].
    ///
    /// Panics if the page was never programmed since its block's last erase.
    #[inline(always)]
    pub fn sensed_tag(&self, ppn: Ppn) -> PageTag {
        assert!(
            self.is_programmed(ppn),
            "NAND refuses: read of {ppn:?}, which was never programmed"
        );
        self.tags.get(ppn.idx())
    }

    /// From LPN `from` on, senses the pages of a page map (`l2p[lpn]`, or `unmapped`)
    /// that read exactly as `want(expected[lpn])` says, without counting them: `want`
    /// gives the version the page must hold, 0 for an LPN not to read, or `u32::MAX`
    /// for one that needs a full check. Stops at the first LPN that is unmapped,
    /// needs a full check or holds another tag, and returns it (or the map's end) with
    /// the number of pages that matched; the caller counts them ([`Flash::count_reads`]).
    /// The tag layout is matched once, not per page: the end-of-run read-back's loop.
    ///
    /// Panics if a mapped page was never programmed since its block's last erase.
    #[inline]
    pub fn sense_matching<T: Copy>(
        &self,
        l2p: &[u32],
        unmapped: u32,
        expected: &[T],
        from: usize,
        want: impl Fn(T) -> u32,
    ) -> (usize, u64) {
        assert_eq!(l2p.len(), expected.len());
        let programmed = |ppn: u32| {
            assert!(
                self.is_programmed(Ppn(ppn)),
                "NAND refuses: read of {ppn}, never programmed"
            )
        };
        // A chunk's pages at `p0..p0 + CHUNK`, in one block and programmed: one look at
        // the block's write pointer for the chunk.
        let programmed_run = |p0: u32| {
            let (b, off) = self.split(Ppn(p0));
            off as usize + CHUNK <= self.write_ptr[b.idx()] as usize
        };
        match &self.tags {
            Tags::Wide(t) => scan(
                l2p,
                unmapped,
                expected,
                from,
                want,
                |ppn, l, v| {
                    programmed(ppn);
                    t[ppn as usize]
                        == PageTag {
                            lpn: Lpn(l),
                            version: v,
                        }
                },
                |p0, l0, vs| {
                    programmed_run(p0)
                        && t[p0 as usize..].first_chunk::<CHUNK>().is_some_and(|ts| {
                            let mut ok = true;
                            for i in 0..CHUNK {
                                ok &= ts[i].lpn.0 == l0 + i as u32 && ts[i].version == vs[i];
                            }
                            ok
                        })
                },
            ),
            Tags::Packed {
                words, lpn_bits, ..
            } => {
                let bits = *lpn_bits;
                // In 64 bits: a version too wide for the word never matches.
                let packed = |l: u32, v: u32| l as u64 | (v as u64) << bits;
                scan(
                    l2p,
                    unmapped,
                    expected,
                    from,
                    want,
                    |ppn, l, v| {
                        programmed(ppn);
                        words[ppn as usize] as u64 == packed(l, v)
                    },
                    |p0, l0, vs| {
                        programmed_run(p0)
                            && words[p0 as usize..]
                                .first_chunk::<CHUNK>()
                                .is_some_and(|ws| {
                                    let mut ok = true;
                                    for i in 0..CHUNK {
                                        ok &= ws[i] as u64 == packed(l0 + i as u32, vs[i]);
                                    }
                                    ok
                                })
                    },
                )
            }
        }
    }

    /// Counts `n` page reads sensed with [`Flash::sensed_tag`], as `n` calls of
    /// [`Flash::read`] count them.
    ///
    /// Panics unless [`Flash::counts_only`] (a log or a clock needs each operation).
    #[inline]
    pub fn count_reads(&mut self, n: u64, cause: Cause) {
        assert!(
            self.counts_only(),
            "reads counted in bulk while recording each"
        );
        self.stats.page_reads[cause as usize] += n;
        self.tally[OpKind::Read as usize] += n;
    }

    /// Reads a page (data and spare) and returns its spare tag.
    ///
    /// Panics if the page was never programmed since its block's last erase.
    #[inline]
    pub fn read(&mut self, ppn: Ppn, cause: Cause) -> PageTag {
        self.sense(ppn, cause, OpKind::Read)
    }

    /// Reads the valid pages of block `pbn` (data and spare) in page order, appending
    /// each one's tag and address to `out`: what a [`Flash::read`] of each valid page
    /// does (the same counts, log entries and times), the valid pages found a word of
    /// validity bits at a time; a garbage collector's first pass over a victim.
    pub fn read_valid(&mut self, pbn: Pbn, cause: Cause, out: &mut Vec<(PageTag, Ppn)>) {
        let first = self.geo.ppn(pbn, 0).idx();
        let end = first + self.write_ptr[pbn.idx()] as usize;
        if !matches!(self.record, Record::Count | Record::Clock) {
            // The log, a model that needs each operation's cause, or an armed power
            // cut (which may strike between two reads): page by page.
            for i in first..end {
                if self.is_valid(Ppn(i as u32)) {
                    out.push((self.read(Ppn(i as u32), cause), Ppn(i as u32)));
                }
            }
            return;
        }
        let tags = &self.tags;
        let (_, n) = each_set_bit(&self.valid, first, end, usize::MAX, |_, i| {
            out.push((tags.get(i), Ppn(i as u32)));
        });
        self.stats.page_reads[cause as usize] += n as u64;
        self.tally[OpKind::Read as usize] += n as u64;
        if self.record == Record::Clock {
            self.clock.read_run(pbn, n as u32);
        }
    }

    /// Reads only the spare area of a page.
    ///
    /// Panics if the page was never programmed since its block's last erase.
    #[inline]
    pub fn read_spare(&mut self, ppn: Ppn, cause: Cause) -> PageTag {
        self.sense(ppn, cause, OpKind::SpareRead)
    }

    /// A page read or a spare-area read (`kind`): both return the page's spare tag and
    /// differ only in what they count.
    #[inline(always)]
    fn sense(&mut self, ppn: Ppn, cause: Cause, kind: OpKind) -> PageTag {
        let read = kind == OpKind::Read;
        assert!(
            self.is_programmed(ppn),
            "NAND refuses: {} of {ppn:?}, which was never programmed",
            if read { "read" } else { "spare read" }
        );
        let counts = if read {
            &mut self.stats.page_reads
        } else {
            &mut self.stats.spare_reads
        };
        counts[cause as usize] += 1;
        self.log(kind, self.split(ppn).0, cause);
        self.tags.get(ppn.idx())
    }

    /// Programs a page with `tag` in its spare area and marks it valid.
    ///
    /// Panics if the page is not free or is not the next page of its block.
    #[inline]
    pub fn program(&mut self, ppn: Ppn, tag: PageTag, cause: Cause) {
        self.place(ppn, cause);
        self.tags.set(ppn.idx(), tag);
    }

    /// [`Flash::program`] but for the tag, which the caller stored.
    #[inline(always)]
    fn place(&mut self, ppn: Ppn, cause: Cause) {
        let pbn = self.place_untimed(ppn, cause);
        self.log(OpKind::Program, pbn, cause);
    }

    /// [`Flash::place`] but for the log, tally and clock, which the caller does; returns
    /// the page's block.
    #[inline(always)]
    fn place_untimed(&mut self, ppn: Ppn, cause: Cause) -> Pbn {
        let (pbn, offset) = self.split(ppn);
        let wp = self.write_ptr[pbn.idx()];
        assert!(
            offset >= wp,
            "NAND refuses: program of {ppn:?}, which is not free"
        );
        assert!(
            offset == wp,
            "NAND refuses: program of {ppn:?} out of order (block {pbn:?} expects offset {wp})"
        );
        self.write_ptr[pbn.idx()] = wp + 1;
        if wp == 0 {
            self.erased_blocks -= 1;
        }
        self.valid[ppn.idx() / 64] |= 1 << (ppn.idx() % 64);
        self.valid_count[pbn.idx()] += 1;
        self.stats.programs[cause as usize] += 1;
        pbn
    }

    /// The block of a page (a shift where pages per block are a power of two).
    #[inline]
    pub fn block_of(&self, ppn: Ppn) -> Pbn {
        self.split(ppn).0
    }

    /// Fetches what [`Flash::invalidate`] of `ppn` touches (its valid bit, its block's
    /// valid count) into the cache ahead of the call (a hint: no state changes; a page
    /// past the end is ignored).
    #[inline]
    pub fn prefetch_invalidate(&self, ppn: Ppn) {
        if let Some(w) = self.valid.get(ppn.idx() / 64) {
            crate::prefetch::read(w);
            if let Some(c) = self.valid_count.get(self.split(ppn).0.idx()) {
                crate::prefetch::read(c);
            }
        }
    }

    /// Fetches what a copy of `ppn` reads (its tag, its valid bit) into the cache ahead
    /// of the copy (a hint: no state changes; a page past the end is ignored).
    #[inline]
    pub fn prefetch_copy(&self, ppn: Ppn) {
        self.tags.prefetch(ppn.idx(), ppn.idx() + 1);
        if let Some(w) = self.valid.get(ppn.idx() / 64) {
            crate::prefetch::read(w);
        }
    }

    /// Fetches the tags and valid bits of every page of `pbn` into the cache, a line at a
    /// time (a hint: no state changes): a merge about to copy the block's pages, or to
    /// program it.
    #[inline]
    pub fn prefetch_block(&self, pbn: Pbn) {
        let ppb = self.geo.pages_per_block as usize;
        let first = pbn.idx() * ppb;
        self.tags.prefetch(first, first + ppb);
        for w in (first / 64..(first + ppb).div_ceil(64)).filter_map(|w| self.valid.get(w)) {
            crate::prefetch::read(w);
        }
    }

    /// Marks a valid page invalid. Bookkeeping only: no flash operation.
    ///
    /// Panics if the page is not valid.
    #[inline]
    pub fn invalidate(&mut self, ppn: Ppn) {
        let word = &mut self.valid[ppn.idx() / 64];
        let bit = 1u64 << (ppn.idx() % 64);
        assert!(
            *word & bit != 0,
            "invalidate of {ppn:?}, which is not valid"
        );
        *word &= !bit;
        let pbn = self.split(ppn).0;
        self.valid_count[pbn.idx()] -= 1;
    }

    /// Marks every valid page of `pbn` invalid, as [`Flash::invalidate`] of each would:
    /// a word of validity bits at a time (a collector that moved all of a victim's
    /// valid pages). Bookkeeping only: no flash operation.
    pub fn invalidate_block(&mut self, pbn: Pbn) {
        let first = self.geo.ppn(pbn, 0).idx();
        let end = first + self.geo.pages_per_block as usize;
        let (mut i, mut cleared) = (first, 0);
        while i < end {
            // The bits of this word inside the block.
            let (w, lo) = (i / 64, i % 64);
            let n = (64 - lo).min(end - i);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << lo
            };
            cleared += (self.valid[w] & mask).count_ones();
            self.valid[w] &= !mask;
            i += n;
        }
        debug_assert_eq!(cleared, self.valid_count[pbn.idx()]);
        self.valid_count[pbn.idx()] = 0;
    }

    /// Erases a whole block: all its pages become free.
    ///
    /// Panics if the block still holds valid pages.
    pub fn erase(&mut self, pbn: Pbn, cause: Cause) {
        assert!(
            self.valid_count[pbn.idx()] == 0,
            "erase of {pbn:?}, which still holds {} valid pages",
            self.valid_count[pbn.idx()]
        );
        let first = self.geo.ppn(pbn, 0).idx();
        let wp = self.write_ptr[pbn.idx()] as usize;
        if let Tags::Wide(tags) = &mut self.tags {
            for t in &mut tags[first..first + wp] {
                *t = PageTag {
                    lpn: NO_LPN,
                    version: 0,
                };
            }
        }
        let end = first + self.geo.pages_per_block as usize;
        self.payloads.drop_pages(pbn, first as u32, end as u32);
        self.journals.drop_pages(pbn.idx(), 0, wp as u32);
        if wp != 0 {
            self.erased_blocks += 1;
        }
        self.write_ptr[pbn.idx()] = 0;
        self.erase_count[pbn.idx()] += 1;
        self.stats.erases[cause as usize] += 1;
        self.log(OpKind::Erase, pbn, cause);
    }

    /// Copies a page to `dst` (a read and a program, no copy-back) and returns its tag.
    /// The source stays valid: the caller invalidates it when its map moves.
    ///
    /// Counted, logged and timed as [`Flash::read`] of `src` followed by
    /// [`Flash::program`] of `dst`; the parallel model times the pair in one step
    /// ([`DieClock::copy`]), which gives the same times.
    #[inline(always)]
    pub fn copy(&mut self, src: Ppn, dst: Ppn, cause: Cause) -> PageTag {
        let (sb, so) = self.split(src);
        assert!(
            so < self.write_ptr[sb.idx()],
            "NAND refuses: read of {src:?}, which was never programmed"
        );
        self.stats.page_reads[cause as usize] += 1;
        let tag = self.tags.get(src.idx());
        let db = self.place_untimed(dst, cause);
        // The source's tag as it is stored (it fits: it was programmed).
        self.tags.copy(src.idx(), dst.idx());
        self.tally[OpKind::Read as usize] += 1;
        self.tally[OpKind::Program as usize] += 1;
        if self.record != Record::Count {
            if self.record == Record::Clock {
                self.clock.copy(sb, db);
            } else {
                self.record_copy(sb, db, cause);
            }
        }
        tag
    }

    /// Moves `n` valid pages from `src` on to `dst` on, the next pages of their block:
    /// what `n` calls of [`Flash::copy`] of page `src + i` to `dst + i` followed by
    /// [`Flash::invalidate`] of the source do (the same flash state, counts, log entries
    /// and times), in one call, for a merge's run of pages that keep their offsets.
    ///
    /// Panics if a source page is not valid, the two runs are not each within one block,
    /// or `dst` is not its block's next page.
    pub fn move_run(&mut self, src: Ppn, dst: Ppn, n: u32, cause: Cause) {
        if n == 0 {
            return;
        }
        if !matches!(self.record, Record::Count | Record::Clock) {
            // The log, a model that needs each operation's cause, or an armed power
            // cut (which may strike inside the run): page by page.
            for i in 0..n {
                self.copy(Ppn(src.0 + i), Ppn(dst.0 + i), cause);
                self.invalidate(Ppn(src.0 + i));
            }
            return;
        }
        let ppb = self.geo.pages_per_block;
        let (sb, so) = self.split(src);
        let (db, doff) = self.split(dst);
        assert!(
            so + n <= ppb && sb != db,
            "a run of {n} moves from {src:?} must stay in its block and leave it"
        );
        let (s, d, m) = (src.idx(), dst.idx(), n as usize);
        let mut all_valid = true;
        each_word_mask(s, s + m, |w, mask| {
            all_valid &= self.valid[w] & mask == mask
        });
        assert!(
            all_valid,
            "a run of {n} moves from {src:?} holds a page that is not valid"
        );
        let wp = self.write_ptr[db.idx()];
        assert!(
            doff == wp && wp + n <= ppb,
            "NAND refuses: a run of {n} programs from {dst:?} out of order or past the end \
             of {db:?} (expects offset {wp})"
        );
        self.tags.copy_run(s, d, m);
        clear_bits(&mut self.valid, s, s + m);
        set_bits(&mut self.valid, d, d + m);
        self.count_moves(sb, db, wp, n, cause);
    }

    /// [`Flash::copy`]'s recording by the log or a caused clock, or under an armed
    /// cut, where the copy counts as one operation (its program is torn).
    #[inline(never)]
    fn record_copy(&mut self, sb: Pbn, db: Pbn, cause: Cause) {
        if self.record == Record::Armed {
            self.record_as(self.base_record, OpKind::Read, sb, cause);
            self.record_as(self.base_record, OpKind::Program, db, cause);
            self.count_down(OpKind::Program, db, cause);
        } else {
            self.record_rest(OpKind::Read, sb, cause);
            self.record_rest(OpKind::Program, db, cause);
        }
    }

    /// Moves the valid pages of block `src`, from offset `from` on, to the next pages of
    /// block `dst` until `dst` is full: for each, [`Flash::copy`] to `dst`'s next page
    /// and [`Flash::invalidate`] of the source, in page order, then `moved(tag, from, to)`.
    /// Returns the offset in `src` to resume from (its write pointer once every page
    /// was looked at). The same operations, counts, log entries and times as the
    /// per-page calls; a garbage collector's inner loop done once per destination
    /// block instead of once per page.
    #[inline]
    pub fn move_valid(
        &mut self,
        src: Pbn,
        from: u32,
        dst: Pbn,
        cause: Cause,
        mut moved: impl FnMut(PageTag, Ppn, Ppn),
    ) -> u32 {
        self.move_valid_inner::<false>(src, from, dst, cause, 0, |tag, s, d, _| moved(tag, s, d))
    }

    /// [`Flash::move_valid`] for pages that carry `words` spare words beside the tag
    /// ([`Flash::program_with_spare`]): `moved(tag, from, to, spare)` writes the copy's
    /// spare words into `spare`. The same flash state, counts, log entries and times as
    /// a [`Flash::read`] of each valid page, its [`Flash::invalidate`] and a
    /// [`Flash::program_with_spare`] of the copy with those words; an armed power cut
    /// counts the read and the program as two operations, as those calls do (and a
    /// torn program leaves the copy without words). The source's words are not
    /// copied: a relocating FTL rewrites them.
    ///
    /// Panics if `words` is 0 or differs from the words per page already in use.
    #[inline]
    pub fn move_valid_with_spare(
        &mut self,
        src: Pbn,
        from: u32,
        dst: Pbn,
        cause: Cause,
        words: usize,
        moved: impl FnMut(PageTag, Ppn, Ppn, &mut [u32]),
    ) -> u32 {
        let n = self.spare_store(words);
        let mut moved = moved;
        self.move_valid_inner::<true>(src, from, dst, cause, n, |tag, s, d, w| moved(tag, s, d, w))
    }

    /// Opens a spare journal (see the `journal` module): pages programmed through it
    /// ([`Flash::move_valid_journaled`]) carry `words` spare words a page, which
    /// `decode` rebuilds from the journal's table, the concatenation of `base`, and
    /// its entries. Closes the journal open before, if any.
    ///
    /// Panics if `words` is 0 or differs from the words per page already in use.
    pub fn open_spare_journal(
        &mut self,
        words: usize,
        base: &[&[u32]],
        decode: SpareDecode,
    ) -> SpareJournal {
        if self.keeps_recovery {
            self.spare_store(words);
        } else {
            self.dropped_recovery = true;
        }
        self.journals.open(
            self.geo.blocks as usize,
            self.geo.pages_per_block,
            base,
            decode,
        )
    }

    /// Closes `journal`, the open one: no page is programmed through it any more.
    ///
    /// Panics if it is not the open journal.
    pub fn close_spare_journal(&mut self, journal: SpareJournal) {
        self.journals.close(journal);
    }

    /// [`Flash::move_valid_with_spare`] with the copies' spare words kept in `journal`,
    /// the open journal: `moved` is handed the copies and sets each one's entry code
    /// ([`JournaledRun`]); a copy's spare words are the journal's decoding of its
    /// entries up to its own ([`SpareDecode`]). The same flash state (as
    /// [`Flash::spare_words`] reads it), counts, log entries and times as
    /// [`Flash::move_valid_with_spare`] writing the decoded words; 8 bytes stored a copy
    /// instead of the words.
    ///
    /// When operations are only counted or clocked and tags are whole, the copies are
    /// handed over at once, a destination block's run after its tags moved; otherwise
    /// (the log, a model that needs each operation's cause, an armed power cut, packed
    /// tags) one at a time, each after its operations. `moved` cannot see the flash, so
    /// when it runs changes nothing; a run at once lets the caller's loop over it be its
    /// own inlined code rather than a call per copy.
    #[inline]
    pub fn move_valid_journaled(
        &mut self,
        src: Pbn,
        from: u32,
        dst: Pbn,
        cause: Cause,
        journal: SpareJournal,
        mut moved: impl FnMut(JournaledRun<'_>),
    ) -> u32 {
        let first_dst = self.write_ptr[dst.idx()];
        if !matches!(self.record, Record::Count | Record::Clock)
            || !matches!(self.tags, Tags::Wide(_))
        {
            let armed = self.record == Record::Armed;
            let base = self.geo.ppn(dst, 0).0;
            let stop =
                self.move_valid_by_page::<true>(src, from, dst, cause, 0, |t, s, d, _, js| {
                    let mut code = [0];
                    moved(JournaledRun {
                        tags: &[t],
                        from: &[s.0],
                        first: d,
                        codes: &mut code,
                    });
                    if armed {
                        // A cut may strike between two copies: each copy's reference goes
                        // with it.
                        js.push(journal, dst.idx(), d.0 - base, d.0, code[0]);
                    } else {
                        js.push_entry(journal, d.0, code[0]);
                    }
                });
            if !armed {
                let end = self.write_ptr[dst.idx()];
                self.journals.add_run(journal, dst.idx(), first_dst, end);
            }
            return stop;
        }
        // The run's tags and validity moved (the flash's part), then the copies handed
        // over, then their entries and references pushed and the run counted.
        let RunSpan {
            s0,
            d0,
            lo,
            to,
            room,
        } = self.run_span(src, from, dst, first_dst);
        let Tags::Wide(t) = &mut self.tags else {
            unreachable!("checked above: whole tags")
        };
        let (mut srcs, mut codes) = self.journals.take_scratch();
        let (stop, n) = each_set_bit(&self.valid, lo, to, room, |k, sp| {
            t[d0 + k] = t[sp];
            srcs[k] = sp as u32;
        });
        if n > 0 {
            codes[..n].fill(0);
            moved(JournaledRun {
                tags: &t[d0..d0 + n],
                from: &srcs[..n],
                first: Ppn(d0 as u32),
                codes: &mut codes[..n],
            });
        }
        self.journals
            .push_run(journal, dst.idx(), first_dst, d0 as u32, n, (srcs, codes));
        self.end_run(src, dst, first_dst, (lo, stop, s0, d0, n), cause)
    }

    /// The end of a run of moves ([`Flash::run_span`]) that looked at source pages
    /// `lo..stop` and copied `n` to `d0..`: the validity bits follow, the copies are
    /// counted (and timed, in the same order: the run's callback does not touch the
    /// flash). Returns the offset in `src` to resume from.
    #[inline(always)]
    fn end_run(
        &mut self,
        src: Pbn,
        dst: Pbn,
        first_dst: u32,
        (lo, stop, s0, d0, n): (usize, usize, usize, usize, usize),
        cause: Cause,
    ) -> u32 {
        clear_bits(&mut self.valid, lo, stop);
        set_bits(&mut self.valid, d0, d0 + n);
        self.count_moves(src, dst, first_dst, n as u32, cause);
        (stop - s0) as u32
    }

    /// The pages of a run of moves from `src`, offset `from` on, to `dst`, whose next
    /// page is `first_dst`; their tags are asked for: the run reads the source's and
    /// writes the destination's in order, and asked for all at once their cache lines
    /// arrive together, not one miss at a time.
    #[inline(always)]
    fn run_span(&self, src: Pbn, from: u32, dst: Pbn, first_dst: u32) -> RunSpan {
        debug_assert_ne!(src, dst, "a block's pages move to another block");
        let end = self.write_ptr[src.idx()];
        let (s0, d0) = (
            self.geo.ppn(src, 0).idx(),
            self.geo.ppn(dst, first_dst).idx(),
        );
        let (lo, to) = (s0 + from as usize, s0 + end as usize);
        let room = (self.geo.pages_per_block - first_dst) as usize;
        self.tags.prefetch(lo, to);
        self.tags.prefetch(d0, d0 + room.min(to.saturating_sub(lo)));
        RunSpan {
            s0,
            d0,
            lo,
            to,
            room,
        }
    }

    /// [`Flash::move_valid_inner`] page by page: each copy's operations recorded on
    /// their own (the log, a model that needs each operation's cause, an armed power
    /// cut).
    #[inline(always)]
    fn move_valid_by_page<const SPARE: bool>(
        &mut self,
        src: Pbn,
        from: u32,
        dst: Pbn,
        cause: Cause,
        words: usize,
        mut moved: impl FnMut(PageTag, Ppn, Ppn, &mut [u32], &mut Journals),
    ) -> u32 {
        let end = self.write_ptr[src.idx()];
        let mut off = from;
        while off < end && !self.is_full(dst) {
            let sp = self.geo.ppn(src, off);
            off += 1;
            if self.is_valid(sp) {
                let dp = self.geo.ppn(dst, self.write_ptr[dst.idx()]);
                let tag = if !SPARE {
                    let tag = self.copy(sp, dp, cause);
                    self.invalidate(sp);
                    tag
                } else {
                    // A read and a program, as program_with_spare's callers do: an
                    // armed cut counts them as two operations.
                    let tag = self.read(sp, cause);
                    self.invalidate(sp);
                    self.program(dp, tag, cause);
                    tag
                };
                let at = dp.idx() * words;
                moved(
                    tag,
                    sp,
                    dp,
                    &mut self.spare_words[at..at + words],
                    &mut self.journals,
                );
            }
        }
        off
    }

    /// [`Flash::move_valid`] with `words` spare words per copy handed to `moved`
    /// (none when 0); `SPARE`: the copies carry spare words, so an armed power cut
    /// counts each as a read and a program.
    #[inline(always)]
    fn move_valid_inner<const SPARE: bool>(
        &mut self,
        src: Pbn,
        from: u32,
        dst: Pbn,
        cause: Cause,
        words: usize,
        mut moved: impl FnMut(PageTag, Ppn, Ppn, &mut [u32]),
    ) -> u32 {
        // (Spare words with packed tags, which only tests combine, go page by page too:
        // the run below then calls `moved` from one place, where it is inlined.)
        let packed_spare = SPARE && matches!(self.tags, Tags::Packed { .. });
        if !matches!(self.record, Record::Count | Record::Clock) || packed_spare {
            // The log, a model that needs each operation's cause, or an armed power
            // cut: page by page.
            return self.move_valid_by_page::<SPARE>(
                src,
                from,
                dst,
                cause,
                words,
                |t, s, d, w, _| moved(t, s, d, w),
            );
        }
        let first_dst = self.write_ptr[dst.idx()];
        let RunSpan {
            s0,
            d0,
            lo: from,
            to,
            room,
        } = self.run_span(src, from, dst, first_dst);
        let valid = &self.valid[..];
        let spare = &mut self.spare_words[d0 * words..(d0 + room) * words];
        // The tag layout matched once per run, the valid pages found a word at a time;
        // the validity bits change after the run (the callback cannot see the flash).
        let (stop, n) = match &mut self.tags {
            Tags::Wide(t) => each_set_bit(valid, from, to, room, |k, sp| {
                let tag = t[sp];
                t[d0 + k] = tag;
                prefetch_spare(spare, k, words);
                let words = &mut spare[k * words..(k + 1) * words];
                moved(tag, Ppn(sp as u32), Ppn((d0 + k) as u32), words);
            }),
            Tags::Packed { .. } if SPARE => unreachable!("spare words with packed tags"),
            Tags::Packed {
                words: packed,
                lpn_bits,
                ..
            } => {
                let (bits, mask) = (*lpn_bits, (1u32 << *lpn_bits) - 1);
                each_set_bit(valid, from, to, room, |k, sp| {
                    let w = packed[sp];
                    packed[d0 + k] = w;
                    let tag = PageTag {
                        lpn: Lpn(w & mask),
                        version: w >> bits,
                    };
                    prefetch_spare(spare, k, words);
                    let words = &mut spare[k * words..(k + 1) * words];
                    moved(tag, Ppn(sp as u32), Ppn((d0 + k) as u32), words);
                })
            }
        };
        self.end_run(src, dst, first_dst, (from, stop, s0, d0, n), cause)
    }

    /// The bookkeeping of `n` copies from `src` to the pages of `dst` from `first_dst`
    /// on, as many [`Flash::copy`] calls and source invalidations keep it (the
    /// validity bits and tags aside): `dst`'s write pointer, both blocks' valid
    /// counts, the read and program counts, and the clock under [`Record::Clock`].
    #[inline(always)]
    fn count_moves(&mut self, src: Pbn, dst: Pbn, first_dst: u32, n: u32, cause: Cause) {
        if n == 0 {
            return;
        }
        if self.record == Record::Clock {
            self.clock.copy_run(src, dst, n);
        }
        if first_dst == 0 {
            self.erased_blocks -= 1;
        }
        self.write_ptr[dst.idx()] = first_dst + n;
        self.valid_count[src.idx()] -= n;
        self.valid_count[dst.idx()] += n;
        let n = n as u64;
        self.stats.page_reads[cause as usize] += n;
        self.stats.programs[cause as usize] += n;
        self.tally[OpKind::Read as usize] += n;
        self.tally[OpKind::Program as usize] += n;
    }

    /// Programs `tags` on consecutive pages from `first`, the next page of its block,
    /// as many [`Flash::program`] calls in order would: the same flash state, counts,
    /// log entries and times, for a host write's run of pages in one block done once
    /// per run instead of once per page.
    ///
    /// Panics if `first` is not its block's next page or the run passes the block's end.
    pub fn program_run(&mut self, first: Ppn, tags: &[PageTag], cause: Cause) {
        let n = tags.len() as u32;
        if n == 0 {
            return;
        }
        let (pbn, offset) = self.split(first);
        let wp = self.write_ptr[pbn.idx()];
        assert!(
            offset == wp,
            "NAND refuses: program of {first:?} out of order or not free (block {pbn:?} \
             expects offset {wp})"
        );
        assert!(
            wp + n <= self.geo.pages_per_block,
            "NAND refuses: a run of {n} programs from {first:?} passes the end of {pbn:?}"
        );
        if !matches!(self.record, Record::Count | Record::Clock) {
            // The log, a model that needs each operation's cause, or an armed power
            // cut (which may strike inside the run): page by page.
            for (i, &tag) in tags.iter().enumerate() {
                self.program(Ppn(first.0 + i as u32), tag, cause);
            }
            return;
        }
        self.write_ptr[pbn.idx()] = wp + n;
        if wp == 0 {
            self.erased_blocks -= 1;
        }
        set_bits(&mut self.valid, first.idx(), first.idx() + tags.len());
        self.tags.set_run(first.idx(), tags);
        self.valid_count[pbn.idx()] += n;
        self.stats.programs[cause as usize] += n as u64;
        self.tally[OpKind::Program as usize] += n as u64;
        if self.record == Record::Clock {
            self.clock.program_run(pbn, n);
        }
    }

    /// Programs a page like [`Flash::program`] and stores `words` in its spare area
    /// beside the tag. Every call must pass the same number of words; the store is sized
    /// (pages x words) on the first call.
    pub fn program_with_spare(&mut self, ppn: Ppn, tag: PageTag, words: &[u32], cause: Cause) {
        self.program_with_spare_parts(ppn, tag, words, &[], cause);
    }

    /// [`Flash::program_with_spare`] of the words `head` followed by `tail`, so a caller
    /// whose spare words live in two places stores them without assembling them in a
    /// buffer first.
    pub fn program_with_spare_parts(
        &mut self,
        ppn: Ppn,
        tag: PageTag,
        head: &[u32],
        tail: &[u32],
        cause: Cause,
    ) {
        if !self.keeps_recovery {
            self.dropped_recovery = true;
            self.program(ppn, tag, cause);
            return;
        }
        let n = self.spare_store(head.len() + tail.len());
        self.program(ppn, tag, cause);
        let at = ppn.idx() * n;
        self.spare_words[at..at + head.len()].copy_from_slice(head);
        self.spare_words[at + head.len()..at + n].copy_from_slice(tail);
    }

    /// The spare-word store for `words` words a page, sized (pages x words) on its
    /// first use; returns `words`. Panics if `words` is 0 or differs from the words per
    /// page already in use.
    fn spare_store(&mut self, words: usize) -> usize {
        if self.spare_words_per_page == 0 {
            assert!(words > 0, "spare words stored without words");
            self.spare_words_per_page = words;
            self.spare_words = vec![0; self.geo.physical_pages() as usize * words];
        }
        let n = self.spare_words_per_page;
        assert_eq!(words, n, "spare words per page are fixed at {n}");
        n
    }

    /// The extra spare words of a page programmed with [`Flash::program_with_spare`]
    /// or through a spare journal ([`Flash::move_valid_journaled`], decoded here), no
    /// flash operation. Panics if the page is not programmed.
    pub fn spare_words(&self, ppn: Ppn) -> Cow<'_, [u32]> {
        assert!(
            self.is_programmed(ppn),
            "spare words of {ppn:?}, which is not programmed"
        );
        assert!(
            !self.dropped_recovery,
            "spare words of {ppn:?} read on a flash that dropped them \
             (Flash::drop_recovery_data)"
        );
        let n = self.spare_words_per_page;
        let (block, offset) = self.split(ppn);
        match self.journals.words(block.idx(), offset, ppn.0) {
            Some(words) => {
                assert_eq!(
                    words.len(),
                    n,
                    "the spare journal of {ppn:?} decodes {} words, not {n}",
                    words.len()
                );
                Cow::Owned(words)
            }
            None => Cow::Borrowed(&self.spare_words[ppn.idx() * n..(ppn.idx() + 1) * n]),
        }
    }

    /// Spare journals allocated and the words they hold (tables, entries and the
    /// per-page references).
    pub fn spare_journal_footprint(&self) -> (usize, usize) {
        self.journals.footprint()
    }

    /// Programs a metadata page like [`Flash::program`] with `payload` as its data area.
    pub fn program_payload(&mut self, ppn: Ppn, tag: PageTag, payload: &[u32], cause: Cause) {
        self.program_payload_parts(ppn, tag, payload, &[], cause);
    }

    /// [`Flash::program_payload`] of the words `head` followed by `tail`, so a caller
    /// whose page is a header and a body kept apart writes it without assembling it.
    pub fn program_payload_parts(
        &mut self,
        ppn: Ppn,
        tag: PageTag,
        head: &[u32],
        tail: &[u32],
        cause: Cause,
    ) {
        self.assert_payload_fits(head.len() + tail.len());
        self.program(ppn, tag, cause);
        self.payloads
            .insert(ppn, self.geo.block_of(ppn), head, tail);
    }

    /// [`Flash::program_payload_parts`] of a page whose contents only a recovery reads
    /// (a snapshot, a checkpoint): on a flash that drops recovery data
    /// ([`Flash::drop_recovery_data`]) only the page is programmed, and
    /// [`Flash::payload`] then has nothing for it.
    pub fn program_recovery_payload_parts(
        &mut self,
        ppn: Ppn,
        tag: PageTag,
        head: &[u32],
        tail: &[u32],
        cause: Cause,
    ) {
        if self.keeps_recovery {
            self.program_payload_parts(ppn, tag, head, tail, cause);
        } else {
            self.assert_payload_fits(head.len() + tail.len());
            self.dropped_recovery = true;
            self.program(ppn, tag, cause);
        }
    }

    /// Panics if a payload of `words` words does not fit a page's data area.
    fn assert_payload_fits(&self, words: usize) {
        assert!(
            words * 4 <= self.geo.page_size as usize,
            "a payload of {words} words does not fit a {}-byte page",
            self.geo.page_size
        );
    }

    /// Stops storing what only a recovery after a power loss reads (and a deep check
    /// may): the spare words of [`Flash::program_with_spare`] and of spare journals
    /// ([`Flash::open_spare_journal`]), and the payloads of
    /// [`Flash::program_recovery_payload_parts`]. Operations, counts, times, tags and
    /// validity are unchanged; only the contents are not kept, for a run that plans no
    /// power loss (`EngineConfig::packed_tags`). [`Flash::spare_words`] of any page
    /// panics once something was dropped ([`Flash::dropped_recovery_data`]).
    /// ([`Flash::move_valid_with_spare`] still stores its words.)
    ///
    /// Panics if a page was programmed or a spare journal opened.
    pub fn drop_recovery_data(&mut self) {
        assert!(
            self.erased_blocks == self.geo.blocks && self.spare_words_per_page == 0,
            "recovery data dropped after the first program or spare journal"
        );
        self.keeps_recovery = false;
        self.journals.drop_all();
    }

    /// Whether spare words and recovery payloads are stored ([`Flash::drop_recovery_data`]).
    #[inline]
    pub fn keeps_recovery_data(&self) -> bool {
        self.keeps_recovery
    }

    /// Whether a spare word or recovery payload was not stored: a recovery, which would
    /// read them, cannot run.
    pub fn dropped_recovery_data(&self) -> bool {
        self.dropped_recovery
    }

    /// The data area of a page programmed with [`Flash::program_payload`] (no flash
    /// operation), or `None`.
    pub fn payload(&self, ppn: Ppn) -> Option<&[u32]> {
        self.payloads.get(ppn)
    }

    /// Power loss: forgets every valid bit and valid count (the FTL's bookkeeping, held
    /// in controller RAM) and the operation log. What NAND keeps survives: programmed
    /// pages and their spare tags, write pointers (a real controller finds them by
    /// reading), erase counts. A recovering FTL re-marks live pages with
    /// [`Flash::mark_valid`].
    pub fn power_cycle(&mut self) {
        self.journals.close_open();
        self.valid.fill(0);
        self.valid_count.fill(0);
        self.clear_log();
    }

    /// Plans a power loss inside the `ops`-th flash operation from now (1: the next
    /// one; a copy counts as one, and its program is torn): that operation is torn (see
    /// the module documentation) and unwinds with a [`PowerCut`]. Replaces any cut
    /// armed before.
    ///
    /// Panics if `ops` is 0 or 2^62 or more, or the tags are packed (a torn page needs
    /// a tag of its own, [`PageTag::UNCORRECTABLE`]: runs with power losses keep whole
    /// tags).
    pub fn arm_power_cut(&mut self, ops: u64) {
        assert!(
            (1..1 << 62).contains(&ops),
            "a power cut {ops} operations from now"
        );
        assert!(
            self.version_bits().is_none(),
            "a torn page needs whole spare tags (Flash::new)"
        );
        if self.record != Record::Armed {
            self.base_record = self.record;
            self.record = Record::Armed;
        }
        self.fuse = ops;
    }

    /// Whether a power cut is armed and has not struck.
    pub fn power_cut_armed(&self) -> bool {
        self.record == Record::Armed
    }

    /// Takes back an armed power cut; returns whether one was armed and had not struck.
    pub fn disarm_power_cut(&mut self) -> bool {
        let armed = self.power_cut_armed();
        if armed {
            self.record = self.base_record;
        }
        self.fuse = FUSE_OFF;
        armed
    }

    /// Counts an operation (already performed and recorded) down; the one that reaches
    /// zero is torn: the power fails inside it.
    #[inline]
    fn count_down(&mut self, kind: OpKind, block: Pbn, cause: Cause) {
        self.fuse -= 1;
        if self.fuse == 0 {
            self.tear(kind, block, cause);
        }
    }

    /// The power fails inside the operation of `kind` on `block` just performed: undoes
    /// what NAND would not have done (a program's data, an erase's clean pages) and
    /// unwinds with the [`PowerCut`] (no panic message; the engine catches it). A read
    /// is left done: the power fails as it ends, which changes nothing on flash.
    #[cold]
    #[inline(never)]
    fn tear(&mut self, kind: OpKind, block: Pbn, cause: Cause) -> ! {
        self.disarm_power_cut();
        match kind {
            OpKind::Program => {
                let wp = self.write_ptr[block.idx()];
                let ppn = self.geo.ppn(block, wp - 1);
                self.tags.set(ppn.idx(), PageTag::UNCORRECTABLE);
                if self.is_valid(ppn) {
                    self.invalidate(ppn);
                }
                self.clear_spare(block, ppn.idx(), ppn.idx() + 1);
            }
            OpKind::Erase => {
                let ppb = self.geo.pages_per_block;
                let first = self.geo.ppn(block, 0).idx();
                for i in first..first + ppb as usize {
                    self.tags.set(i, PageTag::UNCORRECTABLE);
                }
                self.clear_spare(block, first, first + ppb as usize);
                // Counted erased by the erase: it is not.
                self.erased_blocks -= 1;
                self.write_ptr[block.idx()] = ppb;
            }
            OpKind::Read | OpKind::SpareRead => {}
        }
        std::panic::resume_unwind(Box::new(PowerCut { kind, cause, block }))
    }

    /// Drops the spare words and payloads of pages `[first, end)` of `block` (a torn
    /// program or erase leaves nothing readable).
    fn clear_spare(&mut self, block: Pbn, first: usize, end: usize) {
        let n = self.spare_words_per_page;
        if n > 0 {
            self.spare_words[first * n..end * n].fill(0);
        }
        self.payloads.drop_pages(block, first as u32, end as u32);
        let base = self.geo.ppn(block, 0).idx();
        self.journals
            .drop_pages(block.idx(), (first - base) as u32, (end - base) as u32);
    }

    /// Recovery bookkeeping: declares a programmed page valid again (no flash
    /// operation). Panics if the page is not programmed or already valid.
    pub fn mark_valid(&mut self, ppn: Ppn) {
        assert!(
            self.is_programmed(ppn),
            "mark_valid of {ppn:?}, which is not programmed"
        );
        let word = &mut self.valid[ppn.idx() / 64];
        let bit = 1u64 << (ppn.idx() % 64);
        assert!(
            *word & bit == 0,
            "mark_valid of {ppn:?}, which is already valid"
        );
        *word |= bit;
        let pbn = self.split(ppn).0;
        self.valid_count[pbn.idx()] += 1;
    }

    /// The state of a page.
    #[inline]
    pub fn state(&self, ppn: Ppn) -> PageState {
        if !self.is_programmed(ppn) {
            PageState::Free
        } else if self.is_valid(ppn) {
            PageState::Valid
        } else {
            PageState::Invalid
        }
    }

    /// Whether a page holds valid data.
    #[inline]
    pub fn is_valid(&self, ppn: Ppn) -> bool {
        self.valid[ppn.idx() / 64] & (1 << (ppn.idx() % 64)) != 0
    }

    /// The offset of block `pbn`'s first valid page at or after offset `from` (below
    /// its write pointer), if any: where a collector's next [`Flash::move_valid`] run
    /// starts (a destination is opened only for a valid page).
    #[inline]
    pub fn next_valid(&self, pbn: Pbn, from: u32) -> Option<u32> {
        let s0 = self.geo.ppn(pbn, 0).idx();
        let end = s0 + self.write_ptr[pbn.idx()] as usize;
        let mut found = None;
        each_set_bit(&self.valid, s0 + from as usize, end, 1, |_, i| {
            found = Some((i - s0) as u32)
        });
        found
    }

    /// Calls `f` with the offset of each valid page of block `pbn` in offsets
    /// `from..to`, in order, a word of validity bits at a time: what a test of
    /// [`Flash::is_valid`] at each offset finds, without a test per page.
    #[inline]
    pub fn each_valid(&self, pbn: Pbn, from: u32, to: u32, mut f: impl FnMut(u32)) {
        let s0 = self.geo.ppn(pbn, 0).idx();
        let to = to.min(self.write_ptr[pbn.idx()]);
        each_set_bit(
            &self.valid,
            s0 + from as usize,
            s0 + to as usize,
            usize::MAX,
            |_, i| f((i - s0) as u32),
        );
    }

    /// Calls `f` with the LPN of each valid page of block `pbn`, in page order, without
    /// a flash operation: for prefetch hints ahead of a GC's copies (the tables an FTL
    /// updates per copy, fetched all at once instead of one miss per copy), never for
    /// decisions, which must read the spare ([`Flash::read_valid`], the copies' own tags).
    #[inline]
    pub fn valid_lpns_hint(&self, pbn: Pbn, mut f: impl FnMut(Lpn)) {
        let s0 = self.geo.ppn(pbn, 0).idx();
        let end = s0 + self.write_ptr[pbn.idx()] as usize;
        each_set_bit(&self.valid, s0, end, usize::MAX, |_, i| {
            f(self.tags.get(i).lpn)
        });
    }

    /// Valid pages in a block.
    #[inline]
    pub fn valid_count(&self, pbn: Pbn) -> u32 {
        self.valid_count[pbn.idx()]
    }

    /// The next page offset to program in a block (`pages_per_block` when full).
    #[inline]
    pub fn write_ptr(&self, pbn: Pbn) -> u32 {
        self.write_ptr[pbn.idx()]
    }

    /// Whether every page of the block has been programmed.
    #[inline]
    pub fn is_full(&self, pbn: Pbn) -> bool {
        self.write_ptr[pbn.idx()] == self.geo.pages_per_block
    }

    /// Whether the block is erased (no page programmed).
    #[inline]
    pub fn is_erased(&self, pbn: Pbn) -> bool {
        self.write_ptr[pbn.idx()] == 0
    }

    /// Blocks with no page programmed (free blocks), in O(1).
    #[inline]
    pub fn erased_blocks(&self) -> u32 {
        self.erased_blocks
    }

    /// Times a block has been erased.
    pub fn erase_count(&self, pbn: Pbn) -> u32 {
        self.erase_count[pbn.idx()]
    }

    /// Erase counts of all blocks.
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// The spare tag of a programmed page without a flash operation. For deep checks,
    /// assertions and power-loss scans that account their reads themselves; an FTL's
    /// decisions must go through [`Flash::read`] or [`Flash::read_spare`].
    pub fn peek_tag(&self, ppn: Ppn) -> Option<PageTag> {
        self.is_programmed(ppn).then(|| self.tags.get(ppn.idx()))
    }

    /// Operation counters since the last reset.
    pub fn stats(&self) -> &FlashStats {
        &self.stats
    }

    /// Zeroes the operation counters (wear state is kept).
    pub fn reset_stats(&mut self) {
        self.stats = FlashStats::default();
    }

    /// The operations logged since the last [`Flash::clear_log`] (none while logging
    /// is off, [`Flash::set_logging`]).
    pub fn log_ops(&self) -> &[FlashOp] {
        &self.log
    }

    /// The operations since the last [`Flash::clear_log`]: counts by kind, always, and
    /// each operation when logging is on.
    #[inline]
    pub fn batch(&self) -> OpBatch<'_> {
        OpBatch {
            // Read a count at a time (`black_box` keeps the loads 8 bytes wide): copied
            // as 16-byte loads, the counts could not be forwarded from the 8-byte
            // increments still in the store buffer, and each load waited for every
            // older store to reach the cache (5% of a DFTL run).
            counts: std::array::from_fn(|i| std::hint::black_box(self.tally[i])),
            ops: &self.log,
        }
    }

    /// Whether each operation is logged (on by default). A timing model that needs no
    /// more than the counts by kind (serial timing) turns it off: counting is cheaper
    /// than logging.
    pub fn set_logging(&mut self, on: bool) {
        self.logging = on;
        self.set_record(if on { Record::Log } else { Record::Count });
        self.log.clear();
    }

    /// Keeps the parallel timing model's state here, so that each operation between
    /// [`Flash::clock_begin`] and [`Flash::clock_end`] is timed as it is performed
    /// (instead of logged and timed afterwards). Turns logging off.
    pub fn install_clock(&mut self, clock: DieClock) {
        self.clock = clock;
        self.has_clock = true;
        self.set_logging(false);
    }

    /// The installed die clock, if any.
    pub fn clock(&self) -> Option<&DieClock> {
        self.has_clock.then_some(&self.clock)
    }

    /// The installed die clock, if any, to reset it.
    pub fn clock_mut(&mut self) -> Option<&mut DieClock> {
        self.has_clock.then_some(&mut self.clock)
    }

    /// Removes the installed die clock (to move it to another flash).
    pub fn take_clock(&mut self) -> Option<DieClock> {
        self.set_record(if self.logging {
            Record::Log
        } else {
            Record::Count
        });
        std::mem::replace(&mut self.has_clock, false).then(|| std::mem::take(&mut self.clock))
    }

    /// Opens a timed batch on the installed clock: the operations from here to
    /// [`Flash::clock_end`] start no earlier than `start`. Does nothing without a clock.
    #[inline]
    pub fn clock_begin(&mut self, start: Nanos) {
        if self.has_clock {
            self.clock.begin(start);
            self.set_record(if self.clock.exponential() || self.clock.needs_cause() {
                Record::ClockCaused
            } else {
                Record::Clock
            });
        }
    }

    /// Whether the installed clock moves only the requested part of a page for a host
    /// read ([`DieClock::sub_page_transfers`]); false without a clock.
    #[inline]
    pub fn sub_page_reads(&self) -> bool {
        self.has_clock && self.clock.sub_page_transfers()
    }

    /// In the open timed batch, the next host page read moves `bytes` of its page over
    /// the channel ([`DieClock::set_host_read_bytes`]); call again with the page size
    /// after it. A shortened read goes through the path that knows each operation's
    /// cause. Does nothing without a clock.
    pub fn host_read_bytes(&mut self, bytes: u32) {
        if self.has_clock {
            let record = if self.clock.set_host_read_bytes(bytes)
                || self.clock.exponential()
                || self.clock.needs_cause()
            {
                Record::ClockCaused
            } else {
                Record::Clock
            };
            self.set_record(record);
        }
    }

    /// Closes the timed batch: when its operations completed and how long the first
    /// waited (`start` and no wait if it had none, or without a clock).
    #[inline]
    pub fn clock_end(&mut self) -> Served {
        self.set_record(if self.logging {
            Record::Log
        } else {
            Record::Count
        });
        if self.has_clock {
            self.clock.end(&self.tally)
        } else {
            Served {
                done: Nanos::ZERO,
                wait: Nanos::ZERO,
            }
        }
    }

    /// Capacity of the operation log (it grows to the largest request's operations).
    pub fn log_capacity(&self) -> usize {
        self.log.capacity()
    }

    /// Forgets the logged operations (keeps the allocation).
    #[inline]
    pub fn clear_log(&mut self) {
        self.tally = [0; 4];
        self.log.clear();
    }

    /// Moves the last `n` operations of `kind` counted under `from` to `to`, in the
    /// counters and in the operation log. For a layer above the FTL that knows better
    /// why the FTL's operations happened: a buffer's padding reads and writes go through
    /// the FTL as host operations, and the buffer re-attributes them to
    /// [`Cause::Padding`] right after the call.
    ///
    /// Panics if fewer than `n` such operations were counted (a caller bug).
    pub fn reattribute(&mut self, kind: OpKind, from: Cause, to: Cause, n: u64) {
        if n == 0 || from == to {
            return;
        }
        let counts = match kind {
            OpKind::Read => &mut self.stats.page_reads,
            OpKind::SpareRead => &mut self.stats.spare_reads,
            OpKind::Program => &mut self.stats.programs,
            OpKind::Erase => &mut self.stats.erases,
        };
        assert!(
            counts[from as usize] >= n,
            "reattribute of {n} {kind:?} ops from {from:?}, which counted only {}",
            counts[from as usize]
        );
        counts[from as usize] -= n;
        counts[to as usize] += n;
        let mut left = n;
        for op in self.log.iter_mut().rev() {
            if left == 0 {
                break;
            }
            if op.kind == kind && op.cause == from {
                op.cause = to;
                left -= 1;
            }
        }
    }

    /// Total valid pages on the device (O(blocks); for checks).
    pub fn total_valid(&self) -> u64 {
        self.valid_count.iter().map(|&c| c as u64).sum()
    }

    /// Deep self-check: each block's valid count equals its valid bits, and no valid
    /// bit lies beyond a write pointer.
    pub fn check(&self) -> Result<(), String> {
        let ppb = self.geo.pages_per_block;
        for b in 0..self.geo.blocks {
            let pbn = Pbn(b);
            let mut n = 0;
            for o in 0..ppb {
                let ppn = self.geo.ppn(pbn, o);
                if self.is_valid(ppn) {
                    if o >= self.write_ptr[b as usize] {
                        return Err(format!("{ppn:?} is valid but beyond the write pointer"));
                    }
                    n += 1;
                }
            }
            if n != self.valid_count[b as usize] {
                return Err(format!(
                    "{pbn:?}: valid count {} but {n} valid pages",
                    self.valid_count[b as usize]
                ));
            }
        }
        let erased = self.write_ptr.iter().filter(|&&w| w == 0).count() as u32;
        if erased != self.erased_blocks {
            return Err(format!(
                "{} erased blocks counted, {erased} found",
                self.erased_blocks
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::GeometryBuilder;

    /// 2 KiB pages, `ppb` pages a block, `logical_blocks` blocks of logical space,
    /// `op_percent` more, on `dies` x `dies` (channels x dies per channel).
    fn geometry(ppb: u32, logical_blocks: u64, op_percent: f64, dies: u32) -> Geometry {
        GeometryBuilder {
            page_size: 2048,
            pages_per_block: ppb,
            spare_bytes: 64,
            logical_bytes: logical_blocks * ppb as u64 * 2048,
            op_percent,
            channels: dies,
            dies_per_channel: dies,
            planes_per_die: 1,
            min_spare_blocks: 1,
        }
        .build()
        .unwrap()
    }

    fn flash() -> Flash {
        Flash::new(&geometry(4, 4, 50.0, 1))
    }

    fn tag(lpn: u32) -> PageTag {
        PageTag {
            lpn: Lpn(lpn),
            version: 1,
        }
    }

    #[test]
    fn program_run_programs_in_order_and_refuses_a_bad_run() {
        // Page by page (the log on) and in one step (counting only).
        for logging in [true, false] {
            program_run_case(logging);
        }
    }

    fn program_run_case(logging: bool) {
        let mut f = flash();
        f.set_logging(logging);
        let tags = [tag(0), tag(1), tag(2)];
        f.program_run(Ppn(0), &tags[..2], Cause::Host);
        f.program_run(Ppn(2), &tags[2..], Cause::Host);
        f.program_run(Ppn(3), &[], Cause::Host);
        assert_eq!(f.write_ptr(Pbn(0)), 3);
        assert_eq!(f.valid_count(Pbn(0)), 3);
        assert_eq!(f.peek_tag(Ppn(1)), Some(tag(1)));
        assert_eq!(f.stats().programs[Cause::Host as usize], 3);
        f.check().unwrap();
        for (first, n) in [(Ppn(1), 1), (Ppn(5), 1), (Ppn(3), 2)] {
            let mut g = f.clone();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                g.program_run(first, &tags[..n], Cause::Host)
            }));
            assert!(
                r.is_err(),
                "{first:?} x {n}: not free, out of order or past the end"
            );
        }
        assert_eq!(f.log_ops().len(), if logging { 3 } else { 0 });
    }

    /// `move_valid` does what copying and invalidating page by page does: the same pages,
    /// tags, counts, log and clock, counted or timed.
    #[test]
    fn move_valid_equals_copying_page_by_page() {
        use crate::timing::DieClock;
        let g = geometry(16, 8, 100.0, 2);
        let lat = crate::nand::Latencies {
            read: Nanos(100),
            spare_read: Nanos(10),
            program: Nanos(300),
            erase: Nanos(2000),
        };
        let mut rng = crate::rng::SplitMix64::new(9);
        for case in 0..200 {
            // Three ways: counted (logged), timed inline, and page by page.
            let mut fs: Vec<Flash> = (0..3).map(|_| Flash::new(&g)).collect();
            fs[0].set_logging(true);
            for f in &mut fs[1..] {
                f.install_clock(DieClock::new(lat, 2, 2, g.blocks, Nanos(40)));
                f.clock_begin(Nanos(0));
            }
            // Source block 0 full, a random share invalid; destination 5 partly written.
            let dst_start = rng.below(16) as u32;
            for f in &mut fs {
                for off in 0..16 {
                    f.program(Ppn(off), tag(off), Cause::Host);
                }
                for off in 0..dst_start {
                    f.program(Ppn(5 * 16 + off), tag(100 + off), Cause::Host);
                }
            }
            let dead: Vec<u32> = (0..16).filter(|_| rng.below(3) == 0).collect();
            for f in &mut fs {
                for &off in &dead {
                    f.invalidate(Ppn(off));
                }
            }
            let from = rng.below(16) as u32;
            let mut got = Vec::new();
            let ends: Vec<u32> = fs[..2]
                .iter_mut()
                .map(|f| {
                    let mut moved = Vec::new();
                    let end = f.move_valid(Pbn(0), from, Pbn(5), Cause::Gc, |t, s, p| {
                        moved.push((t, s, p))
                    });
                    got.push(moved);
                    end
                })
                .collect();
            // Page by page, on the third.
            let f = &mut fs[2];
            let (mut off, mut want) = (from, Vec::new());
            while off < 16 && !f.is_full(Pbn(5)) {
                let sp = Ppn(off);
                off += 1;
                if f.is_valid(sp) {
                    let dp = g.ppn(Pbn(5), f.write_ptr(Pbn(5)));
                    let t = f.copy(sp, dp, Cause::Gc);
                    f.invalidate(sp);
                    want.push((t, sp, dp));
                }
            }
            assert_eq!(ends, [off, off], "case {case}");
            assert_eq!(got, [want.clone(), want], "case {case}");
            let served: Vec<_> = fs[1..].iter_mut().map(|f| f.clock_end()).collect();
            assert_eq!(served[0], served[1], "case {case}: timing");
            for (i, f) in fs.iter().enumerate() {
                assert_eq!(f.stats(), fs[2].stats(), "case {case}, flash {i}: counts");
                assert_eq!(f.erased_blocks(), fs[2].erased_blocks(), "case {case}");
                for p in 0..g.physical_pages() {
                    assert_eq!(f.state(Ppn(p)), fs[2].state(Ppn(p)), "case {case}: {p}");
                    assert_eq!(
                        f.peek_tag(Ppn(p)),
                        fs[2].peek_tag(Ppn(p)),
                        "case {case}: {p}"
                    );
                }
                f.check().unwrap();
            }
            // The log has each copy's read and program, in order.
            let log: Vec<(OpKind, Pbn)> =
                fs[0].log_ops().iter().map(|o| (o.kind, o.block)).collect();
            let copies = log.iter().filter(|&&o| o == (OpKind::Read, Pbn(0))).count();
            assert_eq!(copies, got[0].len(), "case {case}");
            assert!(log.ends_with(
                &(0..got[0].len())
                    .flat_map(|_| [(OpKind::Read, Pbn(0)), (OpKind::Program, Pbn(5))])
                    .collect::<Vec<_>>()
            ));
        }
    }

    /// `each_set_bit` visits what a bit-by-bit scan visits, and stops where it stops,
    /// for ranges that start, end and straddle anywhere in a word.
    #[test]
    fn each_set_bit_visits_the_set_bits_in_order_and_stops_after_max() {
        let mut rng = crate::rng::SplitMix64::new(5);
        for case in 0..2000 {
            let words: Vec<u64> = (0..4)
                .map(|_| match rng.below(4) {
                    0 => 0,
                    1 => u64::MAX,
                    _ => rng.next_u64() & rng.next_u64(),
                })
                .collect();
            let from = rng.below(257) as usize;
            let to = rng.below(257) as usize;
            let max = rng.below(80) as usize;
            let mut want = Vec::new();
            let mut stop = from;
            for i in from..to {
                if want.len() == max {
                    break;
                }
                stop = i + 1;
                if words[i / 64] & (1 << (i % 64)) != 0 {
                    want.push(i);
                }
            }
            if want.len() < max {
                stop = to.max(from);
            }
            let mut got = Vec::new();
            let (end, n) = each_set_bit(&words, from, to, max, |k, i| {
                assert_eq!(k, got.len());
                got.push(i);
            });
            assert_eq!(got, want, "case {case}: {from}..{to}, max {max}");
            assert_eq!(
                (end, n),
                (stop, want.len()),
                "case {case}: {from}..{to}, max {max}"
            );
        }
    }

    /// The run form's flash `run` against the page-by-page reference `one`: the same
    /// counts, erased blocks, block counts and write pointers, page states and tags.
    fn assert_same_flash(run: &Flash, one: &Flash, at: &str) {
        assert_eq!(run.stats(), one.stats(), "{at}");
        assert_eq!(run.erased_blocks(), one.erased_blocks(), "{at}");
        for b in (0..run.geometry().blocks).map(Pbn) {
            assert_eq!(run.valid_count(b), one.valid_count(b), "{at}: {b:?}");
            assert_eq!(run.write_ptr(b), one.write_ptr(b), "{at}: {b:?}");
        }
        for p in (0..run.geometry().physical_pages()).map(Ppn) {
            assert_eq!(run.state(p), one.state(p), "{at}: {p:?}");
            assert_eq!(run.peek_tag(p), one.peek_tag(p), "{at}: {p:?}");
        }
        run.check().unwrap();
    }

    /// Programs pages `0..written` of block `src` (LPN = offset, versions 1 to 5) and
    /// invalidates the offsets `dead`; programs pages `0..dst_start` of block `dst`.
    fn lay_out(
        f: &mut Flash,
        (src, written, dead): (Pbn, u32, &[u32]),
        (dst, dst_start): (Pbn, u32),
    ) {
        let g = f.geometry().clone();
        for off in 0..written {
            let t = PageTag {
                lpn: Lpn(off),
                version: 1 + off % 5,
            };
            f.program(g.ppn(src, off), t, Cause::Host);
        }
        for off in 0..dst_start {
            f.program(
                g.ppn(dst, off),
                tag(2 * g.pages_per_block + off),
                Cause::Host,
            );
        }
        for &off in dead {
            f.invalidate(g.ppn(src, off));
        }
    }

    /// A random case for the run forms of moves, laid out on each of `flashes`: source
    /// block 1, 2 or 3 with its first `written` pages programmed and about a third of
    /// them dead, destination block 5 programmed up to a random offset. Returns the
    /// source, the destination, `written` and a random offset to move from.
    fn random_move_case(
        rng: &mut crate::rng::SplitMix64,
        g: &Geometry,
        flashes: &mut [&mut Flash],
    ) -> (Pbn, Pbn, u32, u32) {
        let ppb = g.pages_per_block;
        let (src, dst) = (Pbn(1 + rng.below(3) as u32), Pbn(5));
        let written = 1 + rng.below(ppb as u64) as u32;
        let dst_start = rng.below(ppb as u64) as u32;
        let dead: Vec<u32> = (0..written).filter(|_| rng.below(3) == 0).collect();
        for f in flashes.iter_mut() {
            lay_out(f, (src, written, &dead), (dst, dst_start));
        }
        let from = rng.below(ppb as u64 + 1) as u32;
        (src, dst, written, from)
    }

    /// The page-by-page reference of a run of moves on `one`: each valid page of `src`
    /// among its first `written`, from offset `from` on, until `dst` is full, moved to
    /// `dst`'s next page by `step(one, from, to)`, which returns the page's tag.
    /// Returns the offset reached and the moves.
    fn moves_page_by_page(
        one: &mut Flash,
        (src, from, written): (Pbn, u32, u32),
        dst: Pbn,
        mut step: impl FnMut(&mut Flash, Ppn, Ppn) -> PageTag,
    ) -> (u32, Vec<(PageTag, Ppn, Ppn)>) {
        let g = one.geometry().clone();
        let (mut off, mut moves) = (from, Vec::new());
        while off < written && !one.is_full(dst) {
            let sp = g.ppn(src, off);
            off += 1;
            if one.is_valid(sp) {
                let dp = g.ppn(dst, one.write_ptr(dst));
                let t = step(one, sp, dp);
                moves.push((t, sp, dp));
            }
        }
        (off, moves)
    }

    /// Two flashes of geometry `g`, with packed or wide tags: the first only counts (the
    /// run forms' fast path), the second logs every operation (the page-by-page
    /// reference).
    fn counted_and_logged(g: &Geometry, packed: bool) -> (Flash, Flash) {
        let make = || {
            if packed {
                Flash::with_packed_tags(g)
            } else {
                Flash::new(g)
            }
        };
        let (mut run, one) = (make(), make());
        run.set_logging(false);
        (run, one)
    }

    /// `move_valid`'s run (counted, either tag layout) against page-by-page copies on
    /// blocks that sit inside a validity word, fill one, or straddle two.
    #[test]
    fn move_valid_runs_equal_page_by_page_copies_for_any_block_size_and_tag_layout() {
        let mut rng = crate::rng::SplitMix64::new(11);
        let mut filled = 0;
        for ppb in [5u32, 16, 48, 64, 100, 128, 256] {
            let g = geometry(ppb, 4, 100.0, 1);
            for case in 0..60 {
                let packed = case % 2 == 1;
                let (mut run, mut one) = counted_and_logged(&g, packed);
                let (src, dst, written, from) =
                    random_move_case(&mut rng, &g, &mut [&mut run, &mut one]);
                let first = (from..written).find(|&o| one.is_valid(g.ppn(src, o)));
                assert_eq!(run.next_valid(src, from), first, "ppb {ppb}, case {case}");
                let mut got = Vec::new();
                let end = run.move_valid(src, from, dst, Cause::Gc, |t, s, p| got.push((t, s, p)));
                let (off, want) =
                    moves_page_by_page(&mut one, (src, from, written), dst, |one, sp, dp| {
                        let t = one.copy(sp, dp, Cause::Gc);
                        one.invalidate(sp);
                        t
                    });
                let at = format!("ppb {ppb}, case {case}, packed {packed}");
                assert_eq!(end, off.max(from), "{at}");
                assert_eq!(got, want, "{at}");
                assert_same_flash(&run, &one, &at);
                filled += usize::from(run.is_full(dst) && end < written);
            }
        }
        // The stop just past the copy that fills the destination, with valid pages
        // left behind it, is checked in some cases.
        assert!(filled > 20, "{filled}");
    }

    /// `move_valid_with_spare`, counted (the run) and logged (page by page), against a
    /// read, an invalidation and a `program_with_spare` of each valid page: the same
    /// flash, the same spare words, the same log and callbacks.
    #[test]
    fn move_valid_with_spare_equals_reading_and_programming_with_spare_page_by_page() {
        let mut rng = crate::rng::SplitMix64::new(13);
        let words = 3;
        // The spare words a copy gets: its source, its destination and a running count.
        let spare_of = |calls: u32, s: Ppn, d: Ppn| [s.0, d.0, calls];
        for ppb in [5u32, 16, 64, 100, 128] {
            let g = geometry(ppb, 4, 100.0, 1);
            for case in 0..40 {
                let packed = case % 2 == 1;
                let (mut run, mut one) = counted_and_logged(&g, packed);
                let (_, mut logged) = counted_and_logged(&g, packed);
                let (src, dst, written, from) =
                    random_move_case(&mut rng, &g, &mut [&mut run, &mut one, &mut logged]);
                let mut ends = Vec::new();
                let mut got = Vec::new();
                for f in [&mut run, &mut logged] {
                    let mut calls = 0;
                    let mut seen = Vec::new();
                    ends.push(f.move_valid_with_spare(
                        src,
                        from,
                        dst,
                        Cause::Merge,
                        words,
                        |t, s, d, w| {
                            calls += 1;
                            w.copy_from_slice(&spare_of(calls, s, d));
                            seen.push((t, s, d));
                        },
                    ));
                    got.push(seen);
                }
                let mut calls = 0;
                let (off, want) =
                    moves_page_by_page(&mut one, (src, from, written), dst, |one, sp, dp| {
                        let t = one.read(sp, Cause::Merge);
                        one.invalidate(sp);
                        calls += 1;
                        one.program_with_spare(dp, t, &spare_of(calls, sp, dp), Cause::Merge);
                        t
                    });
                let at = format!("ppb {ppb}, case {case}, packed {packed}");
                assert_eq!(ends, [off.max(from); 2], "{at}");
                assert_eq!(got, [want.clone(), want.clone()], "{at}");
                assert_same_flash(&run, &one, &at);
                assert_same_flash(&logged, &one, &at);
                assert_eq!(logged.log_ops(), one.log_ops(), "{at}");
                for &(_, _, dp) in &want {
                    assert_eq!(run.spare_words(dp), one.spare_words(dp), "{at}: {dp:?}");
                    assert_eq!(logged.spare_words(dp), one.spare_words(dp), "{at}: {dp:?}");
                }
            }
        }
    }

    /// `move_run` (counted, either tag layout) against page-by-page copies and
    /// invalidations, for runs inside a validity word, filling one or straddling two,
    /// into a destination at any offset; and a run with a page that is not valid is
    /// refused.
    #[test]
    fn move_run_equals_page_by_page_moves_for_any_block_size_and_tag_layout() {
        let mut rng = crate::rng::SplitMix64::new(12);
        for ppb in [5u32, 16, 48, 64, 100, 128] {
            let g = geometry(ppb, 4, 100.0, 1);
            for case in 0..40 {
                let packed = case % 2 == 1;
                let (mut run, mut one) = counted_and_logged(&g, packed);
                let (src, dst) = (Pbn(1 + rng.below(3) as u32), Pbn(5));
                let dst_start = rng.below(ppb as u64) as u32;
                let from = rng.below(ppb as u64) as u32;
                let n = 1 + rng.below((ppb - from.max(dst_start)) as u64) as u32;
                for f in [&mut run, &mut one] {
                    lay_out(f, (src, ppb, &[]), (dst, dst_start));
                }
                run.move_run(g.ppn(src, from), g.ppn(dst, dst_start), n, Cause::Merge);
                for i in 0..n {
                    let (sp, dp) = (g.ppn(src, from + i), g.ppn(dst, dst_start + i));
                    one.copy(sp, dp, Cause::Merge);
                    one.invalidate(sp);
                }
                let at = format!("ppb {ppb}, case {case}, packed {packed}, {from}+{n}");
                assert_same_flash(&run, &one, &at);
            }
        }
        // A run over an invalid page is refused, before it changes anything.
        let g = geometry(16, 4, 100.0, 1);
        let mut f = Flash::new(&g);
        f.set_logging(false);
        for off in 0..4 {
            f.program(g.ppn(Pbn(1), off), tag(off), Cause::Host);
        }
        f.invalidate(g.ppn(Pbn(1), 2));
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f.move_run(g.ppn(Pbn(1), 0), g.ppn(Pbn(2), 0), 4, Cause::Merge)
        }));
        assert!(refused.is_err());
    }

    /// `read_valid` (counted, either tag layout) against a `read` of each valid page:
    /// the same pages and tags in the same order, the same counts; blocks inside a
    /// validity word, filling one or straddling two, partly written, with dead pages.
    #[test]
    fn read_valid_reads_what_page_by_page_reads_of_the_valid_pages_would() {
        let mut rng = crate::rng::SplitMix64::new(13);
        for ppb in [5u32, 16, 48, 64, 100, 128] {
            let g = geometry(ppb, 4, 100.0, 1);
            for case in 0..30 {
                let packed = case % 2 == 1;
                let (mut run, mut one) = counted_and_logged(&g, packed);
                let b = Pbn(1 + rng.below(3) as u32);
                let written = rng.below(ppb as u64 + 1) as u32;
                let dead: Vec<u32> = (0..written).filter(|_| rng.below(3) == 0).collect();
                for f in [&mut run, &mut one] {
                    lay_out(f, (b, written, &dead), (Pbn(0), 0));
                }
                let mut got = vec![(tag(9), Ppn(9))];
                run.read_valid(b, Cause::Gc, &mut got);
                let mut want = vec![(tag(9), Ppn(9))];
                for off in 0..written {
                    let p = g.ppn(b, off);
                    if one.is_valid(p) {
                        want.push((one.read(p, Cause::Gc), p));
                    }
                }
                let at = format!("ppb {ppb}, case {case}, packed {packed}");
                assert_eq!(got, want, "{at}");
                assert_eq!(run.stats(), one.stats(), "{at}");
            }
        }
    }

    #[test]
    fn valid_lpns_hint_names_the_valid_pages_lpns_in_page_order_without_a_flash_op() {
        let mut rng = crate::rng::SplitMix64::new(17);
        for ppb in [5u32, 64, 100, 128] {
            let g = geometry(ppb, 4, 100.0, 1);
            for case in 0..20 {
                let packed = case % 2 == 1;
                let (mut f, _) = counted_and_logged(&g, packed);
                let b = Pbn(1 + rng.below(3) as u32);
                let written = rng.below(ppb as u64 + 1) as u32;
                let dead: Vec<u32> = (0..written).filter(|_| rng.below(3) == 0).collect();
                lay_out(&mut f, (b, written, &dead), (Pbn(0), 0));
                let before = *f.stats();
                let mut got = Vec::new();
                f.valid_lpns_hint(b, |lpn| got.push(lpn));
                let want: Vec<Lpn> = (0..written)
                    .map(|off| g.ppn(b, off))
                    .filter(|&p| f.is_valid(p))
                    .map(|p| f.peek_tag(p).expect("programmed").lpn)
                    .collect();
                assert_eq!(got, want, "ppb {ppb}, case {case}");
                assert_eq!(f.stats(), &before, "no flash operation");
            }
        }
    }

    /// The copy prefetch hints take any page and block, the last ones and past the end
    /// included, on any block size and tag layout, without a panic (they take `&self`:
    /// the state check below is the type system's promise, kept as a record of it).
    #[test]
    fn copy_prefetch_hints_take_any_page_or_block_and_change_nothing() {
        for ppb in [5u32, 64, 100, 128] {
            let g = geometry(ppb, 4, 100.0, 1);
            for packed in [false, true] {
                let (mut f, _) = counted_and_logged(&g, packed);
                lay_out(&mut f, (Pbn(1), ppb / 2, &[0]), (Pbn(0), 0));
                let state = |f: &Flash| {
                    let tags: Vec<_> = (0..g.physical_pages())
                        .map(|p| f.peek_tag(Ppn(p)))
                        .collect();
                    (*f.stats(), tags, f.valid.clone())
                };
                let before = state(&f);
                for b in 0..g.blocks + 2 {
                    f.prefetch_block(Pbn(b));
                }
                for p in 0..(g.blocks + 2) * ppb {
                    f.prefetch_copy(Ppn(p));
                }
                assert!(
                    before == state(&f),
                    "ppb {ppb}, packed {packed}: a hint changed state"
                );
            }
        }
    }

    /// A flash whose blocks are each written to a random point, with about a third of
    /// the written pages invalidated at random.
    fn partly_written_and_valid(g: &Geometry, rng: &mut crate::rng::SplitMix64) -> Flash {
        let ppb = g.pages_per_block;
        let mut f = Flash::new(g);
        for b in 0..g.blocks {
            let written = rng.below(ppb as u64 + 1) as u32;
            for o in 0..written {
                f.program(g.ppn(Pbn(b), o), tag(b * ppb + o), Cause::Host);
                if rng.below(3) == 0 {
                    f.invalidate(g.ppn(Pbn(b), o));
                }
            }
        }
        f
    }

    /// `each_valid` visits the offsets a test of `is_valid` at each offset of the range
    /// finds, in order, for ranges anywhere in blocks partly written and partly valid.
    #[test]
    fn each_valid_visits_what_testing_each_offset_finds() {
        let mut rng = crate::rng::SplitMix64::new(4);
        for ppb in [2u32, 5, 64, 100, 128, 200] {
            let g = geometry(ppb, 6, 100.0, 1);
            let f = partly_written_and_valid(&g, &mut rng);
            for case in 0..200 {
                let b = Pbn(rng.below(g.blocks as u64) as u32);
                let from = rng.below(ppb as u64 + 1) as u32;
                let to = rng.below(ppb as u64 + 2) as u32;
                let want: Vec<u32> = (from..to.min(ppb))
                    .filter(|&o| f.is_valid(g.ppn(b, o)))
                    .collect();
                let mut got = Vec::new();
                f.each_valid(b, from, to, |o| got.push(o));
                assert_eq!(got, want, "ppb {ppb}, case {case}: {b:?} {from}..{to}");
            }
        }
    }

    /// `invalidate_block` leaves what `invalidate` of each valid page leaves (the bits
    /// of every block, the counts), on block sizes that start and end inside words
    /// and span several, with blocks partly written and partly valid, and no others'
    /// bits touched.
    #[test]
    fn invalidating_a_block_at_once_equals_invalidating_its_valid_pages() {
        let mut rng = crate::rng::SplitMix64::new(9);
        for ppb in [2u32, 5, 24, 64, 100, 128, 200] {
            let g = geometry(ppb, 6, 100.0, 1);
            for case in 0..20 {
                let mut a = partly_written_and_valid(&g, &mut rng);
                let mut b = a.clone();
                let victim = Pbn(rng.below(g.blocks as u64) as u32);
                for o in 0..ppb {
                    let p = g.ppn(victim, o);
                    if a.is_valid(p) {
                        a.invalidate(p);
                    }
                }
                b.invalidate_block(victim);
                assert_eq!(a.valid, b.valid, "ppb {ppb}, case {case}");
                assert_eq!(a.valid_count, b.valid_count, "ppb {ppb}, case {case}");
                b.check().unwrap();
            }
        }
    }

    /// Runs `f`, which must be cut by the armed power cut; returns the cut.
    fn cut_by(f: impl FnOnce()) -> PowerCut {
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .expect_err("the power cut strikes");
        *payload.downcast::<PowerCut>().expect("a PowerCut payload")
    }

    #[test]
    fn a_torn_program_leaves_an_unreadable_used_page() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.arm_power_cut(2);
        assert!(f.power_cut_armed());
        f.program(Ppn(1), tag(2), Cause::Host);
        let cut = cut_by(|| f.program_with_spare(Ppn(2), tag(3), &[7, 7], Cause::Gc));
        assert_eq!(
            cut,
            PowerCut {
                kind: OpKind::Program,
                cause: Cause::Gc,
                block: Pbn(0)
            }
        );
        assert_eq!(cut.describe(), "a torn program of block 0 (gc)");
        assert!(!f.power_cut_armed());
        f.power_cycle();
        assert_eq!(f.write_ptr(Pbn(0)), 3);
        assert_eq!(f.read_spare(Ppn(1), Cause::Recovery), tag(2));
        assert!(f.read_spare(Ppn(2), Cause::Recovery).is_uncorrectable());
        assert_eq!(f.spare_words(Ppn(2)), &[0, 0][..]);
        // Used: the next program goes on after it.
        f.program(Ppn(3), tag(4), Cause::Host);
        f.check().unwrap();
    }

    #[test]
    fn a_torn_erase_leaves_a_block_to_erase_again() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.invalidate(Ppn(0));
        let erased = f.erased_blocks();
        f.arm_power_cut(1);
        let cut = cut_by(|| f.erase(Pbn(0), Cause::Gc));
        assert_eq!(cut.kind, OpKind::Erase);
        assert_eq!(f.write_ptr(Pbn(0)), 4);
        assert_eq!(f.erase_count(Pbn(0)), 1);
        assert_eq!(f.erased_blocks(), erased);
        for p in 0..4 {
            assert!(f.read_spare(Ppn(p), Cause::Recovery).is_uncorrectable());
        }
        // An erase of a block that was already erased: no longer erased.
        f.arm_power_cut(1);
        cut_by(|| f.erase(Pbn(1), Cause::Gc));
        assert_eq!(f.erased_blocks(), erased - 1);
        f.check().unwrap();
        f.erase(Pbn(0), Cause::Gc);
        f.program(Ppn(0), tag(5), Cause::Host);
        assert_eq!(f.read(Ppn(0), Cause::Host), tag(5));
    }

    #[test]
    fn a_cut_copy_tears_its_destination_and_leaves_its_source() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.arm_power_cut(1);
        let cut = cut_by(|| {
            f.copy(Ppn(0), Ppn(4), Cause::Gc);
        });
        assert_eq!((cut.kind, cut.block), (OpKind::Program, Pbn(1)));
        assert_eq!(f.stats().page_reads[Cause::Gc as usize], 1);
        assert!(f.peek_tag(Ppn(4)).unwrap().is_uncorrectable());
        assert!(f.is_valid(Ppn(0)), "the source is untouched");
        assert!(!f.is_valid(Ppn(4)));
        f.check().unwrap();
    }

    #[test]
    fn a_cut_read_changes_nothing() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.arm_power_cut(1);
        let cut = cut_by(|| {
            f.read(Ppn(0), Cause::Host);
        });
        assert_eq!(cut.kind, OpKind::Read);
        assert_eq!(f.peek_tag(Ppn(0)), Some(tag(1)));
        assert!(f.is_valid(Ppn(0)));
    }

    #[test]
    fn move_valid_is_cut_at_the_armed_copy() {
        for at in 1..=3u64 {
            let mut f = flash();
            for p in 0..4 {
                f.program(Ppn(p), tag(p), Cause::Host);
            }
            f.invalidate(Ppn(1));
            f.arm_power_cut(at);
            let mut moved = Vec::new();
            let cut = cut_by(|| {
                f.move_valid(Pbn(0), 0, Pbn(1), Cause::Gc, |t, _, p| moved.push((t, p)));
            });
            // Copies of pages 0, 2 and 3, one operation each: the at-th is torn.
            let done = (at - 1) as usize;
            assert_eq!(moved.len(), done, "cut at {at}");
            assert_eq!(cut.kind, OpKind::Program);
            assert_eq!(f.write_ptr(Pbn(1)) as usize, done + 1);
            assert!(f.peek_tag(Ppn(4 + done as u32)).unwrap().is_uncorrectable());
            f.check().unwrap();
        }
    }

    #[test]
    fn an_armed_cut_survives_the_clock_and_log_switches() {
        let mut f = flash();
        f.set_logging(false);
        f.arm_power_cut(2);
        f.set_logging(true);
        f.program(Ppn(0), tag(1), Cause::Host);
        assert_eq!(f.log_ops().len(), 1, "logged as set while armed");
        assert!(f.power_cut_armed());
        cut_by(|| f.program(Ppn(1), tag(2), Cause::Host));
        assert!(!f.power_cut_armed());
        f.program(Ppn(2), tag(3), Cause::Host);
        assert_eq!(f.log_ops().len(), 3, "logging as set before the cut");
    }

    #[test]
    fn a_disarmed_cut_never_strikes() {
        let mut f = flash();
        f.arm_power_cut(3);
        f.program(Ppn(0), tag(1), Cause::Host);
        assert!(f.disarm_power_cut());
        assert!(!f.disarm_power_cut());
        for p in 1..4 {
            f.program(Ppn(p), tag(p), Cause::Host);
        }
        assert!(!f.power_cut_armed());
    }

    #[test]
    fn program_read_invalidate_erase() {
        let mut f = flash();
        f.program(Ppn(0), tag(7), Cause::Host);
        assert_eq!(f.state(Ppn(0)), PageState::Valid);
        assert_eq!(f.state(Ppn(1)), PageState::Free);
        assert_eq!(f.read(Ppn(0), Cause::Host), tag(7));
        assert_eq!(f.read_spare(Ppn(0), Cause::Map), tag(7));
        f.invalidate(Ppn(0));
        assert_eq!(f.state(Ppn(0)), PageState::Invalid);
        f.erase(Pbn(0), Cause::Gc);
        assert_eq!(f.state(Ppn(0)), PageState::Free);
        assert_eq!(f.erase_count(Pbn(0)), 1);
        let s = f.stats();
        assert_eq!(s.programs[Cause::Host as usize], 1);
        assert_eq!(s.page_reads[Cause::Host as usize], 1);
        assert_eq!(s.spare_reads[Cause::Map as usize], 1);
        assert_eq!(s.erases[Cause::Gc as usize], 1);
        assert_eq!(f.log_ops().len(), 4);
        f.check().unwrap();
    }

    #[test]
    fn erased_blocks_are_counted_as_blocks_are_opened_and_erased() {
        let mut f = flash();
        let all = f.geometry().blocks;
        assert_eq!(f.erased_blocks(), all);
        f.program(Ppn(0), tag(1), Cause::Host);
        f.program(Ppn(1), tag(2), Cause::Host);
        assert_eq!(f.erased_blocks(), all - 1, "one block opened");
        f.erase(Pbn(1), Cause::Gc);
        assert_eq!(
            f.erased_blocks(),
            all - 1,
            "erasing an erased block changes nothing"
        );
        f.invalidate(Ppn(0));
        f.invalidate(Ppn(1));
        f.erase(Pbn(0), Cause::Gc);
        assert_eq!(f.erased_blocks(), all);
        f.check().unwrap();
    }

    #[test]
    fn reattribute_moves_counts_and_log_entries() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.program(Ppn(1), tag(2), Cause::Host);
        f.read(Ppn(0), Cause::Host);
        f.reattribute(OpKind::Program, Cause::Host, Cause::Padding, 1);
        f.reattribute(OpKind::Read, Cause::Host, Cause::Padding, 1);
        let s = f.stats();
        assert_eq!(s.programs[Cause::Host as usize], 1);
        assert_eq!(s.programs[Cause::Padding as usize], 1);
        assert_eq!(s.page_reads[Cause::Host as usize], 0);
        assert_eq!(s.page_reads[Cause::Padding as usize], 1);
        let causes: Vec<Cause> = f.log_ops().iter().map(|o| o.cause).collect();
        assert_eq!(causes, [Cause::Host, Cause::Padding, Cause::Padding]);
    }

    #[test]
    #[should_panic(expected = "counted only 0")]
    fn reattribute_refuses_more_than_counted() {
        let mut f = flash();
        f.reattribute(OpKind::Erase, Cause::Host, Cause::Padding, 1);
    }

    #[test]
    fn power_cycle_keeps_nand_contents_and_forgets_validity() {
        let mut f = flash();
        f.program(Ppn(0), tag(3), Cause::Host);
        f.program(Ppn(1), tag(4), Cause::Host);
        f.power_cycle();
        assert_eq!(f.state(Ppn(0)), PageState::Invalid);
        assert_eq!(f.valid_count(Pbn(0)), 0);
        assert_eq!(f.read_spare(Ppn(1), Cause::Recovery), tag(4));
        f.mark_valid(Ppn(1));
        assert_eq!(f.state(Ppn(1)), PageState::Valid);
        assert_eq!(f.write_ptr(Pbn(0)), 2);
        f.check().unwrap();
    }

    #[test]
    #[should_panic(expected = "not programmed")]
    fn refuses_mark_valid_of_free_page() {
        let mut f = flash();
        f.mark_valid(Ppn(0));
    }

    #[test]
    #[should_panic(expected = "not free")]
    fn refuses_program_of_programmed_page() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.program(Ppn(0), tag(2), Cause::Host);
    }

    #[test]
    #[should_panic(expected = "out of order")]
    fn refuses_out_of_order_program() {
        let mut f = flash();
        f.program(Ppn(1), tag(1), Cause::Host);
    }

    #[test]
    #[should_panic(expected = "never programmed")]
    fn refuses_read_of_unwritten_page() {
        let mut f = flash();
        f.read(Ppn(2), Cause::Host);
    }

    #[test]
    #[should_panic(expected = "never programmed")]
    fn refuses_spare_read_of_erased_page() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.invalidate(Ppn(0));
        f.erase(Pbn(0), Cause::Gc);
        f.read_spare(Ppn(0), Cause::Host);
    }

    #[test]
    #[should_panic(expected = "still holds 1 valid")]
    fn refuses_erase_of_live_data() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.erase(Pbn(0), Cause::Gc);
    }

    #[test]
    #[should_panic(expected = "not valid")]
    fn refuses_double_invalidate() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.invalidate(Ppn(0));
        f.invalidate(Ppn(0));
    }

    #[test]
    fn spare_words_and_payloads_survive_a_power_cycle_but_not_an_erase() {
        let mut f = flash();
        f.program_with_spare(Ppn(0), tag(1), &[7, 8, 9], Cause::Host);
        f.program_payload(Ppn(1), tag(2), &[1, 2, 3, 4], Cause::Map);
        f.program_with_spare(Ppn(4), tag(3), &[5, 5, 5], Cause::Host);
        f.power_cycle();
        assert_eq!(f.spare_words(Ppn(0)), &[7, 8, 9][..]);
        assert_eq!(f.spare_words(Ppn(4)), &[5, 5, 5][..]);
        assert_eq!(f.payload(Ppn(1)), Some(&[1, 2, 3, 4][..]));
        assert_eq!(f.payload(Ppn(0)), None);
        f.erase(Pbn(0), Cause::Gc);
        assert_eq!(f.payload(Ppn(1)), None);
        assert_eq!(f.spare_words(Ppn(4)), &[5, 5, 5][..]);
        assert_eq!(f.stats().programs[Cause::Map as usize], 1);
    }

    /// A flash that drops recovery data programs the same pages with the same tags and
    /// counts, but keeps no spare words, no journal and no recovery payload; ordinary
    /// payloads (map pages, read in normal operation) stay; reading spare words then is
    /// a broken invariant.
    #[test]
    fn dropping_recovery_data_keeps_tags_counts_and_ordinary_payloads() {
        let (mut lean, mut kept) = (flash(), flash());
        lean.drop_recovery_data();
        for f in [&mut lean, &mut kept] {
            f.set_logging(false);
            assert!(!f.dropped_recovery_data());
            f.program_with_spare(Ppn(0), tag(1), &[7, 8], Cause::Host);
            f.program_recovery_payload_parts(Ppn(1), tag(2), &[1], &[2, 3], Cause::Map);
            f.program_payload(Ppn(2), tag(3), &[4, 5], Cause::Map);
            f.program(Ppn(3), tag(0), Cause::Host);
            let j = f.open_spare_journal(2, &[&[10]], sum_decode);
            let stop = f.move_valid_journaled(Pbn(0), 0, Pbn(1), Cause::Gc, j, |run| {
                run.codes.fill(1);
            });
            f.close_spare_journal(j);
            assert_eq!(stop, 4);
        }
        assert!(lean.dropped_recovery_data() && !kept.dropped_recovery_data());
        assert_eq!(lean.stats(), kept.stats());
        for p in 0..8 {
            assert_eq!(lean.peek_tag(Ppn(p)), kept.peek_tag(Ppn(p)), "ppn{p}");
            assert_eq!(lean.is_valid(Ppn(p)), kept.is_valid(Ppn(p)), "ppn{p}");
        }
        assert_eq!(kept.payload(Ppn(1)), Some(&[1, 2, 3][..]));
        assert_eq!(lean.payload(Ppn(1)), None, "a recovery payload");
        assert_eq!(lean.payload(Ppn(2)), Some(&[4, 5][..]), "a map page's");
        assert_eq!(kept.spare_words(Ppn(4)), &[11, 4][..]);
        assert_eq!(kept.spare_journal_footprint().0, 1);
        assert_eq!(lean.spare_journal_footprint(), (0, 0));
        assert!(lean.spare_words.is_empty(), "no spare-word store allocated");
        let read = std::panic::catch_unwind(|| lean.spare_words(Ppn(4)).into_owned());
        assert!(read.is_err(), "spare words read after they were dropped");
    }

    #[test]
    #[should_panic(expected = "after the first program")]
    fn recovery_data_is_dropped_only_before_the_first_program() {
        let mut f = flash();
        f.program(Ppn(0), tag(1), Cause::Host);
        f.drop_recovery_data();
    }

    /// A test journal: the table is one word; a page's spare words are the table plus
    /// the codes of the entries up to its own, and the page.
    fn sum_decode(base: &[u32], entries: &[[u32; 2]], out: &mut Vec<u32>) {
        let sum = base[0] + entries.iter().map(|e| e[1]).sum::<u32>();
        out.extend_from_slice(&[sum, entries[entries.len() - 1][0]]);
    }

    /// A journaled move handed over a run at once (counted, whole tags) leaves what the
    /// page-by-page path (logged) leaves: the same stop, the same copies handed over in
    /// the same order, the same flash, and every copy's spare words decoded alike; on
    /// blocks of any size, with destinations that fill before the source ends.
    #[test]
    fn a_journaled_run_at_once_equals_the_page_by_page_path() {
        let mut rng = crate::rng::SplitMix64::new(23);
        let mut filled = 0;
        for ppb in [5u32, 16, 64, 100, 128] {
            let g = geometry(ppb, 4, 100.0, 1);
            for case in 0..40 {
                let (mut run, mut one) = counted_and_logged(&g, false);
                let (src, dst, written, from) =
                    random_move_case(&mut rng, &g, &mut [&mut run, &mut one]);
                let mut ends = Vec::new();
                let mut seen = Vec::new();
                for f in [&mut run, &mut one] {
                    let j = f.open_spare_journal(2, &[&[7]], sum_decode);
                    let mut copies = Vec::new();
                    ends.push(f.move_valid_journaled(src, from, dst, Cause::Gc, j, |r| {
                        for (k, (t, &s)) in r.tags.iter().zip(r.from).enumerate() {
                            let d = r.first.0 + k as u32;
                            // A code from the copy alone, so both paths give the same.
                            r.codes[k] = t.lpn.0 * 3 + s % 7 + d % 5;
                            copies.push((*t, s, d));
                        }
                    }));
                    f.close_spare_journal(j);
                    seen.push(copies);
                }
                let at = format!("ppb {ppb}, case {case}");
                assert_eq!(ends[0], ends[1], "{at}");
                assert_eq!(seen[0], seen[1], "{at}");
                assert_same_flash(&run, &one, &at);
                for &(_, _, d) in &seen[0] {
                    assert_eq!(
                        run.spare_words(Ppn(d)),
                        one.spare_words(Ppn(d)),
                        "{at}: {d}"
                    );
                }
                filled += usize::from(run.is_full(dst) && ends[0] < written);
            }
        }
        assert!(filled > 10, "{filled}");
    }

    /// Spare words kept in a journal read back as the words the decoder gives, for
    /// every record mode and tag layout; an erase drops its pages' references and frees
    /// a closed journal none of whose pages is left; a torn copy has no words.
    #[test]
    fn journaled_spare_words_decode_and_die_with_their_pages() {
        for packed in [false, true] {
            for log in [false, true] {
                let g = geometry(4, 4, 50.0, 1);
                let mut f = if packed {
                    Flash::with_packed_tags(&g)
                } else {
                    Flash::new(&g)
                };
                f.set_logging(log);
                for p in 0..4 {
                    f.program_with_spare(Ppn(p), tag(p), &[p, p], Cause::Host);
                }
                f.invalidate(Ppn(1));
                let j = f.open_spare_journal(2, &[&[100]], sum_decode);
                let mut codes = 10;
                let mut moves = Vec::new();
                let stop = f.move_valid_journaled(Pbn(0), 0, Pbn(1), Cause::Gc, j, |run| {
                    for (k, (t, &s)) in run.tags.iter().zip(run.from).enumerate() {
                        moves.push((t.lpn.0, s, run.first.0 + k as u32));
                        codes += 1;
                        run.codes[k] = codes;
                    }
                });
                assert_eq!(stop, 4);
                assert_eq!(moves, [(0, 0, 4), (2, 2, 5), (3, 3, 6)]);
                let at = format!("packed {packed}, log {log}");
                // Pages 4, 5, 6 hold lpns 0, 2, 3 with codes 11, 12, 13.
                assert_eq!(f.spare_words(Ppn(4)), &[111, 4][..], "{at}");
                assert_eq!(f.spare_words(Ppn(5)), &[123, 5][..], "{at}");
                assert_eq!(f.spare_words(Ppn(6)), &[136, 6][..], "{at}");
                assert_eq!(f.spare_journal_footprint().0, 1);
                // Closed, then its pages erased: freed, and its slot reused.
                f.close_spare_journal(j);
                f.power_cycle();
                assert_eq!(
                    f.spare_words(Ppn(5)),
                    &[123, 5][..],
                    "{at}: after a power cycle"
                );
                f.erase(Pbn(0), Cause::Gc);
                f.erase(Pbn(1), Cause::Gc);
                assert_eq!(f.spare_journal_footprint().0, 0, "{at}");
                f.program_with_spare(Ppn(4), tag(7), &[1, 2], Cause::Host);
                assert_eq!(
                    f.spare_words(Ppn(4)),
                    &[1, 2][..],
                    "{at}: written whole again"
                );
                f.program_with_spare(Ppn(5), tag(8), &[3, 4], Cause::Host);
                let j2 = f.open_spare_journal(2, &[&[0]], sum_decode);
                assert_eq!(j2, j, "{at}: the freed slot is reused");
                if packed {
                    continue; // (power cuts need whole tags)
                }
                // A copy torn by a power cut: used, unreadable, no words, no reference.
                f.arm_power_cut(2);
                cut_by(|| {
                    f.move_valid_journaled(Pbn(1), 0, Pbn(2), Cause::Gc, j2, |run| {
                        run.codes.fill(5)
                    });
                });
                f.power_cycle();
                assert_eq!(f.spare_words(Ppn(8)), &[0, 0][..], "{at}: torn");
                assert!(f.read_spare(Ppn(8), Cause::Recovery).is_uncorrectable());
                // The power cycle closed the journal; no page references it: freed.
                assert_eq!(f.spare_journal_footprint().0, 0, "{at}");
                f.check().unwrap();
            }
        }
    }

    /// An erase drops the payloads of its own block only, and keeps their buffers for
    /// the next payloads; a torn program drops its page's.
    #[test]
    fn an_erase_drops_its_blocks_payloads_and_reuses_their_buffers() {
        let mut f = flash();
        let ppb = f.geometry().pages_per_block;
        for p in [0, 1, ppb, ppb + 1] {
            f.program_payload(Ppn(p), tag(p), &[p; 3], Cause::Map);
        }
        f.program(Ppn(2 * ppb), tag(9), Cause::Host);
        assert_eq!(f.payloads.per_block[..3], [2, 2, 0]);
        for p in [0, 1, 2 * ppb] {
            f.invalidate(Ppn(p));
        }
        f.erase(Pbn(2), Cause::Gc);
        f.erase(Pbn(0), Cause::Gc);
        assert_eq!(f.payloads.per_block[..3], [0, 2, 0]);
        assert_eq!((f.payload(Ppn(0)), f.payload(Ppn(1))), (None, None));
        assert_eq!(f.payload(Ppn(ppb + 1)), Some(&[ppb + 1; 3][..]));
        assert_eq!(f.payloads.free.len(), 2);
        f.program_payload(Ppn(0), tag(0), &[7; 5], Cause::Map);
        assert_eq!(
            f.payloads.free.len(),
            1,
            "a dropped payload's buffer is reused"
        );
        assert_eq!(f.payload(Ppn(0)), Some(&[7; 5][..]));
        assert_eq!(f.payloads.per_block[..3], [1, 2, 0]);
        // A program torn by a power cut leaves no payload.
        f.arm_power_cut(1);
        let cut = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f.program_payload(Ppn(1), tag(1), &[1], Cause::Map)
        }));
        assert!(cut.is_err());
        assert_eq!(f.payload(Ppn(1)), None);
        assert_eq!(f.payloads.per_block[..3], [1, 2, 0]);
    }

    #[test]
    fn packed_tags_hold_lpn_and_version_in_one_word() {
        let g = flash().geometry().clone();
        // 16 logical pages: 4 LPN bits, 28 version bits.
        assert_eq!(g.logical_pages, 16);
        let mut f = Flash::with_packed_tags(&g);
        assert_eq!(f.version_bits(), Some(28));
        assert_eq!(Flash::new(&g).version_bits(), None);
        let top = PageTag {
            lpn: Lpn(15),
            version: (1 << 28) - 1,
        };
        f.program(Ppn(0), top, Cause::Host);
        f.program(Ppn(1), tag(0), Cause::Host);
        assert_eq!(f.read(Ppn(0), Cause::Host), top);
        assert_eq!(f.peek_tag(Ppn(1)), Some(tag(0)));
        assert_eq!(f.peek_tag(Ppn(2)), None);
        assert_eq!(f.copy(Ppn(0), Ppn(2), Cause::Gc), top);
        assert_eq!(f.peek_tag(Ppn(2)), Some(top));
        f.invalidate(Ppn(0));
        f.invalidate(Ppn(1));
        f.invalidate(Ppn(2));
        f.erase(Pbn(0), Cause::Gc);
        assert_eq!(f.peek_tag(Ppn(0)), None);
        f.check().unwrap();
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn packed_tags_refuse_a_version_too_wide() {
        let g = flash().geometry().clone();
        let mut f = Flash::with_packed_tags(&g);
        let t = PageTag {
            lpn: Lpn(1),
            version: 1 << 28,
        };
        f.program(Ppn(0), t, Cause::Host);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn packed_tags_refuse_an_lpn_beyond_the_logical_space() {
        let g = flash().geometry().clone();
        let mut f = Flash::with_packed_tags(&g);
        f.program(Ppn(0), tag(16), Cause::Host);
    }

    #[test]
    fn packed_tags_leave_as_many_version_bits_as_the_lpns_allow() {
        let mut g = flash().geometry().clone();
        for (pages, bits) in [(1, 31), (2, 31), (3, 30), (1 << 18, 14), (1 << 28, 4)] {
            g.logical_pages = pages;
            assert_eq!(g.lpn_bits(), 32 - bits, "{pages} pages");
        }
    }

    #[test]
    #[should_panic(expected = "fixed at 3")]
    fn spare_words_have_one_width() {
        let mut f = flash();
        f.program_with_spare(Ppn(0), tag(1), &[7, 8, 9], Cause::Host);
        f.program_with_spare(Ppn(1), tag(1), &[7], Cause::Host);
    }
}
