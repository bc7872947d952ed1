//! A file-system workload for the synthetic generator (`[synthetic.filesystem]`): the
//! block-level writes a FAT32 or NTFS volume issues while files are created, rewritten
//! and deleted, as DiskMon recorded them for superblock-ftl.txt's traces (Table IV:
//! "extracted from disk access logs on FAT32 and NTFS file systems").
//!
//! The volume is the generator's address space (`address_space`, default the
//! capacity), formatted at offset 0 (a partition's offset is the `shift_sectors`
//! transform, as for any workload). It is cut in clusters of `cluster_kib` and laid out
//! as follows (every region starts on a cluster boundary, as current formatters align
//! them; all offsets are from the volume start):
//!
//! - **FAT32**: 32 reserved sectors (the boot sector and FSInfo at sector 1), then two
//!   copies of the FAT (4 bytes per cluster), then the data region. Directories are
//!   cluster chains in the data region, allocated like files when first used; a
//!   directory entry takes 64 bytes (the 8.3 entry and one long-name entry), written as
//!   the 512-byte sector that holds it.
//! - **NTFS**: the boot record, `$LogFile` (volume / 256, 2 to 64 MiB; every metadata
//!   change writes its next 4 KiB, circularly), `$Bitmap` (1 bit per cluster, one copy),
//!   the MFT zone (volume / 64: one 1 KiB file record per 64 KiB of volume; records are
//!   reused lowest first), then the data region. A directory entry takes 128 bytes of its
//!   directory's index, written as the 4 KiB index buffer that holds it.
//!
//! What one file operation writes, in order (each line one request or more; requests
//! are at most `write_kib` and whole 512-byte sectors):
//!
//! - **create**: (NTFS: a `$LogFile` page, the file record) the directory entry; then
//!   the file's data in `write_kib` requests, cluster run by cluster run, the last one cut
//!   at the file's size rounded up to a sector; after every `metadata_every_kib` of data
//!   and at the end, the allocation-table sectors (FAT: both copies; NTFS: `$Bitmap`)
//!   covering the clusters written since the last such update; at the end the directory
//!   entry again (size and first cluster) and FSInfo (FAT32) or the file record and a
//!   `$LogFile` page (NTFS).
//! - **delete**: the allocation-table sectors of the file's clusters (freed), the
//!   directory entry (FAT32: marked deleted; NTFS: the index buffer), FSInfo or the file
//!   record and a `$LogFile` page. No data is written.
//! - **overwrite** (probability `p_overwrite` per operation): `write_kib` or less of an
//!   existing file's data in place at a random cluster, then its directory entry (FAT32:
//!   the modification time) or its file record and a `$LogFile` page (NTFS).
//!
//! Allocation is next-fit from the cluster after the last one allocated (FAT32's FSInfo
//! hint; NTFS allocates near its last allocation too), wrapping around the data region,
//! so a file is one contiguous run of clusters unless the free space it meets is
//! fragmented, and freed clusters are reused when the hint comes round. Before the first
//! request the volume holds files up to `fill` of its data clusters, laid one after the
//! other (the device's `precondition = "fill"` has written every page already; these
//! writes are not replayed). A create that would take the used clusters above `fill`
//! first deletes uniformly random files until it fits (a camera or player whose owner
//! deletes old pictures or songs to make room; the paper does not say which files go);
//! `delete = "oldest"` deletes the oldest files instead, so the free space stays one run
//! ahead of the allocator and the volume is written like a circular log.
//!
//! File sizes come from `profile` (the paper's traces; Table IV gives only the average
//! size, so the spread is our assumption: uniform from half to one and a half times the
//! mean, 1 MB = 10^6 bytes as the paper's "MB" of file sizes):
//!
//! | profile | file system | files (by count) | source |
//! |---|---|---|---|
//! | `pic` | FAT32 | 1.9 MB | Table IV: "Picture files whose average size is 1.9MB" |
//! | `mp3` | FAT32 | 4.4 MB | Table IV: "MP3 files whose average size is 4.4MB" |
//! | `mov` | FAT32 | 681 MB | Table IV: "Movie files whose average size is 681MB" |
//! | `pmp` | FAT32 | one third each of the three | Table IV: "A number of picture files, MP3 files, and movie files"; the mix is our assumption |
//! | `pc` | NTFS | 70% 1-64 KiB, 25% 64 KiB-2 MiB, 5% 2-16 MiB (uniform in each) | our assumption: Table IV's PC trace is 5 days of a real desktop, with no file statistics |
//! | `install` | NTFS | 55% 1-64 KiB, 35% 64 KiB-2 MiB, 10% 2-32 MiB | our assumption: Table IV's Install trace is "collected during the installation of general applications in SYSmark 2007 preview" (§5.1: "such as Microsoft Office, Adobe Photoshop, WinZip"): program files, libraries and resources written once, more middle-sized files than `pc` |
//! | `sysmark` | NTFS | 65% 1-64 KiB, 28% 64 KiB-2 MiB, 6% 2-32 MiB, 1% 32-256 MiB | our assumption: Table IV's SYSmark trace runs "e-learning, office productivity, video creation, and 3D modeling with real applications": documents and project files, a few large media files; §5.4: "there are not many sequential requests in these traces" (PCMark and SYSmark), so the large files are rare |
//!
//! All three NTFS profiles follow §5.1 ("the others are for general computer systems
//! running on NTFS file system") and §5.3 ("these traces contain a large number of
//! small random accesses", of PC, PCMark, Install and SYSmark); Table IV gives their
//! volumes (32,768 MB for PC; 40,960 MB for Install and SYSmark) and sectors written,
//! which the experiment files match with the device size and the request count.
//!
//! `p_overwrite` defaults to 0 for the multimedia profiles (files are written once, as
//! a camera or player does), 0.5 for `pc` (our assumption: documents, mail boxes and
//! application data rewritten in place), 0.1 for `install` (our assumption: an
//! installer writes new files; the registry hives, logs and shared configuration are
//! what it rewrites) and 0.6 for `sysmark` (our assumption: the scenarios open, edit and
//! save the same documents and projects over and over). `files` replaces the profile's
//! sizes.
//!
//! The generator writes only (the paper's merge costs count writes; Table IV counts
//! sectors written). Every draw comes from one ChaCha8 stream seeded by the run seed.
//! Per request it allocates nothing once its queues have grown; each file keeps one
//! small vector of its cluster runs (one run unless the volume is fragmented).

