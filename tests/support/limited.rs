//! Runs the built binary the way the hostile-input tests need: under an address-space limit
//! and a timeout, so that an unbounded allocation or a hang fails the test instead of taking
//! the machine.

use std::process::{Command, Output};

/// Address space allowed to one run (KiB).
pub const MEM_LIMIT_KIB: u64 = 3 << 20;
/// Seconds one run may take.
pub const TIMEOUT_S: u64 = 60;

/// Runs `mcp-forensics ARGS` under the limits; the exit status must be a documented one (0 to
/// 3, see the man page).
pub fn run(args: &[&str]) -> Output {
    run_with(args, "")
}

/// [`run`] with more shell limits first (`ulimit -n 64;`).
#[allow(dead_code)]
pub fn run_with(args: &[&str], ulimits: &str) -> Output {
    let bin = assert_cmd::cargo::cargo_bin("mcp-forensics");
    let script =
        format!("{ulimits} ulimit -v {MEM_LIMIT_KIB}; exec timeout -k 5 {TIMEOUT_S} \"$@\"");
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(bin)
        .args(args)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0..=5)),
        "{args:?} ended with {:?} (124: timeout; 134: abort): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
