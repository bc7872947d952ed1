//! Reader throughput in lines per second (target: at least 2 million for SPC and MSR).
//!
//! Run with `cargo bench -p ftlab-workload --bench readers`. Each reader (SPC, MSR,
//! MQSim, DiskSim, blkparse and the generic CSV reader) parses a synthetic trace of
//! `LINES` realistic lines (built from the shape of the shared samples) from memory,
//! then from a file on disk (through the same buffered, sniffing `open_records` path
//! `ftlab run` uses), then from a gzip-compressed file; each figure is the best of
//! `ROUNDS` rounds. Set `FTLAB_BENCH_LINES` to change the size, and
//! `FTLAB_BENCH_FORMATS` (e.g. `spc,csv`) to time only some readers.

use ftlab_workload::csv::CsvSpec;
use ftlab_workload::{open_records, read_records, ReadOptions};
use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

const ROUNDS: usize = 5;

fn lines() -> usize {
    std::env::var("FTLAB_BENCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000)
}

/// A SplitMix64 stream, so the text does not depend on any crate's RNG.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn spc_text(n: usize) -> Vec<u8> {
    let mut m = Mix(1);
    let mut out = Vec::with_capacity(n * 28);
    let mut t = 0u64;
    for _ in 0..n {
        t += m.next() % 50_000;
        let op = if m.next() % 10 < 6 { 'w' } else { 'r' };
        writeln!(
            out,
            "{},{},{},{op},{}.{:06}",
            m.next() % 24,
            m.next() % 1_000_000,
            512 * (1 + m.next() % 16),
            t / 1_000_000,
            t % 1_000_000
        )
        .unwrap();
    }
    out
}

fn msr_text(n: usize) -> Vec<u8> {
    let mut m = Mix(2);
    let mut out = Vec::with_capacity(n * 52);
    let mut t = 128_166_385_295_514_663u64;
    for _ in 0..n {
        t += m.next() % 5000;
        let op = if m.next().is_multiple_of(2) {
            "Write"
        } else {
            "Read"
        };
        writeln!(
            out,
            "{t},hm,{},{op},{},{},{}",
            m.next() % 2,
            512 * (m.next() % 20_000_000),
            512 * (1 + m.next() % 16),
            m.next() % 10_000
        )
        .unwrap();
    }
    out
}

fn mqsim_text(n: usize) -> Vec<u8> {
    let mut m = Mix(3);
    let mut out = Vec::with_capacity(n * 28);
    let mut t = 11_413_000u64;
    for _ in 0..n {
        t += m.next() % 50_000;
        writeln!(
            out,
            "{t} {} {} {} {}",
            m.next() % 4,
            m.next() % 300_000_000,
            8 * (1 + m.next() % 16),
            m.next() % 2
        )
        .unwrap();
    }
    out
}

fn disksim_text(n: usize) -> Vec<u8> {
    let mut m = Mix(4);
    let mut out = Vec::with_capacity(n * 30);
    let mut t = 0u64;
    for _ in 0..n {
        t += m.next() % 50_000;
        writeln!(
            out,
            "{}.{:06} {} {} {} {}",
            t / 1_000_000,
            t % 1_000_000,
            m.next() % 4,
            m.next() % 300_000_000,
            8 * (1 + m.next() % 16),
            m.next() % 8
        )
        .unwrap();
    }
    out
}

/// blkparse events: a third are queue events the default reader (`D`) skips; the
/// second element is how many it keeps.
fn blkparse_text(n: usize) -> (Vec<u8>, usize) {
    let mut m = Mix(5);
    let mut out = Vec::with_capacity(n * 64);
    let mut t = 0u64;
    let mut kept = 0;
    for seq in 0..n {
        t += m.next() % 50_000;
        let action = if seq % 3 == 0 { "Q" } else { "D" };
        kept += usize::from(action == "D");
        let rwbs = if m.next() % 10 < 6 { "WS" } else { "R" };
        writeln!(
            out,
            "  8,16   {}  {seq:>7}  {}.{:09}  {}  {action}  {rwbs} {} + {} [java]",
            m.next() % 4,
            t / 1_000_000_000,
            t % 1_000_000_000,
            3000 + m.next() % 1000,
            m.next() % 300_000_000,
            8 * (1 + m.next() % 32)
        )
        .unwrap();
    }
    (out, kept)
}

