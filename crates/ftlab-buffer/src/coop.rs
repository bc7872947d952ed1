//! `coop`: the buffer side of CO-OP, Selective Block Padding (SBP), co-op-buffer-ftl.txt
//! §5.1.1 (Algorithm 1, above BAST) and §5.2.1 (Algorithm 2, above FAST).
//!
//! Victims are chosen by block-level LRU with BPLRU's LRU compensation ("a victim buffer
//! block is selected in block-level LRU order, and LRU compensation of BPLRU \[11\] is
//! adopted"); whether a victim is padded depends on the FTL's state, asked through the
//! CO-OP interfaces of Table 3 ([`Query`]):
//! - Algorithm 1 (the FTL answers `Get_NFreePG_Log`): with `N_freePG` free pages in the
//!   block's log block and `|P_d|` dirty pages, flush without padding if
//!   `|P_d| < N_freePG`; pad if `|P_d| > N_freePG`; if equal, flush without padding only
//!   when the dirty pages start at offset `NPB - N_freePG` and the log block is
//!   sequential (it will be switched), else pad. If the block has no log block and the
//!   FTL has no free log block, first pad and flush the buffered block (if any) whose
//!   log block is the FTL's next victim, then flush the victim without padding.
//! - Algorithm 2 (the FTL answers `Get_Thres_RW`): pad when the victim holds more dirty
//!   pages than the RW threshold, else flush it unpadded.
//!
//! Padded blocks are handed over as complete-block flushes, which the FTL's Optimized
//! Switch Merge (the `osm` option of `bast` and `fast`) turns into switch merges.
//!
//! Choices the paper leaves open:
//! - Which algorithm: the FTL's answers decide. An FTL that answers the RW threshold
//!   gets Algorithm 2; one that answers about a block's log block gets Algorithm 1; an
//!   FTL with neither (page mapping, DFTL, ...) gets no padding at all, so `coop` then
//!   behaves as BLRU.
//! - `NPB` is the number of pages of the victim's logical block (the last block of a
//!   device may be shorter).
//! - The queries are asked at every eviction (they are O(1) lookups in the FTL).
//! - As in `bplru`: read hits do not reorder, a trim does not move a block, a host
//!   flush-cache command evicts with the same rules until the buffer is empty, and a page
//!   the FTL does not hold cannot be padded.

use crate::blocklru::{capacity_pages, BlockBuffer, BlockCore, BlockPolicy, SizeOptions, Touch};
use crate::bplru::{lru_compensate, lru_touched};
use ftlab_core::buffer::Backend;
use ftlab_core::ftl::{Answer, Query};
use ftlab_core::geometry::Geometry;
use ftlab_core::options::SchemeError;
use ftlab_core::Lbn;

/// Scheme id in the registry and in errors.
pub const ID: &str = "coop";

/// Options of `coop`: its size alone.
pub type CoopOptions = SizeOptions;

/// Block LRU with compensation and selective block padding.
#[derive(Debug, Default)]
pub struct CoopPolicy {
    /// Victims flushed with padding.
    pub padded_victims: u64,
    /// Blocks flushed ahead of a victim because their log block was the FTL's next
    /// victim (Algorithm 1, line 24).
    pub early_flushes: u64,
}

/// The `coop` buffer.
pub type Coop = BlockBuffer<CoopPolicy>;

/// Builds `coop`.
pub fn new(geo: &Geometry, opts: &CoopOptions) -> Result<Coop, SchemeError> {
    let cap = capacity_pages(ID, geo, opts.size)?;
    Ok(BlockBuffer::new(geo, cap, 1, CoopPolicy::default()))
}

/// Algorithm 1: whether to pad `victim`, given its log block's free pages.
fn sbp_bast(core: &BlockCore, be: &Backend<'_>, victim: Lbn, free: u32) -> bool {
    let dirty = core.t.dirty(victim);
    if dirty < free {
        false
    } else if dirty > free {
        true
    } else {
        let npb = core.t.block_len(victim);
        let tail = core.t.first_dirty_offset(victim) == Some(npb.saturating_sub(free));
        let seq = be.query(Query::LogIsSequential(victim)) == Answer::Bool(true);
        !(tail && seq)
    }
}

impl CoopPolicy {
    /// Algorithm 1, lines 18-26: the victim has no log block; if the FTL has no free
    /// log block, pad and flush the buffered block whose log block goes next.
    fn make_room_for_log(&mut self, core: &mut BlockCore, be: &mut Backend<'_>, victim: Lbn) {
        if be.query(Query::FreeLogBlocks) != Answer::Count(0) {
            return;
        }
        if let Answer::Block(Some(next)) = be.query(Query::NextVictim) {
            if next != victim && core.t.pages(next) > 0 {
                core.flush_block(be, next, true);
                self.early_flushes += 1;
            }
        }
    }
}

// Placement is BPLRU's, as in bplru.rs (§5.1.1: "LRU compensation of BPLRU is
// adopted"); only the eviction differs.
impl BlockPolicy for CoopPolicy {
    fn touched(&mut self, core: &mut BlockCore, lbn: Lbn, how: Touch) {
        lru_touched(core, lbn, how);
    }

