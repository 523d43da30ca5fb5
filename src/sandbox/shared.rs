//! What the host functions (called from JavaScript) and the event loop share during a run.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use super::Limits;
use super::calls::Calls;
use super::logs::LogCapture;
use super::timers::Timers;

/// The state of one run outside the engine. Never locked while JavaScript runs or a tool
/// is polled.
pub(super) struct HostState {
    pub(super) calls: Calls,
    pub(super) logs: LogCapture,
    pub(super) timers: Timers,
    pub(super) limits: Limits,
    /// The loop task's waker: a call started from JavaScript is polled with it once at
    /// once, so a tool that is ready at once answers without a trip through the loop.
    pub(super) waker: Option<Waker>,
}

/// [`HostState`] as the host functions and the loop hold it.
pub(super) type Shared = Arc<Mutex<HostState>>;

/// Locks the state (a panic elsewhere while it was held does not poison it).
pub(super) fn lock(state: &Shared) -> MutexGuard<'_, HostState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}
