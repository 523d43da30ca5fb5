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

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use futures::{Future, FutureExt};
use rquickjs::context::EvalOptions;
use rquickjs::function::Opt;
use rquickjs::promise::PromiseState;
use rquickjs::{AsyncContext, AsyncRuntime, Ctx, Exception, Function, Object, Promise, Value};
use tokio_util::sync::CancellationToken;

use super::alloc::LimitedAllocator;
use super::convert::{ConvertError, Primordials, ToJson, describe_thrown, json_to_js};
use super::flags::{RunFlags, StopReason};
use super::logs::{CapturedLogs, LogCapture, LogLevel, LogSink};
use super::report::{CallRecord, CallStatus, ProgramError};
use super::{Limits, prelude, reaper, watchdog};
use crate::dispatch::registry::unknown_tool_message;
use crate::dispatch::{Agent, CallToken, ErrorKind, Outcome, Registry, Request};
use crate::program::{self, Program};
use crate::value::{FxBuild, PathSeg, json_size};

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
    /// Where console lines stream once the in-memory head is full (`run_code`'s spill).
    pub(crate) log_sink: Option<Box<dyn LogSink>>,
}

/// What a run produced, before the output cap.
#[derive(Debug)]
pub(crate) struct RunReport {
    /// The result (`None` for `undefined`) or the error.
    pub(crate) result: Result<Option<serde_json::Value>, ProgramError>,
    pub(crate) logs: CapturedLogs,
    pub(crate) calls: Vec<CallRecord>,
}

struct QueuedCall {
    id: u64,
    tool: usize,
    args: serde_json::Value,
}

/// What starting a call needs, shared by the host functions and the loop.
struct Dispatch {
    registry: Registry,
    agent: Agent,
    parent: Option<CallToken>,
    /// The signal of every nested call: cancelled when the program ends, and a child of the
    /// `run_code` call's signal, so cancelling the run cancels its calls.
    signal: CancellationToken,
}

impl Dispatch {
    fn start(&self, id: u64, name: Arc<str>, args: serde_json::Value) -> CallFuture {
        let mut request = Request::new(name, args, self.signal.clone())
            .nested(true)
            .agent(self.agent.clone());
        if let Some(parent) = self.parent {
            request = request.parent(parent);
        }
        Box::pin(
            self.registry
                .dispatch(request)
                .map(move |outcome| (id, outcome)),
        )
    }
}

/// State shared by the host functions (called from JS) and the loop. Never locked while
/// JavaScript runs or a tool is polled.
struct HostState {
    /// Calls waiting for room under `max_in_flight`.
    queued: VecDeque<QueuedCall>,
    /// Calls a host function started that did not finish at once, for the loop to poll.
    started: Vec<CallFuture>,
    /// Calls started and not finished.
    in_flight: usize,
    next_id: u64,
    /// Each call: the index of its tool in `tool_names`, its status, its milliseconds
    /// (`NOT_STARTED` until it starts).
    records: Vec<(usize, CallStatus, u64)>,
    /// When each call started (same index as `records`).
    started_at: Vec<Option<Instant>>,
    logs: LogCapture,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    active_timers: HashSet<u64>,
    tool_names: Vec<Arc<str>>,
    limits: Limits,
    /// The loop task's waker: a call started from JavaScript is polled with it once at
    /// once, so a tool that is ready at once answers without a trip through the loop.
    waker: Option<Waker>,
    dispatch: Dispatch,
}

impl HostState {
    /// Records how a call ended: from its outcome's own timing when it finished, from its
    /// start when it was cancelled unfinished.
    fn finish_record(&mut self, id: u64, status: CallStatus, took: Option<Duration>) {
        let i = (id - 1) as usize;
        let started = self.started_at.get_mut(i).and_then(Option::take);
        let ms = match (took, started) {
            (Some(d), _) => d.as_millis() as u64,
            (None, Some(t)) => t.elapsed().as_millis() as u64,
            (None, None) => 0,
        };
        if let Some(r) = self.records.get_mut(i) {
            r.1 = status;
            r.2 = ms;
        }
    }
}

