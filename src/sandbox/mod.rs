//! The QuickJS sandbox (DESIGN §5 "Sandbox"): the only module that names rquickjs types.
//!
//! One run = a fresh engine runtime and context, the prelude (`js-prelude/`), the program,
//! and an event loop that drives the program's tool calls through the dispatch pipeline on
//! the same task. Nothing survives between runs.

mod alloc;
pub(crate) mod bench;
pub(crate) mod convert;
mod driver;
mod flags;
mod limits;
mod logs;
mod prelude;
mod reaper;
mod report;
mod watchdog;

pub use limits::{Limits, MIN_MEMORY};
pub use logs::{LogEntry, LogLevel};
pub use report::{CallRecord, CallStatus, ProgramError};

pub(crate) use driver::{RunReport, RunRequest, run};
pub(crate) use logs::{LogCapture, LogSink};
pub(crate) use reaper::reap_later;
