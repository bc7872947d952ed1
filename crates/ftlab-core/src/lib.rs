//! ftlab core: units, geometry, NAND presets, the `Flash` model, timing, the engine,
//! the oracle and host metrics, and the data structures schemes share ([`lru`] lists,
//! the [`u32map`] map, the [`victim`] index, the [`wear`] heap). FTLs and buffers plug in through the
//! [`ftl::Ftl`] and [`buffer::Buffer`] traits; see `docs/design.md` for how the pieces
//! fit.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod bitsets;
pub mod buffer;
pub mod engine;
pub mod flash;
pub mod ftl;
pub mod geometry;
pub mod lru;
pub mod metrics;
pub mod nand;
pub mod options;
pub mod oracle;
pub mod prefetch;
pub mod request;
pub mod rng;
pub mod stats;
pub mod timing;
pub mod u32map;
pub mod units;
pub mod victim;
pub mod wear;

pub use units::{Lbn, Lpn, Nanos, PageTag, PageWrite, Pbn, Ppn};
