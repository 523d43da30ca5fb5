//! The watchdog: one thread that flags runs whose deadline has passed, whatever they are
//! doing (the third of the timeout's three guards; see [`Limits`](super::Limits)).
//!
//! The engine's interrupt handler only runs while JavaScript executes, and the host-side
//! bound only while the run waits. The watchdog flips the run's stop flag from outside at
//! the deadline, so code that polls the flag — the interrupt handler, the driver between
//! steps, the value conversions every few thousand values — stops even when neither of
//! the other two guards is in a position to notice.
//!
//! A run whose caller armed its thread (see [`super::overdue`]) also registers the moment
//! it is overdue, [`ABANDON_AFTER`] past its deadline, when the watchdog calls the arm.
//!
//! Runs register their deadline and unregister when they end ([`Watch`] does both), so the
//! table holds only runs in progress; the thread is woken only when a new deadline comes
//! before the time it is already set to wake at (a run that ends leaves that time as it
//! is: the thread then wakes once for nothing, which is cheaper than a wake-up per run).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, Weak};
use std::time::Instant;

use super::flags::RunFlags;
use super::overdue::{ABANDON_AFTER, OnOverdue};

/// What is due at a moment.
enum Due {
    /// A run's deadline.
    Deadline(Weak<RunFlags>),
    /// An armed run overdue: its arm, and its timeout.
    Overdue(OnOverdue, std::time::Duration),
}

type Table = BTreeMap<(Instant, u64), Due>;

struct State {
    table: Table,
    /// When the thread will wake by itself (`None`: only when notified).
    wakes_at: Option<Instant>,
}

struct Watchdog {
    state: Mutex<State>,
    wake: Condvar,
}

fn watchdog() -> Option<&'static Watchdog> {
    static WATCHDOG: OnceLock<Option<&'static Watchdog>> = OnceLock::new();
    *WATCHDOG.get_or_init(|| {
        let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            state: Mutex::new(State {
                table: BTreeMap::new(),
                wakes_at: None,
            }),
            wake: Condvar::new(),
        }));
        let spawned = std::thread::Builder::new()
            .name("codemode-watchdog".into())
            .spawn(move || {
                let mut state = dog.state.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    let now = Instant::now();
                    let mut overdue = Vec::new();
                    while let Some(entry) = state.table.first_entry() {
                        if entry.key().0 > now {
                            break;
                        }
                        match entry.remove() {
                            Due::Deadline(flags) => {
                                if let Some(flags) = flags.upgrade() {
                                    flags.time_out();
                                }
                            }
                            Due::Overdue(on, timeout) => overdue.push((on, timeout)),
                        }
                    }
                    if !overdue.is_empty() {
                        // Arms run unlocked: one may start a run, or end the process.
                        drop(state);
                        for (on, timeout) in overdue {
                            on(timeout);
                        }
                        state = dog.state.lock().unwrap_or_else(PoisonError::into_inner);
                        continue;
                    }
                    state.wakes_at = state.table.keys().next().map(|(at, _)| *at);
                    state = match state.wakes_at {
                        None => dog.wake.wait(state).unwrap_or_else(PoisonError::into_inner),
                        Some(at) => {
                            dog.wake
                                .wait_timeout(state, at.saturating_duration_since(now))
                                .unwrap_or_else(PoisonError::into_inner)
                                .0
                        }
                    };
                }
            });
        match spawned {
            Ok(_) => Some(dog),
            Err(e) => {
                tracing::warn!("the codemode watchdog thread could not start: {e}");
                None
            }
        }
    })
}

/// A run's registration with the watchdog; dropping it unregisters the run.
pub(crate) struct Watch {
    /// The run's deadline, and the moment it is overdue when armed.
    keys: [Option<(Instant, u64)>; 2],
}

impl Drop for Watch {
    fn drop(&mut self) {
        if self.keys == [None, None] {
            return;
        }
        if let Some(dog) = watchdog() {
            let mut state = dog.state.lock().unwrap_or_else(PoisonError::into_inner);
            for key in self.keys.iter().flatten() {
                state.table.remove(key);
            }
        }
    }
}

