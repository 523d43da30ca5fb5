//! Why a run must stop, shared by the interrupt handler, the allocator, the watchdog and the
//! driver.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// The reason a run was stopped from outside the program. The first reason wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The wall-clock timeout passed.
    Timeout,
    /// The memory limit was reached (even if the program caught the error).
    OutOfMemory,
    /// The `run_code` call was cancelled.
    Cancelled,
    /// The console output passed `max_console_bytes`.
    ConsoleLimit,
    /// A resumed run's program asked for something else than its journal holds.
    Diverged,
}

/// The flags of one engine. An engine built ahead of its run (a warm one, see `pool.rs`)
/// starts with a deadline that bounds its set-up, and is armed with the run's deadline and
/// signal when a run takes it.
pub(crate) struct RunFlags {
    /// What `deadline` counts from.
    base: Instant,
    /// Nanoseconds from `base` to the deadline.
    deadline: AtomicU64,
    stop: AtomicU8,
    /// The `run_code` call's signal, read by the interrupt handler: a program in a CPU
    /// loop never yields to the event loop, which is where the signal is awaited.
    signal: OnceLock<CancellationToken>,
    /// The most bytes the engine has held (see `alloc.rs`).
    memory_peak: AtomicUsize,
    /// Blocks the engine may still take after a stop (see [`RunFlags::refuses_memory`]):
    /// given each time the interrupt handler stops the engine, for the error it throws.
    grace: AtomicU32,
    /// Set once the run's JavaScript is over: the engine is freed with its memory working.
    over: AtomicBool,
}

/// Blocks an engine stopped by its interrupt handler may take to throw the uncatchable
/// error that unwinds the program: the error, its message and stack text (a few dozen; more
/// when the program set `Error.prepareStackTrace`).
const GRACE: u32 = 1024;

impl RunFlags {
    pub(crate) fn new(deadline: Instant) -> Self {
        let base = Instant::now();
        RunFlags {
            base,
            deadline: AtomicU64::new(Self::nanos(base, deadline)),
            stop: AtomicU8::new(0),
            signal: OnceLock::new(),
            memory_peak: AtomicUsize::new(0),
            grace: AtomicU32::new(0),
            over: AtomicBool::new(false),
        }
    }

    fn nanos(base: Instant, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Arms the flags of an engine built ahead with its run's deadline and signal (the
    /// first signal set stays: an engine serves one run).
    pub(crate) fn arm(&self, deadline: Instant, signal: CancellationToken) {
        self.deadline
            .store(Self::nanos(self.base, deadline), Ordering::SeqCst);
        let _ = self.signal.set(signal);
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.base + Duration::from_nanos(self.deadline.load(Ordering::Relaxed))
    }

    fn set(&self, reason: StopReason) {
        let code = match reason {
            StopReason::Timeout => 1,
            StopReason::OutOfMemory => 2,
            StopReason::Cancelled => 3,
            StopReason::ConsoleLimit => 4,
            StopReason::Diverged => 5,
        };
        let _ = self
            .stop
            .compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Notes a new high of the bytes the engine holds.
    pub(crate) fn memory_high(&self, bytes: usize) {
        self.memory_peak.store(bytes, Ordering::Relaxed);
    }

    /// The most bytes the engine has held so far, its prelude included.
    pub(crate) fn memory_peak(&self) -> usize {
        self.memory_peak.load(Ordering::Relaxed)
    }

    pub(crate) fn out_of_memory(&self) {
        self.set(StopReason::OutOfMemory);
    }

    pub(crate) fn cancel(&self) {
        self.set(StopReason::Cancelled);
    }

    pub(crate) fn console_limit(&self) {
        self.set(StopReason::ConsoleLimit);
    }

    pub(crate) fn diverge(&self) {
        self.set(StopReason::Diverged);
    }

    pub(crate) fn time_out(&self) {
        self.set(StopReason::Timeout);
    }

    /// The interrupt handler: true stops the engine with an uncatchable exception (and
    /// lets it take the memory to make that exception).
    pub(crate) fn should_interrupt(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) == 0 {
            self.poll_signal();
            // The first reason stays: a cancellation just seen is not turned into a timeout.
            if Instant::now() >= self.deadline() {
                self.time_out();
            }
        }
        let stop = self.stop.load(Ordering::Relaxed) != 0;
        if stop {
            self.grace.store(GRACE, Ordering::Relaxed);
        }
        stop
    }

    /// Stops the run if its `run_code` call was cancelled (a lock: called every few
    /// thousand allocations, and by the interrupt handler).
    pub(crate) fn poll_signal(&self) {
        if self
            .signal
            .get()
            .is_some_and(CancellationToken::is_cancelled)
        {
            self.cancel();
        }
    }

    /// Whether the allocator refuses the engine's next block: from a stop until the run's
    /// JavaScript is over, except the few blocks the interrupt handler grants.
    ///
    /// The engine asks its interrupt handler only every 10 000 calls and jumps back; a
    /// loop whose turns spend milliseconds in a built-in (`JSON.parse` of a large text)
    /// would reach the next ask minutes after its deadline. Refused memory, those
    /// built-ins fail at once, so the loop reaches it within a few milliseconds.
    pub(crate) fn refuses_memory(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) == 0 || self.over.load(Ordering::Relaxed) {
            return false;
        }
        let grace = self.grace.load(Ordering::Relaxed);
        if grace > 0 {
            self.grace.store(grace - 1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// The run's JavaScript is over: the engine's memory works again while it is freed.
    pub(crate) fn end(&self) {
        self.over.store(true, Ordering::Relaxed);
    }

    pub(crate) fn reason(&self) -> Option<StopReason> {
        match self.stop.load(Ordering::SeqCst) {
            1 => Some(StopReason::Timeout),
            2 => Some(StopReason::OutOfMemory),
            3 => Some(StopReason::Cancelled),
            4 => Some(StopReason::ConsoleLimit),
            5 => Some(StopReason::Diverged),
            _ => None,
        }
    }
}
