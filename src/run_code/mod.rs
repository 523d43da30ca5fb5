//! The `run_code` tool: one program, every visible tool as `await tools.<name>(args)`,
//! one canonical JSON result.
//!
//! Arguments: `{"code": string, "timeout_ms"?: integer}`. The canonical value (built as a
//! typed struct and serialised, see `output.rs`; its schema is [`run_code_output_schema`]):
//!
//! ```json
//! {"status": "ok" | "error", "result"?: <JSON>, "logs": [{"level", "text"}],
//!  "error"?: {"name", "message", "line"?, "column"?},
//!  "calls": [{"tool", "status", "ms", "count"?}],
//!  "spill"?: {"path", "bytes", "read_file_path"?, "id"?, "read_tool"?} | {"error"}}
//! ```
//!
//! The value is the capped one: `result`, `logs` and `error` hold what the model sees, at
//! most [`RunCodeConfig::output_cap`] characters of text in all ([`render_text`]); when
//! anything was cut, `spill` names the file that holds the full output (or says why it
//! could not be written).
//!
//! A program that fails is still a successful *call* of `run_code`: its value has
//! `"status": "error"` and says why (a program error is an outcome the model acts on, not a
//! failure of the tool).

mod background;
mod cap;
mod output;
mod paused;
mod resume;
mod spill;

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

pub use self::output::{CallEntry, PauseInfo, RunCodeOutput, RunStatus, SHOWN_APPROVAL, SpillInfo};
pub use self::paused::{
    DEFAULT_MAX_PAUSED_BYTES, DEFAULT_MAX_PAUSED_RUNS, DEFAULT_PAUSED_TTL, FilePausedRuns,
    MemoryPausedRuns, PausedRun, PausedRuns, PendingApproval, ToolPrint,
};
pub use self::resume::{RUN_CODE_RESUME, resume, run_code_resume_tool};
use self::spill::SharedSpill;
pub use self::spill::SpillConfig;
use crate::dispatch::{Content, Tool, Visibility};
use crate::sandbox::{self, LogSink, RunReport};
pub use crate::sandbox::{
    ABANDON_AFTER, ArmedThread, CallRecord, CallStatus, EnginePool, Limits, LogEntry, LogLevel,
    MIN_MEMORY, OverdueArm, PoolStats, ProgramError, ProgramErrorKind, abandoned_message,
};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// The tool's name.
pub const RUN_CODE: &str = "run_code";

/// The canonical value of a run whose caller stopped waiting for it [`ABANDON_AFTER`] past
/// its `timeout`: `status` `error`, a `TimeoutError` with [`abandoned_message`], no console
/// lines (they stayed with the run) and no calls.
pub fn abandoned_value(timeout: Duration) -> Value {
    serde_json::json!({
        "status": "error",
        "logs": [],
        "calls": [],
        "error": {"name": "TimeoutError", "message": abandoned_message(timeout)},
    })
}

