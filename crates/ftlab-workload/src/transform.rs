//! Composable transforms over record streams, each an iterator adapter that keeps
//! constant memory (the sort window holds at most its size; the compact fold holds one
//! entry per distinct block, at most the capacity's block count, the first 2^20 of them
//! allocated up front).
//!
//! A pass over a trace is `reader -> count -> rebase -> select devices -> sort window ->
//! time window -> cap gaps -> scale time -> lay devices side by side -> shift -> limit
//! -> skip bad -> flush every` ([`per_pass`]); [`Replay`] chains passes (warm-up passes
//! first) with continuous time; a fold ([`FoldModulo`] or [`FoldCompact`]) then brings
//! addresses into the capacity.
//!
//! Choices (each settles something the sources leave open):
//! - Rebase (on unless `rebase` is off, `--absolute-time`): every arrival is made
//!   relative to the first record the reader delivers (file order, before device
//!   selection, so the devices of a trace keep their relative timing), so a trace
//!   stamped with wall-clock epochs starts at 0 and the time window counts from the
//!   first record. A record stamped before the first one (disorder at the very start)
//!   arrives at 0.
//! - The count step sees the reader's records of the first pass before anything else:
//!   how many there are, how many arrive before the record preceding them (out of time
//!   order), and the first timestamp as stamped; the report states them.
//! - Device layout `side_by_side` gives each selected device its own region of the
//!   address space, in ascending device order, each region the device's highest byte
//!   touched rounded up to `align` bytes (the flash block); finding those spans takes a
//!   first read of the trace, in constant memory. `shared` (the default, and the only
//!   way SPC ASUs were replayed before) lets devices overlap.
//! - The shift (superblock-ftl.txt §5.3: "we have adjusted our traces by shifting sector
//!   numbers by a fixed offset") adds a signed number of sectors; a request it would move
//!   below 0 is a bad record.
//! - The time window keeps records with `start <= arrival < end` and makes `start` time
//!   0; reading stops at the first record at or past `end` (sort first for traces that
//!   are not time-ordered).
//! - The gap cap shortens every inter-arrival gap longer than the cap to the cap (idle
//!   periods compressed, bursts kept); the scale multiplies all times after that.
//! - The sort window emits records in arrival order once it holds `n` of them; a record
//!   older than one already emitted (disorder wider than the window) gets the time of the
//!   last one emitted and is counted in [`Counters::late_records`].
//! - The limit counts good records per pass; errors pass through it.
//! - Periodic flush-cache commands (co-op-buffer-ftl.txt §6.5: "a flush cache command
//!   ... can be periodically issued by the host or by itself", measured at "flush
//!   command intervals from 10 to 640 requests"): a flush request follows every `n`th
//!   request of a pass, at that request's arrival time. Reads, writes and trims count
//!   as requests; flushes already in the trace pass through and neither count nor
//!   restart the count; the count starts anew with each pass.
//! - Skipping bad records counts them in the first pass only, so the count is the trace's
//!   (a replayed trace does not multiply it); unreadable inputs are never skipped.
//! - Replay: pass `k + 1` starts at the latest arrival of passes `0..=k`: its first
//!   record arrives then and the others keep their distance to it, so time never runs
//!   backwards across passes and absolute timestamps (`--absolute-time`) do not add up
//!   pass after pass.
//! - Compact fold: addresses are remapped block by block (block = `unit` bytes, the
//!   flash block) in order of first touch, keeping the offset inside the block, so the
//!   trace's distinct blocks are packed at the start of the space and intra-block
//!   locality survives; a request whose blocks land apart is split into one request per
//!   run of contiguous blocks. The map is shared by all passes. The pieces are counted
//!   ([`Counters::split_records`], [`Counters::extra_pieces`]) so the report tells the
//!   trace's requests from what the engine was given.

use crate::{Record, RecordStream, TraceError};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;

/// Counts the transforms keep for the report.
#[derive(Debug, Default)]
pub struct Counters {
    /// Bad records skipped (first pass).
    pub skipped_records: Cell<u64>,
    /// Records the sort window could not place in order (first pass).
    pub late_records: Cell<u64>,
    /// Good records read in the first pass, after selection, window and limit.
    pub records_first_pass: Cell<u64>,
    /// Good records the reader delivered in the first pass, before any transform.
    pub records_read: Cell<u64>,
    /// Of those, records arriving before the record preceding them (as read).
    pub out_of_order: Cell<u64>,
    /// The first record's timestamp as stamped, ns (first pass).
    pub first_stamp_ns: Cell<Option<u64>>,
    /// Earliest and latest arrival of the first pass after every transform, ns.
    pub span_ns: Cell<Option<(u64, u64)>>,
    /// Records of the first pass per device, after every transform.
    pub devices: RefCell<BTreeMap<u32, u64>>,
    /// Records a fold split into pieces (all passes).
    pub split_records: Cell<u64>,
    /// Requests the splits added (pieces beyond the first of each split record).
    pub extra_pieces: Cell<u64>,
    /// Bad records the reader delivered in the first pass (as `records_read` counts the
    /// good ones, over the same records).
    pub errors_read: Cell<u64>,
    /// Records the device selection saw and kept (first pass): each filter counts what
    /// it saw itself, so its keep ratio holds whatever the limit or the sort window's
    /// read-ahead pulled through it.
    pub device_filter: Cell<(u64, u64)>,
    /// Records the time window saw and kept (first pass; those after its end are not
    /// read).
    pub window_filter: Cell<(u64, u64)>,
    /// The format the trace was read in (`auto` resolved), set by whoever opens it.
    pub format: RefCell<Option<String>>,
    /// What the opener found worth telling (the format chosen, a suspicious shape).
    pub notes: RefCell<Vec<crate::sniff::Note>>,
}

/// How devices share the address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every device addresses the same space (overlapping).
    Shared,
    /// Each device gets its own region, side by side.
    SideBySide,
}

impl Layout {
    /// Parses `shared` or `side_by_side` (also `side-by-side`).
    pub fn parse(text: &str) -> Option<Layout> {
        match text {
            "shared" => Some(Layout::Shared),
            "side_by_side" | "side-by-side" => Some(Layout::SideBySide),
            _ => None,
        }
    }
}

