//! The `run_code` tool (DESIGN §5): one program, every visible tool as
//! `await tools.<name>(args)`, one canonical JSON result.
//!
//! Arguments: `{"code": string, "timeout_ms"?: integer}`. The canonical value:
//!
//! ```json
//! {"status": "ok" | "error", "result"?: <JSON>, "logs": [{"level", "text"}],
//!  "error"?: {"name", "message", "line"?, "column"?}, "calls": [{"tool", "status", "ms"}]}
//! ```
//!
//! A program that fails is still a successful *call* of `run_code`: its value has
//! `"status": "error"` and says why (a program error is a domain outcome, DESIGN §3).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::dispatch::{Content, Tool, ToolError, Visibility};
use crate::sandbox::{
    self, CallRecord, CallStatus, Limits, LogEntry, LogLevel, ProgramError, RunRequest,
};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// The tool's name.
pub const RUN_CODE: &str = "run_code";

/// How `run_code` runs programs.
///
/// Defaults: [`Limits::default`]; `max_timeout` 300 000 ms (the most a call's `timeout_ms`
/// may ask for); `calls_listed` 100.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunCodeConfig {
    /// Limits of every run; `timeout_ms` in the arguments overrides `limits.timeout`.
    pub limits: Limits,
    /// The longest timeout a call may ask for with `timeout_ms`.
    pub max_timeout: Duration,
    /// How many calls the result lists one by one. Calls after these are folded, per tool
    /// and status, into entries with a `count` and the total `ms`, so a program that makes
    /// 100 000 calls still has a result the model can read.
    pub calls_listed: usize,
}

impl Default for RunCodeConfig {
    fn default() -> Self {
        RunCodeConfig {
            limits: Limits::default(),
            max_timeout: Duration::from_millis(300_000),
            calls_listed: 100,
        }
    }
}

impl RunCodeConfig {
    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets how many calls the result lists one by one.
    pub fn calls_listed(mut self, n: usize) -> Self {
        self.calls_listed = n;
        self
    }

    /// Sets the longest timeout a call may ask for with `timeout_ms`.
    pub fn max_timeout(mut self, max: Duration) -> Self {
        self.max_timeout = max;
        self
    }
}

/// The output schema of `run_code`: the canonical value of DESIGN §5 "Result".
pub fn run_code_output_schema() -> ValueSchema {
    let log = Node::object([
        (
            "level",
            Node::string()
                .string_enum(["log", "info", "debug", "warn", "error"])
                .required(),
        ),
        ("text", Node::string().required()),
    ])
    .additional_properties(false);
    let error = Node::object([
        ("name", Node::string().required()),
        ("message", Node::string().required()),
        ("line", Node::integer().minimum(1)),
        ("column", Node::integer().minimum(1)),
    ])
    .additional_properties(false);
    let call = Node::object([
        ("tool", Node::string().required()),
        (
            "status",
            Node::string()
                .string_enum(["ok", "error", "cancelled"])
                .required(),
        ),
        ("ms", Node::integer().minimum(0).required()),
        (
            "count",
            Node::integer().minimum(1).describe(
                "For folded entries: how many calls of this tool and status; `ms` is their total.",
            ),
        ),
    ])
    .additional_properties(false);
    ValueSchema::new(
        Node::object([
            (
                "status",
                Node::string().string_enum(["ok", "error"]).required(),
            ),
            (
                "result",
                Node::any().describe("The program's result (absent for undefined)."),
            ),
            ("logs", Node::array(log).required()),
            ("error", error),
            ("calls", Node::array(call).required()),
        ])
        .additional_properties(false),
    )
}

