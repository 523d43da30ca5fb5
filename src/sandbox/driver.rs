//! The event loop of one run: the engine, its microtasks, the program's tool calls and
//! timers, all driven from one task (no `tokio::spawn` per call: DESIGN §5, ENGINE-NOTES
//! "the hop trap").
//!
//! ```text
//!   ┌──────────────── run (one task) ─────────────────┐
//!   │ JS microtasks ──> tools.x(args) ──> host.call    │
//!   │        ▲              (args → JSON, queued)      │
//!   │        │                         │               │
//!   │   settle(id) <── outcome ── dispatch future      │
//!   │        │             (polled here, in order of   │
//!   │        │              completion, ≤ max_in_flight)│
//!   │   fireTimer(id) <── timer heap                   │
//!   └──────────────────────────────────────────────────┘
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use futures::{Future, FutureExt};
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{AsyncContext, AsyncRuntime, Ctx, Exception, Function, Object, Promise, Value};
use tokio_util::sync::CancellationToken;

use super::alloc::LimitedAllocator;
use super::convert::{ConvertError, Primordials, ToJson, describe_thrown, json_to_js};
use super::flags::{RunFlags, StopReason};
use super::logs::{LogCapture, LogEntry, LogLevel};
use super::report::{CallRecord, CallStatus, ProgramError};
use super::source::{self, Program};
use super::{Limits, prelude};
use crate::dispatch::{Agent, CallToken, ErrorKind, Outcome, Registry, Request};
use crate::value::{PathSeg, json_size};

/// Everything one run needs.
pub(crate) struct RunRequest {
    pub(crate) source: String,
    pub(crate) limits: Limits,
    pub(crate) registry: Registry,
    /// The tools the program sees: (name, alias).
    pub(crate) tools: Vec<(String, String)>,
    pub(crate) parent: Option<CallToken>,
    pub(crate) agent: Agent,
    pub(crate) signal: CancellationToken,
}

/// What a run produced, before the output cap.
#[derive(Debug)]
pub(crate) struct RunReport {
    /// The result (`None` for `undefined`) or the error.
    pub(crate) result: Result<Option<serde_json::Value>, ProgramError>,
    pub(crate) logs: Vec<LogEntry>,
    pub(crate) calls: Vec<CallRecord>,
}

struct QueuedCall {
    id: u64,
    name: String,
    args: serde_json::Value,
}

/// State shared by the host functions (called from JS) and the loop. Never locked while
/// JavaScript runs.
struct HostState {
    queued: VecDeque<QueuedCall>,
    next_id: u64,
    records: Vec<CallRecord>,
    logs: LogCapture,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    active_timers: HashSet<u64>,
    tool_names: Vec<String>,
    max_tool_calls: usize,
    max_input_bytes: usize,
}

type Shared = Arc<Mutex<HostState>>;

fn lock(state: &Shared) -> MutexGuard<'_, HostState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

type CallFuture = Pin<Box<dyn Future<Output = (u64, Outcome)> + Send>>;

