#![no_main]
//! Fuzz target: the per-pass transforms, passes and folds, with settings drawn from the
//! input, must never panic and must keep their invariants.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ftlab_workload::fuzzing::transforms(data);
});
