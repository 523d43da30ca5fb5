//! Tools, the registry and the dispatch pipeline.
//!
//! A direct call from the host and a nested call from a `run_code` program are the same
//! call: both go through [`Registry::dispatch`] and every stage, in the order
//! `pipeline.rs` states: validation, `pre_execute`, guards, around-wrappers, `execute`,
//! output check and render, `post_execute`, observers.

mod agent;
mod around;
mod call;
mod card;
mod execute;
mod guard;
mod hooks;
pub mod jobs;
mod observe;
mod outcome;
mod output;
mod pipeline;
mod post_execute;
mod pre_execute;
pub(crate) mod registry;
mod tool;
mod validate;

pub use agent::{Agent, AgentDisposed, Injection};
pub use around::{Around, Deadline, Metrics, MetricsSnapshot, Next, Retry, ToolMetrics, around_fn};
pub use call::{Arguments, CallId, CallToken, Exec};
pub use card::{CallCard, CardRecord, Hunk, Location, ResultCard, SearchGroup, SearchMatch};
pub use guard::Guard;
pub use hooks::HookHandle;
pub use observe::{Observer, Progress, ProgressSink, RunUsage};
pub use outcome::{Content, Outcome};
pub use post_execute::{PostExecute, PostOutcome};
pub use pre_execute::{Approval, Approver, Decision, PreExecute};
pub use registry::{
    MAX_TOOL_NAME_LEN, RESERVED_TOOL_NAMES, RegisterError, Registry, Request, ToolHandle,
    tool_alias,
};
pub use tool::{
    BuildError, ErrorKind, Execute, ExecuteFuture, Tool, ToolAnnotations, ToolBuilder, ToolError,
    ToolSchema, Visibility,
};
