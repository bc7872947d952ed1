//! Snapshots and power-loss recovery of Superblock FTL (superblock-ftl.txt §4.4).
//!
//! "When Superblock FTL is normally shut down, a full snapshot is written [...]: PGD, the
//! free block list, the U-block list, and the valid page counter for each block. [...]
//! Whenever a block is allocated, we take a partial snapshot, which contains the address
//! of the allocated block and the list of written pages [...]. After writing one or two
//! blocks of the partial snapshots, Superblock FTL takes a full snapshot. [...] During the
//! system start-up, Superblock FTL rebuilds the up-to-date data structures from
//! snapshots [...]. Finally, Superblock FTL scans those pages in U-blocks written after
//! the last partial snapshot, updating PGD [...] with the information stored in spare
//! areas."
//!
//! Choices the paper leaves open (it "briefly outline[s]" the scheme):
//! - The snapshot area is two halves of `H` fixed blocks at the start of the device (the
//!   paper indirects the locations through fixed blocks; we write the log there directly,
//!   so wear concentrates on those blocks). A half holds one full snapshot followed by
//!   partial snapshots, one per page; when a half is full, the other half is erased and a
//!   new full snapshot starts it. `H` is the full snapshot's pages rounded up to blocks,
//!   plus one block of partial snapshots ("one or two blocks", §4.4).
//! - The first page of each half carries a sequence number in its spare area; start-up
//!   reads both and replays the newer half.
//! - A partial snapshot is a list of events, 12 bytes each: page written (LPN and new
//!   address; the old address is not needed because valid counts are not replayed, see
//!   below), block allocated, block detached, block released to the free or reserved
//!   list, logical block emptied by trims, D-block marking, abandoned U-block. Events are
//!   buffered in RAM; a page is written when it fills, when a block is allocated (the
//!   paper's trigger), when a logical block loses its last page (otherwise its stale PGD
//!   entry would come back), and on a host flush.
//! - After the replay, the pages written since the last partial snapshot can only be in
//!   the superblocks' current U-blocks (any new block would have forced a partial
//!   snapshot), so those are scanned from the last recorded write position, one spare read
//!   per page. A block released after the last partial snapshot is found erased; reading
//!   an erased page's spare returns all ones, which the Flash model refuses to do, so these
//!   probes (one per block a superblock lists) are counted in the recovery report, not as
//!   flash operations.
//! - Valid-page counters are part of the full snapshot's size (2 bytes per block), but
//!   the simulator keeps them in its Flash model, so recovery does not replay them; the
//!   deep check after recovery verifies that the map rebuilt from the PGD maps exactly the
//!   valid pages.
//! - Not recovered (policy only): the LRU order of superblocks (rebuilt in superblock
//!   order) and the map cache (empty).
//! - A power loss is simulated between host requests; the flash operations of one request
//!   are atomic in the simulator.

use super::cache::NONE;
use super::{SpareStore, SuperblockFtl, OWN_FREE, OWN_RESERVED};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::geometry::Geometry;
use ftlab_core::nand::Latencies;
use ftlab_core::options::{SchemeError, SchemeOptions};
use ftlab_core::{Lpn, PageTag, Pbn, Ppn};

/// Spare tag LPN of snapshot pages (beyond any logical page).
pub(super) const SNAP_LPN: u32 = u32::MAX - 1;
/// Owner code of the snapshot area's blocks.
pub(super) const OWN_SNAPSHOT: u32 = u32::MAX - 2;
/// Bytes of one partial-snapshot record.
const RECORD_BYTES: u32 = 12;
/// Bytes of a snapshot page header (sequence number, counts).
const HEADER_BYTES: u32 = 16;