/// Generic CSV: `time,device,op,offset,size` with a header, time in seconds.
fn csv_text(n: usize) -> Vec<u8> {
    let mut m = Mix(6);
    let mut out = Vec::with_capacity(n * 36);
    out.extend_from_slice(b"time,device,op,offset,size\n");
    let mut t = 0u64;
    for _ in 0..n {
        t += m.next() % 50_000;
        let op = if m.next() % 10 < 6 { "write" } else { "read" };
        writeln!(
            out,
            "{}.{:06},{},{op},{},{}",
            t / 1_000_000,
            t % 1_000_000,
            m.next() % 4,
            512 * (m.next() % 20_000_000),
            512 * (1 + m.next() % 16)
        )
        .unwrap();
    }
    out
}

/// Whether `FTLAB_BENCH_FORMATS` (a comma-separated list; unset: every format) names
/// `format`.
fn wanted(format: &str) -> bool {
    std::env::var("FTLAB_BENCH_FORMATS").map_or(true, |v| v.split(',').any(|f| f.trim() == format))
}

fn count(stream: ftlab_workload::RecordStream) -> usize {
    let mut n = 0;
    for r in stream {
        black_box(r.expect("good record"));
        n += 1;
    }
    n
}

fn best<F: FnMut() -> usize>(mut f: F) -> (usize, f64) {
    let mut best = f64::INFINITY;
    let mut n = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        n = f();
        best = best.min(start.elapsed().as_secs_f64());
    }
    (n, best)
}

fn report(what: &str, n: usize, secs: f64, bytes: usize) {
    println!(
        "{what:<28} {n:>9} lines in {:>7.1} ms: {:>6.2} M lines/s, {:>6.0} MB/s",
        secs * 1e3,
        n as f64 / secs / 1e6,
        bytes as f64 / secs / 1e6
    );
}

fn main() {
    // `cargo test` runs benches with --bench absent: do one tiny round only.
    let n = if std::env::args().any(|a| a == "--bench") {
        lines()
    } else {
        1000
    };
    let dir = std::env::temp_dir().join(format!("ftlab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = ReadOptions {
        csv: CsvSpec {
            header: true,
            time: Some(0),
            device: Some(1),
            op: Some(2),
            offset: Some(3),
            size: Some(4),
            ..CsvSpec::default()
        },
        ..ReadOptions::default()
    };
    let (blkparse, blkparse_kept) = blkparse_text(n);
    for (format, text, records) in [
        ("spc", spc_text(n), n),
        ("msr", msr_text(n), n),
        ("mqsim", mqsim_text(n), n),
        ("disksim", disksim_text(n), n),
        ("blkparse", blkparse, blkparse_kept),
        ("csv", csv_text(n), n),
    ] {
        if !wanted(format) {
            continue;
        }
        // The readers take a 'static input; the bench leaks its two texts.
        let text: &'static [u8] = Box::leak(text.into_boxed_slice());
        let (got, secs) = best(|| {
            let input = Box::new(std::io::Cursor::new(text));
            count(read_records(input, "mem", format, &opts).unwrap())
        });
        assert_eq!(got, records);
        report(&format!("{format} from memory"), n, secs, text.len());
        let path = dir.join(format!("bench.{format}"));
        std::fs::write(&path, text).unwrap();
        let (got, secs) = best(|| count(open_records(&path, format, &opts).unwrap()));
        assert_eq!(got, records);
        report(&format!("{format} from file"), n, secs, text.len());
        let gz = dir.join(format!("bench.{format}.gz"));
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        enc.write_all(text).unwrap();
        enc.finish().unwrap();
        let (got, secs) = best(|| count(open_records(&gz, format, &opts).unwrap()));
        assert_eq!(got, records);
        report(&format!("{format} from file.gz"), n, secs, text.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
