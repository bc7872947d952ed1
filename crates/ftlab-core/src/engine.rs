//! The engine: turns host requests into page operations, passes them through the write
//! buffer to the FTL, keeps simulated time, and checks every read against the oracle.
//!
//! Choices (documented options):
//! - A write that covers part of a page writes the whole page (the papers' behaviour,
//!   superblock-ftl.txt §5.3: "w1 is essentially treated by FTL as a write request of 3
//!   pages"). With `rmw = true` a partly covered page that holds data is first read
//!   (a host flash read), then written: read-modify-write.
//! - A trim discards only the pages it covers entirely; partly covered pages keep their
//!   data (a device may not drop bytes the host did not discard).
//! - The pages of one request are handed to the buffer in groups, one group per logical
//!   block, so group-aware FTLs see the group size even without a buffer.
//! - Idle time: before each request, if the device went idle before the request's
//!   arrival, the buffer and then the FTL are offered the gap ([`IdleBudget`]); the
//!   operations they issue are timed as background work starting when the device went
//!   idle.
//! - A request of zero bytes is counted and completes at its arrival.
//! - A read of a page never written (or trimmed) is counted in
//!   [`HostStats::unmapped_reads`] and costs what the FTL's lookup costs: nothing for a
//!   table in RAM, a translation page read for a demand-paged scheme whose entry is not
//!   cached and whose translation page is on flash. No data page is read: a real device
//!   answers such a read with zeroes from its controller (the mapping says there is
//!   nothing to read), so charging a page read would invent flash work. On a short
//!   excerpt of a trace most reads can be of this kind; `precondition = "footprint"`
//!   writes the pages first (docs/report-notices.md, `unmapped_reads`).
//! - End of run: [`Engine::drain`] writes what the buffer still holds, as a device
//!   does on shutdown (a flush-cache); its operations are timed as background work
//!   after the last request, so no request waits for them.

use crate::buffer::{Backend, Buffer, BufferStats};
use crate::flash::{Flash, FlashStats, PowerCut};
use crate::ftl::{
    Answer, BufferView, Ftl, FtlStats, GroupInfo, IdleBudget, Query, RecoverError, TrimRecovery,
};
use crate::geometry::Geometry;
use crate::metrics::HostStats;
use crate::nand::Latencies;
use crate::oracle::{Oracle, Violation};
use crate::request::{Op, Request};
use crate::timing::{ClosedLoop, Timing};
use crate::units::{Lbn, Lpn, Nanos, PageTag, PageWrite};
use std::cell::RefCell;
use std::rc::Rc;
use thiserror::Error;

/// How much checking a run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// No read checks and no final read-back.
    Off,
    /// Every host read is checked; every written LPN is read back at the end.
    On,
    /// As `On`, plus deep invariant checks of flash, FTL and buffer every `n` requests.
    Deep {
        /// Requests between deep checks.
        every: u64,
    },
}

/// Engine settings.
#[derive(Clone, Copy, Debug)]
pub struct EngineConfig {
    /// Checking level.
    pub verify: Verify,
    /// Read-modify-write partly covered pages instead of writing them whole.
    pub rmw: bool,
    /// Offer idle gaps to the buffer and FTL.
    pub idle: bool,
    /// Closed-loop replay: `(queues, depth)` submission queues of `depth` outstanding
    /// requests each, trace timestamps ignored ([`ClosedLoop`]); `None` replays the
    /// timestamps (open loop).
    pub closed_loop: Option<(u32, u32)>,
    /// Pack the spare tags into one word a page and count versions in the bits left
    /// ([`Flash::with_packed_tags`], [`Oracle::wrapping`]) when the FTL allows it
    /// ([`Ftl::packed_tags`]), and keep no spare words or snapshot contents, which only
    /// a recovery reads ([`Flash::drop_recovery_data`]). Only for a run without power
    /// losses: a recovery orders versions, which wrapping versions do not keep, and
    /// reads those contents, so [`Engine::power_loss`] then fails
    /// ([`Engine::exact_versions`] undoes the choice before the first write).
    pub packed_tags: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            verify: Verify::On,
            rmw: false,
            idle: true,
            closed_loop: None,
            packed_tags: false,
        }
    }
}

/// Why a simulation stopped.
#[derive(Debug, Error)]
pub enum SimError {
    /// A host read returned something other than the last write.
    #[error("data error at request {request}: {violation}")]
    Violation {
        /// 1-based request number (0: the final read-back).
        request: u64,
        /// What was wrong.
        violation: Violation,
    },
    /// A request falls outside the logical capacity.
    #[error(
        "request {request} accesses bytes {offset}..{end}, beyond the logical capacity of \
         {capacity} bytes; enlarge it with --capacity or fold addresses into it with --fold"
    )]
    OutOfRange {
        /// 1-based request number.
        request: u64,
        /// First byte.
        offset: u64,
        /// One past the last byte.
        end: u64,
        /// Logical capacity in bytes.
        capacity: u64,
    },
    /// A deep invariant check failed.
    #[error("invariant broken after request {request}: {what}")]
    Check {
        /// 1-based request number.
        request: u64,
        /// The failed invariant.
        what: String,
    },
    /// A planned power loss struck inside the request ([`Engine::arm_power_cut`]). Not
    /// a failure: the request was not completed, and the caller must now call
    /// [`Engine::power_loss`].
    #[error("power lost inside request {request}: {}", cut.describe())]
    PowerCut {
        /// 1-based request number.
        request: u64,
        /// The operation it struck.
        cut: PowerCut,
    },
}

