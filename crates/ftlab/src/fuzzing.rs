//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the tests that replay
//! their corpora. Bad input may be refused with an error; it must never panic.

use crate::config::parse_str;
use crate::sim::{device_geometry, prepare};

/// Largest device (physical pages) the config target builds an engine for, so fuzzing
/// exercises scheme construction without allocating gigabytes.
const MAX_PAGES: u64 = 1 << 16;

/// Parses `data` as a config file; if it is valid and small, resolves it into an
/// engine (geometry, schemes, options, workload checks). Returns whether it was valid.
pub fn config_bytes(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(cfg) = parse_str(text, "fuzz.toml") else {
        return false;
    };
    resolves_small(&cfg)
}

/// Whether `cfg`, if it names no trace and its device is small, resolves into an engine.
fn resolves_small(cfg: &crate::config::Config) -> bool {
    let Ok(geo) = device_geometry(cfg) else {
        return false;
    };
    if geo.physical_pages() as u64 > MAX_PAGES || cfg.trace.is_some() {
        return false;
    }
    prepare(cfg).is_ok()
}

/// Applies each line of `data` (at most 16) as a `--set KEY=VALUE` over the defaults,
/// as the CLI and the Python package do; if the result loads, names no trace and is
/// small, resolves it into an engine. Returns whether it was valid.
pub fn set_bytes(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let sets: Vec<String> = text.lines().take(16).map(String::from).collect();
    let Ok(cfg) = crate::config::load(None, &sets, &[]) else {
        return false;
    };
    resolves_small(&cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_configs_do_not_panic() {
        let inputs: &[&str] = &[
            "",
            "capacity = \"1KiB\"",
            "capacity = \"64KiB\"\nop = 1e308",
            "capacity = \"64KiB\"\nnand_params.pages_per_block = 0",
            "capacity = \"64KiB\"\nnand_params.page_size = 4294967295",
            "capacity = \"18446744073709551615\"",
            "capacity = \"64KiB\"\nop = 50\n[ftl_options]\ngc_threshold = -1",
            "capacity = \"64KiB\"\nop = 50\nsynthetic.count = 0",
            "capacity = \"256KiB\"\nop = 50\nftl = \"fast\"\n[ftl_options]\nsw_logs = 1000",
            "capacity = \"256KiB\"\nop = 50\nbuffer = \"clash\"\n[buffer_options]\np_space_pages = 0",
        ];
        let valid = inputs.iter().filter(|t| config_bytes(t.as_bytes())).count();
        assert!(valid < inputs.len());
        assert!(config_bytes(b"capacity = \"1MiB\"\nop = 50\n"));
    }

    #[test]
    fn odd_sets_do_not_panic() {
        let inputs: &[&str] = &[
            "",
            "=",
            "capacity",
            "capacity=",
            "capacity=\"1MiB\"\nop=50",
            "capacity=\"1MiB\"\nop=-5",
            "capacity=\"1MiB\"\nop=50\nftl=\"nope\"",
            "capacity=\"1MiB\"\nop=50\nsynthetic.count=\"x\"",
            "capacity=\"1MiB\"\nop=50\nftl_options.gc_threshold=99999999999",
            "capacity=\"1MiB\"\nop=50\nbuffer=\"coop\"\nftl=\"fast\"",
            "capacity=\"1MiB\"\nop=50\nnand_params.pages_per_block=3",
            "a.b.c.d=1",
            "seed=\"18446744073709551615\"",
        ];
        let valid = inputs.iter().filter(|t| set_bytes(t.as_bytes())).count();
        assert!(valid > 0 && valid < inputs.len(), "{valid} valid");
        assert!(set_bytes(b"capacity=\"1MiB\"\nop=50"));
    }
}