/// Runs a program to its end. Never panics on anything the program does.
pub(crate) async fn run(request: RunRequest) -> RunReport {
    let started = Instant::now();
    let fail = |e: ProgramError| RunReport {
        result: Err(e),
        logs: Vec::new(),
        calls: Vec::new(),
    };
    if request.source.len() > request.limits.max_source_bytes {
        return fail(ProgramError::new(
            "LimitError",
            format!(
                "the program is {} bytes; the limit is {} bytes",
                request.source.len(),
                request.limits.max_source_bytes
            ),
        ));
    }
    let program = match source::prepare(&request.source) {
        Ok(p) => p,
        Err(e) => {
            return fail(ProgramError {
                name: e.name.to_owned(),
                message: e.message,
                line: e.line,
                column: e.column,
            });
        }
    };
    let flags = Arc::new(RunFlags::new(started + request.limits.timeout));
    let runtime = match AsyncRuntime::new_with_alloc(LimitedAllocator::new(
        request.limits.memory,
        flags.clone(),
    )) {
        Ok(rt) => rt,
        Err(e) => {
            return fail(ProgramError::new(
                "InternalError",
                format!("the engine could not start: {e}"),
            ));
        }
    };
    runtime.set_max_stack_size(request.limits.stack).await;
    let handler_flags = flags.clone();
    runtime
        .set_interrupt_handler(Some(Box::new(move || handler_flags.should_interrupt())))
        .await;
    let context = match AsyncContext::full(&runtime).await {
        Ok(c) => c,
        Err(e) => {
            return fail(ProgramError::new(
                "InternalError",
                format!("the engine could not start: {e}"),
            ));
        }
    };
    let state: Shared = Arc::new(Mutex::new(HostState {
        queued: VecDeque::new(),
        next_id: 1,
        records: Vec::new(),
        logs: LogCapture::new(request.limits.max_log_bytes),
        timers: BinaryHeap::new(),
        active_timers: HashSet::new(),
        tool_names: request.tools.iter().map(|(n, _)| n.clone()).collect(),
        max_tool_calls: request.limits.max_tool_calls,
        max_input_bytes: request.limits.max_tool_input_bytes,
    }));

    let result = context
        .async_with(async |ctx| {
            let mut driver = Driver {
                request: &request,
                program: &program,
                flags: &flags,
                state: &state,
                inflight: FuturesUnordered::new(),
                started_at: HashMap::new(),
                calls_signal: request.signal.child_token(),
            };
            let result = driver.drive(&ctx).await;
            driver.finish().await;
            result
        })
        .await;
    drop(context);
    drop(runtime);

    let state = Arc::try_unwrap(state)
        .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
        .unwrap_or_else(|arc| {
            let mut guard = lock(&arc);
            HostState {
                queued: VecDeque::new(),
                next_id: 0,
                records: std::mem::take(&mut guard.records),
                logs: std::mem::take(&mut guard.logs),
                timers: BinaryHeap::new(),
                active_timers: HashSet::new(),
                tool_names: Vec::new(),
                max_tool_calls: 0,
                max_input_bytes: 0,
            }
        });
    RunReport {
        result,
        logs: state.logs.finish(),
        calls: state
            .records
            .into_iter()
            .filter(|r| r.ms != u64::MAX)
            .collect(),
    }
}

struct Driver<'a> {
    request: &'a RunRequest,
    program: &'a Program,
    flags: &'a Arc<RunFlags>,
    state: &'a Shared,
    inflight: FuturesUnordered<CallFuture>,
    started_at: HashMap<u64, Instant>,
    /// Parent of every nested call's signal: cancelled when the program ends.
    calls_signal: CancellationToken,
}

/// Marks a record that never started (it did not reach a tool).
const NOT_STARTED: u64 = u64::MAX;

