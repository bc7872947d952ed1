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
//!   reads both and replays the newer half. Snapshot contents are the pages' data areas
//!   ([`Flash::program_payload`]); the PMD and PT of data pages are their spare words
//!   ([`Flash::program_with_spare`]), so recovery needs nothing but the [`Flash`].
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
//! - Valid-page counters are written in the full snapshot (2 bytes per block, as §4.4
//!   lists them) but not replayed: the simulator's Flash needs every live page re-marked
//!   after a power loss, so start-up walks every logical block's PMD/PT chain from the
//!   recovered PGD once and marks the pages it maps. Those reads are not charged: the
//!   paper restores the counters from the snapshot and reads a chain only when a lookup or
//!   a merge needs it (which is charged then). Snapshot pages of both halves stay valid.
//! - Not recovered (policy only): the LRU order of superblocks (rebuilt in superblock
//!   order) and the map cache (empty).
//! - Recovery ends with a full snapshot into the other half: what the scan and the probes
//!   rebuilt is in no snapshot yet, and a second power loss would otherwise replay the old
//!   snapshot with newer partial snapshots on top and miss the scanned pages.
//! - Recovery reads are counted under [`Cause::Recovery`]. With `snapshots = off` there
//!   is no way to find the newest PMD of a logical block (no global write order on
//!   flash), and recovery reports itself unsupported.
//! - Torn operations (issue 25 item 3: a power cut inside a program, an erase or a
//!   copy, anywhere in a request or in a recovery). A torn page reads as uncorrectable,
//!   with no spare words and no data. §4.4 rebuilds from "the last" snapshot and scans
//!   "those pages in U-blocks written after the last partial snapshot"; it does not say
//!   what a snapshot cut half way is, so: a half whose first page is torn or unwritten,
//!   or whose full snapshot is short or holds a torn page, is not a snapshot (its
//!   erase or its full snapshot was cut, and the other half holds the last whole one:
//!   a full snapshot goes to the half not in use); a torn partial snapshot is skipped,
//!   its events lost as if still pending in RAM, which the scan and the probes cover
//!   as they cover any loss between two partial snapshots. The scan skips torn pages
//!   (it used one's tag as an LPN). Three orderings make every cut leave the log
//!   consistent with flash: a merge detaches its victim, and logs the detach, only
//!   once all its valid pages are copied (a partial or full snapshot written while
//!   the copies run must still list the victim, which holds live pages until then); a
//!   trim that empties a logical block logs it before dropping the last page, whose
//!   block the drop may erase (the PGD would point into it); blocks are logged as
//!   allocated before they are programmed, as before. After the live pages are
//!   marked, recovery erases (under [`Cause::Recovery`]) what only a cut leaves: a
//!   block whose erase was torn (every page unreadable, none free), listed by its
//!   superblock or by none, and a full listed block without a live page; such a block
//!   is garbage, never free and never data. A merge cut after taking its reserved
//!   block and before releasing its victim leaves the merge reserve short: recovery
//!   refills it from the free list, else compacts a block into its superblock's
//!   current U-block to free one. A merge cut half way leaves some pages copied: each
//!   copy carries its page's PMD and PT as the merge's work area held them, pointing to
//!   copies made before it and to originals not yet copied, which are still on flash
//!   (the victim is erased only after its last copy), so the chain from the newest
//!   page of each logical block is whole either way. A cut inside recovery leaves the
//!   newest whole half untouched (recovery writes its full snapshot to the other one).

use super::cache::NONE;
use super::{spare_pmd, spare_pt, SuperblockFtl, OWN_FREE, OWN_RESERVED};
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::RecoverError;
use ftlab_core::geometry::Geometry;
use ftlab_core::{Lpn, PageTag, Pbn, Ppn};

/// Spare tag LPN of snapshot pages (beyond any logical page).
pub(super) const SNAP_LPN: u32 = u32::MAX - 1;
/// Owner code of the snapshot area's blocks.
pub(super) const OWN_SNAPSHOT: u32 = u32::MAX - 2;
/// First word of a full snapshot.
const MAGIC: u32 = 0x5342_4653; // "SBFS"
/// Words of one partial-snapshot record (12 bytes).
const RECORD_WORDS: usize = 3;

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

