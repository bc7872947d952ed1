//! `ftlab serve` against real NBD clients (qemu-io, qemu-img, nbdcopy, nbdinfo from
//! Debian's qemu-utils and libnbd-bin, which `.ci/run` installs) and raw sockets: data
//! round trips, the recorded trace replayed by `ftlab run`, robustness, serialised
//! clients, power loss on SIGUSR1 and `--delay real`.
//!
//! A test whose client is not installed says so on stderr and passes without running,
//! unless FTLAB_REQUIRE_NBD_CLIENTS is set: `.ci/run` installs the clients
//! (tests/nbd/install.sh) and sets it, so CI always runs them.

mod common;

use common::run;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn have(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found && std::env::var_os("FTLAB_REQUIRE_NBD_CLIENTS").is_some() {
        panic!("`{tool}` is not installed and FTLAB_REQUIRE_NBD_CLIENTS is set (.ci/run)");
    }
    if !found {
        eprintln!("SKIPPED: `{tool}` is not installed (apt-get install qemu-utils libnbd-bin)");
    }
    found
}

/// A fresh directory under the target dir for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("serve-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A running `ftlab serve` on a Unix socket in its own directory.
struct Server {
    child: Child,
    socket: PathBuf,
    err: Option<JoinHandle<String>>,
}