/// Everything measured, as plain data, for the report.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Host side.
    pub host: HostStats,
    /// Flash operations by cause.
    pub flash: FlashStats,
    /// Per-block erase counts: min, mean, max over the whole device life.
    pub erase_count: (u32, f64, u32),
    /// FTL counters.
    pub ftl: FtlStats,
    /// Mapping RAM.
    pub mapping_bytes: u64,
    /// Die time spent on operations in the measured phase, summed over dies (ns), and
    /// the number of dies ([`Timing::busy`]): utilisation is their ratio to
    /// `dies * sim_time`.
    pub device_busy: (u64, u32),
    /// Programs and erases suspended by host reads ([`Timing::suspensions`]); `None`
    /// without program/erase suspend.
    pub suspensions: Option<u64>,
    /// Host reads that went ahead of queued GC operations ([`Timing::preemptions`]);
    /// `None` without preemptible GC.
    pub preemptions: Option<u64>,
    /// Buffer counters.
    pub buffer: BufferStats,
    /// Power losses and their recoveries.
    pub recoveries: Vec<Recovery>,
    /// Host reads checked by the oracle (including the final read-back).
    pub reads_checked: u64,
    /// Whether the oracle was on.
    pub verified: bool,
}

/// What the end-of-run drain found and did ([`Engine::drain`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drain {
    /// Dirty pages the buffer held when the workload ended.
    pub dirty_pages: u64,
    /// Flash programs the drain caused (all causes: the pages, GC, map writes).
    pub programs: u64,
    /// Simulated time the drain took, after the device went idle.
    pub time_ns: u64,
}

/// What one power loss cost and lost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recovery {
    /// Requests submitted before the power loss struck.
    pub after_request: u64,
    /// LPNs whose newest data lived only in volatile RAM (the buffer, or the FTL's).
    pub lost_lpns: Vec<Lpn>,
    /// Flash operations the recovery performed.
    pub flash: FlashStats,
    /// Simulated time the recovery took (the device is busy meanwhile).
    pub time_ns: u64,
    /// The flash operation the power loss struck inside ([`Engine::arm_power_cut`]);
    /// `None` for a loss between two requests.
    pub torn: Option<PowerCut>,
    /// Power losses that struck the recovery itself before this one completed.
    pub recovery_cuts: u32,
}

/// A power loss under way: what RAM held when it struck, kept until a recovery
/// completes (a loss during recovery calls [`Engine::power_loss`] again).
#[derive(Debug)]
struct Down {
    buffer_lost: Vec<Lpn>,
    ftl_lost: Vec<Lpn>,
    torn: Option<PowerCut>,
    recovery_cuts: u32,
    /// Flash counters when the first recovery attempt began.
    before: FlashStats,
    /// When the first recovery attempt began.
    start: Nanos,
}

/// A simulated device and everything above it.
pub struct Engine {
    geo: Geometry,
    lat: Latencies,
    flash: Flash,
    ftl: Box<dyn Ftl>,
    buffer: Box<dyn Buffer>,
    timing: Box<dyn Timing>,
    oracle: Oracle,
    cfg: EngineConfig,
    host: HostStats,
    request_no: u64,
    group: Vec<PageWrite>,
    /// Counters of FTL and buffer instances replaced by power losses.
    carried: (FtlStats, BufferStats),
    recoveries: Vec<Recovery>,
    /// Response time of the last request submitted.
    last_response: Nanos,
    /// Closed-loop admission, if configured.
    closed: Option<ClosedLoop>,
    /// With power losses tracked ([`Engine::track_power_loss`]): the pages the FTL was
    /// handed since the oracle last heard of them (the FTL is wrapped in [`Tracked`]).
    handed: Option<Rc<RefCell<Vec<PageTag>>>>,
    /// The flash operation a power cut struck inside the last request, until
    /// [`Engine::power_loss`] takes it.
    cut: Option<PowerCut>,
    /// A power loss whose recovery has not completed.
    down: Option<Down>,
}

impl Engine {
    /// Assembles an engine over a fresh, erased flash.
    pub fn new(
        geo: &Geometry,
        lat: Latencies,
        ftl: Box<dyn Ftl>,
        buffer: Box<dyn Buffer>,
        mut timing: Box<dyn Timing>,
        cfg: EngineConfig,
    ) -> Engine {
        let (mut flash, mut oracle) = Engine::tables(geo, cfg.packed_tags && ftl.packed_tags());
        if cfg.packed_tags {
            // No power loss planned: what only a recovery reads need not be kept.
            flash.drop_recovery_data();
        }
        match timing.inline_clock() {
            Some(clock) => flash.install_clock(clock),
            None => flash.set_logging(timing.needs_ops()),
        }
        oracle.set_trim_recovery(ftl.trim_recovery());
        Engine {
            geo: geo.clone(),
            lat,
            flash,
            ftl,
            buffer,
            timing,
            oracle,
            cfg,
            host: HostStats::default(),
            request_no: 0,
            group: Vec::with_capacity(geo.pages_per_block as usize),
            carried: Default::default(),
            recoveries: Vec::new(),
            last_response: Nanos::ZERO,
            closed: cfg.closed_loop.map(|(q, d)| ClosedLoop::new(q, d)),
            handed: None,
            cut: None,
            down: None,
        }
    }

    /// Prepares for power losses: from now on the engine tells the oracle which
    /// versions reach the FTL, so that after a power loss every page is held to the
    /// newest version the FTL was handed (see [`crate::oracle`]); without this, a page
    /// whose newest data a buffer lost may read as any older version. Costs a map
    /// update per page written; a run with no power loss planned leaves it off. Call
    /// before the first request (later calls do nothing).
    pub fn track_power_loss(&mut self) {
        if self.handed.is_some() || self.request_no > 0 {
            return;
        }
        self.oracle.track_handoffs();
        let log = Rc::new(RefCell::new(Vec::new()));
        let inner = std::mem::replace(&mut self.ftl, Box::new(Unplugged));
        self.ftl = Box::new(Tracked {
            inner,
            log: log.clone(),
        });
        self.handed = Some(log);
    }

    /// Tells the oracle what the FTL was handed since it last heard (tracking only;
    /// one test and branch otherwise). Late is fine ([`Oracle::handed`]), as long as it
    /// comes before the next trim and the next power loss.
    #[inline(always)]
    fn note_handed(&mut self) {
        if self.handed.is_some() {
            self.pass_handed();
        }
    }

    #[cold]
    #[inline(never)]
    fn pass_handed(&mut self) {
        if let Some(log) = &self.handed {
            for t in log.borrow_mut().drain(..) {
                self.oracle.handed(t);
            }
        }
    }

