//! Shared machinery of the flash-aware buffers: the per-page table of buffered versions
//! grouped by logical block, the block lists (an [`ftlab_core::lru::Lists`] over logical
//! block numbers), the `size` option, and padded flushes that re-attribute their flash
//! operations to [`Cause::Padding`].
//!
//! Everything is sized once, at construction, from the geometry and the buffer size:
//! no request allocates.
//!
//! Choices shared by every buffer here (co-op-buffer-ftl.txt §2.1: "it is more
//! effective to use the buffer cache only for write caching, not for read caching"):
//! - read hits are served from the buffer and do not change any LRU order; read misses
//!   go to the FTL and are not inserted;
//! - the `size` option is the buffer's byte capacity (the paper's DRAM size, §6.1, all
//!   of it used for data: the FTL's mapping RAM is reported separately, not deducted);
//!   a buffer holds `size / page_size` pages;
//! - a padding read of a page the FTL has never held (never written or trimmed) returns
//!   nothing, and that page is simply left out of the flushed group.

use ftlab_core::buffer::{Backend, Buffer, BufferStats};
use ftlab_core::flash::{Cause, OpKind};
use ftlab_core::ftl::{BufferView, GroupInfo};
use ftlab_core::geometry::Geometry;
use ftlab_core::lru::Lists;
use ftlab_core::options::{bad, JsonSchema, SchemeError};
use ftlab_core::units::ByteSize;
use ftlab_core::{Lbn, Lpn, PageTag, PageWrite};
use serde::{Deserialize, Serialize};

/// The default of every buffer's `size` option: 16 MiB.
pub const DEFAULT_SIZE: ByteSize = ByteSize(16 << 20);

/// Options of the buffers whose only option is their size (`lru`, `fab`, `bplru`,
/// `blru`, `coop`). Buffers with more options repeat the `size` field with the same
/// help and default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SizeOptions {
    /// Buffer capacity in bytes (co-op-buffer-ftl.txt §6.3 and Figs. 8-9: 16 MB DRAM).
    pub size: ByteSize,
}

impl Default for SizeOptions {
    fn default() -> Self {
        SizeOptions { size: DEFAULT_SIZE }
    }
}

/// Buffer capacity in pages from the `size` option of `scheme`; refuses less than one
/// page of `geo`.
pub fn capacity_pages(scheme: &str, geo: &Geometry, size: ByteSize) -> Result<u32, SchemeError> {
    let pages = size.0 / geo.page_size as u64;
    if pages == 0 {
        return Err(bad(
            scheme,
            "size",
            size,
            format!(
                "the buffer must hold at least one page ({} bytes)",
                geo.page_size
            ),
        ));
    }
    Ok(pages.min(u32::MAX as u64 - 1) as u32)
}

/// Marks a buffered page whose data is already on flash (BA-BM made it clean).
pub const CLEAN: u32 = 1 << 31;

/// Buffered pages of a block-level buffer: the buffered version of every logical page
/// (0: not buffered) and per logical block the number of buffered and dirty pages.
/// 4 bytes per logical page plus 8 per logical block.
#[derive(Clone, Debug)]
pub struct BlockPages {
    ppb: u32,
    logical_pages: u32,
    version: Vec<u32>,
    pages: Vec<u32>,
    dirty: Vec<u32>,
    used: u32,
    capacity: u32,
}

impl BlockPages {
    /// An empty table for `geo` holding at most `capacity` pages.
    pub fn new(geo: &Geometry, capacity: u32) -> BlockPages {
        BlockPages {
            ppb: geo.pages_per_block,
            logical_pages: geo.logical_pages,
            version: vec![0; geo.logical_pages as usize],
            pages: vec![0; geo.logical_blocks() as usize],
            dirty: vec![0; geo.logical_blocks() as usize],
            used: 0,
            capacity,
        }
    }

    /// Pages per block.
    #[inline]
    pub fn ppb(&self) -> u32 {
        self.ppb
    }

    /// Capacity in pages.
    #[inline]
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Pages buffered.
    #[inline]
    pub fn used(&self) -> u32 {
        self.used
    }

