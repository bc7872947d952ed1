//! Replays the fuzzing corpora (`fuzz/corpus/<target>/`: the seeds, and every input a
//! fuzzer once crashed on, kept as a regression) through the same entry points the
//! cargo-fuzz targets call. None may panic.

use std::path::Path;

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let dir = fuzz.join("corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
    // The minimised corpus fuzz/soak.sh keeps (inputs that added coverage in the long
    // rounds, named by their SHA-1 as libFuzzer names them), when a round has made one.
    if let Ok(min) = std::fs::read_dir(fuzz.join("min").join(target)) {
        files.extend(min.map(|e| e.unwrap().path()));
    }
    files.sort();
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn reader_corpora_do_not_panic() {
    for format in ftlab_workload::fuzzing::FUZZ_FORMATS {
        let mut records = 0;
        for (name, data) in corpus(&format!("read_{format}")) {
            let (ok, _bad) = ftlab_workload::fuzzing::read_all(format, &data);
            records += ok;
            let _ = name;
        }
        assert!(records > 0, "{format}: the seeds should hold valid records");
    }
}

#[test]
fn config_corpus_does_not_panic() {
    let valid = corpus("config")
        .iter()
        .filter(|(_, data)| ftlab::fuzzing::config_bytes(data))
        .count();
    assert!(valid > 0, "the seeds should hold valid configs");
}

#[test]
fn decompress_corpus_does_not_panic() {
    let mut read = 0;
    for (name, data) in corpus("decompress") {
        let got = ftlab_workload::fuzzing::decompress_and_read(&data);
        if name.ends_with("zip-refused") {
            assert_eq!(got, None, "{name}: zip is refused by name");
        }
        // The kept seeds only: entries a fuzzing run added (40 hex digits, git-ignored,
        // present after a local run) are replayed for panics but read what they read.
        let file = Path::new(&name).file_name().map(|f| f.to_string_lossy());
        let grown = file.is_some_and(|f| f.len() == 40 && f.bytes().all(|b| b.is_ascii_hexdigit()));
        if let (Some((ok, _)), false) = (got, grown) {
            read += ok;
        }
    }
    // plain, gzip, zstd, bzip2, xz: 30 records each, and two gzip members: 60.
    assert_eq!(read, 5 * 30 + 60, "every seed format reads back");
}

#[test]
fn transforms_corpus_does_not_panic() {
    let ran = corpus("transforms")
        .iter()
        .filter_map(|(_, data)| ftlab_workload::fuzzing::transforms(data))
        .count();
    assert!(ran > 0, "the seeds should hold valid settings");
}

#[test]
fn set_corpus_does_not_panic() {
    let valid = corpus("set")
        .iter()
        .filter(|(_, data)| ftlab::fuzzing::set_bytes(data))
        .count();
    assert!(valid > 0, "the seeds should hold valid settings");
}
