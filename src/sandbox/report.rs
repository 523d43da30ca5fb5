//! What a run reports: its error and its calls (the `error` and `calls` fields of
//! `run_code`'s result; see the README).

use serde::Serialize;

/// What kind of failure ended a program: the host matches on this, never on the name.
///
/// Each kind but [`Thrown`](ProgramErrorKind::Thrown) has one fixed
/// [`name`](ProgramErrorKind::name), the `error.name` a model sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProgramErrorKind {
    /// `TimeoutError`: the run passed its wall-clock timeout.
    Timeout,
    /// `OutOfMemory`: the run reached its memory limit (fatal even when the program
    /// caught the engine's error).
    OutOfMemory,
    /// `SyntaxError`: the program text did not parse before it ran; line and column are in
    /// the model's own source. A `SyntaxError` the engine or the program's own code throws
    /// (say from `JSON.parse`) is [`Thrown`](ProgramErrorKind::Thrown).
    Syntax,
    /// `ProgramError`: the program parses but cannot run as written (it only declares
    /// functions and never calls one).
    Unrunnable,
    /// `DeadlockError`: the program waits for a promise that nothing can settle.
    Deadlock,
    /// `LimitError`: the program passed a limit other than time or memory (its size, its
    /// console output).
    Limit,
    /// `ToolCallError`: the program ended with a `ToolCallError`: a failed call it did not
    /// catch (or caught and threw again), or one it made and threw itself.
    ToolCall,
    /// `ResultError`: the program's result is not JSON or could not be read.
    Result,
    /// `CancelledError`: the `run_code` call was cancelled.
    Cancelled,
    /// `InternalError`: the engine or the sandbox failed, not the program.
    Internal,
    /// The program threw a value of its own: the name is the thrown error's `name`
    /// (`TypeError`, `RangeError`, a custom class's name), `Error` for a value that is not
    /// an Error. Exceeding the engine stack is a `RangeError` of this kind.
    Thrown,
}

impl ProgramErrorKind {
    /// The `error.name` every error of this kind carries; `None` for
    /// [`Thrown`](ProgramErrorKind::Thrown), whose name is the thrown value's own.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            ProgramErrorKind::Timeout => "TimeoutError",
            ProgramErrorKind::OutOfMemory => "OutOfMemory",
            ProgramErrorKind::Syntax => "SyntaxError",
            ProgramErrorKind::Unrunnable => "ProgramError",
            ProgramErrorKind::Deadlock => "DeadlockError",
            ProgramErrorKind::Limit => "LimitError",
            ProgramErrorKind::ToolCall => "ToolCallError",
            ProgramErrorKind::Result => "ResultError",
            ProgramErrorKind::Cancelled => "CancelledError",
            ProgramErrorKind::Internal => "InternalError",
            ProgramErrorKind::Thrown => return None,
        })
    }

    /// The kind whose fixed name is `name`; [`Thrown`](ProgramErrorKind::Thrown) for any
    /// other name. For reading an error back from its JSON, where the kind is not stored:
    /// a `SyntaxError` the program threw itself reads back as
    /// [`Syntax`](ProgramErrorKind::Syntax).
    pub fn from_name(name: &str) -> Self {
        const NAMED: [ProgramErrorKind; 10] = [
            ProgramErrorKind::Timeout,
            ProgramErrorKind::OutOfMemory,
            ProgramErrorKind::Syntax,
            ProgramErrorKind::Unrunnable,
            ProgramErrorKind::Deadlock,
            ProgramErrorKind::Limit,
            ProgramErrorKind::ToolCall,
            ProgramErrorKind::Result,
            ProgramErrorKind::Cancelled,
            ProgramErrorKind::Internal,
        ];
        NAMED
            .into_iter()
            .find(|kind| kind.name() == Some(name))
            .unwrap_or(ProgramErrorKind::Thrown)
    }
}

/// Why a program ended in error: `{"name", "message", "line"?, "column"?}`.
///
/// [`kind`](ProgramError::kind) says what happened (see [`ProgramErrorKind`] for each
/// kind's name); `name` is what the model reads: the kind's fixed name, or for a value the
/// program threw, that error's own name. `kind` is not serialized.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProgramError {
    /// What kind of failure this is.
    #[serde(skip)]
    pub kind: ProgramErrorKind,
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
    /// An error of `kind` under its fixed name (`Error` for
    /// [`Thrown`](ProgramErrorKind::Thrown)), with no position.
    pub(crate) fn new(kind: ProgramErrorKind, message: impl Into<String>) -> Self {
        ProgramError {
            kind,
            name: kind.name().unwrap_or("Error").to_owned(),
            message: message.into(),
            line: None,
            column: None,
        }
    }

    /// A value the program threw, under that error's own `name`.
    pub(crate) fn thrown(name: impl Into<String>, message: impl Into<String>) -> Self {
        ProgramError {
            kind: ProgramErrorKind::Thrown,
            name: name.into(),
            message: message.into(),
            line: None,
            column: None,
        }
    }

    /// `TimeoutError`.
    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Self::new(ProgramErrorKind::Timeout, message)
    }

    /// `OutOfMemory`.
    pub(crate) fn out_of_memory(message: impl Into<String>) -> Self {
        Self::new(ProgramErrorKind::OutOfMemory, message)
    }

    /// `DeadlockError`.
    pub(crate) fn deadlock(message: impl Into<String>) -> Self {
        Self::new(ProgramErrorKind::Deadlock, message)
    }

    /// `LimitError`.
    pub(crate) fn limit(message: impl Into<String>) -> Self {
        Self::new(ProgramErrorKind::Limit, message)
    }

    /// `ResultError`.
    pub(crate) fn result(message: impl Into<String>) -> Self {
        Self::new(ProgramErrorKind::Result, message)
    }

    /// `CancelledError`.
    pub(crate) fn cancelled(message: impl Into<String>) -> Self {
        Self::new(ProgramErrorKind::Cancelled, message)
    }

    /// `InternalError`.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(ProgramErrorKind::Internal, message)
    }

    /// The same error at `line` and `column` of the model's source.
    pub(crate) fn at(mut self, line: u32, column: u32) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
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
    /// The call waits for approval: the run paused at it (see `run_code_resume`).
    Paused,
}

/// One tool call a program made that reached a tool: `{"tool", "status", "ms"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// The tool's name (shared by every record of that tool: a run of many calls makes no
    /// string per call).
    pub tool: std::sync::Arc<str>,
    /// How it ended.
    pub status: CallStatus,
    /// Milliseconds from its start to its end.
    pub ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixed_name_reads_back_as_its_kind() {
        for kind in [
            ProgramErrorKind::Timeout,
            ProgramErrorKind::OutOfMemory,
            ProgramErrorKind::Syntax,
            ProgramErrorKind::Unrunnable,
            ProgramErrorKind::Deadlock,
            ProgramErrorKind::Limit,
            ProgramErrorKind::ToolCall,
            ProgramErrorKind::Result,
            ProgramErrorKind::Cancelled,
            ProgramErrorKind::Internal,
        ] {
            let name = kind.name().unwrap();
            assert_eq!(ProgramErrorKind::from_name(name), kind, "{name}");
            assert_eq!(ProgramError::new(kind, "m").name, name);
        }
        assert_eq!(
            ProgramErrorKind::from_name("TypeError"),
            ProgramErrorKind::Thrown
        );
    }

    #[test]
    fn the_kind_is_not_serialized() {
        let e = ProgramError::timeout("late").at(2, 3);
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"name": "TimeoutError", "message": "late", "line": 2, "column": 3})
        );
    }
}