impl Driver<'_> {
    async fn drive<'js>(
        &mut self,
        ctx: &Ctx<'js>,
    ) -> Result<Option<serde_json::Value>, ProgramError> {
        let engine_error = |e: rquickjs::Error| {
            ProgramError::new("InternalError", format!("the sandbox could not start: {e}"))
        };
        let host = make_host(ctx, self.state.clone(), &self.request.tools).map_err(engine_error)?;
        let internals = prelude::load(ctx, host).map_err(|e| {
            let detail = if matches!(e, rquickjs::Error::Exception) {
                describe_thrown(&ctx.catch())
            } else {
                e.to_string()
            };
            ProgramError::new(
                "InternalError",
                format!("the sandbox prelude failed: {detail}"),
            )
        })?;
        let prims_obj: Object<'js> = internals.get("primordials").map_err(engine_error)?;
        let prims = Primordials::capture(&prims_obj).map_err(engine_error)?;
        let settle: Function<'js> = internals.get("settle").map_err(engine_error)?;
        let fire_timer: Function<'js> = internals.get("fireTimer").map_err(engine_error)?;
        let run_default: Function<'js> = internals.get("runDefault").map_err(engine_error)?;
        let inspect: Function<'js> = internals.get("inspect").map_err(engine_error)?;

        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.filename = Some(PROGRAM_FILE.to_owned());
        let main: Function<'js> = match ctx.eval_with_options(self.program.code.as_str(), options) {
            Ok(f) => f,
            Err(rquickjs::Error::Exception) => {
                let thrown = ctx.catch();
                return Err(self
                    .stopped()
                    .unwrap_or_else(|| self.program_error(&thrown, Some(&inspect))));
            }
            Err(e) => return Err(engine_error(e)),
        };
        let started: rquickjs::Result<Promise<'js>> = if self.program.call_default {
            run_default.call((main,))
        } else {
            main.call(())
        };
        let promise = match started {
            Ok(p) => p,
            Err(rquickjs::Error::Exception) => {
                let thrown = ctx.catch();
                return Err(self
                    .stopped()
                    .unwrap_or_else(|| self.program_error(&thrown, Some(&inspect))));
            }
            Err(e) => return Err(engine_error(e)),
        };

        let deadline = tokio::time::Instant::from_std(self.flags.deadline());
        loop {
            // Run every queued microtask (the interrupt handler bounds CPU loops here).
            while self.flags.reason().is_none() && ctx.execute_pending_job() {}
            if let Some(e) = self.stopped() {
                return Err(e);
            }
            match promise.state() {
                PromiseState::Resolved => {
                    let value: Value<'js> = match promise.result::<Value<'js>>() {
                        Some(Ok(v)) => v,
                        _ => Value::new_undefined(ctx.clone()),
                    };
                    return self.convert_result(ctx, &prims, value);
                }
                PromiseState::Rejected => {
                    let _ = promise.result::<Value<'js>>();
                    let thrown = ctx.catch();
                    return Err(self
                        .stopped()
                        .unwrap_or_else(|| self.program_error(&thrown, Some(&inspect))));
                }
                PromiseState::Pending => {}
            }
            self.start_queued();
            let (next_timer, queued) = {
                let st = lock(self.state);
                (next_timer(&st), st.queued.len())
            };
            if self.inflight.is_empty() && queued == 0 && next_timer.is_none() {
                return Err(ProgramError::new(
                    "DeadlockError",
                    "the program is waiting on a promise that nothing can settle: no tool call is in flight and no timer is pending (a promise that is never resolved, or an await on something that is not a tool call)",
                ));
            }
            let timer_at = next_timer.map(tokio::time::Instant::from_std);
            tokio::select! {
                biased;
                _ = self.request.signal.cancelled() => {
                    self.flags.cancel();
                }
                done = self.inflight.next(), if !self.inflight.is_empty() => {
                    if let Some((id, outcome)) = done {
                        self.deliver(ctx, &prims, &settle, id, outcome)?;
                        // Deliver every other call that is already done, before running JS.
                        while let Some(Some((id, outcome))) = self.inflight.next().now_or_never() {
                            self.deliver(ctx, &prims, &settle, id, outcome)?;
                        }
                    }
                }
                _ = sleep_until(timer_at), if timer_at.is_some() => {
                    self.fire_timers(ctx, &fire_timer, &inspect)?;
                }
                _ = tokio::time::sleep_until(deadline) => {
                    self.flags.time_out();
                }
            }
        }
    }

    /// The error for a run stopped from outside the program, if it was.
    fn stopped(&self) -> Option<ProgramError> {
        let in_flight = self.inflight.len();
        self.flags.reason().map(|reason| match reason {
            StopReason::Timeout => ProgramError::new(
                "TimeoutError",
                format!(
                    "the program did not finish within its {} ms timeout{}",
                    self.request.limits.timeout.as_millis(),
                    if in_flight > 0 {
                        format!(" ({in_flight} tool call(s) were still running)")
                    } else {
                        String::new()
                    }
                ),
            ),
            StopReason::OutOfMemory => ProgramError::new(
                "OutOfMemory",
                format!(
                    "the program ran out of memory: it may hold at most {} bytes",
                    self.request.limits.memory
                ),
            ),
            StopReason::Cancelled => ProgramError::new("CancelledError", "the run was cancelled"),
        })
    }

    fn program_error<'js>(
        &self,
        thrown: &Value<'js>,
        inspect: Option<&Function<'js>>,
    ) -> ProgramError {
        let shown = inspect.and_then(|f| f.call::<_, String>((thrown.clone(),)).ok());
        program_error(self.program, thrown, shown)
    }

    fn convert_result<'js>(
        &self,
        ctx: &Ctx<'js>,
        prims: &Primordials<'js>,
        value: Value<'js>,
    ) -> Result<Option<serde_json::Value>, ProgramError> {
        let mut conv = ToJson::new(ctx, prims, usize::MAX, "result");
        match conv.convert_root(value, &PathSeg::Root("result")) {
            Ok(v) => Ok(v),
            Err(ConvertError::Invalid(message)) => Err(ProgramError::new(
                "ResultError",
                format!("the program's result is not JSON: {message}"),
            )),
            Err(ConvertError::Engine(_)) => {
                let _ = ctx.catch();
                Err(self.stopped().unwrap_or_else(|| {
                    ProgramError::new("ResultError", "the program's result could not be read")
                }))
            }
        }
    }

    fn start_queued(&mut self) {
        let room = self
            .request
            .limits
            .max_in_flight
            .saturating_sub(self.inflight.len());
        if room == 0 {
            return;
        }
        let batch: Vec<QueuedCall> = {
            let mut st = lock(self.state);
            let n = room.min(st.queued.len());
            st.queued.drain(..n).collect()
        };
        for call in batch {
            let mut request = Request::new(call.name, call.args, self.calls_signal.child_token())
                .nested(true)
                .agent(self.request.agent.clone());
            if let Some(parent) = self.request.parent {
                request = request.parent(parent);
            }
            let future = self.request.registry.dispatch(request);
            let id = call.id;
            self.started_at.insert(id, Instant::now());
            self.inflight
                .push(Box::pin(future.map(move |outcome| (id, outcome))));
        }
    }

    fn record(&mut self, id: u64, status: CallStatus) {
        let ms = self
            .started_at
            .remove(&id)
            .map_or(0, |t| t.elapsed().as_millis() as u64);
        let mut st = lock(self.state);
        if let Some(r) = st.records.get_mut((id - 1) as usize) {
            r.status = status;
            r.ms = ms;
        }
    }

    fn deliver<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        prims: &Primordials<'js>,
        settle: &Function<'js>,
        id: u64,
        outcome: Outcome,
    ) -> Result<(), ProgramError> {
        let status = match outcome.error_kind() {
            None => CallStatus::Ok,
            Some(ErrorKind::Cancelled) => CallStatus::Cancelled,
            Some(_) => CallStatus::Error,
        };
        self.record(id, status);
        let settled = match outcome.result() {
            Ok(value) => {
                let size = json_size(value);
                if size > self.request.limits.max_tool_output_bytes {
                    let message = format!(
                        "the result of {} is {size} bytes, over the limit of {} bytes for one tool result",
                        outcome.tool(),
                        self.request.limits.max_tool_output_bytes
                    );
                    settle.call::<_, ()>((id as f64, false, message))
                } else {
                    match json_to_js(ctx, prims, value) {
                        Ok(js) => settle.call::<_, ()>((id as f64, true, js)),
                        Err(e) => Err(e),
                    }
                }
            }
            Err(error) => settle.call::<_, ()>((id as f64, false, error.message())),
        };
        if let Err(e) = settled {
            if matches!(e, rquickjs::Error::Exception) {
                let _ = ctx.catch();
            }
            if let Some(err) = self.stopped() {
                return Err(err);
            }
        }
        Ok(())
    }

    fn fire_timers<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        fire_timer: &Function<'js>,
        inspect: &Function<'js>,
    ) -> Result<(), ProgramError> {
        let now = Instant::now();
        loop {
            let due = {
                let mut st = lock(self.state);
                match st.timers.peek() {
                    Some(Reverse((at, _))) if *at <= now => {
                        let Some(Reverse((_, id))) = st.timers.pop() else {
                            break;
                        };
                        if st.active_timers.remove(&id) {
                            Some(id)
                        } else {
                            continue;
                        }
                    }
                    _ => None,
                }
            };
            let Some(id) = due else { break };
            if let Err(e) = fire_timer.call::<_, ()>((id as f64,)) {
                if let Some(err) = self.stopped() {
                    return Err(err);
                }
                let mut error = if matches!(e, rquickjs::Error::Exception) {
                    self.program_error(&ctx.catch(), Some(inspect))
                } else {
                    ProgramError::new("InternalError", e.to_string())
                };
                error.message =
                    format!("uncaught exception in a timer callback: {}", error.message);
                return Err(error);
            }
            // Let the callback's microtasks run before the next timer.
            while self.flags.reason().is_none() && ctx.execute_pending_job() {}
        }
        Ok(())
    }

    /// Cancels the calls still running and gives them `cancel_grace` to observe it.
    async fn finish(&mut self) {
        if self.inflight.is_empty() {
            return;
        }
        self.calls_signal.cancel();
        let grace = self.request.limits.cancel_grace;
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            tokio::select! {
                done = self.inflight.next() => match done {
                    Some((id, _)) => self.record(id, CallStatus::Cancelled),
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        let left: Vec<u64> = self.started_at.keys().copied().collect();
        for id in left {
            self.record(id, CallStatus::Cancelled);
        }
        self.inflight.clear();
    }
}

/// The file name program code runs under (it appears in stack traces).
pub(crate) const PROGRAM_FILE: &str = "program.js";

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn next_timer(st: &HostState) -> Option<Instant> {
    st.timers
        .iter()
        .filter(|Reverse((_, id))| st.active_timers.contains(id))
        .map(|Reverse((at, _))| *at)
        .min()
}

/// Describes a thrown value as the run's error, with the position in the model's source
/// when the engine knows it.
pub(crate) fn program_error(
    program: &Program,
    thrown: &Value<'_>,
    inspected: Option<String>,
) -> ProgramError {
    if thrown.is_null() && !thrown.is_error() {
        return ProgramError::new("Error", "the program threw null (not an Error)");
    }
    let Some(obj) = thrown.as_object() else {
        let shown = match thrown.type_of() {
            rquickjs::Type::String => format!(
                "{:?}",
                thrown
                    .as_string()
                    .and_then(|s| s.to_string().ok())
                    .unwrap_or_default()
            ),
            _ => inspected.unwrap_or_else(|| describe_thrown(thrown)),
        };
        let what = match type_word(thrown) {
            "undefined" => "not an Error".to_owned(),
            word => format!("a {word}, not an Error"),
        };
        return ProgramError::new("Error", format!("the program threw {shown} ({what})"));
    };
    let get = |key: &str| -> Option<String> {
        obj.get::<_, Value<'_>>(key)
            .ok()
            .and_then(|v| v.as_string().and_then(|s| s.to_string().ok()))
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
        return ProgramError::new(
            "Error",
            format!("the program threw {shown} (an object, not an Error)"),
        );
    }
    let mut message = message.unwrap_or_default();
    if name == "ToolCallError"
        && let Some(tool) = get("toolName")
    {
        message = format!("{tool}: {message}");
    }
    let mut error = ProgramError::new(if name.is_empty() { "Error" } else { &name }, message);
    if let Some(stack) = get("stack")
        && let Some((line, column)) = first_program_position(&stack)
        && let Some((l, c)) = program.original_position(line, column)
    {
        error.line = Some(l);
        error.column = Some(c);
    }
    if error.line.is_none()
        && name == "SyntaxError"
        && let Some((line, column)) = first_program_position(&error.message)
        && let Some((l, c)) = program.original_position(line, column)
    {
        error.line = Some(l);
        error.column = Some(c);
    }
    error
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

/// Finds the first `program.js:LINE:COLUMN` in a stack trace.
fn first_program_position(text: &str) -> Option<(u32, u32)> {
    let needle = "program.js:";
    let mut rest = text;
    while let Some(i) = rest.find(needle) {
        let after = &rest[i + needle.len()..];
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

/// The native functions of the `host` object the prelude captures.
fn make_host<'js>(
    ctx: &Ctx<'js>,
    state: Shared,
    tools: &[(String, String)],
) -> rquickjs::Result<Object<'js>> {
    let host = Object::new(ctx.clone())?;

    let call_state = state.clone();
    host.set(
        "call",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  name: String,
                  args: Value<'js>,
                  prims: Object<'js>|
                  -> rquickjs::Result<f64> {
                host_call(&ctx, &call_state, name, args, &prims)
            },
        )?,
    )?;

    let unknown_state = state.clone();
    host.set(
        "unknownTool",
        Function::new(ctx.clone(), move |name: String| -> String {
            let st = lock(&unknown_state);
            unknown_tool_message(&name, &st.tool_names)
        })?,
    )?;

    let log_state = state.clone();
    host.set(
        "log",
        Function::new(
            ctx.clone(),
            move |level: String, text: rquickjs::String<'js>| {
                let text = text.to_string().unwrap_or_else(|_| {
                    "[console text with a lone surrogate could not be shown]".into()
                });
                lock(&log_state).logs.push(LogLevel::parse(&level), text);
            },
        )?,
    )?;

    let timer_state = state.clone();
    host.set(
        "setTimer",
        Function::new(ctx.clone(), move |id: f64, ms: f64| {
            let delay = Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 1.0e7));
            let mut st = lock(&timer_state);
            let id = id as u64;
            st.active_timers.insert(id);
            st.timers.push(Reverse((Instant::now() + delay, id)));
        })?,
    )?;
    let clear_state = state;
    host.set(
        "clearTimer",
        Function::new(ctx.clone(), move |id: f64| {
            lock(&clear_state).active_timers.remove(&(id as u64));
        })?,
    )?;

    let names: Vec<Vec<String>> = tools
        .iter()
        .map(|(n, a)| vec![n.clone(), a.clone()])
        .collect();
    host.set("toolNames", names)?;
    Ok(host)
}

