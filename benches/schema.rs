//! Schema figures: validation against the `jsonschema` crate, and the sandbox's direct
//! value conversion against a `JSON.stringify` round trip, and each of its halves against
//! the engine's own `JSON.stringify` (arguments) and `JSON.parse` (results) of the same
//! data.
//!
//! `cargo bench --bench schema`

use std::time::Duration;

use codemode::bench_support::{Crossing, time_round_trips};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "support/realistic.rs"]
mod realistic;
#[path = "support/rounds.rs"]
mod rounds;
use realistic::realistic;

fn validation(c: &mut Criterion) {
    let (params, value) = realistic();
    assert!(params.validate(&value).is_ok());
    let oracle = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&params.to_json_schema())
        .unwrap();
    assert!(oracle.is_valid(&value));
    let mut group = c.benchmark_group("validate 20-field args");
    group.throughput(Throughput::Elements(1));
    group.bench_function("codemode", |b| {
        b.iter(|| params.validate(std::hint::black_box(&value)).is_ok())
    });
    group.bench_function("jsonschema", |b| {
        b.iter(|| oracle.is_valid(std::hint::black_box(&value)))
    });
    group.finish();
}

/// About 1 MB of JSON: records with strings, numbers, booleans, nesting.
const ONE_MB: &str = "Array.from({length: 6300}, (_, i) => ({id: i, name: 'record number ' + i, score: i * 1.25, active: i % 2 === 0, tags: ['alpha', 'beta', 'gamma'], nested: {depth: 1, label: 'x' + i, values: [i, i + 1, i + 2]}}))";

fn conversion(c: &mut Criterion) {
    let (_, size) = time_round_trips(ONE_MB, Crossing::Direct, 1);
    let kb = size / 1024;
    let pairs = [
        (
            format!("JS→Rust→JS of {kb} KB"),
            [
                ("direct conversion", Crossing::Direct),
                (
                    "JSON.stringify + serde_json + JSON.parse",
                    Crossing::JsonText,
                ),
            ],
        ),
        // Each half of the crossing beside what the engine itself costs for the same data.
        (
            format!("JS→Rust of {kb} KB (a tool's arguments)"),
            [
                ("direct conversion", Crossing::DirectToRust),
                ("the engine's JSON.stringify", Crossing::EngineStringify),
            ],
        ),
        (
            format!("Rust→JS of {kb} KB (a tool's result)"),
            [
                ("direct conversion", Crossing::DirectToJs),
                ("the engine's JSON.parse", Crossing::EngineParse),
            ],
        ),
    ];
    for (title, crossings) in pairs {
        let mut group = c.benchmark_group(title);
        group.throughput(Throughput::Bytes(size as u64));
        group.sample_size(20);
        for (name, crossing) in crossings {
            group.bench_function(name, |b| {
                b.iter_custom(|n| time_round_trips(ONE_MB, crossing, n).0)
            });
        }
        group.finish();
    }
    // Each half beside the engine's own, from rounds that alternate them.
    const ROUNDS: usize = 31;
    const ITERATIONS: u64 = 5;
    let sides = [
        Crossing::DirectToRust,
        Crossing::EngineStringify,
        Crossing::DirectToJs,
        Crossing::EngineParse,
    ];
    let medians = rounds::interleaved(ROUNDS, sides.len(), |side| {
        time_round_trips(ONE_MB, sides[side], ITERATIONS).0 / ITERATIONS as u32
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("interleaved medians of {ROUNDS} rounds, {kb} KB each way:");
    for (name, ours, engine, what) in [
        (
            "JS→Rust (a tool's arguments)",
            medians[0],
            medians[1],
            "JSON.stringify",
        ),
        (
            "Rust→JS (a tool's result)",
            medians[2],
            medians[3],
            "JSON.parse",
        ),
    ] {
        println!(
            "  {name}: direct conversion {:.2} ms, the engine's {what} {:.2} ms: {:.2}x the engine's time",
            ms(ours),
            ms(engine),
            ours.as_secs_f64() / engine.as_secs_f64()
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = validation, conversion
}
criterion_main!(benches);
