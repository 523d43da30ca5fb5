//! Stage 8: `result` observers see the immutable, normalised outcome.
//!
//! Observers run last, in registration order, with a shared reference: they cannot change
//! the outcome. A panicking observer is contained (and reported through `tracing`); the
//! outcome is unaffected.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

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

/// Tells every observer that a call started (see [`Observer::started`]); a panicking
/// observer is contained, as in [`notify`].
pub(crate) fn started(hooks: &HookSet, exec: &Exec) {
    for (_, observer) in &hooks.observers {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| observer.started(exec))) {
            tracing::warn!(tool = %exec.name(), "an observer panicked at a call's start: {}", panic_message(&p));
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

/// Tells every observer what a finished run used (see [`Observer::run_finished`]); a
/// panicking observer is contained, as in [`notify`].
pub(crate) fn run_finished(hooks: &HookSet, exec: &Exec, usage: &RunUsage) {
    for (_, observer) in &hooks.observers {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| observer.run_finished(exec, usage))) {
            tracing::warn!(tool = %exec.name(), "an observer panicked at a run's end: {}", panic_message(&p));
        }
    }
}

/// What one sandboxed run used, against the limits it ran under: reported by `run_code`
/// (and `run_code_resume`) to the registry's observers when the program ends, before the
/// call's outcome ([`Observer::run_finished`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunUsage {
    /// Wall-clock time of the run, from its start to the program's end.
    pub elapsed: std::time::Duration,
    /// The most bytes the engine held at once, its prelude included (what
    /// `Limits::memory` bounds); 0 when no engine started (a syntax error).
    pub memory_peak: u64,
    /// Tool calls the program made (what `Limits::max_tool_calls` bounds).
    pub tool_calls: u64,
    /// Bytes of console output, one more per line (what `Limits::max_console_bytes`
    /// bounds).
    pub console_bytes: u64,
}

/// Where one call's progress reports go besides the registry's observers, set with
/// [`Request::report_progress_to`](super::Request::report_progress_to): the reports of
/// the call and of every call made from inside it (a `run_code` program's calls), with the
/// reporting call's [`Exec`]. Called on the reporting tool's task, so it must not block.
#[derive(Clone)]
pub struct ProgressSink(Arc<ReportFn>);

/// What a [`ProgressSink`] calls with each report.
type ReportFn = dyn Fn(&Exec, &Progress) + Send + Sync;

impl ProgressSink {
    /// A sink that hands each report to `f`.
    pub fn new(f: impl Fn(&Exec, &Progress) + Send + Sync + 'static) -> ProgressSink {
        ProgressSink(Arc::new(f))
    }

    /// Hands `progress` to the sink; a panic there is contained, as an observer's is.
    pub(crate) fn report(&self, exec: &Exec, progress: &Progress) {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| (self.0)(exec, progress))) {
            tracing::warn!(tool = %exec.name(), "a progress sink panicked: {}", panic_message(&p));
        }
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
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

impl Progress {
    /// The report as one line: `TOOL PROGRESS[/TOTAL][ MESSAGE]`, whole numbers without a
    /// fraction, e.g. `everything.trigger-long-running-operation 2/5 step 2`.
    pub fn describe(&self, tool: &str) -> String {
        let number = |n: f64| {
            if n.fract() == 0.0 && n.abs() < 1e15 {
                format!("{}", n as i64)
            } else {
                format!("{n}")
            }
        };
        let mut line = format!("{tool} {}", number(self.progress));
        if let Some(total) = self.total {
            line.push('/');
            line.push_str(&number(total));
        }
        if let Some(message) = self.message.as_deref().filter(|m| !m.is_empty()) {
            line.push(' ');
            line.push_str(message);
        }
        line
    }
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

    /// Sees a call start (its tool found, before its arguments are checked): where a UI
    /// shows the call's pending card. Does nothing unless overridden; must not block.
    fn started(&self, exec: &Exec) {
        let _ = exec;
    }

    /// Sees what a `run_code` run used, when its program ends (`exec` is the `run_code`
    /// call's). Does nothing unless overridden; must not block.
    fn run_finished(&self, exec: &Exec, usage: &RunUsage) {
        let _ = (exec, usage);
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