impl Event {
    fn encode(self) -> [u32; RECORD_WORDS] {
        match self {
            Event::Write { lpn, ppn } => [0, lpn, ppn],
            Event::Alloc { sb, pbn } => [1, sb, pbn],
            Event::Detach { sb, pbn } => [2, sb, pbn],
            Event::Release { pbn, to_reserved } => [3, pbn, to_reserved as u32],
            Event::LbnEmpty { lbn } => [4, lbn, 0],
            Event::MarkD { sb, cold } => [5, sb, cold as u32],
            Event::Abandon { sb } => [6, sb, 0],
        }
    }

    fn decode(w: &[u32]) -> Option<Event> {
        Some(match w[0] {
            0 => Event::Write {
                lpn: w[1],
                ppn: w[2],
            },
            1 => Event::Alloc {
                sb: w[1],
                pbn: w[2],
            },
            2 => Event::Detach {
                sb: w[1],
                pbn: w[2],
            },
            3 => Event::Release {
                pbn: w[1],
                to_reserved: w[2] != 0,
            },
            4 => Event::LbnEmpty { lbn: w[1] },
            5 => Event::MarkD {
                sb: w[1],
                cold: w[2] != 0,
            },
            6 => Event::Abandon { sb: w[1] },
            _ => return None,
        })
    }
}

/// One half of the snapshot area.
#[derive(Clone, Debug)]
struct Half {
    blocks: Vec<Pbn>,
    seq: u32,
    /// Pages programmed: the full snapshot, then one per partial snapshot.
    pages: u32,
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

/// The snapshot log: where it is on flash, and the events not yet written.
#[derive(Clone, Debug)]
pub(super) struct SnapLog {
    halves: [Half; 2],
    current: usize,
    /// Events not yet written, encoded as their records.
    pending: Vec<[u32; RECORD_WORDS]>,
    full_pages: u32,
    pages_per_half: u32,
    words_per_page: usize,
    records_per_page: usize,
    next_seq: u32,
    buf: Vec<u32>,
    pub(super) pages_written: u64,
    pub(super) full_snapshots: u64,
    pub(super) partial_snapshots: u64,
}

/// Words of the largest full snapshot: header, PGD, per block owner, flags and valid
/// count, the superblocks' block lists, lengths, current U-blocks and their write
/// positions, and the free and reserved lists.
fn full_snapshot_words(geo: &Geometry, superblocks: u32, row: u32) -> usize {
    7 + geo.logical_blocks() as usize
        + 4 * geo.blocks as usize
        + superblocks as usize * (row as usize + 3)
}

/// Size of a full snapshot in pages.
pub(super) fn full_snapshot_pages(geo: &Geometry, superblocks: u32, row: u32) -> u32 {
    full_snapshot_words(geo, superblocks, row).div_ceil(geo.page_size as usize / 4) as u32
}

/// Blocks per half of the snapshot area: the full snapshot and one block of partial
/// snapshots.
pub(super) fn half_blocks(geo: &Geometry, full_pages: u32) -> u32 {
    full_pages.div_ceil(geo.pages_per_block) + 1
}

impl SnapLog {
    /// A log over blocks `first..first + 2 * h`.
    pub(super) fn new(geo: &Geometry, first: u32, h: u32, full_pages: u32) -> SnapLog {
        let words_per_page = geo.page_size as usize / 4;
        let records_per_page = (words_per_page - 1) / RECORD_WORDS;
        let half = |k: u32| Half {
            blocks: (first + k * h..first + (k + 1) * h).map(Pbn).collect(),
            seq: 0,
            pages: 0,
        };
        SnapLog {
            halves: [half(0), half(1)],
            current: 0,
            pending: Vec::with_capacity(4 * records_per_page),
            full_pages,
            pages_per_half: h * geo.pages_per_block,
            words_per_page,
            records_per_page,
            next_seq: 1,
            buf: Vec::with_capacity(full_pages as usize * words_per_page),
            pages_written: 0,
            full_snapshots: 0,
            partial_snapshots: 0,
        }
    }

    /// Blocks of the whole area.
    pub(super) fn blocks(&self) -> impl Iterator<Item = Pbn> + '_ {
        self.halves.iter().flat_map(|h| h.blocks.iter().copied())
    }

