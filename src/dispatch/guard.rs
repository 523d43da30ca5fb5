//! Stage 3 (DESIGN §3): guards, the final, monotonic deny.
//!
//! Guards run after every `pre_execute` listener allowed (or an approver approved). Every
//! guard runs; any refusal denies the call, and nothing after this stage can undo it: the
//! call never reaches the around-wrappers or `execute`. A panicking guard denies (fail
//! closed).

use super::call::Exec;

/// A guard. Implemented for every `Fn(&Exec) -> Result<(), String>` closure: `Err(reason)`
/// denies.
pub trait Guard: Send + Sync + 'static {
    /// `Err(reason)` denies the call.
    fn check(&self, call: &Exec) -> Result<(), String>;
}

impl<F> Guard for F
where
    F: Fn(&Exec) -> Result<(), String> + Send + Sync + 'static,
{
    fn check(&self, call: &Exec) -> Result<(), String> {
        self(call)
    }
}