/// Every per-pass transform, as settings.
#[derive(Clone, Debug, PartialEq)]
pub struct TransformSpec {
    /// Devices (ASUs, disks) kept; empty keeps all.
    pub devices: Vec<u32>,
    /// How the kept devices share the space.
    pub layout: Layout,
    /// Sectors added to every offset (may be negative).
    pub shift_sectors: i64,
    /// Longest inter-arrival gap kept, in ns.
    pub max_gap: Option<Nanos>,
    /// Factor applied to every time (0.5: twice as fast).
    pub time_scale: f64,
    /// Time window `[start, end)` in trace time, ns.
    pub window: (Option<Nanos>, Option<Nanos>),
    /// Good records per pass.
    pub limit: Option<u64>,
    /// Records held to put the stream in time order (0: off).
    pub sort_window: usize,
    /// Skip and count bad records instead of stopping.
    pub skip_bad: bool,
    /// A flush-cache request after every `n` requests (co-op-buffer-ftl.txt §6.5).
    pub flush_every: Option<u64>,
    /// Make arrivals relative to the first record.
    pub rebase: bool,
}

impl Default for TransformSpec {
    fn default() -> Self {
        TransformSpec {
            devices: Vec::new(),
            layout: Layout::Shared,
            shift_sectors: 0,
            max_gap: None,
            time_scale: 1.0,
            window: (None, None),
            limit: None,
            sort_window: 0,
            skip_bad: false,
            flush_every: None,
            rebase: true,
        }
    }
}

impl TransformSpec {
    /// Checks the settings; the error names the config key.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return Err(format!(
                "time_scale (--time-scale) = {}: must be a positive factor",
                self.time_scale
            ));
        }
        if let (Some(s), Some(e)) = self.window {
            if e <= s {
                return Err(format!(
                    "window_end_s (--window-end, {} s) must be after window_start_s (--window-start, {} s)",
                    e.0 as f64 / 1e9,
                    s.0 as f64 / 1e9
                ));
            }
        }
        if self.flush_every == Some(0) {
            return Err("flush_every (--flush-every) = 0: must be at least 1 request".into());
        }
        if self.sort_window > 1 << 24 {
            return Err(format!(
                "sort_window (--sort-window) = {}: at most {} records",
                self.sort_window,
                1 << 24
            ));
        }
        Ok(())
    }
}

/// Builds one pass: `stream` through every per-pass transform of `spec`. `layout` is
/// the result of [`DeviceLayout::scan`] when `spec.layout` is side by side.
pub fn per_pass(
    stream: RecordStream,
    spec: &TransformSpec,
    layout: Option<&DeviceLayout>,
    counters: &Rc<Counters>,
    first_pass: bool,
) -> RecordStream {
    // With no transform between the two counting steps (generated workloads, a trace
    // read as it is), they are one layer: a boxed layer per request less.
    let direct = spec.devices.is_empty()
        && spec.sort_window <= 1
        && spec.window == (None, None)
        && !spec.rebase
        && spec.max_gap.is_none()
        && spec.time_scale == 1.0
        && layout.is_none()
        && spec.shift_sectors == 0
        && spec.limit.is_none()
        && !spec.skip_bad;
    if first_pass && direct {
        let s: RecordStream = Box::new(Tally::new(stream, counters.clone(), true, true));
        return with_flushes(s, spec);
    }
    let mut s = stream;
    if first_pass {
        s = Box::new(Tally::new(s, counters.clone(), true, false));
    }
    if spec.rebase {
        s = Box::new(Rebase::new(s));
    }
    if !spec.devices.is_empty() {
        let mut sel = SelectDevices::new(s, &spec.devices);
        if first_pass {
            sel = sel.counting(counters.clone());
        }
        s = Box::new(sel);
    }
    if spec.sort_window > 1 {
        let c = first_pass.then(|| counters.clone());
        s = Box::new(SortWindow::new(s, spec.sort_window, c));
    }
    if spec.window != (None, None) {
        let mut w = TimeWindow::new(s, spec.window.0, spec.window.1);
        if first_pass {
            w = w.counting(counters.clone());
        }
        s = Box::new(w);
    }
    if let Some(cap) = spec.max_gap {
        s = Box::new(CapGaps::new(s, cap));
    }
    if spec.time_scale != 1.0 {
        s = Box::new(ScaleTime::new(s, spec.time_scale));
    }
    if let Some(l) = layout {
        s = Box::new(l.clone().apply(s));
    }
    if spec.shift_sectors != 0 {
        s = Box::new(Shift::new(s, spec.shift_sectors));
    }
    if let Some(n) = spec.limit {
        s = Box::new(Limit::new(s, n));
    }
    if spec.skip_bad {
        s = Box::new(SkipBad::new(s, first_pass.then(|| counters.clone())));
    }
    if first_pass {
        s = Box::new(Tally::new(s, counters.clone(), false, true));
    }
    with_flushes(s, spec)
}

/// The last step of a pass: the flushes it inserts are not records of the workload.
fn with_flushes(s: RecordStream, spec: &TransformSpec) -> RecordStream {
    match spec.flush_every {
        Some(n) => Box::new(FlushEvery::new(s, n)),
        None => s,
    }
}