    fn group_done(&mut self, core: &mut BlockCore, lbn: Lbn) {
        lru_compensate(core, lbn);
    }

    fn evict(&mut self, core: &mut BlockCore, be: &mut Backend<'_>) {
        let victim = Lbn(core
            .lists
            .back(0)
            .expect("a buffer holding pages lists a block"));
        let pad = match be.query(Query::RwThreshold) {
            Answer::Count(threshold) => core.t.dirty(victim) > threshold,
            _ => match be.query(Query::LogFreePages(victim)) {
                Answer::Count(free) => sbp_bast(core, be, victim, free),
                Answer::NoLogBlock => {
                    self.make_room_for_log(core, be, victim);
                    false
                }
                _ => false,
            },
        };
        self.padded_victims += u64::from(pad);
        core.flush_block(be, victim, pad);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocklru::testutil::{opts, tags, Rig};
    use ftlab_core::buffer::Buffer;
    use ftlab_core::units::ByteSize;

    /// 8 pages per block; the FTL holds every page of lbn0..lbn3 at version 1.
    fn rig(answers: &[(Query, Answer)]) -> Rig {
        let mut rig = Rig::new(8, 8);
        let all: Vec<u32> = (0..32).collect();
        rig.ftl_mut()
            .store
            .extend(tags(&all).into_iter().map(|t| (t.lpn.0, t)));
        rig.ftl_mut().answers = answers.to_vec();
        rig
    }

    /// Buffers `dirty` (pages of lbn0) then evicts lbn0 with a write to lbn4; returns the
    /// group flushed for lbn0.
    fn flush_lbn0(rig: &mut Rig, dirty: &[u32]) -> Vec<u32> {
        let size = ByteSize(dirty.len() as u64 * 2048);
        let mut b = new(&rig.geo, &CoopOptions { size }).unwrap();
        b.write(&mut rig.be(), &tags(dirty));
        b.write(&mut rig.be(), &tags(&[32]));
        b.check().unwrap();
        rig.ftl().groups.last().unwrap().clone()
    }

    #[test]
    fn algorithm1_pads_only_when_a_full_merge_would_follow() {
        let q = |free, seq| {
            vec![
                (Query::LogFreePages(Lbn(0)), Answer::Count(free)),
                (Query::LogIsSequential(Lbn(0)), Answer::Bool(seq)),
            ]
        };
        // Fits the log block: no padding.
        assert_eq!(flush_lbn0(&mut rig(&q(3, false)), &[0, 1]), [0, 1]);
        // Overflows it (worked example 2: 7 dirty pages, 3 free): padding.
        let mut r = rig(&q(3, false));
        assert_eq!(
            flush_lbn0(&mut r, &[0, 1, 2, 4, 5, 6, 7]),
            (0..8).collect::<Vec<_>>()
        );
        assert_eq!(r.ftl().reads, [3]);
        // Exactly fills a sequential log from offset 5: a switch merge, no padding.
        assert_eq!(flush_lbn0(&mut rig(&q(3, true)), &[5, 6, 7]), [5, 6, 7]);
        // Exactly fills it but the log is not sequential: padding.
        assert_eq!(flush_lbn0(&mut rig(&q(3, false)), &[5, 6, 7]).len(), 8);
        // Exactly fills it but not from offset 5: padding.
        assert_eq!(flush_lbn0(&mut rig(&q(3, true)), &[4, 6, 7]).len(), 8);
    }

    #[test]
    fn algorithm1_flushes_the_next_victims_block_first_when_no_log_is_free() {
        let mut r = rig(&[
            (Query::LogFreePages(Lbn(0)), Answer::NoLogBlock),
            (Query::FreeLogBlocks, Answer::Count(0)),
            (Query::NextVictim, Answer::Block(Some(Lbn(2)))),
        ]);
        let mut b = new(&r.geo, &opts(ID, &[("size", "6KiB")])).unwrap();
        b.write(&mut r.be(), &tags(&[1]));
        b.write(&mut r.be(), &tags(&[17, 18]));
        b.write(&mut r.be(), &tags(&[32])); // evicts lbn0
        let groups = &r.ftl().groups;
        assert_eq!(groups[0], (16..24).collect::<Vec<_>>(), "lbn2 padded first");
        assert_eq!(groups[1], [1], "then the victim, unpadded");
        assert_eq!(b.policy().early_flushes, 1);
        b.check().unwrap();
    }

    #[test]
    fn algorithm2_pads_above_the_rw_threshold() {
        let q = vec![(Query::RwThreshold, Answer::Count(4))];
        assert_eq!(flush_lbn0(&mut rig(&q), &[0, 2, 4, 6]), [0, 2, 4, 6]);
        assert_eq!(flush_lbn0(&mut rig(&q), &[0, 2, 4, 6, 7]).len(), 8);
    }

    #[test]
    fn without_answers_it_is_blru() {
        assert_eq!(flush_lbn0(&mut rig(&[]), &[1, 2, 3, 4, 5, 6, 7]).len(), 7);
    }
}
