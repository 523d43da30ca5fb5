//! Stage 8: `result` observers see the immutable, normalised outcome.
//!
//! Observers run last, in registration order, with a shared reference: they cannot change
//! the outcome. A panicking observer is contained (and reported through `tracing`); the
//! outcome is unaffected.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::call::Exec;
use super::execute::panic_message;
use super::hooks::HookSet;
use super::outcome::Outcome;

/// Stage 8: every observer sees the finished outcome.
pub(crate) fn notify(hooks: &HookSet, exec: &Exec, outcome: &Outcome) {
    for (_, observer) in &hooks.observers {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| observer.observe(exec, outcome))) {
            tracing::warn!(tool = %outcome.tool, "a result observer panicked: {}", panic_message(&p));
        }
    }
}

/// Tells every observer of `exec`'s registry about a call's progress (see
/// [`Exec::progress`]). A panicking observer is contained, as in [`notify`].
pub(crate) fn progress(hooks: &HookSet, exec: &Exec, progress: &Progress) {
    for (_, observer) in &hooks.observers {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| observer.progress(exec, progress))) {
            tracing::warn!(tool = %exec.name(), "a progress observer panicked: {}", panic_message(&p));
        }
    }
}

/// How far a running call has come, as its tool reports it ([`Exec::progress`]); the
/// fields are those of an MCP progress notification (`notifications/progress`).
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Work done so far, in the tool's own unit; increases with each report.
    pub progress: f64,
    /// The total amount of work, when known.
    pub total: Option<f64>,
    /// A short human-readable note on the current step.
    pub message: Option<String>,
}

/// A `result` observer. Implemented for every `Fn(&Exec, &Outcome)` closure.
pub trait Observer: Send + Sync + 'static {
    /// Sees one finished call.
    fn observe(&self, exec: &Exec, outcome: &Outcome);

    /// Sees a progress report of a call still running (an upstream MCP server's
    /// `notifications/progress`, or any tool's [`Exec::progress`]). Does nothing unless
    /// overridden; called on the reporting tool's task, so it must not block.
    fn progress(&self, exec: &Exec, progress: &Progress) {
        let _ = (exec, progress);
    }
}

impl<F> Observer for F
where
    F: Fn(&Exec, &Outcome) + Send + Sync + 'static,
{
    fn observe(&self, exec: &Exec, outcome: &Outcome) {
        self(exec, outcome)
    }
}
