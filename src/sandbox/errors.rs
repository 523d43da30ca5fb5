//! How a run's failures become a [`ProgramError`]: a program text that cannot run, a value
//! the program threw (with its position in the model's own source), a run stopped from
//! outside, a deadlock.

use rquickjs::Value;

use super::Limits;
use super::convert::describe_thrown;
use super::flags::StopReason;
use super::report::{ProgramError, ProgramErrorKind};
use crate::program::{AwaitSite, Program, SourceError, SourceErrorKind};

/// The file name program code runs under (it appears in stack traces).
pub(super) const PROGRAM_FILE: &str = "program.js";

/// The error of a program text that cannot run.
pub(super) fn from_source(e: SourceError) -> ProgramError {
    let kind = match e.kind {
        SourceErrorKind::Syntax => ProgramErrorKind::Syntax,
        SourceErrorKind::Limit => ProgramErrorKind::Limit,
        SourceErrorKind::Unrunnable => ProgramErrorKind::Unrunnable,
        SourceErrorKind::Internal => ProgramErrorKind::Internal,
    };
    ProgramError {
        kind,
        name: e.kind.name().to_owned(),
        message: e.message,
        line: e.line,
        column: e.column,
    }
}

/// The error of a run stopped from outside the program for `reason`, under `limits`, with
/// `in_flight` calls still running.
pub(super) fn stopped(reason: StopReason, limits: &Limits, in_flight: usize) -> ProgramError {
    match reason {
        StopReason::Timeout => ProgramError::timeout(format!(
            "the program did not finish within its {} ms timeout{}",
            limits.timeout.as_millis(),
            if in_flight > 0 {
                format!(" ({in_flight} tool call(s) were still running)")
            } else {
                String::new()
            }
        )),
        StopReason::OutOfMemory => ProgramError::out_of_memory(format!(
            "the program ran out of memory: it may hold at most {} bytes",
            limits.memory
        )),
        StopReason::Cancelled => ProgramError::cancelled("the run was cancelled"),
        StopReason::Diverged => {
            ProgramError::internal("the resumed program did not do what its recorded run did")
        }
        StopReason::ConsoleLimit => ProgramError::limit(format!(
            "the program's console output passed its limit of {} bytes; the output up to there is kept",
            limits.max_console_bytes
        )),
    }
}

/// The error of a program that waits for a promise nothing can settle, after `made` tool
/// calls, naming the await it last reached (`site`) when there is one.
pub(super) fn deadlock(made: usize, site: Option<&AwaitSite>) -> ProgramError {
    let calls = match made {
        0 => "no tool call was made".to_owned(),
        1 => "its 1 tool call had finished".to_owned(),
        n => format!("its {n} tool calls had finished"),
    };
    let mut error = match site {
        Some(site) => ProgramError::deadlock(format!(
            "the program waits for a promise that nothing can settle (the last await it reached is `await {}`): no tool call is in flight, no timer is pending, and {calls}",
            site.text
        ))
        .at(site.line, site.column),
        None => ProgramError::deadlock(format!(
            "the program's result is a promise that nothing can settle: no tool call is in flight, no timer is pending, and {calls}"
        )),
    };
    error.message.push_str(
        " (a promise that is never resolved, or a call to something that is not a tool?)",
    );
    error
}

