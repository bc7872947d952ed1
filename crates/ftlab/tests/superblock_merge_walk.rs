//! Follows Superblock FTL's merges step by step on a small file-system workload, to set
//! them beside superblock-ftl.txt Figs. 9-11 (experiments/superblock/NOTES.md, "Merges
//! followed step by step"). Ignored by default: it prints a walk, it checks little.
//!
//! ```text
//! cargo test --release -p ftlab --test superblock_merge_walk -- --ignored --nocapture
//! FTLAB_WALK_SHIFT=0 cargo test ... (aligned; default 63 sectors, the "original" traces)
//! ```

use ftlab_core::flash::{Cause, Flash, OpKind};
use ftlab_core::ftl::Ftl;
use ftlab_core::geometry::GeometryBuilder;
use ftlab_core::options::from_pairs;
use ftlab_core::{nand, Lpn, PageTag, Pbn};
use ftlab_ftl::superblock::{SuperblockFtl, SuperblockOptions, ID};
use ftlab_workload::fs::FsConfig;
use ftlab_workload::synthetic::{Synthetic, SyntheticConfig};
use std::collections::BTreeMap;

const PAGE: u64 = 2048;
const PPB: u32 = 64;

/// (block, valid pages, written pages) of every block a superblock holds.
fn state(ftl: &SuperblockFtl, flash: &Flash, sb: u32) -> Vec<(u32, u32, u32)> {
    ftl.superblock_blocks(sb)
        .into_iter()
        .map(|b| (b.0, flash.valid_count(b), flash.write_ptr(b)))
        .collect()
}

fn show(s: &[(u32, u32, u32)]) -> String {
    s.iter()
        .map(|(b, v, w)| format!("B{b}:{v}/{w}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
#[ignore]
fn walk_superblock_merges_on_a_fat32_picture_workload() {
    let shift: u64 = std::env::var("FTLAB_WALK_SHIFT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(63);
    let logical_blocks: u32 = 512; // 64 MiB
    let geo = GeometryBuilder {
        page_size: PAGE as u32,
        pages_per_block: PPB,
        spare_bytes: 64,
        logical_bytes: logical_blocks as u64 * PPB as u64 * PAGE,
        op_percent: 3.125, // 16 spare blocks, §5.1's share
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
        min_spare_blocks: 0,
    }
    .build()
    .unwrap();
    let lat = nand::preset("slc-k9f1g16u0m").unwrap().latencies();
    let opts: SuperblockOptions = from_pairs(ID, &[("snapshots", "off")]).unwrap();
    let mut ftl = SuperblockFtl::new(&geo, lat, &opts).unwrap();
    let mut flash = Flash::new(&geo);
    let mut version = vec![0u32; geo.logical_pages as usize];
    let mut write = |ftl: &mut SuperblockFtl, flash: &mut Flash, l: u32| {
        version[l as usize] += 1;
        ftl.write(
            flash,
            &[PageTag {
                lpn: Lpn(l),
                version: version[l as usize],
            }],
        );
    };
    for l in 0..geo.logical_pages {
        write(&mut ftl, &mut flash, l);
    }
    let space = geo.logical_bytes() - (1 << 20);
    let cfg = SyntheticConfig {
        count: 60_000,
        address_space: Some(format!("{space}")),
        interarrival_us: 0.0,
        filesystem: Some(FsConfig::default()),
        ..Default::default()
    };
    cfg.validate(geo.logical_bytes()).unwrap();
    let g = Synthetic::new(&cfg, geo.logical_bytes(), PAGE, 1);
    let layout = g.filesystem().unwrap().layout().clone();
    let sbs = logical_blocks / 4;
    let mut before: Vec<Vec<(u32, u32, u32)>> = (0..sbs).map(|s| state(&ftl, &flash, s)).collect();
    flash.set_logging(true);
    let (mut shown, mut n) = (0, 0u64);
    let mut tally: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for r in g {
        n += 1;
        let off = r.offset + shift * 512;
        let (first, last) = (off / PAGE, (off + r.len).div_ceil(PAGE) - 1);
        let what = if r.offset < layout.data_start {
            if r.offset < layout.table_start {
                "FSInfo"
            } else {
                "FAT"
            }
        } else if r.len <= 512 {
            "dir entry"
        } else {
            "file data"
        };
        let s0 = ftl.stats();
        flash.clear_log();
        for l in first..=last {
            write(&mut ftl, &mut flash, l as u32);
        }
        let s1 = ftl.stats();
        let ops: Vec<_> = flash.log_ops().to_vec();
        let erased: Vec<Pbn> = ops
            .iter()
            .filter(|o| o.kind == OpKind::Erase && o.cause == Cause::Merge)
            .map(|o| o.block)
            .collect();
        let copies = ops
            .iter()
            .filter(|o| o.kind == OpKind::Program && o.cause == Cause::Merge)
            .count() as u64;
        let full = s1.merges_full - s0.merges_full;
        let partial = s1.merges_partial - s0.merges_partial;
        let switch = s1.merges_switch - s0.merges_switch;
        let e = tally.entry(what).or_default();
        e.0 += 1;
        e.1 += copies;
        e.2 += erased.len() as u64;
        // Superblocks the request wrote or whose blocks the merges erased.
        let mut touched: Vec<u32> = (first..=last)
            .map(|l| (l / PPB as u64 / 4) as u32)
            .collect();
        for b in &erased {
            if let Some(sb) = before.iter().position(|s| s.iter().any(|x| x.0 == b.0)) {
                touched.push(sb as u32);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        let interesting = n > 20_000 && shown < 12 && (full + partial) > 0;
        if interesting {
            shown += 1;
            println!(
                "request {n}: {what} at byte {} + {} (pages {first}..={last}): {switch} switch, \
                 {partial} partial, {full} full merges, {copies} pages copied, {} blocks erased",
                r.offset,
                r.len,
                erased.len()
            );
        }
        for &sb in &touched {
            let now = state(&ftl, &flash, sb);
            if interesting && now != before[sb as usize] {
                println!("  SB{sb} before: {}", show(&before[sb as usize]));
                println!("  SB{sb} after:  {}", show(&now));
            }
            before[sb as usize] = now;
        }
    }
    println!("\nby request kind (requests, pages copied, blocks erased by merges):");
    for (k, v) in &tally {
        println!("  {k}: {v:?}");
    }
    let s = ftl.stats();
    println!(
        "totals: {} switch, {} partial, {} full, {} pages copied",
        s.merges_switch, s.merges_partial, s.merges_full, s.merge_pages_copied
    );
    assert!(s.merges_switch > 0);
}