use crate::synthetic::Dist;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

const SECTOR: u64 = 512;

/// The file system whose writes are generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FsKind {
    /// FAT32: two FAT copies at the volume start, 64-byte directory entries.
    Fat32,
    /// NTFS: `$LogFile`, `$Bitmap` and the MFT at the volume start.
    Ntfs,
}

/// The workload whose file sizes (and default file system) are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Digital camera: 1.9 MB pictures (Table IV, PIC).
    Pic,
    /// MP3 player: 4.4 MB songs (Table IV, MP3).
    Mp3,
    /// Movie player: 681 MB movies (Table IV, MOV).
    Mov,
    /// Portable media player: pictures, songs and movies, a third each (Table IV, PMP).
    Pmp,
    /// Desktop (NTFS), small files rewritten in place (our assumption).
    Pc,
    /// Application installs (NTFS, Table IV's Install; sizes our assumption).
    Install,
    /// Office, media and 3D scenarios (NTFS, Table IV's SYSmark; sizes our assumption).
    Sysmark,
}

/// Which files a create deletes to make room.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Delete {
    /// Uniformly random files (free space fragments; files start anywhere).
    Random,
    /// The oldest files first (free space stays one run ahead of the allocator: the
    /// volume is written like a circular log).
    Oldest,
}

/// One kind of file: its share of the files created and its size distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileKind {
    /// Relative share of the files created (any positive number).
    pub weight: f64,
    /// File size in KiB.
    pub size_kib: Dist,
}

/// Parameters of the file-system workload (config table `[synthetic.filesystem]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FsConfig {
    /// File sizes and default file system: pic, mp3, mov, pmp (FAT32) or pc, install,
    /// sysmark (NTFS).
    pub profile: Profile,
    /// fat32 or ntfs; default: the profile's.
    pub kind: Option<FsKind>,
    /// Cluster size in KiB (4: FAT32 and NTFS defaults for these volume sizes).
    pub cluster_kib: u32,
    /// Largest request in KiB (file data and long metadata runs are cut to it).
    pub write_kib: u32,
    /// KiB of file data between allocation-table updates (and one at the file's end).
    pub metadata_every_kib: u32,
    /// Share of the data clusters files may occupy; creates delete random files to stay
    /// below it. The volume starts filled to it.
    pub fill: f64,
    /// Probability that an operation rewrites part of a file in place; default: the
    /// profile's (0, or 0.5 for pc).
    pub p_overwrite: Option<f64>,
    /// Which files go when room is needed: random or oldest.
    pub delete: Delete,
    /// Directory entries per directory.
    pub files_per_dir: u32,
    /// File kinds replacing the profile's sizes.
    pub files: Option<Vec<FileKind>>,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            profile: Profile::Pic,
            kind: None,
            cluster_kib: 4,
            write_kib: 64,
            metadata_every_kib: 1024,
            fill: 0.9,
            p_overwrite: None,
            delete: Delete::Random,
            files_per_dir: 256,
            files: None,
        }
    }
}

/// `mean` KiB of MB (10^6 bytes), spread uniformly over [0.5, 1.5] of it.
fn around(mb: f64) -> Dist {
    let kib = mb * 1e6 / 1024.0;
    Dist::Uniform {
        min: 0.5 * kib,
        max: 1.5 * kib,
    }
}

impl FsConfig {
    /// The file system after the profile's default.
    pub fn kind(&self) -> FsKind {
        self.kind.unwrap_or(match self.profile {
            Profile::Pc | Profile::Install | Profile::Sysmark => FsKind::Ntfs,
            _ => FsKind::Fat32,
        })
    }

    /// The overwrite probability after the profile's default.
    pub fn p_overwrite(&self) -> f64 {
        self.p_overwrite.unwrap_or(match self.profile {
            Profile::Pc => 0.5,
            Profile::Install => 0.1,
            Profile::Sysmark => 0.6,
            _ => 0.0,
        })
    }

    /// The file kinds after the profile's default.
    pub fn file_kinds(&self) -> Vec<FileKind> {
        if let Some(f) = &self.files {
            return f.clone();
        }
        let one = |mb: f64| FileKind {
            weight: 1.0,
            size_kib: around(mb),
        };
        let range = |weight: f64, min: f64, max: f64| FileKind {
            weight,
            size_kib: Dist::Uniform { min, max },
        };
        match self.profile {
            Profile::Pic => vec![one(1.9)],
            Profile::Mp3 => vec![one(4.4)],
            Profile::Mov => vec![one(681.0)],
            Profile::Pmp => vec![one(1.9), one(4.4), one(681.0)],
            Profile::Pc => vec![
                range(0.70, 1.0, 64.0),
                range(0.25, 64.0, 2048.0),
                range(0.05, 2048.0, 16384.0),
            ],
            Profile::Install => vec![
                range(0.55, 1.0, 64.0),
                range(0.35, 64.0, 2048.0),
                range(0.10, 2048.0, 32768.0),
            ],
            Profile::Sysmark => vec![
                range(0.65, 1.0, 64.0),
                range(0.28, 64.0, 2048.0),
                range(0.06, 2048.0, 32768.0),
                range(0.01, 32768.0, 262144.0),
            ],
        }
    }

