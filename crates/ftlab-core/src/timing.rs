//! Timing models: when the flash operations of a request finish.
//!
//! FTLs never see the clock. The engine drains the operations an FTL caused for a
//! request from [`Flash`](crate::flash::Flash) ([`OpBatch`]: counts by kind, and each
//! operation when the model needs it) and hands them to a [`Timing`]; or, for a model
//! that hands over its state ([`Timing::inline_clock`]: the parallel model's
//! [`DieClock`]), the flash times each operation as it performs it, between the
//! engine's `clock_begin` and `clock_end`, with no log of operations. docs/timing.md
//! is the user's view.
//!
//! - [`SerialTiming`] is the papers' model: one operation at a time, requests served
//!   first-come first-served; a request's response time is its completion minus its
//!   arrival, queueing included. It needs only the counts by kind.
//! - [`ParallelTiming`] models channels x dies in the manner of MQSim's flash back end
//!   (DESIGN.md; the die and channel as the two shared resources, read = sense then
//!   transfer out, program = transfer in then program): an operation occupies its die
//!   for the array time and its channel for the page transfer; a request completes when
//!   its last operation does.
//! - [`ClosedLoop`] is the host interface of closed-loop replay (`queue_depth`): each
//!   completion admits the next request.
//!
//! Choices the sources leave open (documented options):
//! - Preset latencies are taken as whole-operation costs including the transfer, as the
//!   papers' tables give them. The parallel model splits off a transfer time
//!   (`page_size / channel_mib_s`) from the read and program latency; a preset whose
//!   latency is not longer than the transfer is refused under parallel timing.
//! - Under the parallel model a block's die is `pbn % dies` (blocks striped over dies,
//!   channel-first). Operations of one request issue in order; a program that directly
//!   follows a read (a copy) waits for that read; otherwise operations only wait for
//!   their die and channel. Resources are reserved when a request is served, in
//!   submission order: by default a later operation never fills an idle gap a
//!   reserved one left on a channel (no backfilling), which keeps the model one pass
//!   per operation and makes it pessimistic under heavy channel contention (saturated
//!   random reads on `mqsim-8k` reach about 40% of the channel bound).
//!   [`ParallelTiming::with_channel_backfill`] lets a transfer take the first idle gap
//!   of its channel from when it can start (each channel remembers its last 64 gaps),
//!   as a controller that arbitrates the channel among dies as their data gets ready
//!   does: the same reads then reach 93% of the bound. Dies are never backfilled (an
//!   operation waits for everything reserved on its die before it). GC operations
//!   queue like host ones unless GC is preemptible (below). A read that goes ahead of
//!   its die's queue (suspend, preemptible GC) goes ahead on its channel too: the
//!   later reservations move one transfer later, or, with backfilling, it takes a
//!   remembered gap that holds its transfer and moves nothing.
//! - Sub-page transfers ([`ParallelTiming::with_sub_page_transfers`]): a host read of
//!   part of a page moves only the bytes it asks for over the channel (MQSim times a
//!   transfer by the bytes its transaction carries); the sense is the whole page's.
//!   Programs, GC and map reads move whole pages (a partly written page is programmed
//!   whole). Utilisation counts the transfer moved.
//! - Planes ([`ParallelTiming::with_planes`], one per die by default; `mqsim-8k` has 2):
//!   block `b` is on plane `(b / dies) % planes` of its die. Programs, page reads and
//!   erases form multi-plane groups (MQSim's multi-plane commands, which its scheduler
//!   forms from the transactions queued for a die): an operation joins the group
//!   reserved last on its die when that group is of its kind, has no operation on the
//!   same plane, and has not begun its array time before the operation's request
//!   arrives (or its background work starts; arriving at the very instant it begins is
//!   in time). Every operation on the die starts a group or joins the last one, so the
//!   group is always the die's last reservation: an operation of another kind in
//!   between closes it. In a program group each member's data goes in after the
//!   group's (one transfer at a time on the die's channel) and the array time begins
//!   when all of it is in; a read group senses once (one read array time, from when the
//!   first member could start) and then moves each page out in turn, the die held
//!   until the last is out; an erase group takes one erase time. So up to `planes`
//!   programs take one program time, reads one sense, erases one erase. A read that
//!   runs alone is timed exactly as on a one-plane die. Open choices, made here:
//!   - The members need not be at the same page offset in their blocks (MQSim, like
//!     many parts, requires it; the clock is told blocks, not pages). Under that rule
//!     random reads would almost never pair (one chance in pages-per-block), so this is
//!     the model of parts with independent per-plane addressing, an upper bound for the
//!     others.
//!   - Only the die's last group is joined: a read whose plane is taken there starts a
//!     new group, even if an earlier queued group has its plane free (reservations are
//!     not reordered; an MQSim-like scheduler would look through the whole queue).
//!   - Spare reads (no transfer, their own latency) run alone and close the group.
//!   - Reads that go ahead of the die's queue (suspending or overtaking reads) run
//!     alone; the group reserved last moves later by their time, as the rest of the
//!     queue does, and stays open to joiners. Under suspend and preemptible GC a group
//!     is one operation of the die's queue: a read suspends a program group only once
//!     all its data is in, and overtakes a GC group only if its first member has not
//!     begun; a group any host operation joined is no longer GC's alone (host order).
//!   - A program from a later request delays its group's array time by at most its
//!     own transfer in, and the earlier members' requests keep the completions they
//!     were given (as under suspend); a read or an erase that joins changes no earlier
//!     member's times (its page goes out after theirs; the erase time is shared).
//!   - Not modelled: copyback (a GC copy within a die without the channel), cache
//!     reads and cache programs, a scheduler that holds an operation back to wait for a
//!     partner.
//!   - Utilisation on such a device is the planes' busy share (each operation counted
//!     on its plane, its full array time and its transfer).
//! - Program/erase suspend ([`ParallelTiming::with_suspend`], off by default): a host
//!   read that finds its die running a program or an erase (in its array time, with
//!   more of it left than the suspend latency) suspends it: the read starts after the
//!   suspend latency (MQSim's `Suspend_Program_Time` 100 µs and `Suspend_Erase_Time`
//!   700 µs by default, which its scheduler adds before such a read), senses and
//!   transfers ahead of what is queued on its die and channel, and the operation and
//!   everything queued on the die after it end that much later. Only host reads
//!   suspend; a read arriving while an earlier read holds the suspended operation
//!   follows it without a second suspend. The suspended operation's own request keeps
//!   the completion it was given (requests are served when they arrive).
//! - Preemptible GC ([`ParallelTiming::with_preemptible_gc`], off by default; issue 22
//!   item 3): a host read that finds GC operations (causes `gc` and `merge`: the
//!   page-mapped schemes' collections and the block-mapped ones' merges) queued on its
//!   die that have not begun goes ahead of them (after the host operations and the begun GC operations
//!   queued before them), as a scheduler with separate user and GC queues that serves
//!   user reads first does (MQSim's transaction scheduling unit keeps such queues per
//!   die). The overtaken operations, and the GC operations queued after them, begin
//!   that much later. Only host reads overtake: a host write may program the open
//!   block GC copies are queued into, and NAND programs a block's pages in order. Only
//!   the GC operations at the end of a die's queue are overtaken (an operation reserved
//!   after them that is not GC's ends the run: host operations keep their order). A
//!   read of a page whose GC copy is still queued is timed on the copy's die, as if
//!   the copy were done (a controller would read the source, still intact until the
//!   erase). With suspend on as well, a read first tries to suspend the running
//!   program or erase (and then goes ahead of everything queued, as under suspend
//!   alone), else goes ahead of the queued GC operations. As under suspend, an overtaken operation's own request
//!   keeps the completion it was given.
//! - Utilisation counts an operation's die time as its array time plus its transfer
//!   (waits excluded).
//! - Array times are the preset's, fixed. [`ParallelTiming::with_exponential_service`]
//!   draws each operation's array time from an exponential distribution of the same
//!   mean instead (a library option, not a config key): the queueing textbooks'
//!   service model, under which a closed loop of N random reads over D dies has the
//!   product-form throughput D N / (N + D - 1) per service time, which a test checks.

use crate::flash::{Cause, OpBatch, OpKind};
use crate::nand::Latencies;
use crate::units::{Nanos, Pbn};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// When a request completed and how long it waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    /// Completion time.
    pub done: Nanos,
    /// How long the request waited for busy resources before its first operation
    /// started (0 if it caused none). The engine sums it to tell queueing from service
    /// and to see a saturated device.
    pub wait: Nanos,
}

