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

/// A `result` observer. Implemented for every `Fn(&Exec, &Outcome)` closure.
pub trait Observer: Send + Sync + 'static {
    /// Sees one finished call.
    fn observe(&self, exec: &Exec, outcome: &Outcome);
}

impl<F> Observer for F
where
    F: Fn(&Exec, &Outcome) + Send + Sync + 'static,
{
    fn observe(&self, exec: &Exec, outcome: &Outcome) {
        self(exec, outcome)
    }
}