/// How `run_code` runs programs.
///
/// Defaults: [`Limits::default`]; `max_timeout` 300 000 ms (the most a call's `timeout_ms`
/// may ask for); `calls_listed` 100; `output_cap` 20 000 characters;
/// `spill` [`SpillConfig::default`] (a folder under the system's temporary folder).
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
    /// Characters (Unicode scalar values) of model-facing text a run may show: its console
    /// lines and its result or error, as [`render_text`] renders them, including the last
    /// line that names the spill file. Over it, the text is cut (head, marker, tail; JSON
    /// shrunk structurally so it still parses) and the full output spilled. Values inside
    /// the program are never capped. The preview stays within the cap as long as the notice
    /// naming the spill file takes less than half of it.
    pub output_cap: usize,
    /// Where the full output of a cut run is written; `None` writes nothing (the preview
    /// then says the full output was not saved).
    pub spill: Option<SpillConfig>,
    /// Warm engines to run programs on (see [`EnginePool`]); `None` (the default) starts
    /// an engine for every run. `codemode mcp` keeps a pool of 2.
    pub engine_pool: Option<EnginePool>,
    /// Timeout of a run that may outlive its call (`run_in_background`, or
    /// `yield_after_ms`) when the call gives no `timeout_ms`; also the most such a call may
    /// ask for. Default 600 000 ms (10 minutes).
    pub background_timeout: Duration,
    /// `yield_after_ms` of a call that gives none: past it a foreground run hands control
    /// back as a background job. `None` (the library's default) waits for the end;
    /// `codemode mcp` uses 10 000 ms.
    pub yield_after: Option<Duration>,
    /// Most `o200k_base` tokens the tools' declarations may take in `run_code`'s
    /// description; past it the description shows an index of the tools instead, and
    /// programs discover them with `tools.$search` and `tools.$describe` (see
    /// [`crate::discovery`]). Default [`crate::discovery::DEFAULT_TOOL_BUDGET`] (2 000);
    /// `usize::MAX` always declares every tool, 0 always shows the index.
    pub tool_budget: usize,
    /// Where runs that pause for approval are kept until `run_code_resume` continues them
    /// (see [`PausedRuns`]); `None`: a call that needs approval is denied instead, as a
    /// direct call without an approver is. Default: a [`MemoryPausedRuns`] shared by the
    /// clones of this config (give [`run_code_resume_tool`] a clone of the config that
    /// `run_code_tool` has).
    pub paused_runs: Option<Arc<dyn PausedRuns>>,
    /// How long a paused run can be resumed. Default [`DEFAULT_PAUSED_TTL`] (24 hours).
    pub paused_ttl: Duration,
    /// Most bytes of tool arguments and results (as JSON), and clock readings (8 bytes
    /// each), a run records so that it can pause. Past it the run stops recording, and a
    /// call that needs approval later is denied and says why. Default 16 MiB.
    pub max_journal_bytes: usize,
    /// What the host attaches to each run that pauses ([`PausedRun::host`]): the settings
    /// the run depends on that its tools' schemas do not show (a root folder, a policy).
    /// `run_code_resume` refuses a run whose value differs from its own config's (the run
    /// is kept). Default null.
    pub paused_host: Value,
}

impl Default for RunCodeConfig {
    fn default() -> Self {
        RunCodeConfig {
            limits: Limits::default(),
            max_timeout: Duration::from_millis(300_000),
            calls_listed: 100,
            output_cap: 20_000,
            spill: Some(SpillConfig::default()),
            engine_pool: None,
            background_timeout: Duration::from_millis(600_000),
            yield_after: None,
            tool_budget: crate::discovery::DEFAULT_TOOL_BUDGET,
            paused_runs: Some(Arc::new(MemoryPausedRuns::default())),
            paused_ttl: DEFAULT_PAUSED_TTL,
            max_journal_bytes: DEFAULT_MAX_JOURNAL_BYTES,
            paused_host: Value::Null,
        }
    }
}

/// [`RunCodeConfig::max_journal_bytes`]' default: 16 MiB.
pub const DEFAULT_MAX_JOURNAL_BYTES: usize = 16 << 20;

impl RunCodeConfig {
    /// Sets [`RunCodeConfig::tool_budget`], in `o200k_base` tokens.
    pub fn tool_budget(mut self, tokens: usize) -> Self {
        self.tool_budget = tokens;
        self
    }

    /// Sets where paused runs are kept (`None`: calls that need approval are denied).
    pub fn paused_runs(mut self, store: Option<Arc<dyn PausedRuns>>) -> Self {
        self.paused_runs = store;
        self
    }

    /// Sets [`RunCodeConfig::paused_ttl`].
    pub fn paused_ttl(mut self, ttl: Duration) -> Self {
        self.paused_ttl = ttl;
        self
    }

    /// Sets [`RunCodeConfig::paused_host`].
    pub fn paused_host(mut self, host: Value) -> Self {
        self.paused_host = host;
        self
    }

