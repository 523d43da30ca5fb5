//! The order of the stages of one call (DESIGN §3 "Pipeline"); each stage lives in its own
//! file, named after it, and this file strings them together.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::FutureExt;

use super::call::{Arguments, CallId, Exec, ExecInner};
use super::outcome::Outcome;
use super::output::{check_output, panic_message, render};
use super::registry::{Registry, Request};
use super::tool::{ErrorKind, ToolError};
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
            Arc::from(request.name.as_str()),
            ToolError::with_kind(ErrorKind::UnknownTool, message),
        );
    };
    let name = tool.inner.name.clone();
    let finish = |mut outcome: Outcome| {
        outcome.elapsed = started.elapsed();
        outcome
    };
    if request.signal.is_cancelled() {
        return finish(Outcome::error(call_id, name, ToolError::cancelled()));
    }

    // Stage 1: argument validation.
    if let Err(e) = validate_arguments(&tool, &request.arguments) {
        return finish(Outcome::error(call_id, name, e));
    }
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

    // Stage 5: execute; a panic, sync or async, is an error outcome.
    let started_call = catch_unwind(AssertUnwindSafe(|| {
        tool.inner.execute.execute(arguments.clone(), exec.clone())
    }));
    let result = match started_call {
        Err(p) => Err(panicked(&name, &p)),
        Ok(fut) => match AssertUnwindSafe(fut).catch_unwind().await {
            Err(p) => Err(panicked(&name, &p)),
            Ok(r) => r,
        },
    };
    let result = match result {
        Err(e) if exec.signal().is_cancelled() && e.kind() == ErrorKind::Failed => Err(
            ToolError::with_kind(ErrorKind::Cancelled, e.message().to_owned()),
        ),
        other => other,
    };

    // Stage 6: output snapshot, validation, render.
    let outcome = match result {
        Err(e) => Outcome::error(call_id, name, e),
        Ok(value) => match check_output(&tool, &value) {
            Err(e) => Outcome::error(call_id, name, e),
            Ok(()) => {
                if exec.is_nested() {
                    Outcome {
                        call_id,
                        tool: name,
                        result: Ok(value),
                        content: Vec::new(),
                        meta: None,
                        context: Vec::new(),
                        elapsed: Default::default(),
                    }
                } else {
                    match render(&tool, &arguments, &value) {
                        Err(e) => Outcome::error(call_id, name, e),
                        Ok((content, meta)) => Outcome {
                            call_id,
                            tool: name,
                            result: Ok(value),
                            content,
                            meta,
                            context: Vec::new(),
                            elapsed: Default::default(),
                        },
                    }
                }
            }
        },
    };
    finish(outcome)
}

fn panicked(name: &str, payload: &Box<dyn std::any::Any + Send>) -> ToolError {
    ToolError::with_kind(
        ErrorKind::Panicked,
        format!(
            "tool {name} failed unexpectedly: {}",
            panic_message(payload)
        ),
    )
}
