//! Opening trace files: plain, gzip, zstd, bzip2 or xz, recognised by their first bytes
//! (the file name does not matter), and writing them compressed by the output's
//! extension.
//!
//! Choice: decompression is detected from the magic number rather than the extension,
//! so a renamed or extension-less compressed trace still reads; concatenated gzip,
//! bzip2 and xz members (as `cat a.gz b.gz` produces) are read as one stream. A file
//! compressed with something ftlab does not read (zip, 7z, lz4, lzip, rar) is refused
//! by name rather than parsed as text. bzip2 and xz are decoded in pure Rust (crates
//! `bzip2` on `libbz2-rs-sys`, and `lzma-rust2`), so no system library is needed.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
const XZ_MAGIC: [u8; 6] = [0xfd, b'7', b'z', b'X', b'Z', 0x00];
/// Magic numbers of compressed formats ftlab recognises but does not read.
const OTHER_MAGIC: &[(&[u8], &str)] = &[
    (b"PK\x03\x04", "zip"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"LZIP", "lzip"),
    (b"Rar!", "rar"),
];
const BUF_BYTES: usize = 1 << 18;

/// How a file is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip (`.gz`).
    Gzip,
    /// Zstandard (`.zst`).
    Zstd,
    /// bzip2 (`.bz2`).
    Bzip2,
    /// xz (`.xz`; read only).
    Xz,
}

/// Recognises the compression of a stream from its first bytes.
pub fn sniff(head: &[u8]) -> Compression {
    if head.starts_with(&GZIP_MAGIC) {
        Compression::Gzip
    } else if head.starts_with(&ZSTD_MAGIC) {
        Compression::Zstd
    } else if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
        Compression::Bzip2
    } else if head.starts_with(&XZ_MAGIC) {
        Compression::Xz
    } else {
        Compression::None
    }
}

/// The name of a compressed format ftlab recognises by its magic number but does not
/// read, if `head` starts with one.
pub fn unsupported_compression(head: &[u8]) -> Option<&'static str> {
    OTHER_MAGIC
        .iter()
        .find(|(m, _)| head.starts_with(m))
        .map(|(_, name)| *name)
}

/// Opens a file for buffered reading, decompressing gzip, zstd, bzip2 or xz
/// transparently; a file compressed in another format is an `InvalidData` error that
/// names it.
pub fn open_input(path: &Path) -> io::Result<Box<dyn BufRead>> {
    decompressing(File::open(path)?)
}

/// [`open_input`] over any byte source: buffered, decompressed by its first bytes. A
/// compressed source is decompressed on a thread of its own, [`PREFETCH_CHUNKS`] chunks
/// of [`CHUNK_BYTES`] ahead of the reader, so decompression overlaps parsing and
/// simulation instead of adding to them.
pub fn decompressing<R: Read + Send + 'static>(source: R) -> io::Result<Box<dyn BufRead>> {
    let mut raw = BufReader::with_capacity(BUF_BYTES, source);
    let head = raw.fill_buf()?;
    if let Some(name) = unsupported_compression(head) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the file is compressed with {name}, which ftlab does not read; decompress it \
                 first (ftlab reads plain text and gzip, zstd, bzip2 or xz input)"
            ),
        ));
    }
    let kind = sniff(head);
    Ok(match kind {
        Compression::None => Box::new(raw),
        Compression::Gzip => prefetched(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Zstd => prefetched(zstd::stream::read::Decoder::with_buffer(raw)?),
        Compression::Bzip2 => prefetched(bzip2::bufread::MultiBzDecoder::new(raw)),
        Compression::Xz => prefetched(lzma_rust2::XzReader::new(raw, true)),
    })
}

/// Bytes the decompressing thread hands over at a time.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Chunks it may run ahead of the reader (so at most this many MiB wait in memory).
pub const PREFETCH_CHUNKS: usize = 4;