    /// A fresh flash and oracle: packed tags and wrapping versions of the same width,
    /// or whole tags and exact versions.
    fn tables(geo: &Geometry, packed: bool) -> (Flash, Oracle) {
        // Fewer than 4 version bits (beyond 2^28 logical pages, 1 TiB of 4 KiB pages)
        // would let too many stale copies pass: such a device keeps whole tags.
        let bits = 32 - geo.lpn_bits();
        if packed && bits >= 4 {
            let flash = Flash::with_packed_tags(geo);
            debug_assert_eq!(flash.version_bits(), Some(bits));
            (flash, Oracle::wrapping(geo.logical_pages, bits))
        } else {
            (Flash::new(geo), Oracle::new(geo.logical_pages))
        }
    }

    /// Refuses a power loss on a flash that dropped what a recovery reads
    /// ([`Flash::drop_recovery_data`], a run with no power loss planned).
    fn recovery_data_kept(&self) -> Result<(), RecoverError> {
        if self.flash.dropped_recovery_data() {
            return Err(RecoverError::Failed(
                "no power loss was planned, so the flash kept no spare words or snapshot \
                 contents for a recovery to read; plan the power loss (--power-loss-at) to \
                 keep them"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Whether the spare tags are packed and versions wrap ([`EngineConfig::packed_tags`]).
    pub fn packed_tags(&self) -> bool {
        self.flash.version_bits().is_some()
    }

    /// Goes back to whole tags and exact versions, for a run that may meet a power loss
    /// it did not plan (a live server's, on request). Only before the first write.
    ///
    /// Panics if a page was programmed or a request submitted.
    pub fn exact_versions(&mut self) {
        if !self.packed_tags() && self.flash.keeps_recovery_data() {
            return;
        }
        assert!(
            self.flash.erased_blocks() == self.geo.blocks && self.request_no == 0,
            "exact_versions after the first write"
        );
        let (mut flash, mut oracle) = Engine::tables(&self.geo, false);
        match self.flash.take_clock() {
            Some(clock) => flash.install_clock(clock),
            None => flash.set_logging(self.timing.needs_ops()),
        }
        // The new oracle keeps what the old one was told (trim rule, tracking).
        oracle.set_trim_recovery(self.ftl.trim_recovery());
        if self.oracle.tracks_handoffs() {
            oracle.track_handoffs();
        }
        self.flash = flash;
        self.oracle = oracle;
    }

    /// The device geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The flash (for tests and inspection).
    pub fn flash(&self) -> &Flash {
        &self.flash
    }

    /// Requests submitted so far (including warm-up).
    pub fn requests_submitted(&self) -> u64 {
        self.request_no
    }

    /// The arrival of the next request: `trace_arrival` under open-loop replay; under
    /// closed-loop replay ([`EngineConfig::closed_loop`]) when a slot of its
    /// submission queue frees. Call once before each [`Engine::submit`], which then
    /// takes the request with this arrival.
    #[inline]
    pub fn admit(&mut self, trace_arrival: Nanos) -> Nanos {
        match &mut self.closed {
            None => trace_arrival,
            Some(c) => c.admit(),
        }
    }

    /// Plans a power loss inside the `ops`-th flash operation from now (1: the next; a
    /// copy counts as one), in the next [`Engine::submit`] or [`Engine::power_loss`]
    /// (the recovery): that operation is torn ([`Flash::arm_power_cut`]) and the call
    /// returns [`SimError::PowerCut`] or [`RecoverError::PowerCut`]. A request or
    /// recovery that does fewer operations leaves it armed: take it back with
    /// [`Engine::disarm_power_cut`]. Needs whole spare tags: plan power losses before
    /// the run ([`Engine::track_power_loss`]; packed tags refuse).
    pub fn arm_power_cut(&mut self, ops: u64) -> Result<(), RecoverError> {
        if self.handed.is_none() {
            return Err(RecoverError::Failed(
                "a power cut inside an operation needs the hand-offs tracked \
                 (Engine::track_power_loss before the first request)"
                    .into(),
            ));
        }
        if ops == 0 || ops >= 1 << 62 {
            return Err(RecoverError::Failed(format!(
                "a power cut at operation {ops}: operations count from 1"
            )));
        }
        if self.packed_tags() {
            return Err(RecoverError::Failed(
                "the run packs spare tags, which cannot mark a torn page; plan the power \
                 loss (--power-loss-at) to keep whole tags"
                    .into(),
            ));
        }
        self.recovery_data_kept()?;
        self.flash.arm_power_cut(ops);
        Ok(())
    }

    /// Takes back a power cut armed by [`Engine::arm_power_cut`] that has not struck;
    /// returns whether there was one.
    pub fn disarm_power_cut(&mut self) -> bool {
        self.flash.disarm_power_cut()
    }

    /// Serves one host request. With a power cut armed ([`Engine::arm_power_cut`]) it
    /// may stop inside the request with [`SimError::PowerCut`]; the caller then calls
    /// [`Engine::power_loss`].
    pub fn submit(&mut self, req: &Request) -> Result<(), SimError> {
        if !self.flash.power_cut_armed() {
            return self.serve(req);
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.serve(req))) {
            Ok(served) => served,
            Err(payload) => match payload.downcast::<PowerCut>() {
                Ok(cut) => Err(self.cut_short(req.arrival, *cut)),
                Err(other) => std::panic::resume_unwind(other),
            },
        }
    }

    /// After a power cut inside a request: the operations done before it are timed as
    /// background work (the device was busy with them), the versions the FTL was
    /// handed in the request stay uncertain (it never completed), and the engine waits
    /// for [`Engine::power_loss`].
    #[cold]
    fn cut_short(&mut self, arrival: Nanos, cut: PowerCut) -> SimError {
        let start = arrival.min(self.idle_at());
        self.background(start);
        if let Some(log) = &self.handed {
            for t in log.borrow_mut().drain(..) {
                self.oracle.in_flight(t);
            }
        }
        self.cut = Some(cut);
        SimError::PowerCut {
            request: self.request_no,
            cut,
        }
    }

    fn serve(&mut self, req: &Request) -> Result<(), SimError> {
        self.request_no += 1;
        if self.cfg.idle {
            self.offer_idle(req.arrival);
        }
        debug_assert!(self.flash.batch().is_empty());
        self.flash.clock_begin(req.arrival);
        self.host.requests += 1;
        let done = match req.op {
            Op::Read => self.read(req),
            Op::Write => self.write(req),
            Op::Trim => self.trim(req),
            Op::Flush => {
                self.host.flush_requests += 1;
                let mut be = Backend {
                    ftl: &mut *self.ftl,
                    flash: &mut self.flash,
                };
                self.buffer.flush(&mut be);
                Ok(())
            }
        };
        if let Err(e) = done {
            self.flash.clock_end();
            return Err(e);
        }
        self.note_handed();
        let served = if self.flash.clock().is_some() {
            self.flash.clock_end()
        } else {
            self.timing.serve(req.arrival, self.flash.batch())
        };
        self.flash.clear_log();
        if let Some(c) = &mut self.closed {
            c.complete(served.done);
        }
        self.host
            .record(req.op, req.arrival, served.done, served.wait);
        self.last_response = served.done.saturating_sub(req.arrival);
        if let Verify::Deep { every } = self.cfg.verify {
            if every > 0 && self.request_no.is_multiple_of(every) {
                self.check_deep()?;
            }
        }
        Ok(())
    }

    fn offer_idle(&mut self, arrival: Nanos) {
        let idle_at = self.idle_at();
        if idle_at >= arrival {
            return;
        }
        let mut budget = IdleBudget {
            remaining: arrival.saturating_sub(idle_at),
            latencies: self.lat,
        };
        self.flash.clock_begin(idle_at);
        let mut be = Backend {
            ftl: &mut *self.ftl,
            flash: &mut self.flash,
        };
        self.buffer.idle(&mut be, &mut budget);
        self.ftl.idle(&mut self.flash, &mut budget);
        self.note_handed();
        if !self.flash.batch().is_empty() {
            self.background(idle_at);
        } else {
            self.flash.clock_end();
        }
    }

    /// When the device's dies and channels are all free again.
    fn idle_at(&self) -> Nanos {
        match self.flash.clock() {
            Some(clock) => clock.idle_at(),
            None => self.timing.idle_at(),
        }
    }

    /// Times the operations since the last [`Flash::clear_log`] as background work from
    /// `start` (opened with [`Flash::clock_begin`] at `start` under an inline clock);
    /// returns when it ends and clears the log.
    fn background(&mut self, start: Nanos) -> Nanos {
        let end = if self.flash.clock().is_some() {
            self.flash.clock_end().done
        } else {
            self.timing.background(start, self.flash.batch())
        };
        self.flash.clear_log();
        end
    }

    /// A hint: a host request at byte `offset` comes a few requests from now. The
    /// oracle and the FTL fetch the memory its first page will touch (see
    /// [`crate::prefetch`]); nothing else changes, whatever the request turns out to be.
    /// An offset past the device is ignored.
    #[inline]
    pub fn prefetch(&mut self, offset: u64) {
        let lpn = offset >> self.geo.page_size.trailing_zeros();
        if lpn < self.geo.logical_pages as u64 {
            let lpn = Lpn(lpn as u32);
            self.oracle.prefetch(lpn);
            self.ftl.prefetch(&self.flash, lpn);
        }
    }

    /// Page range `[first, end)` of a request, or an out-of-range error.
    fn pages(&self, req: &Request) -> Result<(u32, u32), SimError> {
        let ps = self.geo.page_size as u64;
        let end_byte = req.offset.saturating_add(req.len);
        let capacity = self.geo.logical_bytes();
        if end_byte > capacity {
            return Err(SimError::OutOfRange {
                request: self.request_no,
                offset: req.offset,
                end: end_byte,
                capacity,
            });
        }
        // Page sizes are powers of two (geometry validation): shifts, not divisions,
        // on every request.
        debug_assert!(ps.is_power_of_two());
        let shift = ps.trailing_zeros();
        Ok((
            (req.offset >> shift) as u32,
            ((end_byte + (ps - 1)) >> shift) as u32,
        ))
    }

    fn read(&mut self, req: &Request) -> Result<(), SimError> {
        self.host.read_requests += 1;
        self.host.bytes_read += req.len;
        let (first, end) = self.pages(req)?;
        if self.flash.sub_page_reads() {
            return self.read_parts(req, first, end);
        }
        for lpn in first..end {
            if !self.read_page(Lpn(lpn))? {
                self.host.unmapped_reads += 1;
            }
        }
        self.host.pages_read += (end - first) as u64;
        Ok(())
    }

    /// [`Engine::read`] under sub-page transfers: each page's read moves only the
    /// bytes of it the request asks for over the channel (a request's first and last
    /// pages may be partly covered).
    #[inline(never)]
    fn read_parts(&mut self, req: &Request, first: u32, end: u32) -> Result<(), SimError> {
        let ps = self.geo.page_size as u64;
        let (lo, hi) = (req.offset, req.offset + req.len);
        for lpn in first..end {
            let page = lpn as u64 * ps;
            let part = (hi.min(page + ps) - lo.max(page)) as u32;
            let partial = part < ps as u32;
            if partial {
                self.flash.host_read_bytes(part);
            }
            let found = self.read_page(Lpn(lpn));
            if partial {
                self.flash.host_read_bytes(ps as u32);
            }
            if !found? {
                self.host.unmapped_reads += 1;
            }
        }
        self.host.pages_read += (end - first) as u64;
        Ok(())
    }

    /// Reads one page through the buffer and the FTL; returns whether it was mapped.
    #[inline]
    fn read_page(&mut self, lpn: Lpn) -> Result<bool, SimError> {
        let mut be = Backend {
            ftl: &mut *self.ftl,
            flash: &mut self.flash,
        };
        let found = self.buffer.read(&mut be, lpn);
        if self.cfg.verify != Verify::Off {
            self.oracle
                .check(lpn, found)
                .map_err(|violation| SimError::Violation {
                    request: self.request_no,
                    violation,
                })?;
        }
        Ok(found.is_some())
    }

    fn write(&mut self, req: &Request) -> Result<(), SimError> {
        self.host.write_requests += 1;
        self.host.bytes_written += req.len;
        let (first, end) = self.pages(req)?;
        if first == end {
            return Ok(());
        }
        if self.cfg.rmw {
            let ps = self.geo.page_size as u64;
            let head_partial = !req.offset.is_multiple_of(ps);
            let tail_partial = !(req.offset + req.len).is_multiple_of(ps);
            if head_partial && self.oracle.ever_written(Lpn(first)) {
                self.read_page(Lpn(first))?;
            }
            if tail_partial
                && (end - 1 != first || !head_partial)
                && self.oracle.ever_written(Lpn(end - 1))
            {
                self.read_page(Lpn(end - 1))?;
            }
        }
        self.write_pages(first, end, false);
        self.host.pages_written += (end - first) as u64;
        Ok(())
    }

    /// Writes LPNs `[first, end)` in one group per logical block, through the buffer
    /// (or straight to the FTL when `direct`).
    fn write_pages(&mut self, first: u32, end: u32, direct: bool) {
        let ppb = self.geo.pages_per_block;
        let mut lpn = first;
        while lpn < end {
            // A one-page write (the usual request) is its own run: no division.
            let block_end = if end == lpn + 1 {
                end
            } else {
                ((lpn / ppb + 1) * ppb).min(end)
            };
            self.group.clear();
            self.oracle
                .next_writes(Lpn(lpn), Lpn(block_end), &mut self.group);
            if direct {
                self.ftl.write(&mut self.flash, &self.group);
                // Untimed: drop the log as we go so it never grows with the device;
                // so for the pages handed (when tracked).
                self.flash.clear_log();
                self.note_handed();
            } else {
                let mut be = Backend {
                    ftl: &mut *self.ftl,
                    flash: &mut self.flash,
                };
                self.buffer.write(&mut be, &self.group);
            }
            lpn = block_end;
        }
    }

    fn trim(&mut self, req: &Request) -> Result<(), SimError> {
        self.host.trim_requests += 1;
        self.pages(req)?;
        let ps = self.geo.page_size as u64;
        let first = req.offset.div_ceil(ps) as u32;
        let end = ((req.offset + req.len) / ps) as u32;
        self.note_handed();
        for l in first..end.max(first) {
            let lpn = Lpn(l);
            self.oracle.trim(lpn);
            let mut be = Backend {
                ftl: &mut *self.ftl,
                flash: &mut self.flash,
            };
            self.buffer.trim(&mut be, lpn);
        }
        Ok(())
    }

    /// Writes every logical page once, sequentially and straight to the FTL, as the
    /// papers do before measuring. Not timed; call [`Engine::reset_measurement`] after.
    pub fn precondition_fill(&mut self) {
        let n = self.geo.logical_pages;
        self.write_pages(0, n, true);
        self.flash.clear_log();
        self.note_handed();
    }

    /// Writes every logical page whose bit is set in `pages` (one bit per LPN, LPN `n`
    /// at bit `n % 64` of word `n / 64`) once, in ascending order and straight to the
    /// FTL, like [`Engine::precondition_fill`] restricted to a workload's footprint.
    /// Not timed; returns the pages written.
    pub fn precondition_pages(&mut self, pages: &[u64]) -> u64 {
        let n = self.geo.logical_pages;
        let is_set = |l: u32| {
            pages
                .get(l as usize / 64)
                .is_some_and(|w| w >> (l % 64) & 1 != 0)
        };
        let mut written = 0u64;
        let mut l = 0u32;
        while l < n {
            let rest = pages.get(l as usize / 64).copied().unwrap_or(0) >> (l % 64);
            if rest == 0 {
                // Nothing more in this word.
                l = ((l as u64 / 64 + 1) * 64).min(n as u64) as u32;
                continue;
            }
            l += rest.trailing_zeros();
            if l >= n {
                break;
            }
            let first = l;
            while l < n && is_set(l) {
                l += 1;
            }
            self.write_pages(first, l, true);
            written += (l - first) as u64;
        }
        self.flash.clear_log();
        self.note_handed();
        written
    }

    /// The device comes to rest after preconditioning: the FTL writes back its dirty
    /// RAM state ([`Ftl::settle`]). Not timed; call [`Engine::reset_measurement`] after.
    pub fn settle(&mut self) {
        self.ftl.settle(&mut self.flash);
        self.flash.clear_log();
        self.note_handed();
    }

    /// Dirty pages the write buffer holds (data not yet handed to the FTL).
    pub fn dirty_pages(&self) -> u64 {
        let mut v = Vec::new();
        self.buffer.volatile_pages(&mut v);
        v.sort_unstable();
        v.dedup();
        v.len() as u64
    }

    /// End of run: the buffer writes every dirty page to the FTL, as on a host
    /// flush-cache (a device flushes its cache on shutdown). The operations count in
    /// the measured statistics and are timed as background work starting when the
    /// device went idle: they extend no request's response time.
    pub fn drain(&mut self) -> Drain {
        let dirty_pages = self.dirty_pages();
        if dirty_pages == 0 {
            return Drain::default();
        }
        let before = FlashStats::total(&self.flash.stats().programs);
        let start = self.idle_at();
        self.flash.clock_begin(start);
        let mut be = Backend {
            ftl: &mut *self.ftl,
            flash: &mut self.flash,
        };
        self.buffer.flush(&mut be);
        self.note_handed();
        let programs = FlashStats::total(&self.flash.stats().programs) - before;
        let end = self.background(start);
        Drain {
            dirty_pages,
            programs,
            time_ns: end.saturating_sub(start).0,
        }
    }

    /// Starts the measured phase: zeroes every counter and the clock, keeps the state
    /// (mapping, data, wear).
    pub fn reset_measurement(&mut self) {
        self.flash.reset_stats();
        self.flash.clear_log();
        self.ftl.reset_stats();
        self.buffer.reset_stats();
        match self.flash.clock_mut() {
            Some(clock) => clock.reset(),
            None => self.timing.reset(),
        }
        self.host = HostStats::default();
        self.carried = Default::default();
        self.recoveries.clear();
    }

    /// Power loss between two requests, or inside the last one ([`SimError::PowerCut`]):
    /// all RAM state is dropped, including data only in the write buffer or in the
    /// FTL's RAM ([`Ftl::volatile_pages`]; reported as lost, never silently). `ftl` and
    /// `buffer` are fresh instances (built as at the start of the run); the FTL
    /// rebuilds its state from flash ([`Ftl::recover`]) and the run continues. Recovery
    /// operations are timed as background work that later requests wait for.
    ///
    /// With a power cut armed ([`Engine::arm_power_cut`]) the recovery itself may be
    /// cut short: then this returns [`RecoverError::PowerCut`] and the caller calls it
    /// again with fresh instances (the loss is reported once, when a recovery
    /// completes).
    pub fn power_loss(
        &mut self,
        ftl: Box<dyn Ftl>,
        buffer: Box<dyn Buffer>,
    ) -> Result<&Recovery, RecoverError> {
        if self.packed_tags() {
            return Err(RecoverError::Failed(
                "the run packs spare tags and wraps versions (no power loss was planned), \
                 so the flash cannot tell the newest copy of a page; plan the power loss \
                 (--power-loss-at) to keep exact versions"
                    .into(),
            ));
        }
        self.recovery_data_kept()?;
        if self.down.is_none() {
            self.note_handed();
            let mut buffer_lost = Vec::new();
            self.buffer.volatile_pages(&mut buffer_lost);
            buffer_lost.sort_unstable();
            buffer_lost.dedup();
            let mut ftl_lost = Vec::new();
            self.ftl.volatile_pages(&mut ftl_lost);
            ftl_lost.sort_unstable();
            ftl_lost.dedup();
            self.down = Some(Down {
                buffer_lost,
                ftl_lost,
                torn: self.cut.take(),
                recovery_cuts: 0,
                before: *self.flash.stats(),
                start: self.idle_at(),
            });
        }
        self.carried.0.add_counters(&self.ftl.stats());
        self.carried.1.add_counters(&self.buffer.stats());
        self.ftl = match &self.handed {
            Some(log) => Box::new(Tracked {
                inner: ftl,
                log: log.clone(),
            }),
            None => ftl,
        };
        self.buffer = buffer;
        self.flash.power_cycle();
        let start = self.idle_at();
        self.flash.clock_begin(start);
        let recovered = if self.flash.power_cut_armed() {
            let ftl = &mut self.ftl;
            let flash = &mut self.flash;
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ftl.recover(flash))) {
                Ok(r) => {
                    self.flash.disarm_power_cut();
                    r
                }
                Err(payload) => match payload.downcast::<PowerCut>() {
                    Ok(cut) => Err(RecoverError::PowerCut(*cut)),
                    Err(other) => std::panic::resume_unwind(other),
                },
            }
        } else {
            self.ftl.recover(&mut self.flash)
        };
        let end = self.background(start);
        if let Err(e) = recovered {
            if let (RecoverError::PowerCut(_), Some(down)) = (&e, &mut self.down) {
                down.recovery_cuts += 1;
            }
            return Err(e);
        }
        let down = self.down.take().expect("set above");
        let ops = *self.flash.stats() - down.before;
        // Recovery hands nothing new (it rebuilds from flash).
        if let Some(log) = &self.handed {
            log.borrow_mut().clear();
        }
        self.oracle
            .power_loss(&down.buffer_lost, &down.ftl_lost, down.torn.is_some());
        let mut lost = down.buffer_lost;
        lost.extend_from_slice(&down.ftl_lost);
        lost.sort_unstable();
        lost.dedup();
        self.recoveries.push(Recovery {
            after_request: self.request_no,
            lost_lpns: lost,
            flash: ops,
            time_ns: end.saturating_sub(down.start).0,
            torn: down.torn,
            recovery_cuts: down.recovery_cuts,
        });
        Ok(self.recoveries.last().expect("just pushed"))
    }

    /// Every power loss of the measured phase, in order.
    pub fn recoveries(&self) -> &[Recovery] {
        &self.recoveries
    }

    /// Runs the deep invariant checks of flash, FTL and buffer now.
    pub fn check_deep(&self) -> Result<(), SimError> {
        let fail = |what: String| SimError::Check {
            request: self.request_no,
            what,
        };
        self.flash
            .check()
            .map_err(|e| fail(format!("flash: {e}")))?;
        self.ftl
            .check(&self.flash)
            .map_err(|e| fail(format!("ftl: {e}")))?;
        self.buffer
            .check()
            .map_err(|e| fail(format!("buffer: {e}")))
    }

    /// Host-side measurements since the last [`Engine::reset_measurement`] (no copy of
    /// the histogram, unlike [`Engine::outcome`]).
    pub fn host(&self) -> &HostStats {
        &self.host
    }

    /// Response time of the last request submitted (zero before the first).
    pub fn last_response(&self) -> Nanos {
        self.last_response
    }

    /// FTL counters of the measured phase, including those of the instances power
    /// losses replaced.
    pub fn ftl_stats(&self) -> FtlStats {
        let mut ftl = self.ftl.stats();
        ftl.add_counters(&self.carried.0);
        ftl
    }

    /// Buffer counters of the measured phase, including those of the instances power
    /// losses replaced.
    pub fn buffer_stats(&self) -> BufferStats {
        let mut buffer = self.buffer.stats();
        buffer.add_counters(&self.carried.1);
        buffer
    }

    /// The measurements so far.
    pub fn outcome(&self) -> Outcome {
        let ec = self.flash.erase_counts();
        let min = ec.iter().copied().min().unwrap_or(0);
        let max = ec.iter().copied().max().unwrap_or(0);
        let mean = ec.iter().map(|&c| c as f64).sum::<f64>() / ec.len().max(1) as f64;
        let ftl = self.ftl_stats();
        let buffer = self.buffer_stats();
        Outcome {
            host: self.host.clone(),
            flash: *self.flash.stats(),
            erase_count: (min, mean, max),
            ftl,
            mapping_bytes: self.ftl.mapping_bytes(),
            device_busy: {
                let (busy, dies) = match self.flash.clock() {
                    Some(clock) => clock.busy(),
                    None => self.timing.busy(),
                };
                (busy.0, dies)
            },
            suspensions: match self.flash.clock() {
                Some(clock) => clock.suspensions(),
                None => self.timing.suspensions(),
            },
            preemptions: match self.flash.clock() {
                Some(clock) => clock.preemptions(),
                None => self.timing.preemptions(),
            },
            buffer,
            recoveries: self.recoveries.clone(),
            reads_checked: self.oracle.reads_checked(),
            verified: self.cfg.verify != Verify::Off,
        }
    }

    /// Reads one page through the buffer and the FTL as a host read does, untimed and
    /// unchecked: what a test with a model of its own compares (the oracle is not
    /// consulted and counts nothing).
    pub fn read_unchecked(&mut self, lpn: Lpn) -> Option<PageTag> {
        let mut be = Backend {
            ftl: &mut *self.ftl,
            flash: &mut self.flash,
        };
        let found = self.buffer.read(&mut be, lpn);
        self.flash.clear_log();
        found
    }

    /// Reads back every LPN ever written, through the buffer and FTL, and checks it.
    /// Call after taking the [`Engine::outcome`]: these reads are not part of the
    /// measurement. Returns the number of pages checked.
    pub fn verify_readback(&mut self) -> Result<u64, SimError> {
        if self.cfg.verify == Verify::Off {
            return Ok(0);
        }
        if !self.buffer.holds_pages() {
            // Nothing above the FTL: it walks its map and the oracle in one pass.
            let checked = self
                .ftl
                .read_back(&mut self.flash, &mut self.oracle)
                .map_err(|violation| SimError::Violation {
                    request: 0,
                    violation,
                })?;
            self.flash.clear_log();
            return Ok(checked);
        }
        let mut checked = 0;
        for l in 0..self.geo.logical_pages {
            let lpn = Lpn(l);
            if !self.oracle.ever_written(lpn) {
                continue;
            }
            let mut be = Backend {
                ftl: &mut *self.ftl,
                flash: &mut self.flash,
            };
            let found = self.buffer.read(&mut be, lpn);
            self.flash.clear_log();
            self.oracle
                .check(lpn, found)
                .map_err(|violation| SimError::Violation {
                    request: 0,
                    violation,
                })?;
            checked += 1;
        }
        Ok(checked)
    }
}

/// An FTL that reports every page it is handed (to the engine, for the oracle): the
/// pages of [`Ftl::write`] and [`Ftl::write_with`], and the buffer's copies a
/// buffer-aware FTL writes itself ([`BufferView::mark_clean`]). Everything else passes
/// straight through.
struct Tracked {
    inner: Box<dyn Ftl>,
    log: Rc<RefCell<Vec<PageTag>>>,
}

/// A buffer view that reports the copies the FTL takes from the buffer.
struct TrackedView<'a> {
    inner: &'a mut dyn BufferView,
    log: &'a RefCell<Vec<PageTag>>,
}

