#![no_main]
//! Fuzz target: opening a trace (compression recognised by its first bytes: gzip, zstd,
//! bzip2, xz or plain) and reading what comes out must never panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ftlab_workload::fuzzing::decompress_and_read(data);
});