/// The counting steps of the first pass, in one adapter that counts in plain fields and
/// adds them to the shared [`Counters`] when the stream ends or is dropped, so the hot
/// path touches no `Cell` or map per record.
///
/// - As the reader's count (`reader`): what the reader delivered, before any transform
///   (good and bad records, records out of time order, the first stamp).
/// - As the pass's count (`pass`): the first pass as the engine gets it, after every
///   transform (records, their time span, records per device; the device of a run of
///   records from one device is counted once per run).
///
/// With no transform between the two (generated workloads, a trace read as it is), one
/// adapter is both: one layer per request instead of two.
struct Tally<I: Iterator<Item = Result<Record, TraceError>>> {
    inner: I,
    counters: Rc<Counters>,
    reader: bool,
    pass: bool,
    /// Good records since the last flush.
    records: u64,
    errors: u64,
    out_of_order: u64,
    prev: Option<u64>,
    span: Option<(u64, u64)>,
    /// The device of the current run of records and the run's length.
    device: u32,
    run: u64,
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Tally<I> {
    fn new(inner: I, counters: Rc<Counters>, reader: bool, pass: bool) -> Self {
        Tally {
            inner,
            counters,
            reader,
            pass,
            records: 0,
            errors: 0,
            out_of_order: 0,
            prev: None,
            span: None,
            device: 0,
            run: 0,
        }
    }

    /// Adds the current run of one device to the shared map.
    fn end_run(&mut self) {
        if self.run > 0 {
            *self
                .counters
                .devices
                .borrow_mut()
                .entry(self.device)
                .or_insert(0) += std::mem::take(&mut self.run);
        }
    }

    /// Adds what was counted since the last flush to the shared counters.
    fn flush(&mut self) {
        self.end_run();
        let records = std::mem::take(&mut self.records);
        let c = &self.counters;
        if self.reader {
            c.records_read.set(c.records_read.get() + records);
            c.errors_read
                .set(c.errors_read.get() + std::mem::take(&mut self.errors));
            c.out_of_order
                .set(c.out_of_order.get() + std::mem::take(&mut self.out_of_order));
        }
        if self.pass {
            c.records_first_pass
                .set(c.records_first_pass.get() + records);
            if let Some((a, b)) = self.span.take() {
                c.span_ns.set(Some(match c.span_ns.get() {
                    None => (a, b),
                    Some((x, y)) => (x.min(a), y.max(b)),
                }));
            }
        }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for Tally<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        match &item {
            Some(Ok(r)) => {
                let t = r.req.arrival.0;
                self.records += 1;
                if self.reader {
                    match self.prev {
                        Some(p) => self.out_of_order += u64::from(t < p),
                        None => {
                            if self.counters.first_stamp_ns.get().is_none() {
                                self.counters.first_stamp_ns.set(Some(t));
                            }
                        }
                    }
                    self.prev = Some(t);
                }
                if self.pass {
                    self.span = Some(match self.span {
                        None => (t, t),
                        Some((a, b)) => (a.min(t), b.max(t)),
                    });
                    if r.device != self.device {
                        self.end_run();
                        self.device = r.device;
                    }
                    self.run += 1;
                }
            }
            Some(Err(e)) => self.errors += u64::from(self.reader && e.is_record_error()),
            None => self.flush(),
        }
        item
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Drop for Tally<I> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Makes arrivals relative to the first record's (a record stamped earlier arrives at
/// 0).
pub struct Rebase<I> {
    inner: I,
    base: Option<u64>,
}

impl<I> Rebase<I> {
    /// Rebases `inner`.
    pub fn new(inner: I) -> Self {
        Rebase { inner, base: None }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for Rebase<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut r = match self.inner.next()? {
            Ok(r) => r,
            e => return Some(e),
        };
        let t = r.req.arrival.0;
        let base = *self.base.get_or_insert(t);
        r.req.arrival = Nanos(t.saturating_sub(base));
        Some(Ok(r))
    }
}

/// Keeps the records of some devices.
pub struct SelectDevices<I> {
    inner: I,
    devices: Vec<u32>,
    counters: Option<Rc<Counters>>,
}

impl<I> SelectDevices<I> {
    /// Keeps `devices` (sorted and deduplicated here).
    pub fn new(inner: I, devices: &[u32]) -> Self {
        let mut devices = devices.to_vec();
        devices.sort_unstable();
        devices.dedup();
        SelectDevices {
            inner,
            devices,
            counters: None,
        }
    }

    /// Counts what it sees and keeps in [`Counters::device_filter`].
    pub fn counting(mut self, counters: Rc<Counters>) -> Self {
        self.counters = Some(counters);
        self
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for SelectDevices<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.inner.next()? {
                Ok(r) => {
                    let keep = self.devices.binary_search(&r.device).is_ok();
                    if let Some(c) = &self.counters {
                        let (seen, kept) = c.device_filter.get();
                        c.device_filter.set((seen + 1, kept + u64::from(keep)));
                    }
                    if keep {
                        return Some(Ok(r));
                    }
                }
                other => return Some(other),
            }
        }
    }
}

/// Each device's region when devices are laid side by side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLayout {
    /// Device -> (base offset, region bytes), ascending by device.
    pub regions: BTreeMap<u32, (u64, u64)>,
}

impl DeviceLayout {
    /// Reads a whole pass to find each device's highest byte, and lays the devices out
    /// in ascending order, each region rounded up to `align` bytes. Bad records stop the
    /// scan unless `skip_bad`.
    pub fn scan(stream: RecordStream, align: u64, skip_bad: bool) -> Result<Self, TraceError> {
        assert!(align > 0);
        let mut end: BTreeMap<u32, u64> = BTreeMap::new();
        for item in stream {
            match item {
                Ok(r) => {
                    let e = end.entry(r.device).or_insert(0);
                    *e = (*e).max(r.req.offset.saturating_add(r.req.len));
                }
                Err(e) if skip_bad && e.is_record_error() => {}
                Err(e) => return Err(e),
            }
        }
        let mut base = 0u64;
        let mut regions = BTreeMap::new();
        for (dev, e) in end {
            let size = e.div_ceil(align).max(1) * align;
            regions.insert(dev, (base, size));
            base = base.saturating_add(size);
        }
        Ok(DeviceLayout { regions })
    }

    /// Bytes of all regions together.
    pub fn total_bytes(&self) -> u64 {
        self.regions.values().map(|r| r.0 + r.1).max().unwrap_or(0)
    }

