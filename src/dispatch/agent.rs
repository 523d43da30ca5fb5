//! The agent a call belongs to.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::outcome::Content;

/// Durable context a tool attached for the next model request.
#[derive(Clone, Debug, PartialEq)]
pub struct Injection {
    /// What the model will read.
    pub content: Content,
    /// Who attached it (a tool name, `job:…`, …).
    pub source: String,
}

/// Why an injection was not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the agent is disposed; the context was not kept")]
pub struct AgentDisposed;

/// The host's handle on one conversation: tools append context with [`Agent::inject`], the
/// host drains it with [`Agent::take_injections`] when it builds the next model request.
///
/// Injecting never wakes an idle agent: it only appends. On a disposed agent it fails
/// softly with [`AgentDisposed`] (nothing panics, nothing is queued).
#[derive(Clone, Default)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

#[derive(Default)]
struct AgentInner {
    pending: Mutex<Vec<Injection>>,
    disposed: AtomicBool,
    /// Fires when the agent is disposed: what it owns (its background jobs) ends with it.
    gone: tokio_util::sync::CancellationToken,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("disposed", &self.is_disposed())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A new, live agent.
    pub fn new() -> Agent {
        Agent::default()
    }

    /// Appends durable context for the next model request.
    ///
    /// # Errors
    /// [`AgentDisposed`] once [`Agent::dispose`] was called; the context is dropped.
    pub fn inject(
        &self,
        content: impl Into<Content>,
        source: impl Into<String>,
    ) -> Result<(), AgentDisposed> {
        if self.is_disposed() {
            return Err(AgentDisposed);
        }
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Injection {
                content: content.into(),
                source: source.into(),
            });
        Ok(())
    }

    /// The injections waiting for the next request, oldest first, without removing them.
    pub fn injections(&self) -> Vec<Injection> {
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Removes and returns the injections waiting for the next request, oldest first.
    pub fn take_injections(&self) -> Vec<Injection> {
        std::mem::take(
            &mut *self
                .inner
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Ends the agent: later injections fail softly; pending ones are dropped.
    pub fn dispose(&self) {
        self.inner.disposed.store(true, Ordering::SeqCst);
        self.inner.gone.cancel();
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Whether [`Agent::dispose`] was called.
    pub fn is_disposed(&self) -> bool {
        self.inner.disposed.load(Ordering::SeqCst)
    }

    /// Fires when the agent is disposed.
    pub(crate) fn gone(&self) -> &tokio_util::sync::CancellationToken {
        &self.inner.gone
    }

    /// Whether `self` and `other` are handles on the same conversation.
    pub fn same_as(&self, other: &Agent) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
