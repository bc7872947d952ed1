//! ftlab: a trace-driven simulator of NAND flash translation layers and write buffers.
//!
//! This crate holds the scheme [`registry`], the run [`config`] and the [`run`]
//! orchestration; the `ftlab` binary is a thin command line over them.

#![warn(missing_docs)]

pub mod config;
pub mod fuzzing;
pub mod powerloss;
pub mod registry;
pub mod reproduce;
pub mod run;
pub mod swarm;
pub mod testkit;