    /// Whether no page can be added without an eviction.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.used >= self.capacity
    }

    /// The buffered copy of `lpn` (dirty or clean).
    #[inline]
    pub fn get(&self, lpn: Lpn) -> Option<PageTag> {
        let v = self.version[lpn.idx()];
        (v != 0).then_some(PageTag {
            lpn,
            version: v & !CLEAN,
        })
    }

    /// Whether the buffered copy of `lpn` is dirty (`None`: not buffered).
    #[inline]
    pub fn is_dirty(&self, lpn: Lpn) -> Option<bool> {
        let v = self.version[lpn.idx()];
        (v != 0).then_some(v & CLEAN == 0)
    }

    // Plain getters over this table's own arrays, like Flash's over its own.

    /// Buffered pages of a block.
    #[inline]
    pub fn pages(&self, lbn: Lbn) -> u32 {
        self.pages[lbn.idx()]
    }

    /// Dirty buffered pages of a block.
    #[inline]
    pub fn dirty(&self, lbn: Lbn) -> u32 {
        self.dirty[lbn.idx()]
    }

    /// Pages of the block the host can address (the last block may be short).
    #[inline]
    pub fn block_len(&self, lbn: Lbn) -> u32 {
        let first = lbn.0 * self.ppb;
        self.ppb.min(self.logical_pages - first)
    }

    /// Whether every addressable page of the block is buffered.
    #[inline]
    pub fn is_complete(&self, lbn: Lbn) -> bool {
        self.pages[lbn.idx()] == self.block_len(lbn)
    }

    /// Stores a dirty page; returns whether it was already buffered (a hit).
    #[inline]
    pub fn put(&mut self, tag: PageTag) -> bool {
        assert!(tag.version != 0 && tag.version & CLEAN == 0);
        let lbn = tag.lpn.0 / self.ppb;
        let old = self.version[tag.lpn.idx()];
        self.version[tag.lpn.idx()] = tag.version;
        if old == 0 {
            assert!(self.used < self.capacity, "buffer over capacity");
            self.used += 1;
            self.pages[lbn as usize] += 1;
            self.dirty[lbn as usize] += 1;
            false
        } else {
            if old & CLEAN != 0 {
                self.dirty[lbn as usize] += 1;
            }
            true
        }
    }

    /// Marks a buffered dirty page clean; returns its tag.
    pub fn make_clean(&mut self, lpn: Lpn) -> Option<PageTag> {
        let v = self.version[lpn.idx()];
        if v == 0 || v & CLEAN != 0 {
            return None;
        }
        self.version[lpn.idx()] = v | CLEAN;
        self.dirty[(lpn.0 / self.ppb) as usize] -= 1;
        Some(PageTag { lpn, version: v })
    }

    /// Drops a page; returns its tag and whether it was dirty.
    #[inline]
    pub fn remove(&mut self, lpn: Lpn) -> Option<(PageTag, bool)> {
        let v = self.version[lpn.idx()];
        if v == 0 {
            return None;
        }
        let lbn = (lpn.0 / self.ppb) as usize;
        self.version[lpn.idx()] = 0;
        self.used -= 1;
        self.pages[lbn] -= 1;
        let dirty = v & CLEAN == 0;
        if dirty {
            self.dirty[lbn] -= 1;
        }
        Some((
            PageTag {
                lpn,
                version: v & !CLEAN,
            },
            dirty,
        ))
    }

    /// Appends every dirty page (its newest data is only here).
    pub fn dirty_lpns(&self, out: &mut Vec<Lpn>) {
        for (b, &d) in self.dirty.iter().enumerate() {
            if d == 0 {
                continue;
            }
            let first = b as u32 * self.ppb;
            for o in 0..self.block_len(Lbn(b as u32)) {
                let v = self.version[(first + o) as usize];
                if v != 0 && v & CLEAN == 0 {
                    out.push(Lpn(first + o));
                }
            }
        }
    }

    /// Offset of the first dirty page of a block.
    pub fn first_dirty_offset(&self, lbn: Lbn) -> Option<u32> {
        let first = lbn.0 * self.ppb;
        (0..self.block_len(lbn)).find(|&o| {
            let v = self.version[(first + o) as usize];
            v != 0 && v & CLEAN == 0
        })
    }

    /// Recounts every block from the page table and compares with the counters.
    pub fn check(&self) -> Result<(), String> {
        let mut used = 0u32;
        for (b, (&p, &d)) in self.pages.iter().zip(&self.dirty).enumerate() {
            let lbn = Lbn(b as u32);
            let first = (b as u32 * self.ppb) as usize;
            let slice = &self.version[first..first + self.block_len(lbn) as usize];
            let n = slice.iter().filter(|&&v| v != 0).count() as u32;
            let nd = slice.iter().filter(|&&v| v != 0 && v & CLEAN == 0).count() as u32;
            if n != p || nd != d {
                return Err(format!(
                    "{lbn:?}: counters say {p} pages / {d} dirty, table holds {n} / {nd}"
                ));
            }
            used += n;
        }
        if used != self.used || used > self.capacity {
            return Err(format!(
                "{used} pages buffered, counter {}, capacity {}",
                self.used, self.capacity
            ));
        }
        Ok(())
    }
}

