//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the tests that replay
//! their corpora: feed arbitrary bytes to a reader and drain it. A reader may return
//! errors for bad input; it must never panic, and it must stop (every line consumed
//! yields a record, an error or nothing). The same holds for the decompressing opener
//! ([`decompress_and_read`]) and the per-pass transforms and folds
//! ([`transforms`]), whose settings are drawn from the input too.

use crate::csv::CsvSpec;
use crate::input::decompressing;
use crate::transform::{
    per_pass, Counters, DeviceLayout, FoldCompact, FoldModulo, Layout, Replay, TransformSpec,
};
use crate::{read_records, ReadOptions, Record, RecordStream, TraceError};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use std::io::{Cursor, Read};
use std::rc::Rc;

/// Most bytes a fuzz input may decompress to: a decompression bomb is not a bug, and
/// the fuzzer must not spend its time inflating one.
const MAX_DECOMPRESSED: u64 = 4 << 20;

/// Every format a fuzz target exists for.
pub const FUZZ_FORMATS: &[&str] = &["spc", "msr", "mqsim", "disksim", "blkparse", "csv", "vscsi"];

/// Reads `data` as a trace of `format` to the end; returns (records, errors).
pub fn read_all(format: &str, data: &[u8]) -> (u64, u64) {
    let mut opts = ReadOptions::default();
    if format == "csv" {
        opts.csv = CsvSpec {
            time: Some(0),
            offset: Some(1),
            size: Some(2),
            op: Some(3),
            device: Some(4),
            ..CsvSpec::default()
        };
    }
    let input = Box::new(Cursor::new(data.to_vec()));
    let Ok(stream) = read_records(input, "fuzz", format, &opts) else {
        return (0, 1);
    };
    let (mut ok, mut bad) = (0, 0);
    // Items are bounded by lines, or by the smallest record for the binary format.
    let lines = if format == "vscsi" {
        (data.len() / crate::vscsi::V1_BYTES) as u64 + 1
    } else {
        data.iter().filter(|&&b| b == b'\n').count() as u64 + 1
    };
    for r in stream {
        match r {
            Ok(_) => ok += 1,
            Err(_) => bad += 1,
        }
        assert!(ok + bad <= lines, "{format}: more items than lines");
    }
    (ok, bad)
}

/// Opens `data` as a trace file is opened (compression recognised by its first bytes:
/// gzip, zstd, bzip2, xz, or plain) and reads what comes out as an SPC trace. Returns
/// `None` when the opener or the decompressor refuses it (an error, as for a file),
/// else (records, errors) as [`read_all`].
pub fn decompress_and_read(data: &[u8]) -> Option<(u64, u64)> {
    let reader = decompressing(Cursor::new(data.to_vec())).ok()?;
    let mut out = Vec::new();
    reader.take(MAX_DECOMPRESSED).read_to_end(&mut out).ok()?;
    Some(read_all("spc", &out))
}

/// Bytes of one drawn record in [`transforms`].
const RECORD_BYTES: usize = 12;
/// Bytes of the drawn settings in [`transforms`].
const SPEC_BYTES: usize = 16;

