//! Honest reports from the command line (issue 27, items 4, 5, 7, 8): the end-of-run
//! drain and `--no-drain`, unmapped reads and `--precondition footprint`, capacities
//! that do not fit in memory, and the parallel organisation flags. Every refusal is a
//! clear message with exit 2, never a panic or an allocation abort.

use std::process::Output;
mod common;
use common::{ftlab, stderr, stdout};

fn refused(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit 2 expected: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{err}"
    );
    for n in needles {
        assert!(err.contains(n), "stderr lacks `{n}`: {err}");
    }
}

const FIN1: &str = "../../tests/data/financial1-first10k.spc";

#[test]
fn a_capacity_whose_tables_do_not_fit_is_refused_with_the_estimate_and_the_ways_out() {
    // The limit is given, so the test never depends on (or uses) the machine's memory.
    let o = ftlab(&["run", "--capacity", "4TiB", "--max-memory", "8GiB", "-q"]);
    refused(
        &o,
        &[
            "`capacity`",
            "needs about",
            "GiB",
            "--fold compact",
            "nothing was allocated",
        ],
    );
}

#[test]
fn capacities_beyond_what_ftlab_addresses_are_refused_not_aborted() {
    let o = ftlab(&["run", "--capacity", "1PiB", "-q"]);
    refused(&o, &["32-bit page numbers", "--fold compact"]);
    let o = ftlab(&["run", "--capacity", "16EiB", "-q"]);
    refused(&o, &["`capacity`", "out of range"]);
}

#[test]
fn no_drain_warns_about_the_pages_left_in_the_buffer() {
    let base = [
        "run",
        "--buffer",
        "lru",
        "--capacity",
        "64MiB",
        "--set",
        "synthetic.count=200",
        "--set",
        "synthetic.read_ratio=0",
        "-q",
    ];
    let o = ftlab(&base);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("dirty pages buffered at the end; drained"),
        "{}",
        stdout(&o)
    );
    let mut args = base.to_vec();
    args.push("--no-drain");
    let o = ftlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        out.contains("WA - (none of the") && !out.contains("WA 0.000"),
        "{out}"
    );
    assert!(
        err.contains("warning:") && err.contains("never reached flash"),
        "{err}"
    );
}

#[test]
fn precondition_footprint_silences_the_unmapped_reads_warning() {
    let base = [
        "run",
        "--trace",
        FIN1,
        "--capacity",
        "512MiB",
        "--limit",
        "300",
        "-q",
    ];
    let o = ftlab(&base);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("were never written") && err.contains("--precondition footprint"),
        "{err}"
    );
    let mut args = base.to_vec();
    args.extend(["--precondition", "footprint"]);
    let o = ftlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("never written"), "{}", stderr(&o));
}

#[test]
fn channels_and_dies_are_flags_of_parallel_timing() {
    let o = ftlab(&[
        "config",
        "show",
        "--timing",
        "parallel",
        "--channels",
        "2",
        "--dies",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("channels = 2") && text.contains("dies = 3"),
        "{text}"
    );
    let o = ftlab(&["config", "show", "--timing", "parallel"]);
    let text = stdout(&o);
    assert!(
        text.contains("channels = 8") && text.contains("dies = 4"),
        "{text}"
    );
    let help = stdout(&ftlab(&["run", "--help"]));
    assert!(
        help.contains("--channels") && help.contains("--dies"),
        "{help}"
    );
    let o = ftlab(&["run", "--timing", "parallel", "--channels", "0", "-q"]);
    refused(&o, &["channels"]);
}

#[test]
fn a_saturated_run_warns_with_a_hint_to_parallel_timing() {
    let o = ftlab(&[
        "run",
        "--trace",
        "../../tests/data/tpcc-small.mqsim.trace",
        "--format",
        "mqsim",
        "--fold",
        "--capacity",
        "1GiB",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: the device is saturated") && err.contains("--timing parallel"),
        "{err}"
    );
}
