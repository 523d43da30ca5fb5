//! The canonical value of a run as a typed struct: built by `run_code`, serialised as the
//! JSON it returns, and read back by the text renderer.
//!
//! ```json
//! {"status": "ok" | "error" | "paused", "result"?: <JSON>, "logs": [{"level", "text"}],
//!  "error"?: {"name", "message", "line"?, "column"?},
//!  "paused"?: {"id", "approvals": [{"call", "tool", "arguments", "prompt", "card"}]},
//!  "calls": [{"tool", "status", "ms", "count"?}],
//!  "spill"?: {"path", "bytes", "read_file_path"?, "id"?, "read_tool"?} | {"error"}}
//! ```
//!
//! The fields are declared in the JSON's key order; absent members are `None` and skipped.

use std::fmt::Write as _;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::sandbox::{CallStatus, LogEntry, LogLevel, ProgramError, ProgramErrorKind};

/// How a program ended: `"ok"` (it returned; `result` may be absent for `undefined`) or
/// `"error"` (`error` says why).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RunStatus {
    /// The program returned.
    Ok,
    /// The program failed, or could not run.
    Error,
    /// The run paused: calls wait for a decision (`paused` lists them); continue it with
    /// `run_code_resume`.
    Paused,
}

/// The canonical value of a run (see [`run_code_output_schema`](super::run_code_output_schema)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunCodeOutput {
    /// How the program ended.
    pub status: RunStatus,
    /// The program's result: absent for `undefined` (a `null` result is `Some(Null)`).
    #[serde(
        default,
        deserialize_with = "some_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub result: Option<Value>,
    /// The console lines shown, in order.
    #[serde(default, deserialize_with = "log_entries")]
    pub logs: Vec<LogEntry>,
    /// Why the program failed, when `status` is `error`.
    #[serde(
        default,
        deserialize_with = "program_error",
        skip_serializing_if = "Option::is_none"
    )]
    pub error: Option<ProgramError>,
    /// The calls the run paused at, when `status` is `paused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<PauseInfo>,
    /// The tool calls the program made.
    #[serde(default)]
    pub calls: Vec<CallEntry>,
    /// Where the full output is, when the output was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill: Option<SpillInfo>,
}

/// One entry of `calls`: a call, or (with `count`) a fold of calls of one tool and status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallEntry {
    /// The tool's name.
    pub tool: String,
    /// How the call (or every folded call) ended.
    #[serde(deserialize_with = "call_status")]
    pub status: CallStatus,
    /// Milliseconds from its start to its end; for a fold, the total.
    pub ms: u64,
    /// For a fold: how many calls it stands for (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

/// A paused run: `{"id", "approvals": [{"call", "tool", "arguments", "prompt", "card"}]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PauseInfo {
    /// The id `run_code_resume` takes.
    pub id: String,
    /// The calls that wait for a decision (arguments and cards cut to
    /// [`SHOWN_APPROVAL`] characters of JSON each; the paused run keeps them whole).
    pub approvals: Vec<super::PendingApproval>,
}

/// Most characters of JSON an approval's arguments, or its card, take in the value.
pub const SHOWN_APPROVAL: usize = 2_000;

/// Where the full output of a cut run went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SpillInfo {
    /// The file that holds it.
    Saved {
        /// Its absolute path.
        path: String,
        /// Its size in bytes.
        bytes: u64,
        /// Its path for the built-in `read_file` tool, when it can read it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        read_file_path: Option<String>,
        /// Its id for `read_tool` (its file name), when the spill folder has a read tool
        /// ([`SpillConfig::read_tool`](super::SpillConfig::read_tool)).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The tool that reads it back in pages, given `{"id": id}`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        read_tool: Option<String>,
    },
    /// Why it could not be written.
    Failed {
        /// The reason, for the model.
        error: String,
    },
}

impl RunCodeOutput {
    /// The value of a run that ended with `outcome`, with nothing to spill.
    pub(crate) fn new(
        outcome: Result<Option<Value>, ProgramError>,
        logs: Vec<LogEntry>,
        calls: Vec<CallEntry>,
    ) -> Self {
        let mut out = RunCodeOutput {
            status: RunStatus::Ok,
            result: None,
            logs,
            error: None,
            paused: None,
            calls,
            spill: None,
        };
        out.set_outcome(outcome);
        out
    }

