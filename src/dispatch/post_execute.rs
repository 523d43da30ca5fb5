//! Stage 7: `post_execute` listeners may replace the content, replace the
//! value, block the result, or attach model-facing context.
//!
//! Listeners run in registration order on the outcome of stage 6 (errors included) and
//! each sees the changes of those before it. A replaced value is checked against the
//! tool's output schema like the original (and re-rendered for direct calls); blocking
//! turns the outcome into an error with the listener's reason. A panicking listener blocks
//! the result.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;

use super::call::{Arguments, Exec};
use super::execute::panic_message;
use super::hooks::HookSet;
use super::outcome::Content;
use super::output::{check_output, rendered};
use super::tool::{Tool, ToolError};

/// Stage 7: every listener in turn sees, and may change, the rendered outcome. Returns the
/// content, the result and the context the listeners attached.
pub(crate) fn apply(
    hooks: &HookSet,
    tool: &Tool,
    exec: &Exec,
    arguments: &Arguments,
    content: Vec<Content>,
    result: Result<Value, ToolError>,
) -> (Vec<Content>, Result<Value, ToolError>, Vec<Content>) {
    if hooks.post.is_empty() {
        return (content, result, Vec::new());
    }
    let mut post = PostOutcome {
        result,
        content,
        context: Vec::new(),
        value_replaced: false,
        content_replaced: false,
    };
    for (_, listener) in &hooks.post {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| listener.post_execute(exec, &mut post))) {
            post.block(format!(
                "a post-execute check failed, so the result was withheld ({})",
                panic_message(&p)
            ));
        }
    }
    let PostOutcome {
        result,
        content,
        context,
        value_replaced,
        content_replaced,
    } = post;
    if !value_replaced {
        return (content, result, context);
    }
    // A replaced value is checked like the original, and rendered again unless the
    // listener also replaced the content.
    let result = result.and_then(|v| check_output(tool, &v).map(|()| v));
    if content_replaced && result.is_ok() {
        return (content, result, context);
    }
    let (content, result) = rendered(tool, exec, arguments, result);
    (content, result, context)
}

/// A `post_execute` listener. Implemented for every `Fn(&Exec, &mut PostOutcome)` closure.
pub trait PostExecute: Send + Sync + 'static {
    /// Looks at, and may change, one call's outcome.
    fn post_execute(&self, exec: &Exec, outcome: &mut PostOutcome);
}

impl<F> PostExecute for F
where
    F: Fn(&Exec, &mut PostOutcome) + Send + Sync + 'static,
{
    fn post_execute(&self, exec: &Exec, outcome: &mut PostOutcome) {
        self(exec, outcome)
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
