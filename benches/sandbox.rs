//! Sandbox figures, each beside its raw rquickjs baseline in the same run:
//!
//! - sequential `await tools.noop({})` through the full pipeline vs an awaited raw rquickjs
//!   async host function;
//! - a cold `run_code` of `return 1` (new sandbox, prelude, strip, result), and the same on
//!   a warm engine from an `EnginePool` (timed once an engine is ready, and once the pool is
//!   full again with its builder idle), vs a raw new runtime + context + eval; the cold run
//!   and the raw one also by the CPU time of the whole process per run;
//! - `Promise.all` of 10 000 calls to a tool that sleeps 1 ms vs the same with a raw host
//!   function;
//! - sequential calls to a tool answered by another task (as an MCP client's tool is: a
//!   request over a channel, the answer over a oneshot), through `run_code`, through
//!   `Registry::call`, and as the bare channel round trip: what a pending call costs the
//!   sandbox and the pipeline, without a server's noise;
//! - 1 000 sequential and 10 000 concurrent tiny reads through the built-in `read_file`,
//!   beside a tool that reads the same file resolved by hand on the blocking pool (how
//!   `read_file` worked before);
//! - resident memory of 1 000 concurrent idle sandboxes, each awaiting a tool, and of 32
//!   idle warm engines (printed).
//!
//! `cargo bench --bench sandbox`

use std::sync::Arc;
use std::time::Duration;

use codemode::run_code::{EnginePool, Limits, RunCodeConfig, run_code_tool};
use codemode::{Registry, Tool};
use criterion::{Criterion, criterion_group, criterion_main};
use rquickjs::function::Async;
use rquickjs::{AsyncContext, AsyncRuntime, Function, Promise};
use serde_json::json;

#[path = "support/rounds.rs"]
mod rounds;

/// A request to the answering task of the `remote` tool.
type Ask = tokio::sync::oneshot::Sender<serde_json::Value>;

/// The answering task: every request gets `"Echo: x"` at once.
fn answering(rt: &tokio::runtime::Runtime) -> tokio::sync::mpsc::UnboundedSender<Ask> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Ask>();
    rt.spawn(async move {
        while let Some(ask) = rx.recv().await {
            let _ = ask.send(json!("Echo: x"));
        }
    });
    tx
}

/// One round trip to the answering task.
async fn ask(server: &tokio::sync::mpsc::UnboundedSender<Ask>) -> serde_json::Value {
    let (tx, rx) = tokio::sync::oneshot::channel();
    server.send(tx).expect("the answering task runs");
    rx.await.expect("the answering task answers")
}

fn registry(server: tokio::sync::mpsc::UnboundedSender<Ask>) -> Registry {
    let registry = Registry::new();
    registry
        .register(
            Tool::builder("remote")
                .execute(move |_a, _e| {
                    let server = server.clone();
                    async move { Ok(ask(&server).await) }
                })
                .build()
                .unwrap(),
        )
        .unwrap()
        .forget();
    register_run_code(&registry);
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
        .register(
            Tool::builder("sleep1")
                .execute(|_a, _e| async {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    Ok(json!(null))
                })
                .build()
                .unwrap(),
        )
        .unwrap()
        .forget();
    registry
}

/// Registers `run_code` with limits no bench reaches.
fn register_run_code(registry: &Registry) {
    let limits = Limits::default()
        .max_tool_calls(1_000_000)
        .max_in_flight(20_000);
    registry
        .register(run_code_tool(RunCodeConfig::default().limits(limits)))
        .unwrap()
        .forget();
}