    /// Snapshot pages currently holding data (valid on flash).
    pub(super) fn valid_pages(&self) -> u64 {
        self.halves.iter().map(|h| h.pages as u64).sum()
    }

    fn page(&self, geo: &Geometry, h: usize, k: u32) -> Ppn {
        let ppb = geo.pages_per_block;
        geo.ppn(self.halves[h].blocks[(k / ppb) as usize], k % ppb)
    }
}

/// Records an event for the next partial snapshot in `snap`, if snapshots are on (for a
/// caller that holds other fields of the FTL borrowed).
#[inline]
pub(super) fn note_in(snap: &mut Option<SnapLog>, ev: Event) {
    if let Some(log) = snap {
        log.pending.push(ev.encode());
    }
}

impl SuperblockFtl {
    /// Records an event for the next partial snapshot.
    #[inline]
    pub(super) fn note(&mut self, ev: Event) {
        note_in(&mut self.snap, ev);
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
        if log.halves[log.current].seq == 0 {
            let target = log.current;
            self.write_full(flash, &mut log, target);
        }
        while !log.pending.is_empty() {
            let cur = log.current;
            if log.halves[cur].pages == log.pages_per_half {
                self.write_full(flash, &mut log, 1 - cur);
                break;
            }
            let n = log.pending.len().min(log.records_per_page);
            let ppn = log.page(&self.geo, cur, log.halves[cur].pages);
            // The page: the record count, then the records (encoded when noted).
            let records = log.pending[..n].as_flattened();
            let tag = snap_tag(log.halves[cur].seq);
            flash.program_recovery_payload_parts(ppn, tag, &[n as u32], records, Cause::Map);
            log.pending.drain(..n);
            log.halves[cur].pages += 1;
            log.pages_written += 1;
            log.partial_snapshots += 1;
        }
        self.snap = Some(log);
    }

    /// Writes a full snapshot of the current state into half `target` (erasing it first)
    /// and makes it current; pending events are covered by it.
    fn write_full(&mut self, flash: &mut Flash, log: &mut SnapLog, target: usize) {
        for &b in &log.halves[target].blocks {
            for off in 0..flash.write_ptr(b) {
                flash.invalidate(self.geo.ppn(b, off));
            }
            if !flash.is_erased(b) {
                flash.erase(b, Cause::Map);
                // The snapshot area is fixed: a block of it at the limit ends the device.
                self.retirement
                    .fixed(b, flash.erase_count(b), "snapshot block");
            }
        }
        let seq = log.next_seq;
        log.next_seq += 1;
        log.halves[target].seq = seq;
        log.halves[target].pages = 0;
        let mut buf = std::mem::take(&mut log.buf);
        if flash.keeps_recovery_data() {
            self.serialize(&mut buf, flash);
        } else {
            // Only a recovery reads it; the pages are programmed all the same.
            buf.clear();
        }
        for k in 0..log.full_pages {
            let a = (k as usize * log.words_per_page).min(buf.len());
            let b = (a + log.words_per_page).min(buf.len());
            let ppn = log.page(&self.geo, target, k);
            flash.program_recovery_payload_parts(ppn, snap_tag(seq), &buf[a..b], &[], Cause::Map);
            log.halves[target].pages += 1;
        }
        log.buf = buf;
        log.pages_written += log.full_pages as u64;
        log.full_snapshots += 1;
        log.pending.clear();
        log.current = target;
    }

    /// The state a full snapshot holds, as words.
    fn serialize(&self, w: &mut Vec<u32>, flash: &Flash) {
        w.clear();
        w.extend_from_slice(&[
            MAGIC,
            self.pgd.len() as u32,
            self.geo.blocks,
            self.superblocks,
            self.cfg.row,
            self.free.len() as u32,
            self.reserved.len() as u32,
        ]);
        w.extend_from_slice(&self.pgd);
        w.extend_from_slice(&self.owner);
        w.extend(
            self.is_u
                .iter()
                .zip(&self.hot)
                .map(|(&u, &h)| u as u32 | (h as u32) << 1),
        );
        w.extend((0..self.geo.blocks).map(|b| flash.valid_count(Pbn(b))));
        w.extend_from_slice(&self.sb_blocks);
        w.extend_from_slice(&self.sb_len);
        w.extend_from_slice(&self.frontier);
        w.extend(self.frontier.iter().map(|&b| {
            if b == NONE {
                0
            } else {
                flash.write_ptr(Pbn(b))
            }
        }));
        w.extend(self.free.iter().map(|b| b.0));
        w.extend(self.reserved.iter().map(|b| b.0));
    }

