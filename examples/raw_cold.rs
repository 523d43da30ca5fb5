//! The raw rquickjs baseline of the cold-start bench, phase by phase.

use std::time::{Duration, Instant};

use rquickjs::{AsyncContext, AsyncRuntime};

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let n = 2000;
        let (mut a, mut b, mut c, mut d) = (
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
        );
        let t = Instant::now();
        for _ in 0..n {
            let t0 = Instant::now();
            let runtime = AsyncRuntime::new().unwrap();
            let t1 = Instant::now();
            let ctx = AsyncContext::full(&runtime).await.unwrap();
            let t2 = Instant::now();
            let v: i32 = ctx.with(|ctx| ctx.eval("1").unwrap()).await;
            assert_eq!(v, 1);
            let t3 = Instant::now();
            drop(ctx);
            drop(runtime);
            let t4 = Instant::now();
            a += t1 - t0;
            b += t2 - t1;
            c += t3 - t2;
            d += t4 - t3;
        }
        eprintln!(
            "raw cold: {:?} per run (runtime {:?}, context {:?}, eval {:?}, drop {:?})",
            t.elapsed() / n,
            a / n,
            b / n,
            c / n,
            d / n
        );
    });
}
