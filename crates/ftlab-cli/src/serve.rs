//! `ftlab serve`: a simulated SSD as a live Network Block Device (NBD protocol,
//! fixed newstyle, through the `ftlab-nbd` crate), on a Unix socket or a TCP address.
//!
//! Three threads: the network thread accepts clients and speaks the protocol, keeping
//! the payloads in the store; the simulation (this thread) runs the library's
//! [`Simulation`] over the requests the network thread hands it, one at a time, exactly
//! as a replay submits trace records, with the oracle checking every read; a signal
//! thread turns SIGINT/SIGTERM into the end of the run and SIGUSR1 into a power loss.
//!
//! Choices:
//! - Clients are served one at a time, in the order they connect: the next one's
//!   greeting is sent when the previous one leaves (the protocol's "not
//!   `NBD_FLAG_CAN_MULTI_CONN`"). No request of two clients interleaves. A client that
//!   stalls in the handshake (30 s) or stops reading its replies (60 s) is dropped so
//!   that it cannot hold the device; an idle client in transmission is not.
//! - A request's arrival time is the wall-clock time since the first request (taken
//!   when the network thread has it) divided by `--time-scale`. With `--delay real` the
//!   reply waits for the simulated response time times `--time-scale`; otherwise it is
//!   sent at once, without waiting for the simulation (the bytes come from the store),
//!   which follows up to 4096 requests behind, in order. The simulation still sees
//!   every request; on SIGINT/SIGTERM it finishes the queued ones first. A violation
//!   found by the oracle ends the run (exit 1) and refuses the requests after it
//!   (`ESHUTDOWN`).
//! - A FUA write is the write followed by a flush-cache request; write-zeroes is a
//!   write of those bytes (a device writes the zero pages); trim is a trim.
//! - The data goes to the store before the simulation sees the request; a read takes
//!   its bytes from the store and the oracle checks that the FTL maps the version the
//!   store holds (the last write). A power loss drops what the model's volatile state
//!   held (the report counts the lost pages); the store keeps the bytes (docs/design.md).
//! - A power loss (SIGUSR1) strikes before the next request, as `--power-loss-at N`
//!   does in a replay; an FTL that cannot recover makes the signal a warning.
//! - The recorded trace is blkparse text (ns times, trims and flushes kept), the first
//!   request at time 0: `ftlab run --trace FILE --format blkparse` with the same device
//!   flags replays it to the same flash statistics.

