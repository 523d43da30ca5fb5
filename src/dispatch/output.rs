//! Stage 6 (DESIGN §3): the output is checked as lossless JSON and against the output
//! schema, then rendered for the model (skipped for nested calls).

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;

use super::outcome::Content;
use super::tool::{ErrorKind, Tool, ToolError};
use crate::value::MAX_DEPTH;

/// Checks a value `execute` returned: nesting within [`MAX_DEPTH`] and the output schema.
pub(crate) fn check_output(tool: &Tool, value: &Value) -> Result<(), ToolError> {
    if let Some(path) = too_deep(value) {
        return Err(ToolError::with_kind(
            ErrorKind::InvalidOutput,
            format!(
                "tool {} returned a value nested deeper than {MAX_DEPTH} levels (at {path})",
                tool.name()
            ),
        ));
    }
    if tool.output().definitions().is_empty()
        && matches!(tool.output().root().kind(), crate::schema::NodeKind::Any)
    {
        return Ok(());
    }
    tool.output().validate(value).map_err(|report| {
        ToolError::with_kind(
            ErrorKind::InvalidOutput,
            format!(
                "tool {} returned output that does not match its schema:\n{report}",
                tool.name()
            ),
        )
    })
}

/// Where a value first nests deeper than [`MAX_DEPTH`], walking without recursion (and
/// without allocating for scalars).
fn too_deep(value: &Value) -> Option<String> {
    fn push_children<'v>(v: &'v Value, depth: usize, stack: &mut Vec<(&'v Value, usize)>) {
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            Value::Object(o) => stack.extend(o.values().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    push_children(value, 0, &mut stack);
    while let Some((v, depth)) = stack.pop() {
        if matches!(v, Value::Array(_) | Value::Object(_)) {
            if depth >= MAX_DEPTH {
                return Some(format!("depth {depth}"));
            }
            push_children(v, depth, &mut stack);
        }
    }
    None
}

/// Renders a value for the model; a panicking renderer becomes an error (DESIGN §3
/// "Errors").
pub(crate) fn render(tool: &Tool, args: &Value, value: &Value) -> Result<Vec<Content>, ToolError> {
    catch_unwind(AssertUnwindSafe(|| tool.render(args, value))).map_err(|p| {
        ToolError::with_kind(
            ErrorKind::Panicked,
            format!(
                "the renderer of tool {} failed: {}",
                tool.name(),
                panic_message(&p)
            ),
        )
    })
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
