//! The order of the stages of one call (DESIGN §3 "Pipeline"); each stage lives in its own
//! file, named after it, and this file strings them together:
//!
//! 1. `validate.rs`: arguments against the parameters schema;
//! 2. `pre_execute.rs`: listeners allow, deny or ask the approver;
//! 3. `guard.rs`: the final, monotonic deny;
//! 4. `around.rs`: wrappers, in onion order, around
//! 5. `execute`, with the call's signal;
//! 6. `output.rs`: the output checked as lossless JSON and against its schema, then
//!    rendered (not for nested calls);
//! 7. `post_execute.rs`: listeners replace content or value, block, attach context;
//! 8. `observe.rs`: observers see the immutable outcome.
//!
//! Every failure on the way (an `Err`, a panic in `execute`, a hook or a renderer, an
//! invalid output, a denial) becomes an error outcome before stage 7.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::Value;

use super::around::Next;
use super::call::{Arguments, CallId, Exec, ExecInner};
use super::hooks::HookSet;
use super::outcome::{Content, Outcome};
use super::output::{check_output, panic_message, render};
use super::post_execute::PostOutcome;
use super::pre_execute::{Approval, Decision};
use super::registry::{Registry, Request};
use super::tool::{ErrorKind, Tool, ToolError};
use super::validate::validate_arguments;

pub(crate) async fn run(registry: Registry, request: Request) -> Outcome {
    let started = Instant::now();
    let call_id = CallId(registry.inner.next_call.fetch_add(1, Ordering::Relaxed));
    let Some(tool) = registry.get(&request.name) else {
        let names = registry
            .sandbox_tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect::<Vec<_>>();
        let message = format!(
            "unknown tool {:?}; available tools: {}",
            request.name,
            if names.is_empty() {
                "none".to_owned()
            } else {
                crate::value::name_list(names.iter().map(String::as_str), 40)
            }
        );
        return Outcome::error(
            call_id,
            request.name.clone(),
            ToolError::with_kind(ErrorKind::UnknownTool, message),
        );
    };
    let name = tool.inner.name.clone();
    let arguments = Arguments::new(request.arguments);
    let exec = Exec {
        inner: Arc::new(ExecInner {
            call_id,
            name: name.clone(),
            arguments: arguments.clone(),
            agent: request
                .agent
                .unwrap_or_else(|| registry.inner.agent.clone()),
            token: registry.new_token(call_id.0),
            parent: request.parent,
            nested: request.nested,
            registry: registry.downgrade(),
        }),
        signal: request.signal,
    };
    let hooks = registry.inner.hooks.snapshot();

    let result = stages_1_to_6(&tool, &exec, &arguments, &hooks).await;

    // Stage 6 (render) and 7 (post_execute).
    let (content, result, context) = finish(&tool, &exec, &arguments, &hooks, result);
    let meta = match (&result, exec.is_nested()) {
        (Ok(value), false) => project_meta(&tool, &arguments, value),
        _ => Ok(None),
    };
    let (result, content, meta) = match meta {
        Ok(meta) => (result, content, meta),
        Err(e) => (
            Err(e.clone()),
            vec![Content::text(e.message().to_owned())],
            None,
        ),
    };
    let outcome = Outcome {
        call_id,
        tool: name,
        result,
        content,
        meta,
        context,
        elapsed: started.elapsed(),
    };

    // Stage 8.
    for (_, observer) in &hooks.observers {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| observer.observe(&exec, &outcome))) {
            tracing::warn!(tool = %outcome.tool, "a result observer panicked: {}", panic_message(&p));
        }
    }
    outcome
}

/// Stages 1 to 6 (without rendering): the value, or why there is none.
async fn stages_1_to_6(
    tool: &Tool,
    exec: &Exec,
    arguments: &Arguments,
    hooks: &HookSet,
) -> Result<Value, ToolError> {
    if exec.signal().is_cancelled() {
        return Err(ToolError::cancelled());
    }
    // Stage 1.
    validate_arguments(tool, arguments)?;
    // Stage 2.
    for (_, listener) in &hooks.pre {
        let decision =
            catch_unwind(AssertUnwindSafe(|| listener.pre_execute(exec))).map_err(|p| {
                ToolError::with_kind(
                    ErrorKind::Denied,
                    format!(
                        "a policy check failed, so the call was not made ({})",
                        panic_message(&p)
                    ),
                )
            })?;
        match decision {
            Decision::Allow => {}
            Decision::Deny(reason) => return Err(denied(reason)),
            // Boxed: the rare path keeps its state out of every call's future.
            Decision::Ask(prompt) => Box::pin(ask(hooks, exec, &prompt)).await?,
        }
    }
    // Stage 3.
    for (_, guard) in &hooks.guards {
        match catch_unwind(AssertUnwindSafe(|| guard.check(exec))) {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => return Err(denied(reason)),
            Err(p) => {
                return Err(denied(format!(
                    "a guard failed, so the call was not made ({})",
                    panic_message(&p)
                )));
            }
        }
    }
    // Stages 4 and 5.
    let executed = if hooks.chain.is_empty() {
        execute(tool, arguments, exec).await
    } else {
        let next = Next {
            layers: hooks.chain.clone(),
            index: 0,
            tool: tool.clone(),
            args: arguments.clone(),
        };
        Box::pin(next.run(exec.clone())).await
    };
    let result = match executed {
        Err(e) if exec.signal().is_cancelled() && e.kind() == ErrorKind::Failed => Err(
            ToolError::with_kind(ErrorKind::Cancelled, e.message().to_owned()),
        ),
        other => other,
    };
    // Stage 6: the output snapshot.
    let value = result?;
    check_output(tool, &value)?;
    Ok(value)
}