/// One state change of the FTL, as a partial snapshot records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// A page of `lpn` was programmed at `ppn`.
    Write { lpn: u32, ppn: u32 },
    /// Block `pbn` was taken from the free or reserved list as a U-block of `sb`.
    Alloc { sb: u32, pbn: u32 },
    /// Block `pbn` left superblock `sb` (it is erased and released later).
    Detach { sb: u32, pbn: u32 },
    /// Block `pbn` was erased and put on the reserved (or free) list.
    Release { pbn: u32, to_reserved: bool },
    /// Logical block `lbn` holds no page any more.
    LbnEmpty { lbn: u32 },
    /// Every block of `sb` became a D-block (and cold).
    MarkD { sb: u32, cold: bool },
    /// The current U-block of `sb` was abandoned (Fig. 11 line 5).
    Abandon { sb: u32 },
}

/// The RAM state a full snapshot holds.
#[derive(Clone, Debug, Default)]
struct Full {
    pgd: Vec<u32>,
    owner: Vec<u32>,
    flags: Vec<u8>,
    sb_blocks: Vec<u32>,
    sb_len: Vec<u32>,
    frontier: Vec<u32>,
    frontier_wp: Vec<u32>,
    free: Vec<u32>,
    reserved: Vec<u32>,
}

/// One half of the snapshot area as written on flash.
#[derive(Clone, Debug)]
struct Half {
    blocks: Vec<Pbn>,
    seq: u32,
    full: Full,
    /// Pages programmed: the full snapshot, then one per partial snapshot.
    pages: u32,
    events: Vec<Event>,
    /// End (exclusive) of each partial page's events in `events`.
    page_end: Vec<u32>,
}

/// The snapshot area's contents: what survives a power loss besides the spare areas.
#[derive(Clone, Debug)]
pub struct SnapshotArea {
    halves: [Half; 2],
}

/// What is on flash besides the data: the PMD/PT spare contents of every page and the
/// snapshot area. It is all that [`SuperblockFtl::recover`] gets besides the [`Flash`].
#[derive(Clone, Debug)]
pub struct SuperblockImage {
    pub(super) spare: SpareStore,
    pub(super) area: Option<SnapshotArea>,
}

/// Figures of the last recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Snapshot pages read (full snapshot and partial snapshots).
    pub snapshot_pages_read: u64,
    /// Partial snapshots replayed.
    pub partial_snapshots: u64,
    /// Spare areas read (half headers and the scan of current U-blocks).
    pub spare_reads: u64,
    /// Pages found by the scan (written after the last partial snapshot).
    pub scanned_pages: u64,
    /// Erased-block probes of listed blocks (not Flash operations; see module docs).
    pub probes: u64,
    /// Blocks found erased that the snapshots still listed, put back on a free list.
    pub lost_releases: u64,
}

/// The RAM side of the snapshot log.
#[derive(Clone, Debug)]
pub(super) struct SnapLog {
    area: SnapshotArea,
    current: usize,
    pending: Vec<Event>,
    full_pages: u32,
    pages_per_half: u32,
    records_per_page: usize,
    next_seq: u32,
    pub(super) pages_written: u64,
    pub(super) full_snapshots: u64,
    pub(super) partial_snapshots: u64,
}

/// Size of a full snapshot in pages (PGD, block owners and flags, valid counters, free
/// and reserved lists, the superblocks' block lists; 4-byte entries).
pub(super) fn full_snapshot_pages(geo: &Geometry, superblocks: u32, max_blocks: u32) -> u32 {
    let bytes = HEADER_BYTES as u64
        + 4 * geo.logical_blocks() as u64
        + (4 + 1 + 2 + 4) * geo.blocks as u64
        + 4 * superblocks as u64 * (3 + max_blocks as u64);
    bytes.div_ceil(geo.page_size as u64) as u32
}

/// Blocks per half of the snapshot area.
pub(super) fn half_blocks(geo: &Geometry, full_pages: u32) -> u32 {
    full_pages.div_ceil(geo.pages_per_block) + 1
}

