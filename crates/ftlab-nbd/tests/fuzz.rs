//! Fuzz tests of the protocol: random bytes into the handshake and the transmission
//! phase never panic, and whatever random requests do, the store ends as a plain byte
//! array given the requests the server accepted would.

use ftlab_nbd::handshake::{go_data, option};
use ftlab_nbd::transmission::request;
use ftlab_nbd::{handshake, serve, Command, Device, Export, Store};
use proptest::prelude::*;
use std::io::{self, Cursor, Read, Write};

/// A connection whose client side sent `input` and then closed.
struct Wire {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

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

struct Dev(Store);

impl Device for Dev {
    fn handle(&mut self, cmd: Command<'_>) -> Result<(), u32> {
        let r = match cmd {
            Command::Read { offset, buf } => self.0.read(offset, buf),
            Command::Write { offset, data, .. } => self.0.write(offset, data),
            Command::Trim { offset, len, .. } | Command::WriteZeroes { offset, len, .. } => {
                self.0.zero(offset, len)
            }
            Command::Flush => self.0.sync(),
        };
        r.map_err(|_| ftlab_nbd::errno::ENOSPC)
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
