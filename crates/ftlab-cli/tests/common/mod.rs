//! Helpers the CLI test files share: running the built `ftlab` binary.
#![allow(dead_code)] // each test file uses some of them

use std::process::{Command, Output};

/// Runs `ftlab args` from the crate's directory (so `../../tests/data` resolves).
pub fn ftlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ftlab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("ftlab runs")
}

/// Runs `ftlab args` from the test's working directory: (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ftlab"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