impl SnapLog {
    /// A log over blocks `first..first + 2 * h`.
    pub(super) fn new(geo: &Geometry, first: u32, h: u32, full_pages: u32) -> SnapLog {
        let records_per_page = ((geo.page_size - HEADER_BYTES) / RECORD_BYTES) as usize;
        let pages_per_half = h * geo.pages_per_block;
        let half = |k: u32| Half {
            blocks: (first + k * h..first + (k + 1) * h).map(Pbn).collect(),
            seq: 0,
            full: Full::default(),
            pages: 0,
            events: Vec::with_capacity(pages_per_half as usize * records_per_page),
            page_end: Vec::with_capacity(pages_per_half as usize),
        };
        SnapLog {
            area: SnapshotArea {
                halves: [half(0), half(1)],
            },
            current: 0,
            pending: Vec::with_capacity(4 * records_per_page),
            full_pages,
            pages_per_half,
            records_per_page,
            next_seq: 1,
            pages_written: 0,
            full_snapshots: 0,
            partial_snapshots: 0,
        }
    }

    /// Blocks of the whole area.
    pub(super) fn blocks(&self) -> impl Iterator<Item = Pbn> + '_ {
        self.area
            .halves
            .iter()
            .flat_map(|h| h.blocks.iter().copied())
    }

    /// Snapshot pages currently holding data (valid on flash).
    pub(super) fn valid_pages(&self) -> u64 {
        self.area.halves.iter().map(|h| h.pages as u64).sum()
    }
}

impl SuperblockFtl {
    /// Records an event for the next partial snapshot.
    #[inline]
    pub(super) fn note(&mut self, ev: Event) {
        if let Some(log) = &mut self.snap {
            log.pending.push(ev);
        }
    }

    /// Records an event and writes the partial snapshot now (block allocation, emptied
    /// logical block).
    pub(super) fn note_now(&mut self, flash: &mut Flash, ev: Event) {
        if self.snap.is_some() {
            self.note(ev);
            self.snap_flush(flash);
        }
    }

    /// Writes the pending events if at least a page of them has accumulated.
    pub(super) fn snap_tick(&mut self, flash: &mut Flash) {
        if let Some(log) = &self.snap {
            if log.pending.len() >= log.records_per_page {
                self.snap_flush(flash);
            }
        }
    }

    /// Writes every pending event as partial snapshots (a full snapshot when the current
    /// half is full or was never started).
    pub(super) fn snap_flush(&mut self, flash: &mut Flash) {
        let Some(mut log) = self.snap.take() else {
            return;
        };
        if log.area.halves[log.current].seq == 0 {
            let target = log.current;
            self.write_full(flash, &mut log, target);
        }
        while !log.pending.is_empty() {
            let cur = log.current;
            if log.area.halves[cur].pages == log.pages_per_half {
                self.write_full(flash, &mut log, 1 - cur);
                break;
            }
            let n = log.pending.len().min(log.records_per_page);
            let ppb = self.geo.pages_per_block;
            let seq = log.area.halves[cur].seq;
            let half = &mut log.area.halves[cur];
            let ppn = self
                .geo
                .ppn(half.blocks[(half.pages / ppb) as usize], half.pages % ppb);
            flash.program(ppn, snap_tag(seq), Cause::Map);
            half.events.extend(log.pending.drain(..n));
            half.page_end.push(half.events.len() as u32);
            half.pages += 1;
            log.pages_written += 1;
            log.partial_snapshots += 1;
        }
        self.snap = Some(log);
    }

