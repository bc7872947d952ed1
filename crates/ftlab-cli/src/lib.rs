//! The parts of the `ftlab` command line that tests reach directly: `reproduce`, which
//! reruns the papers' evaluations from experiment files, `sweep`, which runs a
//! parameter study and writes its table, `plot`, which charts that table, `bench`, which
//! measures simulation speed, `qd_curve`, closed-loop IOPS and p99 against queue depth,
//! and `visual`: the progress bar, timeline CSV, HTML report and `compare`; and `serve`,
//! a simulated SSD as a live NBD block device. Everything it simulates goes
//! through the `ftlab` library.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod bench;
pub mod plot;
pub mod qd_curve;
pub mod reproduce;
pub mod serve;
pub mod sweep;
pub mod visual;