type Shared = Arc<Mutex<HostState>>;

fn lock(state: &Shared) -> MutexGuard<'_, HostState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

type CallFuture = Pin<Box<dyn Future<Output = (u64, Outcome)> + Send>>;

fn status_of(outcome: &Outcome) -> CallStatus {
    match outcome.error_kind() {
        None => CallStatus::Ok,
        Some(ErrorKind::Cancelled) => CallStatus::Cancelled,
        Some(_) => CallStatus::Error,
    }
}

/// Runs a program to its end. Never panics on anything the program does.
pub(crate) async fn run(mut request: RunRequest) -> RunReport {
    let started = Instant::now();
    let fail = |e: ProgramError| RunReport {
        result: Err(e),
        logs: CapturedLogs::default(),
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
    let program = match program::prepare(&request.source) {
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
    let deadline = started + request.limits.timeout;
    let flags = Arc::new(RunFlags::new(deadline));
    let _watch = watchdog::watch(&flags, deadline);
    let runtime = match AsyncRuntime::new_with_alloc(LimitedAllocator::new(
        request.limits.memory.max(super::limits::MIN_MEMORY),
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
    // QuickJS frees most garbage by reference counting; the cycle collector runs when the
    // heap grows by this much. The default (256 KiB) makes it walk the whole new context
    // during start-up; 2 MiB lets start-up finish first.
    runtime.set_gc_threshold(GC_THRESHOLD).await;
    let handler_flags = flags.clone();
    runtime
        .set_interrupt_handler(Some(Box::new(move || handler_flags.should_interrupt())))
        .await;
    runtime
        .set_host_promise_rejection_tracker(Some(Box::new(
            |ctx: Ctx<'_>, promise: Value<'_>, reason: Value<'_>, handled: bool| {
                if let Ok(track) = ctx.globals().get::<_, Function<'_>>("__codemode_rejection") {
                    let _ = track.call::<_, ()>((promise, reason, handled));
                }
            },
        )))
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
    let calls_signal = request.signal.child_token();
    let state: Shared = Arc::new(Mutex::new(HostState {
        queued: VecDeque::new(),
        started: Vec::new(),
        in_flight: 0,
        next_id: 1,
        records: Vec::new(),
        started_at: Vec::new(),
        logs: LogCapture::new(
            request.limits.max_log_bytes,
            request.limits.max_console_bytes,
            request.log_sink.take(),
        ),
        timers: BinaryHeap::new(),
        active_timers: HashSet::new(),
        tool_names: request
            .tools
            .iter()
            .map(|(n, _)| Arc::from(n.as_str()))
            .collect(),
        limits: request.limits.clone(),
        waker: None,
        dispatch: Dispatch {
            registry: request.registry.clone(),
            agent: request.agent.clone(),
            parent: request.parent,
            signal: calls_signal.clone(),
        },
    }));

    let result = context
        .async_with(async |ctx| {
            let mut driver = Driver {
                request: &request,
                program: &program,
                flags: &flags,
                state: &state,
                inflight: FuturesUnordered::new(),
                calls_signal: calls_signal.clone(),
            };
            let result = driver.drive(&ctx).await;
            driver.finish().await;
            result
        })
        .await;
    reaper::reap(context, runtime);

    let mut st = lock(&state);
    let logs = std::mem::take(&mut st.logs);
    let calls = st
        .records
        .iter()
        .filter(|r| r.2 != NOT_STARTED)
        .map(|&(tool, status, ms)| CallRecord {
            tool: st
                .tool_names
                .get(tool)
                .map(|t| t.to_string())
                .unwrap_or_default(),
            status,
            ms,
        })
        .collect();
    drop(st);
    RunReport {
        result,
        logs: logs.finish(),
        calls,
    }
}

struct Driver<'a> {
    request: &'a RunRequest,
    program: &'a Program,
    flags: &'a Arc<RunFlags>,
    state: &'a Shared,
    inflight: FuturesUnordered<CallFuture>,
    /// Parent of every nested call's signal: cancelled when the program ends.
    calls_signal: CancellationToken,
}

/// Heap growth, in bytes, between two runs of the cycle collector.
const GC_THRESHOLD: usize = 2 << 20;

/// Marks a record that never started (it did not reach a tool).
const NOT_STARTED: u64 = u64::MAX;

/// The JavaScript functions of the prelude the loop calls.
struct Prelude<'js> {
    prims: Primordials<'js>,
    /// What the tool functions share with the loop (pending calls' resolving functions).
    bridge: BridgeSlot<'js>,
    fire_timer: Function<'js>,
    inspect: Function<'js>,
    /// `siteOf(error)` of 20_tools.js: the await a ToolCallError surfaced at (0: unknown).
    site_of: Function<'js>,
    report_unhandled: Function<'js>,
}