    /// Sets `status`, `result` and `error` from how the program ended.
    pub(crate) fn set_outcome(&mut self, outcome: Result<Option<Value>, ProgramError>) {
        (self.status, self.result, self.error) = match outcome {
            Ok(value) => (RunStatus::Ok, value, None),
            Err(e) => (RunStatus::Error, None, Some(e)),
        };
    }

    /// Marks the run paused at the calls `pause` lists (`None`: it did not pause).
    pub(crate) fn set_paused(&mut self, pause: Option<PauseInfo>) {
        if pause.is_some() {
            self.status = RunStatus::Paused;
            self.result = None;
        }
        self.paused = pause;
    }

    /// The JSON value `run_code` returns, keys in the order above.
    pub(crate) fn into_value(mut self) -> Value {
        // The result can be large: it is moved into the JSON, not copied by the serialiser
        // (which sees a `null` in its place).
        let result = self.result.as_mut().map(std::mem::take);
        // Every key is a string and every number an integer: serialising cannot fail.
        let mut value = serde_json::to_value(&self)
            .unwrap_or_else(|e| unreachable!("a run_code value serialises: {e}"));
        if let (Some(result), Some(slot)) = (result, value.get_mut("result")) {
            *slot = result;
        }
        value
    }

    /// The model-facing text: the console lines (`[level] ` before those that are not
    /// `log`), then `result: ` and the result as compact JSON (`undefined` when absent) or
    /// `error: ` and the error; when the output was cut, a last line naming the spill file
    /// and how to read it.
    pub(crate) fn render_text(&self) -> String {
        let mut out = String::new();
        for entry in &self.logs {
            if entry.level != LogLevel::Log {
                out.push('[');
                out.push_str(entry.level.as_str());
                out.push_str("] ");
            }
            out.push_str(&entry.text);
            out.push('\n');
        }
        // Writing into a `String` cannot fail.
        if let Some(paused) = &self.paused {
            let _ = write!(
                out,
                "paused: {} call(s) wait for approval:",
                paused.approvals.len()
            );
            for a in &paused.approvals {
                let args = super::cap::shrink_json(&a.arguments, 300)
                    .unwrap_or_else(|| a.arguments.clone());
                let _ = write!(out, "\n  call {}: {} {args}: {}", a.call, a.tool, a.prompt);
            }
            let decisions: Vec<String> = paused
                .approvals
                .iter()
                .map(|a| format!("{{\"call\": {}, \"approve\": true}}", a.call))
                .collect();
            let _ = write!(
                out,
                "\nresume with run_code_resume {{\"id\": {}, \"decisions\": [{}]}} (\"approve\": false denies a call)",
                Value::String(paused.id.clone()),
                decisions.join(", ")
            );
            if let Some(spill) = &self.spill {
                out.push('\n');
                out.push_str(&spill.notice());
            }
            return out;
        }
        let _ = match (self.status, &self.result, &self.error) {
            (RunStatus::Error, _, Some(e)) => write!(out, "error: {e}"),
            (RunStatus::Error, _, None) => {
                write!(out, "error: {}", ProgramError::thrown("Error", ""))
            }
            (RunStatus::Ok | RunStatus::Paused, Some(v), _) => write!(out, "result: {v}"),
            (RunStatus::Ok | RunStatus::Paused, None, _) => write!(out, "result: undefined"),
        };
        if let Some(spill) = &self.spill {
            out.push('\n');
            out.push_str(&spill.notice());
        }
        out
    }
}

impl SpillInfo {
    /// The line that ends a cut preview: where the full output is and how to read it.
    pub(crate) fn notice(&self) -> String {
        match self {
            SpillInfo::Saved {
                bytes,
                id: Some(id),
                read_tool: Some(tool),
                ..
            } => format!(
                "[output cut to fit; all of it ({bytes} bytes) is saved: read it in pages with {tool} {{\"id\": {}}}.]",
                Value::String(id.clone())
            ),
            SpillInfo::Saved {
                path,
                bytes,
                read_file_path: Some(rel),
                ..
            } => format!(
                "[output cut to fit; all of it ({bytes} bytes) is in {path}: read it with read_file {{\"path\": {}, \"offset\": 1, \"limit\": 200}}.]",
                Value::String(rel.clone())
            ),
            SpillInfo::Saved {
                path,
                bytes,
                read_file_path: None,
                ..
            } => format!("[output cut to fit; all of it ({bytes} bytes) is in {path}.]"),
            SpillInfo::Failed { error } => {
                format!("[output cut to fit; the full output could not be saved: {error}.]")
            }
        }
    }
}

