//! The fixed-newstyle handshake (proto.md "Newstyle negotiation", "Option types",
//! "Option reply types"), server side.
//!
//! The server greets with `NBDMAGIC`, `IHAVEOPT` and the handshake flags
//! `NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES`; the client answers with its flags;
//! then options follow until `NBD_OPT_GO` or `NBD_OPT_EXPORT_NAME` enters transmission,
//! or `NBD_OPT_ABORT` (or the client closing) ends the connection.
//!
//! Choices: the client must set `NBD_FLAG_C_FIXED_NEWSTYLE` (a client that does not is
//! refused: without it an unknown option cannot be answered safely); unknown client
//! flags close the connection, as the protocol requires; option data over 64 KiB
//! closes it too (no option of this server needs a tenth of that); a malformed option
//! (lengths that do not add up) gets `NBD_REP_ERR_INVALID` and the handshake goes on.

use crate::{read_u16, REPLY_MAGIC};
use crate::{read_u32, read_u64, ProtoError, IHAVEOPT, MAX_PAYLOAD, NBDMAGIC};
use std::io::{Read, Write};

const FLAG_FIXED_NEWSTYLE: u16 = 1;
const FLAG_NO_ZEROES: u16 = 2;
const CLIENT_FLAGS_KNOWN: u32 = 1 | 2;

const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_LIST: u32 = 3;
const OPT_STARTTLS: u32 = 5;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;

const REP_ACK: u32 = 1;
const REP_SERVER: u32 = 2;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
const REP_ERR_POLICY: u32 = (1 << 31) + 2;
const REP_ERR_INVALID: u32 = (1 << 31) + 3;
const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;

const INFO_EXPORT: u16 = 0;
const INFO_NAME: u16 = 1;
const INFO_DESCRIPTION: u16 = 2;
const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flags: `NBD_FLAG_HAS_FLAGS`, `SEND_FLUSH`, `SEND_FUA`, `SEND_TRIM`,
/// `SEND_WRITE_ZEROES`. Not `CAN_MULTI_CONN`: clients are served one at a time.
pub const TRANSMISSION_FLAGS: u16 = 1 | 4 | 8 | 32 | 64;

/// Longest option data accepted before the connection is closed.
pub const MAX_OPTION_LEN: u32 = 64 * 1024;

/// The one export a server offers.
#[derive(Clone, Debug)]
pub struct Export {
    /// Its name (the empty name selects it too).
    pub name: String,
    /// A line for humans (`NBD_OPT_LIST`, `NBD_INFO_DESCRIPTION`).
    pub description: String,
    /// Size in bytes (a multiple of `min_block`).
    pub size: u64,
    /// Minimum block size: every request's offset and length are multiples of it (a
    /// power of two, at most 65536; 1 accepts any request).
    pub min_block: u32,
    /// Preferred block size (a power of two, at least `min_block` and 512).
    pub preferred_block: u32,
}

impl Export {
    fn matches(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.name.as_bytes()
    }
}

/// How a handshake ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Negotiated {
    /// The client chose the export: transmission starts.
    Transmission,
    /// The client aborted (`NBD_OPT_ABORT`) or asked for an unknown export with
    /// `NBD_OPT_EXPORT_NAME`; the connection is to be closed.
    Closed,
}

fn reply(s: &mut impl Write, opt: u32, kind: u32, data: &[u8]) -> std::io::Result<()> {
    let mut m = Vec::with_capacity(20 + data.len());
    m.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&kind.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    s.write_all(&m)
}

fn err_reply(s: &mut impl Write, opt: u32, kind: u32, why: &str) -> std::io::Result<()> {
    reply(s, opt, kind, why.as_bytes())
}