/// Stage 5 without around-wrappers: `execute`, a panic (sync or async) becoming an error.
async fn execute(tool: &Tool, arguments: &Arguments, exec: &Exec) -> Result<Value, ToolError> {
    let panicked = |p: Box<dyn std::any::Any + Send>| {
        ToolError::with_kind(
            ErrorKind::Panicked,
            format!(
                "tool {} failed unexpectedly: {}",
                tool.name(),
                panic_message(&p)
            ),
        )
    };
    let started = catch_unwind(AssertUnwindSafe(|| {
        tool.inner.execute.execute(arguments.clone(), exec.clone())
    }));
    match started {
        Err(p) => Err(panicked(p)),
        Ok(fut) => match futures::FutureExt::catch_unwind(AssertUnwindSafe(fut)).await {
            Ok(r) => r,
            Err(p) => Err(panicked(p)),
        },
    }
}

fn denied(reason: String) -> ToolError {
    ToolError::with_kind(ErrorKind::Denied, reason)
}

async fn ask(hooks: &HookSet, exec: &Exec, prompt: &str) -> Result<(), ToolError> {
    let Some(approver) = &hooks.approver else {
        return Err(denied(format!(
            "this call needs approval ({prompt}), and no approver is configured, so it was denied"
        )));
    };
    let asked = catch_unwind(AssertUnwindSafe(|| approver.approve(exec, prompt)))
        .map_err(|p| denied(format!("the approver failed ({})", panic_message(&p))))?;
    tokio::select! {
        answer = asked => match answer {
            Approval::Approved => Ok(()),
            Approval::Denied(reason) => Err(denied(reason)),
        },
        _ = exec.signal().cancelled() => Err(ToolError::cancelled()),
    }
}

type Finished = (Vec<Content>, Result<Value, ToolError>, Vec<Content>);

/// Stage 6 (render) and stage 7.
fn finish(
    tool: &Tool,
    exec: &Exec,
    arguments: &Arguments,
    hooks: &HookSet,
    result: Result<Value, ToolError>,
) -> Finished {
    let rendered = |result: Result<Value, ToolError>| -> (Vec<Content>, Result<Value, ToolError>) {
        match result {
            Err(e) => (vec![Content::text(e.message().to_owned())], Err(e)),
            Ok(v) if exec.is_nested() => (Vec::new(), Ok(v)),
            Ok(v) => match render(tool, arguments, &v) {
                Ok(content) => (content, Ok(v)),
                Err(e) => (vec![Content::text(e.message().to_owned())], Err(e)),
            },
        }
    };
    let (content, result) = rendered(result);
    if hooks.post.is_empty() {
        return (content, result, Vec::new());
    }
    let mut post = PostOutcome {
        result,
        content,
        context: Vec::new(),
        value_replaced: false,
        content_replaced: false,
    };
    for (_, listener) in &hooks.post {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| listener.post_execute(exec, &mut post))) {
            post.block(format!(
                "a post-execute check failed, so the result was withheld ({})",
                panic_message(&p)
            ));
        }
    }
    let PostOutcome {
        result,
        content,
        context,
        value_replaced,
        content_replaced,
    } = post;
    if value_replaced {
        let result = result.and_then(|v| check_output(tool, &v).map(|()| v));
        if content_replaced && result.is_ok() {
            return (content, result, context);
        }
        let (content, result) = rendered(result);
        return (content, result, context);
    }
    (content, result, context)
}

fn project_meta(
    tool: &Tool,
    arguments: &Arguments,
    value: &Value,
) -> Result<Option<Value>, ToolError> {
    match &tool.inner.presentation_meta {
        None => Ok(None),
        Some(f) => catch_unwind(AssertUnwindSafe(|| f(arguments, value))).map_err(|p| {
            ToolError::with_kind(
                ErrorKind::Panicked,
                format!(
                    "the presentation projector of tool {} failed: {}",
                    tool.name(),
                    panic_message(&p)
                ),
            )
        }),
    }
}
