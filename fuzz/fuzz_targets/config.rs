#![no_main]
//! Fuzz target: config parsing and resolution must never panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ftlab::fuzzing::config_bytes(data);
});
