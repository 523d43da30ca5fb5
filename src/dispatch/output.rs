//! Stage 6: the output is snapshotted as lossless JSON (nesting within [`MAX_DEPTH`]),
//! checked against the tool's output schema, then rendered for the model; after stage 7,
//! the final value is projected into the tool's presentation meta. Nested calls from a
//! `run_code` program skip rendering and the projection: the program receives the value
//! itself.
//!
//! A panicking renderer or projector becomes an error outcome (kind
//! [`ErrorKind::Panicked`]) whose content is the error's message.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;

use super::call::{Arguments, Exec};
use super::execute::panic_message;
use super::outcome::Content;
use super::tool::{ErrorKind, Tool, ToolError};
use crate::value::MAX_DEPTH;

/// The content the model reads for `result`: the rendered value of a direct call, nothing
/// for a nested call, the error's message for an error (also when rendering fails).
pub(crate) fn rendered(
    tool: &Tool,
    exec: &Exec,
    arguments: &Arguments,
    result: Result<Value, ToolError>,
) -> (Vec<Content>, Result<Value, ToolError>) {
    match result {
        Err(e) => (vec![Content::text(e.message().to_owned())], Err(e)),
        Ok(v) if exec.is_nested() => (Vec::new(), Ok(v)),
        Ok(v) if super::jobs::tools::wants_background(tool, arguments) => {
            let id = v.get("job_id").and_then(Value::as_str).unwrap_or_default();
            let text = format!(
                "started background job {id}; read it with job_output {{\"job_id\": \"{id}\"}}"
            );
            (vec![Content::text(text)], Ok(v))
        }
        Ok(v) => match render(tool, arguments, &v) {
            Ok(content) => (content, Ok(v)),
            Err(e) => (vec![Content::text(e.message().to_owned())], Err(e)),
        },
    }
}

/// The tool's presentation meta for a successful direct call (none for errors and nested
/// calls); a failing projector turns the outcome into its error.
pub(crate) fn presentation_meta(
    tool: &Tool,
    exec: &Exec,
    arguments: &Arguments,
    content: Vec<Content>,
    result: Result<Value, ToolError>,
) -> (Vec<Content>, Result<Value, ToolError>, Option<Value>) {
    let (Some(project), Ok(value), false) = (
        &tool.inner.presentation_meta,
        &result,
        exec.is_nested() || super::jobs::tools::wants_background(tool, arguments),
    ) else {
        return (content, result, None);
    };
    match catch_unwind(AssertUnwindSafe(|| project(arguments, value))) {
        Ok(meta) => (content, result, meta),
        Err(p) => {
            let e = ToolError::with_kind(
                ErrorKind::Panicked,
                format!(
                    "the presentation projector of tool {} failed: {}",
                    tool.name(),
                    panic_message(&p)
                ),
            );
            (vec![Content::text(e.message().to_owned())], Err(e), None)
        }
    }
}

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

/// Renders a value for the model; a panicking renderer becomes an error.
fn render(tool: &Tool, args: &Value, value: &Value) -> Result<Vec<Content>, ToolError> {
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
