//! Every reader on its real sample (copies of `shared/traces`, the larger ones gzipped,
//! which also exercises transparent decompression): counts and read/write ratios as
//! `shared/traces/README.md` states them.

use ftlab_core::request::Op;
use ftlab_workload::csv::CsvSpec;
use ftlab_workload::stats::{self, TraceStats};
use ftlab_workload::transform::{self, Counters, TransformSpec};
use ftlab_workload::{open_records, ReadOptions, Record};
use std::path::PathBuf;
use std::rc::Rc;

fn data(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).join(name)
}

fn read_all(name: &str, format: &str, opts: &ReadOptions) -> Vec<Record> {
    open_records(&data(name), format, opts)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

fn stats_of(name: &str, format: &str, opts: &ReadOptions) -> TraceStats {
    stats::collect(open_records(&data(name), format, opts).unwrap(), 4096).unwrap()
}

fn writes_pct(s: &TraceStats) -> f64 {
    (s.write_ratio.unwrap() * 100.0).round()
}

#[test]
fn spc_financial1() {
    let s = stats_of("financial1-first10k.spc", "spc", &ReadOptions::default());
    assert_eq!(s.requests, 10_000);
    assert_eq!(s.writes, 5923);
    assert_eq!(writes_pct(&s), 59.0);
    assert_eq!(s.devices.len(), 22, "ASUs 0-21");
    assert_eq!(*s.devices.keys().last().unwrap(), 21);
    assert_eq!(s.duration_ns / 1_000_000_000, 259, "260 s");
}

#[test]
fn ssdsim_copy_is_the_same_records_as_spc() {
    let o = ReadOptions::default();
    let spc = read_all("financial1-first10k.spc", "spc", &o);
    let ssd = read_all("financial1-first10k.ssdsim.ascii", "ssdsim", &o);
    assert_eq!(spc.len(), 10_000);
    assert_eq!(spc.len(), ssd.len());
    for (a, b) in spc.iter().zip(&ssd) {
        // The SPC copy was rebuilt with timestamps rounded to the µs (ties either way).
        let d = a.req.arrival.0.abs_diff(b.req.arrival.0);
        assert!(d <= 500, "line {}: {d} ns apart", a.line);
        let (mut a, b) = (*a, *b);
        a.req.arrival = b.req.arrival;
        assert_eq!(a, b);
    }
}

#[test]
fn msr_hm0() {
    let s = stats_of("msr-hm0-sample.csv", "msr", &ReadOptions::default());
    assert_eq!(s.requests, 1000);
    assert_eq!(s.writes, 492);
    assert_eq!(writes_pct(&s), 49.0);
    assert_eq!(s.first_arrival_ns, Some(0));
}

#[test]
fn mqsim_websearch_gzipped() {
    let s = stats_of(
        "websearch-small.mqsim.trace.gz",
        "mqsim",
        &ReadOptions::default(),
    );
    assert_eq!(s.requests, 24_783);
    assert_eq!(s.writes, 4);
    assert_eq!(
        (s.read_ratio.unwrap() * 10_000.0).round(),
        9998.0,
        "99.98% reads"
    );
    assert_eq!(s.devices.len(), 6);
}

#[test]
fn mqsim_tpcc() {
    let s = stats_of("tpcc-small.mqsim.trace", "mqsim", &ReadOptions::default());
    assert_eq!(s.requests, 6999);
    assert_eq!(writes_pct(&s), 37.0);
    assert_eq!(s.devices.len(), 16);
    assert_eq!(s.duration_ns / 1_000_000, 136, "136 ms");
}

#[test]
fn blkparse_ycsb_corrupt_timestamp_stops_by_default() {
    let all: Vec<_> = open_records(
        &data("ycsb-ext4.blkparse.txt.gz"),
        "blkparse",
        &ReadOptions::default(),
    )
    .unwrap()
    .collect();
    let errors: Vec<_> = all.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1);
    let e = errors[0];
    assert_eq!((e.line, e.field), (29662, "time"));
    assert!(e.file.ends_with("ycsb-ext4.blkparse.txt.gz"));
    assert!(e.to_string().contains("1266874889.708668759"), "{e}");
    assert_eq!(all.len(), 9887, "D events");
}

