//! The watchdog: one thread that flags runs whose deadline has passed, whatever they are
//! doing (the third of the timeout's three guards; see [`Limits`](super::Limits)).
//!
//! The engine's interrupt handler only runs while JavaScript executes, and the host-side
//! bound only while the run waits. The watchdog flips the run's stop flag from outside at
//! the deadline, so code that polls the flag — the interrupt handler, the driver between
//! steps, the value conversions every few thousand values — stops even when neither of
//! the other two guards is in a position to notice.
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

type Table = BTreeMap<(Instant, u64), Weak<RunFlags>>;

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
                    while let Some(entry) = state.table.first_entry() {
                        if entry.key().0 > now {
                            break;
                        }
                        if let Some(flags) = entry.remove().upgrade() {
                            flags.time_out();
                        }
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
    key: Option<(Instant, u64)>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let (Some(key), Some(dog)) = (self.key, watchdog()) {
            dog.state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .table
                .remove(&key);
        }
    }
}

/// Flags `flags` as timed out at `at`, unless the returned [`Watch`] is dropped first.
pub(crate) fn watch(flags: &Arc<RunFlags>, at: Instant) -> Watch {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let Some(dog) = watchdog() else {
        return Watch { key: None };
    };
    let key = (at, NEXT.fetch_add(1, Ordering::Relaxed));
    let mut state = dog.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.table.insert(key, Arc::downgrade(flags));
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
    Watch { key: Some(key) }
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
        let far_watch = watch(&far, far.deadline());
        let near = Arc::new(RunFlags::new(now + Duration::from_millis(30)));
        let _near_watch = watch(&near, near.deadline());
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
        ));
        let later = Arc::new(RunFlags::new(now + Duration::from_millis(80)));
        let _later_watch = watch(&later, later.deadline());
        assert!(flagged_within(&later, Duration::from_secs(2)));
        assert!(Instant::now() >= later.deadline());
        // A run that ended before its deadline is never flagged.
        let ended = Arc::new(RunFlags::new(Instant::now() + Duration::from_millis(20)));
        drop(watch(&ended, ended.deadline()));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(ended.reason(), None);
    }
}
