//! One run's engine: a QuickJS runtime and context under the run's limits, and their
//! teardown.
//!
//! Set up here, once per run: the counting allocator (the memory limit), the stack limit,
//! the garbage collector's threshold, the interrupt handler (the timeout, and any other
//! reason in [`RunFlags`], for code that runs; it does *not* fire while the program waits
//! on a tool: the event loop bounds those waits) and the promise rejection tracker.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use rquickjs::{AsyncContext, AsyncRuntime, Ctx, JsLifetime, Value};

use super::alloc::LimitedAllocator;
use super::flags::RunFlags;
use super::limits::MIN_MEMORY;
use super::reaper::{self, Teardown};
use super::report::ProgramError;

/// Heap growth, in bytes, between two runs of the cycle collector.
///
/// QuickJS frees most garbage by reference counting; the cycle collector runs when the
/// heap grows by this much. The default (256 KiB) makes it walk the whole new context
/// during start-up; 2 MiB lets start-up finish first.
const GC_THRESHOLD: usize = 2 << 20;

/// A runtime and its one context.
pub(super) struct Engine {
    runtime: AsyncRuntime,
    context: AsyncContext,
}

impl Engine {
    /// A fresh engine for one run: at most `memory` bytes (at least [`MIN_MEMORY`]) and
    /// `stack` bytes of engine stack (see [`super::stack::engine_stack`]), stopped whenever
    /// `flags` says so.
    ///
    /// # Errors
    /// An `InternalError` when the engine cannot start.
    pub(super) async fn start(
        memory: usize,
        stack: usize,
        flags: &Arc<RunFlags>,
    ) -> Result<Self, ProgramError> {
        let failed =
            |e: rquickjs::Error| ProgramError::internal(format!("the engine could not start: {e}"));
        let runtime = AsyncRuntime::new_with_alloc(LimitedAllocator::new(
            memory.max(MIN_MEMORY),
            flags.clone(),
        ))
        .map_err(failed)?;
        runtime.set_max_stack_size(stack).await;
        runtime.set_gc_threshold(GC_THRESHOLD).await;
        let handler_flags = flags.clone();
        runtime
            .set_interrupt_handler(Some(Box::new(move || handler_flags.should_interrupt())))
            .await;
        runtime
            .set_host_promise_rejection_tracker(Some(Box::new(report_rejection)))
            .await;
        runtime.set_loader(NoModules, NoModules).await;
        let context = AsyncContext::full(&runtime).await.map_err(failed)?;
        Ok(Engine { runtime, context })
    }

    /// The engine's runtime (a handle: clones share it).
    pub(super) fn runtime(&self) -> &AsyncRuntime {
        &self.runtime
    }

    /// The engine's context.
    pub(super) fn context(&self) -> &AsyncContext {
        &self.context
    }

    /// Frees the engine (context first), which held at most `held` bytes at its peak, as
    /// `teardown` says.
    pub(super) fn reap(self, held: usize, teardown: Teardown) {
        reaper::reap(self.context, self.runtime, held, teardown);
    }
}

/// The engine's module resolver and loader: refuses every module. A program runs alone; its
/// text may not `import` (see `program::prepare`), and this also refuses an `import()` in
/// code it evaluates (`(0, eval)("import('x')")`), whatever the name, including the names
/// the prelude's own modules were loaded under (the engine would otherwise hand those out).
struct NoModules;

impl rquickjs::loader::Resolver for NoModules {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        Err(rquickjs::Error::new_resolving_message(
            base,
            name,
            crate::program::import_not_available("import()"),
        ))
    }
}

impl rquickjs::loader::Loader for NoModules {
    fn load<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<rquickjs::Module<'js, rquickjs::module::Declared>> {
        Err(rquickjs::Error::new_loading_message(
            name,
            crate::program::import_not_available("import()"),
        ))
    }
}

/// The engine's promise rejection tracker: keeps each rejection no handler has taken yet,
/// and forgets it when one does, while [`track_rejections`] is in force (nothing before
/// it, nothing after [`RejectionTracking`] ends). It runs no JavaScript, so it works the
/// same at any depth of the program's stack.
///
/// What it keeps lives in the runtime's user data, which is the host's alone: no global
/// name the program could read or replace is involved.
fn report_rejection<'js>(ctx: Ctx<'js>, promise: Value<'js>, reason: Value<'js>, handled: bool) {
    let Some(tracker) = ctx.userdata::<Tracker<'js>>() else {
        return;
    };
    // Never re-entered (nothing here runs JavaScript); a value it lets go is freed after
    // the borrow ends all the same.
    let Ok(mut unhandled) = tracker.unhandled.try_borrow_mut() else {
        return;
    };
    let key = address(&promise);
    let released = if handled {
        unhandled.waiting.remove(&key)
    } else {
        let order = unhandled.next;
        unhandled.next += 1;
        unhandled.waiting.insert(
            key,
            Rejection {
                order,
                promise,
                reason,
            },
        )
    };
    drop(unhandled);
    drop(released);
}