    /// Checks the parameters for a volume of `space` bytes; the error names the key.
    pub fn validate(&self, space: u64) -> Result<(), String> {
        let key = |k: &str| format!("synthetic.filesystem.{k}");
        if !(1..=1024).contains(&self.cluster_kib) || !self.cluster_kib.is_power_of_two() {
            return Err(format!(
                "{} = {}: must be a power of two from 1 to 1024",
                key("cluster_kib"),
                self.cluster_kib
            ));
        }
        if self.write_kib == 0 || self.write_kib > 65536 {
            return Err(format!(
                "{} = {}: must be 1 to 65536",
                key("write_kib"),
                self.write_kib
            ));
        }
        if self.metadata_every_kib == 0 {
            return Err(format!("{}: must be at least 1", key("metadata_every_kib")));
        }
        if !(self.fill > 0.0 && self.fill < 1.0) {
            return Err(format!(
                "{} = {}: must be above 0 and below 1",
                key("fill"),
                self.fill
            ));
        }
        let p = self.p_overwrite();
        if !(0.0..=1.0).contains(&p) {
            return Err(format!("{} = {p}: must be from 0 to 1", key("p_overwrite")));
        }
        if self.files_per_dir == 0 {
            return Err(format!("{}: must be at least 1", key("files_per_dir")));
        }
        let kinds = self.file_kinds();
        if kinds.is_empty()
            || kinds
                .iter()
                .any(|k| !(k.weight > 0.0 && k.weight.is_finite()))
        {
            return Err(format!(
                "{}: give at least one kind, each with a weight above 0",
                key("files")
            ));
        }
        for k in &kinds {
            k.size_kib.check("filesystem.files.size_kib")?;
        }
        let layout = Layout::new(self, space);
        if layout.data_clusters < 64 {
            return Err(format!(
                "synthetic.address_space ({space} bytes): too small for a {:?} volume of \
                 {} KiB clusters (fewer than 64 data clusters)",
                self.kind(),
                self.cluster_kib
            ));
        }
        Ok(())
    }
}

/// Where the regions of the volume are, in bytes from its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// FAT32 or NTFS.
    pub kind: FsKind,
    /// Cluster size in bytes.
    pub cluster: u64,
    /// First byte of the allocation table (FAT or `$Bitmap`).
    pub table_start: u64,
    /// Bytes of one copy of the allocation table (cluster-rounded).
    pub table_bytes: u64,
    /// Copies of the allocation table (FAT32: 2).
    pub table_copies: u64,
    /// Bits of allocation table per cluster (FAT32: 32, NTFS: 1).
    pub table_bits: u64,
    /// NTFS: first byte of `$LogFile` (0 for FAT32).
    pub log_start: u64,
    /// NTFS: size of `$LogFile`.
    pub log_bytes: u64,
    /// NTFS: first byte of the MFT zone (0 for FAT32).
    pub mft_start: u64,
    /// NTFS: bytes of the MFT zone.
    pub mft_bytes: u64,
    /// First byte of the data region (cluster 0 of the allocator).
    pub data_start: u64,
    /// Clusters in the data region.
    pub data_clusters: u64,
    /// Bytes of one directory entry.
    pub entry_bytes: u64,
    /// Bytes written to update one directory entry (the sector or index buffer).
    pub entry_unit: u64,
}

impl Layout {
    /// The layout of a volume of `space` bytes.
    pub fn new(cfg: &FsConfig, space: u64) -> Layout {
        let cluster = cfg.cluster_kib as u64 * 1024;
        let up = |b: u64| b.div_ceil(cluster) * cluster;
        let kind = cfg.kind();
        let all = space / cluster;
        match kind {
            FsKind::Fat32 => {
                let table_start = up(32 * SECTOR);
                // Two copies of 4 bytes per data cluster; the data clusters are what is
                // left after them (solved by shrinking from the whole volume).
                let mut data = all;
                let mut table_bytes = 0;
                for _ in 0..4 {
                    table_bytes = up(data * 4);
                    data = (space.saturating_sub(table_start + 2 * table_bytes)) / cluster;
                }
                FsKind::Fat32.layout_with(
                    cluster,
                    table_start,
                    table_bytes,
                    (0, 0, 0, 0),
                    table_start + 2 * table_bytes,
                    data,
                )
            }
            FsKind::Ntfs => {
                let boot = up(8192);
                let log_bytes = up((space / 256).clamp(2 << 20, 64 << 20).min(space / 8));
                let table_start = boot + log_bytes;
                let table_bytes = up(all.div_ceil(8));
                let mft_start = table_start + table_bytes;
                let mft_bytes = up((space / 64).max(64 * 1024));
                let data_start = mft_start + mft_bytes;
                let data = space.saturating_sub(data_start) / cluster;
                FsKind::Ntfs.layout_with(
                    cluster,
                    table_start,
                    table_bytes,
                    (boot, log_bytes, mft_start, mft_bytes),
                    data_start,
                    data,
                )
            }
        }
    }
}