    /// Moves each record into its device's region.
    pub fn apply<I>(self, inner: I) -> SideBySide<I> {
        SideBySide {
            inner,
            layout: self,
        }
    }
}

/// The adapter of [`DeviceLayout::apply`].
pub struct SideBySide<I> {
    inner: I,
    layout: DeviceLayout,
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for SideBySide<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut r = match self.inner.next()? {
            Ok(r) => r,
            e => return Some(e),
        };
        match self.layout.regions.get(&r.device) {
            Some(&(base, _)) => r.req.offset = r.req.offset.saturating_add(base),
            None => {
                return Some(Err(TraceError {
                    file: "(device layout)".into(),
                    line: r.line,
                    field: "device",
                    why: format!(
                        "device {} did not appear when the layout was scanned",
                        r.device
                    ),
                }))
            }
        }
        Some(Ok(r))
    }
}

/// Adds a signed number of sectors to every offset.
pub struct Shift<I> {
    inner: I,
    bytes: i128,
}

impl<I> Shift<I> {
    /// Shifts by `sectors` 512-byte sectors.
    pub fn new(inner: I, sectors: i64) -> Self {
        Shift {
            inner,
            bytes: sectors as i128 * 512,
        }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for Shift<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut r = match self.inner.next()? {
            Ok(r) => r,
            e => return Some(e),
        };
        let moved = r.req.offset as i128 + self.bytes;
        match u64::try_from(moved) {
            Ok(o) => r.req.offset = o,
            Err(_) => {
                return Some(Err(TraceError {
                    file: "(shift)".into(),
                    line: r.line,
                    field: "offset",
                    why: format!(
                        "shifting byte offset {} by {} sectors leaves the address space",
                        r.req.offset,
                        self.bytes / 512
                    ),
                }))
            }
        }
        Some(Ok(r))
    }
}

/// Keeps records in `[start, end)` and makes `start` time 0.
pub struct TimeWindow<I> {
    inner: I,
    start: u64,
    end: Option<u64>,
    done: bool,
    counters: Option<Rc<Counters>>,
}

impl<I> TimeWindow<I> {
    /// The window `[start, end)`; `None` leaves that side open.
    pub fn new(inner: I, start: Option<Nanos>, end: Option<Nanos>) -> Self {
        TimeWindow {
            inner,
            start: start.map_or(0, |n| n.0),
            end: end.map(|n| n.0),
            done: false,
            counters: None,
        }
    }

    /// Counts what it sees and keeps in [`Counters::window_filter`] (records after the
    /// window are not read).
    pub fn counting(mut self, counters: Rc<Counters>) -> Self {
        self.counters = Some(counters);
        self
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for TimeWindow<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let mut r = match self.inner.next()? {
                Ok(r) => r,
                e => return Some(e),
            };
            let t = r.req.arrival.0;
            if self.end.is_some_and(|e| t >= e) {
                self.done = true;
                return None;
            }
            let keep = t >= self.start;
            if let Some(c) = &self.counters {
                let (seen, kept) = c.window_filter.get();
                c.window_filter.set((seen + 1, kept + u64::from(keep)));
            }
            if !keep {
                continue;
            }
            r.req.arrival = Nanos(t - self.start);
            return Some(Ok(r));
        }
        None
    }
}

/// Shortens inter-arrival gaps longer than a cap.
pub struct CapGaps<I> {
    inner: I,
    cap: i128,
    prev: Option<(u64, u64)>,
}

impl<I> CapGaps<I> {
    /// Caps every gap at `cap`.
    pub fn new(inner: I, cap: Nanos) -> Self {
        CapGaps {
            inner,
            cap: cap.0 as i128,
            prev: None,
        }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for CapGaps<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut r = match self.inner.next()? {
            Ok(r) => r,
            e => return Some(e),
        };
        let t_in = r.req.arrival.0;
        let t_out = match self.prev {
            None => t_in,
            Some((p_in, p_out)) => {
                let gap = (t_in as i128 - p_in as i128).min(self.cap);
                (p_out as i128 + gap).max(0) as u64
            }
        };
        self.prev = Some((t_in, t_out));
        r.req.arrival = Nanos(t_out);
        Some(Ok(r))
    }
}

/// Multiplies every time by a factor.
pub struct ScaleTime<I> {
    inner: I,
    factor: f64,
}

impl<I> ScaleTime<I> {
    /// Scales by `factor` (> 0).
    pub fn new(inner: I, factor: f64) -> Self {
        assert!(factor.is_finite() && factor > 0.0);
        ScaleTime { inner, factor }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for ScaleTime<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut r = match self.inner.next()? {
            Ok(r) => r,
            e => return Some(e),
        };
        let t = (r.req.arrival.0 as f64 * self.factor).round();
        r.req.arrival = Nanos(if t >= u64::MAX as f64 {
            u64::MAX
        } else {
            t as u64
        });
        Some(Ok(r))
    }
}

/// Stops after `n` good records.
pub struct Limit<I> {
    inner: I,
    left: u64,
}

impl<I> Limit<I> {
    /// At most `n` good records.
    pub fn new(inner: I, n: u64) -> Self {
        Limit { inner, left: n }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for Limit<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let item = self.inner.next()?;
        if item.is_ok() {
            self.left -= 1;
        }
        Some(item)
    }
}

/// Inserts a flush-cache request after every `n` requests (see the module docs).
pub struct FlushEvery<I> {
    inner: I,
    every: u64,
    since: u64,
    pending: Option<Record>,
}

impl<I> FlushEvery<I> {
    /// A flush after every `n` requests (`n` at least 1).
    pub fn new(inner: I, n: u64) -> Self {
        assert!(n > 0, "flush interval of 0 requests");
        FlushEvery {
            inner,
            every: n,
            since: 0,
            pending: None,
        }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for FlushEvery<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(f) = self.pending.take() {
            return Some(Ok(f));
        }
        let r = match self.inner.next()? {
            Ok(r) => r,
            e => return Some(e),
        };
        if r.req.op != Op::Flush {
            self.since += 1;
            if self.since == self.every {
                self.since = 0;
                let mut f = r;
                f.req.op = Op::Flush;
                f.req.offset = 0;
                f.req.len = 0;
                self.pending = Some(f);
            }
        }
        Some(Ok(r))
    }
}

/// Drops bad records, counting them.
pub struct SkipBad<I> {
    inner: I,
    counters: Option<Rc<Counters>>,
}