/// Flags `flags` as timed out at `at` and, with `overdue` (the run's arm and timeout),
/// calls the arm [`ABANDON_AFTER`] later, unless the returned [`Watch`] is dropped first.
pub(crate) fn watch(
    flags: &Arc<RunFlags>,
    at: Instant,
    overdue: Option<(OnOverdue, std::time::Duration)>,
) -> Watch {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let Some(dog) = watchdog() else {
        return Watch { keys: [None, None] };
    };
    let key = (at, NEXT.fetch_add(1, Ordering::Relaxed));
    let mut state = dog.state.lock().unwrap_or_else(PoisonError::into_inner);
    state
        .table
        .insert(key, Due::Deadline(Arc::downgrade(flags)));
    let overdue = overdue.map(|(on, timeout)| {
        let key = (at + ABANDON_AFTER, NEXT.fetch_add(1, Ordering::Relaxed));
        state.table.insert(key, Due::Overdue(on, timeout));
        key
    });
    let sooner = state.wakes_at.is_none_or(|wakes| at < wakes);
    if sooner {
        // Set here too, so that runs registering before the thread gets the lock do not
        // each wake it again.
        state.wakes_at = Some(at);
    }
    drop(state);
    if sooner {
        dog.wake.notify_one();
    }
    Watch {
        keys: [Some(key), overdue],
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sandbox::flags::StopReason;

    /// Waits until `flags` is flagged, for at most `limit`.
    fn flagged_within(flags: &RunFlags, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if flags.reason() == Some(StopReason::Timeout) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn deadlines_are_flagged_whether_or_not_the_thread_was_woken() {
        let now = Instant::now();
        // A far deadline sets the thread's wake-up time; a nearer one must wake it.
        let far = Arc::new(RunFlags::new(now + Duration::from_secs(60)));
        let far_watch = watch(&far, far.deadline(), None);
        let near = Arc::new(RunFlags::new(now + Duration::from_millis(30)));
        let _near_watch = watch(&near, near.deadline(), None);
        assert!(flagged_within(&near, Duration::from_secs(2)));
        assert_eq!(far.reason(), None);
        drop(far_watch);
        // A run that ends leaves the thread's wake-up time (40 ms here); a later deadline
        // registered then does not wake the thread, and is still flagged: the thread
        // wakes at 40 ms, then sleeps until it.
        let now = Instant::now();
        drop(watch(
            &Arc::new(RunFlags::new(now + Duration::from_millis(40))),
            now + Duration::from_millis(40),
            None,
        ));
        let later = Arc::new(RunFlags::new(now + Duration::from_millis(80)));
        let _later_watch = watch(&later, later.deadline(), None);
        assert!(flagged_within(&later, Duration::from_secs(2)));
        assert!(Instant::now() >= later.deadline());
        // A run that ended before its deadline is never flagged.
        let ended = Arc::new(RunFlags::new(Instant::now() + Duration::from_millis(20)));
        drop(watch(&ended, ended.deadline(), None));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(ended.reason(), None);
    }

    #[test]
    fn an_armed_run_still_going_is_overdue_its_grace_past_its_deadline_and_one_that_ended_never() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let arm = |tag: u32| -> OnOverdue {
            let seen = seen.clone();
            Arc::new(move |timeout| seen.lock().unwrap().push((tag, timeout)))
        };
        // Deadlines that passed all but 40 ms of the grace ago: overdue 40 ms from now.
        let deadline = Instant::now()
            .checked_sub(ABANDON_AFTER - Duration::from_millis(40))
            .unwrap();
        let going = Arc::new(RunFlags::new(deadline));
        let _going = watch(&going, deadline, Some((arm(1), Duration::from_millis(300))));
        let ended = Arc::new(RunFlags::new(deadline));
        drop(watch(
            &ended,
            deadline,
            Some((arm(2), Duration::from_millis(5))),
        ));
        let until = Instant::now() + Duration::from_secs(5);
        while seen.lock().unwrap().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(*seen.lock().unwrap(), [(1, Duration::from_millis(300))]);
        assert_eq!(going.reason(), Some(StopReason::Timeout));
    }
}
