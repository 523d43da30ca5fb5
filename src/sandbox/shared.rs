//! What the host functions (called from JavaScript) and the event loop share during a run.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::Limits;
use super::calls::Calls;
use super::inflight::{SpareWake, Woken};
use super::logs::LogCapture;
use super::timers::Timers;

/// The state of one run outside the engine. Never locked while JavaScript runs or a tool
/// is polled.
pub(super) struct HostState {
    pub(super) calls: Calls,
    pub(super) logs: LogCapture,
    pub(super) timers: Timers,
    pub(super) limits: Limits,
    /// Where calls' wakers queue the calls that can move, for the loop. A call started
    /// from JavaScript is polled once at once with its waker, so a tool that is ready at
    /// once answers without a trip through the loop.
    pub(super) woken: Arc<Woken>,
    /// The waker of the last call that was done on its first poll, for the next call.
    pub(super) spare_wake: Option<SpareWake>,
    /// The run's tools for `tools.$search` and `tools.$describe`, made on first use.
    pub(super) catalog: Option<crate::discovery::Catalog>,
    /// The journal of a run that may pause (see `journal.rs`).
    pub(super) journal: Option<super::journal::Recorder>,
    /// The run's program, for stack traces in its own coordinates (none in an engine
    /// waiting for its run).
    pub(super) program: Option<Arc<crate::program::Program>>,
}

/// [`HostState`] as the host functions and the loop hold it.
pub(super) type Shared = Arc<Mutex<HostState>>;

/// Locks the state (a panic elsewhere while it was held does not poison it).
pub(super) fn lock(state: &Shared) -> MutexGuard<'_, HostState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}
