//! Pipeline overhead: a no-op tool called directly, with no hooks and with one
//! hook of each stage (pre_execute, guard, around, post_execute, observer), measured in one
//! run as a pair.
//!
//! `cargo bench --bench dispatch`

use std::time::Duration;

use codemode::hooks::{Decision, Next, PostOutcome};
use codemode::{Exec, Outcome, Registry, Tool};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn registry(with_hooks: bool) -> Registry {
    let registry = Registry::new();
    registry
        .register(
            Tool::builder("noop")
                .execute(|_a, _e| async { Ok(json!(null)) })
                .build()
                .unwrap(),
        )
        .unwrap()
        .forget();
    if with_hooks {
        registry.pre_execute(|_e: &Exec| Decision::Allow).forget();
        registry.guard(|_e: &Exec| Ok(())).forget();
        registry
            .around(|exec: Exec, next: Next| next.run(exec))
            .forget();
        registry
            .post_execute(|_e: &Exec, _o: &mut PostOutcome| {})
            .forget();
        registry.observe(|_e: &Exec, _o: &Outcome| {}).forget();
    }
    registry
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let bare = registry(false);
    let hooked = registry(true);
    let mut group = c.benchmark_group("dispatch noop");
    group.bench_function("0 hooks", |b| {
        b.to_async(&rt).iter(|| async {
            let o = bare.call("noop", json!({})).await;
            assert!(!o.is_error());
        })
    });
    group.bench_function("1 hook per stage", |b| {
        b.to_async(&rt).iter(|| async {
            let o = hooked.call("noop", json!({})).await;
            assert!(!o.is_error());
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
