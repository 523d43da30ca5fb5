//! Stage 7 (DESIGN §3): `post_execute` listeners may replace the content, replace the
//! value, block the result, or attach model-facing context.
//!
//! Listeners run in registration order on the outcome of stage 6 (errors included) and
//! each sees the changes of those before it. A replaced value is checked against the
//! tool's output schema like the original (and re-rendered for direct calls); blocking
//! turns the outcome into an error with the listener's reason. A panicking listener blocks
//! the result.

use serde_json::Value;

use super::call::Exec;
use super::outcome::Content;
use super::tool::ToolError;

/// A `post_execute` listener. Implemented for every `Fn(&Exec, &mut PostOutcome)` closure.
pub trait PostExecute: Send + Sync + 'static {
    /// Looks at, and may change, one call's outcome.
    fn post_execute(&self, call: &Exec, outcome: &mut PostOutcome);
}

impl<F> PostExecute for F
where
    F: Fn(&Exec, &mut PostOutcome) + Send + Sync + 'static,
{
    fn post_execute(&self, call: &Exec, outcome: &mut PostOutcome) {
        self(call, outcome)
    }
}

/// The outcome as `post_execute` listeners see and change it.
#[derive(Debug)]
pub struct PostOutcome {
    pub(crate) result: Result<Value, ToolError>,
    pub(crate) content: Vec<Content>,
    pub(crate) context: Vec<Content>,
    pub(crate) value_replaced: bool,
    pub(crate) content_replaced: bool,
}

impl PostOutcome {
    /// The value so far, or the error.
    pub fn result(&self) -> Result<&Value, &ToolError> {
        self.result.as_ref()
    }

    /// Whether the outcome is an error.
    pub fn is_error(&self) -> bool {
        self.result.is_err()
    }

    /// The model-facing content so far (empty for nested calls).
    pub fn content(&self) -> &[Content] {
        &self.content
    }

    /// Replaces the canonical value (a failed outcome becomes a success). The new value is
    /// checked against the output schema and, for direct calls, rendered again unless the
    /// content is also replaced. A denied outcome (by a `pre_execute` listener, a guard, or
    /// an earlier [`PostOutcome::block`]) stays denied: denial is monotonic, so this does
    /// nothing then.
    pub fn replace_value(&mut self, value: Value) {
        if self.is_denied() {
            return;
        }
        self.result = Ok(value);
        self.value_replaced = true;
    }

    /// Replaces the model-facing content (not of a denied outcome; see
    /// [`PostOutcome::replace_value`]).
    pub fn replace_content(&mut self, content: Vec<Content>) {
        if self.is_denied() {
            return;
        }
        self.content = content;
        self.content_replaced = true;
    }

    /// Whether a policy denied the call or blocked its result.
    pub fn is_denied(&self) -> bool {
        matches!(&self.result, Err(e) if e.kind() == super::tool::ErrorKind::Denied)
    }

    /// Blocks the result: the outcome becomes an error whose message is `reason`.
    pub fn block(&mut self, reason: impl Into<String>) {
        let reason = reason.into();
        self.content = vec![Content::text(reason.clone())];
        self.result = Err(ToolError::with_kind(super::tool::ErrorKind::Denied, reason));
        self.value_replaced = false;
        self.content_replaced = true;
    }

    /// Attaches model-facing context (shown after the content).
    pub fn attach_context(&mut self, content: impl Into<Content>) {
        self.context.push(content.into());
    }
}
