//! SCHEMES.md worked examples 2 and 3 (co-op-buffer-ftl.txt §4, §5.1 Fig. 4, §5.1.3),
//! run on the simulator: the buffers of this crate above the `bast` FTL, counting every
//! flash operation, checked against the paper's numbers and against the cost model of
//! `ftlab_buffer::costmodel` on the same scenarios.

use ftlab_buffer::bagc::{self, BagcOptions};
use ftlab_buffer::bplru::{self, BlruOptions, BplruOptions};
use ftlab_buffer::bpref::{self, BprefOptions};
use ftlab_buffer::coop::{self, CoopOptions};
use ftlab_buffer::costmodel::{c_nopad, c_pad, flush_cost, Ops, Scheme};
use ftlab_buffer::fab::{self, FabOptions};
use ftlab_core::buffer::{Backend, Buffer};
use ftlab_core::flash::{Flash, FlashStats};
use ftlab_core::ftl::Ftl;
use ftlab_core::geometry::{Geometry, GeometryBuilder};
use ftlab_core::options::from_pairs;
use ftlab_core::{Lpn, PageTag};
use ftlab_ftl::bast::{self, Bast};

const N: u32 = 8;

/// 8 pages per block, 4 logical blocks, 8 physical: 3 log blocks and a merge reserve.
fn geometry() -> Geometry {
    GeometryBuilder {
        page_size: 2048,
        pages_per_block: N,
        spare_bytes: 64,
        logical_bytes: 2048 * 4 * N as u64,
        op_percent: 100.0,
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
        min_spare_blocks: 0,
    }
    .build()
    .unwrap()
}

/// A BAST device with logical block 0 written once, in place, and a version counter
/// per page so the test can check every read.
struct Sim {
    geo: Geometry,
    flash: Flash,
    ftl: Bast,
    versions: Vec<u32>,
}

impl Sim {
    fn new(bast_opts: &[(&str, &str)]) -> Sim {
        let geo = geometry();
        let mut sim = Sim {
            flash: Flash::new(&geo),
            ftl: Bast::new(
                &geo,
                &from_pairs::<bast::BastOptions>(bast::ID, bast_opts).unwrap(),
            )
            .unwrap(),
            versions: vec![0; geo.logical_pages as usize],
            geo,
        };
        let pages = sim.tags(&(0..N).collect::<Vec<_>>());
        sim.ftl.write(&mut sim.flash, &pages);
        sim.flash.reset_stats();
        sim
    }

    /// New versions of `offsets` of logical block 0.
    fn tags(&mut self, offsets: &[u32]) -> Vec<PageTag> {
        offsets
            .iter()
            .map(|&o| {
                self.versions[o as usize] += 1;
                PageTag {
                    lpn: Lpn(o),
                    version: self.versions[o as usize],
                }
            })
            .collect()
    }

    fn be(&mut self) -> Backend<'_> {
        Backend {
            ftl: &mut self.ftl,
            flash: &mut self.flash,
        }
    }

    /// Buffers new versions of `offsets` and flushes the buffer (one victim flush).
    fn flush(&mut self, buf: &mut dyn Buffer, offsets: &[u32]) {
        let pages = self.tags(offsets);
        buf.write(&mut self.be(), &pages);
        buf.flush(&mut self.be());
    }

    /// Reads, writes and erases since the last reset, all causes.
    fn ops(&self) -> Ops {
        let s = self.flash.stats();
        Ops::new(
            FlashStats::total(&s.page_reads) as f64,
            FlashStats::total(&s.programs) as f64,
            FlashStats::total(&s.erases) as f64,
        )
    }

    /// Every page of block 0 reads back at its latest version, and the FTL is sound.
    fn verify(&mut self, buf: &mut dyn Buffer) {
        for o in 0..N {
            let got = buf.read(&mut self.be(), Lpn(o));
            assert_eq!(
                got.map(|t| (t.lpn, t.version)),
                Some((Lpn(o), self.versions[o as usize]))
            );
        }
        self.ftl.check(&self.flash).unwrap();
    }
}

/// The block's log block holds 5 pages written out of order (Fig. 4: offsets 1, 3, 5,
/// 6, then 3 again), leaving 3 free.
fn fig4_log(sim: &mut Sim) {
    for o in [1, 3, 5, 6, 3] {
        let t = sim.tags(&[o]);
        sim.ftl.write(&mut sim.flash, &t);
    }
    sim.flash.reset_stats();
}

const FIG4_VICTIM: [u32; 7] = [0, 1, 2, 4, 5, 6, 7];

#[test]
fn worked_example_2_without_coop_8_reads_15_writes_2_erases() {
    let mut sim = Sim::new(&[]);
    fig4_log(&mut sim);
    let mut buf = bplru::new_blru(&sim.geo, &BlruOptions::default()).unwrap();
    sim.flush(&mut buf, &FIG4_VICTIM);
    assert_eq!(sim.ops(), Ops::new(8.0, 15.0, 2.0));
    assert_eq!(sim.ftl.stats().merges_full, 1);
    sim.verify(&mut buf);
}

#[test]
fn worked_example_2_with_sbp_and_osm_1_read_8_writes_2_erases() {
    let mut sim = Sim::new(&[("osm", "true")]);
    fig4_log(&mut sim);
    let mut buf = coop::new(&sim.geo, &CoopOptions::default()).unwrap();
    sim.flush(&mut buf, &FIG4_VICTIM);
    assert_eq!(sim.ops(), Ops::new(1.0, 8.0, 2.0));
    let s = sim.ftl.stats();
    assert_eq!((s.merges_osm, s.merges_full), (1, 0));
    assert_eq!(buf.stats().padding_reads, 1);
    sim.verify(&mut buf);
}