impl FsKind {
    fn layout_with(
        self,
        cluster: u64,
        table_start: u64,
        table_bytes: u64,
        (log_start, log_bytes, mft_start, mft_bytes): (u64, u64, u64, u64),
        data_start: u64,
        data_clusters: u64,
    ) -> Layout {
        let fat = self == FsKind::Fat32;
        Layout {
            kind: self,
            cluster,
            table_start,
            table_bytes,
            table_copies: if fat { 2 } else { 1 },
            table_bits: if fat { 32 } else { 1 },
            log_start,
            log_bytes,
            mft_start,
            mft_bytes,
            data_start,
            data_clusters,
            entry_bytes: if fat { 64 } else { 128 },
            entry_unit: if fat { SECTOR } else { 4096 },
        }
    }
}

/// A run of clusters: first data cluster and length.
type Run = (u32, u32);

/// A file on the volume.
#[derive(Clone, Debug)]
struct File {
    /// Its directory slot (also its MFT record on NTFS).
    slot: u32,
    /// Bytes of data (sector-rounded).
    bytes: u64,
    /// Its cluster runs, in file order.
    runs: Vec<Run>,
}

/// The file being written: which file, where in its runs, and what the allocation table
/// does not know yet.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    file: usize,
    run: usize,
    within: u32,
    left: u64,
    since_meta: u64,
    meta_run: usize,
    meta_within: u32,
}

/// What the generator has done (for tests and notes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsCounts {
    /// Files created (not counting the initial ones).
    pub created: u64,
    /// Files deleted.
    pub deleted: u64,
    /// In-place rewrites.
    pub overwrites: u64,
    /// Files laid down before the first request.
    pub initial_files: u64,
    /// Files made of more than one cluster run.
    pub fragmented: u64,
}

/// The file-system workload's state.
pub struct FsGen {
    layout: Layout,
    kinds: Vec<FileKind>,
    weight_sum: f64,
    p_overwrite: f64,
    delete: Delete,
    write_bytes: u64,
    meta_every: u64,
    files_per_dir: u64,
    limit: u64,
    /// One bit per data cluster, set when allocated.
    used: Vec<u64>,
    used_count: u64,
    hint: u64,
    /// One bit per directory slot, set when in use.
    slots: Vec<u64>,
    slot_hint: u64,
    /// Each directory's cluster runs (allocated when its first slot is used).
    dirs: Vec<Vec<Run>>,
    files: Vec<File>,
    cursor: Option<Cursor>,
    queue: VecDeque<(u64, u64)>,
    log_pos: u64,
    counts: FsCounts,
}

fn bit(v: &[u64], i: u64) -> bool {
    v[(i / 64) as usize] >> (i % 64) & 1 == 1
}

fn set_bit(v: &mut Vec<u64>, i: u64, on: bool) {
    let w = (i / 64) as usize;
    if w >= v.len() {
        v.resize(w + 1, 0);
    }
    if on {
        v[w] |= 1 << (i % 64);
    } else {
        v[w] &= !(1 << (i % 64));
    }
}

impl FsGen {
    /// The file system on a volume of `space` bytes (checked by [`FsConfig::validate`]),
    /// filled to `fill` with files drawn from `rng`.
    pub fn new(cfg: &FsConfig, space: u64, rng: &mut ChaCha8Rng) -> FsGen {
        let layout = Layout::new(cfg, space);
        let kinds = cfg.file_kinds();
        let weight_sum = kinds.iter().map(|k| k.weight).sum();
        let limit = ((layout.data_clusters as f64) * cfg.fill) as u64;
        let mut g = FsGen {
            kinds,
            weight_sum,
            p_overwrite: cfg.p_overwrite(),
            delete: cfg.delete,
            write_bytes: cfg.write_kib as u64 * 1024,
            meta_every: cfg.metadata_every_kib as u64 * 1024,
            files_per_dir: cfg.files_per_dir as u64,
            limit,
            used: vec![0; layout.data_clusters.div_ceil(64) as usize],
            used_count: 0,
            hint: 0,
            slots: Vec::new(),
            slot_hint: 0,
            dirs: Vec::new(),
            files: Vec::new(),
            cursor: None,
            queue: VecDeque::new(),
            log_pos: 0,
            counts: FsCounts::default(),
            layout,
        };
        // The initial files, one after the other, written before the run.
        loop {
            let bytes = g.draw_size(rng);
            let clusters = bytes.div_ceil(g.layout.cluster);
            if g.used_count + clusters > limit {
                break;
            }
            g.create_file(bytes, false);
            g.counts.initial_files += 1;
        }
        g
    }

    /// The volume's layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// What the generator has done so far.
    pub fn counts(&self) -> FsCounts {
        self.counts
    }

    /// Data clusters in use (files and directories).
    pub fn used_clusters(&self) -> u64 {
        self.used_count
    }

    fn draw_size(&self, rng: &mut ChaCha8Rng) -> u64 {
        let mut pick = rng.gen::<f64>() * self.weight_sum;
        let mut kind = &self.kinds[self.kinds.len() - 1];
        for k in &self.kinds {
            if pick < k.weight {
                kind = k;
                break;
            }
            pick -= k.weight;
        }
        let kib = kind.size_kib.sample(rng).max(0.5);
        let cap = self.layout.data_clusters * self.layout.cluster / 2;
        ((kib * 1024.0 / SECTOR as f64).ceil() as u64 * SECTOR).clamp(SECTOR, cap)
    }

