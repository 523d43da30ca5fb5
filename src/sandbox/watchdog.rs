//! The watchdog: one thread that flags runs whose deadline has passed, whatever they are
//! doing (DESIGN §5 "Limits": the third of the timeout's three guards).
//!
//! The engine's interrupt handler only runs while JavaScript executes, and the host-side
//! bound only while the run waits. The watchdog flips the run's stop flag from outside at
//! the deadline, so code that polls the flag — the interrupt handler, the driver between
//! steps, the value conversions every few thousand values — stops even when neither of
//! the other two guards is in a position to notice.
//!
//! Runs register their deadline and unregister when they end ([`Watch`] does both), so the
//! table holds only runs in progress; the thread is woken only when a new deadline comes
//! before every other one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, Weak};
use std::time::Instant;

use super::flags::RunFlags;

type Table = BTreeMap<(Instant, u64), Weak<RunFlags>>;

struct Watchdog {
    table: Mutex<Table>,
    wake: Condvar,
}

fn watchdog() -> Option<&'static Watchdog> {
    static WATCHDOG: OnceLock<Option<&'static Watchdog>> = OnceLock::new();
    *WATCHDOG.get_or_init(|| {
        let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            table: Mutex::new(BTreeMap::new()),
            wake: Condvar::new(),
        }));
        let spawned = std::thread::Builder::new()
            .name("codemode-watchdog".into())
            .spawn(move || {
                let mut table = dog.table.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    let now = Instant::now();
                    while let Some(entry) = table.first_entry() {
                        if entry.key().0 > now {
                            break;
                        }
                        if let Some(flags) = entry.remove().upgrade() {
                            flags.time_out();
                        }
                    }
                    table = match table.keys().next().map(|(at, _)| *at) {
                        None => dog.wake.wait(table).unwrap_or_else(PoisonError::into_inner),
                        Some(at) => {
                            dog.wake
                                .wait_timeout(table, at.saturating_duration_since(now))
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
            dog.table
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
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
    let mut table = dog.table.lock().unwrap_or_else(PoisonError::into_inner);
    let earliest = table.keys().next().is_none_or(|first| key < *first);
    table.insert(key, Arc::downgrade(flags));
    drop(table);
    if earliest {
        dog.wake.notify_one();
    }
    Watch { key: Some(key) }
}
