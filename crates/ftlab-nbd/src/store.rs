//! The bytes of an export: what a client writes, it reads back. Separate from the FTL
//! model (which decides the flash operations and never holds payloads).
//!
//! Two kinds: [`Store::memory`], sparse chunks of 64 KiB allocated on first write up to a
//! byte limit (never-written bytes read as zeroes), and [`Store::file`], a backing file
//! of the export's size (sparse where the file system allows), read and written in
//! place.
//!
//! Choices: a write that would take the memory store over its limit fails whole with
//! [`StoreError::Full`] before any byte changes (no half-written request); zeroing
//! (trim, write-zeroes) frees the memory chunks it covers entirely and punches a hole in
//! a backing file (`fallocate`, zeroes written where the file system cannot); `sync` makes a
//! backing file's data durable (`fdatasync`), for flushes and FUA writes.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Bytes per chunk of the memory store.
pub const CHUNK: u64 = 64 * 1024;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The memory store would exceed its limit.
    #[error("the memory store is full ({limit} bytes; raise --store-limit or use --store FILE)")]
    Full {
        /// The limit in bytes.
        limit: u64,
    },
    /// The backing file failed.
    #[error("backing file: {0}")]
    Io(#[from] io::Error),
}

/// An export's bytes.
pub enum Store {
    /// Sparse memory.
    Memory {
        /// Export size.
        size: u64,
        /// Most bytes of chunks held.
        limit: u64,
        /// Chunk index -> its bytes.
        chunks: HashMap<u64, Box<[u8]>>,
    },
    /// A backing file.
    File {
        /// Export size.
        size: u64,
        /// The file.
        file: File,
    },
}

impl Store {
    /// A memory store of `size` bytes holding at most `limit` bytes of chunks.
    pub fn memory(size: u64, limit: u64) -> Store {
        Store::Memory {
            size,
            limit,
            chunks: HashMap::new(),
        }
    }

    /// A store backed by `path`, created if missing and sized to `size` bytes (a
    /// longer file is refused: its tail would be silently out of reach).
    pub fn file(path: &Path, size: u64) -> io::Result<Store> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let len = file.metadata()?.len();
        if len > size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the file has {len} bytes, more than the export's {size}"),
            ));
        }
        file.set_len(size)?;
        Ok(Store::File { size, file })
    }

    /// Export size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            Store::Memory { size, .. } | Store::File { size, .. } => *size,
        }
    }

    /// Bytes of memory the store holds (0 for a file).
    pub fn resident(&self) -> u64 {
        match self {
            Store::Memory { chunks, .. } => chunks.len() as u64 * CHUNK,
            Store::File { .. } => 0,
        }
    }

    /// Reads `buf.len()` bytes at `offset` (the caller checked the range).
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        match self {
            Store::File { file, .. } => Ok(file.read_exact_at(buf, offset)?),
            Store::Memory { chunks, .. } => {
                for_chunks(offset, buf.len(), |idx, at, range| match chunks.get(&idx) {
                    Some(c) => buf[range.clone()].copy_from_slice(&c[at..at + range.len()]),
                    None => buf[range].fill(0),
                });
                Ok(())
            }
        }
    }

    /// Writes `data` at `offset` (the caller checked the range): all of it, or nothing.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        match self {
            Store::File { file, .. } => Ok(file.write_all_at(data, offset)?),
            Store::Memory { limit, chunks, .. } => {
                let first = offset / CHUNK;
                let end = (offset + data.len() as u64).div_ceil(CHUNK);
                let new = (first..end).filter(|i| !chunks.contains_key(i)).count() as u64;
                if (chunks.len() as u64 + new) * CHUNK > *limit {
                    return Err(StoreError::Full { limit: *limit });
                }
                for_chunks(offset, data.len(), |idx, at, range| {
                    let c = chunks
                        .entry(idx)
                        .or_insert_with(|| vec![0; CHUNK as usize].into_boxed_slice());
                    c[at..at + range.len()].copy_from_slice(&data[range]);
                });
                Ok(())
            }
        }
    }

    /// Sets `len` bytes at `offset` to zero (the caller checked the range).
    pub fn zero(&mut self, offset: u64, len: u64) -> Result<(), StoreError> {
        match self {
            Store::File { file, .. } => {
                if punch_hole(file, offset, len)? {
                    return Ok(());
                }
                let zeroes = vec![0u8; CHUNK.min(len) as usize];
                let mut at = offset;
                while at < offset + len {
                    let n = (offset + len - at).min(CHUNK) as usize;
                    file.write_all_at(&zeroes[..n], at)?;
                    at += n as u64;
                }
                Ok(())
            }
            Store::Memory { chunks, .. } => {
                let end = offset + len;
                // Whole chunks go; a range wider than what is held (a whole-device trim)
                // visits the held chunks, not every chunk of the range.
                let (first, last) = (offset.div_ceil(CHUNK), end / CHUNK);
                if first < last {
                    if last - first > chunks.len() as u64 {
                        chunks.retain(|&i, _| i < first || i >= last);
                    } else {
                        for i in first..last {
                            chunks.remove(&i);
                        }
                    }
                }
                // The partial chunks at either end are zeroed in place.
                let mut partial = |from: u64, to: u64| {
                    if from < to {
                        for_chunks(from, (to - from) as usize, |idx, at, range| {
                            if let Some(c) = chunks.get_mut(&idx) {
                                c[at..at + range.len()].fill(0);
                            }
                        });
                    }
                };
                if first < last {
                    partial(offset, first * CHUNK);
                    partial(last * CHUNK, end);
                } else {
                    partial(offset, end);
                }
                Ok(())
            }
        }
    }

    /// Makes written data durable (a file's `fdatasync`; nothing for memory).
    pub fn sync(&mut self) -> Result<(), StoreError> {
        match self {
            Store::File { file, .. } => Ok(file.sync_data()?),
            Store::Memory { .. } => Ok(()),
        }
    }
}