/// Runs the handshake on `s` for `export`. `Ok(Transmission)`: the transmission phase
/// starts next on the same stream. `Err`: the client broke the protocol or left; close.
pub fn handshake<S: Read + Write>(s: &mut S, export: &Export) -> Result<Negotiated, ProtoError> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    s.flush()?;
    let client = read_u32(s)?;
    if client & !CLIENT_FLAGS_KNOWN != 0 {
        return Err(ProtoError::Protocol(format!(
            "unknown client flags {client:#x}"
        )));
    }
    if client & 1 == 0 {
        return Err(ProtoError::Protocol(
            "the client does not speak fixed newstyle (NBD_FLAG_C_FIXED_NEWSTYLE unset)".into(),
        ));
    }
    let no_zeroes = client & 2 != 0;
    loop {
        let magic = read_u64(s)?;
        if magic != IHAVEOPT {
            return Err(ProtoError::Protocol(format!(
                "option magic {magic:#x}, expected IHAVEOPT"
            )));
        }
        let opt = read_u32(s)?;
        let len = read_u32(s)?;
        if len > MAX_OPTION_LEN {
            return Err(ProtoError::Protocol(format!(
                "option {opt} carries {len} bytes of data (at most {MAX_OPTION_LEN})"
            )));
        }
        let mut data = vec![0; len as usize];
        s.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                if !export.matches(&data) {
                    // No way to say so: the protocol prescribes closing.
                    return Ok(Negotiated::Closed);
                }
                let mut m = Vec::with_capacity(134);
                m.extend_from_slice(&export.size.to_be_bytes());
                m.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                if !no_zeroes {
                    m.extend_from_slice(&[0; 124]);
                }
                s.write_all(&m)?;
                s.flush()?;
                return Ok(Negotiated::Transmission);
            }
            OPT_ABORT => {
                // Best effort: the client may already have closed.
                let _ = reply(s, opt, REP_ACK, &[]).and_then(|()| s.flush());
                return Ok(Negotiated::Closed);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    err_reply(s, opt, REP_ERR_INVALID, "NBD_OPT_LIST takes no data")?;
                } else {
                    let name = export.name.as_bytes();
                    let mut d = Vec::with_capacity(4 + name.len() + export.description.len());
                    d.extend_from_slice(&(name.len() as u32).to_be_bytes());
                    d.extend_from_slice(name);
                    d.extend_from_slice(export.description.as_bytes());
                    reply(s, opt, REP_SERVER, &d)?;
                    reply(s, opt, REP_ACK, &[])?;
                }
            }
            OPT_INFO | OPT_GO => {
                if info(s, opt, &data, export)? && opt == OPT_GO {
                    s.flush()?;
                    return Ok(Negotiated::Transmission);
                }
            }
            OPT_STARTTLS => err_reply(s, opt, REP_ERR_POLICY, "this server has no TLS")?,
            _ => err_reply(s, opt, REP_ERR_UNSUP, "option not supported")?,
        }
        s.flush()?;
    }
}

/// Answers `NBD_OPT_INFO`/`NBD_OPT_GO`; `Ok(true)` when it ended with `NBD_REP_ACK`.
fn info(s: &mut impl Write, opt: u32, data: &[u8], export: &Export) -> std::io::Result<bool> {
    let parsed = (|| {
        let name_len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
        let name = data.get(4..4usize.checked_add(name_len)?)?;
        let rest = &data[4 + name_len..];
        let n = u16::from_be_bytes(rest.get(0..2)?.try_into().ok()?) as usize;
        let list = rest.get(2..)?;
        (list.len() == 2 * n).then_some((name, list))
    })();
    let Some((name, _requests)) = parsed else {
        err_reply(s, opt, REP_ERR_INVALID, "malformed NBD_OPT_INFO/GO data")?;
        return Ok(false);
    };
    if !export.matches(name) {
        let why = format!("no export `{}`", String::from_utf8_lossy(name));
        err_reply(s, opt, REP_ERR_UNKNOWN, &why)?;
        return Ok(false);
    }
    let mut e = INFO_EXPORT.to_be_bytes().to_vec();
    e.extend_from_slice(&export.size.to_be_bytes());
    e.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
    reply(s, opt, REP_INFO, &e)?;
    let mut b = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
    b.extend_from_slice(&export.min_block.to_be_bytes());
    b.extend_from_slice(&export.preferred_block.to_be_bytes());
    b.extend_from_slice(&MAX_PAYLOAD.to_be_bytes());
    reply(s, opt, REP_INFO, &b)?;
    let mut n = INFO_NAME.to_be_bytes().to_vec();
    n.extend_from_slice(export.name.as_bytes());
    reply(s, opt, REP_INFO, &n)?;
    let mut d = INFO_DESCRIPTION.to_be_bytes().to_vec();
    d.extend_from_slice(export.description.as_bytes());
    reply(s, opt, REP_INFO, &d)?;
    reply(s, opt, REP_ACK, &[])?;
    Ok(true)
}

