//! The raw rquickjs baseline of the nested-call bench, for quick comparison.

use rquickjs::{AsyncContext, AsyncRuntime, Function, function::Async};

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let n = 200_000;
    rt.block_on(async {
        let runtime = AsyncRuntime::new().unwrap();
        let ctx = AsyncContext::full(&runtime).await.unwrap();
        let t = std::time::Instant::now();
        ctx.async_with(async |ctx| {
            let f =
                Function::new(ctx.clone(), Async(|| async { rquickjs::Result::Ok(()) })).unwrap();
            ctx.globals().set("noop", f).unwrap();
            let body = std::env::args()
                .nth(1)
                .unwrap_or_else(|| "await noop({})".into());
            let p: rquickjs::Promise = ctx
                .eval(format!(
                    "(async () => {{ for (let i = 0; i < {n}; i++) {{ {body} }}; return 1 }})()"
                ))
                .unwrap();
            let v: i32 = p.into_future().await.unwrap();
            assert_eq!(v, 1);
        })
        .await;
        eprintln!("raw: {:?} per call", t.elapsed() / n);
    });
}