impl Driver<'_> {
    async fn drive<'js>(
        &mut self,
        ctx: &Ctx<'js>,
    ) -> Result<Option<serde_json::Value>, ProgramError> {
        let engine_error = |e: rquickjs::Error| {
            ProgramError::new("InternalError", format!("the sandbox could not start: {e}"))
        };
        let bridge = BridgeSlot::default();
        let _release = ReleaseBridge(bridge.clone());
        let host = make_host(
            ctx,
            self.state.clone(),
            self.flags.clone(),
            &bridge,
            &self.request.tools,
            &self.request.limits,
        )
        .map_err(engine_error)?;
        let internals = prelude::load(ctx, host).map_err(|e| {
            if let Some(stopped) = self.stopped() {
                return stopped;
            }
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
        let js = Prelude {
            prims: Primordials::capture(&prims_obj).map_err(engine_error)?,
            bridge: bridge.clone(),
            fire_timer: internals.get("fireTimer").map_err(engine_error)?,
            inspect: internals.get("inspect").map_err(engine_error)?,
            site_of: internals.get("siteOf").map_err(engine_error)?,
            report_unhandled: internals.get("reportUnhandled").map_err(engine_error)?,
        };
        let run_default: Function<'js> = internals.get("runDefault").map_err(engine_error)?;
        *bridge.borrow_mut() = Some(Bridge {
            prims: js.prims.clone(),
            promise: prims_obj.get("Promise").map_err(engine_error)?,
            resolve: prims_obj
                .get::<_, Object<'js>>("Promise")
                .and_then(|p| p.get("resolve"))
                .map_err(engine_error)?,
            failed: internals.get("failed").map_err(engine_error)?,
            tool_error: internals.get("toolError").map_err(engine_error)?,
            last_await: RefCell::default(),
            pending: RefCell::default(),
        });

        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.filename = Some(PROGRAM_FILE.to_owned());
        let evaluated: rquickjs::Result<rquickjs::Array<'js>> =
            ctx.eval_with_options(self.program.code.as_str(), options);
        let main: Function<'js> = match evaluated.and_then(|pair| {
            if let Some(b) = bridge.borrow().as_ref() {
                *b.last_await.borrow_mut() = Some(pair.get(1)?);
            }
            pair.get(0)
        }) {
            Ok(f) => f,
            Err(rquickjs::Error::Exception) => {
                let thrown = ctx.catch();
                return Err(self
                    .stopped()
                    .unwrap_or_else(|| self.program_error(&thrown, &js)));
            }
            Err(e) => return Err(engine_error(e)),
        };
        // Calls made while the program's first synchronous part runs are polled with this
        // task's waker too.
        self.refresh_waker().await;
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
                    .unwrap_or_else(|| self.program_error(&thrown, &js)));
            }
            Err(e) => return Err(engine_error(e)),
        };
        let result = self.event_loop(ctx, &js, &promise).await;
        if self.stopped().is_none() {
            let _ = js.report_unhandled.call::<_, ()>((promise,));
        }
        result
    }

    async fn event_loop<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        js: &Prelude<'js>,
        promise: &Promise<'js>,
    ) -> Result<Option<serde_json::Value>, ProgramError> {
        let deadline = tokio::time::Instant::from_std(self.flags.deadline());
        loop {
            // Calls started from JavaScript are polled once with this task's waker.
            self.refresh_waker().await;
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
                    return self.convert_result(ctx, &js.prims, value);
                }
                PromiseState::Rejected => {
                    let _ = promise.result::<Value<'js>>();
                    let thrown = ctx.catch();
                    return Err(self
                        .stopped()
                        .unwrap_or_else(|| self.program_error(&thrown, js)));
                }
                PromiseState::Pending => {}
            }
            self.start_queued();
            let (next_timer, queued) = {
                let st = lock(self.state);
                (next_timer(&st), st.queued.len())
            };
            if self.inflight.is_empty() && queued == 0 && next_timer.is_none() {
                return Err(self.deadlock(js));
            }
            let timer_at = next_timer.map(tokio::time::Instant::from_std);
            tokio::select! {
                biased;
                _ = self.request.signal.cancelled() => {
                    self.flags.cancel();
                }
                done = self.inflight.next(), if !self.inflight.is_empty() => {
                    if let Some((id, outcome)) = done {
                        self.deliver(ctx, js, id, outcome)?;
                        // Deliver every other call that is already done, before running JS.
                        while let Some(Some((id, outcome))) = self.inflight.next().now_or_never() {
                            self.deliver(ctx, js, id, outcome)?;
                        }
                    }
                }
                _ = sleep_until(timer_at), if timer_at.is_some() => {
                    self.fire_timers(ctx, js)?;
                }
                _ = tokio::time::sleep_until(deadline) => {
                    self.flags.time_out();
                }
            }
        }
    }

    /// Stores this task's waker for the host functions (see [`HostState::waker`]).
    async fn refresh_waker(&self) {
        let waker = std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
        let mut st = lock(self.state);
        if !st.waker.as_ref().is_some_and(|w| w.will_wake(&waker)) {
            st.waker = Some(waker);
        }
    }

    /// The await the program last reached, if it reached one.
    fn last_await_site(&self, js: &Prelude<'_>) -> Option<&program::AwaitSite> {
        let last = js.bridge.borrow().as_ref().map_or(0, Bridge::site);
        self.program.awaits.get(last.checked_sub(1)?)
    }

    /// The deadlock error, naming the await the program last reached.
    fn deadlock(&self, js: &Prelude<'_>) -> ProgramError {
        let made = lock(self.state).records.len();
        let calls = match made {
            0 => "no tool call was made".to_owned(),
            1 => "its 1 tool call had finished".to_owned(),
            n => format!("its {n} tool calls had finished"),
        };
        let mut error = match self.last_await_site(js) {
            Some(site) => {
                let mut e = ProgramError::new(
                    "DeadlockError",
                    format!(
                        "the program waits for a promise that nothing can settle (the last await it reached is `await {}`): no tool call is in flight, no timer is pending, and {calls}",
                        site.text
                    ),
                );
                e.line = Some(site.line);
                e.column = Some(site.column);
                e
            }
            None => ProgramError::new(
                "DeadlockError",
                format!(
                    "the program's result is a promise that nothing can settle: no tool call is in flight, no timer is pending, and {calls}"
                ),
            ),
        };
        error.message.push_str(
            " (a promise that is never resolved, or a call to something that is not a tool?)",
        );
        error
    }

    /// The error for a run stopped from outside the program, if it was.
    fn stopped(&self) -> Option<ProgramError> {
        let in_flight = lock(self.state).in_flight;
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
            StopReason::ConsoleLimit => ProgramError::new(
                "LimitError",
                format!(
                    "the program's console output passed its limit of {} bytes; the output up to there is kept",
                    self.request.limits.max_console_bytes
                ),
            ),
        })
    }

    fn program_error<'js>(&self, thrown: &Value<'js>, js: &Prelude<'js>) -> ProgramError {
        let shown = js.inspect.call::<_, String>((thrown.clone(),)).ok();
        let mut error = program_error(self.program, thrown, shown);
        // A ToolCallError has no frames (the call ran on the host): it carries the await
        // the program had last reached when the call failed, in straight-line code the
        // call's own `await` (also when the error is caught and thrown again later).
        if error.line.is_none()
            && error.name == "ToolCallError"
            && let Ok(n) = js.site_of.call::<_, usize>((thrown.clone(),))
            && let Some(site) = n.checked_sub(1).and_then(|i| self.program.awaits.get(i))
        {
            error.line = Some(site.line);
            error.column = Some(site.column);
        }
        // Reading the thrown value runs its getters: one that loops until the deadline is
        // the run's timeout, not an error with an empty message.
        self.stopped().unwrap_or(error)
    }

    fn convert_result<'js>(
        &self,
        ctx: &Ctx<'js>,
        prims: &Primordials<'js>,
        value: Value<'js>,
    ) -> Result<Option<serde_json::Value>, ProgramError> {
        // The result sits one level down in run_code's canonical value, which must stay
        // within MAX_DEPTH itself.
        let mut conv = ToJson::new(ctx, prims, usize::MAX, "result")
            .watching(self.flags)
            .max_depth(crate::value::MAX_DEPTH - 1);
        match conv.convert_root(value, &PathSeg::Root("result")) {
            Ok(v) => Ok(v),
            Err(ConvertError::Invalid(message)) => Err(ProgramError::new(
                "ResultError",
                format!("the program's result is not JSON: {message}"),
            )),
            Err(ConvertError::Engine(_) | ConvertError::Stopped) => {
                let _ = ctx.catch();
                Err(self.stopped().unwrap_or_else(|| {
                    ProgramError::new("ResultError", "the program's result could not be read")
                }))
            }
        }
    }

    /// Moves calls the host functions started into the set this loop polls, and starts
    /// queued calls while there is room under `max_in_flight`.
    fn start_queued(&mut self) {
        let mut st = lock(self.state);
        for fut in st.started.drain(..) {
            self.inflight.push(fut);
        }
        while st.in_flight < st.limits.max_in_flight {
            let Some(call) = st.queued.pop_front() else {
                break;
            };
            st.in_flight += 1;
            if let Some(t) = st.started_at.get_mut((call.id - 1) as usize) {
                *t = Some(Instant::now());
            }
            let name = st.tool_names[call.tool].clone();
            let fut = st.dispatch.start(call.id, name, call.args);
            self.inflight.push(fut);
        }
    }

    fn deliver<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        js: &Prelude<'js>,
        id: u64,
        outcome: Outcome,
    ) -> Result<(), ProgramError> {
        let max_output = {
            let mut st = lock(self.state);
            st.in_flight = st.in_flight.saturating_sub(1);
            st.limits.max_tool_output_bytes
        };
        let converted = match settle_value(ctx, &js.prims, &outcome, max_output) {
            // A value the engine cannot hold (a BigInt past its size limit): the call
            // fails, so the program's promise settles rather than waiting forever.
            Err(e) if self.stopped().is_none() => {
                let detail = if matches!(e, rquickjs::Error::Exception) {
                    describe_thrown(&ctx.catch())
                } else {
                    e.to_string()
                };
                Ok(Err(format!(
                    "the result of {} could not become a JavaScript value: {detail}",
                    outcome.tool()
                )))
            }
            other => other,
        };
        let status = match (&converted, outcome.result()) {
            (Ok(Err(_)), Ok(_)) => CallStatus::Error,
            _ => status_of(&outcome),
        };
        lock(self.state).finish_record(id, status, Some(outcome.elapsed()));
        let slot = js.bridge.borrow();
        let Some(bridge) = slot.as_ref() else {
            return Ok(());
        };
        // Out of the map before any JavaScript runs (resolving can run a `then` getter,
        // which can start calls).
        let waiting = bridge.pending.borrow_mut().remove(&id);
        let Some(waiting) = waiting else {
            return Ok(());
        };
        let settled = match converted {
            Ok(Ok(value)) => waiting.resolve.call::<_, ()>((value,)),
            Ok(Err(message)) => bridge
                .tool_error
                .call::<_, Value<'js>>((&*waiting.name, message, bridge.site()))
                .and_then(|error| waiting.reject.call::<_, ()>((error,))),
            Err(e) => Err(e),
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

    fn fire_timers<'js>(&mut self, ctx: &Ctx<'js>, js: &Prelude<'js>) -> Result<(), ProgramError> {
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
            if let Err(e) = js.fire_timer.call::<_, ()>((id as f64,)) {
                if let Some(err) = self.stopped() {
                    return Err(err);
                }
                let mut error = if matches!(e, rquickjs::Error::Exception) {
                    self.program_error(&ctx.catch(), js)
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
        self.calls_signal.cancel();
        {
            let mut st = lock(self.state);
            for fut in st.started.drain(..) {
                self.inflight.push(fut);
            }
            st.queued.clear();
        }
        if self.inflight.is_empty() {
            return;
        }
        let grace = self.request.limits.cancel_grace;
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            tokio::select! {
                done = self.inflight.next() => match done {
                    Some((id, outcome)) => lock(self.state).finish_record(id, CallStatus::Cancelled, Some(outcome.elapsed())),
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        let mut st = lock(self.state);
        let running: Vec<u64> = st
            .started_at
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_some())
            .map(|(i, _)| i as u64 + 1)
            .collect();
        for id in running {
            st.finish_record(id, CallStatus::Cancelled, None);
        }
        drop(st);
        self.inflight.clear();
    }
}

/// The JS value a finished call settles with: `Ok(value)`, or `Err(message)` for a
/// `ToolCallError`.
fn settle_value<'js>(
    ctx: &Ctx<'js>,
    prims: &Primordials<'js>,
    outcome: &Outcome,
    max_output: usize,
) -> rquickjs::Result<Result<Value<'js>, String>> {
    match outcome.result() {
        Ok(value) => {
            let size = json_size(value);
            if size > max_output {
                return Ok(Err(format!(
                    "the result of {} is {size} bytes, over the limit of {max_output} bytes for one tool result",
                    outcome.tool()
                )));
            }
            json_to_js(ctx, prims, value).map(Ok)
        }
        Err(error) => Ok(Err(error.message().to_owned())),
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
        && !message.starts_with(&format!("{tool}: "))
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
    flags: Arc<RunFlags>,
    bridge: &BridgeSlot<'js>,
    tools: &[(String, String)],
    limits: &Limits,
) -> rquickjs::Result<Object<'js>> {
    let host = Object::new(ctx.clone())?;

    let functions = tools
        .iter()
        .enumerate()
        .map(|(index, (_, alias))| {
            let (state, flags, bridge) = (state.clone(), flags.clone(), bridge.clone());
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, args: Opt<Value<'js>>| -> rquickjs::Result<Value<'js>> {
                    tool_function(&ctx, &state, &flags, &bridge, index, args.0)
                },
            )?
            .with_name(alias)?
            .with_length(1)
        })
        .collect::<rquickjs::Result<Vec<_>>>()?;
    host.set("toolFunctions", functions)?;

    let unknown_state = state.clone();
    host.set(
        "unknownTool",
        Function::new(ctx.clone(), move |name: String| -> String {
            let st = lock(&unknown_state);
            let names: Vec<String> = st.tool_names.iter().map(|t| t.to_string()).collect();
            unknown_tool_message(&name, &names)
        })?,
    )?;

    host.set(
        "loadInspect",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, primordials: Object<'js>| {
            prelude::load_inspect(&ctx, primordials)
        })?,
    )?;

    let log_state = state.clone();
    let log_flags = flags;
    host.set(
        "log",
        Function::new(
            ctx.clone(),
            move |level: String, text: rquickjs::String<'js>| {
                // A run that is stopping keeps no more lines, and each call returns at
                // once: the engine checks for an interrupt only every few thousand
                // operations, and a flood of long lines would otherwise push that check
                // well past the deadline.
                if log_flags.should_interrupt() {
                    return;
                }
                let text = text.to_string().unwrap_or_else(|_| {
                    "[console text with a lone surrogate could not be shown]".into()
                });
                let mut st = lock(&log_state);
                st.logs.push(LogLevel::parse(&level), text);
                if st.logs.over_limit {
                    // The interrupt handler ends the run at its next check.
                    log_flags.console_limit();
                }
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
    host.set("maxArrayLength", (limits.memory / 8).max(1 << 16) as f64)?;
    Ok(host)
}

/// What the tool functions need from the prelude: set once the prelude has run, and
/// emptied when the program ends, since the engine must not be freed while Rust holds its
/// values.
struct Bridge<'js> {
    prims: Primordials<'js>,
    /// `Promise` and `Promise.resolve` as they were before the program ran.
    promise: Object<'js>,
    resolve: Function<'js>,
    /// `failed(name, error, site)` and `toolError(name, message, site)` of 20_tools.js
    /// (`site`: see [`Bridge::site`]).
    failed: Function<'js>,
    tool_error: Function<'js>,
    /// The program's `() => lastAwait` (see the await mark in `source.rs`), once
    /// evaluated.
    last_await: RefCell<Option<Function<'js>>>,
    /// The promises of calls in flight or queued, by call id.
    pending: RefCell<HashMap<u64, Waiting<'js>, FxBuild>>,
}

