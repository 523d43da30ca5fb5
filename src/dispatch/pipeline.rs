//! The order of the stages of one call; each stage lives in the file named after it, and
//! this file calls them in order, top to bottom:
//!
//! 1. `validate.rs`: the arguments against the parameters schema;
//! 2. `pre_execute.rs`: listeners allow, deny, or ask the approver;
//! 3. `guard.rs`: the final, monotonic deny;
//! 4. `around.rs`: wrappers, in onion order, around
//! 5. `execute.rs`: the tool's `execute`, with the call's signal, its panics contained;
//! 6. `output.rs`: the output checked as lossless JSON and against its schema, then
//!    rendered (not for nested calls);
//! 7. `post_execute.rs`: listeners replace content or value, block, attach context; then
//!    `output.rs` projects the presentation meta from the final value (not for nested
//!    calls);
//! 8. `observe.rs`: observers see the immutable outcome.
//!
//! Every failure on the way (an `Err`, a panic in `execute`, a hook or a renderer, an
//! invalid output, a denial) becomes an error outcome before stage 7 (a panicking
//! projector, after it), and nothing after stage 8 can change the outcome. A direct call and a nested call from a `run_code`
//! program go through the same stages; a nested call only skips rendering.

use std::time::Instant;

use serde_json::Value;

use super::call::{Arguments, CallId, Exec};
use super::hooks::HookSet;
use super::outcome::Outcome;
use super::registry::{Registry, Request, unknown_tool_message};
use super::tool::{ErrorKind, Tool, ToolError};
use super::{around, execute, guard, jobs, observe, output, post_execute, pre_execute, validate};

/// Dispatches one call through every stage; `known` is the tool the request names when
/// the caller already looked it up (see [`Registry::generation`]).
pub(crate) async fn run(registry: Registry, request: Request, known: Option<Tool>) -> Outcome {
    let started = Instant::now();
    let call_id = registry.next_call_id();
    let Some(tool) = known.or_else(|| registry.get(&request.name)) else {
        return unknown_tool(&registry, call_id, request.name);
    };
    let exec = Exec::for_call(&registry, call_id, &tool, request);
    let arguments = exec.arguments().clone();
    let hooks = registry.inner.hooks.snapshot();
    if !hooks.observers.is_empty() {
        observe::started(&hooks, &exec);
    }

    let result = checked_value(&tool, &exec, &arguments, &hooks).await;
    let (content, result) = output::rendered(&tool, &exec, &arguments, result);
    let (content, result, context) =
        post_execute::apply(&hooks, &tool, &exec, &arguments, content, result);
    let (content, result, meta) =
        output::presentation_meta(&tool, &exec, &arguments, content, result);
    let outcome = Outcome {
        call_id,
        tool: exec.inner.name.clone(),
        result,
        content,
        meta,
        context,
        elapsed: started.elapsed(),
    };
    observe::notify(&hooks, &exec, &outcome);
    outcome
}

/// Stages 1 to 6 up to rendering: the checked output value, or why there is none.
async fn checked_value(
    tool: &Tool,
    exec: &Exec,
    arguments: &Arguments,
    hooks: &HookSet,
) -> Result<Value, ToolError> {
    if exec.signal().is_cancelled() {
        return Err(ToolError::cancelled());
    }
    validate::validate_arguments(tool, arguments)?;
    // A stage with no hooks costs nothing: most calls meet no listener and no wrapper.
    if !hooks.pre.is_empty() {
        pre_execute::decide(hooks, exec).await?;
    }
    if !hooks.guards.is_empty() {
        guard::check(hooks, exec)?;
    }
    if jobs::tools::wants_background(tool, arguments) {
        // Policy has spoken for the call; the job is the tool's own execute.
        return jobs::tools::start_tool_job(tool, arguments, exec);
    }
    let value = if hooks.chain.is_empty() {
        execute::cancelled_if_signalled(exec, execute::execute(tool, arguments, exec.clone()).await)
    } else {
        around::run(hooks, tool, arguments, exec).await
    }?;
    output::check_output(tool, &value)?;
    Ok(value)
}

/// The outcome of a call to a name no visible tool has: the same message, with the
/// closest names, whether the call is direct or comes from a program.
fn unknown_tool(registry: &Registry, call_id: CallId, name: std::sync::Arc<str>) -> Outcome {
    let names: Vec<String> = registry
        .sandbox_tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    let message = unknown_tool_message(&name, &names);
    Outcome::error(
        call_id,
        name,
        ToolError::with_kind(ErrorKind::UnknownTool, message),
    )
}
