//! ftlab's flash translation layers. Each module opens with the paper and section it
//! implements and the choices the paper left open. Schemes are constructed through the
//! registry in the `ftlab` crate; nothing here matches on scheme names.

#![warn(missing_docs)]

pub mod bast;
pub mod block;
pub mod cach;
pub mod fast;
mod logblock;
pub mod page;