/// The resolving functions of the promise a call in flight returned.
struct Waiting<'js> {
    resolve: Function<'js>,
    reject: Function<'js>,
    name: Arc<str>,
}

impl Bridge<'_> {
    /// The number of the await the program last reached (0: none yet).
    fn site(&self) -> usize {
        self.last_await
            .borrow()
            .as_ref()
            .and_then(|f| f.call(()).ok())
            .unwrap_or(0)
    }
}

type BridgeSlot<'js> = Rc<RefCell<Option<Bridge<'js>>>>;

/// Empties the bridge when the run's driver is done (also on a panic).
struct ReleaseBridge<'js>(BridgeSlot<'js>);

impl Drop for ReleaseBridge<'_> {
    fn drop(&mut self) {
        if let Ok(mut bridge) = self.0.try_borrow_mut() {
            bridge.take();
        }
    }
}

fn limit_message(max_calls: usize) -> String {
    format!("this run reached its limit of {max_calls} tool calls; no more calls can start")
}

/// The limits a call starts under, and the calls made before it.
struct Room {
    max_calls: usize,
    max_bytes: usize,
    made: usize,
}

/// How a call started from a tool function went.
enum Started<'js> {
    /// It finished at once: its result.
    Done(Value<'js>),
    /// It is in flight (or queued) under this id.
    Pending(u64),
    /// It failed before or while starting.
    Failed(String),
}

