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
}