    /// Loads the state of a full snapshot from its words.
    fn deserialize(&mut self, w: &[u32]) -> Result<(), RecoverError> {
        let bad = |why: &str| RecoverError::Failed(format!("full snapshot: {why}"));
        let (lbns, blocks, sbs, row) = (
            self.pgd.len(),
            self.geo.blocks as usize,
            self.superblocks as usize,
            self.cfg.row as usize,
        );
        if w.len() < 7 || w[..5] != [MAGIC, lbns as u32, blocks as u32, sbs as u32, row as u32] {
            return Err(bad("header does not match this device and configuration"));
        }
        let (nfree, nres) = (w[5] as usize, w[6] as usize);
        let need = 7 + lbns + 3 * blocks + sbs * row + 3 * sbs + nfree + nres;
        if w.len() < need {
            return Err(bad(&format!("{} words, expected {need}", w.len())));
        }
        let mut at = 7;
        let mut take = |n: usize| {
            at += n;
            &w[at - n..at]
        };
        self.pgd.copy_from_slice(take(lbns));
        self.owner.copy_from_slice(take(blocks));
        for (b, &fl) in take(blocks).iter().enumerate() {
            self.is_u[b] = fl & 1 != 0;
            self.hot[b] = fl & 2 != 0;
        }
        take(blocks); // valid counters: not replayed (module docs)
        self.sb_blocks.copy_from_slice(take(sbs * row));
        self.sb_len.copy_from_slice(take(sbs));
        self.frontier.copy_from_slice(take(sbs));
        self.frontier_wp.copy_from_slice(take(sbs));
        // (Keyed by erase count when recovery ends: `rekey_free`.)
        self.free.clear();
        take(nfree).iter().for_each(|&b| self.free.push(Pbn(b), 0));
        self.reserved = take(nres).iter().map(|&b| Pbn(b)).collect();
        self.rebuild_u_lists();
        Ok(())
    }

    /// A normal shutdown: writes a full snapshot, so start-up needs no scan.
    pub fn shutdown(&mut self, flash: &mut Flash) {
        if let Some(mut log) = self.snap.take() {
            let target = if log.halves[log.current].seq == 0 {
                log.current
            } else {
                1 - log.current
            };
            self.write_full(flash, &mut log, target);
            self.snap = Some(log);
        }
    }

    /// The figures of the recovery that rebuilt this FTL, if it was recovered.
    pub fn recovery_report(&self) -> Option<RecoveryReport> {
        self.recovery
    }

    /// Start-up after a power loss (§4.4), on a freshly built instance: rebuilds the PGD,
    /// block lists and free lists from the newer snapshot half, its partial snapshots and
    /// a scan of the current U-blocks, then re-marks the live pages.
    pub(super) fn recover_from_flash(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        let Some(mut log) = self.snap.take() else {
            return Err(RecoverError::Unsupported);
        };
        let mut rep = RecoveryReport::default();
        let mut orphans = Vec::new();
        let mut newest: Option<(u32, usize)> = None;
        for h in 0..2 {
            let pages: u32 = log.halves[h]
                .blocks
                .iter()
                .map(|&b| flash.write_ptr(b))
                .sum();
            log.halves[h].pages = pages;
            log.halves[h].seq = 0;
            let first = log.page(&self.geo, h, 0);
            if flash.peek_tag(first).is_none() {
                // Never written, or its first block erased by a full snapshot the
                // power cut (a later block of the half torn or not yet erased).
                continue;
            }
            rep.spare_reads += 1;
            let t = flash.read_spare(first, Cause::Recovery);
            if t.is_uncorrectable() {
                // A full snapshot's first page or the half's erase, torn: the other
                // half holds the newest whole snapshot.
                continue;
            }
            if t.lpn.0 != SNAP_LPN {
                return Err(RecoverError::Failed(format!(
                    "snapshot half {h} starts with {t:?}"
                )));
            }
            log.halves[h].seq = t.version;
            if self.full_snapshot_whole(flash, &log, h, t)
                && newest.is_none_or(|(s, _)| t.version > s)
            {
                newest = Some((t.version, h));
            }
        }
        if let Some((seq, h)) = newest {
            self.replay(flash, &mut log, h, &mut rep)?;
            log.current = h;
            log.next_seq = seq.max(log.halves[1 - h].seq) + 1;
            self.snap = Some(log);
            self.scan_frontiers(flash, &mut rep);
            self.reclaim_lost_blocks(flash, &mut rep, &mut orphans)?;
        } else {
            self.snap = Some(log);
        }
        self.rekey_free(flash);
        self.retire_worn_pooled(flash);
        self.mark_live(flash)?;
        self.reclaim_garbage(flash, &orphans)?;
        self.restore_reserve(flash);
        // What the scan and the probes rebuilt is in no snapshot yet: checkpoint it, or a
        // second power loss would replay the old snapshot under newer partial ones.
        if newest.is_some() {
            let mut log = self.snap.take().expect("taken back above");
            let target = 1 - log.current;
            self.write_full(flash, &mut log, target);
            self.snap = Some(log);
        }
        self.recovery = Some(rep);
        Ok(())
    }