impl<I> SkipBad<I> {
    /// Skips bad records; counts them in `counters` if given.
    pub fn new(inner: I, counters: Option<Rc<Counters>>) -> Self {
        SkipBad { inner, counters }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for SkipBad<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.inner.next()? {
                Err(e) if e.is_record_error() => {
                    if let Some(c) = &self.counters {
                        c.skipped_records.set(c.skipped_records.get() + 1);
                    }
                }
                other => return Some(other),
            }
        }
    }
}

/// Puts a nearly time-ordered stream in order with a window of `n` records.
///
/// The window is a deque kept sorted by arrival (equal arrivals in stream order): a
/// record in order is appended in O(1), one out of order is inserted at its place,
/// moving only the records it overtakes (or the shorter side); the earliest leaves
/// from the front. On an ordered trace this costs next to nothing (a binary heap cost
/// about 150 ns a record with 4096 held, measured on financial1 replayed 100 times).
pub struct SortWindow<I> {
    inner: I,
    window: VecDeque<Record>,
    n: usize,
    last_out: u64,
    exhausted: bool,
    counters: Option<Rc<Counters>>,
}

impl<I> SortWindow<I> {
    /// Holds up to `n` records.
    pub fn new(inner: I, n: usize, counters: Option<Rc<Counters>>) -> Self {
        SortWindow {
            inner,
            window: VecDeque::with_capacity(n.max(1)),
            n: n.max(1),
            last_out: 0,
            exhausted: false,
            counters,
        }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for SortWindow<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.exhausted && self.window.len() < self.n {
            match self.inner.next() {
                None => self.exhausted = true,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(rec)) => {
                    let t = rec.req.arrival.0;
                    match self.window.back() {
                        Some(last) if last.req.arrival.0 > t => {
                            // After every held record of the same time or earlier.
                            let at = self.window.partition_point(|r| r.req.arrival.0 <= t);
                            self.window.insert(at, rec);
                        }
                        _ => self.window.push_back(rec),
                    }
                }
            }
        }
        let mut rec = self.window.pop_front()?;
        if rec.req.arrival.0 < self.last_out {
            rec.req.arrival = Nanos(self.last_out);
            if let Some(c) = &self.counters {
                c.late_records.set(c.late_records.get() + 1);
            }
        }
        self.last_out = rec.req.arrival.0;
        Some(Ok(rec))
    }
}

/// Opens pass `k` of a workload.
pub type OpenPass = Box<dyn FnMut(u32) -> Result<RecordStream, TraceError>>;

/// Chains `passes` passes of a workload, numbering them and keeping time continuous.
pub struct Replay {
    open: OpenPass,
    passes: u32,
    pass: u32,
    current: Option<RecordStream>,
    /// Where the current pass starts (the latest arrival of the passes before it).
    offset: u64,
    /// The first arrival of the current pass, as the pass delivers it.
    first: Option<u64>,
    latest: u64,
}

impl Replay {
    /// `passes` passes (warm-up ones included), each opened by `open(pass)`.
    pub fn new(open: OpenPass, passes: u32) -> Self {
        Replay {
            open,
            passes,
            pass: 0,
            current: None,
            offset: 0,
            first: None,
            latest: 0,
        }
    }
}

impl Iterator for Replay {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.pass >= self.passes {
                return None;
            }
            if self.current.is_none() {
                match (self.open)(self.pass) {
                    Ok(s) => self.current = Some(s),
                    Err(e) => {
                        self.pass = self.passes;
                        return Some(Err(e));
                    }
                }
            }
            let cur = self.current.as_mut().expect("opened above");
            match cur.next() {
                Some(Ok(mut r)) => {
                    r.pass = self.pass;
                    let t = r.req.arrival.0;
                    // Pass 0 keeps its times; a later one starts where the ones before
                    // ended.
                    let first = *self.first.get_or_insert(if self.pass == 0 { 0 } else { t });
                    r.req.arrival = Nanos(t.saturating_sub(first).saturating_add(self.offset));
                    self.latest = self.latest.max(r.req.arrival.0);
                    return Some(Ok(r));
                }
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    self.current = None;
                    self.pass += 1;
                    self.offset = self.latest;
                    self.first = None;
                }
            }
        }
    }
}

/// Folds a request into the capacity (modulo), keeping it whole: an offset past the end
/// wraps; a request that would then cross the end is moved back to end at the last
/// page boundary that fits it. A request longer than the capacity is left alone (the
/// engine refuses it).
pub fn fold_modulo(req: &mut Request, capacity: u64, page_size: u64) {
    if req.offset.saturating_add(req.len) <= capacity || req.len > capacity {
        return;
    }
    req.offset %= capacity;
    if req.offset + req.len > capacity {
        req.offset = (capacity - req.len) / page_size * page_size;
    }
}

/// The modulo fold as an adapter.
pub struct FoldModulo<I> {
    inner: I,
    capacity: u64,
    page_size: u64,
}

impl<I> FoldModulo<I> {
    /// Folds into `capacity` bytes; `page_size` aligns moved requests.
    pub fn new(inner: I, capacity: u64, page_size: u64) -> Self {
        FoldModulo {
            inner,
            capacity,
            page_size,
        }
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for FoldModulo<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut item = self.inner.next()?;
        if let Ok(r) = &mut item {
            fold_modulo(&mut r.req, self.capacity, self.page_size);
        }
        Some(item)
    }
}

/// Remaps the distinct blocks a trace touches onto `0..capacity` in order of first
/// touch.
pub struct FoldCompact<I> {
    inner: I,
    unit: u64,
    units: u64,
    map: HashMap<u64, u64>,
    pending: Option<Record>,
    counters: Option<Rc<Counters>>,
}

impl<I> FoldCompact<I> {
    /// Blocks of `unit` bytes, `capacity` bytes in all (at least one block).
    pub fn new(inner: I, capacity: u64, unit: u64) -> Self {
        assert!(unit > 0);
        let units = capacity / unit;
        assert!(units > 0, "capacity below one block");
        FoldCompact {
            inner,
            unit,
            units,
            // Sized for up to 2^20 blocks up front (16 MiB); a trace touching more grows
            // it, at most to the capacity's block count.
            map: HashMap::with_capacity(units.min(1 << 20) as usize),
            pending: None,
            counters: None,
        }
    }