/// Describes a thrown value as the run's error, with the position in the model's source
/// when the engine knows it. `inspected` is the value as `console.log` shows it, if that
/// could be had.
///
/// The kind is [`ToolCall`](ProgramErrorKind::ToolCall) for an error named
/// `ToolCallError`, [`Thrown`](ProgramErrorKind::Thrown) for anything else; a value that
/// is not an Error (`throw "text"`, `throw null`, `throw {}`) is an `Error` saying what was
/// thrown. `engine_stack` is the stack trace the engine wrote for an Error, in the
/// coordinates of the code it runs; without it, the `stack` the program sees (already in
/// its own coordinates) gives the position. `text` reads a JavaScript string as Rust text,
/// a lone surrogate as U+FFFD (see `Primordials::text`).
pub(super) fn program_error<'js>(
    program: &Program,
    thrown: &Value<'js>,
    inspected: Option<String>,
    engine_stack: Option<String>,
    text: &dyn Fn(&rquickjs::String<'js>) -> Option<String>,
) -> ProgramError {
    if thrown.is_null() && !thrown.is_error() {
        return ProgramError::thrown("Error", "the program threw null (not an Error)");
    }
    let Some(obj) = thrown.as_object() else {
        let shown = match thrown.type_of() {
            rquickjs::Type::String => format!(
                "{:?}",
                thrown.as_string().and_then(text).unwrap_or_default()
            ),
            _ => inspected.unwrap_or_else(|| describe_thrown(thrown)),
        };
        let what = match type_word(thrown) {
            "undefined" => "not an Error".to_owned(),
            word => format!("a {word}, not an Error"),
        };
        return ProgramError::thrown("Error", format!("the program threw {shown} ({what})"));
    };
    let get = |key: &str| -> Option<String> {
        obj.get::<_, Value<'js>>(key)
            .ok()
            .and_then(|v| v.as_string().and_then(text))
    };
    let is_error = thrown.is_error();
    let name = get("name").unwrap_or_else(|| {
        if is_error {
            "Error".into()
        } else {
            String::new()
        }
    });
    let message = get("message");
    if !is_error && message.is_none() {
        let shown = inspected.unwrap_or_else(|| describe_object(thrown));
        return ProgramError::thrown(
            "Error",
            format!("the program threw {shown} (an object, not an Error)"),
        );
    }
    let mut message = message.unwrap_or_default();
    let tool_call = Some(name.as_str()) == ProgramErrorKind::ToolCall.name();
    if tool_call
        && let Some(tool) = get("toolName")
        && !message.starts_with(&format!("{tool}: "))
    {
        message = format!("{tool}: {message}");
    }
    let is_syntax = name == "SyntaxError";
    let mut error = if tool_call {
        ProgramError::new(ProgramErrorKind::ToolCall, message)
    } else {
        ProgramError::thrown(if name.is_empty() { "Error" } else { &name }, message)
    };
    // A ToolCallError has no frames (the call ran on the host): its position is the await
    // its call reached (see the driver).
    let position = match engine_stack {
        Some(stack) if !tool_call => position_in_program(program, &stack),
        _ => get("stack").and_then(|stack| first_program_position(&stack)),
    };
    if let Some((l, c)) = position {
        error = error.at(l, c);
    }
    // A syntax error the engine found in the program names its position in the message.
    if error.line.is_none()
        && is_syntax
        && let Some((line, column)) = first_program_position(&error.message)
        && let Some((l, c)) = program.original_position(line, column)
    {
        error = error.at(l, c);
    }
    error
}

/// The first of the program's own frames in a stack trace the engine wrote, as a line and
/// column of the model's source.
pub(super) fn position_in_program(program: &Program, stack: &str) -> Option<(u32, u32)> {
    first_program_position(stack).and_then(|(line, column)| program.original_position(line, column))
}

fn describe_object(value: &Value<'_>) -> String {
    let text = describe_thrown(value);
    if text == "[object Object]" {
        "{…}".to_owned()
    } else {
        text
    }
}

fn type_word(value: &Value<'_>) -> &'static str {
    match value.type_of() {
        rquickjs::Type::String => "string",
        rquickjs::Type::Int | rquickjs::Type::Float => "number",
        rquickjs::Type::Bool => "boolean",
        rquickjs::Type::Undefined => "undefined",
        rquickjs::Type::BigInt => "bigint",
        rquickjs::Type::Symbol => "symbol",
        _ => "value",
    }
}

/// Finds the first `program.js:LINE:COLUMN` in a stack trace (column 1 when absent).
fn first_program_position(text: &str) -> Option<(u32, u32)> {
    let mut rest = text;
    while let Some(i) = rest.find(PROGRAM_FILE) {
        rest = &rest[i + PROGRAM_FILE.len()..];
        let Some(after) = rest.strip_prefix(':') else {
            continue;
        };
        let line_end = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let line: Option<u32> = after[..line_end].parse().ok();
        let col = after[line_end..].strip_prefix(':').and_then(|s| {
            let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            s[..end].parse::<u32>().ok()
        });
        if let Some(line) = line {
            return Some((line, col.unwrap_or(1)));
        }
        rest = after;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_positions_are_found() {
        assert_eq!(
            first_program_position("    at program (program.js:3:15)\n"),
            Some((3, 15))
        );
        assert_eq!(
            first_program_position("    at foo (codemode:prelude/x.js:1:1)"),
            None
        );
    }

    #[test]
    fn source_errors_keep_their_name_and_get_a_kind() {
        for (source, name, kind) in [
            (
                SourceErrorKind::Syntax,
                "SyntaxError",
                ProgramErrorKind::Syntax,
            ),
            (
                SourceErrorKind::Limit,
                "LimitError",
                ProgramErrorKind::Limit,
            ),
            (
                SourceErrorKind::Unrunnable,
                "ProgramError",
                ProgramErrorKind::Unrunnable,
            ),
            (
                SourceErrorKind::Internal,
                "InternalError",
                ProgramErrorKind::Internal,
            ),
        ] {
            let e = from_source(SourceError {
                kind: source,
                message: "m".into(),
                line: Some(1),
                column: None,
            });
            assert_eq!((e.kind, e.name.as_str(), e.line), (kind, name, Some(1)));
        }
    }
}
