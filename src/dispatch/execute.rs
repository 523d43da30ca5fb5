//! Stage 5: `execute`, the one place that calls a tool's code.
//!
//! A panic in `execute` — while it builds its future or while the future runs — becomes an
//! error of kind [`ErrorKind::Panicked`] naming the tool; an error returned after the call's
//! signal was cancelled becomes [`ErrorKind::Cancelled`]. The around-wrappers of stage 4
//! reach `execute` through [`Next`](super::Next), which calls [`execute`] at its innermost
//! layer, so the containment is written once.

use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::FutureExt;
use serde_json::Value;

use super::call::{Arguments, Exec};
use super::tool::{ErrorKind, Tool, ToolError};

/// Runs `tool`'s `execute` with `arguments` and `exec`, containing its panics.
pub(crate) async fn execute(
    tool: &Tool,
    arguments: &Arguments,
    exec: Exec,
) -> Result<Value, ToolError> {
    let started = catch_unwind(AssertUnwindSafe(|| {
        tool.inner.execute.execute(arguments.clone(), exec)
    }));
    match started {
        Err(p) => Err(panicked(tool.name(), &p)),
        Ok(fut) => match AssertUnwindSafe(fut).catch_unwind().await {
            Ok(r) => r,
            Err(p) => Err(panicked(tool.name(), &p)),
        },
    }
}

/// The error of a call whose signal was cancelled while it ran: a plain failure then is the
/// cancellation's effect, reported as [`ErrorKind::Cancelled`].
pub(crate) fn cancelled_if_signalled(
    exec: &Exec,
    result: Result<Value, ToolError>,
) -> Result<Value, ToolError> {
    match result {
        Err(e) if exec.signal().is_cancelled() && e.kind() == ErrorKind::Failed => Err(
            ToolError::with_kind(ErrorKind::Cancelled, e.message().to_owned()),
        ),
        other => other,
    }
}

/// The error of a tool whose code panicked.
pub(crate) fn panicked(tool: &str, payload: &Box<dyn std::any::Any + Send>) -> ToolError {
    ToolError::with_kind(
        ErrorKind::Panicked,
        format!(
            "tool {tool} failed unexpectedly: {}",
            panic_message(payload)
        ),
    )
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}
