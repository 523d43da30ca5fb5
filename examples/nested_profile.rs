//! Profiling aid for the nested call path: `cargo run --release --example nested_profile`.

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
    let n = 200_000;
    let body = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "await tools.noop({})".into());
    rt.block_on(async {
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
