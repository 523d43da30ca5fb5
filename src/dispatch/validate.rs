//! Stage 1: argument validation against the tool's parameters schema.

use super::tool::{ErrorKind, Tool, ToolError};

/// Validates `args` unless the tool opted out ([`ToolBuilder::validate_arguments`]).
///
/// [`ToolBuilder::validate_arguments`]: super::ToolBuilder::validate_arguments
pub(crate) fn validate_arguments(tool: &Tool, args: &serde_json::Value) -> Result<(), ToolError> {
    if !tool.inner.validate_arguments {
        return Ok(());
    }
    tool.parameters().validate(args).map_err(|report| {
        ToolError::with_kind(
            ErrorKind::InvalidArguments,
            format!(
                "invalid arguments for {}:\n{}",
                tool.name(),
                crate::schema::hint::report_with_hints(
                    &report,
                    &tool.parameters().to_json_schema()
                )
            ),
        )
    })
}