#[test]
fn blkparse_ycsb_skip_bad_counts_the_corrupt_record() {
    let counters = Rc::new(Counters::default());
    let spec = TransformSpec {
        skip_bad: true,
        ..Default::default()
    };
    let stream = open_records(
        &data("ycsb-ext4.blkparse.txt.gz"),
        "blkparse",
        &ReadOptions::default(),
    )
    .unwrap();
    let s = stats::collect(
        transform::per_pass(stream, &spec, None, &counters, true),
        4096,
    )
    .unwrap();
    assert_eq!(counters.skipped_records.get(), 1);
    assert_eq!(s.requests, 9886);
    assert_eq!((s.reads, s.writes), (9038, 848));
    assert!(s.out_of_order > 0, "per-CPU output is not time-ordered");
    assert!(s.last_arrival_ns.unwrap() < 811_000_000_000);
    // A sort window puts it in order.
    let sorted = TransformSpec {
        skip_bad: true,
        sort_window: 4096,
        ..Default::default()
    };
    let stream = open_records(
        &data("ycsb-ext4.blkparse.txt.gz"),
        "blkparse",
        &ReadOptions::default(),
    )
    .unwrap();
    let c2 = Rc::new(Counters::default());
    let s = stats::collect(transform::per_pass(stream, &sorted, None, &c2, true), 4096).unwrap();
    assert_eq!((s.requests, s.out_of_order), (9886, 0));
}