/// Runs `program` (the body of an async function) in a raw rquickjs context where
/// `noop()` and `sleep1()` are async host functions.
async fn raw(program: &str) {
    let runtime = AsyncRuntime::new().unwrap();
    let ctx = AsyncContext::full(&runtime).await.unwrap();
    let program = program.to_owned();
    ctx.async_with(async move |ctx| {
        let noop =
            Function::new(ctx.clone(), Async(|| async { rquickjs::Result::Ok(()) })).unwrap();
        let sleep1 = Function::new(
            ctx.clone(),
            Async(|| async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                rquickjs::Result::Ok(())
            }),
        )
        .unwrap();
        ctx.globals().set("noop", noop).unwrap();
        ctx.globals().set("sleep1", sleep1).unwrap();
        let p: Promise = ctx
            .eval(format!("(async () => {{ {program} }})()"))
            .unwrap();
        let _: rquickjs::Value = p.into_future().await.unwrap();
    })
    .await;
    runtime.idle().await;
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = answering(&rt);
    let registry = registry(server.clone());

    let mut group = c.benchmark_group("1000 sequential calls answered by another task");
    group.bench_function("run_code tools.remote", |b| {
        b.to_async(&rt).iter(|| async {
            let o = registry
                .call("run_code", json!({"code": "for (let i = 0; i < 1000; i++) await tools.remote({}); return 1"}))
                .await;
            assert_eq!(o.value().unwrap()["status"], "ok");
        })
    });
    group.bench_function("registry.call remote", |b| {
        b.to_async(&rt).iter(|| async {
            for _ in 0..1000 {
                assert!(!registry.call("remote", json!({})).await.is_error());
            }
        })
    });
    group.bench_function("channel round trip", |b| {
        b.to_async(&rt).iter(|| async {
            for _ in 0..1000 {
                assert_eq!(ask(&server).await, "Echo: x");
            }
        })
    });
    group.finish();

    let mut group = c.benchmark_group("1000 sequential awaited calls");
    group.bench_function("codemode tools.noop (full pipeline)", |b| {
        b.to_async(&rt).iter(|| async {
            let o = registry
                .call("run_code", json!({"code": "for (let i = 0; i < 1000; i++) await tools.noop({}); return 1"}))
                .await;
            assert_eq!(o.value().unwrap()["status"], "ok");
        })
    });
    group.bench_function("raw rquickjs async host function", |b| {
        b.to_async(&rt)
            .iter(|| raw("for (let i = 0; i < 1000; i++) await noop({}); return 1"))
    });
    group.finish();

    let mut group = c.benchmark_group("cold start");
    group.bench_function("codemode run_code `return 1`", |b| {
        b.to_async(&rt).iter(|| async {
            let o = registry.call("run_code", json!({"code": "return 1"})).await;
            assert_eq!(o.value().unwrap()["result"], 1);
        })
    });
    // Latency with a warm engine ready: the clock runs only while the run does (between
    // runs, the bench waits for the pool's builder to have an engine ready again).
    let warm = Registry::new();
    let pool = EnginePool::new(2);
    warm.register(run_code_tool(
        RunCodeConfig::default().engine_pool(pool.clone()),
    ))
    .unwrap()
    .forget();
    // The first run tells the pool which tools to build for.
    rt.block_on(warm.call("run_code", json!({"code": "return 1"})));
    // Two states of the pool: an engine ready while the builder may still be replacing the
    // last one taken (on 2 cores, the builder and the reaper then compete with the run), and
    // the pool full again, its builder idle.
    for (name, ready) in [
        ("codemode run_code `return 1` on a warm engine", 1),
        (
            "codemode run_code `return 1` on a warm engine, pool refilled",
            pool.size(),
        ),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let (warm, pool) = (warm.clone(), pool.clone());
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        while pool.stats().idle < ready {
                            tokio::time::sleep(Duration::from_micros(100)).await;
                        }
                        let started = std::time::Instant::now();
                        let o = warm.call("run_code", json!({"code": "return 1"})).await;
                        total += started.elapsed();
                        assert_eq!(o.value().unwrap()["result"], 1);
                    }
                    total
                }
            })
        });
    }
    group.bench_function("raw runtime + context + eval", |b| {
        b.to_async(&rt).iter(|| async {
            let runtime = AsyncRuntime::new().unwrap();
            let ctx = AsyncContext::full(&runtime).await.unwrap();
            let v: i32 = ctx.with(|ctx| ctx.eval("1").unwrap()).await;
            assert_eq!(v, 1);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("Promise.all of 10000 calls sleeping 1 ms");
    group.sample_size(10);
    group.bench_function("codemode", |b| {
        b.to_async(&rt).iter(|| async {
            let o = registry
                .call("run_code", json!({"code": "await Promise.all(Array.from({length: 10000}, () => tools.sleep1())); return 1"}))
                .await;
            assert_eq!(o.value().unwrap()["status"], "ok", "{:?}", o.value());
        })
    });
    group.bench_function("raw rquickjs", |b| {
        b.to_async(&rt).iter(|| {
            raw("await Promise.all(Array.from({length: 10000}, () => sleep1())); return 1")
        })
    });
    group.finish();

    interleaved_ratios(&rt, &registry, &warm, &pool);
    file_tools(c, &rt);
    idle_sandboxes_memory(&rt);
    warm_pool_memory(&rt);
    held_result_memory(&rt);
}

/// The ratios against raw rquickjs, from rounds that alternate the sides (criterion's
/// groups above run one side after the other, minutes apart, on a machine whose load
/// drifts).
fn interleaved_ratios(
    rt: &tokio::runtime::Runtime,
    registry: &Registry,
    warm: &Registry,
    pool: &EnginePool,
) {
    const ROUNDS: usize = 31;
    /// Runs of `return 1` in one sample of the cold and warm sides.
    const STARTS: u32 = 20;
    let sequential = "for (let i = 0; i < 1000; i++) await tools.noop({}); return 1";
    let medians = rounds::interleaved(ROUNDS, 7, |side| {
        rt.block_on(async {
            // The pool's builder replaces the engines the warm side took: every side starts
            // once it is idle again, so that it competes with none.
            while pool.stats().idle < pool.size() {
                tokio::time::sleep(Duration::from_micros(100)).await;
            }
            let mut took = Duration::ZERO;
            match side {
                0 => {
                    let started = std::time::Instant::now();
                    let o = registry
                        .call("run_code", json!({ "code": sequential }))
                        .await;
                    took = started.elapsed();
                    assert_eq!(o.value().unwrap()["result"], 1);
                }
                1 => {
                    let started = std::time::Instant::now();
                    raw("for (let i = 0; i < 1000; i++) await noop({}); return 1").await;
                    took = started.elapsed();
                }
                2 => {
                    let started = std::time::Instant::now();
                    for _ in 0..STARTS {
                        let o = registry.call("run_code", json!({"code": "return 1"})).await;
                        assert_eq!(o.value().unwrap()["result"], 1);
                    }
                    took = started.elapsed() / STARTS;
                }
                3 => {
                    for _ in 0..STARTS {
                        while pool.stats().idle < 1 {
                            tokio::time::sleep(Duration::from_micros(100)).await;
                        }
                        let started = std::time::Instant::now();
                        let o = warm.call("run_code", json!({"code": "return 1"})).await;
                        took += started.elapsed();
                        assert_eq!(o.value().unwrap()["result"], 1);
                    }
                    took /= STARTS;
                }
                4 => {
                    let started = std::time::Instant::now();
                    for _ in 0..STARTS {
                        raw_start().await;
                    }
                    took = started.elapsed() / STARTS;
                }
                // The CPU time of the whole process (every thread), per run. An engine built
                // for its run and kept small is freed before the run returns, so no thread is
                // still at work for these runs when the clock is read.
                5 => {
                    let started = process_cpu();
                    for _ in 0..STARTS {
                        let o = registry.call("run_code", json!({"code": "return 1"})).await;
                        assert_eq!(o.value().unwrap()["result"], 1);
                    }
                    took = (process_cpu() - started) / STARTS;
                }
                _ => {
                    let started = process_cpu();
                    for _ in 0..STARTS {
                        raw_start().await;
                    }
                    took = (process_cpu() - started) / STARTS;
                }
            }
            took
        })
    });
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let [seq, seq_raw, cold, warm, cold_raw, cold_cpu, raw_cpu] = medians[..] else {
        unreachable!("seven sides")
    };
    println!("interleaved medians of {ROUNDS} rounds:");
    println!(
        "  1000 sequential awaited calls: codemode {:.0} µs, raw {:.0} µs: codemode runs at {:.2}x the raw rate",
        us(seq),
        us(seq_raw),
        seq_raw.as_secs_f64() / seq.as_secs_f64()
    );
    // The calls alone: each side's run of 1 000 calls less its own start (the cold run of
    // `return 1`, the raw runtime + context + eval), which the line above also counts.
    let per_call = |run: Duration, start: Duration| run.saturating_sub(start) / 1000;
    let (call, call_raw) = (per_call(seq, cold), per_call(seq_raw, cold_raw));
    println!(
        "  the same per call, each side's start taken off: codemode {:.2} µs, raw {:.2} µs: codemode runs at {:.2}x the raw rate",
        us(call),
        us(call_raw),
        call_raw.as_secs_f64() / call.as_secs_f64()
    );
    println!(
        "  cold start: codemode {:.1} µs ({:.2}x raw), on a warm engine {:.1} µs ({:.2}x raw), raw runtime + context + eval {:.1} µs",
        us(cold),
        cold.as_secs_f64() / cold_raw.as_secs_f64(),
        us(warm),
        warm.as_secs_f64() / cold_raw.as_secs_f64(),
        us(cold_raw)
    );
    println!(
        "  cold start, CPU time of the process per run: codemode {:.1} µs ({:.2}x raw), raw runtime + context + eval {:.1} µs",
        us(cold_cpu),
        cold_cpu.as_secs_f64() / raw_cpu.as_secs_f64(),
        us(raw_cpu)
    );
}

/// A raw new runtime and context that evaluate `1`, then are freed.
async fn raw_start() {
    let runtime = AsyncRuntime::new().unwrap();
    let ctx = AsyncContext::full(&runtime).await.unwrap();
    let v: i32 = ctx.with(|ctx| ctx.eval("1").unwrap()).await;
    assert_eq!(v, 1);
}

/// The CPU time the process has used so far, all threads together.
fn process_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let done = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(done, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Tiny reads through the built-in `read_file` (opened with `openat2` and read on the
/// calling thread), beside a tool that reads the same file the way `read_file` did before:
/// the path resolved by hand (`canonicalize`) and the read handed to the blocking pool.
fn file_tools(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.txt"), "hello\n").unwrap();
    let registry = Registry::new();
    register_run_code(&registry);
    for handle in codemode::FileTools::new(dir.path())
        .unwrap()
        .register(&registry)
        .unwrap()
    {
        handle.forget();
    }
    let root = dir.path().canonicalize().unwrap();
    registry
        .register(
            Tool::builder("read_via_pool")
                .execute(move |args, _e| {
                    let path = root.join(args.str("path").unwrap_or_default());
                    let root = root.clone();
                    async move {
                        let text = tokio::task::spawn_blocking(move || {
                            let real = path.canonicalize().unwrap();
                            assert!(real.starts_with(&root));
                            std::fs::read_to_string(real).unwrap()
                        })
                        .await
                        .unwrap();
                        Ok(json!({ "content": text }))
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap()
        .forget();
    let run = |code: &'static str| {
        let registry = registry.clone();
        async move {
            let o = registry.call("run_code", json!({ "code": code })).await;
            assert_eq!(o.value().unwrap()["result"], 1, "{:?}", o.value());
        }
    };
    let mut group = c.benchmark_group("1000 sequential tiny reads");
    group.bench_function("tools.read_file", |b| {
        b.to_async(rt).iter(|| run("for (let i = 0; i < 1000; i++) await tools.read_file({path: 'tiny.txt'}); return 1"))
    });
    group.bench_function("tools.read_via_pool (resolved by hand, blocking pool)", |b| {
        b.to_async(rt).iter(|| run("for (let i = 0; i < 1000; i++) await tools.read_via_pool({path: 'tiny.txt'}); return 1"))
    });
    group.finish();
    let mut group = c.benchmark_group("Promise.all of 10000 tiny reads");
    group.sample_size(10);
    group.bench_function("tools.read_file", |b| {
        b.to_async(rt).iter(|| run("await Promise.all(Array.from({length: 10000}, () => tools.read_file({path: 'tiny.txt'}))); return 1"))
    });
    group.bench_function("tools.read_via_pool (resolved by hand, blocking pool)", |b| {
        b.to_async(rt).iter(|| run("await Promise.all(Array.from({length: 10000}, () => tools.read_via_pool({path: 'tiny.txt'}))); return 1"))
    });
    group.finish();
}

fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A tool that adds a permit to `started`, then waits for `release`.
fn waiting(
    name: &str,
    started: Arc<tokio::sync::Semaphore>,
    release: Arc<tokio::sync::Notify>,
) -> Tool {
    Tool::builder(name)
        .execute(move |_a, _e| {
            let (started, release) = (started.clone(), release.clone());
            async move {
                started.add_permits(1);
                release.notified().await;
                Ok(json!(null))
            }
        })
        .build()
        .unwrap()
}

/// Prints the resident memory 1 000 sandboxes take while each awaits a tool.
fn idle_sandboxes_memory(rt: &tokio::runtime::Runtime) {
    let registry = registry(answering(rt));
    let release = Arc::new(tokio::sync::Notify::new());
    let started = Arc::new(tokio::sync::Semaphore::new(0));
    registry
        .register(waiting("wait", started.clone(), release.clone()))
        .unwrap()
        .forget();
    rt.block_on(async {
        // One run first, so one-time costs (the compiled prelude) are not counted.
        registry.call("run_code", json!({"code": "return 1"})).await;
        let before = rss_bytes().unwrap_or(0);
        let runs: Vec<_> = (0..1000)
            .map(|_| registry.call("run_code", json!({"code": "await tools.wait(); return 1"})))
            .collect();
        let all = futures::future::join_all(runs);
        tokio::pin!(all);
        let waiting = async {
            let _ = started.acquire_many(1000).await;
        };
        tokio::select! {
            _ = &mut all => {}
            _ = waiting => {}
        }
        let during = rss_bytes().unwrap_or(0);
        release.notify_waiters();
        for _ in 0..1000 {
            release.notify_one();
        }
        let _ = tokio::time::timeout(Duration::from_secs(30), &mut all).await;
        let mib = during.saturating_sub(before) as f64 / (1 << 20) as f64;
        println!(
            "resident memory of 1000 idle sandboxes: {mib:.1} MiB ({:.0} KiB each)",
            mib * 1024.0 / 1000.0
        );
    });
}

/// Prints the resident memory a pool of 32 warm engines holds while idle ("warm engine
/// pool").
fn warm_pool_memory(rt: &tokio::runtime::Runtime) {
    const SIZE: usize = 32;
    let registry = Registry::new();
    let pool = EnginePool::new(SIZE);
    registry
        .register(run_code_tool(
            RunCodeConfig::default().engine_pool(pool.clone()),
        ))
        .unwrap()
        .forget();
    rt.block_on(async {
        let before = rss_bytes().unwrap_or(0);
        // The first run tells the pool what to build for.
        let o = registry.call("run_code", json!({"code": "return 1"})).await;
        assert_eq!(o.value().unwrap()["result"], 1);
        while pool.stats().idle < SIZE {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let during = rss_bytes().unwrap_or(0);
        let kib = during.saturating_sub(before) as f64 / 1024.0;
        println!(
            "warm engine pool: {SIZE} idle engines hold {:.1} MiB ({:.0} KiB each)",
            kib / 1024.0,
            kib / SIZE as f64
        );
    });
}

/// The most resident memory the process has had since the last [`reset_peak_rss`].
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Starts a new peak for [`peak_rss_bytes`] (Linux: `5` to `/proc/self/clear_refs`).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Prints the memory a program holding a 64 MiB tool result of small objects costs, as
/// multiples of the result's JSON size: the process's resident memory while the program
/// holds the value and at the run's peak, and the engine's own peak (`RunUsage`); then, for
/// comparison, the same when the program parses the same JSON text itself, and when it
/// builds the same values as object literals (the engine's own layout for them).
fn held_result_memory(rt: &tokio::runtime::Runtime) {
    // `{"id":…,"name":"item-…","tags":["a","b"],"score":…}`: about 80 bytes of JSON each.
    let item = |i: usize| json!({"id": i, "name": format!("item-{i}"), "tags": ["a", "b"], "score": i as f64 / 7.0});
    let target = 64usize << 20;
    let per_item = serde_json::to_vec(&item(500_000)).unwrap().len() + 1;
    let count = target / per_item;
    // Written item by item: a whole tree, freed, would leave the process's resident memory
    // high before the measurement starts.
    let text: Arc<str> = {
        let mut text = String::from("[");
        for i in 0..count {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&item(i).to_string());
        }
        text.push(']');
        text.into()
    };
    let json_bytes = text.len();
    let release = Arc::new(tokio::sync::Notify::new());
    let holding = Arc::new(tokio::sync::Semaphore::new(0));
    let registry = Registry::new();
    let limits = Limits::default()
        .memory(4 << 30)
        .max_tool_output_bytes(256 << 20)
        .timeout(Duration::from_secs(300));
    registry
        .register(run_code_tool(RunCodeConfig::default().limits(limits)))
        .unwrap()
        .forget();
    let tools = [
        Tool::builder("big").execute(move |_a, _e| async move {
            Ok(serde_json::Value::Array((0..count).map(item).collect()))
        }),
        Tool::builder("big_text").execute(move |_a, _e| {
            let text = text.clone();
            async move { Ok(serde_json::Value::String(text.to_string())) }
        }),
    ];
    for tool in tools {
        registry.register(tool.build().unwrap()).unwrap().forget();
    }
    registry
        .register(waiting("hold", holding.clone(), release.clone()))
        .unwrap()
        .forget();
    let engine_peak = Arc::new(std::sync::Mutex::new(0u64));
    struct EnginePeak(Arc<std::sync::Mutex<u64>>);
    impl codemode::hooks::Observer for EnginePeak {
        fn observe(&self, _exec: &codemode::Exec, _outcome: &codemode::Outcome) {}
        fn run_finished(&self, _exec: &codemode::Exec, usage: &codemode::hooks::RunUsage) {
            *self.0.lock().unwrap() = usage.memory_peak;
        }
    }
    registry.observe(EnginePeak(engine_peak.clone())).forget();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let times = |b: u64| b as f64 / json_bytes as f64;
    rt.block_on(async {
        registry.call("run_code", json!({"code": "return 1"})).await;
        // The same values as object literals made by the program itself: the engine's own
        // layout for them, the least any conversion into JavaScript objects can hold.
        let literals = format!(
            "const v = []; for (let i = 0; i < {count}; i++) v.push({{id: i, name: 'item-' + i, tags: ['a', 'b'], score: i / 7}}); await tools.hold(); return v.length"
        );
        for (what, code) in [
            (
                "a tool's result",
                "const v = await tools.big(); await tools.hold(); return v.length",
            ),
            (
                "the program's own JSON.parse of the same text",
                "const v = JSON.parse(await tools.big_text()); await tools.hold(); return v.length",
            ),
            ("the program's own object literals", literals.as_str()),
        ] {
            codemode::bench_support::return_free_memory();
            let before = rss_bytes().unwrap_or(0);
            reset_peak_rss();
            let started = std::time::Instant::now();
            let run = registry.call("run_code", json!({ "code": code }));
            tokio::pin!(run);
            let (held, took) = tokio::select! {
                o = &mut run => panic!("the run ended before holding: {:?}", o.value()),
                permit = holding.acquire() => {
                    permit.unwrap().forget();
                    (rss_bytes().unwrap_or(0).saturating_sub(before), started.elapsed())
                }
            };
            release.notify_one();
            let o = run.await;
            assert_eq!(o.value().unwrap()["result"], count, "{:?}", o.value());
            let peak = peak_rss_bytes().unwrap_or(0).saturating_sub(before);
            let engine = *engine_peak.lock().unwrap();
            let process = format!(
                "process resident +{:.0} MiB ({:.1}x the JSON) while held, +{:.0} MiB ({:.1}x) at its peak; ",
                mib(held),
                times(held),
                mib(peak),
                times(peak),
            );
            println!(
                "{count} small objects ({:.1} MiB of JSON) as {what}: {}the engine's peak {:.0} MiB ({:.1}x); held after {:.0} ms",
                mib(json_bytes as u64),
                process,
                mib(engine),
                times(engine),
                took.as_secs_f64() * 1e3
            );
        }
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
