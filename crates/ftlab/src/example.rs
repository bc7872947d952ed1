//! `example`: the smallest complete FTL, built only with the `example-scheme` feature
//! (the test build turns it on), to show that a new scheme is one file plus one registry
//! entry: the conformance suite, the power-loss suite and the swarm run it with no new
//! test code (docs/adding-a-scheme.md walks through it).
//!
//! Source: none; it is page mapping reduced to its core (tpm.txt §II describes the
//! ideal). One L2P entry per logical page, one write frontier, greedy GC by a linear scan
//! of the blocks (O(blocks) per collection: fine for a teaching example, not for 1 TiB).
//! It keeps no checkpoint and does not implement recovery, and its registry entry says
//! so, so runs with power losses are refused before they start.
//!
//! It repeats a few lines of `page` (the write and read paths) on purpose: an example a
//! reader follows from top to bottom should not send them into another crate.
//!
//! Two fault options exist to test the harness itself, off by default: `lose_writes_after`
//! silently drops every host write after the N-th (the oracle must catch it, and `ftlab
//! run` must exit 1), and `panic_after` panics at the N-th host write (the run boundary
//! must catch it and report an internal error, exit 1).

use ftlab_core::flash::{Cause, Flash};
use ftlab_core::ftl::{Ftl, FtlStats};
use ftlab_core::geometry::Geometry;
use ftlab_core::options::{geometry_error, JsonSchema, SchemeError};
use ftlab_core::{Lpn, PageTag, PageWrite, Pbn, Ppn};
use serde::{Deserialize, Serialize};

/// Registry id.
pub const ID: &str = "example";

/// Options of the `example` FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ExampleOptions {
    /// GC runs while fewer than this many blocks are free.
    #[schemars(range(min = 1, max = 64))]
    pub gc_threshold: u32,
    /// Fault injection for harness tests: drop every host write after this many.
    pub lose_writes_after: Option<u64>,
    /// Fault injection for harness tests: panic at this host write.
    pub panic_after: Option<u64>,
}

impl Default for ExampleOptions {
    fn default() -> Self {
        ExampleOptions {
            gc_threshold: 2,
            lose_writes_after: None,
            panic_after: None,
        }
    }
}

const UNMAPPED: u32 = u32::MAX;

/// The example FTL.
pub struct ExampleFtl {
    geo: Geometry,
    opts: ExampleOptions,
    l2p: Vec<u32>,
    free: Vec<Pbn>,
    active: Pbn,
    writes: u64,
    stats: FtlStats,
}

impl ExampleFtl {
    /// Builds the FTL for `geo`.
    pub fn new(geo: &Geometry, opts: &ExampleOptions) -> Result<ExampleFtl, SchemeError> {
        let needed = geo.logical_blocks() + opts.gc_threshold + 1;
        if geo.blocks < needed {
            return Err(geometry_error(
                ID,
                format!(
                    "needs at least {needed} physical blocks (logical blocks + gc_threshold \
                     + 1) but the geometry has {}; raise --op",
                    geo.blocks
                ),
            ));
        }
        let mut free: Vec<Pbn> = (0..geo.blocks).rev().map(Pbn).collect();
        let active = free.pop().expect("geometry has blocks");
        Ok(ExampleFtl {
            geo: geo.clone(),
            opts: opts.clone(),
            l2p: vec![UNMAPPED; geo.logical_pages as usize],
            free,
            active,
            writes: 0,
            stats: FtlStats::default(),
        })
    }

    fn frontier(&mut self, flash: &mut Flash, in_gc: bool) -> Ppn {
        while flash.is_full(self.active) {
            self.active = self.free.pop().expect("example: GC reserve broken");
            if !in_gc {
                self.collect(flash);
            }
        }
        self.geo.ppn(self.active, flash.write_ptr(self.active))
    }

    fn collect(&mut self, flash: &mut Flash) {
        while (self.free.len() as u32) < self.opts.gc_threshold {
            let victim = (0..self.geo.blocks)
                .map(Pbn)
                .filter(|&b| b != self.active && flash.is_full(b))
                .min_by_key(|&b| flash.valid_count(b))
                .expect("example: no full block to collect");
            assert!(
                flash.valid_count(victim) < self.geo.pages_per_block,
                "example: GC victim {victim:?} is fully valid; no progress possible"
            );
            for off in 0..self.geo.pages_per_block {
                let src = self.geo.ppn(victim, off);
                if flash.is_valid(src) {
                    let dst = self.frontier(flash, true);
                    let tag = flash.copy(src, dst, Cause::Gc);
                    flash.invalidate(src);
                    self.l2p[tag.lpn.idx()] = dst.0;
                    self.stats.gc_pages_copied += 1;
                }
            }
            flash.erase(victim, Cause::Gc);
            self.free.insert(0, victim);
            self.stats.gc_invocations += 1;
        }
    }

    fn unmap(&mut self, flash: &mut Flash, lpn: Lpn) {
        let old = std::mem::replace(&mut self.l2p[lpn.idx()], UNMAPPED);
        if old != UNMAPPED {
            flash.invalidate(Ppn(old));
        }
    }
}

impl Ftl for ExampleFtl {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        for &tag in pages {
            self.writes += 1;
            if self.opts.panic_after == Some(self.writes) {
                panic!("example: panic_after = {} reached", self.writes);
            }
            if self.opts.lose_writes_after.is_some_and(|n| self.writes > n) {
                continue;
            }
            // From here on, and in `read` and `trim`, the example is `page`'s code on
            // purpose: docs/adding-a-scheme.md shows a whole scheme in one file.
            self.unmap(flash, tag.lpn);
            let ppn = self.frontier(flash, false);
            flash.program(ppn, tag, Cause::Host);
            self.l2p[tag.lpn.idx()] = ppn.0;
        }
    }

    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        let ppn = self.l2p[lpn.idx()];
        (ppn != UNMAPPED).then(|| flash.read(Ppn(ppn), Cause::Host))
    }

    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.unmap(flash, lpn);
    }

    fn recovers(&self) -> bool {
        false
    }

    fn check(&self, flash: &Flash) -> Result<(), String> {
        let mapped = self.l2p.iter().filter(|&&p| p != UNMAPPED).count() as u64;
        if mapped != flash.total_valid() {
            return Err(format!(
                "{mapped} mapped pages but {} valid on flash",
                flash.total_valid()
            ));
        }
        Ok(())
    }

    fn stats(&self) -> FtlStats {
        self.stats.clone()
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
    }

    fn mapping_bytes(&self) -> u64 {
        4 * self.l2p.len() as u64
    }
}
