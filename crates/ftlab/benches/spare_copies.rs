//! Benchmark: what a merge copy costs the flash model with and without spare words,
//! nothing else. It measures the floor under Superblock FTL's merges (issue 26, item 2):
//! every copy there programs its logical block's PMD and one PT into the copy's spare
//! area (superblock-ftl.txt §4.2.2, Table III), 24 words with the `ftlab bench` geometry
//! (PMD of 8 entries, PT of 16), where page mapping's copy moves a tag only.
//!
//! Run: `cargo bench -p ftlab --bench spare_copies` (optionally `-- WORDS` for the spare
//! words per copy, default 24, and `-- COPIES`, default 64 Mi). The device is the one
//! `ftlab bench` uses (1 GiB logical, 7% over-provisioning, mlc-k9gag08u0m, 4 KiB pages,
//! 128 pages per block), every page programmed and valid. Each step moves a random full
//! block's pages into the erased block and erases the source, which becomes the next
//! destination: [`Flash::move_valid`] for the plain copies, and
//! [`Flash::move_valid_with_spare`] with a callback that copies the words from a small
//! table, as superblock's does from its merge work area. The two kinds run interleaved,
//! a round each, five rounds; the medians are printed.

use ftlab::config::Config;
use ftlab::sim::prepare;
use ftlab_core::flash::{Cause, Flash};
use ftlab_core::geometry::Geometry;
use ftlab_core::rng::SplitMix64;
use ftlab_core::{Lpn, PageTag, Pbn, Ppn};
use std::time::Instant;

fn main() {
    let mut nums = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<u64>().ok());
    let words = nums.next().unwrap_or(24) as usize;
    if words == 0 {
        eprintln!("spare_copies: WORDS must be at least 1 (the plain copies run anyway)");
        std::process::exit(2);
    }
    let copies = nums.next().unwrap_or(64 << 20);
    let cfg = Config {
        ftl: "page".into(),
        nand: "mlc-k9gag08u0m".into(),
        capacity: "1GiB".parse().expect("a size"),
        op: 7.0,
        ..Config::default()
    };
    let geo = prepare(&cfg)
        .expect("valid config")
        .engine
        .geometry()
        .clone();
    let mut plain = Device::new(&geo, 0);
    let mut spare = Device::new(&geo, words);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        a.push(plain.run(copies));
        b.push(spare.run(copies));
    }
    let (a, b) = (median(a), median(b));
    println!(
        "{} blocks x {} pages; {copies} copies per round, medians of 5 rounds",
        geo.blocks, geo.pages_per_block
    );
    println!("move_valid:                      {a:6.2} ns per copy");
    println!("move_valid_with_spare, {words:2} words: {b:6.2} ns per copy");
    println!("the spare words: {:.2} ns per copy ({:.2}x)", b - a, b / a);
}

/// A full device with one erased block, and the state of its copy loop.
struct Device {
    flash: Flash,
    /// The erased block the next victim's pages go to.
    free: Pbn,
    rng: SplitMix64,
    words: usize,
    /// What the callback copies from: one PMD and the PTs of a work area.
    table: Vec<u32>,
}

impl Device {
    fn new(geo: &Geometry, words: usize) -> Device {
        let mut flash = Flash::new(geo);
        // Counted, not logged, as under serial timing (the bench's and the default).
        flash.set_logging(false);
        let last = geo.blocks - 1;
        for b in 0..last {
            for off in 0..geo.pages_per_block {
                let lpn = Lpn(b * geo.pages_per_block + off);
                let tag = PageTag { lpn, version: 1 };
                let p = geo.ppn(Pbn(b), off);
                if words == 0 {
                    flash.program(p, tag, Cause::Host);
                } else {
                    flash.program_with_spare(p, tag, &vec![0; words], Cause::Host);
                }
            }
        }
        Device {
            flash,
            free: Pbn(last),
            rng: SplitMix64::new(7),
            words,
            table: (0..words as u32 * 8).collect(),
        }
    }

    /// `copies` copies (whole blocks, rounded up); returns ns per copy.
    fn run(&mut self, copies: u64) -> f64 {
        let geo = self.flash.geometry().clone();
        let (ppb, blocks) = (geo.pages_per_block as u64, geo.blocks as u64);
        let steps = copies.div_ceil(ppb);
        let t = Instant::now();
        let mut moved = 0u64;
        for _ in 0..steps {
            let mut src = Pbn(self.rng.below(blocks) as u32);
            if src == self.free {
                src = Pbn((src.0 + 1) % geo.blocks);
            }
            let dst = self.free;
            let end = if self.words == 0 {
                self.flash
                    .move_valid(src, 0, dst, Cause::Gc, |_, _, _| moved += 1)
            } else {
                let (table, words) = (&self.table, self.words);
                self.flash
                    .move_valid_with_spare(src, 0, dst, Cause::Gc, words, |tag, _, d, w| {
                        // A PMD (a third of the words), then the PT the page belongs
                        // to, from two places, as superblock's merge copies them.
                        let (pl, k) = (words / 3, tag.lpn.0 as usize % 4);
                        let i = words * 4 + (d.0 as usize % 4) * words;
                        w[..pl].copy_from_slice(&table[k * pl..(k + 1) * pl]);
                        w[pl..].copy_from_slice(&table[i..i + words - pl]);
                        moved += 1;
                    })
            };
            assert_eq!(end as u64, ppb, "every page of {src:?} moved");
            self.flash.erase(src, Cause::Gc);
            self.free = src;
        }
        let ns = t.elapsed().as_nanos() as f64;
        assert_eq!(moved, steps * ppb);
        std::hint::black_box(self.flash.spare_words(Ppn(0)).first());
        ns / moved as f64
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|x, y| x.total_cmp(y));
    v[v.len() / 2]
}
