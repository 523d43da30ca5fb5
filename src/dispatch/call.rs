//! Execution identity: what every call carries through the pipeline.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::agent::Agent;
use super::registry::{Registry, Request, WeakRegistry};
use super::tool::Tool;

/// The frozen, lossless arguments of a call: cheap to clone, impossible to change.
///
/// Dereferences to the `serde_json::Value` (always an object once validated).
#[derive(Clone, Debug, PartialEq)]
pub struct Arguments(Arc<Value>);

impl Arguments {
    /// Freezes a value.
    pub fn new(value: Value) -> Self {
        Arguments(Arc::new(value))
    }

    /// Deserializes the arguments into a Rust type (for tools with typed arguments).
    ///
    /// # Errors
    /// The `serde_json` error when the shape does not fit.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&*self.0)
    }

    /// A string argument, if present and a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }
}

impl Deref for Arguments {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

/// A call's id, unique within its [`Registry`]: `call_1`, `call_2`, …
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId(pub(crate) u64);

impl CallId {
    /// The number behind the id.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call_{}", self.0)
    }
}

/// An opaque token naming one call; a nested call's `parent` is its caller's token.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallToken(pub(crate) u64);

impl fmt::Debug for CallToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CallToken({:016x})", self.0)
    }
}

impl fmt::Display for CallToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The execution context a tool receives: the call's identity, its cancellation signal and
/// its agent. Immutable: nothing in the pipeline can change a field of a call in flight; an
/// around-wrapper that imposes a deadline passes a *new* `Exec` with a child signal inward
/// ([`Exec::with_child_signal`]), so the outer one is untouched.
///
/// Cloning is one reference count: the pipeline hands the same `Exec` to every stage.
#[derive(Clone)]
pub struct Exec {
    pub(crate) inner: Arc<ExecInner>,
}

#[derive(Clone)]
pub(crate) struct ExecInner {
    pub(crate) call_id: CallId,
    pub(crate) name: Arc<str>,
    pub(crate) arguments: Arguments,
    pub(crate) agent: Agent,
    pub(crate) token: CallToken,
    pub(crate) parent: Option<CallToken>,
    pub(crate) nested: bool,
    pub(crate) registry: WeakRegistry,
    pub(crate) progress: Option<super::ProgressSink>,
    pub(crate) ask: super::registry::AskMode,
    pub(crate) signal: Arc<CancellationToken>,
}

impl fmt::Debug for Exec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exec")
            .field("call_id", &self.inner.call_id)
            .field("name", &self.inner.name)
            .field("token", &self.inner.token)
            .field("parent", &self.inner.parent)
            .finish_non_exhaustive()
    }
}

impl Exec {
    /// The execution context of call `call_id` of `tool`, made from `request`: the
    /// arguments frozen, a fresh token, the request's agent or else the registry's.
    pub(crate) fn for_call(
        registry: &Registry,
        call_id: CallId,
        tool: &Tool,
        request: Request,
    ) -> Exec {
        Exec {
            inner: Arc::new(ExecInner {
                call_id,
                name: tool.inner.name.clone(),
                arguments: Arguments::new(request.arguments),
                agent: request
                    .agent
                    .unwrap_or_else(|| registry.inner.agent.clone()),
                token: registry.new_token(call_id.0),
                parent: request.parent,
                nested: request.nested,
                registry: registry.downgrade(),
                progress: request.progress,
                ask: request.ask,
                signal: request.signal,
            }),
        }
    }

    /// This call's id.
    pub fn call_id(&self) -> CallId {
        self.inner.call_id
    }

    /// The called tool's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The frozen arguments.
    pub fn arguments(&self) -> &Arguments {
        &self.inner.arguments
    }

    /// The agent the call belongs to.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// This call's opaque token.
    pub fn token(&self) -> CallToken {
        self.inner.token
    }

    /// The caller's token, set for calls made from inside `run_code`.
    pub fn parent(&self) -> Option<CallToken> {
        self.inner.parent
    }

    /// Whether the call was made from inside a `run_code` program.
    pub fn is_nested(&self) -> bool {
        self.inner.nested
    }

    /// The same call under another signal (a background job's own).
    pub(crate) fn with_signal(&self, signal: CancellationToken) -> Exec {
        Exec {
            inner: Arc::new(ExecInner {
                signal: Arc::new(signal),
                ..(*self.inner).clone()
            }),
        }
    }

    /// The cancellation signal; `execute` must observe it.
    pub fn signal(&self) -> &CancellationToken {
        &self.inner.signal
    }

    /// A copy of this call whose signal is a child of this one's, for the inner layers of an
    /// around-wrapper. Cancel the returned token to cancel the inner
    /// layers (a deadline); cancelling the call still reaches them, so a wrapper can narrow
    /// the signal but never remove it, and the outer `Exec` keeps its own signal.
    pub fn with_child_signal(&self) -> (Exec, CancellationToken) {
        let child = self.inner.signal.child_token();
        (self.with_signal(child.clone()), child)
    }

    /// Reports how far this call has come to the registry's observers
    /// ([`super::Observer::progress`]; the CLI prints the reports on stderr) and to the
    /// call's [`super::ProgressSink`], if its request set one.
    pub fn progress(&self, progress: super::Progress) {
        if let Some(registry) = self.inner.registry.upgrade() {
            super::observe::progress(&registry.inner.hooks.snapshot(), self, &progress);
        }
        if let Some(sink) = &self.inner.progress {
            sink.report(self, &progress);
        }
    }

    /// Tells the registry's observers what this call's sandboxed run used
    /// ([`super::Observer::run_finished`]).
    pub(crate) fn run_finished(&self, usage: &super::RunUsage) {
        if let Some(registry) = self.inner.registry.upgrade() {
            super::observe::run_finished(&registry.inner.hooks.snapshot(), self, usage);
        }
    }

    /// Where this call's progress reports go besides the observers: the calls it makes
    /// (a `run_code` program's) report there too.
    pub(crate) fn progress_sink(&self) -> Option<&super::ProgressSink> {
        self.inner.progress.as_ref()
    }

    /// The registry that dispatched this call, to make further calls (as `run_code` does).
    /// `None` once the registry is gone.
    pub fn registry(&self) -> Option<Registry> {
        self.inner.registry.upgrade()
    }
}
