//! `cargo run -p tephra-codegen` rewrites every generated file from `wit/`;
//! `--check` only reports the stale ones (exit 1), as the test does.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => {
            eprintln!("tephra-codegen: unknown argument '{other}' (usage: tephra-codegen [--check])");
            return ExitCode::from(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let run = || -> anyhow::Result<Vec<String>> {
        let files = tephra_codegen::generate(&root)?;
        let stale = tephra_codegen::stale(&root, &files);
        if !check {
            for f in &files {
                if stale.contains(&f.path) {
                    std::fs::write(root.join(&f.path), &f.text)?;
                }
            }
        }
        Ok(stale)
    };
    match run() {
        Ok(stale) if stale.is_empty() => ExitCode::SUCCESS,
        Ok(stale) if check => {
            for p in stale {
                eprintln!("{p}: stale; run: cargo run -p tephra-codegen");
            }
            ExitCode::FAILURE
        }
        Ok(written) => {
            for p in written {
                eprintln!("wrote {p}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tephra-codegen: {e:#}");
            ExitCode::FAILURE
        }
    }
}
