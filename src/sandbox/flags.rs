//! Why a run must stop, shared by the interrupt handler, the allocator, the watchdog and the
//! driver.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
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
}

impl RunFlags {
    pub(crate) fn new(deadline: Instant) -> Self {
        let base = Instant::now();
        RunFlags {
            base,
            deadline: AtomicU64::new(Self::nanos(base, deadline)),
            stop: AtomicU8::new(0),
            signal: OnceLock::new(),
            memory_peak: AtomicUsize::new(0),
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

    /// The interrupt handler: true stops the engine with an uncatchable exception.
    pub(crate) fn should_interrupt(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) != 0 {
            return true;
        }
        if self
            .signal
            .get()
            .is_some_and(CancellationToken::is_cancelled)
        {
            self.cancel();
            return true;
        }
        if Instant::now() >= self.deadline() {
            self.time_out();
            return true;
        }
        false
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
