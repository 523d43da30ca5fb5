//! The host side of `setTimeout` / `setInterval` (`js-prelude/40_timers.js`): a heap of
//! deadlines the event loop sleeps towards, and the firing of those that are due.
//!
//! The prelude keeps each timer's callback and arguments and numbers the timers; the host
//! keeps only `(due, id)` and which ids are still set. A cleared timer stays in the heap
//! until it comes up and is skipped, or until cleared entries outnumber the timers still
//! set (and a few more), when the heap keeps only those: host memory stays in proportion
//! to the timers the program holds. A repeating timer is set again by the prelude each
//! time it fires.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

use rquickjs::{Ctx, Function};

use super::engine::{JobThrew, run_jobs};
use super::flags::RunFlags;
use super::shared::{Shared, lock};
use super::stack::StackFloor;

/// What threw while timers fired: a timer's callback (the engine's error), or a microtask
/// it queued (the thrown value is pending on the context).
pub(super) enum Uncaught {
    Timer(rquickjs::Error),
    Microtask,
}

/// The timers of one run.
#[derive(Default)]
pub(super) struct Timers {
    /// (due, setting, id): a timer set again (a repeating one) has a new setting, and the
    /// entries of its earlier settings are skipped.
    heap: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    /// The timers still set: id → setting.
    active: HashMap<u64, u64>,
    settings: u64,
}

impl Timers {
    /// `host.setTimer(id, ms)`: timer `id` is due `ms` milliseconds from now (the prelude
    /// passes a number ≥ 0; at most 10 000 000 seconds count).
    pub(super) fn set(&mut self, id: u64, ms: f64) {
        let delay = Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 1.0e7));
        self.settings += 1;
        self.active.insert(id, self.settings);
        self.heap
            .push(Reverse((Instant::now() + delay, self.settings, id)));
        self.compact();
    }

    /// `host.clearTimer(id)`: timer `id` no longer fires.
    pub(super) fn clear(&mut self, id: u64) {
        self.active.remove(&id);
        self.compact();
    }

    /// Drops the entries of timers cleared or set again once they are more than the timers
    /// still set, plus 64: each drop halves the heap at least, so it costs O(1) amortized
    /// per clear.
    fn compact(&mut self) {
        if self.heap.len() > 2 * self.active.len() + 64 {
            let active = &self.active;
            self.heap
                .retain(|Reverse((_, setting, id))| active.get(id) == Some(setting));
        }
    }

    /// When the next timer that is still set is due (entries of cleared timers at the top
    /// are dropped on the way).
    pub(super) fn next_due(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, setting, id))) = self.heap.peek() {
            if self.active.get(id) == Some(setting) {
                return Some(*at);
            }
            self.heap.pop();
        }
        None
    }

    /// Takes the next timer due by `now` that is still set, if any.
    fn pop_due(&mut self, now: Instant) -> Option<u64> {
        loop {
            match self.heap.peek() {
                Some(Reverse((at, _, _))) if *at <= now => {
                    let Reverse((_, setting, id)) = self.heap.pop()?;
                    if self.active.get(&id) == Some(&setting) {
                        self.active.remove(&id);
                        return Some(id);
                    }
                }
                _ => return None,
            }
        }
    }

    /// Takes timer `id` whether it is due or not (a resumed run replays the order its
    /// timers fired in): whether it was set.
    pub(super) fn take(&mut self, id: u64) -> bool {
        self.active.remove(&id).is_some()
    }
}

/// Fires every timer due by now, in order (`fire(id)` of the timer table,
/// 42_timer_table.js, runs its callback), running each callback's microtasks before the
/// next timer; the ids fired go to the run's journal, if it keeps one.
///
/// # Errors
/// What the first callback that threw threw (the run ends with it).
pub(super) fn fire_due<'js>(
    ctx: &Ctx<'js>,
    state: &Shared,
    flags: &RunFlags,
    floor: &StackFloor,
    fire_timer: &Function<'js>,
) -> Result<(), Uncaught> {
    let now = Instant::now();
    let mut fired = Vec::new();
    let result = loop {
        let due = lock(state).timers.pop_due(now);
        let Some(id) = due else {
            break Ok(());
        };
        fired.push(id);
        // The callback before this one may have entered a host function deep down.
        floor.rebase(ctx);
        if let Err(e) = fire_timer.call::<_, ()>((id as f64,)) {
            break Err(Uncaught::Timer(e));
        }
        if run_jobs(ctx, flags).is_err() {
            break Err(Uncaught::Microtask);
        }
    };
    if let Some(journal) = lock(state).journal.as_mut() {
        journal.fired(fired);
    }
    result
}

/// Fires the timers `ids` in order, as a resumed run's journal says they fired.
///
/// # Errors
/// `Ok(Err(id))` for the first timer that is not set (the program diverged); the error of
/// a callback that threw.
pub(super) fn fire_replayed<'js>(
    ctx: &Ctx<'js>,
    state: &Shared,
    flags: &RunFlags,
    floor: &StackFloor,
    fire_timer: &Function<'js>,
    ids: Vec<u64>,
) -> Result<Result<(), u64>, Uncaught> {
    for id in ids {
        if !lock(state).timers.take(id) {
            return Ok(Err(id));
        }
        floor.rebase(ctx);
        fire_timer
            .call::<_, ()>((id as f64,))
            .map_err(Uncaught::Timer)?;
        run_jobs(ctx, flags).map_err(|JobThrew| Uncaught::Microtask)?;
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::Timers;

    /// Entries of cleared timers, and of earlier settings of a timer set again, do not pile
    /// up: the heap stays within twice the timers still set, plus 64.
    #[test]
    fn cleared_and_reset_timers_leave_the_heap_in_proportion_to_those_still_set() {
        let mut timers = Timers::default();
        for id in 1..=100_000 {
            timers.set(id, 1.0e9);
            timers.clear(id);
        }
        assert!(timers.heap.len() <= 64, "{}", timers.heap.len());
        assert_eq!(timers.next_due(), None);
        for _ in 0..100_000 {
            timers.set(7, 1.0e9);
        }
        assert!(timers.heap.len() <= 2 + 64, "{}", timers.heap.len());
        timers.set(8, 0.0);
        let due = timers.next_due().unwrap();
        assert!(due <= std::time::Instant::now());
        assert_eq!(timers.pop_due(std::time::Instant::now()), Some(8));
        assert!(timers.take(7));
        assert_eq!(timers.next_due(), None);
    }
}
