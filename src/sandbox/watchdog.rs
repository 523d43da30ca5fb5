//! The watchdog: one thread that flags runs whose deadline has passed, whatever they are
//! doing (DESIGN §5 "Limits": the third of the timeout's three guards).
//!
//! The engine's interrupt handler only runs while JavaScript executes, and the host-side
//! bound only while the run waits. The watchdog flips the run's stop flag from outside at
//! the deadline, so code that polls the flag — the interrupt handler, the driver between
//! steps, the value conversions every few thousand values — stops even when neither of
//! the other two guards is in a position to notice.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Instant;

use super::flags::RunFlags;

struct Watch {
    at: Instant,
    id: u64,
    flags: Weak<RunFlags>,
}

impl PartialEq for Watch {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.id) == (other.at, other.id)
    }
}
impl Eq for Watch {}
impl PartialOrd for Watch {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Watch {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.id).cmp(&(other.at, other.id))
    }
}

fn sender() -> Option<&'static Mutex<Sender<Watch>>> {
    static WATCHDOG: OnceLock<Option<Mutex<Sender<Watch>>>> = OnceLock::new();
    WATCHDOG
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Watch>();
            let spawned = std::thread::Builder::new()
                .name("codemode-watchdog".into())
                .spawn(move || {
                    let mut heap: BinaryHeap<Reverse<Watch>> = BinaryHeap::new();
                    loop {
                        let next = heap.peek().map(|Reverse(w)| w.at);
                        let received = match next {
                            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                            Some(at) => {
                                rx.recv_timeout(at.saturating_duration_since(Instant::now()))
                            }
                        };
                        match received {
                            Ok(w) => heap.push(Reverse(w)),
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                        let now = Instant::now();
                        while heap.peek().is_some_and(|Reverse(w)| w.at <= now) {
                            if let Some(Reverse(w)) = heap.pop()
                                && let Some(flags) = w.flags.upgrade()
                            {
                                flags.time_out();
                            }
                        }
                    }
                });
            match spawned {
                Ok(_) => Some(Mutex::new(tx)),
                Err(e) => {
                    tracing::warn!("the codemode watchdog thread could not start: {e}");
                    None
                }
            }
        })
        .as_ref()
}

/// Flags `flags` as timed out at `at` (unless the run is over by then).
pub(crate) fn watch(flags: &Arc<RunFlags>, at: Instant) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if let Some(tx) = sender() {
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(Watch {
                at,
                id,
                flags: Arc::downgrade(flags),
            });
    }
}
