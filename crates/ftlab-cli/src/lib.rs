//! The parts of the `ftlab` command line that tests reach directly: `reproduce`, which
//! reruns the papers' evaluations from experiment files, and `bench`, which measures
//! simulation speed. Everything it simulates goes
//! through the `ftlab` library.

#![warn(missing_docs)]

pub mod bench;
pub mod reproduce;
