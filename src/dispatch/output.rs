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

/// The path of the first place nested deeper than [`MAX_DEPTH`], walking without recursion.
fn too_deep(value: &Value) -> Option<String> {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        if depth >= MAX_DEPTH {
            return Some(format!("depth {depth}"));
        }
        stack.extend(children.map(|c| (c, depth + 1)));
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