/// Builds the `run_code` tool. Register it in the registry whose tools programs should
/// call: a run sees the registry's visible tools at the moment it starts (`run_code` itself
/// is not among them).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use codemode::{Registry, run_code_tool, RunCodeConfig};
/// let registry = Registry::new();
/// registry.register(run_code_tool(RunCodeConfig::default())).unwrap().forget();
/// let outcome = registry.call("run_code", serde_json::json!({"code": "return 6 * 7"})).await;
/// assert_eq!(outcome.value().unwrap()["result"], 42);
/// # });
/// ```
pub fn run_code_tool(config: RunCodeConfig) -> Tool {
    let description = "Run a JavaScript or TypeScript program. Every tool is available as `await tools.<name>(args)`; \
        top-level await and return work, and the value of a final expression is the result. \
        console.log output is captured. Calls run concurrently with Promise.all.";
    Tool::builder(RUN_CODE)
        .description(description)
        .parameters(ParameterSchema::new([
            (
                "code",
                Node::string()
                    .describe(
                        "The program: the body of an async function (TypeScript or JavaScript).",
                    )
                    .required(),
            ),
            (
                "timeout_ms",
                Node::integer()
                    .minimum(1)
                    .maximum(config.max_timeout.as_millis() as u64)
                    .describe("Wall-clock limit for the whole run, in milliseconds."),
            ),
        ]))
        .output(run_code_output_schema())
        .visibility(Visibility::NotInSandbox)
        .render(|_args, value| vec![Content::text(render_text(value))])
        .execute(move |args, exec| {
            let config = config.clone();
            async move {
                let registry = exec
                    .registry()
                    .ok_or_else(|| ToolError::new("the registry that ran run_code is gone"))?;
                let code = args.str("code").unwrap_or_default().to_owned();
                let mut limits = config.limits.clone();
                if let Some(ms) = args.get("timeout_ms").and_then(Value::as_u64) {
                    limits.timeout = Duration::from_millis(ms).min(config.max_timeout);
                }
                let tools = registry
                    .sandbox_tools()
                    .into_iter()
                    .map(|t| (t.name().to_owned(), crate::dispatch::tool_alias(t.name())))
                    .collect();
                let report = sandbox::run(RunRequest {
                    source: code,
                    limits,
                    registry,
                    tools,
                    parent: Some(exec.token()),
                    agent: exec.agent().clone(),
                    signal: exec.signal().clone(),
                })
                .await;
                Ok(canonical_value(
                    report.result,
                    report.logs,
                    report.calls,
                    config.calls_listed,
                ))
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("the run_code definition is valid: {e}"))
}

/// The canonical value of a run (DESIGN §5 "Result"), built directly. The first
/// `listed` calls appear one by one; later ones are folded per tool and status into
/// entries with a `count` and their total `ms`.
pub(crate) fn canonical_value(
    result: Result<Option<Value>, ProgramError>,
    logs: Vec<LogEntry>,
    calls: Vec<CallRecord>,
    listed: usize,
) -> Value {
    let mut out = Map::new();
    let (status, value, error) = match result {
        Ok(v) => ("ok", v, None),
        Err(e) => ("error", None, Some(e)),
    };
    out.insert("status".into(), status.into());
    if let Some(v) = value {
        out.insert("result".into(), v);
    }
    let logs: Vec<Value> = logs
        .into_iter()
        .map(|l| {
            let mut m = Map::with_capacity(2);
            m.insert("level".into(), l.level.as_str().into());
            m.insert("text".into(), Value::String(l.text));
            Value::Object(m)
        })
        .collect();
    out.insert("logs".into(), Value::Array(logs));
    if let Some(e) = error {
        out.insert("error".into(), json!(e));
    }
    let status_str = |s: CallStatus| match s {
        CallStatus::Ok => "ok",
        CallStatus::Error => "error",
        CallStatus::Cancelled => "cancelled",
    };
    let entry = |tool: String, status: CallStatus, ms: u64, count: Option<u64>| {
        let mut m = Map::with_capacity(4);
        m.insert("tool".into(), Value::String(tool));
        m.insert("status".into(), status_str(status).into());
        m.insert("ms".into(), ms.into());
        if let Some(n) = count {
            m.insert("count".into(), n.into());
        }
        Value::Object(m)
    };
    let mut list: Vec<Value> = Vec::with_capacity(calls.len().min(listed) + 4);
    let mut folded: Vec<(String, CallStatus, u64, u64)> = Vec::new();
    for (i, c) in calls.into_iter().enumerate() {
        if i < listed {
            list.push(entry(c.tool, c.status, c.ms, None));
        } else if let Some(f) = folded.iter_mut().find(|f| f.0 == c.tool && f.1 == c.status) {
            f.2 += c.ms;
            f.3 += 1;
        } else {
            folded.push((c.tool, c.status, c.ms, 1));
        }
    }
    list.extend(
        folded
            .into_iter()
            .map(|(tool, status, ms, n)| entry(tool, status, ms, Some(n))),
    );
    out.insert("calls".into(), Value::Array(list));
    Value::Object(out)
}

/// The model-facing text of a run: its console lines (with their level unless `log`),
/// then `result: …` or `error: …`.
pub fn render_text(value: &Value) -> String {
    let mut out = String::new();
    if let Some(logs) = value.get("logs").and_then(Value::as_array) {
        for entry in logs {
            let level = entry.get("level").and_then(Value::as_str).unwrap_or("log");
            let text = entry.get("text").and_then(Value::as_str).unwrap_or("");
            if level != LogLevel::Log.as_str() {
                out.push('[');
                out.push_str(level);
                out.push_str("] ");
            }
            out.push_str(text);
            out.push('\n');
        }
    }
    if value.get("status").and_then(Value::as_str) == Some("error") {
        let e = value.get("error").cloned().unwrap_or(Value::Null);
        let error = ProgramError {
            name: e
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("Error")
                .to_owned(),
            message: e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            line: e.get("line").and_then(Value::as_u64).map(|n| n as u32),
            column: e.get("column").and_then(Value::as_u64).map(|n| n as u32),
        };
        out.push_str("error: ");
        out.push_str(&error.to_string());
    } else {
        out.push_str("result: ");
        match value.get("result") {
            None => out.push_str("undefined"),
            Some(v) => {
                let compact = v.to_string();
                if compact.len() > 80 && (v.is_object() || v.is_array()) {
                    out.push_str(&serde_json::to_string_pretty(v).unwrap_or(compact));
                } else {
                    out.push_str(&compact);
                }
            }
        }
    }
    out
}