    /// Sets [`RunCodeConfig::max_journal_bytes`].
    pub fn max_journal_bytes(mut self, bytes: usize) -> Self {
        self.max_journal_bytes = bytes;
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs programs on warm engines from `pool` (see [`EnginePool`]).
    pub fn engine_pool(mut self, pool: EnginePool) -> Self {
        self.engine_pool = Some(pool);
        self
    }

    /// Sets how many calls the result lists one by one.
    pub fn calls_listed(mut self, n: usize) -> Self {
        self.calls_listed = n;
        self
    }

    /// Sets the output cap in characters (see [`RunCodeConfig::output_cap`]).
    pub fn output_cap(mut self, chars: usize) -> Self {
        self.output_cap = chars;
        self
    }

    /// Sets where spill files go; `None` turns spilling off.
    pub fn spill(mut self, spill: Option<SpillConfig>) -> Self {
        self.spill = spill;
        self
    }

    /// Sets the longest timeout a call may ask for with `timeout_ms`.
    pub fn max_timeout(mut self, max: Duration) -> Self {
        self.max_timeout = max;
        self
    }

    /// Sets [`RunCodeConfig::background_timeout`].
    pub fn background_timeout(mut self, timeout: Duration) -> Self {
        self.background_timeout = timeout;
        self
    }

    /// Sets [`RunCodeConfig::yield_after`].
    pub fn yield_after(mut self, after: Option<Duration>) -> Self {
        self.yield_after = after;
        self
    }
}

/// The output schema of `run_code`: its canonical value, `{"status", "result"?, "logs",
/// "error"?, "calls", "spill"?}`.
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
                .string_enum(["ok", "error", "cancelled", "paused"])
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
    let spill = Node::object([
        (
            "path",
            Node::string().describe("Absolute path of the file with the full output."),
        ),
        (
            "bytes",
            Node::integer().minimum(0).describe("Its size in bytes."),
        ),
        (
            "read_file_path",
            Node::string()
                .describe("Its path for the built-in read_file tool, when it can read it."),
        ),
        (
            "id",
            Node::string().describe("Its id for the tool named by read_tool."),
        ),
        (
            "read_tool",
            Node::string().describe("A tool that reads it back in pages: {\"id\": id}."),
        ),
        (
            "error",
            Node::string().describe("Why the full output could not be saved."),
        ),
    ])
    .additional_properties(false)
    .describe("Present when the output was cut: where the full output is.");
    ValueSchema::new(Node::union([
        Node::object([
            (
                "status",
                Node::string()
                    .string_enum(["ok", "error", "paused"])
                    .required(),
            ),
            (
                "result",
                Node::any().describe("The program's result (absent for undefined)."),
            ),
            ("logs", Node::array(log).required()),
            ("error", error),
            ("paused", paused_schema()),
            ("calls", Node::array(call).required()),
            ("spill", spill),
        ])
        .additional_properties(false),
        Node::object([
            ("status", Node::literal("running").required()),
            (
                "job_id",
                Node::string()
                    .required()
                    .describe("The background job the run goes on as (job_output, job_kill)."),
            ),
            (
                "output",
                Node::string()
                    .required()
                    .describe("Console output so far (job_output reads what follows)."),
            ),
        ])
        .additional_properties(false)
        .describe("The run still goes on, as a background job, after yield_after_ms."),
        Node::object([
            ("kind", Node::literal("background").required()),
            ("job_id", Node::string().required()),
        ])
        .additional_properties(false)
        .describe("The handle of a run started with run_in_background."),
    ]))
}

/// `paused` of the canonical value: the run's id and the calls that wait for a decision.
fn paused_schema() -> Node {
    let approval = Node::object([
        (
            "call",
            Node::integer()
                .minimum(1)
                .required()
                .describe("The call's number in the run (1 for the first); decisions name it."),
        ),
        ("tool", Node::string().required()),
        (
            "arguments",
            Node::any()
                .required()
                .describe("The arguments it would run with."),
        ),
        (
            "prompt",
            Node::string().required().describe("What the policy asked."),
        ),
        (
            "card",
            Node::any()
                .required()
                .describe("What the call would do, as a UI shows it."),
        ),
    ])
    .additional_properties(false);
    Node::object([
        (
            "id",
            Node::string()
                .required()
                .describe("The id run_code_resume takes."),
        ),
        ("approvals", Node::array(approval).required()),
    ])
    .additional_properties(false)
    .describe("Present when status is paused: the calls that wait for a decision.")
}

