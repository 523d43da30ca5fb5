//! Profiling aid for the sandbox: `cargo run --release --example nested_profile [BODY|cold]`.

use codemode::{Limits, Registry, RunCodeConfig, Tool, run_code_tool};
use serde_json::json;

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Registry::new();
    registry
        .register(run_code_tool(
            RunCodeConfig::default().limits(Limits::default().max_tool_calls(10_000_000)),
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
    let arg = std::env::args().nth(1);
    rt.block_on(async {
        if arg.as_deref() == Some("cold") {
            let n: u32 = std::env::var("N")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(2000);
            let t = std::time::Instant::now();
            for _ in 0..n {
                let o = registry.call("run_code", json!({"code": "return 1"})).await;
                assert_eq!(o.value().unwrap()["result"], 1);
            }
            eprintln!("cold: {:?} per run", t.elapsed() / n);
            return;
        }
        let n = 200_000;
        let body = arg.unwrap_or_else(|| "await tools.noop({})".into());
        let t = std::time::Instant::now();
        let o = registry
            .call(
                "run_code",
                json!({"code": format!("for (let i = 0; i < {n}; i++) {{ {body} }}; return 1")}),
            )
            .await;
        assert_eq!(o.value().unwrap()["status"], "ok", "{:?}", o.value());
        eprintln!("{body}: {:?} per iteration", t.elapsed() / n);
    });
}
