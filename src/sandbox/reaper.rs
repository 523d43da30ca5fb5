//! Engines, and large values a run no longer needs, are torn down on a background thread,
//! after the run's result is out.
//!
//! Freeing a runtime collects every object the run made, and freeing a 10 MB JSON value
//! frees a million allocations (about 40–90 ms); doing that on the caller's task would add
//! it to the `run_code` call's latency. The reaper takes them over a bounded channel (64
//! waiting); when it is full, or its thread could not start, they are freed where they
//! are. Nothing handed to the reaper can be reached again: it only drops.

use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Mutex, OnceLock, PoisonError};

use rquickjs::{AsyncContext, AsyncRuntime};

type Garbage = Box<dyn Send>;

fn sender() -> Option<&'static Mutex<SyncSender<Garbage>>> {
    static REAPER: OnceLock<Option<Mutex<SyncSender<Garbage>>>> = OnceLock::new();
    REAPER
        .get_or_init(|| {
            let (tx, rx) = mpsc::sync_channel::<Garbage>(64);
            let spawned = std::thread::Builder::new()
                .name("codemode-reaper".into())
                .spawn(move || {
                    while let Ok(garbage) = rx.recv() {
                        drop(garbage);
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

/// Frees a finished run's engine (the context first), on the reaper thread when it has room.
pub(crate) fn reap(context: AsyncContext, runtime: AsyncRuntime) {
    // A tuple drops its fields in order.
    reap_later((context, runtime));
}

/// Drops `garbage` on the reaper thread when it has room, here otherwise.
pub(crate) fn reap_later<T: Send + 'static>(garbage: T) {
    let garbage: Garbage = Box::new(garbage);
    let garbage = match sender() {
        Some(tx) => match tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .try_send(garbage)
        {
            Ok(()) => return,
            Err(TrySendError::Full(g) | TrySendError::Disconnected(g)) => g,
        },
        None => garbage,
    };
    drop(garbage);
}