/// Reads one option reply (client side, for tests): (option, reply type, data).
#[doc(hidden)]
pub fn read_reply(r: &mut impl Read) -> std::io::Result<(u32, u32, Vec<u8>)> {
    let magic = read_u64(r)?;
    assert_eq!(magic, REPLY_MAGIC, "option reply magic");
    let opt = read_u32(r)?;
    let kind = read_u32(r)?;
    let len = read_u32(r)?;
    let mut d = vec![0; len as usize];
    r.read_exact(&mut d)?;
    Ok((opt, kind, d))
}

/// Reads the server's greeting (client side, for tests): its handshake flags.
#[doc(hidden)]
pub fn read_greeting(r: &mut impl Read) -> std::io::Result<u16> {
    assert_eq!(read_u64(r)?, NBDMAGIC);
    assert_eq!(read_u64(r)?, IHAVEOPT);
    read_u16(r)
}

/// An option as a client sends it (for tests).
#[doc(hidden)]
pub fn option(opt: u32, data: &[u8]) -> Vec<u8> {
    let mut m = IHAVEOPT.to_be_bytes().to_vec();
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    m
}

/// `NBD_OPT_GO` data for `name` asking for the block size (for tests).
#[doc(hidden)]
pub fn go_data(name: &str) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&1u16.to_be_bytes());
    d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;
    use std::thread;

    fn export() -> Export {
        Export {
            name: "disk".into(),
            description: "a test export".into(),
            size: 1 << 20,
            min_block: 512,
            preferred_block: 4096,
        }
    }

    /// Runs the server side on one end of a socket pair, `client` on the other.
    fn with_client<T>(
        client: impl FnOnce(&mut UnixStream) -> T,
    ) -> (Result<Negotiated, String>, T) {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let server = thread::spawn(move || handshake(&mut a, &export()).map_err(|e| e.to_string()));
        let out = client(&mut b);
        drop(b);
        (server.join().unwrap(), out)
    }

    #[test]
    fn go_reports_size_flags_and_block_sizes() {
        let (res, infos) = with_client(|c| {
            assert_eq!(read_greeting(c).unwrap(), 3);
            c.write_all(&3u32.to_be_bytes()).unwrap();
            c.write_all(&option(OPT_GO, &go_data("disk"))).unwrap();
            let mut infos = Vec::new();
            loop {
                let (opt, kind, d) = read_reply(c).unwrap();
                assert_eq!(opt, OPT_GO);
                if kind == REP_ACK {
                    break;
                }
                assert_eq!(kind, REP_INFO);
                infos.push(d);
            }
            infos
        });
        assert_eq!(res.unwrap(), Negotiated::Transmission);
        let exp = infos
            .iter()
            .find(|d| d[..2] == [0, 0])
            .expect("NBD_INFO_EXPORT");
        assert_eq!(u64::from_be_bytes(exp[2..10].try_into().unwrap()), 1 << 20);
        assert_eq!(
            u16::from_be_bytes(exp[10..12].try_into().unwrap()),
            TRANSMISSION_FLAGS
        );
        let bs = infos
            .iter()
            .find(|d| d[..2] == [0, 3])
            .expect("NBD_INFO_BLOCK_SIZE");
        assert_eq!(&bs[2..6], &512u32.to_be_bytes());
        assert_eq!(&bs[6..10], &4096u32.to_be_bytes());
        assert_eq!(&bs[10..14], &MAX_PAYLOAD.to_be_bytes());
    }

    #[test]
    fn list_unknown_option_unknown_export_then_export_name() {
        let (res, tail) = with_client(|c| {
            read_greeting(c).unwrap();
            c.write_all(&1u32.to_be_bytes()).unwrap();
            c.write_all(&option(OPT_LIST, &[])).unwrap();
            let (_, kind, d) = read_reply(c).unwrap();
            assert_eq!(kind, REP_SERVER);
            assert_eq!(&d[4..8], b"disk");
            assert_eq!(read_reply(c).unwrap().1, REP_ACK);
            c.write_all(&option(99, b"xyz")).unwrap();
            assert_eq!(read_reply(c).unwrap().1, REP_ERR_UNSUP);
            c.write_all(&option(OPT_LIST, b"x")).unwrap();
            assert_eq!(read_reply(c).unwrap().1, REP_ERR_INVALID);
            c.write_all(&option(OPT_INFO, &go_data("other"))).unwrap();
            assert_eq!(read_reply(c).unwrap().1, REP_ERR_UNKNOWN);
            c.write_all(&option(OPT_GO, &[0, 0, 0, 9, 1])).unwrap();
            assert_eq!(read_reply(c).unwrap().1, REP_ERR_INVALID);
            c.write_all(&option(OPT_STARTTLS, &[])).unwrap();
            assert_eq!(read_reply(c).unwrap().1, REP_ERR_POLICY);
            // Without NBD_FLAG_C_NO_ZEROES: size, flags and 124 zeroes.
            c.write_all(&option(OPT_EXPORT_NAME, b"")).unwrap();
            let mut tail = [0u8; 134];
            c.read_exact(&mut tail).unwrap();
            tail
        });
        assert_eq!(res.unwrap(), Negotiated::Transmission);
        assert_eq!(u64::from_be_bytes(tail[..8].try_into().unwrap()), 1 << 20);
        assert!(tail[10..].iter().all(|&b| b == 0));
    }

    #[test]
    fn abort_is_acknowledged_and_unknown_export_name_closes() {
        let (res, ()) = with_client(|c| {
            read_greeting(c).unwrap();
            c.write_all(&3u32.to_be_bytes()).unwrap();
            c.write_all(&option(OPT_ABORT, &[])).unwrap();
            assert_eq!(read_reply(c).unwrap().1, REP_ACK);
        });
        assert_eq!(res.unwrap(), Negotiated::Closed);
        let (res, ()) = with_client(|c| {
            read_greeting(c).unwrap();
            c.write_all(&3u32.to_be_bytes()).unwrap();
            c.write_all(&option(OPT_EXPORT_NAME, b"nope")).unwrap();
        });
        assert_eq!(res.unwrap(), Negotiated::Closed);
    }

    #[test]
    fn garbage_and_bad_flags_are_protocol_errors() {
        let (res, ()) = with_client(|c| {
            read_greeting(c).unwrap();
            c.write_all(&(1u32 | 0x80).to_be_bytes()).unwrap();
        });
        assert!(res.unwrap_err().contains("unknown client flags"));
        let (res, ()) = with_client(|c| {
            read_greeting(c).unwrap();
            c.write_all(&0u32.to_be_bytes()).unwrap();
        });
        assert!(res.unwrap_err().contains("fixed newstyle"));
        let (res, ()) = with_client(|c| {
            read_greeting(c).unwrap();
            c.write_all(&1u32.to_be_bytes()).unwrap();
            c.write_all(b"NOTAMAGIC_______________").unwrap();
        });
        assert!(res.unwrap_err().contains("IHAVEOPT"));
        let (res, ()) = with_client(|c| {
            read_greeting(c).unwrap();
            c.write_all(&1u32.to_be_bytes()).unwrap();
            let mut m = option(OPT_GO, &[]);
            m[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
            c.write_all(&m).unwrap();
        });
        assert!(res.unwrap_err().contains("at most"));
        // Leaving half-way through an option: an I/O error, nothing else.
        let (res, ()) = with_client(|c| {
            read_greeting(c).unwrap();
            c.write_all(&1u32.to_be_bytes()).unwrap();
            c.write_all(&option(OPT_GO, &go_data("disk"))[..10])
                .unwrap();
        });
        assert!(res.unwrap_err().starts_with("connection"));
    }
}