    /// Whether half `h` holds a whole full snapshot stamped `tag`: every page of it
    /// programmed, with that stamp (no torn page) and its data. No flash operation: the
    /// replay reads the pages (a power cut inside a full snapshot's programs leaves it
    /// short or with a torn page; the previous half is then the newest whole one).
    fn full_snapshot_whole(&self, flash: &Flash, log: &SnapLog, h: usize, tag: PageTag) -> bool {
        (0..log.full_pages).all(|k| {
            let ppn = log.page(&self.geo, h, k);
            flash.peek_tag(ppn) == Some(tag) && flash.payload(ppn).is_some()
        })
    }

    /// Restores the full snapshot of half `h` and replays its partial snapshots.
    fn replay(
        &mut self,
        flash: &mut Flash,
        log: &mut SnapLog,
        h: usize,
        rep: &mut RecoveryReport,
    ) -> Result<(), RecoverError> {
        let mut buf = std::mem::take(&mut log.buf);
        buf.clear();
        for k in 0..log.full_pages {
            let ppn = log.page(&self.geo, h, k);
            flash.read(ppn, Cause::Recovery);
            rep.snapshot_pages_read += 1;
            let p = flash
                .payload(ppn)
                .ok_or_else(|| RecoverError::Failed(format!("{ppn:?}: no snapshot data")))?;
            buf.extend_from_slice(p);
        }
        self.deserialize(&buf)?;
        log.buf = buf;
        for k in log.full_pages..log.halves[h].pages {
            let ppn = log.page(&self.geo, h, k);
            match flash.peek_tag(ppn) {
                None => break,
                // A partial snapshot the power cut inside its program: its events are
                // lost as if they had still been pending in RAM (which the scan and
                // the probes below cover); the page stays until the half is erased.
                Some(t) if t.is_uncorrectable() => continue,
                Some(_) => {}
            }
            flash.read(ppn, Cause::Recovery);
            rep.snapshot_pages_read += 1;
            rep.partial_snapshots += 1;
            let p = flash
                .payload(ppn)
                .ok_or_else(|| RecoverError::Failed(format!("{ppn:?}: no snapshot data")))?;
            let n = p.first().copied().unwrap_or(0) as usize;
            if p.len() != 1 + n * RECORD_WORDS {
                return Err(RecoverError::Failed(format!(
                    "{ppn:?}: torn partial snapshot"
                )));
            }
            let events: Vec<Event> = p[1..]
                .chunks(RECORD_WORDS)
                .map(Event::decode)
                .collect::<Option<_>>()
                .ok_or_else(|| RecoverError::Failed(format!("{ppn:?}: unknown record")))?;
            for ev in events {
                self.apply(ev);
            }
        }
        Ok(())
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

    /// Keys the free list by the erase counts on flash (the replay pushed its blocks
    /// with none): least-erased first under dynamic levelling; first-in first-out keeps
    /// its order.
    fn rekey_free(&mut self, flash: &Flash) {
        let blocks: Vec<Pbn> = self.free.iter().collect();
        self.free.clear();
        for b in blocks {
            self.free.push(b, flash.erase_count(b));
        }
    }

    /// Takes `b` off the free or reserved list (wherever it is).
    fn unpool(&mut self, b: Pbn) {
        if self.free.remove(b) {
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
                    self.free.push(Pbn(pbn), 0);
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
                let tag = flash.read_spare(ppn, Cause::Recovery);
                rep.spare_reads += 1;
                rep.scanned_pages += 1;
                if tag.is_uncorrectable() || tag.lpn.0 >= self.geo.logical_pages {
                    // A program (or the block's erase) the power cut: no data, no map
                    // (or a filler page of an in-place merge).
                    continue;
                }
                self.pgd[(tag.lpn.0 / self.geo.pages_per_block) as usize] = ppn.0;
            }
        }
    }

