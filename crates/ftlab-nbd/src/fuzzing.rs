//! Entry points shared by the cargo-fuzz target `nbd` (`fuzz/`) and the proptest fuzz
//! tests (`tests/fuzz.rs`): a whole session (handshake, then transmission) over a
//! connection whose client sent some bytes and closed, against an in-memory store.
//! A garbled session may end in an error; it must never panic.

use crate::handshake::Negotiated;
use crate::store::Store;
use crate::{handshake, serve, Command, Device, Export};
use std::io::{self, Cursor, Read, Write};

/// A connection whose client side sent `input` and then closed; what the server
/// writes is kept in `output`.
pub struct Wire {
    /// The client's bytes.
    pub input: Cursor<Vec<u8>>,
    /// The server's bytes.
    pub output: Vec<u8>,
}

impl Wire {
    /// A connection on which the client sent `input`.
    pub fn new(input: Vec<u8>) -> Wire {
        Wire {
            input: Cursor::new(input),
            output: Vec::new(),
        }
    }
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

/// A device that is only a store: what the protocol layer lets through lands there.
pub struct StoreDevice(pub Store);

impl Device for StoreDevice {
    fn handle(&mut self, cmd: Command<'_>) -> Result<(), u32> {
        let r = match cmd {
            Command::Read { offset, buf } => self.0.read(offset, buf),
            Command::Write { offset, data, .. } => self.0.write(offset, data),
            Command::Trim { offset, len, .. } | Command::WriteZeroes { offset, len, .. } => {
                self.0.zero(offset, len)
            }
            Command::Flush => self.0.sync(),
        };
        r.map_err(|_| crate::errno::ENOSPC)
    }
}

/// Bytes of the export the session fuzzer serves.
pub const SESSION_SIZE: u64 = 256 * 1024;

/// A session on bytes from a fuzzer: the first byte picks the minimum block (1, 512 or
/// 4096), the rest is what the client sent. The handshake runs first; if it reaches the
/// transmission phase, requests are served until the bytes run out. Returns whether
/// it got there.
pub fn session(data: &[u8]) -> bool {
    let Some((&pick, rest)) = data.split_first() else {
        return false;
    };
    let export = Export {
        name: "x".into(),
        description: String::new(),
        size: SESSION_SIZE,
        min_block: [1, 512, 4096][(pick % 3) as usize],
        preferred_block: 4096,
    };
    let mut wire = Wire::new(rest.to_vec());
    if let Ok(Negotiated::Transmission) = handshake(&mut wire, &export) {
        let mut dev = StoreDevice(Store::memory(SESSION_SIZE, SESSION_SIZE));
        let _ = serve(&mut wire, &export, &mut dev);
        return true;
    }
    false
}
