//! The Network Block Device protocol, server side, as `ftlab serve` speaks it, and the
//! sparse store that holds an export's bytes.
//!
//! Implements, from the NBD protocol document (github.com/NetworkBlockDevice/nbd,
//! `doc/proto.md`):
//! - [`handshake()`]: the fixed-newstyle handshake ("Newstyle negotiation", "Option
//!   types", "Option reply types"): `NBD_OPT_EXPORT_NAME`, `NBD_OPT_ABORT`,
//!   `NBD_OPT_LIST`, `NBD_OPT_INFO`, `NBD_OPT_GO` with `NBD_INFO_EXPORT`,
//!   `NBD_INFO_NAME`, `NBD_INFO_DESCRIPTION` and `NBD_INFO_BLOCK_SIZE`;
//! - [`serve()`] ([`transmission`]): the transmission phase with simple replies ("Transmission",
//!   "Request types", "Error values"): `NBD_CMD_READ`, `WRITE`, `DISC`, `FLUSH`,
//!   `TRIM`, `WRITE_ZEROES`, with `NBD_CMD_FLAG_FUA`;
//! - [`store`]: where the payloads live (memory up to a limit, or a file).
//!
//! Choices the protocol leaves open, and the ones made here:
//! - No TLS, no structured replies, no metadata contexts, no extended headers: each of
//!   those options is answered `NBD_REP_ERR_UNSUP` (`NBD_OPT_STARTTLS` gets
//!   `NBD_REP_ERR_POLICY`), which every client handles by falling back.
//! - One export. Its name is the server's choice; the empty name selects it too (the
//!   default export).
//! - Size constraints: minimum block the caller's ([`MIN_BLOCK`], 512, unless it
//!   chooses otherwise; 1 accepts any alignment), preferred block the caller's (the
//!   flash page size), maximum payload 32 MiB (2^25, the size no client may treat as an
//!   attack). They are sent in every `NBD_OPT_INFO`/`NBD_OPT_GO` reply, asked for or
//!   not, and enforced on every request with `NBD_EINVAL` (misaligned, past the end,
//!   a read over the maximum) or `NBD_ENOSPC` (a write past the end), as the
//!   protocol's "Error values" section prescribes; the device never sees such a request.
//! - A write longer than the maximum payload closes the connection (its payload cannot
//!   be skipped safely; the protocol allows a hard disconnect); so does anything that is
//!   not a request (a wrong magic), an option longer than 64 KiB, and a client flag the
//!   server does not know.
//! - Zero-length reads, writes, trims and write-zeroes (behaviour unspecified by the
//!   protocol) succeed without reaching the device.
//! - Commands this server does not advertise (`NBD_CMD_CACHE`, `BLOCK_STATUS`,
//!   `RESIZE`, unknown ones) get `NBD_EINVAL`.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod fuzzing;
pub mod handshake;
pub mod store;
pub mod transmission;

pub use handshake::{handshake, Export, Negotiated};
pub use store::{Store, StoreError};
pub use transmission::{serve, Command, Device, End};

use std::io;

/// `NBDMAGIC`: the first 8 bytes the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: the newstyle magic, and the magic of every option the client sends.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// The magic of an option reply.
pub const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// The magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// The magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// The minimum block size `ftlab serve` advertises unless told otherwise: the sector
/// size of a disk.
pub const MIN_BLOCK: u32 = 512;
/// The largest payload of a read or a write.
pub const MAX_PAYLOAD: u32 = 1 << 25;

/// Error values of the transmission phase ("Error values").
pub mod errno {
    /// Operation not permitted.
    pub const EPERM: u32 = 1;
    /// Input/output error.
    pub const EIO: u32 = 5;
    /// Cannot allocate memory.
    pub const ENOMEM: u32 = 12;
    /// Invalid argument.
    pub const EINVAL: u32 = 22;
    /// No space left on device.
    pub const ENOSPC: u32 = 28;
    /// Value too large.
    pub const EOVERFLOW: u32 = 75;
    /// Operation not supported.
    pub const ENOTSUP: u32 = 95;
    /// Server is shutting down.
    pub const ESHUTDOWN: u32 = 108;
}

/// Why a connection ended other than by the client's choice.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The socket failed, or the client closed it in the middle of a message.
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    /// The client broke the protocol; the connection is closed.
    #[error("protocol violation: {0}")]
    Protocol(String),
}

pub(crate) fn read_u16(r: &mut impl io::Read) -> io::Result<u16> {
    let mut b = [0; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

pub(crate) fn read_u32(r: &mut impl io::Read) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

pub(crate) fn read_u64(r: &mut impl io::Read) -> io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}
