//! One run, top to bottom: the program text is prepared, an engine starts, the prelude
//! loads, the program runs, and the event loop drives its microtasks, tool calls and
//! timers from one task until the program's promise settles; then the calls still running
//! are cancelled and the engine goes to the reaper.
//!
//! Everything runs on the caller's task: no `tokio::spawn` per call (a hop to another
//! thread per call costs tens of microseconds; polled here, a tool that is ready at once
//! answers in well under one).
//!
//! ```text
//!   ┌──────────────── run (one task) ─────────────────┐
//!   │ JS microtasks ──> tools.x(args) ──> host_call    │
//!   │        ▲              (args → JSON, queued)      │
//!   │        │                         │               │
//!   │   settle(id) <── outcome ── dispatch future      │
//!   │        │             (polled here, in order of   │
//!   │        │              completion, ≤ max_in_flight)│
//!   │   fireTimer(id) <── timer heap                   │
//!   └──────────────────────────────────────────────────┘
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use rquickjs::context::EvalOptions;
use rquickjs::object::Property;
use rquickjs::promise::PromiseState;
use rquickjs::{AsyncRuntime, Ctx, Function, Object, Promise, Value};
use tokio_util::sync::CancellationToken;

use super::bridge::{
    Bridge, BridgeSlot, ReleaseBridge, awaits_approval, journal_keeps, settle_value,
};
use super::calls::{CallId, Calls, Dispatch, status_of};
use super::convert::{ConvertError, Primordials, ToJson, describe_thrown};
use super::engine::{self, Engine};
use super::errors::{self, PROGRAM_FILE};
use super::flags::{RunFlags, StopReason};
use super::host::{Host, Internals};
use super::inflight::{InFlight, Woken};
use super::journal::{Journal, Recorder, Turn};
use super::logs::{CapturedLogs, LogCapture, LogLevel, LogSink};
use super::pool::EnginePool;
use super::reaper::Teardown;
use super::report::{CallRecord, CallStatus, ProgramError, ProgramErrorKind};
use super::shared::{HostState, Shared, lock};
use super::stack::StackFloor;
use super::timers::{self, Timers};
use super::{Limits, guards, prelude, reaper, watchdog};
use crate::dispatch::registry::AskMode;
use crate::dispatch::{Agent, CallToken, ErrorKind, Outcome, ProgressSink, Registry, ToolError};
use crate::program::{self, AwaitSite, Program};
use crate::value::PathSeg;

/// Everything one run needs.
pub(crate) struct RunRequest {
    pub(crate) source: String,
    pub(crate) limits: Limits,
    pub(crate) registry: Registry,
    /// The tools the program sees: (name, alias).
    pub(crate) tools: Vec<(String, String)>,
    pub(crate) parent: Option<CallToken>,
    /// Where the calls' progress reports go besides the registry's observers.
    pub(crate) progress: Option<ProgressSink>,
    pub(crate) agent: Agent,
    pub(crate) signal: CancellationToken,
    /// Where console lines stream once the in-memory head is full (`run_code`'s spill).
    pub(crate) log_sink: Option<Box<dyn LogSink>>,
    /// Where every console line also goes as it is written (a background run's output).
    pub(crate) log_tap: Option<Arc<crate::dispatch::jobs::OutputBuffer>>,
    /// The journal of a run that may pause (a new one, or one to replay first).
    pub(crate) journal: Option<Recorder>,
}

/// What a run produced, before the output cap.
#[derive(Debug)]
pub(crate) struct RunReport {
    /// The result (`None` for `undefined`) or the error.
    pub(crate) result: Result<Option<serde_json::Value>, ProgramError>,
    pub(crate) logs: CapturedLogs,
    pub(crate) calls: Vec<CallRecord>,
    /// The run paused: calls wait for approval (`result` is then `Ok(None)`).
    pub(crate) paused: Option<Paused>,
    /// The resumed program did something else than its journal holds: the first
    /// difference (nothing was executed).
    pub(crate) diverged: Option<String>,
    /// The most bytes the engine held (0 when no engine started).
    pub(crate) memory_peak: usize,
}

impl RunReport {
    /// What the run used, having taken `elapsed`.
    pub(crate) fn usage(&self, elapsed: Duration) -> crate::dispatch::RunUsage {
        crate::dispatch::RunUsage {
            elapsed,
            memory_peak: self.memory_peak as u64,
            tool_calls: self.calls.len() as u64,
            console_bytes: self.logs.total_bytes,
        }
    }
}

/// What a paused run leaves: its journal and the calls that wait for approval.
#[derive(Debug)]
pub(crate) struct Paused {
    pub(crate) journal: Journal,
    pub(crate) awaiting: Vec<Awaiting>,
}

/// A call that waits for approval.
#[derive(Debug)]
pub(crate) struct Awaiting {
    /// Its number in the run (1 for the program's first call).
    pub(crate) call: u64,
    pub(crate) tool: String,
    pub(crate) arguments: serde_json::Value,
    /// What the policy asked.
    pub(crate) prompt: String,
}

