//! Resuming a paused run by replay (issue 20): a program that made 10 000 calls before it
//! paused is resumed, so its 10 000 recorded calls replay (no execution) and the approved
//! call runs; beside it, the same program run live from the start without a pause (10 000
//! real calls of a no-op tool), in one run. Sequential calls, and a `Promise.all`.
//!
//! `cargo bench --bench replay`

use std::time::Duration;

use codemode::hooks::Decision;
use codemode::run_code::{
    Limits, RUN_CODE_RESUME, RunCodeConfig, run_code_resume_tool, run_code_tool,
};
use codemode::{Exec, Registry, Tool};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const CALLS: usize = 10_000;

fn registry(ask: bool) -> Registry {
    let registry = Registry::new();
    let config = RunCodeConfig::default().spill(None).limits(
        Limits::default()
            .timeout(Duration::from_secs(120))
            .max_tool_calls(CALLS * 2),
    );
    registry
        .register(run_code_tool(config.clone()))
        .unwrap()
        .forget();
    registry
        .register(run_code_resume_tool(config))
        .unwrap()
        .forget();
    for name in ["noop", "write"] {
        registry
            .register(
                Tool::builder(name)
                    .execute(|_a, _e| async { Ok(json!(1)) })
                    .build()
                    .unwrap(),
            )
            .unwrap()
            .forget();
    }
    let asks = move |exec: &Exec| {
        if ask && exec.name() == "write" {
            Decision::Ask("write?".into())
        } else {
            Decision::Allow
        }
    };
    registry.pre_execute(asks).forget();
    registry
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let programs = [
        (
            "sequential",
            format!(
                "let s = 0; for (let i = 0; i < {CALLS}; i++) s += await tools.noop({{i}}); await tools.write({{}}); return s"
            ),
        ),
        (
            "Promise.all",
            format!(
                "const r = await Promise.all(Array.from({{length: {CALLS}}}, (_, i) => tools.noop({{i}}))); await tools.write({{}}); return r.length"
            ),
        ),
    ];
    let pausing = registry(true);
    let live = registry(false);
    let mut group = c.benchmark_group(format!("{CALLS} calls"));
    group.sample_size(10);
    for (name, code) in &programs {
        group.bench_function(format!("{name}: live, no pause"), |b| {
            b.to_async(&rt).iter(|| async {
                let v = live.call("run_code", json!({"code": code})).await;
                assert_eq!(v.value().unwrap()["status"], "ok");
            })
        });
        group.bench_function(format!("{name}: resumed (replayed)"), |b| {
            b.iter_batched(
                || {
                    let v = rt
                        .block_on(pausing.call("run_code", json!({"code": code})))
                        .into_result()
                        .unwrap();
                    assert_eq!(v["status"], "paused");
                    let call = v["paused"]["approvals"][0]["call"].clone();
                    (v["paused"]["id"].clone(), call)
                },
                |(id, call): (Value, Value)| {
                    let v = rt
                        .block_on(pausing.call(
                            RUN_CODE_RESUME,
                            json!({"id": id, "decisions": [{"call": call, "approve": true}]}),
                        ))
                        .into_result()
                        .unwrap();
                    assert_eq!(v["status"], "ok");
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(10));
    targets = bench
}
criterion_main!(benches);