/// Builds the `run_code` tool. Register it in the registry whose tools programs should
/// call: a run sees the registry's visible tools at the moment it starts (`run_code` itself
/// is not among them).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use codemode::Registry;
/// use codemode::run_code::{RunCodeConfig, run_code_tool};
/// let registry = Registry::new();
/// registry.register(run_code_tool(RunCodeConfig::default())).unwrap().forget();
/// let outcome = registry.call("run_code", serde_json::json!({"code": "return 6 * 7"})).await;
/// assert_eq!(outcome.value().unwrap()["result"], 42);
/// # });
/// ```
pub fn run_code_tool(config: RunCodeConfig) -> Tool {
    let budget = config.tool_budget;
    let description = "Run a JavaScript or TypeScript program. Every tool is available as `await tools.<name>(args)`; \
        top-level await and return work, and the value of a final expression is the result. \
        console.log output is captured. Calls run concurrently with Promise.all. \
        Output (logs and result) longer than the cap is cut, and the full output is saved to a file the result names.";
    Tool::builder(RUN_CODE)
        .description(description)
        .describe_with(move |base, registry| {
            let tools = registry.sandbox_tools();
            let decls: Vec<_> = tools.iter().map(crate::declarations::tool_decl_of).collect();
            let deferred: Vec<bool> = tools.iter().map(Tool::is_deferred).collect();
            format!(
                "{base}\n\n{}",
                crate::discovery::tools_text(&decls, &deferred, budget)
            )
        })
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
                    .maximum(config.max_timeout.max(config.background_timeout).as_millis().max(1) as u64)
                    .describe(format!(
                        "Wall-clock limit for the whole run, in milliseconds (default {} in the foreground, at most {}; default and most {} for a run that may go on in the background).",
                        config.limits.timeout.as_millis(),
                        config.max_timeout.as_millis(),
                        config.background_timeout.as_millis()
                    )),
            ),
            (
                "run_in_background",
                Node::boolean().describe(
                    "Start the program as a background job and answer at once with {kind: \"background\", job_id}; follow it with job_output, stop it with job_kill.",
                ),
            ),
            (
                "yield_after_ms",
                Node::integer().minimum(0).describe(
                    "If the program still runs after this many milliseconds, answer with {status: \"running\", job_id, output} and let it go on as a background job.",
                ),
            ),
        ]))
        .output(run_code_output_schema())
        .visibility(Visibility::NotInSandbox)
        .render(|_args, value| vec![Content::text(render_text(value))])
        .execute(move |args, exec| background::execute(config.clone(), args, exec))
        .build()
        .unwrap_or_else(|e| unreachable!("the run_code definition is valid: {e}"))
}

/// The `calls` list of the canonical value: the first `listed` calls one by one, later ones
/// folded per tool and status into entries with a `count` and their total `ms`.
fn call_entries(calls: Vec<CallRecord>, listed: usize) -> Vec<CallEntry> {
    let mut list: Vec<CallEntry> = Vec::with_capacity(calls.len().min(listed) + 4);
    // The folds by tool and status (records of one tool share its name, so the name is
    // compared by pointer first), made into entries at the end.
    let mut folded: Vec<(CallRecord, u64)> = Vec::new();
    for (i, c) in calls.into_iter().enumerate() {
        if i < listed {
            list.push(CallEntry {
                tool: String::from(&*c.tool),
                status: c.status,
                ms: c.ms,
                count: None,
            });
        } else if let Some((f, count)) = folded.iter_mut().find(|(f, _)| {
            f.status == c.status && (Arc::ptr_eq(&f.tool, &c.tool) || f.tool == c.tool)
        }) {
            f.ms += c.ms;
            *count += 1;
        } else {
            folded.push((c, 1));
        }
    }
    list.extend(folded.into_iter().map(|(f, count)| CallEntry {
        tool: String::from(&*f.tool),
        status: f.status,
        ms: f.ms,
        count: Some(count),
    }));
    list
}

/// Characters of the `result: …` or `error: …` part of the model-facing text.
fn outcome_chars(outcome: &Result<Option<Value>, ProgramError>, max: usize) -> usize {
    match outcome {
        Ok(None) => "result: undefined".len(),
        Ok(Some(v)) => "result: ".len() + cap::json_chars(v, max),
        Err(e) => "error: ".len() + e.to_string().chars().count(),
    }
}

