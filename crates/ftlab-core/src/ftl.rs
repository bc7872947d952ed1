//! The [`Ftl`] trait: what every flash translation layer implements.
//!
//! Required: [`Ftl::write`], [`Ftl::read`], [`Ftl::trim`], [`Ftl::stats`],
//! [`Ftl::reset_stats`], [`Ftl::mapping_bytes`]. Everything else has a default: idle
//! work does nothing, deep checks pass, queries answer "not applicable".
//!
//! An FTL decides *which* flash operations happen, through the [`Flash`] it is handed;
//! it never sees the clock.

use crate::flash::Flash;
use crate::nand::Latencies;
pub use crate::oracle::TrimRecovery;
use crate::oracle::{Oracle, Violation};
use crate::units::{Lbn, Lpn, Nanos, PageTag, PageWrite};

crate::stats::counters! {
    /// Counters an FTL keeps. Fields a scheme does not have stay 0.
    pub struct FtlStats {
        /// Garbage collections (victim blocks reclaimed) of page-mapped areas.
        gc_invocations: "collections",
        /// Valid pages copied by GC.
        gc_pages_copied: "pages",
        /// Valid translation (map) pages GC moved out of its victims (demand-paged
        /// schemes); not counted in `gc_pages_copied`, which counts data pages.
        gc_translation_pages_copied: "pages",
        /// Switch merges (1 erase, 0 copies).
        merges_switch: "merges",
        /// Partial merges.
        merges_partial: "merges",
        /// Full merges.
        merges_full: "merges",
        /// Pages copied by merges.
        merge_pages_copied: "pages",
        /// Switch merges of a block a buffer had padded to complete it (co-op-buffer-ftl.txt
        /// §6.3: "PSMs artificially made by the unconditional or conditional block padding
        /// technique"); not counted in `merges_switch`.
        merges_padding_switch: "merges",
        /// Optimized switch merges (co-op-buffer-ftl.txt §5.1.2, §5.2.2); not counted in
        /// `merges_switch`.
        merges_osm: "merges",
        /// Full merges that took some valid pages from the write buffer (BA-BM,
        /// co-op-buffer-ftl.txt §3); not counted in `merges_full`.
        merges_ba_bm: "merges",
        /// Mapping-cache hits.
        map_hits: "lookups",
        /// Mapping-cache misses.
        map_misses: "lookups",
        /// Translation (map) page reads.
        translation_reads: "pages",
        /// Translation (map) page writes.
        translation_writes: "pages",
    }
}

/// Why an FTL could not recover from a power loss.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecoverError {
    /// The scheme has no recovery procedure.
    #[error("this FTL does not support power-loss recovery")]
    Unsupported,
    /// Flash contents are inconsistent with what the scheme can rebuild.
    #[error("recovery failed: {0}")]
    Failed(String),
    /// A planned power loss struck inside the recovery itself
    /// ([`crate::flash::Flash::arm_power_cut`]): not a failure; the caller loses power
    /// again ([`crate::engine::Engine::power_loss`] with fresh instances).
    #[error("power lost again during recovery: {}", .0.describe())]
    PowerCut(crate::flash::PowerCut),
}

/// The device is worn out: too few blocks are left for the scheme to write on (issue 23
/// item 4). A scheme raises it with `std::panic::panic_any(WornOut(why))` in the middle
/// of a request (it cannot finish the request); the run catches it at its boundary, as
/// any panic, but reports it as the end of the device's life, not as a bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WornOut(pub String);

/// A question a write buffer may ask the FTL (co-op-buffer-ftl.txt Table 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// Free pages in the log block of a logical block.
    LogFreePages(Lbn),
    /// Whether the log block of a logical block has been written sequentially.
    LogIsSequential(Lbn),
    /// Number of free log blocks.
    FreeLogBlocks,
    /// The logical block whose log block is the next victim.
    NextVictim,
    /// The random-write threshold (pages).
    RwThreshold,
}

/// The FTL's answer to a [`Query`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// This FTL has no such notion.
    NotApplicable,
    /// The logical block has no log block allocated.
    NoLogBlock,
    /// A count.
    Count(u32),
    /// A yes/no answer.
    Bool(bool),
    /// A logical block, or none.
    Block(Option<Lbn>),
}

/// What a buffer-aware FTL may see of the write buffer above it: the buffer side of
/// BA-GC (co-op-buffer-ftl.txt §3: "This scheme targets the environment where FTL can
/// access and control the buffer cache").
pub trait BufferView {
    /// Dirty pages the buffer holds for a logical block.
    fn dirty_pages(&self, lbn: Lbn) -> u32;

    /// Dirty pages of a logical block the buffer considers cold (unlikely to be
    /// updated soon).
    fn cold_dirty_pages(&self, lbn: Lbn) -> u32;