/// Reads `inner` to its end on a thread of its own, in chunks sent through a bounded
/// channel. The thread stops at the end, at the first error (which the reader then
/// gets, after the bytes before it), or when the reader is dropped.
fn prefetched<D: Read + Send + 'static>(mut inner: D) -> Box<dyn BufRead> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<io::Result<Vec<u8>>>(PREFETCH_CHUNKS);
    std::thread::spawn(move || loop {
        let mut chunk = vec![0u8; CHUNK_BYTES];
        let mut filled = 0;
        let result = loop {
            match inner.read(&mut chunk[filled..]) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    filled += n;
                    if filled == chunk.len() {
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        chunk.truncate(filled);
        let last = filled < CHUNK_BYTES || result.is_err();
        if filled > 0 && tx.send(Ok(chunk)).is_err() {
            return; // the reader is gone
        }
        if let Err(e) = result {
            let _ = tx.send(Err(e));
            return;
        }
        if last {
            return;
        }
    });
    Box::new(Prefetched {
        rx,
        chunk: Vec::new(),
        pos: 0,
        done: false,
    })
}

/// The reading end of [`prefetched`].
struct Prefetched {
    rx: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Read for Prefetched {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Prefetched {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.chunk.len() && !self.done {
            match self.rx.recv() {
                Ok(Ok(chunk)) => {
                    self.chunk = chunk;
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                // The thread finished: everything was delivered.
                Err(_) => self.done = true,
            }
        }
        Ok(&self.chunk[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.chunk.len());
    }
}

/// The compression an output file gets from its extension (`.gz`, `.zst`, `.bz2`, else
/// none).
pub fn compression_for(path: &Path) -> Compression {
    match path.extension().and_then(|e| e.to_str()) {
        Some("gz") => Compression::Gzip,
        Some("zst") | Some("zstd") => Compression::Zstd,
        Some("bz2") => Compression::Bzip2,
        _ => Compression::None,
    }
}

/// A buffered writer that compresses as asked; call [`Output::finish`] to flush it and
/// write the compressed stream's trailer.
pub enum Output<W: Write> {
    /// Plain.
    Plain(io::BufWriter<W>),
    /// gzip.
    Gzip(flate2::write::GzEncoder<io::BufWriter<W>>),
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, io::BufWriter<W>>),
    /// bzip2.
    Bzip2(bzip2::write::BzEncoder<io::BufWriter<W>>),
}

impl<W: Write> Output<W> {
    /// Wraps `inner`.
    pub fn new(inner: W, compression: Compression) -> io::Result<Self> {
        let buf = io::BufWriter::with_capacity(BUF_BYTES, inner);
        Ok(match compression {
            Compression::None => Output::Plain(buf),
            Compression::Gzip => Output::Gzip(flate2::write::GzEncoder::new(
                buf,
                flate2::Compression::default(),
            )),
            Compression::Zstd => Output::Zstd(zstd::stream::write::Encoder::new(buf, 3)?),
            Compression::Bzip2 => Output::Bzip2(bzip2::write::BzEncoder::new(
                buf,
                bzip2::Compression::default(),
            )),
            Compression::Xz => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "ftlab reads xz but does not write it (use .gz, .zst or .bz2)",
                ))
            }
        })
    }

    /// Flushes everything and finishes the compressed stream.
    pub fn finish(self) -> io::Result<()> {
        match self {
            Output::Plain(mut w) => w.flush(),
            Output::Gzip(e) => e.finish()?.flush(),
            Output::Zstd(e) => e.finish()?.flush(),
            Output::Bzip2(e) => e.finish()?.flush(),
        }
    }
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Plain(w) => w.write(buf),
            Output::Gzip(w) => w.write(buf),
            Output::Zstd(w) => w.write(buf),
            Output::Bzip2(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Gzip(w) => w.flush(),
            Output::Zstd(w) => w.flush(),
            Output::Bzip2(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn roundtrip(c: Compression, ext: &str) {
        let dir = std::env::temp_dir().join(format!("ftlab-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("t.{ext}"));
        assert_eq!(compression_for(&path), c);
        let text = "0,1,512,w,0.0\n".repeat(1000);
        let mut out = Output::new(File::create(&path).unwrap(), c).unwrap();
        out.write_all(text.as_bytes()).unwrap();
        out.finish().unwrap();
        let raw = std::fs::read(&path).unwrap();
        assert_eq!(sniff(&raw), c);
        if c != Compression::None {
            assert!(raw.len() < text.len() / 4, "{ext} did not compress");
        }
        let mut back = String::new();
        open_input(&path)
            .unwrap()
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, text);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plain_gzip_and_zstd_round_trip() {
        roundtrip(Compression::None, "txt");
        roundtrip(Compression::Gzip, "gz");
        roundtrip(Compression::Zstd, "zst");
        roundtrip(Compression::Bzip2, "bz2");
    }

    #[test]
    fn xz_is_read_by_magic_and_other_compressors_are_named() {
        let dir = std::env::temp_dir().join(format!("ftlab-input-xz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "0,1,512,w,0.0\n".repeat(1000);
        let mut w =
            lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(6)).unwrap();
        w.write_all(text.as_bytes()).unwrap();
        let xz = w.finish().unwrap();
        assert_eq!(sniff(&xz), Compression::Xz);
        let path = dir.join("no-extension");
        std::fs::write(&path, &xz).unwrap();
        let mut back = String::new();
        open_input(&path)
            .unwrap()
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, text);
        let zip = dir.join("t.zip");
        std::fs::write(&zip, b"PK\x03\x04rest").unwrap();
        let e = open_input(&zip).err().unwrap().to_string();
        assert!(e.contains("compressed with zip"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Many chunks through the decompressing thread come back whole and in order; a
    /// reader dropped half-way stops the thread (the test would hang otherwise); a
    /// stream cut short gives its bytes, then the decoder's error.
    #[test]
    fn prefetched_streams_read_back_in_order_and_stop_cleanly() {
        let text: Vec<u8> = (0..(3 * CHUNK_BYTES as u64 + 12345))
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let mut gz = Vec::new();
        let mut out = Output::new(&mut gz, Compression::Gzip).unwrap();
        out.write_all(&text).unwrap();
        out.finish().unwrap();
        let mut back = Vec::new();
        decompressing(std::io::Cursor::new(gz.clone()))
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert!(
            back == text,
            "read back {} of {} bytes",
            back.len(),
            text.len()
        );
        for _ in 0..20 {
            let mut r = decompressing(std::io::Cursor::new(gz.clone())).unwrap();
            let mut some = vec![0u8; 1000];
            r.read_exact(&mut some).unwrap();
            assert_eq!(some, text[..1000]);
        }
        let cut = gz[..gz.len() / 2].to_vec();
        let mut part = Vec::new();
        let err = decompressing(std::io::Cursor::new(cut))
            .unwrap()
            .read_to_end(&mut part);
        assert!(err.is_err(), "a cut stream must end in an error");
    }
}
