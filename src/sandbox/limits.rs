//! The limits of one `run_code` run (see "Limits" in the README).

use std::time::Duration;

/// The smallest memory limit: 1 MiB, what the engine and the prelude need to start. A
/// smaller [`Limits::memory`] is raised to it.
pub const MIN_MEMORY: usize = 1 << 20;

/// The limits of one program run. Every limit ends the run (or the one call) with a clear
/// error; none can crash or hang the host.
///
/// Defaults ([`Limits::default`]):
///
/// | field | default | unit |
/// | --- | --- | --- |
/// | `timeout` | 30 000 | milliseconds of wall-clock time for the whole run |
/// | `memory` | 64 MiB | bytes the engine may hold (fatal even if the program catches it); at least [`MIN_MEMORY`] |
/// | `stack` | 8 MiB | bytes of engine stack (a catchable `RangeError` past it; about 12 000 levels of a simple recursive function), at most the thread's remaining stack less 512 KiB (see [`Limits::thread_stack`]) |
/// | `max_source_bytes` | 1 MiB | bytes of program text |
/// | `max_tool_calls` | 10 000 | tool calls in one run |
/// | `max_in_flight` | 128 | tool calls running at once (the rest wait their turn) |
/// | `max_tool_input_bytes` | 4 MiB | JSON bytes of one call's arguments |
/// | `max_tool_output_bytes` | 64 MiB | JSON bytes of one call's result |
/// | `max_log_bytes` | 1 MiB | bytes of console output kept in memory, for the head and again for the tail (the rest streams to the spill file) |
/// | `max_console_bytes` | 64 MiB | bytes of console output in all; past it the run ends with a `LimitError` |
/// | `cancel_grace` | 1 000 | milliseconds calls still running when the program ends get to observe their cancelled signal |
///
/// The timeout is enforced three ways: the engine's interrupt handler stops CPU-bound code
/// (it does *not* fire while the program waits on a tool), the host bounds every wait, and
/// a watchdog thread flags runs that overstay by more than a second whatever they are doing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Wall-clock time for the whole run.
    pub timeout: Duration,
    /// Bytes of memory the engine may hold.
    pub memory: usize,
    /// Bytes of engine stack, at most 16 MiB (the most QuickJS takes as a limit; a larger
    /// value is taken as 16 MiB). A run gets the smaller of this and what the thread running it
    /// has left less 512 KiB for the host's own frames, so that no recursion can overflow
    /// the host's stack: run programs on a thread of [`Limits::thread_stack`] bytes to get
    /// all of it (a tokio worker thread has 2 MiB, about 2 000 levels).
    pub stack: usize,
    /// Bytes of program text.
    pub max_source_bytes: usize,
    /// Tool calls in one run.
    pub max_tool_calls: usize,
    /// Tool calls running at once.
    pub max_in_flight: usize,
    /// JSON bytes of one call's arguments.
    pub max_tool_input_bytes: usize,
    /// JSON bytes of one call's result.
    pub max_tool_output_bytes: usize,
    /// Bytes of console output kept in memory, for the first lines and again for the last.
    pub max_log_bytes: usize,
    /// Bytes of console output in all (one more per line for its line break).
    pub max_console_bytes: u64,
    /// How long calls still running when the program ends get to observe their cancelled
    /// signal before they are dropped.
    pub cancel_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_millis(30_000),
            memory: 64 << 20,
            stack: 8 << 20,
            max_source_bytes: 1 << 20,
            max_tool_calls: 10_000,
            max_in_flight: 128,
            max_tool_input_bytes: 4 << 20,
            max_tool_output_bytes: 64 << 20,
            max_log_bytes: 1 << 20,
            max_console_bytes: 64 << 20,
            cancel_grace: Duration::from_millis(1_000),
        }
    }
}

impl Limits {
    /// Sets the wall-clock timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the memory limit in bytes; below [`MIN_MEMORY`] it is raised to it.
    pub fn memory(mut self, bytes: usize) -> Self {
        self.memory = bytes.max(MIN_MEMORY);
        self
    }

    /// Sets the engine stack limit in bytes.
    pub fn stack(mut self, bytes: usize) -> Self {
        self.stack = bytes;
        self
    }

    /// Bytes of stack a thread that runs programs under these limits should have, so that
    /// the engine gets all of [`Limits::stack`]: the engine's stack (at most 16 MiB), 512 KiB
    /// kept for the host below it, and 4 MiB for the host's frames above it (the async
    /// runtime, the dispatch of the call that runs the program, the conversion of a deeply
    /// nested result in a debug build). Only the pages a run touches are ever resident.
    pub fn thread_stack(&self) -> usize {
        self.stack
            .min(super::stack::MAX_ENGINE_STACK)
            .saturating_add(super::stack::HOST_MARGIN)
            .saturating_add(4 << 20)
    }

    /// Sets the largest program text in bytes.
    pub fn max_source_bytes(mut self, bytes: usize) -> Self {
        self.max_source_bytes = bytes;
        self
    }

    /// Sets the most tool calls in one run.
    pub fn max_tool_calls(mut self, n: usize) -> Self {
        self.max_tool_calls = n;
        self
    }

    /// Sets the most tool calls running at once (at least 1).
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Sets the largest arguments of one call, in JSON bytes.
    pub fn max_tool_input_bytes(mut self, bytes: usize) -> Self {
        self.max_tool_input_bytes = bytes;
        self
    }

    /// Sets the largest result of one call, in JSON bytes.
    pub fn max_tool_output_bytes(mut self, bytes: usize) -> Self {
        self.max_tool_output_bytes = bytes;
        self
    }

    /// Sets how many bytes of console output are kept in memory.
    pub fn max_log_bytes(mut self, bytes: usize) -> Self {
        self.max_log_bytes = bytes;
        self
    }

    /// Sets how many bytes of console output a run may produce in all.
    pub fn max_console_bytes(mut self, bytes: u64) -> Self {
        self.max_console_bytes = bytes;
        self
    }

    /// Sets the grace period for calls cancelled when the program ends.
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }
}