/// Longest error name shown; a longer one is cut.
const MAX_ERROR_NAME: usize = 200;

/// The outcome cut so that its part of the text takes at most `budget` characters.
fn cap_outcome(
    outcome: &Result<Option<Value>, ProgramError>,
    budget: usize,
) -> Result<Option<Value>, ProgramError> {
    match outcome {
        Ok(None) => Ok(None),
        Ok(Some(v)) => {
            let budget = budget.saturating_sub("result: ".len());
            Ok(Some(
                cap::shrink_json(v, budget).unwrap_or_else(|| v.clone()),
            ))
        }
        Err(e) => {
            let mut e = e.clone();
            if let Some(name) = cap::cut_text(&e.name, MAX_ERROR_NAME) {
                e.name = name;
            }
            let message_chars = e.message.chars().count();
            let overhead = "error: ".len() + e.to_string().chars().count() - message_chars;
            if let Some(m) = cap::cut_text(&e.message, budget.saturating_sub(overhead)) {
                e.message = m;
            }
            Err(e)
        }
    }
}

/// Shares `budget` characters between the logs (`logs` characters uncut) and the outcome
/// (`outcome` characters uncut): what is small keeps all it needs, the rest is halved.
fn share(logs: usize, outcome: usize, budget: usize) -> (usize, usize) {
    if logs + outcome <= budget {
        (logs, budget - logs)
    } else if outcome <= budget / 2 {
        (budget - outcome, outcome)
    } else if logs <= budget / 2 {
        (logs, budget - logs)
    } else {
        (budget / 2, budget - budget / 2)
    }
}

/// The canonical value of a finished run, capped to `config.output_cap` characters of
/// model-facing text, with the full output spilled when anything was cut: the text is cut
/// (head, marker, tail; a JSON result shrunk structurally so it still parses) until
/// [`render_text`] of the value fits.
fn present(
    report: RunReport,
    spill: Option<SharedSpill>,
    config: &RunCodeConfig,
    pause: Option<PauseInfo>,
) -> Value {
    let cap = config.output_cap;
    let kept = report.logs;
    let view = cap::LogView {
        head: &kept.head,
        tail: &kept.tail,
        dropped_entries: kept.dropped_entries,
        dropped_chars: kept.dropped_chars,
        dropped_newlines: kept.dropped_newlines,
    };
    let calls = call_entries(report.calls, config.calls_listed);
    let outcome = report.result;
    let logs_chars = view.rendered_chars();
    let result_chars = outcome_chars(&outcome, cap.saturating_add(1));
    if kept.dropped_entries == 0 && logs_chars + result_chars <= cap {
        let mut logs = kept.head;
        logs.extend(kept.tail);
        let mut out = RunCodeOutput::new(outcome, logs, calls);
        out.set_paused(pause);
        return out.into_value();
    }

    let spilled = match &spill {
        None => Err("no spill folder is configured".to_owned()),
        Some(spill) => spill.with(|w| {
            if !kept.streamed {
                for e in kept.head.iter().chain(&kept.tail) {
                    w.write_line(e.level, &e.text).map_err(|e| e.to_string())?;
                }
            }
            w.finish(outcome.as_ref().map(Option::as_ref))
        }),
    };
    let spill_info = match spilled {
        Ok(s) => {
            let (id, read_tool) = s.read_tool.unzip();
            SpillInfo::Saved {
                path: s.path.to_string_lossy().into_owned(),
                bytes: s.bytes,
                read_file_path: s.read_file_path,
                id,
                read_tool,
            }
        }
        Err(error) => SpillInfo::Failed { error },
    };
    let notice = spill_info.notice();
    let mut budget = cap.saturating_sub(notice.chars().count() + 1);
    let mut shown = RunCodeOutput::new(Ok(None), Vec::new(), calls);
    shown.spill = Some(spill_info);
    let paused = pause.is_some();
    loop {
        let (logs_budget, outcome_budget) = share(logs_chars, result_chars, budget);
        shown.logs = match cap::cut_logs(&view, logs_budget) {
            Some(cut) => cut,
            None => kept.head.iter().chain(&kept.tail).cloned().collect(),
        };
        shown.set_outcome(cap_outcome(&outcome, outcome_budget));
        if paused {
            shown.set_paused(pause.clone());
        }
        let chars = shown.render_text().chars().count();
        if chars <= cap || budget == 0 {
            // The full result can be large: freeing it is not the caller's wait.
            sandbox::reap_later(outcome);
            return shown.into_value();
        }
        budget = budget.saturating_sub(chars - cap);
    }
}