    /// Allocates `n` clusters next-fit from the hint, appending runs to `runs`.
    fn allocate(&mut self, mut n: u64, runs: &mut Vec<Run>) {
        let total = self.layout.data_clusters;
        while n > 0 {
            // Find the next free cluster from the hint (wrapping).
            let mut c = self.hint % total;
            let mut scanned = 0;
            while bit(&self.used, c) {
                let w = (c / 64) as usize;
                let rest = !self.used[w] >> (c % 64);
                let step = if rest == 0 {
                    64 - c % 64
                } else {
                    rest.trailing_zeros() as u64
                };
                c += step;
                scanned += step;
                if c >= total {
                    c = 0;
                }
                assert!(scanned <= total + 64, "allocate: volume full");
            }
            let start = c;
            let mut len = 0;
            while len < n && c < total && !bit(&self.used, c) {
                set_bit(&mut self.used, c, true);
                c += 1;
                len += 1;
            }
            self.used_count += len;
            n -= len;
            self.hint = if c >= total { 0 } else { c };
            match runs.last_mut() {
                Some(r) if (r.0 + r.1) as u64 == start => r.1 += len as u32,
                _ => runs.push((start as u32, len as u32)),
            }
        }
    }

    fn free_runs(&mut self, runs: &[Run]) {
        for &(s, l) in runs {
            for c in s as u64..(s + l) as u64 {
                set_bit(&mut self.used, c, false);
            }
            self.used_count -= l as u64;
        }
    }

    fn take_slot(&mut self) -> u32 {
        let mut s = self.slot_hint;
        while (s / 64) < self.slots.len() as u64 && bit(&self.slots, s) {
            s += 1;
        }
        set_bit(&mut self.slots, s, true);
        self.slot_hint = s + 1;
        let dir = (s / self.files_per_dir) as usize;
        while self.dirs.len() <= dir {
            let bytes = self.files_per_dir * self.layout.entry_bytes;
            let mut runs = Vec::new();
            self.allocate(bytes.div_ceil(self.layout.cluster), &mut runs);
            self.dirs.push(runs);
        }
        s as u32
    }

    /// Byte offset of cluster `c` of the data region.
    fn cluster_offset(&self, c: u64) -> u64 {
        self.layout.data_start + c * self.layout.cluster
    }

    /// Queues the write of `len` bytes at `offset`, cut to `write_bytes`.
    fn push(&mut self, mut offset: u64, len: u64) {
        let end = offset + len;
        while offset < end {
            let l = (end - offset).min(self.write_bytes);
            self.queue.push_back((offset, l));
            offset += l;
        }
    }

    /// Queues the allocation-table sectors of clusters `first..first + n`.
    fn push_table(&mut self, first: u64, n: u64) {
        let (bits, start, bytes) = (
            self.layout.table_bits,
            self.layout.table_start,
            self.layout.table_bytes,
        );
        let a = first * bits / 8 / SECTOR * SECTOR;
        let b = ((first + n) * bits).div_ceil(8).div_ceil(SECTOR) * SECTOR;
        for copy in 0..self.layout.table_copies {
            let base = start + copy * bytes;
            self.push(base + a, b - a);
        }
    }

    /// Queues the directory entry of `slot`.
    fn push_entry(&mut self, slot: u32) {
        let lay = &self.layout;
        let dir = &self.dirs[(slot as u64 / self.files_per_dir) as usize];
        let mut at = (slot as u64 % self.files_per_dir) * lay.entry_bytes;
        at = at / lay.entry_unit * lay.entry_unit;
        let (mut c, mut off) = (0, 0);
        for &(s, l) in dir {
            let bytes = l as u64 * lay.cluster;
            if at < bytes {
                c = s as u64;
                off = at;
                break;
            }
            at -= bytes;
        }
        let o = self.cluster_offset(c) + off;
        let unit = lay.entry_unit.min(lay.cluster);
        self.push(o, unit);
    }

    /// FAT32: FSInfo; NTFS: the file record and a `$LogFile` page.
    fn push_commit(&mut self, slot: u32) {
        match self.layout.kind {
            FsKind::Fat32 => self.push(SECTOR, SECTOR),
            FsKind::Ntfs => {
                self.push_log();
                self.push_record(slot);
            }
        }
    }

    fn push_log(&mut self) {
        let o = self.layout.log_start + self.log_pos;
        self.push(o, 4096.min(self.layout.log_bytes));
        self.log_pos = (self.log_pos + 4096) % self.layout.log_bytes.max(4096);
    }

    fn push_record(&mut self, slot: u32) {
        let recs = self.layout.mft_bytes / 1024;
        let o = self.layout.mft_start + (slot as u64 % recs) * 1024;
        self.push(o, 1024);
    }

    /// Puts a file of `bytes` on the volume; with `write`, queues its creation and
    /// starts its data.
    fn create_file(&mut self, bytes: u64, write: bool) {
        let slot = self.take_slot();
        let mut runs = Vec::new();
        self.allocate(bytes.div_ceil(self.layout.cluster), &mut runs);
        if runs.len() > 1 {
            self.counts.fragmented += 1;
        }
        self.files.push(File { slot, bytes, runs });
        if write {
            if self.layout.kind == FsKind::Ntfs {
                self.push_log();
                self.push_record(slot);
            }
            self.push_entry(slot);
            self.cursor = Some(Cursor {
                file: self.files.len() - 1,
                run: 0,
                within: 0,
                left: bytes,
                since_meta: 0,
                meta_run: 0,
                meta_within: 0,
            });
        }
    }

    fn delete_file(&mut self, i: usize) {
        // With `oldest`, files stay in creation order (`remove`), oldest first.
        let f = match self.delete {
            Delete::Random => self.files.swap_remove(i),
            Delete::Oldest => self.files.remove(i),
        };
        self.free_runs(&f.runs);
        for &(s, l) in &f.runs {
            self.push_table(s as u64, l as u64);
        }
        self.push_entry(f.slot);
        self.push_commit(f.slot);
        set_bit(&mut self.slots, f.slot as u64, false);
        self.slot_hint = self.slot_hint.min(f.slot as u64);
        self.counts.deleted += 1;
    }