/// When operations finish. Implementations own their notion of busy resources.
pub trait Timing {
    /// Serves a host request that arrived at `arrival` and caused `ops` (possibly none).
    fn serve(&mut self, arrival: Nanos, ops: OpBatch<'_>) -> Served;

    /// Schedules background work (idle-time GC) starting no earlier than `start`;
    /// returns when it ends. It delays later requests only if it overruns.
    fn background(&mut self, start: Nanos, ops: OpBatch<'_>) -> Nanos;

    /// When every resource is free again (the device becomes idle).
    fn idle_at(&self) -> Nanos;

    /// Forgets all busy state (after preconditioning and warm-up).
    fn reset(&mut self);

    /// Whether the model needs each operation ([`OpBatch::ops`], the flash's log) rather
    /// than the counts by kind alone. Logging costs a store per operation.
    fn needs_ops(&self) -> bool {
        true
    }

    /// Time the dies were busy since the last reset, summed over dies, and the number
    /// of dies: utilisation is `busy / (dies * elapsed)`.
    fn busy(&self) -> (Nanos, u32);

    /// Operations suspended by host reads since the last reset, for a model with
    /// program/erase suspend; `None` (the default) for one without.
    fn suspensions(&self) -> Option<u64> {
        None
    }

    /// Host reads that went ahead of queued GC operations, for a model with preemptible
    /// GC; `None` (the default) for one without.
    fn preemptions(&self) -> Option<u64> {
        None
    }

    /// A model that can time each operation as the flash performs it hands its state
    /// over here (once, when the engine is built); the engine then keeps it in the
    /// flash and no longer calls this model. `None` (the default): the engine calls
    /// [`Timing::serve`] and [`Timing::background`] with each batch.
    fn inline_clock(&mut self) -> Option<DieClock> {
        None
    }
}

/// Latency of one operation under the serial model.
#[inline]
pub fn op_latency(lat: &Latencies, kind: OpKind) -> Nanos {
    match kind {
        OpKind::Read => lat.read,
        OpKind::SpareRead => lat.spare_read,
        OpKind::Program => lat.program,
        OpKind::Erase => lat.erase,
    }
}

/// Latencies indexed by `OpKind as usize`.
fn by_kind(lat: &Latencies) -> [u64; 4] {
    let mut a = [0; 4];
    for k in [
        OpKind::Read,
        OpKind::SpareRead,
        OpKind::Program,
        OpKind::Erase,
    ] {
        a[k as usize] = op_latency(lat, k).0;
    }
    a
}

/// One operation at a time, first-come first-served. It needs only the counts of a
/// request's operations by kind: the service time is their sum of latencies.
#[derive(Clone, Debug)]
pub struct SerialTiming {
    lat: [u64; 4],
    busy_until: Nanos,
    busy: Nanos,
}

impl SerialTiming {
    /// A serial device with the given latencies.
    pub fn new(lat: Latencies) -> Self {
        SerialTiming {
            lat: by_kind(&lat),
            busy_until: Nanos::ZERO,
            busy: Nanos::ZERO,
        }
    }

    #[inline]
    fn run(&mut self, start: Nanos, ops: &OpBatch<'_>) -> Nanos {
        let c = &ops.counts;
        let service =
            c[0] * self.lat[0] + c[1] * self.lat[1] + c[2] * self.lat[2] + c[3] * self.lat[3];
        self.busy.0 += service;
        let t = start.max(self.busy_until) + Nanos(service);
        self.busy_until = t;
        t
    }
}

impl Timing for SerialTiming {
    fn serve(&mut self, arrival: Nanos, ops: OpBatch<'_>) -> Served {
        if ops.is_empty() {
            // Served from RAM (a buffer hit, an unmapped read): no flash time, and it
            // does not wait for the flash queue.
            return Served {
                done: arrival,
                wait: Nanos::ZERO,
            };
        }
        let wait = self.busy_until.saturating_sub(arrival);
        Served {
            done: self.run(arrival, &ops),
            wait,
        }
    }

    fn background(&mut self, start: Nanos, ops: OpBatch<'_>) -> Nanos {
        if ops.is_empty() {
            return start;
        }
        self.run(start, &ops)
    }

    fn idle_at(&self) -> Nanos {
        self.busy_until
    }

    fn reset(&mut self) {
        self.busy_until = Nanos::ZERO;
        self.busy = Nanos::ZERO;
    }

    fn needs_ops(&self) -> bool {
        false
    }

    fn busy(&self) -> (Nanos, u32) {
        (self.busy, 1)
    }
}

/// Channels x dies, with per-die array time and per-channel transfer time: the
/// [`Timing`] face of a [`DieClock`], which the engine moves into the flash
/// ([`Timing::inline_clock`]) so each operation is timed as it is performed.
#[derive(Clone, Debug)]
pub struct ParallelTiming {
    clock: DieClock,
}

/// The state of the parallel model, timed one operation at a time: between
/// [`DieClock::begin`] (the request's arrival, or when background work starts) and
/// [`DieClock::end`], each [`DieClock::op`] reserves its die and channel.
///
/// The engine keeps it in the [`Flash`](crate::flash::Flash), which calls
/// [`DieClock::op`] from inside each read, program and erase: no log of operations and
/// no second pass over one (issue 22, item 5). [`ParallelTiming`] replays a logged
/// batch through the same calls, so both give the same times.
#[derive(Clone, Debug, Default)]
pub struct DieClock {
    /// Array time in ns by `OpKind as usize` (the transfer split off reads and programs).
    array: [u64; 4],
    /// Die time of one operation by kind (array plus transfer), for utilisation.
    die_time: [u64; 4],
    /// One page's channel transfer, ns.
    xfer: u64,
    /// Per block: its die (`pbn % dies`) and that die's channel, computed once so the
    /// per-operation work has no division.
    route: Vec<(u32, u32)>,
    /// Per die: when it is free (ns).
    die_free: Vec<u64>,
    /// Per channel: when it is free (ns).
    chan_free: Vec<u64>,
    /// The latest time any die or channel is busy until (each only ever grows, so this
    /// is their maximum, kept as they change).
    latest: u64,
    /// Die time spent on operations (array and transfer; waits excluded), summed over
    /// dies, ns.
    busy: u64,
    /// Exponential array times ([`ParallelTiming::with_exponential_service`]): the
    /// generator of the draws; `None` for the preset's fixed times.
    exponential: Option<crate::rng::SplitMix64>,
    /// The open batch: when it started (no operation begins earlier).
    start: u64,
    /// When the read a program copies ends (else `start`).
    dep: u64,
    /// When the batch's first operation began; `u64::MAX` before it.
    first: u64,
    /// When the batch's last operation to finish ends (`start` with none).
    done: u64,
    /// Program/erase suspend ([`ParallelTiming::with_suspend`]) and preemptible GC
    /// ([`ParallelTiming::with_preemptible_gc`]): what they need of each die's queue;
    /// `None`: both off.
    queues: Option<Box<Queues>>,
    /// Multi-plane programs, reads and erases ([`ParallelTiming::with_planes`]);
    /// `None`: one plane per die.
    planes: Option<Box<Planes>>,
    /// Sub-page transfers ([`ParallelTiming::with_sub_page_transfers`]): the page size
    /// in bytes; 0: off (every read moves its whole page over the channel).
    page_bytes: u32,
    /// The channel transfer of the next host page read, ns: `xfer`, or less when the
    /// host asks for part of the page ([`DieClock::set_host_read_bytes`]).
    part_xfer: u64,
    /// Die time the open batch's shortened transfers did not take (utilisation counts
    /// each operation's full die time by kind, less this).
    saved: u64,
    /// Backfilling of channel slots ([`ParallelTiming::with_channel_backfill`]): per
    /// channel, the idle gaps left before its last reservation, oldest first; `None`:
    /// off (a transfer never starts before the channel's last reservation ends).
    gaps: Option<Box<[Gaps]>>,
    /// `planes` or `gaps` is set: operations take the out-of-line path (one test per
    /// operation, as with planes alone before).
    slow: bool,
}

/// A channel's idle gaps before its last reservation, `(from, to)` in ns, oldest
/// first.
type Gaps = VecDeque<(u64, u64)>;

/// Gaps a channel remembers under backfilling: the oldest is forgotten beyond this
/// (a saturated channel leaves few, and a far-back gap rarely fits a new transfer).
const GAPS_KEPT: usize = 64;

/// Reserves `x` ns of a channel free until `free`, at `t0` or later: with `gaps`
/// (backfilling), in the first remembered idle gap that fits, else after the last
/// reservation (a gap before it remembered). Gaps that end by `start` (the batch's
/// start; no operation of it begins earlier) are forgotten. Returns the slot's start.
#[inline(always)]
fn slot(free: &mut u64, gaps: Option<&mut Gaps>, start: u64, t0: u64, x: u64) -> u64 {
    let Some(q) = gaps else {
        let b = t0.max(*free);
        *free = b + x;
        return b;
    };
    backfill(free, q, start, t0, x)
}

/// [`slot`] with backfilling, out of line.
#[inline(never)]
fn backfill(free: &mut u64, q: &mut Gaps, start: u64, t0: u64, x: u64) -> u64 {
    while q.front().is_some_and(|&(_, e)| e <= start) {
        q.pop_front();
    }
    if t0 < *free {
        for i in 0..q.len() {
            let (gs, ge) = q[i];
            let b = gs.max(t0);
            if b + x <= ge {
                take(q, i, b, x);
                return b;
            }
        }
    }
    let b = t0.max(*free);
    if b > *free {
        if q.len() == GAPS_KEPT {
            q.pop_front();
        }
        q.push_back((*free, b));
    }
    *free = b + x;
    b
}

/// Takes `[b, b + x)` out of gap `i`, which holds it: the gap shrinks, splits in two
/// (the oldest gap forgotten beyond [`GAPS_KEPT`]: without the bound a split grew the
/// list, and the search with it; a swarm case spent minutes here) or goes.
fn take(q: &mut Gaps, i: usize, b: u64, x: u64) {
    let (gs, ge) = q[i];
    match (b > gs, b + x < ge) {
        (true, true) => {
            q[i] = (gs, b);
            q.insert(i + 1, (b + x, ge));
            if q.len() > GAPS_KEPT {
                q.pop_front();
            }
        }
        (true, false) => q[i] = (gs, b),
        (false, true) => q[i] = (b + x, ge),
        (false, false) => {
            q.remove(i);
        }
    }
}

/// A transfer of `x` ns that goes ahead on a channel at `t0` (a suspending or an
/// overtaking read, [`DieClock::read_ahead`]) under backfilling: in a remembered idle
/// gap that holds all of `[t0, t0 + x)`, which it takes; else, if the channel is busy
/// at `t0`, the reservations after `t0` (the channel's end, `free`) move `x` later, and
/// the gaps between them with them: a gap after `t0` moves whole, one around `t0`
/// keeps its part before `t0` and moves the rest; else (the channel free by `t0`) it
/// goes after the last reservation, the gap before it remembered ([`backfill`]).
fn ahead_of_gaps(free: &mut u64, q: &mut Gaps, t0: u64, x: u64) {
    if let Some(i) = q.iter().position(|&(gs, ge)| gs <= t0 && t0 + x <= ge) {
        take(q, i, t0, x);
        return;
    }
    if t0 >= *free {
        backfill(free, q, 0, t0, x);
        return;
    }
    *free += x;
    let mut i = 0;
    while i < q.len() {
        let (gs, ge) = q[i];
        if gs >= t0 {
            q[i] = (gs + x, ge + x);
        } else if ge > t0 {
            q[i] = (gs, t0);
            q.insert(i + 1, (t0 + x, ge + x));
            i += 1;
            if q.len() > GAPS_KEPT {
                q.pop_front();
                i -= 1;
            }
        }
        i += 1;
    }
}

/// Multi-plane operations of a [`DieClock`]: which plane each block is on, and per die
/// the group of operations reserved last.
#[derive(Clone, Debug, Default)]
struct Planes {
    /// Planes per die.
    per_die: u32,
    /// Per block: its plane's bit in its die's group mask.
    bit: Vec<u32>,
    /// Per die: the group of operations reserved last on it (every operation on the die
    /// starts a group or joins this one, so it is always the die's last reservation;
    /// a read that suspends or overtakes goes ahead of it and delays it).
    group: Vec<Group>,
}

/// Operations of one kind on different planes of one die that run their array time
/// together: a multi-plane program, read or erase.
#[derive(Clone, Copy, Debug, Default)]
struct Group {
    /// The kind of operation that may join: `None` for a spare read (which runs alone)
    /// and before the die's first operation.
    kind: Option<OpKind>,
    /// The planes it holds.
    mask: u32,
    /// A program group: when the data of its last member is in (the die takes one
    /// transfer at a time). Unused for the other kinds.
    xfer_end: u64,
    /// When the array time begins (a program: all members' data in; a read: its one
    /// sense; an erase: its one erase).
    array_begin: u64,
    /// When it ends (a read group: its last member's data is out), and the die is free.
    end: u64,
}

/// The per-die queues of a [`DieClock`] under program/erase suspend and preemptible
/// GC.
#[derive(Clone, Debug, Default)]
struct Queues {
    /// Program/erase suspend: what a suspend costs before the read can start, ns (of
    /// a program, of an erase); `None`: suspend off.
    suspend: Option<(u64, u64)>,
    /// Preemptible GC: host reads go ahead of GC operations queued on their die.
    preempt: bool,
    /// Per die: the operations reserved on it that have not ended by the current
    /// batch's start, in order, the first the one running; under `preempt`, up to the
    /// die's trailing run of GC operations not yet begun, which are in `gc`. Together
    /// at most [`PENDING`]: past that the oldest is forgotten (a read that finds it
    /// running does not suspend it). Times are stored less the die's `shift`.
    pending: Vec<VecDeque<Running>>,
    /// Per die: how much suspensions and overtaking reads have delayed its queue;
    /// added to every stored time (one addition per delay instead of one per queued
    /// operation).
    shift: Vec<u64>,
    /// Per die, under `preempt`: the GC operations at the end of its queue that have
    /// not begun (a later host read may go ahead of them), in order, stored less
    /// `gc_shift`. Empty without `preempt`.
    gc: Vec<VecDeque<Running>>,
    /// Per die: how much overtaking reads have delayed its queued GC operations.
    gc_shift: Vec<u64>,
    /// Operations suspended since the last reset.
    count: u64,
    /// Host reads that went ahead of queued GC operations since the last reset.
    overtakes: u64,
}

impl Queues {
    fn new(dies: usize) -> Queues {
        Queues {
            pending: vec![VecDeque::new(); dies],
            shift: vec![0; dies],
            gc: vec![VecDeque::new(); dies],
            gc_shift: vec![0; dies],
            ..Queues::default()
        }
    }

    /// Forgets the operations of die `d` that ended by `now`.
    fn drop_ended(&mut self, d: usize, now: u64) {
        let shift = self.shift[d];
        let queue = &mut self.pending[d];
        while queue
            .front()
            .is_some_and(|r| r.end.wrapping_add(shift) <= now)
        {
            queue.pop_front();
        }
        if queue.is_empty() {
            let shift = self.gc_shift[d];
            let gc = &mut self.gc[d];
            while gc.front().is_some_and(|r| r.end.wrapping_add(shift) <= now) {
                gc.pop_front();
            }
        }
    }

    /// Moves queued GC operations of die `d` into its ordinary queue: all of them
    /// (`before = u64::MAX`, an operation that is not GC's was reserved behind them),
    /// or those that began by `before` (a read no longer goes ahead of them).
    fn settle_gc(&mut self, d: usize, before: u64) {
        let (from, to) = (self.gc_shift[d], self.shift[d]);
        while let Some(r) = self.gc[d].front() {
            if before != u64::MAX && r.begin.wrapping_add(from) > before {
                break;
            }
            let r = self.gc[d].pop_front().expect("checked");
            let moved = |t: u64| t.wrapping_add(from).wrapping_sub(to);
            self.pending[d].push_back(Running {
                begin: moved(r.begin),
                end: moved(r.end),
                array_begin: moved(r.array_begin),
                ..r
            });
        }
    }

    /// An operation `r` (absolute times) joined the multi-plane group reserved last on
    /// die `d`: the group stays one entry of the die's queue (the last), which takes the
    /// group's new array begin and end. `gc`: the joining operation is GC's; a group
    /// that any other operation joins is no longer GC's alone and keeps its place
    /// before later host reads under `preempt`.
    fn extend_last(&mut self, d: usize, r: Running, gc: bool) {
        if self.preempt && !gc {
            self.settle_gc(d, u64::MAX);
        }
        // The last reservation: the last GC operation not begun if any is queued (an
        // overtaking read is queued before those), else the die's last.
        let (queue, shift) = if self.gc[d].is_empty() {
            (&mut self.pending[d], self.shift[d])
        } else {
            (&mut self.gc[d], self.gc_shift[d])
        };
        match queue.back_mut() {
            Some(last) => {
                last.array_begin = r.array_begin.wrapping_sub(shift);
                last.end = r.end.wrapping_sub(shift);
            }
            // Not remembered (cannot happen: a group that has not begun has not ended
            // and is the newest entry): remember the joining operation alone.
            None => self.push(d, r, gc),
        }
    }

    /// Remembers an operation reserved on die `d` (absolute times); `gc`: GC's, which
    /// a later host read may overtake under `preempt`.
    fn push(&mut self, d: usize, r: Running, gc: bool) {
        if self.pending[d].len() + self.gc[d].len() == PENDING
            && self.pending[d].pop_front().is_none()
        {
            self.gc[d].pop_front();
        }
        if self.preempt && gc {
            let s = self.gc_shift[d];
            self.gc[d].push_back(r.less(s));
        } else {
            if self.preempt {
                self.settle_gc(d, u64::MAX);
            }
            let s = self.shift[d];
            self.pending[d].push_back(r.less(s));
        }
    }
}

/// Operations remembered per die for program/erase suspend (a saturated die's queue
/// is not remembered whole).
const PENDING: usize = 4096;

/// An operation reserved on a die; a host read may suspend it if it is a program or an
/// erase, or go ahead of it if it is GC's and has not begun.
#[derive(Clone, Copy, Debug)]
struct Running {
    kind: OpKind,
    /// When it takes the die (a program: when its transfer in begins).
    begin: u64,
    /// When it ends (later if reads suspended it).
    end: u64,
    /// When its array time begins (a program's data is transferred in before).
    array_begin: u64,
    /// Until when reads that suspended it hold the die (0: none did).
    reads_until: u64,
}

impl Running {
    /// The same with its times less `shift` (as a queue stores them).
    fn less(self, shift: u64) -> Running {
        Running {
            begin: self.begin.wrapping_sub(shift),
            end: self.end.wrapping_sub(shift),
            array_begin: self.array_begin.wrapping_sub(shift),
            ..self
        }
    }
}

impl DieClock {
    /// `channels * dies_per_channel` dies over `blocks` blocks (block `b` on die
    /// `b % dies`, die `d` on channel `d % channels`); `xfer` is one page's channel
    /// transfer time.
    pub fn new(
        lat: Latencies,
        channels: u32,
        dies_per_channel: u32,
        blocks: u32,
        xfer: Nanos,
    ) -> Self {
        let dies = channels * dies_per_channel;
        let mut array = by_kind(&lat);
        let mut die_time = array;
        for k in [OpKind::Read, OpKind::Program] {
            array[k as usize] = array[k as usize].saturating_sub(xfer.0);
            die_time[k as usize] = array[k as usize] + xfer.0;
        }
        DieClock {
            array,
            die_time,
            xfer: xfer.0,
            route: (0..blocks)
                .map(|b| (b % dies, b % dies % channels))
                .collect(),
            die_free: vec![0; dies as usize],
            chan_free: vec![0; channels as usize],
            latest: 0,
            busy: 0,
            exponential: None,
            start: 0,
            dep: 0,
            first: u64::MAX,
            done: 0,
            queues: None,
            planes: None,
            page_bytes: 0,
            part_xfer: xfer.0,
            saved: 0,
            gaps: None,
            slow: false,
        }
    }

    /// Whether a host read of part of a page moves only those bytes over the channel
    /// ([`ParallelTiming::with_sub_page_transfers`]).
    #[inline]
    pub fn sub_page_transfers(&self) -> bool {
        self.page_bytes != 0
    }

    /// The next host page read moves `bytes` of its page over the channel (under
    /// sub-page transfers; `bytes` at or above the page size, or sub-page transfers
    /// off: the whole page). Returns whether it moves less than the page, when the
    /// read must go through [`DieClock::op_caused`], which knows its cause. The batch's
    /// [`DieClock::begin`] sets whole pages again.
    #[inline]
    pub fn set_host_read_bytes(&mut self, bytes: u32) -> bool {
        if bytes >= self.page_bytes {
            self.part_xfer = self.xfer;
            false
        } else {
            self.part_xfer = (self.xfer * bytes as u64).div_ceil(self.page_bytes as u64);
            true
        }
    }

    /// Whether program/erase suspend or preemptible GC is on; then operations go
    /// through [`DieClock::op_caused`], which needs each one's cause.
    #[inline]
    pub fn needs_cause(&self) -> bool {
        self.queues.is_some()
    }

    /// Operations suspended by host reads since the last reset; `None` with suspend off.
    pub fn suspensions(&self) -> Option<u64> {
        self.queues
            .as_ref()
            .filter(|q| q.suspend.is_some())
            .map(|q| q.count)
    }

    /// Host reads that went ahead of GC operations queued on their die since the last
    /// reset; `None` with preemptible GC off.
    pub fn preemptions(&self) -> Option<u64> {
        self.queues
            .as_ref()
            .filter(|q| q.preempt)
            .map(|q| q.overtakes)
    }

    /// Draws an array time: the preset's, or under exponential service a draw of that
    /// mean.
    #[inline]
    fn array_time(&mut self, kind: OpKind, exp: bool) -> u64 {
        let mut array = self.array[kind as usize];
        if exp {
            if let Some(rng) = &mut self.exponential {
                // Inverse transform of a uniform in (0, 1]: -ln(u) has mean 1.
                let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                array = (array as f64 * -u.ln()).round() as u64;
            }
        }
        array
    }

    /// [`DieClock::op`] for any configuration, with the operation's cause: under
    /// preemptible GC a host read may go ahead of the GC operations queued on its die,
    /// under program/erase suspend it may suspend the program or erase its die is
    /// running (module documentation, "Choices").
    ///
    /// A host read of part of a page ([`DieClock::set_host_read_bytes`]) moves only
    /// that part over the channel.
    pub fn op_caused(&mut self, kind: OpKind, block: Pbn, cause: Cause) {
        if kind == OpKind::Read && cause == Cause::Host && self.part_xfer != self.xfer {
            let full = std::mem::replace(&mut self.xfer, self.part_xfer);
            self.saved += full - self.part_xfer;
            self.op_queued(kind, block, cause);
            self.xfer = full;
        } else {
            self.op_queued(kind, block, cause);
        }
    }

    /// [`DieClock::op_caused`] at the transfer `xfer` holds.
    fn op_queued(&mut self, kind: OpKind, block: Pbn, cause: Cause) {
        let exp = self.exponential();
        let Some(mut q) = self.queues.take() else {
            if exp {
                self.op::<true>(kind, block);
            } else {
                self.op::<false>(kind, block);
            }
            return;
        };
        let (d, _) = self.route[block.idx()];
        let d = d as usize;
        q.drop_ended(d, self.start);
        if kind == OpKind::Read && cause == Cause::Host {
            let done = (q.suspend.is_some() && self.try_suspend(&mut q, d, block, exp))
                || (q.preempt && self.try_overtake(&mut q, d, block, exp));
            if done {
                self.queues = Some(q);
                return;
            }
        }
        let (begin, array_begin, joined) = if self.planes.is_some() {
            let c = self.route[block.idx()].1 as usize;
            let array = self.array_time(kind, exp);
            self.on_planes(d, c, kind, block, array)
        } else if exp {
            let (b, a) = self.op::<true>(kind, block);
            (b, a, false)
        } else {
            let (b, a) = self.op::<false>(kind, block);
            (b, a, false)
        };
        let r = Running {
            kind,
            begin,
            end: self.die_free[d],
            array_begin,
            reads_until: 0,
        };
        let gc = matches!(cause, Cause::Gc | Cause::Merge);
        if joined {
            q.extend_last(d, r, gc);
        } else {
            q.push(d, r, gc);
        }
        self.queues = Some(q);
    }

    /// Preemptible GC: a host read on die `d` goes ahead of the GC operations queued at
    /// the end of the die's queue that have not begun, which then begin that much
    /// later. Returns whether it did (the read is then timed).
    fn try_overtake(&mut self, q: &mut Queues, d: usize, block: Pbn, exp: bool) -> bool {
        // GC operations that have begun are not overtaken.
        q.settle_gc(d, self.start);
        let Some(first) = q.gc[d].front() else {
            return false;
        };
        let first_begin = first.begin.wrapping_add(q.gc_shift[d]);
        // The read follows what is queued ahead of the GC operations (host operations,
        // and GC's that have begun).
        let ahead = q.pending[d]
            .back()
            .map_or(0, |r| r.end.wrapping_add(q.shift[d]));
        let begin = self.start.max(ahead);
        let (_, c) = self.route[block.idx()];
        let array = self.array_time(OpKind::Read, exp);
        let end = self.read_ahead(c, begin, array);
        let held = end.saturating_sub(first_begin);
        q.gc_shift[d] += held;
        self.delay_group(d, self.start, held);
        self.die_free[d] += held;
        self.latest = self.latest.max(self.die_free[d]);
        let r = Running {
            kind: OpKind::Read,
            begin,
            end,
            array_begin: begin,
            reads_until: 0,
        };
        // Queued ahead of the GC operations it overtook (which stay overtakable).
        if q.pending[d].len() + q.gc[d].len() == PENDING && q.pending[d].pop_front().is_none() {
            q.gc[d].pop_front();
        }
        let s = q.shift[d];
        q.pending[d].push_back(r.less(s));
        q.overtakes += 1;
        true
    }

    /// A host read on die `d` suspends the program or erase the die is running, if one
    /// is and enough of it is left to be worth the suspend's latency. Returns whether it
    /// did (the read is then timed).
    fn try_suspend(&mut self, q: &mut Queues, d: usize, block: Pbn, exp: bool) -> bool {
        let Some((program, erase)) = q.suspend else {
            return false;
        };
        // The operation running on the die when the read arrives: the first that has
        // not ended (the caller dropped those that have). Under preemptible GC it may
        // be a GC operation still in `gc`: those that have begun move to `pending`.
        if q.preempt {
            q.settle_gc(d, self.start);
        }
        let shift = q.shift[d];
        let Some(stored) = q.pending[d].front_mut() else {
            return false;
        };
        let run = Running {
            end: stored.end.wrapping_add(shift),
            array_begin: stored.array_begin.wrapping_add(shift),
            ..*stored
        };
        if !matches!(run.kind, OpKind::Program | OpKind::Erase) {
            return false;
        }
        // The read can have the die once the reads that suspended this operation before
        // it are done; while it waits behind them the operation stays suspended.
        let at = self.start.max(run.reads_until);
        let cost = if self.start < run.reads_until {
            0
        } else if run.kind == OpKind::Program {
            program
        } else {
            erase
        };
        if at < run.array_begin || run.end.saturating_sub(at) <= cost {
            return false;
        }
        let (_, c) = self.route[block.idx()];
        let array = self.array_time(OpKind::Read, exp);
        let begin = at + cost;
        let end = self.read_ahead(c, begin, array);
        // The suspended operation resumes when the read is done: it ends that much
        // later, and so does everything queued on the die after it.
        // (The running operation's array began before: it keeps that time.)
        let held = end - at;
        q.shift[d] += held;
        q.gc_shift[d] += held;
        stored.array_begin = stored.array_begin.wrapping_sub(held);
        stored.begin = stored.begin.wrapping_sub(held);
        stored.reads_until = end;
        self.delay_group(d, at, held);
        self.die_free[d] += held;
        self.latest = self.latest.max(self.die_free[d]);
        if cost > 0 {
            q.count += 1;
        }
        true
    }

    /// A host read that goes ahead of what is queued on its die (a suspending or an
    /// overtaking read) senses from `begin` for `array` and goes ahead on channel `c`
    /// as well: its transfer right after its sensing, the channel's later reservations
    /// one transfer later (else it would wait for the end of every transfer reserved so
    /// far, however far ahead). Returns when it ends; the batch's start and end follow.
    ///
    /// With channel backfilling, a transfer that fits a remembered idle gap of the
    /// channel takes it and moves nothing; else the later reservations move one
    /// transfer later as above, and so do the gaps between them ([`ahead_of_gaps`]).
    fn read_ahead(&mut self, c: u32, begin: u64, array: u64) -> u64 {
        let t0 = begin + array;
        let end = t0 + self.xfer;
        let chan = &mut self.chan_free[c as usize];
        if let Some(q) = self.gaps.as_deref_mut().map(|g| &mut g[c as usize]) {
            ahead_of_gaps(chan, q, t0, self.xfer);
        } else {
            *chan = (*chan).max(t0) + self.xfer;
        }
        self.latest = self.latest.max(*chan);
        self.dep = end;
        if self.first == u64::MAX {
            self.first = begin;
        }
        self.done = self.done.max(end);
        end
    }

    /// Opens a batch: its operations start no earlier than `start`.
    #[inline]
    pub fn begin(&mut self, start: Nanos) {
        self.part_xfer = self.xfer;
        self.start = start.0;
        self.dep = start.0;
        self.first = u64::MAX;
        self.done = start.0;
    }

    /// Times one operation of the open batch on `block`'s die and channel, after the
    /// batch's earlier ones: it waits for its die (a read, then, for the channel to
    /// transfer out; a program first for the channel to transfer in, and for the read
    /// it copies when it directly follows one).
    /// `EXP`: the array time is an exponential draw (only with
    /// [`ParallelTiming::with_exponential_service`], [`DieClock::exponential`]); a
    /// constant, so the fixed-time path carries no test per operation.
    /// Returns when the operation takes its die (a program: when its transfer in
    /// begins) and when its array time begins (after a program's transfer in).
    #[inline(always)]
    pub fn op<const EXP: bool>(&mut self, kind: OpKind, block: Pbn) -> (u64, u64) {
        let (d, c) = self.route[block.idx()];
        let array = if EXP {
            self.array_time(kind, true)
        } else {
            self.array[kind as usize]
        };
        if self.slow {
            return self.op_slow(d as usize, c as usize, kind, block, array);
        }
        self.one_plane::<false>(d as usize, c as usize, kind, array)
    }

    /// [`DieClock::op`] on a device with several planes per die or with channel
    /// backfilling, out of line.
    #[inline(never)]
    fn op_slow(&mut self, d: usize, c: usize, kind: OpKind, block: Pbn, array: u64) -> (u64, u64) {
        if self.planes.is_some() {
            let (begin, array_begin, _) = self.on_planes(d, c, kind, block, array);
            return (begin, array_begin);
        }
        self.one_plane::<true>(d, c, kind, array)
    }

    /// [`DieClock::op`] on a die with one plane; `GAPS`: with channel backfilling (a
    /// constant, so the plain path carries no test for it).
    #[inline(always)]
    fn one_plane<const GAPS: bool>(
        &mut self,
        d: usize,
        c: usize,
        kind: OpKind,
        array: u64,
    ) -> (u64, u64) {
        let die = &mut self.die_free[d];
        let chan = &mut self.chan_free[c];
        let gaps = if GAPS {
            self.gaps.as_deref_mut().map(|g| &mut g[c])
        } else {
            None
        };
        let start = self.start;
        let ready = start.max(*die);
        let (begin, end) = match kind {
            OpKind::Read => {
                let end = slot(chan, gaps, start, ready + array, self.xfer) + self.xfer;
                self.dep = end;
                (ready, end)
            }
            OpKind::Program => {
                let xs = slot(chan, gaps, start, ready.max(self.dep), self.xfer);
                self.dep = start;
                (xs, xs + self.xfer + array)
            }
            OpKind::SpareRead | OpKind::Erase => {
                self.dep = start;
                (ready, ready + array)
            }
        };
        *die = end;
        if self.first == u64::MAX {
            self.first = begin;
        }
        self.done = self.done.max(end);
        (begin, end - array)
    }

    /// A copy (GC or merge): [`DieClock::op`] of a read on `src`'s die and of the
    /// program on `dst`'s that waits for it, in one step (the same times: the program
    /// ends after the read, so the batch's end is the program's; the read is the
    /// batch's first operation if any is).
    #[inline(always)]
    pub fn copy(&mut self, src: Pbn, dst: Pbn) {
        if self.slow {
            return self.copy_on_planes(src, dst);
        }
        let start = self.start;
        // The tables as local slices: their pointers and lengths stay in registers
        // across the stores below.
        let (route, dies, chans) = (
            &self.route[..],
            &mut self.die_free[..],
            &mut self.chan_free[..],
        );
        let xfer = self.xfer;
        let (d, c) = route[src.idx()];
        let ready = start.max(dies[d as usize]);
        let read_end = (ready + self.array[OpKind::Read as usize]).max(chans[c as usize]) + xfer;
        chans[c as usize] = read_end;
        dies[d as usize] = read_end;
        let (d, c) = route[dst.idx()];
        let xs = dies[d as usize].max(chans[c as usize]).max(read_end);
        chans[c as usize] = xs + xfer;
        let end = xs + xfer + self.array[OpKind::Program as usize];
        dies[d as usize] = end;
        if self.first == u64::MAX {
            self.first = ready;
        }
        self.dep = start;
        self.done = self.done.max(end);
    }

    /// `n` page reads of `block` in a row, as `n` calls of [`DieClock::op`] time them.
    #[inline]
    pub fn read_run(&mut self, block: Pbn, n: u32) {
        for _ in 0..n {
            self.op::<false>(OpKind::Read, block);
        }
    }

    /// `n` copies from `src` to `dst` in a row, as `n` calls of [`DieClock::copy`] time
    /// them (the same die and channel times, batch start and end): a garbage
    /// collector's run of copies between two blocks timed with the four free times in
    /// registers, not loaded from and stored to their tables per copy.
    #[inline]
    pub fn copy_run(&mut self, src: Pbn, dst: Pbn, n: u32) {
        if n == 0 {
            return;
        }
        if self.slow {
            for _ in 0..n {
                self.copy_on_planes(src, dst);
            }
            return;
        }
        let start = self.start;
        let xfer = self.xfer;
        let (read, program) = (
            self.array[OpKind::Read as usize],
            self.array[OpKind::Program as usize],
        );
        let (ds, cs) = self.route[src.idx()];
        let (dd, cd) = self.route[dst.idx()];
        let (ds, cs, dd, cd) = (ds as usize, cs as usize, dd as usize, cd as usize);
        let (same_die, same_chan) = (ds == dd, cs == cd);
        let (mut die_s, mut chan_s) = (self.die_free[ds], self.chan_free[cs]);
        let (mut die_d, mut chan_d) = (self.die_free[dd], self.chan_free[cd]);
        let first = start.max(die_s);
        let mut end = start;
        for _ in 0..n {
            // `copy`'s steps, one for one; a die or channel both blocks share is kept
            // in both names.
            let read_end = (start.max(die_s) + read).max(chan_s) + xfer;
            (die_s, chan_s) = (read_end, read_end);
            if same_die {
                die_d = read_end;
            }
            if same_chan {
                chan_d = read_end;
            }
            let xs = die_d.max(chan_d).max(read_end);
            chan_d = xs + xfer;
            end = xs + xfer + program;
            die_d = end;
            if same_die {
                die_s = end;
            }
            if same_chan {
                chan_s = chan_d;
            }
        }
        // The source's first: when a table entry is shared, the destination's value
        // (the same) is the one left.
        self.die_free[ds] = die_s;
        self.chan_free[cs] = chan_s;
        self.die_free[dd] = die_d;
        self.chan_free[cd] = chan_d;
        if self.first == u64::MAX {
            self.first = first;
        }
        self.dep = start;
        self.done = self.done.max(end);
    }

    /// `n` programs of `block` in a row (a host write's run of pages in one block), as
    /// `n` calls of [`DieClock::op`] time them.
    #[inline]
    pub fn program_run(&mut self, block: Pbn, n: u32) {
        if n == 0 {
            return;
        }
        if self.slow {
            for _ in 0..n {
                self.op::<false>(OpKind::Program, block);
            }
            return;
        }
        let (start, xfer, program) = (self.start, self.xfer, self.array[OpKind::Program as usize]);
        let (d, c) = self.route[block.idx()];
        let (d, c) = (d as usize, c as usize);
        let (mut die, mut chan) = (self.die_free[d], self.chan_free[c]);
        // The first program may wait for a read it copies (`dep`); the others follow it.
        let mut dep = self.dep;
        // When the run's first program takes its die (the later ones follow it).
        let first = start.max(die).max(dep).max(chan);
        for _ in 0..n {
            let xs = start.max(die).max(dep).max(chan);
            dep = start;
            chan = xs + xfer;
            die = chan + program;
        }
        self.die_free[d] = die;
        self.chan_free[c] = chan;
        if self.first == u64::MAX {
            self.first = first;
        }
        self.dep = start;
        self.done = self.done.max(die);
    }

    /// [`DieClock::copy`] on a device with several planes per die or with channel
    /// backfilling: the read, then the program, each as [`DieClock::op`] times it. Out of line, so the one-plane copy
    /// inlined into a garbage collector's loop stays small.
    #[cold]
    #[inline(never)]
    fn copy_on_planes(&mut self, src: Pbn, dst: Pbn) {
        self.op::<false>(OpKind::Read, src);
        self.op::<false>(OpKind::Program, dst);
    }

    /// [`DieClock::op`] on a device with several planes per die: the operation joins
    /// the group reserved last on its die (always the die's last reservation) when
    /// that group is of its kind, holds no operation on this block's plane, and has not
    /// begun its array time before this batch starts; else it starts a group of its
    /// own, timed as on a single-plane die. Spare reads never join and end the group.
    /// - A program's data goes in after the group's (one transfer at a time on the die
    ///   and its channel), after the read it copies, and the group's array time begins
    ///   when all its data is in: up to `planes` programs take one program time.
    /// - A read's page goes out after the group's last one (the group senses once,
    ///   then transfers each page out in turn): up to `planes` reads take one sense.
    /// - An erase ends with the group's: up to `planes` erases take one erase time.
    ///
    /// Returns when the operation takes its die (a program: when its transfer in
    /// begins; a read or erase that joined: when the group's array time begins), when
    /// the group's array time begins, and whether it joined.
    #[inline(never)]
    fn on_planes(
        &mut self,
        d: usize,
        c: usize,
        kind: OpKind,
        block: Pbn,
        array: u64,
    ) -> (u64, u64, bool) {
        let start = self.start;
        let p = self.planes.as_mut().expect("checked by the caller");
        let bit = p.bit[block.idx()];
        let g = &mut p.group[d];
        let die = &mut self.die_free[d];
        let chan = &mut self.chan_free[c];
        let gaps = self.gaps.as_deref_mut().map(|g| &mut g[c]);
        let joins = g.kind == Some(kind) && g.mask & bit == 0 && g.array_begin >= start;
        let xfer = self.xfer;
        let begin = match (kind, joins) {
            (OpKind::Program, _) => {
                let t0 = if joins {
                    g.xfer_end.max(self.dep)
                } else {
                    start.max(*die).max(self.dep)
                };
                let xs = slot(chan, gaps, start, t0, xfer);
                let xe = xs + xfer;
                self.dep = start;
                *g = if joins {
                    let array_begin = g.array_begin.max(xe);
                    Group {
                        mask: g.mask | bit,
                        xfer_end: xe,
                        array_begin,
                        end: (g.end + (array_begin - g.array_begin)).max(array_begin + array),
                        ..*g
                    }
                } else {
                    Group {
                        kind: Some(OpKind::Program),
                        mask: bit,
                        xfer_end: xe,
                        array_begin: xe,
                        end: xe + array,
                    }
                };
                xs
            }
            (OpKind::Read, true) => {
                // Sensed with the group: out after its last page (`g.end`, the die's
                // end), when the channel is free.
                let end = slot(chan, gaps, start, g.end, xfer) + xfer;
                self.dep = end;
                g.mask |= bit;
                g.end = end;
                g.array_begin
            }
            (OpKind::Read, false) => {
                let ready = start.max(*die);
                let end = slot(chan, gaps, start, ready + array, xfer) + xfer;
                self.dep = end;
                *g = Group {
                    kind: Some(OpKind::Read),
                    mask: bit,
                    xfer_end: end,
                    array_begin: ready,
                    end,
                };
                ready
            }
            (OpKind::Erase, true) => {
                self.dep = start;
                g.mask |= bit;
                g.end = g.end.max(g.array_begin + array);
                g.array_begin
            }
            (OpKind::Erase | OpKind::SpareRead, false) | (OpKind::SpareRead, true) => {
                let ready = start.max(*die);
                self.dep = start;
                *g = Group {
                    kind: (kind == OpKind::Erase).then_some(OpKind::Erase),
                    mask: bit,
                    xfer_end: ready,
                    array_begin: ready,
                    end: ready + array,
                };
                ready
            }
        };
        *die = g.end;
        if self.first == u64::MAX {
            self.first = begin;
        }
        self.done = self.done.max(g.end);
        (begin, g.array_begin, joins)
    }

    /// A read went ahead of what is queued on die `d` from `at` (it suspended the
    /// running operation or overtook queued GC), holding the die `held` longer: the
    /// die's last group, if it has not ended, ends that much later, and if it had not
    /// begun its array time by `at` it begins that much later too (it stays open to
    /// joiners at its new times).
    fn delay_group(&mut self, d: usize, at: u64, held: u64) {
        if let Some(p) = &mut self.planes {
            let g = &mut p.group[d];
            if g.end > at {
                g.end += held;
                if g.array_begin > at {
                    g.array_begin += held;
                    g.xfer_end += held;
                }
            }
        }
    }

    /// Closes the batch, whose operations numbered `counts` by kind: when it completed
    /// and how long its first operation waited.
    #[inline]
    pub fn end(&mut self, counts: &[u64; 4]) -> Served {
        let saved = std::mem::take(&mut self.saved);
        if self.first == u64::MAX {
            return Served {
                done: Nanos(self.start),
                wait: Nanos::ZERO,
            };
        }
        let t = &self.die_time;
        self.busy +=
            counts[0] * t[0] + counts[1] * t[1] + counts[2] * t[2] + counts[3] * t[3] - saved;
        self.latest = self.latest.max(self.done);
        Served {
            done: Nanos(self.done),
            wait: Nanos(self.first - self.start),
        }
    }

    /// Whether array times are exponential draws (call [`DieClock::op`] with `EXP`).
    #[inline]
    pub fn exponential(&self) -> bool {
        self.exponential.is_some()
    }

    /// When the die of `block` is free (its last reserved operation ends): what an
    /// allocator that places writes by die load compares.
    #[inline]
    pub fn free_at(&self, block: Pbn) -> Nanos {
        Nanos(self.die_free[self.route[block.idx()].0 as usize])
    }

    /// When every die and channel is free again.
    pub fn idle_at(&self) -> Nanos {
        Nanos(self.latest)
    }

    /// Forgets all busy state.
    pub fn reset(&mut self) {
        self.die_free.fill(0);
        self.chan_free.fill(0);
        if let Some(g) = &mut self.gaps {
            g.iter_mut().for_each(VecDeque::clear);
        }
        self.latest = 0;
        self.busy = 0;
        if let Some(q) = &mut self.queues {
            q.pending.iter_mut().for_each(VecDeque::clear);
            q.gc.iter_mut().for_each(VecDeque::clear);
            q.shift.fill(0);
            q.gc_shift.fill(0);
            q.count = 0;
            q.overtakes = 0;
        }
        if let Some(p) = &mut self.planes {
            p.group.fill(Group::default());
        }
    }

    /// Die time spent on operations, summed over dies, and the number of dies (of
    /// planes, on a device with several per die: utilisation is then the planes' share
    /// of time busy, each operation counted on its plane).
    pub fn busy(&self) -> (Nanos, u32) {
        let per_die = self.planes.as_ref().map_or(1, |p| p.per_die);
        (Nanos(self.busy), self.die_free.len() as u32 * per_die)
    }

    /// Times a logged batch from `start`.
    fn run(&mut self, start: Nanos, ops: &OpBatch<'_>) -> Served {
        self.begin(start);
        if self.needs_cause() {
            for op in ops.ops {
                self.op_caused(op.kind, op.block, op.cause);
            }
        } else if self.exponential() {
            for op in ops.ops {
                self.op::<true>(op.kind, op.block);
            }
        } else {
            for op in ops.ops {
                self.op::<false>(op.kind, op.block);
            }
        }
        self.end(&ops.counts)
    }
}

impl ParallelTiming {
    /// `channels * dies_per_channel` dies over `blocks` blocks (block `b` on die
    /// `b % dies`, die `d` on channel `d % channels`); `xfer` is one page's channel
    /// transfer time.
    pub fn new(
        lat: Latencies,
        channels: u32,
        dies_per_channel: u32,
        blocks: u32,
        xfer: Nanos,
    ) -> Self {
        ParallelTiming {
            clock: DieClock::new(lat, channels, dies_per_channel, blocks, xfer),
        }
    }

    /// Block `i` sits where physical block `physical[i]` does (on die `physical[i] %
    /// dies`): the FTL's blocks are the good ones of a device with initial bad blocks,
    /// numbered densely (issue 23 item 4). Computed once; nothing per operation.
    pub fn with_block_map(mut self, physical: &[u32]) -> Self {
        let c = &mut self.clock;
        let (dies, channels) = (c.die_free.len() as u32, c.chan_free.len() as u32);
        for (r, &p) in c.route.iter_mut().zip(physical) {
            *r = (p % dies, p % dies % channels);
        }
        if let Some(planes) = &mut c.planes {
            for (bit, &p) in planes.bit.iter_mut().zip(physical) {
                *bit = 1 << (p / dies % planes.per_die);
            }
        }
        self
    }

    /// `per_die` planes per die (1: the default, one): block `b` is on plane
    /// `(b / dies) % per_die` of its die, and programs, page reads and erases on
    /// different planes of a die run their array time together (module documentation,
    /// "Choices"). Call before [`ParallelTiming::with_block_map`].
    pub fn with_planes(mut self, per_die: u32) -> Self {
        let c = &mut self.clock;
        if per_die <= 1 {
            c.planes = None;
            c.slow = c.gaps.is_some();
            return self;
        }
        c.slow = true;
        let dies = c.die_free.len() as u32;
        c.planes = Some(Box::new(Planes {
            per_die,
            bit: (0..c.route.len() as u32)
                .map(|b| 1 << (b / dies % per_die))
                .collect(),
            group: vec![Group::default(); dies as usize],
        }));
        self
    }

    /// Each operation's array time drawn from an exponential distribution whose mean is
    /// the preset's (seeded, so runs repeat), instead of the fixed time. Utilisation
    /// still counts the mean.
    pub fn with_exponential_service(mut self, seed: u64) -> Self {
        self.clock.exponential = Some(crate::rng::SplitMix64::new(seed));
        self
    }

    /// Sub-page transfers: a host read of part of a `page_bytes` page moves only the
    /// bytes it asks for over the channel, as MQSim times a transfer by the sectors a
    /// transaction carries (its data transfer time is per byte). Programs, GC and map
    /// reads move whole pages. Off (the default here; the config's
    /// `sub_page_transfers` turns it on): every read moves its page.
    pub fn with_sub_page_transfers(mut self, page_bytes: u32) -> Self {
        self.clock.page_bytes = page_bytes;
        self
    }

    /// Backfilling of channel slots: a transfer takes the first idle gap on its channel
    /// at or after the moment it can start (its sense done, or its die free for a
    /// program), even if a later one was reserved first, as a controller that
    /// arbitrates the channel among dies as their data gets ready does. Off (the
    /// default): a channel's transfers go in the order they were reserved. With
    /// program/erase suspend or preemptible GC, a read that goes ahead of its die's
    /// queue takes a gap that holds its transfer, else moves the channel's later
    /// reservations and gaps one transfer later (module documentation).
    pub fn with_channel_backfill(mut self) -> Self {
        let channels = self.clock.chan_free.len();
        self.clock.gaps = Some(vec![VecDeque::new(); channels].into_boxed_slice());
        self.clock.slow = true;
        self
    }

    /// Program/erase suspend: a host read that finds its die running a program or an
    /// erase with more than the suspend's latency left suspends it, after `program` or
    /// `erase` (the suspend latency), and the operation resumes when the read is done
    /// (module documentation, "Choices").
    pub fn with_suspend(mut self, program: Nanos, erase: Nanos) -> Self {
        self.queues().suspend = Some((program.0, erase.0));
        self
    }

    /// Preemptible GC: a host read goes ahead of the GC operations queued on its die
    /// that have not begun, and they begin that much later (module documentation,
    /// "Choices").
    pub fn with_preemptible_gc(mut self) -> Self {
        self.queues().preempt = true;
        self
    }

    /// The clock's per-die queues, made on first use.
    fn queues(&mut self) -> &mut Queues {
        let dies = self.clock.die_free.len();
        self.clock
            .queues
            .get_or_insert_with(|| Box::new(Queues::new(dies)))
    }
}

impl Timing for ParallelTiming {
    fn serve(&mut self, arrival: Nanos, ops: OpBatch<'_>) -> Served {
        self.clock.run(arrival, &ops)
    }

    fn background(&mut self, start: Nanos, ops: OpBatch<'_>) -> Nanos {
        self.clock.run(start, &ops).done
    }

    fn idle_at(&self) -> Nanos {
        self.clock.idle_at()
    }

    fn reset(&mut self) {
        self.clock.reset();
    }

    fn busy(&self) -> (Nanos, u32) {
        self.clock.busy()
    }

    fn suspensions(&self) -> Option<u64> {
        self.clock.suspensions()
    }

    fn preemptions(&self) -> Option<u64> {
        self.clock.preemptions()
    }

    fn inline_clock(&mut self) -> Option<DieClock> {
        Some(std::mem::take(&mut self.clock))
    }
}

/// Closed-loop admission (`queue_depth`): the host keeps `depth` requests outstanding
/// in each of `queues` submission queues, and each completion admits the next request;
/// trace timestamps are ignored.
///
/// Choices (documented in docs/timing.md): requests are dealt to the queues round-robin
/// in trace order (request `i` to queue `i % queues`), and the host submits them in
/// trace order: a request is admitted when a slot of its queue is free and not before
/// the request ahead of it (so arrivals never go back in time, and a full queue holds
/// up the next one's requests, as a single submitting thread would). The run starts at
/// time 0 with every slot free. One queue of depth `N` is the textbook closed loop of
/// `N` clients with no think time.
#[derive(Clone, Debug)]
pub struct ClosedLoop {
    /// Per queue, the completion times of its outstanding requests (a min-heap each,
    /// sized once: admitting and completing never allocates).
    slots: Vec<BinaryHeap<Reverse<u64>>>,
    /// The queue of the request admitted last.
    current: usize,
    /// Requests admitted so far.
    admitted: u64,
    /// Arrival of the request admitted last.
    last: u64,
}

impl ClosedLoop {
    /// `queues` submission queues of `depth` slots each (both at least 1).
    pub fn new(queues: u32, depth: u32) -> ClosedLoop {
        assert!(queues >= 1 && depth >= 1, "validated by the caller");
        ClosedLoop {
            slots: (0..queues)
                .map(|_| (0..depth).map(|_| Reverse(0)).collect())
                .collect(),
            current: 0,
            admitted: 0,
            last: 0,
        }
    }

    /// Admits the next request: returns its arrival (when a slot of its queue frees,
    /// and not before the previous arrival).
    #[inline]
    pub fn admit(&mut self) -> Nanos {
        self.current = (self.admitted % self.slots.len() as u64) as usize;
        self.admitted += 1;
        let free = self.slots[self.current].peek().map_or(0, |r| r.0);
        self.last = self.last.max(free);
        Nanos(self.last)
    }

    /// The request admitted last completed at `done`: its slot is busy until then.
    #[inline]
    pub fn complete(&mut self, done: Nanos) {
        if let Some(mut slot) = self.slots[self.current].peek_mut() {
            *slot = Reverse(done.0.max(self.last));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flash::{Cause, FlashOp};
    use crate::units::Pbn;

    fn lat() -> Latencies {
        Latencies {
            read: Nanos(100),
            spare_read: Nanos(10),
            program: Nanos(300),
            erase: Nanos(2000),
        }
    }

    fn op(kind: OpKind, b: u32) -> FlashOp {
        FlashOp {
            kind,
            block: Pbn(b),
            cause: Cause::Host,
        }
    }

    /// The batch the flash would hand over for `ops` (logging on).
    fn batch(ops: &[FlashOp]) -> OpBatch<'_> {
        let mut counts = [0; 4];
        for o in ops {
            counts[o.kind as usize] += 1;
        }
        OpBatch { counts, ops }
    }

    fn serve(t: &mut dyn Timing, at: u64, ops: &[FlashOp]) -> (u64, u64) {
        let s = t.serve(Nanos(at), batch(ops));
        (s.done.0, s.wait.0)
    }

    #[test]
    fn serial_queues_fcfs() {
        let mut t = SerialTiming::new(lat());
        let ops = [op(OpKind::Program, 0)];
        assert_eq!(serve(&mut t, 0, &ops), (300, 0));
        // Arrives while busy: waits.
        assert_eq!(serve(&mut t, 100, &ops), (600, 200));
        // Arrives after idle: no wait.
        assert_eq!(serve(&mut t, 1000, &ops), (1300, 0));
        assert_eq!(t.idle_at(), Nanos(1300));
        // A request with no flash op completes at arrival.
        assert_eq!(serve(&mut t, 1100, &[]), (1100, 0));
        let mixed = [
            op(OpKind::Read, 0),
            op(OpKind::SpareRead, 0),
            op(OpKind::Erase, 1),
        ];
        assert_eq!(serve(&mut t, 2000, &mixed), (2000 + 100 + 10 + 2000, 0));
        assert_eq!(t.busy(), (Nanos(3 * 300 + 2110), 1));
        // Counts alone suffice (logging off).
        let mut u = SerialTiming::new(lat());
        assert!(!u.needs_ops());
        let counts = batch(&mixed).counts;
        assert_eq!(
            u.serve(Nanos(0), OpBatch { counts, ops: &[] }).done,
            Nanos(2110)
        );
    }

    #[test]
    fn a_block_map_places_good_blocks_on_their_physical_dies() {
        // Physical blocks 1 and 3 are good blocks 0 and 1: both on die 1 of 2.
        let ops = [op(OpKind::Program, 0), op(OpKind::Program, 1)];
        let mut t = ParallelTiming::new(lat(), 2, 1, 2, Nanos(50)).with_block_map(&[1, 3]);
        assert_eq!(serve(&mut t, 0, &ops), (600, 0));
        // Unmapped they sit on dies 0 and 1 and overlap.
        let mut t = ParallelTiming::new(lat(), 2, 1, 2, Nanos(50));
        assert_eq!(serve(&mut t, 0, &ops), (300, 0));
    }

    #[test]
    fn parallel_overlaps_dies() {
        let mut t = ParallelTiming::new(lat(), 2, 1, 8, Nanos(50));
        // Two programs on different dies/channels overlap fully.
        let ops = [op(OpKind::Program, 0), op(OpKind::Program, 1)];
        assert_eq!(serve(&mut t, 0, &ops), (300, 0));
        assert_eq!(t.busy(), (Nanos(600), 2));
        // Same die: serialised.
        t.reset();
        assert_eq!(t.busy(), (Nanos(0), 2));
        let ops = [op(OpKind::Program, 0), op(OpKind::Program, 2)];
        assert_eq!(serve(&mut t, 0, &ops), (600, 0));
        assert_eq!(t.idle_at(), Nanos(600));
        // The next request on die 0 waits for it.
        assert_eq!(serve(&mut t, 100, &[op(OpKind::Program, 0)]), (900, 500));
        assert_eq!(t.idle_at(), Nanos(900));
    }

    #[test]
    fn parallel_copy_waits_for_its_read() {
        let mut t = ParallelTiming::new(lat(), 2, 1, 8, Nanos(50));
        let ops = [op(OpKind::Read, 0), op(OpKind::Program, 1)];
        // read: 50 array + 50 xfer = 100; program starts its transfer at 100: 100+50+250.
        assert_eq!(serve(&mut t, 0, &ops), (400, 0));
    }

    #[test]
    fn closed_loop_admits_on_completion() {
        // Depth 1: each request arrives when the previous completes.
        let mut q = ClosedLoop::new(1, 1);
        let mut t = SerialTiming::new(lat());
        let ops = [op(OpKind::Program, 0)];
        for i in 0..5u64 {
            let at = q.admit();
            assert_eq!(at, Nanos(300 * i));
            let s = t.serve(at, batch(&ops));
            assert_eq!(s.wait, Nanos::ZERO);
            q.complete(s.done);
        }
        // Depth 3 on one serial chip: three arrive at 0, then one per completion;
        // throughput is the chip's, the response time three services.
        let mut q = ClosedLoop::new(1, 3);
        let mut t = SerialTiming::new(lat());
        let mut arrivals = Vec::new();
        let mut responses = Vec::new();
        for _ in 0..6 {
            let at = q.admit();
            let s = t.serve(at, batch(&ops));
            q.complete(s.done);
            arrivals.push(at.0);
            responses.push(s.done.0 - at.0);
        }
        assert_eq!(arrivals, [0, 0, 0, 300, 600, 900]);
        assert_eq!(responses, [300, 600, 900, 900, 900, 900]);
    }

    #[test]
    fn closed_loop_queues_take_turns_and_arrivals_never_go_back() {
        // Two queues of depth 1 over two dies: requests alternate queues; queue 0's
        // requests go to die 0 (slow erase), queue 1's to die 1 (fast program).
        let mut q = ClosedLoop::new(2, 1);
        let mut t = ParallelTiming::new(lat(), 2, 1, 8, Nanos(0));
        let slow = [op(OpKind::Erase, 0)];
        let fast = [op(OpKind::Program, 1)];
        let mut arrivals = Vec::new();
        for i in 0..4 {
            let at = q.admit();
            let s = t.serve(at, batch(if i % 2 == 0 { &slow } else { &fast }));
            q.complete(s.done);
            arrivals.push(at.0);
        }
        // Request 2 (queue 0) waits for the erase; request 3 (queue 1) is free at 300
        // but is submitted after request 2, in trace order.
        assert_eq!(arrivals, [0, 0, 2000, 2000]);
    }

    #[test]
    fn backfilling_remembers_at_most_gaps_kept_gaps_even_when_transfers_split_them() {
        // Regression: a transfer placed inside a gap splits it in two, and the split
        // did not honour the bound, so a channel's gap list (searched by every
        // transfer) grew with the run.
        let mut q = Gaps::new();
        let mut free = 0;
        // Many wide gaps: a reservation far after the channel's last one each time.
        for k in 0..GAPS_KEPT as u64 {
            let t0 = free + 1_000;
            backfill(&mut free, &mut q, 0, t0, 10);
            assert_eq!(q.len() as u64, k + 1);
        }
        // Short transfers that land in the middle of the gaps split them.
        for k in 0..10 * GAPS_KEPT as u64 {
            let t0 = (k % GAPS_KEPT as u64) * 1_010 + 500;
            let b = backfill(&mut free, &mut q, 0, t0, 1);
            assert!(b >= t0);
            assert!(q.len() <= GAPS_KEPT, "{} gaps after {k} splits", q.len());
        }
    }

    #[test]
    fn a_read_that_goes_ahead_takes_a_gap_that_holds_it_and_moves_nothing() {
        let mut q: Gaps = [(100, 200), (300, 400)].into_iter().collect();
        let mut free = 1_000;
        // [320, 330) lies in the second gap: split, nothing moves.
        ahead_of_gaps(&mut free, &mut q, 320, 10);
        assert_eq!(free, 1_000);
        assert_eq!(Vec::from(q.clone()), [(100, 200), (300, 320), (330, 400)]);
        // A gap's very start and very end: trimmed, or gone when used whole.
        ahead_of_gaps(&mut free, &mut q, 100, 10);
        ahead_of_gaps(&mut free, &mut q, 390, 10);
        assert_eq!(Vec::from(q.clone()), [(110, 200), (300, 320), (330, 390)]);
        ahead_of_gaps(&mut free, &mut q, 300, 20);
        assert_eq!(Vec::from(q), [(110, 200), (330, 390)]);
    }

    #[test]
    fn a_read_that_goes_ahead_of_a_busy_channel_moves_what_follows_and_its_gaps() {
        let mut q: Gaps = [(100, 200), (300, 400), (500, 600)].into_iter().collect();
        let mut free = 1_000;
        // At 350 with 60 ns: no gap holds [350, 410). The reservations after 350 move
        // 60 later, the gap around 350 keeps [300, 350) and moves the rest, the gap
        // after it moves whole, the one before stays.
        ahead_of_gaps(&mut free, &mut q, 350, 60);
        assert_eq!(free, 1_060);
        assert_eq!(
            Vec::from(q),
            [(100, 200), (300, 350), (410, 460), (560, 660)]
        );
        // The channel free by t0: after its last reservation, the gap before it kept.
        let mut q = Gaps::new();
        let mut free = 100;
        ahead_of_gaps(&mut free, &mut q, 150, 10);
        assert_eq!((free, Vec::from(q)), (160, vec![(100, 150)]));
        // The bound holds when splits add gaps.
        let mut q: Gaps = (0..GAPS_KEPT as u64)
            .map(|k| (k * 100, k * 100 + 50))
            .collect();
        let mut free = 100 * GAPS_KEPT as u64;
        ahead_of_gaps(&mut free, &mut q, 25, 40);
        assert!(q.len() <= GAPS_KEPT);
    }

    #[test]
    fn backfilling_puts_a_transfer_in_an_earlier_idle_gap_of_its_channel() {
        // One channel, two dies, a 40 transfer: read array 60, program array 260.
        let (prog0, read0, read1) = (
            [op(OpKind::Program, 0)],
            [op(OpKind::Read, 0)],
            [op(OpKind::Read, 1)],
        );
        let mut plain = ParallelTiming::new(lat(), 1, 2, 16, Nanos(40));
        let mut fill = ParallelTiming::new(lat(), 1, 2, 16, Nanos(40)).with_channel_backfill();
        for t in [&mut plain, &mut fill] {
            // Program on die 0: transfer 0..40, array to 300; a read behind it senses
            // 300..360 and transfers 360..400: the channel idles from 40 to 360.
            assert_eq!(serve(t, 0, &prog0), (300, 0));
            assert_eq!(serve(t, 0, &read0), (400, 300));
        }
        // A read on die 1 at 10 senses 10..70: in order it transfers 400..440; with
        // backfilling in the gap, 70..110.
        assert_eq!(serve(&mut plain, 10, &read1), (440, 0));
        assert_eq!(serve(&mut fill, 10, &read1), (110, 0));
        // The next on die 1 (free at 110) senses 110..170 and fits the gap's rest.
        assert_eq!(serve(&mut fill, 20, &read1), (210, 90));
        // A transfer that fits no gap goes after the last reservation (400).
        let mut fill2 = fill.clone();
        assert_eq!(serve(&mut fill2, 395, &read1), (395 + 60 + 40, 0));
        // The same work either way.
        assert_eq!(plain.busy().0 .0, 300 + 100 + 100);
        assert_eq!(fill.busy().0 .0, 300 + 100 + 100 + 100);
    }

    #[test]
    fn a_host_read_of_part_of_a_page_moves_only_that_part() {
        let mut c = DieClock::new(lat(), 1, 1, 16, Nanos(40));
        c.page_bytes = 4096;
        c.begin(Nanos(0));
        // A quarter page: sense 60, a quarter of the transfer (10).
        assert!(c.set_host_read_bytes(1024));
        c.op_caused(OpKind::Read, Pbn(0), Cause::Host);
        assert!(!c.set_host_read_bytes(4096));
        // GC's read of a page in the same batch moves all of it: 70 + 60 + 40.
        assert!(c.set_host_read_bytes(1024));
        c.op_caused(OpKind::Read, Pbn(0), Cause::Gc);
        let served = c.end(&[2, 0, 0, 0]);
        assert_eq!(served.done.0, 170);
        // Utilisation counts the transfer moved: 70 + 100.
        assert_eq!(c.busy, 170);
        // A new batch moves whole pages again.
        c.begin(Nanos(200));
        c.op_caused(OpKind::Read, Pbn(0), Cause::Host);
        assert_eq!(c.end(&[1, 0, 0, 0]).done.0, 300);
        // Off (no page size): whole pages.
        let mut off = DieClock::new(lat(), 1, 1, 16, Nanos(40));
        assert!(!off.set_host_read_bytes(1024));
    }

    #[test]
    fn runs_of_copies_and_programs_time_as_their_single_steps() {
        // 2 channels x 2 dies: a run's two blocks share a die, only a channel, or
        // nothing; batches mix runs with single operations and arrive at random.
        for backfill in [false, true] {
            let mut one = DieClock::new(lat(), 2, 2, 64, Nanos(40));
            if backfill {
                one.gaps = Some(vec![Gaps::new(); 2].into_boxed_slice());
                one.slow = true;
            }
            let mut run = one.clone();
            let mut rng = crate::rng::SplitMix64::new(11);
            let mut at = 0;
            for _ in 0..3000 {
                at += rng.next_u64() % 400;
                one.begin(Nanos(at));
                run.begin(Nanos(at));
                for _ in 0..rng.next_u64() % 4 {
                    let (a, b) = (Pbn(rng.below(64) as u32), Pbn(rng.below(64) as u32));
                    let n = rng.below(6) as u32;
                    match rng.next_u64() % 4 {
                        0 => {
                            for _ in 0..n {
                                one.copy(a, b);
                            }
                            run.copy_run(a, b, n);
                        }
                        1 => {
                            for _ in 0..n {
                                one.op::<false>(OpKind::Program, a);
                            }
                            run.program_run(a, n);
                        }
                        // A read, then a run of programs: the first waits for it.
                        2 => {
                            one.op::<false>(OpKind::Read, b);
                            run.op::<false>(OpKind::Read, b);
                            for _ in 0..n {
                                one.op::<false>(OpKind::Program, a);
                            }
                            run.program_run(a, n);
                        }
                        _ => {
                            one.op::<false>(OpKind::Erase, a);
                            run.op::<false>(OpKind::Erase, a);
                        }
                    }
                }
                let counts = [1, 0, 1, 0];
                let (x, y) = (one.end(&counts), run.end(&counts));
                assert_eq!(x, y);
                assert_eq!(format!("{one:?}"), format!("{run:?}"));
            }
        }
    }

    #[test]
    fn one_die_parallel_equals_serial_exactly() {
        // One channel, one die: the transfer is split off and added back, so every
        // completion and wait matches the serial model's, for any mix and arrival.
        let mut s = SerialTiming::new(lat());
        let mut p = ParallelTiming::new(lat(), 1, 1, 16, Nanos(40));
        let mut rng = crate::rng::SplitMix64::new(7);
        let kinds = [
            OpKind::Read,
            OpKind::SpareRead,
            OpKind::Program,
            OpKind::Erase,
        ];
        let mut at = 0;
        let mut ops = Vec::new();
        for _ in 0..2000 {
            ops.clear();
            for _ in 0..rng.next_u64() % 5 {
                let k = kinds[(rng.next_u64() % 4) as usize];
                ops.push(op(k, (rng.next_u64() % 16) as u32));
            }
            at += rng.next_u64() % 600;
            assert_eq!(serve(&mut s, at, &ops), serve(&mut p, at, &ops));
            assert_eq!(s.idle_at(), p.idle_at());
        }
        assert_eq!(s.busy(), p.busy());
    }

    /// Requests per ns of a closed loop of `depth` random single-page reads over
    /// `dies` dies, each on its own channel, with a fixed service time of 100 ns.
    fn closed_loop_read_throughput(dies: u32, depth: u32, requests: u64) -> f64 {
        closed_loop(
            ParallelTiming::new(lat(), dies, 1, dies * 16, Nanos(0)),
            dies,
            depth,
            requests,
        )
    }

    /// Requests per ns of a closed loop of `depth` random single-page reads over
    /// `dies` dies of timing model `t`.
    fn closed_loop(mut t: ParallelTiming, dies: u32, depth: u32, requests: u64) -> f64 {
        let mut q = ClosedLoop::new(1, depth);
        let mut rng = crate::rng::SplitMix64::new(42);
        let mut last = 0;
        for _ in 0..requests {
            let at = q.admit();
            let block = rng.below(dies as u64 * 16) as u32;
            let s = t.serve(at, batch(&[op(OpKind::Read, block)]));
            q.complete(s.done);
            last = last.max(s.done.0);
        }
        requests as f64 / last as f64
    }

    #[test]
    fn fixed_service_speedup_on_32_dies_is_19x_at_qd32_and_30x_at_qd256() {
        // A closed loop of N clients over D = 32 fixed-time servers with random
        // routing: above the product form's D N / (N + D - 1) (16.3 at N = 32, 28.5 at
        // N = 256, for exponential service), since fixed service queues less; the
        // issue's figures are about 19x and 30x.
        let x1 = closed_loop_read_throughput(32, 1, 20_000);
        assert!(
            (x1 * 100.0 - 1.0).abs() < 1e-9,
            "QD 1 is one read at a time: {x1}"
        );
        let s32 = closed_loop_read_throughput(32, 32, 200_000) / x1;
        let s256 = closed_loop_read_throughput(32, 256, 200_000) / x1;
        assert!((18.5..=19.5).contains(&s32), "QD 32: {s32:.2}x");
        assert!((29.5..=30.5).contains(&s256), "QD 256: {s256:.2}x");
        // Above the product form (exponential service), below D.
        let pf = |n: f64| 32.0 * n / (n + 31.0);
        assert!(s32 > pf(32.0) && s256 > pf(256.0) && s256 < 32.0);
    }

    #[test]
    fn exponential_service_gives_the_product_form_throughput() {
        // A closed network of N clients over D exponential servers with random routing
        // (Gordon-Newell): X(N) t = D N / (N + D - 1), t the mean service time (100 ns).
        let exp = |dies: u32, seed| {
            ParallelTiming::new(lat(), dies, 1, dies * 16, Nanos(0)).with_exponential_service(seed)
        };
        for (dies, depth) in [(1, 4), (4, 1), (4, 4), (8, 16), (32, 32), (32, 256)] {
            let x = closed_loop(exp(dies, 7), dies, depth, 200_000) * 100.0;
            let (d, n) = (dies as f64, depth as f64);
            let pf = d * n / (n + d - 1.0);
            assert!(
                (x / pf - 1.0).abs() < 0.01,
                "D {dies}, N {depth}: {x:.3} vs {pf:.3}"
            );
        }
        // The draws have the preset's mean, and a seed repeats its run exactly.
        let a = closed_loop(exp(8, 1), 8, 8, 20_000);
        assert_eq!(a, closed_loop(exp(8, 1), 8, 8, 20_000));
        assert_ne!(a, closed_loop(exp(8, 2), 8, 8, 20_000));
    }

    fn gc(kind: OpKind, b: u32) -> FlashOp {
        FlashOp {
            kind,
            block: Pbn(b),
            cause: Cause::Gc,
        }
    }

    #[test]
    fn a_host_read_suspends_an_erase_and_the_erase_ends_that_much_later() {
        // One die, transfer 40: read array 60, program array 260, erase 2000.
        let mk = || ParallelTiming::new(lat(), 1, 1, 16, Nanos(40));
        let mut off = mk();
        let mut on = mk().with_suspend(Nanos(30), Nanos(70));
        for t in [&mut off as &mut dyn Timing, &mut on] {
            assert_eq!(
                t.background(Nanos(0), batch(&[gc(OpKind::Erase, 1)])),
                Nanos(2000)
            );
        }
        // Without suspend the read waits for the erase.
        assert_eq!(serve(&mut off, 500, &[op(OpKind::Read, 2)]), (2100, 1500));
        // With it: the erase is suspended (70), the read senses (60) and transfers
        // (40), and the erase resumes: it ends 170 later.
        assert_eq!(serve(&mut on, 500, &[op(OpKind::Read, 2)]), (670, 70));
        assert_eq!(on.idle_at(), Nanos(2170));
        assert_eq!(on.suspensions(), Some(1));
        assert_eq!(off.suspensions(), None);
        // A second read arriving while the first holds the die follows it without a
        // second suspend; the erase ends later by its time too.
        assert_eq!(serve(&mut on, 600, &[op(OpKind::Read, 3)]), (770, 70));
        assert_eq!(on.idle_at(), Nanos(2270));
        assert_eq!(on.suspensions(), Some(1));
        // A read after the first ones are done pays a new suspend.
        assert_eq!(serve(&mut on, 1000, &[op(OpKind::Read, 3)]), (1170, 70));
        assert_eq!(on.suspensions(), Some(2));
        assert_eq!(on.idle_at(), Nanos(2440));
        // Too little of the erase left (less than the suspend's 70): the read waits.
        assert_eq!(serve(&mut on, 2400, &[op(OpKind::Read, 3)]), (2540, 40));
        assert_eq!(on.suspensions(), Some(2));
    }

    #[test]
    fn a_host_read_goes_ahead_of_queued_gc_operations_under_preemptible_gc() {
        let mk = || ParallelTiming::new(lat(), 1, 1, 16, Nanos(40));
        // GC at 0: a read (0..100), a copy's program (transfer 100..140, array to 400),
        // an erase (400..2400).
        let work = [
            gc(OpKind::Read, 2),
            gc(OpKind::Program, 1),
            gc(OpKind::Erase, 3),
        ];
        let mut off = mk();
        assert_eq!(off.background(Nanos(0), batch(&work)), Nanos(2400));
        // Without preemption a host read at 50 waits for all of it.
        assert_eq!(serve(&mut off, 50, &[op(OpKind::Read, 2)]), (2500, 2350));
        assert_eq!(off.preemptions(), None);

        let mut on = mk().with_preemptible_gc();
        assert_eq!(on.background(Nanos(0), batch(&work)), Nanos(2400));
        // The GC read has begun; the program and the erase have not: the host read
        // follows the GC read (100..200) and the two GC operations begin 100 later.
        assert_eq!(serve(&mut on, 50, &[op(OpKind::Read, 2)]), (200, 50));
        assert_eq!(on.idle_at(), Nanos(2500));
        // A second read follows the first (host reads keep their order), ahead of GC.
        assert_eq!(serve(&mut on, 60, &[op(OpKind::Read, 2)]), (300, 140));
        assert_eq!(on.idle_at(), Nanos(2600));
        // A host write does not overtake: it queues behind the GC operations (its
        // transfer 2600..2640, array to 2900) ...
        assert_eq!(serve(&mut on, 70, &[op(OpKind::Program, 1)]), (2900, 2530));
        // ... and a read after it has nothing to overtake: GC queued before a host
        // operation keeps its place.
        assert_eq!(serve(&mut on, 80, &[op(OpKind::Read, 2)]), (3000, 2820));
        assert_eq!(on.preemptions(), Some(2));
        assert_eq!(on.suspensions(), None);

        // A GC operation that has begun is not overtaken: at 150 the program runs
        // (array until 400); the read goes ahead of the erase only.
        let mut on = mk().with_preemptible_gc();
        on.background(Nanos(0), batch(&work));
        assert_eq!(serve(&mut on, 150, &[op(OpKind::Read, 2)]), (500, 250));
        assert_eq!(on.idle_at(), Nanos(2500));
        // A GC read does not overtake anything.
        let mut on = mk().with_preemptible_gc();
        on.background(Nanos(0), batch(&work));
        assert_eq!(
            on.background(Nanos(50), batch(&[gc(OpKind::Read, 2)])),
            Nanos(2500)
        );
        assert_eq!(on.preemptions(), Some(0));
        // With suspend on as well, a read that can suspend the running program does
        // (30, then 60 + 40), ahead of everything; one that cannot overtakes the queue.
        let mut both = mk()
            .with_preemptible_gc()
            .with_suspend(Nanos(30), Nanos(70));
        both.background(Nanos(0), batch(&work));
        assert_eq!(serve(&mut both, 150, &[op(OpKind::Read, 2)]), (280, 30));
        assert_eq!((both.suspensions(), both.preemptions()), (Some(1), Some(0)));
        // The program now ends at 530 and the erase is still queued: a read at 520
        // (too little of the program left to suspend) goes ahead of the erase.
        assert_eq!(serve(&mut both, 520, &[op(OpKind::Read, 2)]), (630, 10));
        assert_eq!((both.suspensions(), both.preemptions()), (Some(1), Some(1)));
        assert_eq!(both.idle_at(), Nanos(2630));
        // Reset forgets the queues and the counts.
        both.reset();
        assert_eq!(both.preemptions(), Some(0));
        assert_eq!(serve(&mut both, 0, &[op(OpKind::Read, 2)]), (100, 0));
    }

    #[test]
    fn programs_on_two_planes_of_a_die_share_one_program_time() {
        // One die, two planes (block b on plane b % 2), a 40 transfer, program 300
        // (array 260).
        let mk = || ParallelTiming::new(lat(), 1, 1, 16, Nanos(40)).with_planes(2);
        let progs = |blocks: &[u32]| -> Vec<FlashOp> {
            blocks.iter().map(|&b| op(OpKind::Program, b)).collect()
        };
        let mut one = ParallelTiming::new(lat(), 1, 1, 16, Nanos(40));
        assert_eq!(serve(&mut one, 0, &progs(&[0, 1])), (600, 0));
        // Two planes: the second page's data goes in after the first's (40..80), and
        // both program from 80: done at 340, not 600.
        let mut two = mk();
        assert_eq!(serve(&mut two, 0, &progs(&[0, 1])), (340, 0));
        // A third page on plane 0 again starts a group of its own.
        let mut two = mk();
        assert_eq!(serve(&mut two, 0, &progs(&[0, 1, 2])), (640, 0));
        // Two pages on one plane do not combine.
        let mut two = mk();
        assert_eq!(serve(&mut two, 0, &progs(&[0, 2])), (600, 0));
        // A program of a later request joins a group that has not begun its array
        // time when the request arrives (at 10: the first's data is still going in) ...
        let mut two = mk();
        assert_eq!(serve(&mut two, 0, &progs(&[0])), (300, 0));
        assert_eq!(serve(&mut two, 10, &progs(&[1])), (340, 30));
        assert_eq!(two.idle_at(), Nanos(340));
        // ... but not one already programming (at 100), nor after another operation.
        let mut two = mk();
        serve(&mut two, 0, &progs(&[0]));
        assert_eq!(serve(&mut two, 100, &progs(&[1])), (600, 200));
        let mut two = mk();
        assert_eq!(
            serve(
                &mut two,
                0,
                &[
                    op(OpKind::Program, 0),
                    op(OpKind::Read, 4),
                    op(OpKind::Program, 1)
                ]
            ),
            (700, 0)
        );
        // Utilisation counts planes: two programs of 300 over 340 ns on 2 planes.
        let mut two = mk();
        serve(&mut two, 0, &progs(&[0, 1]));
        assert_eq!(two.busy(), (Nanos(600), 2));
        // One plane per die is the model without planes.
        let mut flat = ParallelTiming::new(lat(), 1, 1, 16, Nanos(40)).with_planes(1);
        assert_eq!(serve(&mut flat, 0, &progs(&[0, 1])), (600, 0));
    }

    /// One die on one channel with two planes (block `b` on plane `b % 2`), a 40
    /// transfer: read array 60, program array 260, erase 2000.
    fn two_planes() -> ParallelTiming {
        ParallelTiming::new(lat(), 1, 1, 16, Nanos(40)).with_planes(2)
    }

    fn ops(kind: OpKind, blocks: &[u32]) -> Vec<FlashOp> {
        blocks.iter().map(|&b| op(kind, b)).collect()
    }

    #[test]
    fn reads_on_two_planes_of_a_die_share_one_sense() {
        // One plane: each read senses (60) and transfers (40) in turn.
        let mut one = ParallelTiming::new(lat(), 1, 1, 16, Nanos(40));
        assert_eq!(serve(&mut one, 0, &ops(OpKind::Read, &[0, 1])), (200, 0));
        // Two planes: one sense 0..60, then the pages out one after the other (60..100,
        // 100..140).
        let mut two = two_planes();
        assert_eq!(serve(&mut two, 0, &ops(OpKind::Read, &[0, 1])), (140, 0));
        assert_eq!(two.idle_at(), Nanos(140));
        // Two reads on one plane do not combine; a third read on plane 0 starts a group
        // of its own after the first (140..200..240).
        let mut two = two_planes();
        assert_eq!(serve(&mut two, 0, &ops(OpKind::Read, &[0, 2])), (200, 0));
        let mut two = two_planes();
        assert_eq!(serve(&mut two, 0, &ops(OpKind::Read, &[0, 1, 2])), (240, 0));
        // A read of a later request joins a group that has not begun sensing when the
        // request arrives: behind a program (transfer 0..40, array to 300) a read at 10
        // senses 300..360 and transfers 360..400; one at 20 on the other plane shares
        // that sense (its wait runs to the group's sense) and transfers 400..440.
        let mut two = two_planes();
        assert_eq!(serve(&mut two, 0, &ops(OpKind::Program, &[2])), (300, 0));
        assert_eq!(serve(&mut two, 10, &ops(OpKind::Read, &[0])), (400, 290));
        assert_eq!(serve(&mut two, 20, &ops(OpKind::Read, &[1])), (440, 280));
        // Reads, programs and erases do not mix: a program directly after a read starts
        // its own group, and so does the next read after it.
        let mut two = two_planes();
        let mixed = [
            op(OpKind::Read, 0),
            op(OpKind::Program, 3),
            op(OpKind::Read, 1),
        ];
        // Read 0..100; the program copies it: transfer 100..140, array 140..400; the
        // read senses 400..460 and transfers 460..500.
        assert_eq!(serve(&mut two, 0, &mixed), (500, 0));
        // Spare reads run alone (no transfer, 10 each) and end a read group.
        let mut two = two_planes();
        let spare = [
            op(OpKind::Read, 0),
            op(OpKind::SpareRead, 1),
            op(OpKind::Read, 1),
        ];
        assert_eq!(serve(&mut two, 0, &spare), (100 + 10 + 100, 0));
        // Utilisation counts each read's sense and transfer on its plane.
        let mut two = two_planes();
        serve(&mut two, 0, &ops(OpKind::Read, &[0, 1]));
        assert_eq!(two.busy(), (Nanos(200), 2));
    }

    #[test]
    fn a_read_arriving_after_its_group_began_sensing_runs_alone() {
        let mut two = two_planes();
        // A program (to 300), then a read at 10 that senses from 300.
        serve(&mut two, 0, &ops(OpKind::Program, &[2]));
        assert_eq!(serve(&mut two, 10, &ops(OpKind::Read, &[0])), (400, 290));
        // At 310 the group is sensing: a read on the other plane waits for the die and
        // senses on its own (400..460, out 460..500).
        let mut late = two.clone();
        assert_eq!(serve(&mut late, 310, &ops(OpKind::Read, &[1])), (500, 90));
        // Arriving at the very instant the sense begins is in time: it shares it.
        assert_eq!(serve(&mut two, 300, &ops(OpKind::Read, &[1])), (440, 0));
        // On an idle die a read senses on arrival: one from a later request never
        // shares its sense.
        let mut two = two_planes();
        assert_eq!(serve(&mut two, 0, &ops(OpKind::Read, &[0])), (100, 0));
        assert_eq!(serve(&mut two, 10, &ops(OpKind::Read, &[1])), (200, 90));
    }

    #[test]
    fn erases_on_two_planes_of_a_die_share_one_erase_time() {
        let mut one = ParallelTiming::new(lat(), 1, 1, 16, Nanos(40));
        assert_eq!(serve(&mut one, 0, &ops(OpKind::Erase, &[0, 1])), (4000, 0));
        let mut two = two_planes();
        assert_eq!(serve(&mut two, 0, &ops(OpKind::Erase, &[0, 1])), (2000, 0));
        assert_eq!(two.busy(), (Nanos(4000), 2));
        // One plane twice: in turn.
        let mut two = two_planes();
        assert_eq!(serve(&mut two, 0, &ops(OpKind::Erase, &[0, 2])), (4000, 0));
        // A later request's erase joins one queued behind a program (300..2300) ...
        let mut two = two_planes();
        serve(&mut two, 0, &ops(OpKind::Program, &[2]));
        assert_eq!(serve(&mut two, 10, &ops(OpKind::Erase, &[0])), (2300, 290));
        assert_eq!(serve(&mut two, 20, &ops(OpKind::Erase, &[1])), (2300, 280));
        // ... but not one already erasing.
        let mut two = two_planes();
        assert_eq!(serve(&mut two, 0, &ops(OpKind::Erase, &[0])), (2000, 0));
        assert_eq!(serve(&mut two, 10, &ops(OpKind::Erase, &[1])), (4000, 1990));
    }

    #[test]
    fn a_gc_copy_stream_from_two_planes_of_a_die_reads_faster() {
        // Two dies on two channels, two planes each: block b on die b % 2, plane
        // (b / 2) % 2. Copies from die 0 (sources alternately on its planes 0 and 1:
        // blocks 0 and 2) to die 1 (blocks 1 and 3), through the inline clock's copy.
        let stream = |src: [u32; 2]| {
            let mut t = ParallelTiming::new(lat(), 2, 1, 16, Nanos(40)).with_planes(2);
            let mut c = t
                .inline_clock()
                .expect("the parallel model hands its clock over");
            c.begin(Nanos(0));
            for i in 0..4 {
                c.copy(Pbn(src[i % 2]), Pbn([1, 3][i % 2]));
            }
            let done = c.end(&[4, 0, 4, 0]).done.0;
            (done, c.free_at(Pbn(0)).0)
        };
        // Sources on both planes: the reads pair up, one sense 0..60 and two pages out
        // (60..100, 100..140), then 140..200 and out 200..240, 240..280: die 0 is done
        // at 280. The programs pair up too (data in 100..140 and 140..180, array
        // 180..440; then 440..520, array 520..780).
        assert_eq!(stream([0, 2]), (780, 280));
        // Sources on one plane (blocks 0 and 4), as one victim's pages are: the reads
        // run one at a time (die 0 done at 400) and the copies finish later.
        assert_eq!(stream([0, 4]), (840, 400));
    }

    #[test]
    fn groups_are_one_queued_operation_under_suspend_and_preemptible_gc() {
        // Suspend: a program group (data in 0..40 and 40..80, array 80..340) is one
        // operation of the die's queue: a host read at 60 finds it still taking data
        // (its array time not begun) and does not suspend it; it queues (340..440).
        let mk = || two_planes().with_suspend(Nanos(30), Nanos(70));
        let mut on = mk();
        let progs = [gc(OpKind::Program, 0), gc(OpKind::Program, 1)];
        assert_eq!(on.background(Nanos(0), batch(&progs)), Nanos(340));
        assert_eq!(serve(&mut on, 60, &[op(OpKind::Read, 2)]), (440, 280));
        assert_eq!(on.suspensions(), Some(0));
        // At 100 the group programs: a host read suspends it (30, sense 60, out 40),
        // and the queued read group moves 130 later (sense 470..530, out ..570).
        assert_eq!(serve(&mut on, 100, &[op(OpKind::Read, 3)]), (230, 30));
        assert_eq!(on.suspensions(), Some(1));
        assert_eq!(on.idle_at(), Nanos(570));
        // A GC read on the other plane still joins the moved group (out 570..610).
        assert_eq!(
            on.background(Nanos(150), batch(&[gc(OpKind::Read, 1)])),
            Nanos(610)
        );

        // Preemptible GC: GC's program (to 300) and a read group queued after it (sense
        // from 300); a host read at 50 goes ahead of the group (300..400), which moves
        // 100 later (sense 400..460, out 460..500), and a GC read on the other plane
        // joins it (out 500..540).
        let mut on = two_planes().with_preemptible_gc();
        let work = [gc(OpKind::Program, 0), gc(OpKind::Read, 2)];
        assert_eq!(on.background(Nanos(0), batch(&work)), Nanos(400));
        assert_eq!(serve(&mut on, 50, &[op(OpKind::Read, 4)]), (400, 250));
        assert_eq!(on.preemptions(), Some(1));
        assert_eq!(on.idle_at(), Nanos(500));
        assert_eq!(
            on.background(Nanos(60), batch(&[gc(OpKind::Read, 3)])),
            Nanos(540)
        );
        // A host read on the group's other plane goes ahead of it (GC not begun), as on
        // one plane, rather than joining it (which would end it at 440): overtaking
        // is tried first.
        let mut on = two_planes().with_preemptible_gc();
        on.background(Nanos(0), batch(&work));
        assert_eq!(serve(&mut on, 50, &[op(OpKind::Read, 3)]), (400, 250));
    }

    #[test]
    fn only_host_reads_suspend_and_only_a_running_program_or_erase() {
        let mk =
            || ParallelTiming::new(lat(), 1, 1, 16, Nanos(40)).with_suspend(Nanos(30), Nanos(70));
        let mut on = mk();
        // A program: transfer in 0..40, array 40..300.
        assert_eq!(
            on.background(Nanos(0), batch(&[gc(OpKind::Program, 1)])),
            Nanos(300)
        );
        // A GC read does not suspend it: it queues behind.
        assert_eq!(
            on.background(Nanos(100), batch(&[gc(OpKind::Read, 2)])),
            Nanos(400)
        );
        assert_eq!(on.suspensions(), Some(0));
        // A host read does, though the GC read is queued after the program: it starts
        // after the suspend (30), senses (60) and transfers (40), ahead of the GC read's
        // reserved transfer. The program and the GC read queued behind it end 130
        // later.
        assert_eq!(serve(&mut on, 150, &[op(OpKind::Read, 2)]), (280, 30));
        assert_eq!(on.idle_at(), Nanos(530));
        assert_eq!(on.suspensions(), Some(1));
        // A host read arriving while a read runs on the die does not suspend it.
        let mut q = mk();
        assert_eq!(
            q.background(Nanos(0), batch(&[gc(OpKind::Read, 2)])),
            Nanos(100)
        );
        assert_eq!(serve(&mut q, 10, &[op(OpKind::Read, 2)]), (200, 90));
        assert_eq!(q.suspensions(), Some(0));
        // A program still transferring its data in (array not begun) is not suspended.
        let mut on = mk();
        assert_eq!(serve(&mut on, 1000, &[op(OpKind::Program, 1)]), (1300, 0));
        assert_eq!(serve(&mut on, 1010, &[op(OpKind::Read, 2)]), (1400, 290));
        // Suspended during its array time, a program resumes after the read.
        assert_eq!(serve(&mut on, 2000, &[op(OpKind::Program, 1)]), (2300, 0));
        assert_eq!(serve(&mut on, 2100, &[op(OpKind::Read, 2)]), (2230, 30));
        assert_eq!(on.idle_at(), Nanos(2430));
        assert_eq!(on.suspensions(), Some(1));
        // Resetting forgets the reserved operations and the count.
        on.reset();
        assert_eq!(on.suspensions(), Some(0));
        assert_eq!(serve(&mut on, 0, &[op(OpKind::Read, 2)]), (100, 0));
    }

    #[test]
    fn a_saturated_die_remembers_a_bounded_queue_and_shifts_it_at_once() {
        // Regression: every suspension shifted every queued operation one by one and
        // the queue grew with the backlog, so a saturated run went quadratic (the
        // swarm's 3 minutes held 144 runs).
        let mut on =
            ParallelTiming::new(lat(), 1, 1, 16, Nanos(40)).with_suspend(Nanos(30), Nanos(70));
        for _ in 0..10_000 {
            on.background(Nanos(0), batch(&[gc(OpKind::Program, 1)]));
        }
        let sus = on.clock.queues.as_ref().unwrap();
        assert_eq!(sus.pending[0].len(), PENDING);
        assert_eq!(on.idle_at(), Nanos(10_000 * 300));
        // The running program was forgotten: a read at 100 queues behind the backlog.
        assert_eq!(
            serve(&mut on, 100, &[op(OpKind::Read, 2)]).0,
            10_000 * 300 + 100
        );
        assert_eq!(on.suspensions(), Some(0));
        // Once the die reaches the remembered part of its queue (the queued read took
        // one more place), reads suspend again, and one suspension delays the whole
        // remembered queue by one read.
        let t = (10_000 - PENDING as u64 + 1) * 300 + 100;
        let before = on.idle_at();
        assert_eq!(
            serve(&mut on, t, &[op(OpKind::Read, 2)]),
            (t + 30 + 100, 30)
        );
        assert_eq!(on.suspensions(), Some(1));
        assert_eq!(on.idle_at(), Nanos(before.0 + 130));
    }

    #[test]
    fn qd1_write_costs_one_transfer_and_one_program() {
        // At queue depth 1 a page write is the transfer in plus the array program:
        // the preset's whole program latency, transfer included.
        let mut q = ClosedLoop::new(1, 1);
        let mut t = ParallelTiming::new(lat(), 8, 4, 64, Nanos(50));
        let mut at = Nanos::ZERO;
        for b in 0..10 {
            at = q.admit();
            let s = t.serve(at, batch(&[op(OpKind::Program, b)]));
            assert_eq!(s.done.0 - at.0, 50 + (300 - 50));
            q.complete(s.done);
        }
        assert_eq!(at, Nanos(9 * 300));
    }
}
