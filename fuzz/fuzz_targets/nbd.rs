#![no_main]
//! Fuzz target: an NBD session (handshake, then requests) on any bytes a client sends
//! must never panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ftlab_nbd::fuzzing::session(data);
});