/// Runs records drawn from `data` through every per-pass transform, with settings drawn
/// from its first bytes, chained over one or two passes, then folded into a small
/// capacity (modulo or compact). Returns the requests that came out, or `None` if the
/// drawn settings are refused (as the config would refuse them). Checks what must hold
/// whatever the settings: the first pass never delivers more records than were read,
/// and every folded request lies inside the capacity unless it is longer than it.
pub fn transforms(data: &[u8]) -> Option<u64> {
    if data.len() < SPEC_BYTES {
        return None;
    }
    let (head, body) = data.split_at(SPEC_BYTES);
    let b = |i: usize| head[i] as u64;
    let spec = TransformSpec {
        devices: (0..(b(0) % 3)).map(|d| (d + b(1)) as u32 % 4).collect(),
        layout: if b(2) % 2 == 0 {
            Layout::Shared
        } else {
            Layout::SideBySide
        },
        shift_sectors: (b(3) as i64 - 128) * 8,
        max_gap: (b(4) % 2 == 1).then(|| Nanos(b(4) * 1000)),
        time_scale: [1.0, 0.5, 2.0, 1e-9, 1e9][(b(5) % 5) as usize],
        window: (
            (b(6) % 3 == 1).then(|| Nanos(b(6) * 10_000)),
            (b(7) % 3 == 1).then(|| Nanos(b(7) * 1_000_000)),
        ),
        limit: (b(8) % 2 == 1).then_some(b(8) / 4),
        sort_window: [0, 1, 2, 7, 4096][(b(9) % 5) as usize],
        skip_bad: b(10) % 2 == 1,
        flush_every: (b(11) % 3 == 1).then(|| 1 + b(11) % 17),
        rebase: b(12) % 2 == 0,
    };
    spec.validate().ok()?;
    let passes = 1 + (b(13) % 2) as u32;
    let compact = b(14) % 2 == 1;
    let page = 512u64;
    let capacity = page * (1 + b(15) % 64) * 8;
    let records: Vec<Result<Record, TraceError>> = body
        .chunks_exact(RECORD_BYTES)
        .enumerate()
        .map(|(i, c)| {
            let u = |a: usize, n: usize| {
                c[a..a + n]
                    .iter()
                    .fold(0u64, |acc, &x| (acc << 8) | x as u64)
            };
            if c[0] == 0xff {
                return Err(TraceError {
                    file: "fuzz".into(),
                    line: i as u64 + 1,
                    field: "offset",
                    why: "drawn bad record".into(),
                });
            }
            Ok(Record {
                req: Request {
                    arrival: Nanos(u(1, 4) * 997),
                    op: [Op::Read, Op::Write, Op::Trim, Op::Flush][(c[0] % 4) as usize],
                    offset: u(5, 3) * 512,
                    len: (u(8, 2) % 64 + 1) * 512,
                },
                device: (c[10] % 4) as u32,
                line: i as u64 + 1,
                pass: 0,
            })
        })
        .collect();
    let stream = {
        let r = records.clone();
        move || -> RecordStream { Box::new(r.clone().into_iter()) }
    };
    let layout = if spec.layout == Layout::SideBySide {
        Some(DeviceLayout::scan(stream(), page * 8, spec.skip_bad).ok()?)
    } else {
        None
    };
    let counters = Rc::new(Counters::default());
    let open = {
        let (spec, counters, layout) = (spec.clone(), counters.clone(), layout.clone());
        Box::new(move |pass: u32| {
            Ok(per_pass(
                stream(),
                &spec,
                layout.as_ref(),
                &counters,
                pass == 0,
            ))
        })
    };
    let replay: RecordStream = Box::new(Replay::new(open, passes));
    let folded: RecordStream = if compact {
        Box::new(FoldCompact::new(replay, capacity, page * 8))
    } else {
        Box::new(FoldModulo::new(replay, capacity, page))
    };
    let mut out = 0;
    for item in folded {
        let Ok(r) = item else { continue };
        out += 1;
        if r.req.op != Op::Flush && r.req.len <= capacity {
            assert!(
                r.req.offset + r.req.len <= capacity,
                "folded request {:?} past the capacity {capacity}",
                r.req
            );
        }
    }
    assert!(
        counters.records_first_pass.get() <= counters.records_read.get(),
        "the first pass delivered {} records of {} read",
        counters.records_first_pass.get(),
        counters.records_read.get()
    );
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_inputs_do_not_panic() {
        let inputs: &[&[u8]] = &[
            b"",
            b"\n\n\n",
            b"\xff\xfe\x00garbage",
            b"0,1,2,w,1e308\n",
            b"0,18446744073709551615,4294967295,r,0\n",
            b"1 2 3 4 5 6 7 8 9\n",
            b"  8,16   3  4  0.1  1  D  W 1 + 18446744073709551615 [x]\n",
            b"128166385295514663,hm,0,Write,99999999999999999999,2048,1\n",
            b",,,,,,\n",
        ];
        for f in FUZZ_FORMATS {
            for i in inputs {
                read_all(f, i);
            }
        }
    }

    /// Sample lines of every format (and vSCSI records) with random bytes flipped,
    /// inserted and cut, read as every format and as `auto`: nothing may panic, and the
    /// sniffing (binary, header, format guess) sees all of it first.
    #[test]
    fn mutated_samples_do_not_panic_in_any_reader_or_the_sniffing() {
        let mut seed: Vec<u8> = b"0,303567,3584,w,0.000000\n\
              128166385295514663,hm,0,Write,3216171008,4096,1331\n\
              11413000 0 657728 16 1\n0.523 0 100 8 1\n\
              8,16 1 1 0.000000000 3795 D WS 12345 + 8 [kworker]\n\
              Timestamp,Hostname,DiskNumber\n"
            .to_vec();
        let text_len = seed.len();
        seed.extend(crate::vscsi::encode(2, 0x2a, 4096, 8, 100));
        seed.extend(crate::vscsi::encode(1, 0x28, 512, 0, 200));
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..3000 {
            let mut d = if round % 2 == 0 {
                seed[..text_len].to_vec()
            } else {
                seed.clone()
            };
            for _ in 0..1 + rnd() % 8 {
                let at = (rnd() as usize) % d.len().max(1);
                match rnd() % 4 {
                    0 if !d.is_empty() => d[at] = rnd() as u8,
                    1 => d.insert(at.min(d.len()), b"\n, .-e0x"[(rnd() % 8) as usize]),
                    2 if !d.is_empty() => {
                        d.remove(at);
                    }
                    _ => d.truncate(at),
                }
            }
            for f in FUZZ_FORMATS.iter().chain(&["auto", "ssdsim"]) {
                read_all(f, &d);
            }
            let _ = crate::sniff::guess_format(&d, round % 3 == 0);
            let _ = crate::sniff::check_format("mqsim", &d, false);
        }
    }

    /// Compressed traces in every format ftlab reads, then the same bytes cut short and
    /// flipped: complete streams read their records back; damaged ones may be refused
    /// or read partly, never panic.
    #[test]
    fn compressed_inputs_read_back_and_damaged_ones_do_not_panic() {
        use crate::input::{Compression, Output};
        let text = "0,303567,3584,w,0.000000\n0,303575,3584,r,0.010000\n".repeat(40);
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Zstd,
            Compression::Bzip2,
        ] {
            let mut bytes = Vec::new();
            let mut out = Output::new(&mut bytes, c).unwrap();
            std::io::Write::write_all(&mut out, text.as_bytes()).unwrap();
            out.finish().unwrap();
            assert_eq!(decompress_and_read(&bytes), Some((80, 0)), "{c:?}");
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..200 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mut d = bytes.clone();
                let at = (x as usize) % d.len();
                if x.is_multiple_of(2) {
                    d.truncate(at);
                } else {
                    d[at] ^= (x >> 32) as u8 | 1;
                }
                let _ = decompress_and_read(&d);
            }
        }
        assert_eq!(
            decompress_and_read(b"PK\x03\x04zip"),
            None,
            "zip is refused"
        );
    }

    /// Random settings and records through every transform and both folds.
    #[test]
    fn random_transforms_do_not_panic_and_keep_their_invariants() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut ran = 0;
        for _ in 0..2000 {
            let n = SPEC_BYTES + RECORD_BYTES * (rnd() % 40) as usize;
            let d: Vec<u8> = (0..n).map(|_| rnd() as u8).collect();
            if transforms(&d).is_some() {
                ran += 1;
            }
        }
        assert!(ran > 500, "only {ran} of 2000 drawn settings were valid");
    }
}