/// FTL options and the buffers of flush 1 and flush 2.
type Setup = (
    &'static [(&'static str, &'static str)],
    Box<dyn Buffer>,
    Box<dyn Buffer>,
);

/// §5.1.3's two-flush scenario for one scheme: flush 1 leaves `N - N_r` pages in the
/// log block out of order (offsets `1..=N-N_r`), flush 2 brings `N_i` dirty pages
/// (offsets `0..N_i`). Returns the operations after flush 1, plus, for BPLRU, flush
/// 1's padding (the paper's `C_prev`); flush 1's own `N - N_r` writes are common to
/// every scheme and left out, as in the paper.
fn two_flushes(scheme: Scheme, n_i: u32, n_r: u32) -> Ops {
    let first: Vec<u32> = (1..=N - n_r).collect();
    let second: Vec<u32> = (0..n_i).collect();
    let (ftl_opts, mut b1, mut b2): Setup = {
        let g = geometry();
        match scheme {
            Scheme::Fab => (
                &[],
                Box::new(fab::new(&g, &FabOptions::default()).unwrap()),
                Box::new(fab::new(&g, &FabOptions::default()).unwrap()),
            ),
            Scheme::Bplru => (
                &[],
                Box::new(bplru::new_bplru(&g, &BplruOptions::default()).unwrap()),
                Box::new(bplru::new_bplru(&g, &BplruOptions::default()).unwrap()),
            ),
            // "we assume that BP-REF did not pad the previous flush ... but pads the
            // current flush": a threshold no block exceeds, then one every block does.
            Scheme::BpRef => (
                &[],
                Box::new(
                    bpref::new(
                        &g,
                        &BprefOptions {
                            pad_threshold_pct: 100,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                ),
                Box::new(
                    bpref::new(
                        &g,
                        &BprefOptions {
                            pad_threshold_pct: 0,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                ),
            ),
            Scheme::BaGc => (
                &[("ba_gc", "true")],
                Box::new(bagc::new(&g, &BagcOptions::default()).unwrap()),
                Box::new(bagc::new(&g, &BagcOptions::default()).unwrap()),
            ),
            Scheme::CoOp => (
                &[("osm", "true")],
                Box::new(coop::new(&g, &CoopOptions::default()).unwrap()),
                Box::new(coop::new(&g, &CoopOptions::default()).unwrap()),
            ),
        }
    };
    let mut sim = Sim::new(ftl_opts);
    sim.flush(&mut *b1, &first);
    let common = Ops::new(0.0, (N - n_r) as f64, 0.0);
    let after_first = sim.ops();
    // The log block has N_r free pages and is not sequential (or, after BPLRU's padded
    // flush, was switched).
    if scheme != Scheme::Bplru {
        use ftlab_core::ftl::{Answer, Query};
        let q = sim.ftl.query(Query::LogFreePages(ftlab_core::Lbn(0)));
        assert_eq!(q, Answer::Count(n_r), "{scheme:?} N_i={n_i} N_r={n_r}");
    }
    sim.flash.reset_stats();
    sim.flush(&mut *b2, &second);
    let second_ops = sim.ops();
    sim.verify(&mut *b2);
    let mut prev = after_first;
    prev.writes -= common.writes;
    if scheme == Scheme::Bplru {
        prev + second_ops
    } else {
        assert_eq!(prev, Ops::default(), "{scheme:?}: flush 1 only wrote");
        second_ops
    }
}

#[test]
fn worked_example_3_cost_model_matches_the_simulator() {
    for scheme in [
        Scheme::Fab,
        Scheme::Bplru,
        Scheme::BpRef,
        Scheme::BaGc,
        Scheme::CoOp,
    ] {
        for n_r in 1..N {
            for n_i in n_r..=N {
                let model = flush_cost(scheme, N, n_i, n_r).unwrap().now;
                let sim = two_flushes(scheme, n_i, n_r);
                assert_eq!(sim, model, "{scheme:?} N_i={n_i} N_r={n_r}");
            }
        }
    }
}

/// §4: `N_f` flushes of one logical block (as offset lists), with padding (BPLRU) and
/// without (BLRU); `N_σ` is a multiple of `N` so the last log block is merged too.
#[test]
fn worked_example_3_padding_model_matches_the_simulator() {
    let cases: &[&[&[u32]]] = &[
        &[&[1, 2, 3, 4], &[0, 5, 6, 7]],
        &[&[1, 2], &[3, 4], &[5, 6], &[0, 7]],
        &[&[1], &[2], &[3], &[4], &[5], &[6], &[7], &[0]],
        &[&[1, 2, 3, 4], &[0, 5, 6, 7], &[1, 3, 5, 7], &[0, 2, 4, 6]],
    ];
    for flushes in cases {
        let n_f = flushes.len() as u32;
        let n_sigma: u32 = flushes.iter().map(|f| f.len() as u32).sum();
        for pad in [false, true] {
            let mut sim = Sim::new(&[]);
            let g = geometry();
            let o = BplruOptions::default();
            let mut buf = if pad {
                bplru::new_bplru(&g, &o).unwrap()
            } else {
                bplru::new_blru(&g, &o).unwrap()
            };
            for f in flushes.iter() {
                sim.flush(&mut buf, f);
            }
            let want = if pad {
                c_pad(N, n_f, n_sigma).unwrap()
            } else {
                c_nopad(N, n_sigma)
            };
            assert_eq!(sim.ops(), want, "pad={pad} flushes={flushes:?}");
            sim.verify(&mut buf);
        }
    }
}
