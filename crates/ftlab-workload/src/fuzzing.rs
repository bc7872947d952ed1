//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the tests that replay
//! their corpora: feed arbitrary bytes to a reader and drain it. A reader may return
//! errors for bad input; it must never panic, and it must stop (every line consumed
//! yields a record, an error or nothing).

use crate::csv::CsvSpec;
use crate::{read_records, ReadOptions};
use std::io::Cursor;

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
}
