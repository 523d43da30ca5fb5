//! Engines, and large values a run no longer needs, are torn down on a background thread,
//! after the run's result is out; a small engine built for its run is freed in place (see
//! [`Teardown`]).
//!
//! Freeing a runtime collects every object the run made, and freeing a 10 MB JSON value
//! frees a million allocations (about 40–90 ms); doing that on the caller's task would add
//! it to the `run_code` call's latency. The reaper takes them over a bounded queue (64
//! waiting), woken only when it sleeps (see [`LINGER`]); when the queue is full, or its
//! thread could not start, they are freed where they are. Nothing handed to the reaper can
//! be reached again: it only drops.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use rquickjs::{AsyncContext, AsyncRuntime};

type Garbage = Box<dyn Send>;

/// Most garbage waiting for the reaper; past it, garbage is freed where it is.
const WAITING: usize = 64;

/// How long the reaper waits after freeing a batch before it takes the next: garbage that
/// arrives meanwhile is handed over without waking its thread. Waking a thread that sleeps
/// cost about 16 µs of a warm run's 90 µs on 2 cores (a futex wake, and on a virtual
/// machine an interrupt to the other core); a run that ends while the reaper is awake pays
/// only a lock.
const LINGER: Duration = Duration::from_millis(1);

/// The reaper's queue, and whether its thread sleeps until woken.
struct Queue {
    garbage: Vec<Garbage>,
    asleep: bool,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    garbage: Vec::new(),
    asleep: false,
});
static WAKE: Condvar = Condvar::new();

fn queue() -> MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether the reaper's thread runs (started on first use).
fn started() -> bool {
    static STARTED: OnceLock<bool> = OnceLock::new();
    *STARTED.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("codemode-reaper".into())
            .spawn(reap_forever);
        if let Err(e) = &spawned {
            tracing::warn!("the codemode reaper thread could not start: {e}");
        }
        spawned.is_ok()
    })
}

/// The reaper's thread: frees what is handed over, in order, a batch at a time.
fn reap_forever() {
    let mut batch = Vec::new();
    loop {
        {
            let mut q = queue();
            while q.garbage.is_empty() {
                q.asleep = true;
                q = WAKE.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
            q.asleep = false;
            std::mem::swap(&mut q.garbage, &mut batch);
        }
        for garbage in batch.drain(..) {
            drop(garbage);
        }
        std::thread::sleep(LINGER);
    }
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
    if !started() {
        drop(garbage);
        return;
    }
    let mut q = queue();
    if q.garbage.len() >= WAITING {
        drop(q);
        drop(garbage);
        return;
    }
    q.garbage.push(Box::new(garbage));
    let asleep = q.asleep;
    drop(q);
    if asleep {
        WAKE.notify_one();
    }
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
