//! The host side of `setTimeout` / `setInterval` (`js-prelude/40_timers.js`): a heap of
//! deadlines the event loop sleeps towards, and the firing of those that are due.
//!
//! The prelude keeps each timer's callback and arguments and numbers the timers; the host
//! keeps only `(due, id)` and which ids are still set. A cleared timer stays in the heap
//! until it comes up and is skipped. A repeating timer is set again by the prelude each
//! time it fires.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::time::{Duration, Instant};

use rquickjs::{Ctx, Function};

use super::flags::RunFlags;
use super::shared::{Shared, lock};

/// The timers of one run.
#[derive(Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    active: HashSet<u64>,
}

impl Timers {
    /// `host.setTimer(id, ms)`: timer `id` is due `ms` milliseconds from now (the prelude
    /// passes a number ≥ 0; at most 10 000 000 seconds count).
    pub(super) fn set(&mut self, id: u64, ms: f64) {
        let delay = Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 1.0e7));
        self.active.insert(id);
        self.heap.push(Reverse((Instant::now() + delay, id)));
    }

    /// `host.clearTimer(id)`: timer `id` no longer fires.
    pub(super) fn clear(&mut self, id: u64) {
        self.active.remove(&id);
    }

    /// When the next timer that is still set is due.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.heap
            .iter()
            .filter(|Reverse((_, id))| self.active.contains(id))
            .map(|Reverse((at, _))| *at)
            .min()
    }

    /// Takes the next timer due by `now` that is still set, if any.
    fn pop_due(&mut self, now: Instant) -> Option<u64> {
        loop {
            match self.heap.peek() {
                Some(Reverse((at, _))) if *at <= now => {
                    let Reverse((_, id)) = self.heap.pop()?;
                    if self.active.remove(&id) {
                        return Some(id);
                    }
                }
                _ => return None,
            }
        }
    }
}

/// Fires every timer due by now, in order (`fireTimer(id)` of the prelude runs its
/// callback), running each callback's microtasks before the next timer.
///
/// # Errors
/// What the first callback that threw threw (the run ends with it).
pub(super) fn fire_due<'js>(
    ctx: &Ctx<'js>,
    state: &Shared,
    flags: &RunFlags,
    fire_timer: &Function<'js>,
) -> rquickjs::Result<()> {
    let now = Instant::now();
    loop {
        let due = lock(state).timers.pop_due(now);
        let Some(id) = due else {
            return Ok(());
        };
        fire_timer.call::<_, ()>((id as f64,))?;
        while flags.reason().is_none() && ctx.execute_pending_job() {}
    }
}