#[test]
fn generic_reader_on_wiscsee_sqlite() {
    let opts = ReadOptions {
        csv: CsvSpec {
            delimiter: "whitespace".into(),
            time: Some(5),
            op: Some(2),
            offset: Some(3),
            size: Some(4),
            filter_column: Some(1),
            filter_values: vec!["D".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let r = read_all("sqlite-wal-update.wiscsee.txt.gz", "csv", &opts);
    assert_eq!(r.len(), 5008, "D events");
    let count = |op| r.iter().filter(|x| x.req.op == op).count();
    assert_eq!(
        (count(Op::Write), count(Op::Read), count(Op::Trim)),
        (5003, 4, 1)
    );
    assert_eq!(
        (count(Op::Write) as f64 / r.len() as f64 * 1000.0).round(),
        999.0,
        "99.9% writes"
    );
}

#[test]
fn generic_reader_reads_msr_like_the_msr_reader() {
    let opts = ReadOptions {
        csv: CsvSpec {
            time: Some(0),
            device: Some(2),
            op: Some(3),
            offset: Some(4),
            size: Some(5),
            time_unit: ftlab_workload::csv::TimeUnit::Ns100,
            rebase_time: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let a = read_all("msr-hm0-sample.csv", "csv", &opts);
    let b = read_all("msr-hm0-sample.csv", "msr", &ReadOptions::default());
    assert_eq!(a, b);
}

#[test]
fn zstd_input_is_decompressed() {
    let plain = std::fs::read(data("financial1-first10k.spc")).unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ftlab-samples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f1.spc.zst");
    std::fs::write(&path, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    let n = open_records(&path, "spc", &ReadOptions::default())
        .unwrap()
        .filter(|r| r.is_ok())
        .count();
    assert_eq!(n, 10_000);
}

#[test]
fn missing_file_and_unknown_format_are_clear() {
    let e = open_records(&data("nope.spc"), "spc", &ReadOptions::default())
        .err()
        .unwrap();
    assert_eq!(e.field, "path");
    assert!(e.to_string().contains("nope.spc"), "{e}");
    let e = open_records(&data("msr-hm0-sample.csv"), "xyz", &ReadOptions::default())
        .err()
        .unwrap();
    assert!(e.why.contains("known: spc, msr"), "{e}");
    let e = open_records(&data("msr-hm0-sample.csv"), "csv", &ReadOptions::default())
        .err()
        .unwrap();
    assert!(e.why.contains("csv.offset is not set"), "{e}");
}

fn tmp_dir() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ftlab-samples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bzip2_and_xz_inputs_are_sniffed_by_magic() {
    use std::io::Write;
    let plain = std::fs::read(data("financial1-first10k.spc")).unwrap();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(&plain).unwrap();
    let mut xz =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1)).unwrap();
    xz.write_all(&plain).unwrap();
    // No telling extension: the first bytes decide.
    for (name, bytes) in [
        ("f1.bzip", bz.finish().unwrap()),
        ("f1.x", xz.finish().unwrap()),
    ] {
        let path = tmp_dir().join(name);
        std::fs::write(&path, bytes).unwrap();
        let back: Vec<Record> = open_records(&path, "spc", &ReadOptions::default())
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(
            back,
            read_all("financial1-first10k.spc", "spc", &ReadOptions::default())
        );
    }
}

#[test]
fn format_auto_recognises_every_sample() {
    for (name, want) in [
        ("financial1-first10k.spc", "spc"),
        ("financial1-first10k.ssdsim.ascii", "mqsim"),
        ("msr-hm0-sample.csv", "msr"),
        ("tpcc-small.mqsim.trace", "mqsim"),
        ("websearch-small.mqsim.trace.gz", "mqsim"),
        ("ycsb-ext4.blkparse.txt.gz", "blkparse"),
    ] {
        let seen = ftlab_workload::inspect(&data(name), "auto").unwrap();
        assert_eq!(seen.format, want, "{name}");
        assert_eq!(seen.notes[0].code, "format_auto");
        assert!(seen.notes[0].message.contains(want), "{:?}", seen.notes);
    }
    let e = ftlab_workload::inspect(&data("sqlite-wal-update.wiscsee.txt.gz"), "auto").unwrap_err();
    assert!(e.why.contains("give --format"), "{e}");
}

#[test]
fn a_binary_file_read_as_text_is_refused_as_binary() {
    let mut bytes = Vec::new();
    for i in 0..4u64 {
        bytes.extend(ftlab_workload::vscsi::encode(2, 0x2a, 4096, i * 8, i * 100));
    }
    let path = tmp_dir().join("vm.vscsi");
    std::fs::write(&path, &bytes).unwrap();
    let e = open_records(&path, "spc", &ReadOptions::default())
        .err()
        .unwrap();
    assert_eq!(e.field, "input");
    assert!(e.why.contains("binary, not spc text"), "{e}");
    assert!(e.why.contains("--format vscsi"), "{e}");
    // Read natively, and recognised by auto.
    let r: Vec<Record> = open_records(&path, "vscsi", &ReadOptions::default())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(r.len(), 4);
    assert_eq!((r[3].req.offset, r[3].req.arrival.0), (24 * 512, 300_000));
    assert_eq!(
        ftlab_workload::inspect(&path, "auto").unwrap().format,
        "vscsi"
    );
}

#[test]
fn an_empty_input_is_an_error() {
    let path = tmp_dir().join("empty.spc");
    std::fs::write(&path, b"").unwrap();
    let e = open_records(&path, "spc", &ReadOptions::default())
        .err()
        .unwrap();
    assert!(e.why.contains("the input is empty"), "{e}");
    // An empty gzip member decompresses to nothing: the same error.
    let gz = tmp_dir().join("empty.gz");
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut w, b"").unwrap();
    std::fs::write(&gz, w.finish().unwrap()).unwrap();
    let e = open_records(&gz, "spc", &ReadOptions::default())
        .err()
        .unwrap();
    assert!(e.why.contains("the input is empty"), "{e}");
}

#[test]
fn a_header_line_gets_the_header_hint() {
    let text = std::fs::read_to_string(data("msr-hm0-sample.csv")).unwrap();
    let path = tmp_dir().join("with-header.csv");
    std::fs::write(
        &path,
        format!("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n{text}"),
    )
    .unwrap();
    let e = open_records(&path, "msr", &ReadOptions::default())
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.why.contains("line 1 looks like a header"), "{e}");
    assert!(e.why.contains("--header"), "{e}");
}

#[test]
fn disksim_read_as_mqsim_is_noticed() {
    let path = tmp_dir().join("disksim.trace");
    std::fs::write(&path, "0.000000 0 1024 8 1\n1.562500 0 2048 16 0\n").unwrap();
    let seen = ftlab_workload::inspect(&path, "mqsim").unwrap();
    assert_eq!(seen.notes[0].code, "format_looks_like_disksim");
    assert!(seen.notes[0]
        .hint
        .as_ref()
        .unwrap()
        .contains("--format disksim"));
    assert_eq!(
        ftlab_workload::inspect(&path, "auto").unwrap().format,
        "disksim"
    );
}

#[test]
fn survey_says_what_a_trace_holds() {
    let opts = ReadOptions {
        blkparse: ftlab_workload::blkparse::BlkparseSpec {
            event: "X".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    let s = ftlab_workload::survey::survey(&data("ycsb-ext4.blkparse.txt.gz"), "blkparse", &opts)
        .unwrap();
    assert_eq!(s.records, 0, "no X events");
    assert_eq!(s.actions.get("D"), Some(&9887), "{s:?}");
    assert!(s.matched_nothing() > 9000);
    let text = s.describe();
    assert!(
        text.contains("actions: ") && text.contains("lines that matched nothing"),
        "{text}"
    );
    let s = ftlab_workload::survey::survey(
        &data("financial1-first10k.spc"),
        "spc",
        &ReadOptions::default(),
    )
    .unwrap();
    assert_eq!((s.lines, s.records, s.devices.len()), (10_000, 10_000, 22));
    assert!(
        s.describe().contains("timestamps: first 0.000000 s"),
        "{}",
        s.describe()
    );
}

#[test]
fn a_wrong_format_error_names_the_format_the_lines_look_like() {
    let e = open_records(
        &data("financial1-first10k.spc"),
        "mqsim",
        &ReadOptions::default(),
    )
    .unwrap()
    .next()
    .unwrap()
    .unwrap_err();
    assert_eq!(e.line, 1);
    assert!(
        e.why
            .contains("the first lines look like spc, not mqsim: --format spc"),
        "{e}"
    );
}
