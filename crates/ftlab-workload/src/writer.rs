//! Trace writers.