/// Reads a page through the FTL to pad a block, counting the flash reads it caused as
/// padding.
pub fn read_for_padding(be: &mut Backend<'_>, lpn: Lpn) -> Option<PageTag> {
    let before = be.flash.stats().page_reads[Cause::Host as usize];
    let tag = be.read(lpn);
    let n = be.flash.stats().page_reads[Cause::Host as usize] - before;
    be.flash
        .reattribute(OpKind::Read, Cause::Host, Cause::Padding, n);
    debug_assert!(tag.is_none_or(|t| t.lpn == lpn));
    tag
}

/// Hands a group to the FTL; `padded` of its pages were padding (the FTL is told, so
/// it can count a padding switch merge), and that many of the host programs the write
/// caused are counted as padding. `view` lets a buffer-aware FTL see the buffer.
pub fn write_group(
    be: &mut Backend<'_>,
    pages: &[PageTag],
    padded: u32,
    view: Option<&mut dyn BufferView>,
) {
    let before = be.flash.stats().programs[Cause::Host as usize];
    be.write_with(
        pages,
        GroupInfo {
            padded,
            buffer: view,
        },
    );
    let n = be.flash.stats().programs[Cause::Host as usize] - before;
    be.flash.reattribute(
        OpKind::Program,
        Cause::Host,
        Cause::Padding,
        n.min(padded as u64),
    );
}

/// The view of a block-level buffer a buffer-aware FTL gets: its page table, and the
/// list whose blocks are cold.
pub struct CoreView<'a> {
    t: &'a mut BlockPages,
    lists: &'a Lists,
    cold: u32,
}

impl BufferView for CoreView<'_> {
    fn dirty_pages(&self, lbn: Lbn) -> u32 {
        self.t.dirty(lbn)
    }

    fn cold_dirty_pages(&self, lbn: Lbn) -> u32 {
        if self.lists.list_of(lbn.0) == Some(self.cold) {
            self.t.dirty(lbn)
        } else {
            0
        }
    }

    fn dirty_copy(&self, lpn: Lpn) -> Option<PageTag> {
        match self.t.is_dirty(lpn) {
            Some(true) => self.t.get(lpn),
            _ => None,
        }
    }

    fn mark_clean(&mut self, lpn: Lpn) {
        self.t.make_clean(lpn);
    }
}

/// The counters of a buffer that may pad: the named [`BufferStats`] and the padding
/// figures reported under `buffer.extra` (`padding_writes`, `padded_flushes`).
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// The named counters.
    pub named: BufferStats,
    /// Padding pages handed to the FTL.
    pub padding_writes: u64,
    /// Flushes that were padded.
    pub padded_flushes: u64,
}

impl Counters {
    /// Serves a host read: the buffered copy if there is one (a read hit), else the
    /// FTL's (a miss).
    #[inline]
    pub fn read(
        &mut self,
        be: &mut Backend<'_>,
        lpn: Lpn,
        buffered: Option<PageTag>,
    ) -> Option<PageTag> {
        match buffered {
            Some(tag) => {
                self.named.read_hits += 1;
                Some(tag)
            }
            None => {
                self.named.read_misses += 1;
                be.read(lpn)
            }
        }
    }

    /// Counts a group of `pages` handed to the FTL, `padded` of them padding.
    pub fn count_flush(&mut self, pages: u32, padded: u32) {
        self.named.flushes += 1;
        self.named.pages_flushed += pages as u64;
        self.padding_writes += padded as u64;
        self.padded_flushes += u64::from(padded > 0);
    }

    /// The named counters with the padding figures in `extra`.
    pub fn report(&self) -> BufferStats {
        let mut s = self.named.clone();
        s.extra
            .counter("padding_writes", "pages", self.padding_writes as f64);
        s.extra
            .counter("padded_flushes", "flushes", self.padded_flushes as f64);
        s
    }
}

/// How a write touched a buffered block (passed to [`BlockPolicy::touched`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touch {
    /// A page already buffered was overwritten.
    Hit,
    /// A page was added to a block that had buffered pages.
    Grow,
    /// The first page of a block entered the buffer (the block is on no list yet).
    New,
    /// A trim dropped a page; the block still holds others.
    Shrink,
}

