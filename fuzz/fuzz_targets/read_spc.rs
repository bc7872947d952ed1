#![no_main]
//! Fuzz target: the `spc` trace reader must never panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ftlab_workload::fuzzing::read_all("spc", data);
});
