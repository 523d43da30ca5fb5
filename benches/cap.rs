//! Output-cap figures: capping a 10 MB result and a 100 000-line log to the default 20 000
//! characters, with and without writing the spill file. Goal: under 20 ms each.
//!
//! `cargo bench --bench cap`

use std::time::Duration;

use codemode::bench_support::cap_output;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const CAP: usize = 20_000;

/// A 10 MB string.
fn big_string() -> Value {
    Value::String("0123456789".repeat(1_000_000))
}

/// About 10 MB of records.
fn big_records() -> Value {
    Value::Array(
        (0..110_000)
            .map(|i| {
                json!({"id": i, "name": format!("record number {i}"), "score": i as f64 * 1.25,
                       "tags": ["alpha", "beta"], "nested": {"label": format!("x{i}"), "values": [i, i + 1]}})
            })
            .collect(),
    )
}

fn lines() -> Vec<String> {
    (0..100_000)
        .map(|i| format!("log line number {i}"))
        .collect()
}

fn cap(c: &mut Criterion) {
    let records = big_records();
    assert!(records.to_string().len() > 10_000_000);
    let string = big_string();
    let log = lines();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("cap to 20 000 characters");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    for spill in [false, true] {
        let spill_dir = spill.then(|| dir.path());
        let tag = if spill { "with spill" } else { "preview only" };
        group.bench_function(format!("10 MB string result, {tag}"), |b| {
            b.iter_batched(
                || string.clone(),
                |v| cap_output(Vec::new(), v, CAP, spill_dir),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("10 MB array result, {tag}"), |b| {
            b.iter_batched(
                || records.clone(),
                |v| cap_output(Vec::new(), v, CAP, spill_dir),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("100 000-line log, {tag}"), |b| {
            b.iter_batched(
                || log.clone(),
                |l| cap_output(l, Value::Null, CAP, spill_dir),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, cap);
criterion_main!(benches);
