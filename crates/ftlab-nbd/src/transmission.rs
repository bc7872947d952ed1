//! The transmission phase with simple replies (proto.md "Transmission", "Request
//! types", "Error values"), server side: requests are read, checked against the
//! export's size and block constraints, handed to a [`Device`] one at a time, and
//! answered in order.
//!
//! Checks before the device sees a request (the device never gets a bad one):
//! - length 0: success, nothing done (the protocol leaves it unspecified);
//! - `offset` or `length` not a multiple of the export's minimum block: `NBD_EINVAL`;
//! - past the end of the export: `NBD_ENOSPC` for a write or write-zeroes, `NBD_EINVAL`
//!   for a read or a trim;
//! - a read longer than [`MAX_PAYLOAD`]: `NBD_EINVAL`; a write longer: the connection is
//!   closed (its payload would have to be swallowed; the protocol allows a hard
//!   disconnect);
//! - an unknown or unadvertised command: `NBD_EINVAL`; a wrong request magic: closed.
//!
//! A write's payload is read in full before the device sees it, so a client that leaves
//! in the middle of a request leaves the store as it was.

use crate::{errno, read_u16, read_u32, read_u64, Export, ProtoError, MAX_PAYLOAD};
use crate::{REQUEST_MAGIC, SIMPLE_REPLY_MAGIC};
use std::io::{Read, Write};

const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_DISC: u16 = 2;
const CMD_FLUSH: u16 = 3;
const CMD_TRIM: u16 = 4;
const CMD_WRITE_ZEROES: u16 = 6;

const FLAG_FUA: u16 = 1;

/// One checked request for the device.
#[derive(Debug)]
pub enum Command<'a> {
    /// Fill `buf` from `offset`.
    Read {
        /// Byte offset.
        offset: u64,
        /// Where the data goes.
        buf: &'a mut [u8],
    },
    /// Write `data` at `offset`; `fua`: durable before the reply.
    Write {
        /// Byte offset.
        offset: u64,
        /// The payload.
        data: &'a [u8],
        /// Force unit access.
        fua: bool,
    },
    /// Make every completed write durable.
    Flush,
    /// Discard `len` bytes at `offset`.
    Trim {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Force unit access.
        fua: bool,
    },
    /// Write `len` zero bytes at `offset`.
    WriteZeroes {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Force unit access.
        fua: bool,
    },
}

/// What serves the checked requests: `Err(errno)` is sent to the client as the reply's
/// error (one of [`errno`]).
pub trait Device {
    /// Performs one request.
    fn handle(&mut self, cmd: Command<'_>) -> Result<(), u32>;
}

/// How a transmission phase ended (without a protocol violation).
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The client sent `NBD_CMD_DISC`.
    Disconnect,
    /// The client closed the connection between two requests.
    Closed,
}

fn simple_reply(s: &mut impl Write, error: u32, cookie: u64, data: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 16];
    head[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    head[4..8].copy_from_slice(&error.to_be_bytes());
    head[8..].copy_from_slice(&cookie.to_be_bytes());
    s.write_all(&head)?;
    s.write_all(data)?;
    s.flush()
}

