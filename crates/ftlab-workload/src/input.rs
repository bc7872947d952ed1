//! Opening trace files: plain text, gzip or zstd, recognised by their first bytes (the
//! file name does not matter), and writing them compressed by the output's extension.
//!
//! Choice: decompression is detected from the magic number rather than the extension,
//! so a renamed or extension-less compressed trace still reads; concatenated gzip
//! members (as `cat a.gz b.gz` produces) are read as one stream.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
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
}

/// Recognises the compression of a stream from its first bytes.
pub fn sniff(head: &[u8]) -> Compression {
    if head.starts_with(&GZIP_MAGIC) {
        Compression::Gzip
    } else if head.starts_with(&ZSTD_MAGIC) {
        Compression::Zstd
    } else {
        Compression::None
    }
}

/// Opens a file for buffered reading, decompressing gzip or zstd transparently.
pub fn open_input(path: &Path) -> io::Result<Box<dyn BufRead>> {
    let file = File::open(path)?;
    let mut raw = BufReader::with_capacity(BUF_BYTES, file);
    let kind = sniff(raw.fill_buf()?);
    Ok(match kind {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUF_BYTES,
            flate2::bufread::MultiGzDecoder::new(raw),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            BUF_BYTES,
            zstd::stream::read::Decoder::with_buffer(raw)?,
        )),
    })
}

/// The compression an output file gets from its extension (`.gz`, `.zst`, else none).
pub fn compression_for(path: &Path) -> Compression {
    match path.extension().and_then(|e| e.to_str()) {
        Some("gz") => Compression::Gzip,
        Some("zst") | Some("zstd") => Compression::Zstd,
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
        })
    }

    /// Flushes everything and finishes the compressed stream.
    pub fn finish(self) -> io::Result<()> {
        match self {
            Output::Plain(mut w) => w.flush(),
            Output::Gzip(e) => e.finish()?.flush(),
            Output::Zstd(e) => e.finish()?.flush(),
        }
    }
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Plain(w) => w.write(buf),
            Output::Gzip(w) => w.write(buf),
            Output::Zstd(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Gzip(w) => w.flush(),
            Output::Zstd(w) => w.flush(),
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
    }

    #[test]
    fn plain_gzip_and_zstd_round_trip() {
        roundtrip(Compression::None, "txt");
        roundtrip(Compression::Gzip, "gz");
        roundtrip(Compression::Zstd, "zst");
    }
}