/// Runs a program to its end, on a warm engine from `pool` when it has one for this run's
/// tools and memory limit, else on one started here. Never panics on anything the program
/// does.
pub(crate) async fn run(mut request: RunRequest, pool: Option<&EnginePool>) -> RunReport {
    let started = Instant::now();
    let fail = |e: ProgramError| RunReport {
        result: Err(e),
        logs: CapturedLogs::default(),
        calls: Vec::new(),
        paused: None,
        diverged: None,
        memory_peak: 0,
    };
    if request.source.len() > request.limits.max_source_bytes {
        return fail(ProgramError::limit(format!(
            "the program is {} bytes; the limit is {} bytes",
            request.source.len(),
            request.limits.max_source_bytes
        )));
    }
    let program = match program::prepare(&request.source) {
        Ok(p) => Arc::new(p),
        Err(e) => return fail(errors::from_source(e)),
    };
    let stack = match super::stack::engine_stack(request.limits.stack) {
        Ok(stack) => stack,
        Err(left) => {
            return fail(ProgramError::limit(format!(
                "the thread running the sandbox has {} KiB of stack left, too little for an engine: run it on a thread with a larger stack (see `Limits::stack`)",
                left >> 10
            )));
        }
    };
    let key = EngineKey {
        tools: std::mem::take(&mut request.tools),
        memory: request.limits.memory,
    };
    let parked = match pool.and_then(|p| p.take(&key)) {
        Some(parked) => parked,
        None => match Parked::build(key, stack, Teardown::InPlaceWhenSmall).await {
            Ok(parked) => parked,
            Err((e, reason)) => {
                return fail(match reason {
                    Some(reason) => errors::stopped(reason, &request.limits, 0),
                    None => e,
                });
            }
        },
    };
    let deadline = started + request.limits.timeout;
    parked.adopt(request, program, deadline, stack).await
}

/// What makes two engines interchangeable before their programs run: the prelude binds the
/// tool functions (name and alias, in order) and reads the memory limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct EngineKey {
    pub(super) tools: Vec<(String, String)>,
    pub(super) memory: usize,
}

/// How long an engine built ahead may take to load its prelude.
const BUILD_BOUND: Duration = Duration::from_secs(10);

/// An engine with its prelude loaded, waiting for its one program: the future that will run
/// it has run up to the point where it waits for the program (see `pool.rs`).
pub(super) struct Parked {
    pub(super) key: EngineKey,
    /// A handle on the engine's runtime, dropped as the engine is (the last handle dropped
    /// frees the runtime).
    runtime: Option<AsyncRuntime>,
    /// Where the engine is freed.
    teardown: Teardown,
    flags: Arc<RunFlags>,
    state: Shared,
    /// Hands the program over; `None` once handed (or when the run future ended early).
    start: Option<oneshot::Sender<Start>>,
    run: Pin<Box<dyn Future<Output = Ran> + Send>>,
}

/// What a parked engine's run needs when its program arrives.
struct Start {
    request: RunRequest,
    program: Arc<Program>,
    woken: Arc<Woken>,
    calls_signal: CancellationToken,
    /// The run's engine stack, in bytes (its limit was set to this on this thread).
    stack: usize,
}

/// How a parked engine's future ended.
enum Ran {
    PreludeFailed(ProgramError),
    /// Dropped before a program came (a pool let it go).
    Abandoned,
    Done(Result<Option<serde_json::Value>, ProgramError>),
}

impl Parked {
    /// Starts an engine for `key` with `stack` bytes of engine stack and loads the prelude;
    /// `teardown` says where it is freed.
    ///
    /// # Errors
    /// Why the engine or its prelude could not start, and the stop reason if a limit
    /// stopped it.
    pub(super) async fn build(
        key: EngineKey,
        stack: usize,
        teardown: Teardown,
    ) -> Result<Parked, (ProgramError, Option<StopReason>)> {
        let flags = Arc::new(RunFlags::new(Instant::now() + BUILD_BOUND));
        let engine = Engine::start(key.memory, stack, &flags)
            .await
            .map_err(|e| (e, flags.reason()))?;
        let state = placeholder_state(&key);
        let (start, waiting) = oneshot::channel();
        let runtime = Some(engine.runtime().clone());
        let run = {
            let (flags, state, key) = (flags.clone(), state.clone(), key.clone());
            async move {
                let run_flags = flags.clone();
                let ran = engine
                    .context()
                    .async_with(async move |ctx| {
                        park(&ctx, &run_flags, &state, &key, waiting).await
                    })
                    .await;
                // Nothing runs in the engine any more: its memory works again (see
                // `RunFlags::refuses_memory`) while it is freed.
                flags.end();
                engine.reap(flags.memory_peak(), teardown);
                ran
            }
        };
        let mut run: Pin<Box<dyn Future<Output = Ran> + Send>> = Box::pin(run);
        // The first poll loads the prelude and stops where the future waits for its program.
        let waker = futures::task::noop_waker();
        match run.as_mut().poll(&mut TaskContext::from_waker(&waker)) {
            Poll::Pending => Ok(Parked {
                key,
                runtime,
                teardown,
                flags,
                state,
                start: Some(start),
                run,
            }),
            Poll::Ready(Ran::PreludeFailed(e)) => Err((e, flags.reason())),
            Poll::Ready(_) => Err((
                ProgramError::internal("the sandbox could not start"),
                flags.reason(),
            )),
        }
    }

