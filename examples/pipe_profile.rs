//! Profiling aid: one nested dispatch of a no-op tool, polled once, in a loop.

use codemode::{Registry, Request, Tool};
use futures::FutureExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _g = rt.enter();
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
    let signal = CancellationToken::new();
    let name: std::sync::Arc<str> = "noop".into();
    let n = 1_000_000;
    let t = std::time::Instant::now();
    for _ in 0..n {
        let fut = Box::pin(
            registry.dispatch(Request::new(name.clone(), json!({}), signal.clone()).nested(true)),
        );
        let o = fut.now_or_never().unwrap();
        assert!(!o.is_error());
    }
    eprintln!("pipeline: {:?} per call", t.elapsed() / n);
}
