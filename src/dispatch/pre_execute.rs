//! Stage 2: `pre_execute` listeners decide allow / deny(reason) / ask(prompt).
//!
//! Listeners run in registration order; the first that does not allow decides. `Ask` goes
//! to the registry's [`Approver`]; with none configured it is a denial that says so.

use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::future::BoxFuture;

use super::call::Exec;
use super::execute::panic_message;
use super::hooks::HookSet;
use super::registry::AskMode;
use super::tool::{ErrorKind, ToolError};

/// Stage 2: asks every listener in turn; the first that does not allow decides. A
/// panicking listener denies (fail closed).
pub(crate) async fn decide(hooks: &HookSet, exec: &Exec) -> Result<(), ToolError> {
    for (_, listener) in &hooks.pre {
        let decision =
            catch_unwind(AssertUnwindSafe(|| listener.pre_execute(exec))).map_err(|p| {
                denied(format!(
                    "a policy check failed, so the call was not made ({})",
                    panic_message(&p)
                ))
            })?;
        match decision {
            Decision::Allow => {}
            Decision::Deny(reason) => return Err(denied(reason)),
            // Boxed: the rare path keeps its state out of every call's future.
            Decision::Ask(prompt) => Box::pin(ask(hooks, exec, &prompt)).await?,
        }
    }
    Ok(())
}

/// The `ask` path: the approver answers, or the call is denied when there is none; the
/// call's signal still cancels the wait.
async fn ask(hooks: &HookSet, exec: &Exec, prompt: &str) -> Result<(), ToolError> {
    if exec.inner.ask == AskMode::Approved {
        return Ok(());
    }
    let Some(approver) = hooks.approver.as_ref().filter(|a| a.can_answer(exec)) else {
        if exec.inner.ask == AskMode::Pause {
            return Err(ToolError::with_kind(
                ErrorKind::NeedsApproval,
                prompt.to_owned(),
            ));
        }
        return Err(denied(format!(
            "this call needs approval ({prompt}), and no approver is configured, so it was denied"
        )));
    };
    let asked = catch_unwind(AssertUnwindSafe(|| approver.approve(exec, prompt)))
        .map_err(|p| denied(format!("the approver failed ({})", panic_message(&p))))?;
    tokio::select! {
        answer = asked => match answer {
            Approval::Approved => Ok(()),
            Approval::Denied(reason) => Err(denied(reason)),
        },
        _ = exec.signal().cancelled() => Err(ToolError::cancelled()),
    }
}

/// A refusal by a policy stage.
pub(crate) fn denied(reason: String) -> ToolError {
    ToolError::with_kind(ErrorKind::Denied, reason)
}

/// What a `pre_execute` listener decides about a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Let the call go on to the next listener (and, if all allow, to the guards).
    Allow,
    /// Refuse the call; the reason is what the model reads.
    Deny(String),
    /// Ask the approver; the prompt is what the approver (a person, a policy) reads.
    Ask(String),
}

/// A `pre_execute` listener. Implemented for every `Fn(&Exec) -> Decision` closure.
pub trait PreExecute: Send + Sync + 'static {
    /// Decides about one call. Runs before the call starts; must not block.
    fn pre_execute(&self, exec: &Exec) -> Decision;

    /// Whether this listener may ever answer [`Decision::Ask`] (default: `true`, which is
    /// what every closure says). A `run_code` run records its calls, so that it can pause
    /// at an `ask` and resume later, only while some installed listener may ask and no
    /// approver can answer; a listener that only allows or denies returns `false` and
    /// spares every run that record.
    fn may_ask(&self) -> bool {
        true
    }
}

impl<F> PreExecute for F
where
    F: Fn(&Exec) -> Decision + Send + Sync + 'static,
{
    fn pre_execute(&self, exec: &Exec) -> Decision {
        self(exec)
    }
}

/// The answer of an [`Approver`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead.
    Approved,
    /// Do not; the reason is what the model reads.
    Denied(String),
}

/// Answers `Decision::Ask`: a person at a terminal, a chat UI, a stricter policy.
/// Implemented for every `Fn(&Exec, &str) -> impl Future<Output = Approval>` closure.
pub trait Approver: Send + Sync + 'static {
    /// Answers the prompt for one call. The call waits; its signal still cancels it.
    fn approve(&self, exec: &Exec, prompt: &str) -> BoxFuture<'static, Approval>;

    /// Whether this approver can answer for `exec`'s call now (default: always). When it
    /// cannot, the call is as without an approver: a `run_code` run that can pause pauses
    /// at it, any other call is denied. An MCP server answers through the client of the
    /// call's session, when that client can elicit.
    fn can_answer(&self, exec: &Exec) -> bool {
        let _ = exec;
        true
    }
}

impl<F, Fut> Approver for F
where
    F: Fn(&Exec, &str) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Approval> + Send + 'static,
{
    fn approve(&self, exec: &Exec, prompt: &str) -> BoxFuture<'static, Approval> {
        Box::pin(self(exec, prompt))
    }
}