impl Server {
    fn start(dir: &Path, extra: &[&str]) -> Server {
        let socket = dir.join("nbd.sock");
        let mut child = Command::new(env!("CARGO_BIN_EXE_ftlab"))
            .arg("serve")
            .arg("--socket")
            .arg(&socket)
            .arg("--json")
            .arg(dir.join("report.json"))
            .arg("--record")
            .arg(dir.join("requests.trace"))
            .args(if extra.contains(&"--stats-every") {
                &[][..]
            } else {
                &["--stats-every", "0"][..]
            })
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ftlab serve starts");
        let mut pipe = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        });
        let t = Instant::now();
        while !socket.exists() {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the server never listened"
            );
            if let Some(st) = child.try_wait().unwrap() {
                panic!(
                    "ftlab serve exited at start ({st}): {}",
                    err.join().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Server {
            child,
            socket,
            err: Some(err),
        }
    }

    fn uri(&self) -> String {
        format!("nbd+unix:///ftlab?socket={}", self.socket.display())
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Waits for the exit (SIGTERM first unless `--once` ends it): (exit code, stderr).
    fn finish(mut self, term: bool) -> (i32, String) {
        if term {
            self.signal("-TERM");
        }
        let t = Instant::now();
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if t.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!("ftlab serve did not exit");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let err = self.err.take().unwrap().join().unwrap();
        (status.code().unwrap_or(-1), err)
    }
}

/// The JSON report a server wrote into `dir` on exit (`report.json` as `Server` asks,
/// or the default `ftlab-serve.json`).
fn report(dir: &Path) -> serde_json::Value {
    let path = if dir.join("report.json").exists() {
        dir.join("report.json")
    } else {
        dir.join("ftlab-serve.json")
    };
    let text = std::fs::read_to_string(path).expect("report written");
    serde_json::from_str(&text).unwrap()
}

fn client(tool: &str, args: &[&str]) {
    let out = Command::new(tool).args(args).output().expect("client runs");
    assert!(
        out.status.success(),
        "{tool} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("Pattern verification failed"), "{text}");
}

/// `ftlab run` replays the recorded trace with the same device flags: same flash
/// statistics (by cause), same host counts.
fn replay_matches(dir: &Path, served: &serde_json::Value, device: &[&str]) {
    let trace = dir.join("requests.trace");
    let json = dir.join("replay.json");
    let mut args = vec![
        "run",
        "-q",
        "--format",
        "blkparse",
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(device);
    let (code, _, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let replayed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(served["flash"], replayed["flash"]);
    assert_eq!(served["waf"], replayed["waf"]);
    assert_eq!(served["host"]["requests"], replayed["host"]["requests"]);
    assert_eq!(served["ftl"], replayed["ftl"]);
}

#[test]
fn qemu_io_patterns_at_many_offsets_read_back_and_the_trace_replays() {
    if !have("qemu-io") {
        return;
    }
    let dir = scratch("qemu-io");
    let device = ["--capacity", "8MiB", "--ftl", "page", "--op", "10"];
    let mut extra = vec!["--once"];
    extra.extend(device);
    let srv = Server::start(&dir, &extra);
    let mut cmds = Vec::new();
    // The whole device three times over (garbage collection must run), then patterns
    // at scattered offsets and sizes, some inside a flash page, some across pages.
    for pass in 0..3u32 {
        for mib in 0..8u32 {
            cmds.push(format!("write -P {} {}M 1M", 0x10 + pass * 8 + mib, mib));
        }
    }
    let spots: Vec<(u64, u64, u32)> = (0..40u64)
        .map(|i| {
            let off = (i * 7919 * 512) % (8 << 20);
            let len = 512 * (1 + (i * 37) % 64);
            let len = len.min((8 << 20) - off);
            (off, len, (0x40 + i) as u32)
        })
        .collect();
    // Later spots may overlap earlier ones: write all, then read back what stays.
    for &(off, len, p) in &spots {
        cmds.push(format!("write -P {p} {off} {len}"));
    }
    let mut model = vec![0u8; 8 << 20];
    for pass in 0..3u32 {
        for mib in 0..8usize {
            model[mib << 20..(mib + 1) << 20].fill((0x10 + pass * 8 + mib as u32) as u8);
        }
    }
    for &(off, len, p) in &spots {
        model[off as usize..(off + len) as usize].fill(p as u8);
    }
    for &(off, len, _) in &spots {
        // Verify each 512-byte sector with the pattern the model says it holds.
        for s in (off..off + len).step_by(512) {
            cmds.push(format!("read -P {} {s} 512", model[s as usize]));
        }
    }
    cmds.push("flush".into());
    let uri = srv.uri();
    let mut args = vec!["-f", "raw"];
    for c in &cmds {
        args.push("-c");
        args.push(c);
    }
    args.push(&uri);
    client("qemu-io", &args);
    let (code, err) = srv.finish(false);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("--once"), "{err}");
    let report = report(&dir);
    assert_eq!(report["verify"]["violations"], 0, "{}", report["verify"]);
    assert!(report["verify"]["reads_checked"].as_u64().unwrap() > 0);
    let gc = &report["flash"]["by_cause"]["gc"]["block_erases"];
    assert!(gc.as_u64().unwrap() > 0, "GC ran: {}", report["flash"]);
    replay_matches(&dir, &report, &device);
}

/// Connects and negotiates with `NBD_OPT_GO`, as a client that honours block sizes.
fn go(socket: &Path) -> UnixStream {
    use ftlab_nbd::handshake::{go_data, option, read_greeting, read_reply};
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    read_greeting(&mut s).unwrap();
    s.write_all(&3u32.to_be_bytes()).unwrap();
    s.write_all(&option(7, &go_data("ftlab"))).unwrap();
    while read_reply(&mut s).unwrap().1 != 1 {}
    s
}

fn command(s: &mut UnixStream, kind: u16, offset: u64, len: u32, payload: &[u8]) -> u32 {
    use ftlab_nbd::transmission::{read_simple_reply, request};
    let mut m = request(0, kind, 77, offset, len);
    m.extend_from_slice(payload);
    s.write_all(&m).unwrap();
    let (error, cookie) = read_simple_reply(s).unwrap();
    assert_eq!(cookie, 77);
    if error == 0 && kind == 0 {
        let mut data = vec![0; len as usize];
        s.read_exact(&mut data).unwrap();
    }
    error
}

#[test]
fn bad_clients_get_errors_or_closed_connections_and_later_ones_are_served_in_order() {
    let dir = scratch("robust");
    let srv = Server::start(&dir, &["--capacity", "4MiB", "--op", "25"]);
    // Random bytes at every stage of the handshake and the transmission phase; each
    // connection is closed by the server or by us, and the server goes on.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..30 {
        let mut s = if i % 2 == 0 {
            let mut s = UnixStream::connect(&srv.socket).unwrap();
            let mut hello = [0u8; 18];
            s.read_exact(&mut hello).unwrap();
            s
        } else {
            go(&srv.socket)
        };
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let junk: Vec<u8> = (0..(i * 37 % 500 + 1))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = s.write_all(&junk);
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    }
    // A client vanishes in the middle of a write's payload: nothing of it lands.
    let mut s = go(&srv.socket);
    let mut m = ftlab_nbd::transmission::request(0, 1, 1, 0, 4096);
    m.extend([0xEE; 1000]);
    s.write_all(&m).unwrap();
    drop(s);
    // Bad requests get the protocol's errors.
    let mut s = go(&srv.socket);
    let size = 4u64 << 20;
    assert_eq!(
        command(&mut s, 1, size, 512, &[1; 512]),
        28,
        "write past the end: ENOSPC"
    );
    assert_eq!(
        command(&mut s, 0, size - 512, 1024, &[]),
        22,
        "read past the end: EINVAL"
    );
    assert_eq!(
        command(&mut s, 1, 100, 512, &[1; 512]),
        22,
        "misaligned: EINVAL"
    );
    assert_eq!(
        command(&mut s, 0, 0, (1 << 25) + 512, &[]),
        22,
        "oversized read: EINVAL"
    );
    assert_eq!(command(&mut s, 0, 0, 4096, &[]), 0);
    // Serialised: a second client gets its greeting only when the first leaves.
    let mut second = UnixStream::connect(&srv.socket).unwrap();
    second
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut hello = [0u8; 18];
    assert!(
        second.read_exact(&mut hello).is_err(),
        "no greeting while busy"
    );
    drop(s);
    second
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    second.read_exact(&mut hello).unwrap();
    assert_eq!(&hello[..8], b"NBDMAGIC");
    drop(second);
    // The vanished write left zeroes.
    let mut s = go(&srv.socket);
    use ftlab_nbd::transmission::{read_simple_reply, request};
    s.write_all(&request(0, 0, 9, 0, 4096)).unwrap();
    assert_eq!(read_simple_reply(&mut s).unwrap(), (0, 9));
    let mut back = vec![1u8; 4096];
    s.read_exact(&mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0));
    drop(s);
    let (code, err) = srv.finish(true);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("stopping: SIGTERM"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let r = report(&dir);
    assert_eq!(r["verify"]["violations"], 0);
    // Only the two good reads reached the simulation.
    assert_eq!(r["host"]["read_requests"], 2, "{}", r["host"]);
    assert_eq!(r["host"]["write_requests"], 0, "{}", r["host"]);
}

#[test]
fn bad_options_are_refused_with_a_clear_error() {
    let dir = scratch("bad-options");
    let sock = dir.join("s.sock");
    std::fs::write(&sock, "").unwrap();
    let s = sock.to_str().unwrap();
    let (code, _, err) = run(&["serve", "--socket", s]);
    assert_eq!(code, 2);
    assert!(err.contains("--socket") && err.contains("exists"), "{err}");
    let (code, _, err) = run(&["serve", "--socket", "x.sock", "--time-scale", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--time-scale"), "{err}");
    let (code, _, err) = run(&["serve", "--socket", "x.sock", "--ftl", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown FTL"), "{err}");
    let json = dir.join("no-such-dir/report.json");
    let (code, _, err) = run(&[
        "serve",
        "--socket",
        "x.sock",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--json") && err.contains("cannot write"),
        "{err}"
    );
    assert!(!Path::new("x.sock").exists());
    let (code, _, err) = run(&["serve", "--listen", "not an address"]);
    assert_eq!(code, 2);
    assert!(err.contains("--listen"), "{err}");
}

/// A server may lose power on request, so it keeps what a recovery reads: its memory
/// check counts Superblock's spare words, which a run without power losses does not
/// keep (regression: `Simulation::new` alone checked the run without them).
#[test]
fn a_server_s_memory_check_counts_what_a_recovery_reads() {
    let args = |limit: &str| {
        [
            "--ftl",
            "superblock",
            "--capacity",
            "1GiB",
            "--set",
            &format!("max_memory={limit}"),
        ]
        .map(String::from)
    };
    // About 80 MB without the spare words, 125 MB with them.
    let run_args = args("100MiB");
    let mut a: Vec<&str> = vec!["run"];
    a.extend(run_args.iter().map(String::as_str));
    a.extend(["--set", "synthetic.count=10"]);
    let (code, _, err) = run(&a);
    assert_eq!(code, 0, "a run without power losses fits: {err}");
    let mut a: Vec<&str> = vec!["serve", "--socket", "never-made.sock"];
    a.extend(run_args.iter().map(String::as_str));
    let (code, _, err) = run(&a);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("max_memory") && err.contains("spare words kept for a recovery"),
        "{err}"
    );
    assert!(!Path::new("never-made.sock").exists());
}

/// Deterministic pseudo-random bytes.
fn random_bytes(n: usize, mut x: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn qemu_img_converts_a_random_file_onto_the_export_and_back_byte_identical() {
    if !have("qemu-img") {
        return;
    }
    let dir = scratch("qemu-img");
    let data = random_bytes(8 << 20, 7);
    let src = dir.join("src.img");
    let back = dir.join("back.img");
    std::fs::write(&src, &data).unwrap();
    let device = ["--capacity", "8MiB", "--op", "25", "--buffer", "bplru"];
    let srv = Server::start(&dir, &device);
    let uri = srv.uri();
    let (s, b) = (src.to_str().unwrap(), back.to_str().unwrap());
    client(
        "qemu-img",
        &["convert", "-n", "-f", "raw", "-O", "raw", s, &uri],
    );
    client("qemu-img", &["convert", "-f", "raw", "-O", "raw", &uri, b]);
    assert!(std::fs::read(&back).unwrap() == data, "byte-identical");
    let (code, err) = srv.finish(true);
    assert_eq!(code, 0, "{err}");
    let r = report(&dir);
    assert_eq!(r["verify"]["violations"], 0);
    assert!(r["host"]["write_requests"].as_u64().unwrap() > 0);
    replay_matches(&dir, &r, &device);
}

#[test]
fn nbdcopy_round_trip_and_nbdinfo_sees_the_block_sizes() {
    if !have("nbdcopy") || !have("nbdinfo") {
        return;
    }
    let dir = scratch("nbdcopy");
    let data = random_bytes(4 << 20, 11);
    let src = dir.join("src.img");
    let back = dir.join("back.img");
    std::fs::write(&src, &data).unwrap();
    let store = dir.join("store.img");
    let srv = Server::start(
        &dir,
        &[
            "--capacity",
            "4MiB",
            "--op",
            "25",
            "--store",
            store.to_str().unwrap(),
        ],
    );
    let uri = srv.uri();
    let info = Command::new("nbdinfo")
        .args(["--json", &uri])
        .output()
        .unwrap();
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).expect("nbdinfo JSON");
    let export = &info["exports"][0];
    assert_eq!(export["export-size"], 4 << 20, "{info}");
    assert_eq!(export["block_size_minimum"], 512, "{info}");
    assert_eq!(export["can_flush"], true, "{info}");
    assert_eq!(export["can_trim"], true, "{info}");
    client("nbdcopy", &[src.to_str().unwrap(), &uri]);
    client("nbdcopy", &[&uri, back.to_str().unwrap()]);
    assert!(std::fs::read(&back).unwrap() == data, "byte-identical");
    let (code, err) = srv.finish(true);
    assert_eq!(code, 0, "{err}");
    // The backing file holds the data too.
    assert!(std::fs::read(&store).unwrap() == data);
    assert_eq!(report(&dir)["verify"]["violations"], 0);
}

#[test]
fn sigusr1_strikes_a_power_loss_the_ftl_recovers_from_while_clients_come_and_go() {
    if !have("qemu-io") {
        return;
    }
    let dir = scratch("power-loss");
    let device = [
        "--capacity",
        "4MiB",
        "--op",
        "25",
        "--ftl",
        "page",
        "--buffer",
        "lru",
    ];
    let srv = Server::start(&dir, &device);
    let uri = srv.uri();
    let writes: Vec<String> = (0..16)
        .map(|i| format!("write -P {} {}k 16k", 0x30 + i, i * 64))
        .collect();
    let mut args = vec!["-f", "raw"];
    for w in &writes {
        args.extend(["-c", w.as_str()]);
    }
    args.push(&uri);
    client("qemu-io", &args);
    srv.signal("-USR1");
    std::thread::sleep(Duration::from_millis(300));
    let reads: Vec<String> = (0..16)
        .map(|i| format!("read -P {} {}k 16k", 0x30 + i, i * 64))
        .collect();
    let mut args = vec!["-f", "raw"];
    for r in &reads {
        args.extend(["-c", r.as_str()]);
    }
    args.push(&uri);
    client("qemu-io", &args);
    let (code, err) = srv.finish(true);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("power loss requested"), "{err}");
    assert!(err.contains("power loss after request"), "{err}");
    let r = report(&dir);
    assert_eq!(r["power_loss"]["events"], 1, "{}", r["power_loss"]);
    assert_eq!(r["verify"]["violations"], 0);
    // The replay strikes it at the same point with --power-loss-at.
    let at = r["power_loss"]["per_event"][0]["after_request"]
        .as_u64()
        .unwrap()
        + 1;
    let at = at.to_string();
    let mut replay = device.to_vec();
    replay.extend(["--power-loss-at", &at]);
    replay_matches(&dir, &r, &replay);
    let replayed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("replay.json")).unwrap()).unwrap();
    assert_eq!(r["power_loss"], replayed["power_loss"]);
}

#[test]
fn delay_real_makes_the_client_wait_the_simulated_response_time() {
    if !have("qemu-io") {
        return;
    }
    let dir = scratch("delay");
    let scale = 4.0;
    let srv = Server::start(
        &dir,
        &[
            "--capacity",
            "4MiB",
            "--op",
            "25",
            "--delay",
            "real",
            "--time-scale",
            "4",
            "--once",
            "--stats-every",
            "0.2",
        ],
    );
    let uri = srv.uri();
    let writes: Vec<String> = (0..8).map(|i| format!("write {}k 128k", i * 128)).collect();
    let mut args = vec!["-f", "raw"];
    for w in &writes {
        args.extend(["-c", w.as_str()]);
    }
    args.push(&uri);
    let t = Instant::now();
    client("qemu-io", &args);
    let wall = t.elapsed().as_secs_f64();
    let (code, err) = srv.finish(false);
    assert_eq!(code, 0, "{err}");
    let h = &report(&dir)["host"];
    let simulated =
        h["response_ns"]["mean"].as_f64().unwrap() * h["requests"].as_f64().unwrap() / 1e9;
    assert!(simulated > 0.05, "the writes took simulated time: {h}");
    eprintln!("waited {wall:.3} s for {simulated:.3} s simulated x {scale}");
    // The live statistics came while the client waited.
    let line = err.lines().find(|l| l.contains("requests/s")).expect(&err);
    for part in ["WAF", "GC", "free blocks", "p99"] {
        assert!(line.contains(part), "{line}");
    }
    assert!(
        wall >= scale * simulated * 0.95,
        "waited {wall:.3} s for {simulated:.3} s simulated x {scale}"
    );
}

/// Whether `path` exists; says so on stderr when it does not.
fn have_path(path: &str, what: &str) -> bool {
    let found = Path::new(path).exists();
    if !found {
        eprintln!("SKIPPED: {path} is missing ({what})");
    }
    found
}

#[test]
fn an_ext4_file_system_on_the_export_through_nbdfuse_checks_clean() {
    if !have("nbdfuse")
        || !have_path("/dev/fuse", "FUSE")
        || !have_path("/usr/sbin/mkfs.ext4", "e2fsprogs")
        || !have_path("/usr/sbin/debugfs", "e2fsprogs")
    {
        return;
    }
    let dir = scratch("ext4");
    // nbdfuse passes the file system's byte ranges through unaligned: --min-block 1.
    let device = ["--capacity", "64MiB", "--ftl", "dftl", "--buffer", "bplru"];
    let mut extra = vec!["--min-block", "1"];
    extra.extend(device);
    let srv = Server::start(&dir, &extra);
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mut fuse = Command::new("nbdfuse")
        .arg(&mnt)
        .arg(srv.uri())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let disk = mnt.join("nbd");
    let t = Instant::now();
    while !disk.exists() {
        if let Some(st) = fuse.try_wait().unwrap() {
            let mut e = String::new();
            let _ = fuse.stderr.take().unwrap().read_to_string(&mut e);
            eprintln!("SKIPPED: nbdfuse cannot mount here ({st}): {e}");
            srv.finish(true);
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "nbdfuse never mounted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let d = disk.to_str().unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let file = std::fs::read_dir(&sample)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().unwrap().len())
        .expect("a sample file");
    let unmount = |fuse: &mut Child| {
        let ok = Command::new("fusermount3")
            .arg("-u")
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg(&mnt).status();
        }
        let _ = fuse.wait();
    };
    let steps: Vec<Vec<String>> = vec![
        vec!["mkfs.ext4".into(), "-q".into(), "-F".into(), d.into()],
        vec![
            "debugfs".into(),
            "-w".into(),
            "-R".into(),
            format!("write {} sample", file.display()),
            d.into(),
        ],
        vec!["e2fsck".into(), "-fn".into(), d.into()],
    ];
    for step in &steps {
        let out = Command::new(&step[0]).args(&step[1..]).output().unwrap();
        if !out.status.success() {
            unmount(&mut fuse);
            panic!(
                "{step:?} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let cat = Command::new("debugfs")
        .args(["-R", "cat sample", d])
        .output()
        .unwrap();
    unmount(&mut fuse);
    assert!(
        cat.stdout == std::fs::read(&file).unwrap(),
        "the file read back from the file system differs"
    );
    let (code, err) = srv.finish(true);
    assert_eq!(code, 0, "{err}");
    let r = report(&dir);
    assert_eq!(r["verify"]["violations"], 0);
    replay_matches(&dir, &r, &device);
}

#[test]
fn tcp_on_localhost_with_a_port_the_system_picks() {
    if !have("qemu-io") {
        return;
    }
    use std::io::BufRead;
    let dir = scratch("tcp");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ftlab"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--once",
            "--export",
            "disk",
        ])
        .args(["--capacity", "8MiB", "--op", "25", "--stats-every", "0"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let uri = first
        .split_whitespace()
        .find(|w| w.starts_with("nbd://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URI in: {first}"))
        .to_string();
    assert!(uri.ends_with("/disk"), "{uri}");
    client(
        "qemu-io",
        &[
            "-f",
            "raw",
            "-c",
            "write -P 0x77 3M 256k",
            "-c",
            "read -P 0x77 3M 256k",
            &uri,
        ],
    );
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest:?}");
    // The defaults: report and recording in the working directory.
    assert_eq!(report(&dir)["host"]["write_requests"], 1);
    let trace = std::fs::read_to_string(dir.join("ftlab-serve.trace")).unwrap();
    assert!(trace.contains(" W 6144 + 512 "), "{trace}");
}
