//! `lru`: a page-granular LRU write buffer, the buffer of superblock-ftl.txt §5.3 ("1 MB
//! buffer ... managed by LRU") and the page-level baseline of co-op-buffer-ftl.txt §3.
//!
//! Every buffered page has a slot; slots sit on one LRU list ([`ftlab_core::lru::Lru`],
//! node id = slot); an eviction flushes the least recently written page alone, as a
//! one-page group.
//!
//! Choices the papers leave open:
//! - Only host writes make a page recent; read hits are served without reordering
//!   (write buffer, co-op-buffer-ftl.txt §2.1).
//! - A host flush-cache command writes the pages out one by one from the LRU end, like
//!   evictions, so `lru` never groups pages (the group-forming buffers are the
//!   block-level ones).
//!
//! [`PageCore`] and [`PageBuffer`] are shared with `bpref`, which evicts from the same
//! page-level LRU by another [`PagePolicy`].

use crate::blocklru::{capacity_pages, read_for_padding, write_group, Counters, SizeOptions};
use ftlab_core::buffer::{Backend, Buffer, BufferStats};
use ftlab_core::geometry::Geometry;
use ftlab_core::lru::{Lru as LruList, NIL};
use ftlab_core::options::SchemeError;
use ftlab_core::{Lbn, Lpn, PageTag, PageWrite};

/// Scheme id in the registry and in errors.
pub const ID: &str = "lru";

/// Options of `lru`: its size alone.
pub type LruOptions = SizeOptions;

/// A page-level LRU store: slots sized from the capacity, an LPN -> slot table (4 bytes
/// per logical page) and per logical block the number of buffered pages.
pub struct PageCore {
    geo: Geometry,
    tags: Vec<PageTag>,
    lru: LruList,
    free: Vec<u32>,
    lpn_slot: Vec<u32>,
    block_pages: Vec<u32>,
    /// Counters.
    pub stats: Counters,
    scratch: Vec<PageTag>,
}

impl PageCore {
    /// An empty store of `capacity` pages (never more slots than logical pages).
    pub fn new(geo: &Geometry, capacity: u32) -> PageCore {
        let slots = capacity.min(geo.logical_pages);
        PageCore {
            geo: geo.clone(),
            tags: vec![PageTag::default(); slots as usize],
            lru: LruList::new(slots),
            free: (0..slots).rev().collect(),
            lpn_slot: vec![NIL; geo.logical_pages as usize],
            block_pages: vec![0; geo.logical_blocks() as usize],
            stats: Counters::default(),
            scratch: Vec::with_capacity(geo.pages_per_block as usize),
        }
    }

    /// The geometry.
    pub fn geo(&self) -> &Geometry {
        &self.geo
    }

    /// Pages buffered.
    #[inline]
    pub fn used(&self) -> u32 {
        self.tags.len() as u32 - self.free.len() as u32
    }

    /// Buffered pages of a logical block.
    #[inline]
    pub fn block_pages(&self, lbn: Lbn) -> u32 {
        self.block_pages[lbn.idx()]
    }

    /// The buffered copy of a page.
    #[inline]
    pub fn get(&self, lpn: Lpn) -> Option<PageTag> {
        let s = self.lpn_slot[lpn.idx()];
        (s != NIL).then(|| self.tags[s as usize])
    }

    /// The least recently written page.
    #[inline]
    pub fn lru_page(&self) -> Option<Lpn> {
        self.lru.back().map(|s| self.tags[s as usize].lpn)
    }

    /// The page written right after `lpn` (towards the MRU end).
    #[inline]
    pub fn newer(&self, lpn: Lpn) -> Option<Lpn> {
        let s = self.lpn_slot[lpn.idx()];
        debug_assert!(s != NIL);
        self.lru.newer(s).map(|n| self.tags[n as usize].lpn)
    }

