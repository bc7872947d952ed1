//! Timing models: when the flash operations of a request finish.
//!
//! FTLs never see the clock. The engine drains the operations an FTL caused for a
//! request from [`Flash`](crate::flash::Flash)'s log and hands them to a [`Timing`].
//!
//! - [`SerialTiming`] is the papers' model: one operation at a time, requests served
//!   first-come first-served; a request's response time is its completion minus its
//!   arrival, queueing included.
//! - [`ParallelTiming`] models channels x dies: an operation occupies its die for the
//!   array time and its channel for the page transfer; a request completes when its last
//!   operation does.
//!
//! Choices the sources leave open (documented options):
//! - Preset latencies are taken as whole-operation costs including the transfer, as the
//!   papers' tables give them. The parallel model splits off a transfer time
//!   (`page_size / channel_mib_s`) from the read and program latency (the array time is
//!   what remains, never less than zero).
//! - Under the parallel model a block's die is `pbn % dies` (blocks striped over dies,
//!   channel-first). Operations of one request issue in order; a program that directly
//!   follows a read (a copy) waits for that read; otherwise operations only wait for
//!   their die and channel.

use crate::flash::{FlashOp, OpKind};
use crate::nand::Latencies;
use crate::units::Nanos;

/// When operations finish. Implementations own their notion of busy resources.
pub trait Timing {
    /// Serves a host request that arrived at `arrival` and caused `ops` (possibly none);
    /// returns its completion time.
    fn serve(&mut self, arrival: Nanos, ops: &[FlashOp]) -> Nanos;

    /// Schedules background work (idle-time GC) starting no earlier than `start`;
    /// returns when it ends. It delays later requests only if it overruns.
    fn background(&mut self, start: Nanos, ops: &[FlashOp]) -> Nanos;

    /// When every resource is free again (the device becomes idle).
    fn idle_at(&self) -> Nanos;

    /// Forgets all busy state (after preconditioning and warm-up).
    fn reset(&mut self);

