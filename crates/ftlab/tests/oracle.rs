//! The oracle catches FTLs that lose data: a deliberately faulty FTL must fail.

use ftlab::testkit::{config, exercise, PROFILES};
use ftlab_core::buffer::Passthrough;
use ftlab_core::engine::{Engine, EngineConfig, SimError, Verify};
use ftlab_core::flash::Flash;
use ftlab_core::ftl::{Ftl, FtlStats};
use ftlab_core::geometry::Geometry;
use ftlab_core::options::SchemeOptions;
use ftlab_core::request::{Op, Request};
use ftlab_core::timing::SerialTiming;
use ftlab_core::{Lpn, Nanos, PageTag, PageWrite};
use ftlab_ftl::page::{PageFtl, OPTIONS};
use std::collections::BTreeMap;

/// The page FTL, except that it silently drops the `lose`-th page write.
struct LosesOneWrite {
    inner: PageFtl,
    writes: u64,
    lose: u64,
}

impl Ftl for LosesOneWrite {
    fn write(&mut self, flash: &mut Flash, pages: &[PageWrite]) {
        for p in pages {
            self.writes += 1;
            if self.writes != self.lose {
                self.inner.write(flash, std::slice::from_ref(p));
            }
        }
    }
    fn read(&mut self, flash: &mut Flash, lpn: Lpn) -> Option<PageTag> {
        self.inner.read(flash, lpn)
    }
    fn trim(&mut self, flash: &mut Flash, lpn: Lpn) {
        self.inner.trim(flash, lpn)
    }
    fn stats(&self) -> FtlStats {
        self.inner.stats()
    }
    fn reset_stats(&mut self) {
        self.inner.reset_stats()
    }
    fn mapping_bytes(&self) -> u64 {
        self.inner.mapping_bytes()
    }
}

fn engine(lose: u64, verify: Verify) -> Engine {
    let p = &PROFILES[0];
    let prepared = ftlab::run::prepare(&config("page", "none", p, 1)).unwrap();
    let geo: Geometry = prepared.geo.clone();
    let opts = SchemeOptions::resolve("page", OPTIONS, &BTreeMap::new()).unwrap();
    let ftl = LosesOneWrite {
        inner: PageFtl::new(&geo, &opts).unwrap(),
        writes: 0,
        lose,
    };
    Engine::new(
        &geo,
        prepared.latencies,
        Box::new(ftl),
        Box::new(Passthrough::default()),
        Box::new(SerialTiming::new(prepared.latencies)),
        EngineConfig {
            verify,
            ..EngineConfig::default()
        },
    )
}

fn write(offset: u64) -> Request {
    Request {
        arrival: Nanos(0),
        op: Op::Write,
        offset,
        len: 2048,
    }
}

#[test]
fn a_lost_write_is_caught_by_the_next_read() {
    let mut e = engine(2, Verify::On);
    e.submit(&write(0)).unwrap();
    e.submit(&write(0)).unwrap(); // lost: flash still holds version 1
    let err = e
        .submit(&Request {
            op: Op::Read,
            ..write(0)
        })
        .unwrap_err();
    match err {
        SimError::Violation { request, violation } => {
            assert_eq!(request, 3);
            assert_eq!(violation.lpn, Lpn(0));
            assert_eq!(violation.expected, Some(2));
            assert_eq!(violation.found.map(|t| t.version), Some(1));
        }
        other => panic!("expected a violation, got {other}"),
    }
}

#[test]
fn a_lost_write_never_read_again_is_caught_by_the_read_back() {
    let mut e = engine(1, Verify::On);
    e.submit(&write(4096)).unwrap();
    let err = e.verify_readback().unwrap_err();
    assert!(
        err.to_string()
            .contains("LPN 2: expected version 1, found no data"),
        "{err}"
    );
}

#[test]
fn a_lost_write_inside_a_random_mix_is_caught() {
    let mut e = engine(5000, Verify::On);
    let p = &PROFILES[0];
    assert!(exercise(&mut e, 3, p.requests, p.max_pages).is_err());
}

#[test]
fn without_verify_nothing_is_checked() {
    let mut e = engine(1, Verify::Off);
    e.submit(&write(0)).unwrap();
    e.submit(&Request {
        op: Op::Read,
        ..write(0)
    })
    .unwrap();
    assert_eq!(e.verify_readback().unwrap(), 0);
}
