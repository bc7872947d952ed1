//! ftlab's flash-aware write buffers. Each module opens with the paper and section it
//! implements and the choices the paper left open. Buffers are constructed through the
//! registry in the `ftlab` crate; nothing here matches on scheme names.

#![warn(missing_docs)]

pub mod clash;