    fn overwrite(&mut self, rng: &mut ChaCha8Rng) {
        let i = rng.gen_range(0..self.files.len());
        let cl = self.layout.cluster;
        let clusters = self.files[i].bytes.div_ceil(cl);
        let mut c = rng.gen_range(0..clusters);
        let len = (self.files[i].bytes - c * cl).min(self.write_bytes);
        let mut o = 0;
        for &(s, l) in &self.files[i].runs {
            if c < l as u64 {
                let room = (l as u64 - c) * cl;
                o = self.cluster_offset(s as u64 + c);
                let len = len.min(room);
                self.queue.push_back((o, len));
                break;
            }
            c -= l as u64;
        }
        debug_assert!(o > 0);
        let slot = self.files[i].slot;
        match self.layout.kind {
            FsKind::Fat32 => self.push_entry(slot),
            FsKind::Ntfs => {
                self.push_log();
                self.push_record(slot);
            }
        }
        self.counts.overwrites += 1;
    }

    /// Starts the next file operation.
    fn start(&mut self, rng: &mut ChaCha8Rng) {
        if !self.files.is_empty() && rng.gen::<f64>() < self.p_overwrite {
            self.overwrite(rng);
            return;
        }
        let bytes = self.draw_size(rng);
        let clusters = bytes.div_ceil(self.layout.cluster);
        let recs = if self.layout.kind == FsKind::Ntfs {
            self.layout.mft_bytes / 1024
        } else {
            u64::MAX
        };
        while !self.files.is_empty()
            && (self.used_count + clusters > self.limit || self.files.len() as u64 >= recs)
        {
            let i = match self.delete {
                Delete::Random => rng.gen_range(0..self.files.len()),
                Delete::Oldest => 0,
            };
            self.delete_file(i);
        }
        let free = self.layout.data_clusters - self.used_count;
        let bytes = bytes
            .min(free.saturating_sub(8) * self.layout.cluster)
            .max(SECTOR);
        self.create_file(bytes, true);
        self.counts.created += 1;
    }

    /// Queues allocation-table updates for the clusters written since the last one.
    fn flush_meta(&mut self, cur: &mut Cursor) {
        let runs = std::mem::take(&mut self.files[cur.file].runs);
        let (mut r, mut w) = (cur.meta_run, cur.meta_within);
        while r < cur.run || (r == cur.run && w < cur.within) {
            let (s, l) = runs[r];
            let end = if r == cur.run { cur.within } else { l };
            if end > w {
                self.push_table(s as u64 + w as u64, (end - w) as u64);
            }
            if r == cur.run {
                w = end;
                break;
            }
            r += 1;
            w = 0;
        }
        self.files[cur.file].runs = runs;
        cur.meta_run = r;
        cur.meta_within = w;
        cur.since_meta = 0;
    }

