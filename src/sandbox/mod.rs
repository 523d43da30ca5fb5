//! The QuickJS sandbox: the only module that names rquickjs types.
//!
//! One run = a fresh engine runtime and context, the prelude (`js-prelude/`), the program,
//! and an event loop that drives the program's tool calls through the dispatch pipeline on
//! the same task. Nothing survives between runs.
//!
//! The files, in the order a run meets them:
//!
//! | file | what |
//! | --- | --- |
//! | `driver.rs` | a run top to bottom, and its event loop |
//! | `engine.rs` | the runtime and context under the run's limits, their teardown |
//! | `alloc.rs`, `flags.rs`, `watchdog.rs` | the memory limit, why a run must stop, the timeout's last guard |
//! | `prelude.rs` | loading `js-prelude/` |
//! | `host.rs` | the `host` object the prelude receives and the `internals` it hands back |
//! | `shared.rs` | what the host functions and the loop share |
//! | `bridge.rs` | the tool functions: a call from `tools.x(args)` to its settled promise |
//! | `calls.rs` | the table of a run's calls: queueing, in flight, records |
//! | `inflight.rs` | the calls in flight as the loop polls them, each with its own waker |
//! | `convert.rs` | values across the boundary |
//! | `bench.rs` | the value round trip the benches time (through `codemode::bench_support`) |
//! | `timers.rs` | `setTimeout` and `setInterval` on the host side |
//! | `logs.rs` | console capture |
//! | `errors.rs`, `report.rs` | how failures become a [`ProgramError`]; what a run reports |
//! | `reaper.rs` | freeing engines and large values off the caller's task |

mod alloc;
pub(crate) mod bench;
mod bridge;
mod calls;
pub(crate) mod convert;
mod driver;
mod engine;
mod errors;
mod flags;
mod guards;
mod host;
mod inflight;
pub(crate) mod journal;
mod limits;
mod logs;
mod overdue;
mod pool;
mod prelude;
mod reaper;
mod report;
mod shared;
mod stack;
mod timers;
mod watchdog;

pub use limits::{Limits, MIN_MEMORY};
pub use logs::{LogEntry, LogLevel};
pub(crate) use overdue::RunProcesses;
pub use overdue::{ABANDON_AFTER, ArmedThread, OverdueArm, abandoned_message};
pub use pool::{EnginePool, PoolStats};
pub use report::{CallRecord, CallStatus, ProgramError, ProgramErrorKind};

pub(crate) use driver::{Paused, RunReport, RunRequest, run};
pub(crate) use guards::is_guarded;
pub(crate) use logs::{LogCapture, LogSink};
pub(crate) use reaper::reap_later;