    /// Counts split records and their extra pieces in `counters`.
    pub fn counting(mut self, counters: Rc<Counters>) -> Self {
        self.counters = Some(counters);
        self
    }

    /// Distinct blocks mapped so far.
    pub fn blocks_used(&self) -> u64 {
        self.map.len() as u64
    }

    fn map_unit(&mut self, u: u64, line: u64) -> Result<u64, TraceError> {
        if let Some(&m) = self.map.get(&u) {
            return Ok(m);
        }
        let next = self.map.len() as u64;
        if next >= self.units {
            return Err(TraceError {
                file: "(fold compact)".into(),
                line,
                field: "offset",
                why: format!(
                    "the trace touches more than {} distinct {}-byte blocks, more than the \
                     capacity holds; enlarge --capacity or use --fold modulo",
                    self.units, self.unit
                ),
            });
        }
        self.map.insert(u, next);
        Ok(next)
    }

    fn piece(&mut self, mut r: Record) -> Result<Record, TraceError> {
        let unit = self.unit;
        let first = r.req.offset / unit;
        let mapped = self.map_unit(first, r.line)?;
        let end = r.req.offset.saturating_add(r.req.len);
        let mut stop = (first + 1).saturating_mul(unit);
        let mut expect = mapped + 1;
        while stop < end {
            let u = stop / unit;
            if self.map_unit(u, r.line)? != expect {
                break;
            }
            expect += 1;
            stop = stop.saturating_add(unit);
        }
        let inside = r.req.offset % unit;
        let take = end.min(stop) - r.req.offset;
        if take < r.req.len {
            let mut rest = r;
            rest.req.offset += take;
            rest.req.len -= take;
            self.pending = Some(rest);
            r.req.len = take;
        }
        r.req.offset = mapped * unit + inside;
        Ok(r)
    }
}