    /// The buffer's dirty copy of a page, if it holds one.
    fn dirty_copy(&self, lpn: Lpn) -> Option<PageTag>;

    /// The FTL has written the buffer's copy of `lpn` to flash: the buffer marks it
    /// clean and will not flush it again. No-op if the page is not dirty.
    fn mark_clean(&mut self, lpn: Lpn);
}

/// What a write buffer says about a group it hands to the FTL
/// ([`Ftl::write_with`]).
#[derive(Default)]
pub struct GroupInfo<'a> {
    /// Pages of the group the buffer read from flash to complete the block (padding);
    /// their data did not change.
    pub padded: u32,
    /// The buffer, for buffer-aware FTLs (BA-GC); `None` when it offers no view.
    pub buffer: Option<&'a mut dyn BufferView>,
}

/// Idle time offered to a buffer or FTL between requests, with the serial cost of each
/// operation so the scheme can stop before it overruns.
#[derive(Clone, Copy, Debug)]
pub struct IdleBudget {
    /// Time left in the idle gap.
    pub remaining: Nanos,
    /// Operation costs used to spend it.
    pub latencies: Latencies,
}

impl IdleBudget {
    /// Spends the cost of the given operations if it fits; returns whether it did.
    pub fn try_spend(&mut self, reads: u64, programs: u64, erases: u64) -> bool {
        let l = &self.latencies;
        let cost = l.read.0 * reads + l.program.0 * programs + l.erase.0 * erases;
        if cost <= self.remaining.0 {
            self.remaining.0 -= cost;
            true
        } else {
            false
        }
    }
}

