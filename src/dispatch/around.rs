//! Stage 4: around-wrappers, in onion order, around `execute`.
//!
//! # Order
//!
//! The first wrapper registered is the outermost layer: it sees the call first and the
//! result last. With `registry.around(metrics)`, then `registry.around(retry)`, then
//! `registry.around(deadline)`:
//!
//! ```text
//!   call ──> metrics ──> retry ──> deadline ──> execute
//!                                                  │
//!   outcome <── metrics <── retry <── deadline <───┘
//! ```
//!
//! Here `metrics` counts one call however many times `retry` tries, and each try gets its
//! own deadline. Registering `deadline` before `retry` would instead bound all the tries
//! together.
//!
//! A wrapper receives the call's [`Exec`] and a [`Next`] for the layers inside it. It may
//! call `next.run(exec)` once, several times (retry), or not at all (a cache); it may impose a
//! deadline by handing the inner layers a narrower signal ([`Exec::with_child_signal`]),
//! which never removes the caller's signal and leaves the outer `Exec` untouched.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::time::Duration;
//! use codemode::hooks::{Deadline, Metrics, Retry};
//! use codemode::{Registry, Tool};
//!
//! let registry = Registry::new();
//! let metrics = Metrics::new();
//! registry.around(metrics.clone()).forget();
//! registry.around(Retry::new(3)).forget();
//! registry.around(Deadline::new(Duration::from_millis(500))).forget();
//! registry
//!     .register(Tool::builder("ping").execute(|_a, _e| async { Ok("pong".into()) }).build().unwrap())
//!     .unwrap()
//!     .forget();
//! registry.call("ping", serde_json::json!({})).await;
//! assert_eq!(metrics.snapshot().calls, 1);
//! # });
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::Value;

use super::call::{Arguments, Exec};
use super::execute::{cancelled_if_signalled, execute, panicked};
use super::hooks::HookSet;
use super::tool::{ErrorKind, ExecuteFuture, Tool, ToolError};

/// An around-wrapper. Implemented for every `Fn(Exec, Next) -> impl Future<Output =
/// Result<Value, ToolError>>` closure; [`around_fn`] lets the compiler infer such a
/// closure's argument types.
pub trait Around: Send + Sync + 'static {
    /// Runs the call through the inner layers (`next.run(exec)`), or not.
    fn around(&self, exec: Exec, next: Next) -> ExecuteFuture;
}

impl<F, Fut> Around for F
where
    F: Fn(Exec, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn around(&self, exec: Exec, next: Next) -> ExecuteFuture {
        Box::pin(self(exec, next))
    }
}

/// An around-wrapper from a closure `|exec, next| async move { … }` that returns the output
/// (`Result<serde_json::Value, ToolError>`), as [`ToolBuilder::execute`] takes a tool's
/// body.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use codemode::hooks::around_fn;
/// use codemode::{Registry, Tool};
///
/// let registry = Registry::new();
/// registry
///     .around(around_fn(|exec, next| async move {
///         let output = next.run(exec).await?;
///         Ok(serde_json::json!({ "wrapped": output }))
///     }))
///     .forget();
/// registry
///     .register(Tool::builder("ping").execute(|_arguments, _exec| async { Ok("pong".into()) }).build().unwrap())
///     .unwrap()
///     .forget();
/// let outcome = registry.call("ping", serde_json::json!({})).await;
/// assert_eq!(outcome.value().unwrap()["wrapped"], "pong");
/// # });
/// ```
///
/// [`ToolBuilder::execute`]: crate::ToolBuilder::execute
pub fn around_fn<F, Fut>(f: F) -> F
where
    F: Fn(Exec, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    f
}

/// The layers inside an around-wrapper, down to `execute`. Cheap to clone; may run
/// several times.
#[derive(Clone)]
pub struct Next {
    pub(crate) layers: Arc<[Arc<dyn Around>]>,
    pub(crate) index: usize,
    pub(crate) tool: Tool,
    pub(crate) args: Arguments,
}

impl Next {
    /// Runs the inner layers with `exec`. A panic in a layer or in `execute` becomes an
    /// error of kind [`ErrorKind::Panicked`].
    pub fn run(&self, exec: Exec) -> ExecuteFuture {
        let Some(layer) = self.layers.get(self.index) else {
            let (tool, arguments) = (self.tool.clone(), self.args.clone());
            return Box::pin(async move { execute(&tool, &arguments, exec).await });
        };
        let name = exec.inner.name.clone();
        let inner = Next {
            layers: self.layers.clone(),
            index: self.index + 1,
            tool: self.tool.clone(),
            args: self.args.clone(),
        };
        match catch_unwind(AssertUnwindSafe(|| layer.around(exec, inner))) {
            Err(p) => {
                let e = panicked(&name, &p);
                Box::pin(async move { Err(e) })
            }
            Ok(fut) => Box::pin(async move {
                match AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(r) => r,
                    Err(p) => Err(panicked(&name, &p)),
                }
            }),
        }
    }
}