impl<I: Iterator<Item = Result<Record, TraceError>>> Iterator for FoldCompact<I> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (r, rest) = match self.pending.take() {
            Some(r) => (r, true),
            None => match self.inner.next()? {
                Ok(r) => (r, false),
                e => return Some(e),
            },
        };
        let out = self.piece(r);
        if let Some(c) = &self.counters {
            if rest {
                c.extra_pieces.set(c.extra_pieces.get() + 1);
            } else if self.pending.is_some() {
                c.split_records.set(c.split_records.get() + 1);
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t: u64, dev: u32, off: u64, len: u64) -> Record {
        Record {
            req: Request {
                arrival: Nanos(t),
                op: Op::Write,
                offset: off,
                len,
            },
            device: dev,
            line: t + 1,
            pass: 0,
        }
    }

    fn stream(v: Vec<Record>) -> RecordStream {
        Box::new(v.into_iter().map(Ok))
    }

    fn ok(s: impl Iterator<Item = Result<Record, TraceError>>) -> Vec<Record> {
        s.map(Result::unwrap).collect()
    }

    fn times(v: &[Record]) -> Vec<u64> {
        v.iter().map(|r| r.req.arrival.0).collect()
    }

    #[test]
    fn flush_every_follows_every_nth_request() {
        let mut v: Vec<Record> = (0..7).map(|t| rec(t, 0, t * 4096, 4096)).collect();
        v[2].req.op = Op::Read;
        v[3].req.op = Op::Flush; // a trace's own flush: passes, does not count
        let out = ok(FlushEvery::new(stream(v.clone()), 2));
        let ops: Vec<(u64, Op)> = out.iter().map(|r| (r.req.arrival.0, r.req.op)).collect();
        use Op::*;
        assert_eq!(
            ops,
            vec![
                (0, Write),
                (1, Write),
                (1, Flush),
                (2, Read),
                (3, Flush),
                (4, Write),
                (4, Flush),
                (5, Write),
                (6, Write),
                (6, Flush),
            ]
        );
        let flush = &out[2];
        assert_eq!((flush.req.offset, flush.req.len, flush.line), (0, 0, 2));
        // Every request: a flush after each; errors pass through uncounted.
        let mut items: Vec<Result<Record, TraceError>> = v[..2].iter().cloned().map(Ok).collect();
        items.insert(
            1,
            Err(TraceError {
                file: "t".into(),
                line: 9,
                field: "op",
                why: "bad".into(),
            }),
        );
        let out: Vec<_> = FlushEvery::new(items.into_iter(), 1).collect();
        let kinds: Vec<Option<Op>> = out
            .iter()
            .map(|r| r.as_ref().ok().map(|r| r.req.op))
            .collect();
        assert_eq!(
            kinds,
            vec![Some(Write), Some(Flush), None, Some(Write), Some(Flush)]
        );
        let spec = TransformSpec {
            flush_every: Some(0),
            ..TransformSpec::default()
        };
        assert!(spec.validate().unwrap_err().contains("flush_every"));
    }

    #[test]
    fn select_keeps_listed_devices() {
        let v = vec![
            rec(0, 0, 0, 1),
            rec(1, 3, 0, 1),
            rec(2, 1, 0, 1),
            rec(3, 3, 0, 1),
        ];
        let out = ok(SelectDevices::new(stream(v), &[3, 1, 3]));
        assert_eq!(
            out.iter().map(|r| r.device).collect::<Vec<_>>(),
            vec![3, 1, 3]
        );
    }

    #[test]
    fn side_by_side_layout() {
        let v = vec![
            rec(0, 2, 0, 4096),
            rec(1, 0, 10_000, 512),
            rec(2, 2, 65536, 100),
        ];
        let layout = DeviceLayout::scan(stream(v.clone()), 16384, false).unwrap();
        // device 0 ends at 10512 -> 16384; device 2 ends at 65636 -> 81920.
        assert_eq!(layout.regions[&0], (0, 16384));
        assert_eq!(layout.regions[&2], (16384, 81920));
        assert_eq!(layout.total_bytes(), 98304);
        let out = ok(layout.apply(stream(v)));
        let offs: Vec<u64> = out.iter().map(|r| r.req.offset).collect();
        assert_eq!(offs, vec![16384, 10_000, 16384 + 65536]);
        let unknown = DeviceLayout {
            regions: BTreeMap::new(),
        };
        let e = unknown.apply(stream(vec![rec(0, 9, 0, 1)])).next().unwrap();
        assert_eq!(e.unwrap_err().field, "device");
    }

    #[test]
    fn shift_moves_and_refuses_negative() {
        let v = vec![rec(0, 0, 63 * 512, 4096), rec(1, 0, 0, 512)];
        let out: Vec<_> = Shift::new(stream(v), -63).collect();
        assert_eq!(out[0].clone().unwrap().req.offset, 0);
        let e = out[1].clone().unwrap_err();
        assert_eq!((e.field, e.line), ("offset", 2));
        let out = ok(Shift::new(stream(vec![rec(0, 0, 0, 1)]), 1));
        assert_eq!(out[0].req.offset, 512);
    }

    #[test]
    fn time_window_gaps_and_scale() {
        let v: Vec<Record> = [0, 10, 20, 1000, 1010, 5000]
            .iter()
            .map(|&t| rec(t, 0, 0, 1))
            .collect();
        let w = ok(TimeWindow::new(
            stream(v.clone()),
            Some(Nanos(10)),
            Some(Nanos(1010)),
        ));
        assert_eq!(times(&w), vec![0, 10, 990]);
        let c = ok(CapGaps::new(stream(v.clone()), Nanos(100)));
        assert_eq!(times(&c), vec![0, 10, 20, 120, 130, 230]);
        let s = ok(ScaleTime::new(stream(v), 0.5));
        assert_eq!(times(&s), vec![0, 5, 10, 500, 505, 2500]);
        // A gap cap keeps out-of-order steps backwards.
        let back = vec![rec(100, 0, 0, 1), rec(50, 0, 0, 1), rec(500, 0, 0, 1)];
        assert_eq!(
            times(&ok(CapGaps::new(stream(back), Nanos(10)))),
            vec![100, 50, 60]
        );
    }

    #[test]
    fn limit_counts_good_records_and_skip_bad_counts() {
        let bad = TraceError {
            file: "f".into(),
            line: 2,
            field: "op",
            why: "x".into(),
        };
        let items = vec![
            Ok(rec(0, 0, 0, 1)),
            Err(bad.clone()),
            Ok(rec(1, 0, 0, 1)),
            Ok(rec(2, 0, 0, 1)),
        ];
        let lim: Vec<_> = Limit::new(items.clone().into_iter(), 2).collect();
        assert_eq!(lim.len(), 3);
        let c = Rc::new(Counters::default());
        let kept: Vec<_> = SkipBad::new(items.into_iter(), Some(c.clone())).collect();
        assert!(kept.iter().all(Result::is_ok));
        assert_eq!((kept.len(), c.skipped_records.get()), (3, 1));
        let fatal = TraceError { line: 0, ..bad };
        let mut s = SkipBad::new(vec![Err(fatal)].into_iter(), None);
        assert!(
            s.next().unwrap().is_err(),
            "unreadable input is never skipped"
        );
    }

    #[test]
    fn sort_window_orders_within_its_size() {
        let v: Vec<Record> = [5, 3, 4, 1, 9, 8, 2]
            .iter()
            .map(|&t| rec(t, 0, 0, 1))
            .collect();
        let c = Rc::new(Counters::default());
        let out = ok(SortWindow::new(stream(v.clone()), 3, Some(c.clone())));
        // Window 3: 3 out first; 1 arrives after it (late, gets 3); 2 arrives after 5.
        assert_eq!(times(&out), vec![3, 3, 4, 5, 5, 8, 9]);
        assert_eq!(c.late_records.get(), 2);
        let big = ok(SortWindow::new(stream(v), 16, None));
        assert_eq!(times(&big), vec![1, 2, 3, 4, 5, 8, 9]);
        // Equal arrivals leave in stream order (the line tells them apart).
        let mut ties = vec![
            rec(5, 0, 0, 1),
            rec(3, 0, 0, 1),
            rec(5, 0, 0, 1),
            rec(3, 0, 0, 1),
        ];
        for (i, r) in ties.iter_mut().enumerate() {
            r.line = i as u64 + 1;
        }
        let lines: Vec<u64> = ok(SortWindow::new(stream(ties), 8, None))
            .iter()
            .map(|r| r.line)
            .collect();
        assert_eq!(lines, vec![2, 4, 1, 3]);
    }

    #[test]
    fn epoch_times_are_rebased_to_the_first_record() {
        let epoch = 1_400_000_000_000_000_000u64;
        let v = vec![
            rec(epoch + 5, 0, 0, 1),
            rec(epoch + 3, 0, 0, 1), // stamped before the first: arrives at 0
            rec(epoch + 100, 0, 0, 1),
        ];
        assert_eq!(times(&ok(Rebase::new(stream(v.clone())))), vec![0, 0, 95]);
        let c = Rc::new(Counters::default());
        let spec = TransformSpec {
            window: (Some(Nanos(50)), None),
            ..Default::default()
        };
        let out = ok(per_pass(stream(v), &spec, None, &c, true));
        assert_eq!(
            times(&out),
            vec![45],
            "the window counts from the first record"
        );
        assert_eq!(c.first_stamp_ns.get(), Some(epoch + 5));
        assert_eq!((c.records_read.get(), c.out_of_order.get()), (3, 1));
        assert_eq!(c.span_ns.get(), Some((45, 45)));
    }

    #[test]
    fn replay_of_absolute_times_starts_each_pass_where_the_last_ended() {
        let t0 = 1_000_000;
        let open: OpenPass =
            Box::new(move |_| Ok(stream(vec![rec(t0, 0, 0, 1), rec(t0 + 100, 0, 0, 1)])));
        let out = ok(Replay::new(open, 3));
        assert_eq!(
            times(&out),
            vec![t0, t0 + 100, t0 + 100, t0 + 200, t0 + 200, t0 + 300]
        );
    }

    #[test]
    fn fold_compact_counts_the_pieces_of_split_records() {
        let unit = 1000;
        let v = vec![
            rec(0, 0, 500, 200),
            rec(1, 0, 5_900, 300),
            rec(2, 0, 800, 400),
        ];
        let c = Rc::new(Counters::default());
        let out = ok(FoldCompact::new(stream(v), 10 * unit, unit).counting(c.clone()));
        // Blocks 5 and 6 are new, so they map side by side (one piece); block 0 is
        // mapped and block 1 new (mapped after 5 and 6): two pieces.
        assert_eq!(out.len(), 4);
        assert_eq!((c.split_records.get(), c.extra_pieces.get()), (1, 1));
    }

    #[test]
    fn replay_numbers_passes_and_keeps_time_moving() {
        let open: OpenPass = Box::new(|_| Ok(stream(vec![rec(0, 0, 0, 1), rec(100, 0, 0, 1)])));
        let out = ok(Replay::new(open, 3));
        assert_eq!(times(&out), vec![0, 100, 100, 200, 200, 300]);
        let passes: Vec<u32> = out.iter().map(|r| r.pass).collect();
        assert_eq!(passes, vec![0, 0, 1, 1, 2, 2]);
    }

    #[test]
    fn fold_modulo_keeps_requests_whole() {
        let mut r = rec(0, 0, 10_000, 1000).req;
        fold_modulo(&mut r, 8192, 2048);
        assert_eq!(r.offset, 10_000 % 8192);
        let mut r = rec(0, 0, 8192 + 7000, 2048).req;
        fold_modulo(&mut r, 8192, 2048);
        assert_eq!((r.offset, r.len), (6144, 2048));
        let mut r = rec(0, 0, 100, 10).req;
        fold_modulo(&mut r, 8192, 2048);
        assert_eq!(r.offset, 100);
    }

    #[test]
    fn fold_compact_packs_blocks_in_first_touch_order() {
        let unit = 1000;
        let v = vec![
            rec(0, 0, 900_500, 200), // block 900 -> 0
            rec(1, 0, 5_000, 10),    // block 5 -> 1
            rec(2, 0, 900_900, 300), // blocks 900 (0) and 901 (new -> 2): split
            rec(3, 0, 7_990, 2000),  // blocks 7, 8, 9 new -> 3, 4, 5: one piece
        ];
        let out = ok(FoldCompact::new(stream(v), 10 * unit, unit));
        let got: Vec<(u64, u64)> = out.iter().map(|r| (r.req.offset, r.req.len)).collect();
        assert_eq!(
            got,
            vec![
                (500, 200),
                (1000, 10),
                (900, 100),
                (2000, 200),
                (3990, 2000)
            ]
        );
        let over = vec![rec(0, 0, 0, 1), rec(1, 0, 5000, 1), rec(2, 0, 9000, 1)];
        let res: Vec<_> = FoldCompact::new(stream(over), 2 * unit, unit).collect();
        assert!(res[1].is_ok());
        let e = res[2].clone().unwrap_err();
        assert_eq!((e.field, e.line), ("offset", 3));
    }

    /// The counting steps keep their counts in plain fields and hand them over when the
    /// stream ends or is dropped: a pass left half-read (a downstream `take`, a run that
    /// stopped on a failure) still reports what it read, and the one-layer form (no
    /// transform between the steps) counts as the two-layer one does.
    #[test]
    fn first_pass_counts_survive_a_half_read_pass() {
        let v = vec![
            rec(50, 1, 0, 512),
            rec(10, 1, 0, 512),
            rec(20, 2, 512, 512),
            rec(30, 1, 1024, 512),
        ];
        for rebase in [false, true] {
            let spec = TransformSpec {
                rebase,
                ..Default::default()
            };
            let c = Rc::new(Counters::default());
            let c2 = Rc::new(Counters::default());
            assert_eq!(
                ok(per_pass(stream(v.clone()), &spec, None, &c2, true)).len(),
                4
            );
            // Dropped after three: three read, one out of order, devices 1 and 2.
            let s = per_pass(stream(v.clone()), &spec, None, &c, true).take(3);
            drop(s.collect::<Vec<_>>());
            assert_eq!(c.records_read.get(), 3, "rebase {rebase}");
            assert_eq!(c.records_first_pass.get(), 3);
            assert_eq!(c.out_of_order.get(), 1);
            assert_eq!(c.first_stamp_ns.get(), Some(50));
            let d: Vec<(u32, u64)> = c.devices.borrow().iter().map(|(&k, &n)| (k, n)).collect();
            assert_eq!(d, vec![(1, 2), (2, 1)]);
            // Read to the end: everything, once.
            assert_eq!(
                (
                    c2.records_read.get(),
                    c2.records_first_pass.get(),
                    c2.out_of_order.get()
                ),
                (4, 4, 1)
            );
            let d2: Vec<(u32, u64)> = c2.devices.borrow().iter().map(|(&k, &n)| (k, n)).collect();
            assert_eq!(d2, vec![(1, 3), (2, 1)]);
            // Rebased, the records stamped before the first one arrive at 0.
            let span = if rebase { (0, 0) } else { (10, 50) };
            assert_eq!(c2.span_ns.get(), Some(span));
        }
    }

    #[test]
    fn per_pass_composes_in_order() {
        let v = vec![
            rec(0, 1, 0, 512),
            rec(10, 0, 0, 512),
            rec(20, 1, 512, 512),
            rec(30, 1, 1024, 512),
        ];
        let spec = TransformSpec {
            devices: vec![1],
            shift_sectors: 2,
            limit: Some(2),
            time_scale: 2.0,
            ..Default::default()
        };
        spec.validate().unwrap();
        let c = Rc::new(Counters::default());
        let out = ok(per_pass(stream(v), &spec, None, &c, true));
        assert_eq!(times(&out), vec![0, 40]);
        let offs: Vec<u64> = out.iter().map(|r| r.req.offset).collect();
        assert_eq!(offs, vec![1024, 1536]);
        assert_eq!(c.records_first_pass.get(), 2);
        let bad = TransformSpec {
            time_scale: 0.0,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().starts_with("time_scale"));
    }
}