/// A flash translation layer.
pub trait Ftl {
    /// Writes a group of pages of one logical block, in ascending LPN order without
    /// duplicates (a buffer flush or one request's pages of that block). Group-aware
    /// schemes see the group's size; others may treat it page by page.
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]);

    /// Writes a group handed over by a write buffer, with what the buffer knows about
    /// it (padding, a view of the buffer). The default ignores the information.
    fn write_with(&mut self, flash: &mut Flash, pages: &[PageWrite], _info: GroupInfo<'_>) {
        self.write(flash, pages);
    }

    /// Reads a logical page: returns the spare tag of the physical page read (via
    /// [`Flash::read`]), or `None` if the LPN is not mapped.
    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag>;

    /// A hint: a host request for `lpn` comes a few requests from now (see
    /// [`crate::prefetch`]). A scheme may fetch the memory it will touch then; it must
    /// change no state a result depends on. The default does nothing.
    fn prefetch(&mut self, _flash: &Flash, _lpn: Lpn) {}

    /// Unmaps a logical page; later reads return `None` until it is written again.
    fn trim(&mut self, flash: &mut Flash, lpn: Lpn);

    /// A host flush-cache request reached the FTL (after the buffer emptied itself).
    fn flush(&mut self, _flash: &mut Flash) {}

    /// The device comes to rest after preconditioning: write back the RAM state a
    /// device at rest has written (dirty mapping entries). Untimed, and the engine
    /// resets every counter afterwards, so only the state it leaves matters. The
    /// default does nothing (a scheme that keeps no dirty RAM state).
    fn settle(&mut self, _flash: &mut Flash) {}

    /// Idle time between requests; background work must fit `budget`.
    fn idle(&mut self, _flash: &mut Flash, _budget: &mut IdleBudget) {}

    /// Deep invariants (valid counts, map and reverse map agree). Slow; run under
    /// `--verify=deep`.
    fn check(&self, _flash: &Flash) -> Result<(), String> {
        Ok(())
    }

    /// Counters since the last reset.
    fn stats(&self) -> FtlStats;

    /// Zeroes the counters (after preconditioning and warm-up).
    fn reset_stats(&mut self);

    /// RAM the mapping structures need, in bytes, computed from the actual tables.
    fn mapping_bytes(&self) -> u64;

    /// Rebuilds the RAM state from flash after a power loss. Called on a freshly
    /// constructed instance, after [`Flash::power_cycle`] forgot all validity: the FTL
    /// must re-mark every live page with [`Flash::mark_valid`] and account the reads it
    /// needs (spare scans, checkpoints) under [`Cause::Recovery`](crate::flash::Cause).
    /// Everything the FTL was handed before the power loss must read back afterwards.
    fn recover(&mut self, _flash: &mut Flash) -> Result<(), RecoverError> {
        Err(RecoverError::Unsupported)
    }

    /// Whether this instance, with its options, can [`Ftl::recover`] from a power loss:
    /// checked before a run with planned power losses starts, so an impossible plan is
    /// a configuration error rather than a failure half-way. The default says yes;
    /// a scheme that recovers only with some options overrides it.
    fn recovers(&self) -> bool {
        true
    }

    /// Appends the LPNs whose newest data this FTL holds only in controller RAM (say, a
    /// block image between the erase and the program of an interruptible GC). A power
    /// loss loses them; the engine reports them as lost, as it does a buffer's
    /// [`Buffer::volatile_pages`](crate::buffer::Buffer::volatile_pages). An FTL that
    /// keeps no data only in RAM between requests leaves this empty.
    fn volatile_pages(&self, _out: &mut Vec<Lpn>) {}

    /// What a page trimmed before a power loss reads as after [`Ftl::recover`]: no
    /// scheme here persists trims, so the trimmed data may come back. The default:
    /// zeroes or the last version the FTL was handed before the trim (what a scheme
    /// gives that never erases the last copy of a page before its older copies). A
    /// scheme whose GC can erase the trimmed last version while an older stale copy
    /// survives says [`TrimRecovery::AnyEarlier`] and documents why; the oracle checks
    /// the answer.
    fn trim_recovery(&self) -> TrimRecovery {
        TrimRecovery::LastVersion
    }

    /// Answers a buffer's question (co-op-buffer-ftl.txt Table 3).
    fn query(&self, _q: Query) -> Answer {
        Answer::NotApplicable
    }

    /// Whether the engine may pack this FTL's spare tags into one word a page
    /// ([`Flash::with_packed_tags`]) and wrap versions in the bits left: `true` only for
    /// an FTL that programs nothing but the tags it was handed (no tag of its own for
    /// metadata pages or fillers) and orders versions only in [`Ftl::recover`] (the
    /// engine packs only runs without power losses). The default says no.
    fn packed_tags(&self) -> bool {
        false
    }

    /// The end-of-run read-back with no buffer above the FTL: reads every LPN the oracle
    /// saw written, as [`Ftl::read`] would (the same flash reads), checks each against
    /// the oracle and returns how many were checked. The default calls [`Ftl::read`] per
    /// LPN; a scheme with a flat map walks it and the oracle in one pass.
    fn read_back(&mut self, flash: &mut Flash, oracle: &mut Oracle) -> Result<u64, Violation> {
        let mut checked = 0;
        for l in 0..oracle.logical_pages() {
            let lpn = Lpn(l);
            checked += oracle.read_back(lpn, || self.read(flash, lpn))? as u64;
            flash.clear_log();
        }
        Ok(checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `add_counters` skipped the padding-switch, OSM and BA-BM merges, so
    /// a power loss (which carries the replaced instance's counters) dropped them from
    /// the report; and it dropped every counter in `extra` (issue 17).
    #[test]
    fn add_counters_adds_every_named_counter() {
        let one = FtlStats {
            gc_invocations: 1,
            gc_pages_copied: 1,
            gc_translation_pages_copied: 1,
            merges_switch: 1,
            merges_partial: 1,
            merges_full: 1,
            merge_pages_copied: 1,
            merges_padding_switch: 1,
            merges_osm: 1,
            merges_ba_bm: 1,
            map_hits: 1,
            map_misses: 1,
            translation_reads: 1,
            translation_writes: 1,
            extra: {
                let mut x = crate::stats::Sink::default();
                x.counter("x", "pages", 1.0);
                x.gauge("g", "blocks", 5.0);
                x
            },
        };
        let mut sum = one.clone();
        sum.add_counters(&one);
        let two = FtlStats {
            gc_invocations: 2,
            gc_pages_copied: 2,
            gc_translation_pages_copied: 2,
            merges_switch: 2,
            merges_partial: 2,
            merges_full: 2,
            merge_pages_copied: 2,
            merges_padding_switch: 2,
            merges_osm: 2,
            merges_ba_bm: 2,
            map_hits: 2,
            map_misses: 2,
            translation_reads: 2,
            translation_writes: 2,
            extra: {
                let mut x = crate::stats::Sink::default();
                x.counter("x", "pages", 2.0);
                x.gauge("g", "blocks", 5.0);
                x
            },
        };
        assert_eq!(sum, two);
    }

    #[test]
    fn to_sink_holds_every_shared_counter_with_its_unit_and_the_extra_figures() {
        let mut st = FtlStats {
            merges_full: 3,
            map_hits: 7,
            ..Default::default()
        };
        st.extra.gauge("log_blocks", "blocks", 2.0);
        let sink = st.to_sink();
        assert_eq!(FtlStats::COUNTERS.len(), 14);
        for (key, unit) in FtlStats::COUNTERS {
            let f = sink.figure(key).unwrap();
            assert_eq!(
                (f.unit, f.kind),
                (*unit, crate::stats::Kind::Counter),
                "{key}"
            );
        }
        assert_eq!(sink["merges_full"], 3.0);
        assert_eq!(sink.figure("map_hits").unwrap().unit, "lookups");
        assert_eq!(
            sink.figure("log_blocks").unwrap().kind,
            crate::stats::Kind::Gauge
        );
        assert_eq!(sink.iter().count(), 15);
    }
}
