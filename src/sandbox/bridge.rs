//! The tool functions: `tools.<name>(args)` as the program calls it, and the settling of
//! the promise it returned once the call is over.
//!
//! One call, on the path every nested call takes:
//!
//! ```text
//!   tool_function ── host_call: arguments → JSON, open the call (start or queue),
//!        │                      poll it once with its own waker (inflight.rs)
//!        ├── ready at once ──> a settled promise (Promise.resolve / failed(…))
//!        └── pending ──> new promise; its resolving functions wait in Bridge::pending
//!                          until the loop delivers the outcome (Bridge::settle)
//! ```
//!
//! No lock is held while JavaScript runs or a tool is polled.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use rquickjs::{Ctx, Exception, Function, IntoJs, Object, Promise, Value};

use super::calls::{CallId, Opened, status_of};
use super::convert::{ConvertError, Primordials, ToJson, json_to_js};
use super::flags::RunFlags;
use super::host::Internals;
use super::journal::Replayed;
use super::report::CallStatus;
use super::shared::HostState;
use super::shared::{Shared, lock};
use crate::dispatch::{ErrorKind, Outcome, ToolError};
use crate::value::{FxBuild, PathSeg, json_size};

/// What the tool functions need from the prelude: set once the prelude has run, and
/// emptied when the program ends, since the engine must not be freed while Rust holds its
/// values.
pub(super) struct Bridge<'js> {
    pub(super) prims: Primordials<'js>,
    /// `Promise` as it was before the program ran.
    promise: Object<'js>,
    /// `failed` and `toolError` of the prelude (see [`Internals`]).
    failed: Function<'js>,
    tool_error: Function<'js>,
    /// The program's state object (see `src/program/wrapper.rs`), once the program is
    /// evaluated: its await mark says where the program waits.
    pub(super) program_state: RefCell<Option<Object<'js>>>,
    /// The promises of calls in flight or queued, by call id.
    pending: RefCell<HashMap<CallId, Waiting<'js>, FxBuild>>,
}

/// The resolving functions of the promise a call in flight returned.
struct Waiting<'js> {
    resolve: Function<'js>,
    reject: Function<'js>,
    name: Arc<str>,
}

impl<'js> Bridge<'js> {
    /// The bridge over what the prelude handed back.
    pub(super) fn new(
        prims: Primordials<'js>,
        internals: &Internals<'js>,
    ) -> rquickjs::Result<Self> {
        let promise: Object<'js> = internals.primordials.get("Promise")?;
        Ok(Bridge {
            prims,
            promise,
            failed: internals.failed.clone(),
            tool_error: internals.tool_error.clone(),
            program_state: RefCell::default(),
            pending: RefCell::default(),
        })
    }

    /// The number of the await the program last reached (0: none yet). A read of an own
    /// data property: no JavaScript runs.
    pub(super) fn site(&self) -> usize {
        self.program_state
            .borrow()
            .as_ref()
            .and_then(|state| {
                state
                    .get::<_, Option<usize>>(crate::program::AWAIT_KEY)
                    .ok()
            })
            .flatten()
            .unwrap_or(0)
    }

    /// Settles the promise call `id` returned with `converted` (see [`settle_value`]): its
    /// value, or `Err(message)` for a `ToolCallError`. A call nobody waits for any more is
    /// ignored.
    ///
    /// # Errors
    /// The engine error `converted` holds, or what resolving threw (a `then` getter on the
    /// value runs JavaScript).
    pub(super) fn settle(
        &self,
        id: CallId,
        converted: rquickjs::Result<Result<Value<'js>, String>>,
    ) -> rquickjs::Result<()> {
        // Out of the map before any JavaScript runs (resolving can run a `then` getter,
        // which can start calls).
        let waiting = self.pending.borrow_mut().remove(&id);
        let Some(waiting) = waiting else {
            return Ok(());
        };
        let floor = &self.prims.floor;
        let ctx = self.promise.ctx();
        match converted? {
            Ok(value) => {
                floor.guard(ctx)?;
                waiting.resolve.call::<_, ()>((value,))
            }
            Err(message) => {
                let site = self.site();
                floor.guard(ctx)?;
                let error =
                    self.tool_error
                        .call::<_, Value<'js>>((&*waiting.name, message, site))?;
                floor.guard(ctx)?;
                waiting.reject.call::<_, ()>((error,))
            }
        }
    }
}

/// The bridge of one run, shared by its tool functions and its loop (empty before the
/// prelude has run and after the program ended).
pub(super) type BridgeSlot<'js> = Rc<RefCell<Option<Bridge<'js>>>>;

