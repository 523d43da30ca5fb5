//! Stage 2 (DESIGN §3): `pre_execute` listeners decide allow / deny(reason) / ask(prompt).
//!
//! Listeners run in registration order; the first that does not allow decides. `Ask` goes
//! to the registry's [`Approver`]; with none configured it is a denial that says so.

use futures::future::BoxFuture;

use super::call::Exec;

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
    fn pre_execute(&self, call: &Exec) -> Decision;
}

impl<F> PreExecute for F
where
    F: Fn(&Exec) -> Decision + Send + Sync + 'static,
{
    fn pre_execute(&self, call: &Exec) -> Decision {
        self(call)
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
    fn approve(&self, call: &Exec, prompt: &str) -> BoxFuture<'static, Approval>;
}

impl<F, Fut> Approver for F
where
    F: Fn(&Exec, &str) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Approval> + Send + 'static,
{
    fn approve(&self, call: &Exec, prompt: &str) -> BoxFuture<'static, Approval> {
        Box::pin(self(call, prompt))
    }
}