/// The state every block-level buffer shares: the page table, the lists the policy
/// keeps its blocks on (node id = LBN), the flush scratch group and the counters.
pub struct BlockCore {
    /// Buffered pages.
    pub t: BlockPages,
    /// The policy's block lists.
    pub lists: Lists,
    /// Counters.
    pub stats: Counters,
    /// The list of cold blocks when the buffer shows itself to the FTL (BA-GC); `None`:
    /// no view.
    pub view_cold: Option<u32>,
    scratch: Vec<PageTag>,
}

impl BlockCore {
    /// An empty core with `lists` block lists.
    pub fn new(geo: &Geometry, capacity: u32, lists: u32) -> BlockCore {
        BlockCore {
            t: BlockPages::new(geo, capacity),
            lists: Lists::new(geo.logical_blocks(), lists),
            stats: Counters::default(),
            view_cold: None,
            scratch: Vec::with_capacity(geo.pages_per_block as usize),
        }
    }

    /// Flushes every dirty page of `lbn` in one group, padded with the block's missing
    /// pages (read through the FTL) when `pad`, then drops the whole block from the
    /// buffer (its clean pages need no write). Returns the pages handed to the FTL.
    pub fn flush_block(&mut self, be: &mut Backend<'_>, lbn: Lbn, pad: bool) -> u32 {
        self.scratch.clear();
        let first = lbn.0 * self.t.ppb();
        let mut padded = 0u32;
        for o in 0..self.t.block_len(lbn) {
            let lpn = Lpn(first + o);
            match self.t.is_dirty(lpn) {
                Some(true) => self.scratch.push(self.t.get(lpn).expect("buffered")),
                Some(false) if pad => {
                    // A clean copy is the data on flash: it completes the block without
                    // a read.
                    self.scratch.push(self.t.get(lpn).expect("buffered"));
                    padded += 1;
                }
                Some(false) => {}
                None if pad => {
                    if let Some(tag) = read_for_padding(be, lpn) {
                        self.stats.named.padding_reads += 1;
                        self.scratch.push(tag);
                        padded += 1;
                    }
                }
                None => {}
            }
        }
        let n = self.scratch.len() as u32;
        if n > 0 {
            let mut view = self.view_cold.map(|cold| CoreView {
                t: &mut self.t,
                lists: &self.lists,
                cold,
            });
            let view = view.as_mut().map(|v| v as &mut dyn BufferView);
            write_group(be, &self.scratch, padded, view);
            self.stats.count_flush(n, padded);
        }
        for o in 0..self.t.block_len(lbn) {
            self.t.remove(Lpn(first + o));
        }
        self.lists.remove(lbn.0);
        n
    }

    /// Table, lists and their agreement: a block is on a list exactly when it holds
    /// pages.
    pub fn check(&self) -> Result<(), String> {
        self.t.check()?;
        self.lists.check()?;
        let blocks = self.t.pages.len() as u32;
        for b in 0..blocks {
            let listed = self.lists.contains(b);
            let held = self.t.pages(Lbn(b)) > 0;
            if listed != held {
                return Err(format!(
                    "lbn{b}: {} pages buffered but {}on a list",
                    self.t.pages(Lbn(b)),
                    if listed { "" } else { "not " }
                ));
            }
        }
        Ok(())
    }
}

/// A block-level replacement policy: where blocks sit on the core's lists, which block
/// leaves, and how it is flushed.
pub trait BlockPolicy {
    /// A write (or trim) changed block `lbn`; place it on a list.
    fn touched(&mut self, core: &mut BlockCore, lbn: Lbn, how: Touch);

    /// A host write group to `lbn` is fully stored (e.g. LRU compensation).
    fn group_done(&mut self, _core: &mut BlockCore, _lbn: Lbn) {}

    /// Frees buffer space: flushes at least one block (through
    /// [`BlockCore::flush_block`]). Called only when the buffer holds pages.
    fn evict(&mut self, core: &mut BlockCore, be: &mut Backend<'_>);

    /// Policy-specific invariants.
    fn check(&self, _core: &BlockCore) -> Result<(), String> {
        Ok(())
    }
}

/// A block-level write buffer: the shared core driven by a [`BlockPolicy`].
pub struct BlockBuffer<P> {
    core: BlockCore,
    policy: P,
    geo: Geometry,
}

impl<P: BlockPolicy> BlockBuffer<P> {
    /// A buffer of `capacity` pages with `lists` block lists.
    pub fn new(geo: &Geometry, capacity: u32, lists: u32, policy: P) -> Self {
        BlockBuffer {
            core: BlockCore::new(geo, capacity, lists),
            policy,
            geo: geo.clone(),
        }
    }