/// `tools.<name>(args)`: a promise of the call's result, rejected with a `ToolCallError`
/// when the call fails (also when its arguments cannot be read).
fn tool_function<'js>(
    ctx: &Ctx<'js>,
    state: &Shared,
    flags: &RunFlags,
    bridge: &BridgeSlot<'js>,
    tool: usize,
    args: Option<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let slot = bridge.borrow();
    let Some(b) = slot.as_ref() else {
        return Err(Exception::throw_message(ctx, "the run has ended"));
    };
    let (name, room) = {
        let st = lock(state);
        let Some(name) = st.tool_names.get(tool).cloned() else {
            drop(st);
            return Err(Exception::throw_message(ctx, "no such tool"));
        };
        let room = Room {
            max_calls: st.limits.max_tool_calls,
            max_bytes: st.limits.max_tool_input_bytes,
            made: st.records.len(),
        };
        (name, room)
    };
    let args = args.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
    match host_call(ctx, state, flags, tool, &name, room, args, &b.prims) {
        Ok(Started::Done(value)) => b
            .resolve
            .call((rquickjs::function::This(b.promise.clone()), value)),
        Ok(Started::Pending(id)) => {
            let (promise, resolve, reject) = Promise::new(ctx)?;
            b.pending.borrow_mut().insert(
                id,
                Waiting {
                    resolve,
                    reject,
                    name,
                },
            );
            Ok(promise.into_value())
        }
        Ok(Started::Failed(message)) => b.failed.call((&*name, message, b.site())),
        Err(rquickjs::Error::Exception) => {
            let thrown = ctx.catch();
            if thrown.is_uncatchable_error() {
                // An interrupt or out-of-memory ends the run: not the call's error.
                return Err(ctx.throw(thrown));
            }
            b.failed.call((&*name, thrown, b.site()))
        }
        Err(e) => b.failed.call((&*name, e.to_string(), b.site())),
    }
}

