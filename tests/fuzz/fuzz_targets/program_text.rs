//! (d) Program text: fences, parsing, program forms, TypeScript stripping and positions on
//! arbitrary source. Invariants: no panic escapes (deep nesting included; swc's own debug
//! assertions, which the preparation contains, are let through to it); an error names its
//! kind; the prepared JavaScript is valid UTF-8 by construction.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|source: &str| {
    codemode::bench_support::tolerate_parser_assertions();
    match codemode::bench_support::prepare_program(source) {
        Ok(code) => assert!(!code.is_empty()),
        Err(message) => assert!(!message.is_empty()),
    }
});
