//! The [`Buffer`] trait: write buffers placed between the host and the FTL, and
//! [`Passthrough`], the `none` buffer.
//!
//! A buffer is a write buffer (SCHEMES.md): read hits are served from it, read misses go
//! to the FTL. A flush hands the FTL a group of pages of one logical block in one call
//! ([`Backend::write`]), so group-aware FTLs see the group size. A host flush-cache
//! request empties the buffer ([`Buffer::flush`]).
//!
//! Required: [`Buffer::write`], [`Buffer::read`], [`Buffer::trim`], [`Buffer::flush`],
//! [`Buffer::stats`], [`Buffer::reset_stats`]. Idle work and deep checks default to
//! nothing.

use crate::flash::Flash;
use crate::ftl::{Answer, Ftl, GroupInfo, IdleBudget, Query};
use crate::units::{Lpn, PageTag, PageWrite};

/// What a buffer talks to: the FTL and the flash below it.
pub struct Backend<'a> {
    /// The FTL.
    pub ftl: &'a mut dyn Ftl,
    /// The flash under the FTL.
    pub flash: &'a mut Flash,
}

impl Backend<'_> {
    /// Hands a group of pages of one logical block to the FTL.
    #[inline]
    pub fn write(&mut self, pages: &[PageWrite]) {
        self.ftl.write(self.flash, pages);
    }

    /// Hands a group to the FTL with what the buffer knows about it (padding, a view
    /// of the buffer for buffer-aware GC).
    #[inline]
    pub fn write_with(&mut self, pages: &[PageWrite], info: GroupInfo<'_>) {
        self.ftl.write_with(self.flash, pages, info);
    }

    /// Reads a page through the FTL.
    #[inline]
    pub fn read(&mut self, lpn: Lpn) -> Option<PageTag> {
        self.ftl.read(self.flash, lpn)
    }

    /// Trims a page in the FTL.
    #[inline]
    pub fn trim(&mut self, lpn: Lpn) {
        self.ftl.trim(self.flash, lpn);
    }

    /// Asks the FTL a CO-OP question.
    pub fn query(&self, q: Query) -> Answer {
        self.ftl.query(q)
    }
}

crate::stats::counters! {
    /// Counters a buffer keeps. Fields a buffer does not have stay 0.
    pub struct BufferStats {
        /// Host page reads served from the buffer.
        read_hits: "pages",
        /// Host page writes that updated a page already buffered.
        write_hits: "pages",
        /// Host page reads that went to the FTL.
        read_misses: "pages",
        /// Host page writes that found no buffered copy.
        write_misses: "pages",
        /// Groups handed to the FTL.
        flushes: "groups",
        /// Pages handed to the FTL.
        pages_flushed: "pages",
        /// Pages read from flash to pad a block before flushing it.
        padding_reads: "pages",
    }
}

/// A write buffer.
pub trait Buffer {
    /// Host writes a group of pages of one logical block (ascending, no duplicates).
    fn write(&mut self, be: &mut Backend<'_>, pages: &[PageWrite]);

    /// Host reads a page: served from the buffer, or read through the FTL.
    fn read(&mut self, be: &mut Backend<'_>, lpn: Lpn) -> Option<PageTag>;

    /// Host trims a page: drop any buffered copy and trim it in the FTL.
    fn trim(&mut self, be: &mut Backend<'_>, lpn: Lpn);

    /// Host flush-cache: write every buffered page to the FTL, leaving the buffer clean.
    fn flush(&mut self, be: &mut Backend<'_>);

    /// Idle time between requests.
    fn idle(&mut self, _be: &mut Backend<'_>, _budget: &mut IdleBudget) {}

    /// Appends the LPNs whose newest data lives only in the buffer (dirty, not yet
    /// handed to the FTL). A power loss loses them; the engine reports them as lost.
    /// A buffer that holds dirty data must implement this, or the oracle will report
    /// the loss as a violation.
    fn volatile_pages(&self, _out: &mut Vec<Lpn>) {}

    /// Deep invariants.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Counters since the last reset.
    fn stats(&self) -> BufferStats;

    /// Zeroes the counters.
    fn reset_stats(&mut self);

    /// Whether this buffer may hold pages (and so answer reads itself). The default
    /// says yes; [`Passthrough`] never does, so the engine's end-of-run read-back goes
    /// straight to the FTL ([`crate::ftl::Ftl::read_back`]).
    fn holds_pages(&self) -> bool {
        true
    }
}

/// The `none` buffer: every request goes straight to the FTL.
#[derive(Debug, Default)]
pub struct Passthrough {
    stats: BufferStats,
}

impl Buffer for Passthrough {
    fn write(&mut self, be: &mut Backend<'_>, pages: &[PageWrite]) {
        self.stats.write_misses += pages.len() as u64;
        self.stats.flushes += 1;
        self.stats.pages_flushed += pages.len() as u64;
        be.write(pages);
    }

    fn read(&mut self, be: &mut Backend<'_>, lpn: Lpn) -> Option<PageTag> {
        self.stats.read_misses += 1;
        be.read(lpn)
    }

    fn trim(&mut self, be: &mut Backend<'_>, lpn: Lpn) {
        be.trim(lpn);
    }

    fn flush(&mut self, be: &mut Backend<'_>) {
        be.ftl.flush(be.flash);
    }

    fn holds_pages(&self) -> bool {
        false
    }

    fn stats(&self) -> BufferStats {
        self.stats.clone()
    }

    fn reset_stats(&mut self) {
        self.stats = BufferStats::default();
    }
}