    /// The shared state (for tests and inspection).
    pub fn core(&self) -> &BlockCore {
        &self.core
    }

    /// The shared state, mutably (for a buffer-aware FTL's merge: BA-BM marks pages
    /// clean).
    pub fn core_mut(&mut self) -> &mut BlockCore {
        &mut self.core
    }

    /// The policy (for tests and inspection).
    pub fn policy(&self) -> &P {
        &self.policy
    }

    fn evict(&mut self, be: &mut Backend<'_>) {
        let before = self.core.t.used();
        assert!(before > 0, "evict from an empty buffer");
        self.policy.evict(&mut self.core, be);
        assert!(
            self.core.t.used() < before,
            "eviction freed no buffer space"
        );
    }
}

impl<P: BlockPolicy> Buffer for BlockBuffer<P> {
    fn write(&mut self, be: &mut Backend<'_>, pages: &[PageWrite]) {
        let Some(first) = pages.first() else {
            return;
        };
        let lbn = self.geo.lbn_of(first.lpn);
        for &tag in pages {
            debug_assert_eq!(self.geo.lbn_of(tag.lpn), lbn);
            let how = if self.core.t.get(tag.lpn).is_some() {
                self.core.stats.named.write_hits += 1;
                Touch::Hit
            } else {
                while self.core.t.is_full() {
                    self.evict(be);
                }
                self.core.stats.named.write_misses += 1;
                if self.core.lists.contains(lbn.0) {
                    Touch::Grow
                } else {
                    Touch::New
                }
            };
            self.core.t.put(tag);
            self.policy.touched(&mut self.core, lbn, how);
        }
        self.policy.group_done(&mut self.core, lbn);
    }

    fn read(&mut self, be: &mut Backend<'_>, lpn: Lpn) -> Option<PageTag> {
        self.core.stats.read(be, lpn, self.core.t.get(lpn))
    }

    fn trim(&mut self, be: &mut Backend<'_>, lpn: Lpn) {
        if self.core.t.remove(lpn).is_some() {
            let lbn = self.geo.lbn_of(lpn);
            if self.core.t.pages(lbn) == 0 {
                self.core.lists.remove(lbn.0);
            } else {
                self.policy.touched(&mut self.core, lbn, Touch::Shrink);
            }
        }
        be.trim(lpn);
    }

    fn flush(&mut self, be: &mut Backend<'_>) {
        while self.core.t.used() > 0 {
            self.evict(be);
        }
        be.ftl.flush(be.flash);
    }

    fn volatile_pages(&self, out: &mut Vec<Lpn>) {
        self.core.t.dirty_lpns(out);
    }

    fn check(&self) -> Result<(), String> {
        self.core.check()?;
        self.policy.check(&self.core)
    }

    fn stats(&self) -> BufferStats {
        self.core.stats.report()
    }

    fn reset_stats(&mut self) {
        self.core.stats = Counters::default();
    }
}

/// Test rig: a small geometry, its flash and a recording FTL.
#[cfg(test)]
pub mod testutil {
    use ftlab_core::buffer::Backend;
    use ftlab_core::flash::Flash;
    use ftlab_core::ftl::{Answer, Ftl, FtlStats, Query};
    use ftlab_core::geometry::{Geometry, GeometryBuilder};
    use ftlab_core::options::{from_pairs, Options};
    use ftlab_core::{Lpn, PageTag, PageWrite};
    use std::collections::BTreeMap;

    /// An FTL that records the groups and padding reads it sees and keeps the last tag
    /// of every LPN, with no flash operations; answers queries from a table.
    #[derive(Default)]
    pub struct Recorder {
        /// LPNs of each group written, in order.
        pub groups: Vec<Vec<u32>>,
        /// LPNs read.
        pub reads: Vec<u32>,
        /// Last tag written per LPN.
        pub store: BTreeMap<u32, PageTag>,
        /// Query answers (unlisted: not applicable).
        pub answers: Vec<(Query, Answer)>,
    }

