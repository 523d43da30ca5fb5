//! Stage 8 (DESIGN §3): `result` observers see the immutable, normalised outcome.
//!
//! Observers run last, in registration order, with a shared reference: they cannot change
//! the outcome. A panicking observer is contained (and reported through `tracing`); the
//! outcome is unaffected.

use super::call::Exec;
use super::outcome::Outcome;

/// A `result` observer. Implemented for every `Fn(&Exec, &Outcome)` closure.
pub trait Observer: Send + Sync + 'static {
    /// Sees one finished call.
    fn observe(&self, call: &Exec, outcome: &Outcome);
}

impl<F> Observer for F
where
    F: Fn(&Exec, &Outcome) + Send + Sync + 'static,
{
    fn observe(&self, call: &Exec, outcome: &Outcome) {
        self(call, outcome)
    }
}