    /// Stores a host write at the MRU end; evicts through `evict` while no slot is free.
    /// Returns whether it was a hit.
    pub fn write_page(
        &mut self,
        be: &mut Backend<'_>,
        tag: PageTag,
        evict: &mut dyn FnMut(&mut PageCore, &mut Backend<'_>),
    ) -> bool {
        let s = self.lpn_slot[tag.lpn.idx()];
        if s != NIL {
            self.tags[s as usize] = tag;
            self.lru.touch(s);
            self.stats.named.write_hits += 1;
            return true;
        }
        while self.free.is_empty() {
            let before = self.used();
            evict(self, be);
            assert!(self.used() < before, "eviction freed no buffer slot");
        }
        let s = self.free.pop().expect("a slot is free");
        self.tags[s as usize] = tag;
        self.lpn_slot[tag.lpn.idx()] = s;
        self.block_pages[self.geo.lbn_of(tag.lpn).idx()] += 1;
        self.lru.push_front(s);
        self.stats.named.write_misses += 1;
        false
    }

    /// Drops a buffered page; returns its tag.
    pub fn remove(&mut self, lpn: Lpn) -> Option<PageTag> {
        let s = self.lpn_slot[lpn.idx()];
        if s == NIL {
            return None;
        }
        self.lru.remove(s);
        self.lpn_slot[lpn.idx()] = NIL;
        self.block_pages[self.geo.lbn_of(lpn).idx()] -= 1;
        self.free.push(s);
        Some(self.tags[s as usize])
    }

    /// Flushes one buffered page alone.
    pub fn flush_page(&mut self, be: &mut Backend<'_>, lpn: Lpn) {
        let tag = self.remove(lpn).expect("flushing a buffered page");
        write_group(be, &[tag], 0, None);
        self.stats.count_flush(1, 0);
    }

    /// Flushes every buffered page of `lbn` in one group, padded with the block's other
    /// pages read through the FTL.
    pub fn flush_block_padded(&mut self, be: &mut Backend<'_>, lbn: Lbn) {
        let ppb = self.geo.pages_per_block;
        let first = lbn.0 * ppb;
        let end = (first + ppb).min(self.geo.logical_pages);
        self.scratch.clear();
        let mut padded = 0u32;
        for l in first..end {
            if let Some(tag) = self.remove(Lpn(l)) {
                self.scratch.push(tag);
            } else if let Some(tag) = read_for_padding(be, Lpn(l)) {
                self.stats.named.padding_reads += 1;
                self.scratch.push(tag);
                padded += 1;
            }
        }
        write_group(be, &self.scratch, padded, None);
        let pages = self.scratch.len() as u32;
        self.stats.count_flush(pages, padded);
    }

    /// Serves a read from the buffer or the FTL.
    pub fn read(&mut self, be: &mut Backend<'_>, lpn: Lpn) -> Option<PageTag> {
        let buffered = self.get(lpn);
        self.stats.read(be, lpn, buffered)
    }

    /// Appends every buffered page (all are dirty: a write buffer).
    pub fn volatile_pages(&self, out: &mut Vec<Lpn>) {
        for s in self.lru.iter().rev() {
            out.push(self.tags[s as usize].lpn);
        }
    }

    /// Slots, LPN table, block counts and the LRU list agree.
    pub fn check(&self) -> Result<(), String> {
        self.lru.check()?;
        let mut per_block = vec![0u32; self.block_pages.len()];
        let mut mapped = 0u32;
        for (l, &s) in self.lpn_slot.iter().enumerate() {
            if s == NIL {
                continue;
            }
            mapped += 1;
            if self.tags[s as usize].lpn.idx() != l || !self.lru.contains(s) {
                return Err(format!(
                    "lpn{l} -> slot {s} holding {:?}",
                    self.tags[s as usize]
                ));
            }
            per_block[l / self.geo.pages_per_block as usize] += 1;
        }
        if mapped != self.used() || mapped != self.lru.len() {
            return Err(format!(
                "{mapped} pages mapped, {} slots used, {} listed",
                self.used(),
                self.lru.len()
            ));
        }
        if per_block != self.block_pages {
            return Err("per-block page counts disagree with the table".into());
        }
        Ok(())
    }
}

/// How a page-level buffer frees space.
pub trait PagePolicy {
    /// Flushes at least one page through the core. Called only when it holds pages.
    fn evict(&mut self, core: &mut PageCore, be: &mut Backend<'_>);
}

/// A page-level write buffer: the shared [`PageCore`] driven by a [`PagePolicy`] (`lru`
/// and `bpref`).
pub struct PageBuffer<P> {
    core: PageCore,
    policy: P,
}

impl<P: PagePolicy> PageBuffer<P> {
    /// An empty buffer of `capacity` pages.
    pub fn new(geo: &Geometry, capacity: u32, policy: P) -> Self {
        PageBuffer {
            core: PageCore::new(geo, capacity),
            policy,
        }
    }
}

impl<P: PagePolicy> Buffer for PageBuffer<P> {
    fn write(&mut self, be: &mut Backend<'_>, pages: &[PageWrite]) {
        let policy = &mut self.policy;
        for &tag in pages {
            self.core
                .write_page(be, tag, &mut |core, be| policy.evict(core, be));
        }
    }