/// Empties the bridge when the run's driver is done (also on a panic).
pub(super) struct ReleaseBridge<'js>(pub(super) BridgeSlot<'js>);

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
    Pending(CallId),
    /// It failed before or while starting.
    Failed(String),
}

/// `tools.<name>(args)`: a promise of the call's result, rejected with a `ToolCallError`
/// when the call fails (also when its arguments cannot be read).
pub(super) fn tool_function<'js>(
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
        let Some(name) = st.calls.tool_name(tool).cloned() else {
            drop(st);
            return Err(Exception::throw_message(ctx, "no such tool"));
        };
        let room = Room {
            max_calls: st.limits.max_tool_calls,
            max_bytes: st.limits.max_tool_input_bytes,
            made: st.calls.made(),
        };
        (name, room)
    };
    let args = args.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
    let floor = &b.prims.floor;
    // Each call into JavaScript below gives the engine its limit from this frame first.
    let failed = |error: Value<'js>| {
        let site = b.site();
        floor.guard(ctx)?;
        b.failed.call::<_, Value<'js>>((&*name, error, site))
    };
    match host_call(ctx, state, flags, tool, &name, room, args, &b.prims) {
        Ok(Started::Done(value)) => {
            // A result object's `then` is read (a program may have planted one on
            // `Object.prototype`): JavaScript may run.
            floor.guard(ctx)?;
            settled_promise(ctx, &value)
        }
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
        Ok(Started::Failed(message)) => failed(message.into_js(ctx)?),
        Err(rquickjs::Error::Exception) => {
            let thrown = ctx.catch();
            if thrown.is_uncatchable_error() {
                // An interrupt or out-of-memory ends the run: not the call's error.
                return Err(ctx.throw(thrown));
            }
            failed(thrown)
        }
        Err(e) => failed(e.to_string().into_js(ctx)?),
    }
}

/// `Promise.resolve(value)` of the engine's own `Promise` (ECMAScript §27.2.4.7), made
/// without a call through JavaScript (a frame and an argument list per tool call). As
/// there, an object's `then` is read: a getter or a `then` a program put on
/// `Object.prototype` runs.
fn settled_promise<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> rquickjs::Result<Value<'js>> {
    #[expect(
        unsafe_code,
        reason = "rquickjs has no safe call for a settled promise; Promise.resolve through a JavaScript call costs a frame and an argument list per tool call"
    )]
    // SAFETY: `value` is a live value of this context, which `JS_NewSettledPromise` only
    // reads (it takes its own reference); the result is a new reference (or the exception
    // marker, when out of memory), which `from_raw` takes over.
    let promise = unsafe {
        Value::from_raw(
            ctx.clone(),
            rquickjs::qjs::JS_NewSettledPromise(ctx.as_raw().as_ptr(), false, value.as_raw()),
        )
    };
    if promise.is_exception() {
        return Err(rquickjs::Error::Exception);
    }
    Ok(promise)
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
            let mut guard = lock(state);
            let st = &mut *guard;
            let id = st.calls.next_id();
            if let Some(journal) = st.journal.as_mut()
                && let Err(divergence) = journal.refused(id, name)
            {
                flags.diverge();
                return Ok(Started::Failed(divergence));
            }
            st.calls.refuse(tool);
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
    let (id, mut call, wake, max_output) = {
        let mut guard = lock(state);
        let st = &mut *guard;
        // Again: a getter or `toJSON` may have started calls while the arguments converted.
        if st.calls.made() >= max_calls {
            return Ok(Started::Failed(limit_message(max_calls)));
        }
        if let Some(journal) = st.journal.as_mut() {
            let id = st.calls.next_id();
            match journal.call(id, name, &json) {
                Ok(Replayed::Live) => {}
                Ok(Replayed::Later) => {
                    st.calls.open_replayed(tool);
                    return Ok(Started::Pending(id));
                }
                Ok(Replayed::Immediate(mut outcome)) => {
                    st.calls.open_replayed(tool);
                    st.calls
                        .finish(id, status_of(&outcome), Some(outcome.elapsed()));
                    let max_output = st.limits.max_tool_output_bytes;
                    drop(guard);
                    return Ok(
                        match settle_value(ctx, prims, &mut outcome, max_output, |_| false)? {
                            Ok(value) => Started::Done(value),
                            Err(message) => Started::Failed(message),
                        },
                    );
                }
                Err(divergence) => {
                    flags.diverge();
                    return Ok(Started::Failed(divergence));
                }
            }
        }
        match st.calls.open(tool, name, json) {
            Opened::Queued(id) => return Ok(Started::Pending(id)),
            Opened::Started(id, call) => {
                let spare = st.spare_wake.take();
                let wake = st.woken.waker_reusing(id, spare);
                (id, call, wake, st.limits.max_tool_output_bytes)
            }
        }
    };
    // Poll once now: a tool that is ready at once answers without a trip through the loop.
    if let Poll::Ready(mut outcome) = call
        .as_mut()
        .poll(&mut TaskContext::from_waker(wake.waker()))
    {
        let journaled = {
            let mut st = lock(state);
            st.spare_wake = wake.recycle();
            st.calls.landed();
            if awaits_approval(&mut st, id, &mut outcome) {
                // Never settled in this run: it pauses when the program next waits.
                return Ok(Started::Pending(id));
            }
            st.calls
                .finish(id, status_of(&outcome), Some(outcome.elapsed()));
            st.journal.is_some()
        };
        // Most runs keep no journal: no second lock for them.
        let keep = |size| journaled && journal_keeps(&mut lock(state), size);
        let settled = match settle_value(ctx, prims, &mut outcome, max_output, keep)? {
            Ok(value) => Started::Done(value),
            Err(message) => Started::Failed(message),
        };
        if journaled && let Some(journal) = lock(state).journal.as_mut() {
            journal.finished(id, outcome, true, true);
        }
        return Ok(settled);
    }
    lock(state).calls.pending(id, call, wake);
    Ok(Started::Pending(id))
}