use anyhow::{bail, Context};
use ftlab::config::{self, Config};
use ftlab::error::exit;
use ftlab::sim::{self, Observer, Progress, RunOutput, Simulation, Workload};
use ftlab_core::engine::Engine;
use ftlab_core::flash::{Cause, FlashStats};
use ftlab_core::request::{Op, Request};
use ftlab_core::units::ByteSize;
use ftlab_core::Nanos;
use ftlab_nbd::{errno, Command, Device, Export, Store, StoreError};
use ftlab_workload::writer::TraceWriter;
use ftlab_workload::Record;
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::io::{BufWriter, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::time::{Duration, Instant};

/// Every device flag sets the config key of the same name (as in `ftlab run`); the
/// workload keys of a --config file are ignored (the clients are the workload).
#[derive(clap::Args, Serialize)]
pub struct ServeArgs {
    /// FTL id (see `ftlab list`) [default: page]
    #[arg(long, value_name = "ID")]
    ftl: Option<String>,
    /// Write buffer id [default: none]
    #[arg(long, value_name = "ID")]
    buffer: Option<String>,
    /// NAND preset id [default: slc-k9f1g16u0m]
    #[arg(long, value_name = "PRESET")]
    nand: Option<String>,
    /// Logical capacity: the size of the export, e.g. 64MiB, 1GiB [default: 1GiB]
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
    /// Over-provisioning in percent of the logical capacity [default: 7]
    #[arg(long, value_name = "PCT")]
    op: Option<f64>,
    /// Seed of every random stream [default: 1]
    #[arg(long, value_name = "N")]
    #[serde(with = "ftlab::config::seed_repr::option")]
    seed: Option<u64>,
    /// Timing model: serial or parallel [default: serial]
    #[arg(long, value_name = "MODEL")]
    timing: Option<String>,
    /// Channels of --timing parallel [default: 8]
    #[arg(long, value_name = "N")]
    channels: Option<u32>,
    /// Dies per channel of --timing parallel [default: 4]
    #[arg(long, value_name = "N")]
    dies: Option<u32>,
    /// Checking: on (every read checked against the last write), off, or deep
    /// [default: on]
    #[arg(long, value_name = "LEVEL")]
    verify: Option<String>,
    /// TOML config file with any of these settings
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    config: Option<PathBuf>,
    /// Set any config key, e.g. ftl_options.gc_threshold=5 (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    #[serde(skip)]
    sets: Vec<String>,
    /// TCP address to listen on; anything but a loopback address exposes the device to
    /// the network, unauthenticated [default: 127.0.0.1:10809 unless --socket]
    #[arg(long, value_name = "ADDR", conflicts_with = "socket")]
    #[serde(skip)]
    listen: Option<String>,
    /// Unix socket to listen on instead of TCP (created; must not exist)
    #[arg(long, value_name = "PATH")]
    #[serde(skip)]
    socket: Option<PathBuf>,
    /// Name of the export (the empty name selects it too)
    #[arg(long, value_name = "NAME", default_value = "ftlab")]
    #[serde(skip)]
    export: String,
    /// Minimum block size advertised: requests must be multiples of it (EINVAL
    /// otherwise). 1 accepts any byte range, for clients that do not align (nbdfuse); the
    /// simulation then sees the 512-byte sectors a request touches
    #[arg(long, value_name = "BYTES", default_value_t = ftlab_nbd::MIN_BLOCK)]
    #[serde(skip)]
    min_block: u32,
    /// Keep the data in FILE (created, sized to the capacity) instead of memory
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    store: Option<PathBuf>,
    /// Most memory the in-memory data may take; writes beyond it fail with ENOSPC
    #[arg(long, value_name = "SIZE", default_value = "4GiB")]
    #[serde(skip)]
    store_limit: ByteSize,
    /// Stop (writing the report) when the first client leaves
    #[arg(long)]
    #[serde(skip)]
    once: bool,
    /// none: replies go out at once; real: each reply waits the simulated response
    /// time (times --time-scale)
    #[arg(long, value_name = "MODE", default_value = "none", value_parser = ["none", "real"])]
    #[serde(skip)]
    delay: String,
    /// Wall-clock seconds per simulated second: arrivals are wall time / F and, with
    /// --delay real, replies wait F x the simulated response time
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    #[serde(skip)]
    time_scale: f64,
    /// Seconds between live statistics lines on stderr (0: none)
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    #[serde(skip)]
    stats_every: f64,
    /// Write the JSON report here on exit
    #[arg(long, value_name = "PATH", default_value = "ftlab-serve.json")]
    #[serde(skip)]
    json: PathBuf,
    /// Record the requests here (blkparse text; replay with `ftlab run --trace PATH
    /// --format blkparse` and the same device flags)
    #[arg(long, value_name = "PATH", default_value = "ftlab-serve.trace")]
    #[serde(skip)]
    record: PathBuf,
}

impl ServeArgs {
    fn config(&self) -> anyhow::Result<Config> {
        let mut flags = Vec::new();
        if let toml::Value::Table(t) = toml::Value::try_from(self)? {
            flags.extend(t);
        }
        Ok(config::load(self.config.as_deref(), &self.sets, &flags)?)
    }
}

/// What the network and signal threads tell the simulation.
enum Msg {
    /// One request; with `done`, its simulated response time goes back there.
    Req {
        req: Request,
        done: Option<Sender<Nanos>>,
    },
    /// A power loss before the next request.
    PowerLoss,
    /// The run ends (a signal, or the last client with --once).
    Stop(&'static str),
}

/// State the request feed and the observer share (both on the simulation thread).
#[derive(Default)]
struct Shared {
    /// Where the response time of the request being simulated goes.
    pending: RefCell<Option<Sender<Nanos>>>,
    power_loss: Cell<bool>,
    announced_losses: Cell<usize>,
    stopped_by: Cell<Option<&'static str>>,
}

/// The requests of the clients, as the simulation pulls them; each one recorded.
struct Feed {
    rx: Receiver<Msg>,
    shared: Rc<Shared>,
    recovers: bool,
    writer: TraceWriter,
    out: BufWriter<std::fs::File>,
    record_error: Rc<RefCell<Option<String>>>,
}

impl Iterator for Feed {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        loop {
            match self.rx.recv() {
                Err(_) => return None,
                Ok(Msg::Stop(why)) => {
                    self.shared.stopped_by.set(Some(why));
                    return None;
                }
                Ok(Msg::PowerLoss) if !self.recovers => {
                    eprintln!(
                        "warning: SIGUSR1 ignored: this FTL cannot recover from a power loss \
                         with these options (see `ftlab list`)"
                    );
                }
                Ok(Msg::PowerLoss) => {
                    eprintln!("power loss requested: it strikes before the next request");
                    self.shared.power_loss.set(true);
                }
                Ok(Msg::Req { req, done }) => {
                    self.record(&req);
                    *self.shared.pending.borrow_mut() = done;
                    return Some(req);
                }
            }
        }
    }
}

impl Feed {
    fn record(&mut self, req: &Request) {
        if self.record_error.borrow().is_some() {
            return;
        }
        if let Err(e) = self.writer.write(&mut self.out, &Record::generated(*req)) {
            *self.record_error.borrow_mut() = Some(e.to_string());
        }
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        if let Err(e) = self.out.flush() {
            self.record_error.borrow_mut().get_or_insert(e.to_string());
        }
    }
}

/// Answers each request with its response time and prints the live statistics.
struct Live {
    shared: Rc<Shared>,
    every: Option<Duration>,
    last_print: Instant,
    last_requests: u64,
}

fn total(counts: &[u64; ftlab_core::flash::CAUSES]) -> u64 {
    FlashStats::total(counts)
}

impl Observer for Live {
    fn snapshot_every(&self) -> Option<u64> {
        Some(1)
    }

    fn snapshot(&mut self, p: &Progress, engine: &Engine) {
        if let Some(done) = self.shared.pending.borrow_mut().take() {
            // The client may have gone: nobody to tell.
            let _ = done.send(engine.last_response());
        }
        let losses = engine.recoveries().len();
        if losses > self.shared.announced_losses.get() {
            self.shared.announced_losses.set(losses);
            if let Some(r) = engine.recoveries().last() {
                eprintln!(
                    "power loss after request {}: recovered in {:.3} ms simulated, {} logical \
                     pages lost (their newest data was in RAM)",
                    r.after_request,
                    r.time_ns as f64 / 1e6,
                    r.lost_lpns.len()
                );
            }
        }
        let Some(every) = self.every else { return };
        let dt = self.last_print.elapsed();
        if dt < every {
            return;
        }
        let host = engine.host();
        let flash = engine.flash().stats();
        let programs = total(&flash.programs);
        let waf = if host.pages_written > 0 {
            format!("{:.2}", programs as f64 / host.pages_written as f64)
        } else {
            "-".into()
        };
        eprintln!(
            "serve: {:.0} requests/s, {} requests, WAF {waf}, GC {} copies {} erases, {} free \
             blocks, p99 {:.3} ms",
            (p.requests - self.last_requests) as f64 / dt.as_secs_f64(),
            p.requests,
            flash.programs[Cause::Gc as usize] + flash.programs[Cause::Merge as usize],
            total(&flash.erases),
            engine.flash().erased_blocks(),
            host.response().value_at_quantile(0.99) as f64 / 1e6,
        );
        self.last_print = Instant::now();
        self.last_requests = p.requests;
    }

    fn power_loss_now(&mut self) -> bool {
        self.shared.power_loss.replace(false)
    }

    /// `kill -USR1` strikes one at any time.
    fn may_lose_power(&self) -> bool {
        true
    }
}

/// The export as the protocol sees it: the store for the bytes, the simulation for
/// everything else.
struct SimDevice {
    store: Store,
    to_sim: SyncSender<Msg>,
    /// `--delay real`: wait this many times each simulated response time.
    delay: Option<f64>,
    /// `--time-scale`.
    scale: f64,
    /// When the first request came.
    first: Option<Instant>,
    /// Arrival of the last request, in simulated ns.
    last: u64,
}

fn store_errno(e: StoreError) -> u32 {
    match e {
        StoreError::Full { .. } => errno::ENOSPC,
        StoreError::Io(_) => errno::EIO,
    }
}

/// Requests the network thread may be ahead of the simulation (then it waits).
const QUEUE: usize = 4096;

/// Bytes per sector of the simulated device (and of the recorded trace).
const SECTOR: u64 = 512;

impl SimDevice {
    /// Simulates `op` on the sectors the bytes `offset .. offset + len` cover (a trim:
    /// those it covers whole, since the rest was not discarded).
    fn sim(&mut self, op: Op, offset: u64, len: u64) -> Result<(), u32> {
        let end = offset + len;
        let (offset, end) = if op == Op::Trim {
            (offset.div_ceil(SECTOR) * SECTOR, end / SECTOR * SECTOR)
        } else {
            (offset / SECTOR * SECTOR, end.div_ceil(SECTOR) * SECTOR)
        };
        if end <= offset && op != Op::Flush {
            return Ok(());
        }
        let len = end.saturating_sub(offset);
        // The first request arrives at 0, so a replay's rebasing is a no-op.
        if let Some(first) = self.first {
            let wall = first.elapsed().as_nanos() as f64 / self.scale;
            self.last = self.last.max(wall as u64);
        } else {
            self.first = Some(Instant::now());
        }
        let req = Request {
            arrival: Nanos(self.last),
            op,
            offset,
            len,
        };
        let Some(scale) = self.delay else {
            // The reply does not depend on the simulation: it goes out at once.
            let msg = Msg::Req { req, done: None };
            return self.to_sim.send(msg).map_err(|_| errno::ESHUTDOWN);
        };
        let (done, rx) = channel();
        let msg = Msg::Req {
            req,
            done: Some(done),
        };
        self.to_sim.send(msg).map_err(|_| errno::ESHUTDOWN)?;
        // No answer: the run ended (a signal, or the oracle found a violation).
        let response = rx.recv().map_err(|_| errno::ESHUTDOWN)?;
        std::thread::sleep(Duration::from_nanos((response.0 as f64 * scale) as u64));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), u32> {
        self.store.sync().map_err(store_errno)?;
        self.sim(Op::Flush, 0, 0)
    }
}

impl Device for SimDevice {
    fn handle(&mut self, cmd: Command<'_>) -> Result<(), u32> {
        match cmd {
            Command::Read { offset, buf } => {
                self.store.read(offset, buf).map_err(store_errno)?;
                self.sim(Op::Read, offset, buf.len() as u64)
            }
            Command::Write { offset, data, fua } => {
                self.store.write(offset, data).map_err(store_errno)?;
                self.sim(Op::Write, offset, data.len() as u64)?;
                if fua {
                    self.flush()?;
                }
                Ok(())
            }
            Command::Flush => self.flush(),
            Command::Trim { offset, len, fua } | Command::WriteZeroes { offset, len, fua } => {
                let op = if matches!(cmd, Command::Trim { .. }) {
                    Op::Trim
                } else {
                    Op::Write
                };
                self.store.zero(offset, len).map_err(store_errno)?;
                self.sim(op, offset, len)?;
                if fua {
                    self.flush()?;
                }
                Ok(())
            }
        }
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// Serves one client after another until the simulation stops (or, with `once`, until
/// the first one leaves).
fn network(listener: Listener, export: Export, mut dev: SimDevice, once: bool) {
    let mut n = 0u64;
    loop {
        let (mut stream, who): (Box<dyn Conn>, String) = match &listener {
            Listener::Tcp(l) => match l.accept() {
                Ok((s, a)) => {
                    let _ = s.set_nodelay(true);
                    (Box::new(s), a.to_string())
                }
                Err(e) => {
                    eprintln!("warning: accept: {e}");
                    continue;
                }
            },
            Listener::Unix(l, _) => match l.accept() {
                Ok((s, _)) => (Box::new(s), "a Unix socket client".into()),
                Err(e) => {
                    eprintln!("warning: accept: {e}");
                    continue;
                }
            },
        };
        n += 1;
        eprintln!("client {n} ({who}) connected");
        let _ = stream.timeouts(Some(HANDSHAKE_TIMEOUT), Some(WRITE_TIMEOUT));
        let ended = match ftlab_nbd::handshake(&mut stream, &export) {
            Ok(ftlab_nbd::Negotiated::Transmission) => {
                let _ = stream.timeouts(None, Some(WRITE_TIMEOUT));
                ftlab_nbd::serve(&mut stream, &export, &mut dev).map(|e| format!("{e:?}"))
            }
            Ok(ftlab_nbd::Negotiated::Closed) => Ok("closed in the handshake".into()),
            Err(e) => Err(e),
        };
        match ended {
            Ok(how) => eprintln!("client {n} left ({})", how.to_lowercase()),
            Err(e) => eprintln!("client {n} dropped: {e}"),
        }
        if once {
            let _ = dev.to_sim.send(Msg::Stop("--once: the client left"));
            return;
        }
    }
}

/// A client's connection, TCP or Unix.
trait Conn: Read + Write {
    fn timeouts(&self, read: Option<Duration>, write: Option<Duration>) -> std::io::Result<()>;
}

impl Conn for std::net::TcpStream {
    fn timeouts(&self, read: Option<Duration>, write: Option<Duration>) -> std::io::Result<()> {
        self.set_read_timeout(read)?;
        self.set_write_timeout(write)
    }
}

impl Conn for std::os::unix::net::UnixStream {
    fn timeouts(&self, read: Option<Duration>, write: Option<Duration>) -> std::io::Result<()> {
        self.set_read_timeout(read)?;
        self.set_write_timeout(write)
    }
}

/// A client that does not finish the handshake in this time is dropped (the next one
/// waits for it); one that does may then stay idle as long as it likes.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// A client that does not read its replies for this long is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

fn listen(args: &ServeArgs) -> anyhow::Result<(Listener, String)> {
    if let Some(path) = &args.socket {
        if path.exists() {
            bail!(
                "--socket {}: the path exists; remove it first (another server may be using it)",
                path.display()
            );
        }
        let l = UnixListener::bind(path)
            .with_context(|| format!("--socket {}: cannot listen", path.display()))?;
        let uri = format!("nbd+unix:///{}?socket={}", args.export, path.display());
        return Ok((Listener::Unix(l, path.clone()), uri));
    }
    let addr = args.listen.as_deref().unwrap_or("127.0.0.1:10809");
    let l = TcpListener::bind(addr).with_context(|| format!("--listen {addr}: cannot listen"))?;
    let local = l.local_addr()?;
    if !local.ip().is_loopback() {
        eprintln!(
            "warning: listening on {local}: any host that reaches it can read and write the \
             device (NBD has no authentication here)"
        );
    }
    let uri = format!("nbd://{local}/{}", args.export);
    Ok((Listener::Tcp(l), uri))
}

/// `ftlab serve`.
pub fn command(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    if !(args.time_scale.is_finite() && args.time_scale > 0.0) {
        bail!(
            "--time-scale {}: must be a positive number",
            args.time_scale
        );
    }
    if !(args.stats_every.is_finite() && args.stats_every >= 0.0) {
        bail!(
            "--stats-every {}: must be 0 or more seconds",
            args.stats_every
        );
    }
    let cfg = args.config()?;
    let resolved = sim::validate(&cfg)?;
    let recovers = sim::build_schemes(&cfg, &resolved.geo, resolved.latencies)?
        .ftl
        .recovers();
    // The server may lose power on request (`kill -USR1`), so the run keeps whole tags
    // and what a recovery reads (`Engine::exact_versions`): the memory it needs is that
    // of a run with power losses, which `Simulation::new` cannot know to check.
    ftlab::memory::check(&cfg, &resolved.geo, false)?;
    let simulation = Simulation::new(cfg.clone())?;
    let geo = simulation.geometry();
    let size = geo.logical_pages as u64 * geo.page_size as u64;
    let size = size - size % SECTOR;
    let preferred = geo.page_size.max(SECTOR as u32);
    if !preferred.is_power_of_two() {
        bail!("the page size {preferred} is not a power of two; NBD block sizes must be");
    }
    if !args.min_block.is_power_of_two() || args.min_block as u64 > SECTOR {
        bail!(
            "--min-block {}: must be a power of two up to {SECTOR} (1 accepts any request)",
            args.min_block
        );
    }
    let store = match &args.store {
        Some(p) => Store::file(p, size).with_context(|| format!("--store {}", p.display()))?,
        None => Store::memory(size, args.store_limit.0),
    };
    let (listener, uri) = listen(args)?;
    let unlisten = |e: anyhow::Error| {
        if let Listener::Unix(_, p) = &listener {
            let _ = std::fs::remove_file(p);
        }
        e
    };
    // The report is written at the end of a session: find out now if it cannot be.
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&args.json)
        .map_err(|e| {
            let why = format!(
                "--json {}: cannot write the report there: {e}",
                args.json.display()
            );
            unlisten(anyhow::anyhow!(why))
        })?;
    let mut writer =
        TraceWriter::new("blkparse", &Default::default()).map_err(anyhow::Error::msg)?;
    let file = std::fs::File::create(&args.record)
        .map_err(|e| unlisten(anyhow::anyhow!("--record {}: {e}", args.record.display())))?;
    let mut out = BufWriter::new(file);
    writer.begin(&mut out)?;
    let socket_path = match &listener {
        Listener::Unix(_, p) => Some(p.clone()),
        Listener::Tcp(_) => None,
    };
    let export = Export {
        name: args.export.clone(),
        description: format!(
            "ftlab: {} FTL, {} buffer, {} NAND, {} bytes",
            cfg.ftl, cfg.buffer, cfg.nand, size
        ),
        size,
        min_block: args.min_block,
        preferred_block: preferred,
    };
    let (tx, rx) = sync_channel(QUEUE);
    let signals = {
        use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGUSR1])
            .context("installing the signal handlers")?;
        let tx = tx.clone();
        let handle = signals.handle();
        std::thread::spawn(move || {
            for s in signals.forever() {
                let msg = match s {
                    SIGUSR1 => Msg::PowerLoss,
                    SIGINT => Msg::Stop("SIGINT"),
                    _ => Msg::Stop("SIGTERM"),
                };
                let _ = tx.send(msg);
            }
        });
        handle
    };
    let dev = SimDevice {
        store,
        to_sim: tx,
        delay: (args.delay == "real").then_some(args.time_scale),
        scale: args.time_scale,
        first: None,
        last: 0,
    };
    let once = args.once;
    let net_export = export.clone();
    std::thread::spawn(move || network(listener, net_export, dev, once));
    eprintln!(
        "serving {} bytes as export `{}` at {uri} ({} FTL, {} buffer); Ctrl-C (or SIGTERM) \
         ends the run, kill -USR1 {} strikes a power loss",
        size,
        args.export,
        cfg.ftl,
        cfg.buffer,
        std::process::id()
    );
    let shared = Rc::new(Shared::default());
    let record_error = Rc::new(RefCell::new(None));
    let feed = Feed {
        rx,
        shared: shared.clone(),
        recovers,
        writer,
        out,
        record_error: record_error.clone(),
    };
    let mut live = Live {
        shared: shared.clone(),
        every: (args.stats_every > 0.0).then(|| Duration::from_secs_f64(args.stats_every)),
        last_print: Instant::now(),
        last_requests: 0,
    };
    let start = Instant::now();
    let result = simulation.run(Workload::Requests(Box::new(feed)), &mut live);
    signals.close();
    if let Some(p) = &socket_path {
        let _ = std::fs::remove_file(p);
    }
    let RunOutput {
        report,
        failure,
        requests,
    } = result?;
    if let Some(why) = shared.stopped_by.get() {
        eprintln!("stopping: {why}");
    }
    eprintln!(
        "served {requests} requests in {:.1} s; report in {}, requests in {}",
        start.elapsed().as_secs_f64(),
        args.json.display(),
        args.record.display()
    );
    // The feed went with the run; dropping it flushed the recording (errors kept).
    if let Some(e) = record_error.borrow().as_ref() {
        eprintln!("warning: the recorded trace is incomplete: {e}");
    }
    let json = serde_json::to_string_pretty(&report)? + "\n";
    std::fs::write(&args.json, json).with_context(|| format!("--json {}", args.json.display()))?;
    print!("{}", ftlab_report::summary(&report));
    std::io::stdout().flush()?;
    for n in &report.notices {
        eprintln!("warning: {n}");
    }
    if let Some(f) = failure {
        eprintln!("error: {f}");
        return Ok(ExitCode::from(exit::FAILED));
    }
    Ok(ExitCode::from(exit::CLEAN))
}