    /// Runs `program` on this engine: arms its flags with the run's deadline and signal,
    /// installs the run's state, and drives the run (which sets its stack floor on this
    /// thread from `stack` bytes of engine stack).
    async fn adopt(
        mut self,
        mut request: RunRequest,
        program: Arc<Program>,
        deadline: Instant,
        stack: usize,
    ) -> RunReport {
        self.flags.arm(deadline, request.signal.clone());
        // The process groups this run's calls start are its own: a run given up on has
        // them killed, though its thread goes on.
        let run = crate::child::new_run();
        let overdue = super::overdue::take_armed().map(|(on, taken_by)| {
            taken_by.store(run, std::sync::atomic::Ordering::SeqCst);
            let on: super::overdue::OnOverdue = Arc::new(move |timeout| {
                crate::child::kill_run_process_groups(run);
                on(timeout);
            });
            (on, request.limits.timeout)
        });
        let _watch = watchdog::watch(&self.flags, deadline, overdue);
        let calls_signal = request.signal.child_token();
        let woken = Arc::new(Woken::default());
        *lock(&self.state) = host_state(
            &self.key,
            &request.limits,
            Dispatch {
                registry: request.registry.clone(),
                agent: request.agent.clone(),
                parent: request.parent,
                progress: request.progress.clone(),
                signal: Arc::new(calls_signal.clone()),
            },
            request.log_sink.take(),
            woken.clone(),
        );
        {
            let mut st = lock(&self.state);
            st.program = Some(program.clone());
            st.logs.tap = request.log_tap.take();
            if let Some(journal) = request.journal.take() {
                if journal.can_pause() {
                    st.calls.ask = AskMode::Pause;
                }
                st.journal = Some(journal);
            }
        }
        let limits = request.limits.clone();
        let handed = self.start.take().is_some_and(|start| {
            start
                .send(Start {
                    request,
                    program,
                    woken,
                    calls_signal,
                    stack,
                })
                .is_ok()
        });
        let ran = if handed {
            crate::child::OwnedBy::new(run, &mut self.run).await
        } else {
            Ran::Abandoned
        };
        let result = match ran {
            Ran::Done(result) => result,
            Ran::PreludeFailed(e) => Err(e),
            Ran::Abandoned => Err(ProgramError::internal(
                "the sandbox stopped before the program ran",
            )),
        };
        let result = result.map_err(|e| match self.flags.reason() {
            Some(reason) if e.kind == ProgramErrorKind::Internal => {
                errors::stopped(reason, &limits, 0)
            }
            _ => e,
        });
        if let Some(runtime) = self.runtime.take() {
            reaper::reap_engine(runtime, self.flags.memory_peak(), self.teardown);
        }
        let mut st = lock(&self.state);
        let logs = std::mem::take(&mut st.logs);
        let mut calls = st.calls.records();
        let journal = st.journal.take();
        drop(st);
        let diverged = journal
            .as_ref()
            .and_then(|j| j.divergence().map(str::to_owned));
        let paused = match journal {
            Some(journal) if diverged.is_none() && journal.paused() && result.is_ok() => {
                let (journal, awaiting) = journal.into_paused();
                Some(Paused {
                    journal,
                    awaiting: awaiting
                        .into_iter()
                        .map(|(call, tool, prompt, arguments)| Awaiting {
                            call,
                            tool,
                            arguments,
                            prompt,
                        })
                        .collect(),
                })
            }
            _ => {
                // The program ended without waiting for the calls that wait for approval:
                // they never ran.
                for call in &mut calls {
                    if call.status == CallStatus::Paused {
                        call.status = CallStatus::Cancelled;
                    }
                }
                None
            }
        };
        RunReport {
            result,
            logs: logs.finish(),
            calls,
            paused,
            diverged,
            memory_peak: self.flags.memory_peak(),
        }
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        // Never adopted: let the future end where it waits (inside the engine's lock, which
        // is where its JavaScript values must be freed), then the engine goes to the reaper.
        if let Some(start) = self.start.take() {
            drop(start);
            let run = std::mem::replace(&mut self.run, Box::pin(async { Ran::Abandoned }));
            let _ = futures::executor::block_on(run);
        }
        if let Some(runtime) = self.runtime.take() {
            reaper::reap_engine(runtime, self.flags.memory_peak(), self.teardown);
        }
    }
}

/// A run's state outside the engine, for the tools of `key` under `limits`.
fn host_state(
    key: &EngineKey,
    limits: &Limits,
    dispatch: Dispatch,
    log_sink: Option<Box<dyn LogSink>>,
    woken: Arc<Woken>,
) -> HostState {
    HostState {
        calls: Calls::new(
            key.tools
                .iter()
                .map(|(n, _)| Arc::from(n.as_str()))
                .collect(),
            limits.max_in_flight,
            dispatch,
        ),
        logs: LogCapture::new(limits.max_log_bytes, limits.max_console_bytes, log_sink),
        timers: Timers::default(),
        limits: limits.clone(),
        woken,
        spare_wake: None,
        catalog: None,
        journal: None,
        program: None,
    }
}

/// The state a parked engine's host functions hold until a run installs its own: no
/// registry to call, nothing kept of the console.
fn placeholder_state(key: &EngineKey) -> Shared {
    static NOBODY: std::sync::OnceLock<(Registry, Agent)> = std::sync::OnceLock::new();
    let (registry, agent) = NOBODY.get_or_init(|| (Registry::new(), Agent::new()));
    let limits = Limits::default().max_log_bytes(0);
    Arc::new(Mutex::new(host_state(
        key,
        &limits,
        Dispatch {
            registry: registry.clone(),
            agent: agent.clone(),
            parent: None,
            progress: None,
            signal: Arc::new(CancellationToken::new()),
        },
        None,
        Arc::new(Woken::default()),
    )))
}