    /// Writes a full snapshot of the current state into half `target` (erasing it first)
    /// and makes it current; pending events are covered by it.
    fn write_full(&mut self, flash: &mut Flash, log: &mut SnapLog, target: usize) {
        let ppb = self.geo.pages_per_block;
        let half = &mut log.area.halves[target];
        for &b in &half.blocks {
            for off in 0..flash.write_ptr(b) {
                flash.invalidate(self.geo.ppn(b, off));
            }
            if !flash.is_erased(b) {
                flash.erase(b, Cause::Map);
            }
        }
        half.seq = log.next_seq;
        log.next_seq += 1;
        self.capture(&mut half.full, flash);
        half.events.clear();
        half.page_end.clear();
        half.pages = 0;
        for k in 0..log.full_pages {
            let ppn = self.geo.ppn(half.blocks[(k / ppb) as usize], k % ppb);
            flash.program(ppn, snap_tag(half.seq), Cause::Map);
            half.pages += 1;
        }
        log.pages_written += log.full_pages as u64;
        log.full_snapshots += 1;
        log.pending.clear();
        log.current = target;
    }

    /// Copies the state a full snapshot holds into `f` (buffers reused).
    fn capture(&self, f: &mut Full, flash: &Flash) {
        let copy = |dst: &mut Vec<u32>, src: &[u32]| {
            dst.clear();
            dst.extend_from_slice(src);
        };
        copy(&mut f.pgd, &self.pgd);
        copy(&mut f.owner, &self.owner);
        f.flags.clear();
        f.flags.extend(
            self.is_u
                .iter()
                .zip(&self.hot)
                .map(|(&u, &h)| u as u8 | (h as u8) << 1),
        );
        copy(&mut f.sb_blocks, &self.sb_blocks);
        copy(&mut f.sb_len, &self.sb_len);
        copy(&mut f.frontier, &self.frontier);
        f.frontier_wp.clear();
        f.frontier_wp.extend(self.frontier.iter().map(|&b| {
            if b == NONE {
                0
            } else {
                flash.write_ptr(Pbn(b))
            }
        }));
        f.free.clear();
        f.free.extend(self.free.iter().map(|b| b.0));
        f.reserved.clear();
        f.reserved.extend(self.reserved.iter().map(|b| b.0));
    }

    /// A normal shutdown: writes a full snapshot, so start-up needs no scan.
    pub fn shutdown(&mut self, flash: &mut Flash) {
        if let Some(mut log) = self.snap.take() {
            let target = if log.area.halves[log.current].seq == 0 {
                log.current
            } else {
                1 - log.current
            };
            self.write_full(flash, &mut log, target);
            self.snap = Some(log);
        }
    }

    /// What survives a power loss right now: the spare contents and the snapshot area
    /// (events still buffered in RAM are lost).
    pub fn image(&self) -> SuperblockImage {
        SuperblockImage {
            spare: self.spare.clone(),
            area: self.snap.as_ref().map(|l| l.area.clone()),
        }
    }

    /// A power loss: the RAM state is gone, the flash-resident contents stay.
    pub fn power_loss(self) -> SuperblockImage {
        SuperblockImage {
            spare: self.spare,
            area: self.snap.map(|l| l.area),
        }
    }

    /// The figures of the recovery that built this FTL, if it was recovered.
    pub fn recovery_report(&self) -> Option<RecoveryReport> {
        self.recovery
    }

