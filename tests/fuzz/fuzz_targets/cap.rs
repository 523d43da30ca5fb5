//! (e) The output cap and structural shrink on arbitrary logs and results. Invariants: the
//! model-facing text stays within the cap (which leaves room for the spill notice); the
//! preview's result is JSON; nothing panics.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    lines: Vec<String>,
    result: String,
    cap: u16,
}

fuzz_target!(|input: Input| {
    let cap = 400 + usize::from(input.cap) % 20_000;
    // The result as JSON when it parses, else as a string.
    let result =
        serde_json::from_str(&input.result).unwrap_or(serde_json::Value::String(input.result));
    let value = codemode::bench_support::cap_output(input.lines, result, cap, None);
    let text = codemode::run_code::render_text(&value);
    assert!(
        text.chars().count() <= cap,
        "{} characters over a cap of {cap}",
        text.chars().count()
    );
});