/// A present `result`, `null` included (plain `Option` would read `null` as absent).
fn some_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// `logs`: a missing `level` is `log`, an unknown one too.
fn log_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<LogEntry>, D::Error> {
    #[derive(Deserialize)]
    struct Line {
        #[serde(default)]
        level: String,
        #[serde(default)]
        text: String,
    }
    let lines = Vec::<Line>::deserialize(d)?;
    Ok(lines
        .into_iter()
        .map(|l| LogEntry {
            level: LogLevel::parse(&l.level),
            text: l.text,
        })
        .collect())
}

/// `error`: a missing `name` is `Error`, a missing `message` empty.
fn program_error<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ProgramError>, D::Error> {
    #[derive(Deserialize)]
    struct Error {
        #[serde(default = "error_name")]
        name: String,
        #[serde(default)]
        message: String,
        #[serde(default)]
        line: Option<u32>,
        #[serde(default)]
        column: Option<u32>,
    }
    fn error_name() -> String {
        "Error".to_owned()
    }
    Ok(Option::<Error>::deserialize(d)?.map(|e| {
        // The kind is not in the JSON: it is the one whose fixed name this is.
        ProgramError {
            kind: ProgramErrorKind::from_name(&e.name),
            name: e.name,
            message: e.message,
            line: e.line,
            column: e.column,
        }
    }))
}

/// A call's `status`: `ok`, `error`, `cancelled` or `paused`.
fn call_status<'de, D: Deserializer<'de>>(d: D) -> Result<CallStatus, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Status {
        Ok,
        Error,
        Cancelled,
        Paused,
    }
    Ok(match Status::deserialize(d)? {
        Status::Ok => CallStatus::Ok,
        Status::Error => CallStatus::Error,
        Status::Cancelled => CallStatus::Cancelled,
        Status::Paused => CallStatus::Paused,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_value_round_trips_with_its_keys_in_order() {
        let value = json!({
            "status": "error",
            "logs": [{"level": "warn", "text": "w"}, {"level": "log", "text": "l"}],
            "error": {"name": "TypeError", "message": "x is not a function", "line": 3, "column": 5},
            "calls": [{"tool": "a", "status": "ok", "ms": 1},
                      {"tool": "a", "status": "cancelled", "ms": 7, "count": 2}],
            "spill": {"path": "/tmp/out.txt", "bytes": 10, "read_file_path": "out.txt"},
        });
        let out = RunCodeOutput::deserialize(&value).unwrap();
        assert_eq!(
            serde_json::to_string(&out.clone().into_value()).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
        let ok = json!({"status": "ok", "result": null, "logs": [], "calls": [],
                        "spill": {"error": "no spill folder is configured"}});
        let out = RunCodeOutput::deserialize(&ok).unwrap();
        assert_eq!(out.result, Some(Value::Null));
        assert_eq!(
            serde_json::to_string(&out.into_value()).unwrap(),
            serde_json::to_string(&ok).unwrap()
        );
    }

    #[test]
    fn a_spill_with_a_read_tool_is_named_by_id() {
        let value = json!({"status": "ok", "result": 1, "logs": [], "calls": [],
            "spill": {"path": "/tmp/x/run-1-a.txt", "bytes": 10, "id": "run-1-a.txt", "read_tool": "read_spill"}});
        let out = RunCodeOutput::deserialize(&value).unwrap();
        assert_eq!(
            out.render_text(),
            "result: 1\n[output cut to fit; all of it (10 bytes) is saved: read it in pages with read_spill {\"id\": \"run-1-a.txt\"}.]"
        );
        assert_eq!(
            serde_json::to_string(&out.into_value()).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }
}
