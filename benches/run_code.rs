//! Nested dispatch throughput and cold-start cost of `run_code` (criterion).
//!
//! `cargo bench --bench run_code`

use codemode::{Limits, Registry, RunCodeConfig, Tool, run_code_tool};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .register(run_code_tool(
            RunCodeConfig::default().limits(Limits::default().max_tool_calls(1_000_000)),
        ))
        .unwrap()
        .forget();
    registry
        .register(
            Tool::builder("noop")
                .execute(|_a, _e| async { Ok(json!(null)) })
                .build()
                .unwrap(),
        )
        .unwrap()
        .forget();
    registry
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = registry();
    let mut group = c.benchmark_group("run_code");
    group.bench_function("cold return 1", |b| {
        b.to_async(&rt).iter(|| async {
            let o = registry.call("run_code", json!({"code": "return 1"})).await;
            assert_eq!(o.value().unwrap()["result"], 1);
        })
    });
    group.bench_function("1000 sequential noop calls", |b| {
        b.to_async(&rt).iter(|| async {
            let o = registry
                .call(
                    "run_code",
                    json!({"code": "for (let i = 0; i < 1000; i++) await tools.noop({}); return 1"}),
                )
                .await;
            assert_eq!(o.value().unwrap()["status"], "ok");
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
