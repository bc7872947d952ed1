#![no_main]
//! Fuzz target: the `vscsi` trace reader must never panic on any input.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ftlab_workload::fuzzing::read_all("vscsi", data);
});
