//! Stage 3: guards, the final, monotonic deny.
//!
//! Guards run after every `pre_execute` listener allowed (or an approver approved). Every
//! guard runs; any refusal denies the call, and nothing after this stage can undo it: the
//! call never reaches the around-wrappers or `execute`. A panicking guard denies (fail
//! closed).

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::call::Exec;
use super::execute::panic_message;
use super::hooks::HookSet;
use super::pre_execute::denied;
use super::tool::ToolError;

/// Stage 3: every guard checks the call; the first refusal denies it.
pub(crate) fn check(hooks: &HookSet, exec: &Exec) -> Result<(), ToolError> {
    for (_, guard) in &hooks.guards {
        match catch_unwind(AssertUnwindSafe(|| guard.check(exec))) {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => return Err(denied(reason)),
            Err(p) => {
                return Err(denied(format!(
                    "a guard failed, so the call was not made ({})",
                    panic_message(&p)
                )));
            }
        }
    }
    Ok(())
}

/// A guard. Implemented for every `Fn(&Exec) -> Result<(), String>` closure: `Err(reason)`
/// denies.
pub trait Guard: Send + Sync + 'static {
    /// `Err(reason)` denies the call.
    fn check(&self, exec: &Exec) -> Result<(), String>;
}

impl<F> Guard for F
where
    F: Fn(&Exec) -> Result<(), String> + Send + Sync + 'static,
{
    fn check(&self, exec: &Exec) -> Result<(), String> {
        self(exec)
    }
}