impl BufferView for TrackedView<'_> {
    fn dirty_pages(&self, lbn: Lbn) -> u32 {
        self.inner.dirty_pages(lbn)
    }
    fn cold_dirty_pages(&self, lbn: Lbn) -> u32 {
        self.inner.cold_dirty_pages(lbn)
    }
    fn dirty_copy(&self, lpn: Lpn) -> Option<PageTag> {
        self.inner.dirty_copy(lpn)
    }
    fn mark_clean(&mut self, lpn: Lpn) {
        if let Some(t) = self.inner.dirty_copy(lpn) {
            self.log.borrow_mut().push(t);
        }
        self.inner.mark_clean(lpn);
    }
}

impl Ftl for Tracked {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        self.log.borrow_mut().extend_from_slice(pages);
        self.inner.write(flash, pages);
    }
    fn write_with(&mut self, flash: &mut Flash, pages: &[PageWrite], info: GroupInfo<'_>) {
        self.log.borrow_mut().extend_from_slice(pages);
        match info.buffer {
            None => self.inner.write_with(flash, pages, info),
            Some(inner) => {
                let mut view = TrackedView {
                    inner,
                    log: &self.log,
                };
                let info = GroupInfo {
                    padded: info.padded,
                    buffer: Some(&mut view),
                };
                self.inner.write_with(flash, pages, info);
            }
        }
    }
    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        self.inner.read(flash, lpn)
    }
    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.inner.trim(flash, lpn);
    }
    fn prefetch(&mut self, flash: &Flash, lpn: Lpn) {
        self.inner.prefetch(flash, lpn);
    }
    fn flush(&mut self, flash: &mut Flash) {
        self.inner.flush(flash);
    }
    fn settle(&mut self, flash: &mut Flash) {
        self.inner.settle(flash);
    }
    fn idle(&mut self, flash: &mut Flash, budget: &mut IdleBudget) {
        self.inner.idle(flash, budget);
    }
    fn check(&self, flash: &Flash) -> Result<(), String> {
        self.inner.check(flash)
    }
    fn stats(&self) -> FtlStats {
        self.inner.stats()
    }
    fn reset_stats(&mut self) {
        self.inner.reset_stats();
    }
    fn mapping_bytes(&self) -> u64 {
        self.inner.mapping_bytes()
    }
    fn recover(&mut self, flash: &mut Flash) -> Result<(), RecoverError> {
        self.inner.recover(flash)
    }
    fn recovers(&self) -> bool {
        self.inner.recovers()
    }
    fn volatile_pages(&self, out: &mut Vec<Lpn>) {
        self.inner.volatile_pages(out);
    }
    fn trim_recovery(&self) -> TrimRecovery {
        self.inner.trim_recovery()
    }
    fn query(&self, q: Query) -> Answer {
        self.inner.query(q)
    }
}

