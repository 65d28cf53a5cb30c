//! Writes one stress input of issue 12 (see gen.rs for the classes).
//!
//! ```text
//! cargo run --release --example gen_stress -- CLASS N OUT
//! cargo run --release --example gen_stress -- --list
//! ```

use std::path::Path;
use std::process::ExitCode;

#[path = "gen.rs"]
mod stress;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag] if flag == "--list" => {
            for (class, ext, n) in stress::CLASSES {
                println!("{class}\t{ext}\t{n}");
            }
            ExitCode::SUCCESS
        }
        [class, n, out] => {
            let Ok(n) = n.parse::<u64>() else {
                eprintln!("N must be a number, not {n:?}");
                return ExitCode::from(2);
            };
            match stress::generate(class, n, Path::new(out)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("gen_stress {class} {n} {out}: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!("usage: gen_stress CLASS N OUT | gen_stress --list");
            ExitCode::from(2)
        }
    }
}
