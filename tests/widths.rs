//! The table fits the terminal: on every sample, at 60, 80 and 100 columns, no line of the
//! report is wider than the width it was given (a word longer than the line is cut).

#[path = "support/samples.rs"]
mod samples;

use std::process::Command;

fn samples() -> Vec<String> {
    samples::paths()
}

#[test]
fn every_line_fits_60_80_and_100_columns() {
    let bin = assert_cmd::cargo::cargo_bin("mcp-forensics");
    let mut lines = 0;
    for width in [60, 80, 100] {
        for file in samples() {
            let out = Command::new(&bin)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .env("COLUMNS", width.to_string())
                .args(["analyze", "--color", "never", &file])
                .output()
                .unwrap();
            for line in String::from_utf8(out.stdout).unwrap().lines() {
                assert!(
                    line.chars().count() <= width,
                    "{file} at {width} columns: {line}"
                );
                lines += 1;
            }
        }
    }
    assert!(lines > 10_000, "only {lines} lines read");
}