    /// Start-up after a power loss (§4.4): rebuilds the PGD, block lists and free lists
    /// from the newer snapshot half, its partial snapshots and a scan of the current
    /// U-blocks, using only `flash` and `image`. The reads are counted as flash operations
    /// under [`Cause::Map`]. `opts` must be the options the FTL ran with.
    pub fn recover(
        geo: &Geometry,
        lat: Latencies,
        opts: &SchemeOptions,
        flash: &mut Flash,
        image: SuperblockImage,
    ) -> Result<SuperblockFtl, SchemeError> {
        let mut f = SuperblockFtl::new(geo, lat, opts)?;
        let (Some(mut log), Some(area)) = (f.snap.take(), image.area) else {
            return Err(opts.bad(
                "snapshots",
                "recovery needs the snapshot area: run and recover with snapshots = on",
            ));
        };
        f.spare = image.spare;
        log.area = area;
        let mut rep = RecoveryReport::default();
        let mut newest: Option<(u32, usize)> = None;
        for h in 0..2 {
            let half = &log.area.halves[h];
            if half.seq == 0 || flash.write_ptr(half.blocks[0]) == 0 {
                continue;
            }
            rep.spare_reads += 1;
            let seq = flash
                .read_spare(f.geo.ppn(half.blocks[0], 0), Cause::Map)
                .version;
            if newest.is_none_or(|(s, _)| seq > s) {
                newest = Some((seq, h));
            }
        }
        let newest = newest.map(|(_, h)| h);
        if let Some(h) = newest {
            f.replay(flash, &log, h, &mut rep);
            log.current = h;
            log.next_seq = log.area.halves.iter().map(|x| x.seq).max().unwrap_or(0) + 1;
            f.snap = Some(log);
            f.scan_frontiers(flash, &mut rep);
            f.reclaim_lost_blocks(flash, &mut rep);
        } else {
            f.snap = Some(log);
        }
        f.recovery = Some(rep);
        Ok(f)
    }

    /// Restores the full snapshot of half `h` and replays its partial snapshots.
    fn replay(&mut self, flash: &mut Flash, log: &SnapLog, h: usize, rep: &mut RecoveryReport) {
        let half = &log.area.halves[h];
        let ppb = self.geo.pages_per_block;
        let geo = self.geo.clone();
        let page = |k: u32| geo.ppn(half.blocks[(k / ppb) as usize], k % ppb);
        for k in 0..log.full_pages {
            flash.read(page(k), Cause::Map);
            rep.snapshot_pages_read += 1;
        }
        self.restore(&half.full);
        let mut start = 0usize;
        for (k, &end) in half.page_end.iter().enumerate() {
            flash.read(page(log.full_pages + k as u32), Cause::Map);
            rep.snapshot_pages_read += 1;
            rep.partial_snapshots += 1;
            for &ev in &half.events[start..end as usize] {
                self.apply(ev);
            }
            start = end as usize;
        }
    }

    /// Loads the state of a full snapshot.
    fn restore(&mut self, full: &Full) {
        self.pgd.copy_from_slice(&full.pgd);
        self.owner.copy_from_slice(&full.owner);
        for (b, &fl) in full.flags.iter().enumerate() {
            self.is_u[b] = fl & 1 != 0;
            self.hot[b] = fl & 2 != 0;
        }
        self.sb_blocks.copy_from_slice(&full.sb_blocks);
        self.sb_len.copy_from_slice(&full.sb_len);
        self.frontier.copy_from_slice(&full.frontier);
        self.frontier_wp.copy_from_slice(&full.frontier_wp);
        self.free = full.free.iter().map(|&b| Pbn(b)).collect();
        self.reserved = full.reserved.iter().map(|&b| Pbn(b)).collect();
        self.rebuild_u_lists();
    }

    /// Recomputes U-block counts and the LRU list (in superblock order) from the flags.
    fn rebuild_u_lists(&mut self) {
        for sb in 0..self.superblocks {
            let nu = self
                .blocks_of(sb)
                .iter()
                .filter(|&&b| self.is_u[b as usize])
                .count() as u32;
            self.nu[sb as usize] = nu;
            self.lru.remove(sb);
            if nu > 0 {
                self.lru.touch(sb);
            }
        }
    }

    /// Takes `b` off the free or reserved list (wherever it is).
    fn unpool(&mut self, b: Pbn) {
        if let Some(i) = self.free.iter().position(|&x| x == b) {
            self.free.remove(i);
        } else if let Some(i) = self.reserved.iter().position(|&x| x == b) {
            self.reserved.remove(i);
        }
    }

