//! Nested calls from `run_code` to a real MCP server against the same calls made directly
//! with rmcp's client, in one run: server-everything's `echo`, 1 000 sequential calls and a
//! `Promise.all` of 1 000 (each side talks to its own server process over stdio), and the
//! sequential calls through `Registry::call` without a program, to tell the sandbox's share
//! from the client's. Then it prints the two ratios (direct time over `run_code`'s, so
//! above 1 means `run_code` is faster) from rounds that alternate the sides.
//!
//! `cargo bench --bench mcp` (installs the pinned npm packages of `tests/node` first, as
//! the tests do, when they are missing).

use std::path::PathBuf;
use std::time::Duration;

use codemode::Registry;
use codemode::mcp::{ServerConfig, connect_all};
use codemode::run_code::{Limits, RunCodeConfig, run_code_tool};
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

#[path = "support/rounds.rs"]
mod rounds;

const CALLS: usize = 1_000;

/// Rounds of the interleaved comparison printed after criterion's figures.
const ROUNDS: usize = 31;

/// `tests/node/node_modules/.bin/mcp-server-everything`, after `npm ci` when it is missing.
fn server_everything() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    let bin = dir.join("node_modules/.bin/mcp-server-everything");
    if !bin.exists() {
        let status = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .expect("this bench needs Node 20 and npm on PATH");
        assert!(status.success(), "`npm ci` in tests/node failed");
    }
    bin
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = server_everything();

    // codemode: run_code programs whose calls go through the pipeline and the client.
    let registry = Registry::new();
    let config = RunCodeConfig::default().limits(
        Limits::default()
            .timeout(Duration::from_secs(120))
            .max_in_flight(CALLS)
            .max_tool_calls(CALLS * 2),
    );
    registry.register(run_code_tool(config)).unwrap().forget();
    let connection = rt
        .block_on(connect_all(
            vec![ServerConfig::stdio(
                "everything",
                server.display().to_string(),
                Vec::new(),
            )],
            &registry,
        ))
        .pop()
        .unwrap()
        .unwrap();
    let run = |code: String| {
        let registry = registry.clone();
        async move {
            let outcome = registry.call("run_code", json!({ "code": code })).await;
            let value = outcome.value().unwrap();
            assert_eq!(value["status"], "ok", "{value}");
        }
    };
    let sequential =
        format!("for (let i = 0; i < {CALLS}; i++) await tools.everything_echo({{message: 'x'}});");
    let parallel = format!(
        "await Promise.all(Array.from({{length: {CALLS}}}, () => tools.everything_echo({{message: 'x'}})));"
    );

    // Direct: rmcp's client on its own connection, to a server started as codemode starts
    // one (the environment cleared but for PATH and HOME), so only the client differs.
    let direct = rt
        .block_on(async {
            let mut command = tokio::process::Command::new(&server);
            command.env_clear();
            for key in ["PATH", "HOME"] {
                if let Some(value) = std::env::var_os(key) {
                    command.env(key, value);
                }
            }
            let transport = rmcp::transport::TokioChildProcess::new(command)?;
            ().serve(transport).await.map_err(std::io::Error::other)
        })
        .unwrap();
    let peer = direct.peer().clone();
    let echo = || {
        let peer = peer.clone();
        async move {
            let mut params = CallToolRequestParams::new("echo");
            params.arguments = json!({"message": "x"}).as_object().cloned();
            let result = peer.call_tool(params).await.unwrap();
            assert_ne!(result.is_error, Some(true));
        }
    };

    let direct_sequential = || async {
        for _ in 0..CALLS {
            echo().await;
        }
    };
    let direct_parallel = || futures::future::join_all((0..CALLS).map(|_| echo()));

    let mut group = c.benchmark_group("mcp echo x1000");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("sequential: run_code", |b| {
        b.to_async(&rt).iter(|| run(sequential.clone()))
    });
    // Where the difference goes: the same calls through the registry, without a program.
    group.bench_function("sequential: registry.call", |b| {
        b.to_async(&rt).iter(|| async {
            for _ in 0..CALLS {
                let outcome = registry
                    .call("everything.echo", json!({"message": "x"}))
                    .await;
                assert!(!outcome.is_error());
            }
        })
    });
    group.bench_function("sequential: rmcp direct", |b| {
        b.to_async(&rt).iter(direct_sequential)
    });
    group.bench_function("Promise.all: run_code", |b| {
        b.to_async(&rt).iter(|| run(parallel.clone()))
    });
    group.bench_function("Promise.all: rmcp direct", |b| {
        b.to_async(&rt).iter(direct_parallel)
    });
    group.finish();

    // The ratios, from rounds that alternate the two sides so that a shared machine's
    // load, which drifts over seconds, weighs on both alike.
    let medians = rounds::interleaved(ROUNDS, 4, |side| {
        rt.block_on(async {
            let started = std::time::Instant::now();
            match side {
                0 => run(sequential.clone()).await,
                1 => direct_sequential().await,
                2 => run(parallel.clone()).await,
                _ => drop(direct_parallel().await),
            }
            started.elapsed()
        })
    });
    let [seq_code, seq_direct, all_code, all_direct] = medians[..] else {
        unreachable!("four sides")
    };
    println!("interleaved medians of {ROUNDS} rounds, {CALLS} calls each:");
    for (name, code, direct) in [
        ("sequential", seq_code, seq_direct),
        ("Promise.all", all_code, all_direct),
    ] {
        println!(
            "  {name}: run_code {:.1} ms, rmcp direct {:.1} ms: run_code runs at {:.2}x the direct rate",
            code.as_secs_f64() * 1e3,
            direct.as_secs_f64() * 1e3,
            direct.as_secs_f64() / code.as_secs_f64()
        );
    }
    drop(connection);
    drop(direct);
}

criterion_group!(benches, bench);
criterion_main!(benches);
