//! Engines are torn down on a background thread, after the run's result is out.
//!
//! Freeing a runtime collects every object the run made; doing that on the caller's task
//! would add it to every `run_code` call's latency. The reaper takes finished engines over a
//! bounded channel (64 waiting); when it is full, or its thread could not start, the engine
//! is freed where it is. Nothing of a finished run can be reached again either way: the
//! reaper only drops.

use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Mutex, OnceLock, PoisonError};

use rquickjs::{AsyncContext, AsyncRuntime};

type Engine = (AsyncContext, AsyncRuntime);

fn sender() -> Option<&'static Mutex<SyncSender<Engine>>> {
    static REAPER: OnceLock<Option<Mutex<SyncSender<Engine>>>> = OnceLock::new();
    REAPER
        .get_or_init(|| {
            let (tx, rx) = mpsc::sync_channel::<Engine>(64);
            let spawned = std::thread::Builder::new()
                .name("codemode-reaper".into())
                .spawn(move || {
                    while let Ok((context, runtime)) = rx.recv() {
                        drop(context);
                        drop(runtime);
                    }
                });
            match spawned {
                Ok(_) => Some(Mutex::new(tx)),
                Err(e) => {
                    tracing::warn!("the codemode reaper thread could not start: {e}");
                    None
                }
            }
        })
        .as_ref()
}

/// Frees a finished run's engine, on the reaper thread when it has room.
pub(crate) fn reap(context: AsyncContext, runtime: AsyncRuntime) {
    let engine = (context, runtime);
    let engine = match sender() {
        Some(tx) => match tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .try_send(engine)
        {
            Ok(()) => return,
            Err(TrySendError::Full(e) | TrySendError::Disconnected(e)) => e,
        },
        None => engine,
    };
    drop(engine);
}