/// Stages 4 and 5: the call through the registered wrappers, outermost first, down to
/// `execute` (the pipeline calls `execute` directly when there are none).
pub(crate) async fn run(
    hooks: &HookSet,
    tool: &Tool,
    arguments: &Arguments,
    exec: &Exec,
) -> Result<Value, ToolError> {
    let next = Next {
        layers: hooks.chain.clone(),
        index: 0,
        tool: tool.clone(),
        args: arguments.clone(),
    };
    // `Next::run` boxes: the wrappers' state stays out of every call's future.
    cancelled_if_signalled(exec, next.run(exec.clone()).await)
}

/// A ready-made wrapper that bounds each call it wraps: after `after`, the inner layers'
/// signal is cancelled, they get `grace` (default 1 000 ms) to observe it, and the call
/// ends with an error of kind [`ErrorKind::Timeout`].
#[derive(Clone, Debug)]
pub struct Deadline {
    after: Duration,
    grace: Duration,
}

impl Deadline {
    /// A deadline of `after` per call.
    pub fn new(after: Duration) -> Self {
        Deadline {
            after,
            grace: Duration::from_millis(1_000),
        }
    }

    /// How long a cancelled call gets to finish before it is dropped. Default 1 000 ms.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
}

impl Around for Deadline {
    fn around(&self, exec: Exec, next: Next) -> ExecuteFuture {
        let (inner, narrowed) = exec.with_child_signal();
        let (after, grace) = (self.after, self.grace);
        Box::pin(async move {
            let mut call = next.run(inner);
            tokio::select! {
                result = &mut call => result,
                _ = tokio::time::sleep(after) => {
                    narrowed.cancel();
                    let _ = tokio::time::timeout(grace, call).await;
                    Err(ToolError::with_kind(
                        ErrorKind::Timeout,
                        format!("{} did not finish within its {} ms deadline", exec.name(), after.as_millis()),
                    ))
                }
            }
        })
    }
}

type RetryWhen = dyn Fn(&ToolError) -> bool + Send + Sync;

/// A ready-made wrapper that tries a failing call again: up to `attempts` tries in all,
/// waiting `backoff × try number` between them (default 100 ms), for errors `when` accepts
/// (default: [`ErrorKind::Failed`] and [`ErrorKind::Timeout`]; never after the call's signal
/// was cancelled).
#[derive(Clone)]
pub struct Retry {
    attempts: u32,
    backoff: Duration,
    when: Arc<RetryWhen>,
}

impl std::fmt::Debug for Retry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retry")
            .field("attempts", &self.attempts)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl Retry {
    /// At most `attempts` tries in all (at least 1).
    pub fn new(attempts: u32) -> Self {
        Retry {
            attempts: attempts.max(1),
            backoff: Duration::from_millis(100),
            when: Arc::new(|e: &ToolError| {
                matches!(e.kind(), ErrorKind::Failed | ErrorKind::Timeout)
            }),
        }
    }

    /// The wait before try `n + 1` is `backoff × n`. Default 100 ms.
    pub fn backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// Which errors are worth another try.
    pub fn when(mut self, when: impl Fn(&ToolError) -> bool + Send + Sync + 'static) -> Self {
        self.when = Arc::new(when);
        self
    }
}

impl Around for Retry {
    fn around(&self, exec: Exec, next: Next) -> ExecuteFuture {
        let this = self.clone();
        Box::pin(async move {
            let mut tried = 0;
            loop {
                tried += 1;
                let result = next.run(exec.clone()).await;
                match &result {
                    Err(e)
                        if tried < this.attempts
                            && !exec.signal().is_cancelled()
                            && (this.when)(e) => {}
                    _ => return result,
                }
                tokio::select! {
                    _ = tokio::time::sleep(this.backoff * tried) => {}
                    _ = exec.signal().cancelled() => return Err(ToolError::cancelled()),
                }
            }
        })
    }
}

/// Counts and times of one tool's calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolMetrics {
    /// Calls that went through the wrapper.
    pub calls: u64,
    /// Of those, the ones that ended in error.
    pub errors: u64,
    /// Time spent inside the wrapper, in all.
    pub total: Duration,
    /// The longest single call.
    pub max: Duration,
}

/// All calls seen by a [`Metrics`] wrapper.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Calls in all.
    pub calls: u64,
    /// Calls that ended in error.
    pub errors: u64,
    /// Per tool, by name.
    pub by_tool: BTreeMap<String, ToolMetrics>,
}

/// A ready-made wrapper that counts calls and errors and times them, per tool. Clones
/// share one set of counters; read them with [`Metrics::snapshot`].
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    data: Arc<Mutex<MetricsSnapshot>>,
}

impl Metrics {
    /// Empty counters.
    pub fn new() -> Self {
        Self::default()
    }

    /// The counters now.
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.data
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Around for Metrics {
    fn around(&self, exec: Exec, next: Next) -> ExecuteFuture {
        let data = self.data.clone();
        Box::pin(async move {
            let started = Instant::now();
            let result = next.run(exec.clone()).await;
            let took = started.elapsed();
            let mut d = data.lock().unwrap_or_else(PoisonError::into_inner);
            d.calls += 1;
            let entry = d.by_tool.entry(exec.name().to_owned()).or_default();
            entry.calls += 1;
            entry.total += took;
            entry.max = entry.max.max(took);
            if result.is_err() {
                entry.errors += 1;
                d.errors += 1;
            }
            result
        })
    }
}