    /// Replays one event.
    fn apply(&mut self, ev: Event) {
        match ev {
            Event::Write { lpn, ppn } => {
                let lbn = lpn / self.geo.pages_per_block;
                self.pgd[lbn as usize] = ppn;
                let b = self.geo.block_of(Ppn(ppn));
                let sb = lbn / self.cfg.n;
                if self.frontier[sb as usize] == b.0 {
                    let wp = &mut self.frontier_wp[sb as usize];
                    *wp = (*wp).max(self.geo.offset_of(Ppn(ppn)) + 1);
                }
            }
            Event::Alloc { sb, pbn } => {
                self.unpool(Pbn(pbn));
                self.attach(sb, Pbn(pbn), true);
                self.frontier[sb as usize] = pbn;
                self.frontier_wp[sb as usize] = 0;
            }
            Event::Detach { sb, pbn } => self.detach(sb, Pbn(pbn)),
            Event::Release { pbn, to_reserved } => {
                let sb = self.owner[pbn as usize];
                if sb < self.superblocks {
                    self.detach(sb, Pbn(pbn));
                }
                self.unpool(Pbn(pbn));
                if to_reserved {
                    self.owner[pbn as usize] = OWN_RESERVED;
                    self.reserved.push(Pbn(pbn));
                } else {
                    self.owner[pbn as usize] = OWN_FREE;
                    self.free.push_back(Pbn(pbn));
                }
            }
            Event::LbnEmpty { lbn } => self.pgd[lbn as usize] = NONE,
            Event::MarkD { sb, cold } => self.mark_all_d(sb, cold),
            Event::Abandon { sb } => self.frontier[sb as usize] = NONE,
        }
    }

    /// Reads the spares of pages written to current U-blocks after the last partial
    /// snapshot and points the PGD at them (§4.4's scan).
    fn scan_frontiers(&mut self, flash: &mut Flash, rep: &mut RecoveryReport) {
        for sb in 0..self.superblocks {
            let f = self.frontier[sb as usize];
            if f == NONE {
                continue;
            }
            for off in self.frontier_wp[sb as usize]..flash.write_ptr(Pbn(f)) {
                let ppn = self.geo.ppn(Pbn(f), off);
                let tag = flash.read_spare(ppn, Cause::Map);
                rep.spare_reads += 1;
                rep.scanned_pages += 1;
                debug_assert_eq!(self.split.split(tag.lpn.0).superblock, sb);
                self.pgd[(tag.lpn.0 / self.geo.pages_per_block) as usize] = ppn.0;
            }
        }
    }

    /// Blocks the snapshots still list but that were erased and released afterwards, and
    /// blocks detached before a snapshot and released after it, go back to a free list.
    fn reclaim_lost_blocks(&mut self, flash: &Flash, rep: &mut RecoveryReport) {
        for sb in 0..self.superblocks {
            let mut k = 0;
            while k < self.sb_len[sb as usize] as usize {
                let b = self.blocks_of(sb)[k];
                rep.probes += 1;
                let fresh = self.frontier[sb as usize] == b && self.frontier_wp[sb as usize] == 0;
                if flash.is_erased(Pbn(b)) && !fresh {
                    self.detach(sb, Pbn(b));
                    self.release(Pbn(b));
                    rep.lost_releases += 1;
                } else {
                    k += 1;
                }
            }
        }
        let mut pooled = vec![false; self.geo.blocks as usize];
        for b in self.free.iter().chain(&self.reserved) {
            pooled[b.idx()] = true;
        }
        for b in 0..self.geo.blocks {
            let o = self.owner[b as usize];
            if o < self.superblocks || o == OWN_SNAPSHOT || pooled[b as usize] {
                continue;
            }
            assert!(
                flash.is_erased(Pbn(b)),
                "recovery: pbn{b} belongs to nothing but holds data"
            );
            self.release(Pbn(b));
            rep.lost_releases += 1;
        }
        self.rebuild_u_lists();
    }
}

fn snap_tag(seq: u32) -> PageTag {
    PageTag {
        lpn: Lpn(SNAP_LPN),
        version: seq,
    }
}