    impl Ftl for Recorder {
        fn write(&mut self, _: &mut Flash, pages: &[PageWrite]) {
            self.groups.push(pages.iter().map(|t| t.lpn.0).collect());
            for t in pages {
                self.store.insert(t.lpn.0, *t);
            }
        }
        fn read(&mut self, _: &mut Flash, lpn: Lpn) -> Option<PageTag> {
            self.reads.push(lpn.0);
            self.store.get(&lpn.0).copied()
        }
        fn trim(&mut self, _: &mut Flash, lpn: Lpn) {
            self.store.remove(&lpn.0);
        }
        fn stats(&self) -> FtlStats {
            FtlStats::default()
        }
        fn reset_stats(&mut self) {}
        fn mapping_bytes(&self) -> u64 {
            0
        }
        fn query(&self, q: Query) -> Answer {
            self.answers
                .iter()
                .find(|(k, _)| *k == q)
                .map_or(Answer::NotApplicable, |(_, a)| *a)
        }
    }

    /// Geometry (2 KiB pages), flash and recorder.
    pub struct Rig {
        /// Geometry.
        pub geo: Geometry,
        /// Flash (untouched by the recorder).
        pub flash: Flash,
        ftl: Recorder,
    }

    impl Rig {
        /// `ppb` pages per block, `blocks` logical blocks.
        pub fn new(ppb: u32, blocks: u32) -> Rig {
            let geo = GeometryBuilder {
                page_size: 2048,
                pages_per_block: ppb,
                spare_bytes: 64,
                logical_bytes: 2048 * (ppb * blocks) as u64,
                op_percent: 50.0,
                channels: 1,
                dies_per_channel: 1,
                planes_per_die: 1,
                min_spare_blocks: 0,
            }
            .build()
            .unwrap();
            let flash = Flash::new(&geo);
            Rig {
                geo,
                flash,
                ftl: Recorder::default(),
            }
        }

        /// The backend over the recorder.
        pub fn be(&mut self) -> Backend<'_> {
            Backend {
                ftl: &mut self.ftl,
                flash: &mut self.flash,
            }
        }

        /// The recorder.
        pub fn ftl(&self) -> &Recorder {
            &self.ftl
        }

        /// The recorder, mutably (to set answers or preload data).
        pub fn ftl_mut(&mut self) -> &mut Recorder {
            &mut self.ftl
        }
    }

    /// Options of scheme `id` from key/value pairs, resolved as the registry does
    /// ([`from_pairs`]); panics if they are refused.
    pub fn opts<O: Options>(id: &str, kv: &[(&str, &str)]) -> O {
        from_pairs(id, kv).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Version-1 tags for LPNs.
    pub fn tags(lpns: &[u32]) -> Vec<PageTag> {
        lpns.iter()
            .map(|&l| PageTag {
                lpn: Lpn(l),
                version: 1,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_pages_count_dirty_and_clean() {
        let geo = ftlab_core::geometry::GeometryBuilder {
            page_size: 2048,
            pages_per_block: 4,
            spare_bytes: 64,
            logical_bytes: 2048 * 10,
            op_percent: 50.0,
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
            min_spare_blocks: 0,
        }
        .build()
        .unwrap();
        let mut t = BlockPages::new(&geo, 3);
        let tag = |l, v| PageTag {
            lpn: Lpn(l),
            version: v,
        };
        assert!(!t.put(tag(9, 1)));
        assert_eq!(t.block_len(Lbn(2)), 2, "the last block is short");
        assert!(!t.put(tag(8, 1)));
        assert!(t.is_complete(Lbn(2)));
        assert_eq!(t.make_clean(Lpn(8)), Some(tag(8, 1)));
        assert_eq!(t.dirty(Lbn(2)), 1);
        assert_eq!(t.first_dirty_offset(Lbn(2)), Some(1));
        assert!(
            t.put(tag(8, 2)),
            "rewriting a clean page is a hit and dirties it"
        );
        assert_eq!(t.dirty(Lbn(2)), 2);
        assert_eq!(t.get(Lpn(8)), Some(tag(8, 2)));
        assert!(!t.put(tag(0, 1)));
        assert!(t.is_full());
        let mut dirty = Vec::new();
        t.dirty_lpns(&mut dirty);
        assert_eq!(dirty, [Lpn(0), Lpn(8), Lpn(9)]);
        assert_eq!(t.remove(Lpn(9)), Some((tag(9, 1), true)));
        assert_eq!(t.remove(Lpn(9)), None);
        t.check().unwrap();
        assert_eq!(t.used(), 2);
    }
}