/// The body of a parked engine's future: loads the prelude, waits for the program, runs it.
async fn park<'js>(
    ctx: &Ctx<'js>,
    flags: &Arc<RunFlags>,
    state: &Shared,
    key: &EngineKey,
    waiting: oneshot::Receiver<Start>,
) -> Ran {
    let bridge = BridgeSlot::default();
    let _release = ReleaseBridge(bridge.clone());
    let floor = StackFloor::default();
    let js = match load_prelude(ctx, state, flags, bridge, &floor, key) {
        Ok(js) => js,
        Err(e) => return Ran::PreludeFailed(e),
    };
    let Ok(Start {
        request,
        program,
        woken,
        calls_signal,
        stack,
    }) = waiting.await
    else {
        return Ran::Abandoned;
    };
    floor.start(ctx, stack);
    let mut driver = Driver {
        request: &request,
        program: &program,
        flags,
        state,
        inflight: InFlight::new(woken),
        calls_signal,
    };
    let result = driver.drive(ctx, &js).await;
    driver.finish().await;
    Ran::Done(result)
}

/// Runs the prelude with a host object over `state` and fills the bridge.
fn load_prelude<'js>(
    ctx: &Ctx<'js>,
    state: &Shared,
    flags: &Arc<RunFlags>,
    bridge: BridgeSlot<'js>,
    floor: &StackFloor,
    key: &EngineKey,
) -> Result<Js<'js>, ProgramError> {
    let host = Host::new(ctx, state, flags, &bridge, floor, &key.tools, key.memory)
        .and_then(|host| host.into_object(ctx))
        .map_err(engine_error)?;
    let internals = prelude::load(ctx, host).map_err(|e| {
        let detail = if matches!(e, rquickjs::Error::Exception) {
            describe_thrown(&ctx.catch())
        } else {
            e.to_string()
        };
        ProgramError::internal(format!("the sandbox prelude failed: {detail}"))
    })?;
    let internals = Internals::read(&internals).map_err(engine_error)?;
    guards::install(
        ctx,
        &internals.check_array_call,
        guards::max_array_length(key.memory),
    )
    .map_err(engine_error)?;
    let prims =
        Primordials::capture(&internals.primordials, floor.clone()).map_err(engine_error)?;
    *bridge.borrow_mut() = Some(Bridge::new(prims.clone(), &internals).map_err(engine_error)?);
    Ok(Js {
        internals,
        prims,
        bridge,
    })
}

/// The loop's side of one run.
struct Driver<'a> {
    request: &'a RunRequest,
    program: &'a Program,
    flags: &'a Arc<RunFlags>,
    state: &'a Shared,
    /// The calls in flight, polled here.
    inflight: InFlight,
    /// Parent of every nested call's signal: cancelled when the program ends.
    calls_signal: CancellationToken,
}

/// The prelude once it has run, as the loop uses it.
struct Js<'js> {
    internals: Internals<'js>,
    prims: Primordials<'js>,
    /// What the tool functions share with the loop (pending calls' resolving functions).
    bridge: BridgeSlot<'js>,
}

/// An engine failure while the sandbox starts: not the program's doing.
fn engine_error(e: rquickjs::Error) -> ProgramError {
    ProgramError::internal(format!("the sandbox could not start: {e}"))
}

