//! Engines, and large values a run no longer needs, are torn down on a background thread,
//! after the run's result is out; a small engine built for its run is freed in place (see
//! [`Teardown`]).
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

/// Where a finished run's engine is freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Teardown {
    /// On the reaper thread: an engine from a pool, whose host chose the lowest latency.
    Reaper,
    /// Where the run ends when the engine held at most [`FREE_IN_PLACE_UP_TO`] bytes at its
    /// peak, on the reaper thread otherwise: an engine built for its run, whose host chose
    /// the least work.
    InPlaceWhenSmall,
}

/// The most bytes an engine built for its run may have held to be freed where its run ends.
///
/// Handing a small engine to the reaper takes less time from the run but costs more CPU
/// than freeing it in place: the reaper's thread wakes for it and frees memory that is in
/// the other core's cache. Measured on 2 cores with cold runs of `return 1` back to back
/// (an engine of about 300 KiB, interleaved rounds): the reaper took about 12 % off each
/// run's latency and added about 16 % to its CPU time. Freeing an engine of this bound takes
/// well under a millisecond.
const FREE_IN_PLACE_UP_TO: usize = 1 << 20;

/// Frees a finished run's engine (the context first), which held at most `held` bytes at its
/// peak, as `teardown` says.
pub(crate) fn reap(context: AsyncContext, runtime: AsyncRuntime, held: usize, teardown: Teardown) {
    // A tuple drops its fields in order.
    reap_engine((context, runtime), held, teardown);
}

/// Drops a handle on a run's engine, or the engine itself, as [`reap`] does.
pub(crate) fn reap_engine<T: Send + 'static>(engine: T, held: usize, teardown: Teardown) {
    if teardown == Teardown::InPlaceWhenSmall && held <= FREE_IN_PLACE_UP_TO {
        drop(engine);
    } else {
        reap_later(engine);
    }
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::thread::ThreadId;

    use super::{FREE_IN_PLACE_UP_TO, Teardown, reap_engine};

    /// Sends the thread that drops it.
    struct Dropped(mpsc::Sender<ThreadId>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().id());
        }
    }

    /// The thread that dropped what `reap_engine(held, teardown)` was handed.
    fn dropped_on(held: usize, teardown: Teardown) -> ThreadId {
        let (tx, rx) = mpsc::channel();
        reap_engine(Dropped(tx), held, teardown);
        rx.recv().expect("the engine was dropped")
    }

    #[test]
    fn a_small_engine_built_for_its_run_is_freed_in_place_and_any_other_by_the_reaper() {
        let here = std::thread::current().id();
        assert_eq!(dropped_on(300 << 10, Teardown::InPlaceWhenSmall), here);
        assert_eq!(
            dropped_on(FREE_IN_PLACE_UP_TO, Teardown::InPlaceWhenSmall),
            here
        );
        assert_ne!(
            dropped_on(FREE_IN_PLACE_UP_TO + 1, Teardown::InPlaceWhenSmall),
            here
        );
        assert_ne!(dropped_on(300 << 10, Teardown::Reaper), here);
    }
}