/// Serves requests on `s` for `export` until the client disconnects.
/// `Err`: the client broke the protocol or vanished mid-request; close the connection.
pub fn serve<S: Read + Write, D: Device + ?Sized>(
    s: &mut S,
    export: &Export,
    dev: &mut D,
) -> Result<End, ProtoError> {
    let (size, block) = (export.size, export.min_block.max(1));
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let mut magic = [0u8; 4];
        match s.read_exact(&mut magic) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(End::Closed),
            Err(e) => return Err(e.into()),
        }
        let magic = u32::from_be_bytes(magic);
        if magic != REQUEST_MAGIC {
            return Err(ProtoError::Protocol(format!(
                "request magic {magic:#x}, expected {REQUEST_MAGIC:#x}"
            )));
        }
        let flags = read_u16(s)?;
        let kind = read_u16(s)?;
        let cookie = read_u64(s)?;
        let offset = read_u64(s)?;
        let len = read_u32(s)?;
        let fua = flags & FLAG_FUA != 0;
        if kind == CMD_WRITE && len > MAX_PAYLOAD {
            return Err(ProtoError::Protocol(format!(
                "a write of {len} bytes, over the maximum payload of {MAX_PAYLOAD}"
            )));
        }
        if kind == CMD_WRITE {
            buf.resize(len as usize, 0);
            s.read_exact(&mut buf)?;
        }
        let end = offset.checked_add(len as u64);
        let aligned = offset % block as u64 == 0 && len % block == 0;
        let inside = end.is_some_and(|e| e <= size);
        let check = |past_end: u32| -> Result<(), u32> {
            if !aligned {
                Err(errno::EINVAL)
            } else if !inside {
                Err(past_end)
            } else {
                Ok(())
            }
        };
        let l = len as u64;
        let result = match kind {
            CMD_DISC => return Ok(End::Disconnect),
            CMD_READ if len > MAX_PAYLOAD => Err(errno::EINVAL),
            CMD_READ => check(errno::EINVAL).and_then(|()| {
                buf.resize(len as usize, 0);
                if len == 0 {
                    return Ok(());
                }
                dev.handle(Command::Read {
                    offset,
                    buf: &mut buf,
                })
            }),
            CMD_WRITE => check(errno::ENOSPC).and_then(|()| {
                if len == 0 {
                    return Ok(());
                }
                dev.handle(Command::Write {
                    offset,
                    data: &buf,
                    fua,
                })
            }),
            CMD_FLUSH => dev.handle(Command::Flush),
            CMD_TRIM => check(errno::EINVAL).and_then(|()| {
                if len == 0 {
                    return Ok(());
                }
                dev.handle(Command::Trim {
                    offset,
                    len: l,
                    fua,
                })
            }),
            CMD_WRITE_ZEROES => check(errno::ENOSPC).and_then(|()| {
                if len == 0 {
                    return Ok(());
                }
                dev.handle(Command::WriteZeroes {
                    offset,
                    len: l,
                    fua,
                })
            }),
            _ => Err(errno::EINVAL),
        };
        match result {
            Ok(()) if kind == CMD_READ => simple_reply(s, 0, cookie, &buf)?,
            Ok(()) => simple_reply(s, 0, cookie, &[])?,
            Err(e) => simple_reply(s, e, cookie, &[])?,
        }
    }
}

/// A request as a client sends it (for tests).
#[doc(hidden)]
pub fn request(flags: u16, kind: u16, cookie: u64, offset: u64, len: u32) -> Vec<u8> {
    let mut m = REQUEST_MAGIC.to_be_bytes().to_vec();
    m.extend_from_slice(&flags.to_be_bytes());
    m.extend_from_slice(&kind.to_be_bytes());
    m.extend_from_slice(&cookie.to_be_bytes());
    m.extend_from_slice(&offset.to_be_bytes());
    m.extend_from_slice(&len.to_be_bytes());
    m
}

