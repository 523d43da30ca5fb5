//! The generic job tools, `job_output`, `job_kill` and `job_list`, and the background
//! branch of the pipeline for tools that opt in with
//! [`ToolBuilder::run_in_background`](crate::ToolBuilder::run_in_background).

use std::time::Duration;

use serde_json::Value;

use super::{JobEnd, JobError, JobReport, JobSpec, Producer};
use crate::dispatch::call::{Arguments, Exec};
use crate::dispatch::outcome::Content;
use crate::dispatch::registry::{RegisterError, Registry, ToolHandle};
use crate::dispatch::tool::{Tool, ToolAnnotations, ToolError, Visibility};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// The argument that asks a tool that opts in to run as a job.
pub const RUN_IN_BACKGROUND: &str = "run_in_background";

/// Longest `wait_ms` of `job_output`, in milliseconds.
pub const MAX_WAIT_MS: u64 = 60_000;

/// Default and largest `max_bytes` of `job_output`.
pub const DEFAULT_READ_BYTES: u64 = 16_384;
const MAX_READ_BYTES: u64 = 1 << 20;

/// How long `job_kill` waits for the job's cleanup before it answers.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Registers `job_output`, `job_kill` and `job_list` on `registry`: the tools a model uses
/// to follow, read and stop the background jobs of its own conversation (the caller's
/// [`Agent`](crate::Agent)). Another conversation's job id is answered as unknown. They are
/// called directly, not from programs ([`Visibility::NotInSandbox`]): a job outlives the
/// program that started it.
///
/// # Errors
/// A [`RegisterError`] when one of the names is taken.
pub fn register_job_tools(registry: &Registry) -> Result<Vec<ToolHandle>, RegisterError> {
    let mut handles = Vec::with_capacity(3);
    for tool in [job_output_tool(), job_kill_tool(), job_list_tool()] {
        handles.push(registry.register(tool)?);
    }
    Ok(handles)
}

fn report_node() -> Node {
    Node::object([
        ("job_id", Node::string().required()),
        ("kind", Node::string().required()),
        ("label", Node::string().required()),
        (
            "status",
            Node::string()
                .string_enum(["running", "finished", "failed", "killed"])
                .required(),
        ),
        (
            "elapsed_ms",
            Node::integer()
                .minimum(0)
                .required()
                .describe("Milliseconds since the job started (to its end once ended)."),
        ),
        (
            "output",
            Node::string()
                .required()
                .describe("Output not read before (consumed by this read)."),
        ),
        ("value", Node::any().describe("The value it finished with.")),
        ("error", Node::string().describe("Why it failed.")),
        ("reason", Node::string().describe("Why it was ended early.")),
    ])
    .additional_properties(false)
}

fn job_id_node() -> Node {
    Node::string()
        .min_length(1)
        .describe("The id from the handle {\"kind\": \"background\", \"job_id\": …}.")
        .required()
}

fn registry_of(exec: &Exec) -> Result<Registry, ToolError> {
    exec.registry()
        .ok_or_else(|| ToolError::new("the registry that ran the call is gone"))
}

fn render_report(report: &Value) -> String {
    let get = |k: &str| report.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut text = format!(
        "job {} ({}): {}, {} ms",
        get("job_id"),
        get("label"),
        get("status"),
        report
            .get("elapsed_ms")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    );
    match get("status") {
        "failed" => text.push_str(&format!("\nerror: {}", get("error"))),
        "killed" => text.push_str(&format!("\nended early: {}", get("reason"))),
        "finished" => {
            let value = report.get("value").cloned().unwrap_or(Value::Null);
            text.push_str(&format!("\nvalue: {value}"));
        }
        _ => {}
    }
    let output = get("output");
    if !output.is_empty() {
        text.push_str("\noutput:\n");
        text.push_str(output);
    }
    text
}

fn job_output_tool() -> Tool {
    Tool::builder("job_output")
        .annotations(ToolAnnotations::read_only())
        .description(
            "Read a background job of yours: its status (running, finished with its value, failed, killed) and the output it wrote since your last read. With wait_ms, wait up to that long for news.",
        )
        .parameters(ParameterSchema::new([
            ("job_id", job_id_node()),
            (
                "wait_ms",
                Node::integer()
                    .minimum(0)
                    .maximum(MAX_WAIT_MS)
                    .default_value(0)
                    .describe("Milliseconds to wait for new output or the job's end."),
            ),
            (
                "max_bytes",
                Node::integer()
                    .minimum(1)
                    .maximum(MAX_READ_BYTES)
                    .default_value(DEFAULT_READ_BYTES)
                    .describe("Most bytes of output to read now; the rest waits."),
            ),
        ]))
        .output(ValueSchema::new(report_node()))
        .render(|_, value| vec![Content::text(render_report(value))])
        .visibility(Visibility::NotInSandbox)
        .execute(|args: Arguments, exec: Exec| async move {
            let registry = registry_of(&exec)?;
            let id = args.str("job_id").unwrap_or_default();
            let wait = Duration::from_millis(
                args.get("wait_ms")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    .min(MAX_WAIT_MS),
            );
            let max = args
                .get("max_bytes")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_READ_BYTES)
                .min(MAX_READ_BYTES) as usize;
            let report = registry
                .jobs()
                .output(id, exec.agent(), max, wait, exec.signal())
                .await?;
            Ok(report.to_value())
        })
        .build()
        .unwrap_or_else(|e| unreachable!("job_output is valid: {e}"))
}