/// Whether call `id`, which ended with `outcome`, waits for approval: a policy asked and
/// the run may pause, so it pauses at it (recorded as `paused`). When the run can no longer
/// pause (its journal passed its size bound), the call is denied instead and says why.
pub(super) fn awaits_approval(st: &mut HostState, id: CallId, outcome: &mut Outcome) -> bool {
    if outcome.error_kind() != Some(ErrorKind::NeedsApproval) {
        return false;
    }
    let prompt = outcome
        .error_info()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    match st.journal.as_mut() {
        Some(journal) if journal.can_pause() => {
            journal.awaits(id, prompt);
            st.calls
                .finish(id, CallStatus::Paused, Some(outcome.elapsed()));
            true
        }
        journal => {
            let why = journal
                .and_then(|j| j.off().map(str::to_owned))
                .unwrap_or_else(|| "the run cannot pause".to_owned());
            outcome.result = Err(ToolError::with_kind(
                ErrorKind::Denied,
                format!("this call needs approval ({prompt}), and {why}, so it was denied"),
            ));
            false
        }
    }
}

/// The JS value a finished call settles with: `Ok(value)`, or `Err(message)` for a
/// `ToolCallError` (also when the result is over `max_output` JSON bytes).
///
/// `keep(size)`: whether the outcome's value, of `size` JSON bytes, is needed afterwards (a
/// journal records it). If not, the value is taken out of `outcome` (leaving `null`) and
/// freed as it converts.
pub(super) fn settle_value<'js>(
    ctx: &Ctx<'js>,
    prims: &Primordials<'js>,
    outcome: &mut Outcome,
    max_output: usize,
    keep: impl FnOnce(usize) -> bool,
) -> rquickjs::Result<Result<Value<'js>, String>> {
    match &mut outcome.result {
        Ok(value) => {
            let size = json_size(value);
            if size > max_output {
                return Ok(Err(format!(
                    "the result of {} is {size} bytes, over the limit of {max_output} bytes for one tool result",
                    outcome.tool()
                )));
            }
            let value = if keep(size) {
                value.clone()
            } else {
                std::mem::take(value)
            };
            let converted = json_to_js(ctx, prims, value).map(Ok);
            if size >= RETURN_MEMORY_AFTER {
                super::alloc::return_free_memory();
            }
            converted
        }
        Err(error) => Ok(Err(error.message().to_owned())),
    }
}

/// JSON bytes of a result past which its freed tree is given back to the system once it
/// converted (see [`super::alloc::return_free_memory`]): 8 MiB, where the tree is hundreds of
/// megabytes and the trim a few milliseconds.
const RETURN_MEMORY_AFTER: usize = 8 << 20;

/// Whether the run's journal will record a result of `size` JSON bytes, so that it must be
/// kept after it settles (see [`super::journal::Recorder::keeps`]).
pub(super) fn journal_keeps(st: &mut HostState, size: usize) -> bool {
    st.journal.as_mut().is_some_and(|j| j.keeps(size))
}