    /// The next request's (offset, length); the workload never ends.
    pub fn next_write(&mut self, rng: &mut ChaCha8Rng) -> (u64, u64) {
        loop {
            if let Some(w) = self.queue.pop_front() {
                return w;
            }
            let Some(mut cur) = self.cursor.take() else {
                self.start(rng);
                continue;
            };
            if cur.left == 0 {
                // The file is written: the rest of the table, its entry, the commit.
                self.flush_meta(&mut cur);
                let slot = self.files[cur.file].slot;
                self.push_entry(slot);
                self.push_commit(slot);
                continue;
            }
            let cl = self.layout.cluster;
            let (s, l) = self.files[cur.file].runs[cur.run];
            let room = (l - cur.within) as u64 * cl;
            let len = cur.left.min(self.write_bytes).min(room);
            let o = self.cluster_offset(s as u64 + cur.within as u64);
            let done_clusters = len.div_ceil(cl) as u32;
            cur.left -= len;
            cur.since_meta += len;
            cur.within += done_clusters;
            if cur.within == l && cur.run + 1 < self.files[cur.file].runs.len() {
                // The run is written; `flush_meta` walks the runs up to `run`.
                cur.run += 1;
                cur.within = 0;
            }
            if cur.since_meta >= self.meta_every && cur.left > 0 {
                self.flush_meta(&mut cur);
            }
            self.cursor = Some(cur);
            return (o, len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{Synthetic, SyntheticConfig};
    use ftlab_core::request::{Op, Request};
    use std::collections::HashMap;

    const MIB: u64 = 1 << 20;

    fn cfg(fs: FsConfig, count: u64) -> SyntheticConfig {
        SyntheticConfig {
            count,
            filesystem: Some(fs),
            ..Default::default()
        }
    }

    fn run(c: &SyntheticConfig, space: u64, seed: u64) -> (Vec<Request>, Layout, FsCounts) {
        c.validate(space).unwrap();
        let mut g = Synthetic::new(c, space, 2048, seed);
        let reqs: Vec<Request> = g.by_ref().collect();
        let fs = g.filesystem().unwrap();
        (reqs, fs.layout().clone(), fs.counts())
    }

    /// A small camera: 256 MiB, 200 KiB pictures.
    fn small_pic() -> FsConfig {
        FsConfig {
            files: Some(vec![FileKind {
                weight: 1.0,
                size_kib: Dist::Uniform {
                    min: 100.0,
                    max: 300.0,
                },
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn deterministic_in_range_write_only_and_sector_sized() {
        let c = cfg(small_pic(), 20_000);
        let (a, lay, counts) = run(&c, 256 * MIB, 3);
        let (b, _, _) = run(&c, 256 * MIB, 3);
        assert_eq!(a, b, "the seed replays the workload");
        let (d, _, _) = run(&c, 256 * MIB, 4);
        assert_ne!(a, d, "another seed, another workload");
        assert_eq!(a.len(), 20_000);
        assert!(a.iter().all(|r| r.op == Op::Write
            && r.len > 0
            && r.len <= 64 * 1024
            && r.offset.is_multiple_of(SECTOR)
            && r.len.is_multiple_of(SECTOR)
            && r.offset + r.len <= 256 * MIB));
        assert!(a.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        assert!(counts.initial_files > 1000, "{counts:?}");
        assert!(counts.created > 100 && counts.deleted > 100, "{counts:?}");
        assert_eq!(lay.kind, FsKind::Fat32);
        assert!(
            lay.data_start.is_multiple_of(lay.cluster),
            "cluster-aligned data"
        );
    }

    #[test]
    fn the_fat_is_rewritten_often_and_both_copies_alike() {
        let (reqs, lay, counts) = run(&cfg(small_pic(), 20_000), 256 * MIB, 1);
        let fat_end = lay.table_start + 2 * lay.table_bytes;
        assert_eq!(fat_end, lay.data_start);
        let mut per_sector: HashMap<u64, u32> = HashMap::new();
        let (mut fat1, mut fat2) = (0, 0);
        for r in &reqs {
            if r.offset >= lay.table_start && r.offset < fat_end {
                *per_sector.entry(r.offset / SECTOR).or_default() += 1;
                if r.offset < lay.table_start + lay.table_bytes {
                    fat1 += 1;
                } else {
                    fat2 += 1;
                }
            }
        }
        assert_eq!(fat1, fat2, "FAT32 writes both copies");
        // Every created file updates the FAT at its end and every deleted one too.
        assert!(
            fat1 as u64 >= counts.created + counts.deleted,
            "{fat1} {counts:?}"
        );
        let hottest = per_sector.values().max().copied().unwrap_or(0);
        assert!(
            hottest >= 10,
            "a FAT sector is rewritten many times: {hottest}"
        );
        // FSInfo (sector 1) once per file created or deleted.
        let fsinfo = reqs.iter().filter(|r| r.offset == SECTOR).count() as u64;
        assert!(
            fsinfo + 2 >= counts.created + counts.deleted,
            "{fsinfo} {counts:?}"
        );
    }

    #[test]
    fn files_are_contiguous_runs_of_clusters_written_in_order() {
        // Half full and 1-2 MiB files: few holes, so files are one run each.
        let fs = FsConfig {
            fill: 0.5,
            files: Some(vec![FileKind {
                weight: 1.0,
                size_kib: Dist::Uniform {
                    min: 1024.0,
                    max: 2048.0,
                },
            }]),
            ..Default::default()
        };
        let mut c = cfg(fs, 5_000);
        c.count = 5_000;
        c.validate(256 * MIB).unwrap();
        let mut g = Synthetic::new(&c, 256 * MIB, 2048, 9);
        let reqs: Vec<Request> = g.by_ref().collect();
        let fs = g.filesystem().unwrap();
        let lay = fs.layout().clone();
        // The allocator's state is consistent: runs disjoint, sized to the file.
        let mut seen = vec![false; lay.data_clusters as usize];
        let mut used = 0;
        for f in &fs.files {
            assert_eq!(
                f.runs.iter().map(|r| r.1 as u64).sum::<u64>(),
                f.bytes.div_ceil(lay.cluster)
            );
            for &(s, l) in &f.runs {
                for c in s..s + l {
                    assert!(!seen[c as usize], "cluster {c} in two files");
                    seen[c as usize] = true;
                    used += 1;
                }
            }
        }
        for d in &fs.dirs {
            used += d.iter().map(|r| r.1 as u64).sum::<u64>();
        }
        assert_eq!(used, fs.used_clusters());
        let counts = fs.counts();
        assert!(
            counts.fragmented * 10 <= counts.created + counts.initial_files,
            "{counts:?}"
        );
        // Data requests start on cluster boundaries and, within a file, where the
        // previous data request ended (metadata in between).
        // (Directory entries, 512 bytes, are in the data region too.)
        let data: Vec<&Request> = reqs
            .iter()
            .filter(|r| r.offset >= lay.data_start && r.len > SECTOR)
            .collect();
        assert!(data
            .iter()
            .filter(|r| r.len == 64 * 1024)
            .all(|r| (r.offset - lay.data_start).is_multiple_of(lay.cluster)));
        let seq = data
            .windows(2)
            .filter(|w| w[1].offset == w[0].offset + w[0].len)
            .count();
        assert!(seq * 10 >= data.len() * 9, "{seq} of {}", data.len());
    }

    #[test]
    fn deleted_clusters_are_reused() {
        let (reqs, lay, counts) = run(&cfg(small_pic(), 40_000), 256 * MIB, 5);
        assert!(counts.deleted > 0);
        // No overwrites in this profile: a data cluster written twice was freed by a
        // delete and allocated again.
        let mut writes: HashMap<u64, u32> = HashMap::new();
        for r in reqs.iter().filter(|r| r.offset >= lay.data_start) {
            let c = (r.offset - lay.data_start) / lay.cluster;
            *writes.entry(c).or_default() += 1;
        }
        // Directory clusters are rewritten too; count clusters written 2+ times with
        // a full-size data request.
        let reused = reqs
            .iter()
            .filter(|r| r.offset >= lay.data_start && r.len == 64 * 1024)
            .filter(|r| writes[&((r.offset - lay.data_start) / lay.cluster)] >= 2)
            .count();
        assert!(reused > 100, "{reused}");
        assert_eq!(counts.overwrites, 0);
    }

    #[test]
    fn ntfs_writes_the_log_the_mft_and_the_bitmap() {
        let fs = FsConfig {
            profile: Profile::Pc,
            ..Default::default()
        };
        let (reqs, lay, counts) = run(&cfg(fs, 20_000), 512 * MIB, 2);
        assert_eq!(lay.kind, FsKind::Ntfs);
        let within = |a: u64, n: u64| {
            reqs.iter()
                .filter(|r| r.offset >= a && r.offset < a + n)
                .count()
        };
        let log = within(lay.log_start, lay.log_bytes);
        let bitmap = within(lay.table_start, lay.table_bytes);
        let mft = within(lay.mft_start, lay.mft_bytes);
        assert!(
            log as u64 >= counts.created + counts.overwrites,
            "{log} {counts:?}"
        );
        assert!(bitmap as u64 >= counts.created, "{bitmap} {counts:?}");
        assert!(mft as u64 >= 2 * counts.created, "{mft} {counts:?}");
        assert!(
            counts.overwrites > 300 && counts.created > 300,
            "{counts:?}"
        );
        // Small files: the median request is well below 64 KiB.
        let mut lens: Vec<u64> = reqs.iter().map(|r| r.len).collect();
        lens.sort_unstable();
        assert!(lens[lens.len() / 2] <= 4096, "{}", lens[lens.len() / 2]);
    }

    #[test]
    fn oldest_first_deletion_writes_the_volume_like_a_circular_log() {
        let fs = FsConfig {
            delete: Delete::Oldest,
            ..small_pic()
        };
        let (reqs, lay, counts) = run(&cfg(fs, 20_000), 256 * MIB, 1);
        assert!(counts.deleted > 100, "{counts:?}");
        // Free space stays one run; a file is split only where it wraps round the
        // volume's end or meets a directory's clusters.
        assert!(counts.fragmented * 100 <= counts.created, "{counts:?}");
        // File data moves forward through the volume (wrapping once at most here).
        let data: Vec<&Request> = reqs
            .iter()
            .filter(|r| r.offset >= lay.data_start && r.len > SECTOR)
            .collect();
        let backwards = data
            .windows(2)
            .filter(|w| w[1].offset < w[0].offset)
            .count();
        assert!(backwards <= 5, "{backwards}");
    }

    #[test]
    fn profiles_carry_table_iv_means() {
        for (p, mb) in [
            (Profile::Pic, 1.9),
            (Profile::Mp3, 4.4),
            (Profile::Mov, 681.0),
        ] {
            let f = FsConfig {
                profile: p,
                ..Default::default()
            };
            let k = f.file_kinds();
            assert_eq!(k.len(), 1);
            assert!((k[0].size_kib.mean() - mb * 1e6 / 1024.0).abs() < 1e-6);
            assert_eq!(f.kind(), FsKind::Fat32);
            assert_eq!(f.p_overwrite(), 0.0);
        }
        let pmp = FsConfig {
            profile: Profile::Pmp,
            ..Default::default()
        };
        assert_eq!(pmp.file_kinds().len(), 3);
        // The NTFS profiles (§5.1: PC, PCMark, Install and SYSmark run on NTFS).
        for (p, overwrite, kinds) in [
            (Profile::Pc, 0.5, 3),
            (Profile::Install, 0.1, 3),
            (Profile::Sysmark, 0.6, 4),
        ] {
            let f = FsConfig {
                profile: p,
                ..Default::default()
            };
            assert_eq!(f.kind(), FsKind::Ntfs);
            assert_eq!(f.p_overwrite(), overwrite);
            let k = f.file_kinds();
            assert_eq!(k.len(), kinds);
            assert!((k.iter().map(|k| k.weight).sum::<f64>() - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn install_and_sysmark_write_ntfs_metadata_and_many_small_requests() {
        for p in [Profile::Install, Profile::Sysmark] {
            let fs = FsConfig {
                profile: p,
                ..Default::default()
            };
            let (reqs, lay, counts) = run(&cfg(fs, 10_000), 1024 * MIB, 3);
            assert_eq!(lay.kind, FsKind::Ntfs);
            assert!(counts.created > 100, "{p:?}: {counts:?}");
            let mft = reqs
                .iter()
                .filter(|r| r.offset >= lay.mft_start && r.offset < lay.mft_start + lay.mft_bytes)
                .count();
            assert!(mft as u64 >= 2 * counts.created, "{p:?}: {mft} {counts:?}");
            // Metadata and small files: a quarter of the requests or more are 4 KiB or
            // less (§5.3: "a large number of small random accesses").
            let small = reqs.iter().filter(|r| r.len <= 4096).count();
            assert!(small * 4 >= reqs.len(), "{p:?}: {small} of {}", reqs.len());
        }
    }

    #[test]
    fn bad_settings_name_the_key() {
        for (fs, key) in [
            (
                FsConfig {
                    cluster_kib: 3,
                    ..Default::default()
                },
                "cluster_kib",
            ),
            (
                FsConfig {
                    fill: 1.0,
                    ..Default::default()
                },
                "fill",
            ),
            (
                FsConfig {
                    files: Some(vec![]),
                    ..Default::default()
                },
                "files",
            ),
        ] {
            let e = cfg(fs, 10).validate(64 * MIB).unwrap_err();
            assert!(e.contains(key), "{e}");
        }
        let e = cfg(FsConfig::default(), 10)
            .validate(64 * 1024)
            .unwrap_err();
        assert!(e.contains("too small"), "{e}");
    }
}