/// Streams `lines` through a console capture into the spill (when `config.spill` is set) and
/// presents them with `result` as [`run_code_tool`] presents a run: for the benches.
pub(crate) fn present_lines(lines: Vec<String>, result: Value, config: &RunCodeConfig) -> Value {
    let spill = config.spill.clone().map(SharedSpill::new);
    let mut capture = sandbox::LogCapture::new(
        config.limits.max_log_bytes,
        config.limits.max_console_bytes,
        spill.clone().map(|s| Box::new(s) as Box<dyn LogSink>),
    );
    for line in lines {
        capture.push(LogLevel::Log, line);
    }
    let report = RunReport {
        result: Ok(Some(result)),
        logs: capture.finish(),
        calls: Vec::new(),
        paused: None,
        diverged: None,
        memory_peak: 0,
    };
    present(report, spill, config, None)
}

/// The model-facing text of a run: its console lines (`[level] ` before those that are not
/// `log`), then `result: ` and the result as compact JSON (`undefined` when absent) or
/// `error: ` and the error; when the output was cut, a last line naming the spill file and
/// how to read it.
///
/// `value` is a canonical `run_code` value (see [`run_code_output_schema`]); one that is
/// not is rendered as its compact JSON.
pub fn render_text(value: &Value) -> String {
    if let Some(handle) = crate::jobs::JobHandle::from_value(value) {
        let id = handle.job_id;
        return format!(
            "started background job {id}; read its output with job_output {{\"job_id\": \"{id}\", \"wait_ms\": 10000}}, stop it with job_kill"
        );
    }
    if value.get("status").and_then(Value::as_str) == Some("running") {
        let id = value
            .get("job_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let output = value
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut text = String::with_capacity(output.len() + 200);
        text.push_str(output);
        if !output.is_empty() && !output.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "still running as background job {id}; read what follows with job_output {{\"job_id\": \"{id}\", \"wait_ms\": 10000}}, stop it with job_kill"
        ));
        return text;
    }
    match RunCodeOutput::deserialize(value) {
        Ok(output) => output.render_text(),
        Err(_) => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tool: &Arc<str>, status: CallStatus, ms: u64) -> CallRecord {
        CallRecord {
            tool: tool.clone(),
            status,
            ms,
        }
    }

    /// The first `listed` calls one by one; after them, one entry per tool and status, in
    /// the order each first came, with the count and total milliseconds of its calls (a
    /// name equal to another but not shared is the same tool).
    #[test]
    fn calls_after_the_listed_ones_fold_per_tool_and_status() {
        let (a, b) = (Arc::<str>::from("a"), Arc::<str>::from("b"));
        let a_again = Arc::<str>::from("a");
        let calls = vec![
            record(&a, CallStatus::Ok, 1),
            record(&b, CallStatus::Error, 2),
            record(&a, CallStatus::Ok, 3),
            record(&b, CallStatus::Ok, 4),
            record(&a_again, CallStatus::Ok, 5),
            record(&a, CallStatus::Error, 6),
            record(&b, CallStatus::Ok, 7),
        ];
        let entries = call_entries(calls, 2);
        let shown: Vec<(&str, CallStatus, u64, Option<u64>)> = entries
            .iter()
            .map(|e| (e.tool.as_str(), e.status, e.ms, e.count))
            .collect();
        assert_eq!(
            shown,
            [
                ("a", CallStatus::Ok, 1, None),
                ("b", CallStatus::Error, 2, None),
                ("a", CallStatus::Ok, 8, Some(2)),
                ("b", CallStatus::Ok, 11, Some(2)),
                ("a", CallStatus::Error, 6, Some(1)),
            ]
        );
        assert!(call_entries(Vec::new(), 2).is_empty());
    }
}