impl Driver<'_> {
    /// Runs the program and its event loop; the program's result.
    async fn drive<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        js: &Js<'js>,
    ) -> Result<Option<serde_json::Value>, ProgramError> {
        if let Some(stopped) = self.stopped() {
            return Err(stopped);
        }
        let journaled = lock(self.state).journal.is_some();
        js.internals
            .start_clock
            .call::<_, ()>((journaled,))
            .map_err(engine_error)?;
        let tracking = engine::track_rejections(ctx).map_err(engine_error)?;
        let (main, program_state) = self.evaluate(ctx, js)?;
        let started: rquickjs::Result<Promise<'js>> = if self.program.call_default {
            Function::new(ctx.clone(), super::prelude::is_class_text).and_then(|is_class| {
                js.internals
                    .run_default
                    .call((main, program_state.clone(), is_class))
            })
        } else {
            main.call((program_state.clone(),))
        };
        // The program's first steps may have entered host functions deep down.
        js.prims.floor.rebase(ctx);
        let promise = match started {
            Ok(p) => p,
            Err(rquickjs::Error::Exception) => return Err(self.caught(ctx, js)),
            Err(e) => return Err(engine_error(e)),
        };
        let result = self.event_loop(ctx, js, &promise, &program_state).await;
        js.prims.floor.rebase(ctx);
        // A paused run reports nothing yet: its program goes on after the resume, which
        // replays it, and may still handle the rejection (found by a hostile review: each
        // was reported at the pause and again after the resume).
        let paused = lock(self.state)
            .journal
            .as_ref()
            .is_some_and(Recorder::paused);
        if self.stopped().is_none() && !paused {
            self.report_unhandled(ctx, js, &tracking, promise.as_value());
            // Logging them ran past a limit (the deadline, or the console's): the run ends
            // as one whose program logged that much would (found by a hostile review: the
            // lines past the limit were dropped and the run said `ok`).
            if result.is_ok()
                && let Some(stopped) = self.stopped()
            {
                return Err(stopped);
            }
        }
        result
    }

    /// Logs each rejection that no handler took, but the program's own promise `main`, in
    /// the order they came: `Unhandled promise rejection: ` and the reason as `console.log`
    /// shows it, at level `error`. Stops at the first that cannot be shown (the run is
    /// stopping).
    fn report_unhandled<'js>(
        &self,
        ctx: &Ctx<'js>,
        js: &Js<'js>,
        tracking: &engine::RejectionTracking<'js>,
        main: &Value<'js>,
    ) {
        for (promise, reason) in tracking.take_unhandled() {
            if engine::same_object(&promise, main) {
                continue;
            }
            let Ok(shown) = js.internals.inspect::<rquickjs::String>(reason) else {
                let _ = ctx.catch();
                return;
            };
            if self.flags.should_interrupt() {
                return;
            }
            let text = shown.to_string().map_or_else(
                |_| "[console text with a lone surrogate could not be shown]".to_owned(),
                |shown| format!("Unhandled promise rejection: {shown}"),
            );
            let mut st = lock(self.state);
            st.logs.push(LogLevel::Error, text);
            if st.logs.over_limit {
                self.flags.console_limit();
            }
        }
    }

    /// Evaluates the program text: its main function, and the state object it is to be
    /// called with (see [`Program::code`]), which the bridge also keeps for the await mark.
    fn evaluate<'js>(
        &self,
        ctx: &Ctx<'js>,
        js: &Js<'js>,
    ) -> Result<(Function<'js>, Object<'js>), ProgramError> {
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.filename = Some(PROGRAM_FILE.to_owned());
        let evaluated: rquickjs::Result<Function<'js>> =
            ctx.eval_with_options(self.program.code.as_str(), options);
        match evaluated.and_then(|main| {
            // No prototype, and data properties that cannot become accessors: reading
            // them never runs the program's code (a non-strict program can reach the
            // object as `arguments[0]`).
            let state = Object::new(ctx.clone())?;
            state.set_prototype(None)?;
            let data = |v: Value<'js>| Property::from(v).writable().enumerable();
            state.prop(program::AWAIT_KEY, data(Value::new_int(ctx.clone(), 0)))?;
            state.prop(
                program::IMPLICIT_KEY,
                data(Value::new_bool(ctx.clone(), false)),
            )?;
            state.prop(
                program::EXPORTED_KEY,
                data(Value::new_undefined(ctx.clone())),
            )?;
            if let Some(b) = js.bridge.borrow().as_ref() {
                *b.program_state.borrow_mut() = Some(state.clone());
            }
            Ok((main, state))
        }) {
            Ok(main) => Ok(main),
            Err(rquickjs::Error::Exception) => Err(self.caught(ctx, js)),
            Err(e) => Err(engine_error(e)),
        }
    }

    /// Runs microtasks, delivers calls' outcomes and fires timers until the program's
    /// promise settles, the run is stopped, or nothing is left that could settle it.
    async fn event_loop<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        js: &Js<'js>,
        promise: &Promise<'js>,
        program_state: &Object<'js>,
    ) -> Result<Option<serde_json::Value>, ProgramError> {
        // Made once: a timer and a listener set up again at every turn of the loop would
        // cost a timer-wheel entry and a lock on the signal's tree per call.
        let request = self.request;
        let cancelled = request.signal.cancelled();
        let deadline =
            tokio::time::sleep_until(tokio::time::Instant::from_std(self.flags.deadline()));
        tokio::pin!(cancelled, deadline);
        loop {
            // Run every queued microtask (the interrupt handler bounds CPU loops here),
            // from this frame's floor (the future may have moved thread since the last
            // turn), then rebase (a job may have entered a host function deep down).
            js.prims.floor.rebase(ctx);
            let jobs = engine::run_jobs(ctx, self.flags);
            js.prims.floor.rebase(ctx);
            if jobs.is_err() {
                return Err(self.uncaught(ctx, js, timers::Uncaught::Microtask));
            }
            if let Some(e) = self.stopped() {
                return Err(e);
            }
            // One look at the journal per turn: (still replaying, calls wait for approval).
            let (replaying, pausing) = lock(self.state)
                .journal
                .as_ref()
                .map_or((false, false), |j| (j.replaying(), j.pausing()));
            if !matches!(promise.state(), PromiseState::Pending) && replaying {
                return Err(self.diverged(
                    "the program ended before it reached the point where the recorded run paused"
                        .to_owned(),
                ));
            }
            match promise.state() {
                PromiseState::Resolved => {
                    let value: Value<'js> = match promise.result::<Value<'js>>() {
                        Some(Ok(v)) => v,
                        _ => Value::new_undefined(ctx.clone()),
                    };
                    // Read after the promise settled: the flag is set just before the
                    // program's function returns its last expression's value.
                    let implicit = program_state
                        .get::<_, bool>(program::IMPLICIT_KEY)
                        .unwrap_or(false);
                    return self.convert_result(ctx, js, value, implicit);
                }
                PromiseState::Rejected => {
                    let _ = promise.result::<Value<'js>>();
                    return Err(self.caught(ctx, js));
                }
                PromiseState::Pending => {}
            }
            if replaying {
                if self.replay_turn(ctx, js)? {
                    continue;
                }
            } else if pausing {
                self.pause(&mut cancelled, &mut deadline).await;
                // Stopped while its calls finished: the run ends so, not paused (the calls
                // cut short would otherwise surface as cancellations after the resume).
                if let Some(e) = self.stopped() {
                    return Err(e);
                }
                return Ok(None);
            }
            self.take_ready();
            let (next_timer, queued) = {
                let mut st = lock(self.state);
                (st.timers.next_due(), st.calls.any_queued())
            };
            if self.inflight.is_empty() && !queued && next_timer.is_none() {
                return Err(self.deadlock(js));
            }
            let timer_at = next_timer.map(tokio::time::Instant::from_std);
            tokio::select! {
                biased;
                _ = &mut cancelled => {
                    self.flags.cancel();
                }
                done = std::future::poll_fn(|cx| self.inflight.poll_next(cx)), if !self.inflight.is_empty() => {
                    if let Some((id, outcome)) = done {
                        let mut turn = Vec::new();
                        self.deliver(ctx, js, id, outcome, Some(&mut turn))?;
                        // Deliver every other call that is already done, before running JS.
                        while let Some((id, outcome)) = self.inflight.next_done() {
                            self.deliver(ctx, js, id, outcome, Some(&mut turn))?;
                        }
                        if let Some(journal) = lock(self.state).journal.as_mut() {
                            journal.delivered(turn);
                        }
                    }
                }
                _ = sleep_until(timer_at), if timer_at.is_some() => {
                    self.fire_timers(ctx, js)?;
                }
                _ = &mut deadline => {
                    self.flags.time_out();
                }
            }
        }
    }

    /// Moves calls the tool functions started into the set this loop polls, and starts
    /// queued calls while there is room under `max_in_flight`.
    fn take_ready(&mut self) {
        let inflight = &mut self.inflight;
        lock(self.state)
            .calls
            .take_ready(|id, call, wake| inflight.insert(id, call, wake));
    }

    /// Settles the promise of call `id` with its outcome. `turn`: the ids delivered in this
    /// turn of the loop, for the journal (`None`: a replayed turn, recorded already).
    fn deliver<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        js: &Js<'js>,
        id: CallId,
        mut outcome: Outcome,
        turn: Option<&mut Vec<CallId>>,
    ) -> Result<(), ProgramError> {
        // The delivery before this one may have run a `then` getter that called a tool.
        js.prims.floor.rebase(ctx);
        let (max_output, journaled) = {
            let mut st = lock(self.state);
            if turn.is_some() {
                st.calls.landed();
                if awaits_approval(&mut st, id, &mut outcome) {
                    return Ok(());
                }
            }
            (st.limits.max_tool_output_bytes, st.journal.is_some())
        };
        // A replayed turn was recorded already; most runs keep no journal (no second lock).
        let recording = turn.is_some() && journaled;
        let state = self.state;
        let keep = |size| recording && journal_keeps(&mut lock(state), size);
        let converted = match settle_value(ctx, &js.prims, &mut outcome, max_output, keep) {
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
        {
            let mut st = lock(self.state);
            st.calls.finish(id, status, Some(outcome.elapsed()));
            if let Some(turn) = turn
                && let Some(journal) = st.journal.as_mut()
            {
                journal.finished(id, outcome, true, false);
                turn.push(id);
            }
        }
        let slot = js.bridge.borrow();
        let Some(bridge) = slot.as_ref() else {
            return Ok(());
        };
        if let Err(e) = bridge.settle(id, converted) {
            if matches!(e, rquickjs::Error::Exception) {
                let _ = ctx.catch();
            }
            if let Some(err) = self.stopped() {
                return Err(err);
            }
        }
        Ok(())
    }

    /// The error of a run whose program diverged from its journal (`message`, unless an
    /// earlier difference was recorded); the run stops.
    fn diverged(&self, message: String) -> ProgramError {
        self.flags.diverge();
        let first = lock(self.state)
            .journal
            .as_ref()
            .and_then(|j| j.divergence().map(str::to_owned));
        if first.is_none()
            && let Some(journal) = lock(self.state).journal.as_mut()
        {
            journal.diverge(message.clone());
        }
        ProgramError::internal(first.unwrap_or(message))
    }

    /// Replays the journal's next turn: `true` when it replayed one, `false` when the
    /// journal is used up and the run has gone live (the calls it made while replaying are
    /// delivered or dispatched from here, as their decisions say).
    fn replay_turn<'js>(&mut self, ctx: &Ctx<'js>, js: &Js<'js>) -> Result<bool, ProgramError> {
        let (turn, made) = {
            let mut st = lock(self.state);
            let made = st.calls.made();
            (st.journal.as_mut().and_then(|j| j.next_turn(made)), made)
        };
        match turn {
            Some(Ok(Turn::Calls(outcomes))) => {
                for (id, outcome) in outcomes {
                    self.deliver(ctx, js, id, outcome, None)?;
                }
                Ok(true)
            }
            Some(Ok(Turn::Timers(ids))) => {
                let fire_timer = js.internals.fire_timer().map_err(engine_error)?;
                let fired = timers::fire_replayed(
                    ctx,
                    self.state,
                    self.flags,
                    &js.prims.floor,
                    &fire_timer,
                    ids,
                );
                match fired {
                    Ok(Ok(())) => Ok(true),
                    Ok(Err(id)) => Err(self.diverged(format!(
                        "the recorded run fired timer {id} at this point, and the program has no such timer set"
                    ))),
                    Err(e) => Err(self.uncaught(ctx, js, e)),
                }
            }
            Some(Err(message)) => Err(self.diverged(message)),
            None => {
                let mut guard = lock(self.state);
                let st = &mut *guard;
                let Some(journal) = st.journal.as_mut() else {
                    return Ok(false);
                };
                match journal.go_live(made) {
                    Ok(live) => {
                        for (id, live) in live {
                            st.calls.go_live(id, live);
                        }
                        Ok(false)
                    }
                    Err(message) => {
                        drop(guard);
                        Err(self.diverged(message))
                    }
                }
            }
        }
    }

    /// The run pauses: no JavaScript runs from here. The calls the program started finish
    /// and their outcomes are recorded, undelivered; calls still queued never start (they
    /// run when the run resumes). The deadline, or the run's cancellation, stops the run
    /// instead (it then ends as a timeout or a cancellation, not paused).
    async fn pause(
        &mut self,
        cancelled: &mut Pin<&mut tokio_util::sync::WaitForCancellationFuture<'_>>,
        deadline: &mut Pin<&mut tokio::time::Sleep>,
    ) {
        {
            let inflight = &mut self.inflight;
            let mut st = lock(self.state);
            if let Some(journal) = st.journal.as_mut() {
                journal.pause();
            }
            st.calls
                .take_started(|id, call, wake| inflight.insert(id, call, wake));
        }
        while !self.inflight.is_empty() {
            tokio::select! {
                biased;
                _ = &mut *cancelled => {
                    self.flags.cancel();
                    return;
                }
                done = std::future::poll_fn(|cx| self.inflight.poll_next(cx)) => {
                    let Some((id, mut outcome)) = done else {
                        return;
                    };
                    let mut guard = lock(self.state);
                    let st = &mut *guard;
                    st.calls.landed();
                    if awaits_approval(st, id, &mut outcome) {
                        continue;
                    }
                    st.calls.finish(id, status_of(&outcome), Some(outcome.elapsed()));
                    if let Some(journal) = st.journal.as_mut() {
                        journal.finished(id, outcome, false, false);
                    }
                }
                _ = &mut *deadline => {
                    self.flags.time_out();
                    return;
                }
            }
        }
    }

    /// Fires the timers that are due; a callback that throws ends the run.
    fn fire_timers<'js>(&mut self, ctx: &Ctx<'js>, js: &Js<'js>) -> Result<(), ProgramError> {
        let fire_timer = js.internals.fire_timer().map_err(engine_error)?;
        timers::fire_due(ctx, self.state, self.flags, &js.prims.floor, &fire_timer)
            .map_err(|e| self.uncaught(ctx, js, e))
    }

    /// The error of a timer callback or a microtask that threw (or of the stop that
    /// interrupted it): the run ends with it, as Node's process does.
    fn uncaught<'js>(&self, ctx: &Ctx<'js>, js: &Js<'js>, e: timers::Uncaught) -> ProgramError {
        // What was thrown is taken off the context first, also when a stop wins: nothing
        // later mistakes it for an exception of its own.
        let (thrown, place) = match e {
            timers::Uncaught::Timer(rquickjs::Error::Exception) => {
                (Ok(ctx.catch()), "a timer callback")
            }
            timers::Uncaught::Timer(e) => (Err(e), "a timer callback"),
            timers::Uncaught::Microtask => {
                (Ok(ctx.catch()), "a microtask (a queueMicrotask callback)")
            }
        };
        if let Some(err) = self.stopped() {
            return err;
        }
        // The callback may have entered a host function deep down.
        js.prims.floor.rebase(ctx);
        let mut error = match thrown {
            Ok(thrown) => self.program_error(&thrown, js),
            Err(e) => ProgramError::internal(e.to_string()),
        };
        error.message = format!("uncaught exception in {place}: {}", error.message);
        error
    }

    /// Cancels the calls still running and gives them `cancel_grace` to observe it.
    async fn finish(&mut self) {
        self.calls_signal.cancel();
        {
            let inflight = &mut self.inflight;
            lock(self.state)
                .calls
                .close(|id, call, wake| inflight.insert(id, call, wake));
        }
        if self.inflight.is_empty() {
            return;
        }
        let grace = self.request.limits.cancel_grace;
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            tokio::select! {
                done = std::future::poll_fn(|cx| self.inflight.poll_next(cx)) => match done {
                    Some((id, outcome)) => {
                        let mut guard = lock(self.state);
                        let st = &mut *guard;
                        st.calls.finish(id, CallStatus::Cancelled, Some(outcome.elapsed()));
                        if let Some(journal) = st.journal.as_mut() {
                            journal.finished(id, outcome, false, false);
                        }
                    }
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        let mut guard = lock(self.state);
        let st = &mut *guard;
        for (id, tool) in st.calls.cancel_running() {
            if let Some(journal) = st.journal.as_mut() {
                let error = ToolError::with_kind(
                    ErrorKind::Cancelled,
                    "the call was cancelled: it had not finished when its run ended or paused",
                );
                journal.finished(
                    id,
                    Outcome::replayed(tool, Err(error), Duration::ZERO),
                    false,
                    false,
                );
            }
        }
        drop(guard);
        self.inflight.clear();
    }

    /// The result as JSON, or why it is not.
    ///
    /// A value the program did not ask for with `return` (`implicit`: the value of its last
    /// expression statement) that is not JSON does not undo the run: the result is its
    /// readable form, as `console.log` shows it, and a `warn` line says so (issue 15,
    /// item 8). An explicit `return` of such a value is an error: the program asked for it.
    fn convert_result<'js>(
        &self,
        ctx: &Ctx<'js>,
        js: &Js<'js>,
        value: Value<'js>,
        implicit: bool,
    ) -> Result<Option<serde_json::Value>, ProgramError> {
        // The result sits one level down in run_code's canonical value, which must stay
        // within MAX_DEPTH itself.
        let mut conv = ToJson::new(ctx, &js.prims, usize::MAX, "result")
            .watching(self.flags)
            .max_depth(crate::value::MAX_DEPTH - 1);
        match conv.convert_root(value.clone(), &PathSeg::Root("result")) {
            Ok(v) => Ok(v),
            Err(ConvertError::Invalid(message)) if implicit => {
                // The conversion may have run a `toJSON` that called a tool deep down.
                js.prims.floor.rebase(ctx);
                let shown = js.internals.inspect::<String>(value.clone());
                if let Some(stopped) = self.stopped() {
                    return Err(stopped);
                }
                let shown = shown.map_err(|_| {
                    let _ = ctx.catch();
                    ProgramError::result(format!(
                        "the value of the program's last expression is not JSON and could not be shown: {message}"
                    ))
                })?;
                lock(self.state).logs.push(
                    LogLevel::Warn,
                    format!(
                        "the value of the program's last expression is not JSON ({message}): the result is its readable form, as console.log shows it; `return` a JSON value to get it as data"
                    ),
                );
                Ok(Some(serde_json::Value::String(shown)))
            }
            Err(ConvertError::Invalid(message)) => Err(ProgramError::result(format!(
                "the program's result is not JSON: {message}"
            ))),
            Err(ConvertError::Engine(_) | ConvertError::Stopped) => {
                let _ = ctx.catch();
                Err(self.stopped().unwrap_or_else(|| {
                    ProgramError::result("the program's result could not be read")
                }))
            }
        }
    }

    /// The error for a run stopped from outside the program, if it was.
    fn stopped(&self) -> Option<ProgramError> {
        let reason = self.flags.reason()?;
        let in_flight = lock(self.state).calls.in_flight();
        Some(errors::stopped(reason, &self.request.limits, in_flight))
    }

    /// The error for what the program just threw (the engine's pending exception).
    fn caught<'js>(&self, ctx: &Ctx<'js>, js: &Js<'js>) -> ProgramError {
        let thrown = ctx.catch();
        self.stopped()
            .unwrap_or_else(|| self.program_error(&thrown, js))
    }

    /// The error for a value the program threw.
    fn program_error<'js>(&self, thrown: &Value<'js>, js: &Js<'js>) -> ProgramError {
        // Showing the value runs its getters, which may call tools: each call into
        // JavaScript here starts from this frame's floor.
        js.prims.floor.rebase(thrown.ctx());
        let shown = js.internals.inspect::<String>(thrown.clone()).ok();
        let engine_stack = thrown
            .is_error()
            .then(|| js.prims.engine_stack(thrown.ctx(), thrown))
            .flatten();
        let ctx = thrown.ctx();
        let text = |s: &rquickjs::String<'js>| js.prims.text(ctx, s);
        let mut error = errors::program_error(self.program, thrown, shown, engine_stack, &text);
        // A ToolCallError has no frames (the call ran on the host): it carries the await
        // the program had last reached when the call failed, in straight-line code the
        // call's own `await` (also when the error is caught and thrown again later), or,
        // for an unknown tool, the frames where the program named it.
        if error.line.is_none()
            && error.kind == ProgramErrorKind::ToolCall
            && let Some(site) = js.prims.site_of(thrown.ctx(), &js.internals.sites, thrown)
        {
            let position = match site.as_string() {
                Some(stack) => stack
                    .to_string()
                    .ok()
                    .and_then(|stack| errors::position_in_program(self.program, &stack)),
                None => site
                    .as_number()
                    .and_then(|n| (n as usize).checked_sub(1))
                    .and_then(|i| self.program.awaits.get(i))
                    .map(|site| (site.line, site.column)),
            };
            if let Some((line, column)) = position {
                error = error.at(line, column);
            }
        }
        // Reading the thrown value runs its getters: one that loops until the deadline is
        // the run's timeout, not an error with an empty message.
        self.stopped().unwrap_or(error)
    }

    /// The deadlock error, naming the await the program last reached.
    fn deadlock(&self, js: &Js<'_>) -> ProgramError {
        let made = lock(self.state).calls.made();
        errors::deadlock(made, self.last_await_site(js))
    }

    /// The await the program last reached, if it reached one.
    fn last_await_site(&self, js: &Js<'_>) -> Option<&AwaitSite> {
        let last = js.bridge.borrow().as_ref().map_or(0, Bridge::site);
        self.program.awaits.get(last.checked_sub(1)?)
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
