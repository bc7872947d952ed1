//! The VMware vSCSI binary trace format (as `vscsiStats` records it, and as the
//! CloudPhysics traces on SNIA IOTTA ship it): fixed-size little-endian records, no
//! header, one SCSI command each.
//!
//! Two record layouts exist; the version is in the high byte of a 16-bit `ver` field:
//!
//! | version | bytes | fields (offset: type) |
//! |---|---|---|
//! | 1 | 32 | 0 `sn` u32, 4 `len` u32, 8 `nSG` u32, 12 `cmd` u16, 14 `ver` u16, 16 `lbn` u64, 24 `ts` u64 |
//! | 2 | 40 | 0 `cmd` u16, 2 `ver` u16, 4 `sn` u32, 8 `len` u32, 12 `nSG` u32, 16 `lbn` u64, 24 `ts` u64, 32 `rt` u64 |
//!
//! `len` is the transfer length in bytes, `lbn` the logical block in 512-byte sectors,
//! `ts` the issue time in microseconds, `rt` (version 2) the response time, `cmd` the
//! SCSI operation code.
//!
//! Choices: the version is read from the first record (version 2 if its `ver` field at
//! offset 2 says 2, else version 1 if the one at offset 14 says 1) and every record
//! must carry it; READ(6/10/12/16) opcodes (0x08, 0x28, 0xa8, 0x88) are reads, the
//! WRITE ones (0x0a, 0x2a, 0xaa, 0x8a) writes, SYNCHRONIZE CACHE (0x35, 0x91) a flush;
//! other commands (INQUIRY, TEST UNIT READY, ...) carry no data to simulate and are
//! passed over. A trailing partial record is an error (a truncated file). The "line" of
//! an error is the 1-based record number. Every record is device 0 (a vSCSI trace is
//! one virtual disk).

use crate::{Record, TraceError, INPUT_FIELD};
use ftlab_core::request::{Op, Request};
use ftlab_core::Nanos;
use std::io::{BufRead, ErrorKind};

/// Bytes of a version 1 record.
pub const V1_BYTES: usize = 32;
/// Bytes of a version 2 record.
pub const V2_BYTES: usize = 40;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The record version of a vSCSI trace from its first bytes: 2 or 1 when the first two
/// records (or the first, for a one-record file) carry that version, else `None`.
pub fn version(head: &[u8]) -> Option<u8> {
    let all = |size: usize, at: usize, want: u16| {
        let n = (head.len() / size).min(2);
        n > 0 && (0..n).all(|i| u16_at(head, i * size + at) >> 8 == want)
    };
    if all(V2_BYTES, 2, 2) {
        Some(2)
    } else if all(V1_BYTES, 14, 1) {
        Some(1)
    } else {
        None
    }
}

/// Streams the data commands of a vSCSI trace.
pub struct VscsiReader<R> {
    input: R,
    file: String,
    version: u8,
    record: u64,
    buf: [u8; V2_BYTES],
    done: bool,
    passed_over: u64,
}

impl<R: BufRead> VscsiReader<R> {
    /// Reads from `input`; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>) -> Self {
        VscsiReader {
            input,
            file: file.into(),
            version: 0,
            record: 0,
            buf: [0; V2_BYTES],
            done: false,
            passed_over: 0,
        }
    }

    /// Records passed over so far (commands other than reads, writes and flushes).
    pub fn passed_over(&self) -> u64 {
        self.passed_over
    }

    fn err(&self, field: &'static str, why: String) -> TraceError {
        TraceError {
            file: self.file.clone(),
            line: self.record,
            field,
            why,
        }
    }

    /// Fills `self.buf[..n]`; `Ok(false)` at a clean end of input.
    fn fill(&mut self, n: usize) -> Result<bool, TraceError> {
        let mut got = 0;
        while got < n {
            match self.input.read(&mut self.buf[got..n]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => {
                    return Err(self.err(
                        "record",
                        format!(
                            "truncated: the file ends {got} bytes into a {n}-byte version {} \
                             record",
                            self.version
                        ),
                    ))
                }
                Ok(k) => got += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(INPUT_FIELD, format!("read error: {e}"))),
            }
        }
        Ok(true)
    }

    fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        loop {
            self.record += 1;
            if self.version == 0 {
                let head = match self.input.fill_buf() {
                    Ok(h) => h,
                    Err(e) => return Err(self.err(INPUT_FIELD, format!("read error: {e}"))),
                };
                if head.is_empty() {
                    return Ok(None);
                }
                let found = version(head);
                self.version = found.ok_or_else(|| {
                    self.err(
                        "ver",
                        "neither a version 1 nor a version 2 vSCSI record (the version byte \
                         is wrong): not a vSCSI trace"
                            .into(),
                    )
                })?;
            }
            let size = if self.version == 2 {
                V2_BYTES
            } else {
                V1_BYTES
            };
            if !self.fill(size)? {
                return Ok(None);
            }
            let b = &self.buf[..size];
            let (cmd, ver, len, lbn, ts) = if self.version == 2 {
                (
                    u16_at(b, 0),
                    u16_at(b, 2),
                    u32_at(b, 8),
                    u64_at(b, 16),
                    u64_at(b, 24),
                )
            } else {
                (
                    u16_at(b, 12),
                    u16_at(b, 14),
                    u32_at(b, 4),
                    u64_at(b, 16),
                    u64_at(b, 24),
                )
            };
            if ver >> 8 != self.version as u16 {
                return Err(self.err(
                    "ver",
                    format!(
                        "version {} in a version {} trace (a damaged or misaligned record)",
                        ver >> 8,
                        self.version
                    ),
                ));
            }
            let op = match cmd & 0xff {
                0x08 | 0x28 | 0xa8 | 0x88 => Op::Read,
                0x0a | 0x2a | 0xaa | 0x8a => Op::Write,
                0x35 | 0x91 => Op::Flush,
                _ => {
                    self.passed_over += 1;
                    continue;
                }
            };
            let arrival = ts
                .checked_mul(1000)
                .ok_or_else(|| self.err("ts", format!("{ts} µs overflows 2^64 ns")))?;
            let offset = lbn
                .checked_mul(512)
                .ok_or_else(|| self.err("lbn", format!("{lbn} overflows a byte offset")))?;
            let (offset, len) = if op == Op::Flush {
                (0, 0)
            } else {
                (offset, len as u64)
            };
            return Ok(Some(Record {
                req: Request {
                    arrival: Nanos(arrival),
                    op,
                    offset,
                    len,
                },
                device: 0,
                line: self.record,
                pass: 0,
            }));
        }
    }
}

