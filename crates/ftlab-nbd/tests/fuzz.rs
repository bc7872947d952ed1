//! Fuzz tests of the protocol: random bytes into the handshake and the transmission
//! phase never panic, and whatever random requests do, the store ends as a plain byte
//! array given the requests the server accepted would.

use ftlab_nbd::fuzzing::{StoreDevice as Dev, Wire};
use ftlab_nbd::handshake::{go_data, option};
use ftlab_nbd::transmission::request;
use ftlab_nbd::{handshake, serve, Export, Store};
use proptest::prelude::*;
use std::io::Cursor;

const SIZE: u64 = 256 * 1024;

fn export(min_block: u32) -> Export {
    Export {
        name: "x".into(),
        description: String::new(),
        size: SIZE,
        min_block,
        preferred_block: 4096,
    }
}

/// Random request headers: mostly sensible, sometimes misaligned, past the end or of
/// unknown kinds, with payloads that may be cut short.
fn req() -> impl Strategy<Value = (u16, u16, u64, u32, u8)> {
    (
        0u16..4,
        prop_oneof![0u16..7, any::<u16>()],
        prop_oneof![(0u64..600).prop_map(|b| b * 512), 0u64..SIZE, any::<u64>()],
        prop_oneof![(0u32..40).prop_map(|b| b * 512), 0u32..70_000],
        any::<u8>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_into_the_handshake(prefix in 0usize..4, bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        // Random bytes after 0..3 valid steps (client flags, an option).
        let mut input = Vec::new();
        if prefix >= 1 { input.extend(1u32.to_be_bytes()); }
        if prefix >= 2 { input.extend(option(3, &[])); }
        if prefix >= 3 { input.extend(option(6, &go_data("x"))); }
        input.extend(bytes);
        let mut w = Wire { input: Cursor::new(input), output: Vec::new() };
        let _ = handshake(&mut w, &export(512));
    }

    #[test]
    fn random_bytes_into_transmission(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut input = Vec::new();
        input.extend(ftlab_nbd::REQUEST_MAGIC.to_be_bytes());
        input.extend(bytes);
        let mut w = Wire { input: Cursor::new(input), output: Vec::new() };
        let mut dev = Dev(Store::memory(SIZE, SIZE));
        let _ = serve(&mut w, &export(512), &mut dev);
    }

    #[test]
    fn random_requests_keep_the_store_a_byte_array(
        reqs in proptest::collection::vec(req(), 1..40),
        cut in any::<bool>(),
        block in prop_oneof![Just(1u32), Just(512), Just(4096)],
    ) {
        let mut input = Vec::new();
        let mut model = vec![0u8; SIZE as usize];
        let n = reqs.len();
        for (i, &(flags, kind, offset, len, fill)) in reqs.iter().enumerate() {
            input.extend(request(flags, kind, i as u64, offset, len));
            let ok = offset % block as u64 == 0 && len % block == 0
                && offset.checked_add(len as u64).is_some_and(|e| e <= SIZE);
            if kind == 2 {
                break; // NBD_CMD_DISC: nothing after it is served
            }
            if kind == 1 {
                let payload = vec![fill; len as usize];
                if cut && i == n - 1 {
                    // The client vanishes half-way through the payload.
                    input.extend(&payload[..payload.len() / 2]);
                    break;
                }
                input.extend(&payload);
                if ok {
                    model[offset as usize..][..len as usize].fill(fill);
                }
            } else if (kind == 4 || kind == 6) && ok {
                model[offset as usize..][..len as usize].fill(0);
            }
        }
        let mut w = Wire { input: Cursor::new(input), output: Vec::new() };
        let mut dev = Dev(Store::memory(SIZE, SIZE));
        let _ = serve(&mut w, &export(block), &mut dev);
        let mut back = vec![0u8; SIZE as usize];
        dev.0.read(0, &mut back).unwrap();
        prop_assert!(back == model);
    }
}

/// The kept corpus of the cargo-fuzz target `nbd` (`fuzz/corpus/nbd/`: seeds, and any
/// input a fuzzer once crashed on) and the minimised corpus of the long rounds
/// (`fuzz/min/nbd/`, kept by `fuzz/soak.sh`), replayed through the same entry point.
#[test]
fn nbd_corpus_does_not_panic() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let dir = fuzz.join("corpus/nbd");
    let (mut n, mut served) = (0, 0);
    let kept = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let min = std::fs::read_dir(fuzz.join("min/nbd"))
        .into_iter()
        .flatten();
    for e in kept.chain(min) {
        served += ftlab_nbd::fuzzing::session(&std::fs::read(e.unwrap().path()).unwrap()) as u32;
        n += 1;
    }
    assert!(n > 0, "{}: empty corpus", dir.display());
    assert!(
        served >= 3,
        "only {served} seeds reach the transmission phase"
    );
}