/// Reads a simple reply's header (client side, for tests): (error, cookie).
#[doc(hidden)]
pub fn read_simple_reply(r: &mut impl Read) -> std::io::Result<(u32, u64)> {
    let magic = read_u32(r)?;
    assert_eq!(magic, SIMPLE_REPLY_MAGIC, "simple reply magic");
    Ok((read_u32(r)?, read_u64(r)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use std::os::unix::net::UnixStream;
    use std::thread;

    /// The real store as a device, with a log of what reached it.
    struct StoreDevice {
        store: Store,
        seen: Vec<String>,
    }

    impl Device for StoreDevice {
        fn handle(&mut self, cmd: Command<'_>) -> Result<(), u32> {
            self.seen
                .push(format!("{cmd:?}").chars().take(40).collect());
            let r = match cmd {
                Command::Read { offset, buf } => self.store.read(offset, buf),
                Command::Write { offset, data, .. } => self.store.write(offset, data),
                Command::Trim { offset, len, .. } | Command::WriteZeroes { offset, len, .. } => {
                    self.store.zero(offset, len)
                }
                Command::Flush => self.store.sync(),
            };
            r.map_err(|_| errno::ENOSPC)
        }
    }

    const SIZE: u64 = 1 << 20;

    fn session(client: impl FnOnce(&mut UnixStream)) -> (Result<End, String>, StoreDevice) {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let server = thread::spawn(move || {
            let mut dev = StoreDevice {
                store: Store::memory(SIZE, 4 * crate::store::CHUNK),
                seen: Vec::new(),
            };
            let export = Export {
                name: String::new(),
                description: String::new(),
                size: SIZE,
                min_block: 512,
                preferred_block: 4096,
            };
            let r = serve(&mut a, &export, &mut dev).map_err(|e| e.to_string());
            (r, dev)
        });
        client(&mut b);
        drop(b);
        server.join().unwrap()
    }

    #[test]
    fn write_read_flush_trim_zeroes_disc() {
        let (end, dev) = session(|c| {
            let mut w = request(FLAG_FUA, CMD_WRITE, 1, 4096, 1024);
            w.extend((0..1024).map(|i| (i % 251) as u8));
            c.write_all(&w).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (0, 1));
            c.write_all(&request(0, CMD_READ, 2, 4096, 1024)).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (0, 2));
            let mut back = vec![0; 1024];
            c.read_exact(&mut back).unwrap();
            assert!(back.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            c.write_all(&request(0, CMD_FLUSH, 3, 0, 0)).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (0, 3));
            c.write_all(&request(0, CMD_WRITE_ZEROES, 4, 4096, 512))
                .unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (0, 4));
            c.write_all(&request(0, CMD_TRIM, 5, 0, 8192)).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (0, 5));
            c.write_all(&request(0, CMD_READ, 6, 4096 + 512, 512))
                .unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (0, 6));
            let mut back = vec![1; 512];
            c.read_exact(&mut back).unwrap();
            assert!(
                back.iter().all(|&b| b == 0),
                "trimmed bytes read as zeroes here"
            );
            c.write_all(&request(0, CMD_DISC, 7, 0, 0)).unwrap();
        });
        assert_eq!(end.unwrap(), End::Disconnect);
        assert_eq!(dev.seen.len(), 6);
    }

    #[test]
    fn bad_requests_get_the_prescribed_errors_and_never_reach_the_device() {
        let (end, dev) = session(|c| {
            // Misaligned write: payload swallowed, EINVAL.
            let mut w = request(0, CMD_WRITE, 1, 100, 512);
            w.extend([9u8; 512]);
            c.write_all(&w).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (errno::EINVAL, 1));
            // Write past the end: ENOSPC; read past the end: EINVAL.
            let mut w = request(0, CMD_WRITE, 2, SIZE, 512);
            w.extend([9u8; 512]);
            c.write_all(&w).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (errno::ENOSPC, 2));
            c.write_all(&request(0, CMD_READ, 3, SIZE - 512, 1024))
                .unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (errno::EINVAL, 3));
            // An offset that overflows u64.
            c.write_all(&request(0, CMD_TRIM, 4, u64::MAX - 511, 1024))
                .unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (errno::EINVAL, 4));
            // Oversized read, unknown command, block status.
            c.write_all(&request(0, CMD_READ, 5, 0, MAX_PAYLOAD + 512))
                .unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (errno::EINVAL, 5));
            c.write_all(&request(0, 42, 6, 0, 512)).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (errno::EINVAL, 6));
            // Zero length: fine, nothing done.
            c.write_all(&request(0, CMD_READ, 7, 0, 0)).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (0, 7));
            // Store full: the device's error comes back, the store is unchanged.
            let mut w = request(0, CMD_WRITE, 8, 0, 5 * 65536);
            w.extend(vec![3u8; 5 * 65536]);
            c.write_all(&w).unwrap();
            assert_eq!(read_simple_reply(c).unwrap(), (errno::ENOSPC, 8));
        });
        assert_eq!(end.unwrap(), End::Closed);
        assert_eq!(
            dev.seen.len(),
            1,
            "only the full-store write got through: {:?}",
            dev.seen
        );
        assert_eq!(dev.store.resident(), 0);
    }

    #[test]
    fn oversized_write_or_bad_magic_or_vanishing_closes() {
        let (end, _) = session(|c| {
            c.write_all(&request(0, CMD_WRITE, 1, 0, MAX_PAYLOAD + 512))
                .unwrap();
        });
        assert!(end.unwrap_err().contains("maximum payload"));
        let (end, _) = session(|c| {
            c.write_all(&[0u8; 28]).unwrap();
        });
        assert!(end.unwrap_err().contains("request magic"));
        // Leaves half-way through a write's payload: nothing reaches the store.
        let (end, dev) = session(|c| {
            let mut w = request(0, CMD_WRITE, 1, 0, 4096);
            w.extend([5u8; 1000]);
            c.write_all(&w).unwrap();
        });
        assert!(end.unwrap_err().starts_with("connection"));
        assert!(dev.seen.is_empty());
        assert_eq!(dev.store.resident(), 0);
    }
}