/// Holds the FTL's place for the moment [`Engine::track_power_loss`] wraps it.
struct Unplugged;

impl Ftl for Unplugged {
    fn write(&mut self, _: &mut Flash, _: &[PageWrite]) {}
    fn read(&mut self, _: &mut Flash, _: Lpn) -> Option<PageTag> {
        None
    }
    fn trim(&mut self, _: &mut Flash, _: Lpn) {}
    fn stats(&self) -> FtlStats {
        FtlStats::default()
    }
    fn reset_stats(&mut self) {}
    fn mapping_bytes(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::Passthrough;
    use crate::ftl::FtlStats;
    use crate::geometry::GeometryBuilder;
    use crate::timing::{ParallelTiming, SerialTiming};
    use crate::units::Ppn;

    /// A trivial FTL for engine tests: LPN n lives at PPN n, written once per erase.
    struct Direct;

    impl Ftl for Direct {
        fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
            for p in pages {
                flash.program(Ppn(p.lpn.0), *p, crate::flash::Cause::Host);
            }
        }
        fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
            flash
                .peek_tag(Ppn(lpn.0))
                .map(|_| flash.read(Ppn(lpn.0), crate::flash::Cause::Host))
        }
        fn trim(&mut self, _: &mut Flash, _: Lpn) {}
        fn stats(&self) -> FtlStats {
            FtlStats::default()
        }
        fn reset_stats(&mut self) {}
        fn mapping_bytes(&self) -> u64 {
            0
        }
    }

    #[test]
    fn precondition_does_not_grow_the_operation_log_with_the_device() {
        // Regression: the fill logged every program, holding 12 bytes per page (3 GiB
        // on a 1 TiB device) after the fill was over.
        let geo = GeometryBuilder {
            page_size: 2048,
            pages_per_block: 64,
            spare_bytes: 64,
            logical_bytes: 64 << 20,
            op_percent: 7.0,
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
            min_spare_blocks: 0,
        }
        .build()
        .unwrap();
        let lat = crate::nand::preset("slc-k9f1g16u0m").unwrap().latencies();
        // Parallel timing: it needs each operation, so the flash logs them.
        let mut e = Engine::new(
            &geo,
            lat,
            Box::new(Direct),
            Box::new(Passthrough::default()),
            Box::new(ParallelTiming::new(lat, 1, 1, geo.blocks, Nanos(0))),
            EngineConfig::default(),
        );
        // With power losses tracked, the pages handed to the FTL are passed on as
        // they go too (not held until the fill ends: 8 bytes a page).
        e.track_power_loss();
        e.precondition_fill();
        assert!(
            e.flash().log_capacity() <= 4096,
            "{}",
            e.flash().log_capacity()
        );
        let handed = e.handed.as_ref().expect("tracked").borrow().capacity();
        assert!(handed <= 4096, "{handed}");
        assert_eq!(e.verify_readback().unwrap(), geo.logical_pages as u64);
    }

    /// [`Direct`], recording the prefetch hints it is given.
    struct Hinted(std::rc::Rc<RefCell<Vec<u32>>>);

    impl Ftl for Hinted {
        fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
            Direct.write(flash, pages)
        }
        fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
            Direct.read(flash, lpn)
        }
        fn prefetch(&mut self, _: &Flash, lpn: Lpn) {
            self.0.borrow_mut().push(lpn.0);
        }
        fn trim(&mut self, _: &mut Flash, _: Lpn) {}
        fn stats(&self) -> FtlStats {
            FtlStats::default()
        }
        fn reset_stats(&mut self) {}
        fn mapping_bytes(&self) -> u64 {
            0
        }
    }

    #[test]
    fn prefetch_passes_the_first_page_of_an_offset_on_and_ignores_one_past_the_end() {
        let geo = GeometryBuilder {
            page_size: 2048,
            pages_per_block: 64,
            spare_bytes: 64,
            logical_bytes: 1 << 20,
            op_percent: 7.0,
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
            min_spare_blocks: 0,
        }
        .build()
        .unwrap();
        let lat = crate::nand::preset("slc-k9f1g16u0m").unwrap().latencies();
        let seen = std::rc::Rc::new(RefCell::new(Vec::new()));
        let mut e = Engine::new(
            &geo,
            lat,
            Box::new(Hinted(seen.clone())),
            Box::new(Passthrough::default()),
            Box::new(SerialTiming::new(lat)),
            EngineConfig::default(),
        );
        let last = geo.logical_bytes() - 1;
        for offset in [0, 2047, 2048, 5000, last, last + 1, u64::MAX] {
            e.prefetch(offset);
        }
        let last_page = geo.logical_pages - 1;
        assert_eq!(*seen.borrow(), [0, 0, 1, 2, last_page]);
    }

    #[test]
    fn precondition_pages_writes_exactly_the_pages_set() {
        let geo = GeometryBuilder {
            page_size: 2048,
            pages_per_block: 64,
            spare_bytes: 64,
            logical_bytes: 1 << 20,
            op_percent: 7.0,
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
            min_spare_blocks: 0,
        }
        .build()
        .unwrap();
        let lat = crate::nand::preset("slc-k9f1g16u0m").unwrap().latencies();
        let mut e = Engine::new(
            &geo,
            lat,
            Box::new(Direct),
            Box::new(Passthrough::default()),
            Box::new(SerialTiming::new(lat)),
            EngineConfig::default(),
        );
        let mut bits = vec![0u64; (geo.logical_pages as usize).div_ceil(64)];
        // The test FTL programs LPN n at PPN n: in order within each block.
        for l in [0u32, 1, 2, 64, 65, 66, 128] {
            bits[l as usize / 64] |= 1 << (l % 64);
        }
        assert_eq!(e.precondition_pages(&bits), 7);
        assert_eq!(FlashStats::total(&e.flash().stats().programs), 7);
        // A read of a written page is mapped; of another page, unmapped and counted.
        let read = |offset: u64| Request {
            arrival: Nanos(0),
            op: Op::Read,
            offset,
            len: 2048,
        };
        e.reset_measurement();
        e.submit(&read(128 * 2048)).unwrap();
        e.submit(&read(129 * 2048)).unwrap();
        let o = e.outcome();
        assert_eq!((o.host.pages_read, o.host.unmapped_reads), (2, 1));
    }
}