    /// Blocks the snapshots still list but that were erased and released afterwards, and
    /// blocks detached before a snapshot and released after it, go back to a free list.
    fn reclaim_lost_blocks(
        &mut self,
        flash: &Flash,
        rep: &mut RecoveryReport,
        orphans: &mut Vec<Pbn>,
    ) -> Result<(), RecoverError> {
        for sb in 0..self.superblocks {
            let mut k = 0;
            while k < self.sb_len[sb as usize] as usize {
                let b = self.blocks_of(sb)[k];
                rep.probes += 1;
                let fresh = self.frontier[sb as usize] == b && self.frontier_wp[sb as usize] == 0;
                if flash.is_erased(Pbn(b)) && !fresh {
                    self.detach(sb, Pbn(b));
                    self.release(flash, Pbn(b));
                    rep.lost_releases += 1;
                } else {
                    k += 1;
                }
            }
        }
        let mut pooled = vec![false; self.geo.blocks as usize];
        for b in self.free.iter().chain(self.reserved.iter().copied()) {
            pooled[b.idx()] = true;
        }
        for b in 0..self.geo.blocks {
            let o = self.owner[b as usize];
            if o < self.superblocks || o == OWN_SNAPSHOT || pooled[b as usize] {
                continue;
            }
            if !flash.is_erased(Pbn(b)) {
                // Detached and not erased (a torn erase): garbage once the live pages
                // are known (`reclaim_garbage`).
                orphans.push(Pbn(b));
                continue;
            }
            self.release(flash, Pbn(b));
            rep.lost_releases += 1;
        }
        self.rebuild_u_lists();
        Ok(())
    }

    /// After the live pages are marked: erases (under [`Cause::Recovery`]) and releases
    /// the blocks that hold data but no live page, which only a power cut inside a
    /// flash operation leaves: a block whose erase was torn (every page unreadable,
    /// none free), listed by its superblock or by none (`orphans`), and a full block
    /// whose last program was torn after its other pages went stale. They are garbage,
    /// never free (they must be erased first) and never data. A block a superblock
    /// still writes (its current U-block with free pages) stays.
    fn reclaim_garbage(&mut self, flash: &mut Flash, orphans: &[Pbn]) -> Result<(), RecoverError> {
        for &b in orphans {
            if flash.valid_count(b) > 0 {
                return Err(RecoverError::Failed(format!(
                    "{b:?} belongs to nothing but holds live data"
                )));
            }
            self.erase_garbage(flash, b);
        }
        for sb in 0..self.superblocks {
            let mut k = 0;
            while k < self.sb_len[sb as usize] as usize {
                let b = Pbn(self.blocks_of(sb)[k]);
                let writing = self.frontier[sb as usize] == b.0 && !flash.is_full(b);
                if flash.valid_count(b) > 0 || writing {
                    k += 1;
                    continue;
                }
                self.detach(sb, b);
                self.note(Event::Detach { sb, pbn: b.0 });
                self.erase_garbage(flash, b);
            }
        }
        self.rebuild_u_lists();
        Ok(())
    }

    /// A merge the power cut between its taking a reserved block (logged) and its
    /// releasing the victim (not) leaves the reserve short, the victim still holding
    /// live pages. Refills it from the free list, else (MergeAll runs when no block is
    /// free) finishes such a merge: a block whose valid pages fit its superblock's
    /// current U-block is compacted into it (SimpleCopyAndCompact, no reserved block
    /// needed), which frees it.
    ///
    /// Such a merge also leaves its superblock owning the reserved block beside the
    /// victim, one more than N + M: it runs MergeSome until it is back at its limit.
    fn restore_reserve(&mut self, flash: &mut Flash) {
        self.refill_reserve(flash);
        for sb in 0..self.superblocks {
            for _ in 0..self.cfg.row {
                if self.sb_len[sb as usize] <= self.cfg.max_blocks {
                    break;
                }
                self.merge_some(flash, sb);
                self.refill_reserve(flash);
            }
        }
        self.refill_reserve(flash);
    }

