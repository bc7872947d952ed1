//! ftlab: a trace-driven simulator of NAND flash translation layers and write buffers,
//! as a library.
//!
//! ```no_run
//! use ftlab::{Config, NoObserver, Simulation, Workload};
//!
//! let mut cfg = Config::default();
//! cfg.ftl = "dftl".into();
//! cfg.synthetic.count = 10_000;
//! let out = Simulation::new(cfg)?.run(Workload::Configured, &mut NoObserver)?;
//! assert!(out.failure.is_none(), "the oracle found nothing wrong");
//! println!("WAF {:?}", out.report.waf);
//! # Ok::<(), ftlab::RunError>(())
//! ```
//!
//! Modules, each importing only modules above it in this list (no import cycles):
//! - [`timeline`]: the per-interval timeline a run records when asked;
//! - [`registry`]: every FTL, buffer and timing model, their options and capabilities;
//! - [`config`]: the one typed [`Config`], loaded in layers from TOML, `--set` and flags,
//!   and its JSON Schema (which includes every scheme's options from the registry);
//! - [`error`]: why a run cannot start, and the exit codes;
//! - [`source`]: the workload a configuration names, through its transforms;
//! - [`powerloss`]: when power losses strike;
//! - [`memory`]: the memory a run's tables need, and the refusal of one that does not
//!   fit;
//! - [`notices`]: what a finished run warns about (dirty pages, unmapped reads, load);
//! - [`sim`]: [`Simulation`], the [`Observer`] hook and the report;
//! - [`sweep`]: parameter studies, a grid of runs on every core and their tidy table;
//! - [`testkit`], [`swarm`], [`fuzzing`]: the conformance profiles, swarm testing and
//!   the fuzz entry points, built on the above.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod config;
pub mod error;
#[cfg(feature = "example-scheme")]
pub mod example;
pub mod fuzzing;
pub mod memory;
pub mod notices;
pub mod powerloss;
pub mod readahead;
pub mod registry;
pub mod sim;
pub mod source;
pub mod swarm;
pub mod sweep;
pub mod testkit;
pub mod timeline;

pub use config::Config;
pub use error::RunError;
pub use ftlab_report::Report;
pub use sim::{run, Failure, NoObserver, Observer, Progress, RunOutput, Simulation, Workload};
