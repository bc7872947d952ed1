//! Trace statistics (see `ftlab trace stats`).