    /// [`SuperblockFtl::restore_reserve`]'s refill.
    fn refill_reserve(&mut self, flash: &mut Flash) {
        while (self.reserved.len() as u32) < self.cfg.reserve {
            if let Some(f) = self.free.pop_if_any() {
                self.owner[f.idx()] = OWN_RESERVED;
                self.reserved.push(f);
                continue;
            }
            let victim = (0..self.superblocks).find_map(|sb| {
                let f = self.frontier[sb as usize];
                if f == NONE || self.cfg.ip {
                    return None;
                }
                let room = self.geo.pages_per_block - flash.write_ptr(Pbn(f));
                (self.blocks_of(sb).iter())
                    .filter(|&&b| b != f && flash.valid_count(Pbn(b)) <= room)
                    .min_by_key(|&&b| flash.valid_count(Pbn(b)))
                    .map(|&b| (sb, Pbn(b)))
            });
            let Some((sb, b)) = victim else {
                return;
            };
            self.load_ws(flash, sb);
            self.simple_copy_and_compact(flash, sb, b);
            self.store_ws(flash, sb);
            self.maybe_promote(sb);
        }
    }

    /// Erases garbage block `b` (no valid page, owned by nothing) and releases it.
    fn erase_garbage(&mut self, flash: &mut Flash, b: Pbn) {
        flash.erase(b, Cause::Recovery);
        self.wl_erased(flash, b);
        let to_reserved = !self.retire_if_worn(flash, b) && self.release(flash, b);
        self.note(Event::Release {
            pbn: b.0,
            to_reserved,
        });
    }

    /// Re-marks every page the recovered map reaches (PGD -> PMD -> PT -> page) and the
    /// snapshot pages as valid, and refills the mirror of the spare map from the spares.
    fn mark_live(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        let pl = self.split.pmd_len();
        let ppb = self.geo.pages_per_block;
        let t = self.split.t;
        let mut live = Vec::new();
        let tag_of = |flash: &Flash, p: u32, what: &str| -> Result<PageTag, RecoverError> {
            flash
                .peek_tag(Ppn(p))
                .ok_or_else(|| RecoverError::Failed(format!("{what} at erased ppn{p}")))
        };
        for lbn in 0..self.pgd.len() as u32 {
            let head = self.pgd[lbn as usize];
            if head == NONE {
                continue;
            }
            if tag_of(flash, head, "PMD")?.lpn.0 / ppb != lbn {
                return Err(RecoverError::Failed(format!("lbn{lbn}: PGD at ppn{head}")));
            }
            self.mirror.set_pmd(lbn, &spare_pmd(flash, head, pl));
            for (i, &loc) in spare_pmd(flash, head, pl).iter().enumerate() {
                if loc == NONE {
                    continue;
                }
                tag_of(flash, loc, "PT")?;
                self.mirror.set_pt(lbn, i, &spare_pt(flash, loc, pl));
                for (j, &p) in spare_pt(flash, loc, pl).iter().enumerate() {
                    if p == NONE {
                        continue;
                    }
                    let lpn = lbn * ppb + ((i as u32) << t) + j as u32;
                    if tag_of(flash, p, "page")?.lpn.0 != lpn {
                        return Err(RecoverError::Failed(format!(
                            "lpn{lpn}: its PTE points to ppn{p}, holding another page"
                        )));
                    }
                    live.push(p);
                }
            }
        }
        if let Some(log) = &self.snap {
            for b in log.blocks() {
                live.extend((0..flash.write_ptr(b)).map(|o| self.geo.ppn(b, o).0));
            }
        }
        for p in live {
            flash.mark_valid(Ppn(p));
        }
        Ok(())
    }
}

fn snap_tag(seq: u32) -> PageTag {
    PageTag {
        lpn: Lpn(SNAP_LPN),
        version: seq,
    }
}
