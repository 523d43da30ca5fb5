//! A run that has not stopped [`ABANDON_AFTER`] past its timeout, seen from the thread that
//! waits for it.
//!
//! A run ends at its timeout, with one exception: a program whose loop spends each turn in
//! a slow built-in that allocates nothing (`indexOf` over a string of tens of megabytes)
//! is stopped only at the engine's next interrupt check, which QuickJS makes every 10 000
//! calls and backward jumps, seconds or minutes later (a built-in that allocates fails at
//! once in a stopped run, whose memory is refused). The run's thread is busy in the engine
//! all that time, so only another thread can answer for it.
//!
//! A caller arms the thread that runs its call with an [`OverdueArm`] (what to do then) and
//! the first run that starts on that thread from then on takes it: the watchdog calls it
//! [`ABANDON_AFTER`] past the run's deadline if the run has not ended by then. Taking it
//! is a thread-local read per run: nothing for a thread that armed nothing.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long past a run's timeout a caller waiting for it from another thread keeps
/// waiting: 5 s. `codemode mcp` and `codemode run` then answer with [`abandoned_message`]
/// and leave the run's thread to end by itself.
///
/// A run ends at its timeout, except a program whose loop spends each turn in a slow
/// built-in that allocates nothing (`indexOf` over a string of tens of megabytes): the
/// engine stops it at its next interrupt check, which QuickJS makes every 10 000 calls and
/// backward jumps, seconds or minutes later (see "Limits" in the README). An
/// [`OverdueArm`] is how a caller hears of it.
pub const ABANDON_AFTER: Duration = Duration::from_secs(5);

/// The `TimeoutError` message of a run whose caller stopped waiting for it
/// [`ABANDON_AFTER`] past its `timeout`.
pub fn abandoned_message(timeout: Duration) -> String {
    format!(
        "the program did not finish within its {} ms timeout and had not stopped {} s later \
         (a loop whose turns spend their time in a built-in that allocates nothing, such as \
         indexOf over a very long string, stops only at the engine's next check); nothing \
         waits for it any more, and its console output is not returned",
        timeout.as_millis(),
        ABANDON_AFTER.as_secs()
    )
}

/// What an armed thread's run calls when it is overdue, with its timeout.
pub(crate) type OnOverdue = Arc<dyn Fn(Duration) + Send + Sync>;

/// An arm as a run takes it: what to call, and where the run writes its number (see
/// [`RunProcesses`]).
pub(crate) type Armed = (OnOverdue, Arc<AtomicU64>);

thread_local! {
    /// What this thread's next run calls when it is overdue, if armed.
    static ARMED: RefCell<Option<Armed>> = const { RefCell::new(None) };
}

/// What the run a thread starts does when it is overdue: `on_overdue(timeout)` is called
/// once, on the watchdog's thread, [`ABANDON_AFTER`] past the run's deadline, unless the
/// run ended before. Keep it short (a send, a print): the watchdog serves every run. Just
/// before, the process groups the run's calls started (commands, `bash`) are killed.
pub struct OverdueArm {
    on_overdue: OnOverdue,
    /// The number of the run that took the arm (0 until one does), for [`RunProcesses`].
    run: Arc<AtomicU64>,
}

impl std::fmt::Debug for OverdueArm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OverdueArm")
    }
}

impl OverdueArm {
    /// An arm that calls `on_overdue`.
    pub fn new(on_overdue: impl Fn(Duration) + Send + Sync + 'static) -> Self {
        OverdueArm {
            on_overdue: Arc::new(on_overdue),
            run: Arc::default(),
        }
    }

    /// The process groups of the run that takes this arm, for a caller that gives up on
    /// that run for another reason than its timeout (its cancellation).
    pub(crate) fn processes(&self) -> RunProcesses {
        RunProcesses(self.run.clone())
    }

    /// Arms this thread: the first run that starts on it while the guard lives takes the
    /// arm. Dropping the guard disarms the thread (and re-arms what an outer guard armed).
    pub fn arm(self) -> ArmedThread {
        let outer = ARMED.with(|armed| armed.replace(Some((self.on_overdue, self.run))));
        ArmedThread {
            outer,
            _not_send: std::marker::PhantomData,
        }
    }
}

/// This thread armed by [`OverdueArm::arm`], until dropped.
pub struct ArmedThread {
    outer: Option<Armed>,
    /// A thread-local guard stays on its thread.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl std::fmt::Debug for ArmedThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArmedThread")
    }
}

impl Drop for ArmedThread {
    fn drop(&mut self) {
        let outer = self.outer.take();
        ARMED.with(|armed| *armed.borrow_mut() = outer);
    }
}

/// The arm of this thread, for the run that starts now (a later run finds none).
pub(crate) fn take_armed() -> Option<Armed> {
    ARMED.with(|armed| armed.borrow_mut().take())
}

/// The process groups the calls of the run that took an arm started (see
/// [`OverdueArm::processes`]).
pub(crate) struct RunProcesses(Arc<AtomicU64>);

impl RunProcesses {
    /// Kills (SIGKILL) the process groups the run's calls started that are still alive;
    /// nothing before a run took the arm.
    pub(crate) fn kill(&self) {
        let run = self.0.load(Ordering::SeqCst);
        if run != 0 {
            crate::child::kill_run_process_groups(run);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn the_first_run_after_arming_takes_the_arm_and_the_guard_restores_the_outer_one() {
        assert!(take_armed().is_none());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let arm = |tag: u64| {
            let seen = seen.clone();
            OverdueArm::new(move |t| seen.lock().unwrap().push((tag, t)))
        };
        let outer = arm(1).arm();
        let inner = arm(2).arm();
        take_armed().expect("armed").0(Duration::from_millis(300));
        assert!(take_armed().is_none(), "a later run finds none");
        drop(inner);
        take_armed().expect("the outer arm is back").0(Duration::from_millis(5));
        drop(outer);
        assert!(take_armed().is_none());
        assert_eq!(
            *seen.lock().unwrap(),
            [
                (2, Duration::from_millis(300)),
                (1, Duration::from_millis(5))
            ]
        );
    }
}