fn job_kill_tool() -> Tool {
    Tool::builder("job_kill")
        .annotations(ToolAnnotations::writes(true, true))
        .description("End a background job of yours; answers once its cleanup is over (its processes and nested calls are stopped). A job already ended is left as it is.")
        .parameters(ParameterSchema::new([("job_id", job_id_node())]))
        .output(ValueSchema::new(report_node()))
        .render(|_, value| vec![Content::text(render_report(value))])
        .visibility(Visibility::NotInSandbox)
        .execute(|args: Arguments, exec: Exec| async move {
            let registry = registry_of(&exec)?;
            let id = args.str("job_id").unwrap_or_default();
            let report = registry.jobs().kill(id, exec.agent(), KILL_WAIT).await?;
            Ok(report.to_value())
        })
        .build()
        .unwrap_or_else(|e| unreachable!("job_kill is valid: {e}"))
}

fn job_list_tool() -> Tool {
    Tool::builder("job_list")
        .annotations(ToolAnnotations::read_only())
        .description("List your background jobs (running and recently ended), oldest first, without reading their output.")
        .parameters(ParameterSchema::empty())
        .output(ValueSchema::new(Node::object([(
            "jobs",
            Node::array(report_node()).required(),
        )])
        .additional_properties(false)))
        .render(|_, value| {
            let jobs = value.get("jobs").and_then(Value::as_array);
            let text = match jobs {
                Some(jobs) if !jobs.is_empty() => jobs
                    .iter()
                    .map(render_report)
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => "no background jobs".to_owned(),
            };
            vec![Content::text(text)]
        })
        .visibility(Visibility::NotInSandbox)
        .execute(|_args: Arguments, exec: Exec| async move {
            let registry = registry_of(&exec)?;
            let jobs: Vec<Value> = registry
                .jobs()
                .list(exec.agent())
                .iter()
                .map(JobReport::to_value)
                .collect();
            Ok(serde_json::json!({ "jobs": jobs }))
        })
        .build()
        .unwrap_or_else(|e| unreachable!("job_list is valid: {e}"))
}

/// Whether this call of `tool` asks to run in the background.
pub(crate) fn wants_background(tool: &Tool, arguments: &Value) -> bool {
    tool.inner.run_in_background
        && arguments.get(RUN_IN_BACKGROUND).and_then(Value::as_bool) == Some(true)
}

/// Starts `tool`'s `execute` as a job of the caller's agent and returns the handle's value:
/// the job runs with the arguments less `run_in_background`, under the job's signal.
pub(crate) fn start_tool_job(
    tool: &Tool,
    arguments: &Arguments,
    exec: &Exec,
) -> Result<Value, ToolError> {
    if exec.signal().is_cancelled() {
        return Err(JobError::Cancelled.into());
    }
    let registry = registry_of(exec)?;
    let mut plain = (**arguments).clone();
    if let Some(o) = plain.as_object_mut() {
        o.remove(RUN_IN_BACKGROUND);
    }
    let label = label_of(tool.name(), &plain);
    let tool = tool.clone();
    let parent = exec.clone();
    let spec = JobSpec::new(
        tool.name().to_owned(),
        label,
        exec.agent().clone(),
        2 << 20,
        move |context| {
            let exec = parent.with_signal(context.signal.clone());
            let signal = context.signal.clone();
            let arguments = Arguments::new(plain);
            let done = async move {
                let result = crate::dispatch::execute::execute(&tool, &arguments, exec).await;
                let result = result
                    .and_then(|v| crate::dispatch::output::check_output(&tool, &v).map(|()| v));
                match result {
                    Ok(v) => JobEnd::Finished(v),
                    Err(e) => JobEnd::Failed(e.message().to_owned()),
                }
            };
            Producer {
                cancel: Box::new(move || signal.cancel()),
                done: Box::pin(done),
                read_output: None,
            }
        },
    );
    let handle = registry.jobs().start(spec)?;
    Ok(handle.to_value())
}

/// A short label for a job: the tool and its arguments, cut to 80 characters.
pub(crate) fn label_of(tool: &str, arguments: &Value) -> String {
    let args = crate::value::preview(arguments, 64);
    format!("{tool} {args}")
}