/// Converts the arguments, starts the call and polls it once.
#[expect(
    clippy::too_many_arguments,
    reason = "one call's parts, read under one lock by the caller"
)]
fn host_call<'js>(
    ctx: &Ctx<'js>,
    state: &Shared,
    flags: &RunFlags,
    tool: usize,
    name: &Arc<str>,
    room: Room,
    args: Value<'js>,
    prims: &Primordials<'js>,
) -> rquickjs::Result<Started<'js>> {
    let Room {
        max_calls,
        max_bytes,
        made,
    } = room;
    if made >= max_calls {
        return Ok(Started::Failed(limit_message(max_calls)));
    }
    // Convert with the lock released: getters and toJSON run JavaScript.
    let mut conv = ToJson::new(ctx, prims, max_bytes, "tool input").watching(flags);
    let json = match conv.convert_root(args, &PathSeg::Root("args")) {
        Ok(Some(v)) => v,
        Ok(None) => serde_json::Value::Object(Default::default()),
        Err(ConvertError::Invalid(message)) => {
            // A call like any other in `calls` and against `max_tool_calls`, as one whose
            // arguments break the tool's schema is.
            let mut st = lock(state);
            st.next_id += 1;
            st.records.push((tool, CallStatus::Error, 0));
            st.started_at.push(None);
            drop(st);
            return Ok(Started::Failed(format!(
                "invalid arguments for {name}: {message}"
            )));
        }
        Err(ConvertError::Engine(e)) => return Err(e),
        Err(ConvertError::Stopped) => {
            return Ok(Started::Failed("the run is stopping".to_owned()));
        }
    };
    drop(conv);
    let (id, mut call, waker, max_output) = {
        let mut st = lock(state);
        // Again: a getter or `toJSON` may have started calls while the arguments converted.
        if st.records.len() >= max_calls {
            return Ok(Started::Failed(limit_message(max_calls)));
        }
        let id = st.next_id;
        st.next_id += 1;
        st.records.push((tool, CallStatus::Cancelled, NOT_STARTED));
        st.started_at.push(None);
        if st.in_flight >= st.limits.max_in_flight {
            st.queued.push_back(QueuedCall {
                id,
                tool,
                args: json,
            });
            return Ok(Started::Pending(id));
        }
        st.in_flight += 1;
        let call = st.dispatch.start(id, name.clone(), json);
        (id, call, st.waker.clone(), st.limits.max_tool_output_bytes)
    };
    // Poll once now: a tool that is ready at once answers without a trip through the loop.
    if let Some(waker) = waker
        && let Poll::Ready((_, outcome)) = call.as_mut().poll(&mut TaskContext::from_waker(&waker))
    {
        {
            let mut st = lock(state);
            st.in_flight = st.in_flight.saturating_sub(1);
            st.finish_record(id, status_of(&outcome), Some(outcome.elapsed()));
        }
        return Ok(match settle_value(ctx, prims, &outcome, max_output)? {
            Ok(value) => Started::Done(value),
            Err(message) => Started::Failed(message),
        });
    }
    {
        let mut st = lock(state);
        if let Some(t) = st.started_at.get_mut((id - 1) as usize) {
            *t = Some(Instant::now());
        }
        st.started.push(call);
    }
    Ok(Started::Pending(id))
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