/// The address of the object `value` holds (a promise, for the tracker): what tells one
/// promise from another.
fn address(value: &Value<'_>) -> usize {
    #[expect(
        unsafe_code,
        reason = "rquickjs gives no identity for an object; the C macro only reads the value's bits"
    )]
    // SAFETY: `JS_VALUE_GET_PTR` reads the pointer bits of the value itself, which `value`
    // holds alive; no memory is read through the pointer.
    let pointer = unsafe { rquickjs::qjs::JS_VALUE_GET_PTR(value.as_raw()) };
    pointer as usize
}

/// The rejections the tracker keeps.
#[derive(JsLifetime)]
struct Tracker<'js> {
    unhandled: RefCell<Unhandled<'js>>,
}

/// The rejected promises no handler has taken yet, each with the order it came in and its
/// reason, by the promise's address.
#[derive(JsLifetime, Default)]
struct Unhandled<'js> {
    waiting: HashMap<usize, Rejection<'js>>,
    next: u64,
}

/// One rejection the tracker keeps: its order among them, the promise and its reason.
#[derive(JsLifetime)]
struct Rejection<'js> {
    order: u64,
    promise: Value<'js>,
    reason: Value<'js>,
}

/// Keeps the engine's promise rejections that no handler takes (see
/// [`RejectionTracking::take_unhandled`]) until the returned guard is dropped.
///
/// # Errors
/// When the runtime's user data is in use (it never is while this runs).
pub(super) fn track_rejections<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<RejectionTracking<'js>> {
    ctx.store_userdata(Tracker {
        unhandled: RefCell::default(),
    })
    .map_err(|_| rquickjs::Error::UserData(rquickjs::runtime::UserDataError(())))?;
    Ok(RejectionTracking(ctx.clone()))
}

/// A job the engine ran threw: a `queueMicrotask` callback (a promise's reaction jobs
/// reject their promise instead). The thrown value is pending on the context, for
/// `ctx.catch()`.
pub(super) struct JobThrew;

/// Runs the engine's pending jobs (promise reactions, `queueMicrotask` callbacks) until
/// none is left or the run is stopped.
///
/// # Errors
/// [`JobThrew`] for the first job that threw; the jobs after it stay queued. (rquickjs's
/// `Ctx::execute_pending_job` drops what a job threw, which left an exception in a
/// `queueMicrotask` callback unseen.)
pub(super) fn run_jobs(ctx: &Ctx<'_>, flags: &RunFlags) -> Result<(), JobThrew> {
    while flags.reason().is_none() {
        let mut job_ctx = std::mem::MaybeUninit::<*mut rquickjs::qjs::JSContext>::uninit();
        #[expect(
            unsafe_code,
            reason = "rquickjs's safe wrapper drops the value a job threw; the C function reports it"
        )]
        // SAFETY: `ctx` is a live context of this thread's runtime, which `JS_GetRuntime`
        // returns; `JS_ExecutePendingJob` writes the job's context (this one: a run has one)
        // through the pointer it is given, which lives for the call, and leaves a thrown
        // value pending on that context.
        let ran = unsafe {
            rquickjs::qjs::JS_ExecutePendingJob(
                rquickjs::qjs::JS_GetRuntime(ctx.as_raw().as_ptr()),
                job_ctx.as_mut_ptr(),
            )
        };
        match ran {
            0 => break,
            ran if ran < 0 => return Err(JobThrew),
            _ => {}
        }
    }
    Ok(())
}

/// Stops the tracking [`track_rejections`] started when dropped (also on a panic), so the
/// engine holds none of the run's values once the run's driver is done.
pub(super) struct RejectionTracking<'js>(Ctx<'js>);

impl<'js> RejectionTracking<'js> {
    /// The rejected promises no handler has taken so far, each with its reason, in the
    /// order they were rejected; the tracker keeps none of them after this.
    pub(super) fn take_unhandled(&self) -> Vec<(Value<'js>, Value<'js>)> {
        let Some(tracker) = self.0.userdata::<Tracker<'js>>() else {
            return Vec::new();
        };
        let waiting = std::mem::take(&mut tracker.unhandled.borrow_mut().waiting);
        let mut list: Vec<_> = waiting.into_values().collect();
        list.sort_unstable_by_key(|r| r.order);
        list.into_iter().map(|r| (r.promise, r.reason)).collect()
    }
}

/// Whether `a` and `b` hold the same object.
pub(super) fn same_object(a: &Value<'_>, b: &Value<'_>) -> bool {
    address(a) == address(b)
}

impl Drop for RejectionTracking<'_> {
    fn drop(&mut self) {
        let _ = self.0.remove_userdata::<Tracker<'_>>();
    }
}