impl<R: BufRead> Iterator for VscsiReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                // A damaged record leaves the reader out of step: stop after reporting it.
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// One record in the layout of `version` (1 or 2): for tests, fuzzing and examples.
pub fn encode(version: u8, cmd: u8, len: u32, lbn: u64, ts_us: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(V2_BYTES);
    let ver = (version as u16) << 8;
    if version == 2 {
        b.extend_from_slice(&(cmd as u16).to_le_bytes());
        b.extend_from_slice(&ver.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes()); // sn
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes()); // nSG
        b.extend_from_slice(&lbn.to_le_bytes());
        b.extend_from_slice(&ts_us.to_le_bytes());
        b.extend_from_slice(&250u64.to_le_bytes()); // rt
    } else {
        b.extend_from_slice(&1u32.to_le_bytes()); // sn
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes()); // nSG
        b.extend_from_slice(&(cmd as u16).to_le_bytes());
        b.extend_from_slice(&ver.to_le_bytes());
        b.extend_from_slice(&lbn.to_le_bytes());
        b.extend_from_slice(&ts_us.to_le_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(version: u8) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend(encode(version, 0x28, 4096, 8, 1_000));
        t.extend(encode(version, 0x12, 36, 0, 1_500)); // INQUIRY: passed over
        t.extend(encode(version, 0x2a, 8192, 16, 2_000));
        t.extend(encode(version, 0x35, 0, 0, 2_500));
        t
    }

    fn read(bytes: &[u8]) -> Vec<Result<Record, TraceError>> {
        VscsiReader::new(bytes, "t.vscsi").collect()
    }

    #[test]
    fn vscsi_v1_and_v2_records() {
        for v in [1, 2] {
            let t = sample(v);
            assert_eq!(version(&t), Some(v));
            let r: Vec<Record> = read(&t).into_iter().map(Result::unwrap).collect();
            assert_eq!(r.len(), 3, "v{v}");
            assert_eq!(
                (r[0].req.op, r[0].req.offset, r[0].req.len, r[0].req.arrival),
                (Op::Read, 4096, 4096, Nanos(1_000_000))
            );
            assert_eq!(
                (r[1].req.op, r[1].req.offset, r[1].line),
                (Op::Write, 8192, 3)
            );
            assert_eq!((r[2].req.op, r[2].req.len), (Op::Flush, 0));
        }
    }

    #[test]
    fn vscsi_truncated_and_foreign_input_are_errors() {
        let mut t = sample(2);
        t.truncate(t.len() - 7);
        let r = read(&t);
        let e = r.last().unwrap().clone().unwrap_err();
        assert_eq!((e.line, e.field), (4, "record"));
        assert!(e.why.contains("truncated: the file ends 33 bytes"), "{e}");
        let e = read(b"0,1,512,w,0.0\n0,1,512,w,0.0\n0,1,512,w,0.0\n")[0]
            .clone()
            .unwrap_err();
        assert_eq!((e.line, e.field), (1, "ver"));
        assert!(read(b"").is_empty());
    }
}
