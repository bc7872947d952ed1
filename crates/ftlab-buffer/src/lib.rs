//! ftlab's flash-aware write buffers, placed between the host and any FTL. Each module
//! opens with the paper and section it implements and the choices the paper left open.
//! Buffers are constructed through the registry in the `ftlab` crate; nothing here
//! matches on scheme names.

#![warn(missing_docs)]

pub mod bagc;
pub mod blocklru;
pub mod bplru;
pub mod bpref;
pub mod clash;
pub mod coop;
pub mod costmodel;
pub mod fab;
pub mod lru;
