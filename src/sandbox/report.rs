//! What a run reports: its error, its calls (DESIGN §5 "Result").

use serde::Serialize;

/// Why a program ended in error: `{"name", "message", "line"?, "column"?}`.
///
/// `name` is the JavaScript error's name (`TypeError`, `ToolCallError`, …) or one of the
/// runtime's own: `SyntaxError` (the program did not parse; line and column are in the
/// model's own source), `TimeoutError`, `OutOfMemory`, `DeadlockError`, `CancelledError`,
/// `LimitError`, `ResultError` (the result is not JSON), `ProgramError` (the program cannot
/// run as written).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProgramError {
    /// The error's name.
    pub name: String,
    /// What went wrong and, where possible, what to do.
    pub message: String,
    /// 1-based line in the model's own source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column in the model's own source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

impl ProgramError {
    pub(crate) fn new(name: &str, message: impl Into<String>) -> Self {
        ProgramError {
            name: name.to_owned(),
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.message)?;
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, " (line {l}, column {c})"),
            (Some(l), None) => write!(f, " (line {l})"),
            _ => Ok(()),
        }
    }
}

/// How a tool call from a program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallStatus {
    /// The call succeeded and the program received its value.
    Ok,
    /// The call failed and the program received a `ToolCallError`.
    Error,
    /// The call was cancelled: the program ended (or was cancelled) while it ran.
    Cancelled,
}

/// One tool call a program made that reached a tool: `{"tool", "status", "ms"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallRecord {
    /// The tool's name.
    pub tool: String,
    /// How it ended.
    pub status: CallStatus,
    /// Milliseconds from its start to its end.
    pub ms: u64,
}