/// Deallocates `len` bytes at `offset` of `file` (they read as zeroes after), keeping
/// its size: `Ok(false)` when the file system cannot (the caller writes zeroes).
fn punch_hole(file: &File, offset: u64, len: u64) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Ok(false);
    };
    // SAFETY: a plain system call on an open descriptor; no memory is passed.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            n,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::EINVAL) => Ok(false),
        _ => Err(e),
    }
}

/// Calls `f(chunk index, offset in the chunk, range in the buffer)` for each chunk the
/// bytes `offset .. offset + len` touch.
fn for_chunks(offset: u64, len: usize, mut f: impl FnMut(u64, usize, std::ops::Range<usize>)) {
    let mut done = 0usize;
    while done < len {
        let at = offset + done as u64;
        let in_chunk = (at % CHUNK) as usize;
        let n = (len - done).min(CHUNK as usize - in_chunk);
        f(at / CHUNK, in_chunk, done..done + n);
        done += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Random writes and zeroings across chunk boundaries read back as on a plain
        /// byte array, from memory and from a file alike.
        #[test]
        fn behaves_as_a_byte_array(ops in proptest::collection::vec(
            (0u64..300_000, 1usize..150_000, any::<u8>(), any::<bool>()), 1..20)) {
            let size = 512 * 1024;
            let dir = std::env::temp_dir().join(format!("ftlab-nbd-store-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("{}.img", ops.len() ^ ops[0].0 as usize));
            let _ = std::fs::remove_file(&path);
            let mut stores = [Store::memory(size, u64::MAX), Store::file(&path, size).unwrap()];
            let mut model = vec![0u8; size as usize];
            for (off, len, byte, zero) in ops {
                let len = len.min((size - off) as usize);
                for s in &mut stores {
                    if zero {
                        s.zero(off, len as u64).unwrap();
                    } else {
                        s.write(off, &vec![byte; len]).unwrap();
                    }
                }
                model[off as usize..off as usize + len].fill(if zero { 0 } else { byte });
            }
            for s in &stores {
                let mut back = vec![1u8; size as usize];
                s.read(0, &mut back).unwrap();
                prop_assert!(back == model);
            }
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn the_limit_refuses_a_write_whole() {
        let mut s = Store::memory(1 << 20, 2 * CHUNK);
        s.write(0, &[7; 100]).unwrap();
        // Needs two more chunks; one is allowed: nothing is written.
        let err = s
            .write(CHUNK - 10, &vec![9; 2 * CHUNK as usize])
            .unwrap_err();
        assert!(matches!(err, StoreError::Full { .. }), "{err}");
        let mut back = [0u8; 20];
        s.read(CHUNK - 10, &mut back).unwrap();
        assert_eq!(back, [0; 20]);
        assert_eq!(s.resident(), CHUNK);
        // Zeroing a whole chunk frees it.
        s.zero(0, CHUNK).unwrap();
        assert_eq!(s.resident(), 0);
    }

    #[test]
    fn zeroing_a_whole_huge_device_is_quick_and_exact() {
        // 1 TiB in memory; 256 MiB in a file (at worst, where the file system cannot
        // punch holes, 256 MiB of zeroes are written).
        let mut m = Store::memory(1 << 40, u64::MAX);
        let path = std::env::temp_dir().join(format!("ftlab-nbd-huge-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut f = Store::file(&path, 256 << 20).unwrap();
        for s in [&mut m, &mut f] {
            let size = s.size();
            let at = size / 8;
            s.write(at, &[7; 3 * CHUNK as usize]).unwrap();
            s.write(size - 512, &[9; 512]).unwrap();
            let t = std::time::Instant::now();
            // Keeps the first 100 bytes of the first chunk written.
            s.zero(at + 100, size - at - 100).unwrap();
            assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
            let mut back = [1u8; 200];
            s.read(at, &mut back).unwrap();
            assert!(back[..100].iter().all(|&b| b == 7) && back[100..].iter().all(|&b| b == 0));
            let mut tail = [1u8; 512];
            s.read(size - 512, &mut tail).unwrap();
            assert_eq!(tail, [0; 512]);
        }
        assert_eq!(m.resident(), CHUNK);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_longer_backing_file_is_refused() {
        let path = std::env::temp_dir().join(format!("ftlab-nbd-long-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let err = Store::file(&path, 1024).err().expect("refused");
        assert!(err.to_string().contains("more than the export"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }
}
