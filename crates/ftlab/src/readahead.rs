//! Reading and simulating overlap (issue 26 item 5): one pass of the workload's records
//! (the trace reader, or the synthetic generator) runs on its own thread and hands the
//! simulation batches of records through a bounded channel, so a run on a big trace goes
//! at the simulator's pace rather than the parser's, and a generated run does not pay
//! for its generator on the simulation's thread.
//!
//! What runs on the reader thread is the raw record stream of one pass only: parsing,
//! decompression (which has a thread of its own already) and generation. Everything
//! that counts what the workload held (the per-pass transforms, [`Replay`]'s passes, the
//! fold, their [`Counters`]) stays on the simulation's thread, so however far the reader
//! has read ahead when a run stops early (a violation, a worn-out device, a cancelled
//! run), the report counts exactly the records the simulation took: the same report,
//! byte for byte, with read-ahead on or off.
//!
//! [`Replay`]: ftlab_workload::transform::Replay
//! [`Counters`]: ftlab_workload::transform::Counters

use crate::error::RunError;
use ftlab_workload::{Record, RecordStream, TraceError};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::thread::JoinHandle;

type Item = Result<Record, TraceError>;

/// Records per batch: large enough that the channel's synchronisation is a few
/// nanoseconds per record, small enough (about 56 KiB) to stay in the cache.
const BATCH: usize = 1024;
/// Batches in flight between the threads (the reader runs at most this far ahead).
const DEPTH: usize = 4;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns read-ahead on or off for the runs this process starts from now on (on by
/// default). Reports are the same either way; off keeps a run on one thread (a sweep
/// that already runs one simulation per core turns it off).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether runs started now read ahead.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The records of one pass, read on a thread of their own by `open` (which opens the
/// pass there: the stream it returns need not be `Send`). An error of `open` is
/// returned here, before any record. Without read-ahead ([`set_enabled`]) the pass is
/// opened and read on the caller's thread.
pub fn open<F>(open: F) -> Result<RecordStream, RunError>
where
    F: FnOnce() -> Result<RecordStream, RunError> + Send + 'static,
{
    if !enabled() {
        return open();
    }
    spawn(open)
}

/// [`open`] on a reader thread, whatever [`enabled`] says.
fn spawn<F>(open: F) -> Result<RecordStream, RunError>
where
    F: FnOnce() -> Result<RecordStream, RunError> + Send + 'static,
{
    let (ready_tx, ready_rx) = sync_channel::<Result<(), RunError>>(1);
    let (tx, rx) = sync_channel::<Vec<Item>>(DEPTH);
    let (back_tx, back_rx) = channel::<Vec<Item>>();
    let thread = std::thread::Builder::new()
        .name("ftlab-reader".into())
        .spawn(move || {
            let mut stream = match open() {
                Ok(s) => {
                    let _ = ready_tx.send(Ok(()));
                    s
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            loop {
                let mut batch = back_rx
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                batch.extend(stream.by_ref().take(BATCH));
                if batch.is_empty() {
                    return;
                }
                let last = batch.len() < BATCH;
                // Reversed, so the reading side pops records in order at O(1).
                batch.reverse();
                if tx.send(batch).is_err() || last {
                    // The simulation stopped taking records, or the pass is over.
                    return;
                }
            }
        });
    let thread = thread.map_err(|e| {
        RunError::Workload(format!(
            "could not start the reader thread ({e}); read-ahead off (--read-ahead off) \
             reads on the simulation's thread"
        ))
    })?;
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            // The reader panicked while opening: a bug, raised here as it would have
            // been on this thread.
            if let Err(p) = thread.join() {
                std::panic::resume_unwind(p);
            }
            return Err(RunError::Workload(
                "the reader thread ended before opening".into(),
            ));
        }
    }
    Ok(Box::new(ReadAhead {
        rx,
        back: back_tx,
        cur: Vec::new(),
        thread: Some(thread),
    }))
}

/// The simulation's end of the channel.
struct ReadAhead {
    rx: Receiver<Vec<Item>>,
    back: Sender<Vec<Item>>,
    /// The current batch, in reverse order.
    cur: Vec<Item>,
    thread: Option<JoinHandle<()>>,
}

impl Iterator for ReadAhead {
    type Item = Item;

    #[inline]
    fn next(&mut self) -> Option<Item> {
        match self.take() {
            None => self.refill(),
            some => some,
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // A later run on this thread without read-ahead must not see this one's hint.
        HINT.set(NO_HINT);
    }
}

/// How many records ahead of the one just taken [`hint`] looks: far enough for the
/// three links, 4 requests apart, of the schemes' hints (`ftlab_ftl`'s `hints`: page
/// mapping, DFTL), near enough that what they fetch is still cached when the request
/// runs.
const HINT_AHEAD: usize = 12;
const NO_HINT: u64 = u64::MAX;

thread_local! {
    static HINT: Cell<u64> = const { Cell::new(NO_HINT) };
}

/// The byte offset of a record `HINT_AHEAD` (12) records after the one this thread last
/// took from a read-ahead pass, for [`ftlab_core::engine::Engine::prefetch`]; `u64::MAX`
/// (which the engine ignores) when there is none. A hint, not a promise: transforms
/// between the reader and the engine may move or drop that record, and the last
/// records of a batch hint nothing new, which only makes the prefetch useless.
#[inline]
pub fn hint() -> u64 {
    HINT.get()
}

impl ReadAhead {
    /// The next record of the current batch, setting the [`hint`].
    #[inline]
    fn take(&mut self) -> Option<Item> {
        let r = self.cur.pop()?;
        // The record HINT_AHEAD places on (the batch is reversed), if in this batch.
        if let Some(Ok(ahead)) = self.cur.len().checked_sub(HINT_AHEAD).map(|i| &self.cur[i]) {
            HINT.set(ahead.req.offset);
        }
        Some(r)
    }

    #[cold]
    fn refill(&mut self) -> Option<Item> {
        let spent = std::mem::take(&mut self.cur);
        if spent.capacity() > 0 {
            // Back to the reader for its next batch (it may have stopped: then dropped).
            let _ = self.back.send(spent);
        }
        match self.rx.recv() {
            Ok(batch) => {
                self.cur = batch;
                self.take()
            }
            Err(_) => {
                // The pass is over, or the reader panicked (a bug in a reader or the
                // generator): raised here, so the run reports it instead of ending
                // early with a workload cut short.
                if let Some(t) = self.thread.take() {
                    if let Err(p) = t.join() {
                        std::panic::resume_unwind(p);
                    }
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ftlab_core::request::{Op, Request};
    use ftlab_core::Nanos;

    fn records(n: u64) -> RecordStream {
        Box::new((0..n).map(|i| {
            if i % 1000 == 999 {
                Err(TraceError {
                    file: "t".into(),
                    line: i + 1,
                    field: "x",
                    why: "bad".into(),
                })
            } else {
                Ok(Record {
                    req: Request {
                        arrival: Nanos(i),
                        op: Op::Write,
                        offset: i * 4096,
                        len: 4096,
                    },
                    device: 0,
                    line: i + 1,
                    pass: 0,
                })
            }
        }))
    }

    #[test]
    fn same_records_in_the_same_order() {
        for n in [0, 1, 1023, 1024, 1025, 5000, 10_240] {
            let a: Vec<_> = records(n).collect();
            let b: Vec<_> = open(move || Ok(records(n))).unwrap().collect();
            assert_eq!(a, b, "{n} records");
        }
    }

    #[test]
    fn the_hint_names_the_record_twelve_ahead_within_a_batch() {
        let mut s = spawn(|| Ok(records(3000))).unwrap();
        assert_eq!(hint(), NO_HINT, "nothing taken yet");
        for i in 0..3000u64 {
            let r = s.next().unwrap();
            if let Ok(r) = r {
                assert_eq!(r.req.offset, i * 4096);
            }
            let ahead = i + HINT_AHEAD as u64;
            // In the pass and within its batch of 1024, not the error every 1000th.
            if ahead < 3000 && ahead % BATCH as u64 > i % BATCH as u64 && ahead % 1000 != 999 {
                assert_eq!(hint(), ahead * 4096, "after record {i}");
            }
        }
        assert!(s.next().is_none());
        drop(s);
        assert_eq!(hint(), NO_HINT, "a closed pass leaves no hint");
    }

    #[test]
    fn an_open_error_comes_back_before_any_record() {
        let e = open(|| Err(RunError::Workload("no such trace".into())))
            .err()
            .expect("refused");
        assert!(e.to_string().contains("no such trace"), "{e}");
    }

    #[test]
    fn stopping_early_ends_the_reader() {
        // An endless stream: the reader must stop once the stream is dropped.
        let mut s = open(|| {
            Ok(Box::new(std::iter::repeat_with(|| records(1).next().unwrap())) as RecordStream)
        })
        .unwrap();
        assert!(s.nth(10_000).is_some());
        drop(s);
    }

    #[test]
    #[should_panic(expected = "reader bug")]
    fn a_reader_panic_reaches_the_simulation() {
        let s = open(|| {
            Ok(Box::new((0..3000u64).map(|i| {
                assert!(i < 2500, "reader bug");
                records(1).next().unwrap()
            })) as RecordStream)
        })
        .unwrap();
        let _ = s.count();
    }
}
