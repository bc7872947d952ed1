//! Why a run could not start, and the exit code each failure maps to.

use ftlab_core::engine::SimError;
use ftlab_core::geometry::GeometryError;
use ftlab_core::options::SchemeError;
use ftlab_workload::TraceError;
use thiserror::Error;

/// Why a run could not start or could not go on: bad configuration or input. A run that
/// goes on to its end, or stops on a correctness failure, returns a
/// [`RunOutput`](crate::RunOutput) instead, whose `failure` says what it found.
#[derive(Debug, Error)]
pub enum RunError {
    /// The configuration could not be loaded.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A setting is invalid; names the key.
    #[error("invalid setting `{key}`{}: {why}", flag_of(key).map_or(String::new(), |f| format!(" ({f})")))]
    Setting {
        /// Config key (and flag).
        key: &'static str,
        /// What is wrong, with the value and what is allowed.
        why: String,
    },
    /// Geometry refused.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// A scheme refused its options or the geometry.
    #[error(transparent)]
    Scheme(#[from] SchemeError),
    /// The trace is unreadable or malformed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The workload kept no record of the trace, or too few (see `max_dropped_share`):
    /// says what the trace holds.
    #[error("{0}")]
    Workload(String),
    /// The simulation stopped on bad input (a request out of range).
    #[error(transparent)]
    Input(SimError),
    /// A panic left nothing to build a report from (a bug in ftlab). Panics during the
    /// run itself come back as [`Failure::Internal`](crate::Failure::Internal) with the
    /// report so far.
    #[error("internal error (a bug in ftlab, please report it), seed {seed}: {message}")]
    Internal {
        /// What panicked.
        message: String,
        /// The run's seed.
        seed: u64,
    },
    /// The observer asked the run to stop ([`Observer::stop_requested`]: Ctrl-C, a
    /// callback that failed); no report is built.
    ///
    /// [`Observer::stop_requested`]: crate::Observer::stop_requested
    #[error("stopped on request after {requests} requests")]
    Cancelled {
        /// Requests submitted before the stop.
        requests: u64,
    },
}

impl RunError {
    /// The exit code of the `ftlab` command for this error: [`exit::FAILED`] for an
    /// internal error, [`exit::INTERRUPTED`] for a run stopped on request,
    /// [`exit::USAGE`] for everything else (bad configuration or input).
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Internal { .. } => exit::FAILED,
            RunError::Cancelled { .. } => exit::INTERRUPTED,
            _ => exit::USAGE,
        }
    }
}

/// The command-line flag of a config key, where it has one (for error messages).
pub fn flag_of(key: &str) -> Option<&'static str> {
    Some(match key {
        "format" => "--format",
        "replay" => "--replay",
        "warmup" => "--warmup",
        "capacity" => "--capacity",
        "device_layout" => "--device-layout",
        "devices" => "--device/--asu",
        "window_start_s" => "--window-start",
        "window_end_s" => "--window-end",
        "max_gap_ms" => "--max-gap-ms",
        "time_scale" => "--time-scale",
        "sort_window" => "--sort-window",
        "flush_every" => "--flush-every",
        "max_dropped_share" => "--max-dropped-share",
        "channel_mib_s" => "--channel-mib-s",
        "queue_depth" => "--queue-depth",
        "queues" => "--queues",
        "suspend" => "--suspend",
        "preempt_gc" => "--preempt-gc",
        "channels" => "--channels",
        "dies" => "--dies",
        "planes" => "--planes",
        "ftl" => "--ftl",
        "buffer" => "--buffer",
        "nand" => "--nand",
        "power_loss" => "--power-loss-at",
        _ => return None,
    })
}

/// An error about config key `key`.
pub fn setting(key: &'static str, why: impl Into<String>) -> RunError {
    RunError::Setting {
        key,
        why: why.into(),
    }
}

/// Exit codes of the `ftlab` command, also what a driver of the library should map
/// results to.
pub mod exit {
    /// The run went through and found nothing wrong.
    pub const CLEAN: u8 = 0;
    /// The run found a violation: data lost, an invariant broken, a recovery that
    /// failed, or an internal error (a panic inside a scheme). The report is still
    /// written where one could be built.
    pub const FAILED: u8 = 1;
    /// Bad usage, configuration or input; nothing was simulated.
    pub const USAGE: u8 = 2;
    /// Stopped on request (Ctrl-C) before the end; no report (128 + SIGINT, as shells
    /// report it).
    pub const INTERRUPTED: u8 = 130;
}