    /// How long the request of the last [`Timing::serve`] waited for busy resources
    /// before its first operation started (0 if it caused none). The engine sums it to
    /// tell queueing from service and to see a saturated device. The default says 0
    /// (a model that does not know).
    fn last_wait(&self) -> Nanos {
        Nanos::ZERO
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

/// One operation at a time, first-come first-served.
#[derive(Clone, Debug)]
pub struct SerialTiming {
    lat: Latencies,
    busy_until: Nanos,
    last_wait: Nanos,
}

impl SerialTiming {
    /// A serial device with the given latencies.
    pub fn new(lat: Latencies) -> Self {
        SerialTiming {
            lat,
            busy_until: Nanos::ZERO,
            last_wait: Nanos::ZERO,
        }
    }

    fn run(&mut self, start: Nanos, ops: &[FlashOp]) -> Nanos {
        let mut t = start.max(self.busy_until);
        for op in ops {
            t += op_latency(&self.lat, op.kind);
        }
        self.busy_until = t;
        t
    }
}

impl Timing for SerialTiming {
    fn serve(&mut self, arrival: Nanos, ops: &[FlashOp]) -> Nanos {
        if ops.is_empty() {
            // Served from RAM (a buffer hit, an unmapped read): no flash time, and it
            // does not wait for the flash queue.
            self.last_wait = Nanos::ZERO;
            return arrival;
        }
        self.last_wait = self.busy_until.saturating_sub(arrival);
        self.run(arrival, ops)
    }

    fn background(&mut self, start: Nanos, ops: &[FlashOp]) -> Nanos {
        if ops.is_empty() {
            return start;
        }
        self.run(start, ops)
    }

    fn idle_at(&self) -> Nanos {
        self.busy_until
    }

    fn reset(&mut self) {
        self.busy_until = Nanos::ZERO;
        self.last_wait = Nanos::ZERO;
    }

    fn last_wait(&self) -> Nanos {
        self.last_wait
    }
}

/// Channels x dies, with per-die array time and per-channel transfer time.
#[derive(Clone, Debug)]
pub struct ParallelTiming {
    lat: Latencies,
    xfer: Nanos,
    channels: usize,
    die_free: Vec<Nanos>,
    chan_free: Vec<Nanos>,
    /// When the first operation of the last request could start, minus its start.
    last_wait: Nanos,
}

impl ParallelTiming {
    /// `channels * dies_per_channel` dies; `xfer` is one page's channel transfer time.
    pub fn new(lat: Latencies, channels: u32, dies_per_channel: u32, xfer: Nanos) -> Self {
        let dies = (channels * dies_per_channel) as usize;
        ParallelTiming {
            lat,
            xfer,
            channels: channels as usize,
            die_free: vec![Nanos::ZERO; dies],
            chan_free: vec![Nanos::ZERO; channels as usize],
            last_wait: Nanos::ZERO,
        }
    }

    fn array_time(&self, kind: OpKind) -> Nanos {
        let total = op_latency(&self.lat, kind);
        match kind {
            OpKind::Read | OpKind::Program => total.saturating_sub(self.xfer),
            OpKind::SpareRead | OpKind::Erase => total,
        }
    }

    fn run(&mut self, start: Nanos, ops: &[FlashOp]) -> Nanos {
        let mut done = start;
        let mut prev_read_end: Option<Nanos> = None;
        self.last_wait = Nanos::ZERO;
        for (i, op) in ops.iter().enumerate() {
            let die = op.block.idx() % self.die_free.len();
            let chan = die % self.channels;
            let array = self.array_time(op.kind);
            let ready = start.max(self.die_free[die]);
            if i == 0 {
                // The first operation waits for its die (and a program for its channel).
                let first = match op.kind {
                    OpKind::Program => ready.max(self.chan_free[chan]),
                    _ => ready,
                };
                self.last_wait = first.saturating_sub(start);
            }
            let end = match op.kind {
                OpKind::Read => {
                    let sensed = ready + array;
                    let xs = sensed.max(self.chan_free[chan]);
                    let end = xs + self.xfer;
                    self.chan_free[chan] = end;
                    self.die_free[die] = end;
                    prev_read_end = Some(end);
                    end
                }
                OpKind::Program => {
                    let dep = prev_read_end.take().unwrap_or(start);
                    let xs = ready.max(self.chan_free[chan]).max(dep);
                    let xe = xs + self.xfer;
                    self.chan_free[chan] = xe;
                    let end = xe + array;
                    self.die_free[die] = end;
                    end
                }
                OpKind::SpareRead | OpKind::Erase => {
                    prev_read_end = None;
                    let end = ready + array;
                    self.die_free[die] = end;
                    end
                }
            };
            done = done.max(end);
        }
        done
    }
}

impl Timing for ParallelTiming {
    fn serve(&mut self, arrival: Nanos, ops: &[FlashOp]) -> Nanos {
        self.run(arrival, ops)
    }

    fn background(&mut self, start: Nanos, ops: &[FlashOp]) -> Nanos {
        self.run(start, ops)
    }

    fn idle_at(&self) -> Nanos {
        let d = self.die_free.iter().max().copied().unwrap_or(Nanos::ZERO);
        let c = self.chan_free.iter().max().copied().unwrap_or(Nanos::ZERO);
        d.max(c)
    }

    fn reset(&mut self) {
        self.die_free.fill(Nanos::ZERO);
        self.chan_free.fill(Nanos::ZERO);
        self.last_wait = Nanos::ZERO;
    }

    fn last_wait(&self) -> Nanos {
        self.last_wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flash::Cause;
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

    #[test]
    fn serial_queues_fcfs() {
        let mut t = SerialTiming::new(lat());
        let ops = [op(OpKind::Program, 0)];
        assert_eq!(t.serve(Nanos(0), &ops), Nanos(300));
        // Arrives while busy: waits.
        assert_eq!(t.serve(Nanos(100), &ops), Nanos(600));
        assert_eq!(t.last_wait(), Nanos(200));
        // Arrives after idle: no wait.
        assert_eq!(t.serve(Nanos(1000), &ops), Nanos(1300));
        assert_eq!(t.idle_at(), Nanos(1300));
        // A request with no flash op completes at arrival.
        assert_eq!(t.serve(Nanos(1100), &[]), Nanos(1100));
        let mixed = [
            op(OpKind::Read, 0),
            op(OpKind::SpareRead, 0),
            op(OpKind::Erase, 1),
        ];
        assert_eq!(t.serve(Nanos(2000), &mixed), Nanos(2000 + 100 + 10 + 2000));
    }

    #[test]
    fn parallel_overlaps_dies() {
        let mut t = ParallelTiming::new(lat(), 2, 1, Nanos(50));
        // Two programs on different dies/channels overlap fully.
        let ops = [op(OpKind::Program, 0), op(OpKind::Program, 1)];
        assert_eq!(t.serve(Nanos(0), &ops), Nanos(300));
        // Same die: serialised.
        t.reset();
        let ops = [op(OpKind::Program, 0), op(OpKind::Program, 2)];
        assert_eq!(t.serve(Nanos(0), &ops), Nanos(600));
        assert_eq!(t.last_wait(), Nanos(0));
        // The next request on die 0 waits for it.
        assert_eq!(t.serve(Nanos(100), &[op(OpKind::Program, 0)]), Nanos(900));
        assert_eq!(t.last_wait(), Nanos(500));
    }

    #[test]
    fn parallel_copy_waits_for_its_read() {
        let mut t = ParallelTiming::new(lat(), 2, 1, Nanos(50));
        let ops = [op(OpKind::Read, 0), op(OpKind::Program, 1)];
        // read: 50 array + 50 xfer = 100; program starts its transfer at 100: 100+50+250.
        assert_eq!(t.serve(Nanos(0), &ops), Nanos(400));
    }
}