    fn read(&mut self, be: &mut Backend<'_>, lpn: Lpn) -> Option<PageTag> {
        self.core.read(be, lpn)
    }

    fn trim(&mut self, be: &mut Backend<'_>, lpn: Lpn) {
        self.core.remove(lpn);
        be.trim(lpn);
    }

    fn flush(&mut self, be: &mut Backend<'_>) {
        while self.core.used() > 0 {
            self.policy.evict(&mut self.core, be);
        }
        be.ftl.flush(be.flash);
    }

    fn volatile_pages(&self, out: &mut Vec<Lpn>) {
        self.core.volatile_pages(out);
    }

    fn check(&self) -> Result<(), String> {
        self.core.check()
    }

    fn stats(&self) -> BufferStats {
        self.core.stats.report()
    }

    fn reset_stats(&mut self) {
        self.core.stats = Counters::default();
    }
}

/// `lru`'s policy: the least recently written page leaves alone.
#[derive(Debug)]
pub struct LruPolicy;

impl PagePolicy for LruPolicy {
    fn evict(&mut self, core: &mut PageCore, be: &mut Backend<'_>) {
        let lpn = core.lru_page().expect("a full buffer has an LRU page");
        core.flush_page(be, lpn);
    }
}

/// The `lru` buffer.
pub type Lru = PageBuffer<LruPolicy>;

/// Builds `lru`.
pub fn new(geo: &Geometry, opts: &LruOptions) -> Result<Lru, SchemeError> {
    Ok(PageBuffer::new(
        geo,
        capacity_pages(ID, geo, opts.size)?,
        LruPolicy,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocklru::testutil::{opts, tags, Rig};
    use ftlab_core::options::from_pairs;

    #[test]
    fn evicts_the_least_recently_written_page_alone() {
        let mut rig = Rig::new(4, 8);
        let mut b = new(&rig.geo, &opts(ID, &[("size", "6KiB")])).unwrap();
        b.write(&mut rig.be(), &tags(&[0, 1]));
        b.write(&mut rig.be(), &tags(&[5]));
        b.write(&mut rig.be(), &tags(&[0])); // hit: 0 becomes the most recent
        assert_eq!(b.read(&mut rig.be(), Lpn(1)).map(|t| t.lpn), Some(Lpn(1)));
        b.write(&mut rig.be(), &tags(&[8, 9]));
        assert_eq!(rig.ftl().groups, [vec![1], vec![5]]);
        let s = b.stats();
        assert_eq!((s.write_hits, s.write_misses, s.read_hits), (1, 5, 1));
        let mut lost = Vec::new();
        b.volatile_pages(&mut lost);
        assert_eq!(lost, [Lpn(0), Lpn(8), Lpn(9)]);
        b.trim(&mut rig.be(), Lpn(0));
        b.flush(&mut rig.be());
        assert_eq!(rig.ftl().groups[2..], [vec![8], vec![9]]);
        b.check().unwrap();
    }

    #[test]
    fn a_buffer_larger_than_the_device_never_evicts() {
        let mut rig = Rig::new(4, 2);
        let mut b = new(&rig.geo, &opts(ID, &[("size", "1GiB")])).unwrap();
        for l in 0..8 {
            b.write(&mut rig.be(), &tags(&[l]));
        }
        assert!(rig.ftl().groups.is_empty());
        b.check().unwrap();
    }

    #[test]
    fn a_size_below_one_page_is_refused_naming_the_option() {
        let rig = Rig::new(4, 2);
        let e = new(&rig.geo, &opts(ID, &[("size", "1KiB")])).err().unwrap();
        assert!(e.to_string().contains("lru: option `size` = `1KiB`"), "{e}");
        let e = from_pairs::<LruOptions>(ID, &[("size", "lots")]).unwrap_err();
        assert!(e.to_string().contains("`size` = `lots`"), "{e}");
        let e = from_pairs::<LruOptions>(ID, &[("sise", "1MiB")]).unwrap_err();
        assert!(e.to_string().contains("unknown option `sise`"), "{e}");
    }
}