fn host_call<'js>(
    ctx: &Ctx<'js>,
    state: &Shared,
    name: String,
    args: Value<'js>,
    prims: &Object<'js>,
) -> rquickjs::Result<f64> {
    let (max_calls, max_bytes, made) = {
        let st = lock(state);
        (st.max_tool_calls, st.max_input_bytes, st.records.len())
    };
    if made >= max_calls {
        return Err(Exception::throw_message(
            ctx,
            &format!(
                "this run reached its limit of {max_calls} tool calls; no more calls can start"
            ),
        ));
    }
    // Convert with the lock released: getters and toJSON run JavaScript.
    let prims = Primordials::capture(prims)?;
    let mut conv = ToJson::new(ctx, &prims, max_bytes, "tool input");
    let json = match conv.convert_root(args, &PathSeg::Root("args")) {
        Ok(Some(v)) => v,
        Ok(None) => serde_json::Value::Object(Default::default()),
        Err(ConvertError::Invalid(message)) => {
            return Err(Exception::throw_message(
                ctx,
                &format!("invalid arguments for {name}: {message}"),
            ));
        }
        Err(ConvertError::Engine(e)) => return Err(e),
    };
    let mut st = lock(state);
    let id = st.next_id;
    st.next_id += 1;
    st.records.push(CallRecord {
        tool: name.clone(),
        status: CallStatus::Cancelled,
        ms: NOT_STARTED,
    });
    st.queued.push_back(QueuedCall {
        id,
        name,
        args: json,
    });
    Ok(id as f64)
}

/// `unknown tool "x"; did you mean "y"? available tools: a, b`.
fn unknown_tool_message(name: &str, tools: &[String]) -> String {
    let mut best: Option<(usize, &str)> = None;
    for t in tools {
        let d = edit_distance(&name.to_lowercase(), &t.to_lowercase());
        if d <= (t.len().max(name.len()) / 3).max(2) && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, t));
        }
    }
    let list = if tools.is_empty() {
        "none".to_owned()
    } else {
        crate::value::name_list(tools.iter().map(String::as_str), 40)
    };
    match best {
        Some((_, t)) => {
            format!("unknown tool {name:?}; did you mean {t:?}? Available tools: {list}")
        }
        None => format!("unknown tool {name:?}; available tools: {list}"),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
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
    fn unknown_tools_get_a_suggestion() {
        let tools = vec!["read_file".to_owned(), "grep".to_owned()];
        assert_eq!(
            unknown_tool_message("readFile", &tools),
            "unknown tool \"readFile\"; did you mean \"read_file\"? Available tools: read_file, grep"
        );
        assert_eq!(
            unknown_tool_message("zzz", &tools),
            "unknown tool \"zzz\"; available tools: read_file, grep"
        );
    }
}
