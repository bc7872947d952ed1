//! Replays the fuzzing corpora (`fuzz/corpus/<target>/`: the seeds, and every input a
//! fuzzer once crashed on, kept as a regression) through the same entry points the
//! cargo-fuzz targets call. None may panic.

use std::path::Path;

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
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
