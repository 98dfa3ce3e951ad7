//! The fuzz targets' seeds and committed corpora, replayed by the ordinary test run (no
//! libFuzzer, no sanitizer build): every input that ever crashed a parser is kept as a
//! seed (`fuzz/seeds/<target>/crash-*`), so reverting its fix fails this test, not only
//! a long fuzz session. Each target's body is the very file libFuzzer runs
//! (`fuzz/bodies/<target>.rs`, included here by path); `scripts/fuzz SECONDS` runs the
//! coverage-guided fuzzer itself for long sessions.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[path = "../fuzz/bodies/amounts.rs"]
mod amounts;
#[path = "../fuzz/bodies/evm_input.rs"]
mod evm_input;
#[path = "../fuzz/bodies/json_bodies.rs"]
mod json_bodies;
#[path = "../fuzz/bodies/phones_and_quotes.rs"]
mod phones_and_quotes;
#[path = "../fuzz/bodies/solana_input.rs"]
mod solana_input;
#[path = "../fuzz/bodies/tron_input.rs"]
mod tron_input;
#[path = "../fuzz/bodies/webhook_input.rs"]
mod webhook_input;

/// Every file of the target's seeds and corpus, sorted (a failure names the same first
/// input on every run).
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for dir in ["seeds", "corpus"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    files
}

/// Runs `body` on every input of `target`; fails naming each input that panicked.
fn replay(target: &str, body: fn(&[u8])) {
    let files = inputs(target);
    assert!(
        files
            .iter()
            .any(|f| f.components().any(|c| c.as_os_str() == "seeds")),
        "{target}: no seeds under fuzz/seeds/{target}"
    );
    let mut failed = Vec::new();
    for file in &files {
        let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if catch_unwind(AssertUnwindSafe(|| body(&data))).is_err() {
            failed.push(file.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs panicked (the first one's message is above):\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
    eprintln!("{target}: {} inputs replayed", files.len());
}

#[test]
fn amounts_corpus() {
    replay("amounts", amounts::run);
}

#[test]
fn evm_input_corpus() {
    replay("evm_input", evm_input::run);
}

#[test]
fn json_bodies_corpus() {
    replay("json_bodies", json_bodies::run);
}

#[test]
fn phones_and_quotes_corpus() {
    replay("phones_and_quotes", phones_and_quotes::run);
}

#[test]
fn solana_input_corpus() {
    replay("solana_input", solana_input::run);
}

#[test]
fn tron_input_corpus() {
    replay("tron_input", tron_input::run);
}

#[test]
fn webhook_input_corpus() {
    replay("webhook_input", webhook_input::run);
}
