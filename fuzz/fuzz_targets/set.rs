#![no_main]
//! Fuzz target: `--set KEY=VALUE` lines over the defaults, loaded and resolved, must
//! never panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ftlab::fuzzing::set_bytes(data);
});
