//! (d) Program text: fences, parsing, program forms, TypeScript stripping and positions on
//! arbitrary source. Invariants: no panic (deep nesting included); an error names its
//! kind; the prepared JavaScript is valid UTF-8 by construction.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|source: &str| {
    match codemode::bench_support::prepare_program(source) {
        Ok(code) => assert!(!code.is_empty()),
        Err(message) => assert!(!message.is_empty()),
    }
});
